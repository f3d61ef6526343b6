"""MKernelNE: cost per pair against the dictionary size m, and quality against single kernels.

``speed``: one training pass over the same walks (80 walks/node, length 10, window 10,
5 negatives, d = 128) with a single Gaussian and with dictionaries of m kernels (the first m
of :data:`ORDER`), learned weights and, to isolate the weights' step, fixed weights. Reports
pairs/s (median of ``--repeats``) and the cost per pair relative to the single Gaussian.

``quality``: KernelNE with Gauss sigma = sqrt(2) (sigma^2 = 2), Sch alpha = 1 and MKernelNE
(default dictionary), default settings otherwise, embedding seed ``--seed``. Node classification:
Micro-F1 at 10/50/90% (``--repeats`` splits, split seed 0). Link prediction: ROC-AUC of the
weighted-L2 operator on ``make_link_split(seed=0)``, embeddings fitted on the residual graph.
Prints the learned weights; ``--json`` writes everything. Usage:

    python benchmarks/bench_multikernel.py speed [--dataset cora] [--sizes 2 3 5 7] [--repeats 3]
    python benchmarks/bench_multikernel.py quality [--datasets cora citeseer dblp]
        [--link cora hepth] [--repeats 10] [--workers 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
from _common import timed
from bench_training import count_pairs

from kernelne import KernelNE, load_dataset, random_walks
from kernelne.engine.kernels import parse_kernel
from kernelne.engine.rows import aligned_rows, uniform_rows
from kernelne.engine.sampling import alias_table
from kernelne.engine.trainer import Noise, TrainSettings, kernel_arrays, train_walks
from kernelne.evaluation import (
    evaluate_link_prediction,
    evaluate_node_classification,
    make_link_split,
)
from kernelne.parallel import numba_threads

ORDER = ("gauss:1.41421", "sch:1", "gauss:2", "sch:2", "gauss:3", "sch:0.5", "gauss:1")
RATIOS = (0.1, 0.5, 0.9)
METHODS = {
    "gauss": {"kernel": "gauss", "sigma": math.sqrt(2.0)},
    "sch": {"kernel": "schoenberg", "alpha": 1.0},
    "multi": {"kernel": "multi"},
}


def train_once(walks, n: int, specs, learn_beta: bool, threads: int, dim: int = 128):
    """A closure running one pass of :func:`train_walks` from a fresh start (compiled once)."""
    kernels = [parse_kernel(s) for s in specs]
    noise = Noise(*alias_table(np.bincount(walks[walks >= 0], minlength=n) ** 0.75))
    settings = TrainSettings(float(walks.size), learn_beta=learn_beta, seed=1)

    def run(w=walks):
        A = uniform_rows(np.random.default_rng(0), n, dim, 0.5 / dim)
        B = aligned_rows(n, dim, 0.0)
        with numba_threads(threads):
            train_walks(w, 0, A, B, kernel_arrays(kernels), noise, settings)

    run(walks[:64])
    return run


def speed(args: argparse.Namespace) -> None:
    g = load_dataset(args.dataset).graph
    walks = random_walks(g, 80, 10, seed=1)
    pairs = count_pairs(walks, 10)
    base, _, _ = timed(train_once(walks, g.n_nodes, ORDER[:1], False, args.threads), args.repeats)
    print(f"{args.dataset}, {args.threads} thread(s), {pairs:,} pairs, median of {args.repeats}")
    print(f"{'m':>2} {'weights':8} {'Mpairs/s':>9} {'cost/pair vs 1':>15}  dictionary")
    print(f"{1:>2} {'-':8} {pairs / base / 1e6:9.2f} {1.0:15.2f}  {ORDER[0]}", flush=True)
    for m in args.sizes:
        for learn in (True, False):
            run = train_once(walks, g.n_nodes, ORDER[:m], learn, args.threads)
            sec, _, _ = timed(run, args.repeats)
            print(f"{m:>2} {'learned' if learn else 'fixed':8} {pairs / sec / 1e6:9.2f} "
                  f"{sec / base:15.2f}  {','.join(ORDER[:m])}", flush=True)


def micro_f1(model: KernelNE, ds, repeats: int) -> list[float]:
    table = evaluate_node_classification(
        model, ds.labels, ds.graph.nodes, ratios=RATIOS, repeats=repeats, seed=0, n_jobs=-1
    )
    return [table.value("micro_f1", f"{r:g}") for r in RATIOS]


def weights(model: KernelNE) -> dict[str, float]:
    return {str(k): round(float(b), 4) for k, b in zip(model.kernels_, model.beta_, strict=True)}


def quality(args: argparse.Namespace) -> None:
    out = []
    print(f"{'dataset':9} {'task':9} {'method':6} {'F1@10%':>7} {'F1@50%':>7} {'F1@90%':>7} "
          f"{'AUC':>6} {'fit s':>6}  weights")
    for task, names in (("classify", args.datasets), ("linkpred", args.link)):
        for name in names:
            ds = load_dataset(name)
            split = make_link_split(ds.graph, seed=0) if task == "linkpred" else None
            graph = split.residual_graph() if split else ds.graph
            for method, kwargs in METHODS.items():
                model = KernelNE(**kwargs, workers=args.workers, random_state=args.seed)
                model.fit(graph)
                row = {"dataset": name, "task": task, "method": method,
                       "fit_seconds": round(model.fit_seconds_, 1), "weights": weights(model),
                       "beta_history": model.beta_history_.round(4).tolist()}
                if split:
                    auc = evaluate_link_prediction(model, split).value("roc_auc", "weighted_l2")
                    row["roc_auc"], cells = auc, f"{'':>7} {'':>7} {'':>7} {auc:6.3f}"
                else:
                    row["micro_f1"] = f1 = micro_f1(model, ds, args.repeats)
                    cells = " ".join(f"{x:7.3f}" for x in f1) + f" {'':>6}"
                out.append(row)
                shown = "" if method != "multi" else ", ".join(
                    f"{k}={b:.3f}" for k, b in row["weights"].items())
                print(f"{name:9} {task:9} {method:6} {cells} {model.fit_seconds_:6.1f}  {shown}",
                      flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"seed": args.seed, "workers": args.workers, "repeats": args.repeats,
                       "rows": out}, fh, indent=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    sp = sub.add_parser("speed")
    sp.add_argument("--dataset", default="cora")
    sp.add_argument("--sizes", nargs="+", type=int, default=[2, 3, 5, 7])
    sp.add_argument("--threads", type=int, default=1)
    sp.add_argument("--repeats", type=int, default=3)
    qp = sub.add_parser("quality")
    qp.add_argument("--datasets", nargs="*", default=["cora", "citeseer", "dblp"])
    qp.add_argument("--link", nargs="*", default=["cora", "hepth"])
    qp.add_argument("--repeats", type=int, default=10)
    qp.add_argument("--seed", type=int, default=0)
    qp.add_argument("--workers", type=int, default=2)
    qp.add_argument("--json", default=None)
    args = ap.parse_args()
    (speed if args.mode == "speed" else quality)(args)


if __name__ == "__main__":
    main()
