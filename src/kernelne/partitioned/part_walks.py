"""Walks where the edges are: each part's rows in their own CSR files, walkers handed from
part to part (KnightKing's walker migration, Yang et al., SOSP 2019) by Dask tasks.

The parts walked on are a fit's workers' shares of the nodes (``W`` parts, ``v mod W``; not
the fit's ``P`` training parts, whose masks are made from the walks afterwards). Part ``c``
holds the rows of its nodes ``v = c + k W`` (row ``k`` of its CSR, the neighbours' ids
global): ``walks/parts/{W}/{c}/indptr.npy``, ``indices.npy`` and ``cumw.npy`` (the row's
cumulative weights, the same values as the whole graph's), written by
:func:`write_part_graphs` a window of edges at a time. A walker is a walk in progress (its
id, its step, the node it stands on, its generator's state: :data:`WALKER`, 24 bytes).
:func:`start_task` makes the walkers of a range of a round's walks on their start nodes;
then in every superstep each part's task (:func:`advance_task`) moves its walkers step by
step through its own rows, writing each node at its walk's row of the round's file, until
the walk ends or steps onto another part's node, and returns those, by destination: Dask
hands each to that part's task of the next superstep (the result split where it lies,
``operator.getitem``). Every superstep moves every walk still going at least one step, so
``L`` supersteps make a round (walk length ``L``). The generator's state travels with the
walker, so every walk draws the same numbers in the same order as
:func:`kernelne.engine.walks.random_walks` and the round's file is the same bytes.

Only first-order walks (``p = q = 1``) migrate this way: node2vec's second-order step needs
the previous node's row, on another worker. Part ``c``'s tasks are placed on worker ``c``
(another may take them if it is lost), so a worker maps its own rows only: ``1/W`` of the
edges. A step stays on its worker with probability about ``1/W`` (parts are balanced
samples of the nodes), so nearly every step is a hand-over and per-part segments of the
walks would be about one node long; the cost is the walkers' bytes moved each superstep
(``benchmarks/bench_worker_walks.py``).
"""

from __future__ import annotations

import operator
from contextlib import ExitStack
from pathlib import Path

import numpy as np
from numba import njit, prange

from kernelne.engine.sampling import stream_state
from kernelne.engine.walks import (
    _first_order_step,
    cumulative_weight_windows,
    round_permutations,
    walk_starts,
)
from kernelne.graphs.csr import row_windows
from kernelne.outputs import atomic_path, write_npy, write_npy_header
from kernelne.parallel import numba_threads
from kernelne.partitioned.buckets import part_placement

PARTS = "parts"  # the folder under ``walks/`` of the parts' rows
WRITE_EDGES = 1 << 20  # edges split by part at a time by :func:`write_part_graphs`
#: a walker: its walk's id, the step it stands at, the node it stands on, its generator
WALKER = np.dtype([("id", np.int64), ("step", np.int32), ("node", np.int32),
                   ("state", np.uint64)])
_ARRAYS = ("indptr", "indices", "cumw")


def walks_on_parts(p: float, q: float) -> bool:
    """Whether a round's walks can migrate between the parts' rows: first-order walks only
    (``p = q = 1``)."""
    return p == 1.0 and q == 1.0


def write_part_graphs(folder: Path, graph, parts: int) -> Path:
    """Write each part's rows (``indptr``, ``indices``, ``cumw``: part ``c``'s nodes ``c + k
    P`` in order) to ``folder/walks/parts/{P}/{c}`` unless they are there, and return
    ``folder/walks/parts/{P}``. One pass over the edges, :data:`WRITE_EDGES` at a time (a graph
    file's edges read where they lie); each part's ``indptr`` is made from its strided slice
    of the graph's: no array of the edges' size in this process, and no map of one."""
    where = folder / "walks" / PARTS / str(parts)
    dirs = [where / str(c) for c in range(parts)]
    if all((d / f"{name}.npy").exists() for d in dirs for name in _ARRAYS):
        return where
    n, indptr = graph.n_nodes, graph.indptr
    sizes = []
    for c, d in enumerate(dirs):
        d.mkdir(parents=True, exist_ok=True)
        starts = np.asarray(indptr[c:n:parts], dtype=np.int64)
        local = np.zeros(len(starts) + 1, dtype=np.int64)
        np.cumsum(np.asarray(indptr[c + 1:n + 1:parts], dtype=np.int64) - starts,
                  out=local[1:])
        with atomic_path(d / "indptr.npy") as tmp:
            write_npy(tmp, np.int64, local.shape, [local])
        sizes.append(int(local[-1]))
    m = int(indptr[n])
    windows = row_windows(indptr, WRITE_EDGES)
    _write_split(dirs, "indices", np.int32, sizes, indptr, parts,
                 ((lo, hi, graph.indices[int(indptr[lo]):int(indptr[hi])])
                  for lo, hi in windows))
    weighted = graph.weights is not None
    cumw = (zip(row_windows(indptr, WRITE_EDGES), cumulative_weight_windows(graph, WRITE_EDGES),
                strict=True)
            if weighted and m else iter([]))
    _write_split(dirs, "cumw", np.float64, sizes if weighted else [0] * parts, indptr, parts,
                 ((lo, hi, values) for (lo, hi), values in cumw))
    return where


