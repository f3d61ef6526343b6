"""kernelne tune survives a failed fit: the trial is recorded (Optuna's FAIL, its reason in
the table, trials.csv and best.json) and the search goes on; tune's CLI grammar."""

from __future__ import annotations

import csv
import errno
import importlib
import json
import os

import networkx as nx
import numpy as np
import pytest
from cli_runs import only_error_line
from tune_fakes import FULL, FakeEstimator, write_karate

from kernelne.cli.app import main
from kernelne.errors import InputError, TrainingError
from kernelne.graphs.graph import Graph
from kernelne.tune.search import tune
from kernelne.tune.space import KERNELNE_DEFAULTS

DIVERGED = "training diverged: 7 of 120 embedding rows are NaN or infinite"
space_module = importlib.import_module("kernelne.tune.space")
result_module = importlib.import_module("kernelne.tune.result")
#: the failures do not depend on the classifier's C: C = 1 is the fast one
C1 = {"select_C": False}


class Fake(FakeEstimator):
    """A stand-in for KernelNE: the default Gauss separates the groups, every other setting
    gives noise, and ``fails(params, graph)`` says which fits raise (``TrainingError``)."""

    fails = staticmethod(lambda p, graph: False)

    def fit(self, graph):
        p = self.params
        if self.fails(p, graph):
            raise TrainingError(DIVERGED)
        rng = np.random.default_rng(int(p["walks_per_node"]) + 7 * int(p["negatives"])
                                    + 13 * int(p["window"]))
        X = rng.normal(size=(graph.n_nodes, 8))
        if p["kernel"] == "gauss" and p["loss"] == "squared" and p["window"] == 10:
            X[:, :4] += 2.5 * np.eye(4)[np.arange(graph.n_nodes) // 30]
        self.embedding_, self.nodes_ = X.astype(np.float32), np.arange(graph.n_nodes)
        return self


def multi_loglik(p, graph) -> bool:
    return p["kernel"] == "multi" and p["loss"] == "loglik"


@pytest.fixture
def fake(monkeypatch):
    """Tune with :class:`Fake`; set ``fake.fails`` to choose the failing fits. Returns the
    studies tune creates, to read Optuna's trial states."""
    import optuna

    monkeypatch.setattr(space_module, "make_estimator", lambda method, params: Fake(**params))
    studies = []
    real = optuna.create_study

    def spy(*args, **kwargs):
        studies.append(real(*args, **kwargs))
        return studies[-1]

    monkeypatch.setattr(optuna, "create_study", spy)
    yield studies
    Fake.fails = staticmethod(lambda p, graph: False)


def test_a_diverging_default_is_recorded_and_the_search_goes_on(groups, fake, tmp_path):
    from optuna.trial import TrialState

    Fake.fails = staticmethod(multi_loglik)
    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), trials=9, search_walks=5, holdout=0.3, finalists=2,
                  progress=False, **C1)
    failed = [t for t in result.trials if t["state"] == "failed"]
    assert [t["default"] for t in failed] == ["multi,loglik"]
    assert failed[0]["reason"] == DIVERGED and failed[0]["score"] is None
    # the search went on: every other trial ran and was scored, the best default won
    assert len(result.trials) == 9
    assert all(t["score"] is not None for t in result.trials if t["state"] == "complete")
    assert result.best_params["kernel"] == "gauss" and result.ranking["winner"] == 1
    assert failed[0]["number"] not in {f["number"] for f in result.finals}
    states = [t.state for t in fake[0].trials]
    assert states.count(TrialState.FAIL) == 1 and states[5] == TrialState.FAIL  # 6th default
    # reported everywhere, with its reason
    table = result.table().splitlines()
    assert table[0].split()[-1] == "reason"
    row = next(line for line in table if "multi,loglik" in line)
    assert row.split()[0] == "6" and "failed" in row and DIVERGED in row
    assert table[-1] == row  # failed trials last
    assert f"failed      trial 6 (default multi,loglik): {DIVERGED}" in result.summary()
    result.write_report(tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "trials.csv", encoding="utf-8")))
    assert [r["trial"] for r in rows] == [str(i) for i in range(1, 10)]
    assert [(r["state"], r["reason"]) for r in rows if r["default"] == "multi,loglik"] == [
        ("failed", DIVERGED)]
    assert {r["state"] for r in rows if r["default"] != "multi,loglik"} == {"complete"}
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["failed"] == [{"trial": 6, "default": "multi,loglik", "stage": "search",
                               "params": failed[0]["params"], "reason": DIVERGED}]
    assert best["best_trial"] == 1 and best["trials"] == 9


