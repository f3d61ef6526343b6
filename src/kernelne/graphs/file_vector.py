"""A read-only 1-D array that stays in its file: the edges of a graph ``.npz`` as a
partitioned fit's driver sees them.

:class:`FileVector` reads the values a caller asks for (a slice, an index, an array of
indices) from the file at the moment it asks, with ``os.pread`` on the file it opened at its
first read (a file replaced by another since is not read): nothing is mapped and nothing is
kept, so a process that only walks through the edges a window at a time (the graph's checks
and digest, the neighbour fingerprints, the restart test's edge sample) holds one window,
whatever the graph's size, and its address space never holds the edges. Code
that needs the whole array at once (a numba loop) gets it from ``np.asarray``: a read-only
memory map of the same file's bytes, made once.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

#: The most bytes one read asks for (a longer slice is read in several).
READ_BYTES = 1 << 26


class FileVector:
    """``length`` values of ``dtype`` stored at byte ``offset`` of the file ``path``.

    Parameters
    ----------
    path : str or Path
        The file.
    dtype : numpy dtype
        The values' type (native byte order, as ``np.save`` writes them here).
    offset : int
        Byte offset of the first value.
    length : int
        Number of values.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "v.bin")
    >>> np.arange(10, dtype=np.int32).tofile(path)
    >>> v = FileVector(path, np.int32, 8, 6)
    >>> len(v), v[1:3].tolist(), int(v[-1]), v[np.array([5, 0])].tolist()
    (6, [3, 4], 7, [7, 2])
    """

    ndim = 1

    def __init__(self, path: str | Path, dtype, offset: int, length: int):
        self.filename = str(path)
        self.dtype = np.dtype(dtype)
        self.offset = int(offset)
        self.length = int(length)
        self._map: np.ndarray | None = None
        self._file = None  # opened at the first read and kept: a file replaced later is not read

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return (f"FileVector({self.filename!r}, {self.dtype}, offset={self.offset}, "
                f"length={self.length})")

    @property
    def shape(self) -> tuple[int]:
        return (self.length,)

    @property
    def size(self) -> int:
        return self.length

    @property
    def nbytes(self) -> int:
        return self.length * self.dtype.itemsize

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_map": None, "_file": None}  # the file's name, not its map

    def _opened(self):
        """The file, opened once: every read and the map are of it."""
        if self._file is None:
            self._file = open(self.filename, "rb")
        return self._file

    def _fd(self) -> int:
        return self._opened().fileno()

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self.length)
            if step != 1:
                raise IndexError("a FileVector is sliced with step 1 only")
            return self._read(start, max(start, stop))
        if isinstance(key, (int, np.integer)):
            at = int(key) + (self.length if key < 0 else 0)
            if not 0 <= at < self.length:
                raise IndexError(f"index {int(key)} is out of bounds for length {self.length}")
            return self._read(at, at + 1)[0]
        at = np.asarray(key)
        if at.dtype.kind not in "iu":
            raise IndexError("a FileVector is indexed by a slice, an integer or integers")
        at = np.where(at < 0, at + self.length, at).astype(np.int64)
        if at.size and (at.min() < 0 or at.max() >= self.length):
            raise IndexError(f"an index is out of bounds for length {self.length}")
        out = np.empty(at.shape, dtype=self.dtype)
        item, fd = self.dtype.itemsize, self._fd()
        for k, pos in enumerate(at.ravel()):
            out.flat[k] = np.frombuffer(os.pread(fd, item, self.offset + int(pos) * item),
                                        dtype=self.dtype)[0]
        return out

    def _read(self, start: int, stop: int) -> np.ndarray:
        """Values ``start..stop-1``, read from the file into a new array."""
        out = np.empty(stop - start, dtype=self.dtype)
        view, item = out.view(np.uint8), self.dtype.itemsize
        done, fd = 0, self._fd()
        while done < len(view):
            got = os.preadv(fd, [view[done:done + READ_BYTES]], self.offset + start * item + done)
            if got == 0:
                raise OSError(f"{self.filename} is shorter than its array")
            done += got
        return out

    def __array__(self, dtype=None, copy=None):
        if self._map is None:
            self._map = (np.empty(0, self.dtype) if self.length == 0 else
                         np.memmap(self._opened(), dtype=self.dtype, mode="r",
                                   offset=self.offset, shape=(self.length,)))
        array = self._map
        if dtype is not None and np.dtype(dtype) != self.dtype:
            return array.astype(dtype)
        return np.array(array) if copy else array
