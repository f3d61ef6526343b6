"""scikit-learn's estimator checks on KernelNE and the baselines (small, fast settings).

The input ``X`` is a graph (tags: pairwise, sparse, non-negative), so the checks feed square
non-negative adjacency matrices. Every check passes: no expected failure is declared, so
``check_estimator(KernelNE(...))`` returns as a user runs it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import check_estimator, parametrize_with_checks

from kernelne import KernelNE
from kernelne.baselines import HOPE, LINE, DeepWalk, NetMF, Node2Vec, ProNE
from kernelne.engine.diagnostics import DegenerateEmbeddingWarning

WALKS = {"dim": 8, "walks_per_node": 2, "walk_length": 5, "window": 3, "workers": 1,
         "random_state": 0}

ESTIMATORS = [
    KernelNE(**WALKS),
    DeepWalk(**WALKS),
    Node2Vec(**WALKS, p=0.5, q=2.0),
    LINE(dim=8, samples=2000, workers=1, random_state=0),
    HOPE(dim=2, random_state=0),
    NetMF(dim=2, random_state=0),
    ProNE(dim=2, random_state=0),
]


@pytest.fixture(autouse=True)
def quiet_degenerate():
    with warnings.catch_warnings():  # random dense matrices give uninformative embeddings
        warnings.simplefilter("ignore", DegenerateEmbeddingWarning)
        yield


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_check_estimator_returns_as_a_user_runs_it():
    """``check_estimator(KernelNE(...))`` as a user types it, with scikit-learn's defaults
    (``on_fail="raise"``, nothing expected to fail): it returns, and every check ran and
    passed or was skipped by scikit-learn."""
    results = check_estimator(KernelNE(**WALKS))
    assert len(results) > 40
    assert {r["status"] for r in results} <= {"passed", "skipped"}
    assert not any(r["expected_to_fail"] for r in results)


def test_set_output_pandas_gives_named_columns():
    pd = pytest.importorskip("pandas")
    from kernelne import load_dataset

    karate = load_dataset("karate").graph
    model = KernelNE(**WALKS)
    with pytest.raises(NotFittedError):
        model.get_feature_names_out()
    model.set_output(transform="pandas").fit(karate)
    names = model.get_feature_names_out()
    assert names.tolist() == [f"kernelne{i}" for i in range(8)]
    frame = model.transform()
    assert isinstance(frame, pd.DataFrame) and frame.columns.tolist() == names.tolist()
    np.testing.assert_array_equal(frame.to_numpy(), model.embedding_)
    assert isinstance(model.fit_transform(karate), pd.DataFrame)
    assert isinstance(model.set_output(transform="default").transform(), np.ndarray)
    assert DeepWalk(**WALKS).fit(karate).get_feature_names_out()[0] == "deepwalk0"


def test_transform_finds_fitted_rows_and_embeds_new_ones():
    rng = np.random.default_rng(0)
    A = (rng.random((30, 30)) < 0.2).astype(float)
    A = np.triu(A, 1) + np.triu(A, 1).T
    model = KernelNE(**WALKS).fit(A)
    assert model.transform(A) is model.embedding_
    order = rng.permutation(30)
    np.testing.assert_array_equal(model.transform(A[order]), model.embedding_[order])
    np.testing.assert_array_equal(model.transform(A[:5]), model.embedding_[:5])
    new = np.zeros((2, 30))
    new[0, [1, 4]] = [1.0, 3.0]  # a new node: the weighted mean of its neighbours
    expected = (model.embedding_[1] + 3 * model.embedding_[4]) / 4
    out = model.transform(new)
    np.testing.assert_allclose(out[0], expected, rtol=1e-6)
    np.testing.assert_array_equal(out[1], 0)  # no edge: zeros
    with pytest.raises(ValueError, match="X has 3 features, but KernelNE is expecting 30"):
        model.transform(A[:, :3])
    # fitted from a graph object: the n x n matrix gives the fitted rows, as before
    from kernelne import load_graph

    graph_model = KernelNE(**WALKS).fit(load_graph(A))
    assert graph_model.transform(A) is graph_model.embedding_


def test_partial_fit_on_an_unfitted_model_fits_and_checks_columns():
    rng = np.random.default_rng(1)
    A = (rng.random((20, 20)) < 0.3).astype(float)
    A = np.triu(A, 1) + np.triu(A, 1).T
    first = KernelNE(**WALKS).partial_fit(A)
    np.testing.assert_array_equal(first.embedding_, KernelNE(**WALKS).fit(A).embedding_)
    with pytest.raises(ValueError, match="X has 1 features, but KernelNE is expecting 20"):
        first.partial_fit(A[:, [1]])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_tags_declare_a_pairwise_non_negative_graph(estimator):
    tags = get_tags(estimator)
    assert tags.transformer_tags is not None
    assert tags.input_tags.pairwise and tags.input_tags.sparse
    assert tags.input_tags.positive_only and not tags.target_tags.required
    assert tags.requires_fit


# set_output(transform="pandas") on a graph: the frame's index is the node ids

def _graphs():
    """The karate club as an edge table (more edges than nodes), as an edge table of as
    many edges as nodes (a ring), as networkx, igraph-like and ``edge_index``-like objects."""
    pd = pytest.importorskip("pandas")
    import networkx as nx

    from kernelne import load_dataset

    edges = load_dataset("karate").graph.edges()
    ring = [(f"n{i}", f"n{(i + 1) % 12}") for i in range(12)]

    class EdgeIndex:  # a PyG Data in miniature
        edge_index = edges.T.copy()
        num_nodes = 34

    return {
        "edge table": pd.DataFrame(edges + 100, columns=["source", "target"]),
        "ring table": pd.DataFrame(ring, columns=["source", "target"],
                                   index=[f"row{i}" for i in range(12)]),
        "networkx": nx.relabel_nodes(nx.karate_club_graph(), lambda v: f"v{v}"),
        "edge_index": EdgeIndex(),
    }


@pytest.mark.parametrize("kind", ["edge table", "ring table", "networkx", "edge_index"])
def test_set_output_pandas_indexes_the_rows_by_node(kind):
    pd = pytest.importorskip("pandas")
    graph = _graphs()[kind]
    model = KernelNE(**WALKS).set_output(transform="pandas")
    frame = model.fit_transform(graph)
    assert isinstance(frame, pd.DataFrame) and frame.shape == model.embedding_.shape
    assert frame.index.tolist() == model.nodes_.tolist() and frame.index.name == "node"
    np.testing.assert_array_equal(frame.to_numpy(), model.embedding_)
    again = model.transform(graph)
    assert again.index.tolist() == model.nodes_.tolist()
    assert model.transform().index.tolist() == model.nodes_.tolist()


def test_set_output_pandas_indexes_igraph_rows_by_node():
    pytest.importorskip("pandas")
    ig = pytest.importorskip("igraph")
    graph = ig.Graph([(0, 1), (1, 2), (2, 0), (2, 3)])
    graph.vs["name"] = ["a", "b", "c", "d"]
    frame = KernelNE(**{**WALKS, "dim": 2}).set_output(transform="pandas").fit_transform(graph)
    assert frame.index.tolist() == ["a", "b", "c", "d"]


def test_set_output_pandas_keeps_the_index_of_a_matrix_frame():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    A = (rng.random((12, 12)) < 0.4).astype(float)
    A = np.triu(A, 1) + np.triu(A, 1).T
    names = [f"node{i}" for i in range(12)]
    frame = KernelNE(**WALKS).set_output(transform="pandas").fit_transform(
        pd.DataFrame(A, index=names, columns=names))
    assert frame.index.tolist() == names
