"""Link prediction: split invariants, negatives, save/load, edge operators, scores, CLI."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph

from kernelne.cli.app import main
from kernelne.embedding_io import save_embedding
from kernelne.errors import InputError
from kernelne.evaluation import (
    OPERATORS,
    LinkSplit,
    edge_features,
    evaluate_link_prediction,
    make_link_split,
    sample_non_edges,
)
from kernelne.evaluation.linkpred import select_operator_and_C
from kernelne.graphs.graph import Graph, from_networkx, load_graph
from kernelne.model.kernelne import KernelNE


@pytest.fixture(scope="module")
def planted() -> Graph:
    """8 groups of 40 nodes: nearly all edges inside a group, ~1,950 edges."""
    g = nx.planted_partition_graph(8, 40, 0.3, 0.002, seed=1)
    return from_networkx(g)


def keys(pairs: np.ndarray, n: int) -> set[int]:
    lo, hi = np.minimum(pairs[:, 0], pairs[:, 1]), np.maximum(pairs[:, 0], pairs[:, 1])
    return set((lo * n + hi).tolist())


def check_split(split: LinkSplit, graph: Graph, fraction: float,
                n_test: int | None = None) -> None:
    """Every invariant the protocol promises (``n_test``: the held-out count of a capped
    split; by default ``fraction`` of the edges)."""
    n = split.n_nodes
    original = keys(np.array([[graph.index_of(split.nodes[u]), graph.index_of(split.nodes[v])]
                              for u, v in np.concatenate([split.train_edges, split.test_edges])]),
                    graph.n_nodes)
    residual = split.residual_graph()
    assert residual.n_nodes == n and len(residual.isolated_nodes()) == 0
    n_comp, _ = csgraph.connected_components(residual.adjacency(), directed=False)
    assert n_comp == 1, "residual graph connected"
    m = len(split.train_edges) + len(split.test_edges)
    assert len(split.test_edges) == (round(fraction * m) if n_test is None else n_test)
    assert len(split.test_negatives) == len(split.test_edges)
    assert len(split.train_negatives) == len(split.train_edges)
    train_e, test_e = keys(split.train_edges, n), keys(split.test_edges, n)
    train_n, test_n = keys(split.train_negatives, n), keys(split.test_negatives, n)
    assert len(train_e) + len(test_e) == m == len(original), "edges distinct, none lost"
    assert len(test_n) == len(split.test_negatives), "test negatives distinct"
    assert len(train_n) == len(split.train_negatives), "training negatives distinct"
    edges = train_e | test_e
    assert not (test_n | train_n) & edges, "negatives are non-edges of the original graph"
    assert not (test_e | test_n) & (train_e | train_n), "no test pair in training"
    assert not test_e & test_n
    for pairs in (split.train_negatives, split.test_negatives):
        assert np.all(pairs[:, 0] != pairs[:, 1]), "no self-pairs"


def test_split_invariants_planted(planted):
    split = make_link_split(planted, 0.5, seed=3)
    check_split(split, planted, 0.5)
    assert split.n_nodes == planted.n_nodes


@settings(max_examples=25, deadline=None)
@given(n=st.integers(8, 60), p=st.floats(0.1, 0.5), fraction=st.floats(0.05, 0.6),
       seed=st.integers(0, 2**16))
def test_split_invariants_random_graphs(n, p, fraction, seed):
    graph = from_networkx(nx.gnp_random_graph(n, p, seed=seed))
    try:
        split = make_link_split(graph, fraction, seed=seed)
    except InputError as exc:
        assert "connected" in str(exc) or "no edge" in str(exc) or "too dense" in str(exc)
        return
    check_split(split, graph, fraction)


def test_largest_component_and_user_ids():
    g = nx.Graph()
    nx.add_cycle(g, [f"a{i}" for i in range(12)])
    g.add_edges_from([("a0", "a6"), ("a3", "a9"), ("a1", "a7"), ("a2", "a8")])
    g.add_edges_from([("b0", "b1"), ("b1", "b2")])  # a smaller component, left out
    graph = from_networkx(g)
    split = make_link_split(graph, 0.25, seed=0)
    assert sorted(split.nodes) == sorted(f"a{i}" for i in range(12))
    check_split(split, graph, 0.25)
    assert list(split.residual_graph().nodes) == list(split.nodes)


def test_impossible_fraction_is_an_error():
    cycle = from_networkx(nx.cycle_graph(20))  # 20 edges, a spanning tree needs 19
    with pytest.raises(InputError, match="connected: at most 1 "):
        make_link_split(cycle, 0.5)
    assert len(make_link_split(cycle, 0.05).test_edges) == 1
    for bad in (0.0, 1.0, -0.2):
        with pytest.raises(InputError, match="strictly between"):
            make_link_split(cycle, bad)


def near_tree(seed: int = 0) -> Graph:
    """A random tree of 200 nodes plus 20 extra edges (like CiteSeer's largest component)."""
    rng = np.random.default_rng(seed)
    g = nx.random_labeled_tree(200, seed=seed)
    while g.number_of_edges() < 219:
        u, v = rng.integers(0, 200, 2)
        if u != v:
            g.add_edge(int(u), int(v))
    return from_networkx(g)


def test_capped_split_of_a_near_tree():
    """Half of a near-tree's edges cannot go with a connected residual: without ``cap`` it is
    an error, with it every edge beyond a spanning tree is held out, and the rest holds."""
    graph = near_tree()
    with pytest.raises(InputError, match="connected: at most 20 "):
        make_link_split(graph, 0.5, seed=1)
    split = make_link_split(graph, 0.5, seed=1, cap=True)
    check_split(split, graph, 0.5, n_test=20)
    assert split.info["capped"] and len(split.train_edges) == 199  # a spanning tree
    residual = keys(split.train_edges, split.n_nodes)
    assert not residual & keys(split.test_edges, split.n_nodes), "no test edge in the residual"


def test_cap_changes_nothing_when_the_fraction_fits(planted):
    capped = make_link_split(planted, 0.5, seed=2, cap=True)
    plain = make_link_split(planted, 0.5, seed=2)
    assert not capped.info["capped"]
    for name in ("train_edges", "test_edges", "train_negatives", "test_negatives"):
        np.testing.assert_array_equal(getattr(capped, name), getattr(plain, name))


def test_same_seed_same_split(planted):
    a, b = make_link_split(planted, seed=7), make_link_split(planted, seed=7)
    c = make_link_split(planted, seed=8)
    for name in ("train_edges", "test_edges", "train_negatives", "test_negatives"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.test_edges, c.test_edges)


def test_sample_non_edges_exhausts_a_dense_graph():
    complete = np.array([(u, v) for u in range(10) for v in range(u + 1, 10)])
    keep = complete[3:]  # all pairs but three are edges
    edge_keys = np.sort(keep[:, 0] * 10 + keep[:, 1])
    got = sample_non_edges(10, edge_keys, 3, np.random.default_rng(0))
    assert keys(got, 10) == keys(complete[:3], 10)
    with pytest.raises(InputError, match="only 3"):
        sample_non_edges(10, edge_keys, 4, np.random.default_rng(0))


def test_sample_non_edges_is_uniform():
    """On an empty graph of 5 nodes each of the 10 pairs is drawn equally often."""
    rng = np.random.default_rng(1)
    firsts = [tuple(sample_non_edges(5, np.empty(0, np.int64), 1, rng)[0]) for _ in range(3000)]
    counts = np.unique(np.array(firsts), axis=0, return_counts=True)[1]
    assert len(counts) == 10 and counts.min() > 230 and counts.max() < 370


def test_save_load_and_residual_edgelist(planted, tmp_path):
    split = make_link_split(planted, 0.4, seed=5)
    split.save(tmp_path / "s")
    back = LinkSplit.load(tmp_path / "s")
    for name in ("nodes", "train_edges", "test_edges", "train_negatives", "test_negatives"):
        assert np.array_equal(getattr(back, name), getattr(split, name))
    assert (back.seed, back.test_fraction) == (5, 0.4)
    meta = json.loads((tmp_path / "s" / "split.json").read_text())
    assert meta["counts"]["test_edges"] == len(split.test_edges)
    residual = load_graph(tmp_path / "s" / "residual.edgelist")
    expected = {frozenset((split.nodes[u], split.nodes[v])) for u, v in split.train_edges}
    got = {frozenset((residual.nodes[u], residual.nodes[v])) for u, v in residual.edges()}
    assert got == expected


def test_save_load_string_ids(tmp_path):
    g = nx.relabel_nodes(nx.karate_club_graph(), lambda v: f"n{v}")
    split = make_link_split(from_networkx(g), 0.3, seed=0)
    split.save(tmp_path / "s")
    back = LinkSplit.load(tmp_path / "s")
    assert list(back.nodes) == list(split.nodes) and isinstance(back.nodes[0], str)


def test_load_rejects_a_non_split(tmp_path):
    with pytest.raises(InputError, match="not a split folder"):
        LinkSplit.load(tmp_path)


def test_edge_operators():
    vectors = np.array([[1.0, 2.0], [3.0, -1.0]])
    pairs = np.array([[0, 1]])
    assert np.allclose(edge_features(vectors, pairs, "weighted_l2"), [[4.0, 9.0]])
    assert np.allclose(edge_features(vectors, pairs, "hadamard"), [[3.0, -2.0]])
    assert np.allclose(edge_features(vectors, pairs, "average"), [[2.0, 0.5]])
    assert np.allclose(edge_features(vectors, pairs, "l1"), [[2.0, 3.0]])
    with pytest.raises(InputError, match="unknown edge operator"):
        edge_features(vectors, pairs, "cosine")


def test_kernelne_scores_well_above_chance(planted):
    split = make_link_split(planted, 0.5, seed=0)
    model = KernelNE(dim=32, walks_per_node=10, workers=1, random_state=0)
    model.fit(split.residual_graph())
    table = evaluate_link_prediction(model, split, operators=["weighted_l2", "hadamard"])
    assert table.value("roc_auc", "weighted_l2") > 0.8
    assert table.value("average_precision", "weighted_l2") > 0.75
    assert len(table) == 4


def test_random_vectors_score_near_chance(data_dir):
    from kernelne.graphs.datasets import load_dataset

    split = make_link_split(load_dataset("cora").graph, 0.5, seed=0)
    vectors = np.random.default_rng(0).normal(size=(split.n_nodes, 64))
    table = evaluate_link_prediction((vectors, split.nodes), split)
    assert abs(table.value("roc_auc") - 0.5) < 0.05


def test_missing_nodes_are_named(planted):
    split = make_link_split(planted, 0.5, seed=0)
    vectors = np.zeros((planted.n_nodes - 2, 4))
    with pytest.raises(InputError, match=r"^the split names 2 node\(s\) the embedding lacks "
                       r"\(318, 319\); the embedding's ids are 0\.\.317: learn"):
        evaluate_link_prediction((vectors, planted.nodes[:-2]), split)


def test_cli_split_then_linkpred(planted, tmp_path, capsys):
    edges = tmp_path / "g.txt"
    edges.write_text("".join(f"{planted.nodes[u]} {planted.nodes[v]}\n"
                             for u, v in planted.edges()))
    assert main(["split", str(edges), "-o", str(tmp_path / "s"), "--seed", "2"]) == 0
    residual = load_graph(tmp_path / "s" / "residual.edgelist")
    model = KernelNE(dim=16, walks_per_node=5, workers=1, random_state=0).fit(residual)
    save_embedding(tmp_path / "e.txt", model.embedding_, model.nodes_)
    out = tmp_path / "r.csv"
    code = main(["evaluate", "linkpred", str(tmp_path / "e.txt"), str(tmp_path / "s"),
                 "--operator", "all", "-o", str(out)])
    assert code == 0
    text = out.read_text().splitlines()
    assert text[0] == "method,dataset,task,setting,metric,mean,std,n" and len(text) == 9
    assert "e,g,link_prediction,weighted_l2,roc_auc," in text[1]
    assert "roc_auc" in capsys.readouterr().out
    assert main(["split", str(edges), "-o", str(tmp_path / "t"), "--test-fraction", "0.99"]) == 2
    assert "kernelne: error:" in capsys.readouterr().err


def test_save_into_a_missing_parent_is_an_input_error(planted, tmp_path):
    split = make_link_split(planted, 0.5, seed=0)
    with pytest.raises(InputError, match="cannot create the split folder"):
        split.save(tmp_path / "no" / "such")
    with pytest.raises(InputError, match="unknown edge operator"):
        evaluate_link_prediction(np.zeros((planted.n_nodes, 2)), split, operators=["dot"])


def test_select_operator_and_C_on_training_pairs():
    """Edges defined by the sign of x·y: the Hadamard operator is the one to choose."""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(100, 8))
    pairs = rng.integers(0, 100, size=(600, 2))
    y = (np.sum(vectors[pairs[:, 0]] * vectors[pairs[:, 1]], axis=1) > 0).astype(int)
    op, C, means = select_operator_and_C(vectors, pairs, y, ["weighted_l2", "hadamard"],
                                         Cs=[0.01, 1.0])
    assert op == "hadamard" and means[(op, C)] == max(means.values()) > 0.9
    assert set(means) == {(o, c) for o in ("weighted_l2", "hadamard") for c in (0.01, 1.0)}


