"""Graph input: the CSR type, every reader, and every bad-input case."""

from __future__ import annotations

import gzip

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.io import savemat

from kernelne.errors import InputError
from kernelne.graphs.datasets import load_dataset, read_labels
from kernelne.graphs.graph import (
    Graph,
    from_networkx,
    from_scipy,
    load_graph,
    read_edgelist,
    read_mat,
)


def edge_set(g: Graph) -> set:
    """Edges in the user's ids: (u, v) tuples if directed, {u, v} frozensets if undirected."""
    pairs = ((g.nodes[u].item() if hasattr(g.nodes[u], "item") else g.nodes[u],
              g.nodes[v].item() if hasattr(g.nodes[v], "item") else g.nodes[v])
             for u, v in g.edges())
    return {p if g.directed else frozenset(p) for p in pairs}


def und(*pairs) -> set:
    return {frozenset(p) for p in pairs}


def check_csr(g: Graph) -> None:
    """Structural invariants every Graph must satisfy."""
    assert g.indptr[0] == 0 and g.indptr[-1] == len(g.indices)
    assert np.all(np.diff(g.indptr) >= 0)
    for v in range(g.n_nodes):
        nb = g.neighbors(v)
        assert np.all(np.diff(nb) > 0), "neighbour lists sorted, no duplicates"
        assert v not in nb, "no self-loops"
    if not g.directed:
        adj = g.adjacency()
        assert (adj != adj.T).nnz == 0, "undirected graphs store both directions"


# --- edge-list text -----------------------------------------------------------------------------


@pytest.mark.parametrize("sep", [" ", "\t", ",", ", ", "  \t "])
def test_separators(write, sep):
    text = f"0{sep}1\n1{sep}2\n2{sep}0\n2{sep}3\n"
    g = read_edgelist(write("g.txt", text))
    check_csr(g)
    assert g.n_nodes == 4 and g.n_edges == 4
    assert edge_set(g) == und((0, 1), (1, 2), (0, 2), (2, 3))
    assert g.neighbors(2).tolist() == [0, 1, 3]
    assert not g.is_weighted and not g.directed


def test_comments_and_blank_lines(write):
    text = "# a comment\n% matrix-market style comment\n\n0 1\n   \n  # indented comment\n1 2\n"
    g = read_edgelist(write("g.txt", text))
    assert edge_set(g) == und((0, 1), (1, 2))


def test_gzip_is_read_transparently(write):
    text = "# gz\na b\nb c\nc a\n"
    plain = read_edgelist(write("g.txt", text))
    for name in ("g.txt.gz", "g_no_suffix.txt"):  # detected by magic bytes, not by name
        g = read_edgelist(write(name, text, gz=True))
        assert edge_set(g) == edge_set(plain) == und(("a", "b"), ("b", "c"), ("a", "c"))
        assert g.nodes.tolist() == ["a", "b", "c"]


def test_string_ids_in_order_of_first_appearance(write):
    g = read_edgelist(write("g.txt", "paris london\nberlin paris\nrome Zoë\n"))
    assert g.nodes.tolist() == ["paris", "london", "berlin", "rome", "Zoë"]  # row by row
    assert g.index_of("Zoë") == 4
    assert set(g.neighbors(g.index_of("paris"))) == {g.index_of("london"), g.index_of("berlin")}
    with pytest.raises(KeyError):
        g.index_of("madrid")
    assert not g.has_identity_ids()


def test_mixed_int_and_string_ids_become_strings(write):
    g = read_edgelist(write("g.txt", "1 2\n2 x\n"))
    assert g.nodes.tolist() == ["1", "2", "x"]


def test_integer_ids_keep_numeric_order(write):
    g = read_edgelist(write("g.txt", "10 5\n5 7\n100 7\n"))
    assert g.nodes.tolist() == [5, 7, 10, 100]
    assert g.index_of(np.int64(10)) == g.index_of(10) == 2
    assert edge_set(g) == und((5, 10), (5, 7), (7, 100))
    assert read_edgelist(write("h.txt", "0 1\n1 2\n")).has_identity_ids()


def test_weights(write):
    g = read_edgelist(write("g.txt", "a b 2.5\nb c 1e-1\nc a 4\n"))
    check_csr(g)
    assert g.is_weighted
    adj = g.adjacency().toarray()
    ia, ib, ic = (g.index_of(x) for x in "abc")
    assert adj[ia, ib] == adj[ib, ia] == pytest.approx(2.5)
    assert adj[ib, ic] == pytest.approx(0.1)
    assert adj[ic, ia] == pytest.approx(4.0)


