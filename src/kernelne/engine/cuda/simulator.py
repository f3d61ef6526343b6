"""Warp shuffles for numba's CUDA simulator, which has none.

The simulator runs each thread of a block as a Python thread; :func:`install_shuffles` gives
its fake ``cuda`` module ``shfl_xor_sync``, written with a barrier of the block's threads
(:class:`threading.Barrier`, which waits without the simulator's polling of ``syncthreads``):
every thread of the block posts its value, waits for the others, reads its partner's
(``lane ^ lane_mask``) and waits again. The kernels of :mod:`kernelne.engine.cuda.kernels`
call it uniformly within a block (one group of lanes per block on the simulator), as the
barrier needs.
"""

from __future__ import annotations

import math
import threading

_LOCK = threading.Lock()


def _board(manager) -> tuple[dict, threading.Barrier]:
    """The block's shuffle board and barrier, made by the first thread that asks."""
    with _LOCK:
        if "_shuffle" not in manager.__dict__:
            manager._shuffle = ({}, threading.Barrier(math.prod(manager._block_dim)))
        return manager._shuffle


def _shfl_xor_sync(self, mask, value, lane_mask):
    """``value`` of the thread whose index in the block is this one's xor ``lane_mask``."""
    thread = threading.current_thread()
    board, barrier = _board(thread._manager)
    board[thread.thread_id] = value
    barrier.wait()
    other = board[thread.thread_id ^ int(lane_mask)]
    barrier.wait()
    return other


def install_shuffles() -> None:
    """Add ``shfl_xor_sync`` to the simulator's fake ``cuda`` module (once)."""
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    if not hasattr(FakeCUDAModule, "shfl_xor_sync"):
        FakeCUDAModule.shfl_xor_sync = _shfl_xor_sync
