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

Each product gathers one neighbour's row per edge, at random where the rows do not fit in
cache; the row :data:`PREFETCH_AHEAD` edges ahead is asked for while an edge is summed
(:func:`kernelne.engine.prefetch.prefetch_row`, a hint: the sums are unchanged), and each row
is summed through a view of its own, so the column loops compile to vector code.
:func:`self_looped` builds ``Â``'s arrays from an undirected graph's CSR.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from kernelne.engine.prefetch import prefetch_row

#: edges ahead whose neighbour's row is prefetched (at 10^6 nodes and mean degree 20,
#: 16 ahead made a product 1.2-1.6x faster; the hardware's own look-ahead covers fewer)
PREFETCH_AHEAD = 16


@njit(inline="always")
def _ahead(indices, x, p):  # pragma: no cover
    q = p + PREFETCH_AHEAD
    if q < indices.shape[0]:
        prefetch_row(x, np.int64(indices[q]))


@njit(parallel=True, cache=True, nogil=True)
def shifted_walk(indptr, indices, weights, inv_deg, shift, x, out):  # pragma: no cover
    """``out = shift x - D^{-1} Â x`` (``shift = 1 - μ``: ``out = M x``)."""
    n, d = x.shape
    for i in prange(n):
        s = np.float32(inv_deg[i])
        row, own = out[i], x[i]
        for c in range(d):
            row[c] = shift * own[c]
        for p in range(indptr[i], indptr[i + 1]):
            _ahead(indices, x, p)
            near = x[indices[p]]
            w = s * weights[p]
            for c in range(d):
                row[c] -= w * near[c]


@njit(parallel=True, cache=True, nogil=True)
def clenshaw_step(indptr, indices, weights, inv_deg, shift, t, rows, lo, coef, b1,
                  b2):  # pragma: no cover
    """``b2 <- coef R + M t - 2 b1 - b2`` with ``t = M b1`` (``R``'s columns from ``lo``):
    Clenshaw's ``b_k`` over ``b_{k+2}``."""
    n, d = t.shape
    for i in prange(n):
        s = np.float32(inv_deg[i])
        row, r, own, prev = b2[i], rows[i, lo:lo + d], t[i], b1[i]
        for c in range(d):
            row[c] = coef * r[c] + shift * own[c] - 2.0 * prev[c] - row[c]
        for p in range(indptr[i], indptr[i + 1]):
            _ahead(indices, t, p)
            near = t[indices[p]]
            w = s * weights[p]
            for c in range(d):
                row[c] -= w * near[c]


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
        row, r, own, prev = b2[i], rows[i, lo:lo + d], t[i], b1[i]
        for c in range(d):
            row[c] = keep * r[c] - 0.5 * shift * own[c] + prev[c] + row[c]
        for p in range(indptr[i], indptr[i + 1]):
            _ahead(indices, t, p)
            near = t[indices[p]]
            w = s * weights[p]
            for c in range(d):
                row[c] += w * near[c]


@njit(parallel=True, cache=True, nogil=True)
def hat_product(indptr, indices, weights, x, out, lo):  # pragma: no cover
    """``out[:, lo:lo + b] = Â x`` (``x`` of ``b`` columns)."""
    n, d = x.shape
    for i in prange(n):
        row = out[i, lo:lo + d]
        for c in range(d):
            row[c] = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            _ahead(indices, x, p)
            near = x[indices[p]]
            w = weights[p]
            for c in range(d):
                row[c] += w * near[c]


@njit(parallel=True, cache=True, nogil=True)
def self_looped(indptr, indices, weights):  # pragma: no cover
    """``Â = I + A`` of an undirected graph's CSR (sorted rows, ``weights`` float32 or None:
    all 1): its ``indptr`` (int64), ``indices`` (int32, sorted, the loop in its place, a
    stored self-loop replaced by it) and float32 ``weights``."""
    n = indptr.shape[0] - 1
    width = np.empty(n + 1, np.int64)
    width[0] = 0
    for v in prange(n):
        loops = 0
        for p in range(indptr[v], indptr[v + 1]):
            loops += indices[p] == v
        width[v + 1] = indptr[v + 1] - indptr[v] - loops + 1
    out_ptr = np.cumsum(width)
    out_idx = np.empty(out_ptr[n], np.int32)
    out_w = np.empty(out_ptr[n], np.float32)
    for v in prange(n):
        q = out_ptr[v]
        placed = False
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if u == v:
                continue
            if not placed and u > v:
                out_idx[q] = v
                out_w[q] = 1.0
                q += 1
                placed = True
            out_idx[q] = u
            out_w[q] = 1.0 if weights is None else weights[p]
            q += 1
        if not placed:
            out_idx[q] = v
            out_w[q] = 1.0
    return out_ptr, out_idx, out_w
