"""A partitioned fit's walks on Dask workers: every worker mapping the whole graph
(:func:`kernelne.partitioned.rounds.walk_task`) against walkers handed between the parts' rows
(:mod:`kernelne.partitioned.part_walks`).

    python benchmarks/bench_worker_walks.py --graph sbm1m.npz --walks 1 --partitions 4 16

Starts a local Dask cluster (``--workers`` processes of ``--threads`` threads). For each P
and each way (``graph``, ``parts``; runs alternate, ``--repeats`` of each), in a new folder:
the graph's files for the workers written (seconds; the parts' rows are written for one part
a worker, whatever P: P only sets the masks), then one round of ``--walks`` walks per
node of 10 nodes (seed 0) made by
:func:`~kernelne.partitioned.rounds.make_rounds` (walks, masks and counts; seconds and walks
per second). Both ways write the same round (checked: its digest). Also printed: the bytes a
worker maps at most (the whole graph's edges, or its own parts' rows: part ``c`` on worker
``c``), and the walkers' bytes handed between tasks (24 bytes a walker, once at the
start and at every step onto another part's node, counted from the round's walks). Prints one
JSON line per P with the medians and the ratio (``--out`` appends them to a file).
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import emit, peak_rss_mb

import kernelne
import kernelne.partitioned.rounds as rounds
from kernelne.engine.walks import WalkCorpus
from kernelne.graphs.graph import load_graph
from kernelne.partitioned.buckets import gather_watching_workers
from kernelne.partitioned.part_walks import WALKER, write_part_graphs

LENGTH = 10


def one_round(client, graph, walks: int, parts: int, way: str, where: Path) -> dict:
    """Write the workers' graph files and make one round the ``way`` given, in ``where``."""
    corpus = WalkCorpus(graph, walks, LENGTH, 1.0, 1.0, 0)
    folder = where / f"{way}-{parts}"
    (folder / "walks").mkdir(parents=True)
    workers = len(client.scheduler_info()["workers"])  # the walks' parts: one a worker
    t0 = time.perf_counter()
    if way == "parts":
        files = write_part_graphs(folder, graph, workers)
    else:
        files = rounds.write_graph(folder, corpus)
    written = time.perf_counter() - t0
    mapped = _mapped_bytes(files, way, workers)
    rounds.walks_on_parts = lambda p, q: way == "parts"
    counts = np.zeros(graph.n_nodes, dtype=np.int64)
    job = (0, (0, corpus.n_walks), (folder / "walks" / "round0.npy",
                                    folder / "walks" / "round0.masks.npy"))
    t0 = time.perf_counter()
    rounds.make_rounds(client, gather_watching_workers, folder, corpus, parts, [job], counts,
                       lambda k: None)
    made = time.perf_counter() - t0
    walk_file = job[2][0]
    digest = hashlib.blake2b(walk_file.read_bytes(), digest_size=8).hexdigest()
    handed = _handed(np.load(walk_file, mmap_mode="r"), workers, corpus.n_walks)
    shutil.rmtree(folder)
    return {"write_s": written, "walks_s": made, "walks_per_s": corpus.n_walks / made,
            "mapped_mb": mapped / 2**20, "handed_mb": handed * WALKER.itemsize / 2**20,
            "digest": digest}


def _mapped_bytes(files: Path, way: str, workers: int) -> int:
    """The most bytes of graph files one worker maps."""
    if way == "graph":
        return sum(p.stat().st_size for p in files.glob("*.npy"))
    return max(sum(p.stat().st_size for p in (files / str(c)).glob("*.npy"))
               for c in range(workers))


def _handed(walks: np.ndarray, parts: int, n_walks: int, rows: int = 1 << 18) -> int:
    """The walkers handed between tasks: one a walk at its start, one at every step onto
    another part's node (``parts`` walked on)."""
    handed = n_walks
    for lo in range(0, len(walks), rows):
        w = np.asarray(walks[lo:lo + rows])
        handed += int(((w[:, 1:] % parts != w[:, :-1] % parts) & (w[:, 1:] >= 0)).sum())
    return handed


def main() -> None:
    import distributed

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graph", required=True, help="a graph .npz (kernelne convert)")
    ap.add_argument("--walks", type=int, default=1, help="walks per node in the round")
    ap.add_argument("--partitions", type=int, nargs="+", default=[4, 16])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--folder", help="where the rounds are made (a new temporary one)")
    ap.add_argument("--out", help="append the JSON lines to this file")
    args = ap.parse_args()
    graph = load_graph(args.graph, mapped=True)
    where = Path(tempfile.mkdtemp(prefix="kernelne-worker-walks-", dir=args.folder))
    try:
        with distributed.LocalCluster(n_workers=args.workers,
                                      threads_per_worker=args.threads, processes=True,
                                      dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            one_round(client, graph, 1, 2, "graph", where)  # compiles on the workers
            one_round(client, graph, 1, 2, "parts", where)
            for parts in args.partitions:
                runs = {"graph": [], "parts": []}
                for _ in range(args.repeats):
                    for way in ("graph", "parts"):
                        runs[way].append(one_round(client, graph, args.walks, parts, way, where))
                digests = {r["digest"] for way in runs for r in runs[way]}
                assert len(digests) == 1, "the two ways made different walks"
                line = {"partitions": parts, "walks": args.walks * graph.n_nodes,
                        "workers": args.workers, "threads": args.threads}
                for way, made in runs.items():
                    for k in ("write_s", "walks_s", "walks_per_s"):
                        line[f"{way}_{k}"] = statistics.median(r[k] for r in made)
                    line[f"{way}_mapped_mb"] = made[0]["mapped_mb"]
                line["handed_mb"] = runs["parts"][0]["handed_mb"]
                line["ratio"] = line["graph_walks_s"] / line["parts_walks_s"]
                line |= {"n": int(graph.n_nodes), "edges": int(len(graph.indices)),
                         "version": kernelne.__version__, "cpu": platform.processor(),
                         "peak_driver_mb": peak_rss_mb()}
                emit(line, args.out)
    finally:
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
