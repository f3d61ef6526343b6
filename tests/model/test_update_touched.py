"""The touched nodes of an update are those whose neighbours changed, a rewired node whose
degree stayed the same among them (audit 6 M13); a graph that touches nearly every shared
node is another network with the same ids, and the update warns (M14)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from cli_runs import FAST, KARATE, run_cli

from kernelne import Graph, KernelNE
from kernelne.cli.demo import planted_partition
from kernelne.graphs import neighbours
from kernelne.graphs.graph import load_graph
from kernelne.graphs.neighbours import id_hashes, neighbour_hashes

SMALL = dict(dim=16, walks_per_node=10, walk_length=8, window=4, workers=1, random_state=3,
             sigma=0.5,  # the default width collapses on this dense graph at these sizes
             propagate=False)


def rewired(graph: Graph, count: int, seed: int = 0) -> tuple[Graph, set]:
    """``graph`` with ``count`` degree-keeping swaps (a-b, c-d -> a-d, c-b) of edges whose
    four ends are distinct and untouched by another swap; the swapped nodes' ids."""
    rng = np.random.default_rng(seed)
    edges = {tuple(e) for e in graph.edges().tolist()}
    order = rng.permutation(sorted(edges))
    used, swapped = set(), 0
    for (a, b), (c, d) in zip(order[0::2].tolist(), order[1::2].tolist(), strict=False):
        ends = {a, b, c, d}
        if swapped == count:
            break
        if len(ends) < 4 or ends & used or {(a, d), (d, a), (c, b), (b, c)} & edges:
            continue
        edges -= {(a, b), (c, d)}
        edges |= {(a, d), (c, b)}
        used |= ends
        swapped += 1
    assert swapped == count
    e = np.array(sorted(edges))
    out = Graph.from_edges(*e.T, n_nodes=graph.n_nodes, nodes=graph.nodes)
    assert np.array_equal(out.degrees, graph.degrees)
    return out, {int(graph.nodes[i]) for i in used}


@pytest.fixture(scope="module")
def fitted():
    graph, _ = planted_partition(seed=0)
    return graph, KernelNE(**SMALL).fit(graph)


def test_a_rewired_node_with_the_same_degree_is_touched(fitted, tmp_path):
    graph, model = fitted
    path = tmp_path / "m.npz"
    model.save_model(path)
    other, swapped = rewired(graph, 5)
    updated = KernelNE.load_model(path).partial_fit(other)
    assert set(updated.touched_nodes_.tolist()) == swapped and len(swapped) == 20
    assert len(updated.new_nodes_) == 0
    assert np.array_equal(updated.embedding_, model.embedding_)  # rate 0: frozen
    moved = KernelNE.load_model(path).partial_fit(other, touched_rate=0.5)
    changed = {int(v) for v in graph.nodes[(moved.embedding_ != model.embedding_).any(axis=1)]}
    assert changed and changed <= swapped
    assert np.array_equal(updated.neighbour_hashes_, neighbour_hashes(other))


def test_a_model_file_without_the_fingerprints_counts_by_degree(fitted, tmp_path):
    graph, model = fitted
    model.save_model(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as z:  # written before the fingerprints were kept
        arrays = {k: z[k] for k in z.files if k != "neighbour_hashes"}
    np.savez(tmp_path / "old.npz", **arrays)
    loaded = KernelNE.load_model(tmp_path / "old.npz")
    assert not hasattr(loaded, "neighbour_hashes_")
    assert len(loaded.partial_fit(rewired(graph, 5)[0]).touched_nodes_) == 0


def test_another_graph_with_the_same_ids_warns(fitted, tmp_path, capsys):
    graph, model = fitted
    model_file, edges = tmp_path / "m.npz", tmp_path / "other.txt"
    model.save_model(model_file)
    other, _ = planted_partition(seed=1)  # another network, the same ids 0..399
    with pytest.warns(UserWarning, match=r"of the 400 nodes the graph shares with the model "
                                         r"have other neighbours .*this looks like another "
                                         r"graph .*a refit is advised"):
        KernelNE.load_model(model_file).partial_fit(other)
    grown = Graph.from_edges(*np.vstack([graph.edges(), [[400, 0], [400, 1]]]).T)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a grown graph: no warning
        assert len(KernelNE.load_model(model_file).partial_fit(grown).new_nodes_) == 1
    # the command line: one warning line, the update written
    edges.write_text("".join(f"{u} {v}\n" for u, v in other.edges().tolist()))
    code, err = run_cli(["update", model_file, edges, "-o", tmp_path / "u.npy", "--quiet"],
                        capsys)
    lines = err.strip().splitlines()
    assert code == 0 and len(lines) == 1 and lines[0].startswith("kernelne: warning: "), err
    assert "looks like another graph" in lines[0]


def test_the_fingerprints_follow_the_neighbour_ids_not_the_order():
    graph = load_graph(KARATE)
    e = graph.edges()
    perm = np.random.default_rng(0).permutation(graph.n_nodes)
    shuffled = Graph.from_edges(perm[e[:, 0]], perm[e[:, 1]], n_nodes=graph.n_nodes,
                                nodes=graph.nodes[np.argsort(perm)])
    before, after = neighbour_hashes(graph), neighbour_hashes(shuffled)
    by_id = dict(zip(shuffled.nodes.tolist(), after.tolist(), strict=True))
    assert [by_id[v] for v in graph.nodes.tolist()] == before.tolist()
    ids = id_hashes(graph.nodes)  # the sum of the neighbours' hashes, modulo 2^64
    sums = [sum(int(ids[j]) for j in graph.indices[graph.indptr[v]:graph.indptr[v + 1]])
            % 2**64 for v in range(graph.n_nodes)]
    assert before.tolist() == sums
    one_less = Graph.from_edges(*e[1:].T, n_nodes=graph.n_nodes)
    assert (neighbour_hashes(one_less) != before).sum() == 2  # the edge's two ends


def test_the_fingerprints_in_chunks_and_of_string_ids(monkeypatch):
    graph = load_graph(KARATE)
    whole = neighbour_hashes(graph)
    monkeypatch.setattr(neighbours, "CHUNK_EDGES", 5)
    assert np.array_equal(neighbour_hashes(graph), whole)
    names = id_hashes(np.array(["a", "bb", "é", "a"], dtype=object))
    assert names[0] == names[3] and len(set(names.tolist())) == 3
    assert id_hashes(np.array(["a", "a much longer id"]))[0] == names[0]  # any padding


def test_a_model_file_keeps_the_fingerprints(tmp_path, capsys):
    model = tmp_path / "m.npz"
    code, err = run_cli(["embed", KARATE, "-o", tmp_path / "e.npy", *FAST,
                         "--model-out", model], capsys)
    assert code == 0, err
    loaded = KernelNE.load_model(model)
    assert loaded.neighbour_hashes_.dtype == np.uint64
    assert np.array_equal(loaded.neighbour_hashes_, neighbour_hashes(load_graph(KARATE)))
    with np.load(model) as z:
        arrays = {k: z[k] for k in z.files}
    np.savez(tmp_path / "bad.npz", **{**arrays, "neighbour_hashes": arrays["degrees"]})
    code, err = run_cli(["update", tmp_path / "bad.npz", KARATE, "-o", tmp_path / "u.npy"],
                        capsys)
    assert code == 2 and "neighbour_hashes holds int64 numbers, not uint64" in err
