"""Training throughput of KernelNE against gensim's skip-gram on the SAME walks.

Both train one epoch over one walk corpus (80 walks/node, length 10) with window 10,
5 negatives, d = 128, no subsampling, and the same thread count. gensim runs with
``shrink_windows=False`` so both see exactly the same (center, context) pairs; throughput is
pairs per second, the median of several runs. Peak memory is the growth of the process' peak
resident set during a run. Usage:

    python benchmarks/bench_training.py [--datasets cora dblp] [--threads 1 2] [--repeats 3]
"""

from __future__ import annotations

import argparse

import numpy as np
from _common import timed
from gensim.models import Word2Vec

from kernelne import load_dataset, random_walks
from kernelne.kernels import Kernel, parse_kernel
from kernelne.parallel import numba_threads
from kernelne.sampling import alias_table
from kernelne.trainer import Noise, TrainSettings, kernel_arrays, train_walks


def count_pairs(walks: np.ndarray, window: int) -> int:
    lengths = (walks >= 0).sum(axis=1)
    total = 0
    for length in np.unique(lengths):
        pos = np.arange(length)
        per = np.minimum(pos, window) + np.minimum(length - 1 - pos, window)
        total += int(per.sum()) * int((lengths == length).sum())
    return total


def kernelne_run(walks, n, kernels: list[Kernel], threads: int, dim=128,
                 shared_negatives=False):
    kernel = kernel_arrays(kernels)
    counts = np.bincount(walks[walks >= 0], minlength=n)
    noise = Noise(*alias_table(counts**0.75))
    settings = TrainSettings(float(walks.size), learn_beta=len(kernels) > 1, seed=1,
                             shared_negatives=shared_negatives)

    # allocated once: each timed run continues training (as gensim's runs do)
    A = np.random.default_rng(0).uniform(-0.5 / dim, 0.5 / dim, (n, dim)).astype(np.float32)
    B = np.zeros((n, dim), np.float32)

    def run():
        with numba_threads(threads):
            train_walks(walks, 0, A, B, kernel, noise, settings)

    run_small = walks[:64]
    with numba_threads(threads):  # compile outside the timing
        train_walks(run_small, 0, np.zeros((n, dim), np.float32),
                    np.zeros((n, dim), np.float32), kernel, noise, settings)
    return run


def gensim_run(walks, threads: int, dim=128):
    sentences = [[str(x) for x in w[w >= 0]] for w in walks]
    model = Word2Vec(
        vector_size=dim, window=10, negative=5, sg=1, hs=0, sample=0, min_count=0,
        workers=threads, seed=1, shrink_windows=False,
    )
    model.build_vocab(sentences)

    def run():
        model.train(sentences, total_examples=len(sentences), epochs=1)

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cora", "dblp"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--kernels", nargs="+", default=["gauss:1.41421", "sch:1", "linear"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--shared-negatives", action="store_true",
                    help="KernelNE with one set of negatives per center")
    args = ap.parse_args()

    print(f"{'dataset':9} {'thr':>3} {'method':16} {'Mpairs/s':>9} {'vs gensim':>9} "
          f"{'sec':>7} {'peak MiB':>8}")
    for name in args.datasets:
        g = load_dataset(name).graph
        walks = random_walks(g, 80, 10, seed=1)
        pairs = count_pairs(walks, 10)
        for threads in args.threads:
            gs, gmem, _ = timed(gensim_run(walks, threads), args.repeats)
            rate_g = pairs / gs / 1e6
            print(f"{name:9} {threads:>3} {'gensim sg':16} {rate_g:9.2f} {1.0:9.2f} "
                  f"{gs:7.2f} {gmem:8.0f}")
            for spec in args.kernels:
                k = parse_kernel(spec)
                run = kernelne_run(walks, g.n_nodes, [k], threads,
                                   shared_negatives=args.shared_negatives)
                sec, mem, _ = timed(run, args.repeats)
                rate = pairs / sec / 1e6
                print(f"{name:9} {threads:>3} {'kernelne ' + str(k):16} {rate:9.2f} "
                      f"{rate / rate_g:9.2f} {sec:7.2f} {mem:8.0f}", flush=True)


if __name__ == "__main__":
    main()
