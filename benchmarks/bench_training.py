"""Training throughput of KernelNE against gensim's skip-gram on the SAME walks.

Both train one epoch over one walk corpus (walks of length 10) with window 10, 5 negatives,
d = 128, no subsampling, and the same thread count. gensim runs with ``shrink_windows=False``
so both see exactly the same (center, context) pairs; throughput is pairs per second (total and
per thread), the median of several runs, each method's runs interleaved so that a busy
machine's load falls on all of them alike. Peak memory is the growth of the process' peak
resident set during a run.

gensim is timed at its fastest, ``corpus_file`` mode: the walks are written to a
space-separated text file and the vocabulary built before timing, so only ``train`` is timed
(its workers read the file in C, without the GIL). Its ``list`` mode (a Python list of
sentences, the usual ``Word2Vec(sentences)`` call) is shown beside it; ratios are against
``corpus_file``. KernelNE runs with the paper's k fresh negatives per pair (``pair``), with k
per pair picked from a per-walk pool of 128 draws (``pool``: ``negative_pool=128``, the default
from 100,000 nodes), of 32 (``dense-pool``: the default there in the dense setting) and with
``shared_negatives`` (``shared``).

``--window-shrink`` trains both with each center's window drawn uniformly in 1..10 (word2vec's
default, and the automatic setting's on dense graphs: ``window_shrink=True``, gensim's
``shrink_windows=True``); pairs per second are then the expected pairs of the corpus over
the seconds, and the ratio is of the seconds, as without it.

Graphs: dataset names (``cora``, ``dblp``: ``--walks-per-node`` walks per node, default 80) and
planted partitions ``sbm:N`` (N nodes, 10 N edges, 50 communities, mixing 0.5, seed 0, as in
``bench_scaling.py``; ``--sbm-walks`` walks per node, default 1). Usage:

    python benchmarks/bench_training.py [--datasets cora dblp sbm:1000000] [--threads 1 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import current_rss_mb, peak_rss_mb, reset_peak_rss
from gensim.models import Word2Vec

from kernelne import load_dataset, random_walks
from kernelne.engine.kernels import Kernel, parse_kernel
from kernelne.engine.rows import aligned_rows, uniform_rows
from kernelne.engine.sampling import alias_table
from kernelne.engine.trainer import (
    DENSE_POOL_SIZE,
    POOL_SIZE,
    Noise,
    TrainSettings,
    kernel_arrays,
    train_walks,
)
from kernelne.parallel import numba_threads

GENSIM_MODES = ("file", "list")


NEGATIVE_MODES = {"pair": "k per pair", "pool": f"pool {POOL_SIZE}",
                  "dense-pool": f"pool {DENSE_POOL_SIZE}", "shared": "shared negs"}
POOLS = {"pool": POOL_SIZE, "dense-pool": DENSE_POOL_SIZE}


def count_pairs(walks: np.ndarray, window: int) -> int:
    lengths = (walks >= 0).sum(axis=1)
    total = 0
    for length in np.unique(lengths):
        pos = np.arange(length)
        per = np.minimum(pos, window) + np.minimum(length - 1 - pos, window)
        total += int(per.sum()) * int((lengths == length).sum())
    return total


def expected_pairs(walks: np.ndarray, window: int, shrink: bool) -> float:
    """The corpus' (center, context) pairs: every window ``window``, or with ``shrink`` the
    mean over a window drawn uniformly in ``1..window``."""
    if not shrink:
        return float(count_pairs(walks, window))
    return sum(count_pairs(walks, b) for b in range(1, window + 1)) / window


def kernelne_run(walks, n, kernels: list[Kernel], threads: int, dim=128,
                 shared_negatives=False, negative_pool=0, window_shrink=False):
    kernel = kernel_arrays(kernels)
    counts = np.bincount(walks[walks >= 0], minlength=n)
    noise = Noise(*alias_table(counts**0.75))
    settings = TrainSettings(float(walks.size), learn_beta=len(kernels) > 1, seed=1,
                             shared_negatives=shared_negatives, negative_pool=negative_pool,
                             window_shrink=window_shrink)

    # allocated once, as a fit allocates them: each timed run continues training (as gensim's
    # runs do); B's pages are mapped now, not by the first timed run
    A = uniform_rows(np.random.default_rng(0), n, dim, 0.5 / dim)
    B = aligned_rows(n, dim, 0.0)

    def run():
        with numba_threads(threads):
            train_walks(walks, 0, A, B, kernel, noise, settings)

    run_small = walks[:64]
    with numba_threads(threads):  # compile outside the timing
        train_walks(run_small, 0, np.zeros((n, dim), np.float32),
                    np.zeros((n, dim), np.float32), kernel, noise, settings)
    return run


def _gensim_model(threads: int, dim: int, shrink: bool = False) -> Word2Vec:
    return Word2Vec(
        vector_size=dim, window=10, negative=5, sg=1, hs=0, sample=0, min_count=0,
        workers=threads, seed=1, shrink_windows=shrink,
    )


def gensim_run(walks, threads: int, dim=128, shrink: bool = False):
    """gensim's list mode: a Python list of str sentences (vocabulary built untimed)."""
    sentences = [[str(x) for x in w[w >= 0]] for w in walks]
    model = _gensim_model(threads, dim, shrink)
    model.build_vocab(sentences)

    def run():
        model.train(sentences, total_examples=len(sentences), epochs=1)

    return run


