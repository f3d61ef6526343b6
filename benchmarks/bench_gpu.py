"""The CUDA engine against the CPU engine on one planted partition, side by side.

Fits one degree-corrected planted partition (``kernelne.graphs.generators``, as
``kernelne generate N M K MU``) with ``device="cuda"`` and with the CPU engine on all cores,
at the library's defaults unless told otherwise, and prints for each: pairs per second of
training, wall time by stage (walks, training, the whole fit), device memory (what the fit
needs, and the device's free and total memory before it) and Micro-F1 on the planted
communities (one-vs-rest logistic regression on 50% of a sample of at most 20,000 nodes,
3 splits).

    python benchmarks/bench_gpu.py --nodes 1000000 --edges 10000000
    python benchmarks/bench_gpu.py --nodes 200 --edges 1000 --walks-per-node 1 --dim 8 \\
        --simulator          # numba's CUDA simulator: proves the script runs, times nothing
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def parse() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--edges", type=int, default=10_000_000)
    ap.add_argument("--communities", type=int, default=100)
    ap.add_argument("--mu", type=float, default=0.3, help="mixing: share of edges across")
    ap.add_argument("--walks-per-node", type=int, default=80)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--threads", type=int, default=None, help="CPU threads (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engines", nargs="+", default=["cuda", "cpu"], choices=["cuda", "cpu"])
    ap.add_argument("--simulator", action="store_true",
                    help="run the CUDA engine on numba's CUDA simulator (tiny sizes only)")
    return ap.parse_args()


def micro_f1(X, labels, threads) -> float:
    import numpy as np

    from kernelne.evaluation import evaluate_node_classification

    rng = np.random.default_rng(0)
    rows = rng.choice(len(X), min(20_000, len(X)), replace=False)
    table = evaluate_node_classification(X[rows], labels[rows], ratios=[0.5], repeats=3,
                                         seed=0, n_jobs=threads)
    return next(r.mean for r in table.rows if r.metric == "micro_f1")


def device_memory(model, graph) -> dict:
    """The device's free and total memory now, and what the fit's arrays need."""
    from kernelne.engine.cuda.available import cuda_module
    from kernelne.engine.cuda.trainer import default_launch, device_bytes, device_chunk_walks
    from kernelne.engine.trainer import negative_pool_size

    cuda = cuda_module()
    free, total = cuda.current_context().get_memory_info()
    launch = default_launch(cuda, model.dim)
    walks = device_chunk_walks(model.walks_per_node * graph.n_nodes)
    need = device_bytes(graph.n_nodes, model.dim, walks, model.walk_length,
                        launch.groups, negative_pool_size(model.negative_pool, graph.n_nodes))
    return {"free": free, "total": total, "need": need}


def gib(x: float) -> str:
    return "n/a" if x == float("inf") else f"{x / 2**30:.2f} GiB"


def main() -> int:
    args = parse()
    if args.simulator:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import numpy as np

    from kernelne import KernelNE, __version__
    from kernelne.graphs.generators import planted_partition_graph

    start = time.perf_counter()
    graph, labels = planted_partition_graph(args.nodes, args.edges, args.communities, args.mu,
                                            seed=args.seed)
    labels = np.asarray(labels)[graph.nodes]
    print(f"kernelne {__version__}; {graph.summary()}, {args.communities} communities, mu "
          f"{args.mu}; made in {time.perf_counter() - start:.1f} s; {os.cpu_count()} CPUs"
          + ("; CUDA simulator" if args.simulator else ""), flush=True)
    rows = {}
    for engine in args.engines:
        model = KernelNE(dim=args.dim, walks_per_node=args.walks_per_node,
                         random_state=args.seed, workers=args.threads, device=engine)
        memory = device_memory(model, graph) if engine == "cuda" else None
        began = time.perf_counter()
        model.fit(graph)
        wall = time.perf_counter() - began
        stages = model.stage_seconds_
        rows[engine] = {
            "pairs/s": f"{model.n_pairs_ / max(stages['training'], 1e-9):,.0f}",
            "pairs": f"{model.n_pairs_:,}",
            "walks s": f"{stages['walks']:.1f}",
            "training s": f"{stages['training']:.1f}",
            "compiling s": f"{model.compile_seconds_:.1f}",
            "fit s": f"{wall:.1f}",
            "device need": gib(memory["need"]) if memory else "-",
            "device free": gib(memory["free"]) if memory else "-",
            "device total": gib(memory["total"]) if memory else "-",
            "Micro-F1": f"{micro_f1(model.embedding_, labels, args.threads):.4f}",
        }
        print(f"{engine}: done in {wall:.1f} s", flush=True)
    names = list(rows)
    keys = list(next(iter(rows.values())))
    width = max(len(k) for k in keys)
    print(f"{'':<{width}}  " + "  ".join(f"{n:>16}" for n in names))
    for k in keys:
        print(f"{k:<{width}}  " + "  ".join(f"{rows[n][k]:>16}" for n in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
