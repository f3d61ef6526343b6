"""``evaluate classify`` and ``plot``'s t-SNE: progress on stderr on a terminal only."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from kernelne.cli.app import main


@pytest.fixture
def karate_files(tmp_path, monkeypatch):
    """The shipped karate club copied into ``tmp_path`` and a random embedding of its nodes."""
    from kernelne.graphs.datasets import copy_dataset

    monkeypatch.delenv("KERNELNE_DATA", raising=False)
    copy_dataset("karate", tmp_path)
    vectors = np.random.default_rng(0).normal(size=(34, 8))
    emb = tmp_path / "emb.txt"
    with open(emb, "w", encoding="utf-8") as fh:
        fh.write("34 8\n")
        for i, row in enumerate(vectors):
            fh.write(f"{i} " + " ".join(f"{x:.5f}" for x in row) + "\n")
    return emb, tmp_path / "karate.labels"


def classify(emb, labels, *extra) -> int:
    return main(["evaluate", "classify", str(emb), str(labels), "--ratios", "0.5",
                 "--repeats", "4", "--jobs", "1", *extra])


def test_classify_counts_its_splits_on_a_terminal(karate_files, capsys, monkeypatch):
    emb, labels = karate_files
    assert classify(emb, labels) == 0  # capsys: stderr is not a terminal, no bar
    quiet = capsys.readouterr()
    assert quiet.err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert classify(emb, labels) == 0
    shown = capsys.readouterr()
    assert "classification (top-k and non-oracle)" in shown.err and "/4 [" in shown.err  # 4 splits
    table = [line for line in quiet.out.splitlines() if "micro_f1" in line]
    assert table and table == [line for line in shown.out.splitlines() if "micro_f1" in line]
    assert classify(emb, labels, "--no-progress") == 0
    assert capsys.readouterr().err == ""


def test_plot_counts_the_seconds_of_tsne_on_a_terminal(karate_files, capsys, monkeypatch):
    emb, labels = karate_files
    out = emb.parent / "map.png"
    args = ["plot", str(emb), "-o", str(out), "--projection", "tsne", "--labels", str(labels)]
    assert main(args) == 0
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(args) == 0
    assert "t-SNE of 34 points" in capsys.readouterr().err
    assert main(args + ["--no-progress"]) == 0
    assert capsys.readouterr().err == "" and out.stat().st_size > 0
