"""Out of core, end to end: a partitioned fit whose model does not fit in the memory given.

Stages, each with its seconds and peaks: ``generate`` (``PREFIX.npz`` and ``PREFIX.labels``
from :func:`kernelne.graphs.generators.planted_partition_graph`; skipped when both exist), ``load``
(the ``.npz`` graph), ``fit`` (``KernelNE(partitions=P, partition_dir=DIR)``; split into its
walks, training and the rest: the rows put together from the blocks and the health check),
``write`` (the rows to ``OUT.npy`` as ``kernelne embed -o OUT.npy`` writes them) and
``score`` (Micro-F1 at 50% labelled on a sample of labelled nodes, read from ``OUT.npy``
row by row through a memory map). Per stage: wall and CPU seconds; peaks: ``VmHWM``
(resident, file pages mapped included; reset at each stage), the largest ``RssAnon``
sampled every 0.2 s (anonymous memory: what cannot be dropped under a cap) and, in a memory
cgroup (v1), its
``memory.max_usage_in_bytes`` (page cache included; reset at each stage when writable) and
how often the stage reached the limit (``memory.failcnt``: the kernel then reclaimed page
cache; a process it could not make room for is killed). The bytes on disk of the walks, the
blocks, ``A.npy``/``B.npy`` and the output are listed at the end.

The 10M-node run under a 4 GiB cap (cgroup v1, as root, from the repository root with
kernelne importable, e.g. ``PYTHONPATH=src``; the fit's model A + B is 10.2 GB):

    C=/sys/fs/cgroup/memory$(awk -F: '$2=="memory"{print $3}' /proc/self/cgroup)/kernelne-cap
    mkdir -p $C && echo 4G > $C/memory.limit_in_bytes && echo 0 > $C/memory.swappiness
    sh -c "echo \\$\\$ > $C/cgroup.procs && exec python \\
        benchmarks/bench_out_of_core.py --generate 10000000 100000000 500 0.5 \\
        --prefix /tmp/big/sbm_10000000 --partitions 8 --partition-dir /tmp/big/parts10m \\
        --output /tmp/big/emb10m.npy --walks 10 --walk-length 10 --window 5 --rounds 1 \\
        --sigma 0.5 --no-robust --eval-sample 50000 --threads 2"

``--sigma 0.5 --no-robust``: the kernel the restart test narrows the default one to on these
graphs (8x in ``||x - y||^2``, sigma ``sqrt(2) / sqrt(8)``; the 1M-node fits of
docs/DISTRIBUTED.md narrowed it), without the test's pass over the rows and the run it gives
up. Every step reads and writes every block (``2 x 10.2 GB``): ``--rounds 1`` and ``P = 8``
keep that to 8 steps; at ``P = 8`` two blocks are 1.3 GB of memory. With 1 walk per node
(70 pairs a node) the rows stay at chance; 10 walks take about an hour on 2 threads
(docs/DISTRIBUTED.md gives each stage's time and peak).

At 1M nodes: ``--generate 1000000 10000000 50 0.5 --prefix /tmp/big/sbm_1000000`` with a
512M cap (the model is 1.0 GB). The partition folder must be new or empty (a folder of a
finished fit is read back, not trained again).
"""

from __future__ import annotations

import argparse
import resource
import threading
import time
from pathlib import Path

import numpy as np

from kernelne import KernelNE
from kernelne.embedding_io import save_embedding
from kernelne.evaluation import evaluate_node_classification
from kernelne.graphs.generators import planted_partition_graph
from kernelne.graphs.graph import load_graph
from kernelne.graphs.npz import save_graph
from kernelne.memory import peak_memory_mb, reset_peak_memory

MIB = 1 << 20


def _status(field: str) -> float:
    """A ``/proc/self/status`` figure in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def memory_cgroup() -> Path | None:
    """This process' memory cgroup (v1) folder, if there is one."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, names, path = line.split(":", 2)
        if "memory" in names.split(","):
            folder = Path("/sys/fs/cgroup/memory") / path.lstrip("/")
            return folder if (folder / "memory.max_usage_in_bytes").exists() else None
    return None


