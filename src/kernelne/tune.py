"""``kernelne tune``: choose a method's settings on validation data cut from the training data.

Protocol (explicit, EvalNE-style):

* **With labels** (node classification): nodes in ``test_nodes`` (or a seeded ``holdout``
  fraction of the labelled nodes) are the test part. Their labels are dropped before the
  search starts and never read by it. Each trial fits the embedding on the whole graph
  (unsupervised, as in the evaluation protocol) and scores the mean Micro-F1 of
  ``val_repeats`` seeded 50/50 splits of the remaining labelled nodes (one-vs-rest logistic
  regression, top-k rule). After the search, the winner is refitted and, if there is a test
  part, scored once on it (classifier trained on all non-test labelled nodes).
* **Without labels** (link prediction): the given graph is the training graph (e.g. the
  residual graph of a ``kernelne split`` folder; its held-out edges are never passed here).
  A validation split holds out ``val_fraction`` of its edges (residual kept connected, as many
  true non-edges); each trial fits on the validation residual graph and scores ROC-AUC
  (``weighted_l2`` operator). The winner is refitted on the whole given graph.

The search is Optuna's seeded TPE sampler over :data:`SEARCH_SPACES` (one function per method
that turns a trial into constructor parameters; edit them to widen the search).
"""

from __future__ import annotations

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

from kernelne.diagnostics import DegenerateEmbeddingWarning
from kernelne.errors import InputError
from kernelne.graph import Graph, load_graph


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


