"""The paper's baselines on its classification datasets, beside the paper's numbers.

Each baseline runs with its defaults (the paper's settings, docs/METHOD.md §13) and one seed; the
embedding is scored by the evaluation module's node classification (one-vs-rest liblinear
logistic regression, C = 1, top-k rule) at 10%, 50% and 90% training ratios, mean Micro-F1 over
``--repeats`` random splits. Fit time is wall time of ``fit`` after a warm-up fit on a small
graph (numba compilation excluded); peak memory is the growth of the process' peak resident set
during the fit. Diagnostic rows (``--diagnostics``), which explain gaps to the paper:
``hope/std``, the same HOPE embedding with features standardised before the classifier;
``hope/b.01``, HOPE with beta = 0.01; ``deepwalk/hs``, DeepWalk's original objective
(hierarchical softmax instead of negative sampling, gensim on the same walks). Usage:

    python benchmarks/bench_baselines.py [--datasets cora citeseer] [--methods ...] [--repeats 10]
        [--diagnostics]
"""

from __future__ import annotations

import argparse

import networkx as nx
import numpy as np
from _common import current_rss_mb, peak_rss_mb, reset_peak_rss
from gensim.models import Word2Vec
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from kernelne import load_dataset, random_walks
from kernelne.baselines import METHODS, make_method
from kernelne.evaluation import default_classifier, evaluate_node_classification
from kernelne.graphs.graph import from_networkx

RATIOS = (0.1, 0.5, 0.9)
PAPER = {  # the paper's Table II, Micro-F1 at 10%, 50%, 90%
    "citeseer": {
        "deepwalk": (0.517, 0.584, 0.592), "node2vec": (0.541, 0.597, 0.599),
        "line": (0.466, 0.551, 0.564), "hope": (0.219, 0.277, 0.320),
        "netmf": (0.552, 0.603, 0.608),
    },
    "cora": {
        "deepwalk": (0.747, 0.819, 0.833), "node2vec": (0.769, 0.831, 0.841),
        "line": (0.661, 0.765, 0.775), "hope": (0.302, 0.302, 0.302),
        "netmf": (0.773, 0.834, 0.844),
    },
}


def micro_f1(model, dataset, repeats: int, classifier=None) -> list[float]:
    table = evaluate_node_classification(
        model, dataset.labels, dataset.graph.nodes, ratios=RATIOS, repeats=repeats, seed=0,
        classifier=classifier, n_jobs=-1,
    )
    return [table.value("micro_f1", f"{r:g}") for r in RATIOS]


def deepwalk_hs(graph, seed: int) -> np.ndarray:
    """DeepWalk as published: skip-gram with hierarchical softmax on uniform walks."""
    walks = random_walks(graph, 80, 10, seed=seed)
    sentences = [[str(v) for v in row if v >= 0] for row in walks]
    model = Word2Vec(
        sentences, vector_size=128, window=10, sg=1, hs=1, negative=0, min_count=0, sample=0,
        seed=seed, epochs=1,
    )
    return np.stack([model.wv[str(i)] for i in range(graph.n_nodes)])


def diagnostic_rows(name: str, model, ds, seed: int, repeats: int) -> list:
    if name == "hope":
        std = make_pipeline(StandardScaler(), default_classifier())
        small_beta = make_method("hope", beta=0.01, random_state=seed).fit(ds.graph)
        return [
            ("hope/std", micro_f1(model, ds, repeats, std)),
            ("hope/b.01", micro_f1(small_beta, ds, repeats)),
        ]
    if name == "deepwalk":
        return [("deepwalk/hs", micro_f1(deepwalk_hs(ds.graph, seed), ds, repeats))]
    return []


def fit_measured(name: str, graph, seed: int, workers: int | None):
    model = make_method(name, random_state=seed, workers=workers)
    base = current_rss_mb()
    reset_peak_rss()
    model.fit(graph)
    return model, peak_rss_mb() - base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["cora", "citeseer"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--diagnostics", action="store_true")
    args = parser.parse_args()

    warm = from_networkx(nx.planted_partition_graph(2, 50, 0.2, 0.01, seed=0))
    for name in args.methods:
        make_method(name, dim=8, random_state=0, workers=args.workers).fit(warm)

    header = f"{'dataset':9} {'method':11} " + " ".join(
        f"{f'{r:.0%}':>13}" for r in RATIOS
    ) + f" {'fit s':>7} {'peak MiB':>9}"
    print(header + "\n" + " " * 22 + "   kern  paper" * len(RATIOS))
    for ds_name in args.datasets:
        ds = load_dataset(ds_name)
        for name in args.methods:
            model, peak = fit_measured(name, ds.graph, args.seed, args.workers)
            rows = [(name, micro_f1(model, ds, args.repeats))]
            if args.diagnostics:
                rows += diagnostic_rows(name, model, ds, args.seed, args.repeats)
            for label, scores in rows:
                paper = PAPER.get(ds_name, {}).get(name, (float("nan"),) * len(RATIOS))
                cells = " ".join(f"{s:7.3f}{p:6.3f}" for s, p in zip(scores, paper, strict=True))
                cost = f"{model.fit_seconds_:7.1f} {peak:9.1f}" if label == name else ""
                print(f"{ds_name:9} {label:11} {cells} {cost}", flush=True)


if __name__ == "__main__":
    main()
