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
        """The learned embedding (``X`` is ignored: embeddings exist only for the fitted graph)."""
        if not hasattr(self, "embedding_"):
            raise RuntimeError("call fit() first")
        return self.embedding_

    def fit_transform(self, X: Any, y: Any = None, **fit_params) -> np.ndarray:
        return self.fit(X).embedding_

    def save(self, path: str | Path) -> None:
        """Write the embedding: ``.npy`` or word2vec text format (any other suffix)."""
        save_embedding(path, self.transform(), self.nodes_)

    @staticmethod
    def load(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
        """Read an embedding file back as ``(vectors, nodes)``."""
        return load_embedding(path)
