"""A partitioned fit's blocks kept on the Dask workers between the steps of a round
(docs/DISTRIBUTED.md, the plan's item 1); used where the store is a URL
(:func:`kernelne.partitioned.driver.keeps_blocks`).

Step ``s`` of a round trains bucket ``(i, (i + s) mod P)`` for every part ``i``: ``A_i`` is
trained by part ``i``'s task at every step, ``B_j`` by a different part's task at each one.
Each task here returns its two blocks instead of writing them; the next step's task of part
``i`` takes ``A_i`` from the worker that holds it (part ``i``'s tasks are placed on one
worker, so ``A_i`` does not move) and ``B_j`` from wherever it lies (Dask moves it, worker to
worker). The blocks go through the folder or the store only at a checkpoint: the end of a
round, a look of the robust restart and the end of the fit, where every block is written
into the slot the recorded version is not in and ``progress.json`` then records the new
version and its slot. The step after a checkpoint reads the blocks from it.

Nothing else changes: a task trains the same pairs in the same order from the same rows as
:func:`~kernelne.partitioned.buckets.bucket_task`, so the rows are the same bytes (one thread
per task). A task copies the blocks it is given before it trains them, so a result Dask holds
is never changed, and a task that Dask runs again (a lost worker's results are computed again
from the tasks that made them, back to the last checkpoint, whose files are not written until
the next checkpoint) gives the same bytes. A driver that dies resumes at the last checkpoint.
"""

from __future__ import annotations

import operator
import time
import uuid
from typing import Any

import numpy as np

from kernelne.engine.rows import aligned_rows
from kernelne.partitioned.blocks import block_path, read_block, write_block
from kernelne.partitioned.buckets import gather_step, part_placement, release_futures, train_blocks
from kernelne.partitioned.store import location


def kept_bucket_task(folder: str, slot: int, i: int, j: int, parts: int, round_file: str,
                     first_walk: int, kernel, settings, threads: int = 1,
                     keep: np.ndarray | None = None, filed: bool = False,
                     A: np.ndarray | None = None, B: np.ndarray | None = None,
                     ) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    """:func:`~kernelne.partitioned.buckets.bucket_task` on blocks held by Dask: ``A`` and
    ``B`` (``A_i`` and ``B_j`` as the step before left them), or where one is None, the block
    read from ``slot``. Returns the trained blocks (copies: the given ones are not changed)
    and the bucket's figures; nothing is written."""
    start = time.perf_counter()
    root = location(folder)
    A = read_block(block_path(root, "A", i, slot)) if A is None else _copied(A)
    B = read_block(block_path(root, "B", j, slot)) if B is None else _copied(B)
    result = train_blocks(root, A, B, i, j, parts, round_file, first_walk, kernel, settings,
                          threads, keep, filed, time.perf_counter() - start)
    return A, B, result


def _copied(block: np.ndarray) -> np.ndarray:
    """``block`` copied into rows that start on cache lines (what a block file is read into)."""
    out = aligned_rows(*block.shape)
    out[:] = block
    return out


def write_kept_block(folder: str, which: str, part: int, slot: int, block: np.ndarray,
                     ) -> float:
    """Write a kept block into its file of ``slot``; returns the seconds it took."""
    start = time.perf_counter()
    write_block(block_path(location(folder), which, part, slot), block)
    return time.perf_counter() - start


class KeptBlocks:
    """The blocks held by Dask between checkpoints: ``held[("A", i)]`` and ``held[("B", j)]``
    are futures of the blocks the last step trained (empty after a checkpoint, when the next
    step reads the blocks from their files)."""

    def __init__(self, client, parts: int):
        self.client = client
        self.where = part_placement(client, parts)
        self.held: dict[tuple[str, int], Any] = {}
        self.made: list = []  # the futures this client still holds: released together

    def step(self, step: int, args: list[tuple]) -> list[dict[str, Any]]:
        """Submit step ``step``'s buckets (:func:`kept_bucket_task` with each of ``args``, a
        bucket task's arguments) and gather their figures; their blocks stay on the workers.
        The step before's futures are then dropped, not cancelled: Dask keeps the tasks (not
        their results) while the new blocks depend on them, to compute them again if a
        worker is lost."""
        client, token = self.client, uuid.uuid4().hex[:16]
        infos, held, made = [], {}, []
        for a in args:
            i, j = a[2], a[3]
            key = f"kernelne-kept-{step}-{i}-{j}-{token}"
            done = client.submit(kept_bucket_task, *a, self.held.get(("A", i)),
                                 self.held.get(("B", j)), pure=False, key=key,
                                 **self.where[i])
            held[("A", i)], held[("B", j)], info = (
                client.submit(operator.getitem, done, k, pure=False, key=f"{key}-{k}")
                for k in range(3))
            made += [done, info]
            infos.append(info)
        self.made += made + list(held.values())
        try:
            results = gather_step(client, step, infos)
        except BaseException:
            self.release()
            raise
        for future in [*self.held.values(), *made]:
            future.release()
        self.made, self.held = list(held.values()), held
        return results

    def checkpoint(self, folder: str, slot: int, step: int) -> float:
        """Write every held block into ``slot`` and let Dask forget them; returns the
        seconds spent writing, summed over the blocks."""
        client, token = self.client, uuid.uuid4().hex[:16]
        try:
            writes = [client.submit(write_kept_block, folder, which, part, slot, block,
                                    pure=False, key=f"kernelne-checkpoint-{which}{part}-{token}",
                                    **self.where[part])
                      for (which, part), block in sorted(self.held.items())]
            self.made += writes
            return float(sum(gather_step(client, step, writes)))
        finally:
            self.release()

    def release(self) -> None:
        """Drop the blocks held and every task since the checkpoint."""
        release_futures(self.client, self.made)
        self.held, self.made = {}, []
