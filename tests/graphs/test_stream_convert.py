"""``kernelne convert`` block by block (:mod:`kernelne.graphs.stream_convert`): the graph file
is the one the whole reader writes, array for array, for every file it takes; any other file
is left to the whole reader, nothing written; and the conversion's own memory stays below
the size of the graph's CSR."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from kernelne.graphs.file_vector import FileVector
from kernelne.graphs.graph import load_graph
from kernelne.graphs.npz import read_graph_arrays, save_graph
from kernelne.graphs.stream_convert import convert_edgelist, stream_edgelist


def edge_text(rng, n: int, m: int, kind: str) -> str:
    """An edge list of ``m`` random edges with duplicates and self-loops (ids ``3 v + 5``)."""
    a, b = rng.integers(0, n, m) * 3 + 5, rng.integers(0, n, m) * 3 + 5
    if kind == "weighted":
        w = rng.choice([0.5, 1.0, 2.0, 3.25], m)
        lines = [f"{x} {y} {z}" for x, y, z in zip(a, b, w, strict=True)]
    elif kind == "ones":
        lines = [f"{x},{y},1" for x, y in zip(a, b, strict=True)]
    else:
        lines = [f"{x}\t{y}" for x, y in zip(a, b, strict=True)]
    return "# a comment\n% another\n" + "\n".join(lines) + "\n"


def same_arrays(streamed, whole_graph, tmp_path) -> None:
    ref = tmp_path / "whole.npz"
    save_graph(whole_graph, ref)
    got, want = read_graph_arrays(streamed), read_graph_arrays(ref)
    assert got.keys() == want.keys()
    for key in want:
        if want[key] is None:
            assert got[key] is None, key
        else:
            assert np.array_equal(got[key], want[key]), key


@pytest.mark.parametrize("kind", ["plain", "weighted", "ones"])
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("block_bytes", [61, 1 << 20])
def test_the_streamed_graph_is_the_whole_readers(tmp_path, kind, directed, block_bytes):
    rng = np.random.default_rng([len(kind), directed, block_bytes])
    path = tmp_path / "g.txt"
    path.write_text(edge_text(rng, 200, 2500, kind))
    out = tmp_path / "g.npz"
    graph = stream_edgelist(path, out, directed=directed, block_bytes=block_bytes)
    whole = load_graph(path, directed=directed)
    same_arrays(out, whole, tmp_path)
    assert graph.duplicates_reweighted == whole.duplicates_reweighted
    assert whole.duplicates_dropped > 0 and whole.self_loops_dropped > 0
    assert isinstance(graph.indices, FileVector)  # the edges left in the file written
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no scratch


@pytest.mark.parametrize("n, compact", [(4_000, True), (40_000_000, False)])
def test_ids_compact_for_the_file_keep_their_bits_past_a_first_block(tmp_path, n, compact):
    """Ids up to 4,000 on 3,000 edges: above 4 x the ends of a first block of 61 bytes, below
    4 x the file's, so the ids are kept as bits, as the whole reader keeps them (a sorted
    array merged block by block converted a 10^8-edge file 7x slower); ids up to 4 x 10^7 are
    sparse for the file and merged. The graph is the whole reader's either way."""
    from kernelne.graphs.stream_convert import _to_binary

    rng = np.random.default_rng(5)
    path = tmp_path / "g.txt"
    a, b = rng.integers(0, n, 3_000), rng.integers(0, n, 3_000)
    path.write_text("".join(f"{x} {y}\n" for x, y in zip(a, b, strict=True)))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ids, m, _, _ = _to_binary(path, scratch, None, False, 61)
    assert m == 3_000 and (ids.present is not None) == compact
    assert 4_000 <= ids.expected <= 8_000  # 6,000 ends, from the first block's bytes a line
    out = tmp_path / "g.npz"
    stream_edgelist(path, out, block_bytes=61)
    same_arrays(out, load_graph(path), tmp_path)


@pytest.mark.parametrize("kind,unweighted,weight_bytes",
                         [("plain", False, 0), ("weighted", True, 0), ("weighted", False, 8),
                          ("ones", False, 8)])
def test_pass_one_writes_weights_only_where_a_weight_column_is_read(tmp_path, kind, unweighted,
                                                                     weight_bytes):
    from kernelne.graphs.stream_convert import _to_binary

    path = tmp_path / "g.txt"
    path.write_text(edge_text(np.random.default_rng(3), 50, 300, kind))
    _, m, weighted, _ = _to_binary(path, tmp_path, None, unweighted, 97)
    assert m == 300 and weighted == (kind == "weighted" and not unweighted)
    assert (tmp_path / "weights.bin").stat().st_size == weight_bytes * m
    assert (tmp_path / "ends.bin").stat().st_size == 16 * m
    out = tmp_path / "g.npz"
    stream_edgelist(path, out, unweighted=unweighted, block_bytes=97)
    same_arrays(out, load_graph(path, unweighted=unweighted), tmp_path)


def test_ids_far_apart_and_negative(tmp_path):
    rng = np.random.default_rng(6)
    ids = np.concatenate([rng.integers(-10**15, 10**15, 60), np.arange(40)])
    src, dst = rng.choice(ids, 700), rng.choice(ids, 700)
    path = tmp_path / "g.txt"
    path.write_text("".join(f"{x} {y}\n" for x, y in zip(src, dst, strict=True)))
    out = tmp_path / "g.npz"
    assert stream_edgelist(path, out, block_bytes=300) is not None
    same_arrays(out, load_graph(path), tmp_path)


