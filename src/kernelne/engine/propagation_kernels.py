"""The numba kernels of the spectral propagation (:mod:`kernelne.engine.propagation`).

Every kernel reads the self-looped graph ``Â`` as CSR arrays (``indptr``, ``indices``, float32
``weights``) with ``inv_deg = 1 / (Â 1)``, and float32 ``n x d`` buffers; rows run in parallel
(``prange``), and each output row is written in place from its own inputs and its neighbours'
rows of *another* buffer, so no kernel allocates. The recurrence runs on a block of columns
``lo .. lo + b`` of the rows ``R`` (its buffers are ``n x b``); :func:`clenshaw_step` and
:func:`clenshaw_last` read those columns of ``R`` and :func:`hat_product` writes those of its
``n x d`` output. With the shifted walk operator

    M x = (1 - μ) x - D^{-1} Â x,        X = M² / 2 - I,

:func:`shifted_walk` is ``M x``; :func:`clenshaw_step` is one step of Clenshaw's recurrence
``b_k = c_k R + 2 X b_{k+1} - b_{k+2}`` given ``t = M b_{k+1}`` (as ``2 X b = M (M b) - 2 b``),
written over ``b_{k+2}``; :func:`clenshaw_last` the residual ``R - (c_0 R + X b_1 - b_2)``,
written over ``b_2``; :func:`hat_product` is ``Â x``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True, nogil=True)
def shifted_walk(indptr, indices, weights, inv_deg, shift, x, out):  # pragma: no cover
    """``out = shift x - D^{-1} Â x`` (``shift = 1 - μ``: ``out = M x``)."""
    n, d = x.shape
    for i in prange(n):
        s = np.float32(inv_deg[i])
        for c in range(d):
            out[i, c] = shift * x[i, c]
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            w = s * weights[p]
            for c in range(d):
                out[i, c] -= w * x[j, c]


@njit(parallel=True, cache=True, nogil=True)
def clenshaw_step(indptr, indices, weights, inv_deg, shift, t, rows, lo, coef, b1,
                  b2):  # pragma: no cover
    """``b2 <- coef R + M t - 2 b1 - b2`` with ``t = M b1`` (``R``'s columns from ``lo``):
    Clenshaw's ``b_k`` over ``b_{k+2}``."""
    n, d = t.shape
    for i in prange(n):
        s = np.float32(inv_deg[i])
        for c in range(d):
            b2[i, c] = coef * rows[i, lo + c] + shift * t[i, c] - 2.0 * b1[i, c] - b2[i, c]
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            w = s * weights[p]
            for c in range(d):
                b2[i, c] -= w * t[j, c]


@njit(parallel=True, cache=True, nogil=True)
def clenshaw_last(indptr, indices, weights, inv_deg, shift, t, rows, lo, coef0, b1,
                  b2):  # pragma: no cover
    """``b2 <- R - (c_0 R + X b1 - b2) = (1 - c_0) R - M t / 2 + b1 + b2`` with
    ``t = M b1`` (``R``'s columns from ``lo``): the rows less their filtered part, over
    ``b_2``."""
    n, d = t.shape
    keep = np.float32(1.0) - coef0
    for i in prange(n):
        s = np.float32(0.5) * np.float32(inv_deg[i])
        for c in range(d):
            b2[i, c] = keep * rows[i, lo + c] - 0.5 * shift * t[i, c] + b1[i, c] + b2[i, c]
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            w = s * weights[p]
            for c in range(d):
                b2[i, c] += w * t[j, c]


@njit(parallel=True, cache=True, nogil=True)
def hat_product(indptr, indices, weights, x, out, lo):  # pragma: no cover
    """``out[:, lo:lo + b] = Â x`` (``x`` of ``b`` columns)."""
    n, d = x.shape
    for i in prange(n):
        for c in range(d):
            out[i, lo + c] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            w = weights[p]
            for c in range(d):
                out[i, lo + c] += w * x[j, c]