def _write_split(dirs: list[Path], name: str, dtype, sizes: list[int], indptr, parts: int,
                 windows) -> None:
    """Write ``name.npy`` of every part (``sizes`` values each) from ``windows`` of rows
    ``(lo, hi, values)`` of the whole graph, each window's values split by part in order."""
    with ExitStack() as stack:
        paths = [stack.enter_context(atomic_path(d / f"{name}.npy")) for d in dirs]
        files = [stack.enter_context(open(path, "wb")) for path in paths]
        for fh, size in zip(files, sizes, strict=True):
            write_npy_header(fh, dtype, (size,))
        for lo, hi, values in windows:
            offsets = np.asarray(indptr[lo:hi + 1], dtype=np.int64)
            values = np.ascontiguousarray(values, dtype=dtype)
            out = np.empty_like(values)
            bounds = _split_by_part(offsets - offsets[0], np.int64(lo), np.int64(parts),
                                    values, out)
            for c, fh in enumerate(files):
                fh.write(out[bounds[c]:bounds[c + 1]].data)


@njit(cache=True)
def _split_by_part(offsets, first_row, parts, values, out):
    """``values`` of rows ``first_row + r`` (row ``r``'s at ``offsets[r]:offsets[r + 1]``)
    copied to ``out`` grouped by part, rows in order within each; returns the groups'
    bounds (``parts + 1``)."""
    bounds = np.zeros(parts + 1, dtype=np.int64)
    rows = len(offsets) - 1
    for r in range(rows):
        bounds[(first_row + r) % parts + 1] += offsets[r + 1] - offsets[r]
    for c in range(parts):
        bounds[c + 1] += bounds[c]
    at = bounds[:-1].copy()
    for r in range(rows):
        c = (first_row + r) % parts
        for e in range(offsets[r], offsets[r + 1]):
            out[at[c]] = values[e]
            at[c] += 1
    return bounds


@njit(parallel=True, cache=True)
def _advance(indptr, indices, cumw, part, parts, walkers, length, round_first, out, dest):
    """Move each walker through part ``part``'s rows, writing its nodes at its row of
    ``out`` (the round's walks), until its walk ends (``dest = -1``) or it steps onto part
    ``dest``'s node (the walker updated to stand there)."""
    for i in prange(walkers.shape[0]):
        row = out[walkers[i]["id"] - round_first]
        t = walkers[i]["step"]
        v = walkers[i]["node"]
        state = walkers[i]["state"]
        dest[i] = -1
        while True:
            row[t] = v
            if t == length - 1:
                break
            k = v // parts
            if indptr[k + 1] == indptr[k]:  # no out-neighbour: the rest of the row is -1
                for s in range(t + 1, length):
                    row[s] = -1
                break
            state, x = _first_order_step(indptr, indices, cumw, k, state)
            t += 1
            if x % parts != part:
                dest[i] = x % parts
                walkers[i]["step"] = t
                walkers[i]["node"] = x
                walkers[i]["state"] = state
                break
            v = x


@njit(cache=True)
def _start_states(ids, seed, states):
    for i in range(ids.shape[0]):
        states[i] = stream_state(seed, np.uint64(ids[i]))


def _by_part(walkers: np.ndarray, dest: np.ndarray, parts: int) -> tuple[np.ndarray, ...]:
    """``walkers`` split by their ``dest`` part (``-1``: none, dropped), in order within each:
    views of one array, grouped in one counting pass (:func:`_group`)."""
    grouped, bounds = _group(walkers, dest, np.int64(parts))
    return tuple(grouped[bounds[c]:bounds[c + 1]] for c in range(parts))


@njit(cache=True)
def _group(walkers, dest, parts):
    bounds = np.zeros(parts + 1, dtype=np.int64)
    for i in range(dest.shape[0]):
        if dest[i] >= 0:
            bounds[dest[i] + 1] += 1
    for c in range(parts):
        bounds[c + 1] += bounds[c]
    grouped = np.empty(bounds[parts], dtype=walkers.dtype)
    at = bounds[:-1].copy()
    for i in range(dest.shape[0]):
        if dest[i] >= 0:
            grouped[at[dest[i]]] = walkers[i]
            at[dest[i]] += 1
    return grouped, bounds


