"""``kernelne evaluate linkpred --select``: a progress bar on a terminal only."""

from __future__ import annotations

import sys

import pytest
from cli_runs import random_embedding
from tune_fakes import KARATE

from kernelne.cli.app import main


@pytest.fixture
def karate_split(tmp_path):
    """A saved split of the karate club and a random embedding of its nodes."""
    from kernelne.evaluation import make_link_split
    from kernelne.graphs.graph import load_graph

    split = make_link_split(load_graph(KARATE), test_fraction=0.3, seed=0)
    folder = tmp_path / "split"
    split.save(folder)
    return random_embedding(tmp_path / "emb.txt", 34), folder


def test_linkpred_select_shows_a_progress_bar(karate_split, capsys, monkeypatch):
    """--operator all --select fits 4 x 5 x 3 + 1 classifiers: a bar counts them."""
    emb, folder = karate_split
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["evaluate", "linkpred", str(emb), str(folder), "--operator", "all",
                 "--select"]) == 0
    err = capsys.readouterr().err
    assert "link prediction" in err and "61/61" in err
    assert main(["evaluate", "linkpred", str(emb), str(folder), "--operator", "all",
                 "--select", "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


def test_linkpred_has_no_bar_when_stderr_is_not_a_terminal(karate_split, capsys):
    emb, folder = karate_split
    assert main(["evaluate", "linkpred", str(emb), str(folder), "--select"]) == 0
    assert capsys.readouterr().err == ""
