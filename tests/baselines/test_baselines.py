"""The paper's baselines: shared interface, group separation, determinism, exact matrices."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kernelne.baselines import HOPE, LINE, METHODS, NetMF, make_method, method_params
from kernelne.baselines.hope import spectral_radius
from kernelne.baselines.netmf import deepwalk_filter, netmf_matrix_approx, netmf_matrix_exact
from kernelne.graphs.graph import Graph, from_networkx

SMALL = {
    "deepwalk": dict(dim=16, walks_per_node=10, walk_length=10, window=5, workers=1),
    "node2vec": dict(dim=16, walks_per_node=10, walk_length=10, window=5, p=0.5, q=2.0,
                     workers=1),
    "line": dict(dim=16, samples_per_arc=200, workers=1),
    "hope": dict(dim=16),
    "netmf": dict(dim=16),
    "prone": dict(dim=16),
}


@pytest.fixture(scope="module")
def planted():
    g = nx.planted_partition_graph(2, 50, 0.2, 0.01, seed=7)
    return from_networkx(g), np.repeat([0, 1], 50)


@pytest.fixture(scope="module")
def fitted(planted):
    graph, _ = planted
    return {name: make_method(name, random_state=3, **SMALL[name]).fit(graph) for name in METHODS}


def with_isolated() -> Graph:
    """Karate club plus one isolated node (id 34) and weighted edges."""
    g = nx.karate_club_graph()
    g.add_node(34)
    return from_networkx(g)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_interface_and_shape(name, fitted, planted):
    graph, _ = planted
    model = fitted[name]
    assert model.embedding_.shape == (100, 16)
    assert model.embedding_.dtype == np.float32
    assert np.all(np.isfinite(model.embedding_))
    assert np.array_equal(model.nodes_, graph.nodes)
    assert model.fit_seconds_ > 0
    assert {"dim", "random_state", "workers"} <= set(method_params(name))


@pytest.mark.parametrize("name", sorted(METHODS))
def test_separates_planted_partition(name, fitted, planted):
    _, groups = planted
    clf = make_pipeline(StandardScaler(), LogisticRegression())
    acc = cross_val_score(clf, fitted[name].embedding_, groups, cv=5).mean()
    assert acc > 0.9, f"{name}: accuracy {acc:.3f}"


@pytest.mark.parametrize("name", sorted(METHODS))
def test_deterministic_with_seed(name, fitted, planted):
    graph, _ = planted
    again = make_method(name, random_state=3, **SMALL[name]).fit(graph)
    np.testing.assert_array_equal(again.embedding_, fitted[name].embedding_)


@pytest.mark.parametrize("name", ["deepwalk", "node2vec", "line"])
def test_seed_matters(name, fitted, planted):
    graph, _ = planted
    other = make_method(name, random_state=4, **SMALL[name]).fit(graph)
    assert not np.array_equal(other.embedding_, fitted[name].embedding_)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_isolated_node_is_finite(name):
    params = {**SMALL[name], "dim": 8}
    model = make_method(name, random_state=0, **params).fit(with_isolated())
    assert model.embedding_.shape == (35, 8)
    assert np.all(np.isfinite(model.embedding_))


def test_make_method_validates():
    assert isinstance(make_method("HOPE", dim=8, walk_length=None), HOPE)
    with pytest.raises(ValueError, match="walk_length"):
        make_method("hope", walk_length=10)
    assert make_method("hope", walk_length=10, ignore_unknown=True).get_params()["dim"] == 128
    with pytest.raises(ValueError, match="unknown method"):
        make_method("sdne")


def test_line_halves_are_unit_rows(fitted):
    emb = fitted["line"].embedding_
    np.testing.assert_allclose(np.linalg.norm(emb[:, :8], axis=1), 1, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(emb[:, 8:], axis=1), 1, rtol=1e-5)


def test_line_samples_scale_with_arcs(planted):
    graph, _ = planted
    model = LINE(dim=4, samples_per_arc=3, random_state=0, workers=1).fit(graph)
    assert model.samples_ == 3 * len(graph.indices)
    assert LINE(dim=4, samples=500, random_state=0).fit(graph).samples_ == 500


def dense_katz(graph: Graph, beta: float) -> np.ndarray:
    a = graph.adjacency().toarray().astype(np.float64)
    return np.linalg.solve(np.eye(len(a)) - beta * a, beta * a)


def test_hope_reconstructs_katz():
    graph = with_isolated()
    model = HOPE(dim=16, random_state=0).fit(graph)
    a = graph.adjacency().toarray().astype(np.float64)
    rho = np.abs(np.linalg.eigvals(a)).max()
    assert model.beta_ == pytest.approx(0.5 / rho, rel=1e-8)
    s = dense_katz(graph, model.beta_)
    u, sig, vt = np.linalg.svd(s)
    k = 8
    np.testing.assert_allclose(model.singular_values_, sig[:k], rtol=1e-6)
    best = (u[:, :k] * sig[:k]) @ vt[:k]
    emb = model.embedding_.astype(np.float64)
    approx = emb[:, :k] @ emb[:, k:].T
    np.testing.assert_allclose(approx, best, atol=1e-5)
    # the rank-k error is the optimal one: the tail of the singular values
    err = np.linalg.norm(s - approx)
    assert err == pytest.approx(np.sqrt((sig[k:] ** 2).sum()), rel=1e-3)


def test_hope_rejects_divergent_beta(planted):
    graph, _ = planted
    rho = spectral_radius(graph.adjacency(), np.random.default_rng(0))
    with pytest.raises(ValueError, match="beta"):
        HOPE(dim=4, beta=1.5 / rho).fit(graph)


def reference_netmf(graph: Graph, window: int, b: float) -> np.ndarray:
    """``log max(vol/(bT) sum_r (D^-1 A)^r D^-1, 1)`` with dense numpy, D^-1 = 0 at degree 0."""
    a = graph.adjacency().toarray().astype(np.float64)
    deg = a.sum(axis=1)
    dinv = np.diag(np.where(deg > 0, 1 / np.where(deg > 0, deg, 1), 0.0))
    p = dinv @ a
    s = sum(np.linalg.matrix_power(p, r) for r in range(1, window + 1))
    m = a.sum() / (b * window) * s @ dinv
    return np.log(np.maximum(m, 1.0))


@pytest.mark.parametrize(("window", "b"), [(10, 1.0), (3, 2.0)])
def test_netmf_matrix_equals_dense_reference(window, b):
    g = nx.karate_club_graph()  # weighted edges
    g.add_node(34)
    graph = from_networkx(g)
    assert graph.is_weighted
    got = netmf_matrix_exact(graph, window, b).toarray()
    np.testing.assert_allclose(got, reference_netmf(graph, window, b), rtol=1e-10, atol=1e-12)
    assert got[34].sum() == 0 and got.min() >= 0


def test_netmf_approx_matches_its_formula():
    graph = with_isolated()
    a = graph.adjacency().toarray().astype(np.float64)
    deg = a.sum(axis=1)
    isq = np.where(deg > 0, 1 / np.sqrt(np.where(deg > 0, deg, 1)), 0.0)
    lam, vec = np.linalg.eigh(isq[:, None] * a * isq[None, :])
    h = 12
    lam, vec = lam[-h:], vec[:, -h:]
    y = isq[:, None] * vec * np.sqrt(deepwalk_filter(lam, 10))
    ref = np.log(np.maximum(a.sum() * y @ y.T, 1.0))
    got = netmf_matrix_approx(graph, 10, 1.0, rank=h).toarray()
    np.testing.assert_allclose(got, ref, atol=1e-8)


def test_deepwalk_filter():
    lam = np.array([1.0, 0.5, 0.0, -0.5])
    expected = [1.0, sum(0.5**r for r in range(1, 11)) / 10, 0.0, 0.0]
    np.testing.assert_allclose(deepwalk_filter(lam, 10), expected)


def test_netmf_mode_switch(planted):
    graph, _ = planted
    assert NetMF(dim=4, max_exact_nodes=100).fit(graph).mode_ == "exact"
    approx = NetMF(dim=4, max_exact_nodes=99, rank=32, random_state=0).fit(graph)
    assert approx.mode_ == "approx"
    rand = NetMF(dim=4, svd="randomized", random_state=0).fit(graph)
    exact = NetMF(dim=4, random_state=0).fit(graph)
    # the same subspace whatever the SVD solver: compare Gram matrices
    g1 = rand.embedding_.astype(np.float64) @ rand.embedding_.T
    g2 = exact.embedding_.astype(np.float64) @ exact.embedding_.T
    np.testing.assert_allclose(g1, g2, atol=1e-3 * np.abs(g2).max())
