"""A split folder with corrupt arrays is an input error; a split folder is written by one run at
a time, its three files always of one split."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from cli_runs import run_cli as _run


def test_corrupt_split_arrays_are_an_input_error(graph_file, tmp_path, capsys):
    from kernelne.errors import InputError
    from kernelne.evaluation.splits import LinkSplit

    assert _run(["split", graph_file, "-o", tmp_path / "s", "--test-fraction", "0.05"],
                capsys)[0] == 0
    (tmp_path / "s" / "split.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(InputError, match="split.npz"):
        LinkSplit.load(tmp_path / "s")


# CC3, CC3b: two splits into one --out-dir never leave a folder mixed of both runs

def _one_run(folder) -> int:
    """The seed of the split in ``folder``, after checking that its three files are that one
    split's: ``split.json`` and ``split.npz`` agree, and ``residual.edgelist`` holds exactly
    its residual edges (no held-out edge)."""
    from kernelne.evaluation.splits import LinkSplit

    split = LinkSplit.load(folder)
    names = [str(x) for x in split.nodes]
    residual = {tuple(line.split()) for line in (folder / "residual.edgelist").read_text()
                .splitlines()}
    assert residual == {(names[u], names[v]) for u, v in split.train_edges}
    assert not residual & {(names[u], names[v]) for u, v in split.test_edges}
    return split.seed


def test_a_second_split_into_a_folder_in_use_is_refused(graph_file, tmp_path, capsys,
                                                        monkeypatch):
    import kernelne.evaluation.splits as splits

    folder = tmp_path / "cc3"
    real = splits.make_link_split
    entered, release = threading.Event(), threading.Event()

    def slow_split(*args, **kwargs):
        if kwargs.get("seed") == 0:  # the first run waits, holding the folder, mid-run
            entered.set()
            assert release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(splits, "make_link_split", slow_split)
    codes = {}
    args = ["split", graph_file, "--out-dir", folder, "--test-fraction", "0.05", "--seed"]
    first = threading.Thread(target=lambda: codes.update(first=_run([*args, "0"], capsys)[0]))
    first.start()
    try:
        assert entered.wait(60)
        code, err = _run([*args, "1"], capsys)
    finally:
        release.set()
        first.join(60)
    assert code == 2 and err.count("\n") == 1, err
    assert f"{folder}: another split (--out-dir {folder}) is writing into this folder now" in err
    assert codes["first"] == 0 and _one_run(folder) == 0
    assert sorted(os.listdir(folder)) == ["residual.edgelist", "split.json", "split.npz"]


def test_a_save_into_a_locked_folder_writes_nothing(graph_file, tmp_path):
    from kernelne.errors import InputError
    from kernelne.evaluation.splits import make_link_split
    from kernelne.outputs import folder_lock

    folder = tmp_path / "s"
    make_link_split(graph_file, 0.05, seed=0).save(folder)
    other = make_link_split(graph_file, 0.05, seed=1)
    refused = []

    def save_beside():
        try:
            other.save(folder)
        except InputError as exc:
            refused.append(str(exc))

    with folder_lock(folder, "another split"):
        thread = threading.Thread(target=save_beside)  # another thread: another descriptor
        thread.start()
        thread.join(60)
    assert refused and "another split is writing into this folder now" in refused[0]
    assert _one_run(folder) == 0
    other.save(folder)  # the lock released: the whole of the other split replaces it
    assert _one_run(folder) == 1


def test_a_process_holding_the_folder_refuses_a_split_of_another(graph_file, tmp_path):
    import fcntl

    folder = tmp_path / "s"
    folder.mkdir()
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        done = subprocess.run([sys.executable, "-m", "kernelne", "split", str(graph_file),
                               "--out-dir", str(folder), "--seed", "1"], capture_output=True,
                              text=True, env={**os.environ}, timeout=300)
    finally:
        os.close(fd)
    assert done.returncode == 2 and "is writing into this folder now" in done.stderr
    assert "Traceback" not in done.stderr and os.listdir(folder) == []


def test_a_failed_split_removes_the_folder_it_made(tmp_path, capsys):
    graph = tmp_path / "g.txt"
    graph.write_text("0 1\n")  # one edge: nothing to hold out
    code, err = _run(["split", graph, "--out-dir", tmp_path / "new", "--seed", "0"], capsys)
    assert code == 2 and not (tmp_path / "new").exists()
