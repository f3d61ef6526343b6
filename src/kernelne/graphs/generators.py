"""Degree-corrected planted-partition graphs with labels, for tests, benchmarks and scale runs.

:func:`planted_partition_sbm` draws the graph from its arguments and seed alone (the same
arguments and seed give the same graph): node weights follow a power law (Pareto with shape
1.5, so a degree exponent of 2.5, minimum 2, capped at ``10 sqrt(n)``), communities are drawn
uniformly, and each of ``1.15 m`` edge draws takes its first end by weight; its second end is,
with probability ``mu``, drawn by weight from the whole graph, else from the first end's
community. Self-loops and duplicates are dropped and at most ``m`` distinct edges kept (so
slightly fewer than ``m`` may result).

From the command line::

    kernelne generate 10000 330000 40 0.6 -o dense --seed 1   # dense.edges, dense.labels
    kernelne generate 10000000 100000000 500 0.5 -o big --npz # big.npz (CSR), big.labels

The draws are made a chunk at a time (the graph does not depend on the chunk), so memory
holds the edges and one chunk's draws; :func:`planted_partition_graph` builds the CSR graph
straight from the sorted edges.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from kernelne.errors import InputError
from kernelne.graphs.graph import Graph

CHUNK_DRAWS = 1 << 22  # edge draws made at a time (the graph does not depend on it)


def planted_partition_sbm(
    n: int, m: int, k: int, mu: float, seed: int = 0, chunk: int = CHUNK_DRAWS,
) -> tuple[np.ndarray, np.ndarray]:
    """A degree-corrected planted-partition graph with its communities.

    Node weights follow a power law (Pareto with shape 1.5, so a degree exponent of 2.5,
    minimum 2, capped at ``10 sqrt(n)``), communities are drawn uniformly, and each of
    ``1.15 m`` edge draws takes its first end by weight; its second end is, with probability
    ``mu``, drawn by weight from the whole graph, else from the first end's community.
    Self-loops and duplicates are dropped and at most ``m`` distinct edges kept.

    Parameters
    ----------
    n : int
        Nodes (at least 2).
    m : int
        Edges, at most (slightly fewer may result); at least 1.
    k : int
        Communities (at least 1).
    mu : float
        The share in ``[0, 1]`` of edge ends drawn from the whole graph (mixing).
    seed : int, default 0
        Seed: the same arguments and seed give the same graph.
    chunk : int, default CHUNK_DRAWS
        Edge draws made at a time; the graph does not depend on it (memory holds the edges
        and one chunk's draws).

    Returns
    -------
    edges : ndarray of shape (E, 2), int64
        Undirected edges ``u < v`` on nodes ``0..n-1``, no loops or duplicates, shuffled.
    communities : ndarray of shape (n,)
        Each node's community in ``0..k-1``.

    Raises
    ------
    InputError
        ``n < 2``, ``m < 1``, ``k < 1`` or ``mu`` outside ``[0, 1]``.

    Examples
    --------
    >>> from kernelne.graphs.generators import planted_partition_sbm
    >>> edges, communities = planted_partition_sbm(300, 1500, 4, 0.3, seed=1)
    >>> edges.shape[1], communities.shape, int(communities.max()) <= 3
    (2, (300,), True)
    """
    keys, comm, rng = _sorted_edge_keys(n, m, k, mu, seed, chunk)
    rng.shuffle(keys)
    return np.column_stack([keys // n, keys % n]), comm


def _check(n: int, m: int, k: int, mu: float) -> None:
    if n < 2 or m < 1 or k < 1:
        raise InputError(f"need n >= 2, m >= 1 and k >= 1, got n={n}, m={m}, k={k}")
    if k > n:
        raise InputError(f"k={k} communities for n={n} nodes: need k <= n (a community "
                         "needs a node)")
    if not 0 <= mu <= 1:
        raise InputError(f"mu must lie in [0, 1], got {mu}")


def _ahead(rng: np.random.Generator, steps: int) -> np.random.Generator:
    """A generator whose doubles are those of ``rng`` after ``steps`` doubles (one 64-bit
    draw each); ``rng`` itself is left as it is."""
    bits = type(rng.bit_generator)()
    bits.state = rng.bit_generator.state
    bits.advance(steps)
    return np.random.Generator(bits)


def _skip(rng: np.random.Generator, steps: int) -> None:
    """Move ``rng`` past ``steps`` doubles, keeping its buffered 32-bit half (which doubles
    leave alone and ``advance`` clears)."""
    state = rng.bit_generator.state
    rng.bit_generator.advance(steps)
    moved = rng.bit_generator.state
    moved["has_uint32"], moved["uinteger"] = state["has_uint32"], state["uinteger"]
    rng.bit_generator.state = moved


def _sorted_edge_keys(n: int, m: int, k: int, mu: float, seed: int, chunk: int,
                      ) -> tuple[np.ndarray, np.ndarray, np.random.Generator]:
    """The distinct edges as sorted keys ``u n + v`` (``u < v``), the communities, and the
    generator as it stands after the draws (it shuffles the edges).

    The draws come in the order of one pass over all of them (the first ends, the mixing
    coins, the global second ends, the community second ends), each read ``chunk`` draws at
    a time from its own place in the stream: the keys are the same for every ``chunk``, and
    memory holds the keys and one chunk's draws."""
    _check(n, m, k, mu)
    rng = np.random.default_rng(seed)
    theta = (rng.pareto(1.5, n) + 1.0) * 2.0
    theta = np.minimum(theta, np.sqrt(n) * 10)
    comm = rng.integers(0, k, n)
    order = np.argsort(comm, kind="stable")
    starts = np.searchsorted(comm[order], np.arange(k + 1))
    cum = np.cumsum(theta[order])  # cumulative weights over the community-sorted node order
    draws = int(m * 1.15)
    cdf = np.cumsum(theta / theta.sum())  # by weight over all nodes (Generator.choice's way)
    cdf /= cdf[-1]
    del theta
    coins = _ahead(rng, draws)
    n_inter = sum(int(np.count_nonzero(coins.random(min(chunk, draws - a)) < mu))
                  for a in range(0, draws, chunk))
    first, coins = _ahead(rng, 0), _ahead(rng, draws)
    wide, narrow = _ahead(rng, 2 * draws), _ahead(rng, 2 * draws + n_inter)
    keys = np.empty(draws, np.int64)
    count = 0
    for a in range(0, draws, chunk):
        size = min(chunk, draws - a)
        u = cdf.searchsorted(first.random(size), side="right")
        inter = coins.random(size) < mu
        v = np.empty(size, np.int64)
        v[inter] = cdf.searchsorted(wide.random(int(inter.sum())), side="right")
        intra = np.flatnonzero(~inter)
        cu = comm[u[intra]]
        lo = np.where(starts[cu] > 0, cum[starts[cu] - 1], 0.0)
        hi = cum[starts[cu + 1] - 1]
        r = lo + narrow.random(len(intra)) * (hi - lo)
        v[intra] = order[np.minimum(np.searchsorted(cum, r), n - 1)]
        lo_end, hi_end = np.minimum(u, v), np.maximum(u, v)
        keep = lo_end != hi_end
        got = lo_end[keep] * n + hi_end[keep]
        keys[count:count + len(got)] = got
        count += len(got)
    keys = keys[:count]
    keys.sort()
    distinct = np.empty(count, bool)
    distinct[:1] = True
    np.not_equal(keys[1:], keys[:-1], out=distinct[1:])
    keys = keys[distinct][:m]
    _skip(rng, 3 * draws)
    return keys, comm, rng


def planted_partition_graph(n: int, m: int, k: int, mu: float, seed: int = 0,
                            chunk: int = CHUNK_DRAWS) -> tuple[Graph, np.ndarray]:
    """The :func:`planted_partition_sbm` graph in CSR form, on its linked nodes.

    The graph equals what :func:`~kernelne.graphs.graph.load_graph` reads from the edge list
    :func:`write_planted_partition` writes (a node without an edge is left out; ``nodes``
    holds the generator's ids), built from the sorted edges without the edge list: memory
    holds the edges once and the CSR arrays.

    Parameters
    ----------
    n, m, k, mu, seed, chunk
        As :func:`planted_partition_sbm`.

    Returns
    -------
    graph : Graph
        The undirected graph; ``graph.nodes`` are the linked nodes' ids in ``0..n-1``.
    communities : ndarray of shape (n,)
        Each node's community (by the generator's id).

    Examples
    --------
    >>> from kernelne.graphs.generators import planted_partition_graph
    >>> graph, communities = planted_partition_graph(300, 1500, 4, 0.3, seed=1)
    >>> graph.n_nodes <= 300, len(communities)
    (True, 300)
    """
    keys, comm, _ = _sorted_edge_keys(n, m, k, mu, seed, chunk)
    degrees = _degrees(keys, n)
    linked = np.flatnonzero(degrees)
    indptr = np.zeros(len(linked) + 1, np.int64)
    np.cumsum(degrees[linked], out=indptr[1:])
    dense = np.cumsum(degrees > 0) - 1  # generator id -> dense id (of a linked node)
    del degrees
    indices = _csr_indices(keys, n, dense, indptr)
    return Graph(indptr=indptr, indices=indices, weights=None, nodes=linked), comm


@njit(cache=True)
def _degrees(keys, n):
    degrees = np.zeros(n, np.int64)
    for key in keys:
        degrees[key // n] += 1
        degrees[key % n] += 1
    return degrees


@njit(cache=True)
def _csr_indices(keys, n, dense, indptr):
    """Neighbour lists of the sorted keys ``u n + v`` (``u < v``), sorted: a row's smaller
    neighbours come first, in the keys' order of ``u``, then its larger ones in their order of
    ``v``."""
    pos = indptr[:-1].copy()
    indices = np.empty(indptr[-1], np.int32)
    for key in keys:
        row = dense[key % n]
        indices[pos[row]] = dense[key // n]
        pos[row] += 1
    for key in keys:
        row = dense[key // n]
        indices[pos[row]] = dense[key % n]
        pos[row] += 1
    return indices


def write_labels(prefix: str, linked: np.ndarray, comm: np.ndarray) -> None:
    """Write ``PREFIX.labels``: ``node community`` for each node of ``linked``.

    Parameters
    ----------
    prefix : str
        The output prefix.
    linked : ndarray
        The nodes written (those with an edge).
    comm : ndarray
        Each node's community.
    """
    from kernelne.outputs import atomic_path

    with atomic_path(prefix + ".labels") as tmp:
        np.savetxt(tmp, np.column_stack([linked, comm[linked]]), fmt="%d %d")


def write_planted_partition(prefix: str | Path, n: int, m: int, k: int, mu: float,
                            seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Write a :func:`planted_partition_sbm` graph and its communities to two text files.

    ``PREFIX.edges`` holds ``u v`` per line and ``PREFIX.labels`` ``node community``; both are
    written atomically. A node the draws left without an edge is in neither file: the labels
    name exactly the nodes of the edge list, so the pair is a valid input of ``kernelne tune``
    and ``kernelne evaluate classify``.

    Parameters
    ----------
    prefix : str or Path
        The output prefix.
    n, m, k, mu, seed
        As :func:`planted_partition_sbm`.

    Returns
    -------
    edges, communities : ndarray
        The graph's edges and each node's community, as :func:`planted_partition_sbm`.
    """
    from kernelne.outputs import atomic_path

    edges, comm = planted_partition_sbm(n, m, k, mu, seed)
    linked = np.flatnonzero(np.bincount(edges.ravel(), minlength=n) > 0)
    prefix = str(prefix)
    with atomic_path(prefix + ".edges") as tmp:
        np.savetxt(tmp, edges, fmt="%d %d")
    write_labels(prefix, linked, comm)
    return edges, comm
