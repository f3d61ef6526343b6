"""Partitioned training: one embedding with only two blocks of rows in memory at a time, on
one machine (blocks on disk) or on a Dask cluster (docs/DISTRIBUTED.md; after PyTorch-BigGraph,
Lerer et al., SysML 2019).

Nodes fall into ``P`` parts, ``part(v) = v mod P``, row ``v // P`` of the part's blocks ``A_i``,
``B_i`` (no table of ids is stored). A (center, context) pair of the walks belongs to bucket
``(part(center), part(context))``; bucket ``(i, j)`` is trained with only ``A_i`` and ``B_j`` by
the same step as a plain fit (:func:`kernelne.engine.trainer._pair`: one ``_term`` for every
kernel),
its negatives drawn from part ``j`` (unigram^0.75 within it).

The corpus is cut into rounds of walks (walk ids in order, as a plain fit trains them, so the
learning rate follows the same schedule ``lr_t = max(lr (1 - t / T), min_lr)``). The walks are
made once, counted (the negatives' unigram counts) and written to one ``.npy`` file per round,
with each walk's part mask (:func:`part_masks`): bucket ``(i, j)`` reads only the walks that
visit both parts, so a round costs each bucket a pass over about
``1 - 2 (1 - 1/P)^L + (1 - 2/P)^L`` of its walks (walk length ``L``), not all of them.
Each round is trained in ``P`` steps; step ``s`` trains the buckets ``(i, (i + s) mod P)``, which
touch disjoint blocks and so run in parallel. Every block is read and written once per step:
step ``t`` reads version ``t`` of the blocks and writes version ``t + 1`` over the files of
version ``t - 1`` (two files per block, by parity); version ``t + 1`` is valid only when the
whole step has finished and ``progress.json`` says so. A bucket that dies is rerun from
version ``t`` (Dask reruns the task of a lost worker); a driver that dies is restarted with the
same folder and resumes at the first unfinished step. Buckets are deterministic on one thread
(negatives seeded by (seed, bucket, the chunk's first walk with a pair there)), so a resumed
or rerun fit equals a clean one bit for bit. The folder can be an fsspec URL
(``s3://bucket/run``, :mod:`kernelne.partitioned.store`) that workers reach without a shared
disk.

MKernelNE's weights are learned in every bucket and averaged over a step's buckets. The robust
restart (docs/METHOD.md §7) is the plain fit's: when :func:`kernelne.engine.robust.look_due` says so
the rows are checked for the collapsed shell and, if it is forming, training starts again
from version 0 of the blocks with the kernel narrowed 8x (the walks are kept). Not supported
here: shared negatives and per-row rates (``partial_fit``).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numba
import numpy as np
from numba import njit, prange
from tqdm.auto import tqdm

from kernelne.engine.diagnostics import CHUNK
from kernelne.engine.kernels import LINEAR
from kernelne.engine.prefetch import prefetch_row
from kernelne.engine.robust import (
    CHECKPOINT_PAIRS,
    MAX_NARROWING,
    NARROWING,
    look_due,
    shell_figures,
)
from kernelne.engine.rows import aligned_rows, uniform_rows
from kernelne.engine.sampling import alias_draw, alias_table, mix64, stream_state
from kernelne.engine.trainer import (
    _CTX_STREAM,
    _NEG_STREAM,
    _ONE,
    KernelArrays,
    Noise,
    TrainSettings,
    _beta_step,
    _center_window,
    _pair,
    _subsample,
    draw_pool,
    keep_probabilities,
    kernel_arrays,
    next_negatives,
    prefetch_rows,
    thread_buffers,
    train_settings,
)
from kernelne.engine.walks import WalkCorpus, count_visits
from kernelne.errors import InputError
from kernelne.memory import peak_memory_mb
from kernelne.outputs import atomic_path
from kernelne.parallel import numba_threads
from kernelne.partitioned.rounds import make_rounds, part_masks, rounds_to_make
from kernelne.partitioned.store import (
    Location,
    RemotePath,
    create_exclusive,
    exists,
    filesystem,
    is_file,
    is_remote,
    load_npy,
    load_npz,
    location,
    makedirs,
    names,
    npy_bytes,
    npy_header,
    read_bytes,
    read_npy_header,
    read_npy_rows,
    remove,
    size,
    staged,
    write_bytes,
)

PLAN_VERSION = 3
READ_WALKS = 1 << 16  # walks read from a round's file at a time (a chunk)
AHEAD = 4  # pairs whose rows a bucket prefetches ahead
# Rounds of walks: Cora at P = 4 scored Micro-F1 .805 with one round and .824 with 20 (the
# plain fit .823): the finer the rounds, the more the parts' updates interleave.
DEFAULT_ROUNDS = 20


def part_size(n: int, parts: int, i: int) -> int:
    """Rows in part ``i``: the nodes ``v`` with ``v mod P = i``."""
    return (n - i + parts - 1) // parts


def bucket_order(parts: int) -> list[list[tuple[int, int]]]:
    """The steps of a round: step ``s`` holds the buckets ``(i, (i + s) mod P)``, disjoint in
    their center parts and in their context parts."""
    return [[(i, (i + s) % parts) for i in range(parts)] for s in range(parts)]


# ---------------------------------------------------------------------------------------------
# The bucket step (numba)


def walks_of_bucket(masks: np.ndarray, i: int, j: int) -> np.ndarray:
    """The rows of the walks whose masks hold parts ``i`` and ``j``: the only walks that can
    have pairs in bucket ``(i, j)``."""
    both = (np.uint64(1) << np.uint64(i % 64)) | (np.uint64(1) << np.uint64(j % 64))
    return np.flatnonzero((masks & both) == both)


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
    fit cuts its rounds into the same chunks every time (:func:`read_windows`).
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
        settings.seed ^ _NEG_STREAM ^ mix64(np.uint64(i * parts + j + 1)), np.uint64(first)))
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
        ctx = stream_state(cfg.seed ^ _CTX_STREAM, np.uint64(ids[w]))  # as a plain fit's
        seq = walk
        if keep.shape[0] > 0:
            ctx, n = _subsample(walk, n, keep, ctx, kept)
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
                ctx, wins[pos] = _center_window(ctx, cfg.window, True)
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
            _pair(A[centers[p]], B, np.int64(contexts[p]), negs, neu, kv, gbeta, lr,
                  lr * cfg.reg, linear, kernel, cfg.learn_beta, loss, cfg.loglik)
            if cfg.learn_beta:
                _beta_step(kernel.beta, gbeta, lr, cfg.beta_reg, _ONE, cfg.beta_simplex)
        block_losses[blk, 0] += loss[0]
        block_losses[blk, 1] += loss[1]


# ---------------------------------------------------------------------------------------------
# Blocks on disk


def block_path(folder: Location, which: str, part: int, version: int) -> Location:
    """A block's file of ``version``: two files per block, by the version's parity (version
    ``t + 1`` is written over ``t - 1``, which nothing reads any more)."""
    return folder / "blocks" / f"{which}{part}.v{version % 2}.npy"


def _write_block(path: Location, array: np.ndarray) -> None:
    """Write ``array`` over the block file at ``path`` (same shape and dtype: no new file, no
    unlink; 0.011 s for a 64 MB block, where ``np.save`` to a new file took 0.067 s in a 1M-node
    fit), or as a new file. Not atomic: the version is valid only once ``progress.json`` says
    so, and a write cut short is redone by the bucket's rerun. At a URL: one whole object."""
    if is_remote(path):
        write_bytes(path, npy_bytes(array))
        return
    try:
        with open(path, "r+b") as fh:
            shape, fortran, dtype = read_npy_header(fh)
            if shape == array.shape and dtype == array.dtype and not fortran:
                array.tofile(fh)
                return
    except (OSError, ValueError):
        pass
    np.save(path, array)


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
    if is_remote(path):
        return read_npy_rows(path, lo, hi)
    with open(path, "rb") as fh:
        shape, _, dtype = read_npy_header(fh)
        hi = min(hi, shape[0])
        row = int(np.prod(shape[1:], dtype=np.int64))
        fh.seek(lo * row * dtype.itemsize, os.SEEK_CUR)
        count = max(hi - lo, 0) * row
        out = np.fromfile(fh, dtype=dtype, count=count)
    if out.size != count:
        raise OSError(f"{path}: rows {lo}-{hi} cut short ({out.size} of {count} values): the "
                      "file is truncated")
    return out.reshape((-1,) + tuple(shape[1:]))


