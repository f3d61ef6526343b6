"""Random walks on a CSR graph: uniform (DeepWalk) and node2vec's second-order walks.

node2vec (Grover & Leskovec 2016) moves from ``v`` (having come from ``t``) to a neighbour
``x`` with probability proportional to ``alpha(t, x) * w(v, x)``, where ``alpha = 1/p`` if
``x = t``, ``1`` if ``x`` is a neighbour of ``t`` and ``1/q`` otherwise. Instead of node2vec's
per-edge alias tables (memory O(sum of squared degrees)) the walks sample by rejection, as
KnightKing (Yang et al. 2019) does: draw ``x`` from the first-order distribution ``w(v, .)``
and accept it with probability ``alpha(t, x) / max(1/p, 1, 1/q)``; "is ``x`` a neighbour of
``t``" is a binary search in ``t``'s sorted neighbour list. Memory is O(n + m).

Walk ``i`` of a corpus starts at ``perm_r[i mod n]`` where ``r = i div n`` is its round and
``perm_r`` a permutation of the nodes drawn from ``(seed, r)``; its random numbers come from a
generator seeded by ``(seed, i)``. The corpus is therefore the same whatever the number of
threads or the chunking. A walk stops early at a node without out-neighbours (only possible in
directed graphs, or at an isolated node); the rest of its row is ``-1``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
from numba import njit, prange

from kernelne.engine.sampling import rand_below, rand_float, seed_to_uint64, stream_state
from kernelne.graphs.csr import row_windows
from kernelne.graphs.graph import Graph
from kernelne.parallel import numba_threads


@njit(inline="always")
def _has_edge(indptr, indices, t, x):
    lo = indptr[t]
    hi = indptr[t + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        y = indices[mid]
        if y < x:
            lo = mid + 1
        elif y > x:
            hi = mid
        else:
            return True
    return False


@njit(inline="always")
def _first_order_step(indptr, indices, cumw, v, state):
    lo = indptr[v]
    deg = indptr[v + 1] - lo
    if cumw.shape[0] == 0:
        state, k = rand_below(state, deg)
        return state, indices[lo + k]
    state, r = rand_float(state)
    target = r * cumw[lo + deg - 1]
    a = lo
    b = lo + deg - 1
    while a < b:  # first position whose cumulative weight exceeds target
        mid = (a + b) >> 1
        if cumw[mid] > target:
            b = mid
        else:
            a = mid + 1
    return state, indices[a]


@njit(parallel=True, cache=True)
def _walk_chunk(indptr, indices, cumw, starts, first_id, length, inv_p, inv_q, seed, out):
    """Fill ``out[i]`` with walk ``first_id + i`` starting at ``starts[i]``."""
    second_order = inv_p != 1.0 or inv_q != 1.0
    amax = max(inv_p, 1.0, inv_q)
    for i in prange(starts.shape[0]):
        state = stream_state(seed, np.uint64(first_id + i))
        row = out[i]
        v = starts[i]
        row[0] = v
        prev = -1
        for step in range(1, length):
            if indptr[v + 1] == indptr[v]:
                for s in range(step, length):
                    row[s] = -1
                break
            state, x = _first_order_step(indptr, indices, cumw, v, state)
            if second_order and prev >= 0:
                while True:
                    if x == prev:
                        a = inv_p
                    elif _has_edge(indptr, indices, prev, x):
                        a = 1.0
                    else:
                        a = inv_q
                    state, r = rand_float(state)
                    if r * amax < a:
                        break
                    state, x = _first_order_step(indptr, indices, cumw, v, state)
            row[step] = x
            prev = v
            v = x


@njit(cache=True)
def count_visits(walks: np.ndarray, counts: np.ndarray) -> None:
    """Add every node's number of occurrences in ``walks`` (``-1`` padding skipped) to
    ``counts``: the unigram counts of the corpus, without a length-n temporary per chunk."""
    for w in walks.ravel():
        if w >= 0:
            counts[w] += 1


def cumulative_weights(graph: Graph) -> np.ndarray:
    """Per-row cumulative edge weights (float64; empty for an unweighted graph): entry ``e``
    of row ``v`` is ``S_{e+1} - S_{indptr[v]}``, ``S_k = w_0 + ... + w_{k-1}`` the running
    sum over all the edges in float64, in one pass with no temporary."""
    if graph.weights is None:
        return np.empty(0, dtype=np.float64)
    indptr, _, weights = graph.csr_arrays()
    out = np.empty(len(weights), dtype=np.float64)
    _row_cumulative(indptr, weights, out, 0.0)
    return out


def cumulative_weight_windows(graph: Graph, max_edges: int) -> Iterator[np.ndarray]:
    """:func:`cumulative_weights` a window of rows at a time (at most ``max_edges`` edges,
    or one row): the same values in the same order, the running sum carried from window to
    window, each window's weights read where they lie (a graph file's edges, never whole)."""
    running = 0.0
    for lo, hi in row_windows(graph.indptr, max_edges):
        a, b = int(graph.indptr[lo]), int(graph.indptr[hi])
        out = np.empty(b - a, dtype=np.float64)
        running = _row_cumulative(np.asarray(graph.indptr[lo:hi + 1]) - a,
                                  graph.weights[a:b], out, running)
        yield out


@njit(cache=True)
def _row_cumulative(indptr, weights, out, running):
    for v in range(len(indptr) - 1):
        start = running
        for e in range(indptr[v], indptr[v + 1]):
            running += np.float64(weights[e])
            out[e] = running - start
    return running


def round_permutation(n_nodes: int, seed: np.uint64, r: int) -> np.ndarray:
    """The start nodes of round ``r`` (walks ``r n .. r n + n - 1``): a seeded permutation."""
    return np.random.default_rng([int(seed), r]).permutation(n_nodes).astype(np.int32)


_local = threading.local()  # a thread's last round permutation


def round_permutations(seed: int, n_nodes: int) -> dict:
    """This thread's cache of the last round permutation (:func:`round_permutation`) of a
    corpus, for :func:`walk_starts`'s ``perms`` (a worker thread of a partitioned fit)."""
    if getattr(_local, "key", None) != (seed, n_nodes):
        _local.key, _local.perms = (seed, n_nodes), {}
    return _local.perms