def test_a_finalist_whose_refit_fails_is_recorded(groups, fake):
    """The search's cheap fit of 'schoenberg' works, its full refit diverges."""
    Fake.fails = staticmethod(lambda p, graph: p["kernel"] == "schoenberg"
                              and p["walks_per_node"] == FULL)
    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), trials=7, search_walks=5, holdout=0.3, progress=False,
                  **C1)
    failed = [f for f in result.finals if f.get("state") == "failed"]
    assert {f["number"] for f in failed} == {2, 5, 7}  # the three schoenberg defaults
    assert all(f["reason"] == DIVERGED for f in failed)
    assert result.ranking["winner"] == 1 and result.ranking["finalists"] == len(
        KERNELNE_DEFAULTS) - 3
    assert "failed      trial 2 (default schoenberg) as a finalist: " + DIVERGED in (
        result.summary())
    row = next(r for r in result._rows()[1] if r["trial"] == 2)
    assert row["state"] == "finalist failed" and row["reason"] == DIVERGED


def test_a_winner_whose_refit_fails_gives_way_to_the_next(groups, fake):
    """Link validation fits on the residual graph; the winner's refit on the whole graph
    diverges: the next best finalist is refitted and wins, the failure is recorded."""
    graph, _, _ = groups
    Fake.fails = staticmethod(lambda p, g: g.n_edges == graph.n_edges
                              and p["kernel"] == "gauss" and p["loss"] == "squared"
                              and p["window"] == 10)
    result = tune(graph, trials=1, fixed={"dim": 8}, progress=False)
    gauss = next(f for f in result.finals if f["number"] == 1)
    assert gauss["state"] == "failed" and gauss["reason"].startswith("refit on the whole")
    assert result.ranking["winner"] != 1 and result.model.embedding_.shape == (120, 8)
    assert result.failures()[0]["stage"] == "refit"


def test_every_trial_failing_is_one_error_naming_each(groups, fake):
    Fake.fails = staticmethod(lambda p, graph: True)
    graph, nodes, Y = groups
    with pytest.raises(TrainingError) as info:
        tune(graph, (nodes, Y), trials=2, progress=False, **C1)
    text = str(info.value)
    assert text.startswith("every trial failed: trial 1 (gauss): " + DIVERGED)
    for i, default in enumerate(KERNELNE_DEFAULTS, start=1):
        name = ",".join(k if v is True else str(v) for k, v in default.items())
        assert f"trial {i} ({name}): {DIVERGED}" in text


# --- the CLI ------------------------------------------------------------------------------


@pytest.fixture
def karate(tmp_path):
    """``(edge list, labels of the two clubs)`` in ``tmp_path``."""
    return write_karate(tmp_path)


@pytest.fixture
def no_search(monkeypatch):
    """Fail the test if a search starts: bad settings must fail before."""
    import optuna

    monkeypatch.setattr(optuna.study.Study, "optimize",
                        lambda *a, **k: pytest.fail("the search started"))


FAST = ["--dim", "8", "--workers", "1", "--quiet"]
#: with labels: the outputs do not depend on the classifier's C nor on the number of splits
CHEAP = ["--no-select-C", "--final-repeats", "2"]


