"""Walks made by the Dask workers of a partitioned fit (kernelne.partitioned.rounds): the same round
files, masks, counts and embedding as the driver's walks, and a driver killed during the walks
resumes at the first round not yet written."""

from __future__ import annotations

import json

import numpy as np
import pytest

import kernelne.partitioned.driver as partitioned
import kernelne.partitioned.rounds as round_walks
from kernelne import Graph, KernelNE
from kernelne.graphs.generators import planted_partition_sbm

distributed = pytest.importorskip("distributed")

SETTINGS = dict(random_state=0, workers=1, walks_per_node=6, dim=16, partitions=3, rounds=3,
                chunk_walks=64)  # 600 walks a round: 10 chunks, several tasks a round
ROUND_FILES = sorted(["counts.npy"] + [f"round{r}{kind}.npy" for r in range(3)
                                       for kind in ("", ".masks")])


class Crash(Exception):
    pass


def sbm(weighted: bool = False) -> Graph:
    edges, _ = planted_partition_sbm(300, 1500, 4, 0.2, seed=0)
    weights = None
    if weighted:
        weights = np.random.default_rng(1).uniform(0.5, 2.0, len(edges))
    return Graph.from_edges(edges[:, 0], edges[:, 1], weights=weights, n_nodes=300)


def fit(folder, graph, client=None, **kw) -> KernelNE:
    settings = {**SETTINGS, **kw}
    return KernelNE(partition_dir=str(folder), **settings).fit(graph, client=client)


def walk_files(folder) -> dict[str, np.ndarray]:
    return {p.name: np.load(p) for p in sorted((folder / "walks").glob("*.npy"))}


def submitted_walks(client, monkeypatch, prefix: str = "kernelne-walks-") -> list[str]:
    """The keys of the tasks (walks: by default) ``client`` is given from now on."""
    keys: list[str] = []
    real = client.submit

    def submit(fn, *args, **kw):
        if kw.get("key", "").startswith(prefix):
            keys.append(kw["key"])
        return real(fn, *args, **kw)

    monkeypatch.setattr(client, "submit", submit)
    return keys


@pytest.mark.parametrize("p, q, weighted", [(1.0, 1.0, False), (0.5, 2.0, True)],
                         ids=["uniform", "node2vec-weighted"])
def test_worker_walks_are_the_driver_walks_bit_for_bit(client, tmp_path, monkeypatch, p, q,
                                                       weighted):
    g = sbm(weighted)
    driver = fit(tmp_path / "driver", g, p=p, q=q)
    keys = submitted_walks(client, monkeypatch)
    workers = fit(tmp_path / "workers", g, client, p=p, q=q)
    assert len(keys) > 3  # more than one task a round
    mine, theirs = walk_files(tmp_path / "driver"), walk_files(tmp_path / "workers")
    assert list(mine) == list(theirs) == ROUND_FILES
    for name, array in mine.items():
        assert theirs[name].dtype == array.dtype and np.array_equal(theirs[name], array), name
    assert not (tmp_path / "workers" / "walks" / round_walks.GRAPH).exists()
    assert not list((tmp_path / "workers" / "walks").glob(".*"))  # no hidden file left
    np.testing.assert_array_equal(workers.embedding_, driver.embedding_)
    np.testing.assert_array_equal(workers.context_embedding_, driver.context_embedding_)


def test_worker_walks_filed_by_part_are_the_driver_files(client, tmp_path, monkeypatch):
    """With the rounds filed by part, the workers' filing tasks (over ranges of a round's
    windows) write the files the driver writes, and the buckets that read them train the same
    embedding."""
    g = sbm()
    monkeypatch.setattr(partitioned, "files_by_part", lambda parts, length: True)
    for module in (partitioned, round_walks):  # 600 walks a round: 10 windows
        monkeypatch.setattr(module, "READ_WALKS", 64)
    keys = submitted_walks(client, monkeypatch, "kernelne-filing-")
    driver = fit(tmp_path / "driver", g)
    workers = fit(tmp_path / "workers", g, client)
    mine, theirs = walk_files(tmp_path / "driver"), walk_files(tmp_path / "workers")
    assert list(mine) == list(theirs)
    assert set(mine) == set(ROUND_FILES) | {f"round{r}{kind}.npy" for r in range(3)
                                            for kind in (".index", ".part0", ".part1", ".part2")}
    for name, array in mine.items():
        assert theirs[name].dtype == array.dtype and np.array_equal(theirs[name], array), name
    assert not list((tmp_path / "workers" / "walks").glob(".*"))  # no hidden file left
    assert mine["round0.index.npy"].shape == (3, 11)
    assert len(keys) == 3 * 2 * 4  # each round: 4 tasks counting, 4 writing (4 slots)
    np.testing.assert_array_equal(workers.embedding_, driver.embedding_)


