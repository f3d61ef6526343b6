"""The embedding rows' memory: matrices whose rows start on cache lines, the random
initialisation drawn straight into float32, and a check before training that they fit (a huge
``dim`` is one clear line, not a MemoryError)."""

from __future__ import annotations

import os

import numpy as np

from kernelne.errors import InputError
from kernelne.memory import available_memory_bytes

CHUNK_VALUES = 1 << 20  # float64 draws held at a time (8 MiB)
LINE = 64  # bytes in a cache line


def aligned_rows(n: int, d: int, fill: float | None = None) -> np.ndarray:
    """An ``n x d`` float32 matrix whose first row starts on a cache line (filled with
    ``fill`` unless None). numpy starts a large array 16 bytes past a line, so that every row
    of 128 floats spans 9 lines instead of 8, one of them missed by the row's prefetch
    (:func:`kernelne.engine.prefetch.prefetch_row`) and split by vector loads: aligned, training at
    1M nodes ran 1.20x (pool) to 1.42x (fresh draws) the pairs per second."""
    n_bytes = n * d * 4
    buffer = np.empty(n_bytes + LINE, dtype=np.uint8)
    start = -buffer.ctypes.data % LINE
    rows = buffer[start:start + n_bytes].view(np.float32).reshape(n, d)
    if fill is not None:
        rows.fill(fill)
    return rows


def uniform_rows(rng: np.random.Generator, n: int, d: int, bound: float,
                 out: np.ndarray | None = None) -> np.ndarray:
    """``rng.uniform(-bound, bound, size=(n, d)).astype(np.float32)``, bit for bit (the same
    float64 draws, in the same order), without the float64 matrix: drawn a few rows at a time
    (into :func:`aligned_rows` unless ``out`` is given).
    """
    if out is None:
        out = aligned_rows(n, d)
    step = max(1, CHUNK_VALUES // max(d, 1))
    for first in range(0, n, step):
        rows = min(step, n - first)
        out[first:first + rows] = rng.uniform(-bound, bound, size=(rows, d))
    return out


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:,.1f} GiB"


def available_memory() -> tuple[int, str] | None:
    """``(bytes, what)``: the memory this process may still take
    (:func:`kernelne.memory.available_memory_bytes`: ``MemAvailable``, or a cgroup's cap),
    else the machine's physical memory; None if neither can be read."""
    free = available_memory_bytes()
    if free is not None:
        return free, "available"
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "in this machine"
    except (ValueError, OSError, AttributeError):
        return None


def check_row_memory(n: int, d: int, matrices: int = 2) -> None:
    """An :class:`InputError` naming the sizes if ``matrices`` float32 ``n x d`` row matrices
    need more memory than is available (checked before any work: past it the kernel's
    out-of-memory killer, not a MemoryError, would likely end the run)."""
    need = float(matrices) * n * d * 4
    memory = available_memory()
    if memory is not None and need > memory[0]:
        raise InputError(
            f"dim={d:,}: the rows need {matrices} x {n:,} nodes x {d:,} float32 = {_gib(need)}, "
            f"more than the {_gib(memory[0])} of memory {memory[1]}: lower --dim, or train "
            "with --partitions P (the rows on disk, P x P blocks; docs/DISTRIBUTED.md)")


def out_of_memory(n: int, d: int, matrices: int = 2) -> InputError:
    """The error to raise when allocating the rows failed with a ``MemoryError``."""
    need = float(matrices) * n * d * 4
    return InputError(f"dim={d:,}: not enough free memory for the rows ({matrices} x {n:,} "
                      f"nodes x {d:,} float32 = {_gib(need)}): lower --dim, or train with "
                      "--partitions P (the rows on disk)")
