"""Link-prediction heuristics: scores of node pairs from the residual graph alone.

Computed sparsely on the split's residual (training) graph A, never on held-out edges, and
only for the pairs scored (no dense n x n matrix). For a pair (u, v), with ``N(x)`` the
neighbours of x and ``d(x) = |N(x)|``:

* ``common_neighbours``: ``|N(u) ∩ N(v)|`` (row products of A)
* ``jaccard``: ``|N(u) ∩ N(v)| / |N(u) ∪ N(v)|``
* ``adamic_adar``: the sum over w in ``N(u) ∩ N(v)`` of ``1 / log d(w)``
* ``preferential_attachment``: ``d(u) d(v)``
* ``katz``: ``sum_{l=1..L} beta^l (A^l)_{uv}``, truncated at L = 3, beta = 0.005

A heuristic needs no classifier: its score ranks the test pairs directly (ROC-AUC, average
precision), so an embedding that cannot beat these is visible as such.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import average_precision_score, roc_auc_score

from kernelne.errors import InputError
from kernelne.evaluation.results import ResultRow, ResultTable
from kernelne.evaluation.splits import LinkSplit

KATZ_BETA, KATZ_LENGTH = 0.005, 3


def _pair_products(left: sp.csr_matrix, right: sp.csr_matrix, pairs: np.ndarray) -> np.ndarray:
    """``(left @ right.T)[u, v]`` for each pair, as row dot products."""
    return np.asarray(left[pairs[:, 0]].multiply(right[pairs[:, 1]]).sum(axis=1)).ravel()


def heuristic_scores(adjacency: sp.csr_matrix, pairs: np.ndarray, name: str) -> np.ndarray:
    """Scores of node pairs under one heuristic, computed sparsely from ``adjacency``.

    Parameters
    ----------
    adjacency : scipy.sparse matrix of shape (n, n)
        The residual (training) graph; entries are read as 0/1.
    pairs : ndarray of shape (k, 2)
        Rows of ``adjacency``, one pair per row.
    name : str
        One of :data:`HEURISTICS`: ``common_neighbours``, ``jaccard``, ``adamic_adar``,
        ``preferential_attachment`` or ``katz`` (truncated at L = 3, beta = 0.005).

    Returns
    -------
    ndarray of shape (k,)
        The score of each pair (higher: more likely an edge).

    Raises
    ------
    InputError
        An unknown heuristic.
    """
    A = sp.csr_matrix(adjacency, dtype=np.float64)
    A.data[:] = 1.0
    deg = np.asarray(A.sum(axis=1)).ravel()
    u, v = pairs[:, 0], pairs[:, 1]
    if name == "common_neighbours":
        return _pair_products(A, A, pairs)
    if name == "jaccard":
        common = _pair_products(A, A, pairs)
        union = deg[u] + deg[v] - common
        return np.divide(common, union, out=np.zeros_like(common), where=union > 0)
    if name == "adamic_adar":
        weight = np.zeros_like(deg)
        weight[deg > 1] = 1.0 / np.log(deg[deg > 1])
        return _pair_products(A @ sp.diags(weight), A, pairs)
    if name == "preferential_attachment":
        return deg[u] * deg[v]
    if name == "katz":
        score = np.zeros(len(pairs))
        walk = A  # A^l, kept sparse (length at most KATZ_LENGTH)
        for length in range(1, KATZ_LENGTH + 1):
            if length == 1:
                score += KATZ_BETA * np.asarray(A[u, v]).ravel()
            else:
                score += KATZ_BETA**length * _pair_products(walk, A, pairs)
                if length < KATZ_LENGTH:
                    walk = walk @ A
        return score
    raise InputError(f"unknown heuristic {name!r} (use {', '.join(HEURISTICS)})")


HEURISTICS = ("common_neighbours", "jaccard", "adamic_adar", "preferential_attachment", "katz")
HEURISTIC_LABELS = {
    "common_neighbours": "Common neighbours", "jaccard": "Jaccard", "adamic_adar": "Adamic-Adar",
    "preferential_attachment": "Preferential attachment",
    "katz": f"Katz (β = {KATZ_BETA}, L = {KATZ_LENGTH})",
}


def evaluate_heuristics(split: LinkSplit, names: Sequence[str] = HEURISTICS,
                        dataset: str = "") -> ResultTable:
    """ROC-AUC and average precision of each heuristic on ``split``'s test pairs.

    The scores come from the split's residual graph only (:doc:`METHOD </METHOD>` §12); no
    classifier.

    Parameters
    ----------
    split : LinkSplit
        The link-prediction split.
    names : sequence of str, default HEURISTICS
        The heuristics to score (see :func:`heuristic_scores`).
    dataset : str, default ""
        The dataset's name in the result rows.

    Returns
    -------
    ResultTable
        Rows ``roc_auc`` and ``average_precision`` per heuristic (method: its name; setting
        ``"heuristic"``).
    """
    A = split.residual_graph().adjacency().tocsr()
    pairs, y = split.test_pairs()
    rows = []
    for name in names:
        scores = heuristic_scores(A, pairs, name)
        for metric, value in (("roc_auc", roc_auc_score(y, scores)),
                              ("average_precision", average_precision_score(y, scores))):
            rows.append(ResultRow(name, dataset, "link_prediction", "heuristic", metric,
                                  float(value), 0.0, 1))
    return ResultTable(rows)
