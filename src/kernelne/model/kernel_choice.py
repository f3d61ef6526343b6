"""MKernelNE's kernel weights chosen on validation data (``KernelNE(beta_select=...)``).

What the weights change. ``beta`` enters the *training* loss, ``k = sum_j beta_j k_j``: the
rows ``A`` (the embedding users consume) are fitted to it. Weights chosen after a fit, only to
score pairs with the kernel, would leave ``A`` as it is, so they would not change node
classification at all, nor link prediction as the project scores it (a classifier on edge
features of ``A``). Weights are therefore chosen by *fitting* each candidate and keeping the
rows of the winner.

The rule (:func:`choose_weights`), for a dictionary of ``m`` kernels:

* **Candidates**, in this order: each single kernel of the dictionary (``beta = e_j``, a fit
  bit for bit the single-kernel fit), ``"uniform"`` (``beta_j = 1/m``, fixed) and ``"train"``
  (today's MKernelNE: ``beta`` learned by SGD with the rows).
* **Validation data**, never the test data (the caller keeps those out):

  - *held-out labels* (``labels`` given, e.g. ``KernelNE.fit(graph, y)``): every candidate is
    fitted on the whole graph (unsupervised, as in the evaluation protocol) and scored by the
    mean Micro-F1 of ``repeats`` seeded 50/50 splits of the given labelled nodes (one-vs-rest
    logistic regression, top-k rule: the protocol of :func:`kernelne.tune.search.tune`). The
    winner's fit is kept (no refit). Pass only the labels you may train on.
  - *held-out edges* (no labels): ``val_fraction`` of the edges are held out
    (:func:`kernelne.evaluation.make_link_split`: largest component, residual kept connected,
    as many non-edges); every candidate is fitted on the residual graph and scored by ROC-AUC
    (weighted-L2 operator); the winner is then refitted on the whole graph.
* **Winner**: the highest validation score; exact ties go to the earlier candidate. The
  result (:class:`KernelChoice`) keeps every candidate's score and its standard error, and
  the winner's lead over the best single kernel with the standard error of that gap
  (:func:`kernelne.evaluation.validation.rank_finalists`).

Cost: ``m + 2`` fits (labels), ``m + 3`` (edges; the ``m + 2`` are on the smaller residual
graph). A dictionary can only be chosen from; a mix better than all of its candidates is not
searched for.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernelne.engine.diagnostics import DegenerateEmbeddingWarning
from kernelne.engine.kernels import Kernel
from kernelne.engine.sampling import seed_to_uint64
from kernelne.errors import FIT_ERRORS, ParamError, TrainingError, failure_reason
from kernelne.evaluation.validation import (
    _standard_error,
    auc_standard_error,
    held_out_edges,
    rank_finalists,
)
from kernelne.graphs.graph import Graph

#: the named settings of ``KernelNE(beta_select=...)`` (or a sequence of ``m`` fixed weights)
BETA_SELECTS = ("train", "uniform", "validation")
#: fraction of the edges held out when there are no labels
VAL_FRACTION = 0.2
#: validation splits of the labelled nodes per candidate
VAL_REPEATS = 5


def fixed_weights(beta_select: Any, m: int) -> np.ndarray | None:
    """The fixed weights ``beta_select`` sets for a dictionary of ``m`` kernels (float32), or
    None if the weights are learned (``"train"``) or chosen (``"validation"``). Raises
    ``ValueError`` for anything else, or for a setting other than ``"train"`` with ``m < 2``."""
    if isinstance(beta_select, str):
        if beta_select not in BETA_SELECTS:
            raise ValueError(f"beta_select must be one of {', '.join(BETA_SELECTS)} or a "
                             f"sequence of weights, got {beta_select!r}")
        if beta_select != "train" and m < 2:
            raise ParamError(f"{{beta_select={beta_select}}} needs {{kernel=multi}} with at "
                             "least two kernels")
        return np.full(m, 1.0 / m, dtype=np.float32) if beta_select == "uniform" else None
    try:
        beta = np.asarray(beta_select, dtype=np.float64)
    except (TypeError, ValueError):
        beta = np.array([math.nan])
    if m < 2 or beta.shape != (m,) or not np.all(np.isfinite(beta)) or (beta < 0).any() \
            or beta.sum() <= 0:
        raise ValueError(f"fixed weights need kernel='multi' and {m} finite weights >= 0, not "
                         f"all 0 (one per kernel), got {beta_select!r}")
    return beta.astype(np.float32)


def candidates(kernels: Sequence[Kernel]) -> list[tuple[str, str | list[float]]]:
    """``(name, beta_select)`` of each candidate: the single kernels, uniform, train."""
    m = len(kernels)
    singles = [(str(k), [1.0 if i == j else 0.0 for i in range(m)])
               for j, k in enumerate(kernels)]
    return [*singles, ("uniform", "uniform"), ("train", "train")]


@dataclass
class KernelChoice:
    """The candidates' validation scores and the winner (``KernelNE.beta_choice_``).

    ``names``: the candidates (single kernels as ``gauss:1.41421``, ``"uniform"``,
    ``"train"``); ``settings``: their ``beta_select``; ``scores``, ``ses`` (standard errors)
    and ``values`` (per-split scores, labels only); ``betas``: each candidate's weights after
    its validation fit (the learned ones for ``"train"``); ``winner``: its index; ``metric``
    (``micro_f1`` or ``roc_auc``); ``validation``: what was scored; ``ranking``:
    :func:`kernelne.evaluation.validation.rank_finalists` with the best single kernel as the
    default (its ``default_gap`` is the winner's lead over it, ``default_gap_se`` that lead's
    standard error)."""

    names: list[str]
    settings: list[Any]
    scores: list[float]
    ses: list[float | None]
    values: list[list[float]]
    betas: list[np.ndarray]
    winner: int
    metric: str
    validation: str
    ranking: dict[str, Any] = field(default_factory=dict)
    #: candidate index -> why its fit (or its score) failed; its score is NaN
    failed: dict[int, str] = field(default_factory=dict)

    @property
    def winner_name(self) -> str:
        return self.names[self.winner]

    def table(self) -> str:
        """One line per candidate: score ± standard error, weights, the winner marked."""
        lines = [f"{'candidate':16} {self.metric:>8}  {'± se':>6}  weights"]
        for i, name in enumerate(self.names):
            if i in self.failed:
                lines.append(f"{name:16} {'failed':>8}  {'':>6}  {self.failed[i]}")
                continue
            se = "-" if self.ses[i] is None else f"{self.ses[i]:.4f}"
            beta = " ".join(f"{b:.3f}" for b in self.betas[i])
            mark = "  <- chosen" if i == self.winner else ""
            lines.append(f"{name:16} {self.scores[i]:8.4f}  {se:>6}  {beta}{mark}")
        rk = self.ranking
        if rk.get("best_default") is not None and rk["best_default"] != self.winner:
            gap_se = rk.get("default_gap_se")
            lines.append(f"lead over the best single kernel ({rk['best_default_name']}): "
                         f"{rk['default_gap']:+.4f}"
                         + ("" if gap_se is None else f" (standard error {gap_se:.4f})"))
        return "\n".join(lines)


def _labels_arg(labels: Any, g: Graph) -> tuple[Any, Any]:
    """``(labels, label_nodes)`` for :func:`evaluate_node_classification` from a label file,
    a ``(node ids, labels)`` pair, or labels in the graph's node order."""
    if isinstance(labels, tuple) and len(labels) == 2:
        return labels[1], labels[0]
    if isinstance(labels, str) or hasattr(labels, "__fspath__"):
        return labels, None
    return labels, g.nodes


