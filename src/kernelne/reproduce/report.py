"""The output folder: Markdown tables (kernelne's mean ± std beside the paper's), raw scores
as CSV and JSON, matplotlib figures, the run log, and ``RESULTS.md`` ready to commit as
docs/RESULTS.md.

A cell reads ``0.561 ± 0.012 (0.560)``: kernelne's mean ± std over the repeats, then the paper's
number; where they differ by more than :data:`TOLERANCE` the signed difference follows in bold.
"""

from __future__ import annotations

import csv
import json
import platform
import shutil
import sys
from collections import defaultdict
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import numpy as np

from kernelne.evaluation.classification import RULE_NAMES
from kernelne.outputs import atomic_path
from kernelne.parallel import cpu_count
from kernelne.reproduce.config import Config
from kernelne.reproduce.paper import paper_micro_f1, paper_roc_auc

TOLERANCE = 0.02
PACKAGES = ("kernelne", "numpy", "scipy", "scikit-learn", "numba", "gensim", "joblib",
            "matplotlib", "dask", "distributed")
RAW_COLUMNS = ("experiment", "x", "task", "dataset", "method", "setting", "metric", "repeat",
               "value", "embedding_seed", "split_seed", "params", "fit_seconds", "eval_seconds",
               "embedding_key", "score_key")

Summary = dict[tuple, tuple[float, float, int]]

# The classification metric groups of Table II: the paper's rule first (the only one with the
# paper's numbers), then the non-oracle rule.
CLASSIFICATION_METRICS = (
    ("micro_f1", f"Micro-F1, {RULE_NAMES['top-k']}"),
    ("macro_f1", f"Macro-F1, {RULE_NAMES['top-k']}"),
    ("micro_f1_non_oracle", f"Micro-F1, non-oracle ({RULE_NAMES['non-oracle']})"),
    ("macro_f1_non_oracle", f"Macro-F1, non-oracle ({RULE_NAMES['non-oracle']})"),
)
RULES_TEXT = (
    "Two prediction rules, both from the same classifiers. **Top-k (oracle)**, the paper's: "
    "each test node is given its k most probable labels, k = its true number of labels, so "
    "the rule reads the test labels' count (on single-label data k = 1 and it is the argmax). "
    "**Non-oracle**: the labels of probability above 0.5, or the most probable one when none "
    "is; it reads no test label. The paper's numbers (in brackets) are top-k.\n"
)


def format_cell(mean: float, std: float, n: int, paper: float | None) -> str:
    """``mean ± std (paper)``, the difference in bold when it exceeds the tolerance."""
    text = f"{mean:.3f}" + (f" ± {std:.3f}" if n > 1 else "")
    if paper is None:
        return text
    text += f" ({paper:.3f})"
    diff = mean - paper
    if abs(diff) > TOLERANCE:
        text += f" **{diff:+.3f}**"
    return text


def summarise(records: list[dict]) -> Summary:
    """Mean, population std and count per (experiment, x, dataset, method, setting, metric)."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in records:
        key = (r["experiment"], r["x"], r["dataset"], r["method"], r["setting"], r["metric"])
        groups[key].append(r["value"])
    return {k: (float(np.mean(v)), float(np.std(v)), len(v)) for k, v in groups.items()}


def paper_value(experiment: str, dataset: str, method: str, setting: str) -> float | None:
    if experiment == "table2":
        return paper_micro_f1(dataset, method, float(setting))
    if experiment == "table3":
        return paper_roc_auc(dataset, method)
    return None


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def dataset_title(config: Config, dataset: str) -> str:
    """A classification dataset's name, with its label variant when single-label."""
    if config.single_label(dataset):
        return f"{dataset} (single-label: argmax of the label fractions)"
    return dataset


def classification_tables(summary: Summary, config: Config) -> str:
    """Table II per dataset, methods by ratio: Micro-F1 (with the paper's) and Macro-F1 under
    the top-k (oracle) rule, then both under the non-oracle rule."""
    cls = config.task("classification")
    ratios = [f"{r:g}" for r in cls["ratios"]]
    out = []
    for metric, title in CLASSIFICATION_METRICS:
        for dataset in cls["datasets"]:
            rows = []
            for method in cls["methods"]:
                row = [config.label(method)]
                for ratio in ratios:
                    hit = summary.get(("table2", None, dataset, method, ratio, metric))
                    paper = paper_value("table2", dataset, method, ratio)
                    row.append("–" if hit is None else
                               format_cell(*hit, paper if metric == "micro_f1" else None))
                rows.append(row)
            header = [f"{title}: {dataset_title(config, dataset)}"]
            out.append(_table(header + [f"{float(r):.0%}" for r in ratios], rows))
    return "\n".join(out)


