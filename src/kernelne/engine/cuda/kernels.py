"""The KernelNE SGD kernel for CUDA (numba-cuda): one group of lanes per walk, a pair at a time.

Each group of ``lanes`` threads (a warp: 32 on a device) trains the walks ``g, g + G, ...`` of a
chunk one after the other, each walk's pairs in the CPU engine's order
(:func:`kernelne.engine.trainer._train_walk`): a center's contexts left to right, each pair's
context term, then its k negative terms, then the center's step. The lanes split the
dimensions (lane ``l`` holds ``l, l + lanes, ...``); the squared distance or inner product of
a term is summed over them with warp shuffles (``shfl_xor_sync``), so every lane sees it. Every
lane draws the same random numbers from the walk's streams (the CPU engine's: SplitMix64,
seeded by the seed and the walk's index), so the negatives, the pool and the shrunk windows are
the CPU's. Rows are updated lock-free (Hogwild), as on the CPU: with one group in all, the
order of the updates is the CPU's with one thread.

The scalar functions (the generator, the kernel values) are numba CUDA device functions; under
numba's CUDA simulator they are compiled by numba's CPU compiler instead, so that their
integer and float32 arithmetic is exact and fast while the kernel's threads run in Python.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, njit

from kernelne.engine.cuda.available import MAX_DIM, simulated
from kernelne.engine.kernels import GAUSS, LINEAR, SCHOENBERG
from kernelne.engine.trainer import CTX_STREAM, LOGLIK_MAX, LOGLIK_MIN, NEG_STREAM

SIMULATED = simulated()
#: dimensions one lane holds (its rows' entries in local memory): dim <= PER_LANE x lanes
PER_LANE = MAX_DIM // 32

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_S40 = np.uint64(40)
_LOW24 = np.uint64(0xFFFFFF)
_INV24 = np.float32(1.0 / (1 << 24))
_NEG = np.uint64(NEG_STREAM)
_CTX = np.uint64(CTX_STREAM)
_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_TWO = np.float32(2.0)
_HALF = np.float32(0.5)
_KMIN = np.float32(LOGLIK_MIN)
_KMAX = np.float32(LOGLIK_MAX)


def scalar(fn=None, *, states: int = 0):
    """A device function of scalars: numba-cuda's, or numba's CPU compiler's on the simulator.

    ``states``: its first outputs that are generator states (uint64), which numba's CPU
    functions return as Python integers: on the simulator they are made uint64 again."""
    def wrap(fn):
        if not SIMULATED:
            return cuda.jit(device=True, inline="always", fastmath=True)(fn)
        compiled = njit(inline="always", fastmath=True)(fn)
        if not states:
            return compiled

        def call(*args):
            out = compiled(*args)
            return (*(np.uint64(x) for x in out[:states]), *out[states:])

        call.compiled = compiled
        return call

    return wrap if fn is None else wrap(fn)


@scalar
def mix64(z):
    """SplitMix64's finaliser (:func:`kernelne.engine.sampling.mix64`)."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@scalar
def stream_state(seed, index):
    """:func:`kernelne.engine.sampling.stream_state`."""
    return mix64(seed * _GOLDEN + mix64(index + _GOLDEN))


@scalar(states=2)
def walk_streams(seed, walk_id):
    """The walk's negatives' and contexts' generators (the CPU engine's ``_neg_stream`` and
    its context stream)."""
    index = np.uint64(walk_id)
    return stream_state(seed ^ _NEG, index), stream_state(seed ^ _CTX, index)


@scalar(states=1)
def next_u64(state):
    """``(new_state, 64 random bits)`` (:func:`kernelne.engine.sampling.next_u64`)."""
    state = state + _GOLDEN
    return state, mix64(state)


@scalar(states=1)
def rand_below(state, n):
    """``(new_state, uniform integer in [0, n))`` (:func:`kernelne.engine.sampling.rand_below`)."""
    state = state + _GOLDEN  # next_u64, written out (its wrapper is not CPU-compiled)
    z = mix64(state)
    return state, np.int64(((z >> _S32) * np.uint64(n)) >> _S32)


@scalar(states=1)
def alias_bits(state, n):
    """One alias draw's column and coin: ``(new_state, column, coin)``
    (:func:`kernelne.engine.sampling.alias_draw`, the table read by the caller)."""
    state = state + _GOLDEN  # next_u64, written out (its wrapper is not CPU-compiled)
    z = mix64(state)
    i = np.int64(((z >> _S32) * np.uint64(n)) >> _S32)
    coin = np.float32(z & _LOW24) * _INV24
    return state, i, coin


@scalar
def learning_rate(lr, min_lr, center, total_centers):
    """``max(lr (1 - t / T), min_lr)`` at center ``t`` of ``T``, in float32 (the CPU's)."""
    frac = 1.0 - center / total_centers
    return np.float32(max(lr * frac, min_lr))


