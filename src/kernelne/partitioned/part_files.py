"""A round's walks filed by part: each walk copied into the file of every part it visits, so
that bucket ``(c, x)`` reads part ``c``'s file instead of the whole round.

A walk of length ``L`` visits a part with probability ``f = 1 - (1 - 1/P)^L`` (parts are
``v mod P``, balanced samples of the nodes), so part ``c``'s file holds about ``f`` of the
round's walks and the ``P`` files together ``P f`` times the round (5.9 at ``P = 8``, ``L =
10``; 9.3 at ``P = 64``). A bucket reads ``f (L + 3) / (L + 2)`` of the bytes it reads from
the round's file (:func:`filed_share`): 0.80 at ``P = 8``, 0.52 at ``P = 16``, 0.29 at
``P = 32``, 0.16 at ``P = 64``. A fit files its rounds where that share is at most
:data:`FILED_SHARE` (:func:`files_by_part`).

Layout, beside ``walks/round{r}.npy``:

- ``walks/round{r}.part{c}.npy``: int32 rows of ``L + 3`` columns: the walk's row in the
  round, the low and high 32 bits of its part mask
  (:func:`kernelne.partitioned.rounds.part_masks`), then its ``L`` nodes; in the round's
  order.
- ``walks/round{r}.index.npy``: int64, ``P x (W + 1)``: row ``index[c, w]`` of part ``c``'s
  file is its first walk of the round's read window ``w`` (rows ``[w S, (w + 1) S)`` of the
  round, ``S`` walks a window). A bucket trains the windows of part ``c``'s file one by one,
  the same walks in the same windows as from the round's file, so its negatives (seeded by
  the window's first walk with a pair in the bucket) and its bytes are the same. Written
  last: the index marks the round filed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import numpy as np
from numba import njit

from kernelne.outputs import allocated_memmap
from kernelne.partitioned.blocks import read_row_windows, save_array
from kernelne.partitioned.store import Location, load_npy, npy_header, staged

HEAD = 3  # columns before a filed walk's nodes: its row in the round, its mask's two halves
FILED_SHARE = 0.55  # the largest share of a round's bytes for which a fit files it by part


def filed_share(parts: int, walk_length: int) -> float:
    """The expected bytes a bucket reads from its part's file, as a share of the round's file:
    ``f (L + 3) / (L + 2)``, ``f = 1 - (1 - 1/P)^L`` (a round's file holds ``L`` int32 nodes
    and an 8-byte mask a walk)."""
    share = 1.0 - (1.0 - 1.0 / parts) ** walk_length
    return share * (walk_length + HEAD) / (walk_length + 2)


def files_by_part(parts: int, walk_length: int) -> bool:
    """Whether a fit of ``parts`` partitions files its rounds by part: where
    :func:`filed_share` is at most :data:`FILED_SHARE` (at walks of 10 nodes, from
    ``P = 15``; ``benchmarks/bench_part_files.py`` measured a bucket's reads 1.6x faster
    at ``P = 16`` and no faster at ``P = 8``)."""
    return parts > 1 and filed_share(parts, walk_length) <= FILED_SHARE


def part_file(round_file: Location, part: int) -> Location:
    """Part ``part``'s file of the round whose walks are at ``round_file``."""
    return round_file.with_name(round_file.name.removesuffix(".npy") + f".part{part}.npy")


def index_file(round_file: Location) -> Location:
    """The index of the round whose walks are at ``round_file`` (the module's layout)."""
    return round_file.with_name(round_file.name.removesuffix(".npy") + ".index.npy")


@njit(cache=True)
def _visits(walks, parts):
    """The walks that visit each part (padding ``-1`` is no part): int64, ``parts``."""
    seen = np.full(parts, -1, np.int64)
    counts = np.zeros(parts, np.int64)
    for w in range(walks.shape[0]):
        for v in walks[w]:
            if v >= 0 and seen[v % parts] != w:
                seen[v % parts] = w
                counts[v % parts] += 1
    return counts


@njit(cache=True)
def _grouped(walks, masks, first, parts):
    """A window's walks grouped by the parts they visit, as part files hold them: ``(out,
    starts)``, ``out`` the rows (``L + 3`` int32 columns: row ``first + w``, the mask's two
    halves, the walk) of part 0's walks, then part 1's, ..., each in walk order, and part
    ``c``'s rows ``out[starts[c]:starts[c + 1]]``."""
    length = walks.shape[1]
    starts = np.zeros(parts + 1, np.int64)
    starts[1:] = np.cumsum(_visits(walks, parts))
    out = np.empty((starts[parts], length + HEAD), np.int32)
    at = starts[:parts].copy()
    seen = np.full(parts, -1, np.int64)
    halves = masks.view(np.int32)
    for w in range(walks.shape[0]):
        for v in walks[w]:
            c = v % parts
            if v >= 0 and seen[c] != w:
                seen[c] = w
                row = out[at[c]]
                row[0] = first + w
                row[1] = halves[2 * w]
                row[2] = halves[2 * w + 1]
                row[HEAD:] = walks[w]
                at[c] += 1
    return out, starts


