"""A 64-bit fingerprint of each node's neighbour set, to tell which nodes a new graph touched.

:func:`neighbour_hashes` gives, for each node of a :class:`~kernelne.graphs.csr.Graph`, the
sum modulo ``2^64`` of a 64-bit mix of each neighbour's id (the user's id, not its position:
the same neighbours give the same number in any node order, and a graph read again gives
the numbers it gave). A node keeps its number exactly when it keeps its neighbours (out-
neighbours in a directed graph; weights are left out); another neighbour set gives another
number but with a chance of about ``2^-64``. A model keeps the numbers of its graph
(``neighbour_hashes_``), so that an update finds the nodes whose edges changed, a rewired
node whose degree stayed the same among them.
"""

from __future__ import annotations

import numpy as np

from kernelne.graphs.csr import Graph, row_windows

#: edges summed per step (bounded temporaries on large graphs)
CHUNK_EDGES = 1 << 22
_FNV_OFFSET, _FNV_PRIME = np.uint64(0xCBF29CE484222325), np.uint64(0x100000001B3)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser of each of ``x`` (uint64; wraps modulo ``2^64``)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def id_hashes(nodes: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each node id: of the integer, or of a string's UTF-8 bytes (FNV-1a).

    Parameters
    ----------
    nodes : ndarray
        Integer ids, or strings (a unicode or object array).

    Returns
    -------
    ndarray of uint64
        One hash per id.
    """
    nodes = np.asarray(nodes)
    if nodes.dtype.kind in "iu":
        return _mix(nodes.astype(np.int64).view(np.uint64))
    data = np.char.encode(nodes.astype(str), "utf-8")  # bytes, padded with zeros
    width = data.dtype.itemsize
    octets = data.view(np.uint8).reshape(len(data), width) if len(data) else np.zeros((0, 0))
    h = np.full(len(data), _FNV_OFFSET, dtype=np.uint64)
    for column in octets.T.astype(np.uint64):  # the padding is left out: any width, one hash
        h = np.where(column != 0, (h ^ column) * _FNV_PRIME, h)
    return _mix(h)


def neighbour_hashes(graph: Graph) -> np.ndarray:
    """The fingerprint of each node's neighbour set (module docstring).

    Parameters
    ----------
    graph : Graph
        The graph.

    Returns
    -------
    ndarray of uint64, shape (n_nodes,)
        0 for a node without neighbours.
    """
    ids = id_hashes(graph.nodes)
    indptr = np.asarray(graph.indptr, dtype=np.int64)
    out = np.zeros(graph.n_nodes, dtype=np.uint64)
    for lo, hi in row_windows(indptr, CHUNK_EDGES):
        start, stop = indptr[lo], indptr[hi]
        sums = np.zeros(stop - start + 1, dtype=np.uint64)
        np.cumsum(ids[graph.indices[start:stop]], out=sums[1:])
        out[lo:hi] = sums[indptr[lo + 1:hi + 1] - start] - sums[indptr[lo:hi] - start]
    return out
