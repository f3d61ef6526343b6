"""End to end against PecanPy: from an edge-list file to an embedding file, as a user runs it.

Both commands read the same tab-separated edge list, make 80 walks of 10 nodes per node,
train d = 128 with window 10 and 5 negatives, and write word2vec text:

- ``kernelne embed GRAPH -o OUT.txt --workers T --seed 0 --quiet`` (KernelNE, Gauss kernel,
  the library defaults);
- ``pecanpy --input GRAPH --output OUT.emd --mode FirstOrderUnweighted --workers T
  --num-walks 80 --walk-length 9 --random_state 0`` (node2vec with p = q = 1, i.e. DeepWalk:
  PecanPy's fastest mode for that case; its ``walk_length`` counts steps, so 9 steps are 10
  nodes; gensim's skip-gram trains the walks).

Each is a fresh process timed by wall clock, the peak resident set read by ``/usr/bin/time``;
one untimed warm-up run of each fills numba's caches first. The runs alternate, and the
table gives medians of ``--repeats`` runs, the ratio PecanPy / kernelne, and Micro-F1 at 50%
of labels (top-k, C = 1, 5 splits, seed 0) of each output, so that both did the same work.
``--markdown`` prints the table alone, in the form docs/BENCHMARKS.md holds.

Usage:

    python benchmarks/bench_end_to_end.py [--datasets cora citeseer dblp] [--threads 2]
        [--repeats 3] [--markdown] [--pecanpy VENV/bin/pecanpy]
    python benchmarks/bench_end_to_end.py --graph sbm1m.edges --labels sbm1m.labels \
        --walks 20 --repeats 1 --no-warm-up --eval-sample 50000 --pecanpy VENV/bin/pecanpy

``--graph``: a space-separated edge list of integer ids with its ``node label`` file, instead of
the shipped datasets. Both commands then write ``.npz`` (kernelne: embedding and ids; PecanPy:
``IDs`` and ``data``) rather than a text file of a million rows, kernelne runs at its defaults
(``--walks`` only sets PecanPy's walks per node: give the number kernelne's summary reports),
and Micro-F1 is one split at 50% of ``--eval-sample`` labelled nodes drawn with seed 0
(liblinear, C = 1).

PecanPy 2.0 needs numpy < 2 (through nptyping), kernelne numpy >= 2: give PecanPy a virtual
environment of its own (``python -m venv VENV && VENV/bin/pip install pecanpy``).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from kernelne import __version__, load_dataset
from kernelne.evaluation import evaluate_node_classification


def write_edges(graph, path: Path) -> None:
    """The graph's undirected edges as ``u<TAB>v`` lines (each edge once)."""
    indptr, indices = graph.indptr, graph.indices
    with open(path, "w", encoding="ascii") as fh:
        for u in range(graph.n_nodes):
            for v in indices[indptr[u]:indptr[u + 1]]:
                if u < v:
                    fh.write(f"{u}\t{v}\n")


def run(cmd: list[str]) -> tuple[float, float]:
    """Run ``cmd``; return (wall seconds, peak resident MiB)."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True,
                         text=True, check=True)
    seconds, kib = out.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kib) / 1024


def alternated(commands: dict[str, list[str]], repeats: int
               ) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Run each command ``repeats`` times, in turn; return each one's wall seconds and its
    largest peak resident MiB."""
    times: dict[str, list[float]] = {k: [] for k in commands}
    peaks = {k: 0.0 for k in commands}
    for _ in range(repeats):
        for k, cmd in commands.items():
            seconds, peak = run(cmd)
            times[k].append(seconds)
            peaks[k] = max(peaks[k], peak)
    return times, peaks


def micro_f1(path: Path, labels, nodes) -> float:
    """Micro-F1 at 50% of the labelled nodes (top-k rule, C = 1, 5 splits, seed 0); labelled
    nodes without an edge, which neither output has a row for, are left out."""
    result = evaluate_node_classification(str(path), labels, nodes, ratios=[0.5], repeats=5,
                                          seed=0, missing="skip")
    return result.value("micro_f1")


