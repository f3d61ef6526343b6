"""Evaluation protocols of docs/METHOD.md §10-§12: node classification and link prediction.

Usable with any embedding: a fitted :class:`~kernelne.KernelNE`, a ``(vectors, node ids)``
pair, a bare matrix, or a word2vec-format / ``.npy`` file from another tool.

The names below are loaded on first use (PEP 562): importing one submodule, as the command
line's parser does with :mod:`kernelne.evaluation.choices`, does not load scikit-learn.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "OPERATORS": "choices", "PAPER_RATIOS": "choices", "LinkSplit": "splits",
    "ResultRow": "results", "ResultTable": "results", "as_embedding": "embeddings",
    "default_classifier": "classification", "default_edge_classifier": "linkpred",
    "edge_features": "linkpred", "embedding_rows": "embeddings",
    "evaluate_link_prediction": "linkpred", "evaluate_node_classification": "classification",
    "evaluate_node_classification_rules": "classification",
    "make_link_split": "splits", "read_node_labels": "classification",
    "sample_non_edges": "splits", "split_indices": "classification",
    "top_k_predictions": "classification",
}

__all__ = [
    "OPERATORS", "PAPER_RATIOS", "LinkSplit", "ResultRow", "ResultTable", "as_embedding",
    "default_classifier", "default_edge_classifier", "edge_features", "embedding_rows",
    "evaluate_link_prediction", "evaluate_node_classification",
    "evaluate_node_classification_rules", "make_link_split",
    "read_node_labels", "sample_non_edges", "split_indices", "top_k_predictions",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'kernelne.evaluation' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"kernelne.evaluation.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from kernelne.evaluation.choices import OPERATORS, PAPER_RATIOS
    from kernelne.evaluation.classification import (
        default_classifier,
        evaluate_node_classification,
        evaluate_node_classification_rules,
        read_node_labels,
        split_indices,
        top_k_predictions,
    )
    from kernelne.evaluation.embeddings import as_embedding, embedding_rows
    from kernelne.evaluation.linkpred import (
        default_edge_classifier,
        edge_features,
        evaluate_link_prediction,
    )
    from kernelne.evaluation.results import ResultRow, ResultTable
    from kernelne.evaluation.splits import LinkSplit, make_link_split, sample_non_edges
