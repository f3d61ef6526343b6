"""New nodes without retraining: the model file, ``partial_fit``, the frozen-row trainer and
``kernelne update``."""

from __future__ import annotations

import numpy as np
import pytest

from kernelne import Graph, InputError, KernelNE
from kernelne.cli.app import main
from kernelne.cli.demo import planted_partition
from kernelne.embedding_io import load_embedding
from kernelne.engine.kernels import Kernel, dictionary_arrays
from kernelne.engine.sampling import alias_table
from kernelne.engine.trainer import KernelArrays, Noise, TrainSettings, train_walks
from kernelne.engine.walks import WalkCorpus
from kernelne.graphs.npz import save_graph
from kernelne.parallel import numba_threads

SMALL = dict(dim=16, walks_per_node=10, walk_length=8, window=4, workers=1, random_state=3,
             sigma=0.5,  # the default width collapses on this dense graph at these sizes
             propagate=False)  # rows as trained (a propagated update: test_propagate.py)
CLI_SMALL = ["--dim", "8", "--walks-per-node", "5", "--walk-length", "6", "--window", "3",
             "--seed", "1", "--workers", "1", "--quiet"]


def without(graph: Graph, held: np.ndarray) -> Graph:
    """``graph`` without the nodes ``held`` (dense ids) and their edges; user ids kept."""
    keep = np.ones(graph.n_nodes, dtype=bool)
    keep[held] = False
    e = graph.edges()
    e = e[keep[e[:, 0]] & keep[e[:, 1]]]
    dense = np.cumsum(keep) - 1
    return Graph.from_edges(dense[e[:, 0]], dense[e[:, 1]], n_nodes=int(keep.sum()),
                            nodes=graph.nodes[keep])


@pytest.fixture(scope="module")
def grown():
    """A planted partition (4 groups of 100), a base model fitted without 40 of its nodes."""
    graph, groups = planted_partition(seed=0)
    held = np.sort(np.random.default_rng(0).choice(graph.n_nodes, 40, replace=False))
    base = KernelNE(**SMALL).fit(without(graph, held))
    return graph, groups, held, base


def fitted_copy(model: KernelNE, tmp_path) -> KernelNE:
    path = tmp_path / "m.npz"
    model.save_model(path)
    return KernelNE.load_model(path)


# ---- model file ---------------------------------------------------------------------------

@pytest.mark.parametrize("string_ids", [False, True])
def test_model_file_round_trips_bit_for_bit(kite, tmp_path, string_ids):
    graph = kite
    if string_ids:
        graph = Graph.from_edges(*kite.edges().T, nodes=np.array(
            [f"n{i}" for i in range(kite.n_nodes)], dtype=object))
    model = KernelNE(kernel="multi", kernels=["gauss:1.2345678901", Kernel("schoenberg", 2.5)],
                     **SMALL).fit(graph)
    back = fitted_copy(model, tmp_path)
    assert back.get_params()["kernels"] == ["gauss:1.2345678901", "sch:2.5"]
    params = {k: v for k, v in model.get_params().items() if k != "kernels"}
    assert {k: v for k, v in back.get_params().items() if k != "kernels"} == params
    for name in ("embedding_", "context_embedding_", "beta_", "walk_counts_", "degrees_"):
        a, b = getattr(model, name), getattr(back, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert back.nodes_.dtype.kind == model.nodes_.dtype.kind
    assert list(back.nodes_) == list(model.nodes_)
    assert back.kernels_ == model.kernels_ and back.kernel_scale_ == model.kernel_scale_
    assert back.beta_update_ == model.beta_update_


def test_foreign_and_corrupt_model_files_are_input_errors(kite, tmp_path):
    model = KernelNE(**SMALL).fit(kite)
    good = tmp_path / "good.npz"
    model.save_model(good)
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip file at all")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[:500])
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, x=np.arange(3))
    graph_file = tmp_path / "graph.npz"
    save_graph(kite, graph_file)
    arrays = dict(np.load(good))
    arrays["context_embedding"] = arrays["context_embedding"][:-1]
    shapes = tmp_path / "shapes.npz"
    np.savez(shapes, **arrays)
    cases = [(garbage, "not a readable model file"), (truncated, "not a readable model file"),
             (foreign, "not a kernelne model file"), (graph_file, "not a kernelne model file"),
             (shapes, r"corrupt model file \(context_embedding has shape \(\d+, 16\), not "),
             (tmp_path / "missing.npz", "readable")]
    for path, message in cases:
        with pytest.raises(InputError, match=message) as err:
            KernelNE.load_model(path)
        assert str(path) in str(err.value)


# ---- partial_fit: refusals ------------------------------------------------------------------

def test_partial_fit_refuses_other_id_types(grown, tmp_path):
    graph, _, _, base = grown
    named = Graph.from_edges(*graph.edges().T, nodes=np.array(
        [f"n{i}" for i in range(graph.n_nodes)], dtype=object))
    with pytest.raises(InputError, match="ids are strings .* model's are integers"):
        fitted_copy(base, tmp_path).partial_fit(named)