def test_unit_weights_mean_unweighted(write):
    assert not read_edgelist(write("g.txt", "0 1 1\n1 2 1.0\n")).is_weighted


def test_directed_option(write):
    path = write("g.txt", "0 1\n1 0\n1 2\n2 3\n")
    d = read_edgelist(path, directed=True)
    check_csr(d)
    assert d.directed and d.n_edges == 4
    assert edge_set(d) == {(0, 1), (1, 0), (1, 2), (2, 3)}
    assert d.neighbors(3).tolist() == [] and d.sink_nodes().tolist() == [3]
    assert d.isolated_nodes().tolist() == []  # it has an in-edge: walks reach it
    assert d.duplicates_dropped == 0
    u = read_edgelist(path)
    assert u.n_edges == 3 and u.duplicates_dropped == 1
    assert u.isolated_nodes().tolist() == []


def test_self_loops_and_duplicates_dropped_and_counted(write):
    text = "0 1\n1 1\n1 0\n0 1\n2 2\n1 2\n3 3\n"
    g = read_edgelist(write("g.txt", text))
    check_csr(g)
    assert g.self_loops_dropped == 3
    assert g.duplicates_dropped == 2
    assert g.n_edges == 2 and edge_set(g) == und((0, 1), (1, 2))
    # node 3 only has a self-loop: it stays, isolated
    assert g.n_nodes == 4 and g.isolated_nodes().tolist() == [3]
    d = read_edgelist(write("d.txt", text), directed=True)
    assert d.self_loops_dropped == 3 and d.duplicates_dropped == 1 and d.n_edges == 3


def test_duplicates_keep_the_first_weight(write):
    g = read_edgelist(write("g.txt", "0 1 3\n1 0 5\n"))
    assert g.duplicates_dropped == 1
    assert g.adjacency()[0, 1] == g.adjacency()[1, 0] == pytest.approx(3.0)


def test_isolated_nodes_from_node_count(write):
    g = read_edgelist(write("g.txt", "0 1\n1 2\n"), n_nodes=6)
    assert g.n_nodes == 6 and g.isolated_nodes().tolist() == [3, 4, 5]
    assert g.has_identity_ids()
    with pytest.raises(InputError, match="0..1"):
        read_edgelist(write("h.txt", "0 1\n1 2\n"), n_nodes=2)
    with pytest.raises(InputError):
        read_edgelist(write("s.txt", "a b\n"), n_nodes=2)


def test_edges_once_with_u_less_than_v(kite):
    e = kite.edges()
    assert e.shape == (kite.n_edges, 2)
    assert np.all(e[:, 0] < e[:, 1])
    assert len({tuple(x) for x in e}) == kite.n_edges


# --- bad input ----------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.txt"
    with pytest.raises(InputError, match="no such file") as info:
        load_graph(missing)
    assert info.value.path == str(missing) and str(missing) in str(info.value)
    with pytest.raises(InputError, match="cannot read"):
        read_edgelist(missing)


def test_directory_is_not_a_file(tmp_path):
    with pytest.raises(InputError, match="directory"):
        read_edgelist(tmp_path)


def test_unreadable_path(write):
    path = write("g.txt", "0 1\n") / "child.txt"  # a "folder" that is a file
    with pytest.raises(InputError, match="cannot read") as info:
        read_edgelist(path)
    assert info.value.path == str(path)


def test_unreadable_file(write):
    path = write("g.txt", "0 1\n")
    path.chmod(0)
    try:
        try:
            open(path).close()
            pytest.skip("running with permissions that can read a mode-000 file (root)")
        except PermissionError:
            pass
        with pytest.raises(InputError, match="cannot read"):
            read_edgelist(path)
    finally:
        path.chmod(0o644)


def test_binary_file_is_not_text(tmp_path):
    path = tmp_path / "g.bin"
    path.write_bytes(b"0 1\n\xff\xfe\x00\x81 2\n")
    with pytest.raises(InputError, match="UTF-8"):
        read_edgelist(path)


def test_truncated_gzip(tmp_path):
    path = tmp_path / "g.txt.gz"
    data = gzip.compress(("0 1\n" * 5000).encode())
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="cannot read"):
        read_edgelist(path)