class Sampler(threading.Thread):
    """Samples ``RssAnon`` every ``interval`` seconds, keeping ``(time, MiB)``."""

    def __init__(self, interval: float = 0.2):
        super().__init__(daemon=True)
        self.interval, self.samples, self.stop = interval, [], threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            self.samples.append((time.perf_counter(), _status("RssAnon")))
            self.stop.wait(self.interval)

    def peak(self, start: float, end: float) -> float:
        inside = [mb for t, mb in self.samples if start <= t <= end]
        return max(inside, default=_status("RssAnon"))


class Stages:
    """The table of stages: seconds and peaks of each."""

    def __init__(self, sampler: Sampler):
        self.sampler, self.rows, self.cgroup = sampler, [], memory_cgroup()

    def start(self) -> float:
        self.cpu = cpu_seconds()
        self.failcnt = self.cgroup_figures()[1]
        reset_peak_memory()
        if self.cgroup is not None:
            try:
                (self.cgroup / "memory.max_usage_in_bytes").write_text("0")
            except OSError:
                pass
        return time.perf_counter()

    def cgroup_figures(self) -> tuple[float, int]:
        if self.cgroup is None:
            return float("nan"), 0
        peak = int((self.cgroup / "memory.max_usage_in_bytes").read_text()) / MIB
        return peak, int((self.cgroup / "memory.failcnt").read_text())

    def done(self, name: str, start: float, end: float | None = None, hwm: bool = True,
             ) -> None:
        end = time.perf_counter() if end is None else end
        cg_peak, failcnt = self.cgroup_figures() if hwm else (float("nan"), float("nan"))
        failcnt -= self.failcnt  # the times the stage reached the cap (page cache reclaimed)
        cpu = cpu_seconds() - self.cpu if hwm else float("nan")
        self.rows.append((name, end - start, cpu, peak_memory_mb() if hwm else float("nan"),
                          self.sampler.peak(start, end), cg_peak, failcnt))
        self.show(self.rows[-1])

    @staticmethod
    def show(row) -> None:
        name, seconds, cpu, hwm, anon, cg, fails = row
        cells = [f"{x:,.1f}" if i < 2 else f"{x:,.0f}"
                 for i, x in enumerate((seconds, cpu, hwm, anon, cg, fails))]
        print(f"| {name} | " + " | ".join(c.replace("nan", "-") for c in cells) + " |",
              flush=True)