HEURISTICS_TEXT = (
    "Rows marked (heuristic) are link-prediction heuristics, not embeddings: they score each "
    "test pair directly from the same residual graph the embeddings were learned on (no "
    "classifier); the paper has no such rows.\n"
)


def link_table(summary: Summary, config: Config) -> str:
    """Table III: ROC-AUC, methods (with the paper's numbers) then heuristics, by dataset."""
    link = config.task("link_prediction")
    rows = []
    for method, setting in ([(m, link["operator"]) for m in link["methods"]]
                            + [(h, "heuristic") for h in link["heuristics"]]):
        row = [config.label(method)]
        for dataset in link["datasets"]:
            hit = summary.get(("table3", None, dataset, method, setting, "roc_auc"))
            paper = paper_value("table3", dataset, method, "")
            row.append("–" if hit is None else format_cell(*hit, paper))
        rows.append(row)
    return _table(["ROC-AUC"] + list(link["datasets"]), rows)


def split_text(config: Config, splits: dict[str, dict]) -> str:
    """The split rule, and the held-out share of every split that was capped."""
    link = config.task("link_prediction")
    text = (f"Split: {link['test_fraction']:g} of the largest component's edges held out, "
            "the residual graph kept connected.")
    capped = [d for d in link["datasets"] if config.capped(d)]
    if capped:
        text += (" For " + ", ".join(capped) + " the held-out share is "
                 "capped at what a connected residual allows (its edges beyond a random "
                 "spanning tree) when that is less.")
    for dataset, info in splits.items():
        if info["capped"]:
            text += (f" {dataset}: {info['test_edges']:,} of {info['lcc_edges']:,} edges held "
                     f"out ({info['test_edges'] / info['lcc_edges']:.1%}; capped).")
    return text + "\n"


def line_hope_text(summary: Summary, config: Config) -> str:
    """The paper's LINE and HOPE columns of Table III read crosswise against kernelne's."""
    link = config.task("link_prediction")
    rows, crosswise, straight = [], 0, 0
    for dataset in link["datasets"]:
        ours = {m: summary.get(("table3", None, dataset, m, link["operator"], "roc_auc"))
                for m in ("line", "hope")}
        paper = {m: paper_roc_auc(dataset, m) for m in ("line", "hope")}
        if None in ours.values() or None in paper.values():
            continue
        line, hope = ours["line"][0], ours["hope"][0]
        crosswise += max(abs(line - paper["hope"]), abs(hope - paper["line"])) <= TOLERANCE
        straight += max(abs(line - paper["line"]), abs(hope - paper["hope"])) <= TOLERANCE
        rows.append([dataset, f"{line:.3f}", f"{paper['hope']:.3f}", f"{paper['line']:.3f}",
                     f"{hope:.3f}"])
    if not rows:
        return ""
    return ("The paper's LINE and HOPE columns of Table III look swapped: read crosswise "
            f"(kernelne's LINE against its HOPE, kernelne's HOPE against its LINE), both agree "
            f"within {TOLERANCE} on {crosswise} of {len(rows)} networks; read as printed, on "
            f"{straight}.\n\n"
            + _table(["ROC-AUC", "kernelne LINE", "paper's HOPE", "paper's LINE",
                      "kernelne HOPE"], rows))


def gaps(summary: Summary) -> list[dict]:
    """Every cell with a paper number: kernelne's, the paper's, the difference."""
    cells = []
    for (experiment, _, dataset, method, setting, metric), (mean, std, _) in summary.items():
        if (experiment, metric) not in (("table2", "micro_f1"), ("table3", "roc_auc")):
            continue
        paper = paper_value(experiment, dataset, method, setting)
        if paper is not None:
            cells.append({"table": experiment, "dataset": dataset, "method": method,
                          "setting": setting, "ours": mean, "std": std, "paper": paper,
                          "diff": mean - paper})
    return cells


