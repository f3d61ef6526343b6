"""The README's Python snippet runs as written (from the repository root)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_readme_python_snippet_runs(monkeypatch, tmp_path, data_dir):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Python\n\n```python\n(.*?)```", text, re.S)
    assert block, "README has no Python section"
    code = block.group(1).replace('"examples/', f'"{ROOT}/examples/')
    monkeypatch.chdir(tmp_path)  # the snippet writes emb.txt and emb.npy
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    assert namespace["X"].shape == (34, 128)
    assert (tmp_path / "emb.txt").exists() and (tmp_path / "emb.npy").exists()


def test_sample_graph_is_shipped():
    from kernelne import load_graph

    g = load_graph(ROOT / "examples" / "karate.edgelist")
    assert (g.n_nodes, g.n_edges) == (34, 78)
    pytest.importorskip("networkx")
