"""The reliability audit: bad input is one line naming the file, line and problem
(exit 2, nothing written), and what the summary says is what happened."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelne.cli.app import main
from kernelne.errors import InputError
from kernelne.graphs.graph import from_networkx, from_scipy, load_graph

EDGES = "\n".join(f"{i} {(i + 1) % 30}" for i in range(30)) + "\n0 15\n3 20\n"
KARATE = Path(__file__).parents[1] / "examples" / "karate.edgelist"
FAST = ["--dim", "4", "--walks-per-node", "2", "--workers", "1", "--quiet"]


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.err


# --- 1. weights outside float32 --------------------------------------------------------------

@pytest.mark.parametrize("weight", ["1e308", "1e-50", "4e38", "1e-40"])
@pytest.mark.parametrize("sep", [" ", "\t", " ,"])  # " ,": the line-by-line reader
def test_weights_float32_cannot_hold_are_refused_with_the_line(tmp_path, capsys, weight, sep):
    path = tmp_path / "w.txt"
    path.write_text(f"0{sep}1{sep}2\n1{sep}2{sep}{weight}\n2{sep}0{sep}1\n")
    out = tmp_path / "emb.txt"
    code, err = _run(["embed", path, "-o", out, *FAST], capsys)
    assert code == 2 and f"{path}:2: weight {weight} is outside the float32 range" in err
    assert "Traceback" not in err and not out.exists() and not list(tmp_path.glob(".*tmp"))


@pytest.mark.parametrize("weight", [1e308, 1e-50])
def test_weights_float32_cannot_hold_are_refused_from_python(weight):
    matrix = sp.coo_matrix(([2.0, weight], ([0, 1], [1, 2])), shape=(3, 3))
    with pytest.raises(InputError, match="outside the float32 range"):
        from_scipy(matrix, directed=True)
    import networkx as nx

    g = nx.Graph()
    g.add_edge(0, 1, weight=1.0)
    g.add_edge(1, 2, weight=weight)
    with pytest.raises(InputError, match="outside the float32 range"):
        from_networkx(g)


def test_mat_weights_float32_cannot_hold_name_the_file(tmp_path):
    from scipy.io import savemat

    path = tmp_path / "g.mat"
    savemat(path, {"network": sp.csc_matrix(np.array([[0, 1e-50], [1e-50, 0]]))})
    with pytest.raises(InputError, match=f"{path}: edge weight 1e-50 is outside"):
        load_graph(path)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.floats(min_value=0, exclude_min=True, allow_infinity=False))
def test_a_weight_is_kept_or_refused_never_changed_silently(tmp_path, weight):
    path = tmp_path / "w.txt"
    path.write_text(f"0 1 2\n1 2 {weight!r}\n")
    try:
        g = load_graph(path, directed=True)
    except InputError as exc:
        assert ":2: weight" in str(exc)
        return
    w = g.weights[g.indptr[1]] if g.weights is not None else np.float32(1)
    assert np.isfinite(w) and w >= np.finfo(np.float32).tiny
    assert w == np.float32(weight)


# --- 2. disk full while writing ---------------------------------------------------------------

class _FullDisk:
    """A file whose writes fail as on a full disk."""

    def __init__(self, fh):
        self.fh = fh

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()


@pytest.mark.parametrize("name", ["emb.txt", "emb.npy"])
def test_disk_full_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch, name):
    import builtins

    import kernelne.embedding_io

    graph = tmp_path / "g.txt"
    graph.write_text(EDGES)
    out = tmp_path / name
    monkeypatch.setattr(kernelne.embedding_io, "open",
                        lambda *a, **k: _FullDisk(builtins.open(*a, **k)), raising=False)
    code, err = _run(["embed", graph, "-o", out, *FAST], capsys)
    assert code == 2 and err.strip().splitlines() == [
        f"kernelne: error: cannot write {out}: No space left on device"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.txt"]


# --- 11. temporaries of killed writers --------------------------------------------------------

def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    out = tmp_path / "emb.txt"
    script = ("import os, signal, sys\nfrom kernelne.outputs import atomic_path\n"
              "with atomic_path(sys.argv[1]) as tmp:\n"
              "    tmp.write_text('half')\n    os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", script, str(out)], env=_env())
    assert done.returncode == -9
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".emb.txt.") and left[0].endswith(".tmp")
    from kernelne.outputs import atomic_path

    live = tmp_path / f".emb.txt.{os.getpid()}.abcdefgh.tmp"  # a live writer's: kept
    live.write_text("being written")
    with atomic_path(out) as tmp:
        tmp.write_text("whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, "emb.txt"])
    assert out.read_text() == "whole"


def test_concurrent_writers_leave_one_whole_file(tmp_path):
    out = tmp_path / "emb.txt"
    script = ("import sys\nfrom kernelne.outputs import atomic_path\n"
              "for _ in range(40):\n"
              "    with atomic_path(sys.argv[1]) as tmp:\n"
              "        tmp.write_text(sys.argv[2] * 100000)\n")
    writers = [subprocess.Popen([sys.executable, "-c", script, str(out), c], env=_env())
               for c in "abcd"]
    assert all(w.wait() == 0 for w in writers)
    text = out.read_text()
    assert len(text) == 100000 and len(set(text)) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["emb.txt"]


def _env():
    return {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}


# --- 3. a huge --dim --------------------------------------------------------------------------

@pytest.mark.parametrize("n, d, chunk", [(34, 128, 1000), (7, 5, 3), (10, 1, 1 << 20), (3, 9, 4)])
def test_float32_initialisation_is_bit_for_bit_the_float64_one(monkeypatch, n, d, chunk):
    import kernelne.engine.rows

    monkeypatch.setattr(kernelne.engine.rows, "CHUNK_VALUES", chunk)
    before = np.random.default_rng(7).uniform(-0.5 / d, 0.5 / d, size=(n, d)).astype(np.float32)
    after = kernelne.engine.rows.uniform_rows(np.random.default_rng(7), n, d, 0.5 / d)
    assert after.dtype == np.float32 and after.tobytes() == before.tobytes()


def test_a_huge_dim_is_one_line_naming_the_sizes(tmp_path, capsys):
    out = tmp_path / "emb.txt"
    code, err = _run(["embed", KARATE, "-o", out, *FAST,
                      "--dim", str(10**12)], capsys)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "2 x 34 nodes x 1,000,000,000,000 float32 = 253,319.7 GiB" in err and "--dim" in err
    assert not out.exists()


def test_running_out_of_memory_for_the_rows_is_one_line(tmp_path, capsys, monkeypatch):
    import kernelne.model.kernelne

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(kernelne.model.kernelne, "uniform_rows", no_memory)
    code, err = _run(["embed", KARATE, "-o", tmp_path / "e.txt", *FAST],
                     capsys)
    assert code == 2 and err.strip() == ("kernelne: error: dim=4: not enough free memory for "
                                         "the rows (2 x 34 nodes x 4 float32 = 0.0 GiB): lower "
                                         "--dim")


# --- 4. directed: nodes with in-edges but no out-edges ----------------------------------------

def test_directed_sinks_are_not_called_isolated(tmp_path, capsys):
    path = tmp_path / "d.txt"
    path.write_text("0 1\n1 2\n2 0\n0 3\n1 3\n2 4\n4 0\n")
    code, err = _run(["embed", path, "-o", tmp_path / "e.txt", "--directed", *FAST], capsys)
    assert code == 0 and "isolated" not in err
    assert "kernelne: note: 1 nodes with in-edges but no out-edges: walks stop there" in err


def test_what_happens_to_sink_and_isolated_rows():
    from kernelne.engine.rows import uniform_rows
    from kernelne.engine.sampling import seed_to_uint64
    from kernelne.model.kernelne import KernelNE

    M = np.zeros((6, 6))
    for u, v in [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 4), (4, 0)]:
        M[u, v] = 1
    g = from_scipy(sp.csr_matrix(M), directed=True)
    assert g.sink_nodes().tolist() == [3] and g.isolated_nodes().tolist() == [5]
    m = KernelNE(dim=8, walks_per_node=20, workers=1, random_state=1, verbose=False,
                 robust=False, normalize="none").fit(g)  # the rows as trained
    init = uniform_rows(np.random.default_rng(int(seed_to_uint64(1))), 6, 8, 0.5 / 8)
    assert not np.array_equal(m.embedding_[3], init[3])  # the sink's row is trained
    assert np.array_equal(m.embedding_[5], init[5])  # the isolated node's stays
    assert m.isolated_nodes_.tolist() == [5]


# --- 5. kernel options the chosen kernel ignores ----------------------------------------------

@pytest.mark.parametrize("extra, flag", [
    (["--kernels", "gauss:1,sch:1"], "--kernels"),
    (["--kernel", "sch", "--sigma", "2"], "--sigma"),
    (["--alpha", "2"], "--alpha"),
    (["--beta-update", "simplex"], "--beta-update"),
])
def test_kernel_options_the_kernel_ignores_get_a_note(tmp_path, capsys, extra, flag):
    code, err = _run(["embed", KARATE, "-o", tmp_path / "e.txt", *FAST, *extra], capsys)
    assert code == 0 and f"kernelne: note: {flag} is not used by --kernel" in err


def test_kernel_options_the_kernel_uses_get_no_note(tmp_path, capsys):
    code, err = _run(["embed", KARATE, "-o", tmp_path / "e.txt", *FAST, "--kernel", "multi",
                      "--kernels", "gauss:1,sch:1", "--beta-reg", "0.1"], capsys)
    assert code == 0 and "note" not in err


# --- 6. output names: .NPY, .npz, - -----------------------------------------------------------

def test_npy_in_any_case_is_numpy(tmp_path, capsys):
    from kernelne.embedding_io import load_embedding

    out = tmp_path / "e.NPY"
    assert _run(["embed", KARATE, "-o", out, *FAST], capsys)[0] == 0
    assert np.load(out).shape == (34, 4)
    assert load_embedding(out)[0].shape == (34, 4)


def test_npz_output_is_a_numpy_archive_of_vectors_and_ids(tmp_path, capsys):
    out = tmp_path / "e.npz"
    assert _run(["embed", KARATE, "-o", out, *FAST], capsys)[0] == 0
    with np.load(out) as z:  # not text under an .npz name
        assert z["embedding"].shape == (34, 4) and list(z["nodes"][:2]) == [0, 1]


def test_dash_writes_the_text_embedding_to_stdout_and_the_summary_to_stderr(tmp_path, capsys,
                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = main(["embed", str(KARATE), "-o", "-", *FAST[:-1]])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert code == 0 and lines[0] == "34 4" and len(lines) == 35
    assert "wrote      standard output" in captured.err and list(tmp_path.iterdir()) == []


# --- 7. a symbolic link loop ------------------------------------------------------------------

@pytest.mark.parametrize("name", ["loop.txt", "loop.mat", "loop.npz"])
def test_a_symlink_loop_is_named(tmp_path, capsys, name):
    loop = tmp_path / name
    os.symlink(loop, loop)
    code, err = _run(["embed", loop, "-o", tmp_path / "e.txt", *FAST], capsys)
    assert code == 2 and err.strip() == (f"kernelne: error: {loop}: cannot read file: symbolic "
                                         "link loop")


def test_a_missing_file_is_still_no_such_file(tmp_path, capsys):
    code, err = _run(["embed", tmp_path / "none.txt", "-o", tmp_path / "e.txt", *FAST], capsys)
    assert code == 2 and err.strip().endswith("none.txt: cannot read file: no such file")


# --- 8. --header and header lines -------------------------------------------------------------

@pytest.mark.parametrize("sep", [" ", ",", " ,"])
def test_header_on_a_file_without_one_is_refused(tmp_path, capsys, sep):
    path = tmp_path / "g.txt"
    path.write_text(EDGES.replace(" ", sep))
    out = tmp_path / "e.txt"
    code, err = _run(["embed", path, "-o", out, "--header", *FAST], capsys)
    assert code == 2 and f"{path}:1: --header (header=True): the first line '0 1' is an edge" in err
    assert not out.exists()


def test_header_still_skips_column_names(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("a b\n" + EDGES)
    assert load_graph(path, header=True).n_edges == 32


@pytest.mark.parametrize("first", ["source,target", "Source Target Weight", "from\tto"])
def test_known_column_names_above_string_ids_are_skipped_with_a_warning(tmp_path, first):
    sep = "," if "," in first else ("\t" if "\t" in first else " ")
    weight = f"{sep}1.5" if "Weight" in first else ""
    body = "".join(f"{u}{sep}{v}{weight}\n" for u, v in [("a", "b"), ("b", "c"), ("c", "a")])
    path = tmp_path / "g.txt"
    path.write_text(first + "\n" + body)
    with pytest.warns(UserWarning, match=r"g.txt:1: .* taken for column names and skipped"):
        g = load_graph(path)
    assert sorted(g.nodes) == ["a", "b", "c"] and g.n_edges == 3


def test_an_unknown_header_above_string_ids_is_pointed_out(tmp_path, capsys):
    path = tmp_path / "g.txt"
    path.write_text("person friend\nann bob\nbob cy\ncy ann\n")
    out = tmp_path / "e.txt"
    code, err = _run(["embed", path, "-o", out, *FAST], capsys)
    assert code == 0 and (f"kernelne: warning: {path}:1: the first line 'person friend' names "
                          "two nodes that appear nowhere else") in err
    with pytest.warns(UserWarning, match="--header"):
        load_graph(path)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_graph(path, header=True).n_nodes == 3


# --- 9. update: directed against undirected ---------------------------------------------------

@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    for name, extra in [("directed", ["--directed"]), ("undirected", [])]:
        assert main(["embed", str(KARATE), "-o", str(folder / f"{name}.npy"), *FAST,
                     "--model-out", str(folder / f"{name}.npz"), *extra]) == 0
    return folder


@pytest.mark.parametrize("fitted, extra, message", [
    ("directed", [], "fitted on a directed graph but this graph is read undirected: pass "
     "--directed"),
    ("undirected", ["--directed"], "fitted on a undirected graph but this graph is read "
     "directed: leave out --directed"),
])
def test_update_refuses_the_other_reading_of_the_graph(models, tmp_path, capsys, fitted, extra,
                                                       message):
    out = tmp_path / "u.txt"
    code, err = _run(["update", models / f"{fitted}.npz", KARATE, "-o", out, "--quiet", *extra],
                     capsys)
    assert code == 2 and message in err and not out.exists()
    code, err = _run(["update", models / f"{fitted}.npz", KARATE, "-o", out, "--quiet",
                      *(["--directed"] if fitted == "directed" else [])], capsys)
    assert code == 0, err


def test_older_model_files_fall_back_to_params_or_accept(models, tmp_path):
    import json

    from kernelne.model.kernelne import KernelNE

    with np.load(models / "directed.npz") as z:
        arrays = {k: z[k] for k in z.files if k != "directed"}
    np.savez(tmp_path / "old.npz", **arrays)  # written before the key existed
    assert KernelNE.load_model(tmp_path / "old.npz").directed_ is None
    KernelNE.load_model(tmp_path / "old.npz").partial_fit(load_graph(KARATE))  # accepted
    params = json.loads(str(arrays["params"]))
    np.savez(tmp_path / "p.npz", **{**arrays, "params": np.array(json.dumps(
        {**params, "directed": True}))})
    model = KernelNE.load_model(tmp_path / "p.npz")
    assert model.directed_ is True
    with pytest.raises(InputError, match="fitted on a directed graph"):
        model.partial_fit(load_graph(KARATE))
    model.partial_fit(KARATE)  # a path is read as the model's graph was


# --- 10. reproduce validates before creating anything -----------------------------------------

@pytest.mark.parametrize("option, value", [("--workers", "0"), ("--workers", "-2"),
                                           ("--repeats", "0")])
def test_reproduce_refuses_bad_counts_before_creating_anything(tmp_path, capsys, monkeypatch,
                                                               option, value):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--quick", "--out", str(tmp_path / "r"), option, value])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"argument {option}: {value}: must be at least 1" in err
    assert list(tmp_path.iterdir()) == []


# --- 12. honest output: compiling, unmeasured health ------------------------------------------

def test_compiling_is_announced_once_and_timed(capsys):
    from numba import njit

    from kernelne.engine.compiling import MESSAGE, watch_compiling

    @njit
    def fresh(x):  # never compiled before: a real compilation
        return x * 2 + 1

    with watch_compiling() as watch:
        assert fresh(3) == 7 and fresh(4) == 9
    assert capsys.readouterr().err.splitlines() == [MESSAGE]
    assert watch.seconds["fresh"] > 0 and watch.total == watch.of("fresh")
    with watch_compiling() as again:
        fresh(5)
    assert capsys.readouterr().err == "" and again.total == 0.0


def test_a_warm_run_does_not_claim_to_compile_and_small_graphs_are_not_measured(tmp_path,
                                                                                capsys):
    from kernelne.engine.compiling import MESSAGE

    args = ["embed", str(KARATE), "-o", str(tmp_path / "e.txt"), *FAST[:-1]]
    assert main(args) == 0  # compiles if this process has not yet
    capsys.readouterr()
    assert main(args) == 0
    captured = capsys.readouterr()
    assert MESSAGE not in captured.err and "compiling" not in captured.out
    assert ("health     not measured (fewer than 50 nodes in the walks: too few for the "
            "statistics)") in captured.out
    assert "neighbour AUC" not in captured.out


def test_describe_fit_takes_compiling_out_of_the_speed():
    from types import SimpleNamespace

    from kernelne.cli.options import describe_fit
    from kernelne.engine.diagnostics import EmbeddingHealth

    model = SimpleNamespace(
        n_walks_=10, walk_length=10, n_pairs_=1000, fit_seconds_=21.0, kernels_=["gauss:1"],
        shared_negatives=False, loss="squared", window_shrink=False, subsample=0.0,
        narrowed_=[], kernel_scale_=1.0, loss_history_=np.empty((0, 3)),
        health_=EmbeddingHealth(0.9, 0.5, 0.1),
        stage_seconds_={"walks": 0.5, "training": 0.5}, compile_seconds_=20.0)
    graph = SimpleNamespace(summary=lambda: "g")
    text = describe_fit(model, graph, 22.0)
    assert "1,000 at 1,000 pairs/s (compiling excluded)" in text
    assert "compiling 20.0 s (first run only), walks 0.5 s, training 0.5 s" in text
    assert "neighbour AUC 0.900" in text


@pytest.mark.parametrize("bad", [np.inf, 0.0, 1e-40])
def test_npz_graph_weights_float32_cannot_use_are_refused(tmp_path, bad):
    from kernelne.graphs.npz import save_graph

    path = tmp_path / "g.npz"
    save_graph(load_graph(from_scipy(sp.csr_matrix(np.array([[0, 2.0], [2.0, 0]])))), path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["weights"] = np.array([bad, bad], dtype=np.float32)
    np.savez(path, **arrays)
    with pytest.raises(InputError, match="edge weights must be positive normal float32"):
        load_graph(path)


def test_a_special_file_output_is_refused_not_replaced(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, err = _run(["embed", KARATE, "-o", fifo, *FAST], capsys)
    assert code == 2 and "not a regular file" in err
    import stat

    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still the pipe