def agreement_text(cells: list[dict]) -> str:
    """KernelNE's cells within the tolerance, per table, and the list of larger gaps."""
    lines = []
    for table, name in (("table2", "Table II"), ("table3", "Table III")):
        own = [c for c in cells if c["table"] == table and c["method"].startswith("kernelne")]
        if own:
            close = sum(abs(c["diff"]) <= TOLERANCE for c in own)
            lines.append(f"- {name}: {close} of {len(own)} KernelNE cells within "
                         f"{TOLERANCE} of the paper ({close / len(own):.0%}).")
    far = sorted((c for c in cells if abs(c["diff"]) > TOLERANCE),
                 key=lambda c: (c["table"], c["dataset"], c["method"],
                                float(c["setting"]) if c["table"] == "table2" else 0.0))
    rows = [[("Table II" if c["table"] == "table2" else "Table III"), c["dataset"], c["method"],
             c["setting"], f"{c['ours']:.3f}", f"{c['paper']:.3f}", f"{c['diff']:+.3f}"]
            for c in far]
    text = "\n".join(lines) + "\n"
    if rows:
        text += (f"\nCells differing from the paper by more than {TOLERANCE} "
                 f"({len(rows)} of {len(cells)}):\n\n")
        text += _table(["table", "dataset", "method", "ratio / operator", "kernelne", "paper",
                        "difference"], rows)
    return text


