"""The walks of a partitioned fit, round by round, made in this process or by Dask workers.

A round's walks are written to ``walks/round{r}.npy`` and each walk's part mask
(:func:`part_masks`) beside it; a round file appears (renamed into place) only once all its
walks are written, so a driver killed during the walks resumes at the first round without
its two files. ``walks/plan.json`` records the corpus the rounds belong to (graph, seed, walk
settings, rounds, parts): a folder whose record differs makes every round again.

With a Dask client (:func:`make_rounds`) the workers make the walks. First-order walks are
walked on the workers' shares of the rows (:mod:`kernelne.partitioned.part_walks`, walkers
handed from worker to worker), then tasks over ranges of the round write its masks and return
its counts (:func:`mask_task`); node2vec's walks are made on the whole graph, which the driver
writes once to ``walks/graph`` (CSR ``indptr``, ``indices`` and the cumulative weights,
``.npy`` files the workers memory-map), by one :func:`walk_task` per range of chunks: it makes
the walks of its range with the seeds of :meth:`kernelne.engine.walks.WalkCorpus.chunk` (walk
``i`` from ``(seed, i)``, its start from the round's permutation), writes them and their masks
at their rows of the round's pre-allocated files and returns its visit counts. The counts are
summed pairwise on the workers (:func:`summed`) into the one array a round that the driver
adds. The files and counts are therefore the same bytes as the driver's own walks, whatever
the workers and ranges. A round filed by part
(:mod:`kernelne.partitioned.part_files`) is filed by tasks over ranges of its windows once its
walks are written (:func:`_file_on_workers`), before the round's files are renamed into place.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import numpy as np
from numba import njit

from kernelne.engine.walks import (
    WalkCorpus,
    _walk_chunk,
    count_visits,
    cumulative_weight_windows,
    round_permutations,
    walk_starts,
)
from kernelne.errors import InputError, write_failure
from kernelne.outputs import allocated_memmap, atomic_path, write_npy
from kernelne.parallel import numba_threads
from kernelne.partitioned.blocks import read_row_windows, save_array
from kernelne.partitioned.buckets import READ_WALKS, release_futures
from kernelne.partitioned.part_files import (
    index_file,
    part_counts,
    part_file,
    part_shapes,
    read_windows,
    round_index,
    write_parts,
)
from kernelne.partitioned.part_walks import (
    PARTS,
    submit_round,
    walks_on_parts,
    write_part_graphs,
)
from kernelne.partitioned.plan import graph_digest
from kernelne.partitioned.store import npy_header, read_npy_header

GRAPH = "graph"  # the folder under ``walks/`` of the graph the workers read
WRITE_EDGES = 1 << 20  # edges copied and summed at a time by :func:`write_graph`
TASKS_PER_THREAD = 2  # walk tasks per round and Dask worker thread


def part_masks(walks: np.ndarray, parts: int) -> np.ndarray:
    """Each walk's parts as a bit mask (uint64): bit ``(v mod P) mod 64`` set for every node
    ``v`` of the walk (above 64 parts two parts can share a bit: the mask then only keeps more
    walks than it needs to)."""
    return _part_masks(walks, np.int64(parts))


@njit(cache=True)
def _part_masks(walks, parts):
    masks = np.zeros(walks.shape[0], np.uint64)
    for w in range(walks.shape[0]):
        mask = np.uint64(0)
        for v in walks[w]:
            if v >= 0:
                mask |= np.uint64(1) << np.uint64((v % parts) % 64)
        masks[w] = mask
    return masks


def walk_plan(corpus: WalkCorpus, rounds: int, parts: int, digest: str | None = None) -> dict:
    """What a folder's round files depend on: the graph (its size and
    :func:`~kernelne.partitioned.plan.graph_digest`), the seed, the walk settings, the rounds
    and the parts (``digest``: the graph's, if already made)."""
    g = corpus.graph
    plan = {
        "n": int(g.n_nodes), "edges": int(len(g.indices)), "graph": digest or graph_digest(g),
        "seed": int(corpus.seed), "walks_per_node": corpus.walks_per_node,
        "walk_length": corpus.walk_length, "p": corpus.p, "q": corpus.q,
        "rounds": int(rounds), "parts": int(parts),
    }
    return json.loads(json.dumps(plan))


def partial_path(path: Path, token: str) -> Path:
    """The hidden name a round's file is written under until all its rows are in (``token``:
    the driver run's, so that a task left running by a killed driver cannot write into the
    next run's file)."""
    return path.with_name(f".{path.name}.{token}.partial")


def rounds_to_make(folder: Path, corpus: WalkCorpus, files: list[tuple[Path, Path]],
                   parts: int, counts: np.ndarray, digest: str | None = None,
                   filed: bool = False) -> list[int]:
    """The rounds whose walks are still to be made; the visits of the others (whole files of
    the corpus ``walks/plan.json`` records) are added to ``counts``.

    Parameters
    ----------
    folder : Path
        The partitioned fit's folder (the files are under ``folder/walks``).
    corpus : WalkCorpus
        The fit's walks.
    files : list of (Path, Path)
        Each round's walk file and mask file.
    parts : int
        The fit's partitions.
    counts : ndarray of int64
        The unigram counts, added to.
    digest : str, optional
        The graph's :func:`~kernelne.partitioned.plan.graph_digest`, if already made.
    filed : bool, default False
        Whether the rounds are filed by part: a round without its index is made again.

    Returns
    -------
    list of int
        The rounds to make, in order. A record of another corpus (or none) makes them all:
        its round files are removed and this corpus is recorded.
    """
    walks = folder / "walks"
    plan = walk_plan(corpus, len(files), parts, digest)
    record = walks / "plan.json"
    try:
        old = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        old = None
    for path in walks.glob(".round*.partial"):  # a killed driver's rounds in the making
        path.unlink(missing_ok=True)
    if old != plan:
        for path in walks.glob("round*.npy"):
            path.unlink(missing_ok=True)
        for made in (GRAPH, PARTS):
            shutil.rmtree(walks / made, ignore_errors=True)
        with atomic_path(record) as tmp:
            tmp.write_text(json.dumps(plan, indent=1), encoding="utf-8")
        return list(range(len(files)))
    todo = []
    for r, (walk_file, mask_file) in enumerate(files):
        if filed and not index_file(walk_file).exists():
            todo.append(r)
        elif not (mask_file.exists() and _recount(walk_file, counts)):
            todo.append(r)
    return todo


def _recount(path: Path, counts: np.ndarray, rows: int = 1 << 16) -> bool:
    """Add the visits of the round file at ``path`` to ``counts`` (read ``rows`` walks at a
    time); ``False``, with ``counts`` unchanged, if the file is missing or cut short."""
    add = np.zeros_like(counts)
    try:
        with open(path, "rb") as fh:
            shape, _, dtype = read_npy_header(fh)
            length = int(np.prod(shape[1:], dtype=np.int64))
            for lo in range(0, shape[0], rows):
                count = (min(lo + rows, shape[0]) - lo) * length
                chunk = np.fromfile(fh, dtype=dtype, count=count)
                if chunk.size != count:
                    return False
                count_visits(chunk, add)
    except (OSError, ValueError):
        return False
    counts += add
    return True


def write_graph(folder: Path, corpus: WalkCorpus) -> Path:
    """Write the arrays :func:`walk_task` reads (``indptr``, ``indices``, the cumulative
    weights) to ``folder/walks/graph`` unless they are there, and return that folder. The
    edges are copied and summed :data:`WRITE_EDGES` at a time (a graph file's edges are read
    where they lie, :class:`~kernelne.graphs.file_vector.FileVector`): no copy and no map of
    the edges' size in the driver."""
    where = folder / "walks" / GRAPH
    where.mkdir(exist_ok=True)
    g, m = corpus.graph, len(corpus.graph.indices)
    arrays = (("indptr", np.int64, len(g.indptr), iter([g.indptr])),
              ("indices", np.int32, m,
               (g.indices[lo:lo + WRITE_EDGES] for lo in range(0, m, WRITE_EDGES))),
              ("cumw", np.float64, 0 if g.weights is None else m,
               iter([]) if g.weights is None else cumulative_weight_windows(g, WRITE_EDGES)))
    for name, dtype, length, windows in arrays:
        path = where / f"{name}.npy"
        if not path.exists():
            with atomic_path(path) as tmp:
                write_npy(tmp, dtype, (length,), windows)
    return where


def walk_task(graph_dir: str, walk_file: str, mask_file: str, round_first: int, first: int,
              stop: int, spec: dict, threads: int = 1) -> np.ndarray:
    """Make walks ``first..stop-1`` of a corpus (on a Dask worker) and write them and their
    part masks at their rows of a round's pre-allocated files.

    Parameters
    ----------
    graph_dir : str
        The folder :func:`write_graph` wrote (memory-mapped, never read whole).
    walk_file, mask_file : str
        The round's ``.npy`` files of walks and masks, allocated to the round's rows.
    round_first : int
        The id of the round's first walk (row 0 of its files).
    first, stop : int
        The walks to make: ids ``first..stop-1``.
    spec : dict
        ``n_nodes``, ``walk_length``, ``p``, ``q``, ``seed``, ``parts`` and ``chunk_walks``
        (walks made and written at a time).
    threads : int, default 1
        numba threads.

    Returns
    -------
    ndarray of int64
        The visits of every node in these walks.
    """
    root = Path(graph_dir)
    # copy-on-write maps (never written): typed as the driver's writable arrays, so the walk
    # loop numba compiled and cached for them serves here too
    indptr, indices, cumw = (np.load(root / f"{name}.npy", mmap_mode="c")
                             for name in ("indptr", "indices", "cumw"))
    n, length, seed = int(spec["n_nodes"]), int(spec["walk_length"]), np.uint64(spec["seed"])
    inv_p, inv_q = 1.0 / float(spec["p"]), 1.0 / float(spec["q"])
    counts = np.zeros(n, dtype=np.int64)
    perms = round_permutations(int(seed), n)
    walk_at, mask_at = npy_header(walk_file)[3], npy_header(mask_file)[3]
    with numba_threads(threads), open(walk_file, "r+b") as wf, open(mask_file, "r+b") as mf:
        for a in range(first, stop, int(spec["chunk_walks"])):
            b = min(stop, a + int(spec["chunk_walks"]))
            starts = walk_starts(n, a, b, seed, perms)
            walks = np.empty((b - a, length), dtype=np.int32)
            _walk_chunk(indptr, indices, cumw, starts, a, length, inv_p, inv_q, seed, walks)
            count_visits(walks, counts)
            wf.seek(walk_at + (a - round_first) * length * walks.itemsize)
            wf.write(walks.tobytes())
            mf.seek(mask_at + (a - round_first) * 8)
            mf.write(part_masks(walks, int(spec["parts"])).tobytes())
    return counts


def make_rounds(client, gather: Callable, folder: Path, corpus: WalkCorpus, parts: int,
                jobs: list[tuple[int, tuple[int, int], tuple[Path, Path]]],
                counts: np.ndarray, advance: Callable[[int], object], filed: bool = False,
                ) -> None:
    """Make rounds of walks on ``client``'s workers (first-order walks on their shares of the
    rows, :func:`~kernelne.partitioned.part_walks.submit_round`; node2vec's on the whole
    graph, :func:`walk_task`), the next round's tasks submitted before the current round's
    results are gathered.

    Parameters
    ----------
    client : distributed.Client
        The fit's client; its workers read and write ``folder`` at the same path.
    gather : callable
        ``gather(client, futures)``: the tasks' results in order.
    folder : Path
        The partitioned fit's folder.
    corpus : WalkCorpus
        The fit's walks.
    parts : int
        The fit's partitions.
    jobs : list of (int, (int, int), (Path, Path))
        Each round to make: its number, its walk ids ``[lo, hi)`` and its two files.
    counts : ndarray of int64
        The unigram counts, added to.
    advance : callable
        Called with each finished round's walks (a progress bar's ``update``).
    filed : bool, default False
        File each round by part (:mod:`kernelne.partitioned.part_files`) once its walks are
        written, while the next round's are made.
    """
    info = client.scheduler_info().get("workers", {})
    on_parts = walks_on_parts(corpus.p, corpus.q)
    groups = max(1, len(info))  # the walks' parts: one a worker
    graph_dir = (write_part_graphs(folder, corpus.graph, groups) if on_parts
                 else write_graph(folder, corpus))
    slots = max(1, TASKS_PER_THREAD * sum(w.get("nthreads", 1) for w in info.values()))
    spec = {"n_nodes": corpus.graph.n_nodes, "walk_length": corpus.walk_length,
            "p": corpus.p, "q": corpus.q, "seed": int(corpus.seed), "parts": int(parts),
            "chunk_walks": corpus.chunk_walks, "walk_parts": groups}
    token = uuid.uuid4().hex[:12]
    pending = submitted = None
    try:
        for job in [*jobs, None]:
            submitted = None
            if job is not None:
                submitted = job, _submit(client, str(graph_dir), spec, job, slots, token,
                                         on_parts)
            if pending is not None:
                (r, (lo, hi), files), futures = pending
                total = futures[-1]  # the sum of the round's counts (:func:`_submit`)
                counts += gather(client, [total])[0]
                release_futures(client, futures)
                if filed:  # the next round's walks are being made meanwhile
                    _file_on_workers(client, gather, files, token, parts, hi - lo,
                                     corpus.walk_length, slots)
                _publish(files, token)
                advance(hi - lo)
            pending = submitted
    finally:  # a failed or interrupted round: its tasks and the next one's are cancelled
        for held in (pending, submitted):
            if held is not None:
                release_futures(client, held[1])
    shutil.rmtree(graph_dir.parent if on_parts else graph_dir, ignore_errors=True)


def _submit(client, where: str, spec: dict, job, slots: int, token: str,
            on_parts: bool = False) -> list:
    """Allocate one round's files under their hidden names and submit its tasks over
    ``slots`` ranges of whole chunks (fewer if the round has fewer chunks): the walks of
    each range (:func:`walk_task` on the graph at ``where``), or the round walked on the
    parts' rows at ``where`` (:func:`~kernelne.partitioned.part_walks.submit_round`) and
    then each range's masks and counts (:func:`mask_task`); last, the counts' sums."""
    r, (lo, hi), (walk_file, mask_file) = job
    hidden = [str(path) for path in (partial_path(walk_file, token),
                                     partial_path(mask_file, token))]
    _allocate([Path(path) for path in hidden], [np.int32, np.uint64],
              [(hi - lo, spec["walk_length"]), (hi - lo,)])
    chunk = spec["chunk_walks"]
    n_chunks = -(-(hi - lo) // chunk)
    cuts = sorted({lo + min(hi - lo, k * n_chunks // slots * chunk) for k in range(slots + 1)})
    ranges = [(a, b) for a, b in pairwise(cuts) if b > a]
    if on_parts:
        walked = submit_round(client, where, hidden[0], lo, ranges, spec, token,
                                         str(r))
        tasks = [client.submit(mask_task, *hidden, lo, a, b, spec, *walked, pure=False,
                               key=f"kernelne-walk-masks-{r}-{a}-{token}")
                 for a, b in ranges]
    else:
        tasks = [client.submit(walk_task, where, *hidden, lo, a, b, spec, pure=False,
                               key=f"kernelne-walks-{r}-{a}-{token}")
                 for a, b in ranges]
    return tasks + summed(client, tasks, f"{r}-{token}")


def mask_task(walk_file: str, mask_file: str, round_first: int, first: int, stop: int,
              spec: dict, *after) -> np.ndarray:
    """Write the part masks of walks ``first..stop-1`` (on a Dask worker), read from their
    rows of a round's file (not mapped: a window at a time, :func:`read_row_windows`), at
    their rows of its mask file, and return their visits of every node (``after``: the tasks
    that wrote the walks, waited for), ``spec["chunk_walks"]`` walks at a time."""
    n, chunk = int(spec["n_nodes"]), int(spec["chunk_walks"])
    counts = np.zeros(n, dtype=np.int64)
    windows = [(a - round_first, min(stop, a + chunk) - round_first)
               for a in range(first, stop, chunk)]
    mask_at = npy_header(mask_file)[3]
    with open(mask_file, "r+b") as mf:
        for (lo, _), rows in zip(windows, read_row_windows(walk_file, windows), strict=True):
            count_visits(rows, counts)
            mf.seek(mask_at + lo * 8)
            mf.write(part_masks(rows, int(spec["parts"])).tobytes())
    return counts


def _file_on_workers(client, gather: Callable, files: tuple[Path, Path], token: str,
                     parts: int, n_rows: int, length: int, slots: int) -> None:
    """File a round whose walks are written (under their hidden names) by part on the workers:
    ``slots`` tasks count each part's walks per window (:func:`part_counts`), the driver makes
    the index and allocates the part files, as many tasks write their ranges of windows
    (:func:`write_parts`); then the part files are renamed into place and the index saved."""
    walk_file = files[0]
    hidden = [partial_path(path, token) for path in files]
    windows = read_windows(n_rows, READ_WALKS)
    cuts = sorted({k * len(windows) // slots for k in range(slots + 1)})
    ranges = [(a, b) for a, b in pairwise(cuts) if b > a]
    counts = _gathered(client, gather, [
        client.submit(part_counts, hidden[0], windows[a:b], parts, pure=False,
                      key=f"kernelne-filing-counts-{walk_file.stem}-{a}-{token}")
        for a, b in ranges])
    index = round_index(np.concatenate(counts, axis=1))
    parts_hidden = [partial_path(part_file(walk_file, c), token) for c in range(parts)]
    _allocate(parts_hidden, [np.int32] * parts, part_shapes(index, length))
    _gathered(client, gather, [
        client.submit(write_parts, hidden[0], hidden[1], parts_hidden, index, a, b,
                      READ_WALKS, pure=False,
                      key=f"kernelne-filing-{walk_file.stem}-{a}-{token}")
        for a, b in ranges])
    for c, path in enumerate(parts_hidden):
        os.replace(path, part_file(walk_file, c))
    save_array(index_file(walk_file), index)


def _allocate(paths: list[Path], dtypes: list, shapes: list[tuple[int, ...]]) -> None:
    """Allocate the ``.npy`` files at ``paths`` (hidden names) to their shapes; on a full disk
    none is left half-made and an :class:`InputError` names the file."""
    for path, dtype, shape in zip(paths, dtypes, shapes, strict=True):
        try:
            allocated = allocated_memmap(path, dtype, shape)
        except OSError as exc:
            for made in paths:
                made.unlink(missing_ok=True)
            raise InputError(f"cannot write {path}: {write_failure(exc)}") from None
        del allocated


def _gathered(client, gather: Callable, futures: list) -> list:
    """``gather(client, futures)``, the futures released however it ends."""
    try:
        return gather(client, futures)
    finally:
        release_futures(client, futures)


def summed(client, futures: list, token: str) -> list:
    """The futures of a tree of pairwise sums of ``futures``' count arrays, made on the
    workers, the last the total: the driver then receives one array of n counts a round,
    not one per task (``token``: the keys' own). Empty for a single future, which is then
    its own total."""
    layer, made = list(futures), []
    depth = 0
    while len(layer) > 1:
        sums = [client.submit(np.add, layer[i], layer[i + 1], pure=False,
                              key=f"kernelne-walk-counts-{depth}-{i}-{token}")
                for i in range(0, len(layer) - 1, 2)]
        made += sums
        layer = sums + layer[len(sums) * 2:]  # an odd one is carried up a level
        depth += 1
    return made


def _publish(files: tuple[Path, Path], token: str) -> None:
    """Rename a round's two whole files into place, the masks first: the walk file appearing
    marks the round made."""
    walk_file, mask_file = files
    os.replace(partial_path(mask_file, token), mask_file)
    os.replace(partial_path(walk_file, token), walk_file)
