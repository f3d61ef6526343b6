"""``--propagate``: the rows of ``embed`` propagated for KernelNE and a baseline, the same
shape and ids; a bad setting refused while parsing; ``auto`` said in the summary and off with
``--paper`` and the baselines; ``update`` of a propagated model."""

from __future__ import annotations

import numpy as np
import pytest
from cli_runs import FAST, KARATE
from cli_runs import run_cli as _run

from kernelne.cli.app import main
from kernelne.embedding_io import load_embedding


@pytest.mark.parametrize("method", [["--method", "kernelne"], ["--method", "deepwalk"]])
def test_propagate_changes_the_rows_and_keeps_shape_and_ids(tmp_path, capsys, method):
    plain, spread = tmp_path / "plain.npz", tmp_path / "spread.npz"
    assert _run(["embed", KARATE, "-o", plain, *FAST, "--seed", "1", *method], capsys)[0] == 0
    code, err = _run(["embed", KARATE, "-o", spread, *FAST, "--seed", "1", *method,
                      "--propagate", "order=5,mu=0.3"], capsys)
    assert code == 0 and "not used" not in err
    rows, ids = load_embedding(plain)
    rows2, ids2 = load_embedding(spread)
    assert rows2.shape == rows.shape and np.array_equal(ids2, ids)
    assert np.abs(np.abs(rows2) - np.abs(rows)).max() > 0.05
    if method[1] == "deepwalk":  # the baseline's propagated rows have unit norm
        np.testing.assert_allclose(np.linalg.norm(rows2, axis=1), 1.0, rtol=1e-5)


def test_prone_propagates_by_default_and_off_turns_it_off(tmp_path, capsys):
    outs = {}
    for name, extra in (("default", []), ("alone", ["--propagate"]),
                        ("off", ["--propagate", "off"])):
        outs[name] = tmp_path / f"{name}.npy"
        assert _run(["embed", KARATE, "-o", outs[name], "--method", "prone", "--dim", "4",
                     "--seed", "0", "--quiet", *extra], capsys)[0] == 0
    rows = {name: np.load(path) for name, path in outs.items()}
    np.testing.assert_array_equal(rows["alone"], rows["default"])
    assert np.abs(np.abs(rows["off"]) - np.abs(rows["default"])).max() > 0.05


@pytest.mark.parametrize("value, message", [
    ("order=0", "argument --propagate: order must be a whole number >= 1, got 0"),
    ("mu=-1", "argument --propagate: mu must be in [0, 2], got -1"),
    ("theta=x", "argument --propagate: theta must be a number, got 'x'"),
    ("depth=3", "argument --propagate: 'depth=3' is not order=K, mu=M or theta=T"),
])
@pytest.mark.parametrize("method", ["kernelne", "netmf"])
def test_a_bad_propagate_is_refused_while_parsing(tmp_path, capsys, value, message, method):
    out = tmp_path / "e.npy"
    with pytest.raises(SystemExit) as exit_:
        main(["embed", str(KARATE), "-o", str(out), *FAST, "--method", method,
              "--propagate", value])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and message in err
    assert "Traceback" not in err and not out.exists()


def test_update_of_a_propagated_model_propagates_the_grown_rows(tmp_path, capsys):
    model, out = tmp_path / "m.npz", tmp_path / "u.npy"
    assert _run(["embed", KARATE, "-o", tmp_path / "e.npy", *FAST, "--propagate",
                 "--model-out", model], capsys)[0] == 0
    grown = tmp_path / "grown.txt"
    grown.write_text(KARATE.read_text() + "\n0 100\n")
    code, err = _run(["update", model, grown, "-o", out, "--quiet"], capsys)
    assert code == 0 and err == ""
    rows, ids = load_embedding(out)
    assert rows.shape == (35, 4) and 100 in ids.tolist()
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 2.5, rtol=1e-5)  # unit x 2.5


