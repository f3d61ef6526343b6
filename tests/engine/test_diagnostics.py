"""Never silent: loss history, the collapse warning, NaN and zero-pair errors."""

from __future__ import annotations

import warnings

import networkx as nx
import numpy as np
import pytest

from kernelne import KernelNE, TrainingError
from kernelne.engine.diagnostics import (
    DegenerateEmbeddingWarning,
    EmbeddingHealth,
    embedding_health,
)
from kernelne.engine.robust import AUC_RISE, SECOND_LOOK
from kernelne.graphs.graph import Graph


@pytest.fixture(scope="module")
def dense_graph() -> Graph:
    """10 planted groups of 150 nodes, mean degree ~60, 60% of edges between groups."""
    g = nx.planted_partition_graph(10, 150, 24 / 149, 36 / 1350, seed=3)
    src, dst = np.array(g.edges()).T
    return Graph.from_edges(src, dst)


def _fit(graph, **params):
    params = {"dim": 64, "walks_per_node": 10, "workers": 1, "random_state": 0, **params}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = KernelNE(**params).fit(graph)
    return model, [w for w in caught if issubclass(w.category, DegenerateEmbeddingWarning)]


def test_collapse_warning_fires_on_a_collapsing_fit(dense_graph):
    model, caught = _fit(dense_graph, kernel="schoenberg", alpha=1.0, robust=False)
    assert model.health_.collapsed
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "uninformative" in message and "tune" in message and "--sigma" in message


def test_no_warning_on_a_healthy_fit(dense_graph):
    model, caught = _fit(dense_graph, kernel="gauss", sigma=0.5, robust=False)
    assert not caught
    assert model.health_.neighbour_auc > 0.6


@pytest.mark.parametrize("kernel", ["schoenberg", "gauss"])
def test_robust_fit_narrows_the_kernel_instead_of_collapsing(dense_graph, kernel):
    model, caught = _fit(dense_graph, kernel=kernel, chunk_walks=1500, setting="given")
    assert not caught and not model.health_.collapsed
    assert model.kernel_scale_ == 8.0 and len(model.narrowed_) == 1
    shell = model.narrowed_[0]
    assert shell["offset_ratio"] > 2 or (
        shell["offset_ratio"] > 1 and shell["neighbour_auc"] < 0.55
    )
    assert model.shell_checks_[0] == shell and len(model.shell_checks_) == 2
    assert shell["collapsing"] and not model.shell_checks_[1]["collapsing"]
    if kernel == "gauss":
        assert model.effective_kernels()[0].param == pytest.approx(2**0.5 / 8**0.5)
    from kernelne.cli.options import describe_fit

    hint = "--kernel schoenberg --window-shrink"
    assert hint in describe_fit(model, dense_graph, 1.0)
    if kernel == "schoenberg":  # already the hinted setting: no hint
        model.window_shrink = True  # as given: setting_["params"] holds only what "auto" took
        model.setting_ = {**model.setting_, "params": {
            k: v for k, v in model.setting_["params"].items() if k != "window_shrink"}}
        assert hint not in describe_fit(model, dense_graph, 1.0)


def test_robust_fit_is_the_paper_fit_when_nothing_collapses():
    g = nx.planted_partition_graph(4, 50, 0.2, 0.01, seed=1)
    src, dst = np.array(g.edges()).T
    sparse = Graph.from_edges(src, dst)
    # mean degree 11: setting="given" keeps the paper's setting (auto: the dense one)
    robust = KernelNE(dim=16, walks_per_node=20, chunk_walks=200, workers=1, random_state=1,
                      setting="given")
    paper = KernelNE(dim=16, walks_per_node=20, chunk_walks=200, workers=1, random_state=1,
                     robust=False, setting="given")
    np.testing.assert_array_equal(robust.fit(sparse).embedding_, paper.fit(sparse).embedding_)
    assert robust.kernel_scale_ == 1.0 and robust.narrowed_ == []
    # the first reading was doubtful (offset 1.6, AUC 0.55); the second, at twice the pairs,
    # saw the AUC rise (0.72) and found no shell: both are kept and reported
    first, second = robust.shell_checks_
    assert first["doubtful"] and not first["collapsing"] and not second["collapsing"]
    assert second["at_pairs"] == SECOND_LOOK * first["at_pairs"]
    assert second["neighbour_auc"] > first["neighbour_auc"] + AUC_RISE
    assert paper.shell_checks_ == []
    from kernelne.cli.options import describe_fit

    text = describe_fit(robust, sparse, 1.0)
    for check in (first, second):
        assert f"checked    the rows after {check['at_pairs']:,} pairs" in text
    assert "no shell" in text and "narrowed" not in text


