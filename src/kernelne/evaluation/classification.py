"""Node classification (docs/METHOD.md §10; the paper's section IV protocol).

For each training ratio r and repeat i, a random r-fraction of the labelled nodes (split
seeded from ``(seed, r, i)``) trains a one-vs-rest classifier, by default an L2 logistic
regression (liblinear, C = 1); the rest is scored by Micro- and Macro-F1. Each test node is
predicted its k most probable labels, k = its true label count (the top-k rule every published
table uses; for single-label data this is the argmax); ``rule="threshold"`` keeps the labels the
classifier itself predicts (probability above 0.5) instead; ``rule="non-oracle"`` those, or the
most probable label when none is above 0.5 (it reads no test label). With ``select_C`` the
classifier's C is chosen per split by 3-fold cross-validation on that split's training nodes
only. Unlabelled nodes are left out.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import KFold
from sklearn.multiclass import OneVsRestClassifier
from tqdm.auto import tqdm

from kernelne.errors import InputError
from kernelne.evaluation.choices import PAPER_RATIOS, RULE_NAMES, RULES, SELECT_CS  # noqa: F401
from kernelne.evaluation.embeddings import as_embedding, describe_ids, embedding_rows
from kernelne.evaluation.results import ResultRow, ResultTable
from kernelne.graphs.graph import iter_records, map_ids
from kernelne.outputs import cap_jobs
from kernelne.parallel import die_with_parent


def default_classifier(C: float = 1.0) -> LogisticRegression:
    """The paper's per-label classifier: L2 logistic regression, liblinear.

    Parameters
    ----------
    C : float, default 1.0
        Inverse regularisation strength.

    Returns
    -------
    sklearn.linear_model.LogisticRegression
        The unfitted binary classifier (trained one-vs-rest by the protocol).
    """
    return LogisticRegression(C=C, solver="liblinear")


def read_node_labels(path: str | Path) -> tuple[np.ndarray, sp.csr_matrix]:
    """Read ``node label`` lines (one per pair) into node ids and a label matrix.

    Parameters
    ----------
    path : str or Path
        A text file of ``node label`` lines (gzip allowed); a node with several labels has
        one line each.

    Returns
    -------
    nodes : ndarray
        The file's own node ids (integers when all are integers), in increasing order.
    labels : scipy.sparse.csr_matrix of shape (n, K), dtype bool
        Row ``i`` holds the labels of ``nodes[i]``.

    Raises
    ------
    InputError
        A line without exactly 2 fields, or an empty file.
    """
    node_tokens: list[str] = []
    label_tokens: list[str] = []
    for lineno, fields in iter_records(path):
        if len(fields) != 2:
            raise InputError(f"expected 2 fields (node label), found {len(fields)}", path, lineno)
        node_tokens.append(fields[0])
        label_tokens.append(fields[1])
    if not node_tokens:
        raise InputError("no labels found (empty file)", path)
    rows, nodes = map_ids(node_tokens)
    cols, _ = map_ids(label_tokens)
    matrix = sp.csr_matrix(
        (np.ones(len(rows), dtype=bool), (rows, cols)), shape=(len(nodes), int(cols.max()) + 1)
    )
    matrix.sum_duplicates()
    matrix.data[:] = True
    return nodes, matrix


def label_matrix(labels: Any) -> sp.csr_matrix:
    """An ``n x K`` bool CSR matrix from a sparse/dense indicator matrix or a 1-D class vector."""
    if sp.issparse(labels):
        return sp.csr_matrix(labels, dtype=bool)
    arr = np.asarray(labels)
    if arr.ndim == 1:
        _, cols = np.unique(arr, return_inverse=True)
        onehot = np.zeros((len(arr), int(cols.max()) + 1), dtype=bool)
        onehot[np.arange(len(arr)), cols] = True
        return sp.csr_matrix(onehot)
    if arr.ndim != 2:
        raise InputError(f"labels must be a vector or an n x K matrix, got shape {arr.shape}")
    return sp.csr_matrix(arr.astype(bool))


def top_k_predictions(scores: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Mark each row's ``k[row]`` highest scores (ties broken by label order).

    The top-k rule: each test node is predicted its k most probable labels.

    Parameters
    ----------
    scores : array-like of shape (n, K)
        Per-label scores of each row.
    k : array-like of shape (n,)
        How many labels to mark in each row.

    Returns
    -------
    ndarray of shape (n, K), bool
        True at each row's ``k[row]`` highest scores.
    """
    scores = np.asarray(scores)
    order = np.argsort(-scores, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(scores.shape[1])[None, :], axis=1)
    return ranks < np.asarray(k)[:, None]


