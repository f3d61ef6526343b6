"""The link-prediction split (docs/METHOD.md §11): held-out edges, a connected residual, non-edges.

On the largest connected component (LCC) of an undirected graph: a random spanning tree
(minimum spanning tree under random edge weights) is kept, and ``test_fraction`` of all edges
is held out uniformly from the other edges, so the residual graph stays connected and spans
every LCC node. With ``cap=True`` a graph too close to a tree for ``test_fraction`` gives up as
many edges as a connected residual allows (``m - n + 1``) instead of failing. Non-edges of the
graph (pairs, never self-pairs) are drawn uniformly by vectorised rejection sampling against
sorted edge keys, all distinct: as many as the held-out edges for the test set and as many as
the residual edges for the classifier's training set.
Memory is O(n + m); no list of all non-edges is ever built.

A :class:`LinkSplit` stores dense LCC ids with ``nodes`` mapping them back to the user's ids;
it saves to and loads from a folder (``split.npz``, ``split.json``, ``residual.edgelist``).
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from kernelne.errors import InputError, unreadable_array_file
from kernelne.graphs.graph import Graph, load_graph
from kernelne.outputs import atomic_path, folder_lock

FORMAT_VERSION = 1
ARRAYS = ("nodes", "train_edges", "train_negatives", "test_edges", "test_negatives")
SPLIT_FILES = ("split.npz", "split.json", "residual.edgelist")  # what save writes in a folder
SPLIT_WRITER = "another split"  # who holds a split folder's lock, as a refusal names them


@dataclass(eq=False)
class LinkSplit:
    """One seeded link-prediction split; pair arrays are ``(k, 2)`` dense LCC ids, ``u < v``.

    Made by :func:`make_link_split`; saved to and loaded from a folder (``split.npz``,
    ``split.json``, ``residual.edgelist``) by :meth:`save` and :meth:`load`.

    Parameters
    ----------
    nodes : ndarray
        The user's node id of each dense LCC id.
    train_edges : ndarray of shape (m_train, 2)
        The residual graph's edges (connected, spanning every LCC node).
    train_negatives : ndarray of shape (m_train, 2)
        Non-edges of the original graph for the classifier's training set.
    test_edges : ndarray of shape (m_test, 2)
        The held-out edges.
    test_negatives : ndarray of shape (m_test, 2)
        Non-edges of the original graph for the test set; all negatives are distinct.
    seed : int
        The split's seed.
    test_fraction : float
        The fraction of the edges held out (as asked; see ``info["capped"]``).
    info : dict, optional
        Counts of the graph and its LCC, ``capped`` and the source path.
    """

    nodes: np.ndarray
    train_edges: np.ndarray
    train_negatives: np.ndarray
    test_edges: np.ndarray
    test_negatives: np.ndarray
    seed: int
    test_fraction: float
    info: dict = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        """Number of nodes of the largest connected component."""
        return len(self.nodes)

    def residual_graph(self) -> Graph:
        """The residual graph, with the user's node ids (embed it, then score the split)."""
        u, v = self.train_edges.T
        return Graph.from_edges(u, v, n_nodes=self.n_nodes, nodes=self.nodes)

    def train_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Classifier training pairs (residual edges, then their negatives) and 0/1 labels."""
        return _pairs(self.train_edges, self.train_negatives)

    def test_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Test pairs (held-out edges, then their negatives) and 0/1 labels."""
        return _pairs(self.test_edges, self.test_negatives)

    def write_residual_edgelist(self, path: str | Path) -> None:
        """Write the residual graph as ``u v`` lines of the user's ids, for other tools.

        Parameters
        ----------
        path : str or Path
            The edge list to write (atomically).
        """
        with atomic_path(path) as tmp:
            self._write_residual(Path(tmp))

    def _write_residual(self, path: Path) -> None:
        names = np.array([str(x) for x in self.nodes], dtype=object)
        lines = names[self.train_edges[:, 0]] + " " + names[self.train_edges[:, 1]] + "\n"
        path.write_text("".join(lines), encoding="utf-8")

    def save(self, folder: str | Path) -> None:
        """Save to ``folder`` (created if needed): arrays, metadata and the residual edge list.

        The three files are written as one: each to a temporary file first, then all renamed
        into place, while this process holds the folder's lock
        (:func:`~kernelne.outputs.folder_lock`), so two saves into one folder never mix their
        files (the second is refused while the first holds it).

        Parameters
        ----------
        folder : str or Path
            The folder; it receives ``split.npz``, ``split.json`` and ``residual.edgelist``.

        Raises
        ------
        InputError
            ``folder`` is a file or cannot be created, or another split is being written into
            it.
        """
        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise InputError("cannot save a split: not a folder", folder)
        try:
            folder.mkdir(exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the split folder: {exc.strerror}", folder) from None
        nodes = self.nodes if self.nodes.dtype.kind in "iu" else self.nodes.astype(str)
        arrays = {name: getattr(self, name) for name in ARRAYS} | {"nodes": nodes}
        meta = {
            "format": FORMAT_VERSION, "seed": self.seed, "test_fraction": self.test_fraction,
            "counts": {name: len(getattr(self, name)) for name in ARRAYS},
        } | {"graph": self.info}
        with folder_lock(folder, SPLIT_WRITER):  # renamed in reverse: split.json last
            with atomic_path(folder / "split.json") as meta_tmp, \
                    atomic_path(folder / "split.npz") as npz_tmp, \
                    atomic_path(folder / "residual.edgelist") as residual_tmp:
                with open(npz_tmp, "wb") as fh:
                    np.savez_compressed(fh, **arrays)
                meta_tmp.write_text(json.dumps(meta, indent=1) + "\n")
                self._write_residual(residual_tmp)

    @classmethod
    def load(cls, folder: str | Path) -> LinkSplit:
        """Load a split saved by :meth:`save`.

        Parameters
        ----------
        folder : str or Path
            A folder holding ``split.json`` and ``split.npz``.

        Returns
        -------
        LinkSplit
            The split.

        Raises
        ------
        InputError
            Not a split folder, or unreadable metadata or arrays.
        """
        folder = Path(folder)
        meta_path, npz_path = folder / "split.json", folder / "split.npz"
        if not meta_path.is_file() or not npz_path.is_file():
            raise InputError("not a split folder (needs split.json and split.npz)", folder)
        try:
            meta = json.loads(meta_path.read_text())
            seed, fraction = int(meta["seed"]), float(meta["test_fraction"])
        except (ValueError, KeyError, TypeError):
            raise InputError("cannot parse split metadata", meta_path) from None
        try:
            with np.load(npz_path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in ARRAYS}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise InputError(unreadable_array_file(exc, npz_path), npz_path) from None
        if arrays["nodes"].dtype.kind == "U":
            arrays["nodes"] = arrays["nodes"].astype(object)
        n = len(arrays["nodes"])
        for name in ARRAYS[1:]:
            a = arrays[name]
            if a.ndim != 2 or a.shape[1] != 2 or (a.size and (a.min() < 0 or a.max() >= n)):
                raise InputError(f"array {name!r} is not a list of node pairs", npz_path)
        return cls(**arrays, seed=seed, test_fraction=fraction, info=meta.get("graph", {}))


def _pairs(pos: np.ndarray, neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    labels = np.concatenate([np.ones(len(pos), np.int8), np.zeros(len(neg), np.int8)])
    return np.concatenate([pos, neg]), labels


def largest_component(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """Dense ids of the LCC's nodes and its edges (``u < v``) renumbered ``0..n_lcc-1``."""
    _, comp = csgraph.connected_components(graph.adjacency(), directed=False)
    keep = comp == np.argmax(np.bincount(comp))
    members = np.flatnonzero(keep)
    new_id = np.cumsum(keep) - 1
    edges = graph.edges()
    edges = edges[keep[edges[:, 0]]]
    return members, new_id[edges]


def random_spanning_tree(n: int, edges: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Positions in ``edges`` of a spanning tree of a connected graph (random edge order)."""
    weights = rng.permutation(len(edges)) + 1.0  # distinct, positive: the weight names the edge
    matrix = sp.coo_matrix((weights, (edges[:, 0], edges[:, 1])), shape=(n, n)).tocsr()
    tree = csgraph.minimum_spanning_tree(matrix)
    order = np.argsort(weights)
    return order[tree.data.astype(np.int64) - 1]


def sample_non_edges(
    n: int, edge_keys: np.ndarray, count: int, rng: np.random.Generator
) -> np.ndarray:
    """``count`` distinct uniform pairs ``u < v`` whose key ``u*n+v`` is not in ``edge_keys``.

    Rejection sampling in batches; O(count) memory, no list of all non-edges.

    Parameters
    ----------
    n : int
        Number of nodes.
    edge_keys : ndarray of int64
        Sorted keys ``u*n+v`` (``u < v``) of the graph's edges.
    count : int
        Non-edges to draw.
    rng : numpy.random.Generator
        The random generator.

    Returns
    -------
    ndarray of shape (count, 2)
        Distinct non-edges ``u < v`` (never self-pairs), in drawing order.

    Raises
    ------
    InputError
        If the graph has fewer than ``count`` non-edges.
    """
    available = n * (n - 1) // 2 - len(edge_keys)
    if count > available:
        raise InputError(f"need {count:,} non-edges but the graph has only {available:,}")
    accept = max(available / max(n * (n - 1) // 2, 1), 1e-3)
    keys = np.empty(0, dtype=np.int64)
    while len(keys) < count:
        batch = int((count - len(keys)) * 1.1 / accept) + 64
        u = rng.integers(0, n, batch, dtype=np.int64)
        v = rng.integers(0, n, batch, dtype=np.int64)
        u, v = u[u != v], v[u != v]
        new = np.minimum(u, v) * n + np.maximum(u, v)
        pos = np.minimum(np.searchsorted(edge_keys, new), max(len(edge_keys) - 1, 0))
        if len(edge_keys):
            new = new[edge_keys[pos] != new]
        keys = np.concatenate([keys, new])
        _, first = np.unique(keys, return_index=True)
        keys = keys[np.sort(first)]  # distinct, in drawing order
    keys = keys[:count]
    return np.column_stack([keys // n, keys % n])


def make_link_split(
    graph: Any, test_fraction: float = 0.5, seed: int = 0, cap: bool = False
) -> LinkSplit:
    """Split the largest connected component (LCC) of ``graph`` for link prediction.

    The protocol of :doc:`METHOD </METHOD>` §11: a random spanning tree of the LCC is kept, and
    ``test_fraction`` of all edges is held out uniformly from the other edges, so the residual
    graph stays connected and spans every LCC node. Non-edges are drawn uniformly, all
    distinct: as many as the held-out edges for the test set and as many as the residual
    edges for the classifier's training set.

    Parameters
    ----------
    graph : Graph, path, networkx graph or sparse matrix
        An undirected graph; anything :func:`kernelne.load_graph` takes.
    test_fraction : float, default 0.5
        Fraction of the LCC's edges held out, strictly between 0 and 1.
    seed : int, default 0
        Seed of the tree, the held-out edges and the non-edges (non-negative).
    cap : bool, default False
        When ``test_fraction`` of the edges cannot be held out while keeping the residual
        graph connected (at most ``m - n + 1`` edges can go), hold out those ``m - n + 1``
        edges (``info["capped"]`` is then True) instead of raising.

    Returns
    -------
    LinkSplit
        The split, in dense LCC ids with ``nodes`` the user's ids.

    Raises
    ------
    InputError
        A fraction outside ``(0, 1)``, a negative seed, a directed graph, a fraction that
        holds out no edge or (without ``cap``) more than a connected residual allows, or a
        graph too dense to have as many non-edges as edges.

    Examples
    --------
    >>> from kernelne import load_dataset
    >>> from kernelne.evaluation import make_link_split
    >>> split = make_link_split(load_dataset("karate").graph, 0.2, seed=0)
    >>> len(split.test_edges), len(split.train_edges)
    (16, 62)
    """
    if not 0 < test_fraction < 1:
        raise InputError(f"test fraction must lie strictly between 0 and 1, got {test_fraction}")
    if seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed}")
    g = load_graph(graph)
    if g.directed:
        raise InputError("link-prediction splits need an undirected graph")
    members, edges = largest_component(g)
    n, m = len(members), len(edges)
    n_test = round(test_fraction * m)
    if n_test < 1:
        raise InputError(f"test fraction {test_fraction} of {m} edges holds out no edge")
    spare = m - (n - 1)
    capped = cap and n_test > spare and spare > 0
    if capped:
        n_test = spare
    if n_test > spare:
        raise InputError(
            f"cannot hold out {n_test:,} of {m:,} edges ({test_fraction:g}) and keep the "
            f"residual graph connected: at most {spare:,} ({spare / m:.3f}) can be removed"
        )
    if m > n * (n - 1) // 2 - m:
        raise InputError(
            f"graph too dense: its {m:,} edges need as many non-edges, the largest component "
            f"has only {n * (n - 1) // 2 - m:,}"
        )
    rng = np.random.default_rng(seed)
    in_tree = np.zeros(m, dtype=bool)
    in_tree[random_spanning_tree(n, edges, rng)] = True
    held = rng.choice(np.flatnonzero(~in_tree), n_test, replace=False)
    is_test = np.zeros(m, dtype=bool)
    is_test[held] = True
    keys = np.sort(edges[:, 0] * n + edges[:, 1])
    negatives = sample_non_edges(n, keys, m, rng)
    info = {"nodes": g.n_nodes, "edges": g.n_edges, "lcc_nodes": n, "lcc_edges": m,
            "capped": capped}
    if isinstance(graph, (str, Path)):
        info["source"] = str(graph)
    return LinkSplit(
        nodes=g.nodes[members],
        train_edges=edges[~is_test],
        train_negatives=negatives[n_test:],
        test_edges=edges[held],
        test_negatives=negatives[:n_test],
        seed=seed,
        test_fraction=test_fraction,
        info=info,
    )
