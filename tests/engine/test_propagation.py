"""Spectral propagation (ProNE's enhancement): the Chebyshev filter against a dense
eigendecomposition, the output's form, the settings' parsing and the cost's growth."""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp
from prone_reference import aligned, reference_filter, reference_propagation

from kernelne import Graph
from kernelne.engine import propagation as propagation_module
from kernelne.engine.propagation import (
    AUTO_MIN_DEGREE,
    Propagation,
    band_pass,
    chebyshev_filter,
    check_propagation,
    choose_propagation,
    mean_degree,
    parse_propagation,
    propagate_rows,
    with_self_loops,
)
from kernelne.errors import ParamError


def _ring_with_chords(n: int = 12) -> sp.csr_matrix:
    rows = [(i, (i + 1) % n) for i in range(n)] + [(0, 6), (2, 9), (3, 7)]
    a = sp.lil_matrix((n, n))
    for u, v in rows:
        a[u, v] = a[v, u] = 1.0
    a[4, 5] = a[5, 4] = 3.0  # one weighted edge
    return sp.csr_matrix(a)


def _dense_filter(adjacency: sp.csr_matrix, rows: np.ndarray, mu: float, theta: float):
    """``g(L) R`` through the eigendecomposition of the symmetric form of ``L``."""
    a_hat = with_self_loops(adjacency).toarray()
    deg = a_hat.sum(axis=1)
    s = np.eye(len(deg)) - a_hat / np.sqrt(np.outer(deg, deg))  # D^-1/2 L D^1/2
    lam, vecs = np.linalg.eigh(s)
    g = vecs @ np.diag(band_pass(lam, mu, theta)) @ vecs.T
    return np.diag(deg ** -0.5) @ g @ np.diag(deg ** 0.5) @ rows


@pytest.mark.parametrize("mu,theta", [(0.2, 0.5), (1.0, 1.0), (0.0, 0.3)])
def test_chebyshev_filter_matches_the_eigendecomposition(mu, theta):
    a = _ring_with_chords()
    rows = np.random.default_rng(0).standard_normal((a.shape[0], 4))
    got = chebyshev_filter(a, rows, Propagation(order=10, mu=mu, theta=theta))
    want = _dense_filter(a, rows, mu, theta)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * np.abs(want).max())
    np.testing.assert_allclose(reference_filter(a, rows, Propagation(10, mu, theta)), want,
                               rtol=0, atol=1e-7 * np.abs(want).max())


@pytest.mark.parametrize("settings", [Propagation(), Propagation(2), Propagation(3, 1.0, 2.0),
                                      Propagation(20, 0.0, 5.0), Propagation(1)])
def test_propagation_equals_the_float64_reference(settings):
    a = _random_graph(3_000, 30_000, 7)
    a.data[::3] = 2.5  # weights kept
    rows = np.random.default_rng(8).standard_normal((3_000, 24)).astype(np.float32)
    got = propagate_rows(a, rows, settings)
    want = reference_propagation(a, rows, settings)
    assert got.shape == rows.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, aligned(got, want), rtol=0, atol=1e-4)


