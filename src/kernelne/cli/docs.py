"""``kernelne docs``: the user guides, readable offline from an installed wheel.

The guides are the Markdown pages of the repository's ``docs/`` folder. A wheel carries copies
in ``kernelne/_docs/`` (``setup.py`` puts them there when the wheel is built); a source checkout
(an editable install) reads ``docs/`` itself.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kernelne.cli.grammar import add_command
from kernelne.errors import InputError, quote

#: the guides, by the name ``kernelne docs NAME`` takes, with what each holds
PAGES = {
    "guide": ("GUIDE.md", "the user guide: inputs, commands, evaluation, tune, new nodes"),
    "method": ("METHOD.md", "the method: model, loss, gradients, kernels, walks, protocols"),
    "quality": ("QUALITY.md", "where KernelNE wins and loses; which setting for which graph"),
    "collapse": ("COLLAPSE.md", "troubleshooting a collapsed embedding"),
    "distributed": ("DISTRIBUTED.md", "partitioned training on one machine or a Dask cluster"),
    "benchmarks": ("BENCHMARKS.md", "speed and memory against gensim and PecanPy"),
    "results": ("RESULTS.md", "the paper's tables, reproduced"),
}


def docs_folder() -> Path:
    """The folder holding the guides: the wheel's copy, else the checkout's ``docs/``."""
    package = Path(__file__).resolve().parents[1]
    shipped = package / "_docs"
    if shipped.is_dir():
        return shipped
    return package.parents[1] / "docs"


def read_page(name: str) -> str:
    """The Markdown text of guide ``name`` (a key of :data:`PAGES`, any case).

    Parameters
    ----------
    name : str
        The guide's name, e.g. ``"collapse"``.

    Returns
    -------
    str
        The page's Markdown source.

    Raises
    ------
    InputError
        If no guide has that name, or the installation lacks the page.
    """
    key = name.lower().removesuffix(".md")
    if key not in PAGES:
        raise InputError(f"no guide named {quote(name)}; the guides: {', '.join(PAGES)}")
    path = docs_folder() / PAGES[key][0]
    if not path.is_file():
        raise InputError(f"this installation lacks the guide {PAGES[key][0]} (looked in "
                         f"{path.parent})")
    return path.read_text(encoding="utf-8")


def cmd_docs(args: argparse.Namespace) -> int:
    if args.name is None:
        width = max(map(len, PAGES))
        for key, (_, what) in PAGES.items():
            print(f"{key:<{width}}  {what}")
        print(f"folder: {docs_folder()}")
        return 0
    print(read_page(args.name), end="")
    return 0


def register(subparsers) -> None:
    p = add_command(subparsers, "docs", help="print a user guide (offline)",
                    description="List the guides shipped with kernelne, or print one as "
                    "Markdown.", example=["kernelne docs", "kernelne docs collapse"])
    p.add_argument("name", nargs="?", default=None, metavar="NAME",
                   help=f"the guide to print: {', '.join(PAGES)} (none: list them)")
    p.set_defaults(func=cmd_docs)