@scalar
def term_factors(s, y, lr, kind, param, rho, loglik):
    """The factors of one term ``(y - k)^2`` at statistic ``s`` (``rho`` applied):
    ``(y - k, ca, cb, da, db)``, the step being ``neu += cb b``, ``b <- (1 - lr lambda + db) b +
    da a`` and the center's ``ca`` (:func:`kernelne.engine.trainer._term`)."""
    if kind == GAUSS:
        k = math.exp(-param * s)
        dk = -param * k
    elif kind == SCHOENBERG:
        inv = _ONE / (_ONE + s)
        k = math.exp(param * math.log(inv))
        dk = -param * k * inv
    else:
        k = s
        dk = _ONE
    k = np.float32(k)
    dk = np.float32(dk)
    err = y - k
    g = err
    if loglik:
        kc = min(max(k, _KMIN), _KMAX)
        g = _HALF / kc if y > _HALF else -_HALF / (_ONE - kc)
    e = lr * _TWO * g
    if kind == LINEAR:
        return err, _ZERO, e, e, _ZERO
    h = e * _TWO * rho * dk
    return err, h, -h, -h, h


@cuda.jit(device=True)
def lanes_sum(value, lanes, mask):
    """The sum of ``value`` over the group's ``lanes`` lanes, seen by each (xor butterfly)."""
    offset = lanes // 2
    while offset > 0:
        value += cuda.shfl_xor_sync(mask, value, offset)
        offset //= 2
    return value


@cuda.jit(fastmath=True)
def train_kernel(walks, first_walk, A, B, kind, param, rho, prob, alias, total_centers, window,
                 negatives, lr0, min_lr, reg, seed, loglik, shrink, pools, pool_size, lanes,
                 totals):
    """Train the chunk ``walks`` (rows; -1 pads) whose first walk is ``first_walk`` of the run.

    ``kind``, ``param``: the kernel (:mod:`kernelne.engine.kernels`' codes); ``rho``: its
    scale; ``prob``, ``alias``: the noise's alias table; ``pools``: one row of at least
    ``pool_size`` per group (``pool_size = 0``: k fresh draws per pair); ``lanes``: threads
    per group (a power of two up to 32); ``totals`` (float64, 3): pairs, positive and
    negative squared errors, added to."""
    tid = cuda.grid(1)
    group = tid // lanes
    lane = tid % lanes
    n_groups = cuda.gridsize(1) // lanes
    if lanes == 32:
        mask = np.uint32(0xFFFFFFFF)
    else:
        mask = np.uint32(((1 << lanes) - 1) << ((tid % 32) // lanes * lanes))
    n_walks = walks.shape[0]
    length = walks.shape[1]
    d = A.shape[1]
    n_noise = prob.shape[0]
    linear = kind == LINEAR
    lr_reg_base = reg
    a_loc = cuda.local.array(PER_LANE, np.float32)
    b_loc = cuda.local.array(PER_LANE, np.float32)
    neu = cuda.local.array(PER_LANE, np.float32)
    for i in range(group, n_walks, n_groups):
        walk_id = first_walk + i
        n = length
        while n > 0 and walks[i, n - 1] < 0:
            n -= 1
        state, ctx = walk_streams(seed, walk_id)
        for q in range(pool_size):
            state, col, coin = alias_bits(state, n_noise)
            pools[group, q] = col if coin < prob[col] else alias[col]
        pos_loss = _ZERO
        neg_loss = _ZERO
        count = 0
        center_index = walk_id * length
        for pos in range(n):
            lr = learning_rate(lr0, min_lr, center_index + pos, total_centers)
            lr_reg = lr * lr_reg_base
            span = window
            if shrink:
                ctx, r = rand_below(ctx, window)
                span = r + 1
            v = walks[i, pos]
            for c in range(max(0, pos - span), min(n, pos + span + 1)):
                if c == pos:
                    continue
                count += 1
                j = 0
                for t in range(lane, d, lanes):
                    a_loc[j] = A[v, t]
                    neu[j] = _ZERO
                    j += 1
                ca = _ZERO
                for k in range(negatives + 1):
                    if k == 0:
                        u = walks[i, c]
                        y = _ONE
                    else:
                        if pool_size > 0:
                            state, r = rand_below(state, pool_size)
                            u = pools[group, r]
                        else:
                            state, col, coin = alias_bits(state, n_noise)
                            u = col if coin < prob[col] else alias[col]
                        y = _ZERO
                    s = _ZERO
                    j = 0
                    for t in range(lane, d, lanes):
                        bt = B[u, t]
                        b_loc[j] = bt
                        if linear:
                            s += a_loc[j] * bt
                        else:
                            diff = bt - a_loc[j]
                            s += diff * diff
                        j += 1
                    s = lanes_sum(s, lanes, mask)
                    if not linear:
                        s *= rho
                    err, ca_k, cb, da, db = term_factors(s, y, lr, kind, param, rho, loglik)
                    ca += ca_k
                    if k == 0:
                        pos_loss += err * err
                    else:
                        neg_loss += err * err
                    keep = _ONE - lr_reg + db
                    j = 0
                    for t in range(lane, d, lanes):
                        bt = b_loc[j]
                        neu[j] += cb * bt
                        B[u, t] = keep * bt + da * a_loc[j]
                        j += 1
                keep = _ONE - lr_reg + ca
                j = 0
                for t in range(lane, d, lanes):
                    A[v, t] = keep * a_loc[j] + neu[j]
                    j += 1
        if lane == 0 and count > 0:
            cuda.atomic.add(totals, 0, np.float64(count))
            cuda.atomic.add(totals, 1, np.float64(pos_loss))
            cuda.atomic.add(totals, 2, np.float64(neg_loss))