def test_partial_fit_refuses_a_graph_without_most_model_nodes(grown, tmp_path):
    graph, _, _, base = grown
    other = Graph.from_edges(*graph.edges().T, nodes=np.arange(graph.n_nodes) + 10_000)
    with pytest.raises(InputError, match="only 0 of the model's 360 nodes"):
        fitted_copy(base, tmp_path).partial_fit(other)


def test_partial_fit_refuses_another_dim_and_starts_unfitted_models(grown, tmp_path):
    graph, _, _, base = grown
    with pytest.raises(ValueError, match="dimension 16 but its dim setting is 8"):
        fitted_copy(base, tmp_path).set_params(dim=8).partial_fit(graph)
    # an unfitted model: partial_fit starts it, as fit does (scikit-learn's convention)
    fresh = KernelNE(dim=8, walks_per_node=2, walk_length=5, workers=1, random_state=0)
    assert fresh.partial_fit(graph).embedding_.shape == (graph.n_nodes, 8)


# ---- partial_fit: what it learns ------------------------------------------------------------

def test_old_rows_frozen_new_rows_learned_and_informative(grown, tmp_path):
    graph, groups, held, base = grown
    model = fitted_copy(base, tmp_path).partial_fit(graph)
    assert np.array_equal(model.nodes_, graph.nodes)
    old = np.setdiff1d(np.arange(graph.n_nodes), held)
    assert np.array_equal(model.embedding_[old], base.embedding_)  # never written
    assert np.array_equal(model.context_embedding_[old], base.context_embedding_)
    assert np.array_equal(np.sort(model.new_nodes_), held)
    assert len(model.removed_nodes_) == 0 and model.n_pairs_ > 0
    new_rows = model.embedding_[held]
    assert np.isfinite(new_rows).all() and np.abs(new_rows).max() > 0.5 / SMALL["dim"]
    # the new nodes land nearest the centroid of their own group's old rows
    centroids = np.array([base.embedding_[groups[old] == k].mean(axis=0) for k in range(4)])
    dist = ((new_rows[:, None, :] - centroids[None]) ** 2).sum(axis=2)
    assert (dist.argmin(axis=1) == groups[held]).mean() >= 0.9


def test_touched_rate_moves_touched_rows_only(grown, tmp_path):
    graph, _, held, base = grown
    model = fitted_copy(base, tmp_path).partial_fit(graph, touched_rate=0.2)
    old = np.setdiff1d(np.arange(graph.n_nodes), held)
    touched = np.isin(graph.nodes[old], model.touched_nodes_)
    assert 0 < touched.sum() < len(old)
    changed = (model.embedding_[old] != base.embedding_).any(axis=1)
    assert changed[touched].mean() > 0.9 and not changed[~touched].any()


def test_nodes_isolated_at_fit_time_are_relearned_and_no_other_old_row_moves(tmp_path):
    """Old nodes no walk of the fit visited (isolated then: rows never trained) but with edges
    in the grown graph are learned like new nodes; every trained old row stays as it was."""
    graph, groups = planted_partition(seed=0)
    cut = np.sort(np.random.default_rng(1).choice(graph.n_nodes, 12, replace=False))
    e = graph.edges()
    e = e[~np.isin(e, cut).any(axis=1)]  # the 12 nodes are kept, isolated
    base = KernelNE(**SMALL).fit(Graph.from_edges(*e.T, n_nodes=graph.n_nodes,
                                                  nodes=graph.nodes))
    assert (base.degrees_[cut] == 0).all()
    model = fitted_copy(base, tmp_path).partial_fit(graph)
    assert len(model.new_nodes_) == 0 and np.array_equal(np.sort(model.relearned_nodes_), cut)
    assert set(cut) <= set(model.touched_nodes_)
    rest = np.setdiff1d(np.arange(graph.n_nodes), cut)
    assert np.array_equal(model.embedding_[rest], base.embedding_[rest])
    assert np.array_equal(model.context_embedding_[rest], base.context_embedding_[rest])
    # relearned rows join their own group; the fit left them at their random initialisation
    centroids = np.array([base.embedding_[rest][groups[rest] == k].mean(axis=0)
                          for k in range(4)])

    def share_in_own_group(rows):
        dist = ((rows[:, None, :] - centroids[None]) ** 2).sum(axis=2)
        return (dist.argmin(axis=1) == groups[cut]).mean()

    assert share_in_own_group(model.embedding_[cut]) >= 0.9
    assert share_in_own_group(base.embedding_[cut]) <= 0.6


