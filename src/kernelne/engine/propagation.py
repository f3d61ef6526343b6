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
code). The cost is ``K`` pairs of sparse products (``O(K |E| d)``) and one ``O(n d^2)``
SVD: linear in the edges. Order ``K = 10``, ``μ = 0.2`` and ``θ = 0.5`` are ProNE's defaults.

``propagate="auto"`` (:func:`choose_propagation`) propagates with ProNE's defaults where the
graph's mean degree is at least :data:`AUTO_MIN_DEGREE` and its rows have at most
:data:`AUTO_MAX_CELLS` entries, and not otherwise (docs/QUALITY.md: the propagation lifts
node classification on dense graphs and is a wash on sparse ones).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.special import iv

from kernelne.errors import ParamError

#: ProNE's defaults: Chebyshev order, the filter's centre mu and its width theta
DEFAULT_ORDER = 10
DEFAULT_MU = 0.2
DEFAULT_THETA = 0.5
#: ``propagate="auto"`` propagates where the mean degree (of the undirected graph, over the
#: nodes with an edge) is at least this
AUTO_MIN_DEGREE = 8.0
#: ... and the rows have at most this many entries (``n x d``; 10^6 nodes at d = 128): the
#: filter and the SVD peak at about 58 bytes per entry (7.4 GB at 10^6 nodes and d = 128,
#: 2.6 times a plain fit's own peak there; docs/QUALITY.md)
AUTO_MAX_CELLS = 128_000_000


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
        An unknown key, a value that is not a number, or a value out of range (order a whole
        number >= 1, mu in [0, 2], theta > 0).
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


def mean_degree(adjacency: sp.spmatrix) -> float:
    """The mean degree of the graph the propagation filters (:func:`with_self_loops`'s
    ``max(A, Aᵀ)``, self-loops left out) over the nodes with at least one edge (0.0 without
    edges)."""
    counts = np.diff(with_self_loops(adjacency).indptr) - 1  # less each row's own loop
    linked = int((counts > 0).sum())
    return float(counts.sum()) / linked if linked else 0.0


