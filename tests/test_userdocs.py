"""``kernelne docs``: every guide is readable by name, from the checkout or a wheel's copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelne.cli import main
from kernelne.userdocs import PAGES, docs_folder, read_page

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(PAGES))
def test_every_guide_is_a_page_of_docs(name):
    text = read_page(name)
    assert text == (ROOT / "docs" / PAGES[name][0]).read_text(encoding="utf-8")
    assert text.startswith("# ")


def test_every_markdown_page_of_docs_is_a_guide():
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}  # Sphinx's root
    assert pages == {f for f, _ in PAGES.values()}


def test_docs_lists_and_prints(capsys):
    assert main(["docs"]) == 0
    listing = capsys.readouterr().out
    assert all(name in listing for name in PAGES) and str(docs_folder()) in listing
    assert main(["docs", "COLLAPSE"]) == 0
    assert capsys.readouterr().out == read_page("collapse")


def test_an_unknown_guide_is_one_error_line(capsys):
    assert main(["docs", "nonsense"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no guide named 'nonsense'" in err[0] and "collapse" in err[0]
