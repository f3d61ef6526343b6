"""CLI: ``kernelne datasets``, the networks of the data folder and their statistics."""

from __future__ import annotations

import argparse

from kernelne.cli.grammar import add_command
from kernelne.graphs.datasets import DATA_ENV, describe_datasets, find_data_dir


def cmd_datasets(args: argparse.Namespace) -> int:
    folder = find_data_dir(args.data_dir)
    if args.path:
        print(folder)
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
        help="list the networks of the data folder (the paper's seven, shipped)",
        example="kernelne datasets",
        description="List the networks of the data folder with their statistics: by default "
        f"the paper's seven networks shipped with the package (or ${DATA_ENV} if set).")
    p.add_argument("--data-dir", metavar="DIR",
                   help=f"data folder with MANIFEST.json (default: ${DATA_ENV}, else the "
                   "packaged networks)")
    p.add_argument("--path", action="store_true",
                   help="print the data folder's path only (e.g. $(kernelne datasets --path))")
    p.set_defaults(func=cmd_datasets)
