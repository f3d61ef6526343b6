"""The pairs a graph needs: Micro-F1 of the default fit against its walks per node.

For each graph and each ``--walks`` value, ``KernelNE(walks_per_node=W)`` (everything else at
its defaults: the setting and the propagation chosen on the graph) is fitted and scored by
node classification: one-vs-rest logistic regression (liblinear, C = 1), the mean Micro-F1 of
``--splits`` splits at 50% of a seeded sample of at most ``--sample`` labelled nodes. The
record holds the fit's seconds, pairs, the setting chosen, the neighbour AUC and whether the
restart test narrowed the kernel. Graphs: ``sbm:N:M:K:MU`` (``kernelne generate``, seed 0),
``cora``, ``citeseer``, ``dblp`` (packaged) or ``dev:NAME`` (``--dev-dir``'s
``NAME.edges.gz`` and ``NAME.labels.gz``). Each record is appended to ``--out`` as a JSON line
as soon as it is measured; a rerun skips the (graph, walks) already there.

    python benchmarks/bench_walk_budget.py --graphs sbm:100000:1000000:100:0.3 \\
        --walks 10 20 40 80 --out benchmarks/results/walk_budget.jsonl
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import kernelne
from kernelne import KernelNE, load_dataset, load_graph


def graph_and_labels(name: str, work: Path, dev_dir: str | None):
    """``(graph, {node: label})`` of ``name``."""
    if name.startswith("sbm:"):
        n, m, k, mu = name.split(":")[1:]
        prefix = work / f"sbm-{n}-{m}-{k}-{mu}"
        if not Path(f"{prefix}.edges").exists():
            subprocess.run([sys.executable, "-m", "kernelne", "generate", n, m, k, mu, "-o",
                            str(prefix), "--seed", "0"], check=True, capture_output=True)
        lab = np.loadtxt(f"{prefix}.labels", dtype=np.int64)
        return load_graph(f"{prefix}.edges"), dict(zip(lab[:, 0].tolist(),
                                                       lab[:, 1].tolist(), strict=True))
    if name.startswith("dev:"):
        base = Path(dev_dir) / name[4:]
        g = load_graph(f"{base}.edges.gz")
        labels = {}
        for line in kernelne.graphs.graph.open_text(f"{base}.labels.gz"):
            parts = line.split()
            if len(parts) >= 2:
                labels.setdefault(int(parts[0]), int(parts[1]))
        return g, labels
    ds = load_dataset(name)
    y = ds.labels
    first = np.asarray(y.argmax(axis=1)).ravel() if hasattr(y, "argmax") else np.asarray(y)
    return ds.graph, {node: int(first[i]) for i, node in enumerate(ds.graph.nodes)}


def micro_f1(model, labels: dict, sample: int, splits: int) -> float:
    from kernelne.evaluation import evaluate_node_classification

    known = np.array([i for i, v in enumerate(model.nodes_) if int(v) in labels])
    pick = np.random.default_rng(0).choice(known, min(sample, len(known)), replace=False)
    y = np.array([labels[int(model.nodes_[i])] for i in pick])
    table = evaluate_node_classification(model.embedding_[pick], y, ratios=[0.5],
                                         repeats=splits, seed=0)
    return next(r.mean for r in table.rows if r.metric == "micro_f1")


def scoring_arguments(ap: argparse.ArgumentParser) -> None:
    """The options shared by the scripts that fit and score the default on these graphs."""
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sample", type=int, default=50_000)
    ap.add_argument("--splits", type=int, default=3)
    ap.add_argument("--dev-dir", default=None)
    ap.add_argument("--work", default="bench_walk_budget_work")
    ap.add_argument("--out", default=None)


def recorded(out: str | None, keys: tuple[str, ...]) -> set[tuple]:
    """The ``keys`` of every record already in the JSON-lines file ``out``."""
    if not out or not Path(out).exists():
        return set()
    return {tuple(json.loads(line)[k] for k in keys)
            for line in Path(out).read_text().splitlines()}


def emit(rec: dict, out: str | None) -> None:
    """Print ``rec`` as a JSON line and append it to ``out``."""
    print(json.dumps(rec), flush=True)
    if out:
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", nargs="+", default=["sbm:100000:1000000:100:0.3"])
    ap.add_argument("--walks", type=int, nargs="+", default=[10, 20, 40, 80])
    ap.add_argument("--seed", type=int, default=0)
    scoring_arguments(ap)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    done = recorded(args.out, ("graph", "walks_per_node", "seed"))
    for name in args.graphs:
        g, labels = graph_and_labels(name, work, args.dev_dir)
        for walks in args.walks:
            if (name, walks, args.seed) in done:
                continue
            model = KernelNE(walks_per_node=walks, workers=args.threads,
                             random_state=args.seed, verbose=False)
            start = time.perf_counter()
            model.fit(g)
            seconds = time.perf_counter() - start
            rec = {"graph": name, "nodes": g.n_nodes, "walks_per_node": walks,
                   "seed": args.seed, "fit_s": round(seconds, 1),
                   "pairs": int(model.n_pairs_),
                   "setting": model.setting_.get("evidence", ""),
                   "propagation": str(model.propagation_),
                   "narrowed": len(model.narrowed_),
                   "neighbour_auc": round(float(model.health_.neighbour_auc), 3),
                   "micro_f1_50": round(micro_f1(model, labels, args.sample, args.splits), 4),
                   "threads": args.threads, "version": kernelne.__version__}
            emit(rec, args.out)


if __name__ == "__main__":
    main()
