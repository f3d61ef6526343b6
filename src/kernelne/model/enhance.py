"""ProNE's spectral propagation of any embedding, from any tool, over its graph.

:func:`propagate` matches the embedding's rows to the graph's nodes by id and runs
:func:`kernelne.engine.propagation.propagate_rows` (the filter ``Â (R - g(L) R)``, then the thin
SVD's ``U sqrt(Σ)`` with unit rows), as ProNE's authors offer their enhancement for the
embeddings of other methods. ``kernelne propagate EMB GRAPH -o OUT`` is its command.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kernelne.engine.propagation import Propagation, parse_propagation, propagate_rows
from kernelne.errors import InputError
from kernelne.evaluation.embeddings import as_embedding
from kernelne.graphs.graph import Graph, load_graph
from kernelne.parallel import numba_threads

_SHOW = 5


def propagate(graph: Any, embedding: Any, settings: Any = True,
              workers: int | None = None) -> np.ndarray:
    """Spectrally propagate the rows of an embedding over its graph (ProNE's enhancement).

    With ``Â = I + A`` (``A`` symmetrised, weights kept), ``L = I - D^{-1} Â`` and the
    band-pass filter ``g(λ) = exp(-θ/2 ((λ - μ)^2 - 2))`` applied by its Chebyshev expansion
    of order ``K``, the result is ``U sqrt(Σ)`` of the thin SVD of ``Â (R - g(L) R)``, each
    row scaled to norm 1 (docs/METHOD.md; :mod:`kernelne.engine.propagation`).

    Parameters
    ----------
    graph : str, Path, Graph or graph object
        Anything :func:`kernelne.load_graph` reads (an edge list, ``.mat``, ``.npz``, a
        networkx, scipy, pandas, igraph or ``edge_index`` object).
    embedding : str, Path, estimator, tuple or array-like
        The rows and their node ids: an embedding file (``.npz``, ``.npy`` with its ids,
        ``.parquet``, word2vec text), a fitted estimator (``embedding_``, ``nodes_``), a
        ``(vectors, nodes)`` pair, or a bare ``n x d`` matrix (ids ``0..n-1``). Ids match the
        graph's by their text form; every node of the graph needs a row and every row a node.
    settings : bool, str or Propagation, default True
        The filter: ``True`` (ProNE's order 10, μ 0.2, θ 0.5) or ``"order=K,mu=M,theta=T"``
        (any of the keys; :func:`~kernelne.engine.propagation.parse_propagation`).
    workers : int, optional
        Threads (None: every core numba may use).

    Returns
    -------
    ndarray of shape (n, d), float32
        The propagated rows, in the embedding's row order.

    Raises
    ------
    InputError
        The embedding's ids and the graph's nodes differ (the first few of each side named),
        the embedding is not an ``n x d`` matrix of finite numbers, or ``settings`` is
        unreadable or off.
    """
    filt = filter_settings(settings)
    g = graph if isinstance(graph, Graph) else load_graph(graph)
    vectors, nodes = as_embedding(embedding, dtype=np.float32)
    return propagated_rows(g, vectors, nodes, filt, workers, source=embedding)


def propagated_rows(g: Graph, vectors: np.ndarray, nodes: np.ndarray, settings: Propagation,
                    workers: int | None = None, source: Any = None) -> np.ndarray:
    """:func:`propagate` on a read graph and embedding (``source``: where the rows came
    from, a path named in the errors)."""
    order = _rows_of_graph_nodes(g, nodes, source)
    same = bool(np.array_equal(order, np.arange(len(order))))
    with numba_threads(workers):
        rows = propagate_rows(g, vectors if same else vectors[order], settings)
    if same:
        return rows
    out = np.empty_like(rows)
    out[order] = rows
    return out


def filter_settings(settings: Any) -> Propagation:
    """The :class:`~kernelne.engine.propagation.Propagation` of ``settings`` (as
    :func:`~kernelne.engine.propagation.parse_propagation` reads it), or :class:`InputError`
    where it is unreadable or off."""
    try:
        filt = parse_propagation(settings)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if filt is None:
        raise InputError(f"propagate: settings {settings!r} turn the propagation off")
    return filt


def _rows_of_graph_nodes(g: Graph, nodes: np.ndarray, source: Any) -> np.ndarray:
    """The embedding's row of each graph node, in the graph's order; refuses ids that do
    not match one to one."""
    index = {str(x): i for i, x in enumerate(nodes)}
    if len(index) != len(nodes):
        raise InputError(f"the embedding names {len(nodes) - len(index):,} node(s) twice",
                         _path(source))
    order = np.fromiter((index.get(str(x), -1) for x in g.nodes), np.int64, g.n_nodes)
    lacking = g.nodes[order < 0]
    extra = len(nodes) - int((order >= 0).sum())
    if len(lacking) or extra:
        parts = []
        if len(lacking):
            parts.append(f"{len(lacking):,} node(s) of the graph have no row "
                         f"({_shown(lacking)})")
        if extra:
            known = {str(x) for x in g.nodes}
            rows_only = np.asarray([x for x in nodes if str(x) not in known], dtype=object)
            parts.append(f"{extra:,} row(s) name no node of the graph ({_shown(rows_only)})")
        raise InputError("the embedding does not match the graph: " + "; ".join(parts)
                         + " (ids match by name)", _path(source))
    return order


def _shown(ids: np.ndarray) -> str:
    more = f" and {len(ids) - _SHOW:,} more" if len(ids) > _SHOW else ""
    return ", ".join(str(x) for x in ids[:_SHOW]) + more


def _path(source: Any) -> Any:
    from pathlib import Path

    return source if isinstance(source, (str, Path)) else None
