"""Spectral propagation of embedding rows: ProNE's enhancement step.

J. Zhang, Y. Dong, Y. Wang, J. Tang and M. Ding, "ProNE: Fast and Scalable Network
Representation Learning", IJCAI 2019, section 3.2. Given rows ``R`` (``n x d``, one per node) and
the adjacency ``A`` (symmetrised; weights kept), with self-loops ``Â = I + A`` and
``D = diag(Â 1)``, the random-walk normalised Laplacian is

    L = I - D^{-1} Â,        eigenvalues in [0, 2).

The band-pass filter ``g(λ) = exp(-θ/2 ((λ - μ)^2 - 2))`` (a Gaussian bump centred at ``μ``;
the paper writes ``- 1`` for ``- 2``, a constant factor ``e^{θ/2}`` that its authors' code, and
this module, do not apply) is applied as ``g(L) R`` through its Chebyshev expansion. With
``M = L - μ I`` and the variable ``X = M^2 / 2 - I`` (spectrum inside ``[-1, 1]`` for ``μ`` in
``[0, 2]``), ``g(L) = exp(-θ X)`` and the Jacobi-Anger expansion gives

    exp(-θ X) = I_0(θ) T_0(X) + 2 sum_{k=1..K-1} (-1)^k I_k(θ) T_k(X),

``I_k`` the modified Bessel functions of the first kind and ``T_k`` the Chebyshev
polynomials, built by the recurrence ``T_{k+1}(X) R = 2 X T_k(X) R - T_{k-1}(X) R``. The
propagated rows are

    R' = Â (R - g(L) R),

whose thin SVD ``U Σ Vᵀ`` gives ``U sqrt(Σ)`` with unit rows, the embedding (as the authors'
code). The filter runs as numba kernels (:mod:`kernelne.engine.propagation_kernels`) over
``Â``'s CSR in float32, by Clenshaw's recurrence for the Chebyshev sum, and the SVD goes
through the ``d x d`` Gram matrix: ``2K - 1`` sparse products (``O(K |E| d)``), one
``O(n d^2)`` product, and above the rows an ``n x d`` float32 buffer for the result and three
``n x COLUMN_BLOCK`` ones (the filter runs on :data:`COLUMN_BLOCK` columns at a time); an
undirected graph's ``Â`` is built from its CSR, with no matrix. Order ``K = 10``,
``μ = 0.2`` and ``θ = 0.5`` are ProNE's defaults.

``propagate="auto"`` (:func:`choose_propagation`) propagates with ProNE's defaults where the
graph's mean degree is at least :data:`AUTO_MIN_DEGREE` and the filter's buffers fit in the
memory available, and not otherwise (docs/QUALITY.md: the propagation lifts node
classification on dense graphs and is a wash on sparse ones).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.special import iv

from kernelne.engine.rows import aligned_rows
from kernelne.errors import ParamError
from kernelne.memory import available_memory_bytes

#: ProNE's defaults: Chebyshev order, the filter's centre mu and its width theta
DEFAULT_ORDER = 10
DEFAULT_MU = 0.2
DEFAULT_THETA = 0.5
#: ``propagate="auto"`` propagates where the mean degree (of the undirected graph, over the
#: nodes with an edge) is at least this
AUTO_MIN_DEGREE = 8.0
#: Upper bounds of the settings: more Chebyshev terms than this add nothing a float32 row can
#: hold (the coefficients ``I_k(θ)`` fall faster than ``θ^k / k!``), and a wider ``θ`` makes
#: the filter's extremes ``e^{±θ}`` overflow float32's range
MAX_ORDER = 100
MAX_THETA = 20.0

@dataclass(frozen=True)
class Propagation:
    """The settings of a spectral propagation.

    Attributes
    ----------
    order : int
        Terms of the Chebyshev expansion [K] (1: no propagation, only the final SVD).
    mu : float
        The filter's centre on the Laplacian's spectrum, in ``[0, 2]``.
    theta : float
        The filter's width (larger: narrower band), > 0.
    """

    order: int = DEFAULT_ORDER
    mu: float = DEFAULT_MU
    theta: float = DEFAULT_THETA

    def __str__(self) -> str:
        return f"order={self.order},mu={self.mu:g},theta={self.theta:g}"


def parse_propagation(spec: object) -> Propagation | None:
    """Read a ``propagate`` setting.

    Parameters
    ----------
    spec : bool, None, str or Propagation
        ``False``/``None``/``"off"``: no propagation; ``True``/``"on"``/``"default"``:
        ProNE's defaults; a string ``"order=10,mu=0.2,theta=0.5"`` (any subset of the three
        keys, the others at their defaults); or a :class:`Propagation`.

    Returns
    -------
    Propagation or None
        The settings, or None for no propagation.

    Raises
    ------
    ValueError
        An unknown key, a key given twice, a value that is not a number, or a value out of
        range (order a whole number in ``[1, MAX_ORDER]``, mu in ``[0, 2]``, theta in
        ``(0, MAX_THETA]``).
    """
    if is_auto(spec):
        raise ValueError("propagate='auto' is decided on a graph (choose_propagation)")
    if spec is None or spec is False or (isinstance(spec, str) and spec.strip() == "off"):
        return None
    if spec is True or (isinstance(spec, str) and spec.strip() in ("on", "default", "")):
        return Propagation()
    if isinstance(spec, Propagation):
        return _checked(spec.order, spec.mu, spec.theta)
    if not isinstance(spec, str):
        raise ValueError(f"propagate must be True, False, 'auto' or 'order=K,mu=M,theta=T', "
                         f"got {spec!r}")
    values: dict[str, float] = {}
    for part in spec.split(","):
        key, sep, text = part.partition("=")
        key = key.strip()
        if not sep or key not in ("order", "mu", "theta"):
            raise ValueError(f"propagate: {part.strip()!r} is not order=K, mu=M or theta=T "
                             f"(e.g. 'order=10,mu=0.2,theta=0.5')")
        if key in values:
            raise ValueError(f"propagate: {key} is given twice in {spec.strip()!r}")
        try:
            values[key] = float(text)
        except ValueError:
            raise ValueError(f"propagate: {key} must be a number, got {text.strip()!r}") from None
    return _checked(values.get("order", DEFAULT_ORDER), values.get("mu", DEFAULT_MU),
                    values.get("theta", DEFAULT_THETA))


def is_auto(spec: object) -> bool:
    """Whether ``spec`` is ``"auto"`` (decided on the graph by :func:`choose_propagation`)."""
    return isinstance(spec, str) and spec.strip() == "auto"


def check_propagation(spec: object) -> None:
    """Raise ValueError if ``spec`` is neither ``"auto"`` nor read by
    :func:`parse_propagation`."""
    if not is_auto(spec):
        parse_propagation(spec)


def mean_degree(adjacency: sp.spmatrix | Any) -> float:
    """The mean degree of the graph the propagation filters (:func:`with_self_loops`'s
    ``max(A, Aᵀ)``, self-loops left out) over the nodes with at least one edge (0.0 without
    edges). ``adjacency`` may be a :class:`~kernelne.graphs.csr.Graph`: an undirected one is
    measured on its CSR (each row's entries less its self-loops), with no matrix built."""
    if not sp.issparse(adjacency):
        if adjacency.directed:
            return mean_degree(adjacency.adjacency())
        counts = _neighbours_but_self(*adjacency.csr_arrays()[:2])
    else:
        counts = np.diff(with_self_loops(adjacency).indptr) - 1  # less each row's own loop
    linked = int((counts > 0).sum())
    return float(counts.sum()) / linked if linked else 0.0


@njit(cache=True)
def _neighbours_but_self(indptr, indices):
    counts = np.empty(len(indptr) - 1, np.int64)
    for v in range(len(indptr) - 1):
        c = 0
        for e in range(indptr[v], indptr[v + 1]):
            c += indices[e] != v
        counts[v] = c
    return counts


def graph_size(adjacency: sp.spmatrix | Any) -> tuple[int, int]:
    """``(n, stored entries)`` of a sparse adjacency or of a
    :class:`~kernelne.graphs.csr.Graph` (its CSR's entries: every undirected edge twice)."""
    if sp.issparse(adjacency):
        return int(adjacency.shape[0]), int(adjacency.nnz)
    return int(adjacency.n_nodes), len(adjacency.indices)


def choose_propagation(spec: object, adjacency: sp.spmatrix | Any, dim: int = 128,
                       partitioned: bool = False, degree: float | None = None
                       ) -> tuple[Propagation | None, str]:
    """The propagation a ``propagate`` setting gives on a graph, and why.

    Parameters
    ----------
    spec : bool, None, str or Propagation
        A setting :func:`parse_propagation` reads, or ``"auto"``: ProNE's defaults where the
        mean degree (:func:`mean_degree`) is at least :data:`AUTO_MIN_DEGREE` and the filter
        (:func:`filter_bytes`) fits in the memory available
        (:func:`kernelne.memory.available_memory_bytes`), in a fit in memory; none otherwise.
    adjacency : sparse matrix or Graph
        The graph's ``n x n`` adjacency, or the graph (a memory-mapped one's edges are then
        never copied: :func:`graph_size`, :func:`mean_degree`).
    dim : int, default 128
        The rows' dimension ``d``.
    partitioned : bool, default False
        The rows come from a partitioned fit: the propagated rows are written beside them on
        disk, so ``"auto"`` needs memory for the filter's buffers and the graph only
        (:func:`filter_bytes` with ``rows_in_memory=False``).
    degree : float, optional
        :func:`mean_degree` of ``adjacency`` if already measured (None: measured here).

    Returns
    -------
    tuple of (Propagation or None, str)
        The settings (None: none) and the evidence, one phrase. ``"auto"`` on a graph of
        fewer nodes than ``dim`` gives none: the thin SVD would keep fewer columns.

    Raises
    ------
    ParamError
        A propagation given on a graph of fewer nodes than ``dim`` (its thin SVD keeps one
        column per node at most).
    """
    n = graph_size(adjacency)[0]
    if not is_auto(spec):
        settings = parse_propagation(spec)
        if settings is not None and n < int(dim):
            raise ParamError(f"the spectral propagation ({{propagate}}) keeps one column per "
                             f"node at most: {{dim={int(dim)}}} must be at most the number of "
                             f"nodes ({n:,}): choose a smaller {{dim}}, or no propagation")
        return settings, "as given"
    if n < int(dim):
        return None, f"auto: {n:,} nodes, fewer than dim {int(dim)}"
    need = filter_bytes(adjacency, int(dim), rows_in_memory=not partitioned)
    free = available_memory_bytes()
    if free is not None and need > free:
        return None, (f"auto: the filter needs {need / 2**30:.1f} GiB, "
                      f"{free / 2**30:.1f} GiB available")
    if degree is None:
        degree = mean_degree(adjacency)
    sign = ">=" if degree >= AUTO_MIN_DEGREE else "<"
    return (Propagation() if degree >= AUTO_MIN_DEGREE else None,
            f"auto: mean degree {degree:.1f} {sign} {AUTO_MIN_DEGREE:g}")


def filter_bytes(adjacency: sp.spmatrix | Any, dim: int, rows_in_memory: bool = True) -> int:
    """The memory :func:`propagate_rows` takes above the rows: the result's ``n x d`` float32
    buffer (unless ``rows_in_memory`` is False: the result is written to a file, its ``out``),
    three ``n x COLUMN_BLOCK`` ones (:data:`COLUMN_BLOCK`) and ``Â``'s CSR: of an undirected
    :class:`~kernelne.graphs.csr.Graph`, its entries and the self-loops, 8 bytes each, built
    in place; of a matrix, twice its entries and the self-loops (``max(A, Aᵀ)``), and as much
    again while it is built."""
    (n, nnz), d = graph_size(adjacency), int(dim)
    result = n * d if rows_in_memory else 0
    csr = 8 * (nnz + n) if _from_own_csr(adjacency) else 2 * 8 * (2 * nnz + n)
    return (result + 3 * n * min(d, COLUMN_BLOCK)) * 4 + csr + 16 * n


def _checked(order: float, mu: float, theta: float) -> Propagation:
    if not (math.isfinite(order) and order >= 1 and float(order).is_integer()):
        raise ValueError(f"propagate: order must be a whole number >= 1, got {order:g}")
    if order > MAX_ORDER:
        raise ValueError(f"propagate: order must be at most {MAX_ORDER}, got {order:g}")
    if not (math.isfinite(mu) and 0.0 <= mu <= 2.0):
        raise ValueError(f"propagate: mu must be in [0, 2], got {mu:g}")
    if not (math.isfinite(theta) and theta > 0):
        raise ValueError(f"propagate: theta must be > 0, got {theta:g}")
    if theta > MAX_THETA:
        raise ValueError(f"propagate: theta must be at most {MAX_THETA:g} (the filter's "
                         f"e^theta overflows), got {theta:g}")
    return Propagation(int(order), float(mu), float(theta))


def with_self_loops(adjacency: sp.spmatrix) -> sp.csr_matrix:
    """``Â = I + A`` with ``A`` symmetrised (``max(A, Aᵀ)``), float64 CSR."""
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    a = a.maximum(a.T)
    a.setdiag(0.0)
    a.eliminate_zeros()
    return sp.csr_matrix(a + sp.identity(a.shape[0], format="csr"))


def band_pass(eigenvalues: np.ndarray, mu: float = DEFAULT_MU,
              theta: float = DEFAULT_THETA) -> np.ndarray:
    """The filter ``g(λ) = exp(-θ/2 ((λ - μ)^2 - 2))`` at Laplacian eigenvalues ``λ``."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    return np.exp(-0.5 * theta * ((lam - mu) ** 2 - 2.0))


def chebyshev_filter(adjacency: sp.spmatrix | Any, rows: np.ndarray,
                     settings: Propagation = Propagation()) -> np.ndarray:
    """``g(L) R`` by the Chebyshev expansion of order ``settings.order`` (see the module).

    Parameters
    ----------
    adjacency : sparse matrix or Graph
        ``n x n`` non-negative adjacency (symmetrised here), or the graph (an undirected
        one's CSR is read as it is, with no matrix built).
    rows : ndarray of shape (n, d)
        The rows ``R``.
    settings : Propagation
        Order, ``mu`` and ``theta``.

    Returns
    -------
    ndarray of shape (n, d)
        ``g(L) R`` in float32.
    """
    r = _float32_rows(rows, graph_size(adjacency)[0])
    if settings.order == 1:
        return iv(0, settings.theta).astype(np.float32) * r
    return r - _residual(_SelfLooped.of(adjacency), r, settings)


def _from_own_csr(adjacency: sp.spmatrix | Any) -> bool:
    """Whether ``Â`` is built from the graph's own CSR (an undirected
    :class:`~kernelne.graphs.csr.Graph`), not through a matrix."""
    return not sp.issparse(adjacency) and not adjacency.directed


class _SelfLooped:
    """``Â = I + max(A, Aᵀ)`` as the kernels read it: CSR arrays with float32 weights and
    ``1 / (Â 1)``."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, weights: np.ndarray,
                 degree: np.ndarray) -> None:
        self.indptr, self.indices, self.weights = indptr, indices, weights
        self.inv_deg = (1.0 / np.asarray(degree, dtype=np.float64)).astype(np.float32)
        self.arrays = (self.indptr, self.indices, self.weights, self.inv_deg)

    @classmethod
    def of(cls, adjacency: sp.spmatrix | Any) -> _SelfLooped:
        """``Â`` of a sparse adjacency, or of a :class:`~kernelne.graphs.csr.Graph`: an
        undirected one straight from its CSR (the numba kernel ``self_looped``: the same
        arrays), a directed one through its matrix."""
        if _from_own_csr(adjacency):
            from kernelne.engine.propagation_kernels import self_looped

            indptr, indices, weights = self_looped(*adjacency.csr_arrays())
            return cls(indptr, indices, weights,  # scipy's row sums: the same float32
                       np.add.reduceat(weights, indptr[:-1]))
        if not sp.issparse(adjacency):  # a directed graph
            adjacency = adjacency.adjacency()
        a = sp.csr_matrix(adjacency, dtype=np.float32)
        a = a.maximum(a.T).tocsr()
        a.setdiag(0.0)
        a.eliminate_zeros()
        a_hat = sp.csr_matrix(a + sp.identity(a.shape[0], dtype=np.float32, format="csr"))
        return cls(a_hat.indptr, a_hat.indices, np.asarray(a_hat.data, dtype=np.float32),
                   np.asarray(a_hat.sum(axis=1)).ravel())


