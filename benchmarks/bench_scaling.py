"""Scaling: KernelNE on planted-partition graphs of 10^4..10^6 nodes (average degree 20).

For each size the script writes a labelled degree-corrected planted-partition graph with
``kernelne.graphs.generators`` (``kernelne generate N 10N 50 0.5 -o PREFIX``: N nodes, 10 N edges,
50
communities, mixing 0.5, seed 0) and
measures, each stage in a fresh process (so peak memory is that stage's own):

* load: the text edge list and the binary ``.npz`` (seconds, peak MiB; medians);
* fit: KernelNE with the paper's defaults (80 walks x 10, window 10, k = 5, d = 128), per
  stage (walks, training) seconds, pairs/s and peak MiB, with the library's default negatives
  (``auto``: a per-walk pool of 128 from 100,000 nodes, k fresh per pair below), with
  ``shared_negatives`` and (up to ``--pair-max`` nodes) with the paper's k fresh negatives per
  pair (``negative_pool=0``);
* quality: Micro-F1 on the planted communities (one-vs-rest logistic regression, 50% of a
  seeded sample of at most 20,000 nodes for training, 3 splits), against DeepWalk (gensim
  skip-gram on the same walks; up to ``--deepwalk-max`` nodes with the full corpus, above that
  both methods on ``--small-walks`` walks per node);
* training rate: KernelNE (k negatives per pair, from a pool, and shared) and gensim's
  skip-gram (negative 5, window 10, no subsampling, ``shrink_windows=False``; ``corpus_file``
  mode, its fastest, with the walks in a text file and only ``train`` timed, and ``list``
  mode beside it) on the same ``--ratio-walks`` walks per node and the same threads, in one
  process, runs interleaved, medians of ``--repeats``; total and per-thread pairs/s, ratios
  against gensim ``corpus_file``, peak MiB; with Cora (``--reference-walks`` walks per node,
  rows in cache) as the first row.

    python benchmarks/bench_scaling.py --sizes 10000 100000 1000000 --threads 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
from bench_training import HEADER, print_rows

REPO = Path(__file__).resolve().parents[1]

LOAD = r"""
import json, sys, time
from kernelne.memory import peak_memory_mb
from kernelne.graphs.graph import load_graph
t = time.perf_counter()
g = load_graph(sys.argv[1])
print(json.dumps({"seconds": time.perf_counter() - t,
                  "peak_mib": peak_memory_mb()}))
"""

FIT = r"""
import json, sys, time
from kernelne.memory import peak_memory_mb
import numpy as np
from kernelne import KernelNE
from kernelne.baselines import DeepWalk
from kernelne.graphs.graph import load_graph
path, method, walks, threads, out = sys.argv[1:6]
t = time.perf_counter()
g = load_graph(path)
load = time.perf_counter() - t
params = dict(walks_per_node=int(walks), workers=int(threads), random_state=0)
if method == "deepwalk":
    model = DeepWalk(**params).fit(g)
    stages, pairs = {}, 0
else:
    pool = {"pair": 0, "shared": 0}.get(method, "auto")  # "default": the library's choice
    model = KernelNE(shared_negatives=method == "shared", negative_pool=pool, **params).fit(g)
    stages, pairs = model.stage_seconds_, model.n_pairs_
np.save(out, model.embedding_)
np.save(out.replace(".npy", ".nodes.npy"), np.asarray(g.nodes))
print(json.dumps({"load": load, "fit": time.perf_counter() - t - load, "pairs": pairs,
                  "stages": stages,
                  "peak_mib": peak_memory_mb()}))
