"""Output paths: a command refuses to overwrite or link to its input, and a bad output path fails
before any work."""

from __future__ import annotations

import os

import pytest
from cli_runs import EDGES, FAST
from cli_runs import run_cli as _run


def test_embed_refuses_to_overwrite_its_input(graph_file, capsys):
    before = graph_file.read_text()
    code, err = _run(["embed", graph_file, "-o", graph_file, *FAST], capsys)
    assert code == 2 and "refusing to overwrite" in err
    assert graph_file.read_text() == before


def test_embed_refuses_a_link_to_its_input(graph_file, tmp_path, capsys):
    link = tmp_path / "link.txt"
    os.symlink(graph_file, link)
    code, err = _run(["embed", graph_file, "-o", link, *FAST], capsys)
    assert code == 2 and "refusing to overwrite" in err
    assert graph_file.read_text() == EDGES


@pytest.mark.parametrize("bad, message", [
    ("missing/out.txt", "folder does not exist"),
    ("", "output path is empty"),
    (".", "existing folder"),
    ("/proc/kernelne-out.txt", "cannot write"),
])
def test_bad_output_paths_fail_before_any_work(graph_file, tmp_path, capsys, monkeypatch, bad,
                                               message):
    monkeypatch.chdir(tmp_path)
    import kernelne.graphs.graph

    def no_work(*args, **kwargs):
        raise AssertionError("the graph was read before the output was checked")

    monkeypatch.setattr(kernelne.graphs.graph, "load_graph", no_work)
    code, err = _run(["embed", graph_file, "-o", bad, *FAST], capsys)
    assert code == 2 and message in err and "Traceback" not in err


def test_split_and_evaluate_refuse_their_inputs(graph_file, tmp_path, capsys):
    code, err = _run(["split", graph_file, "-o", graph_file], capsys)
    assert code == 2 and "refusing to overwrite" in err
    emb = tmp_path / "emb.txt"
    assert _run(["embed", graph_file, "-o", emb, *FAST], capsys)[0] == 0
    labels = tmp_path / "labels.csv"
    labels.write_text("\n".join(f"{i} {i % 2}" for i in range(30)))
    before = labels.read_text()
    code, err = _run(["evaluate", "classify", emb, labels, "--repeats", "1", "-o", labels],
                     capsys)
    assert code == 2 and "refusing to overwrite" in err and labels.read_text() == before
