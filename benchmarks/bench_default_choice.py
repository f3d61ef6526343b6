"""The default against the baselines a user would pick, at their defaults, with quality, time
and memory: the fair table of docs/QUALITY.md.

For every graph and embedding seed, each method is fitted at its defaults (``workers=1``,
``random_state=SEED``; the graph's load excluded) and scored by node classification: one-vs-rest
logistic regression (liblinear, C = 1), top-k rule, the mean Micro-F1 of 5 splits (seed 0) at
10% and 50% of the labels (``--select-C``: also with C chosen per split among 0.01-100 by 3-fold
cross-validation on its training nodes). The methods:

- ``default``: ``KernelNE()`` (``kernelne embed G``);
- ``plain``, ``propagated``: ``KernelNE(propagate=False)`` and ``KernelNE(propagate=True)``
  (``--propagate off`` / ``--propagate``), the two choices of ``propagate="auto"``;
- ``given``: ``KernelNE(setting="given", propagate=False)``, the paper's setting with the
  robust restart (narrowing the kernel, never switching it) and the rows as trained: the
  default before the choices by mean degree wherever its restart test kept the paper's
  setting;
- ``deepwalk``, ``netmf``, ``prone``: ``kernelne embed G --method NAME``.

Each (graph, method, seed) runs in a fresh process, which loads the graph, fits the method once
on a small graph (so that the timed fit compiles no numba code), then fits and scores it. The
record holds the fit's wall time and its peak resident memory above the process' memory before
the fit (Linux ``VmHWM``, reset before the fit). Graphs:

- ``email-eu``, ``wiki``: ``DIR/NAME.edges.gz`` and ``DIR/NAME.labels.gz`` of ``--dev-dir``
  (nodes without an edge are not embedded and are left out of the scores);
- ``cora``, ``citeseer``, ``dblp``: the packaged networks (:func:`kernelne.load_dataset`);
- ``gen-*``: the planted partitions of :data:`GENERATED`, written by
  ``kernelne generate N M K MU -o PREFIX --seed S`` and read back as a user would;
  ``gen-directed`` is read with ``directed=True`` and ``gen-weighted`` gets a third column of
  weights drawn uniformly from 1..9 (seed 0), unrelated to the communities.

``propagate="auto"`` was set from the first six graphs (email-eu, wiki, cora, citeseer,
gen-dense, gen-sparse); the rest (:data:`HELD_OUT`) check it.

Every record is appended as one JSON line to ``--out`` as soon as it is measured; a rerun skips
the (graph, method, seed) already there. Usage:

    python benchmarks/bench_default_choice.py --dev-dir DATASETS_DEV --seeds 0 1 --select-C
    python benchmarks/bench_default_choice.py --summarize benchmarks/results/default_choice.jsonl
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import current_rss_mb, peak_rss_mb, reset_peak_rss

import kernelne
from kernelne import KernelNE, load_dataset
from kernelne.baselines import make_method
from kernelne.engine.propagation import choose_propagation
from kernelne.evaluation import evaluate_node_classification
from kernelne.evaluation.classification import SELECT_CS, read_node_labels
from kernelne.graphs.graph import Graph, load_graph

#: the generated graphs: ``kernelne generate N M K MU --seed S`` (degree-corrected planted
#: partitions, power-law degrees)
GENERATED = {
    "gen-dense": (2000, 60000, 10, 0.6, 11),   # mean degree about 60, most ends random
    "gen-sparse": (5000, 20000, 25, 0.35, 12),  # mean degree about 8, clearer communities
    # held out from the choice of propagate="auto"
    "gen-d3": (10000, 16000, 20, 0.3, 21),      # mean degree about 3
    "gen-d6": (8000, 25000, 15, 0.45, 22),      # about 6
    "gen-d12": (4000, 25000, 8, 0.5, 23),       # about 12
    "gen-d25": (3000, 40000, 12, 0.7, 24),      # about 25, mostly random ends
    "gen-directed": (5000, 30000, 10, 0.5, 25),  # about 12, read directed
    "gen-weighted": (5000, 30000, 10, 0.5, 26),  # about 12, random weights 1..9
    # held out from the dense setting by mean degree
    "gen-d10": (6000, 30000, 30, 0.4, 31),      # about 10, 30 small communities
    "gen-d20": (3000, 30000, 15, 0.55, 32),     # about 20
    "gen-d40": (2000, 40000, 6, 0.75, 33),      # about 40, mostly random ends
}
HELD_OUT = ["dblp", "gen-d3", "gen-d6", "gen-d12", "gen-d25", "gen-directed", "gen-weighted",
            "gen-d10", "gen-d20", "gen-d40"]
GRAPHS = ["email-eu", "wiki", "cora", "citeseer", "gen-dense", "gen-sparse", *HELD_OUT]
METHODS = ["default", "plain", "propagated", "given", "deepwalk", "netmf", "prone"]
RATIOS = (0.1, 0.5)
SPLITS = 5


def load(name: str, dev_dir: Path, gen_dir: Path) -> tuple[Graph, object, object]:
    """The graph, its labels and the node id of each label row (None: ``0..n-1``); a generated
    graph is written into ``gen_dir`` by ``kernelne generate`` the first time."""
    if name in GENERATED:
        prefix = str(gen_dir / name)
        if not Path(prefix + ".labels").exists():
            subprocess.run([sys.executable, "-m", "kernelne", "generate",
                            *map(str, GENERATED[name][:4]), "-o", prefix,
                            "--seed", str(GENERATED[name][4])], check=True,
                           stdout=subprocess.DEVNULL)
        path = prefix + ".edges"
        if name == "gen-weighted" and not Path(prefix + ".weighted").exists():
            edges = np.loadtxt(path, dtype=np.int64, ndmin=2)
            weights = np.random.default_rng(0).integers(1, 10, len(edges))
            np.savetxt(prefix + ".weighted", np.column_stack([edges, weights]), fmt="%d")
        if name == "gen-weighted":
            path = prefix + ".weighted"
        graph = load_graph(path, directed=name == "gen-directed")
        nodes, labels = read_node_labels(prefix + ".labels")
        return graph, labels, nodes
    if name in ("email-eu", "wiki"):
        graph = load_graph(str(dev_dir / f"{name}.edges.gz"))
        nodes, labels = read_node_labels(dev_dir / f"{name}.labels.gz")
        return graph, labels, nodes
    data = load_dataset(name)
    return data.graph, data.labels, None


def model_of(method: str, seed: int):
    """The estimator of ``method`` at its defaults, one worker, seeded."""
    if method == "default":
        return KernelNE(workers=1, random_state=seed)
    if method in ("plain", "propagated"):
        return KernelNE(workers=1, random_state=seed, propagate=method == "propagated")
    if method == "given":
        return KernelNE(workers=1, random_state=seed, setting="given", propagate=False)
    return make_method(method, workers=1, random_state=seed)


def measure(graph: Graph, labels, label_nodes, method: str, seed: int,
            select_C: bool = False) -> dict:
    """Fit ``method`` on ``graph``; its Micro-F1 at each ratio, fit seconds and peak MiB."""
    gc.collect()
    base = current_rss_mb()
    reset_peak_rss()
    model = model_of(method, seed)
    start = time.perf_counter()
    model.fit(graph)
    seconds = time.perf_counter() - start
    peak = peak_rss_mb() - base
    table = evaluate_node_classification(
        (model.embedding_, model.nodes_), labels, label_nodes, ratios=RATIOS, repeats=SPLITS,
        seed=0, n_jobs=1, missing="skip")
    record = {"method": method, "seed": seed, "fit_seconds": round(seconds, 2),
              "peak_mib": round(peak, 1)}
    for r in RATIOS:
        record[f"micro_f1@{r:g}"] = round(table.value("micro_f1", f"{r:g}"), 4)
    if select_C:
        chosen = evaluate_node_classification(
            (model.embedding_, model.nodes_), labels, label_nodes, ratios=RATIOS,
            repeats=SPLITS, seed=0, n_jobs=1, missing="skip", select_C=SELECT_CS)
        for r in RATIOS:
            record[f"micro_f1@{r:g} C chosen"] = round(chosen.value("micro_f1", f"{r:g}"), 4)
    if isinstance(model, KernelNE):
        record["setting"] = model.setting_["name"]
        record["propagated"] = model.propagation_ is not None
    record["auto_propagates"] = choose_propagation("auto", graph.adjacency())[0] is not None
    return record


def warm_up(method: str) -> None:
    """Fit ``method`` once on a small graph, so that the timed fit compiles no numba code."""
    import networkx as nx

    model = model_of(method, 0)
    model.set_params(dim=8)
    model.fit(nx.karate_club_graph())


def one(args: argparse.Namespace) -> None:
    """Measure one (graph, method, seed) in this fresh process and print its record."""
    name, method, seed = args.one[0], args.one[1], int(args.one[2])
    graph, labels, label_nodes = load(name, Path(args.dev_dir), Path(args.gen_dir))
    warm_up(method)
    rec = {"graph": name, "nodes": int(graph.n_nodes),
           "mean_degree": round(len(graph.indices) / graph.n_nodes, 1),
           **measure(graph, labels, label_nodes, method, seed, args.select_C),
           "version": kernelne.__version__, "cpu": platform.processor() or platform.machine()}
    print(json.dumps(rec), flush=True)


def run(args: argparse.Namespace) -> None:
    """Every (graph, method, seed) not yet in ``--out``, each in a process of its own."""
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            rec = json.loads(line)
            done.add((rec["graph"], rec["method"], rec["seed"]))
    with tempfile.TemporaryDirectory() as gen_dir:
        for seed in args.seeds:
            for name in args.graphs:
                for method in args.methods:
                    if (name, method, seed) in done:
                        continue
                    cmd = [sys.executable, __file__, "--one", name, method, str(seed),
                           "--dev-dir", args.dev_dir, "--gen-dir", gen_dir]
                    if args.select_C and seed == args.seeds[0]:
                        cmd.append("--select-C")
                    line = subprocess.run(cmd, check=True, capture_output=True,
                                          text=True).stdout.strip().splitlines()[-1]
                    print(line, flush=True)
                    with out.open("a") as f:
                        f.write(line + "\n")


def derived_defaults(recs: list[dict]) -> list[dict]:
    """``default`` records where none was measured: the ``propagated`` or ``plain`` record of
    the same graph and seed, as ``propagate="auto"`` chooses on that graph (its rows are
    those of that choice bit for bit, tests/model/test_propagate.py)."""
    measured = {(r["graph"], r["seed"]) for r in recs if r["method"] == "default"}
    out = []
    for r in recs:
        chosen = "propagated" if r.get("auto_propagates") else "plain"
        if r["method"] == chosen and (r["graph"], r["seed"]) not in measured:
            out.append({**r, "method": "default"})
    return out


def summarize(paths: list[str]) -> str:
    """A markdown table: per graph and method (``default`` measured, or derived by
    :func:`derived_defaults`), Micro-F1 @10% / @50% with C = 1 (mean over the seeds,
    with min-max when there are several; the best method of each cell in bold), fit
    seconds and peak MiB (medians over the seeds); records of ``--select-C`` add the two
    columns with C chosen (over the seeds that have them)."""
    recs = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines()]
    recs += derived_defaults(recs)
    keys = ["micro_f1@0.1", "micro_f1@0.5"]
    if any("micro_f1@0.1 C chosen" in r for r in recs):
        keys += ["micro_f1@0.1 C chosen", "micro_f1@0.5 C chosen"]
    heads = [k.replace("micro_f1@0.1", "@10%").replace("micro_f1@0.5", "@50%") for k in keys]
    lines = ["| graph | mean degree | method | seeds | " + " | ".join(heads)
             + " | fit s | peak MiB |", "|---|---|---|---|" + "---|" * len(keys) + "---|---|"]
    graphs = [g for g in GRAPHS if any(r["graph"] == g for r in recs)]
    for g in graphs:
        rows = [r for r in recs if r["graph"] == g]
        present = [m for m in METHODS if any(r["method"] == m for r in rows)]
        means = {(m, k): [r[k] for r in rows if r["method"] == m and k in r]
                 for m in present for k in keys}
        best = {k: max((np.mean(v) for (m, kk), v in means.items() if kk == k and v),
                       default=None) for k in keys}
        for m in present:
            mine = [r for r in rows if r["method"] == m]
            cells = []
            for k in keys:
                vals = means[(m, k)]
                if not vals:
                    cells.append("-")
                    continue
                text = f"{np.mean(vals):.3f}"
                if len(vals) > 1:
                    text += f" ({min(vals):.3f}-{max(vals):.3f})"
                cells.append(f"**{text}**" if np.mean(vals) == best[k] else text)
            lines.append(f"| {g} | {mine[0]['mean_degree']} | {m} | "
                         f"{','.join(str(r['seed']) for r in mine)} | " + " | ".join(cells)
                         + f" | {np.median([r['fit_seconds'] for r in mine]):.1f} | "
                         f"{np.median([r['peak_mib'] for r in mine]):.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs", nargs="+", default=GRAPHS, choices=GRAPHS)
    parser.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--dev-dir", default="datasets-dev",
                        help="folder of email-eu and wiki (.edges.gz, .labels.gz)")
    parser.add_argument("--out", default="benchmarks/results/default_choice.jsonl")
    parser.add_argument("--select-C", action="store_true",
                        help="with the first seed, also score with C chosen per split (3-fold "
                        "on its training nodes among SELECT_CS)")
    parser.add_argument("--one", nargs=3, default=None, metavar=("GRAPH", "METHOD", "SEED"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--gen-dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--summarize", nargs="+", default=None, metavar="JSONL")
    args = parser.parse_args()
    if args.summarize:
        print(summarize(args.summarize))
    elif args.one:
        one(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
