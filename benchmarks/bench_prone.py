"""End to end against ProNE's authors' Python code: from an edge list to an embedding file.

ProNE's authors publish a Python implementation (``proNE.py`` of github.com/THUDM/ProNE, MIT
licence; not shipped here: give its path with ``--prone-script``). It reads the edge list with
networkx, builds the adjacency in a ``lil_matrix``, factorises the sparse matrix with
scikit-learn's ``randomized_svd`` and propagates in float64 with scipy's sparse products and
a dense SVD. Three commands run on the same edge list, each a fresh process:

- ``python proNE.py -graph G -emb1 E1 -emb2 E2 -dimension 128 -step 10 -theta 0.5 -mu 0.2``
  (the authors' defaults; both of its outputs are scored: ``E1`` the sparse factorisation,
  ``E2`` after the propagation);
- ``kernelne embed G -o OUT.npz --method prone --seed 0 --workers T`` (kernelne's ProNE, the
  same two steps: the factorisation through scikit-learn, the propagation through
  :func:`kernelne.engine.propagation.propagate_rows`);
- ``kernelne embed G -o OUT.npz --seed 0 --workers T`` (KernelNE at its defaults, the
  propagation included where ``propagate="auto"`` chooses it).

The authors' code indexes its matrix by node id, so the graph is first written with ids
``0 .. n-1`` (the nodes with an edge, in increasing order of their ids) and its labels mapped
the same way. Each command is timed by wall clock with the peak resident set from
``/usr/bin/time``; one untimed warm-up run of each kernelne command fills numba's caches; the
table gives medians of ``--repeats`` alternated runs, each time over kernelne's, and Micro-F1
at 50% of ``--eval-sample`` labelled nodes drawn with seed 0 (one split, liblinear, C = 1).

Usage:

    python benchmarks/bench_prone.py --graph sbm100k.edges --labels sbm100k.labels \
        --prone-script ProNE/proNE.py [--threads 2] [--repeats 3] [--eval-sample 50000]

``--graph``: a whitespace-separated edge list of integer ids (``u v`` per line) and its
``node label`` file (one label per node).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_end_to_end import alternated, cpu_name, run, sample_micro_f1

from kernelne import __version__
from kernelne.embedding_io import load_embedding


def contiguous_copy(edges: str, labels: str, out: Path) -> tuple[np.ndarray, np.ndarray]:
    """Write ``edges`` to ``out`` with ids ``0 .. n-1`` (the ids with an edge, in increasing
    order) and return the labelled nodes and their labels in those ids (labelled nodes
    without an edge left out)."""
    pairs = np.loadtxt(edges, dtype=np.int64, ndmin=2)[:, :2]
    ids, inverse = np.unique(pairs, return_inverse=True)
    np.savetxt(out, inverse.reshape(pairs.shape), fmt="%d", delimiter=" ")
    node, label = np.loadtxt(labels, dtype=np.int64, ndmin=2).T
    where = np.searchsorted(ids, node).clip(0, len(ids) - 1)
    keep = ids[where] == node
    return where[keep], label[keep]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", required=True, help="edge list of integer ids")
    ap.add_argument("--labels", required=True, help="the graph's 'node label' file")
    ap.add_argument("--prone-script", required=True, help="the authors' proNE.py")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--eval-sample", type=int, default=50_000)
    args = ap.parse_args()
    if not Path(args.prone_script).is_file():
        sys.exit(f"bench_prone: no file {args.prone_script!r} (--prone-script: the authors' "
                 "proNE.py)")
    with tempfile.TemporaryDirectory(dir=".") as work:
        work = Path(work)
        graph = work / "graph.edges"
        node, label = contiguous_copy(args.graph, args.labels, graph)
        out = {"authors": (work / "sparse.emb", work / "enhanced.emb"),
               "prone": work / "prone.npz", "kernelne": work / "kernelne.npz"}
        kernelne = [sys.executable, "-m", "kernelne", "embed", str(graph), "--seed", "0",
                    "--workers", str(args.threads), "--quiet"]
        commands = {
            "authors": [sys.executable, args.prone_script, "-graph", str(graph), "-emb1",
                        str(out["authors"][0]), "-emb2", str(out["authors"][1]), "-dimension",
                        "128", "-step", "10", "-theta", "0.5", "-mu", "0.2"],
            "prone": [*kernelne, "-o", str(out["prone"]), "--method", "prone"],
            "kernelne": [*kernelne, "-o", str(out["kernelne"])],
        }
        for k in ("prone", "kernelne"):
            run(commands[k])
        times, peaks = alternated(commands, args.repeats)
        scored = {"authors, sparse": out["authors"][0], "authors": out["authors"][1],
                  "prone": out["prone"], "kernelne": out["kernelne"]}  # word2vec text, .npz
        f1 = {k: sample_micro_f1(*load_embedding(path), node, label, args.eval_sample)
              for k, path in scored.items()}
    t = {k: statistics.median(v) for k, v in times.items()}
    print(f"kernelne {__version__}, {cpu_name()}, {os.cpu_count()} CPUs, {args.threads} "
          f"threads; medians of {args.repeats} runs; {args.graph}")
    print(f"{'authors':9} {t['authors']:8.1f} s  peak {peaks['authors']:7.0f} MiB  "
          f"Micro-F1 {f1['authors']:.4f} (sparse step alone {f1['authors, sparse']:.4f})")
    for k in ("prone", "kernelne"):
        print(f"{k:9} {t[k]:8.1f} s  peak {peaks[k]:7.0f} MiB  Micro-F1 {f1[k]:.4f}  "
              f"authors / {k} time: {t['authors'] / t[k]:.2f}x")


if __name__ == "__main__":
    main()