def read_windows(n_rows: int, size: int) -> list[tuple[int, int]]:
    """The chunks ``[lo, hi)`` of ``size`` rows that a bucket reads from a round's file and
    trains one at a time: always the same, since a chunk's draws are seeded by the chunk
    (:func:`kernelne.partitioned.buckets.train_bucket`); a filed round keeps them."""
    return [(lo, min(lo + size, n_rows)) for lo in range(0, n_rows, size)]


def part_counts(walk_path: Location, windows: list[tuple[int, int]], parts: int) -> np.ndarray:
    """Each part's walks in each of ``windows`` (rows ``[lo, hi)`` of the round at
    ``walk_path``): int64, ``parts x len(windows)``."""
    counts = np.zeros((parts, len(windows)), dtype=np.int64)
    for w, walks in enumerate(read_row_windows(walk_path, windows)):
        counts[:, w] = _visits(walks, parts)
    return counts


def write_parts(walk_path: Location, mask_path: Location, part_paths: list, index: np.ndarray,
                first: int, stop: int, window: int) -> None:
    """Write windows ``first..stop-1`` of the round at ``walk_path`` into the part files at
    ``part_paths`` (local, allocated to their rows; ``index``: the round's, the module's
    layout): part ``c``'s walks of window ``w`` at its rows ``index[c, w]`` on."""
    n_rows = int(npy_header(walk_path)[0][0])
    files = [open(path, "r+b") for path in part_paths]
    try:
        offsets = [npy_header(path)[3] for path in part_paths]
        windows = [(w * window, min((w + 1) * window, n_rows)) for w in range(first, stop)]
        for w, (lo, _), walks, masks in zip(range(first, stop), windows,
                                            read_row_windows(walk_path, windows),
                                            read_row_windows(mask_path, windows), strict=True):
            out, starts = _grouped(walks, masks, lo, len(files))
            for c, fh in enumerate(files):
                fh.seek(offsets[c] + int(index[c, w]) * out.shape[1] * 4)
                fh.write(out[starts[c]:starts[c + 1]].tobytes())
    finally:
        for fh in files:
            fh.close()


def round_index(counts: np.ndarray) -> np.ndarray:
    """The index of a round (the module's layout) from :func:`part_counts` over its
    windows."""
    index = np.zeros((counts.shape[0], counts.shape[1] + 1), dtype=np.int64)
    np.cumsum(counts, axis=1, out=index[:, 1:])
    return index


def part_shapes(index: np.ndarray, walk_length: int) -> list[tuple[int, int]]:
    """The shapes of a round's part files (int32), from its index."""
    return [(int(rows), walk_length + HEAD) for rows in index[:, -1]]


def file_round(walk_path: Location, mask_path: Location, round_file: Location, parts: int,
               window: int) -> None:
    """File the round whose walks and masks are at ``walk_path`` and ``mask_path`` by part, into
    the files of ``round_file`` (:func:`part_file`, :func:`index_file`; the layout above).

    Parameters
    ----------
    walk_path, mask_path : Location
        The round's walks (int32, one row a walk) and masks (uint64), local files.
    round_file : Location
        The round's name (``walks/round{r}.npy``): the part files are named after it.
    parts : int
        The fit's partitions.
    window : int
        The walks a bucket reads at a time (``kernelne.partitioned.buckets.READ_WALKS``).

    Two passes over the round: :func:`part_counts` gives the index, :func:`write_parts`
    writes the files (a Dask fit runs both passes as tasks over ranges of windows). Each file
    appears whole (written under a temporary name, or uploaded); the index last.
    """
    n_rows, length = (int(x) for x in npy_header(walk_path)[0])
    windows = read_windows(n_rows, window)
    index = round_index(part_counts(walk_path, windows, parts))
    with ExitStack() as stack:
        tmps = [stack.enter_context(staged(part_file(round_file, c))) for c in range(parts)]
        for tmp, shape in zip(tmps, part_shapes(index, length), strict=True):
            allocated = allocated_memmap(tmp, np.int32, shape)
            del allocated
        write_parts(walk_path, mask_path, tmps, index, 0, len(windows), window)
    save_array(index_file(round_file), index)


def filed_windows(round_file: Location, part: int) -> Iterator[np.ndarray]:
    """Part ``part``'s walks of a filed round (``round_file``: the round's walks), one read
    window at a time, windows without its walks skipped: the part file's rows of the window
    (int32, the module's layout: each walk's row in the round, its mask's low and high
    halves, its :data:`HEAD` on the walk's nodes), read into one buffer
    (:func:`~kernelne.partitioned.blocks.read_row_windows`): each window is valid until the
    next one is asked for."""
    index = load_npy(index_file(round_file))[part]
    yield from read_row_windows(part_file(round_file, part),
                                ((int(a), int(b)) for a, b in zip(index[:-1], index[1:],
                                                                  strict=True) if b > a))
