"""``KernelNE(propagate=...)``: the fitted rows spectrally propagated, in memory and partitioned
fits alike; the context rows as trained; ``"auto"`` decided by the mean degree; ``partial_fit``
on the rows as trained, then propagated again; model files keep both."""

from __future__ import annotations

import numpy as np
import pytest

from kernelne import Graph, KernelNE
from kernelne.engine import propagation as propagation_module
from kernelne.engine.propagation import Propagation, propagate_rows
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.model.auto_setting import OUTPUT_NORM

#: the small fits below are undertrained on purpose (fast); their rows are what is compared
pytestmark = pytest.mark.filterwarnings(
    "ignore::kernelne.engine.diagnostics.DegenerateEmbeddingWarning")

SMALL = dict(random_state=0, workers=1, walks_per_node=4, dim=8, verbose=False,
             propagate=False)


@pytest.fixture(scope="module")
def edges() -> np.ndarray:
    return planted_partition_sbm(150, 600, 3, 0.2, seed=0)[0]


@pytest.fixture(scope="module")
def graph(edges) -> Graph:
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=150)


def test_rows_are_the_propagation_of_the_plain_fits_rows(graph):
    plain = KernelNE(**SMALL).fit(graph)
    spread = KernelNE(**{**SMALL, "propagate": "order=6,theta=1"}).fit(graph)
    want = propagate_rows(graph.adjacency(), plain.embedding_, Propagation(6, 0.2, 1.0))
    np.testing.assert_array_equal(spread.embedding_, want * np.float32(OUTPUT_NORM))
    np.testing.assert_allclose(np.linalg.norm(spread.embedding_, axis=1), OUTPUT_NORM, rtol=1e-5)
    np.testing.assert_array_equal(spread.context_embedding_, plain.context_embedding_)
    assert spread.propagation_ == Propagation(6, 0.2, 1.0) and plain.propagation_ is None
    assert spread.embedding_.shape == plain.embedding_.shape
    assert np.array_equal(spread.nodes_, plain.nodes_)


def test_rows_as_trained_are_propagated_to_unit_rows(graph):
    spread = KernelNE(**{**SMALL, "propagate": True}, normalize="none").fit(graph)
    np.testing.assert_allclose(np.linalg.norm(spread.embedding_, axis=1), 1.0, rtol=1e-5)


def test_off_leaves_the_fit_unchanged(graph):
    plain = KernelNE(**SMALL).fit(graph)
    off = KernelNE(**{**SMALL, "propagate": "off"}).fit(graph)
    np.testing.assert_array_equal(off.embedding_, plain.embedding_)


@pytest.mark.parametrize("folder", [False, True])
def test_a_partitioned_fit_propagates_the_assembled_rows(graph, tmp_path, folder):
    settings = dict(SMALL, partitions=2, rounds=2)
    plain = KernelNE(**settings, partition_dir=str(tmp_path / "a") if folder else None).fit(graph)
    spread = KernelNE(**{**settings, "propagate": True},
                      partition_dir=str(tmp_path / "b") if folder else None).fit(graph)
    want = propagate_rows(graph.adjacency(), np.array(plain.embedding_), Propagation())
    np.testing.assert_array_equal(spread.embedding_, want * np.float32(OUTPUT_NORM))
    if folder:  # written into the folder, then mapped: the rows need not fit in memory
        assert isinstance(spread.embedding_, np.memmap)
        assert str(spread.embedding_.filename) == str(tmp_path / "b" / "embedding.npy")
    else:
        assert type(spread.embedding_) is np.ndarray
    np.testing.assert_array_equal(spread.context_embedding_, plain.context_embedding_)


@pytest.fixture(scope="module")
def dense() -> Graph:
    """Mean degree 2 x 933 / 150 = 12.4 (every node has an edge)."""
    edges = planted_partition_sbm(150, 1300, 3, 0.2, seed=0)[0]
    g = Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=150)
    assert len(edges) == 933 and (g.degrees > 0).all()
    return g


def test_auto_propagates_where_the_mean_degree_reaches_the_bound(graph, dense):
    auto = KernelNE(**{**SMALL, "propagate": "auto"}).fit(dense)
    on = KernelNE(**{**SMALL, "propagate": True}).fit(dense)
    plain = KernelNE(**SMALL).fit(dense)
    assert auto.propagation_ == Propagation()
    assert auto.setting_["propagation"] == "auto: mean degree 12.4 >= 8"
    np.testing.assert_array_equal(auto.embedding_, on.embedding_)
    np.testing.assert_array_equal(auto.trained_embedding_, plain.embedding_)
    assert plain.trained_embedding_ is None and "propagation" not in plain.setting_
    off = KernelNE(**{**SMALL, "propagate": "auto"}).fit(graph)  # 2 x 496 / 149 nodes
    assert off.propagation_ is None and off.trained_embedding_ is None
    assert off.setting_["propagation"] == "auto: mean degree 6.7 < 8"


def test_auto_keeps_the_rows_of_a_large_fit_and_propagates_a_partitioned_one(dense,
                                                                             monkeypatch):
    monkeypatch.setattr(propagation_module, "available_memory_bytes", lambda: 2**30)
    monkeypatch.setattr(propagation_module, "filter_bytes",
                        lambda a, d, rows_in_memory=True: 3 * 2**30)
    big = KernelNE(**{**SMALL, "propagate": "auto"}).fit(dense)
    assert big.propagation_ is None
    assert big.setting_["propagation"] == "auto: the filter needs 3.0 GiB, 1.0 GiB available"
    monkeypatch.undo()
    parts = KernelNE(**{**SMALL, "propagate": "auto"}, partitions=2, rounds=2).fit(dense)
    assert parts.propagation_ == Propagation()  # as in memory: by the mean degree
    assert parts.setting_["propagation"] == "auto: mean degree 12.4 >= 8"


