"""The buckets of a partitioned fit: the pairs of bucket ``(i, j)`` listed and trained (numba),
the task that trains one bucket from its block files (in the driver or on a Dask worker) and
the submission of a step's buckets to a Dask client.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

import numba
import numpy as np
from numba import njit, prange

from kernelne.engine.kernels import LINEAR
from kernelne.engine.prefetch import prefetch_row
from kernelne.engine.sampling import alias_draw, mix64, stream_state
from kernelne.engine.trainer import (
    CTX_STREAM,
    NEG_STREAM,
    ONE,
    KernelArrays,
    Noise,
    TrainSettings,
    beta_step,
    center_window,
    draw_pool,
    next_negatives,
    pair_step,
    prefetch_rows,
    subsample_walk,
    thread_buffers,
)
from kernelne.errors import TrainingError
from kernelne.memory import peak_memory_mb
from kernelne.parallel import numba_threads
from kernelne.partitioned.blocks import (
    block_path,
    masks_file,
    read_block,
    read_row_windows,
    write_block,
)
from kernelne.partitioned.part_files import HEAD, filed_windows, read_windows
from kernelne.partitioned.store import load_npz, location, npy_header

READ_WALKS = 1 << 16  # walks read from a round's file at a time (a chunk)
AHEAD = 4  # pairs whose rows a bucket prefetches ahead
WORKER_WATCH_SECONDS = 60.0  # how often a step's wait looks for a connected Dask worker


def bucket_order(parts: int) -> list[list[tuple[int, int]]]:
    """The steps of a round: step ``s`` holds the buckets ``(i, (i + s) mod P)``, disjoint in
    their center parts and in their context parts."""
    return [[(i, (i + s) % parts) for i in range(parts)] for s in range(parts)]


def bucket_bits(i: int, j: int) -> np.uint64:
    """The mask bits of parts ``i`` and ``j`` (bit ``c mod 64`` for part ``c``): a walk whose
    mask holds both is one that can have pairs in bucket ``(i, j)``, the only walks the bucket
    reads."""
    return (np.uint64(1) << np.uint64(i % 64)) | (np.uint64(1) << np.uint64(j % 64))


def walks_of_bucket(masks: np.ndarray, walks: np.ndarray, first: int, i: int, j: int,
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The walks of a window (``walks``, their ``masks``; ids ``first`` on) whose masks hold
    parts ``i`` and ``j`` (:func:`bucket_bits`), in order, in one pass: their ids (int64) and
    a contiguous copy of them."""
    return _select_walks(masks, walks, np.int64(first), bucket_bits(i, j))


@njit(cache=True)
def _select_walks(masks, walks, first, both):
    ids = np.empty(len(masks), np.int64)
    out = np.empty((len(masks), walks.shape[1]), np.int32)
    k = 0
    for r in range(len(masks)):
        if (masks[r] & both) == both:
            ids[k] = first + r
            out[k] = walks[r]
            k += 1
    return ids[:k], out[:k]


@njit(cache=True, inline="always")
def _filed_mask(block, r):
    """The mask of row ``r`` of a part file's rows (int32: its low half, then its high)."""
    return (np.uint64(np.uint32(block[r, 1]))
            | (np.uint64(np.uint32(block[r, 2])) << np.uint64(32)))


@njit(cache=True)
def _select_filed(block, head, first, both):
    """:func:`walks_of_bucket` of a part file's rows (``block``, int32: row in the round, the
    mask's low and high halves, the walk), the ids ``first`` plus each walk's row."""
    ids = np.empty(block.shape[0], np.int64)
    out = np.empty((block.shape[0], block.shape[1] - head), np.int32)
    k = 0
    for r in range(block.shape[0]):
        if (_filed_mask(block, r) & both) == both:
            ids[k] = first + np.int64(block[r, 0])
            out[k] = block[r, head:]
            k += 1
    return ids[:k], out[:k]


