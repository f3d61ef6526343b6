"""``kernelne tune``: choose a method's settings on validation data cut from the training data.

Protocol (explicit, EvalNE-style):

* **With labels** (node classification): nodes in ``test_nodes`` (or a seeded ``holdout``
  fraction of the labelled nodes) are the test part. Their labels are dropped before the
  search starts and never read by it. Each trial fits the embedding on the whole graph
  (unsupervised, as in the evaluation protocol) and scores the mean Micro-F1 of
  ``val_repeats`` seeded 50/50 splits of the remaining labelled nodes (one-vs-rest logistic
  regression, top-k rule; its C chosen per split among 0.01-100 by 3-fold cross-validation on
  the split's training nodes, as ``kernelne evaluate classify --select-C`` does, or the
  paper's C = 1 with ``select_C=False``). Each trial also records its Micro-F1 with C = 1 on
  the same splits. After the search, the winner is refitted and, if there is a test part,
  scored once on it (classifier trained on all non-test labelled nodes, its C chosen the
  same way).
* **Without labels** (link prediction): the given graph is the training graph (e.g. the
  residual graph of a ``kernelne split`` folder; its held-out edges are never passed here).
  A validation split holds out ``val_fraction`` of its edges (residual kept connected, as many
  true non-edges); each trial fits on the validation residual graph and scores ROC-AUC
  (``weighted_l2`` operator). The winner is refitted on the whole given graph.

The search is Optuna's seeded TPE sampler over :data:`SEARCH_SPACES` (one function per method
that turns a trial into constructor parameters; edit them to widen the search). It runs in two
stages, so that a cheap search cannot pick a setting worse than the method's defaults:

1. **Search.** The method's documented defaults (:data:`DEFAULT_CANDIDATES`; for KernelNE the
   default Gauss, the default Schoenberg and MKernelNE "multi", each with the paper's squared
   loss and with the kernel log-likelihood, and Schoenberg with shrinking windows) are the
   first trials, enqueued in Optuna; TPE then searches (a parameter in ``fixed`` is held
   there, not searched). A trial may be cheap: ``search_walks`` walks per node and
   ``val_repeats`` validation splits.
2. **Finalists.** If the trials were cheap (``search_walks`` given), the ``finalists`` best
   trials by their cheap score *and every default* are refitted with the full settings (the
   walk count of ``fixed`` or the method's default) and re-scored on ``final_repeats``
   validation splits; without ``search_walks`` every trial is already scored that way. The
   winner has the best of these precise scores, so it is never worse on validation than the
   best default (ties go to the default, the earlier trial).

Every score carries its standard error: over the validation splits for classification (the
finalists share the splits, so the gap between two of them gets the paired standard error),
Hanley and McNeil's for the one ROC-AUC of link validation. :attr:`TuneResult.ranking` and
:meth:`TuneResult.summary` say whether the winner's lead over the runner-up exceeds twice the
gap's standard error ("the top two are within noise" otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from kernelne.engine.diagnostics import DegenerateEmbeddingWarning
from kernelne.errors import FIT_ERRORS, InputError, TrainingError, failure_reason
from kernelne.evaluation.validation import (  # noqa: F401 (kernelne.tune.search's API)
    _gap_se,
    _standard_error,
    auc_standard_error,
    held_out_edges,
    rank_finalists,
)
from kernelne.graphs.graph import Graph, load_graph

#: The subsampling thresholds KernelNE's search tries: off, or word2vec's range (log spaced).
SUBSAMPLE_CHOICES = [0.0, 1e-5, 1e-4, 1e-3]

#: What a trial's fit or its scoring may raise for its setting alone: the trial is recorded
#: as failed, with its reason, and the search goes on.
TRIAL_ERRORS = FIT_ERRORS

#: A score's C = 1 counterpart (with labels), carried by every trial and finalist.
_C1_KEYS = ("score_c1", "se_c1")


class _TrialFailed(Exception):
    """Raised from the objective after a trial's failure is recorded: Optuna marks the trial
    ``FAIL`` (``study.optimize(catch=...)``) and the search goes on."""


def _kernelne_space(trial) -> dict[str, Any]:
    kernel = trial.suggest_categorical("kernel", ["gauss", "schoenberg", "multi"])
    params: dict[str, Any] = {"kernel": kernel}
    if kernel == "gauss":
        params["sigma"] = trial.suggest_float("sigma", 0.25, 4.0, log=True)
    elif kernel == "schoenberg":
        params["alpha"] = trial.suggest_float("alpha", 0.5, 8.0, log=True)
    else:
        params["beta_update"] = trial.suggest_categorical("beta_update",
                                                          ["projected", "simplex"])
    params["negatives"] = trial.suggest_int("negatives", 1, 5)
    params["loss"] = trial.suggest_categorical("loss", ["squared", "loglik"])
    params["window"] = trial.suggest_int("window", 2, 10)
    params["window_shrink"] = trial.suggest_categorical("window_shrink", [False, True])
    params["subsample"] = trial.suggest_categorical("subsample", SUBSAMPLE_CHOICES)
    return params


SEARCH_SPACES: dict[str, Callable[[Any], dict[str, Any]]] = {
    "kernelne": _kernelne_space,
    "deepwalk": lambda t: {"window": t.suggest_int("window", 2, 10)},
    "node2vec": lambda t: {"p": t.suggest_float("p", 0.25, 4.0, log=True),
                           "q": t.suggest_float("q", 0.25, 4.0, log=True)},
    "line": lambda t: {"samples_per_arc": t.suggest_float("samples_per_arc", 50, 2000, log=True)},
    "hope": lambda t: {"beta_ratio": t.suggest_float("beta_ratio", 0.01, 0.95, log=True)},
    "netmf": lambda t: {"window": t.suggest_int("window", 1, 10)},
}


#: KernelNE's documented defaults, tried first by every KernelNE search: the three kernels with
#: the paper's squared loss and with the kernel log-likelihood (MKernelNE's weights then stay on
#: the simplex), and Schoenberg with shrinking windows, docs/QUALITY.md's setting for dense
#: graphs. Each dict holds the parameters that differ from the constructor's defaults
#: (every other parameter the search space suggests takes the constructor's default; a key the
#: search space does not suggest is passed to the constructor as it is). Adding a default to
#: try is one line here.
KERNELNE_DEFAULTS: tuple[dict[str, Any], ...] = (
    {"kernel": "gauss"},
    {"kernel": "schoenberg"},
    {"kernel": "multi"},
    {"kernel": "gauss", "loss": "loglik"},
    {"kernel": "schoenberg", "loss": "loglik"},
    {"kernel": "multi", "loss": "loglik"},
    {"kernel": "schoenberg", "window_shrink": True},
)

#: The settings each method's search tries first (its documented defaults).
DEFAULT_CANDIDATES: dict[str, tuple[dict[str, Any], ...]] = {
    "kernelne": KERNELNE_DEFAULTS,
    **{name: ({},) for name in ("deepwalk", "node2vec", "line", "hope", "netmf")},
}


class _DefaultsTrial:
    """Stands in for an Optuna trial: each suggestion is the value in ``values``."""

    def __init__(self, values: dict[str, Any]):
        self.values = values

    def _pick(self, name: str, *args, **kwargs) -> Any:
        return self.values[name]

    suggest_categorical = suggest_float = suggest_int = _pick


class _FixedTrial:
    """An Optuna trial whose suggestion of a parameter in ``fixed`` is that value: a fixed
    parameter is not searched (nor recorded by Optuna); the others are suggested by ``trial``."""

    def __init__(self, trial, fixed: dict[str, Any]):
        self.trial, self.fixed = trial, fixed

    def suggest_categorical(self, name: str, *args, **kwargs) -> Any:
        return self._pick("suggest_categorical", name, *args, **kwargs)

    def suggest_float(self, name: str, *args, **kwargs) -> Any:
        return self._pick("suggest_float", name, *args, **kwargs)

    def suggest_int(self, name: str, *args, **kwargs) -> Any:
        return self._pick("suggest_int", name, *args, **kwargs)

    def _pick(self, how: str, name: str, *args, **kwargs) -> Any:
        if name in self.fixed:
            return self.fixed[name]
        return getattr(self.trial, how)(name, *args, **kwargs)


def search_space(method: str, trial, fixed: dict[str, Any] | None = None) -> dict[str, Any]:
    """The constructor parameters :data:`SEARCH_SPACES` suggests for ``trial``, with every
    parameter in ``fixed`` held at its fixed value instead of searched."""
    return SEARCH_SPACES[method](_FixedTrial(trial, fixed) if fixed else trial)


def default_candidates(method: str, fixed: dict[str, Any] | None = None
                       ) -> list[dict[str, Any]]:
    """The method's defaults (:data:`DEFAULT_CANDIDATES`) that agree with ``fixed``: a default
    that sets a fixed parameter to another value is dropped (e.g. the ``loglik`` defaults under
    ``loss="squared"``), and one that ``fixed`` turns into an earlier one (``gauss`` under
    ``loss="loglik"`` is ``gauss,loglik``) is tried once, under the earlier name."""
    fixed = fixed or {}
    kept: list[dict[str, Any]] = []
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for c in DEFAULT_CANDIDATES.get(method, ()):
        if any(k in fixed and fixed[k] != v for k, v in c.items()):
            continue
        params = default_params(method, c, fixed)
        if params not in seen:
            kept.append(c)
            seen.append(params)
    return kept


def default_name(candidate: dict[str, Any]) -> str:
    """A default's short name: its values, a switch by its name (``"gauss,loglik"``,
    ``"schoenberg,window_shrink"``), or ``"default"``."""
    return ",".join(k if v is True else str(v) for k, v in candidate.items()) or "default"


def default_params(method: str, candidate: dict[str, Any],
                   fixed: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(search-space values, extra parameters)`` of a default: the values of the parameters
    :data:`SEARCH_SPACES` suggests (the candidate's, else the constructor's default under
    ``fixed``) and the candidate's other keys, passed to the constructor as they are."""
    values = {**make_estimator(method, {**(fixed or {}), **candidate}).get_params(), **candidate}
    space = search_space(method, _DefaultsTrial(values), fixed)
    return space, {k: v for k, v in candidate.items() if k not in space}


