"""Checks that a fitted embedding carries information (docs/COLLAPSE.md explains the failure).

A KernelNE fit can fail without an error: on dense graphs a wide kernel with the paper's
learning rate ends in a "shell" where every center row sits at about the same distance from
every context row (all kernel values near ``1 / (k + 1)``), the context rows ``B`` crowd along
one direction and the center rows ``A`` share a common offset much larger than their spread.
Classifiers then see almost nothing. The check, on samples (``O(sample * d^2)``):

* ``neighbour_auc``: the probability that the centered cosine similarity of the ``A`` rows of
  an edge's ends exceeds that of a random pair (ROC-AUC, 0.5 = chance). Uninformative fits
  measured 0.45-0.52, informative ones 0.67 and more: below :data:`AUC_LIMIT` the embedding is
  reported as collapsed (neighbours are no closer than random pairs).
* ``offset_ratio`` = ``||mean(A)|| / rms(A - mean(A))``: collapsed runs end at 2-12, healthy
  ones below 1.3; above :data:`OFFSET_LIMIT` with a neighbour AUC below
  :data:`SHELL_AUC_WIDE` the rows are reported as collapsed onto a shell even if neighbours
  stay somewhat alike (Cora with sch:0.5 ends at 5.2 and an AUC near 0.6, Micro-F1 0.44). An
  offset with neighbours clearly alike is a shared offset, not a shell (Cora with gauss:3
  reads 2.6 and 0.83 and ends best of all; the demo graph with the dense setting ends at 3.3
  and 0.82, k-means ARI 0.99).
* and, to name the cause, ``top_direction_share``, the share of ``B``'s centered variance
  along its first principal direction (collapsed up to 0.95; healthy < 0.2 with d = 128).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from kernelne.errors import TrainingError

AUC_LIMIT = 0.55
# Shared negatives take one step per center and need more walks than negatives per pair.
# Measured on a 100k-node planted partition (neighbour AUC, Micro-F1) with 10, 20, 40 and 80
# walks per node: (0.58, 0.05), (0.70, 0.24), (0.86, 0.79), (0.93, 0.94); per pair, 10 walks:
# (0.90, 0.91). Healthy fits of Cora and CiteSeer: 0.99 either way.
SHARED_AUC_LIMIT = 0.8
OFFSET_LIMIT = 3.0
#: below this neighbour AUC an offset marks a shell (here and in the restart test,
#: :mod:`kernelne.engine.robust`)
SHELL_AUC_WIDE = 0.7
SAMPLE_ROWS = 4000
SAMPLE_PAIRS = 4000
MIN_ROWS = 50
CHUNK = 1 << 16  # rows per step when scanning a whole matrix (bounded temporaries)


class DegenerateEmbeddingWarning(UserWarning):
    """The embedding looks collapsed (uninformative); the message names a likely cause and fix."""


@dataclass(frozen=True)
class EmbeddingHealth:
    """Statistics of a fitted embedding; ``collapsed`` when neighbours look like random pairs
    or the center rows sit on a shell (a common offset far larger than their spread)."""

    neighbour_auc: float
    offset_ratio: float
    top_direction_share: float
    measured: bool = True  # False: too few rows (< MIN_ROWS); the figures are placeholders

    @property
    def on_shell(self) -> bool:
        """The rows share an offset above :data:`OFFSET_LIMIT` and neighbours are alike below
        :data:`SHELL_AUC_WIDE`."""
        return self.offset_ratio > OFFSET_LIMIT and self.neighbour_auc < SHELL_AUC_WIDE

    @property
    def collapsed(self) -> bool:
        """Neighbours no more alike than random pairs (AUC below :data:`AUC_LIMIT`), or the
        rows on a shell."""
        return self.neighbour_auc < AUC_LIMIT or self.on_shell


def check_finite(*matrices: np.ndarray) -> None:
    """Raise :class:`TrainingError` if any matrix holds NaN or inf (training diverged)."""
    for X in matrices:
        if not all(np.isfinite(X[i : i + CHUNK]).all() for i in range(0, len(X), CHUNK)):
            bad = int(np.count_nonzero(~np.isfinite(X).all(axis=1)))
            raise TrainingError(
                f"training diverged: {bad:,} of {len(X):,} embedding rows are NaN or infinite "
                "(the learning rate is too large for this kernel; try a smaller --lr)"
            )


def offset_and_direction(X: np.ndarray) -> tuple[float, float]:
    """The offset ratio ``||mean(X)|| / rms(X - mean(X))`` of the rows ``X`` and the share of
    their centered variance along the first principal direction."""
    X = X.astype(np.float64)
    mean = X.mean(axis=0)
    dev = X - mean
    spread = float(np.sqrt((dev**2).sum(axis=1).mean()))
    if spread == 0.0:
        return float("inf"), 1.0
    sv = np.linalg.svd(dev, compute_uv=False) ** 2
    return float(np.linalg.norm(mean)) / spread, float(sv[0] / sv.sum())


def sample_edges(indptr: np.ndarray, indices: np.ndarray, size: int,
                 rng: np.random.Generator) -> np.ndarray:
    """``size`` edges (``size x 2`` dense ids) drawn uniformly from a CSR adjacency."""
    if len(indices) == 0:
        return np.empty((0, 2), dtype=np.int64)
    at = rng.integers(0, len(indices), size)
    return np.column_stack([np.searchsorted(indptr, at, side="right") - 1, indices[at]])


def neighbour_auc(A: np.ndarray, edges: np.ndarray, rows: np.ndarray,
                  rng: np.random.Generator) -> float:
    """ROC-AUC of centered-cosine similarity of ``A``'s rows: ``edges`` against random pairs
    of ``rows``."""
    if len(edges) == 0:
        return 1.0
    center = _row_mean(A, rows)

    def unit(idx: np.ndarray) -> np.ndarray:  # only the sampled rows: O(sample * d) memory
        X = A[idx].astype(np.float64) - center
        return X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-30)

    e = edges
    rand = rows[rng.integers(0, len(rows), (len(edges), 2))]
    pos = np.einsum("ij,ij->i", unit(e[:, 0]), unit(e[:, 1]))
    neg = np.einsum("ij,ij->i", unit(rand[:, 0]), unit(rand[:, 1]))
    return roc_auc(pos, neg)


def roc_auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """ROC-AUC of scores ``pos`` (positives) against ``neg`` (negatives), ties counted half.

    The area under the ROC curve by the trapezoidal rule, computed as scikit-learn's
    ``roc_auc_score`` computes it (the same float, so that a threshold on it decides the
    same), without importing scikit-learn (the engine does not depend on it).

    Parameters
    ----------
    pos, neg : ndarray
        The positives' and the negatives' scores (at least one of each).

    Returns
    -------
    float
        The probability that a positive outscores a negative.

    Raises
    ------
    ValueError
        A score is NaN or infinite.
    """
    scores = np.r_[pos, neg].astype(np.float64)
    if not np.isfinite(scores).all():
        raise ValueError("Input contains NaN or infinity.")
    labels = np.r_[np.ones(len(pos)), np.zeros(len(neg))]
    order = np.argsort(-scores, kind="stable")
    scores, labels = scores[order], labels[order]
    ends = np.r_[np.nonzero(np.diff(scores))[0], len(scores) - 1]  # last of each tie group
    tps = np.cumsum(labels)[ends]
    fps = 1 + ends - tps
    if len(fps) > 2:  # drop the points on a straight line, as the ROC curve does
        keep = np.r_[True, np.logical_or(np.diff(fps, 2), np.diff(tps, 2)), True]
        fps, tps = fps[keep], tps[keep]
    fpr = np.r_[0.0, fps] / fps[-1]
    tpr = np.r_[0.0, tps] / tps[-1]
    return float((np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0).sum())


def _row_mean(A: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Mean of ``A[rows]`` (float64), a chunk of rows at a time (no copy of ``A``)."""
    total = np.zeros(A.shape[1])
    for i in range(0, len(rows), CHUNK):
        total += A[rows[i : i + CHUNK]].sum(axis=0, dtype=np.float64)
    return total / max(len(rows), 1)