def plot_figures(summary: Summary, config: Config, folder: Path) -> list[Path]:
    """PNGs: Micro-F1 against training ratio per dataset, and the sensitivity sweeps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(exist_ok=True)
    written = []
    cls = config.task("classification")
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for dataset in cls["datasets"]:
        fig, ax = plt.subplots(figsize=(6, 4))
        drawn = False
        for i, method in enumerate(cls["methods"]):
            pts = [(float(r), summary[k][0]) for r in map(lambda r: f"{r:g}", cls["ratios"])
                   if (k := ("table2", None, dataset, method, r, "micro_f1")) in summary]
            if not pts:
                continue
            color = colors[i % len(colors)]
            ax.plot(*zip(*pts, strict=True), "o-", color=color, label=config.label(method))
            paper = [(x, p) for x, _ in pts if (p := paper_micro_f1(dataset, method, x))]
            if paper:
                ax.plot(*zip(*paper, strict=True), "--", color=color, alpha=0.6)
            drawn = True
        if drawn:
            ax.set(xscale="log", xlabel="training ratio", ylabel="Micro-F1",
                   title=f"{dataset}: kernelne (solid) and the paper's (dashed)")
            ax.set_xticks(cls["ratios"], [f"{r:.0%}" for r in cls["ratios"]], minor=False)
            ax.minorticks_off()
            ax.legend(fontsize="small")
            written.append(_save(fig, folder / f"ratio_{dataset}.png"))
        plt.close(fig)

    sens = config.sensitivity
    sweeps = (("dim", "dimension d", False), ("sigma2", "Gaussian σ²", True),
              ("alpha", "Schoenberg α", True))
    for experiment, xlabel, log in sweeps:
        keys = [k for k in summary if k[0] == experiment and k[5] == "micro_f1"]
        if not keys:
            continue
        fig, ax = plt.subplots(figsize=(6, 4))
        for method, ratio in sorted({(k[3], k[4]) for k in keys}):
            pts = sorted((k[1], *summary[k][:2]) for k in keys if (k[3], k[4]) == (method, ratio))
            x, y, err = zip(*pts, strict=True)
            ax.errorbar(x, y, yerr=err, marker="o", capsize=3,
                        label=f"{config.label(method)}, {float(ratio):.0%} training")
        ax.set(xlabel=xlabel, ylabel="Micro-F1", title=f"{sens['dataset']}: Micro-F1 against "
               f"{xlabel}", xscale="log" if log else "linear")
        ax.legend(fontsize="small")
        written.append(_save(fig, folder / f"sensitivity_{experiment}.png"))
        plt.close(fig)
    return written


def kernel_weights_text(weights: list[dict]) -> str:
    """A table of the learned kernel weights of the MKernelNE fits."""
    rows = [[w["dataset"], w["task"].replace("_", " "), ", ".join(
        f"{k} {b:.3f}" for k, b in zip(w["kernels"], w["beta"], strict=True))] for w in weights]
    return _table(["dataset", "task", "learned weights β"], rows) if rows else ""


def plot_kernel_weights(weights: list[dict], folder: Path) -> Path | None:
    """``kernel_weights.png``: the learned weights, one group of bars per dataset and task."""
    if not weights:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    folder.mkdir(exist_ok=True)
    kernels = sorted({k for w in weights for k in w["kernels"]})
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(weights) * len(kernels) / 3), 4))
    width = 0.8 / len(kernels)
    for j, kernel in enumerate(kernels):
        heights = [dict(zip(w["kernels"], w["beta"], strict=True)).get(kernel, 0.0)
                   for w in weights]
        ax.bar(np.arange(len(weights)) + j * width, heights, width, label=kernel)
    ax.set_xticks(np.arange(len(weights)) + 0.4 - width / 2,
                  [f"{w['dataset']}\n{w['task'].split('_')[0]}" for w in weights], fontsize=8)
    ax.set(ylabel="learned weight β", title="MKernelNE: learned kernel weights")
    ax.legend(fontsize="small")
    path = _save(fig, folder / "kernel_weights.png")
    plt.close(fig)
    return path


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    return path


def write_scores(records: list[dict], out: Path) -> None:
    """``scores.csv`` and ``scores.json``: every raw score with its seeds and settings."""
    with atomic_path(out / "scores.csv") as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=RAW_COLUMNS)
        writer.writeheader()
        writer.writerows(records)
    with atomic_path(out / "scores.json") as tmp:
        tmp.write_text(json.dumps(records, indent=0) + "\n")


def environment() -> dict:
    """Versions and machine, for the run log."""
    versions = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"versions": versions, "machine": {
        "platform": platform.platform(), "cpu": cpu, "cores": cpu_count()}}


def update_run_log(out: Path, config: Config, invocation: dict) -> dict:
    """Append this invocation to ``run.json`` (versions, machine, settings, timings)."""
    path = out / "run.json"
    log = json.loads(path.read_text()) if path.is_file() else {"invocations": []}
    log.update(environment())
    log["config_source"] = config.source
    log["config"] = config.data
    log["invocations"].append(invocation)
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(log, indent=1, default=str) + "\n")
    return log


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def kernel_settings_text(config: Config) -> str:
    """The KernelNE kernel parameters used per task and dataset."""
    rows = []
    for task in ("classification", "link_prediction"):
        table = config.task(task)
        for dataset in table["datasets"]:
            for method in table["methods"]:
                if config.model(method) != "kernelne":
                    continue
                p = config.params(task, dataset, method)
                kernel = p.get("kernel", "gauss")
                value = {"gauss": f"σ = {p.get('sigma', 2 ** 0.5):.4g} "
                                  f"(σ² = {p.get('sigma', 2 ** 0.5) ** 2:.4g})",
                         "schoenberg": f"α = {p.get('alpha', 1.0):g}"}.get(kernel, "–")
                rows.append([task.replace("_", " "), dataset, config.label(method), value])
    return _table(["task", "dataset", "method", "kernel parameter"], rows) if rows else ""


def timing_table(records: list[dict], config: Config) -> str:
    """Seconds per embedding fit of Tables II and III, datasets by methods."""
    seconds: dict[tuple, float] = {}
    for r in records:
        if r["experiment"] in ("table2", "table3") and r["embedding_key"]:
            seconds[(r["experiment"], r["dataset"], r["method"])] = r["fit_seconds"]
    methods = list(dict.fromkeys(k[2] for k in seconds))
    rows = []
    for experiment, name in (("table2", "whole graph"), ("table3", "residual graph")):
        for dataset in dict.fromkeys(k[1] for k in seconds if k[0] == experiment):
            cells = [seconds.get((experiment, dataset, m)) for m in methods]
            rows.append([f"{dataset} ({name})"] + ["–" if c is None else f"{c:.0f}" for c in cells])
    if not rows:
        return ""
    return _table(["fit seconds"] + [config.label(m) for m in methods], rows)


def labels_text(config: Config) -> str:
    """Which label variant each classification dataset uses."""
    single = [d for d in config.task("classification")["datasets"] if config.single_label(d)]
    if not single:
        return "Labels: NAME.labels.gz for every dataset.\n"
    return ("Labels: " + ", ".join(single) + " single-label, each node's largest share in "
            "NAME.label_fractions.gz (ties: the lowest label; the `single_label` setting); "
            "the others NAME.labels.gz.\n")


def table2_section(summary: Summary, config: Config) -> str:
    """Table II with its caption: the labels used and the two prediction rules ("" when the
    grid has no classification dataset)."""
    if not config.task("classification")["datasets"]:
        return ""
    return "\n".join([labels_text(config), RULES_TEXT, classification_tables(summary, config)])


def table3_section(summary: Summary, config: Config, splits: dict[str, dict]) -> str:
    """Table III with its caption: the split rule, the heuristics, and the LINE/HOPE note (""
    when the grid has no link-prediction dataset)."""
    if not config.task("link_prediction")["datasets"]:
        return ""
    parts = [split_text(config, splits)]
    if config.task("link_prediction")["heuristics"]:
        parts.append(HEURISTICS_TEXT)
    parts.append(link_table(summary, config))
    note = line_hope_text(summary, config)
    return "\n".join(parts + ([note] if note else []))


def results_markdown(
    summary: Summary, config: Config, log: dict, figures: list[str], timings: str,
    weights: str = "", splits: dict[str, dict] | None = None,
) -> str:
    """The whole report: setup, Table II, Table III, figures, agreement and gaps."""
    runs = [r for r in log.get("invocations", []) if not r.get("report_only")]
    wall = sum(r.get("wall_seconds", 0) for r in runs)
    machine, versions = log.get("machine", {}), log.get("versions", {})
    parts = [
        "# Reproducing Kernel Node Embeddings (GlobalSIP 2019)\n",
        "Generated by `kernelne reproduce`. Cells: kernelne's mean ± std over the repeats, the "
        f"paper's number in brackets, and the signed difference in bold where it exceeds "
        f"{TOLERANCE}.\n",
        "## Setup\n",
        f"- Machine: {machine.get('cpu', '?')}, {machine.get('cores', '?')} cores, "
        f"{machine.get('platform', '?')}",
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()),
        f"- Settings: {log.get('config_source', '?')}; seed {config.seed}; classification "
        f"{config.task('classification')['repeats']} repeats per ratio; link prediction "
        f"test fraction {config.task('link_prediction')['test_fraction']}, operator "
        f"{config.task('link_prediction')['operator']}",
        f"- Wall time: {wall / 60:.1f} min over {len(runs)} invocation(s) "
        f"({', '.join(str(r.get('scheduler') or 'local') for r in runs)})\n",
        "Kernel settings (σ is the paper's form exp(-‖x−y‖²/σ²)):\n",
        kernel_settings_text(config),
    ]
    for title, section in (("## Table II: node classification\n", table2_section(summary, config)),
                           ("## Table III: link prediction\n",
                            table3_section(summary, config, splits or {}))):
        if section:
            parts += [title, section]
    if weights:
        parts += ["## MKernelNE: learned kernel weights\n", weights]
    if figures:
        parts.append("## Figures\n")
        parts += [f"![{Path(p).stem}]({p})\n" for p in figures]
    if timings:
        parts += ["## Timings\n", "Embedding fit time per network and method, in seconds "
                  "(evaluation times are in scores.csv):\n", timings]
    failures = runs[-1].get("failures", []) if runs else []
    if failures:
        parts += ["## Failed jobs\n", "These jobs of the last run failed: their cells are "
                  "missing from the tables (the next run retries them).\n",
                  *[f"- {f['kind']} `{f['key']}` {f['what']}: {f['reason']}"
                    for f in failures], ""]
    parts += ["## Agreement with the paper\n", agreement_text(gaps(summary))]
    return "\n".join(parts)


def write_report(
    out: Path, records: list[dict], config: Config, log: dict, results_md: Path | None = None,
    kernel_weights: list[dict] | None = None, splits: dict[str, dict] | None = None,
) -> Path:
    """Write scores, figures, ``tables.md`` and ``RESULTS.md`` into ``out``; return the latter.

    ``results_md``: also write the report there (e.g. ``docs/RESULTS.md``), with copies of the
    figures in a ``figures`` folder beside it. ``splits``: the link splits' edge counts
    (:func:`~kernelne.reproduce.run.collect_split_info`).
    """
    splits = splits or {}
    write_scores(records, out)
    summary = summarise(records)
    figures = plot_figures(summary, config, out / "figures")
    weights_figure = plot_kernel_weights(kernel_weights or [], out / "figures")
    if weights_figure is not None:
        figures.append(weights_figure)
    timings = timing_table(records, config)
    with atomic_path(out / "tables.md") as tmp:
        tmp.write_text("\n".join(filter(None, [table2_section(summary, config),
                                                table3_section(summary, config, splits)])))
    targets = [(out / "RESULTS.md", "figures")]
    if results_md is not None:
        results_md = Path(results_md)
        (results_md.parent / "figures").mkdir(parents=True, exist_ok=True)
        for fig in figures:
            shutil.copyfile(fig, results_md.parent / "figures" / fig.name)
        targets.append((results_md, "figures"))
    for path, folder in targets:
        links = [f"{folder}/{p.name}" for p in figures]
        with atomic_path(path) as tmp:
            tmp.write_text(results_markdown(summary, config, log, links, timings,
                                            kernel_weights_text(kernel_weights or []), splits),
                           encoding="utf-8")
    return targets[-1][0]