def walk_starts(
    n_nodes: int, first: int, stop: int, seed: np.uint64, perms: dict | None = None
) -> np.ndarray:
    """Start nodes of walks ``first..stop-1``: each round of n walks is a seeded permutation.

    ``perms``, if given, caches the last round's permutation (so that a million-node graph
    does not draw a permutation of all nodes for every chunk).
    """
    out = np.empty(stop - first, dtype=np.int32)
    i = first
    while i < stop:
        r, j = divmod(i, n_nodes)
        take = min(n_nodes - j, stop - i)
        if perms is None:
            perm = round_permutation(n_nodes, seed, r)
        else:
            if r not in perms:
                perms.clear()
                perms[r] = round_permutation(n_nodes, seed, r)
            perm = perms[r]
        out[i - first : i - first + take] = perm[j : j + take]
        i += take
    return out


#: the walk steps of one chunk beyond which long walks make chunks of fewer walks: about
#: 1 s of training at the default window, so that Ctrl-C (seen between two chunks, not inside
#: a compiled call) stops a fit with ``walk_length = 100000`` within about a second
CHUNK_STEPS = 1 << 17


def chunk_size(chunk_walks: int, walk_length: int) -> int:
    """The walks per chunk: ``chunk_walks``, fewer if they would exceed :data:`CHUNK_STEPS`
    steps, but at least one per numba thread (each thread then trains about one walk)."""
    from numba import get_num_threads

    cap = max(get_num_threads(), CHUNK_STEPS // max(int(walk_length), 1))
    return max(1, min(int(chunk_walks), cap))


class WalkCorpus:
    """The walks of one corpus, produced chunk by chunk (nothing else is kept in memory).

    Walk ``i`` starts at ``perm_r[i mod n]``, ``r = i div n`` its round and ``perm_r`` a
    permutation of the nodes drawn from ``(seed, r)``; its random numbers come from a generator
    seeded by ``(seed, i)``, so the corpus is the same whatever the number of threads or the
    chunking. A walk stops early at a node without out-neighbours; the rest of its row is
    ``-1``. Iterating yields ``(first_walk_id, walks)`` chunk by chunk.

    Parameters
    ----------
    graph : Graph
        The graph to walk on (weighted graphs: steps proportional to the edge weight).
    walks_per_node : int, default 80
        Walks from every start node (at least 1).
    walk_length : int, default 10
        Nodes per walk (at least 1).
    p : float, default 1.0
        node2vec's return parameter (> 0; ``p = q = 1``: uniform walks).
    q : float, default 1.0
        node2vec's in-out parameter (> 0).
    seed : int, optional
        Seed of the start permutations and of every walk's generator.
    chunk_walks : int, default 8192
        Walks per chunk of the iteration; fewer for long walks (:func:`chunk_size`), so that
        a chunk stays short enough for Ctrl-C to be seen within about a second.
    starts : ndarray, optional
        Dense ids that limit the walks to those start nodes: each round is then a seeded
        permutation of ``starts`` instead of all nodes.

    Raises
    ------
    ValueError
        ``walks_per_node`` or ``walk_length`` below 1, or ``p``, ``q`` not positive.

    Examples
    --------
    >>> from kernelne import Graph, WalkCorpus
    >>> corpus = WalkCorpus(Graph.from_edges([0, 1, 2], [1, 2, 0]), 2, 5, seed=0)
    >>> corpus.n_walks, corpus.chunk(0, 2).shape
    (6, (2, 5))
    """

    def __init__(
        self,
        graph: Graph,
        walks_per_node: int = 80,
        walk_length: int = 10,
        p: float = 1.0,
        q: float = 1.0,
        seed: int | None = None,
        chunk_walks: int = 8192,
        starts: np.ndarray | None = None,
    ):
        if walks_per_node < 1 or walk_length < 1:
            raise ValueError("walks_per_node and walk_length must be at least 1")
        if p <= 0 or q <= 0:
            raise ValueError(f"p and q must be positive, got p={p}, q={q}")
        self.graph = graph
        self.walks_per_node = int(walks_per_node)
        self.walk_length = int(walk_length)
        self.p, self.q = float(p), float(q)
        self.seed = seed_to_uint64(seed)
        self.chunk_walks = chunk_size(chunk_walks, self.walk_length)
        self._cumulative: np.ndarray | None = None
        self._perms: dict[int, np.ndarray] = {}
        self.starts = None if starts is None else np.asarray(starts, dtype=np.int32)

    @property
    def _cumw(self) -> np.ndarray:
        """The graph's :func:`cumulative_weights`, made when a walk first needs them (a
        partitioned fit whose workers walk never does)."""
        if self._cumulative is None:
            self._cumulative = cumulative_weights(self.graph)
        return self._cumulative

    @property
    def n_starts(self) -> int:
        """Number of start nodes (all nodes, or ``len(starts)``)."""
        return self.graph.n_nodes if self.starts is None else len(self.starts)

    @property
    def n_walks(self) -> int:
        """Walks in the corpus: ``walks_per_node`` times the number of start nodes."""
        return self.walks_per_node * self.n_starts

    @property
    def n_chunks(self) -> int:
        """Chunks of ``chunk_walks`` walks (the last may be shorter)."""
        return -(-self.n_walks // self.chunk_walks)

    def chunk(self, first: int, stop: int, out: np.ndarray | None = None) -> np.ndarray:
        """Walks ``first..stop-1`` of the corpus.

        Parameters
        ----------
        first : int
            Id of the first walk.
        stop : int
            One past the id of the last walk.
        out : ndarray of shape (stop - first, walk_length), int32, optional
            Where to write them (C-contiguous); a new array if None.

        Returns
        -------
        ndarray of shape (stop - first, walk_length), int32
            One walk of dense ids per row, ``-1`` after an early stop.
        """
        g = self.graph
        starts = walk_starts(self.n_starts, first, stop, self.seed, self._perms)
        if self.starts is not None:
            starts = self.starts[starts]
        if out is None:
            out = np.empty((len(starts), self.walk_length), dtype=np.int32)
        indptr, indices, _ = g.csr_arrays()
        _walk_chunk(
            indptr, indices, self._cumw, starts, first, self.walk_length,
            1.0 / self.p, 1.0 / self.q, self.seed, out,
        )
        return out

    def bounds(self) -> Iterator[tuple[int, int]]:
        """Yield each chunk's ``(first, stop)`` walk ids, in order."""
        for first in range(0, self.n_walks, self.chunk_walks):
            yield first, min(first + self.chunk_walks, self.n_walks)

    def __iter__(self) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(first_walk_id, walks)`` chunk by chunk."""
        for first, stop in self.bounds():
            yield first, self.chunk(first, stop)


def random_walks(
    graph: Graph,
    walks_per_node: int = 80,
    walk_length: int = 10,
    p: float = 1.0,
    q: float = 1.0,
    seed: int | None = None,
    workers: int | None = None,
) -> np.ndarray:
    """The whole walk corpus as one array.

    node2vec's walks (Grover & Leskovec 2016), sampled by rejection (KnightKing) in O(n + m)
    memory; see :class:`WalkCorpus` for the seeding and the early stops.

    Parameters
    ----------
    graph : Graph
        The graph to walk on.
    walks_per_node : int, default 80
        Walks from every node.
    walk_length : int, default 10
        Nodes per walk.
    p : float, default 1.0
        node2vec's return parameter (``p = q = 1``: uniform walks, DeepWalk's).
    q : float, default 1.0
        node2vec's in-out parameter.
    seed : int, optional
        Seed; the corpus does not depend on ``workers``.
    workers : int, optional
        Threads; None uses all cores.

    Returns
    -------
    ndarray of shape (walks_per_node * n_nodes, walk_length), int32
        One walk of dense ids per row, ``-1`` after an early stop.

    Examples
    --------
    >>> from kernelne import Graph, random_walks
    >>> random_walks(Graph.from_edges([0, 1, 2], [1, 2, 0]), 2, 4, seed=1).shape
    (6, 4)
    """
    corpus = WalkCorpus(graph, walks_per_node, walk_length, p, q, seed, chunk_walks=1 << 30)
    with numba_threads(workers):
        return corpus.chunk(0, corpus.n_walks)
