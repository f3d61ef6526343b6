"""Packaging metadata: one version source, the licence as an SPDX expression, the sdist's
contents (MANIFEST.in). The build itself runs in CI (.ci/run: python -m build, a fresh venv)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import kernelne
from kernelne._version import __version__
from kernelne.cli.app import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_one_version_source(pyproject, capsys):
    project = pyproject["project"]
    assert "version" not in project and "version" in project["dynamic"]
    attr = pyproject["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "kernelne._version.__version__"
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__) and kernelne.__version__ == __version__
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.strip() == f"kernelne {__version__}"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    # Keep a Changelog: every release has a dated section, the current version among them
    releases = re.findall(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$", changelog, re.M)
    assert __version__ in dict(releases) and "0.1.0" in dict(releases)
    assert re.search(r"^## \[Unreleased\]$", changelog, re.M)


def test_readme_is_short_and_starts_with_the_quick_start():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 250
    start = lines.index("## Quick start")
    assert start < 40 and any("pip install" in line for line in lines[start:40])
    commands = [cmd.strip() for line in lines[start:40] for cmd in line.split("#")[0].split("&&")]
    assert "python -m pytest" in commands


def test_docs_pages_stay_short_where_they_must():
    assert len((ROOT / "docs" / "DISTRIBUTED.md").read_text(encoding="utf-8").splitlines()) <= 250
    assert (ROOT / "docs" / "BENCHMARKS.md").is_file()


def test_citation_and_contributing():
    citation = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert "Kernel Node Embeddings" in citation
    assert "Multiple Kernel Representation Learning on Networks" in citation
    assert f"version: {__version__}" in citation
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    modules = sorted(p.relative_to(ROOT / "src") for p in (ROOT / "src" / "kernelne").glob("*.py"))
    missing = [str(m) for m in modules if f"`{m.as_posix()}`" not in contributing
               and f"`{m.name}`" not in contributing and f", `{m.name}`" not in contributing]
    assert not missing, f"CONTRIBUTING.md's layout table lacks {missing}"
    wings = sorted(p.parent for p in (ROOT / "src" / "kernelne").glob("*/__init__.py"))
    missing = [f"{wing.name}/" for wing in wings if f"| `{wing.name}/` |" not in contributing]
    missing += [f"{m.parent.name}/{m.name}" for wing in wings for m in sorted(wing.glob("*.py"))
                if m.stem != "__init__" and f"`{m.stem}`" not in contributing]
    assert not missing, f"CONTRIBUTING.md's layout table lacks {missing}"


def test_licence_and_metadata(pyproject):
    project = pyproject["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert not any(c.startswith("License ::") for c in project["classifiers"])  # SPDX only
    requires = pyproject["build-system"]["requires"]
    assert any(re.fullmatch(r"setuptools>=(\d+)", r) and int(r.split(">=")[1]) >= 77
               for r in requires)  # the SPDX license field needs setuptools 77
    assert project["authors"] and "build>=1.0" in project["optional-dependencies"]["dev"]


def test_sdist_and_wheel_carry_what_the_readme_uses(pyproject):
    manifest = (ROOT / "MANIFEST.in").read_text()
    for folder in ("docs", "examples", "tests"):
        assert f"graft {folder}" in manifest
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for link in re.findall(r"\]\(((?:docs|examples)/[^)#]+)\)", readme):
        assert (ROOT / link).exists(), link
    data = pyproject["tool"]["setuptools"]["package-data"]["kernelne"]
    assert "data/*.gz" in data and "data/MANIFEST.json" in data


def test_the_readme_names_every_extra_a_message_asks_for(pyproject):
    """The wheel brings every command; what needs an extra (plotly for ``plot -o map.html``,
    Dask) says so, and the README's install section names the same extras."""
    extras = set(pyproject["project"]["optional-dependencies"])
    asked = set()
    for source in (ROOT / "src" / "kernelne").rglob("*.py"):
        asked |= set(re.findall(r"pip install 'kernelne\[(\w+)\]'", source.read_text()))
    assert {"plot", "dask"} <= asked <= extras
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme[readme.index("## Install"):readme.index("## Python")]
    for extra in asked:
        assert f"pip install 'kernelne[{extra}]'" in install, extra
    assert "everything the commands need" not in readme
