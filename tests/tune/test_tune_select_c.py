"""kernelne tune validates node classification with the classifier's C chosen per split (as
``kernelne evaluate classify --select-C`` does) and records the C = 1 score beside it;
``select_C=False`` / ``--no-select-C`` keeps the paper's C = 1."""

from __future__ import annotations

import csv
import importlib
import json

import numpy as np
import pytest
from tune_fakes import FakeEstimator, write_karate

import kernelne.evaluation as evaluation
from kernelne.cli.app import main
from kernelne.evaluation.classification import SELECT_CS
from kernelne.tune.search import tune

space_module = importlib.import_module("kernelne.tune.space")
result_module = importlib.import_module("kernelne.tune.result")
CHOSEN = ("validation Micro-F1, C chosen per split among 0.01-100 by 3-fold CV on each "
          "split's training nodes")
#: the squared-loss defaults only (4 trials), 3 splits each: fast
QUICK = {"trials": 1, "final_repeats": 3, "fixed": {"loss": "squared"}, "progress": False}


class ScaleFake(FakeEstimator):
    """A stand-in for KernelNE. The default Gauss separates the 4 groups in rows of norm
    about 0.05 (KernelNE's rows are small): C = 1 regularises them to near chance, a chosen
    C (100) separates them. The default Schoenberg gives rows of norm about 3 that separate
    the groups half as well, whatever C. Every other setting gives noise."""

    def fit(self, graph):
        p = self.params
        groups = np.eye(8)[np.arange(graph.n_nodes) // 30]
        X = np.random.default_rng(int(p["window_shrink"]) + 3 * len(p["kernel"])).normal(
            size=(graph.n_nodes, 8))
        if p["kernel"] == "gauss" and p["loss"] == "squared":
            X = (X + 4.0 * groups) * 0.01
        elif p["kernel"] == "schoenberg" and not p["window_shrink"]:
            X = X + 1.3 * groups
        self.embedding_, self.nodes_ = X.astype(np.float32), np.arange(graph.n_nodes)
        return self


@pytest.fixture
def fake(monkeypatch):
    """Tune with :class:`ScaleFake`; returns the ``select_C`` of every validation call."""
    monkeypatch.setattr(space_module, "make_estimator",
                        lambda method, params: ScaleFake(**params))
    calls: list[dict] = []
    real = evaluation.evaluate_node_classification

    def spy(embedding, labels, label_nodes=None, **kw):
        calls.append(kw)
        return real(embedding, labels, label_nodes, **kw)

    monkeypatch.setattr(evaluation, "evaluate_node_classification", spy)
    return calls


def test_default_chooses_by_the_C_chosen_score(groups, fake):
    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), **QUICK)
    # every trial is validated twice on the same splits: C chosen per split, and C = 1
    chosen = [c for c in fake if c.get("select_C") is not None]
    plain = [c for c in fake if c.get("select_C") is None]
    assert len(chosen) == len(plain) == len(result.trials) == 4
    assert all(tuple(c["select_C"]) == SELECT_CS for c in chosen)
    assert [dict(c, select_C=None) for c in chosen] == plain  # same ratios, repeats, seed
    # the small rows win with C chosen; with C = 1 they are near chance (0.25)
    assert result.select_C is True and result.ranking["winner"] == 1
    assert result.best_params["kernel"] == "gauss"
    assert result.best_score > 0.85 and result.best_score_c1 < 0.45
    gauss, schoenberg = result.trials[0], result.trials[1]
    assert gauss["score_c1"] < schoenberg["score_c1"]  # C = 1 would have chosen otherwise
    assert all(t["score_c1"] is not None and t["se_c1"] is not None for t in result.trials)
    # the scores are those of kernelne evaluate classify --select-C on the same splits
    table = evaluation.evaluate_node_classification(
        result.model, Y, nodes, ratios=[0.5], repeats=3, seed=0, select_C=SELECT_CS,
        n_jobs=1)
    assert result.best_score == pytest.approx(table.value("micro_f1"))
    summary = result.summary().splitlines()
    assert summary[1] == (f"chosen by   {CHOSEN} (the winner with C = 1: "
                          f"{result.best_score_c1:.4f} ± {result.best_se_c1:.4f})")
    assert "C chosen per split" in result.validation


def test_select_C_false_chooses_by_the_C1_score(groups, fake):
    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), select_C=False, **QUICK)
    assert fake and all(c.get("select_C") is None for c in fake)
    assert len(fake) == len(result.trials)  # the C = 1 score is the score: one call each
    assert result.select_C is False and result.best_params["kernel"] == "schoenberg"
    assert all(t["score_c1"] == t["score"] for t in result.trials)
    assert result.best_score_c1 == result.best_score
    assert "chosen by   validation Micro-F1, classifier C = 1 (the paper's)" in (
        result.summary())
    assert "C=1" not in result.table().splitlines()[0]  # no column repeating the scores


