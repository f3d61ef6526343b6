"""The CSR :class:`Graph`: sorted neighbour lists, optional float32 weights and the user's node
ids; :meth:`Graph.from_edges` builds one from an edge array. The readers that make one from a
file or another library's graph are in :mod:`kernelne.graphs.graph`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from kernelne.errors import InputError

# edge weights are stored as float32: each must be a normal float32 (not inf, 0 or subnormal)
WEIGHT_MIN = float(np.finfo(np.float32).tiny)
WEIGHT_MAX = float(np.finfo(np.float32).max)
WEIGHT_RANGE = f"{WEIGHT_MIN:.3g} .. {WEIGHT_MAX:.4g}"
COUNT_BLOCK = 1 << 22  # neighbour ids counted at a time (in_degrees)


def row_windows(indptr: np.ndarray, max_edges: int) -> Iterator[tuple[int, int]]:
    """Consecutive windows of rows ``[lo, hi)`` of a CSR, each with at most ``max_edges``
    edges (or one row, if that row alone has more), covering every row in order: the way
    edges too many for one temporary are walked through."""
    n, lo = len(indptr) - 1, 0
    while lo < n:
        hi = max(lo + 1, int(np.searchsorted(indptr, indptr[lo] + max_edges, "right")) - 1)
        hi = min(hi, n)
        yield lo, hi
        lo = hi


def weights_out_of_float32(weights: np.ndarray) -> np.ndarray:
    """Mask of the (positive, finite) weights that float32 cannot hold: they would become inf,
    0 or a subnormal number and change the walks silently."""
    w = np.asarray(weights, dtype=np.float64)
    return (w > WEIGHT_MAX) | (w < WEIGHT_MIN)


@dataclass(eq=False)
class Graph:
    """A graph in CSR form with sorted neighbour lists.

    ``indices[indptr[v]:indptr[v+1]]`` are the (out-)neighbours of ``v`` in increasing order;
    ``weights`` holds the matching edge weights, or is ``None`` for an unweighted graph. An
    undirected graph stores each edge in both directions. Build one with
    :func:`load_graph` or :meth:`from_edges`.

    Parameters
    ----------
    indptr : ndarray of shape (n + 1,)
        Row pointers (int64): the neighbours of ``v`` are ``indices[indptr[v]:indptr[v+1]]``.
    indices : ndarray
        Neighbour dense ids (int32), sorted within each row.
    weights : ndarray or None
        Edge weights (float32) matching ``indices``; None for an unweighted graph.
    nodes : ndarray of shape (n,)
        The user's node id of each dense id ``0..n-1``.
    directed : bool, default False
        Whether edges are arcs; an undirected graph stores each edge in both directions.
    self_loops_dropped : int, default 0
        Self-loops the reader dropped.
    duplicates_dropped : int, default 0
        Duplicate edges the reader dropped.
    duplicates_reweighted : int, default 0
        Of those, the duplicates whose weight differed from the kept (first) edge's.

    Examples
    --------
    >>> from kernelne import Graph
    >>> g = Graph.from_edges([0, 1, 2], [1, 2, 0])
    >>> g.summary()
    '3 nodes, 3 edges (undirected)'
    >>> g.neighbors(0).tolist()
    [1, 2]
    """

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray | None
    nodes: np.ndarray
    directed: bool = False
    self_loops_dropped: int = 0
    duplicates_dropped: int = 0
    #: of the dropped duplicates, those whose weight differs from the kept first one's
    duplicates_reweighted: int = 0
    _index: dict | None = field(default=None, repr=False)

    @property
    def n_nodes(self) -> int:
        """Number of nodes (dense ids ``0..n_nodes-1``)."""
        return len(self.indptr) - 1

    @property
    def n_edges(self) -> int:
        """Number of edges (each undirected edge counted once)."""
        m = len(self.indices)
        return m if self.directed else m // 2

    @property
    def degrees(self) -> np.ndarray:
        """Each node's (out-)degree: the length of its neighbour list."""
        return np.diff(self.indptr)

    @property
    def is_weighted(self) -> bool:
        """Whether the graph has edge weights (``weights`` is not None)."""
        return self.weights is not None

    def csr_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """``(indptr, indices, weights)`` as arrays, for code that needs them whole (a numba
        loop): edges left in a graph file
        (:class:`~kernelne.graphs.file_vector.FileVector`) are memory-mapped read-only."""
        weights = None if self.weights is None else np.asarray(self.weights)
        return np.asarray(self.indptr), np.asarray(self.indices), weights

    def in_degrees(self) -> np.ndarray:
        """Number of in-edges of each node (the degrees, when undirected)."""
        if not self.directed:
            return self.degrees
        counts = np.zeros(self.n_nodes, dtype=np.int64)
        for lo in range(0, len(self.indices), COUNT_BLOCK):  # no int64 copy of the edges
            counts += np.bincount(self.indices[lo:lo + COUNT_BLOCK], minlength=self.n_nodes)
        return counts

    def isolated_nodes(self) -> np.ndarray:
        """Dense ids of nodes without any edge (no out-edge and no in-edge): no walk reaches
        them, so their embedding rows stay at initialisation."""
        return np.flatnonzero((self.degrees == 0) & (self.in_degrees() == 0))

    def sink_nodes(self) -> np.ndarray:
        """Dense ids of the nodes of a directed graph with in-edges but no out-edge: walks stop
        there, so they are trained only as the last node of the walks that reach them."""
        if not self.directed:
            return np.empty(0, dtype=np.int64)
        return np.flatnonzero((self.degrees == 0) & (self.in_degrees() > 0))

    def neighbors(self, v: int) -> np.ndarray:
        """The (out-)neighbours of a node, in increasing order.

        Parameters
        ----------
        v : int
            A dense node id.

        Returns
        -------
        ndarray
            Dense ids of the neighbours of ``v`` (a view of ``indices``).
        """
        return self.indices[self.indptr[v] : self.indptr[v + 1]]

    def adjacency(self) -> sp.csr_matrix:
        """The adjacency (weight) matrix as a scipy CSR matrix."""
        data = self.weights if self.weights is not None else np.ones(len(self.indices), np.float32)
        n = self.n_nodes
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(n, n))

    def edges(self) -> np.ndarray:
        """Edges as an ``(m, 2)`` array of dense ids; undirected edges once, with ``u < v``."""
        src = np.repeat(np.arange(self.n_nodes, dtype=np.int64), self.degrees)
        dst = np.asarray(self.indices, dtype=np.int64)
        if not self.directed:
            keep = src < dst
            src, dst = src[keep], dst[keep]
        return np.column_stack([src, dst])

    def index_of(self, node_id: Any) -> int:
        """Dense id of one of the user's node ids.

        Parameters
        ----------
        node_id : object
            A node id as the user gave it (``3`` and ``np.int64(3)`` are the same id).

        Returns
        -------
        int
            Its dense id.

        Raises
        ------
        KeyError
            If the graph has no such node.
        """
        if self._index is None:
            self._index = {_plain(x): i for i, x in enumerate(self.nodes)}
        return self._index[_plain(node_id)]

    def has_identity_ids(self) -> bool:
        """True when the user's ids are exactly the integers ``0..n-1``."""
        return self.nodes.dtype.kind in "iu" and np.array_equal(
            self.nodes, np.arange(self.n_nodes)
        )

    def summary(self) -> str:
        """One line: node and edge counts, directed or not, weighted or not."""
        kind = "directed" if self.directed else "undirected"
        w = ", weighted" if self.is_weighted else ""
        return f"{self.n_nodes:,} nodes, {self.n_edges:,} edges ({kind}{w})"

    @classmethod
    def from_edges(
        cls,
        src: np.ndarray,
        dst: np.ndarray,
        weights: np.ndarray | None = None,
        n_nodes: int | None = None,
        nodes: np.ndarray | None = None,
        directed: bool = False,
    ) -> Graph:
        """Build a graph from dense-id edge arrays.

        Self-loops are dropped; of duplicate edges (``u v`` and ``v u`` count as the same edge
        when undirected) the first is kept, with its weight. Both are counted on the returned
        graph (``self_loops_dropped``, ``duplicates_dropped``), and so are the dropped
        duplicates whose weight differs from the kept one's (``duplicates_reweighted``).

        Parameters
        ----------
        src, dst : array-like of int
            Dense ids of each edge's ends.
        weights : array-like of float, optional
            Edge weights: positive, finite and within float32's normal range. All 1 (or None):
            an unweighted graph.
        n_nodes : int, optional
            Number of nodes; default the largest id plus 1.
        nodes : ndarray, optional
            The user's id of each dense id; default ``0..n_nodes-1``.
        directed : bool, default False
            Keep edges as arcs instead of symmetrising them.

        Returns
        -------
        Graph
            The graph in CSR form.

        Raises
        ------
        InputError
            A node-id count other than ``n_nodes``, an endpoint outside ``0..n_nodes-1``, or a
            weight that is not a positive finite float32 number.
        """
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        if n_nodes is None:
            n_nodes = int(max(src.max(initial=-1), dst.max(initial=-1)) + 1)
        if nodes is None:
            nodes = np.arange(n_nodes, dtype=np.int64)
        if len(nodes) != n_nodes:
            raise InputError(f"{len(nodes)} node ids given for {n_nodes} nodes")
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n_nodes):
            raise InputError(f"edge endpoint outside 0..{n_nodes - 1}")
        if weights is not None:
            weights = np.asarray(weights, dtype=np.float64)
            if not np.all(np.isfinite(weights)) or np.any(weights <= 0):
                raise InputError("edge weights must be positive finite numbers")
            outside = weights_out_of_float32(weights)
            if outside.any():
                raise InputError(
                    f"edge weight {weights[np.argmax(outside)]:g} is outside the float32 range "
                    f"{WEIGHT_RANGE} the walks use: rescale the weights")
            if np.all(weights == 1.0):
                weights = None

        loops = src == dst
        n_loops = int(loops.sum())
        src, dst = src[~loops], dst[~loops]
        if weights is not None:
            weights = weights[~loops]

        lo, hi = (src, dst) if directed else (np.minimum(src, dst), np.maximum(src, dst))
        if weights is None:  # O(m) counting sort in scipy, duplicates merged
            return cls._from_unweighted(lo, hi, n_nodes, nodes, directed, n_loops)
        _, first, group = np.unique(lo * n_nodes + hi, return_index=True, return_inverse=True)
        n_reweighted = int(np.count_nonzero(weights != weights[first][group.ravel()]))
        del group
        first.sort()
        n_dup = len(lo) - len(first)
        lo, hi = lo[first], hi[first]
        weights = weights[first]

        if directed:
            rows, cols, w = lo, hi, weights
        else:
            rows = np.concatenate([lo, hi])
            cols = np.concatenate([hi, lo])
            w = np.concatenate([weights, weights])
        order = np.lexsort((cols, rows))
        rows, cols = rows[order], cols[order]
        indptr = np.zeros(n_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n_nodes), out=indptr[1:])
        return cls(
            indptr=indptr,
            indices=cols.astype(np.int32),
            weights=w[order].astype(np.float32),
            nodes=np.asarray(nodes),
            directed=directed,
            self_loops_dropped=n_loops,
            duplicates_dropped=n_dup,
            duplicates_reweighted=n_reweighted,
        )


    @classmethod
    def _from_unweighted(cls, lo, hi, n_nodes, nodes, directed, n_loops) -> Graph:
        """CSR of the distinct arcs ``lo -> hi`` (and back, undirected); rows sorted."""
        index = np.int32 if n_nodes < 2**31 - 1 else np.int64
        ones = np.ones(len(lo), dtype=np.int32)
        lo, hi = lo.astype(index), hi.astype(index)
        arcs = sp.coo_matrix((ones, (lo, hi)), shape=(n_nodes, n_nodes)).tocsr()
        m = len(lo)
        del lo, hi, ones
        arcs.sum_duplicates()  # sorts each row, merges repeated arcs
        n_dup = m - arcs.nnz
        if not directed:
            arcs = (arcs + arcs.T).tocsr()
            arcs.sort_indices()
        return cls(
            indptr=arcs.indptr.astype(np.int64), indices=arcs.indices.astype(np.int32),
            weights=None, nodes=np.asarray(nodes), directed=directed,
            self_loops_dropped=n_loops, duplicates_dropped=n_dup,
        )


def _plain(x: Any) -> Any:
    """numpy scalars to Python scalars, so ``index_of(3)`` and ``index_of(np.int64(3))`` agree."""
    return x.item() if isinstance(x, np.generic) else x
