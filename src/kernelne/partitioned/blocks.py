"""The block files of a partitioned fit: each part's rows ``A_i`` and ``B_i`` by version, the
negatives' tables, the records written whole, and the full matrices put together from the
blocks at the end.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from kernelne.engine.diagnostics import CHUNK
from kernelne.engine.rows import aligned_rows, uniform_rows
from kernelne.engine.sampling import alias_table
from kernelne.errors import InputError
from kernelne.outputs import atomic_path, write_npy
from kernelne.partitioned.store import (
    Location,
    is_remote,
    load_npy,
    makedirs,
    npy_bytes,
    npy_header,
    read_npy_header,
    read_npy_rows,
    scratch_folder,
    staged,
    write_bytes,
)

ASSEMBLE_BYTES = 64 << 20  # rows interleaved at a time by :func:`interleaved_rows`


def part_size(n: int, parts: int, i: int) -> int:
    """Rows in part ``i``: the nodes ``v`` with ``v mod P = i``."""
    return (n - i + parts - 1) // parts


def block_path(folder: Location, which: str, part: int, slot: int) -> Location:
    """A block's file in ``slot`` (0 or 1; any integer is taken modulo 2): two files per
    block, the recorded version's and the one the next version is written into (over a
    version nothing reads any more). Which slot holds the recorded version is in
    ``progress.json`` (``"slot"``; the step's parity where it is not recorded)."""
    return folder / "blocks" / f"{which}{part}.v{slot % 2}.npy"


def write_block(path: Location, array: np.ndarray) -> None:
    """Write ``array`` over the block file at ``path`` (same shape and dtype: no new file, no
    unlink; 0.011 s for a 64 MB block, where ``np.save`` to a new file took 0.067 s in a 1M-node
    fit), or as a new file. Not atomic: the version is valid only once ``progress.json`` says
    so, and a write cut short is redone by the bucket's rerun. At a URL: one whole object."""
    if is_remote(path):
        write_bytes(path, npy_bytes(array))
        return
    try:
        with _open_no_follow(path, os.O_RDWR) as fh:
            shape, fortran, dtype = read_npy_header(fh)
            if shape == array.shape and dtype == array.dtype and not fortran:
                array.tofile(fh)
                return
    except (OSError, ValueError) as exc:
        if getattr(exc, "errno", None) == errno.ELOOP:
            raise _link_error(path) from None
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:  # a new file, never through a link
        np.save(fh, array)


def _open_no_follow(path: Path, flags: int):
    """``path`` opened as a binary file with ``O_NOFOLLOW``: a symbolic link there is an
    ``OSError`` (``ELOOP``), not followed out of the folder."""
    fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0))
    return os.fdopen(fd, "r+b" if flags & os.O_RDWR else "rb")


def _link_error(path: Path) -> InputError:
    return InputError("is a symbolic link: a partitioned fit writes no file through a link "
                      "(it could point out of the folder); remove the link", path)


def read_block(path: Location) -> np.ndarray:
    """A block file read into :func:`~kernelne.engine.rows.aligned_rows` (``np.load`` would start
    its
    rows 16 bytes past a cache line)."""
    if is_remote(path):
        block = load_npy(path)
        if block.dtype != np.float32 or block.ndim != 2:
            raise OSError(f"{path}: not a block of float32 rows ({block.dtype}, shape "
                          f"{block.shape})")
        out = aligned_rows(*block.shape)
        out[:] = block
        return out
    with open(path, "rb") as fh:
        shape, _, dtype = read_npy_header(fh)
        if dtype != np.float32 or len(shape) != 2:
            raise OSError(f"{path}: not a block of float32 rows ({dtype}, shape {shape})")
        out = aligned_rows(*shape)
        if fh.readinto(memoryview(out).cast("B")) != out.nbytes:
            raise OSError(f"{path}: cut short: the file is truncated")
    return out


def read_rows(path: Location, lo: int, hi: int) -> np.ndarray:
    """Rows ``[lo, hi)`` of a C-order .npy file, read into memory. Not a memory map: mapped
    pages count in the process' resident set until it is unmapped, so a bucket that mapped a
    round's walks grew by the whole file; read this way it holds one window."""
    return next(read_row_windows(path, [(lo, hi)]))


def read_row_windows(path: Location, windows: Iterable[tuple[int, int]]) -> Iterator[np.ndarray]:
    """Rows ``[lo, hi)`` of a C-order .npy file for each window in turn (:func:`read_rows`),
    from one open file into one buffer reused from window to window (no open, header and
    fresh pages a window): each array is valid until the next one is asked for. A file at a
    URL is read with one ranged read a window after one of its header
    (:func:`~kernelne.partitioned.store.read_npy_rows`); a file cut short is an ``OSError``
    naming it and the rows."""
    if is_remote(path):
        header = None
        for lo, hi in windows:
            header = header or npy_header(path)
            yield read_npy_rows(path, lo, hi, header)
        return
    with open(path, "rb", buffering=0) as fh:
        shape, _, dtype = read_npy_header(fh)
        start, row = fh.tell(), int(np.prod(shape[1:], dtype=np.int64))
        buffer = np.empty(0, dtype=dtype)
        for lo, hi in windows:
            hi = min(hi, shape[0])
            count = max(hi - lo, 0) * row
            if buffer.size < count:
                buffer = np.empty(count, dtype=dtype)
            out = buffer[:count]
            view, got = memoryview(out).cast("B"), 0
            while got < view.nbytes:  # a read may return fewer bytes than asked
                n = os.preadv(fh.fileno(), [view[got:]], start + lo * row * dtype.itemsize + got)
                if n == 0:
                    raise OSError(f"{path}: rows {lo}-{hi} cut short ({got // dtype.itemsize} of "
                                  f"{count} values): the file is truncated")
                got += n
            yield out.reshape((-1,) + tuple(shape[1:]))


