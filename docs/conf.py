"""Sphinx configuration: the API reference (autodoc, numpy-style docstrings) and the Markdown
pages of ``docs/`` (MyST). Build with ``python -m sphinx -W --keep-going -b html docs OUT``."""

from __future__ import annotations

import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

from kernelne._version import __version__  # noqa: E402

project = "kernelne"
author = "kernelne developers"
copyright = "kernelne developers"
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# numpydoc-style docstrings through napoleon
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = False  # Attributes as ".. attribute::" entries: the real names, with "_"
napoleon_preprocess_types = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc sections carry the types
autodoc_class_signature = "mixed"

# The Markdown pages are written for GitHub: their first heading level may jump and a few links
# point outside docs/ (../README.md). Only those two MyST categories are silenced.
myst_heading_anchors = 3
suppress_warnings = ["myst.header", "myst.xref_missing"]

html_theme = "furo"
html_title = f"kernelne {__version__}"

# option names such as --seed stay as typed (no en dashes, no curly quotes)
smartquotes = False