@dataclass
class TuneResult:
    """The search's outcome: ``best_params``, ``trials`` (one dict per trial, its search
    score), ``finals`` (the precise score of each finalist: the defaults and the best trials),
    the refitted ``model``, ``validation`` (what was scored and how), ``ranking`` (how sure
    the choice is, see :func:`rank_finalists`) and ``test_score`` (or None). ``best_score``
    and ``best_se`` are the winner's precise score and its standard error. With a test part,
    each finalist also carries the ``test_score`` of its own refit: read after the choice, to
    audit it (how far the winner is from the best default and from the best finalist on
    test), never to choose.

    With labels, ``select_C`` says whether the classifier's C was chosen per split (True) or
    held at 1 (False; None: link validation), ``chosen_by`` names the score the choice was
    made by, and every trial and finalist also carries ``score_c1`` and ``se_c1``, its score
    with C = 1 on the same splits (``best_score_c1``, ``best_se_c1`` and ``test_score_c1``:
    the winner's)."""

    method: str
    best_params: dict[str, Any]
    best_score: float
    metric: str
    trials: list[dict[str, Any]]
    model: Any
    validation: str
    test_score: float | None = None
    seconds: float = 0.0
    fixed: dict[str, Any] = field(default_factory=dict)
    finals: list[dict[str, Any]] = field(default_factory=list)
    ranking: dict[str, Any] = field(default_factory=dict)
    best_se: float | None = None
    select_C: bool | None = None
    chosen_by: str = ""
    best_score_c1: float | None = None
    best_se_c1: float | None = None
    test_score_c1: float | None = None

    def _rows(self) -> tuple[list[str], list[dict[str, Any]]]:
        """The columns and the rows (one per trial, raw values, by column) of the table and
        the CSV. ``state``: ``complete``, ``failed`` (the search's fit or its scoring failed)
        or ``finalist failed`` (its refit with the full settings failed); ``reason``: why.
        With labels, each score's C = 1 counterpart follows it (``micro_f1_c1``,
        ``se_c1``, ...). The searched parameters are the columns after ``reason``."""
        keys = sorted({k for t in self.trials for k in t["params"]})
        finals = {f["number"]: f for f in self.finals}
        m = self.metric
        c1 = self.select_C is not None
        head = ["trial", "default", "state", m, "se", *([m + "_c1", "se_c1"] if c1 else []),
                "splits", "walks", "seconds", "final_" + m, "final_se",
                *(["final_" + m + "_c1", "final_se_c1"] if c1 else []), "final_splits",
                "final_walks", "final_seconds", "test_" + m,
                *(["test_" + m + "_c1"] if c1 else []), "reason", *keys]
        rows = []
        for t in self.trials:
            f = finals.get(t["number"], {})
            state = t.get("state", "complete")
            if state == "complete" and f.get("state") == "failed":
                state = "finalist failed"
            rows.append({
                "trial": t["number"], "default": t.get("default", ""), "state": state,
                m: t["score"], "se": t.get("se"), "splits": t.get("splits"),
                "walks": t.get("walks"), "seconds": t["seconds"], "final_" + m: f.get("score"),
                "final_se": f.get("se"), "final_splits": f.get("splits"),
                "final_walks": f.get("walks"), "final_seconds": f.get("seconds"),
                "test_" + m: f.get("test_score"), "reason": t.get("reason") or f.get("reason"),
                m + "_c1": t.get("score_c1"), "se_c1": t.get("se_c1"),
                "final_" + m + "_c1": f.get("score_c1"), "final_se_c1": f.get("se_c1"),
                "test_" + m + "_c1": f.get("test_score_c1"),
                **{k: t["params"].get(k, "") for k in keys}})
        return head, rows

    def table(self) -> str:
        """The trials as an aligned text table, best first: the search's score ± its standard
        error and, for the finalists, the precise score (the one the winner is chosen by) and,
        with a test part, the test score of the audit. With C chosen per split, each score's
        C = 1 counterpart follows it (``C=1`` columns). A failed trial (last) shows
        ``failed`` for its score and its reason in the last column."""
        head, rows = self._rows()
        m = self.metric
        tested = any(r["test_" + m] is not None for r in rows)
        failed = any(r["reason"] for r in rows)
        c1 = bool(self.select_C)  # with C = 1 throughout the C = 1 columns repeat the scores
        keys = head[head.index("reason") + 1:]
        shown = ["trial", "default", m, "± se", *(["C=1"] if c1 else []), "walks", "final",
                 "± se", *(["final C=1"] if c1 else []), "final walks",
                 *(["test"] if tested else []), *(["test C=1"] if tested and c1 else []),
                 "seconds", *keys, *(["reason"] if failed else [])]

        def order(row):
            final, score = row["final_" + m], row[m]
            return (score is None, final is None, -(final if final is not None else score or 0),
                    -(score or 0))

        def score(value, state):
            return "failed" if value is None and state else "" if value is None else f"{value:.4f}"

        cells = [shown]
        for r in sorted(rows, key=order):
            seconds = r["seconds"] + (r["final_seconds"] or 0.0)  # the search's and the refit
            final_failed = "failed" if r["state"] == "finalist failed" else ""
            cells.append([str(r["trial"]), r["default"] or "",
                          score(r[m], r["state"] == "failed"), _fmt_se(r["se"]),
                          *([score(r[m + "_c1"], "")] if c1 else []),
                          "" if r["walks"] is None else str(r["walks"]),
                          score(r["final_" + m], final_failed), _fmt_se(r["final_se"]),
                          *([score(r["final_" + m + "_c1"], "")] if c1 else []),
                          "" if r["final_walks"] is None else str(r["final_walks"]),
                          *(["" if r["test_" + m] is None else _fmt(r["test_" + m])]
                            if tested else []),
                          *(["" if r["test_" + m + "_c1"] is None
                             else _fmt(r["test_" + m + "_c1"])] if tested and c1 else []),
                          f"{seconds:.1f}", *[_fmt(r[k]) for k in keys],
                          *([r["reason"] or ""] if failed else [])])
        widths = [max(len(r[i]) for r in cells) for i in range(len(shown))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                         for r in cells)

    def failures(self) -> list[dict[str, Any]]:
        """Every failed fit: ``trial``, ``default`` (its name, or None), ``stage``
        (``search``, ``finalist`` or ``refit``), ``params`` and ``reason``."""
        finals = {f["number"]: f for f in self.finals}
        out = []
        for t in self.trials:
            f = finals.get(t["number"], {})
            reason = t.get("reason") or f.get("reason")
            if not reason:
                continue
            stage = ("search" if t.get("reason") else
                     "refit" if reason.startswith("refit on the whole graph") else "finalist")
            out.append({"trial": t["number"], "default": t.get("default") or None,
                        "stage": stage, "params": t["params"], "reason": reason})
        return out

    def summary(self) -> str:
        """Lines saying how sure the choice is: the winner's precise score ± its standard
        error, with labels the score that drove the choice (``chosen by``: C chosen per split
        or C = 1) and the winner's C = 1 score, the runner-up's, whether the gap exceeds the
        noise, and the best default's; then one line per failed fit, with its reason."""
        names = {t["number"]: t.get("default") for t in self.trials}

        def who(number: int) -> str:
            name = names.get(number)
            return f"trial {number}" + (f" (default {name})" if name else "")

        lines = self._ranking_lines(who) if self.ranking else [
            f"best        {self.metric} {self.best_score:.4f}"]
        if self.chosen_by:
            c1 = ""
            if self.select_C and self.best_score_c1 is not None:
                c1 = (f" (the winner with C = 1: {self.best_score_c1:.4f} ± "
                      f"{_fmt_se(self.best_se_c1)})")
            lines.insert(1, f"chosen by   {self.chosen_by}{c1}")
        for f in self.failures():
            stage = {"search": "", "finalist": " as a finalist", "refit": ""}[f["stage"]]
            lines.append(f"failed      {who(f['trial'])}{stage}: {f['reason']}")
        return "\n".join(lines)

    def _ranking_lines(self, who: Callable[[int], str]) -> list[str]:
        rk, m = self.ranking, self.metric
        names = {t["number"]: t.get("default") for t in self.trials}
        lines = [f"winner      {who(rk['winner'])}: {m} {rk['score']:.4f} "
                 f"± {_fmt_se(rk['se'])} (standard error, {rk['splits']} validation "
                 f"split{'s' if rk['splits'] != 1 else ''}; {rk['finalists']} finalists)"]
        if "runner_up" in rk:
            lines.append(f"runner-up   {who(rk['runner_up'])}: {m} {rk['runner_up_score']:.4f} "
                         f"± {_fmt_se(rk['runner_up_se'])}")
            lines.append("ranking     " + _verdict(rk["gap"], rk["gap_se"], rk["paired"],
                                                   "the top two"))
        if rk.get("best_default") == rk.get("runner_up"):
            lines.append("vs default  the runner-up is the best default")
        elif "best_default" in rk and rk["best_default"] != rk["winner"]:
            lines.append(f"vs default  {who(rk['best_default'])}: {m} "
                         f"{rk['best_default_score']:.4f} ± {_fmt_se(rk['best_default_se'])}; "
                         + _verdict(rk["default_gap"], rk["default_gap_se"],
                                    rk["default_paired"], "the winner and the best default"))
        elif "best_default" in rk:
            lines.append("vs default  the winner is a default")
        tests = {f["number"]: f["test_score"] for f in self.finals
                 if f.get("test_score") is not None}
        if rk["winner"] in tests and len(tests) > 1:
            default = max((n for n in tests if names.get(n)), key=tests.get, default=None)
            best = max(tests, key=tests.get)
            parts = [f"the winner {tests[rk['winner']]:.4f}"]
            if default is not None:
                parts.append(f"the best default {names[default]} {tests[default]:.4f}")
            parts.append(f"the best of the {len(tests)} finalists {who(best)} "
                         f"{tests[best]:.4f}")
            lines.append("audit       test " + m + ": " + "; ".join(parts)
                         + " (each finalist's refit, read after the choice)")
        return lines

    def write_report(self, folder: str | Path, labels: Any = None) -> None:
        """``trials.csv``, ``best.json``, ``trials.png`` and, with ``labels``, ``map.png`` (a
        t-SNE map of the refitted embedding) in ``folder``."""
        import csv

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        head, rows = self._rows()
        with open(folder / "trials.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(head)
            for row in rows:
                w.writerow(["" if row[k] is None else row[k] for k in head])
        (folder / "best.json").write_text(json.dumps({
            "method": self.method, "best_trial": self.ranking.get("winner"),
            "best_params": self.best_params, "fixed": self.fixed,
            "validation_" + self.metric: self.best_score, "validation_se": self.best_se,
            **({"validation_" + self.metric + "_c1": self.best_score_c1,
                "validation_se_c1": self.best_se_c1, "select_C": self.select_C,
                "chosen_by": self.chosen_by} if self.select_C is not None else {}),
            "validation": self.validation, "ranking": self.ranking,
            "test_score": self.test_score,
            **({"test_score_c1": self.test_score_c1} if self.select_C is not None else {}),
            "trials": len(self.trials),
            "failed": self.failures()}, indent=2) + "\n", encoding="utf-8")
        plot_trials(self, folder / "trials.png")
        if labels is not None:
            from kernelne.evaluation.plot import plot_embedding

            plot_embedding(self.model, labels, folder / "map.png", method="tsne", sample=5000,
                           title=f"{self.method} {json.dumps(self.best_params)}")


def _fmt_se(se: float | None) -> str:
    return "-" if se is None else f"{se:.4f}"


def _verdict(gap: float, se: float | None, paired: bool, who: str) -> str:
    """``gap`` against its standard error, in words."""
    if se is None:
        return f"gap {gap:.4f} (its noise is unknown: one validation split)"
    how = "paired over the same splits" if paired else "unpaired"
    if gap <= 2 * se:
        return f"gap {gap:.4f}, standard error {se:.4f} ({how}): {who} are within noise"
    if se < 1e-12:
        return f"gap {gap:.4f}, standard error 0 ({how}): the lead is beyond noise"
    return (f"gap {gap:.4f}, standard error {se:.4f} ({how}): the lead is "
            f"{gap / se:.1f} standard errors")


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def plot_trials(result: TuneResult, path: str | Path) -> None:
    """Optimisation history and score against each numeric parameter (the trials with a
    score: a failed one has none)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trials = [t for t in result.trials if t.get("score") is not None]
    numeric = sorted({k for t in trials for k, v in t["params"].items()
                      if isinstance(v, (int, float)) and not isinstance(v, bool)})
    fig, axes = plt.subplots(1, 1 + len(numeric), figsize=(4.2 * (1 + len(numeric)), 3.6),
                             squeeze=False)
    ax = axes[0, 0]
    scores = [t["score"] for t in trials]
    numbers = [t["number"] for t in trials]  # from 1, as in the table
    ses = [t.get("se") or 0.0 for t in trials]
    ax.errorbar(numbers, scores, yerr=ses, fmt="o", ms=4, label="trial (± se)")
    ax.plot(numbers, np.maximum.accumulate(scores), "-", label="best so far")
    defaults = [i for i, t in enumerate(trials) if t.get("default")]
    if defaults:
        ax.plot([numbers[i] for i in defaults], [scores[i] for i in defaults], "s", mfc="none",
                ms=9, color="C2", label="default")
    finals = [f for f in result.finals if f["number"] in set(numbers) and f.get("seconds")
              and f.get("score") is not None]
    if finals:  # re-scored finalists: their precise score beside their search score
        ax.errorbar([f["number"] for f in finals], [f["score"] for f in finals],
                    yerr=[f.get("se") or 0.0 for f in finals], fmt="D", ms=5, color="C3",
                    label="finalist, re-scored")
    ax.set_xlabel("trial")
    ax.set_ylabel(f"validation {result.metric}")
    ax.set_title(f"{result.method}: history")
    ax.legend(fontsize=8)
    groups = sorted({str(t["params"].get("kernel", "")) for t in trials})
    for ax, key in zip(axes[0, 1:], numeric, strict=True):
        for i, grp in enumerate(groups):
            pts = [(t["params"][key], t["score"]) for t in trials
                   if key in t["params"] and str(t["params"].get("kernel", "")) == grp]
            if pts:
                x, y = zip(*pts, strict=True)
                ax.plot(x, y, "o", color=f"C{i}", label=grp or None)
        ax.set_xlabel(key)
        if key in ("sigma", "alpha", "p", "q", "samples_per_arc", "beta_ratio"):
            ax.set_xscale("log")
        elif key == "subsample":  # 0 (off) beside 1e-5..1e-3
            ax.set_xscale("symlog", linthresh=1e-5)
        ax.set_title(f"{result.metric} vs {key}")
        if groups != [""]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def make_estimator(method: str, params: dict[str, Any]):
    """A fresh estimator of ``method`` with ``params``."""
    if method == "kernelne":
        from kernelne.model.kernelne import KernelNE

        return KernelNE(**{"setting": "given", **params})  # each candidate as it is named
    from kernelne.baselines import make_method

    return make_method(method, ignore_unknown=True, **params)


def _labels_of(labels: Any) -> tuple[np.ndarray, sp.csr_matrix]:
    from kernelne.evaluation.classification import read_node_labels

    if isinstance(labels, (str, Path)):
        return read_node_labels(labels)
    nodes, Y = labels
    return np.asarray(nodes), sp.csr_matrix(Y)


def _holdout(nodes: np.ndarray, test_nodes: Sequence | None, holdout: float | None,
             seed: int) -> np.ndarray:
    """Boolean mask over ``nodes``: True for the test part."""
    if test_nodes is not None:
        wanted = {str(x) for x in test_nodes}
        return np.array([str(x) in wanted for x in nodes])
    mask = np.zeros(len(nodes), dtype=bool)
    if holdout is not None:
        rng = np.random.default_rng(seed)
        mask[rng.permutation(len(nodes))[: int(round(holdout * len(nodes)))]] = True
    return mask


def _check_search(method: str, trials: int, timeout: float | None, test_nodes, holdout,
                  val_fraction: float, val_repeats: int, search_walks: int | None,
                  finalists: int = 3, final_repeats: int = 10) -> None:
    """The search's own settings, checked before anything is read."""
    if method not in SEARCH_SPACES:
        raise InputError(f"unknown method {method!r} (use one of: {', '.join(SEARCH_SPACES)})")
    if int(trials) < 1:
        raise InputError(f"trials must be at least 1, got {trials}")
    if timeout is not None and not timeout > 0:
        raise InputError(f"timeout must be a positive number of seconds, got {timeout}")
    if holdout is not None and not 0 < holdout < 1:
        raise InputError(f"holdout must lie strictly between 0 and 1, got {holdout}")
    if holdout is not None and test_nodes is not None:
        raise InputError("give the test nodes or a holdout fraction, not both")
    if not 0 < val_fraction < 1:
        raise InputError(f"val_fraction must lie strictly between 0 and 1, got {val_fraction}")
    if int(val_repeats) < 1:
        raise InputError(f"val_repeats must be at least 1, got {val_repeats}")
    if search_walks is not None and int(search_walks) < 1:
        raise InputError(f"search_walks must be at least 1, got {search_walks}")
    if int(finalists) < 1:
        raise InputError(f"finalists must be at least 1, got {finalists}")
    if int(final_repeats) < 1:
        raise InputError(f"final_repeats must be at least 1, got {final_repeats}")


_COUNTS = ("dim", "walks_per_node", "walk_length", "window", "epochs")


def check_settings(method: str, params: dict[str, Any], n_nodes: int | None = None) -> None:
    """Raise :class:`InputError` if ``method`` cannot fit with ``params`` (e.g. the fixed ones
    and the method's defaults), so that a bad setting fails before the first trial rather
    than inside every one. ``n_nodes``: also check what depends on the graph's size."""
    from kernelne.parallel import resolve_workers

    try:
        est = make_estimator(method, params)
        got = est.get_params()
        for name in _COUNTS:
            if name in got and got[name] is not None and int(got[name]) < 1:
                raise ValueError(f"{name} must be at least 1, got {got[name]}")
        if "workers" in got:
            resolve_workers(got["workers"])
        check = getattr(est, "_check_params", None)
        if check is not None:
            check()
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None
    dim = int(got.get("dim") or 0)
    if method == "hope" and dim % 2:
        raise InputError(f"HOPE needs an even dim (d/2 source + d/2 target), got {dim}")
    if n_nodes is None:
        return
    if method == "hope" and dim // 2 >= n_nodes:
        raise InputError(f"HOPE's dim/2 = {dim // 2} must be smaller than the number of nodes "
                         f"({n_nodes:,}): choose a smaller dim")
    if method == "netmf" and dim >= n_nodes:
        raise InputError(f"NetMF's dim = {dim} must be smaller than the number of nodes "
                         f"({n_nodes:,}): choose a smaller dim")


def _check_labels(g: Graph, label_nodes: np.ndarray, Y: sp.csr_matrix, test_mask: np.ndarray,
                  test_nodes: Sequence | None, source: Any) -> None:
    """The labels can be validated on: nodes of the graph, two classes among the training
    nodes, and a test part that exists when test nodes were named."""
    path = source if isinstance(source, (str, Path)) else None
    known = {str(x) for x in g.nodes}
    missing = [x for x in label_nodes if str(x) not in known]
    if missing:
        shown = ", ".join(str(x) for x in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise InputError(f"{len(missing):,} labelled node(s) are not nodes of the graph: "
                         f"{shown}{more}", path)
    if test_nodes is not None and not test_mask.any():
        raise InputError(f"none of the {len(test_nodes):,} test nodes is a labelled node")
    train = Y[~test_mask]
    if int(train.shape[0]) < 4:
        raise InputError(f"too few labelled training nodes to validate on "
                         f"({int(train.shape[0])}; at least 4)", path)
    classes = int((np.asarray(train.sum(axis=0)).ravel() > 0).sum())
    if classes < 2:
        raise InputError(f"the {int(train.shape[0]):,} labelled training nodes all have the same "
                         "label: classification needs at least two", path)


def tune(
    graph: Any,
    labels: Any = None,
    *,
    method: str = "kernelne",
    trials: int = 20,
    timeout: float | None = None,
    seed: int = 0,
    test_nodes: Sequence | None = None,
    holdout: float | None = None,
    val_fraction: float = 0.2,
    val_repeats: int = 2,
    search_walks: int | None = None,
    finalists: int = 3,
    final_repeats: int = 10,
    fixed: dict[str, Any] | None = None,
    select_C: bool = True,
    progress: bool = True,
) -> TuneResult:
    """Search ``method``'s settings (:data:`SEARCH_SPACES`) on validation data, then refit.

    With labels, each trial is scored by the Micro-F1 of seeded 50/50 splits of the labelled
    non-test nodes (the classifier's C chosen per split, see ``select_C``); without labels, by
    the ROC-AUC of links held out of ``graph``. The search is Optuna's seeded TPE sampler;
    the protocol is described in :mod:`kernelne.tune.search`.

    Parameters
    ----------
    graph : Graph, path, networkx graph or sparse matrix
        The training graph (any source :func:`kernelne.load_graph` takes).
    labels : str, Path or tuple, optional
        A label file or ``(node ids, n x K indicator)``; without labels the search validates
        on held-out links.
    method : str, default "kernelne"
        ``"kernelne"`` or a baseline: ``"deepwalk"``, ``"node2vec"``, ``"line"``, ``"hope"``,
        ``"netmf"``.
    trials : int, default 20
        Trials in all. The method's defaults (:data:`DEFAULT_CANDIDATES`) are the first
        trials and count in ``trials`` (all of them run, even past ``timeout``).
    timeout : float, optional
        Seconds after which no further search trial starts.
    seed : int, default 0
        Seed of the sampler, the splits, the holdout and every fit (``random_state``).
    test_nodes : sequence, optional
        The test part of the labelled nodes, by node id: never read by the search.
    holdout : float, optional
        Instead of ``test_nodes``: a seeded fraction in ``(0, 1)`` of the labelled nodes held
        out as the test part.
    val_fraction : float, default 0.2
        Without labels: the fraction of the edges held out as validation links.
    val_repeats : int, default 2
        Validation splits of a cheap trial (one with ``search_walks``).
    search_walks : int, optional
        Walks per node during the search only; the ``finalists`` best trials and the
        defaults are then refitted with the full walk count and re-scored on
        ``final_repeats`` validation splits, and the best of these precise scores wins.
        Without ``search_walks`` every trial is scored on ``final_repeats`` splits at once.
    finalists : int, default 3
        Best cheap trials refitted and re-scored (with ``search_walks``).
    final_repeats : int, default 10
        Validation splits of a precise score.
    fixed : dict, optional
        Parameters every fit gets (e.g. ``{"dim": 64, "workers": 2}``); a fixed parameter of
        the search space is not searched (``{"loss": "squared"}`` searches the paper's loss
        only) and the defaults that set it to another value are not tried
        (:func:`default_candidates`).
    select_C : bool, default True
        With labels: choose the classifier's C per validation split among
        :data:`~kernelne.evaluation.classification.SELECT_CS` (0.01 to 100) by 3-fold
        cross-validation on that split's training nodes only, as ``kernelne evaluate
        classify --select-C`` does, and choose the settings by that Micro-F1; the test score
        chooses its C the same way on all non-test labelled nodes. Every trial and finalist
        also records its Micro-F1 with C = 1 on the same splits (``score_c1``). False: the
        paper's C = 1 throughout (the choice is then made by the C = 1 score). Ignored
        without labels.
    progress : bool, default True
        Print one line per trial (and the refit) to standard error.

    Returns
    -------
    TuneResult
        ``best_params``, ``best_score`` and ``best_se``, every trial and finalist, the
        refitted ``model``, ``validation`` (what was scored and how), ``chosen_by`` (the
        score the choice was made by), ``ranking`` and the ``test_score`` (None without a
        test part); with labels also the winner's C = 1 scores (``best_score_c1``,
        ``test_score_c1``).

    Raises
    ------
    InputError
        An unknown method, a setting out of range, test nodes or a holdout without labels,
        or labels that cannot be validated on (nodes not in the graph, too few labelled
        training nodes, a single label); or every trial failed on a setting the method
        refuses.
    TrainingError
        Every trial (or every finalist) failed; the message names each setting and its
        reason.

    Notes
    -----
    Trials are numbered from 1 (``trials[i]["number"]``, the ranking, the table). A fit that
    raises one of :data:`~kernelne.errors.FIT_ERRORS` (diverged rows, a refused combination,
    out of memory) is a failed trial: Optuna records it as ``FAIL``, the trial keeps
    ``state="failed"`` and its ``reason``, and the search goes on; a finalist whose refit
    fails is left out of the choice the same way, and a winner whose refit on the whole graph
    fails gives way to the next best.

    Examples
    --------
    >>> from kernelne import load_dataset, tune
    >>> cora = load_dataset("cora")  # doctest: +SKIP
    >>> result = tune(cora.graph, (cora.graph.nodes, cora.labels), trials=10,
    ...               holdout=0.2, fixed={"workers": 1})  # doctest: +SKIP
    >>> print(result.summary())  # doctest: +SKIP
    """
    import optuna

    from kernelne.evaluation import (
        evaluate_link_prediction,
        evaluate_node_classification,
    )
    from kernelne.evaluation.classification import SELECT_CS

    _check_search(method, trials, timeout, test_nodes, holdout, val_fraction, val_repeats,
                  search_walks, finalists, final_repeats)
    fixed = {"random_state": seed, **(fixed or {})}
    search_fixed = dict(fixed)
    if search_walks is not None and method in ("kernelne", "deepwalk", "node2vec"):
        search_fixed["walks_per_node"] = int(search_walks)
    check_settings(method, search_fixed)
    check_settings(method, fixed)
    candidates = default_candidates(method, fixed)
    defaults = [default_params(method, c, fixed) for c in candidates]
    for space, extra in defaults:
        check_settings(method, {**fixed, **space, **extra})
    if labels is None and (test_nodes is not None or holdout is not None):
        raise InputError("test nodes and a holdout fraction need labels")
    if labels is not None:
        label_nodes, Y = _labels_of(labels)
    g: Graph = load_graph(graph)
    check_settings(method, fixed, g.n_nodes)
    start = time.perf_counter()
    # Cheap trials (fewer walks) are re-scored as finalists; full ones are precise at once.
    staged = search_fixed != fixed
    search_repeats = int(val_repeats) if staged else int(final_repeats)
    test_mask = None
    c_chosen = bool(select_C) if labels is not None else None
    if labels is not None:
        test_mask = _holdout(label_nodes, test_nodes, holdout, seed)
        _check_labels(g, label_nodes, Y, test_mask, test_nodes, labels)
        train_nodes, Y_train = label_nodes[~test_mask], Y[~test_mask]
        metric = "micro_f1"
        chosen_by = "validation Micro-F1, " + _classifier_C(select_C)
        validation = (f"Micro-F1 of seeded 50/50 splits of the {len(train_nodes):,} labelled "
                      f"non-test nodes ({int(test_mask.sum()):,} test nodes never read): "
                      + (f"{val_repeats} per search trial, {final_repeats} per finalist"
                         if staged else f"{final_repeats} per trial") + "; "
                      + _classifier_C(select_C)
                      + ("; the C = 1 score on the same splits recorded beside it"
                         if select_C else ""))
        fit_graph = g

        def classify(model, repeats: int, Cs: Sequence[float] | None
                     ) -> tuple[float, list[float]]:
            table = evaluate_node_classification(
                (model.embedding_, model.nodes_), Y_train, train_nodes, ratios=[0.5],
                repeats=repeats, seed=seed, n_jobs=1, select_C=Cs)
            values = list(getattr(table, "per_split", {}).get(("0.5", "micro_f1"), []))
            return float(table.value("micro_f1")), values

        def validate(model, repeats: int) -> dict[str, Any]:
            score, values = classify(model, repeats, SELECT_CS if select_C else None)
            c1, c1_values = classify(model, repeats, None) if select_C else (score, values)
            return {"score": score, "se": _standard_error(values), "splits": repeats,
                    "values": values, "score_c1": c1, "se_c1": _standard_error(c1_values)}
    else:
        split, fit_graph, n_pos, n_neg = held_out_edges(g, val_fraction, seed)
        metric = "roc_auc"
        chosen_by = ""
        validation = (f"ROC-AUC on {len(split.test_edges):,} validation edges held out of the "
                      f"given graph (and as many non-edges), fitted on the rest; standard "
                      f"error by Hanley and McNeil")

        def validate(model, repeats: int) -> dict[str, Any]:
            auc = float(evaluate_link_prediction((model.embedding_, model.nodes_), split
                                                 ).value("roc_auc"))
            return {"score": auc, "se": auc_standard_error(auc, n_pos, n_neg),
                    "splits": 1, "values": []}

    def test(model) -> dict[str, float | None]:
        """The test scores (``test_score``, ``test_score_c1``) of a model fitted with the
        full settings (None without a test part): recorded to audit the choice after it is
        made, never read by it."""
        if test_mask is None or not test_mask.any():
            return {"test_score": None, "test_score_c1": None}
        chosen, c1 = _test_scores(model, label_nodes, Y, test_mask, select_C, seed)
        return {"test_score": chosen, "test_score_c1": c1}

    def fit(params: dict[str, Any], base: dict[str, Any]):
        with warnings.catch_warnings():  # a collapsed trial simply scores low
            warnings.simplefilter("ignore", DegenerateEmbeddingWarning)
            return make_estimator(method, {**base, **params}).fit(fit_graph)

    def walks(params: dict[str, Any], base: dict[str, Any]) -> int | None:
        return make_estimator(method, {**base, **params}).get_params().get("walks_per_node")

    records: list[dict[str, Any]] = []
    names: dict[int, str] = {}  # trial number (from 1) -> default name
    # the best model fitted with the full settings on the whole graph (classification): the
    # winner's, so that it need not be refitted
    kept: dict[str, Any] = {"score": -np.inf, "number": None, "model": None}
    total = max(int(trials), len(defaults))

    def keep(number: int, score: float, model) -> None:
        if labels is not None and score > kept["score"]:
            kept.update(score=score, number=number, model=model)

    def objective(trial) -> float:
        number = trial.number + 1  # trials are numbered from 1 everywhere they are shown
        params = search_space(method, trial, fixed)
        which = trial.user_attrs.get("default")
        if which is not None:
            params.update(defaults[which][1])
            names[number] = default_name(candidates[which])
        record: dict[str, Any] = {"number": number, "default": names.get(number, ""),
                                  "params": params, "state": "complete"}
        records.append(record)
        t0 = time.perf_counter()
        try:
            model = fit(params, search_fixed)
            got = validate(model, search_repeats)
            tested = {} if staged else test(model)
        except TRIAL_ERRORS as exc:
            record.update(state="failed", reason=failure_reason(exc),
                          input_error=_is_input(exc), score=None, se=None,
                          splits=None, values=[], walks=walks(params, search_fixed),
                          seconds=time.perf_counter() - t0)
            if progress:
                _progress_failed(f"trial {number}/{total}", names.get(number), params,
                                 record["reason"])
            raise _TrialFailed(record["reason"]) from None
        record.update(**got, walks=walks(params, search_fixed),
                      seconds=time.perf_counter() - t0)
        if not staged:
            keep(number, got["score"], model)
            record.update(tested)
        del model
        if progress:
            best = max(r["score"] for r in records if r["state"] == "complete")
            tag = f" (default {names[number]})" if number in names else ""
            print(f"kernelne tune: trial {number}/{total}{tag}  {metric} "
                  f"{got['score']:.4f} ± {_fmt_se(got['se'])}{_c1_note(got, c_chosen)}  "
                  f"(best {best:.4f})  "
                  f"{json.dumps(params)}", file=sys.stderr, flush=True)
        return got["score"]

    # A failed fit is recorded (Optuna's state FAIL) and the search goes on; an interrupted
    # trial is re-raised to the caller, who reports it: Optuna's own "Trial failed" warning
    # and traceback would only repeat either.
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        study = optuna.create_study(direction="maximize",
                                    sampler=optuna.samplers.TPESampler(seed=seed))
        for i, (space, _) in enumerate(defaults):
            study.enqueue_trial({k: v for k, v in space.items() if k not in fixed},
                                user_attrs={"default": i})
        first = max(len(defaults), 1)  # the defaults (or one trial), whatever the timeout
        _optimize(study, objective, n_trials=first)
        if total > first:
            left = None if timeout is None else timeout - (time.perf_counter() - start)
            if left is None or left > 0:
                _optimize(study, objective, n_trials=total - first, timeout=left)
    finally:
        optuna.logging.set_verbosity(verbosity)

    done = [r for r in records if r["state"] == "complete"]
    if not done:
        raise _every_fit_failed("trial", records, names, records)
    if staged:
        finals = _rescore_finalists(done, names, finalists, final_repeats, fit, validate,
                                    walks, fixed, keep, test, metric, progress, c_chosen)
    else:
        finals = [{"number": r["number"], "score": r["score"], "se": r["se"],
                   "splits": r["splits"], "values": r["values"], "walks": r["walks"],
                   "seconds": 0.0, **{k: r.get(k) for k in _C1_KEYS},
                   "test_score": r["test_score"], "test_score_c1": r.get("test_score_c1")}
                  for r in done]
    while True:
        scored = [f for f in finals if f.get("state") != "failed"]
        if not scored:
            raise _every_fit_failed("finalist", finals, names, records)
        win = max(scored, key=lambda f: f["score"])  # the first best: ties go to the defaults
        best = next(r for r in records if r["number"] == win["number"])
        if kept["number"] == win["number"]:
            model = kept["model"]  # fitted with the full settings on the whole graph already
            break
        if progress:
            print("kernelne tune: refitting the best settings on the whole graph",
                  file=sys.stderr, flush=True)
        try:
            model = make_estimator(method, {**fixed, **best["params"]}).fit(g)
            break
        except TRIAL_ERRORS as exc:  # the next best finalist is refitted instead
            win.update(state="failed", input_error=_is_input(exc),
                       reason="refit on the whole graph: " + failure_reason(exc))
            if progress:
                _progress_failed(f"refit of trial {win['number']}", names.get(win["number"]),
                                 best["params"], win["reason"])
    kept.clear()
    test_score = win["test_score"]  # taken on the winner's finalist fit, which is the model
    return TuneResult(method, best["params"], win["score"], metric, records, model,
                      validation, test_score, time.perf_counter() - start, fixed,
                      finals=finals, ranking=rank_finalists(scored, names), best_se=win["se"],
                      select_C=c_chosen, chosen_by=chosen_by,
                      best_score_c1=win.get("score_c1"), best_se_c1=win.get("se_c1"),
                      test_score_c1=win.get("test_score_c1"))


def _classifier_C(select_C: bool) -> str:
    """How the validation classifier's C is set, in words."""
    from kernelne.evaluation.classification import SELECT_CS

    if select_C:
        return (f"C chosen per split among {min(SELECT_CS):g}-{max(SELECT_CS):g} by 3-fold CV "
                "on each split's training nodes")
    return "classifier C = 1 (the paper's)"


def _progress_failed(what: str, name: str | None, params: dict[str, Any], reason: str) -> None:
    tag = f" (default {name})" if name else ""
    print(f"kernelne tune: {what}{tag}  failed: {reason}  {json.dumps(params)}",
          file=sys.stderr, flush=True)


def _setting(number: int, names: dict[int, str], params: dict[str, Any] | None) -> str:
    """A trial's setting in a message: its default's name, else its parameters."""
    name = names.get(number)
    return f"trial {number} ({name if name else json.dumps(params)})"


def _every_fit_failed(stage: str, failed: list[dict[str, Any]], names: dict[int, str],
                      records: list[dict[str, Any]]) -> Exception:
    """The error when every trial (or finalist) failed, naming each setting (``records``:
    the trials, for their parameters) and its reason: :class:`InputError` if every reason is
    a setting the method refuses, else :class:`TrainingError`."""
    params = {r["number"]: r["params"] for r in records}
    parts = [f"{_setting(r['number'], names, params[r['number']])}: {r['reason']}"
             for r in failed]
    text = f"every {stage} failed: " + "; ".join(parts)
    if all(r.get("input_error") for r in failed):
        return InputError(text)
    return TrainingError(text)


def _optimize(study, objective, **kwargs) -> None:
    """``study.optimize``, with a Ctrl-C that lands while Optuna records a finished trial
    raised as the :class:`KeyboardInterrupt` it is: Optuna (5.0) then fails in its own
    ``finally`` clause with an ``UnboundLocalError`` (``updated_state``) instead. A failed
    trial (:class:`_TrialFailed`) is recorded as ``FAIL`` and the search goes on."""
    try:
        study.optimize(objective, catch=(_TrialFailed,), **kwargs)
    except UnboundLocalError as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise


def _rescore_finalists(records, names, finalists, final_repeats, fit, validate, walks, fixed,
                       keep, test, metric, progress, select_C=None
                       ) -> list[dict[str, Any]]:
    """Refit the ``finalists`` best trials and every default with the full settings
    (``fixed``) and score each on ``final_repeats`` validation splits, in trial order (and,
    with a test part, on it: ``test``, for the audit; it returns the finalist's
    ``test_score`` and ``test_score_c1``). ``records``: the completed trials. A finalist
    whose refit fails is kept with ``state`` ``"failed"`` and its ``reason``. ``select_C``:
    the scores had their C chosen (the progress lines then show the C = 1 score too)."""
    top = sorted(records, key=lambda r: -r["score"])[:int(finalists)]
    chosen = {r["number"] for r in top} | set(names)
    pool = [r for r in records if r["number"] in chosen]
    if progress:
        print(f"kernelne tune: re-scoring {len(pool)} finalists (the {min(finalists, len(records))}"
              f" best trials and the defaults) with the full settings on {final_repeats} "
              f"validation splits", file=sys.stderr, flush=True)
    finals = []
    for i, r in enumerate(pool):
        t0 = time.perf_counter()
        what = f"finalist {i + 1}/{len(pool)}: trial {r['number']}"
        try:
            model = fit(r["params"], fixed)
            got = validate(model, final_repeats)
            tested = test(model)
        except TRIAL_ERRORS as exc:
            finals.append({"number": r["number"], "state": "failed",
                           "reason": failure_reason(exc), "input_error": _is_input(exc),
                           "score": None, "se": None, "splits": None, "values": [],
                           "walks": walks(r["params"], fixed), "test_score": None,
                           "seconds": time.perf_counter() - t0})
            if progress:
                _progress_failed(what, names.get(r["number"]), r["params"],
                                 finals[-1]["reason"])
            continue
        finals.append({"number": r["number"], **got, "walks": walks(r["params"], fixed),
                       "seconds": time.perf_counter() - t0, **tested})
        keep(r["number"], got["score"], model)
        del model
        if progress:
            tag = f" (default {names[r['number']]})" if r["number"] in names else ""
            print(f"kernelne tune: {what}{tag}  {metric} {got['score']:.4f} ± "
                  f"{_fmt_se(got['se'])}{_c1_note(got, select_C)}  (search {r['score']:.4f})",
                  file=sys.stderr, flush=True)
    return finals


def _is_input(exc: BaseException) -> bool:
    """Whether a fit's failure is a setting the method refuses (not a training failure)."""
    return isinstance(exc, ValueError) and not isinstance(exc, ArithmeticError)


def _c1_note(got: dict[str, Any], select_C: bool | None) -> str:
    """A progress line's C = 1 score, when the score beside it had its C chosen."""
    return f" (C = 1: {got['score_c1']:.4f})" if select_C else ""


def _test_scores(model, nodes: np.ndarray, Y: sp.csr_matrix, test_mask: np.ndarray,
                 select_C: bool, seed: int) -> tuple[float, float]:
    """Micro-F1 on the test nodes of a classifier trained on all other labelled nodes: with
    C chosen among :data:`~kernelne.evaluation.classification.SELECT_CS` by 3-fold
    cross-validation on those nodes (``select_C``; else C = 1), and with C = 1."""
    from sklearn.metrics import f1_score
    from sklearn.multiclass import OneVsRestClassifier

    from kernelne.evaluation.classification import (
        SELECT_CS,
        choose_C,
        default_classifier,
        top_k_predictions,
    )
    from kernelne.evaluation.embeddings import embedding_rows

    X = model.embedding_[embedding_rows(model.nodes_, nodes)]
    dense = Y.toarray().astype(int)
    X_train, Y_train = X[~test_mask], dense[~test_mask]

    def score(C: float) -> float:
        clf = OneVsRestClassifier(default_classifier(C)).fit(X_train, Y_train)
        pred = top_k_predictions(clf.predict_proba(X[test_mask]),
                                 dense[test_mask].sum(axis=1))
        return float(f1_score(dense[test_mask], pred, average="micro"))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a label absent from a small fold
        c1 = score(1.0)
        if not select_C:
            return c1, c1
        C = choose_C(X_train, Y_train, default_classifier(), SELECT_CS, "top-k", seed)
        return (c1 if C == 1.0 else score(C)), c1


def write_outputs(result: TuneResult, output: str | Path, report: str | Path | None,
                  labels: Any = None) -> None:
    """Write the embedding and, if asked, the report folder: all of them or none.

    The report (the part that can fail: its plots) is drawn in a temporary folder first, then
    the embedding is written, then the report's files are moved into place. On any failure
    nothing new is left behind.
    """
    import shutil
    import tempfile

    from kernelne.embedding_io import nodes_sidecar, save_embedding
    from kernelne.outputs import remove_stale_temporaries

    output = Path(output)
    written: list[Path] = []
    staging = None
    try:
        if report is not None:
            report = Path(report)
            where = report if report.is_dir() else report.parent
            remove_stale_temporaries(where / report.name)  # staging folders of killed runs
            staging = Path(tempfile.mkdtemp(dir=where, suffix=".tmp",
                                            prefix=f".{report.name}.{os.getpid()}."))
            result.write_report(staging, labels)
        existed = {p: p.exists() for p in (output, nodes_sidecar(output))}
        save_embedding(output, result.model.embedding_, result.model.nodes_)
        written = [p for p, was in existed.items() if not was and p.exists()]
        if staging is not None:
            if report.is_dir():
                for item in staging.iterdir():
                    os.replace(item, report / item.name)
            else:
                os.rename(staging, report)
    except BaseException:
        for path in written:
            path.unlink(missing_ok=True)
        raise
    finally:
        if staging is not None and staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def parse_fixed(method: str, items: Sequence[str]) -> dict[str, Any]:
    """``--fix NAME=VALUE`` options as constructor parameters of ``method``: the value is read
    as the parameter's default's type (``true``/``false`` for a flag; a number, ``null`` or a
    JSON list where JSON reads one; a word as it is)."""
    known = make_estimator(method, {}).get_params()
    fixed: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name, text = name.strip().replace("-", "_"), text.strip()
        if not sep or not name or not text:
            raise InputError(f"--fix takes NAME=VALUE (e.g. loss=squared), got {item!r}")
        if name not in known:
            raise InputError(f"--fix {item}: {method} has no parameter {name!r} (it has: "
                             f"{', '.join(sorted(known))})")
        if name == "partition_dir" and text.lower() not in ("null", "none"):
            raise InputError(f"--fix {item}: every trial (and the refit) would share one "
                             "partition folder, and all but the first would be refused as "
                             "another fit's: leave partition_dir out (each partitioned trial "
                             "gets a temporary folder of its own)")
        default = known[name]
        if isinstance(default, (bool, np.bool_)):
            flags = {"true": True, "1": True, "yes": True, "false": False, "0": False,
                     "no": False}
            if text.lower() not in flags:
                raise InputError(f"--fix {item}: {name} is true or false")
            value: Any = flags[text.lower()]
        else:
            try:
                value = json.loads(text)
            except ValueError:
                value = text
            if isinstance(default, float) and isinstance(value, int) \
                    and not isinstance(value, bool):
                value = float(value)
        if name in fixed and fixed[name] != value:
            raise InputError(f"--fix {name} given twice ({json.dumps(fixed[name])}, then "
                             f"{json.dumps(value)}): give it once")
        fixed[name] = value
    return fixed


def cmd_tune(args) -> int:
    """``kernelne tune``: search, refit, write the embedding and the report."""
    from kernelne.embedding_io import check_embedding_output
    from kernelne.graphs.graph import iter_records
    from kernelne.outputs import check_output_path

    inputs = [args.graph, args.labels, args.test_nodes]
    check_embedding_output(args.output, inputs)
    report = args.report_dir
    if report:
        check_output_path(report, inputs, folder=True, companions=[
            (Path(report) / name, f"written by tune into --report-dir {report}")
            for name in ("trials.csv", "best.json", "trials.png", "map.png")])
        if os.path.realpath(report) == os.path.realpath(args.output):
            raise InputError("--report-dir is the embedding output (-o): choose another "
                             "folder", report)
    if getattr(args, "finalists_given", False) and args.search_walks is None:
        raise InputError("--finalists only matters with --search-walks (without it every "
                         "trial is scored with the full settings): give --search-walks, or "
                         "leave out --finalists")
    if getattr(args, "select_C_given", False) and args.labels is None:
        flag = "--select-C" if args.select_C else "--no-select-C"
        raise InputError(f"{flag} only matters with --labels (link validation trains no "
                         "classifier): give --labels, or leave it out")
    test_nodes = None
    if args.test_nodes:
        test_nodes = [x for _, fields in iter_records(args.test_nodes) for x in fields]
        if not test_nodes:
            raise InputError("no node ids found (empty file)", args.test_nodes)
    fixed = parse_fixed(args.method, args.fix or [])
    for name in ("dim", "workers"):
        if getattr(args, name) is not None:
            if name in fixed:
                raise InputError(f"--{name} and --fix {name}=... both given: give one")
            fixed[name] = getattr(args, name)
    result = tune(args.graph, args.labels, method=args.method, trials=args.trials,
                  timeout=args.timeout, seed=args.seed, test_nodes=test_nodes,
                  holdout=args.holdout, search_walks=args.search_walks,
                  finalists=args.finalists, final_repeats=args.final_repeats, fixed=fixed,
                  select_C=args.select_C, progress=not args.quiet)
    try:
        write_outputs(result, args.output, report, args.labels)
    except OSError as exc:  # e.g. a full disk: write_outputs leaves nothing behind
        where = exc.filename or report or args.output
        raise InputError(f"cannot write the outputs: {exc.strerror or exc}", where) from None
    print(result.table())
    print(f"validation  {result.validation}")
    print(f"best        trial {result.ranking.get('winner', '-')}  "
          f"{json.dumps(result.best_params)}  {result.metric} "
          f"{result.best_score:.4f} ± {_fmt_se(result.best_se)}")
    print(result.summary())
    if result.test_score is not None:
        how = (f", C chosen on the non-test labelled nodes (C = 1: "
               f"{result.test_score_c1:.4f})" if result.select_C else "")
        print(f"test        Micro-F1 {result.test_score:.4f} on the held-out test nodes{how} "
              "(read only after the search)")
    print(f"time        {result.seconds:.1f} s")
    print(f"wrote       {args.output}" + (f", {report}/" if report else ""))
    return 0


#: ``--finalists``' value when it is not given (it matters with ``--search-walks`` only)
DEFAULT_FINALISTS = 3


class _Given(argparse.Action):
    """Store the value and note that the option was given (``finalists_given``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


class _GivenFlag(argparse.BooleanOptionalAction):
    """``--NAME/--no-NAME``, noting that either was given (``select_C_given``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        setattr(namespace, f"{self.dest}_given", True)


def register(sub) -> None:
    """Add ``kernelne tune`` to the CLI."""
    from kernelne.cli.grammar import add_command, add_deprecated_alias, seed_value
    from kernelne.evaluation.classification import SELECT_CS

    p = add_command(
        sub, "tune", help="choose a method's settings on validation data, then refit",
        description="Search a method's settings with Optuna on validation data cut from the "
        "training data only (labelled non-test nodes, or held-out links when there are no "
        "labels), refit the best on the whole graph and write its embedding. A trial whose "
        "fit fails (diverged, out of memory, a refused combination) is recorded as failed "
        "with its reason and the search goes on.",
        example=["kernelne tune graph.edges --labels graph.labels --holdout 0.3 "
                 "--search-walks 10 -o best.npy --report-dir tune-report",
                 "kernelne tune split/residual.edges --fix loss=squared --trials 30 "
                 "-o best.txt"])
    p.add_argument("graph", help="graph file (the training graph, e.g. a split's residual)")
    p.add_argument("-o", "--output", required=True,
                   help="embedding of the refitted winner (.npy, or word2vec text)")
    p.add_argument("--labels", default=None, help="node labels: validate by classification")
    p.add_argument("--test-nodes", default=None,
                   help="file of test node ids (whitespace separated): never read")
    p.add_argument("--holdout", type=float, default=None,
                   help="hold out this fraction of labelled nodes as the test part instead")
    p.add_argument("--method", default="kernelne", choices=sorted(SEARCH_SPACES),
                   help="the embedding method whose settings are searched")
    p.add_argument("--trials", type=int, default=20, help="number of trials")
    p.add_argument("--timeout", type=float, default=None, help="stop searching after S s")
    p.add_argument("--search-walks", type=int, default=None,
                   help="walks per node during the search only, instead of the method's "
                   "own; the finalists are then re-scored with the full count")
    p.add_argument("--finalists", type=int, default=DEFAULT_FINALISTS, action=_Given,
                   help="with --search-walks only: re-score this many best trials, and every "
                   "default, with the full settings before choosing")
    p.add_argument("--final-repeats", type=int, default=10,
                   help="validation splits of a precise score (labels only)")
    p.add_argument("--select-C", dest="select_C", action=_GivenFlag, default=True,
                   help="with --labels only: choose the classifier's C per validation split "
                   f"among {', '.join(f'{c:g}' for c in SELECT_CS)} by 3-fold "
                   "cross-validation on that split's training nodes, and choose the settings "
                   "by that Micro-F1 (the C = 1 score is recorded beside it); "
                   "--no-select-C: the paper's C = 1 throughout")
    p.add_argument("--fix", action="append", default=None, metavar="NAME=VALUE",
                   help="hold a parameter of the method at VALUE in every fit, searched or "
                   "not (repeatable, once per parameter; e.g. --fix loss=squared --fix "
                   "window_shrink=false); the defaults that set it otherwise are then not "
                   "tried")
    p.add_argument("--dim", type=int, default=None, help="embedding dimension (all fits)")
    p.add_argument("--workers", type=int, default=None, help="threads per fit")
    p.add_argument("--seed", type=seed_value, default=0,
                   help="seed of splits, sampler and fits")
    p.add_argument("--report-dir", default=None, metavar="DIR",
                   help="folder for trials.csv, best.json, trials.png (and map.png)")
    add_deprecated_alias(p, "--report", "--report-dir", "report_dir")
    p.add_argument("--quiet", action="store_true", help="no per-trial progress lines")
    p.set_defaults(func=cmd_tune)
