"""Stage profile of the default fit: where a large graph's time and memory go.

For each size the script writes a labelled planted partition with ``kernelne generate N M K MU``
(kept in ``--work`` for later runs), then in this process reads it, fits ``KernelNE()`` at
its defaults (only ``workers`` and ``random_state`` set) and writes the embedding, timing each
stage and its peak resident memory above the memory before the fit (Linux ``VmHWM``, reset
before each stage):

* reading (:func:`kernelne.load_graph` of the text edge list);
* counting (the counting pass over the walks: it makes them, and holds them for training
  where they fit), noise tables (the alias table), the mean degree (the setting's choice),
  walks (those made while training, streamed, where they are not held), training (SGD, with
  its pairs per second), the restart test (its looks at the rows), health (the neighbour
  AUC and the offset), output scale, propagation; ``other`` is the fit's rest;
* writing (``.npy`` and its ids);
* Micro-F1 at 50% on a seeded sample of ``--sample`` nodes (one split, liblinear).

The walks, training and the fit's rest are timed by the fit's own clock; their memory is
within the fit's peak (``-`` in the table).

Each stage is timed by wrapping the function the fit calls for it; the walks and training
split is the fit's own ``stage_seconds_``. Prints one JSON record per size and a Markdown
table; ``--out`` appends the records to a JSON-lines file.

    python benchmarks/bench_stages.py --nodes 100000 1000000 --threads 2
    python benchmarks/bench_stages.py --nodes 10000000 --edges-per-node 10 --skip-quality
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from collections import defaultdict
from functools import wraps
from pathlib import Path

import numpy as np
from _common import current_rss_mb, peak_rss_mb, reset_peak_rss

import kernelne
from kernelne import KernelNE, load_graph
from kernelne.embedding_io import save_embedding
from kernelne.model import drivers, restarts

#: (module, function name, stage) wrapped to time a stage of the fit
WRAPPED = [
    (drivers, "count_walks", "counting"),
    (drivers, "alias_table", "noise tables"),
    (drivers, "mean_degree", "mean degree"),
    (restarts, "shell_figures", "restart test"),
    (drivers, "embedding_health", "health"),
    (drivers, "rescale", "output scale"),
    (drivers, "propagated", "propagation"),
]
ORDER = ["reading", "counting", "noise tables", "mean degree", "walks", "training",
         "restart test", "health", "output scale", "propagation", "other", "writing"]


class Stages:
    """Seconds and peak MiB (above ``base``) per stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.peak: dict[str, float] = defaultdict(float)
        self.base = current_rss_mb()

    def run(self, stage: str, fn, *args, **kwargs):
        reset_peak_rss()
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            self.seconds[stage] += time.perf_counter() - start
            self.peak[stage] = max(self.peak[stage], peak_rss_mb() - self.base)


#: the stages of the size being profiled (the wrappers report into it)
CURRENT: list[Stages] = []


def wrap_stages() -> None:
    """Replace each function of :data:`WRAPPED` by one that times it into ``CURRENT[-1]``."""
    for module, name, stage in WRAPPED:
        fn = getattr(module, name)

        @wraps(fn)
        def timed(*args, _fn=fn, _stage=stage, **kwargs):
            return CURRENT[-1].run(_stage, _fn, *args, **kwargs)

        setattr(module, name, timed)


def generated(work: Path, n: int, m: int, k: int, mu: float) -> Path:
    prefix = work / f"sbm-{n}-{m}-{k}-{mu:g}"
    if not Path(f"{prefix}.edges").exists():
        subprocess.run([sys.executable, "-m", "kernelne", "generate", str(n), str(m), str(k),
                        str(mu), "-o", str(prefix), "--seed", "0"], check=True)
    return prefix


def micro_f1(rows: np.ndarray, nodes: np.ndarray, labels: Path, sample: int) -> float:
    from kernelne.evaluation import evaluate_node_classification

    lab = np.loadtxt(labels, dtype=np.int64)
    community = dict(zip(lab[:, 0].tolist(), lab[:, 1].tolist(), strict=True))
    pick = np.random.default_rng(0).choice(len(nodes), min(sample, len(nodes)), replace=False)
    y = np.array([community[int(nodes[r])] for r in pick])
    table = evaluate_node_classification(rows[pick], y, ratios=[0.5], repeats=1, seed=0)
    return next(r.mean for r in table.rows if r.metric == "micro_f1")