def save_array(path: Location, array: np.ndarray) -> None:
    with staged(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, array)


def write_json(path: Location, data: dict) -> None:
    write_bytes(path, json.dumps(data, indent=1).encode("utf-8"))


def masks_file(round_file: str) -> str:
    """The file of a round's walk masks (:func:`part_masks`), beside its walks."""
    return round_file.removesuffix(".npy") + ".masks.npy"


class BlockRows:
    """The ``n x d`` matrix of one version of a partitioned fit's blocks, read where it lies:
    ``X[idx]`` gathers the rows ``idx`` (node ``v``: row ``v // P`` of block ``v mod P``) through
    memory maps opened for that call. The restart's look reads a sample of rows and two passes
    over ``A`` this way; putting the matrices together first wrote the whole model to disk
    (1 GB at 1M nodes) at every look."""

    def __init__(self, folder: Location, which: str, n: int, parts: int, d: int, slot: int):
        self.paths = [block_path(folder, which, i, slot) for i in range(parts)]
        self.shape = (n, d)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, idx) -> np.ndarray:
        row, part = np.divmod(np.asarray(idx, dtype=np.int64), len(self.paths))
        out = np.empty((len(row), self.shape[1]), dtype=np.float32)
        for i, path in enumerate(self.paths):
            mine = np.flatnonzero(part == i)
            if len(mine):
                out[mine] = load_npy(path, mmap=True)[row[mine]]
        return out

    def all_finite(self) -> bool:
        """Whether every value is finite: each block read once, ``CHUNK`` rows at a time."""
        for i, path in enumerate(self.paths):
            for lo in range(0, part_size(self.shape[0], len(self.paths), i), CHUNK):
                if not np.isfinite(read_rows(path, lo, lo + CHUNK)).all():
                    return False
        return True


def make_noise(folder: Location, counts: np.ndarray, parts: int) -> None:
    """Each part's negatives: unigram^0.75 over its rows (uniform if none was visited)."""
    makedirs(folder / "noise")
    for j in range(parts):
        weights = counts[j::parts].astype(np.float64) ** 0.75
        if weights.sum() <= 0:
            weights = np.ones(len(weights))
        prob, alias = alias_table(weights)
        with staged(folder / "noise" / f"noise{j}.npz") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, prob=prob, alias=alias)


def init_blocks(folder: Location, n: int, parts: int, d: int, seed) -> None:
    """Version 0 of the blocks, in slot 0: ``A_i ~ U(+-0.5/d)`` (a generator per part),
    ``B_j = 0``."""
    makedirs(folder / "blocks")
    for i in range(parts):
        rng = np.random.default_rng([int(seed) % (1 << 63), i])
        size = part_size(n, parts, i)
        save_array(block_path(folder, "A", i, 0), uniform_rows(rng, size, d, 0.5 / d))
        save_array(block_path(folder, "B", i, 0), np.zeros((size, d), dtype=np.float32))


def assemble(folder: Location, which: str, n: int, parts: int, d: int, slot: int,
              ) -> np.ndarray:
    """The full matrix from its blocks in ``slot``, in ``folder/{which}.npy`` (memory-mapped:
    it is never all in memory); for a URL, in a local temporary file that is unlinked once
    mapped."""
    blocks = [block_path(folder, which, i, slot) for i in range(parts)]
    if is_remote(folder):
        scratch = scratch_folder("rows")
        try:
            path = scratch / f"{which}.npy"
            write_npy(path, np.float32, (n, d), interleaved_rows(blocks, n, d))
            return np.load(path, mmap_mode="r+")  # private to this process: writable
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    path = folder / f"{which}.npy"
    with atomic_path(path) as tmp:
        write_npy(tmp, np.float32, (n, d), interleaved_rows(blocks, n, d))
    return np.load(path, mmap_mode="r")


def interleaved_rows(paths: list, n: int, d: int) -> Iterator[np.ndarray]:
    """The rows of the matrix whose ``P`` blocks are at ``paths``, in order, about
    :data:`ASSEMBLE_BYTES` at a time (each chunk valid until the next is asked for): row
    ``v`` is row ``v // P`` of block ``v mod P``. Every block is read once, front to back,
    its rows of the chunk from one open file (:func:`read_row_windows`), so the matrix is
    read and written once whatever its size against memory, not ``P`` times as by strided
    writes into a map of it."""
    parts = len(paths)
    step = max(1, ASSEMBLE_BYTES // (parts * d * 4))  # block rows a chunk
    windows = [[(k, min(k + step, part_size(n, parts, i)))
                for k in range(0, part_size(n, parts, 0), step)] for i in range(parts)]
    readers = [read_row_windows(path, w) for path, w in zip(paths, windows, strict=True)]
    buffer = np.empty((min(n, step * parts), d), dtype=np.float32)
    for k in range(0, part_size(n, parts, 0), step):
        rows = min(n, (k + step) * parts) - k * parts
        for i, reader in enumerate(readers):
            buffer[i:rows:parts] = next(reader)
        yield buffer[:rows]