@pytest.mark.parametrize("workers, threads", [(None, 1), (2, 2)])
def test_a_bucket_task_gets_the_fit_s_workers_as_threads(client, tmp_path, monkeypatch,
                                                         workers, threads):
    """On Dask a bucket task trains on one numba thread (bit for bit) unless ``workers`` is
    given: then on that many (Hogwild within the bucket)."""
    seen: list[int] = []
    real = client.submit

    def submit(fn, *args, **kw):
        if getattr(fn, "__name__", "") in ("bucket_task", "kept_bucket_task"):
            seen.append(args[9])  # bucket_task's threads
        return real(fn, *args, **kw)

    monkeypatch.setattr(client, "submit", submit)
    fit(tmp_path / "run", sbm(), client, workers=workers)
    assert len(seen) >= 3 * 3 * 3 and set(seen) == {threads}  # 3 rounds of 3 steps of 3


def test_the_driver_receives_one_count_array_a_round(client, tmp_path, monkeypatch):
    """The walk tasks' counts are summed on the workers: the driver gathers one n-long
    array a round, whatever the number of tasks."""
    g = sbm()
    keys = submitted_walks(client, monkeypatch)
    gathered: list[list[str]] = []
    real = round_walks.make_rounds

    def make_rounds(client, gather, *args, **kw):
        def watched(client, futures):
            gathered.append([f.key for f in futures])
            return gather(client, futures)
        return real(client, watched, *args, **kw)

    monkeypatch.setattr(partitioned, "make_rounds", make_rounds)
    model = fit(tmp_path / "workers", g, client)
    rounds = SETTINGS["rounds"]
    assert len(keys) > 2 * rounds  # several walk tasks a round
    assert len(gathered) == rounds and all(len(keys_) == 1 for keys_ in gathered)
    assert all(k[0].startswith("kernelne-walk-counts-") for k in gathered)
    np.testing.assert_array_equal(model.walk_counts_, fit(tmp_path / "driver", g).walk_counts_)


def test_a_driver_killed_during_worker_walks_keeps_the_rounds_written(client, tmp_path,
                                                                       monkeypatch):
    g = sbm()
    clean = fit(tmp_path / "clean", g)
    real, published = round_walks._publish, []

    def dies_at_the_third_round(files, token):
        if len(published) == 2:
            raise Crash
        real(files, token)
        published.append(files[0].name)

    monkeypatch.setattr(round_walks, "_publish", dies_at_the_third_round)
    with pytest.raises(Crash):
        fit(tmp_path / "run", g, client)
    walks = tmp_path / "run" / "walks"
    assert published == ["round0.npy", "round1.npy"] and not (walks / "round2.npy").exists()
    progress = tmp_path / "run" / "progress.json"
    assert not progress.exists() or "walks_done" not in json.loads(progress.read_text())
    kept = ["round0.npy", "round0.masks.npy", "round1.npy", "round1.masks.npy"]
    stamps = {name: (walks / name).stat().st_mtime_ns for name in kept}
    monkeypatch.setattr(round_walks, "_publish", real)
    keys = submitted_walks(client, monkeypatch)
    resumed = fit(tmp_path / "run", g, client)
    assert keys and all(k.startswith("kernelne-walks-2-") for k in keys)  # round 2 alone
    assert {name: (walks / name).stat().st_mtime_ns for name in kept} == stamps
    assert not list(walks.glob(".*"))  # the killed run's round 2 in the making is removed
    counts = walk_files(tmp_path / "run")["counts.npy"]
    assert np.array_equal(counts, walk_files(tmp_path / "clean")["counts.npy"])
    np.testing.assert_array_equal(resumed.embedding_, clean.embedding_)


def test_a_driver_killed_during_its_own_walks_keeps_the_rounds_written(tmp_path, monkeypatch):
    g = sbm()
    clean = fit(tmp_path / "clean", g)
    real, calls = partitioned.part_masks, []

    def dies_in_the_third_round(walks, parts):
        calls.append(len(walks))
        if sum(calls) > 2 * 600:
            raise Crash
        return real(walks, parts)

    monkeypatch.setattr(partitioned, "part_masks", dies_in_the_third_round)
    with pytest.raises(Crash):
        fit(tmp_path / "run", g)
    walks = tmp_path / "run" / "walks"
    assert (walks / "round1.npy").exists() and not (walks / "round2.npy").exists()
    stamp = (walks / "round0.npy").stat().st_mtime_ns
    monkeypatch.setattr(partitioned, "part_masks", real)
    calls.clear()
    resumed = fit(tmp_path / "run", g)
    assert (walks / "round0.npy").stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(resumed.embedding_, clean.embedding_)


def test_rounds_of_another_seed_are_made_again(tmp_path, monkeypatch):
    g = sbm()
    other = fit(tmp_path / "clean", g, random_state=1)
    real = partitioned.part_masks
    seen: list[int] = []

    def dies_in_the_second_round(walks, parts):
        seen.append(len(walks))
        if sum(seen) > 600:
            raise Crash
        return real(walks, parts)

    monkeypatch.setattr(partitioned, "part_masks", dies_in_the_second_round)
    with pytest.raises(Crash):
        fit(tmp_path / "run", g)  # seed 0
    monkeypatch.setattr(partitioned, "part_masks", real)
    resumed = fit(tmp_path / "run", g, random_state=1)
    assert walk_files(tmp_path / "run").keys() == walk_files(tmp_path / "clean").keys()
    for name, array in walk_files(tmp_path / "clean").items():
        assert np.array_equal(walk_files(tmp_path / "run")[name], array), name
    np.testing.assert_array_equal(resumed.embedding_, other.embedding_)