def _save(path: Location, array: np.ndarray) -> None:
    with staged(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, array)


def _write_json(path: Location, data: dict) -> None:
    write_bytes(path, json.dumps(data, indent=1).encode("utf-8"))


def read_windows(n_rows: int, size: int) -> list[tuple[int, int]]:
    """The chunks ``[lo, hi)`` of ``size`` rows that a bucket reads from a round's file and
    trains one at a time: always the same, since a chunk's draws are seeded by the chunk
    (:func:`train_bucket`)."""
    return [(lo, min(lo + size, n_rows)) for lo in range(0, n_rows, size)]


def bucket_task(folder: str, version: int, i: int, j: int, parts: int, round_file: str,
                first_walk: int, kernel: KernelArrays, settings: TrainSettings,
                threads: int = 1, keep: np.ndarray | None = None) -> dict[str, Any]:
    """Train bucket ``(i, j)`` on one round's walks: read version ``version`` of ``A_i`` and
    ``B_j``, write version ``version + 1`` (over version ``version - 1``; a rerun after a
    crash redoes the same work from the same inputs). Runs in the driver or on a Dask worker;
    returns the bucket's pairs, losses, learned kernel weights, seconds (in all and by phase)
    and the process' peak memory (MiB).
    ``keep``: subsampling's keep probabilities of every node (``None``: no subsampling)."""
    start = time.perf_counter()
    root = location(folder)
    A = read_block(block_path(root, "A", i, version))
    B = read_block(block_path(root, "B", j, version))
    z = load_npz(root / "noise" / f"noise{j}.npz")
    noise = Noise(z["prob"], z["alias"])
    kernel = KernelArrays(kernel.kinds, kernel.params, np.array(kernel.beta), kernel.scale)
    walks_path, masks_path = root / round_file, root / masks_file(round_file)
    n_rows = npy_header(masks_path)[0][0]
    losses = np.zeros(2)
    pairs = 0
    phases = {"read blocks": time.perf_counter() - start, "read walks": 0.0}
    with numba_threads(threads):
        for lo, hi in read_windows(n_rows, READ_WALKS):
            read = time.perf_counter()
            rows = walks_of_bucket(read_rows(masks_path, lo, hi), i, j)
            walks = read_rows(walks_path, lo, hi)[rows]
            phases["read walks"] += time.perf_counter() - read
            pairs += train_bucket(walks, first_walk + lo + rows, A, B, i, j, parts, kernel,
                                  noise, settings, losses, keep, phases)
    written = time.perf_counter()
    _write_block(block_path(root, "A", i, version + 1), A)
    _write_block(block_path(root, "B", j, version + 1), B)
    phases["write blocks"] = time.perf_counter() - written
    return {"pairs": pairs, "losses": losses.tolist(), "beta": kernel.beta,
            "seconds": time.perf_counter() - start, "phases": phases,
            "peak_mb": peak_memory_mb()}


