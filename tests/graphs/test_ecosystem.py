"""Graphs from other libraries: pandas and pyarrow edge tables, igraph graphs, PyG-style
``edge_index`` objects, Parquet and CSV edge files; the same CSR graph as the edge list."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import igraph as ig
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kernelne.cli.app import main
from kernelne.errors import InputError
from kernelne.graphs.ecosystem import is_ecosystem_graph
from kernelne.graphs.graph import Graph, load_graph

KARATE = Path(__file__).parents[2] / "examples" / "karate.edgelist"


@pytest.fixture(scope="module")
def karate() -> Graph:
    return load_graph(KARATE)


def same_graph(a: Graph, b: Graph) -> None:
    assert a.directed == b.directed
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    assert (a.weights is None) == (b.weights is None)
    if a.weights is not None:
        np.testing.assert_array_equal(a.weights, b.weights)
    assert a.nodes.tolist() == b.nodes.tolist()


class FakeTensor:
    """A tensor-like (as torch's): ``.cpu()`` then ``.numpy()``; no ``__array__``."""

    def __init__(self, values: np.ndarray) -> None:
        self._values = np.asarray(values)
        self.moved = False

    def cpu(self) -> FakeTensor:
        self.moved = True
        return self

    def numpy(self) -> np.ndarray:
        assert self.moved, ".numpy() before .cpu()"
        return self._values


class FakeData:
    """A PyG ``Data`` look-alike."""

    def __init__(self, edge_index, num_nodes=None, edge_weight=None) -> None:
        self.edge_index = edge_index
        if num_nodes is not None:
            self.num_nodes = num_nodes
        if edge_weight is not None:
            self.edge_weight = edge_weight


def both_directions(edges: np.ndarray) -> np.ndarray:
    """The ``(2, 2m)`` edge_index PyG stores for an undirected graph."""
    return np.concatenate([edges, edges[:, ::-1]]).T.copy()


def test_dataframe_named_and_positional_columns(karate):
    e = karate.edges()
    named = pd.DataFrame({"weight": 1.0, "target": e[:, 1], "source": e[:, 0], "note": "x"})
    same_graph(load_graph(named), karate)
    same_graph(load_graph(pd.DataFrame({"a": e[:, 0], "b": e[:, 1]})), karate)
    weighted = pd.DataFrame({"a": e[:, 0], "b": e[:, 1], "c": np.arange(1, len(e) + 1.0)})
    g = load_graph(weighted)
    assert g.is_weighted and g.adjacency()[e[5, 0], e[5, 1]] == 6.0
    assert not load_graph(weighted, unweighted=True).is_weighted


def test_dataframe_string_ids_kept_in_first_appearance_order(write):
    df = pd.DataFrame({"source": ["b", "a", "c"], "target": ["a", "c", "007"]})
    g = load_graph(df)
    assert g.nodes.tolist() == ["b", "a", "c", "007"]
    same_graph(g, load_graph(write("g.txt", "b a\na c\nc 007\n")))


def test_dataframe_directed_and_bad_columns():
    df = pd.DataFrame({"source": [0, 1], "target": [1, 2]})
    g = load_graph(df, directed=True)
    assert g.directed and g.n_edges == 2 and g.neighbors(1).tolist() == [2]
    with pytest.raises(InputError, match="floats"):
        load_graph(pd.DataFrame({"source": [0.0, 1.5], "target": [1.0, 2.0]}))
    with pytest.raises(InputError, match="missing values"):
        load_graph(pd.DataFrame({"source": ["a", None], "target": ["b", "c"]}))
    with pytest.raises(InputError, match="weight column 'kind' is not numeric"):
        load_graph(pd.DataFrame({"a": [0, 1], "b": [1, 2], "kind": ["x", "y"]}))
    with pytest.raises(InputError, match="positive"):
        load_graph(pd.DataFrame({"source": [0, 1], "target": [1, 2], "weight": [1.0, -2]}))


def test_a_square_dataframe_of_many_columns_stays_an_adjacency_matrix():
    adj = pd.DataFrame(np.ones((5, 5)) - np.eye(5))
    assert not is_ecosystem_graph(adj)
    assert load_graph(adj.to_numpy()).n_edges == 10


def test_load_graph_and_fit_read_a_dataframe_alike():
    """A square float frame (scikit-learn's pairwise input; never an edge table, float ids
    being refused) is the same adjacency matrix to load_graph and fit; a 4 x 4 frame of
    edges (integer columns) was an adjacency matrix to fit and nothing to load_graph: both
    refuse it, naming the columns an edge table needs."""
    from kernelne import KernelNE
    from kernelne.model.estimator import is_matrix_input

    adjacency = pd.DataFrame(np.ones((4, 4)) - np.eye(4), columns=list("abcd"))
    assert is_matrix_input(adjacency)  # what fit reads as an adjacency matrix
    g = load_graph(adjacency)
    same = load_graph(adjacency.to_numpy())
    assert g.n_edges == 6 and (g.adjacency() != same.adjacency()).nnz == 0
    edges = pd.DataFrame({"a": [0, 1, 2, 3], "b": [1, 2, 3, 0], "c": [1.0, 1.0, 2.0, 1.0],
                          "d": [10, 11, 12, 13]})
    assert not is_matrix_input(edges)
    for read in (load_graph, KernelNE(workers=1).fit):
        with pytest.raises(InputError, match=r"^a DataFrame of 4 columns \('a', 'b', 'c', 'd'\) "
                           r"names no source and target column: .* \(an adjacency matrix: pass "
                           r"df\.to_numpy\(\)\)$"):
            read(edges)


def test_dataframes_that_are_no_edge_table_name_the_columns_they_need():
    from kernelne import KernelNE

    needs = "name its columns 'source' and 'target' (and 'weight'), or give two or three"
    one = pd.DataFrame({"source": [0, 1, 2]})
    wide = pd.DataFrame({"a": [0, 1, 2, 3, 4], "b": [1, 2, 3, 0, 1], "c": [1.0] * 5,
                         "d": [10, 11, 12, 13, 14]})
    for frame, lead in ((one, "an edge DataFrame needs a source and a target column, found "
                              "1 column(s) ('source'): "),
                        (wide, "a DataFrame of 4 columns ('a', 'b', 'c', 'd') names no "
                               "source and target column: ")):
        for read in (load_graph, KernelNE(workers=1).fit):
            with pytest.raises(InputError) as err:
                read(frame)
            assert str(err.value).startswith(lead + needs), str(err.value)


def test_a_repeated_column_is_named_not_a_pandas_error():
    twice = pd.DataFrame([[0, 1, 2], [1, 2, 3]], columns=["source", "target", "target"])
    with pytest.raises(InputError, match="^column 'target' appears 2 times in the DataFrame"):
        load_graph(twice)
    table = pa.table([[0, 1], [1, 2], [2, 3]], names=["source", "target", "target"])
    with pytest.raises(InputError, match="^column 'target' appears 2 times in the Table"):
        load_graph(table)


def test_edge_index_num_nodes_ids_and_a_raising_property():
    ei = np.array([[0, 1, 2], [1, 2, 3]])
    with pytest.raises(InputError, match=r"^num_nodes must be an integer, got 4\.7$"):
        load_graph(FakeData(ei, num_nodes=4.7))
    assert load_graph(FakeData(ei, num_nodes=np.int64(6))).n_nodes == 6
    huge = np.array([[0, 2**63], [1, 2]], dtype=np.uint64)
    with pytest.raises(InputError, match="^edge_index holds node index 9223372036854775808, "
                       "beyond the int64 range"):
        load_graph(FakeData(huge))

    class Failing:
        @property
        def edge_index(self):
            raise RuntimeError("CUDA error")

    with pytest.raises(InputError, match="^reading the edge_index of the Failing failed: "
                       "RuntimeError: CUDA error$") as err:
        load_graph(Failing())
    assert isinstance(err.value.__cause__, RuntimeError)


def test_arrow_table(karate):
    e = karate.edges()
    table = pa.table({"source": e[:, 0], "target": e[:, 1]})
    same_graph(load_graph(table), karate)
    strings = pa.table({"u": ["x", "y"], "v": ["y", "z"]})
    assert load_graph(strings).nodes.tolist() == ["x", "y", "z"]


def test_igraph_ids_weights_and_direction(karate):
    e = karate.edges()
    same_graph(load_graph(ig.Graph(n=karate.n_nodes, edges=e.tolist())), karate)
    named = ig.Graph(n=3, edges=[(0, 1), (1, 2)], directed=True)
    named.vs["name"] = ["p", "q", "r"]
    named.es["weight"] = [2.0, 3.0]
    g = load_graph(named)
    assert g.directed and g.nodes.tolist() == ["p", "q", "r"]
    assert g.adjacency()[1, 2] == 3.0 and g.adjacency()[2, 1] == 0
    isolated = ig.Graph(n=4, edges=[(0, 1)])
    assert load_graph(isolated).n_nodes == 4  # a vertex without edges is kept
    twice = ig.Graph(n=2, edges=[(0, 1)])
    twice.vs["name"] = ["a", "a"]
    with pytest.raises(InputError, match="names repeat"):
        load_graph(twice)


def test_edge_index_numpy_tensor_like_weights_and_num_nodes(karate):
    e = karate.edges()
    same_graph(load_graph(FakeData(both_directions(e))), karate)
    tensor = FakeTensor(both_directions(e))
    same_graph(load_graph(FakeData(tensor, num_nodes=karate.n_nodes)), karate)
    g = load_graph(FakeData(np.array([[0, 1], [1, 2]]), num_nodes=5,
                            edge_weight=FakeTensor(np.array([2.0, 4.0], dtype=np.float32))))
    assert g.n_nodes == 5 and g.adjacency()[1, 2] == 4.0 and len(g.isolated_nodes()) == 2
    with pytest.raises(InputError, match=r"shape \(2, m\)"):
        load_graph(FakeData(np.zeros((3, 4), dtype=np.int64)))
    with pytest.raises(InputError, match="num_nodes is 2"):
        load_graph(FakeData(np.array([[0], [5]]), num_nodes=2))
    with pytest.raises(InputError, match="edge_weight has 1 values for 2 edges"):
        load_graph(FakeData(np.array([[0, 1], [1, 2]]), edge_weight=np.ones(1)))


def test_recognising_an_edge_index_imports_nothing():
    code = ("import sys, numpy as np\n"
            "from kernelne.graphs.graph import load_graph\n"
            "class D: edge_index = np.array([[0, 1], [1, 2]])\n"
            "assert load_graph(D()).n_edges == 2\n"
            "print(sorted(m for m in ('torch', 'pandas', 'igraph') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_parquet_and_csv_edge_files(tmp_path, karate, write):
    e = karate.edges()
    pq.write_table(pa.table({"source": e[:, 0], "target": e[:, 1]}), tmp_path / "k.parquet")
    same_graph(load_graph(tmp_path / "k.parquet"), karate)
    rows = "".join(f"{u},{v},x\n" for u, v in e)
    same_graph(load_graph(write("k.csv", "source,target,comment\n" + rows)), karate)
    same_graph(load_graph(write("plain.csv", "".join(f"{u},{v}\n" for u, v in e))), karate)
    # the edge list's id rule on text: 007 and 7 are two string ids
    g = load_graph(write("s.csv", "from,to,weight\n007,7,2.5\n7,8,1\n"))
    assert g.nodes.tolist() == ["007", "7", "8"] and g.adjacency()[0, 1] == 2.5
    assert load_graph(write("h.csv", "p,q\na,b\n"), header=True).nodes.tolist() == ["a", "b"]


def test_bad_table_files_fail_in_one_line(tmp_path, write, capsys):
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(InputError, match="bad.parquet: not a readable Parquet file"):
        load_graph(tmp_path / "bad.parquet")
    with pytest.raises(InputError, match="holes.csv: column 'target' has missing values"):
        load_graph(write("holes.csv", "source,target\n1,2\n3,\n"))
    out = tmp_path / "e.npy"
    assert main(["embed", str(tmp_path / "bad.parquet"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and not out.exists()


def test_embed_reads_a_parquet_edge_file(tmp_path, karate, capsys):
    e = karate.edges()
    names = np.array([f"n{i}" for i in range(karate.n_nodes)], dtype=object)
    pq.write_table(pa.table({"source": names[e[:, 0]], "target": names[e[:, 1]]}),
                   tmp_path / "k.parquet")
    out = tmp_path / "e.txt"
    assert main(["embed", str(tmp_path / "k.parquet"), "-o", str(out), "--dim", "8",
                 "--walks-per-node", "2", "--walk-length", "5", "--window", "3",
                 "--workers", "1", "--seed", "0"]) == 0
    lines = out.read_text().splitlines()
    assert lines[0] == "34 8" and lines[1].startswith("n0 ")


def test_header_on_a_csv_of_integer_edges_is_still_refused(write):
    """``--header`` never turns a first edge into column names."""
    with pytest.raises(InputError, match="is an edge of integer ids"):
        load_graph(write("i.csv", "0,1\n1,2\n2,0\n"), header=True)


def test_one_node_order_for_every_source_of_the_same_rows(tmp_path, write):
    """String ids: first appearance reading the edges row by row, source before target, for
    an edge list (the pyarrow reader and the line-by-line one), a CSV or Parquet table, a
    DataFrame and a pyarrow Table; igraph and networkx graphs built from the same rows keep
    their own order, which is the same."""
    import networkx as nx

    from kernelne.graphs.graph import _read_lines

    rows = [("c", "a"), ("b", "c"), ("d", "a"), ("a", "e"), ("f", "b")]
    want = ["c", "a", "b", "d", "e", "f"]  # sources then targets would give c b d a f e
    frame = pd.DataFrame(rows, columns=["source", "target"])
    text = write("g.txt", "".join(f"{u} {v}\n" for u, v in rows))
    csv = write("g.csv", "source,target\n" + "".join(f"{u},{v}\n" for u, v in rows))
    pq.write_table(pa.Table.from_pandas(frame), tmp_path / "g.parquet")
    sources = {"edge list": text, "csv": csv, "parquet": tmp_path / "g.parquet",
               "DataFrame": frame, "Table": pa.Table.from_pandas(frame),
               "igraph": ig.Graph.TupleList(rows), "networkx": nx.Graph(rows)}
    for name, source in sources.items():
        assert load_graph(source).nodes.tolist() == want, name
    assert _read_lines(text, None)[1].tolist() == want  # the reader of damaged files
    g = load_graph(frame)
    assert [tuple(g.nodes[e]) for e in g.edges()][:2] == [("c", "a"), ("c", "b")]
    integers = pd.DataFrame({"source": [5, 2], "target": [1, 9]})
    assert load_graph(integers).nodes.tolist() == [1, 2, 5, 9]  # integers: numeric order


def test_ids_one_and_text_one_are_refused_not_made_two_nodes():
    """1 and '1' would be written alike to every embedding and model file, whose readers then
    find one id twice: each source refuses them in one line naming both."""
    import networkx as nx

    clash = r"node ids 1 \(int\) and '1' \(str\) are two nodes written alike"
    with pytest.raises(InputError, match=f"^DataFrame: {clash}"):
        load_graph(pd.DataFrame({"source": [1, "1", 2, 3], "target": [2, 3, 3, 1]}))
    with pytest.raises(InputError, match=f"^Table: {clash}"):
        load_graph(pa.table({"source": [1, 2], "target": ["1", "x"]}))
    named = ig.Graph(n=3, edges=[(0, 1), (1, 2)])
    named.vs["name"] = [1, "1", 2]
    with pytest.raises(InputError, match=f"^igraph graph: vertex names: {clash}"):
        load_graph(named)
    with pytest.raises(InputError, match=f"^networkx graph: {clash}"):
        load_graph(nx.Graph([(1, "1"), ("1", 2)]))
    mixed = load_graph(pd.DataFrame({"source": [1, "a"], "target": ["b", 2]}))
    assert mixed.nodes.tolist() == [1, "b", "a", 2]  # ints and strings written apart: kept
