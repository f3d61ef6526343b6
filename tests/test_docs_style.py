"""The repository describes the software as it is: no work diary in its text.

Docs, README, CHANGELOG, CONTRIBUTING, docstrings and comments say what kernelne is and does,
not who did what when. This test fails on the marks of a diary: work periods, first person,
run letters, remarks on the machine's load at a moment, withdrawn figures and corrections, bare
issue numbers, and paths outside the repository.
"""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: (name, pattern) searched in every text file of the repository
EVERYWHERE = [
    ("a work period", re.compile(r"\bsess" r"ions?\b", re.I)),
    ("first person", re.compile(
        r"\bI(?:'m|'ve|'d| am| have| had| was| did| think| found| measured| ran| tried| chose"
        r"| kept| saw| settled| wrote| made| used| could| would)\b"
        r"|\b(?:my|we|our|ours|us)\b", re.I)),
    ("a run letter", re.compile(r"\bruns? [A-I]\b(?![-\w])")),
    ("a withdrawn figure or correction", re.compile(
        r"\bwithdrawn\b|\bcorrection:|\bwas overstated\b|\bbefore this change\b"
        r"|\bnot rerun\b", re.I)),
    ("an issue number", re.compile(r"\bissue #?\d+|(?<![\w&/])#\d{1,4}\b", re.I)),
    ("a path outside the repository", re.compile(r"/work/|/home/\w|\.\./shared\b")),
]
#: searched in the prose pages only (benchmark scripts may print the load they ran under)
PROSE_ONLY = [
    ("the machine's load at a moment", re.compile(
        r"\b(?:busy|idle)\b|\bload average\b|\bother jobs\b", re.I)),
]


def _text_files() -> list[Path]:
    files = [ROOT / name for name in ("README.md", "CHANGELOG.md", "CONTRIBUTING.md")]
    files += sorted((ROOT / "docs").glob("*.md"))
    files += sorted((ROOT / "docs").glob("*.rst")) + [ROOT / "docs" / "conf.py"]
    for folder in ("src", "benchmarks", "tests", "examples"):
        files += sorted((ROOT / folder).rglob("*.py"))
    return [f for f in files if f.is_file() and f.name != Path(__file__).name]


def _prose_lines(path: Path) -> list[tuple[int, str]]:
    """``(line number, text)`` of what a reader reads: every line of a page; of Python
    source, the comments and the strings holding a space (docstrings, messages), not names."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return list(enumerate(text.splitlines(), 1))
    lines = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT or (token.type == tokenize.STRING
                                              and " " in token.string):
            first = token.start[0]
            lines += [(first + i, part) for i, part in enumerate(token.string.splitlines())]
    return lines


def _hits(path: Path, patterns) -> list[str]:
    found = []
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    for number, line in _prose_lines(path):
        for name, pattern in patterns:
            match = pattern.search(line)
            if match:
                found.append(f"{where}:{number}: {name} ({match.group(0)!r}): "
                             f"{line.strip()[:100]}")
    return found


def test_no_diary_in_the_repository():
    hits = []
    for path in _text_files():
        prose = path.suffix in (".md", ".rst")
        hits += _hits(path, EVERYWHERE + (PROSE_ONLY if prose else []))
    assert not hits, "diary lines:\n" + "\n".join(hits)


@pytest.mark.parametrize("line", [
    "Measured in sess" "ion 14 on 2 busy cores.", "I have not settled whether it is slower.",
    "that figure is withdrawn", "run I in DISTRIBUTED.md", "as issue #19 asked",
    "see /work/notes.txt", "our mean",
])
def test_the_check_catches_each_kind(line, tmp_path):
    page = tmp_path / "page.md"
    page.write_text(line, encoding="utf-8")
    assert _hits(page, EVERYWHERE + PROSE_ONLY)


@pytest.mark.parametrize("line", [
    "the paper's Table I", "S = (I - beta A)^{-1}", "20 rounds of walks", "a run of 3 walks",
])
def test_the_check_passes_plain_prose(line, tmp_path):
    page = tmp_path / "page.md"
    page.write_text(line, encoding="utf-8")
    assert not _hits(page, EVERYWHERE + PROSE_ONLY)