def _fit_quietly(model: Any, graph: Graph) -> Any:
    with warnings.catch_warnings():  # a collapsed candidate simply scores low
        warnings.simplefilter("ignore", DegenerateEmbeddingWarning)
        return model.fit(graph)


def choose_weights(
    model: Any,
    graph: Any,
    labels: Any = None,
    *,
    val_fraction: float = VAL_FRACTION,
    repeats: int = VAL_REPEATS,
    seed: int | None = None,
    fits: dict[str, Any] | None = None,
) -> tuple[KernelChoice, Any]:
    """Choose ``model``'s kernel weights (a ``KernelNE`` with ``kernel="multi"``) on
    validation data by the rule of this module; return the choice and the winner fitted on
    the whole ``graph`` (a fresh ``KernelNE`` whose ``beta_select`` is the winner's setting).

    ``labels``: held-out labels to validate on (a label file, ``(node ids, labels)`` or labels
    in the graph's node order; only those the caller may train on); without them, held-out
    edges (``val_fraction``). ``repeats``: validation splits of the labelled nodes.
    ``seed``: of the validation splits (default: the model's ``random_state``, else 0).
    ``fits``: candidate name -> a model already fitted on the whole ``graph`` with that
    candidate's settings, reused instead of fitted again (checked by ``get_params``).
    """
    from sklearn.base import clone

    from kernelne.evaluation import (
        evaluate_link_prediction,
        evaluate_node_classification,
    )
    from kernelne.graphs.graph import load_graph

    g = load_graph(graph)
    kernels = model.kernel_dictionary()
    _check_choice(model, kernels, val_fraction, repeats)
    if seed is None:
        seed = (0 if model.random_state is None
                else int(seed_to_uint64(model.random_state) % np.uint64(2**32)))
    cands = candidates(kernels)
    fits = dict(fits or {})

    def make(setting: Any) -> Any:
        est = clone(model)
        est.set_params(beta_select=setting)
        return est

    def whole_graph_fit(name: str, setting: Any) -> Any:
        est = make(setting)
        done = fits.get(name)
        if done is not None and _same_params(done.get_params(), est.get_params()):
            return done
        return _fit_quietly(est, g)

    kept: dict[int, Any] = {}
    m = len(kernels)
    scores, ses, values = [math.nan] * len(cands), [None] * len(cands), [[] for _ in cands]
    betas = [np.full(m, math.nan) for _ in cands]
    failed: dict[int, str] = {}
    if labels is not None:
        y, label_nodes = _labels_arg(labels, g)
        metric = "micro_f1"
        validation = (f"Micro-F1 of {int(repeats)} seeded 50/50 splits of the given labelled "
                      "nodes, candidates fitted on the whole graph")

        def score(i: int, name: str, setting: Any) -> None:
            fitted = whole_graph_fit(name, setting)
            table = evaluate_node_classification(
                (fitted.embedding_, fitted.nodes_), y, label_nodes, ratios=[0.5],
                repeats=int(repeats), seed=int(seed), n_jobs=1)
            split_values = list(getattr(table, "per_split", {}).get(("0.5", "micro_f1"), []))
            scores[i] = float(table.value("micro_f1"))
            ses[i], values[i] = _standard_error(split_values), split_values
            betas[i] = np.asarray(fitted.beta_, dtype=np.float64)
            kept[i] = fitted
    else:
        split, residual, n_pos, n_neg = held_out_edges(g, val_fraction, int(seed))
        metric = "roc_auc"
        validation = (f"ROC-AUC (weighted-L2) on {len(split.test_edges):,} held-out edges "
                      f"({val_fraction:g} of the largest component's) and as many non-edges, "
                      "candidates fitted on the rest; standard error by Hanley and McNeil")

        def score(i: int, name: str, setting: Any) -> None:
            fitted = _fit_quietly(make(setting), residual)
            auc = float(evaluate_link_prediction((fitted.embedding_, fitted.nodes_), split)
                        .value("roc_auc"))
            scores[i], ses[i] = auc, auc_standard_error(auc, n_pos, n_neg)
            betas[i] = np.asarray(fitted.beta_, dtype=np.float64)

    for i, (name, setting) in enumerate(cands):
        try:
            score(i, name, setting)
        except FIT_ERRORS as exc:  # recorded; the other candidates are still scored
            failed[i] = failure_reason(exc)
    winner, best = _pick_winner(cands, scores, kept, failed, whole_graph_fit)
    finals = [{"number": i, "score": scores[i], "se": ses[i], "values": values[i],
               "splits": len(values[i]) or 1} for i in range(len(cands)) if i not in failed]
    choice = KernelChoice([n for n, _ in cands], [s for _, s in cands], scores, ses, values,
                          betas, winner, metric, validation,
                          rank_finalists(finals, {j: cands[j][0] for j in range(m)}), failed)
    return choice, best


