"""Partitioned training (kernelne.partitioned.driver): the bucket schedule, the pairs each bucket
trains, quality against the plain fit, the robust restart, resuming after a crash, and a Dask
worker killed mid-bucket."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import networkx as nx
import numpy as np
import pytest

import kernelne.partitioned.blocks as blocks
import kernelne.partitioned.buckets as buckets
import kernelne.partitioned.driver as partitioned
from kernelne import Graph, KernelNE
from kernelne.engine.kernels import Kernel
from kernelne.engine.robust import PART_SHELL_OFFSET, SHELL_AUC, shell_figures
from kernelne.engine.sampling import alias_table
from kernelne.engine.trainer import (
    Noise,
    TrainSettings,
    keep_probabilities,
    kernel_arrays,
    train_walks,
)
from kernelne.engine.walks import random_walks
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.parallel import numba_threads
from kernelne.partitioned.blocks import (
    BlockRows,
    part_size,
    read_block,
    read_row_windows,
    read_rows,
)
from kernelne.partitioned.buckets import bucket_order, read_windows, train_bucket, walks_of_bucket
from kernelne.partitioned.rounds import part_masks


def sbm_graph(n=600, m=3000, k=4, mu=0.2, seed=0):
    edges, comm = planted_partition_sbm(n, m, k, mu, seed=seed)
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=n), comm


@pytest.mark.parametrize("parts", [1, 2, 3, 8])
def test_each_round_trains_every_bucket_once_in_disjoint_steps(parts):
    steps = bucket_order(parts)
    buckets = [b for step in steps for b in step]
    assert sorted(buckets) == [(i, j) for i in range(parts) for j in range(parts)]
    for step in steps:  # a step's buckets share no block: they can run in parallel
        assert len({i for i, _ in step}) == len({j for _, j in step}) == parts


def test_part_sizes_cover_the_nodes():
    for n in (1, 7, 100):
        for parts in (1, 2, 3, 8):
            assert sum(part_size(n, parts, i) for i in range(parts)) == n


@pytest.mark.parametrize("shrink, subsample", [(False, False), (True, True)])
def test_buckets_train_exactly_the_pairs_of_the_plain_trainer(shrink, subsample):
    g, _ = sbm_graph()
    walks = random_walks(g, 2, 10, seed=1)
    walks[::7, 6:] = -1  # walks that stopped early
    n, d, parts = g.n_nodes, 8, 3
    settings = TrainSettings(float(walks.size), 4, 2, seed=1, window_shrink=shrink)
    kernel = kernel_arrays([Kernel("gauss", 1.4)])
    counts = np.bincount(walks[walks >= 0], minlength=n) + 1.0
    keep = keep_probabilities(counts, 1e-3) if subsample else None
    plain = train_walks(walks, 0, np.zeros((n, d), np.float32), np.zeros((n, d), np.float32),
                        kernel, Noise(*alias_table(counts**0.75)), settings, keep=keep)
    total = 0
    for i in range(parts):
        for j in range(parts):
            noise = Noise(*alias_table(counts[j::parts] ** 0.75))
            A = np.zeros((part_size(n, parts, i), d), np.float32)
            B = np.zeros((part_size(n, parts, j), d), np.float32)
            total += train_bucket(walks, np.arange(len(walks)), A, B, i, j, parts, kernel,
                                  noise, settings, keep=keep)
    assert total == plain > 0


def test_a_bucket_lists_the_window_pairs_of_its_parts_in_walk_order():
    g, _ = sbm_graph()
    walks = random_walks(g, 3, 10, seed=2)
    walks[::5, 4:] = -1
    parts, window = 4, 3
    settings = TrainSettings(float(walks.size), window, 2, seed=2).typed()
    ids = np.arange(len(walks), dtype=np.int64)
    no_keep = np.empty(0, np.float32)
    for i, j in ((0, 0), (1, 3), (3, 2)):
        expected, first_expected = [], -1
        for w, walk in enumerate(walks):
            seq = walk[walk >= 0]
            for pos, v in enumerate(seq):
                for c in range(max(0, pos - window), min(len(seq), pos + window + 1)):
                    if c != pos and v % parts == i and seq[c] % parts == j:
                        expected.append((v // parts, seq[c] // parts))
            if first_expected < 0 and expected:
                first_expected = w
        centers, contexts, _, first = buckets._bucket_pairs(walks, ids, i, j, parts,
                                                                settings, no_keep)
        assert list(zip(centers.tolist(), contexts.tolist(), strict=True)) == expected
        assert first == first_expected >= 0


def test_a_bucket_reads_only_the_walks_its_masks_select_and_trains_the_same():
    g, _ = sbm_graph()
    walks = random_walks(g, 2, 10, seed=4)
    n, d, parts = g.n_nodes, 8, 5
    masks = part_masks(walks, parts)
    settings = TrainSettings(float(walks.size), 4, 2, seed=4, negative_pool=16)
    kernel = kernel_arrays([Kernel("gauss", 1.4)])
    counts = np.bincount(walks[walks >= 0], minlength=n) + 1.0
    for i, j in ((0, 3), (2, 2)):
        rows, chosen = walks_of_bucket(masks, walks, 0, i, j)
        assert 0 < len(rows) < len(walks)  # some walks miss part i or j (5 parts, length 10)
        assert np.array_equal(chosen, walks[rows]) and chosen.flags.c_contiguous
        for w in range(len(walks)):  # exactly the walks visiting both parts
            assert ({i, j} <= set((walks[w][walks[w] >= 0] % parts).tolist())) == (w in rows)
        noise = Noise(*alias_table(counts[j::parts] ** 0.75))
        rng = np.random.default_rng(i)
        A = rng.uniform(-0.1, 0.1, (part_size(n, parts, i), d)).astype(np.float32)
        B = rng.uniform(-0.1, 0.1, (part_size(n, parts, j), d)).astype(np.float32)
        A2, B2 = A.copy(), B.copy()
        every = chosen = 0
        with numba_threads(1):  # one thread: the same pairs in the same order, bit for bit
            for lo, hi in read_windows(len(walks), 30):  # the chunks a bucket task reads
                every += train_bucket(walks[lo:hi], np.arange(lo, hi), A, B, i, j, parts,
                                      kernel, noise, settings)
                ids, kept = walks_of_bucket(masks[lo:hi], walks[lo:hi], lo, i, j)
                chosen += train_bucket(kept, ids, A2, B2, i, j, parts, kernel, noise, settings)
        assert chosen == every > 0
        assert np.array_equal(A, A2) and np.array_equal(B, B2)


def test_read_rows_reads_a_slice_of_a_npy_file_without_mapping_it(tmp_path):
    rng = np.random.default_rng(0)
    for array in (rng.integers(-1, 9, (37, 5)).astype(np.int32),
                  rng.integers(0, 2**63, 37, dtype=np.uint64)):
        np.save(tmp_path / "a.npy", array)
        for lo, hi in ((0, 37), (3, 11), (30, 50), (37, 40)):
            got = read_rows(tmp_path / "a.npy", lo, hi)
            assert got.dtype == array.dtype and np.array_equal(got, array[lo:hi])
    with open(tmp_path / "a.npy", "r+b") as fh:
        fh.truncate(fh.seek(0, 2) - 8)
    with pytest.raises(OSError, match="truncated"):
        read_rows(tmp_path / "a.npy", 30, 37)


def test_row_windows_are_read_rows_into_one_buffer(tmp_path):
    """Windows of any size in turn, larger and smaller, empty or past the end: each the rows
    :func:`read_rows` reads, into one buffer (the next window overwrites the last's)."""
    rng = np.random.default_rng(1)
    array = rng.integers(-1, 9, (300, 7)).astype(np.int32)
    np.save(tmp_path / "a.npy", array)
    windows = [(0, 10), (10, 200), (200, 200), (200, 203), (203, 299), (299, 350), (40, 41)]
    seen = []
    for (lo, hi), got in zip(windows, read_row_windows(tmp_path / "a.npy", windows), strict=True):
        assert got.dtype == array.dtype and np.array_equal(got, read_rows(tmp_path / "a.npy",
                                                                          lo, hi))
        seen.append(got)
    assert np.shares_memory(seen[1], seen[-1])  # the buffer of the largest window, reused
    with open(tmp_path / "a.npy", "r+b") as fh:
        fh.truncate(fh.seek(0, 2) - 8)
    with pytest.raises(OSError, match="a.npy: rows 290-300 cut short .* truncated"):
        list(read_row_windows(tmp_path / "a.npy", [(0, 10), (290, 300)]))


def test_row_windows_at_a_url_read_the_header_once(monkeypatch):
    """At a URL each window is one ranged read of the rows after one read of the header."""
    import uuid

    from kernelne.partitioned import store

    rng = np.random.default_rng(2)
    array = rng.integers(-1, 9, (300, 7)).astype(np.int32)
    url = store.location(f"memory://kernelne-windows-{uuid.uuid4().hex}/a.npy")
    store.write_bytes(url, store.npy_bytes(array))
    reads = []
    real = store.read_bytes
    monkeypatch.setattr(store, "read_bytes",
                        lambda path, start=None, end=None: reads.append((start, end)) or
                        real(path, start, end))
    windows = [(0, 10), (10, 200), (200, 203), (203, 299), (299, 350)]
    for (lo, hi), got in zip(windows, read_row_windows(url, windows), strict=True):
        assert np.array_equal(got, array[lo:hi])
    assert len(reads) == 1 + len(windows) and reads[0] == (0, store.HEADER_BYTES)
    assert all(start > 0 for start, _ in reads[1:])  # the rows' ranges, no header again


@pytest.mark.parametrize("n, parts", [(23, 4), (64, 8), (5, 7), (1, 1)])
@pytest.mark.parametrize("chunk_bytes", [1, 100, 1 << 20])
def test_the_assembled_matrix_interleaves_the_blocks(tmp_path, monkeypatch, n, parts,
                                                     chunk_bytes):
    """Row ``v`` of ``A.npy`` is row ``v // P`` of block ``v mod P``, whatever the chunk the
    rows are put together by (a row of a block a chunk, a few, all) and however many parts
    have a row fewer (or none, at ``n < P``)."""
    d, version = 3, 5
    X = np.random.default_rng(n).standard_normal((n, d)).astype(np.float32)
    (tmp_path / "blocks").mkdir()
    for i in range(parts):
        np.save(blocks.block_path(tmp_path, "A", i, version), X[i::parts])
    monkeypatch.setattr(blocks, "ASSEMBLE_BYTES", chunk_bytes)
    A = blocks.assemble(tmp_path, "A", n, parts, d, version)
    assert A.dtype == np.float32 and np.array_equal(A, X)
    assert not list(tmp_path.glob(".*"))  # no temporary left


def test_block_rows_read_the_matrix_the_blocks_make(tmp_path):
    n, parts, d = 23, 4, 3
    X = np.random.default_rng(0).standard_normal((n, d)).astype(np.float32)
    (tmp_path / "blocks").mkdir()
    for i in range(parts):
        np.save(blocks.block_path(tmp_path, "A", i, 5), X[i::parts])
    rows = BlockRows(tmp_path, "A", n, parts, d, 5)
    assert len(rows) == n and rows.shape == (n, d) and rows.all_finite()
    for idx in (np.arange(n), np.array([22, 0, 5, 5, 17]), np.array([], dtype=np.int64)):
        assert np.array_equal(rows[idx], X[idx])
    X[9, 1] = np.nan  # row 9: block 1, row 2
    np.save(blocks.block_path(tmp_path, "A", 1, 5), X[1::parts])
    assert not rows.all_finite()


def test_the_restart_look_reads_the_blocks_where_they_lie(tmp_path):
    g, _ = sbm_graph()
    n, parts, d = g.n_nodes, 4, 8
    rng = np.random.default_rng(1)
    A = (rng.standard_normal((n, d)) + 0.5).astype(np.float32)
    B = rng.standard_normal((n, d)).astype(np.float32)
    (tmp_path / "blocks").mkdir()
    for i in range(parts):
        np.save(blocks.block_path(tmp_path, "A", i, 3), A[i::parts])
        np.save(blocks.block_path(tmp_path, "B", i, 3), B[i::parts])
    counts, beta = np.ones(n), np.ones(1, np.float32)
    look = partitioned._shell(tmp_path, g, counts, parts, d, 3, beta,
                              {"scale": 1.0, "pairs": 1000, "narrowed": []}, None)
    assert look == shell_figures(A, B, g.indptr, g.indices, counts > 0, beta, 1.0, 1000, parts)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocks"]  # no matrix written out


def test_a_block_is_read_whole_onto_cache_lines_and_a_cut_one_is_refused(tmp_path):
    block = np.random.default_rng(0).random((1000, 24), dtype=np.float32)
    path = tmp_path / "A0.v0.npy"
    np.save(path, block)
    read = read_block(path)
    assert np.array_equal(read, block) and read.ctypes.data % 64 == 0
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size - 4)
    with pytest.raises(OSError, match="truncated"):
        read_block(path)