def choose_propagation(spec: object, adjacency: sp.spmatrix, dim: int = 128,
                       partitioned: bool = False, degree: float | None = None
                       ) -> tuple[Propagation | None, str]:
    """The propagation a ``propagate`` setting gives on a graph, and why.

    Parameters
    ----------
    spec : bool, None, str or Propagation
        A setting :func:`parse_propagation` reads, or ``"auto"``: ProNE's defaults where the
        mean degree (:func:`mean_degree`) is at least :data:`AUTO_MIN_DEGREE` and the rows
        have at most :data:`AUTO_MAX_CELLS` entries, in a fit in memory; none otherwise.
    adjacency : sparse matrix
        The graph's ``n x n`` adjacency.
    dim : int, default 128
        The rows' dimension ``d``.
    partitioned : bool, default False
        The rows come from a partitioned fit (``"auto"``: none, the rows stay on disk).
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
    n = adjacency.shape[0]
    if not is_auto(spec):
        settings = parse_propagation(spec)
        if settings is not None and n < int(dim):
            raise ParamError(f"the spectral propagation ({{propagate}}) keeps one column per "
                             f"node at most: {{dim={int(dim)}}} must be at most the number of "
                             f"nodes ({n:,}): choose a smaller {{dim}}, or no propagation")
        return settings, "as given"
    if partitioned:
        return None, "auto: a partitioned fit keeps its rows as trained"
    if n * int(dim) > AUTO_MAX_CELLS:
        return None, (f"auto: {n:,} rows of {int(dim)}, more than {AUTO_MAX_CELLS:,} entries "
                      "(the filter's memory)")
    if n < int(dim):
        return None, f"auto: {n:,} nodes, fewer than dim {int(dim)}"
    if degree is None:
        degree = mean_degree(adjacency)
    sign = ">=" if degree >= AUTO_MIN_DEGREE else "<"
    return (Propagation() if degree >= AUTO_MIN_DEGREE else None,
            f"auto: mean degree {degree:.1f} {sign} {AUTO_MIN_DEGREE:g}")


def _checked(order: float, mu: float, theta: float) -> Propagation:
    if not (math.isfinite(order) and order >= 1 and float(order).is_integer()):
        raise ValueError(f"propagate: order must be a whole number >= 1, got {order:g}")
    if not (math.isfinite(mu) and 0.0 <= mu <= 2.0):
        raise ValueError(f"propagate: mu must be in [0, 2], got {mu:g}")
    if not (math.isfinite(theta) and theta > 0):
        raise ValueError(f"propagate: theta must be > 0, got {theta:g}")
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


def chebyshev_filter(adjacency: sp.spmatrix, rows: np.ndarray,
                     settings: Propagation = Propagation()) -> np.ndarray:
    """``g(L) R`` by the Chebyshev expansion of order ``settings.order`` (see the module).

    Parameters
    ----------
    adjacency : sparse matrix
        ``n x n`` non-negative adjacency (symmetrised here).
    rows : ndarray of shape (n, d)
        The rows ``R``.
    settings : Propagation
        Order, ``mu`` and ``theta``.

    Returns
    -------
    ndarray of shape (n, d)
        ``g(L) R`` in float64.
    """
    return _filtered(with_self_loops(adjacency), rows, settings)


def _filtered(a_hat: sp.csr_matrix, rows: np.ndarray, settings: Propagation) -> np.ndarray:
    """:func:`chebyshev_filter` on ``Â`` as :func:`with_self_loops` gives it."""
    inv_deg = 1.0 / np.asarray(a_hat.sum(axis=1)).ravel()
    walk = sp.diags(inv_deg) @ a_hat  # D^{-1} Â

    def m_dot(x: np.ndarray) -> np.ndarray:  # (L - mu I) x = (1 - mu) x - D^{-1} Â x
        return (1.0 - settings.mu) * x - walk @ x

    def x_dot(x: np.ndarray) -> np.ndarray:  # X x = (M^2 / 2 - I) x
        return 0.5 * m_dot(m_dot(x)) - x

    r = np.asarray(rows, dtype=np.float64)
    t_prev, t_cur = r, x_dot(r)
    out = iv(0, settings.theta) * t_prev
    if settings.order > 1:
        out -= 2.0 * iv(1, settings.theta) * t_cur
    for k in range(2, settings.order):
        t_prev, t_cur = t_cur, 2.0 * x_dot(t_cur) - t_prev
        out += (2.0 if k % 2 == 0 else -2.0) * iv(k, settings.theta) * t_cur
    return out


def propagate_rows(adjacency: sp.spmatrix, rows: np.ndarray,
                   settings: Propagation = Propagation()) -> np.ndarray:
    """ProNE's spectral propagation of ``rows``: ``Â (R - g(L) R)``, thin SVD, unit rows.

    Parameters
    ----------
    adjacency : sparse matrix
        ``n x n`` non-negative adjacency of the graph the rows embed (symmetrised; a directed
        graph is propagated over its undirected version).
    rows : ndarray of shape (n, d)
        One row per node.
    settings : Propagation
        Order, ``mu`` and ``theta`` (ProNE's defaults: 10, 0.2, 0.5).

    Returns
    -------
    ndarray of shape (n, d)
        ``U sqrt(Σ)`` of the thin SVD of the propagated rows, each row scaled to norm 1 (rows
        that are all zero stay zero), float32.

    Raises
    ------
    ValueError
        ``rows`` does not have one row per node of ``adjacency``.
    """
    r = np.asarray(rows)
    if r.ndim != 2 or r.shape[0] != adjacency.shape[0]:
        raise ValueError(f"propagate: {r.shape} rows for a graph of {adjacency.shape[0]} nodes")
    if settings.order > 1:
        a_hat = with_self_loops(adjacency)  # built once, for the filter and the mixing
        mixed = a_hat @ (r - _filtered(a_hat, r, settings))
    else:
        mixed = np.asarray(r, dtype=np.float64)
    u, s, _ = np.linalg.svd(mixed, full_matrices=False)
    emb = u * np.sqrt(s)[None, :]
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    np.divide(emb, norms, out=emb, where=norms > 0)
    return np.ascontiguousarray(emb, dtype=np.float32)


__all__ = ["Propagation", "parse_propagation", "check_propagation", "choose_propagation",
           "is_auto", "mean_degree", "AUTO_MIN_DEGREE", "AUTO_MAX_CELLS", "band_pass",
           "chebyshev_filter", "propagate_rows", "with_self_loops", "DEFAULT_ORDER",
           "DEFAULT_MU", "DEFAULT_THETA"]
