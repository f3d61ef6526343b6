"""MKernelNE's weights chosen on validation data (``KernelNE(beta_select=...)``,
:mod:`kernelne.model.kernel_choice`, docs/METHOD.md §4): the default is today's learned weights,
fixed weights are fixed (one-hot = the single-kernel fit bit for bit), the selection reads
only what it is given, and it picks the kernel that does not collapse on a dense graph."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

import kernelne.evaluation
import kernelne.model.kernel_choice as kc
import kernelne.model.restarts
from kernelne import KernelNE
from kernelne.graphs.graph import Graph

pytestmark = pytest.mark.filterwarnings(
    "ignore::kernelne.engine.diagnostics.DegenerateEmbeddingWarning")
TINY = {"dim": 8, "walks_per_node": 3, "walk_length": 6, "window": 3, "workers": 1,
        "random_state": 3}
PAIR = ["gauss:1", "sch:2"]


@pytest.fixture(scope="module")
def dense():
    """6 planted groups of 40 nodes, mean degree about 26: with ``robust=False`` the wide
    Gaussian collapses into the shell (docs/COLLAPSE.md), the narrow one does not."""
    g = nx.planted_partition_graph(6, 40, 0.6, 0.02, seed=1)
    src, dst = np.array(g.edges()).T
    graph = Graph.from_edges(src, dst)
    return graph, np.asarray(graph.nodes).astype(int) // 40


DENSE = {"kernel": "multi", "kernels": ["gauss:0.3", "gauss:4"], "robust": False, "dim": 16,
         "walks_per_node": 8, "workers": 1, "random_state": 0,
         "propagate": False}  # the rows as trained: the collapse shows


def test_the_default_learns_the_weights_as_before(small_graph, monkeypatch):
    """beta_select="train" (the default): the trainer learns all m weights from 1/m."""
    seen = []
    real = kernelne.model.restarts.train_settings

    def spy(*args, **kwargs):
        seen.append(kwargs["learn_beta"])
        return real(*args, **kwargs)

    monkeypatch.setattr(kernelne.model.restarts, "train_settings", spy)
    default = KernelNE(kernel="multi", kernels=PAIR, **TINY).fit(small_graph)
    assert seen == [True]
    np.testing.assert_array_equal(default.beta_history_[0], [0.5, 0.5])
    assert not np.array_equal(default.beta_, [0.5, 0.5])
    same = KernelNE(kernel="multi", kernels=PAIR, beta_select="train", **TINY).fit(small_graph)
    np.testing.assert_array_equal(same.embedding_, default.embedding_)
    np.testing.assert_array_equal(same.beta_, default.beta_)
    assert not hasattr(default, "beta_choice_")


def test_one_hot_weights_are_the_single_kernel_fit(small_graph):
    hot = KernelNE(kernel="multi", kernels=PAIR, beta_select=[0, 1], **TINY).fit(small_graph)
    single = KernelNE(kernel="schoenberg", alpha=2.0, **TINY).fit(small_graph)
    np.testing.assert_array_equal(hot.embedding_, single.embedding_)
    np.testing.assert_array_equal(hot.context_embedding_, single.context_embedding_)
    assert hot.beta_.tolist() == [0.0, 1.0] and [str(k) for k in hot.kernels_] == PAIR


def test_fixed_weights_stay_fixed_and_change_the_fit(small_graph):
    uniform = KernelNE(kernel="multi", kernels=PAIR, beta_select="uniform", **TINY)
    uniform.fit(small_graph)
    assert uniform.beta_.tolist() == [0.5, 0.5] and uniform.beta_history_.shape == (1, 2)
    learned = KernelNE(kernel="multi", kernels=PAIR, **TINY).fit(small_graph)
    assert not np.array_equal(uniform.embedding_, learned.embedding_)
    mix = KernelNE(kernel="multi", kernels=PAIR, beta_select=[0.3, 0.7], **TINY)
    assert mix.fit(small_graph).beta_ == pytest.approx([0.3, 0.7])


@pytest.mark.parametrize("bad", ["best", [1.0], [-1.0, 2.0], [0, 0], [1, float("nan")],
                                 "often"])
def test_bad_settings_are_rejected(small_graph, bad):
    with pytest.raises(ValueError, match="beta_select|weights"):
        KernelNE(kernel="multi", kernels=PAIR, beta_select=bad, **TINY).fit(small_graph)


@pytest.mark.parametrize("params", [{"kernel": "gauss", "beta_select": "validation"},
                                    {"kernel": "multi", "beta_select": "uniform",
                                     "partitions": 2}])
def test_settings_that_need_a_plain_dictionary_fit(small_graph, params):
    with pytest.raises(ValueError, match="kernel='multi'|partition"):
        KernelNE(**{**TINY, **params}).fit(small_graph)


def test_validation_on_edges_fits_on_the_residual_and_refits_the_winner(small_graph,
                                                                       monkeypatch):
    graphs = []
    real = kc._fit_quietly

    def spy(model, graph):
        graphs.append((model.beta_select, graph.n_edges))
        return real(model, graph)

    monkeypatch.setattr(kc, "_fit_quietly", spy)
    model = KernelNE(kernel="multi", kernels=PAIR, beta_select="validation", **TINY)
    model.fit(small_graph)
    choice = model.beta_choice_
    assert choice.names == ["gauss:1", "sch:2", "uniform", "train"]
    assert choice.metric == "roc_auc" and len(choice.scores) == 4
    assert choice.winner == int(np.argmax(choice.scores))
    residual = {e for _, e in graphs[:4]}
    assert len(residual) == 1 and residual.pop() < small_graph.n_edges  # held-out edges unseen
    assert graphs[4] == (choice.settings[choice.winner], small_graph.n_edges)  # the refit
    alone = KernelNE(kernel="multi", kernels=PAIR, beta_select=choice.settings[choice.winner],
                     **TINY).fit(small_graph)
    np.testing.assert_array_equal(model.embedding_, alone.embedding_)
    assert model.beta_select == "validation"  # the setting stays; the weights are beta_


def test_validation_on_labels_reads_only_the_given_labels(small_graph, monkeypatch):
    """The caller passes the training labels only; the selection scores on those nodes, and
    the test nodes' labels cannot change its choice."""
    nodes = np.asarray(small_graph.nodes)
    y = np.arange(len(nodes)) % 3
    train = nodes[:60]
    scored = []
    real = kernelne.evaluation.evaluate_node_classification

    def spy(embedding, labels, label_nodes=None, **kw):
        scored.append(set(np.asarray(label_nodes).tolist()))
        return real(embedding, labels, label_nodes, **kw)

    monkeypatch.setattr(kernelne.evaluation, "evaluate_node_classification", spy)
    model = KernelNE(kernel="multi", kernels=PAIR, beta_select="validation", **TINY)
    model.fit(small_graph, (train, y[:60]))
    assert len(scored) == 4 and all(s == set(train.tolist()) for s in scored)
    assert model.beta_choice_.metric == "micro_f1"
    first = model.beta_choice_.scores
    y_other = y.copy()
    y_other[60:] = (y_other[60:] + 1) % 3  # other test labels: nothing changes
    again = KernelNE(kernel="multi", kernels=PAIR, beta_select="validation", **TINY)
    again.fit(small_graph, (train, y_other[:60]))
    assert again.beta_choice_.scores == first
    np.testing.assert_array_equal(again.embedding_, model.embedding_)


