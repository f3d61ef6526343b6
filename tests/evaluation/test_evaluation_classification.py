"""Node classification: top-k rule, seeded splits, label handling, scores, CLI."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression

from kernelne.cli.app import main
from kernelne.embedding_io import save_embedding
from kernelne.errors import InputError
from kernelne.evaluation import (
    evaluate_node_classification,
    read_node_labels,
    split_indices,
    top_k_predictions,
)
from kernelne.graphs.graph import from_networkx
from kernelne.model.kernelne import KernelNE

FAST = {"repeats": 3, "n_jobs": 1}


@pytest.fixture(scope="module")
def planted():
    """4 groups of 50 nodes, their KernelNE embedding and the group of each node."""
    graph = from_networkx(nx.planted_partition_graph(4, 50, 0.2, 0.01, seed=0))
    model = KernelNE(dim=32, walks_per_node=10, workers=1, random_state=0).fit(graph)
    return model, np.repeat(np.arange(4), 50)


def test_top_k_rule_hand_made():
    scores = np.array([[0.9, 0.1, 0.5, 0.3],
                       [0.2, 0.3, 0.1, 0.8],
                       [0.4, 0.4, 0.4, 0.1],
                       [0.1, 0.2, 0.3, 0.4]])
    k = np.array([2, 1, 2, 4])
    expected = np.array([[1, 0, 1, 0],
                         [0, 0, 0, 1],
                         [1, 1, 0, 0],  # a tie goes to the lower label
                         [1, 1, 1, 1]], dtype=bool)
    assert np.array_equal(top_k_predictions(scores, k), expected)
    assert np.array_equal(top_k_predictions(-scores, np.ones(4, int)).argmax(axis=1),
                          scores.argmin(axis=1))


def test_split_indices_seeded_and_sized():
    train, test = split_indices(100, 0.3, seed=1, repeat=2)
    assert len(train) == 30 and len(test) == 70
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(100))
    again, _ = split_indices(100, 0.3, seed=1, repeat=2)
    assert np.array_equal(train, again)
    assert not np.array_equal(train, split_indices(100, 0.3, seed=1, repeat=3)[0])
    assert not np.array_equal(train, split_indices(100, 0.3, seed=2, repeat=2)[0])
    assert len(split_indices(50, 0.01, 0, 0)[0]) == 1, "at least one training node"


def test_kernelne_well_above_chance_random_near_chance(planted):
    model, groups = planted
    table = evaluate_node_classification(model, groups, ratios=[0.5], **FAST)
    assert table.value("micro_f1") > 0.9 and table.value("macro_f1") > 0.9
    noise = np.random.default_rng(0).normal(size=(200, 32))
    chance = evaluate_node_classification(noise, groups, ratios=[0.5], repeats=10, n_jobs=1)
    assert abs(chance.value("micro_f1") - 0.25) < 0.08


def test_multi_label_top_k_beats_threshold_when_probabilities_are_low():
    """Features that reveal the labels: top-k recovers them even from a classifier so
    regularised that most probabilities stay below 0.5, where thresholding misses them."""
    rng = np.random.default_rng(0)
    Y = rng.random((300, 5)) < 0.3
    Y[np.arange(300), rng.integers(0, 5, 300)] = True
    X = Y + 0.05 * rng.normal(size=Y.shape)
    weak = LogisticRegression(C=0.01)  # lbfgs: an unpenalised intercept, the base rate
    topk = evaluate_node_classification(X, Y, ratios=[0.5], classifier=weak, **FAST)
    thresh = evaluate_node_classification(X, Y, ratios=[0.5], classifier=weak,
                                          rule="threshold", **FAST)
    assert topk.value("micro_f1") > 0.9 and topk.value("macro_f1") > 0.9
    assert thresh.value("micro_f1") < 0.6
    strong = evaluate_node_classification(X, Y, ratios=[0.5], rule="threshold", **FAST)
    assert strong.value("micro_f1") > 0.95


def test_table_shape_and_seeds(planted):
    model, groups = planted
    a = evaluate_node_classification(model, groups, ratios=[0.1, 0.3], seed=4, **FAST)
    b = evaluate_node_classification(model, groups, ratios=[0.1, 0.3], seed=4, n_jobs=2,
                                     repeats=3)
    c = evaluate_node_classification(model, groups, ratios=[0.1, 0.3], seed=5, **FAST)
    assert [(r.setting, r.metric) for r in a] == [
        ("0.1", "micro_f1"), ("0.1", "macro_f1"), ("0.3", "micro_f1"), ("0.3", "macro_f1")]
    assert all(r.n == 3 and r.task == "node_classification" and r.std >= 0 for r in a)
    assert a.records() == b.records(), "same seed, same splits, any number of jobs"
    assert a.records() != c.records()


def test_unlabelled_nodes_are_left_out():
    """Unlabelled nodes need no vector, and do not change the scores."""
    rng = np.random.default_rng(1)
    groups = rng.integers(0, 3, 120)
    X = np.eye(3)[groups] + 0.8 * rng.normal(size=(120, 3))
    Y = np.eye(3, dtype=bool)[groups]
    base = evaluate_node_classification((X, np.arange(120)), Y, ratios=[0.3], **FAST)
    padded = sp.vstack([sp.csr_matrix(Y), sp.csr_matrix((5, 3), dtype=bool)])
    with_empty = evaluate_node_classification(
        (X, np.arange(120)), padded, np.arange(125), ratios=[0.3], **FAST)
    assert base.records() == with_empty.records()


def test_missing_nodes_are_named():
    X = np.zeros((10, 2))
    Y = np.eye(2, dtype=bool)[np.arange(12) % 2]
    with pytest.raises(InputError, match=r"^the label matrix names 2 node\(s\) the embedding lacks "
                       r"\(10, 11\); the embedding's ids are 0\.\.9$"):
        evaluate_node_classification(X, Y, ratios=[0.5], **FAST)


def test_missing_nodes_skipped_on_request():
    """missing="skip": the labelled nodes the embedding lacks are left out and listed; the
    scores are those of the labelled nodes it has."""
    X = np.eye(2)[np.arange(40) % 2]
    Y = np.eye(2, dtype=bool)[np.arange(43) % 2]  # nodes 40, 41, 42 have no row
    table = evaluate_node_classification(X, Y, ratios=[0.5], missing="skip", **FAST)
    assert [int(x) for x in table.skipped] == [40, 41, 42]
    kept = evaluate_node_classification(X, Y[:40], ratios=[0.5], **FAST)
    assert table.records() == kept.records() and len(kept.skipped) == 0
    with pytest.raises(InputError, match="'error' or 'skip'"):
        evaluate_node_classification(X, Y, ratios=[0.5], missing="drop", **FAST)


def test_bad_parameters():
    X, y = np.zeros((10, 2)), np.arange(10) % 2
    for kwargs, message in [({"ratios": [0.0]}, "strictly between"),
                            ({"ratios": [1.5]}, "strictly between"),
                            ({"rule": "top-3"}, "unknown prediction rule"),
                            ({"repeats": 0}, "at least 1")]:
        with pytest.raises(InputError, match=message):
            evaluate_node_classification(X, y, **kwargs)
    with pytest.raises(InputError, match="2 distinct labels"):
        evaluate_node_classification(X, np.zeros(10), ratios=[0.5])


def test_read_node_labels_multi_label_string_ids(write):
    path = write("labels.txt", "# node label\nb x\na y\na x\nc z\nb x\n")
    nodes, Y = read_node_labels(path)
    assert list(nodes) == ["b", "a", "c"]
    assert Y.toarray().tolist() == [[1, 0, 0], [1, 1, 0], [0, 0, 1]]
    with pytest.raises(InputError, match=r"labels.txt:2: expected 2 fields"):
        read_node_labels(write("labels.txt", "0 1\n0 1 2\n"))


def test_cli_classify(planted, tmp_path, capsys, write):
    model, groups = planted
    emb = tmp_path / "kne.txt"
    save_embedding(emb, model.embedding_, model.nodes_)
    pairs = zip(model.nodes_, groups, strict=True)
    labels = write("pp.labels", "".join(f"{v} {g}\n" for v, g in pairs))
    out = tmp_path / "r.json"
    code = main(["evaluate", "classify", str(emb), str(labels), "--ratios", "10%,50%",
                 "--repeats", "2", "--jobs", "1", "-o", str(out)])
    assert code == 0
    rows = json.loads(out.read_text())
    oracle, honest = "kne [top-k, oracle label count]", "kne [p > 0.5 or the most probable]"
    assert [(r["method"], r["dataset"], r["setting"]) for r in rows][:2] == [
        (oracle, "pp", "0.1"), (oracle, "pp", "0.1")]
    assert rows[2]["mean"] > 0.9 and len(rows) == 8  # both rules, named
    assert {r["method"] for r in rows} == {oracle, honest}
    assert all(r["mean"] > 0.9 for r in rows if r["setting"] == "0.5")
    assert "micro_f1" in capsys.readouterr().out
    extra = write("extra.labels", "0 0\n1 1\n999 0\n1000 1\n")
    assert main(["evaluate", "classify", str(emb), str(extra), "--repeats", "1",
                 "--ratios", "50%"]) == 2
    assert "names 2 node(s) the embedding " in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", "classify", str(emb), str(labels), "--ratios", "150%"])


def test_cli_classify_missing_skip(planted, tmp_path, capsys, write):
    """--missing skip drops labelled nodes the embedding lacks and says how many; the scores
    equal those of the label file without them."""
    model, groups = planted
    emb = tmp_path / "kne.txt"
    save_embedding(emb, model.embedding_, model.nodes_)
    known = "".join(f"{v} {g}\n" for v, g in zip(model.nodes_, groups, strict=True))
    extra = write("extra.labels", known + "999 0\n1000 1\n")
    args = ["--ratios", "50%", "--repeats", "2", "--jobs", "1", "--rule", "top-k"]
    assert main(["evaluate", "classify", str(emb), str(extra), *args]) == 2
    assert "lacks (999, 1000); the embedding's ids are 0..199" in capsys.readouterr().err
    skip = tmp_path / "skip.json"
    assert main(["evaluate", "classify", str(emb), str(extra), *args, "--missing", "skip",
                 "-o", str(skip), "--dataset", "pp"]) == 0
    assert "skipped 2 labelled node(s) the embedding lacks (--missing skip): 999, 1000" in (
        capsys.readouterr().out)
    full = tmp_path / "full.json"
    assert main(["evaluate", "classify", str(emb), str(write("pp.labels", known)), *args,
                 "-o", str(full), "--dataset", "pp"]) == 0
    assert "skipped" not in capsys.readouterr().out
    assert json.loads(skip.read_text()) == json.loads(full.read_text())


def test_results_table_text_and_bad_output(tmp_path, capsys, write):
    table = evaluate_node_classification(np.eye(4)[np.arange(40) % 4], np.arange(40) % 4,
                                         ratios=[0.5], method="m", dataset="d", **FAST)
    lines = table.to_text().splitlines()
    assert lines[0].split() == ["method", "dataset", "task", "setting", "metric", "mean", "std",
                                "n"]
    assert lines[1].split() == ["m", "d", "node_classification", "0.5", "micro_f1", "1.0000",
                                "0.0000", "3"]
    with pytest.raises(InputError, match=r"\.csv or \.json"):
        table.write(tmp_path / "r.txt")
    with pytest.raises(InputError, match="folder does not exist"):
        table.write(tmp_path / "no" / "r.csv")
    emb = write("e.txt", "0 1 0\n1 0 1\n")
    labels = write("l.txt", "0 a\n1 b\n")
    assert main(["evaluate", "classify", str(emb), str(labels), "-o", str(tmp_path / "r")]) == 2
    assert ".csv or .json" in capsys.readouterr().err



def test_select_C_reads_training_nodes_only():
    """C chosen on the training nodes: a weak signal that a tiny C cannot fit picks a large one;
    scrambling the test labels leaves the choice as made from the training nodes alone."""
    from kernelne.evaluation.classification import SELECT_CS, choose_C, score_split, split_indices

    rng = np.random.default_rng(0)
    groups = rng.integers(0, 3, 150)
    X = np.eye(3)[groups] * 0.05 + 0.01 * rng.normal(size=(150, 3))
    Y = np.eye(3, dtype=bool)[groups]
    clf = LogisticRegression(C=1.0, solver="liblinear")
    assert choose_C(X, Y, clf, [0.01, 100.0], "top-k", seed=0) == 100.0
    assert score_split(X, Y, 0.5, 0, 0, clf, "top-k", SELECT_CS)[0] > \
        score_split(X, Y, 0.5, 0, 0, clf, "top-k")[0]
    train, test = split_indices(150, 0.5, 0, 0)
    scrambled = Y.copy()
    scrambled[test] = np.roll(Y[test], 1, axis=1)
    C = choose_C(X[train], Y[train], clf, SELECT_CS, "top-k", seed=0)
    fixed = LogisticRegression(C=C, solver="liblinear")
    assert score_split(X, scrambled, 0.5, 0, 0, clf, "top-k", SELECT_CS) == \
        score_split(X, scrambled, 0.5, 0, 0, fixed, "top-k")


def test_select_C_says_what_it_fits_and_fits_once_for_both_rules(tmp_path, capsys, write,
                                                                 monkeypatch):
    """``--select-C`` starts with one stderr line saying what it fits; the two rules of
    ``--rule both`` share the cross-validation fits (15 per split, plus one per C chosen)
    instead of repeating them, and score as each rule alone does."""
    from sklearn.multiclass import OneVsRestClassifier

    from kernelne.evaluation.classification import SELECT_CS

    rng = np.random.default_rng(0)
    groups = rng.integers(0, 3, 90)
    X = np.eye(3)[groups] * 0.3 + 0.2 * rng.normal(size=(90, 3))
    emb = tmp_path / "e.txt"
    save_embedding(emb, X.astype(np.float32), np.arange(90))
    labels = write("l.labels", "".join(f"{v} {g}\n" for v, g in enumerate(groups)))
    fits = []
    real_fit = OneVsRestClassifier.fit
    monkeypatch.setattr(OneVsRestClassifier, "fit",
                        lambda self, *a, **k: fits.append(1) or real_fit(self, *a, **k))
    out = tmp_path / "r.json"
    assert main(["evaluate", "classify", str(emb), str(labels), "--ratios", "50%",
                 "--repeats", "2", "--jobs", "1", "--select-C", "-o", str(out)]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["kernelne: choosing C among 0.01, 0.1, 1, 10, 100 by 3-fold "
                   "cross-validation on each split's training nodes: 2 splits x 5 C x 3 folds "
                   "= 30 classifier fits, scored by top-k and non-oracle alike, then each "
                   "split's fit with its C"]
    assert 2 * 15 + 2 <= len(fits) <= 2 * 15 + 2 * 2  # was 2 rules x 2 splits x 16
    rows = json.loads(out.read_text())
    for rule in ("top-k", "non-oracle"):
        alone = evaluate_node_classification(emb, labels, ratios=[0.5], repeats=2, n_jobs=1,
                                             rule=rule, select_C=SELECT_CS)
        assert [r["mean"] for r in rows if (rule == "top-k") == ("top-k" in r["method"])] == \
            [row.mean for row in alone.rows]


@pytest.fixture
def identity_npy(tmp_path):
    """An .npy embedding of 34 nodes with ids 0..33 (written without an ids file)."""
    path = tmp_path / "m.npy"
    save_embedding(path, np.random.default_rng(0).normal(size=(34, 4)))
    assert not (tmp_path / "m.nodes.txt").exists()
    return path


def _classify_error(capsys, *args: str) -> str:
    code = main(["evaluate", "classify", *map(str, args), "--ratios", "0.5", "--repeats", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    return err[0]


def test_labels_for_unknown_nodes_are_named_not_a_missing_ids_file(identity_npy, tmp_path,
                                                                    capsys):
    labels = tmp_path / "k.labels"
    labels.write_text("".join(f"{i} {i % 2}\n" for i in range(34)) + "900 0\n901 1\n902 0\n")
    err = _classify_error(capsys, identity_npy, labels)
    assert err == (f"kernelne: error: labels file {labels} names 3 node(s) the embedding "
                   f"{identity_npy} lacks (900, 901, 902); the embedding's ids are 0..33 (an "
                   ".npy without a m.nodes.txt beside it)")


@pytest.mark.parametrize("count", [2, 6])
def test_skip_with_no_labelled_node_in_the_embedding_says_nothing_to_classify(
        identity_npy, tmp_path, capsys, count):
    labels = tmp_path / "unk.labels"
    labels.write_text("".join(f"{5000 + i} {'ab'[i % 2]}\n" for i in range(count)))
    for embedding in (identity_npy, (np.ones((34, 4)), np.arange(34))):
        if isinstance(embedding, tuple):
            with pytest.raises(InputError, match=f"^nothing to classify: none of the {count} "
                               "labelled nodes of labels file .* is in the embedding, whose "
                               r"ids are 0\.\.33$"):
                evaluate_node_classification(embedding, labels, ratios=[0.5], repeats=1,
                                             missing="skip")
            continue
        err = _classify_error(capsys, identity_npy, labels, "--missing", "skip")
        assert err.startswith(f"kernelne: error: nothing to classify: none of the {count} "
                              f"labelled nodes of labels file {labels} is in the embedding "
                              f"{identity_npy}, whose ids are 0..33")


def test_string_labels_against_integer_ids_name_the_mismatch(identity_npy, tmp_path, capsys):
    labels = tmp_path / "kstr.labels"
    labels.write_text("".join(f"n{i} {i % 2}\n" for i in range(34)))
    for missing in ("error", "skip"):
        err = _classify_error(capsys, identity_npy, labels, "--missing", missing)
        assert err.startswith(f"kernelne: error: labels file {labels} names its nodes by "
                              f"strings ('n0', 'n1', 'n2', ...) but the ids of the embedding "
                              f"{identity_npy} are 0..33")
        assert err.endswith("none of its 34 nodes is in the embedding")


def test_an_embedding_file_with_nan_is_named_with_the_entry(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    vectors = np.random.default_rng(0).normal(size=(34, 4))
    vectors[3, 2] = np.nan
    path = tmp_path / "o8.parquet"
    columns = {"node": pa.array(np.arange(34))}
    columns.update({f"dim_{j}": pa.array(vectors[:, j]) for j in range(4)})
    pq.write_table(pa.table(columns), path)
    labels = tmp_path / "k.labels"
    labels.write_text("".join(f"{i} {i % 2}\n" for i in range(34)))
    expected = (f"kernelne: error: {path}: the embedding has 1 NaN or infinite entry (nan at "
                "node 3, row 3, column 2)")
    assert _classify_error(capsys, path, labels) == expected
    assert main(["plot", str(path), "--labels", str(labels), "-o", str(tmp_path / "o.png")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [expected]
    assert not (tmp_path / "o.png").exists()
    vectors[5, 0] = np.inf
    with pytest.raises(InputError, match=r"^the embedding has 2 NaN or infinite entries \(the "
                       r"first: nan at node 3, row 3, column 2\)$"):
        evaluate_node_classification(vectors, labels, ratios=[0.5], repeats=1)


def test_skip_refuses_to_drop_most_labelled_nodes_of_an_npy_without_ids(identity_npy, tmp_path):
    """An .npy without its ids file has ids 0..n-1: labels mostly outside them suggest the
    ids file was left behind, so --missing skip does not quietly score the few inside."""
    labels = tmp_path / "l.labels"
    labels.write_text("".join(f"{i} {i % 2}\n" for i in [*range(10), *range(100, 130)]))
    with pytest.raises(InputError, match=r"names 30 node\(s\) the embedding .* lacks \(100, "
                       r".*: more than half, so they are not skipped"):
        evaluate_node_classification(identity_npy, labels, ratios=[0.5], repeats=1,
                                     missing="skip")