def test_auto_is_said_and_paper_and_baselines_keep_their_rows(tmp_path, capsys):
    dense = tmp_path / "dense.edges"
    rng = np.random.default_rng(0)
    pairs = {tuple(sorted(p)) for p in rng.integers(0, 60, (400, 2)).tolist() if p[0] != p[1]}
    dense.write_text("".join(f"{u} {v}\n" for u, v in sorted(pairs)))
    fast = [o for o in FAST if o != "--quiet"]
    assert main(["embed", str(dense), "-o", str(tmp_path / "a.npy"), *fast]) == 0
    out = capsys.readouterr().out
    assert "propagated order=10,mu=0.2,theta=0.5 (auto: mean degree " in out
    assert " >= 8): band-pass filter, thin SVD (health: the rows as trained)" in out
    assert main(["embed", str(dense), "-o", str(tmp_path / "p.npy"), *fast, "--paper"]) == 0
    assert "propagated" not in capsys.readouterr().out
    for method in ("deepwalk", "line"):
        assert main(["embed", str(dense), "-o", str(tmp_path / f"{method}.npy"), *fast,
                     "--seed", "0", "--method", method, "--propagate", "off"]) == 0
        plain = load_embedding(tmp_path / f"{method}.npy")[0]
        assert main(["embed", str(dense), "-o", str(tmp_path / f"{method}2.npy"), *fast,
                     "--seed", "0", "--method", method]) == 0
        np.testing.assert_array_equal(load_embedding(tmp_path / f"{method}2.npy")[0], plain)
        assert main(["embed", str(dense), "-o", str(tmp_path / f"{method}3.npy"), *fast,
                     "--seed", "0", "--method", method, "--propagate", "auto"]) == 0
        rows = load_embedding(tmp_path / f"{method}3.npy")[0]  # given: auto, on this graph
        np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    capsys.readouterr()


def test_the_fit_summary_names_the_propagation(tmp_path, capsys):
    fast = [o for o in FAST if o != "--quiet"]
    assert main(["embed", str(KARATE), "-o", str(tmp_path / "e.npy"), *fast,
                 "--propagate", "theta=1"]) == 0
    out = capsys.readouterr().out
    assert "propagated order=10,mu=0.2,theta=1: band-pass filter, thin SVD" in out
    assert main(["embed", str(KARATE), "-o", str(tmp_path / "f.npy"), *fast]) == 0
    assert "propagated no (auto: mean degree 4.6 < 8)" in capsys.readouterr().out


def test_the_update_summary_says_every_row_is_propagated_again(tmp_path, capsys):
    """Audit 6 M13: a propagated model's update changes every output row, and says so."""
    grown = tmp_path / "grown.txt"
    grown.write_text(KARATE.read_text() + "\n0 100\n")
    for name, extra in (("spread", ["--propagate"]), ("plain", ["--propagate", "off"])):
        model = tmp_path / f"{name}.npz"
        assert _run(["embed", KARATE, "-o", tmp_path / f"{name}.npy", *FAST, *extra,
                     "--model-out", model], capsys)[0] == 0
        assert main(["update", str(model), str(grown), "-o", str(tmp_path / f"u{name}.npy"),
                     "--workers", "1"]) == 0
        out = capsys.readouterr().out
        if name == "spread":
            assert "1 new, 0 relearned (no edge when fitted), 1 touched (rate 0), 0 removed; " \
                   "every other row as trained kept as it was\n" in out
            assert "\npropagated order=10,mu=0.2,theta=0.5 again, over the whole new graph: " \
                   "every row of the output changes (the propagation is global)\n" in out
        else:
            assert "0 removed; every other row kept as it was\n" in out
            assert "propagated" not in out


