"""The ``kernelne`` command as a user meets it: embed, demo, and bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernelne.cli.app import main
from kernelne.embedding_io import load_embedding

SMALL = ["--dim", "8", "--walks-per-node", "4", "--walk-length", "6", "--window", "3",
         "--seed", "1", "--workers", "1", "--quiet"]


@pytest.fixture()
def ring(tmp_path):
    path = tmp_path / "ring.txt"
    names = [f"n{i}" for i in range(12)]
    lines = [f"{names[i]}\t{names[(i + 1) % 12]}" for i in range(12)] + ["# a comment", ""]
    path.write_text("\n".join(lines))
    return path


def test_embed_writes_word2vec_with_user_ids(ring, tmp_path):
    out = tmp_path / "emb.txt"
    assert main(["embed", str(ring), "-o", str(out), *SMALL]) == 0
    vectors, nodes = load_embedding(out)
    assert vectors.shape == (12, 8)
    assert sorted(nodes) == sorted(f"n{i}" for i in range(12))
    assert np.isfinite(vectors).all() and np.abs(vectors).sum() > 0


def test_embed_npy_same_seed_same_result(ring, tmp_path):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    assert main(["embed", str(ring), "-o", str(a), *SMALL]) == 0
    assert main(["embed", str(ring), "-o", str(b), *SMALL]) == 0
    assert np.array_equal(np.load(a), np.load(b))
    assert (tmp_path / "a.nodes.txt").read_text().split() == [f"n{i}" for i in range(12)]


def test_embed_summary_reports_throughput(ring, tmp_path, capsys):
    args = [a for a in SMALL if a != "--quiet"]
    assert main(["embed", str(ring), "-o", str(tmp_path / "e.txt"), *args]) == 0
    out = capsys.readouterr().out
    for word in ("12 nodes", "pairs/s", "peak memory", "wrote", "loading", "walks", "training"):
        assert word in out
    assert "per center" not in out


def test_embed_shared_negatives(ring, tmp_path, capsys):
    args = [a for a in SMALL if a != "--quiet"]
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    assert main(["embed", str(ring), "-o", str(a), *args]) == 0
    assert main(["embed", str(ring), "-o", str(b), *args, "--shared-negatives"]) == 0
    assert "negatives  5 per center, shared by its contexts" in capsys.readouterr().out
    assert not np.array_equal(np.load(a), np.load(b))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a b\nc\n", ":2: expected 2 or 3 fields"),
        ("a b 1\nb c -2\n", ":2: negative or non-finite weight"),
        ("a b 1\nb c x\n", ":2: weight 'x' is not a number"),
        ("# nothing\n", "no edges found"),
        ("a b\nb c 2\n", ":2: 3 fields, but earlier lines have 2"),
    ],
)
def test_bad_input_exit_2_one_line_no_output(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.txt"
    bad.write_text(content)
    out = tmp_path / "out.txt"
    assert main(["embed", str(bad), "-o", str(out), *SMALL]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("kernelne: error: ") and str(bad) in err and message in err
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]


def test_missing_file_and_bad_parameter(tmp_path, capsys):
    assert main(["embed", str(tmp_path / "nope.txt"), "-o", str(tmp_path / "o.txt")]) == 2
    assert "nope.txt: cannot read file" in capsys.readouterr().err
    good = tmp_path / "g.txt"
    good.write_text("1 2\n2 3\n")
    with pytest.raises(SystemExit) as exit_:  # refused while parsing, naming the option
        main(["embed", str(good), "-o", str(tmp_path / "o.txt"), "--dim", "0"])
    assert exit_.value.code == 2
    assert "argument --dim: 0: must be at least 1" in capsys.readouterr().err
    assert not (tmp_path / "o.txt").exists()


def test_console_script_help_and_error_exit_code(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "kernelne", "embed", "--help"], capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and "--walks-per-node" in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "kernelne", "embed", str(tmp_path / "x"), "-o", "y"],
        capture_output=True, text=True,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_demo_separates_groups(capsys):
    assert main(["demo", "--dim", "32", "--workers", "1"]) == 0
    out = capsys.readouterr().out
    ari = float(out.split("adjusted Rand index ")[1].split()[0])
    acc = float(out.split("held-out half ")[1].split()[0])
    assert ari > 0.8 and acc > 0.9


def test_partitioned_embed_writes_the_rows_from_their_memory_map(tmp_path, monkeypatch):
    """--partitions without --partition-dir: the rows reach the .npy writer memory-mapped in
    a temporary folder (removed afterwards), not read into memory, and the file holds the
    library's in-memory result."""
    import kernelne.embedding_io as embedding_io
    from kernelne import KernelNE
    from kernelne.graphs.generators import write_planted_partition
    from kernelne.graphs.graph import load_graph

    write_planted_partition(tmp_path / "g", 150, 600, 3, 0.2, seed=0)
    seen = []
    original = embedding_io.save_embedding

    def watched(path, vectors, nodes=None):
        seen.append((isinstance(vectors, np.memmap), getattr(vectors, "filename", None)))
        original(path, vectors, nodes)

    monkeypatch.setattr(embedding_io, "save_embedding", watched)
    out = tmp_path / "emb.npy"
    assert main(["embed", str(tmp_path / "g.edges"), "-o", str(out), "--dim", "8",
                 "--walks-per-node", "4", "--workers", "1", "--quiet", "--seed", "0",
                 "--partitions", "2", "--rounds", "2"]) == 0
    (mapped, filename), = seen
    assert mapped and not Path(filename).parent.exists()
    expected = KernelNE(dim=8, walks_per_node=4, workers=1, random_state=0, partitions=2,
                        rounds=2).fit(load_graph(tmp_path / "g.edges")).embedding_
    assert not isinstance(expected, np.memmap)
    assert np.array_equal(np.load(out), expected)


def test_npy_output_is_written_a_block_of_rows_at_a_time(tmp_path, monkeypatch):
    """A memory-mapped float64 matrix goes to a float32 .npy (the bytes np.save writes)
    without a float32 copy of the whole matrix in memory."""
    import io
    import tracemalloc

    import kernelne.embedding_io as embedding_io

    monkeypatch.setattr(embedding_io, "NPY_ROWS", 1000, raising=False)
    rows, d = 50_003, 64
    source = np.lib.format.open_memmap(tmp_path / "f64.npy", mode="w+", dtype=np.float64,
                                       shape=(rows, d))
    source[:] = np.random.default_rng(0).random((rows, d))
    tracemalloc.start()
    try:
        embedding_io.save_embedding(tmp_path / "out.npy", source)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < rows * d * 4 / 4  # a float32 copy: rows * d * 4 bytes (node ids: rows * 17)
    expected = io.BytesIO()
    np.save(expected, np.asarray(source, dtype=np.float32))
    assert (tmp_path / "out.npy").read_bytes() == expected.getvalue()
