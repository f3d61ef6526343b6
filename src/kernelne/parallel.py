"""Thread-count handling for the numba kernels; worker processes that die with their parent;
the connection to a Dask scheduler."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import numba

from kernelne.errors import InputError


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


def die_with_parent() -> None:
    """In a worker process: ask Linux to send SIGTERM when the parent process dies, so a
    killed ``kernelne`` leaves no orphaned joblib workers. A no-op in the main process and
    off Linux; cheap and idempotent, called at the start of every task."""
    import multiprocessing
    import signal
    import sys

    if multiprocessing.parent_process() is None or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGTERM))  # PDEATHSIG
    except (OSError, AttributeError):
        pass


@contextmanager
def dask_client(address: str) -> Iterator:
    """A ``distributed.Client`` connected to the scheduler at ``address`` (closed after use);
    an unreachable scheduler is one :class:`InputError` line."""
    try:
        from distributed import Client
    except ImportError:
        raise InputError("--scheduler needs dask: pip install 'kernelne[dask]'") from None
    try:
        client = Client(address, timeout="5s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address} ({exc})") from None
    with client:
        yield client
