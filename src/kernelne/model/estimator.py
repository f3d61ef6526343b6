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


#: seed of the random projections that identify a matrix row (:func:`row_signatures`)
SIGNATURE_SEED = 0x6B6E65


def row_signatures(matrix: Any) -> np.ndarray:
    """Two fixed random projections of each row of a matrix, shape ``(rows, 2)``.

    Equal rows give equal signatures bit for bit (the entries are summed in column order);
    different rows coincide with probability zero. :meth:`EmbeddingEstimator.transform`
    finds the fitted nodes among the rows it is given with them.
    """
    X = sp.csr_matrix(matrix, dtype=np.float64)
    X.sum_duplicates()  # one entry per column, in column order
    X.eliminate_zeros()
    projection = np.random.default_rng(SIGNATURE_SEED).standard_normal((X.shape[1], 2))
    return np.asarray(X @ projection)


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


class EmbeddingEstimator(TransformerMixin, BaseEstimator):
    """``fit(graph)`` sets ``embedding_`` (n x d) and ``nodes_``; the rest comes from here.

    The input ``X`` of ``fit`` is a graph: a path, a :class:`~kernelne.graphs.graph.Graph`, a
    networkx or igraph graph, a pandas or pyarrow edge table (two or three columns, or named
    ``source``/``target``), an object with an ``edge_index`` (PyG), or a square non-negative
    adjacency matrix (dense, scipy sparse, or a square DataFrame of four or more float
    columns without those names, as :func:`~kernelne.graphs.graph.load_graph` reads it), as
    :class:`sklearn.manifold.SpectralEmbedding` with ``affinity="precomputed"`` takes it.
    ``transform`` returns the fitted rows (``X`` optional) or embeds rows of edge weights to
    the fitted nodes; ``set_output(transform="pandas")`` makes it return a DataFrame whose
    columns are :meth:`get_feature_names_out` and, for the fitted rows (``fit_transform``,
    ``transform`` of nothing or of a graph), whose index is ``nodes_``, whatever the input.
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
        self.__dict__.pop("_row_signatures", None)
        if is_matrix_input(X):
            X = validate_data(self, X, accept_sparse=("csr", "csc", "coo"),
                              ensure_non_negative=True, ensure_min_samples=2)
            if X.shape[0] != X.shape[1]:
                raise InputError(f"X must be a square adjacency matrix (n x n), got shape "
                                 f"{X.shape}")
            self._row_signatures = row_signatures(X)  # transform finds the fitted rows by them
            return load_graph(X)
        # a partitioned fit maps a graph .npz (its driver holds no copy of the edges)
        parts = getattr(self, "partitions", 1)
        g = load_graph(X, mapped=isinstance(parts, (int, np.integer)) and parts > 1)
        self.n_features_in_ = g.n_nodes
        return g

    def transform(self, X: Any = None) -> np.ndarray:
        """The learned embedding of the fitted graph's nodes, or of rows of edge weights.

        Parameters
        ----------
        X : None, Graph or array-like of shape (m, n), optional
            ``None`` or a graph: the fitted rows, ``embedding_``. A matrix: row ``j`` holds
            the edge weights of one node to the ``n_nodes`` fitted nodes (columns in the order
            of ``nodes_``). For a model fitted on a matrix, a row equal to a fitted node's row
            of that matrix gives that node's embedding (the mean, if several fitted nodes have
            the same row), so the fitted matrix, any subset or reordering of its rows give the
            fitted rows; any other row (a new node) gives the weighted mean of its
            neighbours' rows (zeros for a row without edges). A model fitted on a graph
            object or a file knows no matrix rows: its ``n_nodes x n_nodes`` adjacency matrix
            gives ``embedding_``, other matrices the weighted mean of neighbours.
            :meth:`KernelNE.partial_fit` learns the rows of new nodes instead.

        Returns
        -------
        ndarray of shape (n, dim) or (m, dim)
            ``embedding_`` (row ``i`` belonging to ``nodes_[i]``), or one row per row of
            ``X``; a DataFrame with :meth:`get_feature_names_out` as columns after
            ``set_output(transform="pandas")`` (indexed by ``nodes_`` for the fitted rows,
            by ``X``'s index for the rows of a DataFrame matrix).

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        ValueError
            If ``X`` is a matrix whose column count is not the fitted node count, or has a
            negative, NaN or infinite entry.

        Examples
        --------
        >>> import numpy as np
        >>> from kernelne import KernelNE
        >>> A = np.array([[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 1], [0, 0, 1, 0]])
        >>> model = KernelNE(dim=4, walks_per_node=5, workers=1, random_state=0).fit(A)
        >>> bool((model.transform(A[[3, 1]]) == model.embedding_[[3, 1]]).all())
        True
        >>> new = model.transform([[1, 0, 0, 1]])  # a new node linked to nodes 0 and 3
        >>> bool(np.allclose(new, model.embedding_[[0, 3]].mean(axis=0)))
        True
        """
        check_is_fitted(self, "embedding_")
        if not is_matrix_input(X):
            return self._fitted_rows()
        X = validate_data(self, X, reset=False, accept_sparse=("csr", "csc", "coo"),
                          ensure_non_negative=True)
        n = len(self.embedding_)
        fitted = self.__dict__.get("_row_signatures")
        if fitted is None or len(fitted) != n:
            if X.shape[0] == n:
                return self.embedding_
            return self._neighbour_mean(X)
        signatures = row_signatures(X)
        if signatures.shape == fitted.shape and np.array_equal(signatures, fitted):
            return self.embedding_
        rows: dict[bytes, list[int]] = {}
        for i, key in enumerate(map(bytes, fitted)):
            rows.setdefault(key, []).append(i)
        out = self._neighbour_mean(X)
        for j, key in enumerate(map(bytes, signatures)):
            if key in rows:
                out[j] = self.embedding_[rows[key]].mean(axis=0)
        return out

    def _neighbour_mean(self, X: Any) -> np.ndarray:
        """Each row's weighted mean of the fitted rows it has edges to (zeros without)."""
        W = sp.csr_matrix(X, dtype=np.float64)
        degree = np.asarray(W.sum(axis=1)).ravel()
        out = np.asarray(W @ self.embedding_.astype(np.float64))
        out[degree > 0] /= degree[degree > 0, None]
        return out.astype(self.embedding_.dtype)

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """The names of the embedding's columns: the class name, lower case, and the index.

        Parameters
        ----------
        input_features : array-like of str, optional
            Ignored (the columns are learned dimensions, not functions of input columns).

        Returns
        -------
        ndarray of str, shape (dim,)
            ``["kernelne0", "kernelne1", ...]`` for :class:`KernelNE`; the columns of
            ``transform``'s DataFrame after ``set_output(transform="pandas")``.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.

        Examples
        --------
        >>> from kernelne import KernelNE, load_dataset
        >>> model = KernelNE(dim=3, walks_per_node=5, workers=1, random_state=0)
        >>> model.fit(load_dataset("karate").graph).get_feature_names_out().tolist()
        ['kernelne0', 'kernelne1', 'kernelne2']
        >>> model.set_output(transform="pandas").transform().shape  # doctest: +SKIP
        (34, 3)

        (The last line needs pandas, which kernelne does not install.)
        """
        check_is_fitted(self, "embedding_")
        prefix = type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self.embedding_.shape[1])],
                          dtype=object)

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
            ``fit(X, y, **fit_params).embedding_``; after ``set_output(transform="pandas")``
            a DataFrame of it indexed by ``nodes_`` (named ``node``) for a graph (an edge
            table, networkx, igraph, ``edge_index``, a path), by ``X``'s own index for a
            DataFrame adjacency matrix (its rows are the nodes).

        Raises
        ------
        InputError
            ``X`` cannot be read as a graph.
        ValueError
            A setting out of range, or an invalid adjacency matrix.

        Examples
        --------
        >>> from kernelne import KernelNE, load_dataset
        >>> model = KernelNE(dim=8, walks_per_node=5, workers=1, random_state=0)
        >>> model.fit_transform(load_dataset("karate").graph).shape
        (34, 8)
        """
        self.fit(X, y, **fit_params)
        return self.embedding_ if is_matrix_input(X) else self._fitted_rows()

    def _fitted_rows(self) -> Any:
        """``embedding_``; with ``set_output(transform="pandas")``, a DataFrame of it whose
        index is ``nodes_`` (scikit-learn's wrapper keeps a DataFrame's index, where it would
        give an ndarray the index of a DataFrame input: an edge table's rows, not nodes)."""
        from sklearn.utils._set_output import _get_output_config

        if _get_output_config("transform", self)["dense"] != "pandas":
            return self.embedding_
        import pandas as pd

        return pd.DataFrame(self.embedding_, index=pd.Index(self.nodes_, name="node"),
                            columns=self.get_feature_names_out(), copy=False)

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

        Examples
        --------
        >>> from kernelne import KernelNE, load_dataset
        >>> model = KernelNE(dim=8, walks_per_node=5, workers=1, random_state=0)
        >>> model.fit(load_dataset("karate").graph).save("karate.txt")  # word2vec text
        >>> vectors, nodes = KernelNE.load("karate.txt")
        >>> vectors.shape, nodes[:3].tolist()
        ((34, 8), [0, 1, 2])
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

        Raises
        ------
        InputError
            The file cannot be read as an embedding.

        Examples
        --------
        >>> from kernelne import KernelNE, load_dataset
        >>> model = KernelNE(dim=8, walks_per_node=5, workers=1, random_state=0)
        >>> model.fit(load_dataset("karate").graph).save("karate.npy")
        >>> vectors, nodes = KernelNE.load("karate.npy")
        >>> bool((vectors == model.embedding_).all())
        True
        """
        return load_embedding(path)


def _transform_with_optional_x(wrapped):
    """scikit-learn's ``set_output`` wrapper takes ``X`` positionally; ``transform()`` (the
    fitted rows) stays callable without it."""
    import functools

    @functools.wraps(wrapped)
    def transform(self, X: Any = None) -> np.ndarray:
        return wrapped(self, X)

    return transform


EmbeddingEstimator.transform = _transform_with_optional_x(EmbeddingEstimator.transform)
