"""Packaging metadata: one version source, the licence as an SPDX expression, the sdist's
contents (MANIFEST.in). The build itself runs in CI (.ci/run: python -m build, a fresh venv)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import kernelne
from kernelne._version import __version__
from kernelne.cli import main

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
    assert f"## {__version__}" in changelog or "## Unreleased" in changelog


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
