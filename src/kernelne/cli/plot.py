"""CLI: ``kernelne plot``, a 2-D map of an embedding coloured by label."""

from __future__ import annotations

import argparse

from kernelne.cli.grammar import add_command, add_deprecated_alias, progress_shown, seed_value
from kernelne.errors import InputError
from kernelne.evaluation.plot import PROJECTIONS, check_image_suffix, is_html, plot_embedding
from kernelne.outputs import check_output_path


def cmd_plot(args: argparse.Namespace) -> int:
    if args.sample < 1:
        raise InputError(f"--sample must be at least 1, got {args.sample}")
    if not is_html(args.output):
        check_image_suffix(args.output)
    check_output_path(args.output, [args.embedding, args.labels])
    out = plot_embedding(args.embedding, args.labels, args.output, method=args.projection,
                         sample=args.sample, seed=args.seed, notes=True,
                         progress=progress_shown(args))
    print(f"wrote {out}")
    return 0


def register(sub) -> None:
    """Add ``kernelne plot`` to the CLI."""
    p = add_command(sub, "plot", help="draw a 2-D map of an embedding, coloured by label",
                    description="Project an embedding to 2-D (PCA, t-SNE or UMAP) and draw "
                    "it, coloured by each node's (first) label: an image, or an .html page "
                    "to zoom and hover (node id and label), self-contained and offline (needs "
                    "plotly: pip install 'kernelne[plot]').",
                    example=["kernelne datasets --copy karate",
                             "kernelne embed karate.edgelist -o karate.npy --seed 0",
                             "kernelne plot karate.npy -o karate.png --projection tsne "
                             "--labels karate.labels"])
    p.add_argument("embedding", metavar="EMBEDDING",
                   help="embedding file (word2vec text, .npy, .npz or .parquet)")
    p.add_argument("--labels", default=None, metavar="FILE",
                   help="label file, 'node label' per line")
    p.add_argument("-o", "--output", required=True, metavar="FILE",
                   help="image file (.png, .pdf, .svg) or interactive page (.html)")
    p.add_argument("--projection", default="pca", choices=PROJECTIONS,
                   help="2-D projection")
    add_deprecated_alias(p, "--method", "--projection", "projection", choices=PROJECTIONS)
    p.add_argument("--sample", type=int, default=20000, metavar="N",
                   help="at most this many points")
    p.add_argument("--seed", type=seed_value, default=0, metavar="N",
                   help="seed of sampling and projection")
    p.add_argument("--no-progress", action="store_true",
                   help="no elapsed-time line during t-SNE or UMAP (there is none either when "
                   "stderr is not a terminal)")
    p.set_defaults(func=cmd_plot)