def split_indices(n: int, ratio: float, seed: int, repeat: int) -> tuple[np.ndarray, np.ndarray]:
    """Train and test positions of one split, seeded from ``(seed, ratio, repeat)``.

    Parameters
    ----------
    n : int
        Number of labelled nodes.
    ratio : float
        Training fraction; the training part holds ``round(ratio n)`` positions, at least 1
        and at most ``n - 1``.
    seed : int
        The evaluation's seed.
    repeat : int
        The repeat's index.

    Returns
    -------
    train, test : ndarray
        Sorted positions in ``0..n-1`` of the training and the test part.
    """
    rng = np.random.default_rng([seed, round(ratio * 10000), repeat])
    perm = rng.permutation(n)
    n_train = min(max(round(ratio * n), 1), n - 1)
    return np.sort(perm[:n_train]), np.sort(perm[n_train:])


def predict_labels(model: Any, X_test: np.ndarray, rule: str, k: np.ndarray) -> np.ndarray:
    """Predicted label sets of a fitted one-vs-rest ``model`` under ``rule``.

    ``k`` (the test nodes' true label counts) is read by the top-k rule only.
    """
    if rule == "threshold":
        return model.predict(X_test).astype(bool)
    if rule == "non-oracle":  # never reads the test labels: p > 0.5, at least one label
        scores = model.predict_proba(X_test)
        return (scores > 0.5) | top_k_predictions(scores, np.ones(len(scores), int))
    scores = (
        model.predict_proba(X_test) if hasattr(model, "predict_proba")
        else model.decision_function(X_test)
    )
    return top_k_predictions(scores, k)


def choose_C(
    X: np.ndarray, Y: np.ndarray, classifier: Any, Cs: Sequence[float], rule: str, seed: int
) -> float:
    """The C of ``Cs`` with the best mean Micro-F1 under ``rule`` over 3 folds of the training
    nodes ``X``, ``Y`` (ties: the first listed); the classifier's own C with under 6 nodes."""
    return choose_C_by_rule(X, Y, classifier, Cs, (rule,), seed)[rule]


def choose_C_by_rule(
    X: np.ndarray, Y: np.ndarray, classifier: Any, Cs: Sequence[float], rules: Sequence[str],
    seed: int,
) -> dict[str, float]:
    """:func:`choose_C` under each of ``rules``, from one set of fits: the 3 folds x ``Cs``
    classifiers do not depend on the rule, only their scoring does."""
    if len(X) < 6:
        return {rule: classifier.get_params()["C"] for rule in rules}
    folds = list(KFold(3, shuffle=True, random_state=seed).split(X))
    means: dict[str, list[float]] = {rule: [] for rule in rules}
    for C in Cs:
        scores: dict[str, list[float]] = {rule: [] for rule in rules}
        for fit, val in folds:
            model = OneVsRestClassifier(clone(classifier).set_params(C=C)).fit(X[fit], Y[fit])
            for rule in rules:
                pred = predict_labels(model, X[val], rule, Y[val].sum(axis=1))
                scores[rule].append(f1_score(Y[val], pred, average="micro", zero_division=0))
        for rule in rules:
            means[rule].append(np.mean(scores[rule]))
    return {rule: float(Cs[int(np.argmax(means[rule]))]) for rule in rules}


