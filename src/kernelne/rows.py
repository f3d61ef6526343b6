"""The embedding rows' memory: the random initialisation, drawn straight into float32, and a
check before training that they fit (a huge ``dim`` is one clear line, not a MemoryError)."""

from __future__ import annotations

import os

import numpy as np

from kernelne.errors import InputError

CHUNK_VALUES = 1 << 20  # float64 draws held at a time (8 MiB)


def uniform_rows(rng: np.random.Generator, n: int, d: int, bound: float,
                 out: np.ndarray | None = None) -> np.ndarray:
    """``rng.uniform(-bound, bound, size=(n, d)).astype(np.float32)``, bit for bit (the same
    float64 draws, in the same order), without the float64 matrix: drawn a few rows at a time.
    """
    if out is None:
        out = np.empty((n, d), dtype=np.float32)
    step = max(1, CHUNK_VALUES // max(d, 1))
    for first in range(0, n, step):
        rows = min(step, n - first)
        out[first:first + rows] = rng.uniform(-bound, bound, size=(rows, d))
    return out


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:,.1f} GiB"


def check_row_memory(n: int, d: int, matrices: int = 2) -> None:
    """An :class:`InputError` naming the sizes if ``matrices`` float32 ``n x d`` row matrices
    need more than this machine's memory."""
    need = float(matrices) * n * d * 4
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = None
    if total is not None and need > total:
        raise InputError(
            f"dim={d:,}: the rows need {matrices} x {n:,} nodes x {d:,} float32 = {_gib(need)}, "
            f"more than this machine's {_gib(total)} of memory: lower --dim")


def out_of_memory(n: int, d: int, matrices: int = 2) -> InputError:
    """The error to raise when allocating the rows failed with a ``MemoryError``."""
    need = float(matrices) * n * d * 4
    return InputError(f"dim={d:,}: not enough free memory for the rows ({matrices} x {n:,} "
                      f"nodes x {d:,} float32 = {_gib(need)}): lower --dim")
