"""ProNE's spectral propagation in float64 with scipy's sparse products and a dense SVD: the
reference the numba kernels of :mod:`kernelne.engine.propagation` are checked against."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import iv

from kernelne.engine.propagation import Propagation, with_self_loops


def reference_filter(adjacency: sp.spmatrix, rows: np.ndarray,
                     settings: Propagation | None = None) -> np.ndarray:
    """``g(L) R`` by the forward Chebyshev recurrence in float64 (ProNE's defaults without
    ``settings``)."""
    settings = settings or Propagation()
    a_hat = with_self_loops(adjacency)
    walk = sp.diags(1.0 / np.asarray(a_hat.sum(axis=1)).ravel()) @ a_hat

    def m_dot(x: np.ndarray) -> np.ndarray:
        return (1.0 - settings.mu) * x - walk @ x

    def x_dot(x: np.ndarray) -> np.ndarray:
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


def reference_propagation(adjacency: sp.spmatrix, rows: np.ndarray,
                          settings: Propagation | None = None) -> np.ndarray:
    """``Â (R - g(L) R)``, its thin SVD ``U sqrt(Σ)`` (numpy's), unit rows, float64."""
    settings = settings or Propagation()
    r = np.asarray(rows, dtype=np.float64)
    if settings.order > 1:
        mixed = with_self_loops(adjacency) @ (r - reference_filter(adjacency, r, settings))
    else:
        mixed = r
    u, s, _ = np.linalg.svd(mixed, full_matrices=False)
    emb = u * np.sqrt(s)[None, :]
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    np.divide(emb, norms, out=emb, where=norms > 0)
    return emb


def aligned(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    """``want`` with each column's sign that of ``got``'s (the SVD leaves signs free)."""
    signs = np.sign((got[:, :want.shape[1]] * want).sum(axis=0))
    return want * np.where(signs == 0, 1.0, signs)
