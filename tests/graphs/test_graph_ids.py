"""The id rule, BOM, header lines, --unweighted, and the fast reader against the line reader."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kernelne.graphs.graph as graph_module
from kernelne.errors import InputError
from kernelne.graphs.graph import load_graph


def _ids(g):
    return sorted(str(x) for x in g.nodes)


@pytest.mark.parametrize("text, nodes", [
    ("007 7\n7 8\n", ["007", "7", "8"]),          # leading zeros: strings, two nodes
    ("1_0 10\n10 11\n", ["10", "11", "1_0"]),      # underscores are not integers
    ("9223372036854775808 1\n1 2\n", ["1", "2", "9223372036854775808"]),  # > int64
    ("+1 2\n2 3\n", ["+1", "2", "3"]),
    ("-3 4\n4 5\n", ["-3", "4", "5"]),             # a plain negative integer stays an integer
])
def test_ids_are_integers_only_when_canonical(write, text, nodes):
    for sep in (" ", ",", "\t"):
        g = load_graph(write("g.txt", text.replace(" ", sep)))
        assert _ids(g) == nodes
    assert load_graph(write("h.txt", "-3 4\n4 5\n")).nodes.dtype.kind == "i"


def test_byte_order_mark_is_stripped(write, tmp_path):
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf0 1\n1 2\n2 0\n")
    g = load_graph(path)
    assert g.n_nodes == 3 and g.nodes.dtype.kind == "i"


@pytest.mark.parametrize("first", ["source,target", "u v weight", "from\tto"])
def test_header_line_is_reported_or_skipped(write, first):
    sep = "," if "," in first else ("\t" if "\t" in first else " ")
    weight = f"{sep}1.5" if "weight" in first else ""
    body = "\n".join(f"{u}{sep}{v}{weight}" for u, v in [(0, 1), (1, 2), (2, 0)])
    path = write("h.txt", first + "\n" + body + "\n")
    with pytest.raises(InputError, match=r"h.txt:1: looks like a header line.*--header"):
        load_graph(path)
    g = load_graph(path, header=True)
    assert g.n_nodes == 3 and g.n_edges == 3 and g.nodes.dtype.kind == "i"


def test_unweighted_ignores_the_weight_column(write):
    path = write("w.txt", "0 1 2.5\n1 2 0.5\n")
    assert load_graph(path).is_weighted
    assert not load_graph(path, unweighted=True).is_weighted


token = st.one_of(st.integers(0, 40).map(str), st.sampled_from(["a", "b7", "007", "x_1"]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(token, token), min_size=1, max_size=30),
       st.sampled_from([" ", ",", "\t"]), st.booleans())
def test_fast_reader_matches_line_reader(tmp_path_factory, edges, sep, weighted):
    text = "\n".join(sep.join([u, v] + (["1.5"] if weighted else [])) for u, v in edges)
    path = tmp_path_factory.mktemp("g") / "g.txt"
    path.write_text(text + "\n")
    def read():
        try:
            return load_graph(path)
        except InputError as exc:  # e.g. a first line of letters above integer ids
            return str(exc)

    fast = read()
    original = graph_module.parse_fast
    graph_module.parse_fast = lambda data: None  # force the line-by-line reader
    try:
        slow = read()
    finally:
        graph_module.parse_fast = original
    if isinstance(fast, str) or isinstance(slow, str):
        assert fast == slow
        return
    assert list(map(str, fast.nodes)) == list(map(str, slow.nodes))
    np.testing.assert_array_equal(fast.indptr, slow.indptr)
    np.testing.assert_array_equal(fast.indices, slow.indices)
    assert fast.is_weighted == slow.is_weighted


@pytest.mark.parametrize("text, directed", [
    ("a b 2\nb c 0.5\nc a 1\n", False), ("0 1\n1 2\n2 3\n5 0\n", True),
])
def test_npz_round_trip(write, tmp_path, text, directed):
    from kernelne.graphs.npz import save_graph

    g = load_graph(write("g.txt", text), directed=directed)
    save_graph(g, tmp_path / "g.npz")
    back = load_graph(tmp_path / "g.npz")
    assert list(back.nodes) == list(g.nodes) and back.directed == g.directed
    np.testing.assert_array_equal(back.indptr, g.indptr)
    np.testing.assert_array_equal(back.indices, g.indices)
    assert (back.weights is None) == (g.weights is None)
    assert back.nodes.dtype == g.nodes.dtype


def test_corrupt_or_foreign_npz_is_an_input_error(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(InputError, match="bad.npz"):
        load_graph(bad)
    np.savez(tmp_path / "other.npz", x=np.arange(3))
    with pytest.raises(InputError, match="not a kernelne graph file"):
        load_graph(tmp_path / "other.npz")


def test_convert_command(write, tmp_path, capsys):
    from kernelne.cli.app import main

    src = write("g.txt", "0 1\n1 2\n")
    assert main(["convert", str(src), str(tmp_path / "g.npz")]) == 0
    assert load_graph(tmp_path / "g.npz").n_edges == 2
    assert main(["convert", str(src), str(src)]) == 2


@pytest.mark.parametrize("chunk", [3, 4, 5, 1 << 24])
def test_noncanonical_scan_across_chunks(chunk):
    from kernelne.graphs.edgelist_fast import _maybe_noncanonical

    assert not _maybe_noncanonical(b"10 20\n30 40\n0 5\n", chunk)
    for bad in (b"10 20\n30 040\n", b"10 20\n+3 4\n", b"1 -0\n", b"007 1\n", b"1 2,-05\n"):
        assert _maybe_noncanonical(bad, chunk), bad