# ---------------------------------------------------------------------------------------------
# The folder

MARKER = "kernelne-partitions.json"  # marks a folder a partitioned fit made
LOCK = "kernelne.lock"  # the running fit's pid, host and token
WORKER_CHECK_SECONDS = 120.0  # how long the folder check waits for the Dask workers
WORKER_WATCH_SECONDS = 60.0  # how often a step's wait looks for a connected Dask worker


@contextmanager
def partition_folder(partition_dir: str | os.PathLike | None, client=None,
                     ) -> Iterator[Location]:
    """The folder of a partitioned fit, locked for the enclosed block.

    Parameters
    ----------
    partition_dir
        The user's folder (made absolute; it must be absent, empty or made by a partitioned
        fit) or fsspec URL (``s3://bucket/run``, ``gs://...``, ``memory://...``: see
        :mod:`kernelne.partitioned.store`), or ``None`` for a new temporary
        ``kernelne-parts-*`` folder, removed if the block raises (any exception,
        ``KeyboardInterrupt`` and the CLI's SIGTERM included).
    client
        A ``distributed.Client``: every connected worker must read the lock file at the same
        path or URL and write beside it, or :class:`InputError` is raised before any work.

    Yields
    ------
    Path or RemotePath
        The absolute folder or the URL, holding :data:`MARKER` and this run's :data:`LOCK`
        (removed on exit).
    """
    temporary = partition_dir is None
    if temporary:
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="kernelne-parts-")).resolve()
    else:
        folder = usable_folder(partition_dir)
    done = False
    token = None
    try:
        token = _lock(folder)
        if not exists(folder / MARKER):
            _write_json(folder / MARKER, {"kernelne": "partitioned fit",
                                          "plan_version": PLAN_VERSION})
        if client is not None:
            check_workers_see(client, folder, token, temporary)
        yield folder
        done = True
    finally:
        if token is not None:
            _unlock(folder, token)
        if temporary and not done:
            remove_folder(folder)


def usable_folder(partition_dir: str | os.PathLike) -> Location:
    """``partition_dir`` as an absolute folder that exists and can be written: absent (made
    here), empty, or made by a partitioned fit (it holds :data:`MARKER`, :data:`LOCK` or
    ``plan.json``); a URL (:func:`usable_url`) under the same rules.
    Anything else is one :class:`InputError` naming the folder."""
    where = location(partition_dir)
    if is_remote(where):
        return usable_url(where)
    folder = Path(os.path.abspath(os.path.expanduser(os.fspath(where))))
    if folder.exists() and not folder.is_dir():
        raise InputError("--partition-dir names a file, not a folder: give a new or empty "
                         "folder", folder)
    try:
        entries = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        if entries and not {MARKER, LOCK, "plan.json"} & set(entries):
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise InputError(f"--partition-dir holds files a partitioned fit did not make "
                             f"({shown}): give a new or empty folder", folder)
        folder.mkdir(parents=True, exist_ok=True)
    except InputError:
        raise
    except OSError as exc:
        raise InputError(f"--partition-dir cannot be made or read "
                         f"({exc.strerror or exc}): give a folder you can write", folder) from None
    return folder


