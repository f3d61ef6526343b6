"""The robust restart's test (docs/METHOD.md §7): are the rows forming the collapsed shell?

At CHECKPOINT of the run the rows are checked for the shell that wide kernels fall into
(dense graphs; Cora with sch:0.5; docs/COLLAPSE.md). Measured at 3-7% of runs (offset ratio,
neighbour AUC): collapsing (2.4-3.4, 0.42-0.58) and (1.7, 0.50); healthy (0.2-1.4, 0.60-0.99)
and (2.6, 0.83) (Cora, gauss:3, which ends best of all). The shell is an offset ratio above
SHELL_OFFSET with an AUC below SHELL_AUC_WIDE, or above 1 with an AUC below SHELL_AUC. If
found, training restarts with the kernel narrowed NARROWING times in ``||x - y||^2``, at most
MAX_NARROWING times. Used by the plain fit (:mod:`kernelne.model.kernelne`) and the partitioned one
(:mod:`kernelne.partitioned.driver`).

A reading in between (``doubtful``: an offset above the bar, an AUC below SHELL_AUC_WIDE) is
read once more when the run has trained SECOND_LOOK times its pairs: rows that learn raise
their AUC (Cora, gauss, P = 4: 0.69 -> 0.85 from 210 to 320 pairs per node) while a shell
holds it (Cora, sch:0.5, P = 4: 0.59 -> 0.60); the second reading is the shell if the AUC
rose by less than AUC_RISE.
"""

from __future__ import annotations

import numpy as np

from kernelne.engine.diagnostics import (
    SAMPLE_ROWS,
    SHELL_AUC_WIDE,
    embedding_health,
    offset_and_direction,
)

CHECKPOINT = 0.05
CHECKPOINT_PAIRS = 200  # ... and not before this many pairs per node (then at most half-way)
SHELL_OFFSET = 2.0
SHELL_AUC = 0.55
# A partitioned fit's parts drift apart: the shell forms within each part (A_i's rows share an
# offset) while the offset of all of A stays lower. So its test takes the mean of the parts'
# offset ratios, against a lower bar. Measured at the checkpoint (part offset, AUC):
# collapsing dense planted partition, sch P=3 (1.4, 0.50), gauss P=4 (0.99, 0.51); 100k-node
# planted partition, gauss P=4 (1.07, 0.52); 1M-node planted partition, gauss P=8 (0.68, 0.52;
# its plain fit (1.89, 0.51)); healthy dense gauss:0.5 P=3 (0.45, 0.57). After one narrowing
# a small dense graph with few walks (tests/test_partitioned.py) is still at (0.52-0.59,
# 0.50-0.52) and ends healthier than before: so the low bar holds for the first narrowing only,
# a second needs the plain fit's bar.
PART_SHELL_OFFSET = 0.5
SECOND_LOOK = 2.0
AUC_RISE = 0.05
NARROWING = 8.0
MAX_NARROWING = 2


def part_offset_ratio(A: np.ndarray, active: np.ndarray, parts: int, seed: int = 0) -> float:
    """Mean over the parts ``i`` (nodes ``v mod P = i``) of the offset ratio of part ``i``'s
    active rows of ``A`` (a sample of :data:`~kernelne.engine.diagnostics.SAMPLE_ROWS` in all)."""
    rows = np.flatnonzero(active)
    if len(rows) > SAMPLE_ROWS:
        rows = np.sort(np.random.default_rng(seed).choice(rows, SAMPLE_ROWS, replace=False))
    ratios = [offset_and_direction(np.asarray(A[rows[rows % parts == i]]))[0]
              for i in range(parts) if np.any(rows % parts == i)]
    return float(np.mean(ratios))


def shell_figures(A: np.ndarray, B: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
                  active: np.ndarray, beta: np.ndarray, scale: float, pairs: int,
                  parts: int = 1, narrowed: int = 0, previous: dict | None = None,
                  finite: bool | None = None) -> dict | None:
    """The restart test's figures, where they were taken and its verdict ``collapsing`` (the
    rows ``A``, ``B`` of the graph with CSR adjacency ``indptr``, ``indices`` are forming the
    shell); None if the rows are not finite (reported as an error after the run) or too few
    to measure (:data:`~kernelne.engine.diagnostics.MIN_ROWS`).
    ``active``: the nodes that occur in walks; ``beta``: MKernelNE's weights, whose all
    shrinking (``sum beta < 0.5`` with a low AUC) is the multi-kernel form of the shell;
    ``parts``: the partitions of a partitioned fit (the offset is then the parts' mean, against
    :data:`PART_SHELL_OFFSET` if the kernel was not ``narrowed`` before); ``previous``: this
    run's first, ``doubtful`` reading, if this is the second look: the shell too if the
    AUC has not risen by :data:`AUC_RISE` since. ``finite``: whether ``A`` is all finite, if
    the caller has checked (``A`` then need only support ``len``, ``shape`` and ``A[rows]``)."""
    if not (np.isfinite(A).all() if finite is None else finite):
        return None
    health = embedding_health(A, B, indptr, indices, active)
    if not health.measured:
        return None
    offset, auc = health.offset_ratio, health.neighbour_auc
    low_bar = PART_SHELL_OFFSET if parts > 1 and narrowed == 0 else 1.0
    if parts > 1:
        offset = part_offset_ratio(A, active, parts)
    weights = len(beta) > 1 and float(np.sum(beta)) < 0.5 and auc < SHELL_AUC
    stalled = previous is not None and offset > low_bar and (
        auc < previous["neighbour_auc"] + AUC_RISE)
    collapsing = (offset > SHELL_OFFSET and auc < SHELL_AUC_WIDE) or (
        offset > low_bar and auc < SHELL_AUC) or weights or stalled
    return {"kernel_scale": float(scale), "at_pairs": int(pairs), "neighbour_auc": auc,
            "offset_ratio": offset, "weights_collapsed": weights,
            "doubtful": bool(not collapsing and offset > low_bar and auc < SHELL_AUC_WIDE),
            "collapsing": bool(collapsing)}


def look_due(step: int, total_steps: int, pairs: int, min_pairs: int,
             looks: list[dict]) -> bool:
    """Whether the shell test is due after ``step`` of ``total_steps`` (chunks of walks or
    partitioned steps), ``pairs`` trained, given this run's ``looks`` so far. Never after
    half of the run. The first look: the first step past CHECKPOINT of the run with
    ``min_pairs`` trained (CHECKPOINT_PAIRS per active node), or half-way if the run is too
    short to train that many by then. A second look only after a ``doubtful`` first one,
    at SECOND_LOOK times its pairs (or half-way)."""
    half = step == total_steps // 2  # the last step a look may come after
    if step > total_steps // 2:
        return False
    if not looks:
        return step >= CHECKPOINT * total_steps and (pairs >= min_pairs or half)
    first = looks[0]
    return (len(looks) == 1 and first["doubtful"] and not first["collapsing"]
            and (pairs >= SECOND_LOOK * first["at_pairs"] or half))