@dataclass
class TuneResult:
    """The search's outcome: ``best_params``, ``trials`` (one dict per trial), the refitted
    ``model``, ``validation`` (what was scored and how) and ``test_score`` (or None)."""

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

    def table(self) -> str:
        """The trials as an aligned text table, best first."""
        keys = sorted({k for t in self.trials for k in t["params"]})
        head = ["trial", self.metric, "seconds", *keys]
        rows = [[str(t["number"]), f"{t['score']:.4f}", f"{t['seconds']:.1f}",
                 *[_fmt(t["params"].get(k, "")) for k in keys]]
                for t in sorted(self.trials, key=lambda t: -t["score"])]
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))
                         for r in [head, *rows])

    def write_report(self, folder: str | Path, labels: Any = None) -> None:
        """``trials.csv``, ``best.json``, ``trials.png`` and, with ``labels``, ``map.png`` (a
        t-SNE map of the refitted embedding) in ``folder``."""
        import csv

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        keys = sorted({k for t in self.trials for k in t["params"]})
        with open(folder / "trials.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["trial", self.metric, "seconds", *keys])
            for t in self.trials:
                w.writerow([t["number"], t["score"], t["seconds"],
                            *[t["params"].get(k, "") for k in keys]])
        (folder / "best.json").write_text(json.dumps({
            "method": self.method, "best_params": self.best_params, "fixed": self.fixed,
            "validation_" + self.metric: self.best_score, "validation": self.validation,
            "test_score": self.test_score}, indent=2) + "\n", encoding="utf-8")
        plot_trials(self, folder / "trials.png")
        if labels is not None:
            from kernelne.plot import plot_embedding

            plot_embedding(self.model, labels, folder / "map.png", method="tsne", sample=5000,
                           title=f"{self.method} {json.dumps(self.best_params)}")


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def plot_trials(result: TuneResult, path: str | Path) -> None:
    """Optimisation history and score against each numeric parameter."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    trials = result.trials
    numeric = sorted({k for t in trials for k, v in t["params"].items()
                      if isinstance(v, (int, float)) and not isinstance(v, bool)})
    fig, axes = plt.subplots(1, 1 + len(numeric), figsize=(4.2 * (1 + len(numeric)), 3.6),
                             squeeze=False)
    ax = axes[0, 0]
    scores = [t["score"] for t in trials]
    ax.plot(range(len(scores)), scores, "o", label="trial")
    ax.plot(range(len(scores)), np.maximum.accumulate(scores), "-", label="best so far")
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
        ax.set_title(f"{result.metric} vs {key}")
        if groups != [""]:
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def make_estimator(method: str, params: dict[str, Any]):
    """A fresh estimator of ``method`` with ``params``."""
    if method == "kernelne":
        from kernelne.model import KernelNE

        return KernelNE(**params)
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
                  val_fraction: float, val_repeats: int, search_walks: int | None) -> None:
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
    fixed: dict[str, Any] | None = None,
    progress: bool = True,
) -> TuneResult:
    """Search ``method``'s settings (:data:`SEARCH_SPACES`) on validation data, then refit.

    ``labels``: a label file or ``(node ids, n x K indicator)``; without labels the search
    validates on held-out links. ``test_nodes`` / ``holdout``: the test part of the labelled
    nodes (never read by the search). ``search_walks``: walks per node during the search only
    (the refit uses ``fixed`` or the method's default). ``fixed``: parameters every fit gets
    (e.g. ``{"dim": 64, "workers": 2}``).
    """
    import optuna

    from kernelne.evaluation import (
        evaluate_link_prediction,
        evaluate_node_classification,
        make_link_split,
    )

    _check_search(method, trials, timeout, test_nodes, holdout, val_fraction, val_repeats,
                  search_walks)
    fixed = {"random_state": seed, **(fixed or {})}
    search_fixed = dict(fixed)
    if search_walks is not None and method in ("kernelne", "deepwalk", "node2vec"):
        search_fixed["walks_per_node"] = int(search_walks)
    check_settings(method, search_fixed)
    check_settings(method, fixed)
    if labels is None and (test_nodes is not None or holdout is not None):
        raise InputError("test nodes and a holdout fraction need labels")
    if labels is not None:
        label_nodes, Y = _labels_of(labels)
    g: Graph = load_graph(graph)
    check_settings(method, fixed, g.n_nodes)
    start = time.perf_counter()
    test_mask = None
    if labels is not None:
        test_mask = _holdout(label_nodes, test_nodes, holdout, seed)
        _check_labels(g, label_nodes, Y, test_mask, test_nodes, labels)
        train_nodes, Y_train = label_nodes[~test_mask], Y[~test_mask]
        metric = "micro_f1"
        validation = (f"Micro-F1 of {val_repeats} seeded 50/50 splits of the "
                      f"{len(train_nodes):,} labelled non-test nodes "
                      f"({int(test_mask.sum()):,} test nodes never read)")

        def score(params: dict[str, Any]) -> float:
            with warnings.catch_warnings():  # a collapsed trial simply scores low
                warnings.simplefilter("ignore", DegenerateEmbeddingWarning)
                model = make_estimator(method, {**search_fixed, **params}).fit(g)
            table = evaluate_node_classification(
                (model.embedding_, model.nodes_), Y_train, train_nodes, ratios=[0.5],
                repeats=val_repeats, seed=seed, n_jobs=1)
            return table.value("micro_f1")
    else:
        split = make_link_split(g, test_fraction=val_fraction, seed=seed)
        residual = split.residual_graph()
        metric = "roc_auc"
        validation = (f"ROC-AUC on {len(split.test_edges):,} validation edges held out of the "
                      f"given graph (and as many non-edges), fitted on the rest")

        def score(params: dict[str, Any]) -> float:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DegenerateEmbeddingWarning)
                model = make_estimator(method, {**search_fixed, **params}).fit(residual)
            return evaluate_link_prediction((model.embedding_, model.nodes_), split
                                            ).value("roc_auc")

    records: list[dict[str, Any]] = []

    def objective(trial) -> float:
        params = SEARCH_SPACES[method](trial)
        t0 = time.perf_counter()
        value = float(score(params))
        records.append({"number": trial.number, "params": params, "score": value,
                        "seconds": time.perf_counter() - t0})
        if progress:
            best = max(r["score"] for r in records)
            print(f"kernelne tune: trial {trial.number + 1}/{trials}  {metric} {value:.4f}  "
                  f"(best {best:.4f})  {json.dumps(params)}", file=sys.stderr, flush=True)
        return value

    # A failed or interrupted trial is re-raised to the caller, who reports it: Optuna's own
    # "Trial failed" warning and traceback would only repeat it.
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        study = optuna.create_study(direction="maximize",
                                    sampler=optuna.samplers.TPESampler(seed=seed))
        study.optimize(objective, n_trials=1, catch=())  # at least one trial, whatever timeout
        if trials > 1:
            left = None if timeout is None else timeout - (time.perf_counter() - start)
            if left is None or left > 0:
                study.optimize(objective, n_trials=trials - 1, timeout=left, catch=())
    finally:
        optuna.logging.set_verbosity(verbosity)
    best = max(records, key=lambda r: r["score"])
    if progress:
        print("kernelne tune: refitting the best settings on the whole graph",
              file=sys.stderr, flush=True)
    model = make_estimator(method, {**fixed, **best["params"]}).fit(g)
    test_score = None
    if test_mask is not None and test_mask.any():
        test_score = _test_score(model, label_nodes, Y, test_mask)
    return TuneResult(method, best["params"], best["score"], metric, records, model,
                      validation, test_score, time.perf_counter() - start, fixed)


def _test_score(model, nodes: np.ndarray, Y: sp.csr_matrix, test_mask: np.ndarray) -> float:
    """Micro-F1 on the test nodes of a classifier trained on all other labelled nodes."""
    from sklearn.metrics import f1_score
    from sklearn.multiclass import OneVsRestClassifier

    from kernelne.evaluation.classification import default_classifier, top_k_predictions
    from kernelne.evaluation.embeddings import embedding_rows

    X = model.embedding_[embedding_rows(model.nodes_, nodes)]
    dense = Y.toarray().astype(int)
    clf = OneVsRestClassifier(default_classifier()).fit(X[~test_mask], dense[~test_mask])
    scores = clf.predict_proba(X[test_mask])
    pred = top_k_predictions(scores, dense[test_mask].sum(axis=1))
    return float(f1_score(dense[test_mask], pred, average="micro"))


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

    output = Path(output)
    written: list[Path] = []
    staging = None
    try:
        if report is not None:
            report = Path(report)
            staging = Path(tempfile.mkdtemp(dir=report if report.is_dir() else report.parent,
                                            prefix=f".{report.name}.", suffix=".tmp"))
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


def cmd_tune(args) -> int:
    """``kernelne tune``: search, refit, write the embedding and the report."""
    from kernelne.graph import iter_records
    from kernelne.outputs import check_output_path

    inputs = [args.graph, args.labels, args.test_nodes]
    check_output_path(args.output, inputs)
    if args.report:
        check_output_path(args.report, inputs, folder=True)
        if os.path.realpath(args.report) == os.path.realpath(args.output):
            raise InputError("--report is the embedding output (-o): choose another folder",
                             args.report)
    test_nodes = None
    if args.test_nodes:
        test_nodes = [x for _, fields in iter_records(args.test_nodes) for x in fields]
        if not test_nodes:
            raise InputError("no node ids found (empty file)", args.test_nodes)
    fixed: dict[str, Any] = {}
    for name in ("dim", "workers"):
        if getattr(args, name) is not None:
            fixed[name] = getattr(args, name)
    result = tune(args.graph, args.labels, method=args.method, trials=args.trials,
                  timeout=args.timeout, seed=args.seed, test_nodes=test_nodes,
                  holdout=args.holdout, search_walks=args.search_walks, fixed=fixed,
                  progress=not args.quiet)
    write_outputs(result, args.output, args.report, args.labels)
    print(result.table())
    print(f"validation  {result.validation}")
    print(f"best        {json.dumps(result.best_params)}  {result.metric} "
          f"{result.best_score:.4f}")
    if result.test_score is not None:
        print(f"test        Micro-F1 {result.test_score:.4f} on the held-out test nodes "
              "(read only after the search)")
    print(f"time        {result.seconds:.1f} s")
    print(f"wrote       {args.output}" + (f", {args.report}/" if args.report else ""))
    return 0


def register(sub) -> None:
    """Add ``kernelne tune`` to the CLI."""
    p = sub.add_parser(
        "tune", help="choose a method's settings on validation data, then refit",
        description="Search a method's settings with Optuna on validation data cut from the "
        "training data only (labelled non-test nodes, or held-out links when there are no "
        "labels), refit the best on the whole graph and write its embedding.")
    p.add_argument("graph", help="graph file (the training graph, e.g. a split's residual)")
    p.add_argument("-o", "--output", required=True, help="embedding of the refitted winner")
    p.add_argument("--labels", default=None, help="node labels: validate by classification")
    p.add_argument("--test-nodes", default=None,
                   help="file of test node ids (whitespace separated): never read")
    p.add_argument("--holdout", type=float, default=None,
                   help="hold out this fraction of labelled nodes as the test part instead")
    p.add_argument("--method", default="kernelne", choices=sorted(SEARCH_SPACES))
    p.add_argument("--trials", type=int, default=20, help="number of trials (default 20)")
    p.add_argument("--timeout", type=float, default=None, help="stop searching after S s")
    p.add_argument("--search-walks", type=int, default=None,
                   help="walks per node during the search only (default: the method's)")
    p.add_argument("--dim", type=int, default=None, help="embedding dimension (all fits)")
    p.add_argument("--workers", type=int, default=None, help="threads per fit")
    p.add_argument("--seed", type=int, default=0, help="seed of splits, sampler and fits")
    p.add_argument("--report", default=None, help="folder for trials.csv, best.json, trials.png")
    p.add_argument("--quiet", action="store_true", help="no per-trial progress lines")
    p.set_defaults(func=cmd_tune)