def profile(prefix: Path, args: argparse.Namespace) -> dict:
    stages = Stages()
    CURRENT.append(stages)
    g = stages.run("reading", load_graph, f"{prefix}.edges")
    model = KernelNE(workers=args.threads, random_state=0, verbose=False,
                     **({} if args.walks_per_node is None
                        else {"walks_per_node": args.walks_per_node}))
    start = time.perf_counter()
    cpu = time.process_time()
    stages.run("fit", model.fit, g)
    fit_seconds, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
    own = model.stage_seconds_
    stages.seconds["walks"] = max(0.0, own["walks"] - stages.seconds["counting"]  # the fit's
                                  - stages.seconds["noise tables"]  # walks hold the work
                                  - stages.seconds["restart test"])  # before, between chunks
    stages.seconds["training"] = own["training"]
    inner = sum(stages.seconds[s] for s in ORDER[1:10])
    stages.seconds["other"] = fit_seconds - inner - model.compile_seconds_
    out = Path(args.work) / "stages.npy"
    stages.run("writing", save_embedding, out, model.embedding_, model.nodes_)
    rec = {
        "graph": prefix.name, "nodes": g.n_nodes, "edges": g.n_edges,
        "setting": model.setting_.get("evidence", ""),
        "propagation": str(model.propagation_),
        "walks_per_node": model.setting_["params"]["walks_per_node"],
        "pairs": int(model.n_pairs_),
        "pairs_per_s": round(model.n_pairs_ / max(own["training"], 1e-9)),
        "fit_s": round(fit_seconds, 1), "fit_cpu_s": round(fit_cpu, 1),
        "compile_s": round(model.compile_seconds_, 1),
        "fit_peak_mib": round(stages.peak["fit"]),
        "stages": {s: [round(stages.seconds[s], 1), round(stages.peak.get(s, 0.0))]
                   for s in ORDER},
        "threads": args.threads, "version": kernelne.__version__,
        "cpu": platform.processor() or platform.machine(),
    }
    if not args.skip_quality:
        rec["micro_f1_50"] = round(micro_f1(model.embedding_, model.nodes_,
                                            Path(f"{prefix}.labels"), args.sample), 4)
    return rec


#: stages timed inside the fit's own clock, whose peak is the fit's (not measured apart)
WITHIN_FIT = ("walks", "training", "other")


def table(records: list[dict]) -> str:
    head = "| stage | " + " | ".join(f"{r['nodes']:,} nodes: s / peak MiB" for r in records)
    lines = [head + " |", "|---" * (len(records) + 1) + "|"]
    for s in ORDER:
        lines.append(f"| {s} | " + " | ".join(
            f"{r['stages'][s][0]:.1f} / " + ("-" if s in WITHIN_FIT else f"{r['stages'][s][1]:,}")
            for r in records) + " |")
    for key in ("fit_s", "fit_cpu_s", "fit_peak_mib", "pairs", "pairs_per_s", "micro_f1_50"):
        lines.append(f"| {key} | " + " | ".join(str(r.get(key, "")) for r in records) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--edges-per-node", type=float, default=10.0)
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--mixing", type=float, default=0.3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--sample", type=int, default=50_000)
    ap.add_argument("--walks-per-node", type=int, default=None,
                    help="walks per node (default: the estimator's)")
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--work", default="bench_stages_work")
    ap.add_argument("--out", default=None, help="append the records to this JSON-lines file")
    args = ap.parse_args()
    Path(args.work).mkdir(parents=True, exist_ok=True)
    KernelNE(dim=8, walks_per_node=1, workers=1, verbose=False).fit(
        kernelne.load_dataset("karate").graph)  # numba's compilation, outside the stages
    wrap_stages()
    records = []
    for n in args.nodes:
        prefix = generated(Path(args.work), n, int(n * args.edges_per_node), args.groups,
                           args.mixing)
        rec = profile(prefix, args)
        print(json.dumps(rec), flush=True)
        records.append(rec)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(rec) + "\n")
    print(table(records))


if __name__ == "__main__":
    main()