def train_bucket(
    walks: np.ndarray, ids: np.ndarray, A: np.ndarray, B: np.ndarray, i: int, j: int,
    parts: int, kernel: KernelArrays, noise: Noise, settings: TrainSettings,
    losses: np.ndarray | None = None, keep: np.ndarray | None = None,
    phases: dict[str, float] | None = None,
) -> int:
    """Train bucket ``(i, j)`` on a chunk of walks (global node ids; ``ids`` their walk ids,
    int64, ascending, which place them on the learning-rate schedule): every pair whose center
    is in part ``i`` and context in part ``j``, ``A`` and ``B`` the blocks ``A_i`` and ``B_j``
    (rows ``v // P``), ``noise`` over part ``j``'s rows. Returns the pairs trained. A walk
    without such pairs can be left out of the chunk: it adds no pair.

    The chunk's pairs are listed first (:func:`_bucket_pairs`), then trained in walk order
    (:func:`_train_pairs`). Negatives: k per pair over part ``j``, drawn one pair ahead, or
    (``settings.negative_pool``) picked from a pool of that many draws renewed every
    ``L (L - 1)`` pairs (a plain fit's pairs of one walk of length ``L``), the next pool's
    rows prefetched over the pairs before it. The draws' stream is seeded by the bucket and
    the id of the chunk's first walk with a pair here, so one thread gives the same bytes
    whether or not the walks without pairs were left out, but not if the chunks change: a
    fit cuts its rounds into the same chunks every time
    (:func:`~kernelne.partitioned.part_files.read_windows`).
    ``keep`` (length n, global ids): subsampling as in :func:`kernelne.engine.trainer.train_walks`;
    its draws and the shrunk windows come from a stream of the walk alone, so every bucket
    sees the same subsampled walk and windows. ``phases``: seconds spent listing and training
    are added to its ``"list"`` and ``"train"``."""
    settings = settings.typed()
    keep = np.empty(0, np.float32) if keep is None else np.asarray(keep, dtype=np.float32)
    if settings.shared_negatives:
        raise ValueError("partitioned training uses negatives per pair")
    ids = np.asarray(ids, dtype=np.int64)
    start = time.perf_counter()
    centers, contexts, rates, first = _bucket_pairs(walks, ids, i, j, parts, settings, keep)
    listed = time.perf_counter()
    count = len(centers)
    if phases is not None:
        phases["list"] = phases.get("list", 0.0) + listed - start
    if count == 0:
        return 0
    n_blocks = max(1, min(numba.get_num_threads(), count // 1024))
    block_losses = np.zeros((n_blocks, 2), dtype=np.float64)
    seed = np.uint64(stream_state(
        settings.seed ^ NEG_STREAM ^ mix64(np.uint64(i * parts + j + 1)), np.uint64(first)))
    _train_pairs(centers, contexts, rates, A, B, kernel, noise, settings, n_blocks,
                 block_losses, seed, max(1, walks.shape[1] * (walks.shape[1] - 1)))
    if phases is not None:
        phases["train"] = phases.get("train", 0.0) + time.perf_counter() - listed
    if losses is not None:
        losses += block_losses.sum(axis=0)
    return count


@njit(cache=True)
def _bucket_pairs(walks, ids, i, j, parts, cfg, keep):
    """The pairs of bucket ``(i, j)`` in the walks, in walk order: center and context rows
    (``v // P``) and the center's learning rate, and the id of the first walk that has one
    (-1 if none). A walk's positions in parts ``i`` and ``j`` are listed first, then every
    (center, context) of the two lists inside the center's window is written and kept by a
    count that grows only if it is in (no branch per node: the parts are random, so a branch
    on them mispredicts; listing ran 2.2x faster so)."""
    size = max(16, 2 * walks.shape[0])  # about 1.4 pairs a walk at P = 8; grown when full
    centers, contexts = np.empty(size, np.int32), np.empty(size, np.int32)
    rates = np.empty(size, np.float32)
    length = walks.shape[1]
    kept = np.empty(length, walks.dtype)
    rows = np.empty(length, np.int32)
    wins = np.full(length, cfg.window, np.int64)
    in_i, in_j = np.empty(length, np.int64), np.empty(length, np.int64)
    count = 0
    first = -1
    for w in range(walks.shape[0]):
        walk = walks[w]
        n = length
        while n > 0 and walk[n - 1] < 0:
            n -= 1
        ctx = stream_state(cfg.seed ^ CTX_STREAM, np.uint64(ids[w]))  # as a plain fit's
        seq = walk
        if keep.shape[0] > 0:
            ctx, n = subsample_walk(walk, n, keep, ctx, kept)
            seq = kept
        n_i = n_j = 0
        for pos in range(n):
            part = seq[pos] % parts
            rows[pos] = seq[pos] // parts
            in_i[n_i] = pos
            n_i += part == i
            in_j[n_j] = pos
            n_j += part == j
        if n_i == 0 or n_j == 0:
            continue
        if cfg.window_shrink:  # drawn for every center, as in a plain fit
            for pos in range(n):
                ctx, wins[pos] = center_window(ctx, cfg.window, True)
        if count + n_i * n_j > size:
            size = 2 * size + n_i * n_j
            centers, contexts = _grown(centers, size), _grown(contexts, size)
            rates = _grown(rates, size)
        center_index = ids[w] * length
        before = count
        for a in range(n_i):
            pos = in_i[a]
            b = wins[pos]
            frac = 1.0 - (center_index + pos) / cfg.total_centers
            lr = np.float32(max(cfg.lr * frac, cfg.min_lr))
            for e in range(n_j):
                c = in_j[e]
                centers[count] = rows[pos]
                contexts[count] = rows[c]
                rates[count] = lr
                count += (c != pos) & (c >= pos - b) & (c <= pos + b)
        if first < 0 and count > before:
            first = ids[w]
    return centers[:count], contexts[:count], rates[:count], first


@njit(inline="always")
def _grown(array, size):
    out = np.empty(size, array.dtype)
    out[: array.shape[0]] = array
    return out


@njit(parallel=True, fastmath=True, cache=True)
def _train_pairs(centers, contexts, rates, A, B, kernel, noise, cfg, n_blocks, block_losses,
                 seed, renew):
    """The pairs in their order, split into ``n_blocks`` runs trained in parallel (Hogwild);
    the rows of the pair ``AHEAD`` pairs on prefetched. A pool (if any) is renewed every
    ``renew`` pairs; the next one is drawn with it and its rows prefetched a few per pair
    over the ``renew`` pairs before it is used (as a plain fit does over a walk: a burst of
    all its rows at once would stall the pairs that follow)."""
    n_pairs = centers.shape[0]
    d = A.shape[1]
    m = kernel.kinds.shape[0]
    linear = kernel.kinds[0] == LINEAR
    for blk in prange(n_blocks):
        neu, kv, gbeta, negs, ahead = thread_buffers(d, m, cfg.negatives)
        size = cfg.negative_pool
        pool = np.empty(size, np.int64)
        pool_next = np.empty(size, np.int64)
        loss = np.zeros(2, np.float32)
        state = stream_state(seed, np.uint64(blk))
        lo = blk * n_pairs // n_blocks
        hi = (blk + 1) * n_pairs // n_blocks
        fetched = 0
        t = renew  # pairs since the pool was renewed
        if size == 0:
            for k in range(cfg.negatives):
                state, ahead[k] = alias_draw(state, noise.prob, noise.alias)
        else:  # its rows are prefetched at the first pair's renewal (fetched is 0)
            state = draw_pool(state, pool_next, noise)
        for p in range(lo, hi):
            q = p + AHEAD
            if q < hi:
                prefetch_row(A, np.int64(centers[q]))
                prefetch_row(B, np.int64(contexts[q]))
            if size > 0:
                if t == renew:  # the pool drawn ahead is this one's; draw the next
                    prefetch_rows(B, pool_next, fetched, size)
                    pool, pool_next = pool_next, pool
                    state = draw_pool(state, pool_next, noise)
                    fetched = 0
                    t = 0
                t += 1
                fetched = prefetch_rows(B, pool_next, fetched, t * size // renew)
            state = next_negatives(state, negs, ahead, noise, B, pool)
            lr = rates[p]
            pair_step(A[centers[p]], B, np.int64(contexts[p]), negs, neu, kv, gbeta, lr,
                  lr * cfg.reg, linear, kernel, cfg.learn_beta, loss, cfg.loglik)
            if cfg.learn_beta:
                beta_step(kernel.beta, gbeta, lr, cfg.beta_reg, ONE, cfg.beta_simplex)
        block_losses[blk, 0] += loss[0]
        block_losses[blk, 1] += loss[1]


def bucket_task(folder: str, slot: int, i: int, j: int, parts: int, round_file: str,
                first_walk: int, kernel: KernelArrays, settings: TrainSettings,
                threads: int = 1, keep: np.ndarray | None = None, filed: bool = False,
                ) -> dict[str, Any]:
    """Train bucket ``(i, j)`` on one round's walks: read ``A_i`` and ``B_j`` from ``slot``,
    write the next version into the other slot (over a version nothing reads any more; a
    rerun after a crash redoes the same work from the same inputs). Runs in the driver or on
    a Dask worker; returns the bucket's pairs, losses, learned kernel weights, seconds (in all
    and by phase) and the process' peak memory (MiB).
    ``keep``: subsampling's keep probabilities of every node (``None``: no subsampling).
    ``filed``: the round is filed by part (:mod:`kernelne.partitioned.part_files`): part
    ``i``'s file is read instead of the round's, the same walks in the same windows."""
    start = time.perf_counter()
    root = location(folder)
    A = read_block(block_path(root, "A", i, slot))
    B = read_block(block_path(root, "B", j, slot))
    result = train_blocks(root, A, B, i, j, parts, round_file, first_walk, kernel, settings,
                          threads, keep, filed, time.perf_counter() - start)
    written = time.perf_counter()
    write_block(block_path(root, "A", i, 1 - slot), A)
    write_block(block_path(root, "B", j, 1 - slot), B)
    result["phases"]["write blocks"] = time.perf_counter() - written
    result["seconds"] = time.perf_counter() - start
    return result


def train_blocks(root, A: np.ndarray, B: np.ndarray, i: int, j: int, parts: int,
                 round_file: str, first_walk: int, kernel: KernelArrays,
                 settings: TrainSettings, threads: int, keep: np.ndarray | None, filed: bool,
                 read_seconds: float) -> dict[str, Any]:
    """The training of :func:`bucket_task` on blocks ``A`` (``A_i``) and ``B`` (``B_j``) in
    memory, updated in place (``root``: the fit's folder; ``read_seconds``: the time taken to
    get the blocks, reported as the phase ``"read blocks"``): the bucket's pairs, losses,
    kernel weights, seconds and phases (no ``"write blocks"`` yet) and peak memory."""
    start = time.perf_counter()
    z = load_npz(root / "noise" / f"noise{j}.npz")
    noise = Noise(z["prob"], z["alias"])
    kernel = KernelArrays(kernel.kinds, kernel.params, np.array(kernel.beta), kernel.scale)
    losses = np.zeros(2)
    pairs = 0
    phases = {"read blocks": read_seconds + time.perf_counter() - start, "read walks": 0.0}
    with numba_threads(threads):
        read = time.perf_counter()
        for ids, walks in bucket_walks(root / round_file, i, j, first_walk, filed):
            phases["read walks"] += time.perf_counter() - read
            pairs += train_bucket(walks, ids, A, B, i, j, parts, kernel, noise, settings,
                                  losses, keep, phases)
            read = time.perf_counter()
        phases["read walks"] += time.perf_counter() - read
    return {"pairs": pairs, "losses": losses.tolist(), "beta": kernel.beta,
            "seconds": read_seconds + time.perf_counter() - start, "phases": phases,
            "peak_mb": peak_memory_mb()}


def bucket_walks(round_file, i: int, j: int, first: int, filed: bool,
                 ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The walks bucket ``(i, j)`` trains of a round whose first walk has id ``first``, one
    read window at a time: ``(ids, walks)`` of :func:`walks_of_bucket`, read from part ``i``'s
    file if the round is ``filed`` (windows without its walks left out,
    :func:`~kernelne.partitioned.part_files.filed_windows`), else from every window of the
    round's file and its masks."""
    if filed:
        both = bucket_bits(i, j)
        for block in filed_windows(round_file, i):
            yield _select_filed(block, HEAD, np.int64(first), both)
        return
    masks_path = round_file.with_name(masks_file(round_file.name))
    windows = read_windows(npy_header(masks_path)[0][0], READ_WALKS)
    for (lo, _), masks, walks in zip(windows, read_row_windows(masks_path, windows),
                                     read_row_windows(round_file, windows), strict=True):
        yield walks_of_bucket(masks, walks, first + lo, i, j)


def gather_watching_workers(client, futures: list, interval: float | None = None) -> list:
    """``client.gather(futures)``, warning once when no Dask worker is connected.

    Dask reschedules the tasks of a lost worker on the others; with none left the step waits
    for a worker to join. Every ``interval`` seconds (:data:`WORKER_WATCH_SECONDS`) without a
    result the scheduler is asked how many workers it has, and with none a
    :class:`UserWarning` says that the fit is waiting, how to go on and how to stop.

    Parameters
    ----------
    client : distributed.Client
        The client the futures belong to.
    futures : list of distributed.Future
        The step's bucket tasks.
    interval : float, optional
        Seconds between looks; default :data:`WORKER_WATCH_SECONDS`.

    Returns
    -------
    list
        The tasks' results, in the order of ``futures``.
    """
    from distributed import wait

    interval = WORKER_WATCH_SECONDS if interval is None else interval
    warned = False
    while True:
        try:
            wait(futures, timeout=interval)
            break
        except TimeoutError:
            if not warned and not client.scheduler_info().get("workers"):
                warnings.warn(
                    f"no Dask worker is connected to the scheduler ({client.scheduler.address})"
                    ": the partitioned fit waits for one (start `dask worker ADDRESS`, or stop "
                    "with Ctrl-C: the same command resumes from the last recorded step)",
                    stacklevel=2)
                warned = True
    return client.gather(futures)


def part_placement(client, parts: int) -> list[dict[str, Any]]:
    """``client.submit``'s placement of part ``c``'s tasks, ``c`` in ``0..parts-1``: on the
    ``c``-th worker (modulo their number, in the order of their addresses), or another one if
    that one is lost."""
    workers = sorted(client.scheduler_info().get("workers", {}))
    return [dict(workers=[workers[c % len(workers)]], allow_other_workers=True)
            if workers else {} for c in range(parts)]


def run_step(client, step: int, args: list[tuple]) -> list[dict[str, Any]]:
    """The results of step ``step``'s buckets, :func:`bucket_task` called with each of
    ``args``: in this process, or on ``client``'s workers (a ``distributed.Client``).

    On a client every call submits its tasks under keys of its own (the step, the bucket and
    a new random token): Dask hands back the result a key already holds, so a key made of
    the step and the bucket alone gave a restarted fit, or a second fit on the same client,
    the results of an earlier attempt. The futures are released however the step ends
    (:func:`release_futures`)."""
    if client is None:
        return [bucket_task(*a) for a in args]
    token = uuid.uuid4().hex[:16]
    futures = [client.submit(bucket_task, *a, pure=False,
                             key=f"kernelne-bucket-{step}-{a[2]}-{a[3]}-{token}")
               for a in args]
    try:
        return gather_step(client, step, futures)
    finally:
        release_futures(client, futures)


def gather_step(client, step: int, futures: list) -> list:
    """:func:`gather_watching_workers` of step ``step``'s tasks; a lost scheduler (not a
    bucket's own error) is a :class:`TrainingError` that says the step was not recorded."""
    from concurrent.futures import CancelledError

    from distributed.comm.core import CommClosedError

    try:
        return gather_watching_workers(client, futures)
    except (CancelledError, CommClosedError) as exc:
        address = getattr(getattr(client, "scheduler", None), "address", "?")
        raise TrainingError(
            f"the Dask scheduler {address} was lost during step {step} "
            f"({type(exc).__name__}): that step was not recorded; with --partition-dir the "
            "same command resumes from the last recorded step once a scheduler is back") from None


def release_futures(client, futures: list) -> None:
    """Cancel ``futures`` (tasks still queued or running: a step that failed or was
    interrupted) and drop this client's hold on their results, so that the scheduler
    forgets them.

    Parameters
    ----------
    client : distributed.Client
        The client the futures belong to.
    futures : list of distributed.Future
        The tasks of a step or a round.
    """
    try:
        client.cancel(futures)
    except Exception:  # noqa: BLE001 - a client already closed or a lost scheduler
        pass
    for future in futures:
        future.release()