def test_staged_search_records_C1_for_trials_finalists_and_test(groups, fake, tmp_path):
    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), trials=5, search_walks=5, finalists=1, holdout=0.3,
                  final_repeats=3, fixed={"loss": "squared"}, progress=False)
    assert all(t["score_c1"] is not None for t in result.trials)
    assert all(f["score_c1"] is not None and f["test_score_c1"] is not None
               for f in result.finals)
    assert result.test_score > 0.85 and result.test_score_c1 < 0.5  # the winner's rows: small
    head = result.table().splitlines()[0].split()
    assert {"C=1", "final", "test"} <= set(head) and head.count("C=1") == 3  # "final C=1" too
    result.write_report(tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "trials.csv", encoding="utf-8")))
    for column in ("micro_f1_c1", "se_c1", "final_micro_f1_c1", "final_se_c1",
                   "test_micro_f1_c1"):
        assert column in rows[0]
    assert all(r["micro_f1_c1"] for r in rows)
    assert sum(bool(r["final_micro_f1_c1"]) for r in rows) == len(result.finals)
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["select_C"] is True and best["chosen_by"] == CHOSEN
    assert best["validation_micro_f1"] == result.best_score
    assert best["validation_micro_f1_c1"] == result.best_score_c1
    assert best["test_score_c1"] == result.test_score_c1


def test_link_validation_has_no_classifier_columns(groups, fake, tmp_path):
    graph, _, _ = groups
    result = tune(graph, **QUICK)
    assert not fake and result.select_C is None and result.chosen_by == ""
    assert "chosen by" not in result.summary() and "C=1" not in result.table()
    result.write_report(tmp_path)
    head = (tmp_path / "trials.csv").read_text().splitlines()[0].split(",")
    assert "roc_auc" in head and not any(h.endswith("_c1") for h in head)
    assert "select_C" not in json.loads((tmp_path / "best.json").read_text())


# --- the CLI ------------------------------------------------------------------------------


@pytest.fixture
def karate(tmp_path):
    """``(edge list, labels of the two clubs)`` in ``tmp_path``."""
    return write_karate(tmp_path)


FAST = ["--dim", "8", "--workers", "1", "--quiet", "--trials", "1", "--final-repeats", "2",
        "--fix", "loss=squared"]


@pytest.mark.parametrize("flag", [[], ["--select-C"], ["--no-select-C"]])
def test_cli_select_C(karate, tmp_path, capsys, fake, flag):
    edges, labels = karate
    report = tmp_path / "rep"
    code = main(["tune", str(edges), *FAST, "--labels", str(labels), "--holdout", "0.3",
                 *flag, "-o", str(tmp_path / "e.npy"), "--report-dir", str(report)])
    out = capsys.readouterr().out
    assert code == 0
    on = flag != ["--no-select-C"]
    assert any(c.get("select_C") is not None for c in fake) is on
    best = json.loads((report / "best.json").read_text())
    assert best["select_C"] is on
    rows = list(csv.DictReader(open(report / "trials.csv", encoding="utf-8")))
    assert rows and all(r["micro_f1"] and r["micro_f1_c1"] for r in rows)
    if on:
        assert f"chosen by   {CHOSEN} (the winner with C = 1: " in out
        assert "C=1" in out.splitlines()[0]
        assert (f"test        Micro-F1 {best['test_score']:.4f} on the held-out test nodes, C "
                f"chosen on the non-test labelled nodes (C = 1: {best['test_score_c1']:.4f})"
                in out)
    else:
        assert "chosen by   validation Micro-F1, classifier C = 1 (the paper's)" in out
        assert (f"test        Micro-F1 {best['test_score']:.4f} on the held-out test nodes "
                "(read only after the search)" in out)
        assert best["test_score_c1"] == best["test_score"]
        assert best["validation_micro_f1_c1"] == best["validation_micro_f1"]
        assert all(r["micro_f1_c1"] == r["micro_f1"] for r in rows)


@pytest.mark.parametrize("flag", ["--select-C", "--no-select-C"])
def test_cli_select_C_without_labels_is_refused(karate, tmp_path, capsys, monkeypatch, flag):
    import optuna

    monkeypatch.setattr(optuna.study.Study, "optimize",
                        lambda *a, **k: pytest.fail("the search started"))
    edges, _ = karate
    code = main(["tune", str(edges), *FAST, flag, "-o", str(tmp_path / "e.npy")])
    assert code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == [f"kernelne: error: {flag} only matters with --labels (link validation "
                     "trains no classifier): give --labels, or leave it out"]
    assert not (tmp_path / "e.npy").exists()


def test_cli_help_shows_the_flag_and_its_default(capsys):
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--select-C, --no-select-C" in text
    assert "among 0.01, 0.1, 1, 10, 100 by 3-fold cross-validation" in text
    assert "(default: True)" in text
