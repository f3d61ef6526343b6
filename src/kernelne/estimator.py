"""What every embedding estimator shares (KernelNE and the baselines), scikit-learn style."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator

from kernelne.embedding_io import load_embedding, save_embedding


class EmbeddingEstimator(BaseEstimator):
    """``fit(graph)`` sets ``embedding_`` (n x d) and ``nodes_``; the rest comes from here."""

    def transform(self, X: Any = None) -> np.ndarray:
        """The learned embedding.

        Parameters
        ----------
        X : object, optional
            Ignored: embeddings exist only for the fitted graph.

        Returns
        -------
        ndarray of shape (n_nodes, dim)
            ``embedding_``, row ``i`` belonging to ``nodes_[i]``.

        Raises
        ------
        RuntimeError
            If the estimator is not fitted.
        """
        if not hasattr(self, "embedding_"):
            raise RuntimeError("call fit() first")
        return self.embedding_

    def fit_transform(self, X: Any, y: Any = None, **fit_params) -> np.ndarray:
        """Fit on graph ``X`` and return the embedding.

        Parameters
        ----------
        X : Graph, path, networkx graph or sparse matrix
            The graph (any source :func:`kernelne.load_graph` takes).
        y : object, optional
            Ignored (the fit is unsupervised).
        **fit_params
            Ignored.

        Returns
        -------
        ndarray of shape (n_nodes, dim)
            ``fit(X).embedding_``.
        """
        return self.fit(X).embedding_

    def save(self, path: str | Path) -> None:
        """Write the embedding: ``.npy`` or word2vec text format (any other suffix).

        Parameters
        ----------
        path : str or Path
            The output file; see :func:`kernelne.save_embedding`.
        """
        save_embedding(path, self.transform(), self.nodes_)

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
