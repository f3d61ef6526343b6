"""What every embedding estimator shares (KernelNE and the baselines), scikit-learn style."""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from kernelne.embedding_io import load_embedding, save_embedding
from kernelne.errors import InputError
from kernelne.graphs.ecosystem import is_ecosystem_graph
from kernelne.graphs.graph import Graph, load_graph


def is_matrix_input(X: Any) -> bool:
    """Whether ``X`` is an adjacency matrix (scipy sparse, an array or anything with
    ``__array__``, nested lists) rather than a graph object (:class:`~kernelne.graphs.graph.Graph`,
    networkx, igraph, an edge table, an ``edge_index`` holder) or a path."""
    if isinstance(X, (Graph, str, Path)) or (hasattr(X, "adj") and hasattr(X, "is_directed")):
        return False
    if is_ecosystem_graph(X):  # an edge table, an igraph graph, an edge_index holder
        return False
    return sp.issparse(X) or hasattr(X, "__array__") or isinstance(X, (list, tuple))


def check_int_params(estimator: Any, minimums: dict[str, int],
                     optional: Iterable[str] = ()) -> None:
    """Raise ``ValueError`` naming the parameter unless each of ``minimums`` is an integer
    (``numbers.Integral``, not a bool) of at least its minimum; ``optional`` names may also be
    ``None``."""
    optional = set(optional)
    for name, low in minimums.items():
        value = getattr(estimator, name)
        if value is None and name in optional:
            continue
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        if value < low:
            raise ValueError(f"{name} must be at least {low}, got {value!r}")


def check_workers(estimator: Any) -> None:
    """``workers`` must be ``None``, ``-1`` (both: every core) or an integer >= 1."""
    workers = estimator.workers
    if not (isinstance(workers, numbers.Integral) and not isinstance(workers, (bool, np.bool_))
            and workers == -1):
        check_int_params(estimator, {"workers": 1}, optional=("workers",))


class EmbeddingEstimator(TransformerMixin, BaseEstimator, auto_wrap_output_keys=None):
    """``fit(graph)`` sets ``embedding_`` (n x d) and ``nodes_``; the rest comes from here.

    The input ``X`` of ``fit`` is a graph: a path, a :class:`~kernelne.graphs.graph.Graph`, a
    networkx or igraph graph, a pandas or pyarrow edge table (two or three columns, or named
    ``source``/``target``), an object with an ``edge_index`` (PyG), or a square non-negative
    adjacency matrix (dense or scipy sparse), as
    :class:`sklearn.manifold.SpectralEmbedding` with ``affinity="precomputed"`` takes it.
    ``transform`` is not wrapped by ``set_output``: it returns the embedding, ``X`` optional.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = True  # X is an n x n adjacency matrix
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        tags.target_tags.required = False
        tags.transformer_tags.preserves_dtype = []  # the embedding is float32 whatever X is
        return tags

    def _fit_graph(self, X: Any) -> Graph:
        """The graph ``fit`` learns from; an adjacency matrix is validated the scikit-learn
        way (finite, non-negative, numeric, at least two nodes, square). Sets
        ``n_features_in_`` (the number of nodes)."""
        if is_matrix_input(X):
            X = validate_data(self, X, accept_sparse=("csr", "csc", "coo"),
                              ensure_non_negative=True, ensure_min_samples=2)
            if X.shape[0] != X.shape[1]:
                raise InputError(f"X must be a square adjacency matrix (n x n), got shape "
                                 f"{X.shape}")
            return load_graph(X)
        g = load_graph(X)
        self.n_features_in_ = g.n_nodes
        return g

    def transform(self, X: Any = None) -> np.ndarray:
        """The learned embedding of the fitted graph's nodes.

        Parameters
        ----------
        X : None, Graph or array-like, optional
            Ignored if ``None`` or a graph: embeddings exist only for the fitted graph. The
            fitted ``n x n`` adjacency matrix is accepted (its shape is checked); new samples
            cannot be embedded (:meth:`KernelNE.partial_fit` adds new nodes).

        Returns
        -------
        ndarray of shape (n_nodes, dim)
            ``embedding_``, row ``i`` belonging to ``nodes_[i]``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        ValueError
            If ``X`` is a matrix of another shape than the fitted graph's.
        """
        check_is_fitted(self, "embedding_")
        if is_matrix_input(X):
            X = validate_data(self, X, reset=False, accept_sparse=("csr", "csc", "coo"),
                              ensure_non_negative=True)
            if X.shape[0] != len(self.embedding_):
                raise ValueError(f"transform returns the fitted graph's embedding: X must be "
                                 f"its {len(self.embedding_)} x {len(self.embedding_)} "
                                 f"adjacency matrix, got shape {X.shape}")
        return self.embedding_

    def fit_transform(self, X: Any, y: Any = None, **fit_params) -> np.ndarray:
        """Fit on graph ``X`` and return the embedding.

        Parameters
        ----------
        X : Graph, path, networkx graph, sparse matrix or array-like
            The graph (any source :func:`kernelne.load_graph` takes, or a square non-negative
            adjacency matrix).
        y : array-like, optional
            Passed to ``fit`` (labels, where the estimator uses them).
        **fit_params
            Passed to ``fit`` (e.g. ``client``, ``monitor``).

        Returns
        -------
        ndarray of shape (n_nodes, dim)
            ``fit(X, y, **fit_params).embedding_``.
        """
        return self.fit(X, y, **fit_params).embedding_

    def save(self, path: str | Path) -> None:
        """Write the embedding (rows and node ids) in the format the suffix names.

        Parameters
        ----------
        path : str or Path
            The output file: ``.npz`` (rows and ids in one archive), ``.npy`` (ids in a
            ``.nodes.txt`` sidecar where they are not ``0..n-1``), ``.parquet`` (a ``node``
            column and ``dim_*`` columns) or word2vec text (``.txt``, ``.emb``, ``.vec``,
            ``.w2v``); see :func:`kernelne.save_embedding`.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        InputError
            A suffix that names no embedding format, or a failed write.
        """
        check_is_fitted(self, "embedding_")
        save_embedding(path, self.embedding_, self.nodes_)

    @staticmethod
    def load(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
        """Read an embedding file back.

        Parameters
        ----------
        path : str or Path
            A file written by :meth:`save` (or :func:`kernelne.save_embedding`).

        Returns
        -------
        vectors : ndarray of shape (n, dim)
            The embedding rows.
        nodes : ndarray
            The node id of each row.
        """
        return load_embedding(path)
