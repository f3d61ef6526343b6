"""Cheap per-thread random numbers and alias tables for numba hot loops.

Each walk (or training unit) gets its own generator state, derived from the global seed and
the unit's index, so that results do not depend on how units are split over threads.
The generator is SplitMix64 (Steele, Lea & Flood 2014): one 64-bit add and a mixing step per
draw, full period 2^64, good enough statistically for sampling.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_S40 = np.uint64(40)
_INV24 = np.float32(1.0 / (1 << 24))


@njit(inline="always")
def mix64(z):
    """SplitMix64's finaliser: a bijective 64-bit mix."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(inline="always")
def stream_state(seed, index):
    """Initial state of the generator of unit ``index`` under ``seed`` (both uint64)."""
    return mix64(seed * _GOLDEN + mix64(index + _GOLDEN))


@njit(inline="always")
def next_u64(state):
    """Advance the generator: returns ``(new_state, 64 random bits)``.

    The state is a plain uint64 passed by value, so it lives in a register in hot loops.
    """
    state = state + _GOLDEN
    return state, mix64(state)


@njit(inline="always")
def rand_below(state, n):
    """``(new_state, uniform integer in [0, n))``; Lemire's multiply-shift on 32 bits, n < 2^32."""
    state, z = next_u64(state)
    return state, np.int64(((z >> _S32) * np.uint64(n)) >> _S32)


@njit(inline="always")
def rand_float(state):
    """``(new_state, uniform float32 in [0, 1))`` with 24 random bits."""
    state, z = next_u64(state)
    return state, np.float32(z >> _S40) * _INV24


@njit(inline="always")
def alias_draw(state, prob, alias):
    """``(new_state, one draw from an alias table)``; one 64-bit number gives column and coin."""
    state, z = next_u64(state)
    i = np.int64(((z >> _S32) * np.uint64(len(prob))) >> _S32)
    coin = np.float32(z & np.uint64(0xFFFFFF)) * _INV24
    # Both entries are loaded and one selected, without a branch: on large tables they are
    # cache misses, and a mispredicted branch on the coin would wait for ``prob[i]``.
    other = np.int64(alias[i])
    return state, i if coin < prob[i] else other


@njit(cache=True)
def _build_alias(p):
    n = len(p)
    prob = np.empty(n, np.float32)
    alias = np.arange(n).astype(np.int32)
    scaled = p * n
    small = np.empty(n, np.int64)
    large = np.empty(n, np.int64)
    ns = nl = 0
    for i in range(n):
        if scaled[i] < 1.0:
            small[ns] = i
            ns += 1
        else:
            large[nl] = i
            nl += 1
    while ns > 0 and nl > 0:
        ns -= 1
        s = small[ns]
        nl -= 1
        g = large[nl]
        prob[s] = scaled[s]
        alias[s] = g
        scaled[g] = scaled[g] + scaled[s] - 1.0
        if scaled[g] < 1.0:
            small[ns] = g
            ns += 1
        else:
            large[nl] = g
            nl += 1
    for k in range(nl):
        prob[large[k]] = 1.0
    for k in range(ns):
        prob[small[k]] = 1.0
    return prob, alias


def alias_table(weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias table for sampling ``i`` with probability ``weights[i] / sum(weights)``.

    Returns ``(prob, alias)`` (float32, int32): O(n) memory, O(1) per draw.
    """
    w = np.asarray(weights, dtype=np.float64)
    total = w.sum()
    if not np.isfinite(total) or total <= 0 or np.any(w < 0):
        raise ValueError("alias table needs non-negative weights with a positive sum")
    return _build_alias(w / total)


def seed_to_uint64(random_state: Any, name: str = "random_state") -> np.uint64:
    """A 64-bit seed from ``random_state``, as :func:`sklearn.utils.check_random_state` reads
    it: ``None`` gives fresh entropy, an integer in ``[0, 2^64)`` is the seed, a
    ``numpy.random.RandomState`` or ``Generator`` gives a seed drawn from it (advancing it).
    Anything else (a float, a bool, a negative integer) raises ``ValueError`` naming
    ``name``."""
    if random_state is None:
        return np.uint64(np.random.SeedSequence().generate_state(1, np.uint64)[0])
    if isinstance(random_state, np.random.Generator):
        return np.uint64(random_state.integers(0, 2**63))
    if isinstance(random_state, np.random.RandomState):
        return np.uint64(random_state.randint(0, 2**63, dtype=np.int64))
    if (isinstance(random_state, (bool, np.bool_))
            or not isinstance(random_state, numbers.Integral)
            or not 0 <= int(random_state) < 2**64):
        raise ValueError(f"{name} must be None, an integer in [0, 2^64), a "
                         f"numpy.random.RandomState or a numpy.random.Generator, got "
                         f"{random_state!r}")
    return np.uint64(int(random_state))


def random_generator(random_state: Any) -> np.random.Generator:
    """A NumPy generator seeded by :func:`seed_to_uint64` (same rules)."""
    return np.random.default_rng(int(seed_to_uint64(random_state)))
