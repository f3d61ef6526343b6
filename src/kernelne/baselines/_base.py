"""What every baseline estimator shares: scikit-learn conventions and the fit bookkeeping."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from kernelne.engine.propagation import (
    check_propagation,
    choose_propagation,
    is_auto,
    propagate_rows,
)
from kernelne.graphs.graph import Graph
from kernelne.model.estimator import EmbeddingEstimator, check_int_params


class BaselineEmbedding(EmbeddingEstimator):
    """Base of the baselines: ``fit(graph)`` times :meth:`_embed` and sets the attributes.

    Subclasses implement ``_embed(graph) -> (n x dim) array``. After ``fit``: ``embedding_``
    (float32, row ``i`` = dense node ``i``), ``nodes_`` (the user's node ids, same order),
    ``fit_seconds_`` (wall time of the fit, graph loading excluded). A subclass whose
    constructor takes ``propagate`` has its rows spectrally propagated after ``_embed``
    (:func:`kernelne.engine.propagation.propagate_rows`; unit rows), inside the timed fit,
    unless it applies it in ``_embed`` itself (``propagates_itself``); ``propagation_`` is the
    propagation applied (None: none) and ``propagation_reason_`` why (``"as given"`` or the
    evidence of ``propagate="auto"``).
    """

    propagates_itself = False

    def _embed(self, graph: Graph) -> np.ndarray:
        raise NotImplementedError

    def _check_dim(self) -> int:
        check_int_params(self, {"dim": 1})
        return int(self.dim)

    def fit(self, graph: Any, y: Any = None) -> BaselineEmbedding:
        """Learn embeddings of ``graph``.

        Parameters
        ----------
        graph : Graph, path, networkx graph or sparse matrix
            Any source :func:`kernelne.load_graph` takes, or a square non-negative
            adjacency matrix (dense or scipy sparse).
        y : object, optional
            Ignored (the fit is unsupervised).

        Returns
        -------
        BaselineEmbedding
            The fitted estimator itself: ``embedding_`` (float32, row ``i`` = dense node
            ``i``), ``nodes_`` and ``fit_seconds_`` are set.

        Raises
        ------
        ValueError
            A setting out of range for this graph (e.g. ``dim`` too large), a setting that is
            not a whole number where one is needed, a bad ``propagate`` setting, or an
            invalid adjacency matrix.
        InputError
            ``graph`` cannot be read.
        """
        g = self._fit_graph(graph)
        spec = False if self.propagates_itself else getattr(self, "propagate", False)
        check_propagation(spec)  # ValueError before the fit if the setting is bad
        if not is_auto(spec) and hasattr(self, "dim"):  # one given on too few nodes: now
            choose_propagation(spec, g, int(self.dim))
        start = time.perf_counter()
        emb = self._embed(g)
        settings, why = choose_propagation(spec, g, emb.shape[1])
        if settings is not None:
            emb = propagate_rows(g, emb, settings)
        emb = np.ascontiguousarray(emb, dtype=np.float32)
        self.fit_seconds_ = time.perf_counter() - start
        if not self.propagates_itself:  # else _embed set them
            self.propagation_, self.propagation_reason_ = settings, why
        self.embedding_ = emb
        self.nodes_ = g.nodes
        return self
