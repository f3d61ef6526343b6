"""What the negative pool's size costs in quality: the default fit at several ``negative_pool``
sizes, scored on labelled graphs and on link prediction.

For each graph, each ``--pools`` value Q and each ``--seeds`` seed, ``KernelNE(negative_pool=Q)``
(everything else at its defaults: the setting and the propagation chosen on the graph) is
fitted with ``--threads`` threads and scored:

* a labelled graph (``sbm:N:M:K:MU``, ``cora``, ``citeseer``, ``dblp`` or ``dev:NAME``, read as
  ``benchmarks/bench_walk_budget.py`` reads them): Micro-F1 at 50% of a seeded sample of at most
  ``--sample`` labelled nodes, the mean of ``--splits`` splits (liblinear, C = 1);
* ``link:NAME`` (a packaged network): ROC-AUC of link prediction on a 50% split of its largest
  component (seed 0, :func:`kernelne.evaluation.splits.make_link_split`), the fit on the
  residual graph (the default edge operator ``weighted_l2``, C = 1).

Below :data:`~kernelne.engine.trainer.POOL_FROM_NODES` nodes the default uses no pool; giving Q
there measures what the pool's correlated negatives cost on that graph's structure. The record
holds the fit's seconds, its training rate, the setting and the score; each is appended to
``--out`` as a JSON line as soon as it is measured, and a rerun skips the (graph, Q, seed)
already there.

    python benchmarks/bench_negative_pool.py --graphs sbm:100000:1000000:100:0.5 \\
        --pools 128 32 --out benchmarks/results/negative_pool.jsonl
    python benchmarks/bench_negative_pool.py --graphs cora citeseer link:astroph \\
        --pools 128 32 --seeds 0 1 2 3 --splits 5
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bench_walk_budget import emit, graph_and_labels, micro_f1, recorded, scoring_arguments

import kernelne
from kernelne import KernelNE, load_dataset
from kernelne.evaluation.linkpred import evaluate_link_prediction
from kernelne.evaluation.splits import make_link_split


def fit(graph, pool: int, seed: int, threads: int) -> tuple[KernelNE, float]:
    model = KernelNE(negative_pool=pool, workers=threads, random_state=seed, verbose=False)
    start = time.perf_counter()
    model.fit(graph)
    return model, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", nargs="+", default=["sbm:100000:1000000:100:0.5"])
    ap.add_argument("--pools", type=int, nargs="+", default=[128, 32])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    scoring_arguments(ap)
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    done = recorded(args.out, ("graph", "pool", "seed"))
    for name in args.graphs:
        if name.startswith("link:"):
            split = make_link_split(load_dataset(name[5:]).graph, 0.5, seed=0)
            graph, labels = split.residual_graph(), None
        else:
            graph, labels = graph_and_labels(name, work, args.dev_dir)
        for pool in args.pools:
            for seed in args.seeds:
                if (name, pool, seed) in done:
                    continue
                model, seconds = fit(graph, pool, seed, args.threads)
                rec = {"graph": name, "nodes": graph.n_nodes, "pool": pool, "seed": seed,
                       "fit_s": round(seconds, 1),
                       "pairs_per_s": round(model.n_pairs_ / model.stage_seconds_["training"]),
                       "setting": model.setting_["name"],
                       "threads": args.threads, "version": kernelne.__version__}
                if labels is None:
                    table = evaluate_link_prediction(model, split)
                    rec["roc_auc"] = round(table.value("roc_auc"), 4)
                else:
                    rec["micro_f1_50"] = round(micro_f1(model, labels, args.sample,
                                                        args.splits), 4)
                emit(rec, args.out)


if __name__ == "__main__":
    main()
