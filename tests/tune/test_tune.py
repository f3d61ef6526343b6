"""kernelne tune: the search never reads the test part; results, report and CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from tune_fakes import FULL, FakeEstimator

import kernelne.evaluation as evaluation
from kernelne.cli.app import main
from kernelne.tune.search import tune
from kernelne.tune.space import KERNELNE_DEFAULTS, SEARCH_SPACES

FAST = {"dim": 8, "workers": 1, "walks_per_node": 4}


def test_search_never_reads_test_labels(groups, monkeypatch):
    graph, nodes, Y = groups
    test = nodes[::3]
    seen: list[np.ndarray] = []
    real = evaluation.evaluate_node_classification

    def spy(embedding, labels, label_nodes=None, **kw):
        seen.append(np.asarray(label_nodes))
        return real(embedding, labels, label_nodes, **kw)

    monkeypatch.setattr(evaluation, "evaluate_node_classification", spy)
    # two validation splits per trial (the default is 10): each split reads labels as well
    first = tune(graph, (nodes, Y), trials=3, test_nodes=test, final_repeats=2, fixed=FAST,
                 progress=False)
    # the same search with the test nodes' labels scrambled gives the same trials
    poisoned = Y.toarray()
    poisoned[test] = np.roll(poisoned[test], 1, axis=1)
    second = tune(graph, (nodes, sp.csr_matrix(poisoned)), trials=3, test_nodes=test,
                  final_repeats=2, fixed=FAST, progress=False)
    assert [t["score"] for t in first.trials] == [t["score"] for t in second.trials]
    assert first.best_params == second.best_params
    assert seen and all(not np.isin(s, test).any() for s in seen)
    # only the final test score reads them (and sees the difference)
    assert first.test_score is not None and first.test_score != second.test_score


def test_link_validation_without_labels(groups):
    graph, _, _ = groups
    result = tune(graph, trials=3, fixed=FAST, progress=False)
    assert result.metric == "roc_auc" and len(result.trials) == len(KERNELNE_DEFAULTS)
    assert result.best_score == max(t["score"] for t in result.trials)
    assert result.model.embedding_.shape == (120, 8)
    assert "validation edges" in result.validation


def test_seeded_search_is_reproducible(groups):
    graph, nodes, Y = groups
    runs = [tune(graph, (nodes, Y), trials=3, holdout=0.3, final_repeats=2, fixed=FAST,
                 progress=False) for _ in range(2)]
    assert runs[0].trials == [dict(t, seconds=r["seconds"]) for t, r in
                              zip(runs[1].trials, runs[0].trials, strict=True)]


@pytest.mark.parametrize("method", sorted(SEARCH_SPACES))
def test_every_search_space_builds_its_method(method):
    import optuna

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    params = SEARCH_SPACES[method](study.ask())
    from kernelne.tune.space import make_estimator

    assert make_estimator(method, params).get_params()  # accepted by the constructor


def test_cli_writes_embedding_and_report(groups, tmp_path, capsys):
    graph, _, _ = groups
    edges = tmp_path / "g.txt"
    edges.write_text("\n".join(f"{u} {v}" for u, v in graph.edges()))
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(f"{i} {i // 30}" for i in range(120)))
    out, report = tmp_path / "emb.txt", tmp_path / "report"
    code = main(["tune", str(edges), "--labels", str(labels), "--holdout", "0.5",
                 "--trials", "2", "--dim", "8", "--workers", "1", "--search-walks", "4",
                 "--final-repeats", "2", "-o", str(out), "--report-dir", str(report),
                 "--quiet"])
    assert code == 0 and out.exists()
    best = json.loads((report / "best.json").read_text())
    assert best["method"] == "kernelne" and best["test_score"] is not None
    assert (report / "trials.png").stat().st_size > 1000
    assert (report / "map.png").stat().st_size > 1000  # the winner's map, by label
    # --trials 2, but KernelNE's five defaults always run: a header and five rows
    assert len((report / "trials.csv").read_text().splitlines()) == 1 + len(KERNELNE_DEFAULTS)
    assert "test        Micro-F1" in capsys.readouterr().out


# --- defaults first, finalists re-scored, noise reported -----------------------------------

#: for the tests whose subject does not depend on the classifier's C: C = 1 is the fast one
C1 = {"select_C": False}


class PlantedFake(FakeEstimator):
    """A stand-in for KernelNE whose embedding separates the 4 groups only for (a) the
    default Gauss at the full walk count or (b) any non-default setting at fewer walks: the
    cheap search then ranks the defaults last, the precise evaluation first."""

    def fit(self, graph):
        p = self.params
        default_gauss = (p["kernel"] == "gauss" and p["sigma"] == 2 ** 0.5
                         and p["negatives"] == 5 and p["loss"] == "squared"
                         and p["window"] == 10 and not p["window_shrink"]
                         and p["subsample"] == 0)
        good = default_gauss == (p["walks_per_node"] >= FULL)
        rng = np.random.default_rng(int(p["walks_per_node"]) + 7 * int(p["negatives"]))
        X = rng.normal(size=(graph.n_nodes, 8))
        if good:
            X[:, :4] += 2.5 * np.eye(4)[np.arange(graph.n_nodes) // 30]
        self.embedding_, self.nodes_ = X.astype(np.float32), np.arange(graph.n_nodes)
        return self


@pytest.fixture
def fake_kernelne(monkeypatch):
    import importlib

    module = importlib.import_module("kernelne.tune.space")
    monkeypatch.setattr(module, "make_estimator", lambda method, params: PlantedFake(**params))


@pytest.fixture(scope="module")
def staged_search(groups):
    """One staged search of :class:`PlantedFake` (9 trials of 5 walks, 2 finalists besides
    the defaults, C chosen per split), shared by the tests that read its result."""
    import importlib

    graph, nodes, Y = groups
    module = importlib.import_module("kernelne.tune.space")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(module, "make_estimator", lambda method, params: PlantedFake(**params))
        return tune(graph, (nodes, Y), trials=9, search_walks=5, holdout=0.3, finalists=2,
                    progress=False)


def test_defaults_are_the_first_trials(groups, fake_kernelne):
    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), trials=9, search_walks=5, holdout=0.3, progress=False,
                  **C1)
    assert [t["number"] for t in result.trials] == list(range(1, 10))  # from 1
    first = result.trials[:7]
    assert [t["default"] for t in first] == ["gauss", "schoenberg", "multi", "gauss,loglik",
                                             "schoenberg,loglik", "multi,loglik",
                                             "schoenberg,window_shrink"]
    rest = {"window": 10, "window_shrink": False, "subsample": 0.0}
    assert first[0]["params"] == {"kernel": "gauss", "sigma": 2 ** 0.5, "negatives": 5,
                                  "loss": "squared", **rest}
    assert first[1]["params"] == {"kernel": "schoenberg", "alpha": 1.0, "negatives": 5,
                                  "loss": "squared", **rest}
    assert first[2]["params"] == {"kernel": "multi", "beta_update": "projected", "negatives": 5,
                                  "loss": "squared", **rest}
    for i in range(3):
        assert first[3 + i]["params"] == dict(first[i]["params"], loss="loglik")
    assert first[6]["params"] == dict(first[1]["params"], window_shrink=True)
    assert all(t["default"] == "" for t in result.trials[7:])


def test_defaults_run_even_past_the_trial_count_and_timeout(groups, fake_kernelne):
    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), trials=1, timeout=1e-9, progress=False, **C1)
    assert [t["default"] for t in result.trials] == ["gauss", "schoenberg", "multi",
                                                     "gauss,loglik", "schoenberg,loglik",
                                                     "multi,loglik", "schoenberg,window_shrink"]


def test_finalists_are_rescored_and_the_winner_beats_the_defaults(staged_search):
    """The cheap search ranks every default last; the precise evaluation must still see
    that the default Gauss is the best, and choose it."""
    result = staged_search
    by_number = {t["number"]: t for t in result.trials}
    finals = {f["number"]: f for f in result.finals}
    cheap_best = max(result.trials, key=lambda t: t["score"])
    assert cheap_best["default"] == ""  # the trap: the search alone would choose this one
    # finalists: the 2 best cheap trials and every default, refitted at the full walk count
    top2 = sorted(result.trials, key=lambda t: -t["score"])[:2]
    assert set(finals) == set(range(1, len(KERNELNE_DEFAULTS) + 1)) | {t["number"] for t in top2}
    assert all(t["walks"] == 5 and t["splits"] == 2 for t in result.trials)
    assert all(f["walks"] == FULL and f["splits"] == 10 for f in finals.values())
    best_default = max(f["score"] for n, f in finals.items() if by_number[n]["default"])
    assert result.best_score >= best_default
    assert result.best_score == max(f["score"] for f in finals.values())
    assert result.best_params == by_number[1]["params"]  # the default Gauss
    assert result.ranking["winner"] == 1 and result.ranking["within_noise"] is False
    assert result.test_score is not None and result.test_score > 0.6  # chance: 0.25


def test_every_finalist_is_scored_on_test_for_the_audit_only(staged_search, groups,
                                                            fake_kernelne, tmp_path):
    """With a test part each finalist's refit gets a test score (reported, not chosen by):
    the winner's is the result's, the separating default scores far above the rest."""
    import csv

    graph, nodes, Y = groups
    result = staged_search
    tests = {f["number"]: f["test_score"] for f in result.finals}
    assert all(v is not None for v in tests.values())
    assert tests[result.ranking["winner"]] == result.test_score
    assert tests[1] > 0.6 and max(v for n, v in tests.items() if n != 1) < 0.5  # chance .25
    assert "test" in result.table().splitlines()[0].split()
    audit = next(line for line in result.summary().splitlines() if line.startswith("audit"))
    assert f"the winner {result.test_score:.4f}" in audit and "best default gauss" in audit
    result.write_report(tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "trials.csv", encoding="utf-8")))
    assert sum(bool(r["test_micro_f1"]) for r in rows) == len(result.finals)
    # without a test part there is nothing to audit
    plain = tune(graph, (nodes, Y), trials=7, progress=False, **C1)
    assert all(f["test_score"] is None for f in plain.finals) and plain.test_score is None
    assert "test" not in plain.table().splitlines()[0].split()
    assert "audit" not in plain.summary()


def test_unstaged_search_scores_every_trial_precisely(groups, fake_kernelne):
    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), trials=6, progress=False, **C1)
    assert [f["number"] for f in result.finals] == list(range(1, len(KERNELNE_DEFAULTS) + 1))
    assert all(t["splits"] == 10 and t["walks"] == FULL for t in result.trials)
    assert result.best_params["kernel"] == "gauss" and result.ranking["winner"] == 1


def test_noise_is_reported_in_table_csv_and_json(groups, fake_kernelne, tmp_path):
    import csv

    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), trials=7, search_walks=5, holdout=0.3, progress=False,
                  **C1)
    assert all(t["se"] is not None and t["se"] >= 0 for t in result.trials)
    assert all(f["se"] >= 0 for f in result.finals) and result.best_se >= 0
    assert "± se" in result.table().splitlines()[0]
    result.write_report(tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "trials.csv", encoding="utf-8")))
    assert all(float(r["se"]) >= 0 for r in rows)
    assert all(float(r["final_se"]) >= 0 for r in rows if r["final_se"])
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["validation_se"] >= 0 and best["ranking"]["winner"] == 1
    assert isinstance(best["ranking"]["within_noise"], bool)
    summary = result.summary()
    assert summary.startswith("winner      trial 1 (default gauss): micro_f1")
    assert "standard errors" in summary


def test_ranking_says_when_the_top_two_are_within_noise():
    from kernelne.evaluation.validation import rank_finalists

    a = {"number": 3, "score": 0.5, "se": 0.01, "values": [0.49, 0.50, 0.51]}
    close = {"number": 0, "score": 0.499, "se": 0.01, "values": [0.50, 0.49, 0.507]}
    far = {"number": 0, "score": 0.4, "se": 0.01, "values": [0.39, 0.40, 0.41]}
    tied = rank_finalists([close, a], {0: "gauss"})
    assert tied["winner"] == 3 and tied["within_noise"] is True and tied["paired"]
    assert tied["best_default"] == 0 and tied["default_gap"] == pytest.approx(0.001)
    clear = rank_finalists([far, a], {0: "gauss"})
    assert clear["within_noise"] is False and clear["gap_se"] == pytest.approx(0.0, abs=1e-12)
    # equal scores: the earlier (the default, listed first) wins
    assert rank_finalists([dict(a, number=0), dict(a, number=5)], {0: "gauss"})["winner"] == 0


def test_auc_standard_error():
    from kernelne.evaluation.validation import auc_standard_error

    assert auc_standard_error(1.0, 50, 50) == 0.0
    assert auc_standard_error(0.8, 100, 100) > auc_standard_error(0.8, 1000, 1000) > 0
    assert auc_standard_error(0.5, 100, 100) == pytest.approx(0.0410, abs=5e-4)


def test_every_method_has_defaults_inside_its_search_space():
    from kernelne.tune.space import DEFAULT_CANDIDATES, default_params, make_estimator

    for method in SEARCH_SPACES:
        assert DEFAULT_CANDIDATES[method], method
        for candidate in DEFAULT_CANDIDATES[method]:
            space, extra = default_params(method, candidate)
            assert make_estimator(method, {**space, **extra}).get_params()
    assert default_params("deepwalk", {}) == ({"window": 10}, {})
    # a key the search space does not suggest is passed through (e.g. a new loss)
    space, extra = default_params("kernelne", {"kernel": "gauss", "epochs": 2})
    assert extra == {"epochs": 2} and space["kernel"] == "gauss"


# --- every default among the trials, the loss options searched ---------------------------


@pytest.mark.parametrize("with_labels", [
    pytest.param(True, marks=pytest.mark.long),  # C chosen per split for every finalist
    False,
])
def test_every_default_is_a_trial_and_the_winner_is_never_worse(groups, with_labels):
    """A tiny real search: each of KERNELNE_DEFAULTS is a trial (by name and by settings),
    each is a finalist, and the winner's precise validation score is at least the best
    default's."""
    from kernelne.tune.space import default_name, default_params

    graph, nodes, Y = groups
    labels = (nodes, Y) if with_labels else None
    result = tune(graph, labels, trials=len(KERNELNE_DEFAULTS) + 2, search_walks=2,
                  holdout=0.3 if with_labels else None, finalists=2, final_repeats=3,
                  fixed=FAST, progress=False)
    by_name = {t["default"]: t for t in result.trials if t["default"]}
    assert list(by_name) == [default_name(c) for c in KERNELNE_DEFAULTS]
    for candidate in KERNELNE_DEFAULTS:
        space, extra = default_params("kernelne", candidate, FAST)
        assert by_name[default_name(candidate)]["params"] == {**space, **extra}
    assert by_name["gauss,loglik"]["params"]["loss"] == "loglik"
    finals = {f["number"]: f for f in result.finals}
    assert {t["number"] for t in by_name.values()} <= set(finals)
    best_default = max(finals[t["number"]]["score"] for t in by_name.values())
    assert result.best_score >= best_default
    assert result.best_score == max(f["score"] for f in finals.values())
    assert result.best_params in [t["params"] for t in result.trials]


