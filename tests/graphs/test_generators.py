"""The package's planted-partition generator: its graphs, labels and command."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from kernelne.cli.app import main
from kernelne.errors import InputError
from kernelne.graphs.datasets import read_labels
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.graphs.graph import load_graph


def test_same_graph_for_the_same_arguments_and_seed():
    """The graph of given arguments and seed is pinned by checksum (numpy's Generator
    streams), so that graphs named in the docs by their command stay the same."""
    edges, comm = planted_partition_sbm(500, 3000, 4, 0.6, seed=0)
    assert edges.shape == (2814, 2)
    assert hashlib.sha256(np.ascontiguousarray(edges, np.int64).tobytes()).hexdigest() == (
        "b937b311146862bda943b72467fc3be3339c49b032f760dcb6e388cbc0fa524c")
    assert hashlib.sha256(np.ascontiguousarray(comm, np.int64).tobytes()).hexdigest() == (
        "3dc7ea6cf7769e7c8f6192c03e30124969e8fa2cc36f82cf3cc99c8ecde48fa8")


def test_simple_graph_and_seeds(sbm):
    edges, comm = sbm
    n, m, k = 2000, 10000, 5
    assert (edges[:, 0] < edges[:, 1]).all() and edges.min() >= 0 and edges.max() < n
    assert len(np.unique(edges[:, 0] * n + edges[:, 1])) == len(edges)  # no duplicates
    assert 0.95 * m <= len(edges) <= m
    assert set(np.unique(comm)) == set(range(k)) and len(comm) == n
    again = planted_partition_sbm(n, m, k, 0.3, seed=0)
    assert np.array_equal(again[0], edges) and np.array_equal(again[1], comm)
    other = planted_partition_sbm(n, m, k, 0.3, seed=1)
    assert not np.array_equal(other[0][:100], edges[:100])


@pytest.mark.parametrize("mu", [0.1, 0.5, 0.9])
def test_mixing_share(mu):
    """A share 1 - mu of draws stays in the first end's community; of the mu drawn from the
    whole graph, about the community's weight share lands inside too (1/k on average)."""
    k = 5
    edges, comm = planted_partition_sbm(3000, 15000, k, mu, seed=0)
    inside = (comm[edges[:, 0]] == comm[edges[:, 1]]).mean()
    assert abs(inside - ((1 - mu) + mu / k)) < 0.04


def test_heavy_tailed_degrees(sbm):
    edges, _ = sbm
    deg = np.bincount(edges.ravel(), minlength=2000)
    assert deg.max() > 10 * deg.mean()  # power-law weights: hubs
    assert np.median(deg) < deg.mean()


def test_bad_parameters():
    for args, message in [((1, 10, 2, 0.5), "n >= 2"), ((10, 10, 0, 0.5), "k >= 1"),
                          ((10, 10, 2, 1.5), r"mu must lie in \[0, 1\]")]:
        with pytest.raises(InputError, match=message):
            planted_partition_sbm(*args)


def test_cli_generate(tmp_path, capsys):
    prefix = tmp_path / "pp"
    assert main(["generate", "500", "3000", "4", "0.6", str(prefix)]) == 0
    out = capsys.readouterr().out
    assert "500 nodes (1 isolated), 2,814 edges, 4 communities" in out
    graph = load_graph(f"{prefix}.edges")
    edges, comm = planted_partition_sbm(500, 3000, 4, 0.6, seed=0)
    assert graph.n_edges == len(edges) == 2814
    labels = read_labels(f"{prefix}.labels", n_nodes=500)
    linked = np.bincount(edges.ravel(), minlength=500) > 0  # the isolated node has no label
    assert labels.getnnz(axis=1).tolist() == linked.astype(int).tolist()
    assert np.array_equal(labels.toarray().argmax(axis=1)[linked], comm[linked])
    assert main(["generate", "500", "3000", "4", "0.6", str(prefix), "--seed", "3"]) == 0
    assert load_graph(f"{prefix}.edges").n_edges != 2814 or not np.array_equal(
        np.loadtxt(f"{prefix}.edges", dtype=np.int64), edges)
    assert main(["generate", "500", "3000", "4", "0.6", str(tmp_path / "no" / "pp")]) == 2


@pytest.mark.parametrize("chunk", [1, 7, 1000, 3449])
def test_chunked_draws_give_the_same_graph(chunk):
    """The draws are made a chunk at a time, each from its own place in the stream: any chunk
    size gives the graph of the one-shot draws (3,449 draws in all here)."""
    whole = planted_partition_sbm(500, 3000, 4, 0.6, seed=0, chunk=10**6)
    edges, comm = planted_partition_sbm(500, 3000, 4, 0.6, seed=0, chunk=chunk)
    assert np.array_equal(edges, whole[0]) and np.array_equal(comm, whole[1])


def test_memory_holds_the_edges_and_one_chunk():
    """Peak traced memory in units of 8 bytes per edge: the edge array is 2, the CSR graph
    about 1.2; drawing everything at once peaked at 13 (the draws' arrays side by side)."""
    import tracemalloc

    from kernelne.graphs.generators import planted_partition_graph

    n, m = 20000, 400000
    for make, most in [(planted_partition_sbm, 6.0), (planted_partition_graph, 3.0)]:
        make(n, m, 20, 0.5, seed=0, chunk=4096)  # numba compiled outside the measure
        tracemalloc.start()
        try:
            make(n, m, 20, 0.5, seed=0, chunk=4096)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < most * 8 * m, (make.__name__, peak / (8 * m))


@pytest.mark.parametrize("args", [(500, 3000, 4, 0.6, 0), (2000, 10000, 5, 0.3, 3),
                                  (300, 200, 3, 0.1, 1)])
def test_graph_built_without_the_edge_list(tmp_path, args):
    """planted_partition_graph is the graph load_graph reads from the written edge list:
    the same linked nodes, CSR arrays and dtypes (isolated nodes left out)."""
    from kernelne.graphs.generators import planted_partition_graph, write_planted_partition

    write_planted_partition(tmp_path / "g", *args)
    read = load_graph(tmp_path / "g.edges")
    graph, comm = planted_partition_graph(*args, chunk=333)
    for name in ("indptr", "indices", "nodes"):
        a, b = getattr(read, name), getattr(graph, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert graph.weights is None and not graph.directed
    assert np.array_equal(comm, planted_partition_sbm(*args)[1])


def test_cli_generate_npz(tmp_path, capsys):
    """--npz writes PREFIX.npz (no edge list) beside the same labels: the graph the edge
    list gives."""
    assert main(["generate", "500", "3000", "4", "0.6", "-o", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    assert main(["generate", "500", "3000", "4", "0.6", "-o", str(tmp_path / "b"),
                 "--npz"]) == 0
    out = capsys.readouterr().out
    assert "500 nodes (1 isolated), 2,814 edges, 4 communities" in out
    assert f"wrote {tmp_path / 'b'}.npz and {tmp_path / 'b'}.labels" in out
    assert not (tmp_path / "b.edges").exists()
    assert (tmp_path / "b.labels").read_text() == (tmp_path / "t.labels").read_text()
    binary, text = load_graph(tmp_path / "b.npz"), load_graph(tmp_path / "t.edges")
    assert np.array_equal(binary.indptr, text.indptr)
    assert np.array_equal(binary.indices, text.indices)
    assert np.array_equal(binary.nodes, text.nodes)
