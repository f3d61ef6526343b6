"""Validation scores and how sure a choice among them is: the standard errors of
:func:`kernelne.tune.search.tune` and :mod:`kernelne.model.kernel_choice` (both re-use these)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def auc_standard_error(auc: float, n_pos: int, n_neg: int) -> float:
    """Hanley and McNeil's (1982) standard error of a ROC-AUC from ``n_pos`` positive and
    ``n_neg`` negative examples."""
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    var = (auc * (1 - auc) + (n_pos - 1) * (q1 - auc * auc) + (n_neg - 1) * (q2 - auc * auc)
           ) / max(n_pos * n_neg, 1)
    return float(np.sqrt(max(var, 0.0)))


def _standard_error(values: Sequence[float]) -> float | None:
    """The standard error of the mean of ``values`` (None for a single value)."""
    if len(values) < 2:
        return None
    return float(np.std(values, ddof=1) / np.sqrt(len(values)))


def _gap_se(a: dict[str, Any], b: dict[str, Any]) -> tuple[float | None, bool]:
    """The standard error of ``a``'s score minus ``b``'s, and whether it is paired (both were
    scored on the same validation splits)."""
    va, vb = a.get("values") or [], b.get("values") or []
    if len(va) == len(vb) > 1:
        return _standard_error(np.subtract(va, vb)), True
    if a.get("se") is None or b.get("se") is None:
        return None, False
    return float(np.hypot(a["se"], b["se"])), False


def rank_finalists(finals: list[dict[str, Any]], labels: dict[int, str]) -> dict[str, Any]:
    """How sure the choice among ``finals`` (their precise scores) is: the winner, the
    runner-up, the gap and its standard error, whether the gap is within twice that error
    (``within_noise``), and the best default (``labels``: trial number -> default name)."""
    if not finals:
        return {}
    order = sorted(finals, key=lambda f: -f["score"])  # stable: ties keep the earlier trial
    win = order[0]
    out: dict[str, Any] = {"winner": win["number"], "score": win["score"], "se": win.get("se"),
                           "splits": win.get("splits"), "finalists": len(finals)}
    if len(order) > 1:
        run = order[1]
        se, paired = _gap_se(win, run)
        gap = win["score"] - run["score"]
        out.update(runner_up=run["number"], runner_up_score=run["score"],
                   runner_up_se=run.get("se"), gap=gap, gap_se=se, paired=paired,
                   within_noise=None if se is None else bool(gap <= 2 * se))
    defaults = [f for f in finals if f["number"] in labels]
    if defaults:
        best = max(defaults, key=lambda f: f["score"])
        se, paired = _gap_se(win, best)
        out.update(best_default=best["number"], best_default_name=labels[best["number"]],
                   best_default_score=best["score"], best_default_se=best.get("se"),
                   default_gap=win["score"] - best["score"], default_gap_se=se,
                   default_paired=paired)
    return out


def held_out_edges(graph: Any, fraction: float, seed: int) -> tuple[Any, Any, int, int]:
    """The validation split of a graph without labels: ``(split, residual graph to fit on,
    held-out edges, held-out non-edges)`` (:func:`kernelne.evaluation.make_link_split`)."""
    from kernelne.evaluation import make_link_split

    split = make_link_split(graph, test_fraction=fraction, seed=seed)
    _, y_val = split.test_pairs()
    n_pos = int(np.count_nonzero(y_val))
    return split, split.residual_graph(), n_pos, len(y_val) - n_pos
