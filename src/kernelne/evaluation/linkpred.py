"""Link-prediction scoring (docs/METHOD.md §11): edge features, L2 logistic regression.

The classifier trains on the split's residual edges plus as many sampled non-edges and is
scored on the held-out edges plus their negatives by ROC-AUC and average precision. Edge
operators of a pair (x, y), per coordinate: ``weighted_l2`` |x - y|² (the paper's),
``hadamard`` x·y, ``average`` (x + y)/2, ``l1`` |x - y|. With ``select=True`` the operator and
the classifier's C are chosen by cross-validated ROC-AUC on the training pairs only
(:func:`select_operator_and_C`); the test pairs are read once, to score the choice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import average_precision_score, roc_auc_score
from sklearn.model_selection import StratifiedKFold

from kernelne.errors import InputError
from kernelne.evaluation.choices import OPERATORS, SELECT_CS
from kernelne.evaluation.embeddings import as_embedding, embedding_rows
from kernelne.evaluation.results import ResultRow, ResultTable
from kernelne.evaluation.splits import LinkSplit


def edge_features(vectors: np.ndarray, pairs: np.ndarray, operator: str = "weighted_l2"):
    """Feature matrix of node pairs (rows of ``vectors``) under an edge operator.

    Parameters
    ----------
    vectors : ndarray of shape (n, d)
        The embedding rows.
    pairs : ndarray of shape (k, 2)
        Row indices of ``vectors``, one pair per row.
    operator : str, default "weighted_l2"
        A name of :data:`OPERATORS`: ``weighted_l2`` ``(x - y)^2`` (the paper's),
        ``hadamard`` ``x * y``, ``average`` ``(x + y) / 2``, ``l1`` ``|x - y|``, per
        coordinate.

    Returns
    -------
    ndarray of shape (k, d)
        One feature row per pair.

    Raises
    ------
    InputError
        An unknown operator.
    """
    if operator not in OPERATORS:
        raise InputError(f"unknown edge operator {operator!r} (use {', '.join(OPERATORS)})")
    return OPERATORS[operator](vectors[pairs[:, 0]], vectors[pairs[:, 1]])


def default_edge_classifier(C: float = 1.0) -> LogisticRegression:
    """L2 logistic regression (liblinear) for edge features.

    Parameters
    ----------
    C : float, default 1.0
        Inverse regularisation strength.

    Returns
    -------
    sklearn.linear_model.LogisticRegression
        The unfitted classifier.
    """
    return LogisticRegression(C=C, solver="liblinear")


def _edge_scores(model: Any, X: np.ndarray) -> np.ndarray:
    """Edge probabilities (or decision values) of a fitted classifier."""
    if hasattr(model, "predict_proba"):
        return model.predict_proba(X)[:, 1]
    return model.decision_function(X)


def select_operator_and_C(
    vectors: np.ndarray, pairs: np.ndarray, y: np.ndarray, operators: Sequence[str],
    Cs: Sequence[float] = SELECT_CS, classifier: Any = None, folds: int = 3, seed: int = 0,
    bar: Any = None,
) -> tuple[str, float, dict[tuple[str, float], float]]:
    """The (operator, C) with the best mean ROC-AUC over stratified ``folds`` of the training
    ``pairs`` (labels ``y``), and every candidate's mean AUC. Ties: the first listed.
    ``bar``: a tqdm progress bar, advanced by one per classifier fitted."""
    classifier = default_edge_classifier() if classifier is None else classifier
    cv = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(pairs, y))
    means: dict[tuple[str, float], float] = {}
    for op in operators:
        X = edge_features(vectors, pairs, op)
        for C in Cs:
            if bar is not None:
                bar.set_postfix_str(f"{op}, C={C:g}", refresh=False)
            aucs = []
            for fit, val in cv:
                model = clone(classifier).set_params(C=C).fit(X[fit], y[fit])
                aucs.append(roc_auc_score(y[val], _edge_scores(model, X[val])))
                if bar is not None:
                    bar.update()
            means[(op, float(C))] = float(np.mean(aucs))
    best = max(means, key=means.get)
    return best[0], best[1], means


def evaluate_link_prediction(
    embedding: Any,
    split: LinkSplit,
    *,
    operators: Sequence[str] = ("weighted_l2",),
    classifier: Any = None,
    method: str = "embedding",
    dataset: str = "",
    select: bool = False,
    progress: bool = False,
) -> ResultTable:
    """ROC-AUC and average precision of ``embedding`` on ``split``, one pair of rows per operator.

    The paper's protocol (:doc:`METHOD </METHOD>` §11): the classifier trains on the split's
    residual edges plus as many sampled non-edges and is scored on the held-out edges plus their
    negatives.

    Parameters
    ----------
    embedding : str, Path, estimator, tuple or array-like
        Anything :func:`as_embedding` takes, learned on ``split.residual_graph()``; its rows
        are found by the user's node ids.
    split : LinkSplit
        The split (:func:`make_link_split` or :meth:`LinkSplit.load`).
    operators : sequence of str, default ("weighted_l2",)
        Edge operators of :data:`OPERATORS` to score.
    classifier : sklearn classifier, optional
        A binary classifier with a ``C`` parameter; default
        :func:`default_edge_classifier`.
    method : str, default "embedding"
        The method's name in the result rows.
    dataset : str, default ""
        The dataset's name in the result rows.
    select : bool, default False
        One pair of rows only, for the operator (among ``operators``) and C (among
        ``kernelne.evaluation.linkpred.SELECT_CS``) with the best 3-fold cross-validated
        ROC-AUC on the training pairs; its setting reads ``"select:OP,C=C"``. The test pairs
        are read once, to score the choice.
    progress : bool, default False
        A progress bar (stderr) counting the classifiers fitted.

    Returns
    -------
    ResultTable
        Rows ``roc_auc`` and ``average_precision`` per operator (the setting).

    Raises
    ------
    InputError
        An unknown (or no) operator, or split nodes missing from the embedding.
    """
    from tqdm.auto import tqdm

    unknown = [op for op in operators if op not in OPERATORS]
    if unknown or not operators:
        raise InputError(f"unknown edge operator(s) {unknown} (use {', '.join(OPERATORS)})")
    vectors, emb_nodes = as_embedding(embedding)
    source = split.info.get("source")
    try:
        vectors = vectors[embedding_rows(emb_nodes, split.nodes, embedding, wanted_from=(
            f"the split of {source}" if source else "the split"))]
    except InputError as exc:
        raise InputError(exc.problem + ": learn the embedding on the split's "
                         "residual.edgelist", exc.path) from None
    train_pairs, y_train = split.train_pairs()
    test_pairs, y_test = split.test_pairs()
    classifier = default_edge_classifier() if classifier is None else classifier
    settings = [(op, op) for op in operators]
    folds = 3
    total = (len(operators) * len(SELECT_CS) * folds + 1) if select else len(operators)
    rows = []
    with tqdm(total=total, unit="fit", desc="link prediction", disable=not progress,
              dynamic_ncols=True) as bar:
        if select:
            op, C, _ = select_operator_and_C(vectors, train_pairs, y_train, operators,
                                             classifier=classifier, folds=folds,
                                             seed=split.seed, bar=bar)
            classifier = clone(classifier).set_params(C=C)
            settings = [(op, f"select:{op},C={C:g}")]
        for op, setting in settings:
            bar.set_postfix_str(setting, refresh=False)
            model = clone(classifier).fit(edge_features(vectors, train_pairs, op), y_train)
            scores = _edge_scores(model, edge_features(vectors, test_pairs, op))
            bar.update()
            for metric, value in (
                ("roc_auc", roc_auc_score(y_test, scores)),
                ("average_precision", average_precision_score(y_test, scores)),
            ):
                rows.append(ResultRow(method, dataset, "link_prediction", setting, metric,
                                      float(value), 0.0, 1))
    return ResultTable(rows)
