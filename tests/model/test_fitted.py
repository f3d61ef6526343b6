"""The fit record: every fitted attribute comes from one FitRecord, and model files keep its
first group of fields bit for bit."""

import dataclasses

import networkx as nx
import numpy as np
import pytest

from kernelne import KernelNE
from kernelne.model.fitted import NOT_SET, FitRecord, record_of, set_fitted

SMALL = dict(dim=8, walks_per_node=2, walk_length=8, window=3, workers=1, random_state=0)
KEPT = ("embedding", "context_embedding", "nodes", "kernels", "beta", "kernel_scale",
        "beta_update", "walk_counts", "degrees", "directed", "output_scale", "setting")


def same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return a.dtype == np.asarray(b).dtype and np.array_equal(a, b)
    return a == b


@pytest.fixture(scope="module")
def fitted():
    return KernelNE(**SMALL).fit(nx.karate_club_graph())


def test_a_fit_sets_one_attribute_per_field_of_its_record(fitted):
    record = record_of(fitted)
    for f in dataclasses.fields(FitRecord):
        value = getattr(record, f.name)
        assert value is not NOT_SET, f.name
        assert value is getattr(fitted, f.name + "_")
    assert fitted.n_features_in_ == 34


def test_model_files_round_trip_the_kept_fields_bit_for_bit(fitted, tmp_path):
    fitted.save_model(tmp_path / "m.npz")
    loaded = KernelNE.load_model(tmp_path / "m.npz")
    before, after = record_of(fitted), record_of(loaded)
    for name in KEPT:
        assert same(getattr(after, name), getattr(before, name)), name
    # a run's figures are not in the file, and are not invented on load
    for name in ("health", "n_pairs", "loss_history", "walks", "fit_seconds"):
        assert getattr(after, name) is NOT_SET and not hasattr(loaded, name + "_")


def test_none_is_written_and_not_set_is_not():
    model = KernelNE(**SMALL)
    model.walks_ = np.zeros((1, 1))  # left from an earlier fit that kept its walks
    model.health_ = {"earlier": True}
    record = FitRecord(np.zeros((2, 1), np.float32), np.zeros((2, 1), np.float32),
                       np.arange(2), [], np.ones(1, np.float32), 1.0, "projected",
                       np.zeros(2, np.int64), np.zeros(2, np.int64), None, walks=None)
    set_fitted(model, record)
    assert model.walks_ is None and model.directed_ is None
    assert model.health_ == {"earlier": True}
    assert model.n_features_in_ == 2


def test_a_refit_without_kept_walks_drops_the_earlier_walks():
    model = KernelNE(keep_walks=True, **SMALL).fit(nx.karate_club_graph())
    assert model.walks_ is not None
    model.set_params(keep_walks=False).fit(nx.karate_club_graph())
    assert model.walks_ is None


def test_partial_fit_updates_the_record_and_keeps_the_rest(fitted, tmp_path):
    fitted.save_model(tmp_path / "m.npz")
    model = KernelNE.load_model(tmp_path / "m.npz")
    grown = nx.karate_club_graph()
    grown.add_edges_from([(33, 100), (100, 101)])
    model.partial_fit(grown)
    assert model.n_features_in_ == len(model.nodes_) == 36
    assert model.embedding_.shape == (36, 8)
    assert model.n_pairs_ > 0 and model.graph_summary_ != fitted.graph_summary_
    assert same(model.beta_, fitted.beta_) and model.kernels_ == fitted.kernels_
    assert not hasattr(model, "health_")  # the update is not a fit: no health figures