def write_corpus(walks: np.ndarray, path: str | Path) -> None:
    """The walks as a space-separated text file, one walk a line (``-1`` padding dropped)."""
    with open(path, "w") as f:
        for start in range(0, len(walks), 1 << 16):
            block = walks[start:start + (1 << 16)]
            f.write("\n".join(" ".join(map(str, w[w >= 0].tolist())) for w in block))
            f.write("\n")


def gensim_file_run(walks, threads: int, dim=128, work: str | Path | None = None,
                    shrink: bool = False):
    """gensim's ``corpus_file`` mode: the walks written to a text file, the vocabulary built
    from it untimed; ``run`` times one ``train`` epoch. The file is removed when ``run`` is
    garbage collected (``run.cleanup()`` removes it at once)."""
    fd, path = tempfile.mkstemp(suffix=".walks.txt", dir=work)
    os.close(fd)
    write_corpus(walks, path)
    model = _gensim_model(threads, dim, shrink)
    model.build_vocab(corpus_file=path)
    total_words = model.corpus_total_words

    def run():
        model.train(corpus_file=path, total_words=total_words, epochs=1)

    def cleanup():
        Path(path).unlink(missing_ok=True)

    run.cleanup = cleanup
    return run


def sbm_graph(n: int):
    """The planted partition of ``bench_scaling.py``: n nodes, 10 n edges, 50 communities."""
    from kernelne.graphs.generators import planted_partition_sbm
    from kernelne.graphs.graph import Graph

    edges, _ = planted_partition_sbm(n, 10 * n, 50, 0.5, seed=0)
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=n)


def interleaved(runs: dict, repeats: int) -> dict:
    """Each run ``repeats`` times, round-robin; ``{name: (median s, peak MiB, times)}``."""
    times = {name: [] for name in runs}
    peaks = dict.fromkeys(runs, 0.0)
    for _ in range(repeats):
        for name, run in runs.items():
            base = current_rss_mb()
            reset_peak_rss()
            t = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t)
            peaks[name] = max(peaks[name], peak_rss_mb() - base)
    return {name: (statistics.median(times[name]), peaks[name], times[name]) for name in runs}


