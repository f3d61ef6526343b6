"""``kernelne tune`` from the command line: the report on small graphs, bad settings before the
search, a failed trial or Ctrl-C as one line, the outputs all or none."""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from cli_runs import only_error_line
from tune_fakes import write_karate

from kernelne.cli.app import main

ROOT = Path(__file__).resolve().parents[2]


#: a cheap search: 4 walks per node, the finalists scored on 2 validation splits
FAST = ["--dim", "8", "--workers", "1", "--search-walks", "4", "--final-repeats", "2",
        "--quiet"]


@pytest.fixture
def karate(tmp_path):
    """``(edge list, labels of the two clubs)`` in ``tmp_path``."""
    return write_karate(tmp_path)


def leftovers(folder: Path, before: set[str]) -> set[str]:
    """Names in ``folder`` that were not there ``before`` (temporary files included)."""
    return set(os.listdir(folder)) - before


def test_tune_report_on_a_graph_under_50_nodes(karate, tmp_path, capsys):
    """The report's t-SNE map of a 64-dimensional embedding of 34 nodes (PCA to 50 failed)."""
    edges, labels = karate
    out, report = tmp_path / "e.npy", tmp_path / "rep"
    code = main(["tune", str(edges), *FAST, "--dim", "64", "--labels", str(labels),
                 "--holdout", "0.5", "--trials", "2", "-o", str(out), "--report-dir", str(report)])
    assert code == 0, capsys.readouterr().err
    assert out.exists() and (report / "map.png").stat().st_size > 1000


def test_tune_report_failure_leaves_nothing(karate, tmp_path, capsys, monkeypatch):
    import kernelne.evaluation.plot

    def broken(*args, **kwargs):
        raise kernelne.evaluation.plot.InputError("the map cannot be drawn")

    monkeypatch.setattr(kernelne.evaluation.plot, "plot_embedding", broken)
    edges, labels = karate
    before = set(os.listdir(tmp_path))
    code = main(["tune", str(edges), *FAST, "--labels", str(labels), "--holdout", "0.5",
                 "--trials", "1", "-o", str(tmp_path / "e.npy"),
                 "--report-dir", str(tmp_path / "rep")])
    assert code == 2
    assert "the map cannot be drawn" in only_error_line(capsys.readouterr().err)
    assert not leftovers(tmp_path, before)


@pytest.fixture
def no_search(monkeypatch):
    """Fail the test if a search (or a graph read) starts: bad settings must fail before."""
    import optuna

    def searched(*args, **kwargs):
        pytest.fail("the search started")

    monkeypatch.setattr(optuna.study.Study, "optimize", searched)


def bad_tune_cases(tmp_path: Path, labels: Path) -> dict[str, tuple[list[str], str]]:
    one_class = tmp_path / "one.labels"
    one_class.write_text("".join(f"{i} A\n" for i in range(34)))
    strangers = tmp_path / "strangers.labels"
    strangers.write_text("".join(f"{i} {i % 2}\n" for i in range(30, 40)))
    strange_tests = tmp_path / "strange.test"
    strange_tests.write_text("x1 x2\nx3\n")
    report = str(tmp_path / "e.npy")
    return {
        "report is output": (["--report-dir", report], "--report-dir is the embedding output"),
        "missing test nodes": (["--labels", str(labels), "--test-nodes",
                                str(tmp_path / "nope.txt")], "nope.txt: cannot read file"),
        "test nodes unlabelled": (["--labels", str(labels), "--test-nodes",
                                   str(strange_tests)], "none of the 3 test nodes"),
        "timeout 0": (["--timeout", "0"], "timeout must be a positive number"),
        "trials 0": (["--trials", "0"], "trials must be at least 1"),
        "one class": (["--labels", str(one_class)], "all have the same label"),
        "labels not in graph": (["--labels", str(strangers)],
                                "6 labelled node(s) are not nodes of the graph"),
        "search walks 0": (["--search-walks", "0"], "search_walks must be at least 1"),
        "dim 0": (["--dim", "0"], "dim must be at least 1"),
        "workers -3": (["--workers", "-3"], "workers must be a positive number or -1"),
        "hope too wide": (["--method", "hope", "--dim", "128"],
                          "HOPE's dim/2 = 64 must be smaller than the number of nodes (34)"),
        "netmf too wide": (["--method", "netmf", "--dim", "40"],
                           "NetMF's dim = 40 must be smaller than the number of nodes (34)"),
        "holdout -0.5": (["--labels", str(labels), "--holdout", "-0.5"],
                         "holdout must lie strictly between 0 and 1, got -0.5"),
        "holdout 1": (["--labels", str(labels), "--holdout", "1"], "holdout must lie"),
        "holdout and test nodes": (["--labels", str(labels), "--holdout", "0.5",
                                    "--test-nodes", str(labels)], "not both"),
        "holdout without labels": (["--holdout", "0.5"], "need labels"),
    }


CASES = ["report is output", "missing test nodes", "test nodes unlabelled", "timeout 0",
         "trials 0", "one class", "labels not in graph", "search walks 0", "dim 0",
         "workers -3", "hope too wide", "netmf too wide", "holdout -0.5", "holdout 1",
         "holdout and test nodes", "holdout without labels"]