def score_split_rules(
    X: np.ndarray, Y: np.ndarray, ratio: float, seed: int, repeat: int, classifier: Any,
    rules: Sequence[str], select_C: Sequence[float] | None = None,
) -> dict[str, tuple[float, float]]:
    """Micro- and Macro-F1 of one seeded split under each of ``rules`` (one fit for all).

    ``select_C``: candidate Cs, one chosen on the split's training nodes (by the first rule).
    """
    die_with_parent()
    train, test = split_indices(len(X), ratio, seed, repeat)
    truth = Y[test]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a label absent from a small training set
        if select_C:
            C = choose_C(X[train], Y[train], classifier, select_C, rules[0], seed + repeat)
            classifier = clone(classifier).set_params(C=C)
        model = OneVsRestClassifier(clone(classifier))
        model.fit(X[train], Y[train])
        for rule in rules:
            pred = predict_labels(model, X[test], rule, truth.sum(axis=1))
            out[rule] = (float(f1_score(truth, pred, average="micro", zero_division=0)),
                         float(f1_score(truth, pred, average="macro", zero_division=0)))
    return out


def score_split_each_rule(
    X: np.ndarray, Y: np.ndarray, ratio: float, seed: int, repeat: int, classifier: Any,
    rules: Sequence[str], select_C: Sequence[float] | None = None,
) -> dict[str, tuple[float, float]]:
    """Micro- and Macro-F1 of one seeded split under each of ``rules``, each as
    :func:`score_split` scores it alone (with ``select_C``, the C chosen by that rule), the
    fits the rules share made once (:func:`choose_C_by_rule`; one final fit per C chosen)."""
    die_with_parent()
    train, test = split_indices(len(X), ratio, seed, repeat)
    truth = Y[test]
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a label absent from a small training set
        chosen = (choose_C_by_rule(X[train], Y[train], classifier, select_C, rules,
                                   seed + repeat) if select_C else dict.fromkeys(rules))
        models: dict[float | None, Any] = {}
        for rule in rules:
            C = chosen[rule]
            if C not in models:
                own = classifier if C is None else clone(classifier).set_params(C=C)
                models[C] = OneVsRestClassifier(clone(own)).fit(X[train], Y[train])
            pred = predict_labels(models[C], X[test], rule, truth.sum(axis=1))
            out[rule] = (float(f1_score(truth, pred, average="micro", zero_division=0)),
                         float(f1_score(truth, pred, average="macro", zero_division=0)))
    return out


def score_split(
    X: np.ndarray, Y: np.ndarray, ratio: float, seed: int, repeat: int, classifier: Any, rule: str,
    select_C: Sequence[float] | None = None,
) -> tuple[float, float]:
    """Micro- and Macro-F1 of one seeded split."""
    return score_split_rules(X, Y, ratio, seed, repeat, classifier, (rule,), select_C)[rule]


def check_ratios(ratios: Sequence[float]) -> list[float]:
    ratios = [float(r) for r in ratios]
    if not ratios or any(not 0 < r < 1 for r in ratios):
        raise InputError(f"training ratios must lie strictly between 0 and 1, got {ratios}")
    return ratios