def test_the_search_space_offers_the_loss_options():
    import optuna

    from kernelne.tune.space import SUBSAMPLE_CHOICES

    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen: dict[str, set] = {"loss": set(), "window_shrink": set(), "subsample": set(),
                            "window": set(), "kernel": set()}
    for _ in range(60):
        params = SEARCH_SPACES["kernelne"](study.ask())
        for key, values in seen.items():
            if key in params:
                values.add(params[key])
    assert seen["loss"] == {"squared", "loglik"} and seen["window_shrink"] == {False, True}
    assert seen["subsample"] == set(SUBSAMPLE_CHOICES) and 0.0 in seen["subsample"]
    assert min(seen["window"]) >= 2 and max(seen["window"]) <= 10
    assert seen["kernel"] == {"gauss", "schoenberg", "multi"}


def test_a_fixed_parameter_is_not_searched(groups, fake_kernelne):
    graph, nodes, Y = groups
    result = tune(graph, (nodes, Y), trials=8, search_walks=5, holdout=0.3,
                  fixed={"loss": "squared", "window_shrink": True}, progress=False, **C1)
    # the loglik defaults set the fixed loss otherwise: not tried
    assert [t["default"] for t in result.trials[:3]] == ["gauss", "schoenberg", "multi"]
    assert all(t["default"] == "" for t in result.trials[3:])
    assert all(t["params"].get("loss", "squared") == "squared" for t in result.trials)
    assert all(t["params"]["window_shrink"] is True for t in result.trials)
    # a fixed value that turns a default into an earlier one: tried once, the earlier name
    result = tune(graph, (nodes, Y), trials=1, fixed={"loss": "loglik"}, progress=False,
                  **C1)
    assert [t["default"] for t in result.trials] == ["gauss", "schoenberg", "multi",
                                                     "schoenberg,window_shrink"]
    assert result.trials[3]["params"]["loss"] == "loglik"
    assert result.trials[0]["params"]["loss"] == "loglik"


