"""CLI: ``kernelne generate``, a labelled degree-corrected planted-partition graph."""

from __future__ import annotations

import argparse
import time

import numpy as np

from kernelne.cli.grammar import add_command, output_or_positional, seed_value
from kernelne.errors import InputError


def cmd_generate(args: argparse.Namespace) -> int:
    from kernelne.graphs.generators import (
        planted_partition_graph,
        write_labels,
        write_planted_partition,
    )

    prefix = output_or_positional(args, "kernelne generate N M K MU", "PREFIX")
    if args.k > args.n:
        raise InputError(f"K={args.k} communities for N={args.n} nodes: K must be at most N "
                         "(a community needs a node)")
    start = time.perf_counter()
    if args.npz:
        from kernelne.graphs.npz import save_graph

        graph, comm = planted_partition_graph(args.n, args.m, args.k, args.mu, args.seed)
        save_graph(graph, prefix + ".npz")
        write_labels(prefix, graph.nodes, comm)
        linked, n_edges, max_degree = graph.nodes, graph.n_edges, int(graph.degrees.max())
        written = f"{prefix}.npz"
    else:
        edges, comm = write_planted_partition(prefix, args.n, args.m, args.k, args.mu,
                                              args.seed)
        deg = np.bincount(edges.ravel(), minlength=args.n)
        linked, n_edges, max_degree = np.flatnonzero(deg), len(edges), int(deg.max())
        written = f"{prefix}.edges"
    isolated = args.n - len(linked)
    present = len(np.unique(comm[linked]))
    print(f"{args.n:,} nodes ({isolated:,} isolated), {n_edges:,} edges, {args.k} "
          "communities" + (f" ({present} with a linked node)" if present < args.k else "")
          + f", max degree {max_degree}, {time.perf_counter() - start:.1f} s")
    print(f"wrote {written} and {prefix}.labels"
          + (f" ({isolated:,} isolated node(s) left out of both: no edge)" if isolated else ""))
    return 0


def register(subparsers) -> None:
    """Add ``generate`` to the ``kernelne`` CLI."""
    p = add_command(
        subparsers, "generate", help="write a labelled degree-corrected planted-partition graph",
        description="Write PREFIX.edges ('u v' per line, ids 0..N-1, u < v) and PREFIX.labels "
        "('node community') of a degree-corrected planted partition: power-law degrees "
        "(exponent 2.5, min 2), K communities, a share MU of edge ends drawn from the whole "
        "graph. About M distinct edges (duplicates dropped). A node left without an edge is in "
        "neither file. --npz: PREFIX.npz (the CSR graph of `kernelne convert`) instead of "
        "PREFIX.edges.",
        example="kernelne generate 300 1500 4 0.3 -o sbm300 --seed 0")
    p.add_argument("n", type=int, metavar="N", help="nodes")
    p.add_argument("m", type=int, metavar="M", help="edges (at most)")
    p.add_argument("k", type=int, metavar="K", help="communities")
    p.add_argument("mu", type=float, metavar="MU", help="mixing: share of edges drawn globally")
    p.add_argument("legacy_output", nargs="?", default=None, help=argparse.SUPPRESS)
    p.add_argument("-o", "--output", default=None, metavar="PREFIX",
                   help="output prefix: writes PREFIX.edges and PREFIX.labels (required)")
    p.add_argument("--seed", type=seed_value, default=0, metavar="N", help="random seed")
    p.add_argument("--npz", action="store_true",
                   help="write the graph as PREFIX.npz (the binary format of `kernelne "
                   "convert`, fast to load) instead of PREFIX.edges")
    p.set_defaults(func=cmd_generate)