def evaluate_node_classification(
    embedding: Any,
    labels: Any,
    label_nodes: Sequence | None = None,
    *,
    ratios: Sequence[float] = PAPER_RATIOS,
    repeats: int = 50,
    seed: int = 0,
    classifier: Any = None,
    rule: str = "top-k",
    n_jobs: int | None = -1,
    method: str = "embedding",
    dataset: str = "",
    select_C: Sequence[float] | None = None,
    missing: str = "error",
    progress: bool = False,
) -> ResultTable:
    """Micro-/Macro-F1 (mean, std over ``repeats``) of ``embedding`` at each training ratio.

    The paper's protocol (:doc:`METHOD </METHOD>` §10): for each training ratio r and repeat i, a
    random r-fraction of the labelled nodes (split seeded from ``(seed, r, i)``) trains a
    one-vs-rest classifier; the rest is scored by Micro- and Macro-F1. Unlabelled nodes are left
    out.

    Parameters
    ----------
    embedding : str, Path, estimator, tuple or array-like
        Anything :func:`as_embedding` takes.
    labels : str, Path, sparse matrix or array-like
        A label file path, an ``n x K`` indicator matrix or a class vector.
    label_nodes : sequence, optional
        The user's node id of each row of ``labels``; default ``0..n-1`` (or the file's ids).
    ratios : sequence of float, default PAPER_RATIOS
        Training ratios, each strictly between 0 and 1.
    repeats : int, default 50
        Seeded splits per ratio.
    seed : int, default 0
        Seed of the splits (non-negative).
    classifier : sklearn classifier, optional
        A binary scikit-learn classifier, trained one-vs-rest; default
        :func:`default_classifier` (L2 logistic regression, liblinear, C = 1).
    rule : {"top-k", "threshold", "non-oracle"}, default "top-k"
        How labels are predicted: ``"top-k"`` gives each test node its k most probable
        labels, k its true label count (the rule every published table uses; the argmax for
        single-label data); ``"threshold"`` keeps the labels the classifier predicts
        (probability above 0.5); ``"non-oracle"`` those, or the most probable label when none
        is above 0.5 (it reads no test label).
    n_jobs : int, optional
        joblib workers over the splits (-1: all cores).
    method : str, default "embedding"
        The method's name in the result rows.
    dataset : str, default ""
        The dataset's name in the result rows.
    select_C : sequence of float, optional
        Candidate values of the classifier's C, one chosen per split by 3-fold
        cross-validation on its training nodes only (e.g.
        ``kernelne.evaluation.classification.SELECT_CS``).
    missing : {"error", "skip"}, default "error"
        What to do with labelled nodes the embedding lacks (e.g. isolated nodes of a graph
        read from an edge list): ``"error"`` names them and stops; ``"skip"`` leaves them out,
        and the result's ``skipped`` attribute holds their ids.
    progress : bool, default False
        Show a progress bar of the splits on stderr.

    Returns
    -------
    ResultTable
        Rows ``micro_f1`` and ``macro_f1`` per ratio (setting ``"0.1"`` etc.); ``per_split``
        holds every split's score and ``skipped`` the ids left out.

    Raises
    ------
    InputError
        An unknown rule, ``repeats < 1``, a negative seed, a ratio outside ``(0, 1)``, fewer
        than 2 labels or labelled nodes, or labelled nodes missing from the embedding.

    Examples
    --------
    >>> from kernelne import KernelNE, load_dataset
    >>> from kernelne.evaluation import evaluate_node_classification
    >>> karate = load_dataset("karate")
    >>> model = KernelNE(dim=16, walks_per_node=10, workers=1, random_state=0)
    >>> model = model.fit(karate.graph)
    >>> table = evaluate_node_classification(model, karate.labels, ratios=[0.5], repeats=5)
    >>> print(table.to_text())  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    method     dataset  task                 setting  metric      mean     std  n
    embedding           node_classification  0.5      micro_f1  0...  5
    embedding           node_classification  0.5      macro_f1  0...  5
    """
    return evaluate_node_classification_rules(
        embedding, labels, label_nodes, rules=(rule,), ratios=ratios, repeats=repeats,
        seed=seed, classifier=classifier, n_jobs=n_jobs, method=method, dataset=dataset,
        select_C=select_C, missing=missing, progress=progress)[rule]