def test_partial_fit_is_reproducible_and_a_no_op_on_the_same_graph(grown, tmp_path):
    graph, _, held, base = grown
    a = fitted_copy(base, tmp_path).partial_fit(graph)
    b = fitted_copy(base, tmp_path).partial_fit(graph)
    assert np.array_equal(a.embedding_, b.embedding_)
    same = fitted_copy(base, tmp_path).partial_fit(without(graph, held))
    assert same.n_pairs_ == 0 and np.array_equal(same.embedding_, base.embedding_)


# ---- the pieces: walks from given nodes, per-row rates in the trainer ----------------------

def test_walk_corpus_from_given_start_nodes(kite):
    corpus = WalkCorpus(kite, walks_per_node=3, walk_length=5, seed=1, chunk_walks=4,
                        starts=np.array([2, 7]))
    walks = np.concatenate([w for _, w in corpus])
    assert corpus.n_walks == 6 and walks.shape == (6, 5)
    assert sorted(walks[:, 0]) == [2, 2, 2, 7, 7, 7]


def test_trainer_rates_ones_is_the_plain_step_and_zeros_write_nothing(kite):
    walks = WalkCorpus(kite, walks_per_node=5, walk_length=6, seed=0).chunk(0, 45)
    kinds, params = dictionary_arrays([Kernel("gauss", 1.0)])
    prob, alias = alias_table(np.bincount(walks.ravel(), minlength=kite.n_nodes) ** 0.75)

    def run(rates):
        A = np.random.default_rng(0).uniform(-0.1, 0.1, (kite.n_nodes, 8)).astype(np.float32)
        B = np.random.default_rng(1).uniform(-0.1, 0.1, (kite.n_nodes, 8)).astype(np.float32)
        with numba_threads(1):  # one thread: no Hogwild races, bit-for-bit comparable
            pairs = train_walks(
                walks, 0, A, B,
                KernelArrays(kinds, params, np.ones(1, np.float32), np.ones(1, np.float32)),
                Noise(prob, alias), TrainSettings(float(walks.size), 3, 2, beta_reg=0.0, seed=5),
                rates=rates,
            )
        return A, B, pairs

    plain, ones = run(None), run(np.ones(kite.n_nodes, np.float32))
    assert all(np.array_equal(x, y) for x, y in zip(plain, ones, strict=True))
    start = run(np.zeros(kite.n_nodes, np.float32))
    A0 = np.random.default_rng(0).uniform(-0.1, 0.1, (kite.n_nodes, 8)).astype(np.float32)
    assert start[2] == 0 and np.array_equal(start[0], A0)
    rates = np.zeros(kite.n_nodes, np.float32)
    rates[[3, 5]] = (1.0, 0.5)
    A, B, pairs = run(rates)
    moved = (A != A0).any(axis=1) | (B != start[1]).any(axis=1)
    assert pairs > 0 and set(np.flatnonzero(moved)) == {3, 5}


# ---- CLI --------------------------------------------------------------------------------------

def test_cli_embed_model_out_then_update(tmp_path, capsys):
    lines = [line for line in open("examples/karate.edgelist") if not line.startswith("#")]
    edges = np.array([line.split() for line in lines], dtype=int)
    old = tmp_path / "old.txt"
    kept = edges[(edges < 30).all(axis=1)]  # members 30..33 join later
    old.write_text("".join(f"{u} {v}\n" for u, v in kept))
    model, emb = tmp_path / "m.npz", tmp_path / "old.npy"
    assert main(["embed", str(old), "-o", str(emb), "--model-out", str(model), *CLI_SMALL]) == 0
    out, model2 = tmp_path / "new.txt", tmp_path / "m2.npz"
    assert main(["update", str(model), "examples/karate.edgelist", "-o", str(out),
                 "--model-out", str(model2), "--workers", "1"]) == 0
    summary = capsys.readouterr().out
    before, old_nodes = load_embedding(emb)
    assert f"{34 - len(old_nodes)} new" in summary
    assert "wrote" in summary and "peak memory" in summary
    vectors, nodes = load_embedding(out)
    assert sorted(nodes) == list(range(34)) and vectors.shape == (34, 8)
    assert np.abs(vectors[np.searchsorted(nodes, old_nodes)] - before).max() < 1e-5  # 6 digits
    assert np.array_equal(KernelNE.load_model(model2).nodes_, nodes)


def test_cli_update_errors_are_one_line(tmp_path, capsys):
    bogus = tmp_path / "bogus.npz"
    bogus.write_bytes(b"nope")
    assert main(["update", str(bogus), "examples/karate.edgelist", "-o",
                 str(tmp_path / "e.npy")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bogus.npz" in err[0] and "model file" in err[0]
    assert main(["embed", "examples/karate.edgelist", "-o", str(tmp_path / "e.npy"),
                 "--method", "hope", "--model-out", str(tmp_path / "m.npz"), "--quiet"]) == 2
    assert "--model-out saves a KernelNE model" in capsys.readouterr().err
    assert not (tmp_path / "e.npy").exists()
