"""The estimators' Python-side input checks: fit_transform's arguments, unfitted models,
adjacency matrices as X, integer settings, random_state and the save suffixes."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError

import kernelne
from kernelne import KernelNE
from kernelne.baselines import HOPE, LINE, DeepWalk, NetMF
from kernelne.cli.app import main
from kernelne.cli.demo import planted_partition
from kernelne.embedding_io import load_embedding, save_embedding
from kernelne.engine.diagnostics import DegenerateEmbeddingWarning
from kernelne.errors import InputError
from kernelne.evaluation import evaluate_node_classification
from kernelne.graphs.graph import load_graph
from kernelne.graphs.npz import save_graph

TINY = {"dim": 8, "walks_per_node": 2, "walk_length": 5, "window": 3, "workers": 1}


@pytest.fixture(autouse=True)
def quiet_degenerate():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DegenerateEmbeddingWarning)
        yield


@pytest.fixture(scope="module")
def planted():
    return planted_partition(0)


def ring_adjacency(n: int = 12) -> np.ndarray:
    """A ring with chords: symmetric, non-negative, connected."""
    a = np.zeros((n, n))
    for i in range(n):
        for j in (1, 3):
            a[i, (i + j) % n] = a[(i + j) % n, i] = 1.0
    return a


# ---- fit_transform passes y and the fit parameters to fit ---------------------------------


def test_fit_transform_labels_reach_the_validation_choice(planted):
    graph, groups = planted
    model = KernelNE(**TINY, kernel="multi", kernels=["gauss:1", "sch:1"], random_state=0,
                     beta_select="validation")
    emb = model.fit_transform(graph, (graph.nodes, groups))
    assert emb is model.embedding_
    assert model.beta_choice_.metric == "micro_f1"  # labels used, not held-out edges


def test_fit_transform_passes_fit_params(planted):
    graph, _ = planted
    seen = []
    KernelNE(**TINY, random_state=0).fit_transform(
        graph, monitor=lambda pairs, A, B: seen.append(pairs))
    assert seen and seen[-1] > 0


@pytest.mark.parametrize("cls", [KernelNE, DeepWalk, HOPE])
def test_fit_transform_hands_y_to_fit(cls, monkeypatch):
    calls = []

    def spy(self, X, y=None, **params):
        calls.append((y, params))
        self.embedding_ = np.zeros((2, 2), np.float32)
        return self

    monkeypatch.setattr(cls, "fit", spy)
    y = np.arange(12)
    cls().fit_transform(ring_adjacency(), y, **({"monitor": print} if cls is KernelNE else {}))
    assert calls[0][0] is y
    assert calls[0][1] == ({"monitor": print} if cls is KernelNE else {})


# ---- unfitted models -----------------------------------------------------------------------


@pytest.mark.parametrize("cls", [KernelNE, DeepWalk, LINE, HOPE, NetMF])
def test_unfitted_transform_and_save_raise_not_fitted(cls, tmp_path):
    with pytest.raises(NotFittedError):
        cls().transform()
    with pytest.raises(NotFittedError):
        cls().save(tmp_path / "e.npy")
    assert not (tmp_path / "e.npy").exists()


def test_unfitted_save_model_raises_not_fitted(tmp_path):
    with pytest.raises(NotFittedError, match="fit"):
        KernelNE().save_model(tmp_path / "m.npz")
    assert list(tmp_path.iterdir()) == []


# ---- an adjacency matrix as X ---------------------------------------------------------------


@pytest.mark.parametrize("make", [np.asarray, sp.csr_matrix, sp.csr_array])
@pytest.mark.parametrize("cls", [KernelNE, DeepWalk, HOPE])
def test_square_adjacency_is_a_graph(cls, make):
    model = cls(**({"dim": 4, "random_state": 0} if cls is HOPE else {**TINY, "random_state": 0}))
    emb = model.fit_transform(make(ring_adjacency()))
    assert emb.shape == (12, model.dim)
    assert model.n_features_in_ == 12
    np.testing.assert_array_equal(model.nodes_, np.arange(12))
    assert model.transform(make(ring_adjacency())) is model.embedding_


@pytest.mark.parametrize("X, match", [
    (np.ones((4, 5)), "square"),
    (-ring_adjacency(), "Negative values"),
    (np.full((3, 3), np.nan), "NaN"),
])
def test_bad_adjacency_raises_value_error(X, match):
    with pytest.raises(ValueError, match=match):
        KernelNE(**TINY).fit(X)


@pytest.mark.parametrize("X", [42, {"a": 1}, None])
def test_what_is_neither_graph_nor_matrix_is_an_input_error(X):
    with pytest.raises(InputError, match="cannot make a graph from a"):
        KernelNE(**TINY).fit(X)

def test_transform_refuses_another_graph_s_matrix():
    model = KernelNE(**TINY, random_state=0).fit(ring_adjacency())
    with pytest.raises(ValueError, match="12 features"):
        model.transform(np.ones((12, 5)))


def test_a_loaded_or_grown_model_transforms_its_graph_s_matrix(tmp_path):
    small = ring_adjacency(12)
    model = KernelNE(**TINY, random_state=0).fit(small)
    model.save_model(tmp_path / "m.npz")
    loaded = KernelNE.load_model(tmp_path / "m.npz")
    assert loaded.transform(small) is loaded.embedding_
    grown = ring_adjacency(14)
    loaded.partial_fit(grown)
    assert loaded.transform(grown).shape == (14, 8)
    with pytest.raises(ValueError, match="14 features"):
        loaded.transform(small)

# ---- integer settings -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["dim", "walks_per_node", "walk_length", "window", "negatives",
                                  "epochs", "workers", "partitions", "rounds", "chunk_walks"])
@pytest.mark.parametrize("value", [2.5, True, "4", np.float64(3.0)])
def test_integer_settings_must_be_integers(name, value):
    model = KernelNE(**{**TINY, name: value})  # __init__ only stores
    assert getattr(model, name) is value
    with pytest.raises(ValueError, match=f"^{name} must be an integer"):
        model.fit(ring_adjacency())


@pytest.mark.parametrize("name, value", [("dim", 0), ("walk_length", -1), ("negatives", -1),
                                         ("workers", 0), ("rounds", 0), ("chunk_walks", 0)])
def test_integer_settings_below_their_least_value(name, value):
    with pytest.raises(ValueError, match=f"^{name} must be at least"):
        KernelNE(**{**TINY, name: value}).fit(ring_adjacency())


def test_integer_settings_accept_numpy_integers_and_all_cores():
    model = KernelNE(**{**TINY, "dim": np.int64(8), "workers": -1}, random_state=0)
    assert model.fit(ring_adjacency()).embedding_.shape == (12, 8)
    model = KernelNE(**{**TINY, "workers": None, "rounds": None}, random_state=0)
    assert model.fit(ring_adjacency()).embedding_.shape == (12, 8)


@pytest.mark.parametrize("cls", [DeepWalk, HOPE, LINE, NetMF])
def test_baselines_refuse_a_fractional_dim(cls):
    with pytest.raises(ValueError, match="^dim must be an integer"):
        cls(dim=2.5).fit(ring_adjacency())


@pytest.mark.parametrize("cls, name", [(LINE, "negatives"), (LINE, "samples"),
                                       (NetMF, "window"), (NetMF, "rank"),
                                       (DeepWalk, "walk_length"), (DeepWalk, "workers")])
def test_baselines_refuse_fractional_integer_settings(cls, name):
    with pytest.raises(ValueError, match=f"^{name} must be an integer"):
        cls(dim=4, **{name: 2.5}).fit(ring_adjacency())


# ---- random_state ---------------------------------------------------------------------------


@pytest.mark.parametrize("make", [np.random.RandomState, np.random.default_rng])
@pytest.mark.parametrize("cls", [KernelNE, DeepWalk, LINE, HOPE, NetMF])
def test_random_state_takes_numpy_generators(cls, make):
    params = ({"dim": 4} if cls in (HOPE, NetMF) else
              {"dim": 8, "samples": 500, "workers": 1} if cls is LINE else TINY)
    a = cls(**params, random_state=make(5)).fit_transform(ring_adjacency())
    b = cls(**params, random_state=make(5)).fit_transform(ring_adjacency())
    np.testing.assert_array_equal(a, b)


def test_random_state_instance_is_drawn_from():
    rng = np.random.RandomState(5)
    model = KernelNE(**TINY, random_state=rng)
    first = model.fit_transform(ring_adjacency()).copy()
    second = model.fit_transform(ring_adjacency())
    assert model.random_state is rng  # the parameter is not replaced by a seed
    assert not np.array_equal(first, second)  # each fit draws a new seed from it


@pytest.mark.parametrize("value", [1.5, True, False, -1, "3", np.bool_(True)])
@pytest.mark.parametrize("cls", [KernelNE, DeepWalk, HOPE])
def test_random_state_refuses_non_seeds(cls, value):
    params = {"dim": 4} if cls is HOPE else TINY
    with pytest.raises(ValueError, match="random_state must be None, an integer"):
        cls(**params, random_state=value).fit(ring_adjacency())


# ---- save and save_model check the suffix ---------------------------------------------------


def test_save_model_refuses_other_suffixes_and_save_npz_is_an_embedding(tmp_path):
    model = KernelNE(**TINY, random_state=0).fit(ring_adjacency())
    for name in ("m.npy", "m.txt", "m"):
        with pytest.raises(InputError, match=rf"{name}: .*\.npz"):
            model.save_model(tmp_path / name)
    assert list(tmp_path.iterdir()) == []
    model.save_model(tmp_path / "m.NPZ")
    assert KernelNE.load_model(tmp_path / "m.NPZ").embedding_.shape == (12, 8)
    model.save(tmp_path / "e.npz")  # vectors and ids, not text under an .npz name
    vectors, nodes = load_embedding(tmp_path / "e.npz")
    np.testing.assert_array_equal(vectors, model.embedding_)
    np.testing.assert_array_equal(nodes, np.arange(12))
    with pytest.raises(InputError, match="not a kernelne model file"):
        KernelNE.load_model(tmp_path / "e.npz")


# ---- embeddings and their node ids: .npz, and the .npy sidecar ------------------------------


@pytest.fixture
def shifted_karate(tmp_path):
    """Karate with ids 1000..1033 (an edge list) and its two clubs (a label file)."""
    g = nx.karate_club_graph()
    edges = tmp_path / "karate1000.txt"
    edges.write_text("".join(f"{u + 1000} {v + 1000}\n" for u, v in g.edges()))
    labels = tmp_path / "clubs.txt"
    labels.write_text("".join(f"{v + 1000} {d['club'].replace(' ', '_')}\n"
                              for v, d in g.nodes(data=True)))
    return edges, labels


EMBED = ["--dim", "8", "--walks-per-node", "2", "--walk-length", "5", "--workers", "1",
         "--seed", "0"]


def test_embed_summary_names_the_sidecar(shifted_karate, tmp_path, capsys):
    edges, _ = shifted_karate
    out = tmp_path / "e.npy"
    assert main(["embed", str(edges), "-o", str(out), *EMBED]) == 0
    side = tmp_path / "e.nodes.txt"
    assert f"wrote      {out} (+ {side}, the node ids)" in capsys.readouterr().out
    assert side.read_text().split()[:2] == ["1000", "1001"]


def test_npy_without_its_sidecar_is_refused_by_evaluate(shifted_karate, tmp_path, capsys):
    edges, labels = shifted_karate
    out = tmp_path / "e.npy"
    assert main(["embed", str(edges), "-o", str(out), *EMBED, "--quiet"]) == 0
    (tmp_path / "e.nodes.txt").unlink()  # copied without it: ids read as 0..33
    capsys.readouterr()
    for missing in ("error", "skip"):
        code = main(["evaluate", "classify", str(out), str(labels), "--repeats", "1",
                     "--ratios", "50%", "--missing", missing])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2
        assert len(err) == 1, err
        lead = ("" if missing == "error"
                else "nothing to classify: none of the 34 labelled nodes of ")
        assert err[0].startswith(f"kernelne: error: {lead}labels file {labels}")
        assert "0..33 (an .npy without a e.nodes.txt beside it)" in err[0]


def test_npy_ids_inside_the_range_are_not_taken_for_a_missing_sidecar(tmp_path):
    vectors = np.random.default_rng(0).normal(size=(40, 4))
    save_embedding(tmp_path / "e.npy", vectors)  # ids 0..39: no sidecar needed
    labels = tmp_path / "l.txt"
    labels.write_text("".join(f"{i} {i % 2}\n" for i in range(30)) + "45 0\n")
    table = evaluate_node_classification(tmp_path / "e.npy", labels, ratios=[0.5], repeats=1,
                                         missing="skip")
    assert list(table.skipped) == [45]


def test_embed_writes_npz_with_ids_and_evaluate_reads_it(shifted_karate, tmp_path, capsys):
    edges, labels = shifted_karate
    out = tmp_path / "e.npz"
    assert main(["embed", str(edges), "-o", str(out), *EMBED, "--quiet"]) == 0
    assert list(tmp_path.glob("e.*")) == [out]  # one file, no sidecar
    vectors, nodes = load_embedding(out)
    assert vectors.shape == (34, 8) and nodes.dtype == np.int64
    np.testing.assert_array_equal(nodes[:3], [1000, 1001, 1002])
    assert main(["evaluate", "classify", str(out), str(labels), "--repeats", "1",
                 "--ratios", "50%"]) == 0
    code = main(["update", str(out), str(edges), "-o", str(tmp_path / "u.npy")])
    assert code == 2
    assert "not a kernelne model file" in capsys.readouterr().err


def test_npz_embedding_keeps_string_ids_and_refuses_a_graph_file(tmp_path):
    nodes = np.array(["a", "b", "7"], dtype=object)
    save_embedding(tmp_path / "e.NPZ", np.eye(3), nodes)
    vectors, back = load_embedding(tmp_path / "e.NPZ")
    assert list(back) == ["a", "b", "7"] and vectors.dtype == np.float32
    save_graph(load_graph(ring_adjacency()), tmp_path / "g.npz")
    with pytest.raises(InputError, match="g.npz: not an embedding file"):
        load_embedding(tmp_path / "g.npz")
    (tmp_path / "t.npz").write_text("1 2\na 0.5 0.5\n")
    with pytest.raises(InputError, match="t.npz: not a readable .npz embedding"):
        load_embedding(tmp_path / "t.npz")


# ---- python -m kernelne ---------------------------------------------------------------------


@pytest.mark.parametrize("flag, want", [("--help", "usage: kernelne"), ("--version", "kernelne ")])
def test_python_dash_m_runs_the_cli(flag, want):
    src = str(Path(kernelne.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "kernelne", flag], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(want)
    if flag == "--version":
        assert done.stdout.strip() == f"kernelne {kernelne.__version__}"