def rate_rows(walks, n_nodes, threads: int, repeats: int, kernels=("gauss:1.41421",),
              negatives=("pair", "shared"), gensim_modes=GENSIM_MODES, work=None,
              shrink: bool = False) -> list:
    """``[(method, mode, Mpairs/s, Mpairs/s per thread, ratio to gensim corpus_file, s, peak
    MiB)]`` for gensim and KernelNE on the same walks and threads, runs interleaved
    (``shrink``: both with shrinking windows)."""
    pairs = expected_pairs(walks, 10, shrink)
    runs, labels = {}, {}
    for mode in gensim_modes:
        runs[f"gensim {mode}"] = (gensim_file_run(walks, threads, work=work, shrink=shrink)
                                  if mode == "file" else gensim_run(walks, threads,
                                                                    shrink=shrink))
        labels[f"gensim {mode}"] = ("gensim sg", "corpus_file" if mode == "file" else "list")
    for spec in kernels:
        k = parse_kernel(spec)
        for neg in negatives:
            name = f"kernelne {k} {neg}"
            runs[name] = kernelne_run(walks, n_nodes, [k], threads,
                                      shared_negatives=neg == "shared",
                                      negative_pool=POOLS.get(neg, 0),
                                      window_shrink=shrink)
            labels[name] = (f"kernelne {k}", NEGATIVE_MODES[neg])
    results = interleaved(runs, repeats)
    for run in runs.values():
        getattr(run, "cleanup", lambda: None)()
    ref = results["gensim file"][0] if "gensim file" in results else float("nan")
    rows = []
    for name, (sec, peak, _) in results.items():
        rate = pairs / sec / 1e6
        rows.append((*labels[name], rate, rate / threads, ref / sec, sec, peak))
    return rows


HEADER = (f"{'graph':12} {'nodes':>9} {'w/node':>6} {'thr':>3} {'method':24} {'mode':12} "
          f"{'Mpairs/s':>8} {'/thread':>7} {'vs gensim file':>14} {'sec':>7} {'peak MiB':>8}")


def print_rows(name, n_nodes, walks_per_node, threads, rows) -> None:
    for method, mode, rate, per, ratio, sec, peak in rows:
        print(f"{name:12} {n_nodes:9,} {walks_per_node:6} {threads:3} {method:24} {mode:12} "
              f"{rate:8.2f} {per:7.2f} {ratio:13.2f}x {sec:7.2f} {peak:8.0f}", flush=True)


def conditions() -> str:
    load = os.getloadavg()[0]
    return (f"{os.cpu_count()} CPUs, load average {load:.1f} at start "
            f"({'busy' if load > 0.5 else 'idle'})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cora", "dblp"],
                    help="dataset names, or sbm:N for an N-node planted partition")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--kernels", nargs="+", default=["gauss:1.41421", "sch:1", "linear"])
    ap.add_argument("--negatives", nargs="+", default=["pair"], choices=list(NEGATIVE_MODES),
                    help="KernelNE's negatives: k per pair, k per pair from a per-walk pool "
                    "and/or shared_negatives")
    ap.add_argument("--gensim", nargs="+", default=list(GENSIM_MODES), choices=GENSIM_MODES,
                    help="gensim's input modes (ratios are against corpus_file)")
    ap.add_argument("--walks-per-node", type=int, default=80)
    ap.add_argument("--sbm-walks", type=int, default=1, help="walks per node, sbm:N graphs")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--work", default=None, help="folder for gensim's corpus files")
    ap.add_argument("--window-shrink", action="store_true",
                    help="both with windows drawn in 1..10 (the dense setting's)")
    args = ap.parse_args()
    if args.work is not None:
        Path(args.work).mkdir(parents=True, exist_ok=True)

    windows = "drawn in 1..10 (shrinking)" if args.window_shrink else "10"
    print(f"walks of length 10, window {windows}, k = 5, d = 128, one epoch; {conditions()}")
    print("gensim modes: corpus_file = walks in a text file, vocabulary built untimed, "
          "only train() timed; list = a Python list of str sentences")
    print(HEADER)
    for name in args.datasets:
        if name.startswith("sbm:"):
            g, per_node = sbm_graph(int(name[4:])), args.sbm_walks
        else:
            g, per_node = load_dataset(name).graph, args.walks_per_node
        walks = random_walks(g, per_node, 10, seed=1, workers=max(args.threads))
        for threads in args.threads:
            rows = rate_rows(walks, g.n_nodes, threads, args.repeats, args.kernels,
                             args.negatives, args.gensim, args.work, args.window_shrink)
            print_rows(name, g.n_nodes, per_node, threads, rows)


if __name__ == "__main__":
    main()
