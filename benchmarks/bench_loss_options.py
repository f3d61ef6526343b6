"""The loss and context-weighting options, alone and combined, against DeepWalk.

For each graph and seed, KernelNE is fitted once per variant (``--variants``; by default the
paper's squared loss, ``loss="loglik"``, ``window_shrink``, ``subsample``, and their
combinations) with ``workers=1`` and ``random_state=seed``, and DeepWalk (gensim skip-gram,
negative sampling, shrinking windows, no subsampling) with the same seed, hence the same walk
corpus (both generate it from the seed). Each embedding is scored by node classification
(one-vs-rest liblinear logistic regression, C = 1, top-k rule) at ``--ratios`` training
ratios, mean Micro-F1 over ``--repeats`` random splits (seeded, the same for every method);
the table reports, per graph, variant and ratio, the mean and standard deviation of that
figure over the seeds, plus the mean fit time. With ``--select-C`` every embedding is also
scored with the classifier's C chosen per split on its training nodes
(:data:`~kernelne.evaluation.classification.SELECT_CS`, docs/METHOD.md §10): the paper's fixed
C = 1 depends on the embedding's scale, this does not.

Graphs: ``cora``, ``citeseer``, ``dblp`` (packaged) and planted partitions from
:func:`kernelne.graphs.generators.planted_partition_sbm`, named ``sbm:N:M:K:MU:SEED`` (``N`` nodes,
``M`` edges, ``K`` communities, a share ``MU`` of edge ends drawn from the whole graph), or the
shorthands in :data:`PLANTED`. Usage:

    python benchmarks/bench_loss_options.py [--graphs cora citeseer dense-s ...] [--seeds 0 1]
        [--variants squared loglik shrink sub ...] [--walks-per-node 80] [--subsample 1e-3]
        [--repeats 5] [--select-C] [--json out.json] [--markdown out.md]
    python benchmarks/bench_loss_options.py --summarize a.json b.json ... [--markdown out.md]

``--summarize`` fits nothing: it reads the JSON files of earlier runs (one per graph, say) and
prints their tables, then a row per graph with a cell per score column: the best KernelNE
variant and the best baseline (by the mean over seeds; the first ± the std over the seeds),
their gap with "≈" when behind by at most the larger of the two stds and "**behind**" when by
more, and in brackets the default's (``squared``) gap to that baseline (docs/QUALITY.md §1).

A variant is a ``+``-joined list of ``loglik``, ``shrink``, ``sub`` and one kernel, ``sch``
(Schoenberg, alpha = 1), ``multi`` (MKernelNE's default dictionary, learned weights) or ``lin``
(the inner product: the paper's kernel-free "NE");
``squared`` alone is the paper's setting; ``auto`` is the library's default
(``KernelNE()``: the setting chosen from the graph, the rows rescaled). A baseline name
(``deepwalk``, ``netmf``, ``line``, ``hope``, ``node2vec``) fits that method from
:mod:`kernelne.baselines` with the same dimension, walks, window and seed (the walk methods
draw the same corpus). ``walksN`` and ``winN`` set the walks per node and the window of one
variant (``sch+shrink+win5+walks160``, ``deepwalk+walks160``).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from kernelne import KernelNE, load_dataset
from kernelne.baselines import METHODS, make_method
from kernelne.evaluation import evaluate_node_classification
from kernelne.evaluation.classification import SELECT_CS
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.graphs.graph import Graph

# docs/COLLAPSE.md's two dense planted partitions, scaled-down versions of them (same mean
# degree and mixing, 3,000 nodes, the same community size where it fits) and three sparse ones.
PLANTED = {
    "dense": "sbm:10000:330000:40:0.6:1",   # COLLAPSE.md "dense", `kernelne generate ... --seed 1`
    "dense2": "sbm:20000:600000:20:0.7:2",  # COLLAPSE.md "dense2", `kernelne generate ... --seed 2`
    "dense-s": "sbm:3000:99000:12:0.6:1",    # COLLAPSE.md "dense": mean degree ~62, mu 0.6
    "dense2-s": "sbm:3000:90000:3:0.7:2",    # COLLAPSE.md "dense2": mean degree 60, mu 0.7
    "sparse-mixed": "sbm:3000:15000:10:0.5:3",  # mean degree ~10, half the ends random
    "sparse-clear": "sbm:4000:16000:20:0.25:4",  # mean degree ~8, clear communities
    "sparse-low": "sbm:5000:10000:25:0.35:5",  # mean degree ~4 (citation-like), 25 small groups
}
DEFAULT_VARIANTS = ["squared", "loglik", "shrink", "sub", "loglik+shrink", "shrink+sub",
                    "loglik+shrink+sub", "deepwalk"]


def load_graph_and_labels(name: str) -> tuple[Graph, np.ndarray | object]:
    spec = PLANTED.get(name, name)
    if spec.startswith("sbm:"):
        n, m, k, mu, seed = spec.split(":")[1:]
        edges, comm = planted_partition_sbm(int(n), int(m), int(k), float(mu), int(seed))
        return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=int(n)), comm
    data = load_dataset(name)
    return data.graph, data.labels


def is_baseline(variant: str) -> bool:
    """Whether ``variant`` fits a baseline (``deepwalk``, ``netmf+walks160``, ...)."""
    return variant.split("+")[0] in METHODS


def make_model(variant: str, args: argparse.Namespace, seed: int):
    common = {"dim": args.dim, "walks_per_node": args.walks_per_node,
              "walk_length": args.walk_length, "window": args.window, "workers": 1,
              "random_state": seed}
    parts = set(variant.split("+")) - {"squared"}
    for prefix, key in (("walks", "walks_per_node"), ("win", "window")):
        for part in [p for p in parts if p.startswith(prefix) and p[len(prefix):].isdigit()]:
            common[key] = int(part[len(prefix):])
            parts.discard(part)
    if is_baseline(variant):
        if len(parts) != 1:
            raise SystemExit(f"a baseline takes only walksN and winN, not {variant!r}")
        return make_method(parts.pop(), ignore_unknown=True, **common)
    kernels = {"sch": "schoenberg", "multi": "multi", "lin": "linear"}
    unknown = parts - {"loglik", "shrink", "sub", "auto", *kernels}
    if unknown or len(parts & set(kernels)) > 1:
        raise SystemExit(f"unknown variant part(s) or two kernels in {variant!r}")
    kernel = next((kernels[p] for p in parts if p in kernels), "gauss")
    if "auto" in parts:  # the library's default: the setting chosen, the rows rescaled
        return KernelNE(**common)
    return KernelNE(**common, kernel=kernel, loss="loglik" if "loglik" in parts else "squared",
                    window_shrink="shrink" in parts,
                    subsample=args.subsample if "sub" in parts else 0.0,
                    setting="given", normalize="none")  # each variant as named, rows as trained


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", nargs="+", default=["cora", "citeseer", *PLANTED])
    ap.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    ap.add_argument("--subsample", type=float, default=1e-3, help="threshold t of 'sub'")
    ap.add_argument("--walks-per-node", type=int, default=80)
    ap.add_argument("--walk-length", type=int, default=10)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--ratios", nargs="+", type=float, default=[0.1, 0.5])
    ap.add_argument("--repeats", type=int, default=5, help="classification splits per fit")
    ap.add_argument("--select-C", action="store_true",
                    help="also score with C chosen per split (C = 1 is the paper's)")
    ap.add_argument("--json", type=Path, default=None, help="write every score here")
    ap.add_argument("--markdown", type=Path, default=None, help="write the table here")
    ap.add_argument("--summarize", type=Path, nargs="+", default=None, metavar="JSON",
                    help="fit nothing: tables and summary of these earlier runs' --json files")
    args = ap.parse_args()
    if args.summarize:
        text = summarize(args.summarize)
        print(text)
        if args.markdown:
            args.markdown.write_text(text + "\n")
        return

    # numba's compilation outside the timings
    KernelNE(dim=8, walks_per_node=1, workers=1, random_state=0).fit(
        Graph.from_edges(np.arange(20), (np.arange(20) + 1) % 20))
    records = []
    for name in args.graphs:
        graph, labels = load_graph_and_labels(name)
        print(f"# {name}: {graph.summary()}", flush=True)
        for seed in args.seeds:
            for variant in args.variants:
                model = make_model(variant, args, seed)
                start = time.perf_counter()
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    model.fit(graph)
                seconds = time.perf_counter() - start
                f1 = micro_f1(model.embedding_, labels, graph, args, None)
                if args.select_C:
                    f1 += micro_f1(model.embedding_, labels, graph, args, SELECT_CS)
                narrowed = len(getattr(model, "narrowed_", []))
                records.append({"graph": name, "variant": variant, "seed": seed,
                                "micro_f1": f1, "seconds": seconds, "narrowed": narrowed,
                                "warnings": [str(w.message)[:80] for w in caught]})
                print(f"{name:14s} seed {seed} {variant:18s} "
                      + " ".join(f"{v:.4f}" for v in f1)
                      + f"  {seconds:6.1f} s" + (f"  narrowed x{narrowed}" if narrowed else "")
                      + ("  WARN" if caught else ""), flush=True)
                if args.json:
                    args.json.write_text(json.dumps({"args": vars(args) | {
                        "json": str(args.json), "markdown": str(args.markdown)},
                        "records": records}, indent=1))
    text = markdown(records, args)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")


def micro_f1(embedding: np.ndarray, labels, graph: Graph, args: argparse.Namespace,
             select_C: tuple[float, ...] | None) -> list[float]:
    """Mean Micro-F1 over ``args.repeats`` splits (seed 0) at each of ``args.ratios``."""
    table = evaluate_node_classification(embedding, labels, graph.nodes, ratios=args.ratios,
                                         repeats=args.repeats, seed=0, n_jobs=1,
                                         select_C=select_C)
    return [table.value("micro_f1", f"{r:g}") for r in args.ratios]


def score_columns(args: argparse.Namespace) -> list[str]:
    """The names of a record's ``micro_f1`` entries, in order."""
    ratios = [f"{r:.0%}" for r in args.ratios]
    if args.select_C:
        ratios += [f"{r:.0%} C chosen" for r in args.ratios]
    return ratios


