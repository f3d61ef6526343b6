"""Evaluation protocols of docs/METHOD.md §10-§12: node classification and link prediction.

Usable with any embedding: a fitted :class:`~kernelne.KernelNE`, a ``(vectors, node ids)``
pair, a bare matrix, or a word2vec-format / ``.npy`` file from another tool.
"""

from kernelne.evaluation.classification import (
    PAPER_RATIOS,
    default_classifier,
    evaluate_node_classification,
    read_node_labels,
    split_indices,
    top_k_predictions,
)
from kernelne.evaluation.embeddings import as_embedding, embedding_rows
from kernelne.evaluation.linkpred import (
    OPERATORS,
    default_edge_classifier,
    edge_features,
    evaluate_link_prediction,
)
from kernelne.evaluation.results import ResultRow, ResultTable
from kernelne.evaluation.splits import LinkSplit, make_link_split, sample_non_edges

__all__ = [
    "OPERATORS", "PAPER_RATIOS", "LinkSplit", "ResultRow", "ResultTable", "as_embedding",
    "default_classifier", "default_edge_classifier", "edge_features", "embedding_rows",
    "evaluate_link_prediction", "evaluate_node_classification", "make_link_split",
    "read_node_labels", "sample_non_edges", "split_indices", "top_k_predictions",
]
