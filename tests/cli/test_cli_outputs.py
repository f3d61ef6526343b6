"""The embedding output: its format by suffix (.npy in any case, .npz, ``-``), a full disk, a
symbolic link loop and a special file are one line each and leave nothing behind."""

from __future__ import annotations

import os

import numpy as np
import pytest
from cli_runs import EDGES, FAST, KARATE, FullDisk
from cli_runs import run_cli as _run

from kernelne.cli.app import main


@pytest.mark.parametrize("name", ["emb.txt", "emb.npy"])
def test_disk_full_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch, name):
    import builtins

    import kernelne.embedding_io
    import kernelne.outputs

    graph = tmp_path / "g.txt"
    graph.write_text(EDGES)
    out = tmp_path / name
    for writer in (kernelne.embedding_io, kernelne.outputs):  # text, and .npy (write_npy)
        monkeypatch.setattr(writer, "open",
                            lambda *a, **k: FullDisk(builtins.open(*a, **k)), raising=False)
    code, err = _run(["embed", graph, "-o", out, *FAST], capsys)
    assert code == 2 and err.strip().splitlines() == [
        f"kernelne: error: cannot write {out}: No space left on device"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]


def test_npy_in_any_case_is_numpy(tmp_path, capsys):
    from kernelne.embedding_io import load_embedding

    out = tmp_path / "e.NPY"
    assert _run(["embed", KARATE, "-o", out, *FAST], capsys)[0] == 0
    assert np.load(out).shape == (34, 4)
    assert load_embedding(out)[0].shape == (34, 4)


def test_npz_output_is_a_numpy_archive_of_vectors_and_ids(tmp_path, capsys):
    out = tmp_path / "e.npz"
    assert _run(["embed", KARATE, "-o", out, *FAST], capsys)[0] == 0
    with np.load(out) as z:  # not text under an .npz name
        assert z["embedding"].shape == (34, 4) and list(z["nodes"][:2]) == [0, 1]


def test_dash_writes_the_text_embedding_to_stdout_and_the_summary_to_stderr(tmp_path, capsys,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["embed", str(KARATE), "-o", "-", *FAST[:-1]])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert code == 0 and lines[0] == "34 4" and len(lines) == 35
    assert "wrote      standard output" in captured.err and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["loop.txt", "loop.mat", "loop.npz"])
def test_a_symlink_loop_is_named(tmp_path, capsys, name):
    loop = tmp_path / name
    os.symlink(loop, loop)
    code, err = _run(["embed", loop, "-o", tmp_path / "e.txt", *FAST], capsys)
    assert code == 2 and err.strip() == (f"kernelne: error: {loop}: cannot read file: symbolic "
                                         "link loop")


def test_a_missing_file_is_still_no_such_file(tmp_path, capsys):
    code, err = _run(["embed", tmp_path / "none.txt", "-o", tmp_path / "e.txt", *FAST], capsys)
    assert code == 2 and err.strip().endswith("none.txt: cannot read file: no such file")


def test_a_special_file_output_is_refused_not_replaced(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, err = _run(["embed", KARATE, "-o", fifo, *FAST], capsys)
    assert code == 2 and "not a regular file" in err
    import stat

    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still the pipe
