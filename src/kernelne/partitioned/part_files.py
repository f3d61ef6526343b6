"""A round's walks filed by part: each walk copied into the file of every part it visits, so
that bucket ``(c, x)`` reads part ``c``'s file instead of the whole round.

A walk of length ``L`` visits a part with probability ``f = 1 - (1 - 1/P)^L`` (parts are
``v mod P``, balanced samples of the nodes), so part ``c``'s file holds about ``f`` of the
round's walks and the ``P`` files together ``P f`` times the round (5.9 at ``P = 8``, ``L =
10``; 9.3 at ``P = 64``). A bucket reads ``f (L + 3) / (L + 2)`` of the bytes it reads from
the round's file (:func:`filed_share`): 0.80 at ``P = 8``, 0.29 at ``P = 32``, 0.16 at ``P =
64``. A fit files its rounds where that share is at most :data:`FILED_SHARE`
(:func:`files_by_part`).

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
from kernelne.partitioned.blocks import read_rows, save_array
from kernelne.partitioned.store import Location, load_npy, npy_header, staged

HEAD = 3  # columns before a filed walk's nodes: its row in the round, its mask's two halves
FILED_SHARE = 0.5  # the largest share of a round's bytes for which a fit files it by part


def filed_share(parts: int, walk_length: int) -> float:
    """The expected bytes a bucket reads from its part's file, as a share of the round's file:
    ``f (L + 3) / (L + 2)``, ``f = 1 - (1 - 1/P)^L`` (a round's file holds ``L`` int32 nodes
    and an 8-byte mask a walk)."""
    share = 1.0 - (1.0 - 1.0 / parts) ** walk_length
    return share * (walk_length + HEAD) / (walk_length + 2)


def files_by_part(parts: int, walk_length: int) -> bool:
    """Whether a fit of ``parts`` partitions files its rounds by part: where
    :func:`filed_share` is at most :data:`FILED_SHARE` (at walks of 10 nodes, from
    ``P = 17``)."""
    return parts > 1 and filed_share(parts, walk_length) <= FILED_SHARE


def part_file(round_file: Location, part: int) -> Location:
    """Part ``part``'s file of the round whose walks are at ``round_file``."""
    return round_file.with_name(round_file.name.removesuffix(".npy") + f".part{part}.npy")


def index_file(round_file: Location) -> Location:
    """The index of the round whose walks are at ``round_file`` (the module's layout)."""
    return round_file.with_name(round_file.name.removesuffix(".npy") + ".index.npy")


@njit(cache=True)
def _visits(walks, parts):
    """Each walk's parts, once each: ``(walk rows, parts)`` in walk order (padding ``-1``
    skipped)."""
    n, length = walks.shape
    seen = np.full(parts, -1, np.int64)
    rows = np.empty(n * length, np.int64)
    where = np.empty(n * length, np.int64)
    k = 0
    for w in range(n):
        for v in walks[w]:
            if v >= 0:
                c = v % parts
                if seen[c] != w:
                    seen[c] = w
                    rows[k] = w
                    where[k] = c
                    k += 1
    return rows[:k], where[:k]


def _windows(n_rows: int, size: int) -> list[tuple[int, int]]:
    return [(lo, min(lo + size, n_rows)) for lo in range(0, n_rows, size)]


def file_round(walk_path: Location, mask_path: Location, round_file: Location, parts: int,
               window: int) -> None:
    """File the round whose walks and masks are at ``walk_path`` and ``mask_path`` by part, into
    the files of ``round_file`` (:func:`part_file`, :func:`index_file`; the layout above).

    Parameters
    ----------
    walk_path, mask_path : Location
        The round's walks (int32, one row a walk) and masks (uint64).
    round_file : Location
        The round's name (``walks/round{r}.npy``): the part files are named after it.
    parts : int
        The fit's partitions.
    window : int
        The walks a bucket reads at a time (``kernelne.partitioned.buckets.READ_WALKS``).

    Two passes over the round, a window at a time: the first counts each part's walks per
    window, the second writes them. Each file appears whole (written under a temporary name,
    or uploaded); the index last.
    """
    shape = npy_header(walk_path)[0]
    n_rows, length = int(shape[0]), int(shape[1])
    windows = _windows(n_rows, window)
    index = np.zeros((parts, len(windows) + 1), dtype=np.int64)
    for w, (lo, hi) in enumerate(windows):
        index[:, w + 1] = np.bincount(_visits(read_rows(walk_path, lo, hi), parts)[1],
                                      minlength=parts)
    np.cumsum(index, axis=1, out=index)
    with ExitStack() as stack:
        tmps = [stack.enter_context(staged(part_file(round_file, c))) for c in range(parts)]
        outs = [allocated_memmap(tmp, np.int32, (int(index[c, -1]), length + HEAD))
                for c, tmp in enumerate(tmps)]
        for w, (lo, hi) in enumerate(windows):
            walks = read_rows(walk_path, lo, hi)
            masks = read_rows(mask_path, lo, hi)
            rows, where = _visits(walks, parts)
            order = np.argsort(where, kind="stable")  # by part; each part's rows ascending
            bounds = np.searchsorted(where[order], np.arange(parts + 1))
            for c in range(parts):
                mine = rows[order[bounds[c]:bounds[c + 1]]]
                out = outs[c][index[c, w]:index[c, w + 1]]
                out[:, 0] = lo + mine
                out[:, 1:3] = masks[mine].view(np.int32).reshape(-1, 2)
                out[:, HEAD:] = walks[mine]
        for out in outs:
            out.flush()
        del outs
    save_array(index_file(round_file), index)


def filed_windows(round_file: Location, part: int) -> Iterator[tuple[np.ndarray, np.ndarray,
                                                                        np.ndarray]]:
    """Part ``part``'s walks of a filed round (``round_file``: the round's walks), one read
    window at a time, windows without its walks skipped: ``(rows, masks, walks)``, the walks'
    rows in the round (int64), their masks (uint64) and the walks (int32, C order)."""
    index = load_npy(index_file(round_file))[part]
    path = part_file(round_file, part)
    for a, b in zip(index[:-1], index[1:], strict=True):
        if b > a:
            block = read_rows(path, int(a), int(b))
            masks = np.ascontiguousarray(block[:, 1:3]).view(np.uint64).ravel()
            yield block[:, 0].astype(np.int64), masks, np.ascontiguousarray(block[:, HEAD:])
