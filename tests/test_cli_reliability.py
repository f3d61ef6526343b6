"""No input is ever overwritten, outputs are checked before work, failures are errors."""

from __future__ import annotations

import os

import pytest

from kernelne.cli import main
from kernelne.outputs import cap_jobs

EDGES = "\n".join(f"{i} {(i + 1) % 30}" for i in range(30)) + "\n0 15\n3 20\n"


@pytest.fixture
def graph_file(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text(EDGES)
    return path


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


FAST = ["--dim", "4", "--walks-per-node", "2", "--workers", "1", "--quiet"]


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
    import kernelne.graph

    def no_work(*args, **kwargs):
        raise AssertionError("the graph was read before the output was checked")

    monkeypatch.setattr(kernelne.graph, "load_graph", no_work)
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


def test_diverged_training_is_an_error_without_output(graph_file, tmp_path, capsys):
    out = tmp_path / "emb.txt"
    code, err = _run(["embed", graph_file, "-o", out, "--kernel", "linear", "--lr", "1000",
                      "--min-lr", "1000", *FAST], capsys)
    assert code == 1 and "diverged" in err and not out.exists()
    assert not list(tmp_path.glob(".emb.txt.*"))  # no temporary file left behind


def test_zero_pair_training_is_an_error(graph_file, tmp_path, capsys):
    out = tmp_path / "emb.txt"
    code, err = _run(["embed", graph_file, "-o", out, "--walk-length", "1", *FAST], capsys)
    assert code == 1 and "no (center, context) pair" in err and not out.exists()


def test_version_and_job_counts(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and "kernelne 0." in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["reproduce", "--jobs", "0"])
    assert exit_.value.code == 2 and "positive number of jobs" in capsys.readouterr().err
    cores = os.cpu_count() or 1
    assert cap_jobs(1000, 3) == min(3, cores) and cap_jobs(-1, 100) == cores
    assert cap_jobs(None, 0) == 1
