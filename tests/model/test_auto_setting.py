"""The setting an automatic fit chooses from the graph, and the scale of its rows
(:mod:`kernelne.model.auto_setting`)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from kernelne import KernelNE
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.graphs.graph import Graph
from kernelne.model import auto_setting
from kernelne.model.auto_setting import OUTPUT_NORM, chooses

#: the rows as the setting leaves them (the propagation of dense graphs: test_propagate.py)
FAST = {"dim": 32, "walks_per_node": 10, "workers": 1, "random_state": 0, "propagate": False}


def planted(n: int, m: int, k: int, mu: float, seed: int) -> Graph:
    edges, _ = planted_partition_sbm(n, m, k, mu, seed)
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=n)


@pytest.fixture(scope="module")
def dense() -> Graph:
    """Mean degree 49: the dense setting from the start (and without that rule, the
    Gaussian's rows collapse and the restart test sees it)."""
    return planted(1000, 30000, 5, 0.6, 1)


@pytest.fixture(scope="module")
def sparse() -> Graph:
    """Mean degree 7: the paper's setting, and nothing collapses."""
    return planted(1000, 3500, 10, 0.3, 2)


def fit(graph: Graph, **params) -> KernelNE:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return KernelNE(**{**FAST, **params}).fit(graph)


def test_a_graph_of_mean_degree_8_or_more_trains_the_dense_setting_bit_for_bit(dense):
    auto = fit(dense)
    assert auto.setting_["name"] == "dense"
    assert auto.setting_["params"] == {"kernel": "schoenberg", "sigma": 2 ** 0.5,
                                       "loss": "squared", "window_shrink": True}
    assert auto.setting_["given"] == []
    assert auto.setting_["evidence"] == "mean degree 49.1 >= 8"
    assert [k.kind for k in auto.kernels_] == ["schoenberg"]
    assert auto.kernel == "auto" and auto.window_shrink == "auto"  # parameters untouched
    given = fit(dense, kernel="schoenberg", window_shrink=True, setting="given")
    np.testing.assert_array_equal(auto.embedding_, given.embedding_)
    assert auto.output_scale_ == given.output_scale_
    assert len(auto.shell_checks_) == len(given.shell_checks_)  # one run, no restart


def test_below_the_bound_the_restart_test_switches_to_the_dense_setting(dense, monkeypatch):
    monkeypatch.setattr(auto_setting, "AUTO_MIN_DEGREE", 1000.0)  # the degree rule out of reach
    auto = fit(dense)
    assert auto.setting_["name"] == "dense"
    assert "collapsing" in auto.setting_["evidence"]
    assert [k.kind for k in auto.kernels_] == ["schoenberg"]
    given = fit(dense, kernel="schoenberg", window_shrink=True, setting="given")
    np.testing.assert_array_equal(auto.embedding_, given.embedding_)
    assert len(auto.shell_checks_) > len(given.shell_checks_)  # the Gaussian's run, then this


def test_a_sparse_graph_keeps_the_papers_setting(sparse):
    auto = fit(sparse)
    assert auto.shell_checks_ and not auto.narrowed_
    assert auto.setting_["name"] == "paper"
    assert auto.setting_["evidence"] == ("mean degree 7.1 < 8 and the restart test found no "
                                         "shell, as on sparse graphs")
    paper = fit(sparse, setting="given", normalize="none")
    np.testing.assert_array_equal(auto.embedding_,
                                  paper.embedding_ * np.float32(auto.output_scale_))


@pytest.mark.parametrize("params", [{"kernel": "schoenberg"}, {"loss": "loglik"},
                                    {"window_shrink": True}, {"sigma": 0.5},
                                    {"setting": "given"}, {"robust": False},
                                    {"partitions": 2}])
def test_the_choice_applies_only_at_the_defaults(params):
    assert chooses(KernelNE())
    assert not chooses(KernelNE(**params))


def test_given_parameters_are_used_as_given_on_a_dense_graph(dense):
    given = fit(dense, setting="given")
    assert given.setting_["name"] == "given" and "setting='given'" in given.setting_["evidence"]
    assert [k.kind for k in given.kernels_] == ["gauss"] and given.narrowed_


@pytest.mark.parametrize("name, value", [("setting", "paper"), ("setting", None),
                                         ("normalize", "l2"), ("normalize", True)])
def test_unknown_settings_are_refused(sparse, name, value):
    with pytest.raises(ValueError, match=name):
        KernelNE(**{**FAST, name: value}).fit(sparse)


def test_rows_are_rescaled_to_the_median_norm_and_keep_their_geometry(sparse):
    auto = fit(sparse)
    raw = fit(sparse, normalize="none")
    assert raw.output_scale_ == 1.0 and auto.output_scale_ > 1.0
    assert np.median(np.linalg.norm(auto.embedding_, axis=1)) == pytest.approx(OUTPUT_NORM,
                                                                               rel=1e-5)
    np.testing.assert_array_equal(auto.context_embedding_,
                                  raw.context_embedding_ * np.float32(auto.output_scale_))

    def neighbours(X):
        X = X / np.linalg.norm(X, axis=1, keepdims=True)
        return np.argsort(-(X[:50] @ X.T), axis=1)[:, :10]

    np.testing.assert_array_equal(neighbours(auto.embedding_), neighbours(raw.embedding_))


def test_partial_fit_keeps_old_rows_bit_for_bit_and_scales_new_ones(sparse, tmp_path):
    model = fit(sparse)
    u, v = sparse.indices, np.repeat(np.arange(sparse.n_nodes), np.diff(sparse.indptr))
    new = np.arange(sparse.n_nodes, sparse.n_nodes + 20)
    grown = Graph.from_edges(np.concatenate([v, new]),
                             np.concatenate([u, new % 50]), n_nodes=sparse.n_nodes + 20)
    old = model.embedding_.copy()
    model.partial_fit(grown)
    pos = {node: i for i, node in enumerate(model.nodes_)}
    rows = [pos[i] for i in range(sparse.n_nodes) if i not in set(model.touched_nodes_)]
    np.testing.assert_array_equal(model.embedding_[rows], old[rows])
    new_norm = np.median(np.linalg.norm(model.embedding_[[pos[i] for i in new]], axis=1))
    assert 0.25 * OUTPUT_NORM < new_norm < 4 * OUTPUT_NORM


def test_a_model_file_keeps_the_scale_and_the_setting(dense, tmp_path):
    model = fit(dense)
    model.save_model(tmp_path / "m.npz")
    loaded = KernelNE.load_model(tmp_path / "m.npz")
    assert loaded.output_scale_ == model.output_scale_
    assert loaded.setting_ == model.setting_


def test_a_partitioned_fit_in_a_folder_is_rescaled_once(sparse, tmp_path):
    params = {"partitions": 2, "partition_dir": str(tmp_path / "parts"), "rounds": 2}
    first = fit(sparse, **params)
    again = fit(sparse, **params)  # reads the finished fit back: scaled once, not twice
    raw = fit(sparse, **params, normalize="none")
    assert first.setting_["name"] == "given"
    np.testing.assert_array_equal(np.asarray(first.embedding_), np.asarray(again.embedding_))
    np.testing.assert_array_equal(np.asarray(first.embedding_),
                                  np.asarray(raw.embedding_) * np.float32(first.output_scale_))


def test_cli_paper_is_the_papers_algorithm_and_setting_bit_for_bit(dense, tmp_path, capsys):
    from kernelne.cli.app import main
    from kernelne.graphs.npz import save_graph

    path = tmp_path / "dense.npz"
    save_graph(dense, path)
    args = ["--dim", "32", "--walks-per-node", "10", "--workers", "1", "--seed", "0"]
    assert main(["embed", str(path), "-o", str(tmp_path / "paper.npy"), *args, "--paper"]) == 0
    assert "setting    given" in capsys.readouterr().out
    paper = fit(dense, setting="given", normalize="none", robust=False)
    np.testing.assert_array_equal(np.load(tmp_path / "paper.npy"), paper.embedding_)
    assert main(["embed", str(path), "-o", str(tmp_path / "auto.npy"), *args]) == 0
    out = capsys.readouterr().out
    assert "setting    dense: mean degree 49.1 >= 8\n" in out
    assert "rows       scaled by" in out
    np.testing.assert_array_equal(np.load(tmp_path / "auto.npy"),
                                  fit(dense, propagate="auto").embedding_)


# S4: a value given is used as given, the default's (the paper's) value too

PAPER_VALUES = [("kernel", "gauss"), ("sigma", 2 ** 0.5), ("loss", "squared"),
                ("window_shrink", False)]


@pytest.fixture(scope="module")
def paper_rows(dense) -> KernelNE:
    """The paper's setting on the dense graph: the Gaussian of sigma sqrt 2, squared loss,
    every context weighing 1 (robust restarts on, as in an automatic fit)."""
    return fit(dense, setting="given")


@pytest.mark.parametrize("name, value", PAPER_VALUES)
def test_a_parameter_given_at_the_papers_value_is_used_on_a_dense_graph(dense, paper_rows,
                                                                       name, value):
    model = fit(dense, **{name: value})
    assert getattr(model, name) == value  # get_params keeps what was given
    assert [k.kind for k in model.kernels_] == ["gauss"]
    assert model.setting_["name"] == "given" and model.setting_["given"] == [name]
    assert model.setting_["evidence"] == f"the parameters as given ({name} given)"
    assert name not in model.setting_["params"]
    assert model.setting_["params"] == {k: v for k, v in auto_setting.PAPER_SETTING.items()
                                        if k != name and k not in FAST}
    np.testing.assert_array_equal(model.embedding_, paper_rows.embedding_)


def test_a_parameter_given_at_the_dense_settings_value_is_used_alone(dense):
    model = fit(dense, kernel="schoenberg")
    assert [k.kind for k in model.kernels_] == ["schoenberg"]
    assert model.setting_["given"] == ["kernel"]
    assert model.setting_["params"]["window_shrink"] is False  # "auto", not chosen: the paper's


def test_auto_values_round_trip_through_get_params_and_clone():
    from sklearn.base import clone

    model = KernelNE(kernel="gauss", window_shrink=False)
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    assert copy.kernel == "gauss" and copy.window_shrink is False and copy.sigma == "auto"
    assert chooses(clone(KernelNE())) and not chooses(copy)
    assert KernelNE().set_params(loss="squared").loss == "squared"


@pytest.mark.parametrize("flag, value", [("--kernel", "gauss"),
                                         ("--sigma", "1.4142135623730951"),
                                         ("--loss", "squared"), ("--no-window-shrink", None)])
def test_cli_an_option_given_at_the_papers_value_is_used(dense, paper_rows, tmp_path, capsys,
                                                        flag, value):
    from kernelne.cli.app import main
    from kernelne.graphs.npz import save_graph

    path = tmp_path / "dense.npz"
    save_graph(dense, path)
    given = [flag] if value is None else [flag, value]
    assert main(["embed", str(path), "-o", str(tmp_path / "e.npy"), "--dim", "32",
                 "--walks-per-node", "10", "--workers", "1", "--seed", "0",
                 "--propagate", "off", *given]) == 0
    out = capsys.readouterr().out
    name = flag.removeprefix("--no-").removeprefix("--").replace("-", "_")
    assert f"setting    given: the parameters as given ({name} given)\n" in out
    assert "kernel     gauss:1.41421\n" in out
    shown = {"--kernel": "--kernel gauss", "--sigma": "--sigma 1.4142",
             "--loss": "--loss squared", "--no-window-shrink": "--window-shrink off"}[flag]
    assert f"; given: {shown}\n" in out
    np.testing.assert_array_equal(np.load(tmp_path / "e.npy"), paper_rows.embedding_)


def test_cli_nothing_given_chooses_and_says_so(dense, tmp_path, capsys):
    from kernelne.cli.app import main
    from kernelne.graphs.npz import save_graph

    path = tmp_path / "dense.npz"
    save_graph(dense, path)
    assert main(["embed", str(path), "-o", str(tmp_path / "e.npy"), "--dim", "32",
                 "--walks-per-node", "10", "--workers", "1", "--seed", "0", "--propagate",
                 "off"]) == 0
    out = capsys.readouterr().out
    assert ("values     chosen: --kernel schoenberg, --loss squared, --window-shrink on; "
            "given: none\n") in out
    np.testing.assert_array_equal(np.load(tmp_path / "e.npy"), fit(dense).embedding_)


def test_a_propagation_given_is_used_where_auto_would_not_choose_it(sparse, dense):
    from kernelne.engine.propagation import Propagation

    on = fit(sparse, propagate=True)  # mean degree 7: "auto" would leave the rows
    assert on.propagation_ == Propagation() and "propagation" not in on.setting_
    off = fit(dense, propagate=False)  # mean degree 49: "auto" would propagate
    assert off.propagation_ is None and "propagation" not in off.setting_
    assert fit(dense, propagate="auto").propagation_ == Propagation()


def test_the_walk_budget_is_the_papers_but_on_large_dense_graphs_in_an_automatic_fit():
    budget = auto_setting.walk_budget
    large, small = auto_setting.LARGE_GRAPH_NODES, auto_setting.LARGE_GRAPH_NODES - 1
    assert budget(KernelNE(), large, 8.0) == (20, "auto: 20 (100,000 nodes >= 100,000, mean "
                                                  "degree 8.0 >= 8)")
    assert budget(KernelNE(), small, 20.0) == (80, "auto: 80, the paper's (99,999 nodes, mean "
                                                   "degree 20.0)")
    assert budget(KernelNE(), large, 7.9)[0] == 80
    assert budget(KernelNE(setting="given"), large, 20.0) == (80, "auto: 80, the paper's")
    assert budget(KernelNE(partitions=2), large, 20.0)[0] == 80
    assert budget(KernelNE(walks_per_node=80), large, 20.0) == (80, None)  # given: as given
    assert budget(KernelNE(walks_per_node="AUTO"), large, 20.0)[0] == 20


def test_an_automatic_fit_of_a_large_dense_graph_makes_fewer_walks(dense, monkeypatch):
    monkeypatch.setattr(auto_setting, "LARGE_GRAPH_NODES", dense.n_nodes)
    model = fit(dense, walks_per_node="auto")
    assert model.setting_["params"]["walks_per_node"] == auto_setting.LARGE_GRAPH_WALKS
    assert model.setting_["walks"].startswith("auto: 20 (")
    assert model.n_walks_ == 20 * dense.n_nodes
    given = fit(dense, walks_per_node=80)  # the paper's value given: used
    assert "walks_per_node" not in given.setting_["params"] and "walks" not in given.setting_
    assert given.n_walks_ == 80 * dense.n_nodes


def test_the_start_scale_is_narrower_only_on_large_dense_graphs_in_an_automatic_fit():
    start = auto_setting.start_scale
    large, small = auto_setting.LARGE_GRAPH_NODES, auto_setting.LARGE_GRAPH_NODES - 1
    assert start(KernelNE(), large, 8.0) == (8.0, "kernel scale 8 from the start (100,000 "
                                             "nodes >= 100,000, mean degree 8.0 >= 8: the "
                                             "restart test narrowed the dense setting's kernel "
                                             "on such graphs)")
    assert start(KernelNE(), small, 20.0) == (1.0, None)
    assert start(KernelNE(), large, 7.9) == (1.0, None)  # the paper's setting
    assert start(KernelNE(), large, None) == (1.0, None)
    for given in ({"setting": "given"}, {"partitions": 2}, {"robust": False},
                  {"kernel": "schoenberg"}, {"alpha": 2.0}):
        assert start(KernelNE(**given), large, 20.0) == (1.0, None), given


def test_an_automatic_fit_of_a_large_dense_graph_starts_narrowed_and_says_why(dense,
                                                                             monkeypatch):
    from kernelne.cli.options import describe_fit

    restarted = fit(dense)  # sch:1, narrowed 8x by the restart test, trained again
    assert len(restarted.narrowed_) == 1 and "scale" not in restarted.setting_
    monkeypatch.setattr(auto_setting, "LARGE_GRAPH_NODES", dense.n_nodes)
    model = fit(dense)
    assert model.kernel_scale_ == auto_setting.LARGE_GRAPH_SCALE and not model.narrowed_
    assert model.setting_["scale"].startswith("kernel scale 8 from the start (1,000 nodes")
    assert model.shell_checks_  # the restart test still looks
    # the restarted fit's rows, without the run it gave up
    np.testing.assert_array_equal(model.embedding_, restarted.embedding_)
    assert model.n_pairs_ == restarted.n_pairs_
    summary = describe_fit(model, dense, 1.0)
    assert "effective  sch:" in summary and "; kernel scale 8 from the start" in summary
    given = fit(dense, kernel="schoenberg", window_shrink=True)  # a kernel given: as given
    assert "scale" not in given.setting_ and len(given.narrowed_) == 1  # started at 1