def test_cli_every_trial_failing_is_one_line(karate, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(space_module, "make_estimator", lambda method, params: Fake(**params))
    Fake.fails = staticmethod(lambda p, graph: True)
    try:
        edges, labels = karate
        before = set(os.listdir(tmp_path))
        code = main(["tune", str(edges), *FAST, "--labels", str(labels), "--trials", "1",
                     "-o", str(tmp_path / "e.npy"), "--report-dir", str(tmp_path / "rep")])
    finally:
        Fake.fails = staticmethod(lambda p, graph: False)
    assert code == 1
    line = only_error_line(capsys.readouterr().err)
    assert "every trial failed: trial 1 (gauss): training diverged" in line
    assert "trial 6 (multi,loglik): training diverged" in line
    assert set(os.listdir(tmp_path)) == before


def test_cli_progress_numbers_trials_like_the_table(karate, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(space_module, "make_estimator", lambda method, params: Fake(**params))
    Fake.fails = staticmethod(multi_loglik)
    try:
        edges, labels = karate
        code = main(["tune", str(edges), "--dim", "8", "--workers", "1", "--labels",
                     str(labels), *CHEAP, "--trials", "1", "-o", str(tmp_path / "e.npy"),
                     "--report-dir", str(tmp_path / "rep")])
    finally:
        Fake.fails = staticmethod(lambda p, graph: False)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    progress = [line for line in captured.err.splitlines() if " trial " in line]
    assert progress[0].startswith("kernelne tune: trial 1/7 (default gauss)")
    assert progress[5].startswith("kernelne tune: trial 6/7 (default multi,loglik)  failed: "
                                  "training diverged")
    table = captured.out.splitlines()
    numbers = sorted(int(line.split()[0]) for line in table[1:8])
    assert numbers == list(range(1, 8))  # the table's numbers are the progress lines'
    best = json.loads((tmp_path / "rep" / "best.json").read_text())
    assert best["ranking"]["winner"] == best["best_trial"] >= 1
    assert f"winner      trial {best['best_trial']} " in captured.out
    assert "failed      trial 6 (default multi,loglik): training diverged" in captured.out


def test_audit_line_gives_the_best_finalists_score(groups, fake):
    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), trials=7, search_walks=5, holdout=0.3, progress=False,
                  **C1)
    tests = {f["number"]: f["test_score"] for f in result.finals}
    best = max(tests, key=tests.get)
    audit = next(line for line in result.summary().splitlines() if line.startswith("audit"))
    assert (f"the best of the {len(tests)} finalists trial {best} (default gauss) "
            f"{tests[best]:.4f}") in audit


def test_tune_refuses_a_fixed_partition_folder_before_any_trial(tmp_path, no_search):
    """D14: one partition folder shared by every trial fails all but the first."""
    with pytest.raises(InputError, match="would share one partition folder"):
        tune(write_karate(tmp_path)[0], fixed={"partitions": 2,
                                                "partition_dir": str(tmp_path / "pd")})
    assert not (tmp_path / "pd").exists()


@pytest.mark.parametrize("extra, expected", [
    (["--finalists", "2"], "--finalists only matters with --search-walks"),
    (["--fix", "kernel=gauss", "--fix", "kernel=multi"],
     '--fix kernel given twice ("gauss", then "multi"): give it once'),
    (["--seed", "-1"], "argument --seed: -1: a seed is a whole number >= 0"),
    (["--fix", "partitions=2", "--fix", "partition_dir=pd"],  # D14
     "every trial (and the refit) would share one partition folder"),
])
def test_cli_refuses_before_the_search(karate, tmp_path, capsys, no_search, extra, expected):
    edges, _ = karate
    try:
        code = main(["tune", str(edges), *FAST, "-o", str(tmp_path / "e.npy"), *extra])
    except SystemExit as exc:  # refused by argparse
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err
    assert not (tmp_path / "e.npy").exists()


def test_cli_npz_output_is_an_embedding_archive(karate, tmp_path, monkeypatch):
    """``-o t.npz`` writes the embedding as ``embed`` does: vectors and ids in one archive."""
    from kernelne.embedding_io import load_embedding

    monkeypatch.setattr(space_module, "make_estimator", lambda method, params: Fake(**params))
    edges, labels = karate
    out = tmp_path / "t.npz"
    assert main(["tune", str(edges), *FAST, *CHEAP, "--labels", str(labels), "--trials", "1",
                 "-o", str(out)]) == 0
    vectors, nodes = load_embedding(out)
    assert len(vectors) == len(nodes) == 34
    assert sorted(os.listdir(tmp_path)) == ["karate.edgelist", "karate.labels", "t.npz"]


def test_cli_refuses_an_unwritable_report_dir(karate, tmp_path, capsys, no_search):
    edges, _ = karate
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = main(["tune", str(edges), *FAST, "-o", str(tmp_path / "e.npy"), "--report-dir",
                 str(blocker / "rep")])
    assert code == 2
    assert "its folder does not exist" in only_error_line(capsys.readouterr().err)
    assert sorted(os.listdir(tmp_path)) == ["file", "karate.edgelist", "karate.labels"]