def test_health_separates_informative_from_random_rows(dense_graph):
    rng = np.random.default_rng(0)
    n = dense_graph.n_nodes
    random_rows = rng.normal(size=(n, 16))
    health = embedding_health(random_rows, random_rows, dense_graph.indptr, dense_graph.indices)
    assert health.collapsed and abs(health.neighbour_auc - 0.5) < 0.05
    groups = np.arange(n) // 150  # networkx numbers the planted groups consecutively
    informative = np.eye(10)[groups] + rng.normal(0, 0.1, (n, 10))
    health = embedding_health(informative, informative, dense_graph.indptr,
                              dense_graph.indices)
    assert not health.collapsed and health.neighbour_auc > 0.6


def test_loss_history_records_positive_and_negative_parts(kite):
    model, _ = _fit(kite, dim=8, walks_per_node=20, chunk_walks=2, negatives=3)
    hist = model.loss_history_
    assert hist.shape == (model.n_walks_ // 2, 3)
    assert hist[-1, 0] == model.n_pairs_ and np.all(np.diff(hist[:, 0]) > 0)
    assert np.all(hist[:, 1:] >= 0) and np.all(hist[:, 1:] <= 1)
    # B starts at 0, so every kernel value starts near 1: the positive part starts low,
    # the negative part near 1 and falls
    assert hist[0, 1] < 0.5 < hist[0, 2]
    assert hist[-1, 2] < hist[0, 2] / 2


def test_diverged_fit_is_an_error(kite):
    with pytest.raises(TrainingError, match="diverged"):
        KernelNE(kernel="linear", lr=1000.0, min_lr=1000.0, dim=8, walks_per_node=5,
                 workers=1, random_state=0).fit(kite)


def test_zero_pairs_is_an_error():
    lonely = Graph.from_edges(np.array([0, 2]), np.array([1, 3]))
    with pytest.raises(TrainingError, match="no \\(center, context\\) pair"):
        KernelNE(walk_length=1, dim=4, walks_per_node=2, workers=1).fit(lonely)


def test_roc_auc_is_scikit_learns_float():
    """The engine's numpy ROC-AUC gives the same float as scikit-learn's, ties included, so
    the thresholds on the neighbour AUC decide the same."""
    from sklearn.metrics import roc_auc_score

    from kernelne.engine.diagnostics import roc_auc

    rng = np.random.default_rng(3)
    for i in range(300):
        n, m = rng.integers(1, 200, 2)
        if i % 2:
            pos, neg = rng.normal(0.3, 1, n), rng.normal(0, 1, m)
        else:  # many ties
            pos, neg = rng.integers(0, 4, n) * 1.0, rng.integers(0, 4, m) * 1.0
        want = roc_auc_score(np.r_[np.ones(n), np.zeros(m)], np.r_[pos, neg])
        assert roc_auc(pos, neg) == want


def test_roc_auc_known_values_and_bad_scores():
    from kernelne.engine.diagnostics import roc_auc

    assert roc_auc(np.array([2.0, 3.0]), np.array([0.0, 1.0])) == 1.0
    assert roc_auc(np.array([0.0]), np.array([1.0])) == 0.0
    assert roc_auc(np.array([1.0, 1.0]), np.array([1.0])) == 0.5
    assert roc_auc(np.array([1.0, 3.0]), np.array([2.0])) == 0.5
    with pytest.raises(ValueError, match="NaN"):
        roc_auc(np.array([np.nan]), np.array([1.0]))


def test_an_offset_is_a_shell_only_while_neighbours_are_not_clearly_alike():
    # the demo graph with the dense setting: offset 3.3, AUC 0.82, k-means ARI 0.99
    assert not EmbeddingHealth(0.82, 3.3, 0.37).collapsed
    # Cora with sch:0.5: offset 5.2 with an AUC near 0.6, Micro-F1 0.44
    shell = EmbeddingHealth(0.6, 5.2, 0.5)
    assert shell.on_shell and shell.collapsed
    random_rows = EmbeddingHealth(0.52, 0.4, 0.1)
    assert random_rows.collapsed and not random_rows.on_shell
