"""The cost of ``propagate="auto"``: a default fit's time and peak memory with and without
the spectral propagation, on graphs of growing size.

For each graph, in one process: a fit of ``KernelNE(propagate=False)`` (the rows as
trained), then the propagation of its rows alone (:func:`kernelne.engine.propagation.
propagate_rows` on the graph, as a fit calls it: what ``"auto"`` adds where it propagates),
each timed with its peak resident memory above the process' memory before it (Linux
``VmHWM``). The ratio is (fit +
propagation) / fit. ``--no-fit``: the propagation of random rows only (its cost does not
depend on the rows' values), for sizes where a fit takes too long to repeat.
``--reference``: beside it, the same propagation in float64 with scipy's sparse products and
numpy's dense SVD (``tests/prone_reference.py``, the form ProNE's authors' Python code
takes), with the speed-up and the largest difference of the unit rows (columns' signs
aligned). The propagation is timed as the median of ``--repeats`` runs, the reference once.
Graphs: ``cora``, ``dblp`` (packaged) or ``sbm:N:M:K:MU`` (a planted partition, seed 0).
Usage:

    python benchmarks/bench_propagation.py --graphs cora sbm:100000:1000000:50:0.5 --threads 2
    python benchmarks/bench_propagation.py --graphs sbm:1000000:10000000:100:0.3 --no-fit \
        --reference
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from _common import current_rss_mb, peak_rss_mb, reset_peak_rss

import kernelne
from kernelne import Graph, KernelNE, load_dataset
from kernelne.engine.propagation import Propagation, mean_degree, propagate_rows
from kernelne.engine.rows import aligned_rows
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.parallel import numba_threads

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def load(name: str) -> Graph:
    """A packaged network or ``sbm:N:M:K:MU``."""
    if name.startswith("sbm:"):
        n, m, k, mu = name.split(":")[1:]
        edges = planted_partition_sbm(int(n), int(m), int(k), float(mu), seed=0)[0]
        return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=int(n))
    return load_dataset(name).graph


def measured(fn, *args):
    """``fn(*args)``'s result, seconds and peak MiB above the memory before it."""
    gc.collect()
    base = current_rss_mb()
    reset_peak_rss()
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start, peak_rss_mb() - base


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", nargs="+", default=["cora", "sbm:100000:1000000:50:0.5"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--no-fit", action="store_true")
    ap.add_argument("--reference", action="store_true")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    small = load("cora")
    KernelNE(dim=8, workers=1, propagate=False, verbose=False).fit(small)  # compiled
    for name in args.graphs:
        g = load(name)
        rec = {"graph": name, "nodes": g.n_nodes,
               "mean_degree": round(mean_degree(g), 1)}
        if args.no_fit:
            rows = aligned_rows(g.n_nodes, args.dim)  # on cache lines, as a fit's rows
            rows[:] = np.random.default_rng(0).random((g.n_nodes, args.dim), dtype=np.float32)
        else:
            model = KernelNE(dim=args.dim, workers=args.threads, random_state=0,
                             propagate=False, verbose=False)
            _, rec["fit_s"], rec["fit_peak_mib"] = measured(model.fit, g)
            rows = model.embedding_
        with numba_threads(args.threads):
            propagate_rows(small, rows[:small.n_nodes], Propagation())  # compiled
            runs = [measured(propagate_rows, g, rows, Propagation())  # as a fit calls it
                    for _ in range(args.repeats)]
        out = runs[0][0]
        rec["propagation_s"] = statistics.median(r[1] for r in runs)
        rec["propagation_peak_mib"] = max(r[2] for r in runs)
        rec["rows_mib"] = round(rows.nbytes / 2**20)
        if args.reference:
            from prone_reference import aligned, reference_propagation

            ref, rec["reference_s"], rec["reference_peak_mib"] = measured(
                reference_propagation, g.adjacency(), rows, Propagation())
            rec["speedup"] = round(rec["reference_s"] / rec["propagation_s"], 1)
            rec["max_abs_difference"] = f"{np.abs(out - aligned(out, ref)).max():.1e}"
            del ref
        if not args.no_fit:
            rec["time_ratio"] = round((rec["fit_s"] + rec["propagation_s"]) / rec["fit_s"], 3)
        rec.update(version=kernelne.__version__, threads=args.threads,
                   cpu=platform.processor() or platform.machine())
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v
                          for k, v in rec.items()}), flush=True)


if __name__ == "__main__":
    main()
