"""kernelne tune: the search never reads the test part; results, report and CLI."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import kernelne.evaluation as evaluation
from kernelne.cli import main
from kernelne.graph import Graph
from kernelne.tune import SEARCH_SPACES, tune

FAST = {"dim": 8, "workers": 1, "walks_per_node": 4}


@pytest.fixture(scope="module")
def groups():
    """4 planted groups of 30 nodes; labels = group."""
    g = nx.planted_partition_graph(4, 30, 0.3, 0.02, seed=2)
    src, dst = np.array(g.edges()).T
    graph = Graph.from_edges(src, dst, n_nodes=120)
    Y = sp.csr_matrix(np.eye(4, dtype=bool)[np.arange(120) // 30])
    return graph, np.arange(120), Y


def test_search_never_reads_test_labels(groups, monkeypatch):
    graph, nodes, Y = groups
    test = nodes[::3]
    seen: list[np.ndarray] = []
    real = evaluation.evaluate_node_classification

    def spy(embedding, labels, label_nodes=None, **kw):
        seen.append(np.asarray(label_nodes))
        return real(embedding, labels, label_nodes, **kw)

    monkeypatch.setattr(evaluation, "evaluate_node_classification", spy)
    first = tune(graph, (nodes, Y), trials=3, test_nodes=test, fixed=FAST, progress=False)
    # the same search with the test nodes' labels scrambled gives the same trials
    poisoned = Y.toarray()
    poisoned[test] = np.roll(poisoned[test], 1, axis=1)
    second = tune(graph, (nodes, sp.csr_matrix(poisoned)), trials=3, test_nodes=test,
                  fixed=FAST, progress=False)
    assert [t["score"] for t in first.trials] == [t["score"] for t in second.trials]
    assert first.best_params == second.best_params
    assert seen and all(not np.isin(s, test).any() for s in seen)
    # only the final test score reads them (and sees the difference)
    assert first.test_score is not None and first.test_score != second.test_score


def test_link_validation_without_labels(groups):
    graph, _, _ = groups
    result = tune(graph, trials=3, fixed=FAST, progress=False)
    assert result.metric == "roc_auc" and len(result.trials) == 3
    assert result.best_score == max(t["score"] for t in result.trials)
    assert result.model.embedding_.shape == (120, 8)
    assert "validation edges" in result.validation


def test_seeded_search_is_reproducible(groups):
    graph, nodes, Y = groups
    runs = [tune(graph, (nodes, Y), trials=3, holdout=0.3, fixed=FAST, progress=False)
            for _ in range(2)]
    assert runs[0].trials == [dict(t, seconds=r["seconds"]) for t, r in
                              zip(runs[1].trials, runs[0].trials, strict=True)]


@pytest.mark.parametrize("method", sorted(SEARCH_SPACES))
def test_every_search_space_builds_its_method(method):
    import optuna

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    params = SEARCH_SPACES[method](study.ask())
    from kernelne.tune import make_estimator

    assert make_estimator(method, params).get_params()  # accepted by the constructor


def test_cli_writes_embedding_and_report(groups, tmp_path, capsys):
    graph, _, _ = groups
    edges = tmp_path / "g.txt"
    edges.write_text("\n".join(f"{u} {v}" for u, v in graph.edges()))
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(f"{i} {i // 30}" for i in range(120)))
    out, report = tmp_path / "emb.txt", tmp_path / "report"
    code = main(["tune", str(edges), "--labels", str(labels), "--holdout", "0.5",
                 "--trials", "2", "--dim", "8", "--workers", "1", "--search-walks", "4",
                 "-o", str(out), "--report", str(report), "--quiet"])
    assert code == 0 and out.exists()
    best = json.loads((report / "best.json").read_text())
    assert best["method"] == "kernelne" and best["test_score"] is not None
    assert (report / "trials.png").stat().st_size > 1000
    assert (report / "map.png").stat().st_size > 1000  # the winner's map, by label
    # --trials 2, but KernelNE's three defaults always run: a header and three rows
    assert len((report / "trials.csv").read_text().splitlines()) == 4
    assert "test        Micro-F1" in capsys.readouterr().out
