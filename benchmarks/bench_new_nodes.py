"""New nodes without retraining: ``partial_fit`` against a full refit, quality and time.

For each dataset and seed: hold out 10% of the nodes (seeded), fit KernelNE (default settings,
``workers=1``, ``random_state=seed``) on the graph without them (their edges removed), then
``partial_fit`` the whole graph. The full refit is the same estimator fitted on the whole graph.
Quality: Micro-F1 of the held-out nodes, a one-vs-rest L2 logistic regression (the paper's,
top-k rule) trained on every other labelled node's vector and tested on the held-out nodes'
(each embedding's own vectors: the base fit's rows plus the new rows for ``partial_fit``).
Time: ``partial_fit`` (walks + training) against the full refit's ``fit``, wall-clock and
CPU seconds (the CPU time is the fairer figure on a busy machine). ``--cache DIR`` keeps the
refit and the base fit of each (dataset, seed, holdout) as model files with their measured
times and reuses them, so that a rerun (e.g. of another ``partial_fit`` setting) costs only the
``partial_fit`` and the classifiers. Usage:

    python benchmarks/bench_new_nodes.py [--datasets cora dblp] [--seeds 0 1 2]
        [--holdout 0.1] [--touched-rate 0] [--new-walks-factor 2] [--cache DIR]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import f1_score
from sklearn.multiclass import OneVsRestClassifier

from kernelne import KernelNE, load_dataset
from kernelne.evaluation.classification import default_classifier, top_k_predictions
from kernelne.graphs.graph import Graph


def without_nodes(graph: Graph, held: np.ndarray) -> Graph:
    """``graph`` with the nodes ``held`` (dense ids) and their edges removed; user ids kept."""
    keep = np.ones(graph.n_nodes, dtype=bool)
    keep[held] = False
    edges = graph.edges()
    edges = edges[keep[edges[:, 0]] & keep[edges[:, 1]]]
    kept = np.flatnonzero(keep)
    dense = np.full(graph.n_nodes, -1, dtype=np.int64)
    dense[kept] = np.arange(len(kept))
    return Graph.from_edges(dense[edges[:, 0]], dense[edges[:, 1]], n_nodes=len(kept),
                            nodes=graph.nodes[kept])


def heldout_micro_f1(X: np.ndarray, Y: np.ndarray, train: np.ndarray, test: np.ndarray) -> float:
    """Micro-F1 on ``test`` of the one-vs-rest classifier trained on ``train`` (top-k rule)."""
    train = train[Y[train].sum(axis=1) > 0]
    test = test[Y[test].sum(axis=1) > 0]
    clf = OneVsRestClassifier(default_classifier())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        clf.fit(X[train], Y[train])
    pred = top_k_predictions(clf.predict_proba(X[test]), Y[test].sum(axis=1))
    return float(f1_score(Y[test], pred, average="micro", zero_division=0))


def fits(g: Graph, held: np.ndarray, seed: int, cache: Path | None, key: str):
    """The full refit and the base fit (without ``held``), from ``cache`` if it holds them:
    (full, base, full wall-clock s, full CPU s, base wall-clock s)."""
    files = None
    if cache is not None:
        files = [cache / f"{key}-{part}.npz" for part in ("full", "base")]
        times = cache / f"{key}-times.json"
        if all(f.is_file() for f in files) and times.is_file():
            t = json.loads(times.read_text())
            full, base = (KernelNE.load_model(f) for f in files)
            full.n_pairs_ = t.get("pairs_full")  # not in a model file
            return full, base, t["full_s"], t["full_cpu"], t["base_s"]
    t, c = time.perf_counter(), time.process_time()
    full = KernelNE(workers=1, random_state=seed).fit(g)
    full_s, full_cpu = time.perf_counter() - t, time.process_time() - c
    base = KernelNE(workers=1, random_state=seed).fit(without_nodes(g, held))
    base_s = base.fit_seconds_
    if files is not None:
        cache.mkdir(parents=True, exist_ok=True)
        full.save_model(files[0])
        base.save_model(files[1])
        times.write_text(json.dumps({"full_s": full_s, "full_cpu": full_cpu,
                                     "base_s": base_s, "pairs_full": full.n_pairs_}))
        base = KernelNE.load_model(files[1])  # as a rerun would see it
    return full, base, full_s, full_cpu, base_s


def warm_up() -> None:
    """Compile the trainer and the walks (numba) before anything is timed: otherwise the first
    fit's time includes the compilation."""
    from kernelne.cli.demo import planted_partition

    graph, _ = planted_partition(seed=0)
    small = dict(dim=8, walks_per_node=2, walk_length=5, window=2, workers=1, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # so few walks leave the rows uninformative
        KernelNE(**small).fit(without_nodes(graph, np.arange(10))).partial_fit(graph)


def run(name: str, seed: int, holdout: float, touched_rate: float,
        cache: Path | None = None, new_walks_factor: int = 2) -> dict:
    ds = load_dataset(name)
    g, Y = ds.graph, ds.labels.toarray()
    rng = np.random.default_rng([seed, 1])
    held = np.sort(rng.choice(g.n_nodes, round(holdout * g.n_nodes), replace=False))
    others = np.setdiff1d(np.arange(g.n_nodes), held)

    full, base, full_s, full_cpu, base_s = fits(g, held, seed, cache,
                                                f"{name}-{seed}-{holdout:g}")
    t, c = time.perf_counter(), time.process_time()
    base.partial_fit(g, touched_rate=touched_rate, new_walks_factor=new_walks_factor)
    partial_s, partial_cpu = time.perf_counter() - t, time.process_time() - c
    assert np.array_equal(base.nodes_, g.nodes)
    row = {
        "dataset": name, "seed": seed, "held_out": len(held),
        "touched": len(base.touched_nodes_), "touched_rate": touched_rate,
        "f1_partial": heldout_micro_f1(base.embedding_, Y, others, held),
        "f1_full": heldout_micro_f1(full.embedding_, Y, others, held),
        "seconds_partial": partial_s, "seconds_full": full_s, "seconds_base_fit": base_s,
        "cpu_seconds_partial": partial_cpu, "cpu_seconds_full": full_cpu,
        "pairs_partial": base.n_pairs_, "pairs_full": full.n_pairs_,
    }
    print(f"{name} seed {seed}: Micro-F1 new nodes partial {row['f1_partial']:.4f} full "
          f"{row['f1_full']:.4f} | seconds partial {partial_s:.2f} full {full_s:.2f} "
          f"({partial_s / full_s:.1%}; CPU {partial_cpu:.2f} vs {full_cpu:.2f}, "
          f"{partial_cpu / full_cpu:.1%}) | {len(held)} new, {row['touched']} touched nodes",
          flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cora", "dblp"])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--holdout", type=float, default=0.1)
    ap.add_argument("--touched-rate", type=float, default=0.0)
    ap.add_argument("--new-walks-factor", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=None,
                    help="keep (and reuse) the refits and base fits as model files here")
    ap.add_argument("--json", default=None, help="write every row to this JSON file")
    args = ap.parse_args()
    warm_up()
    rows = [run(name, seed, args.holdout, args.touched_rate, args.cache, args.new_walks_factor)
            for name in args.datasets for seed in args.seeds]
    for name in args.datasets:
        mine = [r for r in rows if r["dataset"] == name]
        mean = {k: float(np.mean([r[k] for r in mine]))
                for k in ("f1_partial", "f1_full", "seconds_partial", "seconds_full",
                          "cpu_seconds_partial", "cpu_seconds_full")}
        print(f"{name} mean of {len(mine)} seeds: Micro-F1 new nodes partial "
              f"{mean['f1_partial']:.4f} full {mean['f1_full']:.4f} (diff "
              f"{mean['f1_partial'] - mean['f1_full']:+.4f}) | seconds partial "
              f"{mean['seconds_partial']:.2f} full {mean['seconds_full']:.2f} "
              f"({mean['seconds_partial'] / mean['seconds_full']:.1%}); CPU seconds "
              f"{mean['cpu_seconds_partial']:.2f} vs {mean['cpu_seconds_full']:.2f} "
              f"({mean['cpu_seconds_partial'] / mean['cpu_seconds_full']:.1%})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
