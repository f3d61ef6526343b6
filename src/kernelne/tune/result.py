"""The outcome of a search: :class:`TuneResult` (its table, summary and report folder),
:func:`plot_trials` and :func:`write_outputs` (the embedding and the report, all or none)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np


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
                          score(r[m], r["state"] == "failed"), format_se(r["se"]),
                          *([score(r[m + "_c1"], "")] if c1 else []),
                          "" if r["walks"] is None else str(r["walks"]),
                          score(r["final_" + m], final_failed), format_se(r["final_se"]),
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
                      f"{format_se(self.best_se_c1)})")
            lines.insert(1, f"chosen by   {self.chosen_by}{c1}")
        for f in self.failures():
            stage = {"search": "", "finalist": " as a finalist", "refit": ""}[f["stage"]]
            lines.append(f"failed      {who(f['trial'])}{stage}: {f['reason']}")
        return "\n".join(lines)

    def _ranking_lines(self, who: Callable[[int], str]) -> list[str]:
        rk, m = self.ranking, self.metric
        names = {t["number"]: t.get("default") for t in self.trials}
        lines = [f"winner      {who(rk['winner'])}: {m} {rk['score']:.4f} "
                 f"± {format_se(rk['se'])} (standard error, {rk['splits']} validation "
                 f"split{'s' if rk['splits'] != 1 else ''}; {rk['finalists']} finalists)"]
        if "runner_up" in rk:
            lines.append(f"runner-up   {who(rk['runner_up'])}: {m} {rk['runner_up_score']:.4f} "
                         f"± {format_se(rk['runner_up_se'])}")
            lines.append("ranking     " + _verdict(rk["gap"], rk["gap_se"], rk["paired"],
                                                   "the top two"))
        if rk.get("best_default") == rk.get("runner_up"):
            lines.append("vs default  the runner-up is the best default")
        elif "best_default" in rk and rk["best_default"] != rk["winner"]:
            lines.append(f"vs default  {who(rk['best_default'])}: {m} "
                         f"{rk['best_default_score']:.4f} ± {format_se(rk['best_default_se'])}; "
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


def format_se(se: float | None) -> str:
    """A standard error as shown in tables and summaries (``-`` when unknown)."""
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