def test_evaluate_with_selection_gives_one_named_result(planted):
    split = make_link_split(planted, 0.5, seed=0)
    vectors = np.random.default_rng(0).normal(size=(split.n_nodes, 8))
    table = evaluate_link_prediction((vectors, split.nodes), split, operators=list(OPERATORS),
                                     select=True)
    assert len(table) == 2 and all(r.setting.startswith("select:") for r in table)
    assert ",C=" in table.rows[0].setting


def test_split_nodes_the_embedding_lacks_are_named(tmp_path, capsys):
    edges = tmp_path / "grown.txt"
    grown = nx.karate_club_graph()
    grown.add_edges_from([(33, 34), (34, 35)])
    edges.write_text("".join(f"{u} {v}\n" for u, v in grown.edges()))
    assert main(["split", str(edges), "--out-dir", str(tmp_path / "spl"), "--seed", "0",
                 "--test-fraction", "0.3"]) == 0
    embedding = tmp_path / "m.npy"
    save_embedding(embedding, np.random.default_rng(0).normal(size=(34, 4)))  # ids 0..33
    capsys.readouterr()
    assert main(["evaluate", "linkpred", str(embedding), str(tmp_path / "spl")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kernelne: error: the split of {edges} names 2 node(s) the embedding "
                   f"{embedding} lacks (34, 35); the embedding's ids are 0..33 (an .npy "
                   "without a m.nodes.txt beside it): learn the embedding on the split's "
                   "residual.edgelist"]
