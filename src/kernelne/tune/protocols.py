"""How a search scores a trial: on labelled non-test nodes (:class:`ClassificationProtocol`)
or on links held out of the training graph (:class:`LinkProtocol`).

A protocol gives the graph each trial is fitted on (``fit_graph``), the name of its score
(``metric``), a description of what is scored (``validation``), ``validate(model, repeats)``
(a score, its standard error and the per-split values) and ``test(model)`` (the test scores,
read only to audit the choice).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from kernelne.errors import InputError
from kernelne.evaluation.validation import _standard_error, auc_standard_error, held_out_edges
from kernelne.graphs.graph import Graph


class ClassificationProtocol:
    """Validation by node classification: Micro-F1 of seeded 50/50 splits of the labelled
    non-test nodes; the test part (``test_nodes`` or a seeded ``holdout``) is never read by
    :meth:`validate`.

    Parameters
    ----------
    graph : Graph
        The graph every trial is fitted on (the whole graph: the embedding is unsupervised).
    label_nodes : ndarray
        The labelled nodes' ids.
    Y : scipy.sparse.csr_matrix
        Their ``n x K`` label indicator.
    source : str, Path or tuple
        Where the labels came from (a path names the file in error messages).
    test_nodes : sequence, optional
        The test part, by node id.
    holdout : float, optional
        Instead: a seeded fraction of the labelled nodes held out as the test part.
    seed : int
        Seed of the holdout, the splits and the classifier's cross-validation.
    select_C : bool
        Choose the classifier's C per split (else C = 1 throughout).
    split_counts : str
        The validation splits per trial, in words (for ``validation``).

    Attributes
    ----------
    metric, chosen_by, validation : str
        The score's name, what the choice is made by and what is scored, in words.
    fit_graph : Graph
        ``graph``.
    test_mask : ndarray
        True for the labelled nodes of the test part.
    select_C : bool
        As given (the result's ``select_C``).
    keeps_models : bool
        True: a model fitted with the full settings on ``fit_graph`` is the refit itself.

    Raises
    ------
    InputError
        Labelled nodes not in the graph, named test nodes none of which is labelled, fewer
        than four labelled training nodes, or a single label among them.
    """

    metric = "micro_f1"
    keeps_models = True

    def __init__(self, graph: Graph, label_nodes: np.ndarray, Y: sp.csr_matrix, source: Any,
                 test_nodes: Sequence | None, holdout: float | None, seed: int,
                 select_C: bool, split_counts: str):
        self.label_nodes, self.Y, self.seed = label_nodes, Y, seed
        self.select_C = bool(select_C)
        self.test_mask = holdout_mask(label_nodes, test_nodes, holdout, seed)
        check_labels(graph, label_nodes, Y, self.test_mask, test_nodes, source)
        self.train_nodes, self.Y_train = label_nodes[~self.test_mask], Y[~self.test_mask]
        self.fit_graph = graph
        self.chosen_by = "validation Micro-F1, " + classifier_C(select_C)
        self.validation = (
            f"Micro-F1 of seeded 50/50 splits of the {len(self.train_nodes):,} labelled "
            f"non-test nodes ({int(self.test_mask.sum()):,} test nodes never read): "
            + split_counts + "; " + classifier_C(select_C)
            + ("; the C = 1 score on the same splits recorded beside it" if select_C else ""))

    def _classify(self, model, repeats: int, Cs: Sequence[float] | None
                  ) -> tuple[float, list[float]]:
        from kernelne.evaluation import evaluate_node_classification

        table = evaluate_node_classification(
            (model.embedding_, model.nodes_), self.Y_train, self.train_nodes, ratios=[0.5],
            repeats=repeats, seed=self.seed, n_jobs=1, select_C=Cs)
        values = list(getattr(table, "per_split", {}).get(("0.5", "micro_f1"), []))
        return float(table.value("micro_f1")), values

    def validate(self, model, repeats: int) -> dict[str, Any]:
        """``score``, ``se``, ``splits``, ``values`` (per split) and their C = 1 counterparts
        ``score_c1``, ``se_c1`` of ``model`` on ``repeats`` validation splits."""
        from kernelne.evaluation.classification import SELECT_CS

        score, values = self._classify(model, repeats, SELECT_CS if self.select_C else None)
        c1, c1_values = (self._classify(model, repeats, None) if self.select_C
                         else (score, values))
        return {"score": score, "se": _standard_error(values), "splits": repeats,
                "values": values, "score_c1": c1, "se_c1": _standard_error(c1_values)}

    def test(self, model) -> dict[str, float | None]:
        """The test scores (``test_score``, ``test_score_c1``) of a model fitted with the
        full settings (None without a test part): recorded to audit the choice after it is
        made, never read by it."""
        if not self.test_mask.any():
            return {"test_score": None, "test_score_c1": None}
        chosen, c1 = test_scores(model, self.label_nodes, self.Y, self.test_mask,
                                 self.select_C, self.seed)
        return {"test_score": chosen, "test_score_c1": c1}


class LinkProtocol:
    """Validation by link prediction: ROC-AUC on ``val_fraction`` of the edges held out of
    ``graph`` (and as many non-edges), each trial fitted on the rest.

    Parameters
    ----------
    graph : Graph
        The training graph.
    val_fraction : float
        The fraction of its edges held out.
    seed : int
        Seed of the held-out split.

    Attributes
    ----------
    metric, chosen_by, validation : str
        The score's name, ``""`` and what is scored, in words.
    fit_graph : Graph
        The graph without the held-out edges.
    select_C : None
        No classifier is trained.
    keeps_models : bool
        False: every trial is fitted on ``fit_graph``, not the whole graph.
    """

    metric = "roc_auc"
    chosen_by = ""
    select_C = None
    keeps_models = False

    def __init__(self, graph: Graph, val_fraction: float, seed: int):
        self.split, self.fit_graph, self.n_pos, self.n_neg = held_out_edges(
            graph, val_fraction, seed)
        self.validation = (f"ROC-AUC on {len(self.split.test_edges):,} validation edges held "
                           f"out of the given graph (and as many non-edges), fitted on the "
                           f"rest; standard error by Hanley and McNeil")

    def validate(self, model, repeats: int) -> dict[str, Any]:
        """``score`` (the ROC-AUC), ``se``, ``splits`` (1) and ``values`` (empty) of
        ``model``; ``repeats`` is ignored (one split)."""
        from kernelne.evaluation import evaluate_link_prediction

        auc = float(evaluate_link_prediction((model.embedding_, model.nodes_), self.split
                                             ).value("roc_auc"))
        return {"score": auc, "se": auc_standard_error(auc, self.n_pos, self.n_neg),
                "splits": 1, "values": []}

    def test(self, model) -> dict[str, float | None]:
        """No test part: ``test_score`` and ``test_score_c1`` are None."""
        return {"test_score": None, "test_score_c1": None}


def labels_of(labels: Any) -> tuple[np.ndarray, sp.csr_matrix]:
    """``(node ids, n x K indicator)`` of a label file or of such a pair."""
    from kernelne.evaluation.classification import read_node_labels

    if isinstance(labels, (str, Path)):
        return read_node_labels(labels)
    nodes, Y = labels
    return np.asarray(nodes), sp.csr_matrix(Y)


def holdout_mask(nodes: np.ndarray, test_nodes: Sequence | None, holdout: float | None,
             seed: int) -> np.ndarray:
    """Boolean mask over ``nodes``: True for the test part."""
    if test_nodes is not None:
        wanted = {str(x) for x in test_nodes}
        return np.array([str(x) in wanted for x in nodes])
    mask = np.zeros(len(nodes), dtype=bool)
    if holdout is not None:
        rng = np.random.default_rng(seed)
        mask[rng.permutation(len(nodes))[: int(round(holdout * len(nodes)))]] = True
    return mask


def check_labels(g: Graph, label_nodes: np.ndarray, Y: sp.csr_matrix, test_mask: np.ndarray,
                  test_nodes: Sequence | None, source: Any) -> None:
    """The labels can be validated on: nodes of the graph, two classes among the training
    nodes, and a test part that exists when test nodes were named."""
    path = source if isinstance(source, (str, Path)) else None
    known = {str(x) for x in g.nodes}
    missing = [x for x in label_nodes if str(x) not in known]
    if missing:
        shown = ", ".join(str(x) for x in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise InputError(f"{len(missing):,} labelled node(s) are not nodes of the graph: "
                         f"{shown}{more}", path)
    if test_nodes is not None and not test_mask.any():
        raise InputError(f"none of the {len(test_nodes):,} test nodes is a labelled node")
    train = Y[~test_mask]
    if int(train.shape[0]) < 4:
        raise InputError(f"too few labelled training nodes to validate on "
                         f"({int(train.shape[0])}; at least 4)", path)
    classes = int((np.asarray(train.sum(axis=0)).ravel() > 0).sum())
    if classes < 2:
        raise InputError(f"the {int(train.shape[0]):,} labelled training nodes all have the same "
                         "label: classification needs at least two", path)


def test_scores(model, nodes: np.ndarray, Y: sp.csr_matrix, test_mask: np.ndarray,
                 select_C: bool, seed: int) -> tuple[float, float]:
    """Micro-F1 on the test nodes of a classifier trained on all other labelled nodes: with
    C chosen among :data:`~kernelne.evaluation.classification.SELECT_CS` by 3-fold
    cross-validation on those nodes (``select_C``; else C = 1), and with C = 1."""
    from sklearn.metrics import f1_score
    from sklearn.multiclass import OneVsRestClassifier

    from kernelne.evaluation.classification import (
        SELECT_CS,
        choose_C,
        default_classifier,
        top_k_predictions,
    )
    from kernelne.evaluation.embeddings import embedding_rows

    X = model.embedding_[embedding_rows(model.nodes_, nodes)]
    dense = Y.toarray().astype(int)
    X_train, Y_train = X[~test_mask], dense[~test_mask]

    def score(C: float) -> float:
        clf = OneVsRestClassifier(default_classifier(C)).fit(X_train, Y_train)
        pred = top_k_predictions(clf.predict_proba(X[test_mask]),
                                 dense[test_mask].sum(axis=1))
        return float(f1_score(dense[test_mask], pred, average="micro"))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a label absent from a small fold
        c1 = score(1.0)
        if not select_C:
            return c1, c1
        C = choose_C(X_train, Y_train, default_classifier(), SELECT_CS, "top-k", seed)
        return (c1 if C == 1.0 else score(C)), c1


def classifier_C(select_C: bool) -> str:
    """How the validation classifier's C is set, in words."""
    from kernelne.evaluation.classification import SELECT_CS

    if select_C:
        return (f"C chosen per split among {min(SELECT_CS):g}-{max(SELECT_CS):g} by 3-fold CV "
                "on each split's training nodes")
    return "classifier C = 1 (the paper's)"

