"""Evaluation protocols (docs/METHOD.md §10-§11) at full size: split speed, classifier time, scores.

* split: time (median of runs) and peak-memory growth of the link-prediction split of AstroPh
  (17,903 nodes, 196,972 edges, half held out); the graph is loaded outside the timing.
* classify: a KernelNE embedding (default settings, random_state=0) of each dataset, scored at
  the paper's nine ratios with 50 repeats on all cores; Micro-/Macro-F1 means, the wall time
  and the CPU time of the process and its workers (the wall time on an idle machine is about
  CPU / cores).
* linkpred: split (seed 0), KernelNE (default settings, random_state=0) learned on the
  residual graph, weighted-L2 edge features; ROC-AUC and average precision.

Usage:

    python benchmarks/bench_evaluation.py [--tasks split classify linkpred]
        [--classify cora dblp] [--linkpred cora facebook] [--repeats 50] [--jobs -1]
"""

from __future__ import annotations

import argparse
import time

import psutil
from _common import timed

from kernelne import KernelNE, load_dataset
from kernelne.evaluation import (
    PAPER_RATIOS,
    evaluate_link_prediction,
    evaluate_node_classification,
    make_link_split,
)


def bench_split(runs: int) -> None:
    graph = load_dataset("astroph").graph
    seconds, peak, times = timed(lambda: make_link_split(graph, 0.5, seed=0), runs)
    print(f"split astroph ({graph.summary()}, half held out): median {seconds:.2f} s "
          f"over {runs} runs {[round(t, 2) for t in times]}, peak memory +{peak:.0f} MiB")


def cpu_seconds() -> float:
    """CPU time of this process and its live children (the joblib workers), in seconds."""
    total = 0.0
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def bench_classify(name: str, repeats: int, jobs: int) -> None:
    ds = load_dataset(name)
    start = time.perf_counter()
    model = KernelNE(random_state=0).fit(ds.graph)
    fit = time.perf_counter() - start
    start, cpu = time.perf_counter(), cpu_seconds()
    table = evaluate_node_classification(
        model, ds.labels, ds.graph.nodes, ratios=PAPER_RATIOS, repeats=repeats, seed=0,
        n_jobs=jobs, method="kernelne", dataset=name,
    )
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    print(table.to_text())
    print(f"classify {name}: {len(PAPER_RATIOS)} ratios x {repeats} repeats in {seconds:.1f} s "
          f"wall, {cpu:.1f} s CPU (n_jobs={jobs}; embedding fit {fit:.1f} s)")


def bench_linkpred(name: str) -> None:
    graph = load_dataset(name).graph
    start = time.perf_counter()
    split = make_link_split(graph, 0.5, seed=0)
    made = time.perf_counter() - start
    model = KernelNE(random_state=0).fit(split.residual_graph())
    start = time.perf_counter()
    table = evaluate_link_prediction(model, split, method="kernelne", dataset=name)
    print(table.to_text())
    print(f"linkpred {name}: split seed 0 in {made:.2f} s, embedding seed 0, "
          f"scoring {time.perf_counter() - start:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", nargs="+", default=["split", "classify", "linkpred"],
                    choices=["split", "classify", "linkpred"])
    ap.add_argument("--classify", nargs="+", default=["cora"], metavar="DATASET")
    ap.add_argument("--linkpred", nargs="+", default=["cora", "facebook"], metavar="DATASET")
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--jobs", type=int, default=-1)
    ap.add_argument("--split-runs", type=int, default=3)
    args = ap.parse_args()
    if "split" in args.tasks:
        bench_split(args.split_runs)
    if "classify" in args.tasks:
        for name in args.classify:
            bench_classify(name, args.repeats, args.jobs)
    if "linkpred" in args.tasks:
        for name in args.linkpred:
            bench_linkpred(name)


if __name__ == "__main__":
    main()