def test_read_windows_cover_the_rows_in_chunks_of_the_same_size():
    for n_rows, size in ((50, 9), (3, 9), (0, 9), (18, 9)):
        windows = read_windows(n_rows, size)
        assert [r for lo, hi in windows for r in range(lo, hi)] == list(range(n_rows))
        assert all(hi - lo == size for lo, hi in windows[:-1])


def test_part_masks_above_64_parts_keep_every_walk_with_pairs():
    walks = np.array([[0, 64, 1, -1], [130, 5, 7, 9]], dtype=np.int32)
    masks = part_masks(walks, 128)
    assert walks_of_bucket(masks, walks, 7, 0, 64)[0].tolist() == [7]  # part 64 shares bit 0
    assert walks_of_bucket(masks, walks, 7, 2, 9)[0].tolist() == [8]
    assert walks_of_bucket(masks, walks, 7, 3, 9)[0].tolist() == []


def test_a_bucket_writes_only_its_blocks_rows_of_trained_nodes():
    g, _ = sbm_graph()
    walks = random_walks(g, 1, 10, seed=2)
    n, d, parts, i, j = g.n_nodes, 8, 4, 1, 2
    rng = np.random.default_rng(0)
    A = rng.uniform(-0.1, 0.1, (part_size(n, parts, i), d)).astype(np.float32)
    B = rng.uniform(-0.1, 0.1, (part_size(n, parts, j), d)).astype(np.float32)
    A0, B0 = A.copy(), B.copy()
    noise = Noise(*alias_table(np.ones(part_size(n, parts, j))))
    settings = TrainSettings(float(walks.size), 3, 0, seed=3)  # no negatives: B rows of contexts
    train_bucket(walks, np.arange(len(walks)), A, B, i, j, parts,
                 kernel_arrays([Kernel("gauss", 1.0)]), noise,
                 settings)
    centers = {int(v) // parts for v in walks.ravel() if v >= 0 and v % parts == i}
    changed_a = set(np.flatnonzero((A != A0).any(axis=1)).tolist())
    assert changed_a and changed_a <= centers
    contexts = {int(v) // parts for v in walks.ravel() if v >= 0 and v % parts == j}
    changed_b = set(np.flatnonzero((B != B0).any(axis=1)).tolist())
    assert changed_b and changed_b <= contexts


def test_partitioned_fit_learns_the_communities_like_the_plain_fit():
    from kernelne.evaluation import evaluate_node_classification

    g, comm = sbm_graph(2000, 12000, 5, 0.3)
    scores = {}
    for parts in (1, 4):  # sigma: the width a plain fit narrows to here
        model = KernelNE(random_state=0, workers=1, walks_per_node=10, dim=32, sigma=0.5,
                         partitions=parts).fit(g)
        assert model.embedding_.shape == (g.n_nodes, 32)
        scores[parts] = evaluate_node_classification(
            model.embedding_, comm, ratios=[0.5], repeats=3, n_jobs=1).value("micro_f1")
    assert scores[1] > 0.8
    assert scores[4] >= scores[1] - 0.02, scores
    run = model.partition_run_  # the P = 4 fit: where its buckets' time went
    assert set(run.bucket_phases) == {"read blocks", "read walks", "list", "train",
                                      "write blocks"}
    assert all(v >= 0 for v in run.bucket_phases.values())
    assert run.bucket_phases["train"] > 0
    assert sum(run.bucket_phases.values()) <= sum(run.bucket_seconds)


def fit_in(folder, g, **kw):
    return KernelNE(random_state=0, workers=1, walks_per_node=6, dim=16, partitions=3,
                    rounds=2, sigma=0.5, partition_dir=str(folder), **kw).fit(g)


class Crash(Exception):
    pass


def test_a_driver_killed_mid_step_resumes_and_matches_a_clean_run(tmp_path, monkeypatch):
    g, _ = sbm_graph()
    clean = fit_in(tmp_path / "clean", g)
    real, calls = buckets.bucket_task, []

    def dies_on_the_eighth_bucket(*args):
        calls.append(args[1:4])
        if len(calls) == 8:  # step 2, its second bucket: step 2's first bucket already wrote
            raise Crash
        return real(*args)

    monkeypatch.setattr(buckets, "bucket_task", dies_on_the_eighth_bucket)
    with pytest.raises(Crash):
        fit_in(tmp_path / "run", g)
    progress = json.loads((tmp_path / "run" / "progress.json").read_text())
    assert progress["step"] == 2
    written = blocks.block_path(tmp_path / "run", "A", 0, 3)  # half a step was written
    assert written.stat().st_mtime_ns >= (tmp_path / "run" / "progress.json").stat().st_mtime_ns
    monkeypatch.setattr(buckets, "bucket_task", real)
    resumed = fit_in(tmp_path / "run", g)
    assert resumed.partition_run_.resumed_at_step == 2
    np.testing.assert_array_equal(resumed.embedding_, clean.embedding_)
    np.testing.assert_array_equal(resumed.context_embedding_, clean.context_embedding_)
    left = sorted(p.name for p in (tmp_path / "run" / "blocks").iterdir())
    assert left == sorted(f"{w}{i}.v{t}.npy" for w in "AB" for i in range(3) for t in (0, 1))


@pytest.fixture(scope="module")
def dense_graph() -> Graph:
    """10 planted groups of 150 nodes, mean degree ~60: the default kernels form the shell."""
    g = nx.planted_partition_graph(10, 150, 24 / 149, 36 / 1350, seed=3)
    src, dst = np.array(g.edges()).T
    return Graph.from_edges(src, dst)


def dense_fit(graph, folder=None, **kw):
    return KernelNE(kernel="schoenberg", dim=16, walks_per_node=6, workers=1, random_state=0,
                    partitions=3, rounds=4, partition_dir=folder and str(folder), **kw).fit(graph)


def test_a_partitioned_fit_narrows_the_kernel_when_the_shell_forms(dense_graph):
    robust = dense_fit(dense_graph)
    assert robust.kernel_scale_ == 8.0 and len(robust.narrowed_) == 1
    shell = robust.narrowed_[0]
    assert shell["offset_ratio"] > PART_SHELL_OFFSET and shell["neighbour_auc"] < SHELL_AUC
    paper = dense_fit(dense_graph, robust=False)
    assert paper.kernel_scale_ == 1.0 and paper.narrowed_ == []
    assert robust.n_pairs_ == paper.n_pairs_  # the restarted run trains on the same walks
    assert robust.health_.neighbour_auc > paper.health_.neighbour_auc


def test_a_driver_killed_just_after_a_restart_resumes_it(dense_graph, tmp_path, monkeypatch):
    clean = dense_fit(dense_graph, tmp_path / "clean")
    real = partitioned._restart

    def dies_after_restarting(*args):
        real(*args)
        raise Crash

    monkeypatch.setattr(partitioned, "_restart", dies_after_restarting)
    with pytest.raises(Crash):
        dense_fit(dense_graph, tmp_path / "run")
    assert json.loads((tmp_path / "run" / "progress.json").read_text())["scale"] == 8.0
    monkeypatch.setattr(partitioned, "_restart", real)
    resumed = dense_fit(dense_graph, tmp_path / "run")
    assert resumed.kernel_scale_ == 8.0 and resumed.narrowed_ == clean.narrowed_
    np.testing.assert_array_equal(resumed.embedding_, clean.embedding_)


def test_a_folder_of_another_fit_is_refused(tmp_path):
    from kernelne.errors import InputError

    g, _ = sbm_graph()
    fit_in(tmp_path / "run", g)
    with pytest.raises(InputError, match="another graph or other settings"):
        fit_in(tmp_path / "run", g, window=3)


def test_partitions_refuse_shared_negatives_and_a_client_needs_partitions():
    g, _ = sbm_graph(100, 300)
    with pytest.raises(ValueError, match="shared_negatives"):
        KernelNE(partitions=2, shared_negatives=True).fit(g)
    with pytest.raises(ValueError, match="partitions > 1"):
        KernelNE(walks_per_node=1).fit(g, client=object())


@pytest.mark.long  # a Dask cluster of worker processes, one killed
def test_a_dask_worker_killed_mid_bucket_costs_only_that_bucket(tmp_path):
    distributed = pytest.importorskip("distributed")
    g, _ = sbm_graph(4000, 30000, 5, 0.3)
    kw = dict(random_state=0, walks_per_node=8, dim=32, partitions=4, rounds=2)
    clean = KernelNE(workers=1, **kw).fit(g)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        folder = tmp_path / "run"
        done = {}

        def fit():
            done["model"] = KernelNE(partition_dir=str(folder), **kw).fit(g, client=client)

        thread = threading.Thread(target=fit)
        thread.start()
        progress = folder / "progress.json"
        deadline = time.time() + 300
        while time.time() < deadline and thread.is_alive():
            if progress.exists() and json.loads(progress.read_text()).get("step", 0) >= 1:
                break
            time.sleep(0.05)
        busy = [w for w, tasks in client.processing().items() if tasks]
        pids = client.run(os.getpid, workers=busy[:1] or None)
        os.kill(next(iter(pids.values())), signal.SIGKILL)
        thread.join(600)
        assert not thread.is_alive()
    model = done["model"]
    np.testing.assert_array_equal(model.embedding_, clean.embedding_)


def test_a_block_is_written_over_its_old_version_or_anew(tmp_path):
    path = tmp_path / "A0.v1.npy"
    rows = np.arange(12, dtype=np.float32).reshape(4, 3)
    blocks.write_block(path, rows)  # no file yet
    inode = path.stat().st_ino
    blocks.write_block(path, rows + 1)  # same shape: written over, same file
    assert path.stat().st_ino == inode
    np.testing.assert_array_equal(np.load(path), rows + 1)
    blocks.write_block(path, rows[:2])  # another shape: a new file
    np.testing.assert_array_equal(np.load(path), rows[:2])
    path.write_bytes(b"\x93NUMPY cut short")  # a write cut short by a crash
    blocks.write_block(path, rows)
    np.testing.assert_array_equal(np.load(path), rows)


def test_a_partitioned_fit_of_a_dense_graph_propagates_beside_its_rows(tmp_path):
    from kernelne.engine.propagation import Propagation, propagate_rows
    from kernelne.model.auto_setting import OUTPUT_NORM

    g, _ = sbm_graph(400, 4000, 4, 0.2, seed=3)  # mean degree 17.6: "auto" propagates
    params = {"dim": 16, "walks_per_node": 2, "partitions": 2, "workers": 1,
              "random_state": 0}
    on_disk = KernelNE(partition_dir=str(tmp_path / "run"), **params).fit(g)
    assert on_disk.propagation_ == Propagation()
    assert on_disk.setting_["propagation"].startswith("auto: mean degree 17.6 >= 8")
    assert isinstance(on_disk.embedding_, np.memmap)  # written beside the rows, then mapped
    assert os.path.samefile(on_disk.embedding_.filename, tmp_path / "run" / "embedding.npy")
    expected = propagate_rows(g.adjacency(), np.asarray(on_disk.trained_embedding_))
    np.testing.assert_array_equal(on_disk.embedding_, expected * np.float32(OUTPUT_NORM))
    in_memory = KernelNE(**params).fit(g)  # a temporary folder: the rows come into memory
    assert not isinstance(in_memory.embedding_, np.memmap)
    np.testing.assert_array_equal(in_memory.embedding_, on_disk.embedding_)
    plain = KernelNE(propagate=False, partition_dir=str(tmp_path / "rows"), **params).fit(g)
    assert plain.propagation_ is None
    np.testing.assert_array_equal(plain.embedding_, on_disk.trained_embedding_)
