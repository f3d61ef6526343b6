"""The chunk loop of a run on a CUDA device: rows and alias table on the device, walks streamed.

:func:`train_chunks_on_device` stands in for :func:`kernelne.engine.chunks.train_chunks`:
the same arguments, the same ``(walks, pairs, losses)`` after each chunk, with the host rows
``A`` and ``B`` brought up to date before each yield (the restart test, a monitor and the
divergence check read them there). The device holds ``A`` and ``B`` in float32, the alias
table, each group's negative pool and two chunks of walks: while the device trains one chunk,
the CPU's walker makes the next and copies it into the other (double buffering, on two CUDA
streams where a device has them). Several of the corpus's chunks are joined into one device
chunk, so the rows go back to the host less often: up to :data:`DEVICE_CHUNK_WALKS` walks,
and at least :data:`DEVICE_CHUNKS` chunks per epoch where the corpus has them. Every device
array is freed when the loop ends, by an error or a ``KeyboardInterrupt`` too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from kernelne.engine.chunks import StageClock
from kernelne.engine.cuda.available import cuda_module, simulated
from kernelne.engine.kernels import GAUSS, LINEAR, SCHOENBERG
from kernelne.engine.trainer import KernelArrays, Noise, TrainSettings
from kernelne.errors import InputError

#: the most walks per device chunk (the corpus's chunks are joined up to it)
DEVICE_CHUNK_WALKS = 1 << 20
#: device chunks per epoch at least, where the corpus has enough chunks (the restart test
#: looks at the rows after a chunk)
DEVICE_CHUNKS = 20
#: threads per group on a device: one warp
WARP = 32
#: groups (walks trained at once) per block, and blocks per multiprocessor
GROUPS_PER_BLOCK = 4
BLOCKS_PER_SM = 16


class Launch:
    """How the kernel is launched: ``lanes`` threads per group (a power of two, at most 32),
    ``groups`` groups in all, ``groups_per_block`` of them per block. The simulator needs one
    group per block (its shuffles use the block's barrier)."""

    def __init__(self, lanes: int, groups: int, groups_per_block: int = 1):
        if lanes < 1 or lanes > WARP or lanes & (lanes - 1):
            raise ValueError(f"lanes must be a power of two from 1 to {WARP}, got {lanes}")
        if groups < 1 or groups_per_block < 1 or groups % groups_per_block:
            raise ValueError(f"groups ({groups}) must be a positive multiple of "
                             f"groups_per_block ({groups_per_block})")
        self.lanes, self.groups, self.groups_per_block = lanes, groups, groups_per_block

    @property
    def blocks(self) -> int:
        return self.groups // self.groups_per_block

    @property
    def threads(self) -> int:
        return self.lanes * self.groups_per_block


def default_launch(cuda, dim: int) -> Launch:
    """A warp per group, enough groups to fill the device. On the simulator, whose threads
    are Python threads and whose shuffles wait at a barrier, one block of 4 groups of one
    lane each: 4 walks trained at once, lock-free, as on a device (above ``dim`` 32, the
    fewest lanes that hold the rows, and one group per block)."""
    if simulated():
        from kernelne.engine.cuda.kernels import PER_LANE

        lanes = 1
        while lanes * PER_LANE < dim and lanes < WARP:
            lanes *= 2
        return Launch(1, 4, 4) if lanes == 1 else Launch(lanes, 4, 1)
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    return Launch(WARP, sms * BLOCKS_PER_SM * GROUPS_PER_BLOCK, GROUPS_PER_BLOCK)


def device_bytes(n: int, dim: int, chunk_walks: int, walk_length: int, groups: int,
                 pool: int) -> int:
    """Device memory a run needs: the rows (2 x n x dim float32), the alias table (n x 8),
    two chunks of walks (int32) and the groups' pools (int64)."""
    return (2 * n * dim * 4 + n * 8 + 2 * chunk_walks * walk_length * 4 + groups * pool * 8
            + 4096)


def check_device_memory(cuda, n: int, dim: int, chunk_walks: int, walk_length: int,
                        groups: int, pool: int) -> None:
    """An :class:`~kernelne.errors.InputError` with the figures and the largest ``n`` that fits
    if the run needs more device memory than is free."""
    free, _ = cuda.current_context().get_memory_info()
    need = device_bytes(n, dim, chunk_walks, walk_length, groups, pool)
    if need <= free:
        return
    fixed = device_bytes(0, dim, chunk_walks, walk_length, groups, pool)
    largest = max(0, int((free - fixed) // (2 * dim * 4 + 8)))
    raise InputError(
        f'device="cuda": the fit needs {need / 2**30:,.2f} GiB of device memory (rows of '
        f"{n:,} nodes x dim {dim:,} in float32, the alias table, two chunks of walks), the "
        f"device has {free / 2**30:,.2f} GiB free: at dim {dim:,} at most {largest:,} nodes "
        f'fit; lower --dim or train with device="cpu"')


def _joined(chunks: Iterable[tuple[int, np.ndarray]], at_least: int
            ) -> Iterator[tuple[int, np.ndarray]]:
    """Consecutive chunks joined into chunks of at least ``at_least`` walks."""
    first, parts, held = 0, [], 0
    for start, walks in chunks:
        if not parts:
            first = start
        parts.append(walks)
        held += len(walks)
        if held >= at_least:
            yield first, parts[0] if len(parts) == 1 else np.concatenate(parts)
            parts, held = [], 0
    if parts:
        yield first, parts[0] if len(parts) == 1 else np.concatenate(parts)


def device_chunk_walks(n_walks: int) -> int:
    """Walks a device chunk joins at least: a :data:`DEVICE_CHUNKS`-th of an epoch's
    ``n_walks``, at most :data:`DEVICE_CHUNK_WALKS`."""
    return max(1, min(DEVICE_CHUNK_WALKS, n_walks // DEVICE_CHUNKS))


def kernel_of(kernel: KernelArrays) -> tuple[int, float]:
    """The one kernel the device trains: ``(kind, parameter)``."""
    if len(kernel.kinds) != 1 or int(kernel.kinds[0]) not in (GAUSS, SCHOENBERG, LINEAR):
        raise InputError('device="cuda" trains one kernel (gauss, schoenberg or linear)')
    return int(kernel.kinds[0]), float(kernel.params[0])


def train_chunks_on_device(
    chunks: Callable[[], Iterable[tuple[int, np.ndarray]]], n_walks: int, epochs: int,
    A: np.ndarray, B: np.ndarray, kernel: KernelArrays, noise: Noise, settings: TrainSettings,
    rates: np.ndarray | None = None, keep: np.ndarray | None = None,
    clock: StageClock | None = None, launch: Launch | None = None,
    chunk_walks: int | None = None,
) -> Iterator[tuple[np.ndarray, int, np.ndarray]]:
    """:func:`kernelne.engine.chunks.train_chunks` on a CUDA device.

    Parameters
    ----------
    chunks, n_walks, epochs, A, B, kernel, noise, settings, clock
        As :func:`~kernelne.engine.chunks.train_chunks`; ``A`` and ``B`` (float32) are copied
        to the device and back before each yield.
    rates, keep
        Must be None: per-row rates (``partial_fit``) and subsampling train on the CPU.
    launch : Launch, optional
        The launch configuration (default: :func:`default_launch`).
    chunk_walks : int, optional
        Walks per device chunk at least, the corpus's chunks joined (default:
        :func:`device_chunk_walks`).

    Yields
    ------
    walks : ndarray
        The device chunk's walks.
    pairs : int
        Its trained pairs.
    losses : ndarray
        Its summed positive and negative squared errors (reused by the next chunk).

    Raises
    ------
    InputError
        No numba-cuda, no device, too little device memory, or a setting the device engine
        does not train.
    """
    if rates is not None or keep is not None:
        raise InputError('device="cuda" trains neither per-row rates nor subsampling')
    if settings.learn_beta or settings.shared_negatives:
        raise InputError('device="cuda" trains neither learned kernel weights nor shared '
                         'negatives')
    settings = settings.typed()
    cuda = cuda_module()
    from kernelne.engine.cuda.kernels import PER_LANE, train_kernel

    kind, param = kernel_of(kernel)
    chunk_walks = device_chunk_walks(n_walks) if chunk_walks is None else int(chunk_walks)
    n, d = A.shape
    launch = default_launch(cuda, d) if launch is None else launch
    if d > PER_LANE * launch.lanes:
        raise InputError(f'device="cuda" trains dim <= {PER_LANE * launch.lanes:,}, got {d:,}')
    clock = StageClock() if clock is None else clock
    losses = np.zeros(2)
    pool = int(settings.negative_pool)
    device: list = []  # every device array, freed at the end
    try:
        before = time.perf_counter()
        source = _joined(chunks(), chunk_walks)
        upcoming = next(source, None)
        if upcoming is None:
            return
        check_device_memory(cuda, n, d, max(chunk_walks, len(upcoming[1])), upcoming[1].shape[1],
                            launch.groups, pool)
        rows_a = cuda.to_device(np.ascontiguousarray(A, dtype=np.float32))
        rows_b = cuda.to_device(np.ascontiguousarray(B, dtype=np.float32))
        prob = cuda.to_device(noise.prob)
        alias = cuda.to_device(noise.alias)
        pools = cuda.device_array((launch.groups, max(pool, 1)), dtype=np.int64)  # never empty
        totals = cuda.to_device(np.zeros(3))
        device += [rows_a, rows_b, prob, alias, pools, totals]
        train_stream, copy_stream = cuda.stream(), cuda.stream()
        buffers: list = [None, None]
        scale = float(kernel.scale[0])

        def stage(slot: int, walks: np.ndarray):
            """Copy ``walks`` into device buffer ``slot`` on the copy stream (not waited for)."""
            buffer = buffers[slot]
            if buffer is None or buffer.shape[0] < len(walks) or buffer.shape[1] != walks.shape[1]:
                buffer = buffers[slot] = cuda.device_array(
                    (max(len(walks), chunk_walks), walks.shape[1]), dtype=walks.dtype)
                device.append(buffer)
            target = buffer[:len(walks)]
            target.copy_to_device(np.ascontiguousarray(walks), stream=copy_stream)
            return target

        slot = 0
        for epoch in range(epochs):
            if epoch > 0:
                before = time.perf_counter()
                source = _joined(chunks(), chunk_walks)
                upcoming = next(source, None)
            staged = None if upcoming is None else stage(slot, upcoming[1])
            while upcoming is not None:
                first, walks = upcoming
                target = staged
                copy_stream.synchronize()  # this chunk is on the device
                started = time.perf_counter()
                clock.walks += started - before
                totals.copy_to_device(np.zeros(3), stream=train_stream)
                train_kernel[launch.blocks, launch.threads, train_stream](
                    target, np.int64(epoch * n_walks + first), rows_a, rows_b, kind,
                    np.float32(param), np.float32(scale), prob, alias,
                    float(settings.total_centers), int(settings.window),
                    int(settings.negatives), np.float32(settings.lr), np.float32(settings.min_lr),
                    np.float32(settings.reg), np.uint64(settings.seed), bool(settings.loglik),
                    bool(settings.window_shrink), pools, pool, launch.lanes, totals)
                # while the device trains, the CPU makes the next chunk and copies it into the
                # other buffer
                made = time.perf_counter()
                upcoming = next(source, None)
                slot = 1 - slot
                staged = None if upcoming is None else stage(slot, upcoming[1])
                walked = time.perf_counter() - made
                train_stream.synchronize()
                figures = totals.copy_to_host()
                rows_a.copy_to_host(A)
                rows_b.copy_to_host(B)
                before = time.perf_counter()
                clock.training += before - started - walked
                clock.walks += walked
                losses[:] = figures[1:]
                yield walks, int(figures[0]), losses
                before = time.perf_counter()
    finally:
        buffers = []
        device.clear()
        try:
            cuda.current_context().deallocations.clear()
        except Exception:  # the simulator keeps no deferred frees  # noqa: BLE001
            pass
