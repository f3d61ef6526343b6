"""Shared fixtures: small graphs and a helper that writes text files."""

from __future__ import annotations

import gzip
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from kernelne.cli.demo import planted_partition
from kernelne.graphs.datasets import find_data_dir
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.graphs.graph import Graph, from_networkx


@pytest.fixture
def write(tmp_path):
    """``write(name, text, gz=False)`` -> path of a file holding ``text``."""

    def _write(name: str, text: str, gz: bool = False) -> Path:
        path = tmp_path / name
        if gz:
            with gzip.open(path, "wt", encoding="utf-8") as fh:
                fh.write(text)
        else:
            path.write_text(text, encoding="utf-8")
        return path

    return _write


@pytest.fixture
def kite() -> Graph:
    """A small connected undirected graph with triangles, paths and degree-1 nodes.

    Enough structure that the three node2vec cases (return, stay at distance 1, move away)
    all occur for most (previous, current) pairs.
    """
    edges = [
        (0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (3, 4), (4, 5), (4, 6), (5, 6), (6, 7),
        (2, 7), (7, 8), (3, 8),
    ]
    src, dst = np.array(edges).T
    return Graph.from_edges(src, dst)


@pytest.fixture(scope="session")
def data_dir():
    """The data folder: the paper's networks shipped in the package (or $KERNELNE_DATA)."""
    return find_data_dir()


@pytest.fixture(scope="session")
def planted():
    """The demo's planted partition (4 groups of 100 nodes) and each node's group."""
    return planted_partition(0)


@pytest.fixture(scope="session")
def sbm():
    """A degree-corrected planted partition of the package's generator (2,000 nodes, 10,000
    edges, 5 communities, mixing 0.3, seed 0): ``(edges, communities)``."""
    return planted_partition_sbm(2000, 10000, 5, 0.3, seed=0)


@pytest.fixture(scope="session")
def small_graph():
    """A small random graph (120 nodes, 400 edges)."""
    return from_networkx(nx.gnm_random_graph(120, 400, seed=2))


@pytest.fixture(scope="module")
def groups():
    """4 planted groups of 30 nodes as ``(graph, node ids, n x 4 label indicator)``: the
    labelled graph of the tune tests."""
    import scipy.sparse as sp

    g = nx.planted_partition_graph(4, 30, 0.3, 0.02, seed=2)
    src, dst = np.array(g.edges()).T
    graph = Graph.from_edges(src, dst, n_nodes=120)
    Y = sp.csr_matrix(np.eye(4, dtype=bool)[np.arange(120) // 30])
    return graph, np.arange(120), Y


@pytest.fixture
def graph_file(tmp_path):
    """A 30-node ring with two chords (``cli_runs.EDGES``) as an edge-list file."""
    from cli_runs import EDGES

    path = tmp_path / "g.txt"
    path.write_text(EDGES)
    return path