def markdown(records: list[dict], args: argparse.Namespace) -> str:
    ratios = score_columns(args)
    head = ("| graph | variant | " + " | ".join(f"Micro-F1 {r}" for r in ratios)
            + " | fit s |\n|---|---|" + "---|" * len(ratios) + "---|")
    lines = [head]
    for name in dict.fromkeys(r["graph"] for r in records):
        for variant in dict.fromkeys(r["variant"] for r in records if r["graph"] == name):
            rows = [r for r in records if r["graph"] == name and r["variant"] == variant]
            f1 = np.array([r["micro_f1"] for r in rows])
            cells = [f"{m:.4f} ± {s:.4f}" for m, s in zip(f1.mean(0), f1.std(0), strict=True)]
            secs = np.mean([r["seconds"] for r in rows])
            note = " (narrowed)" if any(r["narrowed"] for r in rows) else ""
            lines.append(f"| {name} | {variant}{note} | " + " | ".join(cells)
                         + f" | {secs:.0f} |")
    return "\n".join(lines)


def summarize(paths: list[Path]) -> str:
    """Every run's table, then a row per graph: in each score column the best KernelNE variant
    and the default (``squared``) against the best baseline (means over the seeds)."""
    runs: dict[tuple, dict] = {}  # the records of every file, joined by their score columns
    for path in paths:
        run = json.loads(path.read_text())
        args = argparse.Namespace(**run["args"])
        runs.setdefault(tuple(score_columns(args)), {"args": args, "records": []}
                        )["records"] += run["records"]
    parts = []
    for columns, run in runs.items():
        parts.append(markdown(run["records"], run["args"]))
        lines = ["| graph | " + " | ".join(columns) + " |\n|---|" + "---|" * len(columns)]
        for name in dict.fromkeys(r["graph"] for r in run["records"]):
            stats = {}
            for r in run["records"]:
                if r["graph"] == name:
                    stats.setdefault(r["variant"], []).append(r["micro_f1"])
            stats = {v: (np.mean(f1, axis=0), np.std(f1, axis=0)) for v, f1 in stats.items()}
            kernelne_variants = {v: s for v, s in stats.items() if not is_baseline(v)}
            baselines = {v: s for v, s in stats.items() if is_baseline(v)}
            if kernelne_variants and baselines:
                lines.append(f"| {name} | " + " | ".join(
                    _cell(kernelne_variants, baselines, j) for j in range(len(columns))) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _cell(kernelne_variants: dict, baselines: dict, j: int) -> str:
    """Column ``j``: the best KernelNE variant against the best baseline, gap and verdict, and
    the default's gap."""
    best = max(kernelne_variants, key=lambda v: kernelne_variants[v][0][j])
    base = max(baselines, key=lambda v: baselines[v][0][j])
    (mean, std), (base_mean, base_std) = kernelne_variants[best], baselines[base]
    gap = mean[j] - base_mean[j]
    word = "" if gap >= 0 else " ≈" if -gap <= max(std[j], base_std[j]) else " **behind**"
    cell = (f"{best} {mean[j]:.4f} ± {std[j]:.4f} vs {base} {base_mean[j]:.4f}: "
            f"{gap:+.4f}{word}")
    if "squared" in kernelne_variants:
        cell += f" (default {kernelne_variants['squared'][0][j] - base_mean[j]:+.4f})"
    return cell


if __name__ == "__main__":
    main()