def start_task(lo: int, hi: int, spec: dict) -> tuple[np.ndarray, ...]:
    """The walkers of walks ``lo..hi-1`` (on a Dask worker) at step 0 on their start nodes
    (:func:`~kernelne.engine.walks.walk_starts`), each generator seeded by ``(seed, id)``,
    one array per part of the start node.

    Parameters
    ----------
    lo, hi : int
        The walks.
    spec : dict
        ``n_nodes``, ``walk_length``, ``seed`` and ``walk_parts`` (the parts walked on).

    Returns
    -------
    tuple of ndarray of :data:`WALKER`
        The walkers, by part.
    """
    n, seed, parts = int(spec["n_nodes"]), np.uint64(spec["seed"]), int(spec["walk_parts"])
    starts = walk_starts(n, lo, hi, seed, round_permutations(int(seed), n))
    walkers = np.zeros(hi - lo, dtype=WALKER)
    walkers["id"] = np.arange(lo, hi)
    walkers["node"] = starts
    states = np.empty(hi - lo, dtype=np.uint64)
    _start_states(walkers["id"].copy(), seed, states)
    walkers["state"] = states
    return _by_part(walkers, starts.astype(np.int64) % parts, parts)


def advance_task(part_dir: str, walk_file: str, part: int, round_first: int, spec: dict,
                 *inbound: np.ndarray, threads: int = 1) -> tuple[np.ndarray, ...]:
    """A superstep of a round (on a Dask worker): move the walkers handed to part ``part``
    (``inbound``: one array from each task of the superstep before) through its rows
    (:func:`_advance`), writing their nodes at their rows of the round's file, and return
    those that left it, one array per destination part.

    Parameters
    ----------
    part_dir : str
        The folder :func:`write_part_graphs` wrote (memory-mapped, never read whole).
    walk_file : str
        The round's ``.npy`` file of walks, allocated to the round's rows (row 0: walk
        ``round_first``).
    part : int
        The part.
    round_first : int
        The round's first walk.
    spec : dict
        ``walk_length`` and ``walk_parts`` (the parts walked on).
    *inbound : ndarray of :data:`WALKER`
        The walkers handed to this part.
    threads : int, default 1
        numba threads.

    Returns
    -------
    tuple of ndarray of :data:`WALKER`
        The walkers going on, by destination part.
    """
    parts, length = int(spec["walk_parts"]), int(spec["walk_length"])
    walkers = np.concatenate(inbound) if inbound else np.zeros(0, dtype=WALKER)
    dest = np.full(len(walkers), -1, dtype=np.int64)
    if len(walkers):
        root = Path(part_dir) / str(part)
        # copy-on-write maps (never written), typed as writable arrays like the graph walks'
        indptr, indices, cumw = (np.load(root / f"{name}.npy", mmap_mode="c")
                                 for name in _ARRAYS)
        out = np.load(walk_file, mmap_mode="r+")
        with numba_threads(threads):
            _advance(indptr, indices, cumw, np.int64(part), np.int64(parts), walkers, length,
                     np.int64(round_first), out, dest)
        out.flush()
        del out
    return _by_part(walkers, dest, parts)


def submit_round(client, part_dir: str, walk_file: str, round_first: int,
                 ranges: list[tuple[int, int]], spec: dict, token: str, name: str) -> list:
    """Submit a round's walks: a :func:`start_task` for every range of walks, then ``L``
    supersteps of an :func:`advance_task` for every part, part ``c``'s on the ``c``-th
    worker (modulo their number; another if that one is lost); each task's walkers for part
    ``c`` are taken from its result where it lies (``operator.getitem``). Returns the last
    superstep's futures: once they are done every walk of the round is in ``walk_file``
    (their results are empty: a walk has at most ``L`` nodes, and each superstep moves it
    at least one)."""
    parts, length = int(spec["walk_parts"]), int(spec["walk_length"])
    where = part_placement(client, parts)
    outbound = [client.submit(start_task, lo, hi, spec, pure=False,
                              key=f"kernelne-walkers-{name}-start-{lo}-{token}")
                for lo, hi in ranges]
    for step in range(length):
        handed = [[client.submit(operator.getitem, f, c, pure=False,
                                 key=f"kernelne-walkers-{name}-{step}-{c}-{i}-{token}")
                   for i, f in enumerate(outbound)] for c in range(parts)]
        outbound = [client.submit(advance_task, part_dir, walk_file, c, round_first, spec,
                                  *handed[c], pure=False,
                                  key=f"kernelne-walks-{name}-{step}-{c}-{token}", **where[c])
                    for c in range(parts)]
    return outbound