"""


def child(code: str, *args: str) -> dict:
    """Run ``code`` in a fresh interpreter; its last stdout line is a JSON object."""
    done = subprocess.run([sys.executable, "-c", code, *map(str, args)], check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def make_graph(n: int, work: Path) -> Path:
    prefix = work / f"sbm_{n}"
    if not (work / f"sbm_{n}.edges").exists():
        subprocess.run([sys.executable, "-m", "kernelne", "generate", str(n), str(10 * n),
                        "50", "0.5", "-o", str(prefix), "--seed", "0"], check=True)
    npz = work / f"sbm_{n}.npz"
    if not npz.exists():
        subprocess.run([sys.executable, "-m", "kernelne", "convert",
                        f"{prefix}.edges", "-o", str(npz)], check=True, capture_output=True)
    return prefix


def micro_f1(emb_path: Path, labels_path: Path, threads: int) -> float:
    """Micro-F1 at 50% on a seeded sample of at most 20,000 nodes (3 splits)."""
    from kernelne.evaluation import evaluate_node_classification

    X = np.load(emb_path)
    nodes = np.load(str(emb_path).replace(".npy", ".nodes.npy"))
    lab = np.loadtxt(labels_path, dtype=np.int64)
    community = dict(zip(lab[:, 0].tolist(), lab[:, 1].tolist(), strict=True))
    rng = np.random.default_rng(0)
    rows = rng.choice(len(nodes), min(20_000, len(nodes)), replace=False)
    y = np.array([community[int(nodes[r])] for r in rows])
    table = evaluate_node_classification(X[rows], y, ratios=[0.5], repeats=3, seed=0,
                                         n_jobs=threads)
    return next(r.mean for r in table.rows if r.metric == "micro_f1")


def throughput(npz: Path | None, walks_per_node: int, threads: int, repeats: int,
               gensim_modes, work: Path) -> tuple[int, list]:
    """``(nodes, rows)``: gensim (``gensim_modes``) and KernelNE per pair, pool and shared on the
    same walks and threads, interleaved (:func:`bench_training.rate_rows`); ``npz`` None:
    Cora."""
    from bench_training import rate_rows

    from kernelne.engine.walks import random_walks
    from kernelne.graphs.datasets import load_dataset
    from kernelne.graphs.graph import load_graph

    g = load_dataset("cora").graph if npz is None else load_graph(npz)
    walks = random_walks(g, walks_per_node, 10, seed=1, workers=threads)
    return g.n_nodes, rate_rows(walks, g.n_nodes, threads, repeats,
                                negatives=("pair", "pool", "shared"),
                                gensim_modes=gensim_modes, work=work)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", type=Path, default=Path("/tmp/kernelne-scaling"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ratio-walks", type=int, default=1, help="walks per node, ratio runs")
    ap.add_argument("--pair-max", type=int, default=100_000,
                    help="largest graph fitted with k negatives per pair (slow beyond)")
    ap.add_argument("--deepwalk-max", type=int, default=100_000,
                    help="largest graph for DeepWalk on the full 80-walk corpus")
    ap.add_argument("--small-walks", type=int, default=10,
                    help="walks per node for the DeepWalk comparison above --deepwalk-max")
    ap.add_argument("--full-fit-max", type=int, default=10_000_000,
                    help="largest graph fitted with the full 80-walk corpus")
    ap.add_argument("--reference-walks", type=int, default=80,
                    help="walks per node on Cora, the rate table's in-cache reference row")
    ap.add_argument("--gensim", nargs="+", default=["file", "list"], choices=["file", "list"],
                    help="gensim's input modes in the rate table (ratios: corpus_file)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["load", "fit", "ratio"])
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rate_tables = []
    if "ratio" not in args.skip:
        from bench_training import conditions
        print(f"rate tables: {conditions()}; gensim corpus_file = walks in a text file, "
              "vocabulary built untimed, only train() timed; list = a Python list of "
              "sentences", flush=True)
        n_cora, rows = throughput(None, args.reference_walks, args.threads, args.repeats,
                                  args.gensim, args.work)
        rate_tables.append(("cora", n_cora, args.reference_walks, rows))
    for n in args.sizes:
        prefix = make_graph(n, args.work)
        edges, npz, labels = Path(f"{prefix}.edges"), Path(f"{prefix}.npz"), \
            Path(f"{prefix}.labels")
        print(f"== {n:,} nodes, {10 * n:,} edges (planted partition, 50 communities)",
              flush=True)
        if "load" not in args.skip:
            for path in (edges, npz):
                runs = [child(LOAD, path) for _ in range(args.repeats)]
                print(f"load {path.suffix:7} {statistics.median(r['seconds'] for r in runs):7.2f}"
                      f" s {statistics.median(r['peak_mib'] for r in runs):7.0f} MiB",
                      flush=True)
        if "fit" not in args.skip:
            fits = [("default", 80), ("shared", 80)] if n <= args.full_fit_max else []
            fits += [("pair", 80)] if n <= args.pair_max else []
            if n <= args.deepwalk_max:
                fits.append(("deepwalk", 80))
            else:
                fits += [("shared", args.small_walks), ("deepwalk", args.small_walks)]
            for method, walks in fits:
                emb = args.work / f"emb_{n}_{method}_{walks}.npy"
                r = child(FIT, npz, method, walks, args.threads, emb)
                f1 = micro_f1(emb, labels, args.threads)
                st = r["stages"]
                detail = (f"walks {st['walks']:6.1f} s, training {st['training']:7.1f} s, "
                          f"{r['pairs'] / st['training'] / 1e6:5.2f} Mpairs/s"
                          if st else "(gensim: walks and training)")
                print(f"fit  {method:8} {walks:2} walks/node: {r['fit']:7.1f} s ({detail}), "
                      f"peak {r['peak_mib']:6.0f} MiB, Micro-F1 {f1:.4f}", flush=True)
        if "ratio" not in args.skip:
            n_nodes, rows = throughput(npz, args.ratio_walks, args.threads, args.repeats,
                                       args.gensim, args.work)
            rate_tables.append((f"sbm {n:,}", n_nodes, args.ratio_walks, rows))
            print_rows(*rate_tables[-1][:3], args.threads, rows)
    if rate_tables:
        print(f"\ntraining rate, {args.threads} threads, same walks per row (medians of "
              f"{args.repeats}, interleaved):")
        print(HEADER)
        for name, n_nodes, per_node, rows in rate_tables:
            print_rows(name, n_nodes, per_node, args.threads, rows)


if __name__ == "__main__":
    main()