def evaluate_node_classification_rules(
    embedding: Any,
    labels: Any,
    label_nodes: Sequence | None = None,
    *,
    rules: Sequence[str] = ("top-k", "non-oracle"),
    ratios: Sequence[float] = PAPER_RATIOS,
    repeats: int = 50,
    seed: int = 0,
    classifier: Any = None,
    n_jobs: int | None = -1,
    method: str | Mapping[str, str] = "embedding",
    dataset: str = "",
    select_C: Sequence[float] | None = None,
    missing: str = "error",
    progress: bool = False,
) -> dict[str, ResultTable]:
    """:func:`evaluate_node_classification` under each of ``rules``, on the same splits, the
    fits the rules share made once: each rule's table is the one
    :func:`evaluate_node_classification` gives with ``rule`` set to it (with ``select_C``,
    each rule's C chosen by that rule), in less time (the cross-validation fits of
    ``select_C`` and, when the rules choose the same C, the split's fit are shared).

    Parameters
    ----------
    embedding : str, Path, estimator, tuple or array-like
        Anything :func:`as_embedding` takes.
    labels : str, Path, sparse matrix or array-like
        A label file path, an ``n x K`` indicator matrix or a class vector.
    label_nodes : sequence, optional
        The user's node id of each row of ``labels``; default ``0..n-1`` (or the file's ids).
    rules : sequence of {"top-k", "threshold", "non-oracle"}, default ("top-k", "non-oracle")
        The prediction rules (see :func:`evaluate_node_classification`).
    ratios : sequence of float, default PAPER_RATIOS
        Training ratios, each strictly between 0 and 1.
    repeats : int, default 50
        Seeded splits per ratio.
    seed : int, default 0
        Seed of the splits (non-negative).
    classifier : sklearn classifier, optional
        A binary scikit-learn classifier, trained one-vs-rest; default
        :func:`default_classifier`.
    n_jobs : int, optional
        joblib workers over the splits (-1: all cores).
    method : str or mapping of str to str, default "embedding"
        The method's name in the result rows, or each rule's name for it.
    dataset : str, default ""
        The dataset's name in the result rows.
    select_C : sequence of float, optional
        Candidate values of the classifier's C, one chosen per split and rule by 3-fold
        cross-validation on the split's training nodes only.
    missing : {"error", "skip"}, default "error"
        Labelled nodes the embedding lacks: stop (``"error"``) or leave them out (``"skip"``).
    progress : bool, default False
        Show a progress bar of the splits on stderr.

    Returns
    -------
    dict of str to ResultTable
        Each rule's table, as :func:`evaluate_node_classification` returns it.

    Raises
    ------
    InputError
        As :func:`evaluate_node_classification`, or no rule given.
    """
    if not rules:
        raise InputError("no prediction rule given")
    for rule in rules:
        _check_protocol(rule, repeats, seed)
    ratios = check_ratios(ratios)
    X, Y, skipped = labelled_rows(embedding, labels, label_nodes, missing)
    classifier = default_classifier() if classifier is None else classifier
    jobs = [(r, i) for r in ratios for i in range(repeats)]
    results = Parallel(n_jobs=cap_jobs(n_jobs, len(jobs)), return_as="generator",
                       initializer=die_with_parent)(
        delayed(score_split_each_rule)(X, Y, r, seed, i, classifier, tuple(rules), select_C)
        for r, i in jobs
    )
    with tqdm(total=len(jobs), unit="split", desc=f"classification ({' and '.join(rules)})",
              file=sys.stderr, disable=not progress, dynamic_ncols=True, leave=False) as bar:
        scores = []
        for score in results:  # in the order of jobs
            scores.append(score)
            bar.update()
    return {rule: _f1_table(np.array([s[rule] for s in scores]).reshape(len(ratios), repeats, 2),
                            ratios, repeats,
                            method if isinstance(method, str) else method[rule], dataset,
                            skipped)
            for rule in rules}


def _check_protocol(rule: str, repeats: int, seed: int) -> None:
    """:class:`InputError` for an unknown rule, ``repeats < 1`` or a negative seed."""
    if rule not in RULES:
        raise InputError(f"unknown prediction rule {rule!r} (use {' or '.join(RULES)})")
    if repeats < 1:
        raise InputError(f"repeats must be at least 1, got {repeats}")
    if seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed}")