def test_fewer_nodes_than_columns_keep_every_column():
    a = _ring_with_chords()  # 12 nodes
    rows = np.random.default_rng(9).standard_normal((12, 20))
    got = propagate_rows(a, rows)
    want = reference_propagation(a, rows)  # 12 columns
    assert got.shape == (12, 20)
    assert not got[:, 12:].any()
    np.testing.assert_allclose(got[:, :12], aligned(got[:, :12], want), rtol=0, atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_low_order_is_only_an_approximation():
    a = _ring_with_chords()
    rows = np.random.default_rng(1).standard_normal((a.shape[0], 3))
    want = _dense_filter(a, rows, 0.2, 2.0)
    err = [np.abs(chebyshev_filter(a, rows, Propagation(k, 0.2, 2.0)) - want).max()
           for k in (2, 4, 10)]
    assert err[0] > err[1] > err[2] and err[0] > 1e-3 and err[2] < 1e-5


def test_propagated_rows_are_the_svd_of_the_filtered_rows():
    a = _ring_with_chords()
    rows = np.random.default_rng(2).standard_normal((a.shape[0], 5))
    out = propagate_rows(a, rows)
    assert out.shape == rows.shape and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    mixed = with_self_loops(a) @ (rows - chebyshev_filter(a, rows))
    u, sv, _ = np.linalg.svd(mixed, full_matrices=False)
    ref = u * np.sqrt(sv)
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(np.abs(out), np.abs(ref), atol=1e-5)  # up to column signs


def test_directed_adjacency_is_symmetrised():
    a = _ring_with_chords()
    upper = sp.triu(a).tocsr()
    rows = np.random.default_rng(3).standard_normal((a.shape[0], 3))
    np.testing.assert_allclose(chebyshev_filter(upper, rows), chebyshev_filter(a, rows))


def test_propagation_changes_rows_and_is_deterministic():
    a = _ring_with_chords()
    rows = np.random.default_rng(4).standard_normal((a.shape[0], 3))
    first, second = propagate_rows(a, rows), propagate_rows(a, rows)
    assert np.array_equal(first, second)
    plain = propagate_rows(a, rows, Propagation(order=1))
    assert np.abs(np.abs(first) - np.abs(plain)).max() > 0.05


@pytest.mark.parametrize("weighted", [False, True])
def test_an_undirected_graph_propagates_as_its_matrix_bit_for_bit(weighted):
    rng = np.random.default_rng(11)
    src, dst = rng.integers(0, 400, 3_000), rng.integers(0, 400, 3_000)
    weights = rng.uniform(0.1, 4.0, 3_000).astype(np.float32) if weighted else None
    g = Graph.from_edges(src, dst, weights=weights, n_nodes=400)
    rows = rng.standard_normal((400, 70)).astype(np.float32)  # two column blocks
    from_csr, from_matrix = (propagation_module._SelfLooped.of(x) for x in (g, g.adjacency()))
    for got, want in zip(from_csr.arrays, from_matrix.arrays, strict=True):
        assert np.array_equal(got, want)
    assert np.array_equal(propagate_rows(g, rows), propagate_rows(g.adjacency(), rows))
    assert np.array_equal(chebyshev_filter(g, rows), chebyshev_filter(g.adjacency(), rows))


def test_a_stored_self_loop_gives_way_to_the_added_one():
    # 0-1, 1-2 and a self-loop on 1 of weight 5: Â's row 1 is 1 (loop, 1.0), 0 and 2
    g = Graph(indptr=np.array([0, 1, 4, 5]), indices=np.array([1, 0, 1, 2, 1], np.int32),
              weights=np.array([2, 2, 5, 3, 3], np.float32), nodes=np.arange(3))
    a_hat = propagation_module._SelfLooped.of(g)
    assert a_hat.indptr.tolist() == [0, 2, 5, 7]
    assert a_hat.indices.tolist() == [0, 1, 0, 1, 2, 1, 2]
    assert a_hat.weights.tolist() == [1, 2, 2, 1, 3, 3, 1]
    np.testing.assert_allclose(a_hat.inv_deg, [1 / 3, 1 / 6, 1 / 4], rtol=1e-7)
    want = propagation_module._SelfLooped.of(g.adjacency())
    for got, ref in zip(a_hat.arrays, want.arrays, strict=True):
        assert np.array_equal(got, ref)


def test_prefetching_products_equal_plain_sums():
    from kernelne.engine import propagation_kernels as kern

    g = Graph.from_edges(*np.random.default_rng(12).integers(0, 300, (2, 2_000)), n_nodes=300)
    a_hat = propagation_module._SelfLooped.of(g)
    x = np.random.default_rng(13).standard_normal((300, 16)).astype(np.float32)
    out = np.empty_like(x)
    kern.shifted_walk(*a_hat.arrays, np.float32(0.8), x, out)
    want = np.empty_like(x)
    for i in range(300):  # the kernel's order of float32 operations, one row at a time
        lo, hi = a_hat.indptr[i], a_hat.indptr[i + 1]
        acc = np.float32(0.8) * x[i]
        for j, w in zip(a_hat.indices[lo:hi], a_hat.weights[lo:hi], strict=True):
            acc = acc - np.float32(a_hat.inv_deg[i] * w) * x[j]
        want[i] = acc
    assert np.array_equal(out, want)
    wide = np.zeros((300, 40), np.float32)
    kern.hat_product(a_hat.indptr, a_hat.indices, a_hat.weights, x, wide, 20)
    np.testing.assert_allclose(wide[:, 20:36], sp.csr_matrix(
        (a_hat.weights, a_hat.indices, a_hat.indptr), shape=(300, 300)) @ x, rtol=1e-5,
        atol=1e-5)
    assert not wide[:, :20].any() and not wide[:, 36:].any()


def test_wrong_row_count_is_refused():
    with pytest.raises(ValueError, match="rows for a graph of 12 nodes"):
        propagate_rows(_ring_with_chords(), np.zeros((5, 2)))


@pytest.mark.parametrize("spec,want", [
    (False, None), (None, None), ("off", None), (True, Propagation()),
    ("default", Propagation()), ("order=5", Propagation(5, 0.2, 0.5)),
    ("mu=0.5, theta=1", Propagation(10, 0.5, 1.0)), (Propagation(3, 1, 2), Propagation(3, 1, 2)),
])
def test_parse_propagation(spec, want):
    assert parse_propagation(spec) == want


@pytest.mark.parametrize("spec,message", [
    ("order=0", "order must be a whole number"), ("order=2.5", "order must be a whole number"),
    ("mu=3", "mu must be in"), ("theta=0", "theta must be > 0"), ("theta=nan", "theta"),
    ("sigma=1", "is not order=K"), ("mu=x", "mu must be a number"), (3, "must be True"),
    ("order=101", "order must be at most 100, got 101"),
    ("order=1000000000", "order must be at most 100, got 1e"),
    ("theta=21", "theta must be at most 20"), ("theta=1e6", "theta must be at most 20"),
    ("order=5,order=6", "order is given twice"), ("mu=0.1, mu=0.1", "mu is given twice"),
])
def test_parse_propagation_refuses(spec, message):
    with pytest.raises(ValueError, match=message):
        parse_propagation(spec)


def _random_graph(n: int, m: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    u, v = rng.integers(0, n, m), rng.integers(0, n, m)
    a = sp.coo_matrix((np.ones(m), (u, v)), shape=(n, n)).tocsr()
    return sp.csr_matrix(a + a.T)


def test_cost_grows_linearly_in_the_edges():
    n, d = 20_000, 16
    rows = np.random.default_rng(5).standard_normal((n, d))
    times = {}
    for m in (400_000, 800_000):
        a = _random_graph(n, m, m)
        chebyshev_filter(a, rows)  # warm
        best = []
        for _ in range(3):
            t = time.perf_counter()
            chebyshev_filter(a, rows)
            best.append(time.perf_counter() - t)
        times[m] = min(best)
    ratio = times[800_000] / times[400_000]
    assert 1.1 < ratio < 3.2, times  # linear: ~2 (rows' dense work keeps it below)


def test_auto_propagates_where_the_filter_fits_in_the_memory_available(monkeypatch):
    full = sp.csr_matrix(np.ones((10, 10)) - np.eye(10))
    need = propagation_module.filter_bytes(full, 8)
    assert need == (10 * 8 + 3 * 10 * 8) * 4 + 16 * (2 * 90 + 10) + 160  # d <= COLUMN_BLOCK
    monkeypatch.setattr(propagation_module, "available_memory_bytes", lambda: need - 1)
    assert choose_propagation("auto", full, dim=8) == (
        None, "auto: the filter needs 0.0 GiB, 0.0 GiB available")
    assert choose_propagation(True, full, dim=8) == (Propagation(), "as given")
    # rows on disk (a partitioned fit's): the result goes beside them, not into memory
    on_disk = propagation_module.filter_bytes(full, 8, rows_in_memory=False)
    assert on_disk == need - 10 * 8 * 4
    assert choose_propagation("auto", full, dim=8, partitioned=True)[0] == Propagation()
    monkeypatch.setattr(propagation_module, "available_memory_bytes", lambda: on_disk - 1)
    assert choose_propagation("auto", full, dim=8, partitioned=True)[0] is None
    monkeypatch.setattr(propagation_module, "available_memory_bytes", lambda: need)
    assert choose_propagation("auto", full, dim=8)[0] == Propagation()
    monkeypatch.setattr(propagation_module, "available_memory_bytes", lambda: None)
    assert choose_propagation("auto", full, dim=8)[0] == Propagation()


def test_mean_degree_is_of_the_undirected_graph_over_nodes_with_an_edge():
    # a directed 3-cycle plus a reciprocal pair, a self-loop and an isolated node 5
    a = sp.csr_matrix(([1.0, 1, 1, 1, 1, 1], ([0, 1, 2, 3, 4, 0], [1, 2, 0, 4, 3, 0])),
                      shape=(6, 6))
    assert mean_degree(a) == pytest.approx((2 + 2 + 2 + 1 + 1) / 5)
    assert mean_degree(sp.csr_matrix((4, 4))) == 0.0


def test_auto_chooses_by_mean_degree_and_any_other_setting_is_as_given():
    ring = _ring_with_chords()  # mean degree 2.5
    assert choose_propagation("auto", ring, dim=8) == (None, "auto: mean degree 2.5 < 8")
    full = sp.csr_matrix(np.ones((10, 10)) - np.eye(10))  # mean degree 9
    assert choose_propagation("auto", full, dim=8) == (Propagation(),
                                                       "auto: mean degree 9.0 >= 8")
    assert choose_propagation(" auto ", full, dim=8, partitioned=True)[0] == Propagation()
    assert choose_propagation("auto", full, dim=10)[0] == Propagation()
    assert choose_propagation("auto", full, dim=11) == (None, "auto: 10 nodes, fewer than dim 11")
    assert choose_propagation(True, ring, dim=8) == (Propagation(), "as given")
    assert choose_propagation("order=3", full, dim=10) == (Propagation(order=3), "as given")
    with pytest.raises(ParamError, match=r"dim=11 must be at most the number of nodes \(10\)"):
        choose_propagation("order=3", full, dim=11)
    assert choose_propagation(False, full) == (None, "as given")
    assert AUTO_MIN_DEGREE == 8.0
    check_propagation("auto")
    with pytest.raises(ValueError, match="decided on a graph"):
        parse_propagation("auto")


def test_the_filters_buffers_and_the_result_start_on_cache_lines(monkeypatch):
    from kernelne.engine import propagation_kernels as kern

    g = Graph.from_edges(*np.random.default_rng(14).integers(0, 500, (2, 4_000)), n_nodes=500)
    rows = np.random.default_rng(15).standard_normal((500, 70)).astype(np.float32)
    want = propagate_rows(g, rows)
    starts = []
    for name in ("shifted_walk", "clenshaw_step"):
        real = getattr(kern, name)

        def spy(*args, real=real):
            starts.extend(a.ctypes.data % 64 for a in args[5:] if isinstance(a, np.ndarray)
                          and a.ndim == 2 and a is not rows)
            return real(*args)
        monkeypatch.setattr(kern, name, spy)
    got = propagate_rows(g, rows)
    assert len(starts) > 10 and set(starts) == {0}  # t, b1, b2 (a row of 64 floats: 4 lines)
    assert got.ctypes.data % 64 == 0 and np.array_equal(got, want)  # the same bits