def usable_url(url: RemotePath) -> RemotePath:
    """The URL of a partitioned fit's files if its file system can be reached and it holds
    nothing but a partitioned fit's files (as :func:`usable_folder`); otherwise one
    :class:`InputError` naming ``--partition-dir`` and the problem."""
    try:
        filesystem(url)
    except ImportError as exc:
        raise InputError(f"--partition-dir {url}: {url.protocol}:// needs a package that is "
                         f"not installed ({exc}); pip install 'kernelne[dask]' installs fsspec "
                         "and s3fs") from None
    except ValueError as exc:
        raise InputError(f"--partition-dir {url}: unknown protocol {url.protocol}:// ({exc}): "
                         "give a folder or an fsspec URL such as s3://bucket/run") from None
    try:
        if is_file(url):
            raise InputError(f"--partition-dir {url} names a file, not a folder: give a new or "
                             "empty folder")
        entries = names(url)
        if entries and not {MARKER, LOCK, "plan.json"} & set(entries):
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise InputError(f"--partition-dir {url} holds files a partitioned fit did not "
                             f"make ({shown}): give a new or empty folder")
        makedirs(url)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the store says: not reachable
        raise InputError(f"--partition-dir {url} cannot be read ({_reason(exc)}): give a "
                         "URL you can read and write") from None
    return url


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def _lock(folder: Location) -> str:
    """Create ``folder/LOCK`` (atomically: ``O_CREAT | O_EXCL``, or a conditional write at a
    URL) holding this process' pid, host and a new token, and return the token; a lock
    already there is an :class:`InputError` saying who holds it, or that it looks stale."""
    import socket
    import uuid

    path = folder / LOCK
    token = uuid.uuid4().hex
    owner = {"pid": os.getpid(), "host": socket.gethostname(), "token": token}
    try:
        made = create_exclusive(path, json.dumps(owner).encode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - an OSError, or a store's own error
        if not is_remote(folder) and not isinstance(exc, OSError):
            raise
        raise InputError(f"--partition-dir cannot be written ({_reason(exc)}): give a "
                         "folder you can write", folder) from None
    if not made:
        raise InputError(_held(folder, path))
    return token


def _held(folder: Location, path: Location) -> str:
    """Why the lock at ``path`` refuses this run: who holds it, or that it looks stale."""
    import socket

    try:
        owner = json.loads(read_bytes(path).decode("utf-8"))
        pid, host = int(owner["pid"]), str(owner["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return (f"--partition-dir {folder} is locked by another run ({path} is unreadable); "
                f"remove {path} if no other run uses the folder")
    if host == socket.gethostname() and not _alive(pid):
        return (f"--partition-dir {folder} is locked by pid {pid} on host {host}, which is no "
                f"longer running: the lock looks stale (a run that was killed); remove {path} "
                "to use the folder (it resumes that fit)")
    return (f"--partition-dir {folder} is in use by pid {pid} on host {host} (remove {path} "
            "if that process is gone)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _unlock(folder: Location, token: str) -> None:
    """Remove ``folder/LOCK`` if it is still this run's (its token)."""
    path = folder / LOCK
    try:
        if json.loads(read_bytes(path).decode("utf-8")).get("token") == token:
            remove(path)
    except (OSError, ValueError, AttributeError):
        pass


def worker_sees(lock_path: str, token: str) -> str | None:
    """On a Dask worker: ``None`` if the lock file at ``lock_path`` (a path or URL) holds
    ``token`` and a file can be written beside it, else what went wrong."""
    try:
        lock = location(lock_path)
        if json.loads(read_bytes(lock).decode("utf-8")).get("token") != token:
            return "another folder is at that path there"
        probe = lock.with_name(f".probe-{token}-{os.getpid()}")
        write_bytes(probe, b"")
        remove(probe)
    except Exception as exc:  # noqa: BLE001 - an OSError, or a store's own error
        return _reason(exc)
    return None


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


def check_workers_see(client, folder: Location, token: str, temporary: bool = False) -> None:
    """Ask every worker connected to ``client``'s scheduler to read this run's lock file
    (:func:`worker_sees`); an :class:`InputError` if one cannot, or if no worker answers
    within :data:`WORKER_CHECK_SECONDS`."""
    lock = str(folder / LOCK)
    deadline = time.monotonic() + WORKER_CHECK_SECONDS
    while True:
        answers = client.run(worker_sees, lock, token)
        if answers or time.monotonic() > deadline:
            break
        time.sleep(1.0)
    if not answers:
        raise InputError(f"no Dask worker is connected to the scheduler "
                         f"({client.scheduler.address}) after {WORKER_CHECK_SECONDS:.0f} s: "
                         "start workers (dask worker ADDRESS) and run again")
    failed = {w: why for w, why in answers.items() if why is not None}
    if failed:
        worker, why = next(iter(failed.items()))
        what = ("the temporary folder" if temporary else "--partition-dir")
        hint = (": give --partition-dir a folder every worker reads and writes at the same "
                "path (a shared file system)" if temporary else
                ": it must be a folder every worker reads and writes at the same path (a shared "
                "file system)")
        if is_remote(folder):
            hint = (": memory:// lives in one process, and the workers run in others; give "
                    "an s3:// or gs:// URL or a shared folder" if folder.protocol == "memory"
                    else ": every worker must reach the URL with the driver's credentials and "
                    "endpoint (for s3:// the AWS_* variables or ~/.aws)")
        raise InputError(f"the Dask workers cannot see {what} {folder}{hint} "
                         f"({len(failed)} of {len(answers)} workers; {worker}: {why})")


# ---------------------------------------------------------------------------------------------
# The driver


@dataclass
class PartitionedResult:
    """What a partitioned fit returns: the rows (memory-mapped from ``folder``), the weights,
    the unigram counts and the run's figures (``bucket_phases``: seconds summed over this
    run's buckets by phase: reading the blocks, reading the walks, listing and training the
    pairs, writing the blocks)."""

    A: np.ndarray
    B: np.ndarray
    beta: np.ndarray
    counts: np.ndarray
    scale: float
    narrowed: list[dict]
    checks: list[dict]
    simplex: bool
    pairs: int
    losses: list[tuple[int, float, float]]
    resumed_at_step: int
    bucket_seconds: list[float]
    bucket_phases: dict[str, float]
    bucket_peak_mb: float
    walk_seconds: float
    train_seconds: float
    seed: int = 0
    trained_pairs: int = 0
    steps: int = 0


def _plan(model, graph, kernels, rounds: int, parts: int, seed) -> dict[str, Any]:
    return {
        "version": PLAN_VERSION, "n": int(graph.n_nodes), "edges": int(len(graph.indices)),
        "indptr_sum": int(graph.indptr.astype(np.int64).sum() % (1 << 61)),
        "parts": parts, "rounds": rounds, "seed": int(seed), "dim": int(model.dim),
        "kernels": [str(k) for k in kernels],
        "params": {k: repr(v) for k, v in sorted(model.get_params().items())
                   if k not in ("workers", "verbose", "partition_dir", "random_state",
                                "setting", "normalize")},  # neither changes the training
    }


def damaged(path: Location, folder: Location, why: str) -> InputError:
    """The error of a file of a partitioned fit's folder that cannot be used."""
    return InputError(f"{why}: the partitioned fit's folder {folder} is damaged; remove it "
                      "to start over", path)


def check_folder(folder: Location, rounds: int, parts: int, n: int, d: int, version: int) -> None:
    """Before a resumed fit trains: every file it reads is there and whole (the walks and
    masks by their headers, the counts and the negatives read), and version ``version`` of
    the blocks (if above 0: version 0 is made again) has its shape and only finite values.
    Otherwise :func:`damaged` naming the first bad file."""
    for r in range(rounds):
        for name in (f"walks/round{r}.npy", masks_file(f"walks/round{r}.npy")):
            _check_npy(folder / name, folder)
    try:
        load_npy(folder / "walks" / "counts.npy")
        for j in range(parts):
            z = load_npz(folder / "noise" / f"noise{j}.npz")
            Noise(z["prob"], z["alias"])
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same damage
        raise damaged(Path(getattr(exc, "filename", None) or folder), folder,
                      f"cannot be read ({exc})") from None
    if version == 0:
        return
    for which in "AB":
        for i in range(parts):
            path = block_path(folder, which, i, version)
            try:
                block = read_block(path)
            except (OSError, ValueError) as exc:
                raise damaged(path, folder, f"cannot be read ({exc.strerror or exc})") from None
            if block.shape != (part_size(n, parts, i), d):
                raise damaged(path, folder, f"holds a block of shape {block.shape}, not "
                              f"{(part_size(n, parts, i), d)}")
            if not np.isfinite(block).all():
                raise damaged(path, folder, "holds NaN or infinite values (a damaged file, or "
                              "a fit that diverged: then start over with a smaller --lr)")


def _check_npy(path: Location, folder: Location) -> None:
    """A .npy file whose size is what its header says, or :func:`damaged`."""
    try:
        shape, _, dtype, offset = npy_header(path)
        expected = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        found = size(path)
    except (OSError, ValueError) as exc:
        raise damaged(path, folder, f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
                      ) from None
    if found < expected:
        raise damaged(path, folder, f"is cut short ({found:,} of {expected:,} bytes)")


def _read_json(path: Location, folder: Location) -> dict:
    """A record of the folder (``plan.json``, ``progress.json``), or an :class:`InputError`
    naming it if it cannot be read as one."""
    try:
        data = json.loads(read_bytes(path).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot be read ({exc}): the partitioned fit's folder {folder} is "
                         "damaged; remove it to start over", path) from None
    if not isinstance(data, dict) or (path.name == "progress.json" and not isinstance(
            data.get("step"), int)):
        raise InputError(f"is not a record of a partitioned fit: the folder {folder} is "
                         "damaged; remove it to start over", path)
    return data


def _recorded_seed(plan: dict, path: Location, folder: Location) -> np.uint64:
    """The seed a folder's plan recorded (a fit resumed without ``random_state``)."""
    try:
        return np.uint64(int(plan["seed"]) % 2**64)
    except (KeyError, TypeError, ValueError):
        raise InputError(f"records no seed: the folder {folder} is damaged; remove it to "
                         "start over", path) from None


def _differences(old: dict, plan: dict) -> str:
    """The settings in which a folder's plan and this fit's differ, by name."""
    names = [k for k in plan if k != "params" and old.get(k) != plan[k]]
    params, old_params = plan.get("params", {}), old.get("params", {})
    if not isinstance(old_params, dict):
        old_params = {}
    names += [k for k in sorted(set(params) | set(old_params))
              if old_params.get(k) != params.get(k)]
    names += [k for k in old if k not in plan]
    return ", ".join(dict.fromkeys(names)) or "the records"


def round_bounds(n_walks: int, rounds: int) -> list[tuple[int, int]]:
    return [(r * n_walks // rounds, (r + 1) * n_walks // rounds) for r in range(rounds)]


def fit_partitioned(model, graph, kernels, seed, client=None, progress: bool = False,
                    ) -> PartitionedResult:
    """Train ``model`` (a :class:`~kernelne.model.kernelne.KernelNE` with ``partitions > 1``) on
    ``graph`` bucket by bucket, in ``model.partition_dir`` (a new temporary folder if None),
    on ``client`` (a ``distributed.Client``) or in this process. The folder is made absolute
    and, with a client, checked to be the same folder on every worker before any work."""
    check_partition_settings(model, graph.n_nodes)
    with partition_folder(model.partition_dir, client) as folder:
        return _fit_in(folder, model, graph, kernels, seed, client, progress)


def max_partitions(n_nodes: int) -> int:
    """The most partitions a graph of ``n_nodes`` nodes is cut into: fewer than a third of its
    nodes (a round trains ``P x P`` buckets: parts of a few nodes only add steps)."""
    return max(1, (n_nodes - 1) // 3)


def max_rounds(walks_per_node: int) -> int:
    """The most rounds of walks: one per walk of each node (:data:`DEFAULT_ROUNDS` at least);
    each round is two files and ``P`` steps, and a round shorter than a walk per node only adds
    steps."""
    return max(DEFAULT_ROUNDS, int(walks_per_node))


def check_partition_settings(model, n_nodes: int) -> None:
    """An :class:`InputError` before any work if ``model.partitions`` or ``model.rounds``
    cannot be trained on a graph of ``n_nodes`` nodes (:func:`max_partitions`,
    :func:`max_rounds`)."""
    parts, limit = int(model.partitions), max_partitions(n_nodes)
    if parts > limit:
        raise InputError(f"--partitions {parts} is too many for a graph of {n_nodes:,} nodes: "
                         f"at most {limit} (fewer than a third of the nodes)")
    rounds, most = model.rounds, max_rounds(model.walks_per_node)
    if rounds is not None and int(rounds) > most:
        raise InputError(f"--rounds {rounds} is too many: at most {most} (the walks per node, "
                         f"or {DEFAULT_ROUNDS}; every round is 2 files and P steps, and a "
                         "round of less than one walk per node only adds steps)")


def _fit_in(folder: Location, model, graph, kernels, seed, client, progress: bool,
            ) -> PartitionedResult:
    """:func:`fit_partitioned` in ``folder`` (absolute, usable by every worker)."""
    parts, d = int(model.partitions), int(model.dim)
    n = graph.n_nodes
    plan_file, progress_file = folder / "plan.json", folder / "progress.json"
    old = _read_json(plan_file, folder) if exists(plan_file) else None
    if old is not None and model.random_state is None:  # resumed: the recorded fit's seed
        seed = _recorded_seed(old, plan_file, folder)
    corpus = WalkCorpus(graph, model.walks_per_node, model.walk_length, model.p, model.q,
                        int(seed), model.chunk_walks)
    rounds = int(model.rounds) if model.rounds else min(DEFAULT_ROUNDS, corpus.n_walks)
    plan = _plan(model, graph, kernels, rounds, parts, seed)
    state: dict[str, Any] = {"step": 0, "pairs": 0, "losses": []}
    if old is not None:
        if isinstance(old.get("params"), dict):
            old["params"].pop("random_state", None)  # recorded as "seed"
        if old != plan:
            raise InputError("holds a partitioned fit of another graph or other settings "
                             f"({_differences(old, plan)} differ); give an empty folder "
                             "(--partition-dir)", folder)
        if exists(progress_file):
            state = _read_json(progress_file, folder)
    resumed_at = int(state["step"])
    if state.get("walks_done"):
        check_folder(folder, rounds, parts, n, d, resumed_at)
    walk_start = time.perf_counter()
    counts = _make_walks(folder, corpus, rounds, parts, progress, state, client)
    if "walks_done" not in state:
        _make_noise(folder, counts, parts)
        state["walks_done"] = True
        _write_json(plan_file, plan)
    if resumed_at == 0:  # version 0 is made again from the seed: it may have been removed
        _init_blocks(folder, n, parts, d, seed)
        _write_json(progress_file, state)
    walk_seconds = time.perf_counter() - walk_start

    state.setdefault("scale", 1.0)
    state.setdefault("narrowed", [])
    state.setdefault("simplex", model.simplex_weights())
    can_narrow = bool(model.robust) and kernels[0].kind != "linear"
    total_centers = float(model.epochs * corpus.n_walks * corpus.walk_length)
    keep = keep_probabilities(counts, float(model.subsample)) if model.subsample > 0 else None
    bounds = round_bounds(corpus.n_walks, rounds)
    schedule = [(e, r, s) for e in range(model.epochs) for r in range(rounds)
                for s in range(parts)]
    steps = bucket_order(parts)
    threads = 1 if client is not None else model.workers
    min_pairs = CHECKPOINT_PAIRS * int((counts > 0).sum())
    bucket_seconds: list[float] = []
    bucket_phases: dict[str, float] = {}
    peak = 0.0
    trained = 0  # pairs this run trained
    if resumed_at >= len(schedule):
        warnings.warn(f"--partition-dir {folder} holds a finished fit: nothing was trained, "
                      "its rows are read back (give an empty folder to fit again)",
                      stacklevel=3)
    train_start = time.perf_counter()
    bar = tqdm(total=len(schedule), initial=resumed_at, unit="step", disable=not progress,
               desc=f"training {parts}x{parts} buckets", dynamic_ncols=True)
    with bar:
        t = resumed_at
        kinds_params, settings = _run_settings(model, kernels, total_centers, seed, state, n)
        while t < len(schedule):
            beta = np.array(state.get("beta", kinds_params.beta), dtype=np.float32)
            epoch, r, s = schedule[t]
            kernel = KernelArrays(kinds_params.kinds, kinds_params.params, beta,
                                  kinds_params.scale)
            first = epoch * corpus.n_walks + bounds[r][0]
            args = [(str(folder), t, i, j, parts, f"walks/round{r}.npy", first, kernel,
                     settings, threads, keep) for i, j in steps[s]]
            if client is None:
                results = [bucket_task(*a) for a in args]
            else:
                futures = [client.submit(bucket_task, *a, pure=False,
                                         key=f"kernelne-bucket-{t}-{a[2]}-{a[3]}-{os.getpid()}")
                           for a in args]
                results = gather_watching_workers(client, futures)
            if settings.learn_beta:
                beta = np.mean([res["beta"] for res in results], axis=0).astype(np.float32)
            step_pairs = sum(res["pairs"] for res in results)
            trained += step_pairs
            pos = sum(res["losses"][0] for res in results)
            neg = sum(res["losses"][1] for res in results)
            state["pairs"] = int(state["pairs"]) + step_pairs
            state["losses"].append((state["pairs"], pos / max(step_pairs, 1),
                                    neg / max(step_pairs * model.negatives, 1)))
            state["step"] = t = t + 1
            state["beta"] = beta.tolist()
            bucket_seconds += [res["seconds"] for res in results]
            for res in results:
                for phase, seconds in res["phases"].items():
                    bucket_phases[phase] = bucket_phases.get(phase, 0.0) + seconds
            peak = max([peak] + [res["peak_mb"] for res in results])
            shell = None
            looks = [c for c in state.get("checks", [])  # this run's: its kernel scale
                     if c["kernel_scale"] == state["scale"]]
            if (can_narrow and not state.get("no_verdict")
                    and len(state["narrowed"]) < MAX_NARROWING
                    and look_due(t, len(schedule), state["pairs"], min_pairs, looks)):
                shell = _shell(folder, graph, counts, parts, d, t, beta, state,
                               looks[0] if looks else None)
                state["no_verdict"] = shell is None  # None: not finite or too few rows
            if shell is not None:
                state.setdefault("checks", []).append(shell)
            if shell is not None and shell["collapsing"]:
                state = _restart(folder, state, shell, n, parts, d, seed, progress_file)
                kinds_params, settings = _run_settings(model, kernels, total_centers, seed,
                                                       state, n)
                t = 0
                bar.reset()
                continue
            _write_json(progress_file, state)
            bar.update(1)
    train_seconds = time.perf_counter() - train_start
    version = len(schedule)
    A = _assemble(folder, "A", n, parts, d, version)
    B = _assemble(folder, "B", n, parts, d, version)
    return PartitionedResult(
        A, B, np.array(state["beta"], dtype=np.float32), counts, float(state["scale"]),
        list(state["narrowed"]), list(state.get("checks", [])), bool(state["simplex"]),
        int(state["pairs"]),
        [tuple(x) for x in state["losses"]],
        resumed_at, bucket_seconds, bucket_phases, peak, walk_seconds, train_seconds,
        int(seed), trained, len(schedule),
    )


def _run_settings(model, kernels, total_centers: float, seed, state: dict, n_nodes: int,
                  ) -> tuple[KernelArrays, TrainSettings]:
    """The kernel arrays and training settings of a run: they change only at a restart (the
    kernel scale, MKernelNE's step)."""
    kinds_params = kernel_arrays(kernels, scale=state["scale"])
    settings = train_settings(model, total_centers, seed, n_nodes, learn_beta=len(kernels) > 1,
                              beta_simplex=bool(state["simplex"]))
    return kinds_params, settings


def _shell(folder: Location, graph, counts: np.ndarray, parts: int, d: int, version: int,
           beta: np.ndarray, state: dict, previous: dict | None) -> dict | None:
    """The robust restart's test (:func:`kernelne.engine.robust.shell_figures`) on version
    ``version`` of the blocks, read where they lie (:class:`BlockRows`); ``previous``: the
    run's first reading, if this is the second look."""
    A = BlockRows(folder, "A", graph.n_nodes, parts, d, version)
    B = BlockRows(folder, "B", graph.n_nodes, parts, d, version)
    return shell_figures(A, B, graph.indptr, graph.indices, counts > 0, beta,
                         float(state["scale"]), int(state["pairs"]), parts,
                         len(state["narrowed"]), previous, finite=A.all_finite())


class BlockRows:
    """The ``n x d`` matrix of one version of a partitioned fit's blocks, read where it lies:
    ``X[idx]`` gathers the rows ``idx`` (node ``v``: row ``v // P`` of block ``v mod P``) through
    memory maps opened for that call. The restart's look reads a sample of rows and two passes
    over ``A`` this way; putting the matrices together first wrote the whole model to disk
    (1 GB at 1M nodes) at every look."""

    def __init__(self, folder: Location, which: str, n: int, parts: int, d: int, version: int):
        self.paths = [block_path(folder, which, i, version) for i in range(parts)]
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


def _restart(folder: Location, state: dict, shell: dict, n: int, parts: int, d: int, seed,
             progress_file: Path) -> dict:
    """Start again from version 0 with the kernel narrowed :data:`NARROWING` times (and
    MKernelNE on the simplex step if its weights collapsed); the walks are kept. The new
    state is written before the blocks change, so a driver killed here resumes at step 0."""
    state = {
        "step": 0, "pairs": 0, "losses": [], "walks_done": True,
        "scale": float(state["scale"]) * NARROWING,
        "narrowed": [*state["narrowed"], shell],
        "checks": state["checks"],
        "simplex": bool(state["simplex"]) or bool(shell["weights_collapsed"]),
    }
    _write_json(progress_file, state)
    _init_blocks(folder, n, parts, d, seed)
    return state


def masks_file(round_file: str) -> str:
    """The file of a round's walk masks (:func:`part_masks`), beside its walks."""
    return round_file.removesuffix(".npy") + ".masks.npy"


def _make_walks(folder: Path, corpus: WalkCorpus, rounds: int, parts: int, progress: bool,
                state: dict, client=None) -> np.ndarray:
    """Write every round's walks to ``walks/round{r}.npy`` and their part masks beside them
    (once; a round already written is kept) and return the unigram counts (one epoch's walks,
    as a plain fit counts them). With ``client`` and a folder (not a URL) the Dask workers make
    the walks (:func:`kernelne.partitioned.rounds.make_rounds`): the same files and counts."""
    counts_file = folder / "walks" / "counts.npy"
    if state.get("walks_done"):
        return load_npy(counts_file)
    makedirs(folder / "walks")
    counts = np.zeros(corpus.graph.n_nodes, dtype=np.int64)
    bounds = round_bounds(corpus.n_walks, rounds)
    files = [(folder / "walks" / f"round{r}.npy", folder / masks_file(f"walks/round{r}.npy"))
             for r in range(rounds)]
    # at a URL the driver makes every round (the workers' tasks write into shared files)
    remote = is_remote(folder)
    todo = list(range(rounds)) if remote else rounds_to_make(folder, corpus, files, parts, counts)
    bar = tqdm(total=corpus.n_walks, unit="walk", disable=not progress, desc="walks",
               dynamic_ncols=True)
    with bar:
        bar.update(corpus.n_walks - sum(bounds[r][1] - bounds[r][0] for r in todo))
        if client is not None and not remote:
            make_rounds(client, gather_watching_workers, folder, corpus, parts,
                        [(r, bounds[r], files[r]) for r in todo], counts, bar.update)
            todo = []
        for r in todo:
            lo, hi = bounds[r]
            walk_file, mask_file = files[r]
            with staged(walk_file) as tmp, staged(mask_file) as mask_tmp:
                out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.int32,
                                                shape=(hi - lo, corpus.walk_length))
                masks = np.lib.format.open_memmap(mask_tmp, mode="w+", dtype=np.uint64,
                                                  shape=(hi - lo,))
                for a in range(lo, hi, corpus.chunk_walks):
                    b = min(hi, a + corpus.chunk_walks)
                    walks = corpus.chunk(a, b)
                    count_visits(walks, counts)
                    out[a - lo:b - lo] = walks
                    masks[a - lo:b - lo] = part_masks(walks, parts)
                    bar.update(b - a)
                out.flush()
                masks.flush()
                del out, masks
    _save(counts_file, counts)
    return counts


def _make_noise(folder: Location, counts: np.ndarray, parts: int) -> None:
    """Each part's negatives: unigram^0.75 over its rows (uniform if none was visited)."""
    makedirs(folder / "noise")
    for j in range(parts):
        weights = counts[j::parts].astype(np.float64) ** 0.75
        if weights.sum() <= 0:
            weights = np.ones(len(weights))
        prob, alias = alias_table(weights)
        with staged(folder / "noise" / f"noise{j}.npz") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, prob=prob, alias=alias)


def _init_blocks(folder: Location, n: int, parts: int, d: int, seed) -> None:
    """Version 0 of the blocks: ``A_i ~ U(+-0.5/d)`` (a generator per part), ``B_j = 0``."""
    makedirs(folder / "blocks")
    for i in range(parts):
        rng = np.random.default_rng([int(seed) % (1 << 63), i])
        size = part_size(n, parts, i)
        _save(block_path(folder, "A", i, 0), uniform_rows(rng, size, d, 0.5 / d))
        _save(block_path(folder, "B", i, 0), np.zeros((size, d), dtype=np.float32))


def _assemble(folder: Location, which: str, n: int, parts: int, d: int, version: int,
              ) -> np.ndarray:
    """The full matrix from its blocks, in ``folder/{which}.npy`` (memory-mapped: it is never
    all in memory); for a URL, in a local temporary file that is unlinked once mapped."""
    if is_remote(folder):
        import tempfile

        scratch = Path(tempfile.mkdtemp(prefix="kernelne-rows-"))
        try:
            path = scratch / f"{which}.npy"
            out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, d))
            for i in range(parts):
                out[i::parts] = load_npy(block_path(folder, which, i, version))
            out.flush()
            del out
            return np.load(path, mmap_mode="r+")  # private to this process: writable
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    path = folder / f"{which}.npy"
    with atomic_path(path) as tmp:
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=(n, d))
        for i in range(parts):
            out[i::parts] = np.load(block_path(folder, which, i, version), mmap_mode="r")
        out.flush()
        del out
    return np.load(path, mmap_mode="r")


def remove_folder(folder: str | Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