def test_a_baseline_summary_names_its_propagation(tmp_path, capsys):
    """Audit 6 P10b: a baseline's summary says whether its rows were propagated."""
    from kernelne.baselines import DeepWalk
    from kernelne.engine.propagation import Propagation

    fast = [o for o in FAST if o != "--quiet"]
    cases = [(["--method", "deepwalk", "--propagate"],
              "propagated order=10,mu=0.2,theta=0.5: band-pass filter, thin SVD\n"),
             (["--method", "hope", "--propagate", "order=3"],
              "propagated order=3,mu=0.2,theta=0.5: band-pass filter, thin SVD\n"),
             (["--method", "deepwalk", "--propagate", "auto"],
              "propagated no (auto: mean degree 4.6 < 8)\n"),
             (["--method", "prone"], "propagated order=10,mu=0.2,theta=0.5: band-pass"),
             (["--method", "deepwalk"], None), (["--method", "prone", "--propagate", "off"], None)]
    for i, (extra, line) in enumerate(cases):
        assert main(["embed", str(KARATE), "-o", str(tmp_path / f"e{i}.npy"), *fast,
                     "--seed", "0", *extra]) == 0
        out = capsys.readouterr().out
        assert ("propagated" not in out) if line is None else (line in out), (extra, out)
    model = DeepWalk(dim=4, walks_per_node=2, workers=1, random_state=0, propagate=True)
    assert model.fit(KARATE).propagation_ == Propagation()
    assert model.propagation_reason_ == "as given"


# P13, P13c, P14: the output has --dim columns, or the run is refused

def _complete(path, n):
    path.write_text("".join(f"{a} {b}\n" for a in range(n) for b in range(a + 1, n)))
    return path


def test_auto_on_fewer_nodes_than_dim_keeps_dim_columns(tmp_path, capsys):
    graph = _complete(tmp_path / "k20.txt", 20)
    out, model = tmp_path / "e.npy", tmp_path / "m.npz"
    code, err = _run(["embed", graph, "-o", out, "--model-out", model, "--walks-per-node", "2",
                      "--workers", "1", "--seed", "0", "--quiet"], capsys)
    assert code == 0, err
    assert np.load(out).shape == (20, 128)
    assert _run(["update", model, graph, "-o", tmp_path / "u.npy", "--quiet"], capsys)[0] == 0
    assert np.load(tmp_path / "u.npy").shape == (20, 128)


def test_auto_on_fewer_nodes_than_dim_is_said(tmp_path, capsys):
    graph = _complete(tmp_path / "k20.txt", 20)
    assert main(["embed", str(graph), "-o", str(tmp_path / "e.npy"), "--walks-per-node", "2",
                 "--workers", "1", "--seed", "0", "--dim", "24"]) == 0
    assert "propagated no (auto: 20 nodes, fewer than dim 24)" in capsys.readouterr().out


@pytest.mark.parametrize("method", ["kernelne", "deepwalk"])
def test_a_given_propagation_on_fewer_nodes_than_dim_is_refused(tmp_path, capsys, method):
    graph = tmp_path / "tiny.txt"
    graph.write_text("0 1\n1 2\n")
    out, model = tmp_path / "e.npy", tmp_path / "m.npz"
    extra = ["--model-out", str(model)] if method == "kernelne" else []
    code, err = _run(["embed", graph, "-o", out, "--dim", "8", "--propagate", "--method", method,
                      "--walks-per-node", "2", "--workers", "1", "--seed", "0", "--quiet",
                      *extra], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert ("the spectral propagation (--propagate) keeps one column per node at most: --dim 8 "
            "must be at most the number of nodes (3): choose a smaller --dim") in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.txt"]


def test_prone_refuses_dim_as_large_as_the_graph_in_the_same_words(tmp_path, capsys):
    code, err = _run(["embed", KARATE, "-o", tmp_path / "e.npy", "--dim", "64", "--seed", "0",
                      "--quiet", "--method", "prone"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "ProNE: --dim 64 must be smaller than the number of nodes (34): choose a smaller --dim" \
        in err