def cpu_name() -> str:
    """The processor's model name (Linux), else the machine type."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["cora", "citeseer", "dblp"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--markdown", action="store_true", help="print the table alone")
    ap.add_argument("--graph", default=None, help="an edge list instead of --datasets")
    ap.add_argument("--labels", default=None, help="the node labels of --graph")
    ap.add_argument("--walks", type=int, default=80, help="PecanPy's walks per node (--graph)")
    ap.add_argument("--eval-sample", type=int, default=50_000)
    ap.add_argument("--warm-up", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--pecanpy", default="pecanpy",
                    help="PecanPy's command (PecanPy 2.0 needs numpy < 2: install it in a "
                    "virtual environment of its own and give its bin/pecanpy here)")
    args = ap.parse_args()
    if shutil.which(args.pecanpy) is None:
        sys.exit(f"bench_end_to_end: no PecanPy command {args.pecanpy!r} (see --pecanpy)")
    kernelne_cmd = [sys.executable, "-m", "kernelne"]
    if args.graph is not None:
        graph_file(args, kernelne_cmd)
        return
    rows = []
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        for name in args.datasets:
            data = load_dataset(name)
            edges = work / f"{name}.edg"
            write_edges(data.graph, edges)
            ours, theirs = work / f"{name}.kernelne.txt", work / f"{name}.pecanpy.emd"
            commands = {
                "kernelne": [*kernelne_cmd, "embed", str(edges), "-o", str(ours), "--workers",
                             str(args.threads), "--seed", "0", "--quiet"],
                "pecanpy": [args.pecanpy, "--input", str(edges), "--output", str(theirs),
                            "--mode", "FirstOrderUnweighted", "--workers", str(args.threads),
                            "--num-walks", "80", "--walk-length", "9", "--random_state", "0"],
            }
            for cmd in commands.values():  # warm-up: numba caches, file system caches
                run(cmd)
            times, peaks = alternated(commands, args.repeats)
            labels = data.labels
            nodes = data.graph.nodes
            rows.append((name, data.graph.n_nodes, data.graph.n_edges,
                         {k: statistics.median(v) for k, v in times.items()}, peaks,
                         {"kernelne": micro_f1(ours, labels, nodes),
                          "pecanpy": micro_f1(theirs, labels, nodes)}))
    header = [
        f"kernelne {__version__}, {cpu_name()}, "
        f"{os.cpu_count()} CPUs, {args.threads} threads; medians of {args.repeats} runs; "
        f"`python benchmarks/bench_end_to_end.py --datasets {' '.join(args.datasets)} "
        f"--threads {args.threads} --repeats {args.repeats}`",
        "",
        "| graph | nodes / edges | kernelne: s, peak MiB, Micro-F1 | PecanPy: s, peak MiB, "
        "Micro-F1 | PecanPy / kernelne time |",
        "|---|---|---|---|---|",
    ]
    lines = [
        f"| {name} | {n:,} / {m:,} | {t['kernelne']:.1f} s, {p['kernelne']:.0f} MiB, "
        f"{f['kernelne']:.3f} | {t['pecanpy']:.1f} s, {p['pecanpy']:.0f} MiB, "
        f"{f['pecanpy']:.3f} | {t['pecanpy'] / t['kernelne']:.2f}x |"
        for name, n, m, t, p, f in rows
    ]
    if not args.markdown:
        print("end to end: edge list -> word2vec text, 80 walks x 10 nodes, d = 128, window 10")
    print("\n".join(header + lines))


def graph_file(args, kernelne_cmd: list[str]) -> None:
    """The ``--graph`` run: both commands on the user's edge list, ``.npz`` out."""
    import numpy as np

    from kernelne.embedding_io import load_embedding

    with tempfile.TemporaryDirectory(dir=".") as work:
        work = Path(work)
        ours, theirs = work / "kernelne.npz", work / "pecanpy.npz"
        commands = {
            "kernelne": [*kernelne_cmd, "embed", args.graph, "-o", str(ours), "--workers",
                         str(args.threads), "--seed", "0", "--quiet"],
            "pecanpy": [args.pecanpy, "--input", args.graph, "--output", str(theirs),
                        "--delimiter", " ", "--mode", "FirstOrderUnweighted", "--workers",
                        str(args.threads), "--num-walks", str(args.walks), "--walk-length", "9",
                        "--random_state", "0"],
        }
        if args.warm_up:
            for cmd in commands.values():
                run(cmd)
        times, peaks = alternated(commands, args.repeats)
        node, label = np.loadtxt(args.labels, dtype=np.int64, ndmin=2).T
        f1 = {}
        for k, path in (("kernelne", ours), ("pecanpy", theirs)):
            if k == "kernelne":
                vectors, ids = load_embedding(path)
            else:
                with np.load(path, allow_pickle=False) as z:
                    vectors, ids = z["data"], z["IDs"].astype(np.int64)
            f1[k] = sample_micro_f1(vectors, ids, node, label, args.eval_sample)
    t = {k: statistics.median(v) for k, v in times.items()}
    print(f"kernelne {__version__}, {cpu_name()}, {os.cpu_count()} CPUs, {args.threads} "
          f"threads; medians of {args.repeats} runs; {args.graph}; PecanPy {args.walks} walks "
          "per node")
    for k in commands:
        print(f"{k:9} {t[k]:8.1f} s  peak {peaks[k]:7.0f} MiB  Micro-F1 {f1[k]:.4f}")
    print(f"PecanPy / kernelne time: {t['pecanpy'] / t['kernelne']:.2f}x")


def sample_micro_f1(vectors, ids, node, label, sample: int) -> float:
    """Micro-F1 at 50% of ``sample`` labelled nodes with a row (drawn with seed 0; one split,
    liblinear, C = 1)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.model_selection import train_test_split
    from sklearn.multiclass import OneVsRestClassifier

    row = {int(v): i for i, v in enumerate(ids)}
    keep = np.array([int(v) in row for v in node])
    node, label = node[keep], label[keep]
    pick = np.random.default_rng(0).choice(len(node), min(sample, len(node)), replace=False)
    x = vectors[[row[int(v)] for v in node[pick]]]
    y = label[pick]
    xa, xb, ya, yb = train_test_split(x, y, train_size=0.5, random_state=0)
    clf = OneVsRestClassifier(LogisticRegression(solver="liblinear", C=1.0)).fit(xa, ya)
    return float(f1_score(yb, clf.predict(xb), average="micro"))


if __name__ == "__main__":
    main()
