"""Inputs and outputs: ids kept exactly, pipes read once, inputs never replaced by an output or
a sidecar, both-or-neither outputs, URLs named as such (the fifth audit's cases, by id)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
from cli_runs import EDGES
from cli_runs import run_cli as _run

from kernelne.cli.app import main
from kernelne.embedding_io import load_embedding, save_embedding
from kernelne.errors import InputError

FAST = ["--dim", "4", "--walks-per-node", "2", "--workers", "1", "--seed", "0", "--quiet"]


def _no_work(monkeypatch):
    """Make any graph read fail the test: the command must stop before its work."""
    import kernelne.graphs.graph

    def no_work(*args, **kwargs):
        raise AssertionError("the command started its work before checking its outputs")

    monkeypatch.setattr(kernelne.graphs.graph, "load_graph", no_work)


# E17, E18: string ids holding spaces

def test_ids_with_spaces_round_trip_through_npy_sidecar(tmp_path):
    ids = np.array([f"node {i}" for i in range(5)] + ["  padded ", "tab\there"], dtype=object)
    vectors = np.arange(14, dtype=np.float32).reshape(7, 2)
    save_embedding(tmp_path / "s.npy", vectors, ids)
    back, nodes = load_embedding(tmp_path / "s.npy")
    assert list(nodes) == list(ids)
    np.testing.assert_array_equal(back, vectors)


def test_sidecar_listing_an_id_twice_is_refused(tmp_path):
    np.save(tmp_path / "d.npy", np.zeros((3, 2), dtype=np.float32))
    (tmp_path / "d.nodes.txt").write_text("a b\nc\na b\n")
    with pytest.raises(InputError, match=r"node 'a b' appears twice \(first on line 1\)"):
        load_embedding(tmp_path / "d.npy")


def test_integer_sidecar_still_reads_as_integers(tmp_path):
    save_embedding(tmp_path / "i.npy", np.zeros((3, 2)), np.array([5, 9, 2]))
    assert load_embedding(tmp_path / "i.npy")[1].tolist() == [5, 9, 2]


@pytest.mark.parametrize("bad", ["node 0", "a,b", "#x", ""])
def test_text_output_refuses_ids_it_cannot_hold(tmp_path, bad):
    out = tmp_path / "s.txt"
    with pytest.raises(InputError, match="word2vec text cannot hold it"):
        save_embedding(out, np.zeros((2, 2)), np.array(["ok", bad], dtype=object))
    assert not out.exists()


def test_npy_output_refuses_an_id_with_a_line_break(tmp_path):
    with pytest.raises(InputError, match="line break"):
        save_embedding(tmp_path / "s.npy", np.zeros((2, 2)), np.array(["a", "b\nc"], dtype=object))
    assert os.listdir(tmp_path) == []


def test_embed_refuses_text_output_of_spaced_ids_before_the_fit(tmp_path, capsys, monkeypatch):
    from kernelne.graphs.graph import Graph
    from kernelne.graphs.npz import save_graph

    src, dst = np.arange(6), (np.arange(6) + 1) % 6
    nodes = np.array([f"node {i}" for i in range(6)], dtype=object)
    save_graph(Graph.from_edges(src, dst, None, 6, nodes), tmp_path / "g.npz")
    import kernelne.model.kernelne

    monkeypatch.setattr(kernelne.model.kernelne.KernelNE, "fit",
                        lambda *a, **k: pytest.fail("fitted before the ids were checked"))
    code, err = _run(["embed", tmp_path / "g.npz", "-o", tmp_path / "o.txt", *FAST], capsys)
    assert code == 2 and "'node 0'" in err and "write .npz or .npy" in err
    assert not (tmp_path / "o.txt").exists()


# F40: a FIFO with a writer

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
@pytest.mark.parametrize("header", [False, True])
def test_a_fifo_input_is_read_once(tmp_path, header):
    from kernelne.graphs.graph import load_graph

    fifo = tmp_path / "fifo.txt"
    os.mkfifo(fifo)
    text = ("source target\n" if header else "") + EDGES.replace("0 15", "# a chord\n0,15")

    def writer():
        with open(fifo, "w") as fh:
            fh.write(text)

    threading.Thread(target=writer, daemon=True).start()
    result = {}
    reader = threading.Thread(target=lambda: result.update(g=load_graph(fifo, header=header)),
                              daemon=True)
    reader.start()
    reader.join(120)  # the comma and the comment send it to the line reader too
    if reader.is_alive():  # release a reader blocked on a second open, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("reading a FIFO hung: it was opened a second time")
    assert result["g"].n_nodes == 30 and result["g"].n_edges == 32


# F53, F54, F57 and every other writing command: no input replaced by an output or a sidecar

def test_embed_npy_sidecar_is_never_its_integer_input(tmp_path, capsys, monkeypatch):
    graph = tmp_path / "k.nodes.txt"  # ids 0..29: the sidecar would have been deleted
    graph.write_text(EDGES)
    _no_work(monkeypatch)
    code, err = _run(["embed", graph, "-o", tmp_path / "k.npy", *FAST], capsys)
    assert code == 2 and "the node ids written beside it" in err and "refusing" in err
    assert graph.read_text() == EDGES and not (tmp_path / "k.npy").exists()


def test_embed_npy_sidecar_is_never_its_string_input(tmp_path, capsys):
    graph = tmp_path / "s.nodes.txt"  # string ids: the sidecar would have overwritten it
    graph.write_text("a b\nb c\nc a\nc d\n")
    code, err = _run(["embed", graph, "-o", tmp_path / "s.npy", *FAST], capsys)
    assert code == 2 and "refusing to overwrite" in err
    assert graph.read_text() == "a b\nb c\nc a\nc d\n"


def test_embed_sidecar_through_a_link_is_refused(tmp_path, graph_file, capsys):
    os.symlink(graph_file, tmp_path / "e.nodes.txt")
    code, err = _run(["embed", graph_file, "-o", tmp_path / "e.npy", *FAST], capsys)
    assert code == 2 and "refusing to overwrite" in err and graph_file.read_text() == EDGES


def test_update_sidecar_is_never_its_input(tmp_path, graph_file, capsys):
    model = tmp_path / "m.npz"
    assert _run(["embed", graph_file, "-o", tmp_path / "e.npy", "--model-out", model, *FAST],
                capsys)[0] == 0
    grown = tmp_path / "x.nodes.txt"
    grown.write_text(EDGES + "29 30\n")
    code, err = _run(["update", model, grown, "-o", tmp_path / "x.npy", "--quiet"], capsys)
    assert code == 2 and "refusing to overwrite" in err
    assert grown.read_text() == EDGES + "29 30\n"


@pytest.mark.parametrize("name", ["residual.edgelist", "split.json", "split.npz"])
def test_split_never_overwrites_its_input_in_the_out_dir(tmp_path, graph_file, capsys, name,
                                                         monkeypatch):
    folder = tmp_path / "splitdir"
    folder.mkdir()
    graph = folder / name
    graph.write_text(EDGES)
    import kernelne.evaluation.splits

    monkeypatch.setattr(kernelne.evaluation.splits, "make_link_split",
                        lambda *a, **k: pytest.fail("split made before the check"))
    code, err = _run(["split", graph, "--out-dir", folder, "--seed", "0"], capsys)
    assert code == 2 and "refusing to overwrite" in err and "written by split" in err
    assert graph.read_text() == EDGES


def test_tune_outputs_never_overwrite_its_inputs(tmp_path, graph_file, capsys, monkeypatch):
    _no_work(monkeypatch)
    labels = tmp_path / "t.nodes.txt"
    labels.write_text("\n".join(f"{i} {i % 2}" for i in range(30)) + "\n")
    code, err = _run(["tune", graph_file, "--labels", labels, "-o", tmp_path / "t.npy",
                      "--trials", "1"], capsys)
    assert code == 2 and "refusing to overwrite" in err
    report = tmp_path / "rep"
    report.mkdir()
    labels2 = report / "best.json"
    labels2.write_text(labels.read_text())
    code, err = _run(["tune", graph_file, "--labels", labels2, "-o", tmp_path / "t2.npy",
                      "--report-dir", report, "--trials", "1"], capsys)
    assert code == 2 and "written by tune into --report-dir" in err
    assert labels2.read_text() == labels.read_text()


def test_convert_plot_and_evaluate_refuse_their_inputs(tmp_path, graph_file, capsys):
    npz = tmp_path / "g.npz"
    assert _run(["convert", graph_file, "-o", npz], capsys)[0] == 0
    before = npz.read_bytes()
    code, err = _run(["convert", npz, "-o", npz], capsys)
    assert code == 2 and "refusing to overwrite" in err and npz.read_bytes() == before
    emb = tmp_path / "e.txt"
    emb.write_text("2 2\n0 1 2\n1 3 4\n")
    code, err = _run(["plot", emb, "-o", emb], capsys)
    assert code == 2 and emb.read_text() == "2 2\n0 1 2\n1 3 4\n"
    labels = tmp_path / "l.csv"
    labels.write_text("0 a\n1 b\n")
    code, err = _run(["evaluate", "classify", emb, labels, "-o", labels], capsys)
    assert code == 2 and "refusing to overwrite" in err and labels.read_text() == "0 a\n1 b\n"


def test_reproduce_out_dir_is_not_its_config(tmp_path, capsys):
    config = tmp_path / "cfg.toml"
    assert _run(["reproduce", "--write-config", config], capsys)[0] == 0
    before = config.read_text()
    code, err = _run(["reproduce", "--config", config, "--out-dir", config], capsys)
    assert code == 2 and config.read_text() == before


# A32m: the model file on a full disk leaves nothing behind, and keeps the older files

def test_model_out_failure_leaves_the_older_files(tmp_path, graph_file, capsys, monkeypatch):
    out, model = tmp_path / "e.npy", tmp_path / "m.npz"
    save_embedding(out, np.ones((1, 2)), np.array(["older ids"], dtype=object))  # an older pair
    older = out.read_bytes()
    import kernelne.model.model_file as model_file

    real_savez = np.savez

    def full_disk(fh, **arrays):
        if "context_embedding" in arrays:
            raise OSError(28, "No space left on device")
        return real_savez(fh, **arrays)

    monkeypatch.setattr(model_file.np, "savez", full_disk)
    code, err = _run(["embed", graph_file, "-o", out, "--model-out", model, *FAST], capsys)
    assert code == 2 and "No space left on device" in err and "Traceback" not in err
    assert out.read_bytes() == older
    assert (tmp_path / "e.nodes.txt").read_text() == "older ids\n"
    assert sorted(os.listdir(tmp_path)) == ["e.nodes.txt", "e.npy", "g.txt"]


def test_model_out_and_embedding_are_both_written(tmp_path, graph_file, capsys):
    out, model = tmp_path / "e.txt", tmp_path / "m.npz"
    assert _run(["embed", graph_file, "-o", out, "--model-out", model, *FAST], capsys)[0] == 0
    from kernelne.model.kernelne import KernelNE

    vectors, nodes = load_embedding(out)
    np.testing.assert_allclose(KernelNE.load_model(model).embedding_, vectors, atol=1e-5)


# B12, B22: URLs where only local files are read or written

@pytest.mark.parametrize("where", ["input", "output"])
def test_urls_are_named_as_urls(tmp_path, graph_file, capsys, where):
    url = "s3://bkt/g.edges" if where == "input" else "s3://bkt/out.npy"
    argv = (["embed", url, "-o", tmp_path / "o.npy"] if where == "input"
            else ["embed", graph_file, "-o", url])
    code, err = _run([*argv, *FAST], capsys)
    assert code == 2 and url in err and "is a URL" in err and "--partition-dir" in err
    assert "folder does not exist" not in err and "no such file" not in err
    assert not Path("s3:").exists()


# F31, F32, F33, F36: crafted graph .npz files stop at the reader with one line

def _graph_npz(tmp_path, name, **changes):
    from kernelne.graphs.graph import Graph
    from kernelne.graphs.npz import save_graph

    src, dst = np.arange(6), (np.arange(6) + 1) % 6
    save_graph(Graph.from_edges(src, dst), tmp_path / "ok.npz")
    with np.load(tmp_path / "ok.npz") as z:
        arrays = {k: z[k] for k in z.files} | changes
    np.savez(tmp_path / name, **arrays)
    return tmp_path / name


@pytest.mark.parametrize("changes, message", [
    ({"indptr": np.array([0, 1.5, 3, 4, 6, 8, 12.0])}, "indptr must be a 1-D array of integers"),
    ({"indices": np.linspace(0.2, 5.7, 12)}, "indices must be a 1-D array of integers"),
    ({"indptr": np.array([0, 2, 4, 6, 8, 10, 12], dtype=np.uint8)[::-1].copy()},
     "inconsistent CSR arrays"),
    ({"indices": np.full(12, 7, dtype=np.int64)}, "inconsistent CSR arrays"),
    ({"nodes": np.full(6, 7)}, "a node id is listed twice"),
    ({"nodes": np.arange(6).reshape(6, 1)}, "nodes must be a 1-D array"),
    ({"weights": np.ones(12, dtype=np.complex64)}, "weights must be a 1-D array of float32"),
])
def test_crafted_graph_npz_is_one_line(tmp_path, capsys, changes, message):
    bad = _graph_npz(tmp_path, "bad.npz", **changes)
    code, err = _run(["embed", bad, "-o", tmp_path / "o.txt", *FAST], capsys)
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o.txt").exists()


def test_graph_npz_with_small_integer_arrays_still_reads(tmp_path):
    from kernelne.graphs.graph import load_graph

    with np.load(_graph_npz(tmp_path, "x.npz")) as z:
        indptr, indices = z["indptr"].astype(np.int32), z["indices"].astype(np.uint16)
    g = load_graph(_graph_npz(tmp_path, "small.npz", indptr=indptr, indices=indices))
    assert g.indptr.dtype == np.int64 and g.indices.dtype == np.int32 and g.n_edges == 6


# H8: a small model file cannot make the loader allocate its declared sizes

def _add_member(path, key, shape, dtype="<f8"):
    """Append an array member whose header declares ``shape`` but which holds 16 bytes."""
    import io
    import zipfile

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False,
                                               "shape": shape})
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr(key + ".npy", buf.getvalue() + bytes(16))


@pytest.fixture
def model_file(tmp_path, graph_file, capsys):
    model = tmp_path / "m.npz"
    assert _run(["embed", graph_file, "-o", tmp_path / "e.txt", "--model-out", model, *FAST],
                capsys)[0] == 0
    return model


def test_model_file_arrays_it_does_not_use_are_never_read(model_file):
    from kernelne.model.kernelne import KernelNE

    _add_member(model_file, "junk", (10**12,))  # 8 TB declared: reading it would fail
    assert KernelNE.load_model(model_file).embedding_.shape == (30, 4)


def test_model_file_declaring_more_than_it_holds_is_refused(model_file, tmp_path):
    from kernelne.model.kernelne import KernelNE

    rebuilt = tmp_path / "big.npz"
    with np.load(model_file) as z:
        arrays = {k: z[k] for k in z.files if k != "embedding"}
    np.savez(rebuilt, **arrays)
    _add_member(rebuilt, "embedding", (10**6, 10**4), "<f4")
    with pytest.raises(InputError, match=r"its array embedding declares shape \(1000000, "
                                         r"10000\) \(40,000,000,000 bytes\)"):
        KernelNE.load_model(rebuilt)


def _stream_member(path, key, shape, dtype, fill: bytes = b"\0", stored=False):
    """Append an array member declaring ``shape`` and holding as many ``fill`` bytes, written
    in chunks (never whole in memory), deflated unless ``stored``."""
    import io
    import zipfile

    descr = np.lib.format.dtype_to_descr(np.dtype(dtype))
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": descr, "fortran_order": False,
                                                "shape": shape})
    left = int(np.prod(shape, dtype=object)) * np.dtype(dtype).itemsize
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "a", compression=method) as archive, \
            archive.open(key + ".npy", "w", force_zip64=True) as fh:
        fh.write(head.getvalue())
        chunk = fill * (1 << 20)
        while left:
            fh.write(chunk[:left])
            left -= min(left, len(chunk))


def _without(model_file, tmp_path, *keys):
    """A copy of ``model_file`` without the arrays ``keys``."""
    rebuilt = tmp_path / "forged.npz"
    with np.load(model_file) as z:
        np.savez(rebuilt, **{k: z[k] for k in z.files if k not in keys})
    return rebuilt


class _Names(list):
    """The names of the arrays read, and those that must not be."""

    refused: set


@pytest.fixture
def reads(monkeypatch):
    """The names of the arrays numpy reads from an archive from now on; reading one of
    ``reads.refused`` fails the test (numpy would allocate what it declares first)."""
    real = np.lib.format.read_array
    seen = _Names()

    def read_array(fp, *args, **kwargs):
        name = getattr(fp, "name", "?").removesuffix(".npy")
        seen.append(name)
        assert name not in seen.refused, f"{name} was read before the file was refused"
        return real(fp, *args, **kwargs)

    seen.refused = set()
    monkeypatch.setattr(np.lib.format, "read_array", read_array)
    return seen


@pytest.mark.parametrize("dtype, stored, message", [
    ("<U16000000", False, "its array format declares shape () (64,000,000 bytes) but holds"),
    ("<U300000", True, "not a kernelne model file"),
], ids=["deflated-64MiB", "stored-1MiB"])
def test_h8_a_forged_format_entry_is_refused_before_any_array_is_read(model_file, tmp_path,
                                                                      capsys, reads, dtype,
                                                                      stored, message):
    """``format`` declared as a long text: 64 MiB of deflated zeros (a 64 KiB file), or 1 MiB
    stored. The reader used to read it (and ``version``) before any check."""
    forged = _without(model_file, tmp_path, "format")
    _stream_member(forged, "format", (), dtype, stored=stored)
    reads.clear()
    reads.refused.update({"format", "version"})
    code, err = _run(["update", forged, tmp_path / "g.txt", "-o", tmp_path / "u.txt"], capsys)
    assert code == 2 and message in err and len(err.splitlines()) == 1, err
    assert reads == []


@pytest.mark.parametrize("key, shape, dtype, message", [
    ("embedding", (5000, 4), "<f4", "embedding has shape (5000, 4), not (30, 4): 30 nodes of "
     "dim 4"),
    ("embedding", (30, 5000), "<f4", "embedding has shape (30, 5000), not (30, 4)"),
    ("context_embedding", (30, 4), "<f8", "context_embedding holds float64 numbers; a model "
     "file holds float32 rows"),
    ("walk_counts", (400_000,), "<i8", "walk_counts has shape (400000,), not (30,)"),
    ("params", (), "<U400000", "params must be a single value, found shape () of <U400000"),
], ids=["rows", "dim", "float64", "counts", "params"])
def test_h8_declared_shapes_are_checked_before_an_array_is_read(model_file, tmp_path, capsys,
                                                                reads, key, shape, dtype,
                                                                message):
    """An array of the rows (or counts) declaring a shape that disagrees with the others is
    refused from its header: never read, whatever it declares (here a few MB, stored)."""
    forged = _without(model_file, tmp_path, key)
    _stream_member(forged, key, shape, dtype, fill=b"\1", stored=True)
    reads.clear()
    reads.refused.update({key, "embedding", "context_embedding", "walk_counts", "degrees"})
    code, err = _run(["update", forged, tmp_path / "g.txt", "-o", tmp_path / "u.txt"], capsys)
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"corrupt model file ({message}" in err
    assert not (tmp_path / "u.txt").exists()


def test_e22_a_float64_model_file_names_the_dtype(model_file, tmp_path):
    from kernelne.model.kernelne import KernelNE

    with np.load(model_file) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["embedding"] = arrays["embedding"].astype(np.float64)
    np.savez(tmp_path / "f64.npz", **arrays)
    with pytest.raises(InputError, match=r"corrupt model file \(embedding holds float64 "
                                         r"numbers; a model file holds float32 rows"):
        KernelNE.load_model(tmp_path / "f64.npz")


# A15, H5: a file that is no .npz (or .npy) is said to be so, without numpy's word "pickled"

@pytest.mark.parametrize("command, name, message", [
    (["embed", "{bad}", "-o", "{out}"], "junk.npz", "not a readable graph file (not an .npz "
     "archive"),
    (["evaluate", "classify", "{bad}", "{labels}", "--ratios", "50%"], "junk.npy",
     "not a readable .npy file (no .npy header)"),
    (["evaluate", "classify", "{bad}", "{labels}", "--ratios", "50%"], "junk.npz",
     "not a readable .npz embedding (not an .npz archive)"),
], ids=["graph", "npy-embedding", "npz-embedding"])
def test_a_junk_array_file_is_called_unreadable_not_pickled(tmp_path, capsys, command, name,
                                                            message):
    bad = tmp_path / name
    bad.write_text("junk\n")
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"{i} {'ab'[i % 2]}\n" for i in range(10)))
    argv = [a.format(bad=bad, out=tmp_path / "o.txt", labels=labels) for a in command]
    code, err = _run(argv, capsys)
    assert code == 2 and f"{bad}: {message}" in err and len(err.splitlines()) == 1, err
    assert "pickle" not in err


def test_a_junk_split_npz_is_called_unreadable_not_pickled(tmp_path, capsys):
    from cli_runs import KARATE

    from kernelne.evaluation.splits import LinkSplit

    assert _run(["split", KARATE, "--out-dir", tmp_path / "s", "--seed", "0"], capsys)[0] == 0
    (tmp_path / "s" / "split.npz").write_text("junk\n")
    with pytest.raises(InputError, match=r"split.npz: not a readable .npz file \(not a zip "
                                         r"archive of arrays\)$"):
        LinkSplit.load(tmp_path / "s")


# F22: an error line quotes at most 80 characters of the offending text

@pytest.mark.parametrize("text, message", [
    ("0 2 1\n0 1 " + "9" * 10**6 + "\n1 2 1\n", "negative or non-finite weight 9999"),
    ("0 2 1\n0 1 x" + "9" * 10**6 + "\n1 2 1\n", "weight 'x999"),
    ("y" * 10**6 + " x\n1 2\n2 3\n", "looks like a header line ('yyy"),
], ids=["weight", "not-a-number", "header"])
def test_error_lines_quoting_a_huge_input_are_capped(tmp_path, capsys, text, message):
    graph = tmp_path / "long.txt"
    graph.write_text(text)
    code, err = _run(["embed", graph, "-o", tmp_path / "o.txt", *FAST], capsys)
    assert code == 2 and message in err and len(err) < 400 and len(err.splitlines()) == 1
    assert "(1,000,00" in err


def test_quote_says_how_long_the_cut_text_was():
    from kernelne.errors import quote

    assert quote("abc") == "'abc'"
    assert quote("a" * 100, 5) == "'aaaaa'... (100 characters)"
    assert quote("1" * 100, 3, bare=True) == "111... (100 characters)"


def test_a_huge_message_is_cut_to_one_short_line(capsys, monkeypatch):
    import kernelne.cli.app as app

    def boom(args):
        raise InputError("x" * 10**6 + "\nsecond line")

    monkeypatch.setattr(app, "cmd_demo", boom)
    code = app.main(["demo"])
    err = capsys.readouterr().err
    assert code == 2 and len(err) <= app.MESSAGE_LIMIT + 40 and err.count("\n") == 1
    assert err.rstrip().endswith("second line")


# G4, G6, G10: a deprecated option and its new spelling given together are refused

@pytest.mark.parametrize("argv, old, new", [
    (["evaluate", "classify", "e.npy", "l.txt", "--method", "A", "--name", "B"],
     "--method", "--name"),
    (["evaluate", "classify", "e.npy", "l.txt", "--name", "B", "--method", "A"],
     "--method", "--name"),
    (["tune", "g.txt", "-o", "t.npy", "--report", "r1", "--report-dir", "r2"],
     "--report", "--report-dir"),
    (["tune", "g.txt", "-o", "t.npy", "--report-dir", "r2", "--report", "r1"],
     "--report", "--report-dir"),
    (["plot", "e.npy", "-o", "p.png", "--method", "pca", "--projection", "tsne"],
     "--method", "--projection"),
    (["reproduce", "--out-dir", "b", "--out", "a", "--write-config", "c.toml"],
     "--out", "--out-dir"),
])
def test_old_and_new_spellings_together_are_refused(tmp_path, capsys, monkeypatch, argv, old,
                                                     new):
    monkeypatch.chdir(tmp_path)
    code, err = _run(argv, capsys)
    assert code == 2 and f"{old} (deprecated) and {new} both given: give only {new}" in err
    assert os.listdir(tmp_path) == []


def test_a_deprecated_option_twice_with_two_values_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["split", "g.txt", "-o", "s5", "-o", "s6"])
    assert exc.value.code == 2 and "given twice (s5, then s6)" in capsys.readouterr().err


def test_a_deprecated_option_alone_still_works(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = _run(["reproduce", "--out", "a", "--write-config", "c.toml"], capsys)
    assert code == 0 and "--out is deprecated" in err and (tmp_path / "c.toml").exists()


# E23, E24: a model file with NaN rows or repeated ids is refused on load

@pytest.mark.parametrize("change, message", [
    ({"embedding": lambda a: np.full_like(a, np.nan)}, "holds NaN or infinite values"),
    ({"nodes": lambda a: np.ones_like(a)}, "node ids must be distinct"),
], ids=["nan-rows", "repeated-ids"])
def test_damaged_model_file_is_refused_on_load(model_file, tmp_path, change, message):
    from kernelne.model.kernelne import KernelNE

    with np.load(model_file) as z:
        arrays = {k: change[k](z[k]) if k in change else z[k] for k in z.files}
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(InputError, match=message):
        KernelNE.load_model(tmp_path / "bad.npz")


# E28: a partitioned fit in a temporary folder records no folder in its model file

def test_model_file_of_a_partitioned_fit_names_no_removed_folder(tmp_path, capsys):
    from kernelne.model.kernelne import KernelNE

    edges = "\n".join(f"{i} {(i + 1) % 60}\n{i} {(i + 7) % 60}" for i in range(60)) + "\n"
    (tmp_path / "g.txt").write_text(edges)
    code, _ = _run(["embed", tmp_path / "g.txt", "-o", tmp_path / "e.npy", "--model-out",
                    tmp_path / "m.npz", "--partitions", "2", *FAST], capsys)
    assert code == 0
    assert KernelNE.load_model(tmp_path / "m.npz").partition_dir is None


# C31: --scheduler with a method that does not use it says so

def test_scheduler_with_a_baseline_method_says_it_is_not_used(graph_file, tmp_path, capsys):
    code, err = _run(["embed", graph_file, "-o", tmp_path / "o.txt", "--method", "line",
                      "--scheduler", "tcp://127.0.0.1:9", *FAST], capsys)
    assert code == 2 and "--method line runs in this process: leave out --scheduler" in err
    assert "--partitions" not in err


# F12: a NUL byte in an id is refused, not kept as a distinct node

def test_a_nul_byte_in_an_id_is_refused(tmp_path, capsys):
    graph = tmp_path / "nul.txt"
    graph.write_text("1 2\n1\x00 2\n2 3\n")
    code, err = _run(["embed", graph, "-o", tmp_path / "o.txt", *FAST], capsys)
    assert code == 2 and "holds a NUL byte" in err and "'1\\x00'" in err
    assert not (tmp_path / "o.txt").exists()


# SC2: -o NAME.npy never deletes or replaces a NAME.nodes.txt the user wrote

@pytest.mark.parametrize("graph", ["ints", "strings"])
def test_embed_npy_refuses_a_foreign_nodes_file(tmp_path, capsys, monkeypatch, graph):
    edges = tmp_path / "g.txt"
    edges.write_text(EDGES if graph == "ints" else "a b\nb c\nc a\nc d\n")
    notes = tmp_path / "e.nodes.txt"
    notes.write_text("notes about the run\n")
    _no_work(monkeypatch)
    code, err = _run(["embed", edges, "-o", tmp_path / "e.npy", *FAST], capsys)
    assert code == 2 and "e.nodes.txt: a file of this name is there" in err
    assert len(err.strip().splitlines()) == 1
    assert notes.read_text() == "notes about the run\n"
    assert sorted(os.listdir(tmp_path)) == ["e.nodes.txt", "g.txt"]


def test_embed_npy_replaces_its_own_pair(tmp_path, capsys):
    strings = tmp_path / "s.txt"
    strings.write_text("a b\nb c\nc a\nc d\n")
    ints = tmp_path / "g.txt"
    ints.write_text(EDGES)
    out = tmp_path / "e.npy"
    assert _run(["embed", strings, "-o", out, *FAST], capsys)[0] == 0
    assert (tmp_path / "e.nodes.txt").read_text() == "a\nb\nc\nd\n"
    assert _run(["embed", ints, "-o", out, *FAST], capsys)[0] == 0  # 0..n-1: the ids go
    assert not (tmp_path / "e.nodes.txt").exists() and load_embedding(out)[0].shape[0] == 30
