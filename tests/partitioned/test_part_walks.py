"""Walks on the parts' rows (kernelne.partitioned.part_walks): each part's CSR holds its nodes'
rows, walkers handed from part to part make the walks of the whole graph bit for bit, in
this process and on Dask workers, each part's tasks on its own worker."""

from __future__ import annotations

import numpy as np
import pytest

import kernelne.partitioned.part_walks as part_walks
from kernelne import Graph
from kernelne.engine.walks import WalkCorpus, cumulative_weights
from kernelne.partitioned.blocks import part_size

distributed = pytest.importorskip("distributed")


def directed_graph(weighted: bool) -> Graph:
    """A directed graph with nodes without out-neighbours (walks cut short) and isolated ones."""
    rng = np.random.default_rng(3)
    n = 230
    src = rng.integers(0, n - 30, 1500)  # nodes 200..229 have no out-edges
    dst = rng.integers(0, n - 10, 1500)  # 220..229: isolated
    weights = rng.uniform(0.1, 3.0, len(src)) if weighted else None
    return Graph.from_edges(src, dst, weights=weights, n_nodes=n, directed=True)


def walk_in_process(folder, graph: Graph, parts: int, lo: int, hi: int, length: int,
                    seed: int) -> np.ndarray:
    """Walks ``lo..hi-1`` made superstep by superstep in this process, as the Dask tasks
    :func:`part_walks.submit_round` submits make them."""
    where = part_walks.write_part_graphs(folder, graph, parts)
    path = folder / "round.npy"
    np.save(path, np.full((hi - lo, length), -2, dtype=np.int32))
    spec = {"n_nodes": graph.n_nodes, "walk_length": length, "seed": seed,
            "walk_parts": parts}
    mid = (lo + hi) // 2
    outbound = [part_walks.start_task(a, b, spec) for a, b in ((lo, mid), (mid, hi))]
    handed = []
    for _ in range(length):
        outbound = [part_walks.advance_task(str(where), str(path), c, lo, spec,
                                            *(out[c] for out in outbound))
                    for c in range(parts)]
        handed.append(sum(len(w) for out in outbound for w in out))
    assert handed[-1] == 0 and (max(handed) > 0) == (parts > 1)
    return np.load(path)


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("window", [7, 1 << 20])
def test_each_part_holds_its_nodes_rows(tmp_path, monkeypatch, weighted, window):
    """Row ``k`` of part ``c`` is node ``c + k P``'s: its neighbours and cumulative weights,
    the same values whatever the window of edges the parts are written by."""
    monkeypatch.setattr(part_walks, "WRITE_EDGES", window)
    g = directed_graph(weighted)
    parts = 3
    (tmp_path / "walks").mkdir()
    where = part_walks.write_part_graphs(tmp_path, g, parts)
    cumw = cumulative_weights(g)
    for c in range(parts):
        indptr, indices, part_cumw = (np.load(where / str(c) / f"{name}.npy")
                                      for name in ("indptr", "indices", "cumw"))
        nodes = np.arange(c, g.n_nodes, parts)
        assert len(indptr) == part_size(g.n_nodes, parts, c) + 1 == len(nodes) + 1
        for k, v in enumerate(nodes):
            a, b = g.indptr[v], g.indptr[v + 1]
            np.testing.assert_array_equal(indices[indptr[k]:indptr[k + 1]], g.indices[a:b])
            if weighted:
                np.testing.assert_array_equal(part_cumw[indptr[k]:indptr[k + 1]], cumw[a:b])
        assert indices.dtype == np.int32 and (len(part_cumw) == len(indices)) == weighted


@pytest.mark.parametrize("weighted", [False, True], ids=["unweighted", "weighted"])
@pytest.mark.parametrize("parts", [1, 3, 7])
def test_walkers_handed_between_parts_walk_the_whole_graphs_walks(tmp_path, weighted, parts):
    """Every walk, cut short where the graph has no out-neighbour or not, is the whole
    graph's walk of the same id bit for bit (walks of a second round: ids from n)."""
    g = directed_graph(weighted)
    corpus = WalkCorpus(g, walks_per_node=2, walk_length=9, seed=5)
    lo, hi = g.n_nodes - 40, 2 * g.n_nodes - 3
    walks = walk_in_process(tmp_path, g, parts, lo, hi, 9, 5)
    expected = corpus.chunk(lo, hi)
    assert (expected == -1).any()  # some walks cut short
    np.testing.assert_array_equal(walks, expected)


def test_only_first_order_walks_migrate():
    assert part_walks.walks_on_parts(1.0, 1.0)
    assert not part_walks.walks_on_parts(0.5, 1.0) and not part_walks.walks_on_parts(1.0, 2.0)


def test_dask_supersteps_place_each_part_on_its_worker(client, tmp_path):
    """On Dask the round's file is the whole graph's walks, and part ``c``'s tasks ran on
    worker ``c mod W``."""
    g = directed_graph(True)
    parts, length = 4, 6
    corpus = WalkCorpus(g, walks_per_node=1, walk_length=length, seed=1)
    (tmp_path / "walks").mkdir()
    where = part_walks.write_part_graphs(tmp_path, g, parts)
    path = tmp_path / "round.npy"
    np.save(path, np.full((g.n_nodes, length), -2, dtype=np.int32))
    spec = {"n_nodes": g.n_nodes, "walk_length": length, "seed": 1, "walk_parts": parts}
    with distributed.get_task_stream(client) as stream:
        last = part_walks.submit_round(client, str(where), str(path), 0,
                                       [(0, 100), (100, g.n_nodes)], spec, "t", "0")
        results = client.gather(last)
    assert all(len(w) == 0 for out in results for w in out)
    np.testing.assert_array_equal(np.load(path), corpus.chunk(0, g.n_nodes))
    workers = sorted(client.scheduler_info()["workers"])
    ran = {}
    for task in stream.data:
        key = task["key"]
        if key.startswith("kernelne-walks-0-"):
            ran.setdefault(int(key.split("-")[4]), set()).add(task["worker"])
    assert sorted(ran) == list(range(parts))
    assert all(ran[c] == {workers[c % len(workers)]} for c in ran)