@pytest.mark.parametrize(
    ("text", "line", "pattern"),
    [
        ("0 1\n1 2 3 4\n", 2, "found 4"),
        ("# header\n0 1\n7\n", 3, "found 1"),
        ("0 1 1.5\n1 2 heavy\n", 2, "not a number"),
        ("0 1 1\n1 2 -2\n", 2, "negative"),
        ("0 1 0\n", 1, "zero weight"),
        ("0 1 nan\n", 1, "non-finite"),
        ("0 1 inf\n", 1, "non-finite"),
        ("0 1\n1 2 0.5\n", 2, "earlier lines have 2"),
        ("0 1 0.5\n\n1 2\n", 3, "earlier lines have 3"),
    ],
)
def test_malformed_lines_name_file_and_line(write, text, line, pattern):
    path = write("bad.txt", text)
    with pytest.raises(InputError, match=pattern) as info:
        read_edgelist(path)
    assert info.value.line == line
    assert str(info.value).startswith(f"{path}:{line}: ")


@pytest.mark.parametrize("text", ["", "# only\n% comments\n\n", "\n\n  \n"])
def test_empty_graph(write, text):
    for gz in (False, True):
        with pytest.raises(InputError, match="empty graph"):
            read_edgelist(write("e.txt", text, gz=gz))


def test_input_error_is_a_value_error():
    assert issubclass(InputError, ValueError)
    e = InputError("bad", "f.txt", 3)
    assert str(e) == "f.txt:3: bad" and (e.path, e.line, e.problem) == ("f.txt", 3, "bad")


# --- .mat, scipy, networkx ----------------------------------------------------------------------


def _ring(n=6):
    rows = np.arange(n)
    a = sp.coo_matrix((np.ones(n), (rows, (rows + 1) % n)), shape=(n, n))
    return (a + a.T).tocsc()


def test_read_mat(tmp_path):
    path = tmp_path / "g.mat"
    savemat(path, {"network": _ring(6), "group": np.eye(6)})
    g = read_mat(path)
    check_csr(g)
    assert g.n_nodes == 6 and g.n_edges == 6 and g.duplicates_dropped == 0
    assert load_graph(path).n_edges == 6
    h = load_graph(str(path))
    assert edge_set(h) == edge_set(g)


def test_read_mat_other_key(tmp_path):
    path = tmp_path / "g.mat"
    savemat(path, {"A": _ring(5)})
    assert read_mat(path, key="A").n_edges == 5
    assert load_graph(path, mat_key="A").n_edges == 5


def test_mat_missing_key_lists_the_keys(tmp_path):
    path = tmp_path / "g.mat"
    savemat(path, {"A": _ring(5), "labels": np.ones(5)})
    with pytest.raises(InputError, match=r"'network'.*A, labels") as info:
        read_mat(path)
    assert info.value.path == str(path)


def test_mat_bad_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_mat(tmp_path / "missing.mat")
    with pytest.raises(InputError, match="no such file"):
        load_graph(tmp_path / "missing.mat")
    garbage = tmp_path / "garbage.mat"
    garbage.write_text("this is not a mat file at all\n" * 10)
    with pytest.raises(InputError, match=r"\.mat"):
        read_mat(garbage)


def test_mat_negative_weight_names_the_file(tmp_path):
    path = tmp_path / "neg.mat"
    m = _ring(4).toarray()
    m[0, 1] = m[1, 0] = -1.0
    savemat(path, {"network": sp.csc_matrix(m)})
    with pytest.raises(InputError, match="positive") as info:
        read_mat(path)
    assert info.value.path == str(path)


def test_from_scipy_symmetric_and_asymmetric():
    g = from_scipy(_ring(5))
    assert g.n_edges == 5 and g.duplicates_dropped == 0
    upper = sp.triu(_ring(5))  # each edge stored once (one direction)
    h = from_scipy(upper)
    assert edge_set(h) == edge_set(g)
    d = from_scipy(upper, directed=True)
    assert d.directed and d.n_edges == 5
    with pytest.raises(InputError, match="square"):
        from_scipy(sp.random(3, 4, density=0.5, random_state=0))
    with pytest.raises(InputError, match="empty"):
        from_scipy(sp.csr_matrix((4, 4)))


def test_from_scipy_dense_with_isolated_node_and_weights():
    m = np.zeros((4, 4))
    m[0, 1] = m[1, 0] = 2.0
    m[1, 2] = m[2, 1] = 1.0
    m[2, 2] = 5.0
    g = load_graph(m)
    assert g.n_nodes == 4 and g.isolated_nodes().tolist() == [3]
    assert g.self_loops_dropped == 1 and g.is_weighted
    assert g.adjacency()[0, 1] == pytest.approx(2.0)