def test_parse_fixed_reads_each_parameter_as_its_type():
    from kernelne.cli.tune import parse_fixed
    from kernelne.errors import InputError

    got = parse_fixed("kernelne", ["loss=squared", "window_shrink=false", "subsample=1e-4",
                                   "window=5", "sigma=1", "kernel=gauss"])
    assert got == {"loss": "squared", "window_shrink": False, "subsample": 1e-4, "window": 5,
                   "sigma": 1.0, "kernel": "gauss"}
    assert isinstance(got["sigma"], float) and isinstance(got["window"], int)
    assert parse_fixed("deepwalk", ["window=3"]) == {"window": 3}
    for bad in (["loss"], ["nope=1"], ["window_shrink=maybe"], ["=3"]):
        with pytest.raises(InputError):
            parse_fixed("kernelne", bad)


def test_cli_fix_holds_a_parameter(groups, tmp_path, capsys):
    graph, _, _ = groups
    edges = tmp_path / "g.txt"
    edges.write_text("\n".join(f"{u} {v}" for u, v in graph.edges()))
    out, report = tmp_path / "emb.txt", tmp_path / "report"
    code = main(["tune", str(edges), "--trials", "4", "--dim", "8", "--workers", "1",
                 "--search-walks", "2", "--fix", "loss=squared", "--fix", "walks_per_node=4",
                 "-o", str(out), "--report-dir", str(report), "--quiet"])
    assert code == 0
    rows = (report / "trials.csv").read_text().splitlines()
    assert len(rows) == 1 + 4 and "loglik" not in "".join(rows)
    assert json.loads((report / "best.json").read_text())["fixed"]["loss"] == "squared"
    capsys.readouterr()
    assert main(["tune", str(edges), "--fix", "dim=8", "--dim", "8", "-o", str(out)]) != 0
    assert "--dim and --fix dim=... both given" in capsys.readouterr().err
