"""Walk generation: kernelne's ``random_walks`` against PecanPy (SparseOTF mode).

Both produce the same corpus shape: 80 walks per node of 10 nodes (9 steps; PecanPy's
``walk_length`` counts steps, so it gets 9), unweighted, undirected, with p = q = 1 and with
p = 0.5, q = 2. Both run numba ``parallel=True`` loops, so the thread count is numba's, set the
same way for both (PecanPy's own ``workers`` argument does not reach its walk loop).

What is timed: the walk loop only, producing node-index arrays. For PecanPy that is its
``_random_walks`` kernel called with the ``move_forward``/``has_nbrs`` functions that
``simulate_walks`` builds; ``simulate_walks`` itself rebuilds (and so recompiles) those closures
on every call and then maps every walk to a list of strings, neither of which is the walk
generation. Each side is compiled by a tiny warm-up run first. Times are medians of
``--repeats`` runs, the implementations interleaved run by run; peak memory is the largest
growth of the process' peak RSS during a run, freed heap pages handed back to the OS first
(the walk matrix itself is included: kernelne's is int32 ``walks x 10``, PecanPy's uint32
``walks x 12``; "out MiB" is its size).
PecanPy's graph is built from kernelne's CSR arrays (sorted neighbour lists, same node order), so
both walk the very same graph. For p = q = 1, PecanPy's ``FirstOrderUnweighted`` mode (uniform
neighbour draw, no second-order work) is timed too, as its fastest option for that case.

Usage:

    python benchmarks/bench_walks.py [--datasets cora dblp astroph] [--threads 1 2] [--repeats 3]

PecanPy 2.0 needs numpy < 2 (through nptyping): run this in a virtual environment holding both
(``python -m venv VENV && VENV/bin/pip install pecanpy "pyarrow<18" -e .``; kernelne takes
numpy 1.26).
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import statistics
import time
import warnings

import numpy as np
from _common import current_rss_mb, peak_rss_mb, reset_peak_rss

from kernelne import load_dataset, random_walks
from kernelne.parallel import cpu_count, numba_threads

WALKS_PER_NODE = 80
WALK_LENGTH = 10  # nodes per walk


def pecanpy_runner(graph, mode: str, p: float, q: float):
    """A function that generates PecanPy's walks (compiled already) and returns the index matrix."""
    from numba_progress import ProgressBar
    from pecanpy import pecanpy as node2vec

    g = getattr(node2vec, mode)(p=p, q=q, workers=1, verbose=False)
    g.set_node_ids([str(i) for i in range(graph.n_nodes)])
    g.indptr = graph.indptr.astype(np.uint32)
    g.indices = graph.indices.astype(np.uint32)
    g.data = np.ones(len(graph.indices), dtype=np.float32)
    g._preprocess_transition_probs()
    move_forward = g.get_move_forward()
    has_nbrs = g.get_has_nbrs()

    def run(num_walks: int = WALKS_PER_NODE, n_starts: int | None = None):
        nodes = np.arange(graph.n_nodes, dtype=np.uint32)
        starts = np.concatenate([nodes] * num_walks)
        np.random.default_rng(0).shuffle(starts)  # as simulate_walks does (load balance)
        if n_starts is not None:
            starts = starts[:n_starts]
        with ProgressBar(total=len(starts), disable=True) as progress:
            return g._random_walks(
                len(starts), WALK_LENGTH - 1, None, starts, has_nbrs, move_forward, progress
            )

    run(1, 64)  # compile
    return run


def check_pecanpy_walks(graph, walks) -> None:
    """PecanPy's walks have WALK_LENGTH nodes and follow edges (so the comparison is fair)."""
    body = walks[:2000, :WALK_LENGTH].astype(np.int64)
    assert np.all(walks[:2000, -1] == WALK_LENGTH), "unexpected PecanPy walk length"
    adj = graph.adjacency().tocsr()
    assert np.all(np.asarray(adj[body[:, :-1].ravel(), body[:, 1:].ravel()]).ravel() > 0)


