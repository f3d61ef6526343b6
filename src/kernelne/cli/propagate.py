"""CLI: ``kernelne propagate EMB GRAPH -o OUT``, ProNE's spectral propagation of any
embedding (:func:`kernelne.model.enhance.propagate`)."""

from __future__ import annotations

import argparse
import sys
import time

from kernelne.cli.grammar import add_command

#: ProNE's defaults, as :mod:`kernelne.engine.propagation` has them (not imported here: the
#: parser loads no scipy)
DEFAULT_ORDER, DEFAULT_MU, DEFAULT_THETA = 10, 0.2, 0.5


def cmd_propagate(args: argparse.Namespace) -> int:
    from kernelne.cli.options import read_input_graph, report_graph
    from kernelne.embedding_io import check_embedding_output, check_ids_writable, save_embedding
    from kernelne.errors import InputError
    from kernelne.evaluation.embeddings import as_embedding
    from kernelne.memory import peak_memory_mb
    from kernelne.model.enhance import filter_settings, propagated_rows

    check_embedding_output(args.output, [args.embedding, args.input])
    settings = filter_settings(f"order={args.order:g},mu={args.mu!r},theta={args.theta!r}")
    start = time.perf_counter()
    vectors, nodes = as_embedding(args.embedding, dtype="float32")
    graph = read_input_graph(args)
    report_graph(graph)
    check_ids_writable(args.output, nodes)
    if args.workers is not None and args.workers < 1 and args.workers != -1:
        raise InputError(f"--workers must be a positive number or -1, got {args.workers}")
    rows = propagated_rows(graph, vectors, nodes, settings, args.workers, args.embedding)
    save_embedding(args.output, rows, nodes)
    if not args.quiet:
        out = sys.stderr if args.output == "-" else sys.stdout
        print(f"graph      {graph.summary()}\n"
              f"propagated {len(rows):,} rows of {rows.shape[1]} ({settings}; unit rows)\n"
              f"time       {time.perf_counter() - start:.1f} s, peak memory "
              f"{peak_memory_mb():.0f} MiB\n"
              f"wrote      {'standard output' if args.output == '-' else args.output}",
              file=out)
    return 0


def register(subparsers) -> None:
    """Add ``propagate`` to the ``kernelne`` CLI."""
    from kernelne.cli.options import add_graph_input_options

    p = add_command(
        subparsers, "propagate",
        help="enhance any embedding by ProNE's spectral propagation over its graph",
        description="Read an embedding (from kernelne or any other tool) and its graph, match "
        "the rows to the nodes by id, and write the rows spectrally propagated: ProNE's "
        "band-pass filter on the normalised Laplacian (a Chebyshev expansion), then a thin "
        "SVD and unit rows. Every node of the graph needs a row and every row a node.",
        example=["kernelne datasets --copy karate",
                 "kernelne embed karate.edgelist -o karate.npy --seed 0 --quiet",
                 "kernelne propagate karate.npy karate.edgelist -o karate.propagated.npy"])
    p.add_argument("embedding", metavar="EMB",
                   help="embedding file: .npz, .npy (ids 0..n-1 or NAME.nodes.txt), .parquet "
                   "or word2vec text")
    p.add_argument("input", metavar="GRAPH",
                   help="edge list (.txt/.csv/.gz, 'u v [w]' per line), .mat or .npz")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="output embedding file (.npz, .npy, .parquet or word2vec text; - for "
                   "standard output), in the rows' order and with their ids")
    p.add_argument("--order", type=float, default=DEFAULT_ORDER, metavar="K",
                   help=f"terms of the Chebyshev expansion, 1 to 100 (default {DEFAULT_ORDER})")
    p.add_argument("--mu", type=float, default=DEFAULT_MU, metavar="M",
                   help=f"the filter's centre on the spectrum, in [0, 2] (default {DEFAULT_MU})")
    p.add_argument("--theta", type=float, default=DEFAULT_THETA, metavar="T",
                   help=f"the filter's width, in (0, 20] (default {DEFAULT_THETA})")
    add_graph_input_options(p)
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="threads (default: every core)")
    p.add_argument("--quiet", action="store_true", help="no summary")
    p.set_defaults(func=cmd_propagate)
