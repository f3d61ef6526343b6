"""``kernelne docs``: every guide is readable by name, from the checkout or a wheel's copy."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelne.cli.app import main
from kernelne.cli.docs import PAGES, docs_folder, read_page

ROOT = Path(__file__).resolve().parents[2]


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


def _all_help_texts() -> list[str]:
    import argparse

    from kernelne.cli.app import build_parser

    texts, parsers = [], [build_parser()]
    while parsers:
        parser = parsers.pop()
        texts.append(parser.format_help())
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.values())
    return texts


def test_help_texts_name_guides_a_wheel_user_can_read():
    """No help text sends a user to a docs/ file (a wheel has none); every guide it names with
    `kernelne docs NAME` exists."""
    import re

    texts = _all_help_texts()
    assert len(texts) > 10
    for text in texts:
        assert "docs/" not in text, text[:200]
        for name in re.findall(r"kernelne docs (\w+)", text):
            assert name in PAGES, name


def test_the_collapse_warning_names_a_readable_guide():
    import inspect

    from kernelne.engine import diagnostics

    source = inspect.getsource(diagnostics.warn_if_collapsed)
    assert "docs/" not in source.replace('"""', "").split("warnings.warn", 1)[1]
    assert "kernelne docs collapse" in source