def labelled_rows(embedding: Any, labels: Any, label_nodes: Sequence | None = None,
                  missing: str = "error") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The embedding's rows of the labelled nodes and their labels.

    Parameters
    ----------
    embedding : str, Path, estimator, tuple or array-like
        Anything :func:`as_embedding` takes.
    labels : str, Path, sparse matrix or array-like
        A label file path, an ``n x K`` indicator matrix or a class vector.
    label_nodes : sequence, optional
        The user's node id of each row of ``labels``; default ``0..n-1`` (or the file's ids).
    missing : {"error", "skip"}, default "error"
        Labelled nodes the embedding lacks: ``"error"`` names them and stops, ``"skip"``
        leaves them out.

    Returns
    -------
    X : ndarray of shape (m, d)
        The embedding's row of each labelled node it holds.
    Y : ndarray of shape (m, K), bool
        Their label indicator (labels no such node has dropped).
    skipped : ndarray
        The ids of the labelled nodes the embedding lacks (``missing="skip"``).

    Raises
    ------
    InputError
        Labelled nodes the embedding lacks (``missing="error"``), none of them in it
        (``missing="skip"``), node ids of another kind than the embedding's, or fewer than
        2 labels or labelled nodes.
    """
    vectors, emb_nodes = as_embedding(embedding)
    if isinstance(labels, (str, Path)):
        wanted_from = f"labels file {labels}"
        label_nodes, Y = read_node_labels(labels)
    else:
        wanted_from = "the label matrix"
        Y = label_matrix(labels)
        label_nodes = np.arange(Y.shape[0]) if label_nodes is None else np.asarray(label_nodes)
    if len(label_nodes) != Y.shape[0]:
        raise InputError(f"{len(label_nodes)} node ids for {Y.shape[0]} label rows")
    labelled = np.flatnonzero(Y.getnnz(axis=1) > 0)
    emb_rows = embedding_rows(emb_nodes, np.asarray(label_nodes)[labelled], embedding, missing,
                              wanted_from=wanted_from)
    if len(labelled) and not (emb_rows >= 0).any():
        where = f"the embedding {embedding}" if isinstance(embedding, (str, Path)) \
            else "the embedding"
        raise InputError(f"nothing to classify: none of the {len(labelled):,} labelled nodes "
                         f"of {wanted_from} is in {where}, whose ids are "
                         f"{describe_ids(emb_nodes, embedding)}")
    skipped = np.asarray(label_nodes)[labelled[emb_rows < 0]]
    labelled, emb_rows = labelled[emb_rows >= 0], emb_rows[emb_rows >= 0]
    Y = Y[labelled]
    Y = Y[:, np.flatnonzero(Y.getnnz(axis=0) > 0)].toarray()
    if Y.shape[1] < 2:
        raise InputError(f"need at least 2 distinct labels, found {Y.shape[1]}")
    if len(labelled) < 2:
        raise InputError(f"need at least 2 labelled nodes, found {len(labelled)}")
    return vectors[emb_rows], Y, skipped


def _f1_table(scores: np.ndarray, ratios: list[float], repeats: int, method: str,
              dataset: str, skipped: np.ndarray) -> ResultTable:
    """The :class:`ResultTable` of ``scores`` (ratio x repeat x (Micro-F1, Macro-F1)), with
    ``skipped`` and ``per_split`` set."""
    rows = []
    for r, per_ratio in zip(ratios, scores, strict=True):
        for j, metric in enumerate(("micro_f1", "macro_f1")):
            rows.append(ResultRow(
                method, dataset, "node_classification", f"{r:g}", metric,
                float(per_ratio[:, j].mean()), float(per_ratio[:, j].std()), repeats,
            ))
    table = ResultTable(rows)
    table.skipped = skipped
    table.per_split = {(f"{r:g}", metric): per_ratio[:, j].tolist()
                       for r, per_ratio in zip(ratios, scores, strict=True)
                       for j, metric in enumerate(("micro_f1", "macro_f1"))}
    return table