def test_a_manifest_of_many_nodes(tmp_path):
    path = tmp_path / "big.edges"
    path.write_text("0 1\n1 2\n")
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"big": {"nodes": 5000}}))
    out = tmp_path / "big.npz"
    graph = convert_edgelist(path, out)
    assert graph.n_nodes == 5000
    same_arrays(out, load_graph(path), tmp_path)


def test_gzip_a_byte_order_mark_a_header_and_a_manifest(tmp_path):
    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 90, 800), rng.integers(0, 90, 800)
    body = "source target\n" + "".join(f"{x} {y}\n" for x, y in zip(src, dst, strict=True))
    path = tmp_path / "net.edges.gz"
    path.write_bytes(gzip.compress(b"\xef\xbb\xbf" + body.encode()))
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"net": {"nodes": 100}}))
    out = tmp_path / "net.npz"
    graph = convert_edgelist(path, out, header=True)
    assert graph is not None and graph.n_nodes == 100  # ids 0..99, some isolated
    same_arrays(out, load_graph(path, header=True), tmp_path)


@pytest.mark.parametrize("text", [
    "a b\nb c\n",                 # string ids
    "1 2\n# late comment\n2 3\n",  # a comment below the top
    "1  2\n2 3\n",                # two spaces
    "1 2 0\n2 3 1\n",             # a weight the line reader names
    "1 2\n007 3\n",               # a non-canonical integer
])
def test_other_files_are_left_to_the_whole_reader(tmp_path, text):
    path = tmp_path / "g.txt"
    path.write_text(text)
    out = tmp_path / "g.npz"
    assert stream_edgelist(path, out, block_bytes=4) is None
    assert list(tmp_path.iterdir()) == [path]  # nothing written, no scratch left


def test_a_csv_table_with_named_columns_is_read_by_name(tmp_path):
    path = tmp_path / "g.csv"
    path.write_text("target,source\n1,2\n2,3\n")
    assert convert_edgelist(path, tmp_path / "g.npz") is None


def test_the_convert_command_writes_the_streamed_graph(tmp_path):
    rng = np.random.default_rng(4)
    path = tmp_path / "g.txt"
    path.write_text(edge_text(rng, 100, 900, "weighted"))
    out = tmp_path / "g.npz"
    run = subprocess.run([sys.executable, "-m", "kernelne", "convert", str(path), "-o", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "dropped" in run.stderr and "self-loops" in run.stderr  # the graph's notes
    same_arrays(out, load_graph(path), tmp_path)


# The conversion in a process capped (RLIMIT_DATA) at its memory after the imports and a
# warm-up plus half the CSR's bytes: blocks of 1 MiB of text and 2^16 edges.
CAPPED = textwrap.dedent("""
    import resource, sys
    import kernelne.graphs.stream_convert as sc

    def data_bytes():
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmData:"))

    small, big, out, headroom = sys.argv[1:5]
    sc.EDGE_BLOCK = 1 << 16
    sc.stream_edgelist(small, out + ".warm.npz", block_bytes=1 << 20)
    limit = data_bytes() + int(headroom)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    graph = sc.stream_edgelist(big, out, block_bytes=1 << 20)
    print("edges", graph.n_edges)
    from kernelne.graphs.graph import load_graph
    try:
        load_graph(big)  # the whole reader, under the same cap
    except MemoryError:
        print("the whole reader: MemoryError")
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA is Linux's")
def test_the_conversion_holds_less_than_half_the_csr(tmp_path):
    import pyarrow as pa
    from pyarrow import csv

    rng = np.random.default_rng(5)
    n, m = 40_000, 3_000_000
    big, small = tmp_path / "big.txt", tmp_path / "small.txt"
    table = pa.table({"s": rng.integers(0, n, m), "t": rng.integers(0, n, m),
                      "w": rng.uniform(0.5, 2.0, m)})
    options = csv.WriteOptions(include_header=False, delimiter=" ")
    csv.write_csv(table, big, options)
    csv.write_csv(table.slice(0, 5000), small, options)
    whole = load_graph(big)
    csr = whole.indptr.nbytes + whole.indices.nbytes + whole.weights.nbytes
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = tmp_path / "big.npz"
    run = subprocess.run([sys.executable, "-c", CAPPED, str(small), str(big), str(out),
                          str(csr // 2)], capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"edges {whole.n_edges}" in run.stdout
    assert "the whole reader: MemoryError" in run.stdout  # the cap bites
    same_arrays(out, whole, tmp_path)


def test_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    import errno

    import kernelne.outputs
    from kernelne.errors import InputError

    def full(fd, offset, size):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(kernelne.outputs.os, "posix_fallocate", full, raising=False)
    path = tmp_path / "g.txt"
    path.write_text("1 2\n2 3\n3 1\n")
    with pytest.raises(InputError, match="cannot write .*g.npz: No space left on device"):
        stream_edgelist(path, tmp_path / "g.npz")
    assert list(tmp_path.iterdir()) == [path]