def test_from_networkx_keeps_ids_and_weights():
    G = nx.Graph()
    G.add_edge("a", "b", weight=3.0)
    G.add_edge("b", "c", weight=1.0)
    G.add_node("lonely")
    G.add_edge("c", "c")
    g = load_graph(G)
    check_csr(g)
    assert g.nodes.tolist() == ["a", "b", "c", "lonely"]
    assert g.isolated_nodes().tolist() == [3] and g.self_loops_dropped == 1
    assert g.adjacency()[g.index_of("a"), g.index_of("b")] == pytest.approx(3.0)
    unweighted = from_networkx(G, weight=None)
    assert not unweighted.is_weighted


def test_from_networkx_directed_and_int_ids():
    D = nx.DiGraph([(10, 20), (20, 10), (20, 30)])
    g = from_networkx(D)
    assert g.directed and g.n_edges == 3
    assert g.nodes.dtype.kind == "i" and g.nodes.tolist() == [10, 20, 30]
    with pytest.raises(InputError, match="empty"):
        from_networkx(nx.Graph())


def test_load_graph_dispatch(write, kite):
    assert load_graph(kite) is kite
    assert load_graph(write("g.csv", "0,1\n1,2\n")).n_edges == 2
    assert load_graph(sp.csr_matrix(_ring(4))).n_edges == 4
    with pytest.raises(InputError, match="list"):
        load_graph([(0, 1)])


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 12),
    pairs=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), min_size=1, max_size=40),
    directed=st.booleans(),
)
def test_from_edges_matches_networkx(n, pairs, directed):
    pairs = [(u % n, v % n) for u, v in pairs]
    src, dst = np.array(pairs).T
    g = Graph.from_edges(src, dst, n_nodes=n, directed=directed)
    check_csr(g)
    ref = (nx.DiGraph if directed else nx.Graph)()
    ref.add_nodes_from(range(n))
    ref.add_edges_from((u, v) for u, v in pairs if u != v)
    assert g.n_edges == ref.number_of_edges()
    assert g.self_loops_dropped == sum(u == v for u, v in pairs)
    assert g.duplicates_dropped == sum(u != v for u, v in pairs) - ref.number_of_edges()
    want = {(u, v) if directed else (min(u, v), max(u, v)) for u, v in ref.edges()}
    assert {tuple(e) for e in g.edges().tolist()} == want
    deg = [ref.out_degree(v) if directed else ref.degree(v) for v in range(n)]
    assert g.degrees.tolist() == deg


def test_from_edges_rejects_bad_arrays():
    with pytest.raises(InputError, match="outside"):
        Graph.from_edges(np.array([0]), np.array([3]), n_nodes=3)
    with pytest.raises(InputError, match="positive"):
        Graph.from_edges(np.array([0]), np.array([1]), weights=np.array([-1.0]))
    with pytest.raises(InputError, match="node ids"):
        Graph.from_edges(np.array([0]), np.array([1]), n_nodes=2, nodes=np.array([5]))


# --- the dataset folder -------------------------------------------------------------------------


def test_dataset_folder_cora(data_dir):
    ds = load_dataset("cora", data_dir)
    check_csr(ds.graph)
    assert ds.graph.n_nodes == 2708 and ds.graph.n_edges == 5278
    assert ds.labels.shape == (2708, 7) and ds.labels.sum(axis=1).min() == 1
    # a dataset file through load_graph takes the node count from MANIFEST.json
    assert load_graph(data_dir / "cora.edges.gz").n_nodes == 2708


def test_dataset_folder_citeseer_isolated_nodes(data_dir):
    g = load_graph(data_dir / "citeseer.edges.gz")
    assert g.n_nodes == 3312 and g.n_edges == 4536
    assert len(g.isolated_nodes()) == 48


def test_unknown_dataset(data_dir):
    with pytest.raises(InputError, match="unknown dataset"):
        load_dataset("not-a-network", data_dir)


def test_read_labels_with_string_ids(write):
    g = read_edgelist(write("g.txt", "a b\nb c\n"))
    labels = read_labels(write("l.txt", "a x\nb y\nb x\nc z\n"), g)
    assert labels.shape == (3, 3)
    assert labels.toarray().astype(int).tolist() == [[1, 0, 0], [1, 1, 0], [0, 0, 1]]
    with pytest.raises(InputError, match="not in the graph") as info:
        read_labels(write("bad.txt", "a x\nd y\n"), g)
    assert info.value.line == 2
