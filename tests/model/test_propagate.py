"""``KernelNE(propagate=...)``: the fitted rows spectrally propagated, in memory and partitioned
fits alike; the context rows as trained; ``partial_fit`` refused, as documented."""

from __future__ import annotations

import numpy as np
import pytest

from kernelne import Graph, KernelNE
from kernelne.engine.propagation import Propagation, propagate_rows
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.model.auto_setting import OUTPUT_NORM

#: the small fits below are undertrained on purpose (fast); their rows are what is compared
pytestmark = pytest.mark.filterwarnings(
    "ignore::kernelne.engine.diagnostics.DegenerateEmbeddingWarning")

SMALL = dict(random_state=0, workers=1, walks_per_node=4, dim=8, verbose=False)


@pytest.fixture(scope="module")
def edges() -> np.ndarray:
    return planted_partition_sbm(150, 600, 3, 0.2, seed=0)[0]


@pytest.fixture(scope="module")
def graph(edges) -> Graph:
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=150)


def test_rows_are_the_propagation_of_the_plain_fits_rows(graph):
    plain = KernelNE(**SMALL).fit(graph)
    spread = KernelNE(**SMALL, propagate="order=6,theta=1").fit(graph)
    want = propagate_rows(graph.adjacency(), plain.embedding_, Propagation(6, 0.2, 1.0))
    np.testing.assert_array_equal(spread.embedding_, want * np.float32(OUTPUT_NORM))
    np.testing.assert_allclose(np.linalg.norm(spread.embedding_, axis=1), OUTPUT_NORM, rtol=1e-5)
    np.testing.assert_array_equal(spread.context_embedding_, plain.context_embedding_)
    assert spread.propagation_ == Propagation(6, 0.2, 1.0) and plain.propagation_ is None
    assert spread.embedding_.shape == plain.embedding_.shape
    assert np.array_equal(spread.nodes_, plain.nodes_)


def test_rows_as_trained_are_propagated_to_unit_rows(graph):
    spread = KernelNE(**SMALL, propagate=True, normalize="none").fit(graph)
    np.testing.assert_allclose(np.linalg.norm(spread.embedding_, axis=1), 1.0, rtol=1e-5)


def test_off_leaves_the_fit_unchanged(graph):
    plain = KernelNE(**SMALL).fit(graph)
    off = KernelNE(**SMALL, propagate="off").fit(graph)
    np.testing.assert_array_equal(off.embedding_, plain.embedding_)


@pytest.mark.parametrize("folder", [False, True])
def test_a_partitioned_fit_propagates_the_assembled_rows_in_memory(graph, tmp_path, folder):
    settings = dict(SMALL, partitions=2, rounds=2)
    plain = KernelNE(**settings, partition_dir=str(tmp_path / "a") if folder else None).fit(graph)
    spread = KernelNE(**settings, propagate=True,
                      partition_dir=str(tmp_path / "b") if folder else None).fit(graph)
    want = propagate_rows(graph.adjacency(), np.array(plain.embedding_), Propagation())
    np.testing.assert_array_equal(spread.embedding_, want * np.float32(OUTPUT_NORM))
    assert type(spread.embedding_) is np.ndarray  # not the folder's memory map
    np.testing.assert_array_equal(spread.context_embedding_, plain.context_embedding_)


def test_partial_fit_is_refused_also_after_a_save_and_load(edges, graph, tmp_path):
    spread = KernelNE(**SMALL, propagate=True).fit(graph)
    grown = Graph.from_edges(np.r_[edges[:, 0], 0, 150], np.r_[edges[:, 1], 150, 1],
                             n_nodes=151)
    with pytest.raises(ValueError, match=r"propagated \(propagate, --propagate: .*refit"):
        spread.partial_fit(grown)
    spread.save_model(tmp_path / "m.npz")
    loaded = KernelNE.load_model(tmp_path / "m.npz")
    assert loaded.propagate is True
    np.testing.assert_array_equal(loaded.embedding_, spread.embedding_)
    with pytest.raises(ValueError, match="refit on the grown graph"):
        loaded.partial_fit(grown)
    loaded.set_params(propagate=False)  # the rows stay propagated: still refused
    with pytest.raises(ValueError, match="refit on the grown graph"):
        loaded.partial_fit(grown)


def test_a_bad_setting_is_refused_before_the_fit(graph):
    model = KernelNE(**SMALL, propagate="theta=0")
    with pytest.raises(ValueError, match=r"^propagate: theta must be > 0, got 0$"):
        model.fit(graph)
    assert not hasattr(model, "embedding_")
