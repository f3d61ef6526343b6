"""Partitioned training against the plain fit: quality, time, overhead per bucket, memory.

    python benchmarks/bench_partitioned.py --graph cora --partitions 1 4 8 --dask 2
    python benchmarks/bench_partitioned.py --graph sbm:100000:1000000:50:0.5 --walks 10
    python benchmarks/bench_partitioned.py --graph sbm1m.npz --labels sbm1m.labels \
        --partitions 1 8 --walks 10 --threads 2 --eval-sample 100000

For each P: one fit (P = 1 is the plain fit), Micro-F1 at 50% of the labels (``--repeats``
splits, seed 0), wall-clock seconds, the seconds of the walks (P > 1: made once, on the
Dask workers with ``--dask``), the training stage's seconds, the buckets' median
seconds, their seconds summed by phase (reading the blocks and the walks, listing and
training the pairs, writing the blocks) and the peak memory of the processes that trained
(the driver's for a local run, the largest worker's on Dask) and whether the rounds were
filed by part (``--filing on|off`` forces it, for an A/B). ``--dask W``: also every
P > 1 on a ``LocalCluster`` of W single-thread workers (``--task-threads K``: K numba
threads a bucket task; ``--keep-blocks off``: the blocks through the folder at every step,
as by default in a folder; ``--keep-blocks on``: kept on the workers between checkpoints, as
by default at a URL; for an A/B; ``--store s3``: the Dask fits' partition store at
``s3://`` on moto's S3 server, started by the benchmark as a process of its own on a free
localhost port, a new prefix a fit, instead of a temporary folder). ``--walks``: walks per
node (80, the paper's, by default). ``--threads``: numba threads of the local fits.
``--eval-sample N``: score N labelled nodes drawn with seed 0 (the classifier on a million
rows takes longer than the fit).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import time

import numpy as np

from kernelne import Graph, KernelNE, load_dataset
from kernelne.evaluation import evaluate_node_classification
from kernelne.memory import peak_memory_mb, reset_peak_memory


def load(spec: str, labels_file: str | None = None):
    """A dataset name, ``sbm:N:M:K:MU`` (the package's planted partition, seed 0), or a graph
    file with ``labels_file``."""
    if labels_file is not None:  # integer ``node label`` lines; nodes not in the graph dropped
        import scipy.sparse as sp

        from kernelne.graphs.graph import load_graph

        graph = load_graph(spec)
        node, label = np.loadtxt(labels_file, dtype=np.int64, ndmin=2).T
        where = np.full(int(max(node.max(), graph.nodes.max())) + 1, -1, np.int64)
        where[graph.nodes] = np.arange(graph.n_nodes)
        rows = where[node]
        ok = rows >= 0
        labels = sp.csr_matrix((np.ones(ok.sum(), bool), (rows[ok], label[ok])),
                               shape=(graph.n_nodes, int(label.max()) + 1))
        return graph, labels
    if spec.startswith("sbm:"):
        from kernelne.graphs.generators import planted_partition_sbm

        n, m, k, mu = spec.split(":")[1:]
        edges, labels = planted_partition_sbm(int(n), int(m), int(k), float(mu), seed=0)
        graph = Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=int(n))
        return graph, labels
    ds = load_dataset(spec)
    return ds.graph, ds.labels


def micro_f1(X, labels, repeats: int, sample: int = 0) -> float:
    if sample and sample < X.shape[0]:
        rows = np.random.default_rng(0).choice(X.shape[0], sample, replace=False)
        X, labels = X[rows], labels[rows]
    table = evaluate_node_classification(X, labels, ratios=[0.5], repeats=repeats, n_jobs=1)
    return table.value("micro_f1")


def run(graph, labels, partitions: int, walks: int, repeats: int, client=None,
        workers: int | None = 1, sigma: float = 2**0.5, sample: int = 0, rounds: int | None = None,
        pool: int | str = "auto", store: str | None = None) -> dict:
    reset_peak_memory()  # this fit's peak, not an earlier fit's in the same process
    start = time.perf_counter()
    model = KernelNE(random_state=0, workers=workers, partitions=partitions, sigma=sigma,
                     walks_per_node=walks, rounds=rounds, negative_pool=pool,
                     partition_dir=store).fit(graph, client=client)
    seconds = time.perf_counter() - start
    row = {"P": partitions, "mode": (f"dask {len(client.scheduler_info()['workers'])}w"
                                     if client else "local"), "seconds": seconds,
           "store": "s3" if store else "folder",
           "threads": workers, "negative_pool": model.negative_pool_,
           "kernel_scale": model.kernel_scale_,
           "shell_checks": [(round(c["offset_ratio"], 3), round(c["neighbour_auc"], 3),
                             c["collapsing"]) for c in model.shell_checks_],
           "training": model.stage_seconds_["training"], "pairs": model.n_pairs_,
           "micro_f1": micro_f1(model.embedding_, labels, repeats, sample)}
    if partitions > 1:
        r = model.partition_run_
        row["walks_s"] = r.walk_seconds  # the walks, the negatives' tables, version 0
        row["bucket_median_s"] = float(np.median(r.bucket_seconds))
        row["buckets"] = len(r.bucket_seconds)
        row["peak_mb"] = r.bucket_peak_mb
        row["bucket_phases_s"] = {k: round(v, 2) for k, v in r.bucket_phases.items()}
        row["filed"] = r.filed
        row["kept_blocks"] = r.kept_blocks
    else:
        row["peak_mb"] = peak_memory_mb()
    return row


@contextlib.contextmanager
def moto_s3(bucket: str = "bench"):
    """moto's S3 server in a process of its own on a free localhost port, one bucket; the
    AWS_* variables (fake credentials, the endpoint) point s3fs at it here and in every Dask
    worker started later."""
    import s3fs

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
                      AWS_DEFAULT_REGION="us-east-1", AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
        os.environ.pop(name, None)
    try:
        for _ in range(300):  # up in a few seconds
            if server.poll() is not None:
                raise SystemExit("bench_partitioned: moto's S3 server did not start "
                                 "(pip install 'moto[server]')")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                break
            except OSError:
                time.sleep(0.1)
        s3fs.S3FileSystem.clear_instance_cache()
        s3fs.S3FileSystem().mkdir(bucket)
        yield f"s3://{bucket}"
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", default="cora")
    ap.add_argument("--labels", default=None, help="labels file of a --graph file")
    ap.add_argument("--threads", type=int, default=1, help="numba threads of the local fits")
    ap.add_argument("--eval-sample", type=int, default=0, help="score this many nodes (0: all)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds of walks (default 20)")
    ap.add_argument("--negative-pool", default="auto", type=lambda t: t if t == "auto" else int(t),
                    help="negative_pool (auto: 128 from 100,000 nodes; 0: per pair)")
    ap.add_argument("--partitions", type=int, nargs="+", default=[1, 4, 8])
    ap.add_argument("--walks", type=int, default=80)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--sigma", type=float, default=2**0.5, help="Gaussian width (default: sqrt 2)")
    ap.add_argument("--dask", type=int, default=0, help="LocalCluster workers (0: none)")
    ap.add_argument("--task-threads", type=int, default=None,
                    help="numba threads of a Dask bucket task (workers=; default 1)")
    ap.add_argument("--filing", choices=["auto", "on", "off"], default="auto",
                    help="walks filed by part: where it saves reads (auto), always, never")
    ap.add_argument("--keep-blocks", choices=["auto", "on", "off"], default="auto",
                    help="on Dask, blocks kept on the workers between checkpoints: at a URL "
                         "(auto), always, never")
    ap.add_argument("--store", choices=["folder", "s3"], default="folder",
                    help="the Dask fits' partition store: a temporary folder, or moto's S3")
    ap.add_argument("--local", action=argparse.BooleanOptionalAction, default=True,
                    help="also run P > 1 in this process")
    args = ap.parse_args()
    if args.filing != "auto":  # an A/B of the rounds' layout: the driver's rule replaced
        import kernelne.partitioned.driver as driver

        driver.files_by_part = lambda parts, length: args.filing == "on"
    if args.keep_blocks != "auto":  # an A/B of the blocks' way between steps
        import kernelne.partitioned.driver as driver

        driver.keeps_blocks = lambda client, folder: args.keep_blocks == "on" and bool(client)
    graph, labels = load(args.graph, args.labels)
    print(f"{args.graph}: {graph.summary()}, {args.walks} walks per node")
    rows = []
    for p in args.partitions:
        if p == 1 or args.local:
            rows.append(run(graph, labels, p, args.walks, args.repeats, workers=args.threads,
                            sigma=args.sigma, sample=args.eval_sample, rounds=args.rounds,
                            pool=args.negative_pool))
            print(rows[-1], flush=True)
    if args.dask:
        from distributed import Client, LocalCluster

        with contextlib.ExitStack() as stack:
            url = stack.enter_context(moto_s3()) if args.store == "s3" else None
            cluster = stack.enter_context(LocalCluster(n_workers=args.dask, threads_per_worker=1,
                                                       processes=True))
            client = stack.enter_context(Client(cluster))
            for k, p in enumerate(args.partitions):
                if p > 1:
                    rows.append(run(graph, labels, p, args.walks, args.repeats, client,
                                    workers=args.task_threads,
                                    sigma=args.sigma, sample=args.eval_sample,
                                    rounds=args.rounds, pool=args.negative_pool,
                                    store=url and f"{url}/fit{k}"))
                    print(rows[-1], flush=True)
    print("\n| P | mode | store | pool | Micro-F1 (50%) | seconds | walks s | training s | "
          "bucket median s | peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['P']} | {r['mode']} | {r['store']} | {r['negative_pool']} | "
              f"{r['micro_f1']:.4f} | "
              f"{r['seconds']:.1f} | {r.get('walks_s', float('nan')):.1f} | "
              f"{r['training']:.1f} | {r.get('bucket_median_s', float('nan')):.3f} | "
              f"{r['peak_mb']:.0f} |")


if __name__ == "__main__":
    main()