def test_cli_full_disk_is_one_line_and_leaves_nothing(karate, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(space_module, "make_estimator", lambda method, params: Fake(**params))
    report = tmp_path / "rep"

    def full(result, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(result_module, "plot_trials", full)
    edges, labels = karate
    before = set(os.listdir(tmp_path))
    code = main(["tune", str(edges), *FAST, *CHEAP, "--labels", str(labels), "--trials", "1",
                 "-o", str(tmp_path / "e.npy"), "--report-dir", str(report)])
    assert code == 2
    line = only_error_line(capsys.readouterr().err)
    assert "cannot write the outputs: No space left on device" in line and "trials.png" in line
    assert set(os.listdir(tmp_path)) == before


def test_cli_report_is_a_deprecated_spelling_of_report_dir(karate, tmp_path, capsys,
                                                           monkeypatch):
    monkeypatch.setattr(space_module, "make_estimator", lambda method, params: Fake(**params))
    edges, labels = karate
    code = main(["tune", str(edges), *FAST, *CHEAP, "--labels", str(labels), "--trials", "1",
                 "-o", str(tmp_path / "e.npy"), "--report", str(tmp_path / "rep")])
    assert code == 0
    assert "--report is deprecated, use --report-dir" in capsys.readouterr().err
    assert (tmp_path / "rep" / "best.json").exists()


def test_cli_removes_the_report_staging_folder_of_a_killed_run(karate, tmp_path,
                                                              monkeypatch):
    """D13: a tune killed while staging its report leaves ``.REPORT.<pid>.<random>.tmp``;
    the next run removes it (a live process's staging folder is kept)."""
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".rep.{dead.pid}.abc123.tmp"
    stale.mkdir()
    (stale / "trials.csv").write_text("half written")
    live = tmp_path / f".rep.{os.getpid()}.xyz789.tmp"
    live.mkdir()
    monkeypatch.setattr(space_module, "make_estimator", lambda method, params: Fake(**params))
    edges, labels = karate
    assert main(["tune", str(edges), *FAST, *CHEAP, "--labels", str(labels), "--trials", "1",
                 "-o", str(tmp_path / "e.npy"), "--report-dir", str(tmp_path / "rep")]) == 0
    assert not stale.exists() and live.exists() and (tmp_path / "rep" / "best.json").exists()


def test_cli_help_has_an_example_and_no_handwritten_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    text = capsys.readouterr().out
    example = text.split("example:\n", 1)[1]
    assert "\n  kernelne tune " in example and "--report-dir DIR" in text
    assert "(default " not in text and "default 3" not in text and "default 10" not in text
    assert "(default: 20)" in text and "(default: 3)" in text  # shown by the formatter


# --- MKernelNE's weights chosen on validation data: a loop over fits too -----------------


def test_a_failed_kernel_weight_candidate_is_recorded(monkeypatch):
    import kernelne.model.kernel_choice as kc
    from kernelne import KernelNE

    real = kc._fit_quietly

    def diverging(model, graph):
        if model.beta_select == "uniform":
            raise TrainingError(DIVERGED)
        return real(model, graph)

    monkeypatch.setattr(kc, "_fit_quietly", diverging)
    g = nx.planted_partition_graph(3, 20, 0.4, 0.02, seed=1)
    src, dst = np.array(g.edges()).T
    graph = Graph.from_edges(src, dst, n_nodes=60)
    model = KernelNE(kernel="multi", kernels=["gauss:1", "sch:2"], beta_select="validation",
                     dim=8, walks_per_node=3, walk_length=6, window=3, workers=1,
                     random_state=3)
    model.fit(graph, (np.arange(60), np.arange(60) // 20))
    choice = model.beta_choice_
    assert choice.failed == {2: DIVERGED} and np.isnan(choice.scores[2])
    assert choice.winner != 2 and np.isfinite(model.embedding_).all()
    row = next(line for line in choice.table().splitlines() if line.startswith("uniform"))
    assert row.split()[1] == "failed" and row.endswith(DIVERGED)
    assert choice.ranking["finalists"] == 3

    monkeypatch.setattr(kc, "_fit_quietly", lambda model, graph: (_ for _ in ()).throw(
        TrainingError(DIVERGED)))
    with pytest.raises(TrainingError, match="every kernel-weight candidate failed: gauss:1: "
                                            "training diverged"):
        KernelNE(kernel="multi", kernels=["gauss:1", "sch:2"], beta_select="validation",
                 dim=8, walks_per_node=3, workers=1).fit(graph)
