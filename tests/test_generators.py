"""The package's planted-partition generator: its graphs, labels and command."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from kernelne.cli import main
from kernelne.datasets import read_labels
from kernelne.errors import InputError
from kernelne.generators import planted_partition_sbm
from kernelne.graph import load_graph


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
