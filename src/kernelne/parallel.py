"""Thread-count handling for the numba kernels."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import numba


def resolve_workers(workers: int | None) -> int:
    """``None`` or ``-1`` means every core numba may use; otherwise 1..that many."""
    limit = numba.config.NUMBA_NUM_THREADS
    if workers is None or workers == -1:
        return limit
    if workers < 1:
        raise ValueError(f"workers must be a positive number or -1, got {workers}")
    return min(int(workers), limit)


@contextmanager
def numba_threads(workers: int | None) -> Iterator[int]:
    """Run the enclosed numba parallel code on ``workers`` threads, then restore the setting."""
    n = resolve_workers(workers)
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(before)


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
