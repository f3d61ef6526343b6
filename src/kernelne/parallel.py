"""Thread-count handling for the numba kernels; worker processes that die with their parent;
the connection to a Dask scheduler."""

from __future__ import annotations

import logging
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
    off Linux; cheap and idempotent. It is the ``initializer`` of kernelne's joblib pools,
    so a worker is armed before it unpickles (and imports for) its first task, and it is
    called again at the start of every task, for pools made elsewhere."""
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


class _NoErrors(logging.Filter):
    """Lets only records below ``ERROR`` through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


@contextmanager
def dask_errors_unlogged(names: tuple[str, ...] = ("distributed.client",)) -> Iterator[None]:
    """Within the block, the loggers ``names`` print no ``ERROR`` records (their warnings
    still show): for the command line, whose own one-line error says what failed. A lost
    scheduler otherwise has ``distributed.client`` log two chained tracebacks of its
    reconnection before kernelne's message. The filters are removed after the block.

    Parameters
    ----------
    names
        The loggers to quiet.

    Yields
    ------
    None
    """
    quiet = _NoErrors()
    loggers = [logging.getLogger(name) for name in names]
    for logger in loggers:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(quiet)


#: seconds a Dask scheduler has to answer (:func:`dask_client`)
CONNECT_TIMEOUT = 10.0
_DEFAULT_PORT = 8786  # the scheduler's default port (its dashboard: 8787)
_MAX_HANDSHAKE = 1 << 20  # bytes: a scheduler's first message is a few hundred


@contextmanager
def dask_client(address: str, timeout: float | None = None) -> Iterator:
    """A ``distributed.Client`` connected to the scheduler at ``address`` (closed after use).

    Parameters
    ----------
    address
        The scheduler, e.g. ``tcp://host:8786``.
    timeout
        Seconds the scheduler has to answer (default :data:`CONNECT_TIMEOUT`).

    Raises
    ------
    InputError
        When nothing answers at ``address`` in time, something answers that is not a Dask
        scheduler (a dashboard, a web server: its answer is never read as a message), or the
        connection fails: one line naming the address and what answered.
    """
    try:
        from distributed import Client
    except ImportError:
        raise InputError("--scheduler needs dask: pip install 'kernelne[dask]'") from None
    timeout = CONNECT_TIMEOUT if timeout is None else float(timeout)
    probe_scheduler(address, timeout)
    try:
        client = Client(address, timeout=f"{timeout}s")
    except TypeError as exc:  # tls:// without Dask's TLS settings: no SSL context
        raise InputError(f"cannot reach the Dask scheduler at {address} ({exc}): a tls:// "
                         "scheduler needs the client's certificates in Dask's configuration "
                         "(distributed.comm.tls: ca-file, client cert and key)") from None
    except (OSError, TimeoutError, ValueError, MemoryError, EOFError) as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address} "
                         f"({type(exc).__name__}: {exc})") from None
    with client:
        yield client


def probe_scheduler(address: str, timeout: float) -> None:
    """Check that a Dask scheduler listens at a ``tcp://`` ``address`` (other protocols are
    left to ``distributed``): a scheduler speaks first, a message whose first 8 bytes are its
    length. An :class:`InputError` if the connection fails, nothing is said within ``timeout``
    seconds (an HTTP server waits for a request) or the first bytes are not such a length."""
    import socket

    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme != "tcp":
        return
    host, _, port_text = rest.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text.split("/")[0])
    except ValueError:
        raise InputError(f"--scheduler {address}: expected tcp://HOST:PORT") from None
    hint = (f" (is it the dashboard port? the scheduler's default is {_DEFAULT_PORT})"
            if port != _DEFAULT_PORT else "")
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            first = b""
            while len(first) < 16:
                data = sock.recv(16 - len(first))
                if not data:
                    break
                first += data
    except TimeoutError:
        raise InputError(f"no Dask scheduler answered at {address} within {timeout:g} s"
                         f"{hint}") from None
    except OSError as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address} "
                         f"({exc.strerror or exc})") from None
    if len(first) < 16:
        raise InputError(f"no Dask scheduler at {address}: the connection was closed after "
                         f"{len(first)} bytes{hint}")
    size, frames = int.from_bytes(first[:8], "little"), int.from_bytes(first[8:], "little")
    if not (0 < size <= _MAX_HANDSHAKE and 0 < frames <= _MAX_HANDSHAKE):
        raise InputError(f"no Dask scheduler at {address}: something else answered "
                         f"({first[:16]!r})" + (hint if first.startswith(b"HTTP") else ""))