def _release_free_memory() -> None:
    """Hand freed heap pages back to the OS, so that peak-RSS growth measures this run only."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def measure(fn, threads: int) -> tuple[float, float, float]:
    """One run of ``fn(threads)``: (seconds, peak RSS growth MiB, output MiB)."""
    _release_free_memory()
    base = current_rss_mb()
    reset_peak_rss()
    with numba_threads(threads):
        start = time.perf_counter()
        out = fn(threads)
        seconds = time.perf_counter() - start
    peak = peak_rss_mb() - base
    out_mib = out.nbytes / 2**20
    del out
    return seconds, peak, out_mib


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["cora", "dblp", "astroph"])
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pq", nargs="+", default=["1,1", "0.5,2"], help="p,q settings")
    ap.add_argument("--data-dir", default=None)
    args = ap.parse_args(argv)
    settings = [tuple(float(x) for x in s.split(",")) for s in args.pq]
    threads = [t for t in args.threads if t <= cpu_count()]
    warnings.filterwarnings("ignore", category=Warning, module="numba")

    print(f"# walks: {WALKS_PER_NODE}/node, {WALK_LENGTH} nodes each; median of {args.repeats} "
          f"runs; threads {threads} (machine has {cpu_count()} cores); load average at start "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    header = (f"| {'dataset':8} | {'nodes':>6} | {'edges':>7} | {'p,q':7} | thr | {'impl':28} | "
              f"{'seconds':>7} | {'walks/s':>9} | {'ns/step':>7} | {'peak MiB':>8} | "
              f"{'out MiB':>7} | {'ratio':>6} |")
    print(header)
    print("|" + "|".join("-" * (len(c)) for c in header.split("|")[1:-1]) + "|")
    rows = []
    for name in args.datasets:
        graph = load_dataset(name, args.data_dir).graph
        n_walks = WALKS_PER_NODE * graph.n_nodes
        steps = n_walks * (WALK_LENGTH - 1)
        random_walks(graph, 1, WALK_LENGTH, 0.5, 2, seed=0, workers=1)  # compile (cached)
        for p, q in settings:
            impls = [("kernelne", None), ("PecanPy SparseOTF", "SparseOTF")]
            if p == q == 1:
                impls.append(("PecanPy FirstOrderUnweighted", "FirstOrderUnweighted"))
            runners = {}
            for label, mode in impls:
                if mode is None:
                    runners[label] = (
                        lambda t, g=graph, p=p, q=q: random_walks(
                            g, WALKS_PER_NODE, WALK_LENGTH, p, q, seed=0, workers=t
                        )
                    )
                else:
                    run = pecanpy_runner(graph, mode, p, q)
                    with numba_threads(1):
                        check_pecanpy_walks(graph, run(1))
                    runners[label] = lambda t, run=run: run()
            for t in threads:
                # interleave the implementations run by run, so that a change in the machine's
                # load during the measurement hits all of them alike
                samples = {label: [] for label in runners}
                for _ in range(args.repeats):
                    for label, fn in runners.items():
                        samples[label].append(measure(fn, t))
                ours_seconds = statistics.median(s for s, _, _ in samples["kernelne"])
                for label, runs in samples.items():
                    seconds = statistics.median(s for s, _, _ in runs)
                    peak = max(m for _, m, _ in runs)
                    out_mib = runs[0][2]
                    ratio = seconds / ours_seconds
                    row = (name, graph.n_nodes, graph.n_edges, f"{p:g},{q:g}", t, label, seconds,
                           n_walks / seconds, 1e9 * seconds / steps, peak, out_mib, ratio)
                    rows.append(row)
                    print(f"| {name:8} | {graph.n_nodes:6d} | {graph.n_edges:7d} | "
                          f"{row[3]:7} | {t:3d} | {label:28} | {seconds:7.3f} | "
                          f"{row[7]:9.3g} | {row[8]:7.1f} | {peak:8.1f} | {out_mib:7.1f} | "
                          f"{ratio:6.2f} |", flush=True)

    print("load average at end " + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    print("\nratio = implementation's seconds / kernelne's seconds (same dataset, p,q, threads): "
          "> 1 means kernelne is faster.")
    print("\n# scaling with edges (kernelne, ns per walk step; a step is one move)")
    print("| p,q | threads | " + " | ".join(
        f"{d} (m={load_dataset(d, args.data_dir).graph.n_edges:,})" for d in args.datasets) + " |")
    for p, q in settings:
        for t in threads:
            cells = []
            for d in args.datasets:
                match = [r for r in rows if r[0] == d and r[3] == f"{p:g},{q:g}" and r[4] == t
                         and r[5] == "kernelne"]
                cells.append(f"{match[0][8]:.1f} ns ({match[0][6]:.3f} s)" if match else "-")
            print(f"| {p:g},{q:g} | {t} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
