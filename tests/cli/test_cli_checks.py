"""The CLI's small input checks: each bad input is refused early, naming the option or file,
with exit status 2 and nothing half-written."""

from __future__ import annotations

import errno
import io
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from kernelne.cli.app import main

ROOT = Path(__file__).resolve().parents[2]
KARATE = ROOT / "examples" / "karate.edgelist"
FAST = ["--dim", "8", "--walks-per-node", "2", "--workers", "1", "--quiet"]


def test_generate_labels_only_the_nodes_of_its_edge_list(tmp_path, capsys):
    from kernelne.evaluation.classification import read_node_labels
    from kernelne.graphs.graph import load_graph

    prefix = tmp_path / "sbm"
    assert main(["generate", "300", "1500", "4", "0.3", "-o", str(prefix)]) == 0
    out = capsys.readouterr().out
    assert "(1 isolated)" in out and "1 isolated node(s) left out of both" in out
    graph = load_graph(f"{prefix}.edges")
    label_nodes, _ = read_node_labels(f"{prefix}.labels")
    assert sorted(label_nodes.tolist()) == sorted(graph.nodes.tolist())
    assert len(label_nodes) == 299


def test_generate_refuses_more_communities_than_nodes(tmp_path, capsys):
    assert main(["generate", "3", "10", "5", "0.3", "-o", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kernelne: error: K=5 communities for N=3 nodes")
    assert not list(tmp_path.iterdir())


def test_duplicate_edges_with_other_weights_are_counted_in_the_note(tmp_path):
    from kernelne.cli.options import report_graph
    from kernelne.graphs.graph import load_graph

    path = tmp_path / "w.txt"
    path.write_text("0 1 1\n1 2 2\n1 0 5\n0 1 1\n2 3 1\n2 3 7\n")
    graph = load_graph(path)
    assert graph.duplicates_dropped == 3 and graph.duplicates_reweighted == 2
    assert graph.weights[graph.indptr[2]:graph.indptr[3]].tolist() == [2.0, 1.0]  # firsts
    out = io.StringIO()
    report_graph(graph, out)
    assert out.getvalue() == ("kernelne: note: dropped 3 duplicate edges (2 of them with a "
                              "weight different from the edge's first occurrence: the first "
                              "weight was kept)\n")
    same = tmp_path / "s.txt"
    same.write_text("0 1 2\n1 0 2\n1 2 1\n")
    out = io.StringIO()
    report_graph(load_graph(same), out)
    assert out.getvalue() == "kernelne: note: dropped 1 duplicate edges\n"


@pytest.mark.parametrize("option, value, message", [
    ("--negatives", "0", "argument --negatives: 0: must be at least 1"),
    ("--negative-pool", "100000000", "argument --negative-pool: 100,000,000: at most 1,000,000"),
    ("--lr", "0", "argument --lr: 0: must be greater than 0"),
    ("--sigma", "-1", "argument --sigma: -1: must be greater than 0"),
    ("--reg", "-0.5", "argument --reg: -0.5: must be 0 or more"),
    ("--subsample", "1.5", "argument --subsample: 1.5: a threshold in [0, 1)"),
    ("--dim", "0", "argument --dim: 0: must be at least 1"),
])
def test_out_of_range_model_options_are_refused_while_parsing(tmp_path, capsys, option,
                                                              value, message):
    out = tmp_path / "e.npy"
    with pytest.raises(SystemExit) as exit_:
        main(["embed", str(KARATE), "-o", str(out), *FAST, option, value])
    assert exit_.value.code == 2 and message in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("options, message", [
    (["--subsample", "1e-12"], "kernelne: error: --subsample 1e-12: would keep about"),
    (["--min-lr", "0.1"], "kernelne: error: --min-lr 0.1 is above --lr 0.025"),
])
def test_model_options_checked_on_the_graph_name_the_option(tmp_path, capsys, monkeypatch,
                                                            options, message):
    import kernelne.model.kernelne

    def no_fit(*args, **kwargs):
        raise AssertionError("the model was fitted before the options were checked")

    monkeypatch.setattr(kernelne.model.kernelne.KernelNE, "fit", no_fit)
    out = tmp_path / "e.npy"
    assert main(["embed", str(KARATE), "-o", str(out), *FAST, *options]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_a_pool_larger_than_a_walk_uses_gets_a_note(tmp_path, capsys):
    assert main(["embed", str(KARATE), "-o", str(tmp_path / "e.npy"), *FAST,
                 "--negative-pool", "5000"]) == 0
    assert ("--negative-pool 5,000 draws more than the at most 1,000 negatives a walk uses"
            in capsys.readouterr().err)


def test_plot_checks_the_image_format_before_projecting(tmp_path, capsys, monkeypatch):
    import kernelne.evaluation.plot

    def no_projection(*args, **kwargs):
        raise AssertionError("projected before the image format was checked")

    monkeypatch.setattr(kernelne.evaluation.plot, "project", no_projection)
    emb = tmp_path / "e.npy"
    np.save(emb, np.random.default_rng(0).normal(size=(20, 4)))
    assert main(["plot", str(emb), "-o", str(tmp_path / "map.xyz"),
                 "--projection", "tsne"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kernelne: error: ") and "cannot draw a .xyz image" in err
    assert "png" in err and not (tmp_path / "map.xyz").exists()


def test_closed_standard_output_ends_quietly(tmp_path):
    from kernelne.cli.app import BROKEN_PIPE_STATUS

    writer = subprocess.Popen(
        [sys.executable, "-m", "kernelne", "embed", str(KARATE), "-o", "-", "--dim", "512",
         "--walks-per-node", "2", "--workers", "1", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.run(["head", "-1"], stdin=writer.stdout, capture_output=True, timeout=120)
    writer.stdout.close()
    err = writer.stderr.read().decode()
    assert writer.wait(timeout=120) == BROKEN_PIPE_STATUS
    assert head.stdout.decode().startswith("34 512")
    assert "Traceback" not in err and "BrokenPipeError" not in err and err == ""


def test_classify_refuses_a_ratio_that_leaves_too_few_training_nodes(tmp_path, capsys):
    emb, labels = tmp_path / "e.npy", tmp_path / "l.txt"
    np.save(emb, np.random.default_rng(0).normal(size=(100, 4)))
    labels.write_text("".join(f"{i} {i % 4}\n" for i in range(100)))
    assert main(["evaluate", "classify", str(emb), str(labels), "--ratios", "0.001"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kernelne: error: --ratios 0.001: trains on 1 of the 100 labelled")
    assert main(["evaluate", "classify", str(emb), str(labels), "--ratios", "0.03"]) == 2
    assert "fewer than 4 (one per label: 4 labels)" in capsys.readouterr().err
    assert main(["evaluate", "classify", str(emb), str(labels), "--ratios", "0.5",
                 "--repeats", "1", "--jobs", "1"]) == 0


def test_classify_names_a_default_ratio_that_is_too_small(tmp_path, capsys):
    emb, labels = tmp_path / "e.npy", tmp_path / "l.txt"
    np.save(emb, np.random.default_rng(0).normal(size=(30, 4)))
    labels.write_text("".join(f"{i} {i % 2}\n" for i in range(30)))
    assert main(["evaluate", "classify", str(emb), str(labels)]) == 2
    assert "the default training ratio 0.02: trains on 1 of the 30" in capsys.readouterr().err


def test_directed_and_unweighted_are_refused_on_an_npz_that_records_otherwise(tmp_path,
                                                                             capsys):
    npz, weighted = tmp_path / "k.npz", tmp_path / "w.npz"
    assert main(["convert", str(KARATE), "-o", str(npz)]) == 0
    text = tmp_path / "w.txt"
    text.write_text("0 1 2\n1 2 3\n2 0 1\n")
    assert main(["convert", str(text), "-o", str(weighted)]) == 0
    capsys.readouterr()
    out = tmp_path / "e.npy"
    assert main(["embed", str(npz), "-o", str(out), "--directed", *FAST]) == 2
    assert ("--directed: this .npz graph records an undirected graph"
            in capsys.readouterr().err)
    assert main(["embed", str(weighted), "-o", str(out), "--unweighted", *FAST]) == 2
    assert "--unweighted: this .npz graph records edge weights" in capsys.readouterr().err
    assert not out.exists()


def test_failed_model_file_leaves_no_embedding_of_the_run(tmp_path, capsys, monkeypatch):
    import kernelne.model.model_file as model_file

    def disk_full(fh, **arrays):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(model_file.np, "savez", disk_full)
    out, model = tmp_path / "e.npy", tmp_path / "m.npz"
    assert main(["embed", str(KARATE), "-o", str(out), "--model-out", str(model), *FAST]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kernelne: error: cannot write {model}: No space left on device")
    assert not out.exists() and not model.exists() and os.listdir(tmp_path) == []


def test_long_walks_make_small_chunks():
    from numba import get_num_threads

    from kernelne.engine.walks import CHUNK_STEPS, WalkCorpus
    from kernelne.graphs.graph import load_graph

    graph = load_graph(KARATE)
    assert WalkCorpus(graph, walk_length=10).chunk_walks == 8192  # the default: unchanged
    long = WalkCorpus(graph, walk_length=100_000)
    assert long.chunk_walks == max(get_num_threads(), CHUNK_STEPS // 100_000)


def test_ctrl_c_stops_a_fit_of_long_walks_within_seconds(tmp_path):
    import fcntl
    import pty
    import struct
    import termios

    out = tmp_path / "e.npy"
    # stderr on a terminal of 100 columns, as where Ctrl-C is typed: the fit draws its
    # "training" bar there (and only there), which says when training has started
    terminal, stderr = pty.openpty()
    fcntl.ioctl(stderr, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kernelne", "embed", str(KARATE), "-o", str(out),
         "--walk-length", "100000", "--walks-per-node", "1", "--workers", "1", "--dim", "16"],
        stdout=subprocess.DEVNULL, stderr=stderr,
        # as from a terminal: a test run started in the background ignores SIGINT, and a
        # child inherits that (Python then installs no KeyboardInterrupt handler)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(stderr)
    err = bytearray()

    def read_stderr():
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # the terminal closed: the process ended
                break
            if not chunk:
                break
            err.extend(chunk)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    deadline = time.time() + 180
    while b"training" not in err and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    assert b"training" in err, "training never started"
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    sent = time.time()
    status = proc.wait(timeout=120)
    reader.join(timeout=10)
    assert status == 130, err.decode(errors="replace")[-2000:]  # what the fit printed
    assert time.time() - sent < 12  # one chunk of 1-2 walks, not all 34 walks in one call
    assert b"interrupted" in err and not out.exists()
    os.close(terminal)


def test_load_graph_refuses_what_an_npz_contradicts(tmp_path):
    """The same check for Python users: ``load_graph`` itself refuses it."""
    from kernelne.errors import InputError
    from kernelne.graphs.graph import load_graph

    npz = tmp_path / "k.npz"
    assert main(["convert", str(KARATE), "-o", str(npz)]) == 0
    with pytest.raises(InputError, match="records an undirected graph"):
        load_graph(npz, directed=True)
    assert load_graph(npz).n_nodes == 34


# ---- the learning rates of the skip-gram baselines --------------------------------------------


@pytest.mark.parametrize("method", ["deepwalk", "node2vec"])
def test_lr_and_min_lr_reach_the_skipgram_baselines(tmp_path, method):
    def embed(name, *options):
        out = tmp_path / f"{name}.npy"
        assert main(["embed", str(KARATE), "-o", str(out), "--method", method, *FAST,
                     "--seed", "0", *options]) == 0
        return np.load(out)

    default = embed("default")
    np.testing.assert_array_equal(default, embed("same", "--lr", "0.025", "--min-lr", "1e-4"))
    assert not np.array_equal(default, embed("lr", "--lr", "0.2"))
    # gensim lowers its rate between jobs of 10,000 words: --min-lr shows on a longer corpus
    longer = ["--walks-per-node", "80"]
    assert not np.array_equal(embed("long", *longer),
                              embed("long_min_lr", *longer, "--min-lr", "0.02"))


def test_a_baseline_min_lr_above_lr_is_refused(tmp_path, capsys):
    out = tmp_path / "e.npy"
    assert main(["embed", str(KARATE), "-o", str(out), "--method", "deepwalk", *FAST,
                 "--lr", "0.01", "--min-lr", "0.05"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kernelne: error: --min-lr 0.05 is above --lr 0.01")
    assert not out.exists()


def test_min_lr_is_noted_as_unused_by_line(tmp_path, capsys):
    out = tmp_path / "e.npy"
    assert main(["embed", str(KARATE), "-o", str(out), "--method", "line", "--dim", "4",
                 "--workers", "1", "--quiet", "--seed", "0", "--min-lr", "0.001"]) == 0
    assert "kernelne: note: --min-lr is not used by --method line" in capsys.readouterr().err
