"""A partitioned fit's driver memory against the graph's size, on a local Dask cluster.

    kernelne generate 100000 1000000 50 0.5 -o sbm100k --seed 0
    kernelne convert sbm100k.edges -o sbm100k.npz
    python benchmarks/bench_driver_memory.py sbm100k.npz sbm1m.npz sbm10m.npz \
        --partitions 4 --walks 1 --dim 32 --rounds 4

For each graph ``.npz``: a ``LocalCluster`` of ``--dask`` single-thread worker processes, and
the driver in a fresh process that loads the graph as a partitioned fit does (its edges left
in the file; ``--whole``: read into memory, as an edge list is) and fits
``KernelNE(partitions=P, walks_per_node=W, dim=D, rounds=R, propagate=False)`` on the
cluster, its folder a new one in the working directory (so the rows stay memory-mapped
there, removed after). The driver's memory is sampled every 20 ms: the peak of its anonymous
memory (``RssAnon``: what it holds; file pages it maps are not in it), its peak resident size
(``VmHWM``: the pages of the rows it assembles and of the blocks it tests included) and its
peak address space (``VmPeak``: everything it mapped, the assembled rows' ``2 n D 4`` bytes
among them). Printed beside the graph's CSR bytes, the rows' bytes and the fit's seconds. The
propagation is off: it builds its filter's matrix in the driver.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import distributed
from _common import WATCH_ANONYMOUS

DRIVER = WATCH_ANONYMOUS + r"""
import json, shutil, sys, tempfile, time
from dask.distributed import Client
from kernelne import KernelNE
from kernelne.graphs.graph import load_graph
from kernelne.memory import peak_memory_mb

address, path, mode = sys.argv[1], sys.argv[2], sys.argv[3]
parts, walks, dim, rounds = (int(x) for x in sys.argv[4:8])
with Client(address) as client:
    start = time.perf_counter()
    graph = load_graph(path, mapped=mode == "mapped")
    folder = tempfile.mkdtemp(prefix="bench-driver-", dir=".")  # the rows stay on disk
    model = KernelNE(partitions=parts, walks_per_node=walks, dim=dim, rounds=rounds,
                     propagate=False, random_state=0, partition_dir=folder)
    model.fit(graph, client=client)
    seconds = time.perf_counter() - start
    del model
    shutil.rmtree(folder)
csr = graph.indptr.nbytes + graph.indices.nbytes
csr += 0 if graph.weights is None else graph.weights.nbytes
with open("/proc/self/status") as fh:
    address_kib = next(int(l.split()[1]) for l in fh if l.startswith("VmPeak:"))
print(json.dumps({"nodes": graph.n_nodes, "edges": graph.n_edges, "csr_mib": csr / 2**20,
                  "rows_mib": 2 * graph.n_nodes * dim * 4 / 2**20,
                  "anon_mib": anon[0] / 1024, "rss_mib": peak_memory_mb(),
                  "address_mib": address_kib / 1024, "seconds": seconds}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graphs", nargs="+", help="graph .npz files (kernelne convert)")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--walks", type=int, default=1)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--dask", type=int, default=2, help="LocalCluster workers")
    ap.add_argument("--whole", action="store_true",
                    help="read the graph into the driver instead (as an edge list is read)")
    args = ap.parse_args()
    print(f"{'graph':24} {'nodes':>11} {'edges':>12} {'CSR MiB':>8} {'rows MiB':>9} "
          f"{'driver anon MiB':>16} {'driver RSS MiB':>15} {'driver address MiB':>19} "
          f"{'fit s':>8}")
    for path in args.graphs:
        with distributed.LocalCluster(n_workers=args.dask, threads_per_worker=1,
                                      processes=True, dashboard_address=None) as cluster:
            run = subprocess.run([sys.executable, "-c", DRIVER, cluster.scheduler_address, path,
                                  "whole" if args.whole else "mapped",
                                  *map(str, (args.partitions, args.walks, args.dim,
                                             args.rounds))],
                                 capture_output=True, text=True, check=True)
        r = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"{path:24} {r['nodes']:>11,} {r['edges']:>12,} {r['csr_mib']:>8.0f} "
              f"{r['rows_mib']:>9.0f} {r['anon_mib']:>16.0f} {r['rss_mib']:>15.0f} "
              f"{r['address_mib']:>19.0f} {r['seconds']:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