def _residual(graph: _SelfLooped, rows: np.ndarray, settings: Propagation,
              lo: int = 0, hi: int | None = None) -> np.ndarray:
    """``R - g(L) R`` of the columns ``lo .. hi`` of ``R`` (default: all) by Clenshaw's
    recurrence over the Chebyshev terms (order >= 2): two ``n x (hi - lo)`` float32 buffers
    and the one returned, each row on cache lines (:func:`~kernelne.engine.rows.aligned_rows`:
    a row of 64 floats spans 4 lines, not 5, in each of the products' gathers)."""
    from kernelne.engine import propagation_kernels as kern

    k_terms = settings.order
    coef = [float(iv(0, settings.theta))] + [2.0 * (-1) ** k * float(iv(k, settings.theta))
                                             for k in range(1, k_terms)]
    shift = np.float32(1.0 - settings.mu)
    block = rows[:, lo:hi]
    b1 = aligned_rows(*block.shape, fill=0.0)  # b_{k+1}
    b2 = np.multiply(block, np.float32(coef[k_terms - 1]),
                     out=aligned_rows(*block.shape))  # b_{K-1} (b_K = 0)
    b1, b2 = b2, b1
    t = aligned_rows(*block.shape)
    for k in range(k_terms - 2, 0, -1):
        kern.shifted_walk(*graph.arrays, shift, b1, t)
        kern.clenshaw_step(*graph.arrays, shift, t, rows, lo, np.float32(coef[k]), b1, b2)
        b1, b2 = b2, b1
    kern.shifted_walk(*graph.arrays, shift, b1, t)
    kern.clenshaw_last(*graph.arrays, shift, t, rows, lo, np.float32(coef[0]), b1, b2)
    return b2


