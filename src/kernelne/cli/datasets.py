"""CLI: ``kernelne datasets``, the networks of the data folder and their statistics."""

from __future__ import annotations

import argparse
import os

from kernelne.cli.grammar import add_command


def cmd_datasets(args: argparse.Namespace) -> int:
    from kernelne.graphs.datasets import (
        copy_dataset,
        dataset_file,
        describe_datasets,
        find_data_dir,
    )

    folder = find_data_dir(args.data_dir)
    if args.copy is not None:  # --copy "" is an unknown name, not no --copy
        there = set(os.listdir(args.out_dir)) if os.path.isdir(args.out_dir) else set()
        for path in copy_dataset(args.copy, args.out_dir, folder, overwrite=args.force):
            if path.name in there and not args.force:
                print(f"kept {path} (it holds the packaged file already)")
            else:
                print(f"wrote {path}")
        return 0
    if args.path is not None:
        print(dataset_file(args.path, folder) if args.path else folder)
        return 0
    rows = describe_datasets(folder)
    header = ["name", "nodes", "edges", "labels", "components", "source"]
    cells = [header] + [
        [r["name"], f"{r['nodes']:,}", f"{r['edges']:,}", r["labels"], f"{r['components']:,}"
         if isinstance(r["components"], int) else str(r["components"]), r["source"]]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    right = {"nodes", "edges", "components"}
    for row in cells:
        print("  ".join(c.rjust(w) if h in right else c.ljust(w)
                        for c, w, h in zip(row, widths, header, strict=True)).rstrip())
    print(f"folder: {folder} (format, sources and transformations: README.md, MANIFEST.json)")
    return 0


def register(subparsers) -> None:
    """Add ``datasets`` to the ``kernelne`` CLI."""
    p = add_command(
        subparsers, "datasets",
        help="list the networks of the data folder (the paper's seven and karate, shipped)",
        example=["kernelne datasets", "kernelne datasets --copy karate",
                 "kernelne datasets --path karate"],
        description="List the networks of the data folder with their statistics: by default "
        "the paper's seven networks and the karate club of the examples, shipped with the "
        "package (or $KERNELNE_DATA if set). --copy writes one as plain text into the current "
        "folder (NAME.edgelist, NAME.labels), the input of the examples of every command; "
        "it never replaces a file of those names holding something else unless --force is "
        "given.")
    p.add_argument("--data-dir", metavar="DIR",
                   help="data folder with MANIFEST.json (default: $KERNELNE_DATA, else the "
                   "packaged networks)")
    p.add_argument("--path", nargs="?", const="", default=None, metavar="NAME",
                   help="print the data folder's path only, or with NAME the path of "
                   "NAME.edges.gz (e.g. kernelne embed $(kernelne datasets --path karate))")
    p.add_argument("--copy", metavar="NAME",
                   help="write network NAME as NAME.edgelist and NAME.labels (if labelled) "
                   "into --out-dir")
    p.add_argument("--out-dir", metavar="DIR", default=".",
                   help="folder for --copy (default: the current folder)")
    p.add_argument("--force", action="store_true",
                   help="with --copy, replace files of the same names; without it, a file "
                   "there that differs from the packaged one is refused and nothing is written")
    p.set_defaults(func=cmd_datasets)