def embedding_health(
    A: np.ndarray, B: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
    active: np.ndarray | None = None, seed: int = 0,
) -> EmbeddingHealth:
    """:class:`EmbeddingHealth` of center rows ``A`` and context rows ``B`` of the graph with
    CSR adjacency ``indptr``, ``indices`` (no self-loops).

    ``active``: boolean mask of the rows to look at (nodes that occur in walks; isolated nodes
    keep their initial rows and would only blur the picture). Rows and pairs are sampled,
    seeded.
    """
    rng = np.random.default_rng(seed)
    rows = np.flatnonzero(active) if active is not None else np.arange(len(A))
    if len(rows) < MIN_ROWS:  # too few rows for the statistics to mean anything
        return EmbeddingHealth(1.0, 0.0, 0.0, measured=False)
    auc = neighbour_auc(A, sample_edges(indptr, indices, SAMPLE_PAIRS, rng), rows, rng)
    if len(rows) > SAMPLE_ROWS:
        rows = np.sort(rng.choice(rows, SAMPLE_ROWS, replace=False))
    offset, _ = offset_and_direction(A[rows])
    _, direction = offset_and_direction(B[rows])
    return EmbeddingHealth(auc, offset, direction)



def warn_if_collapsed(health: EmbeddingHealth, mean_degree: float, kernels: str,
                      robust: bool = True) -> bool:
    """Issue a :class:`DegenerateEmbeddingWarning` naming cause and fix; True if it did."""
    if not health.collapsed:
        return False
    warnings.warn(
        DegenerateEmbeddingWarning(
            f"the embedding looks collapsed or uninformative (neighbour AUC "
            f"{health.neighbour_auc:.2f}, 0.5 = neighbours no more alike than random pairs; "
            f"center rows share an offset {health.offset_ratio:.1f}x their spread; "
            f"{health.top_direction_share:.0%} of the context rows' variance lies along one "
            f"direction). Kernel {kernels} is too wide "
            f"for the learning rate on this graph (mean degree {mean_degree:.1f}). Try "
            + ("" if robust else "the robust fit (robust=True, drop --paper), ")
            + "a narrower kernel (--sigma 0.5 or --alpha 4), fewer negatives (--negatives 2) "
            "or `kernelne tune`; `kernelne docs collapse` explains it"
        ),
        stacklevel=3,
    )
    return True


def warn_if_undertrained(health: EmbeddingHealth, walks_per_node: int) -> bool:
    """For a fit with shared negatives: a :class:`DegenerateEmbeddingWarning` if its neighbour
    AUC is below :data:`SHARED_AUC_LIMIT` and its rows are not on a shell (that is
    :func:`warn_if_collapsed`'s case); True if so."""
    if health.on_shell or health.neighbour_auc >= SHARED_AUC_LIMIT:
        return False
    warnings.warn(
        DegenerateEmbeddingWarning(
            f"the embedding looks undertrained (neighbour AUC {health.neighbour_auc:.2f}; "
            "healthy fits reach 0.9 or more). Shared negatives take one step per center and "
            f"need many walks: with {walks_per_node} walks per node, drop --shared-negatives "
            "or raise --walks-per-node (on a 100k-node planted partition they reached "
            "Micro-F1 0.05, 0.24, 0.79 and 0.94 with 10, 20, 40 and 80 walks per node)"
        ),
        stacklevel=3,
    )
    return True