def _float32_rows(rows: np.ndarray, n: int) -> np.ndarray:
    r = np.asarray(rows)
    if r.ndim != 2 or r.shape[0] != n:
        raise ValueError(f"propagate: {r.shape} rows for a graph of {n} nodes")
    return np.ascontiguousarray(r, dtype=np.float32)


#: a direction of the propagated rows whose squared singular value is below this fraction
#: of the largest is left out (its column is zero): the rows have no extent there
RANK_RTOL = 1e-12
#: rows per block of the Gram matrix's float64 sums and of the final product
GRAM_BLOCK = 1 << 15
#: columns the filter runs on together: its three buffers are ``n x COLUMN_BLOCK`` (at d = 128,
#: two passes over the graph, and half of the memory of the three ``n x d`` ones)
COLUMN_BLOCK = 64


def unit_svd_rows(mixed: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``U sqrt(Σ)`` of the thin SVD ``U Σ Vᵀ`` of ``mixed``, each row scaled to norm 1.

    Computed through the ``d x d`` Gram matrix ``G = mixedᵀ mixed = V Σ² Vᵀ`` (summed in
    float64): ``U sqrt(Σ) = mixed V Σ^{-1/2}``, one ``n x d`` product taken
    :data:`GRAM_BLOCK` rows at a time (so ``out`` may be ``mixed`` itself) and no ``n x d``
    temporary. Columns come in decreasing singular value; each column's sign makes its sum
    over the rows before scaling positive (the SVD leaves it free); a direction whose ``σ²``
    is below :data:`RANK_RTOL` of the largest gives a zero column, so ``n < d`` rows give
    ``d`` columns, the last ``d - n`` zero.

    Parameters
    ----------
    mixed : ndarray of shape (n, d), float32
        The rows.
    out : ndarray of shape (n, d), float32, optional
        Where to write the result (``mixed`` itself: in place; default: a new array).

    Returns
    -------
    ndarray of shape (n, d), float32
        The unit rows (an all-zero row stays zero).
    """
    n, d = mixed.shape
    g = np.zeros((d, d))
    for s in range(0, n, GRAM_BLOCK):
        block = mixed[s:s + GRAM_BLOCK].astype(np.float64)
        g += block.T @ block
    lam, vecs = np.linalg.eigh(g)
    lam, vecs = lam[::-1], vecs[:, ::-1]
    keep = lam > RANK_RTOL * max(float(lam[0]), 0.0)
    basis = np.zeros((d, d))
    basis[:, keep] = vecs[:, keep] * lam[keep] ** -0.25
    column_sums = mixed.sum(axis=0, dtype=np.float64) @ basis
    basis[:, column_sums < 0] *= -1.0
    basis32 = basis.astype(np.float32)
    out = np.empty_like(mixed) if out is None else out
    for s in range(0, n, GRAM_BLOCK):
        out[s:s + GRAM_BLOCK] = mixed[s:s + GRAM_BLOCK] @ basis32
    norms = np.sqrt(np.einsum("ij,ij->i", out, out))[:, None]
    np.divide(out, norms, out=out, where=norms > 0)
    return out


def propagate_rows(adjacency: sp.spmatrix | Any, rows: np.ndarray,
                   settings: Propagation = Propagation(), out: np.ndarray | None = None,
                   ) -> np.ndarray:
    """ProNE's spectral propagation of ``rows``: ``Â (R - g(L) R)``, thin SVD, unit rows.

    The filter runs as numba kernels over ``Â``'s CSR in float32 (Clenshaw's recurrence,
    rows in parallel on numba's threads), :data:`COLUMN_BLOCK` columns at a time (each
    column is filtered on its own, so a block's result is the same as the whole's), the SVD
    through the ``d x d`` Gram matrix (:func:`unit_svd_rows`, in place): the result's ``n x d``
    float32 buffer above the rows and the recurrence's three ``n x COLUMN_BLOCK`` ones.

    Parameters
    ----------
    adjacency : sparse matrix or Graph
        ``n x n`` non-negative adjacency of the graph the rows embed (symmetrised; a directed
        graph is propagated over its undirected version), or the graph itself (an undirected
        :class:`~kernelne.graphs.csr.Graph`'s CSR gives ``Â`` with no matrix built: the same
        result).
    rows : ndarray of shape (n, d)
        One row per node.
    settings : Propagation
        Order, ``mu`` and ``theta`` (ProNE's defaults: 10, 0.2, 0.5).
    out : ndarray of shape (n, d), float32, optional
        Where the result is written (a memory map: the rows on disk, the same values; not
        ``rows`` itself); default a new array.

    Returns
    -------
    ndarray of shape (n, d)
        ``U sqrt(Σ)`` of the thin SVD of the propagated rows, each row scaled to norm 1 (rows
        that are all zero stay zero), float32. Columns past the propagated rows' rank (as
        where ``n < d``) are zero. ``out`` if given.

    Raises
    ------
    ValueError
        ``rows`` does not have one row per node of ``adjacency``, or ``out`` is not a float32
        array of its shape.
    """
    from kernelne.engine import propagation_kernels as kern

    r = _float32_rows(rows, graph_size(adjacency)[0])
    if out is not None and (out.shape != r.shape or out.dtype != np.float32):
        raise ValueError(f"propagate: out is {out.dtype} {out.shape}, the rows float32 "
                         f"{r.shape}")
    if settings.order == 1:
        return unit_svd_rows(r, out=out)
    graph = _SelfLooped.of(adjacency)
    mixed = aligned_rows(*r.shape) if out is None else out
    for lo in range(0, r.shape[1], COLUMN_BLOCK):
        residual = _residual(graph, r, settings, lo, lo + COLUMN_BLOCK)
        kern.hat_product(graph.indptr, graph.indices, graph.weights, residual, mixed, lo)
        del residual
    return unit_svd_rows(mixed, out=mixed)


__all__ = ["Propagation", "parse_propagation", "check_propagation", "choose_propagation",
           "is_auto", "mean_degree", "AUTO_MIN_DEGREE", "MAX_ORDER", "MAX_THETA",
           "filter_bytes", "unit_svd_rows", "COLUMN_BLOCK", "band_pass",
           "chebyshev_filter", "propagate_rows", "with_self_loops", "DEFAULT_ORDER",
           "DEFAULT_MU", "DEFAULT_THETA"]