def _grown(g: Graph) -> Graph:
    """``g`` (nodes 0..149) with node 150 joined to nodes 0 and 1."""
    edges = g.edges()
    return Graph.from_edges(np.r_[edges[:, 0], 0, 150], np.r_[edges[:, 1], 150, 1],
                            n_nodes=151)


def test_partial_fit_trains_on_the_rows_as_trained_and_propagates_again(graph):
    spread = KernelNE(**{**SMALL, "propagate": True}).fit(graph)
    plain = KernelNE(**SMALL).fit(graph)
    before = spread.trained_embedding_.copy()
    grown = _grown(graph)
    spread.partial_fit(grown)
    plain.partial_fit(grown)
    # the update of the rows as trained is the plain model's update, bit for bit
    np.testing.assert_array_equal(spread.trained_embedding_, plain.embedding_)
    np.testing.assert_array_equal(spread.trained_embedding_[:150], before)
    want = propagate_rows(grown.adjacency(), plain.embedding_, Propagation())
    np.testing.assert_array_equal(spread.embedding_, want * np.float32(OUTPUT_NORM))
    assert spread.embedding_.shape == (151, 8) and spread.propagation_ == Propagation()


def test_a_model_file_keeps_the_rows_as_trained_and_the_propagation(dense, tmp_path):
    spread = KernelNE(**{**SMALL, "propagate": "auto"}).fit(dense)
    spread.save_model(tmp_path / "m.npz")
    loaded = KernelNE.load_model(tmp_path / "m.npz")
    assert loaded.propagate == "auto" and loaded.propagation_ == Propagation()
    np.testing.assert_array_equal(loaded.embedding_, spread.embedding_)
    np.testing.assert_array_equal(loaded.trained_embedding_, spread.trained_embedding_)
    grown = _grown(dense)
    np.testing.assert_array_equal(loaded.partial_fit(grown).embedding_,
                                  spread.partial_fit(grown).embedding_)


def test_partial_fit_is_refused_without_the_rows_as_trained(graph, tmp_path):
    spread = KernelNE(**{**SMALL, "propagate": True}).fit(graph)
    spread.save_model(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as z:  # a file written before the rows were kept
        arrays = {k: z[k] for k in z.files if k != "trained_embedding"}
    np.savez(tmp_path / "old.npz", **arrays)
    loaded = KernelNE.load_model(tmp_path / "old.npz")
    np.testing.assert_array_equal(loaded.embedding_, spread.embedding_)
    with pytest.raises(ValueError, match="only its spectrally propagated rows.*refit on the "
                                         "grown graph"):
        loaded.partial_fit(_grown(graph))


def test_a_bad_setting_is_refused_before_the_fit(graph):
    model = KernelNE(**{**SMALL, "propagate": "theta=0"})
    with pytest.raises(ValueError, match=r"^propagate: theta must be > 0, got 0$"):
        model.fit(graph)
    assert not hasattr(model, "embedding_")


# P13, P13c, P14: a propagation keeps at most one column per node

@pytest.fixture(scope="module")
def complete20() -> Graph:
    """The complete graph of 20 nodes: mean degree 19, fewer nodes than the default dim."""
    u, v = np.triu_indices(20, 1)
    return Graph.from_edges(u, v, n_nodes=20)


def test_auto_does_not_propagate_fewer_nodes_than_dim(complete20):
    model = KernelNE(random_state=0, workers=1, walks_per_node=2, verbose=False).fit(complete20)
    assert model.embedding_.shape == (20, 128) and model.propagation_ is None
    assert model.setting_["propagation"] == "auto: 20 nodes, fewer than dim 128"
    at_twenty = KernelNE(**{**SMALL, "dim": 20, "propagate": "auto"}).fit(complete20)
    assert at_twenty.embedding_.shape == (20, 20) and at_twenty.propagation_ == Propagation()


@pytest.mark.parametrize("spec", [True, "order=1", "order=5,theta=1"])
def test_a_given_propagation_on_fewer_nodes_than_dim_is_refused_before_the_fit(
        complete20, monkeypatch, spec):
    import kernelne.model.kernelne as estimator

    monkeypatch.setattr(estimator, "fit_in_memory", lambda *a, **k: pytest.fail("trained"))
    model = KernelNE(**{**SMALL, "dim": 21, "propagate": spec})
    with pytest.raises(ValueError, match=r"^the spectral propagation \(propagate\) keeps one "
                                         r"column per node at most: dim=21 must be at most the "
                                         r"number of nodes \(20\): choose a smaller dim"):
        model.fit(complete20)
    assert not hasattr(model, "embedding_")


def test_a_baseline_refuses_a_given_propagation_on_fewer_nodes_than_dim(complete20,
                                                                        monkeypatch):
    from kernelne.baselines import DeepWalk

    model = DeepWalk(dim=32, propagate=True, walks_per_node=2, workers=1)
    monkeypatch.setattr(DeepWalk, "_embed", lambda *a: pytest.fail("trained"))
    with pytest.raises(ValueError, match=r"dim=32 must be at most the number of nodes \(20\)"):
        model.fit(complete20)
