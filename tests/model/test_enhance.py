"""kernelne.propagate: any embedding's rows, matched to the graph's nodes by id, propagated
as ProNE's enhancement; and ``kernelne propagate EMB GRAPH -o OUT``."""

from __future__ import annotations

import numpy as np
import pytest
from cli_runs import EDGES, only_error_line, run_cli
from prone_reference import aligned, reference_propagation

import kernelne
from kernelne import Graph, InputError, load_embedding, load_graph, save_embedding
from kernelne.cli import propagate as propagate_cli
from kernelne.engine import propagation
from kernelne.engine.propagation import Propagation


@pytest.fixture()
def ring(tmp_path):
    path = tmp_path / "ring.txt"
    path.write_text(EDGES)
    return path


def _rows(n: int, d: int = 6, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)


def test_rows_are_matched_by_id_and_returned_in_the_embeddings_order(ring):
    g = load_graph(ring)
    rows = _rows(g.n_nodes)
    plain = kernelne.propagate(g, rows)  # ids 0..29 in the graph's order
    np.testing.assert_allclose(plain, aligned(plain, reference_propagation(
        g.adjacency(), rows)), atol=1e-4)
    shuffle = np.random.default_rng(1).permutation(g.n_nodes)
    ids = g.nodes[shuffle]
    got = kernelne.propagate(str(ring), (rows[shuffle], ids), "order=10")
    np.testing.assert_array_equal(got, plain[shuffle])


def test_settings_and_file_inputs(ring, tmp_path):
    g = load_graph(ring)
    rows = _rows(g.n_nodes)
    save_embedding(tmp_path / "e.npz", rows, g.nodes)
    got = kernelne.propagate(ring, tmp_path / "e.npz", "order=3,theta=1", workers=1)
    want = reference_propagation(g.adjacency(), rows, Propagation(3, 0.2, 1.0))
    np.testing.assert_allclose(got, aligned(got, want), atol=1e-4)


@pytest.mark.parametrize("ids,words", [
    (list(range(29)), ["1 node(s) of the graph have no row (29)"]),
    (list(range(29)) + [99], ["1 node(s) of the graph have no row (29)",
                              "1 row(s) name no node of the graph (99)"]),
    ([str(i) for i in range(30)] + ["x"], ["1 row(s) name no node of the graph (x)"]),
])
def test_ids_that_do_not_match_are_named(ring, ids, words):
    with pytest.raises(InputError) as err:
        kernelne.propagate(ring, (_rows(len(ids)), np.array(ids, dtype=object)))
    for word in words:
        assert word in str(err.value)


def test_settings_off_or_out_of_range_are_refused(ring):
    for spec, word in [(False, "turn the propagation off"), ("order=1000", "at most 100"),
                       ("mu=5", "mu must be in")]:
        with pytest.raises(InputError, match=word):
            kernelne.propagate(ring, _rows(30), spec)


def test_the_command_writes_the_propagated_rows_with_their_ids(ring, tmp_path, capsys):
    g = load_graph(ring)
    rows = _rows(g.n_nodes, 8)
    names = np.array([f"n{x}" for x in g.nodes], dtype=object)
    named = tmp_path / "named.txt"
    named.write_text("".join(f"n{u} n{v}\n" for u, v in g.edges()))
    save_embedding(tmp_path / "e.npz", rows[::-1], names[::-1])
    code, err = run_cli(["propagate", tmp_path / "e.npz", named, "-o", tmp_path / "p.npz",
                         "--order", "5", "--workers", "1"], capsys)
    assert code == 0, err
    out_rows, out_ids = load_embedding(tmp_path / "p.npz")
    assert list(out_ids) == list(names[::-1])
    want = kernelne.propagate(Graph.from_edges(g.edges()[:, 0], g.edges()[:, 1]),
                              rows, "order=5")
    np.testing.assert_allclose(out_rows, want[::-1], atol=1e-6)


@pytest.mark.parametrize("extra,words", [
    (["--order", "0"], "order must be a whole number >= 1"),
    (["--order", "2.5"], "order must be a whole number"),
    (["--theta", "30"], "theta must be at most 20"),
    (["--mu", "-1"], "mu must be in [0, 2]"),
])
def test_the_command_refuses_bad_settings_in_one_line_and_writes_nothing(ring, tmp_path,
                                                                         capsys, extra, words):
    save_embedding(tmp_path / "e.npy", _rows(30))
    code, err = run_cli(["propagate", tmp_path / "e.npy", ring, "-o", tmp_path / "p.npy",
                         *extra], capsys)
    assert code == 2 and words in only_error_line(err)
    assert not (tmp_path / "p.npy").exists()


def test_the_command_names_the_embedding_file_on_a_mismatch(ring, tmp_path, capsys):
    save_embedding(tmp_path / "e.npy", _rows(20))
    code, err = run_cli(["propagate", tmp_path / "e.npy", ring, "-o", tmp_path / "p.npy"],
                        capsys)
    line = only_error_line(err)
    assert code == 2 and "e.npy" in line and "10 node(s) of the graph have no row" in line
    assert not (tmp_path / "p.npy").exists()


def test_the_parsers_defaults_are_the_engines():
    assert (propagate_cli.DEFAULT_ORDER, propagate_cli.DEFAULT_MU, propagate_cli.DEFAULT_THETA
            ) == (propagation.DEFAULT_ORDER, propagation.DEFAULT_MU, propagation.DEFAULT_THETA)