def test_validation_picks_the_kernel_that_does_not_collapse(dense):
    graph, groups = dense
    narrow = KernelNE(**{**DENSE, "beta_select": [1, 0]}).fit(graph)
    wide = KernelNE(**{**DENSE, "beta_select": [0, 1]}).fit(graph)
    assert narrow.health_.neighbour_auc > wide.health_.neighbour_auc + 0.2  # the setting
    fits = {"gauss:0.3": narrow, "gauss:4": wide}
    by_edges, _ = kc.choose_weights(KernelNE(**DENSE), graph)
    by_labels, best = kc.choose_weights(KernelNE(**DENSE), graph, (graph.nodes, groups),
                                        fits=fits)
    for choice in (by_edges, by_labels):  # the narrow kernel, alone or as the learned mix
        assert choice.winner_name in ("gauss:0.3", "train"), choice.table()
        beta = choice.betas[choice.winner]
        assert beta[0] > 0.8 * beta.sum(), choice.table()
        assert choice.scores[choice.winner] > max(choice.scores[1:3]) + 0.2  # wide, uniform
    if by_labels.winner_name == "gauss:0.3":
        assert best is narrow  # the given fit is reused


def test_the_setting_reaches_the_cli_and_the_model_file(tmp_path, capsys):
    from kernelne.cli.app import main

    path = tmp_path / "ring.txt"
    path.write_text("\n".join(f"{i}\t{(i + 1) % 12}\n{i}\t{(i + 5) % 12}" for i in range(12)))
    out, model_file = tmp_path / "emb.npy", tmp_path / "model.npz"
    assert main(["embed", str(path), "-o", str(out), "--model-out", str(model_file), "--dim",
                 "8", "--walks-per-node", "3", "--walk-length", "6", "--window", "3",
                 "--seed", "1", "--workers", "1", "--kernel", "multi", "--kernels",
                 "gauss:1,sch:2", "--beta-select", "validation"]) == 0
    assert "chosen " in capsys.readouterr().out
    back = KernelNE.load_model(model_file)
    assert back.beta_select == "validation" and len(back.beta_) == 2
    fixed = KernelNE(kernel="multi", kernels=PAIR, beta_select=[0.25, 0.75], **TINY)
    fixed.fit(Graph.from_edges(np.arange(11), np.arange(1, 12)))
    fixed.save_model(tmp_path / "fixed.npz")
    assert KernelNE.load_model(tmp_path / "fixed.npz").beta_select == [0.25, 0.75]
