"""The README's Python snippet runs as written (from the repository root)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.long  # fits Cora; CI also runs the snippet from the wheel (.ci/help_examples.py)
def test_readme_python_snippet_runs(monkeypatch, tmp_path, data_dir):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Python\n\n```python\n(.*?)```", text, re.S)
    assert block, "README has no Python section"
    code = block.group(1).replace('"examples/', f'"{ROOT}/examples/')
    monkeypatch.chdir(tmp_path)  # the snippet writes emb.txt and emb.npy
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["X"].shape == (34, 128)  # the shipped karate club
    assert (tmp_path / "emb.txt").exists() and (tmp_path / "emb.npy").exists()


def test_sample_graph_is_shipped():
    from kernelne import load_graph

    g = load_graph(ROOT / "examples" / "karate.edgelist")
    assert (g.n_nodes, g.n_edges) == (34, 78)
    pytest.importorskip("networkx")


def test_readme_data_files_exist(data_dir, monkeypatch):
    """Every ``$DATA/FILE`` of the README's command lines is a file of the packaged data."""
    from kernelne.graphs.datasets import packaged_data_dir

    monkeypatch.delenv("KERNELNE_DATA", raising=False)
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    files = set(re.findall(r"\$DATA/([\w.]+)", text))
    assert {"cora.edges.gz", "cora.labels.gz", "facebook.edges.gz"} <= files
    for name in files:
        assert (packaged_data_dir() / name).is_file(), name


#: calls in the guides' Python examples that read a file named by a string
_READS = re.compile(r"\b(?:load_graph|read_labels|read_node_labels|load_model|load_embedding"
                    r"|open)\(\s*[\"']([^\"']+)[\"']")


def test_shipped_guides_python_examples_read_only_what_a_wheel_has():
    """``kernelne docs`` prints docs/*.md from an installed wheel, where examples/ and the
    checkout are absent: a Python example reads the packaged data (``load_dataset``) or a
    file it wrote itself, never a path of the repository."""
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert any(p.name == "GUIDE.md" for p in pages)
    bad = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for block in re.finditer(r"^```python\n(.*?)^```", text, re.M | re.S):
            body = re.sub(r"#.*", "", block.group(1))  # the comments name the user's files
            for read in _READS.finditer(body):
                name = read.group(1)
                if body.find(f'"{name}"') == read.start(1) - 1:  # not written before
                    bad.append(f"{page.name}: {read.group(0)}")
    assert bad == []
