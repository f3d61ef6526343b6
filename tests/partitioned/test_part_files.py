"""Walks filed by part (kernelne.partitioned.part_files): each part's file holds exactly the
walks that visit the part, in the round's order and windows, and a fit whose buckets read them
trains the embedding of a fit that reads the whole rounds, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import kernelne.partitioned.buckets as buckets
import kernelne.partitioned.driver as partitioned
from kernelne import Graph, KernelNE
from kernelne.errors import InputError
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.partitioned.buckets import bucket_walks
from kernelne.partitioned.part_files import (
    file_round,
    filed_share,
    filed_windows,
    files_by_part,
    index_file,
    part_file,
)
from kernelne.partitioned.rounds import part_masks

SETTINGS = dict(random_state=0, workers=1, walks_per_node=6, dim=16, partitions=3, rounds=2,
                sigma=0.5)
WINDOW = 64  # walks a bucket reads at a time here: 450 walks a round, 8 windows


def sbm() -> Graph:
    edges, _ = planted_partition_sbm(150, 750, 3, 0.2, seed=0)
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=150)


def random_round(tmp_path, n_walks: int, length: int, n: int, parts: int, seed: int = 0):
    """A round's walk and mask files of random walks, some cut short (``-1`` padding)."""
    rng = np.random.default_rng(seed)
    walks = rng.integers(0, n, (n_walks, length)).astype(np.int32)
    for w in rng.choice(n_walks, n_walks // 5, replace=False):
        walks[w, rng.integers(1, length):] = -1
    walk_file, mask_file = tmp_path / "round0.npy", tmp_path / "round0.masks.npy"
    np.save(walk_file, walks)
    np.save(mask_file, part_masks(walks, parts))
    return walks, walk_file, mask_file


@pytest.mark.parametrize("parts", [5, 70])  # 70: masks share bits, the files do not
def test_a_part_file_holds_exactly_the_walks_that_visit_the_part(tmp_path, parts):
    walks, walk_file, mask_file = random_round(tmp_path, 1000, 6, 500, parts)
    file_round(walk_file, mask_file, walk_file, parts, window=128)
    masks = part_masks(walks, parts)
    index = np.load(index_file(walk_file))
    assert index.shape == (parts, 9)  # 1000 walks: 8 windows of 128
    for c in range(parts):
        visits = np.flatnonzero(((walks >= 0) & (walks % parts == c)).any(axis=1))
        stored = np.load(part_file(walk_file, c))
        np.testing.assert_array_equal(stored[:, 0], visits)
        np.testing.assert_array_equal(stored[:, 3:], walks[visits])
        np.testing.assert_array_equal(
            np.ascontiguousarray(stored[:, 1:3]).view(np.uint64).ravel(), masks[visits])
        np.testing.assert_array_equal(index[c], np.searchsorted(visits, np.arange(0, 1025, 128)
                                                                .clip(max=1000)))
        read = [block.copy() for block in filed_windows(walk_file, c)]  # one buffer
        assert all(len(np.unique(block[:, 0] // 128)) == 1 for block in read)  # a window each
        np.testing.assert_array_equal(np.concatenate(read), stored)
        for j in range(parts):  # a bucket's walks of the part's file: the round's selection
            filed = [np.concatenate(x) for x in zip(*bucket_walks(walk_file, c, j, 1000, True),
                                                     strict=True)]
            whole = [np.concatenate(x) for x in zip(*bucket_walks(walk_file, c, j, 1000, False),
                                                     strict=True)]
            bits = np.uint64((1 << c % 64) | (1 << j % 64))
            rows = np.flatnonzero((masks & bits) == bits)
            # above 64 parts the round's masks also pass walks of parts sharing c's bit
            for got, kept in ((whole, rows), (filed, np.intersect1d(rows, visits))):
                np.testing.assert_array_equal(got[0], 1000 + kept)
                np.testing.assert_array_equal(got[1], walks[kept])


def test_the_share_read_is_the_bytes_a_bucket_reads_from_its_part(tmp_path):
    """``filed_share`` against the files of random walks (uniform nodes, as parts ``v mod P``
    of a graph's walks are balanced samples): part files' bytes over the round's."""
    walk_file, mask_file = tmp_path / "round0.npy", tmp_path / "round0.masks.npy"
    for parts, length in ((8, 10), (32, 10), (64, 10), (16, 40)):
        # no padding: the share is of whole walks
        full = np.random.default_rng(1).integers(0, 10_000, (4000, length)).astype(np.int32)
        np.save(walk_file, full)
        np.save(mask_file, part_masks(full, parts))
        file_round(walk_file, mask_file, walk_file, parts, window=1024)
        part_bytes = np.mean([np.load(part_file(walk_file, c)).nbytes for c in range(parts)])
        round_bytes = full.nbytes + 8 * len(full)
        assert part_bytes / round_bytes == pytest.approx(filed_share(parts, length), rel=0.03)
    assert not files_by_part(8, 10) and not files_by_part(14, 10)
    assert files_by_part(15, 10) and files_by_part(64, 10)
    assert not files_by_part(64, 80)  # long walks visit nearly every part: nothing saved
    assert not files_by_part(1, 10)


def fit(folder, graph, filed: bool, monkeypatch, client=None) -> KernelNE:
    monkeypatch.setattr(partitioned, "files_by_part", lambda parts, length: filed)
    model = KernelNE(partition_dir=str(folder), **SETTINGS)
    return model.fit(graph, client=client)


@pytest.fixture
def small_windows(monkeypatch):
    monkeypatch.setattr(buckets, "READ_WALKS", WINDOW)
    monkeypatch.setattr(partitioned, "READ_WALKS", WINDOW)


def test_a_fit_filed_by_part_trains_the_same_embedding(tmp_path, monkeypatch, small_windows):
    g = sbm()
    whole = fit(tmp_path / "whole", g, False, monkeypatch)
    filed = fit(tmp_path / "filed", g, True, monkeypatch)
    walks = tmp_path / "filed" / "walks"
    assert sorted(p.name for p in walks.glob("round1.*")) == sorted(
        ["round1.npy", "round1.index.npy", "round1.masks.npy"]
        + [f"round1.part{c}.npy" for c in range(3)])
    assert np.load(walks / "round1.index.npy").shape == (3, 9)  # 450 walks: 8 windows
    assert not list((tmp_path / "whole" / "walks").glob("*.part*"))
    np.testing.assert_array_equal(filed.embedding_, whole.embedding_)
    np.testing.assert_array_equal(filed.context_embedding_, whole.context_embedding_)
    assert filed.partition_run_.trained_pairs == whole.partition_run_.trained_pairs


class Crash(Exception):
    pass


def test_a_filed_fit_killed_mid_step_resumes_and_checks_its_part_files(tmp_path, monkeypatch,
                                                                        small_windows):
    g = sbm()
    clean = fit(tmp_path / "clean", g, True, monkeypatch)
    real, calls = buckets.bucket_task, []

    def dies(*args):
        calls.append(args)
        if len(calls) == 5:
            raise Crash
        return real(*args)

    monkeypatch.setattr(buckets, "bucket_task", dies)
    with pytest.raises(Crash):
        fit(tmp_path / "run", g, True, monkeypatch)
    assert all(args[-1] is True for args in calls)  # the buckets read their part's files
    monkeypatch.setattr(buckets, "bucket_task", real)
    lost = tmp_path / "run" / "walks" / "round1.part2.npy"
    kept = lost.read_bytes()
    lost.write_bytes(kept[:-8])
    with pytest.raises(InputError, match="round1.part2.npy"):
        fit(tmp_path / "run", g, True, monkeypatch)
    lost.write_bytes(kept)
    resumed = fit(tmp_path / "run", g, True, monkeypatch)
    assert resumed.partition_run_.resumed_at_step == 1
    np.testing.assert_array_equal(resumed.embedding_, clean.embedding_)
