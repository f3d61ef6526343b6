"""MKernelNE with validation-chosen kernel weights against the best single kernel.

For each graph and seed (``random_state=seed``, ``workers=1``, ``--walks-per-node`` walks,
other settings the defaults, default dictionary :data:`kernelne.model.kernelne.DEFAULT_DICTIONARY`),
the whole graph is fitted once per candidate of :mod:`kernelne.model.kernel_choice`: each single
kernel of the dictionary (``beta`` one-hot: bit for bit the single-kernel fit), the uniform
fixed mix, and today's MKernelNE (``"train"``: weights learned by SGD). Then two honest
choices among them:

* ``valid-edges``: :func:`~kernelne.model.kernel_choice.choose_weights` without labels: 20% of the
  edges held out, every candidate refitted on the residual graph and scored by ROC-AUC; the
  winner's whole-graph fit is the one above (same settings and seed). Reads no label.
* ``valid-labels``: with the labels of a seeded half of the labelled nodes (``T``) only; the
  other half (``E``, the test half) is never passed to it.

Scores (node classification, one-vs-rest logistic regression, top-k rule,
:func:`kernelne.evaluation.evaluate_node_classification`, ``--repeats`` seeded splits):

* ``all``: Micro-F1 at 50% of all labelled nodes (the paper's protocol). Not shown for
  ``valid-labels`` (its choice read half of those labels).
* ``test half``: Micro-F1 at 50% of the test half ``E`` only (classifier trained on 25% of
  the labelled nodes): honest for every row.

The table: mean ± standard deviation over the seeds. ``best single`` is the single kernel with
the highest mean (an oracle: chosen on the scores themselves). Usage:

    python benchmarks/bench_kernel_choice.py [--graphs cora citeseer dense] [--seeds 0 1 2]
        [--walks-per-node 20] [--repeats 10] [--json out.json]

``dense``: ``nx.planted_partition_graph(10, 150, 24/149, 36/1350, seed=3)`` (1,500 nodes,
mean degree about 60, tests/test_partitioned.py), labels its ten groups. ``dense2``: COLLAPSE.md's
graph, ``kernelne generate 20000 600000 20 0.7 -o dense2 --seed 2`` (20,000 nodes, 600,000 edges,
mean degree 60, 20 groups, mixing 0.7), labels its groups.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

import networkx as nx
import numpy as np

from kernelne import KernelNE, load_dataset
from kernelne.engine.diagnostics import DegenerateEmbeddingWarning
from kernelne.evaluation import evaluate_node_classification
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.graphs.graph import Graph
from kernelne.model.kernel_choice import candidates, choose_weights


def load(name: str) -> tuple[Graph, np.ndarray, np.ndarray]:
    """The graph, the labelled nodes (user ids) and their n x K indicator (dense)."""
    if name == "dense":
        g = nx.planted_partition_graph(10, 150, 24 / 149, 36 / 1350, seed=3)
        src, dst = np.array(g.edges()).T
        graph = Graph.from_edges(src, dst)
        nodes = np.asarray(graph.nodes)
        Y = np.eye(10, dtype=int)[nodes.astype(int) // 150]
        return graph, nodes, Y
    if name == "dense2":  # kernelne generate 20000 600000 20 0.7 -o dense2 --seed 2
        edges, comm = planted_partition_sbm(20000, 600000, 20, 0.7, seed=2)
        graph = Graph.from_edges(edges[:, 0], edges[:, 1])
        nodes = np.asarray(graph.nodes)
        return graph, nodes, np.eye(20, dtype=int)[comm[nodes.astype(int)]]
    ds = load_dataset(name)
    Y = ds.labels.toarray().astype(int)
    keep = Y.sum(axis=1) > 0
    return ds.graph, np.asarray(ds.graph.nodes)[keep], Y[keep]


def micro_f1(model, Y, nodes, repeats: int, seed: int) -> float:
    table = evaluate_node_classification((model.embedding_, model.nodes_), Y, nodes,
                                         ratios=[0.5], repeats=repeats, seed=seed, n_jobs=1)
    return float(table.value("micro_f1"))


def run_one(name: str, seed: int, walks: int, repeats: int) -> dict:
    graph, nodes, Y = load(name)
    base = KernelNE(kernel="multi", walks_per_node=walks, workers=1, random_state=seed)
    fits, seconds = {}, {}
    for cand, setting in candidates(base.kernel_dictionary()):
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DegenerateEmbeddingWarning)
            fits[cand] = KernelNE(**{**base.get_params(), "beta_select": setting}).fit(graph)
        seconds[cand] = time.perf_counter() - t
    test = np.random.default_rng(seed).permutation(len(nodes))[: len(nodes) // 2]
    is_test = np.zeros(len(nodes), dtype=bool)
    is_test[test] = True
    t = time.perf_counter()
    by_edges, _ = choose_weights(base, graph, fits=fits)
    edge_seconds = time.perf_counter() - t
    by_labels, _ = choose_weights(base, graph, labels=(nodes[~is_test], Y[~is_test]),
                                  fits=fits)
    scores = {cand: {"all": micro_f1(m, Y, nodes, repeats, seed),
                     "test": micro_f1(m, Y[is_test], nodes[is_test], repeats, seed)}
              for cand, m in fits.items()}
    rows = dict(scores)
    rows["valid-edges"] = dict(scores[by_edges.winner_name], choice=by_edges.winner_name)
    rows["valid-labels"] = {"all": None, "test": scores[by_labels.winner_name]["test"],
                            "choice": by_labels.winner_name}
    return {"graph": name, "seed": seed, "rows": rows, "fit_seconds": seconds,
            "edge_choice_seconds": edge_seconds,
            "learned_beta": np.round(np.asarray(fits["train"].beta_, dtype=float), 4).tolist(),
            "edge_scores": dict(zip(by_edges.names, np.round(by_edges.scores, 4).tolist(),
                                    strict=True)),
            "label_scores": dict(zip(by_labels.names, np.round(by_labels.scores, 4).tolist(),
                                     strict=True))}


def table(results: list[dict]) -> str:
    lines = []
    for name in dict.fromkeys(r["graph"] for r in results):
        runs = [r for r in results if r["graph"] == name]
        lines.append(f"\n{name}  (seeds {', '.join(str(r['seed']) for r in runs)})")
        lines.append(f"  {'method':16} {'all (50%)':>16}  {'test half (50%)':>16}  choices")
        means = {}
        for row in runs[0]["rows"]:
            cells = []
            for col in ("all", "test"):
                vals = [r["rows"][row][col] for r in runs if r["rows"][row][col] is not None]
                if vals:
                    means[row, col] = float(np.mean(vals))
                    cells.append(f"{np.mean(vals):.4f} ± {np.std(vals):.4f}")
                else:
                    cells.append("(reads labels)")
            choices = ", ".join(r["rows"][row].get("choice", "") for r in runs)
            lines.append(f"  {row:16} {cells[0]:>16}  {cells[1]:>16}  {choices}")
        singles = [row for row in runs[0]["rows"] if ":" in row]
        for col in ("all", "test"):
            best = max(singles, key=lambda s, c=col: means[s, c])
            lines.append(f"  best single ({col}): {best} {means[best, col]:.4f}; "
                         + ", ".join(f"{row} {means[row, col] - means[best, col]:+.4f}"
                                     for row in ("train", "uniform", "valid-edges",
                                                 "valid-labels") if (row, col) in means))
        for r in runs:
            lines.append(f"  seed {r['seed']}: learned beta {r['learned_beta']}; fits "
                         + " ".join(f"{s:.0f}" for s in r["fit_seconds"].values())
                         + f" s; edge choice {r['edge_choice_seconds']:.0f} s")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", nargs="+", default=["cora", "citeseer", "dense"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--walks-per-node", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--json", default=None, help="write (and resume from) the results here")
    args = ap.parse_args()
    results = []
    if args.json and os.path.exists(args.json):
        with open(args.json) as fh:
            results = json.load(fh)
    for name in args.graphs:
        for seed in args.seeds:
            if any(r["graph"] == name and r["seed"] == seed for r in results):
                continue
            t = time.perf_counter()
            results.append(run_one(name, seed, args.walks_per_node, args.repeats))
            print(f"{name} seed {seed}: {time.perf_counter() - t:.0f} s", flush=True)
            if args.json:
                with open(args.json, "w") as fh:
                    json.dump(results, fh, indent=1)
    results = [r for r in results if r["graph"] in args.graphs and r["seed"] in args.seeds]
    print(f"walks_per_node={args.walks_per_node}, {args.repeats} splits per score, workers=1")
    print(table(results))


if __name__ == "__main__":
    main()