@pytest.mark.parametrize("case", CASES)
def test_tune_bad_settings_fail_before_the_search(karate, tmp_path, capsys, no_search, case):
    edges, labels = karate
    cases = bad_tune_cases(tmp_path, labels)
    assert sorted(cases) == sorted(CASES)
    extra, expected = cases[case]
    args = ["tune", str(edges), "--trials", "2", "--workers", "1", "--quiet", "--search-walks",
            "4", "--dim", "8", "-o", str(tmp_path / "e.npy"), *extra]
    before = set(os.listdir(tmp_path))
    assert main(args) == 2
    assert expected in only_error_line(capsys.readouterr().err)
    assert not leftovers(tmp_path, before)


@pytest.mark.parametrize("holdout", ["-0.5", "0", "1.5", "nan"])
def test_tune_holdout_is_checked_before_the_graph_is_read(karate, tmp_path, capsys,
                                                          monkeypatch, holdout):
    """The abort (exit 134) of a quick exit after a graph read cannot happen to a bad
    --holdout: it fails before anything is read."""
    tune_module = importlib.import_module("kernelne.tune.search")
    monkeypatch.setattr(tune_module, "load_graph",
                        lambda *a, **k: pytest.fail("the graph was read"))
    edges, labels = karate
    code = main(["tune", str(edges), "--labels", str(labels), "--holdout", holdout,
                 "-o", str(tmp_path / "e.npy")])
    assert code == 2
    assert "holdout must lie strictly between 0 and 1" in only_error_line(
        capsys.readouterr().err)


def run_cli_with(patch: str, args: list[str]) -> subprocess.CompletedProcess:
    """``kernelne ARGS`` in a fresh interpreter, after running ``patch`` (a real stderr, so
    that Optuna's own logging would show)."""
    code = f"import sys\n{patch}\nfrom kernelne.cli.app import main\nsys.exit(main({args!r}))\n"
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=600)


@pytest.mark.parametrize("error, expected, status", [
    ("KeyboardInterrupt()", "kernelne: interrupted", 130),
    # every trial failed: one line naming each setting and its reason
    ("InputError('this trial cannot be scored')",
     "kernelne: error: every trial failed: trial 1 (gauss): this trial cannot be scored; "
     "trial 2 (schoenberg): this trial cannot be scored;", 2),
])
def test_tune_trial_failures_print_one_line(karate, tmp_path, error, expected, status):
    edges, labels = karate
    patch = ("import kernelne.evaluation as ev\nfrom kernelne.errors import InputError\n"
             f"def fail(*a, **k):\n    raise {error}\nev.evaluate_node_classification = fail")
    done = run_cli_with(patch, ["tune", str(edges), *FAST, "--labels", str(labels),
                                "--trials", "2", "-o", str(tmp_path / "e.npy")])
    assert done.returncode == status
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.strip().startswith(expected), done.stderr
    assert not (tmp_path / "e.npy").exists()


def test_tune_ctrl_c_prints_one_line(karate, tmp_path):
    edges, labels = karate
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelne", "tune", str(edges), "--dim", "8", "--workers",
         "1", "--labels", str(labels), "--trials", "1000", "-o", str(tmp_path / "e.npy")],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        # a terminal's Ctrl-C: SIGINT at its default, whatever this test process inherited or
        # an earlier test left (an ignored SIGINT is inherited by a child and would stay so)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    deadline = time.monotonic() + 300
    for line in proc.stderr:
        lines.append(line)
        if "trial 1/" in line or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=300)
    assert proc.returncode == 130, (signal.getsignal(signal.SIGINT), "".join(lines[-5:]))
    after = [line for line in rest.splitlines()
             if line.strip() and not line.startswith("kernelne tune: trial ")]
    assert after == ["kernelne: interrupted"], "".join(lines) + rest
    assert not (tmp_path / "e.npy").exists()


def small_result():
    from types import SimpleNamespace

    from kernelne.tune.result import TuneResult

    model = SimpleNamespace(embedding_=np.ones((3, 2), np.float32), nodes_=np.arange(3))
    trials = [{"number": 0, "params": {"window": 3}, "score": 0.5, "seconds": 0.1}]
    return TuneResult("deepwalk", {"window": 3}, 0.5, "roc_auc", trials, model, "test")


@pytest.mark.parametrize("existing", [False, True])
def test_tune_outputs_are_written_all_or_none(tmp_path, monkeypatch, existing):
    from kernelne.tune.result import write_outputs

    report = tmp_path / "rep"
    if existing:
        report.mkdir()
    write_outputs(small_result(), tmp_path / "e.npy", report)
    assert sorted(os.listdir(report)) == ["best.json", "trials.csv", "trials.png"]
    assert sorted(os.listdir(tmp_path)) == ["e.npy", "rep"]

    for name in os.listdir(report):
        (report / name).unlink()
    (tmp_path / "e.npy").unlink()
    if not existing:
        report.rmdir()
    before = set(os.listdir(tmp_path))

    def full(*args):
        raise OSError("disk full")

    monkeypatch.setattr(importlib.import_module("kernelne.tune.result"), "plot_trials", full)
    with pytest.raises(OSError, match="disk full"):
        write_outputs(small_result(), tmp_path / "e.npy", report)
    assert set(os.listdir(tmp_path)) == before
    assert not existing or os.listdir(report) == []
