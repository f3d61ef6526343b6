"""Link-prediction heuristics: hand-checked values, no leak of held-out edges, CLI."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kernelne.cli.app import main
from kernelne.evaluation.heuristics import HEURISTICS, evaluate_heuristics, heuristic_scores
from kernelne.evaluation.splits import LinkSplit, make_link_split
from kernelne.graphs.graph import Graph

# 0-1, 0-2, 1-2, 1-3, 2-3, 3-4: nodes 0 and 3 share neighbours 1 and 2
EDGES = np.array([(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (3, 4)])


@pytest.fixture
def adjacency():
    return Graph.from_edges(EDGES[:, 0], EDGES[:, 1]).adjacency().tocsr()


def test_values_on_a_hand_checked_graph(adjacency):
    pairs = np.array([(0, 3), (0, 4)])
    np.testing.assert_allclose(heuristic_scores(adjacency, pairs, "common_neighbours"), [2, 0])
    np.testing.assert_allclose(heuristic_scores(adjacency, pairs, "jaccard"), [2 / 3, 0])
    aa = 2 / math.log(3)  # 1 and 2 both have degree 3
    np.testing.assert_allclose(heuristic_scores(adjacency, pairs, "adamic_adar"), [aa, 0])
    np.testing.assert_allclose(
        heuristic_scores(adjacency, pairs, "preferential_attachment"), [2 * 3, 2 * 1])
    A = adjacency.toarray().astype(float)
    b = 0.005
    katz = b * A + b**2 * A @ A + b**3 * A @ A @ A
    np.testing.assert_allclose(heuristic_scores(adjacency, pairs, "katz"),
                               [katz[0, 3], katz[0, 4]])


def test_held_out_edges_never_contribute():
    # test edge (1, 3): if it leaked, common neighbours of the test pair (0, 3) would gain 1
    train = np.array([(0, 1), (0, 2), (2, 3), (3, 4), (1, 4)])
    split = LinkSplit(
        nodes=np.arange(5), train_edges=train, train_negatives=np.array([(0, 4)]),
        test_edges=np.array([(1, 3), (0, 3)]), test_negatives=np.array([(1, 2), (2, 4)]),
        seed=0, test_fraction=0.3)
    A = split.residual_graph().adjacency().tocsr()
    assert A[1, 3] == 0
    cn = heuristic_scores(A, np.array([(0, 3)]), "common_neighbours")
    assert cn[0] == 1  # only node 2; node 1 would count only through the held-out edge
    table = evaluate_heuristics(split)
    assert {r.method for r in table} == set(HEURISTICS)


def test_heuristics_beat_chance_on_a_clustered_graph():
    import networkx as nx

    g = nx.planted_partition_graph(4, 40, 0.4, 0.01, seed=0)
    src, dst = np.array(g.edges()).T
    split = make_link_split(Graph.from_edges(src, dst), test_fraction=0.3, seed=0)
    table = evaluate_heuristics(split)
    aucs = {r.method: r.mean for r in table if r.metric == "roc_auc"}
    assert aucs["adamic_adar"] > 0.8 and aucs["common_neighbours"] > 0.8


def test_cli(tmp_path, capsys):
    import networkx as nx

    g = nx.planted_partition_graph(3, 30, 0.4, 0.02, seed=1)
    path = tmp_path / "g.txt"
    path.write_text("\n".join(f"{u} {v}" for u, v in g.edges()))
    assert main(["split", str(path), "-o", str(tmp_path / "s"), "--test-fraction", "0.3"]) == 0
    out = tmp_path / "h.csv"
    assert main(["evaluate", "heuristics", str(tmp_path / "s"), "-o", str(out)]) == 0
    text = out.read_text()
    assert all(name in text for name in HEURISTICS)