def cpu_seconds() -> float:
    """User and system CPU seconds of this process so far (wall time depends on the load of
    a shared machine; CPU time does not)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def read_labels(path: str) -> tuple[np.ndarray, np.ndarray]:
    """``node community`` lines as two int64 arrays (pyarrow's reader: millions of lines)."""
    from pyarrow import csv

    table = csv.read_csv(path, read_options=csv.ReadOptions(column_names=["node", "label"]),
                         parse_options=csv.ParseOptions(delimiter=" "))
    return (table["node"].to_numpy().astype(np.int64),
            table["label"].to_numpy().astype(np.int64))


def disk_bytes(folder: Path) -> dict[str, int]:
    sizes = {"walks": 0, "blocks": 0, "A.npy + B.npy": 0}
    for name, sub in (("walks", "walks"), ("blocks", "blocks")):
        sizes[name] = sum(f.stat().st_size for f in (folder / sub).glob("*") if f.is_file())
    sizes["A.npy + B.npy"] = sum((folder / f).stat().st_size for f in ("A.npy", "B.npy")
                                 if (folder / f).exists())
    return sizes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prefix", required=True, help="PREFIX.npz and PREFIX.labels")
    ap.add_argument("--generate", nargs=4, metavar=("N", "M", "K", "MU"),
                    help="generate the planted partition when PREFIX.npz is missing")
    ap.add_argument("--partitions", type=int, default=16)
    ap.add_argument("--partition-dir", required=True)
    ap.add_argument("--output", required=True, help="OUT.npy")
    ap.add_argument("--walks", type=int, default=1)
    ap.add_argument("--walk-length", type=int, default=10)
    ap.add_argument("--window", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--sigma", type=float, default=2**0.5, help="the Gaussian kernel's sigma")
    ap.add_argument("--no-robust", action="store_true", help="no restart test")
    ap.add_argument("--eval-sample", type=int, default=100000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1,
                    help="threads per bucket (more than 1: not bit for bit between reruns)")
    args = ap.parse_args()

    sampler = Sampler()
    sampler.start()
    stages = Stages(sampler)
    cg = stages.cgroup
    if cg is not None:
        limit = int((cg / "memory.limit_in_bytes").read_text()) / MIB
        print(f"memory cgroup {cg}: limit {limit:,.0f} MiB")
    print("| stage | seconds | CPU s | VmHWM MiB | RssAnon peak MiB | cgroup peak MiB | "
          "failcnt |")
    print("|---|---|---|---|---|---|---|")
    npz, labels_file = Path(args.prefix + ".npz"), args.prefix + ".labels"
    if not (npz.exists() and Path(labels_file).exists()):
        if not args.generate:
            raise SystemExit(f"{npz} or {labels_file} missing: pass --generate N M K MU")
        n, m, k, mu = args.generate
        t = stages.start()
        graph, comm = planted_partition_graph(int(n), int(m), int(k), float(mu), args.seed)
        save_graph(graph, npz)
        with open(labels_file, "w") as fh:
            np.savetxt(fh, np.column_stack([graph.nodes, comm[graph.nodes]]), fmt="%d %d")
        del graph, comm
        stages.done("generate", t)

    t = stages.start()
    graph = load_graph(npz)
    stages.done("load (.npz)", t)
    print(f"graph: {graph.summary()}", flush=True)

    model = KernelNE(partitions=args.partitions, partition_dir=args.partition_dir,
                     walks_per_node=args.walks, walk_length=args.walk_length,
                     window=args.window, rounds=args.rounds, dim=args.dim, workers=args.threads,
                     sigma=args.sigma,
                     random_state=args.seed, robust=not args.no_robust, verbose=False)
    t = stages.start()
    model.fit(graph)
    end = time.perf_counter()
    run = model.partition_run_
    walks_end = t + run.walk_seconds
    train_end = walks_end + run.train_seconds
    stages.done("fit: walks (+ blocks v0)", t, walks_end, hwm=False)
    stages.done("fit: training", walks_end, train_end, hwm=False)
    stages.done("fit: assemble + checks", train_end, end, hwm=False)
    stages.done("fit (whole)", t, end)
    checks = [(round(c["offset_ratio"], 2), round(c["neighbour_auc"], 3)) for c in run.checks]
    print(f"pairs {run.pairs:,}, steps {run.steps}, kernel scale {run.scale:g}, restart "
          f"checks {checks}, bucket median {np.median(run.bucket_seconds):.2f} s, bucket "
          f"peak {run.bucket_peak_mb:,.0f} MiB", flush=True)
    print("bucket seconds summed by phase: " + ", ".join(
        f"{phase} {seconds:.1f}" for phase, seconds in run.bucket_phases.items()), flush=True)

    t = stages.start()
    save_embedding(args.output, model.embedding_, graph.nodes)
    stages.done("write OUT.npy", t)

    t = stages.start()
    node, label = read_labels(labels_file)
    rng = np.random.default_rng(0)
    pick = np.sort(rng.choice(len(node), min(args.eval_sample, len(node)), replace=False))
    rows = np.searchsorted(graph.nodes, node[pick])
    assert np.array_equal(graph.nodes[rows], node[pick])
    X = np.asarray(np.load(args.output, mmap_mode="r")[rows])
    table = evaluate_node_classification(X, label[pick], ratios=[0.5], repeats=args.repeats,
                                         n_jobs=1)
    stages.done("score", t)
    sampler.stop.set()

    folder = Path(args.partition_dir)
    sizes = disk_bytes(folder) | {"output": Path(args.output).stat().st_size}
    print(f"Micro-F1 at 50% on {len(rows):,} labelled nodes: {table.value('micro_f1'):.4f}")
    print("bytes on disk: " + ", ".join(f"{k} {v:,}" for k, v in sizes.items()))


if __name__ == "__main__":
    main()