def _check_choice(model: Any, kernels: list, val_fraction: float, repeats: int) -> None:
    """The ValueErrors of :func:`choose_weights`'s settings."""
    if len(kernels) < 2:
        raise ParamError("{beta_select=validation} needs {kernel=multi} with at least two "
                         "kernels")
    if int(model.partitions) > 1:
        raise ParamError("{beta_select=validation} is not available with {partitions} > 1")
    if not 0 < val_fraction < 1:
        raise ValueError(f"val_fraction must lie strictly between 0 and 1, got {val_fraction}")
    if int(repeats) < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}")


def _pick_winner(cands: list, scores: list[float], kept: dict[int, Any],
                 failed: dict[int, str], whole_graph_fit: Callable) -> tuple[int, Any]:
    """The best-scoring candidate not in ``failed`` (ties to the earlier) and its model fitted
    on the whole graph (``kept``, else refitted; a refit that fails is recorded in ``failed``
    and the next best is taken)."""
    while True:
        ok = [i for i in range(len(cands)) if i not in failed]
        if not ok:
            raise TrainingError("every kernel-weight candidate failed: " + "; ".join(
                f"{cands[i][0]}: {failed[i]}" for i in failed))
        winner = max(ok, key=lambda i: scores[i])
        best = kept.get(winner)
        if best is not None:
            return winner, best
        try:
            return winner, whole_graph_fit(*cands[winner])
        except FIT_ERRORS as exc:  # the next best candidate instead
            failed[winner] = "refit on the whole graph: " + failure_reason(exc)


def _same_params(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k], b[k]) if isinstance(a[k], (list, tuple, np.ndarray))
        else a[k] == b[k] for k in a)


def fit_chosen(model: Any, graph: Graph, labels: Any = None) -> Any:
    """``KernelNE.fit`` with ``beta_select="validation"``: choose, then copy the winner's
    fitted attributes into ``model`` and set ``beta_choice_``."""
    choice, best = choose_weights(model, graph, labels)
    for key, value in vars(best).items():
        if key.endswith("_") and not key.startswith("_"):
            setattr(model, key, value)
    model.beta_choice_ = choice
    return model


__all__ = ["BETA_SELECTS", "KernelChoice", "candidates", "choose_weights", "fit_chosen",
           "fixed_weights"]
