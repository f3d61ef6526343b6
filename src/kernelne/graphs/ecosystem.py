"""Graphs held by other libraries: pandas and pyarrow edge tables, igraph graphs, PyG-style
``edge_index`` objects, and edge tables in Parquet or CSV files.

Nothing here imports pandas, pyarrow, igraph or torch to recognise an object: a pandas
DataFrame is recognised only when pandas is already imported (the object came from it), and
an ``edge_index`` is turned into numpy through its own ``.cpu()``/``.numpy()`` methods or
``__array__``. Node ids are kept as given, in the order of every edge table and edge list:
integer ids sort numerically, other ids are numbered in order of first appearance reading
the edges row by row, source before target
(:func:`~kernelne.graphs.edgelist_fast.by_row_order`). An igraph graph keeps its vertex
order, an ``edge_index`` its ``0..num_nodes-1``. Two ids written alike (``1`` and ``'1'``)
are refused: the embedding files hold ids as text.
"""

from __future__ import annotations

import operator
import sys
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from kernelne.errors import InputError
from kernelne.graphs.edgelist_fast import by_row_order, dense_int_ids

#: column names read as an edge's source, target and weight (compared without case)
SOURCE_NAMES = ("source", "src", "from", "u")
TARGET_NAMES = ("target", "dst", "to", "v")
WEIGHT_NAMES = ("weight", "w")
#: file suffixes read as edge tables with column names
TABLE_SUFFIXES = (".parquet", ".csv")


class EdgeArrays(NamedTuple):
    """Dense-id edges and node ids, the arguments of
    :meth:`kernelne.graphs.graph.Graph.from_edges`."""

    src: np.ndarray
    dst: np.ndarray
    weights: np.ndarray | None
    n_nodes: int
    nodes: np.ndarray
    directed: bool


def _instance_of(obj: Any, module: str, name: str) -> bool:
    """Whether ``obj`` is a ``module.name`` without importing ``module``."""
    mod = sys.modules.get(module)
    cls = getattr(mod, name, None) if mod is not None else None
    return isinstance(cls, type) and isinstance(obj, cls)


def is_dataframe(obj: Any) -> bool:
    """Whether ``obj`` is a pandas DataFrame."""
    return _instance_of(obj, "pandas", "DataFrame")


def is_adjacency_dataframe(obj: Any) -> bool:
    """Whether ``obj`` is a pandas DataFrame read as an adjacency matrix: square, of four or
    more columns, none named as a source or a target, every column of floats (which no edge
    table can be: float ids are refused). scikit-learn's checks give an estimator of
    ``pairwise`` input such frames."""
    return (is_dataframe(obj) and obj.shape[1] >= 4 and obj.shape[0] == obj.shape[1]
            and _named_columns(list(obj.columns)) is None
            and all(getattr(t, "kind", "") == "f" for t in obj.dtypes))


def is_edge_dataframe(obj: Any) -> bool:
    """Whether ``obj`` is a pandas DataFrame read as an edge table: every DataFrame but a
    square float one of four or more columns without source and target names
    (:func:`is_adjacency_dataframe`). One that is neither an edge table of two or three
    columns nor named is refused by :func:`from_ecosystem`, naming the columns it needs."""
    return is_dataframe(obj) and not is_adjacency_dataframe(obj)


def is_arrow_table(obj: Any) -> bool:
    """Whether ``obj`` is a pyarrow Table."""
    return _instance_of(obj, "pyarrow", "Table")


def is_igraph(obj: Any) -> bool:
    """Whether ``obj`` is an ``igraph.Graph``."""
    return _instance_of(obj, "igraph", "Graph")


def has_edge_index(obj: Any) -> bool:
    """Whether ``obj`` carries an ``edge_index`` (a PyG ``Data`` or any look-alike).

    Raises
    ------
    InputError
        Reading ``obj.edge_index`` raised (other than ``AttributeError``): the error, in one
        line naming ``edge_index``, chained to the original.
    """
    try:
        return getattr(obj, "edge_index", None) is not None
    except AttributeError:
        return False
    except Exception as exc:
        raise _edge_index_error(obj, exc) from exc


def _edge_index_error(obj: Any, exc: BaseException) -> InputError:
    return InputError(f"reading the edge_index of the {type(obj).__name__} failed: "
                      f"{type(exc).__name__}: {_first_line(exc)}")


def is_ecosystem_graph(obj: Any) -> bool:
    """Whether :func:`from_ecosystem` reads ``obj`` (an edge table, an igraph graph or an
    ``edge_index`` holder)."""
    return (is_edge_dataframe(obj) or is_arrow_table(obj) or is_igraph(obj)
            or has_edge_index(obj))


def from_ecosystem(obj: Any, directed: bool = False,
                   unweighted: bool = False) -> EdgeArrays | None:
    """The edges and node ids of a pandas/pyarrow edge table, an igraph
    graph or an ``edge_index`` holder, or ``None`` if ``obj`` is none of those.

    Parameters
    ----------
    obj : object
        A pandas DataFrame or pyarrow Table of edges (columns ``source``, ``target`` and
        optionally ``weight`` by name, else the first two and a numeric third), an
        ``igraph.Graph`` (ids from ``vs["name"]`` if set, else ``0..n-1``; weights from
        ``es["weight"]``; its own direction), or an object with an ``edge_index`` of shape
        ``(2, m)`` (PyG ``Data``: ``edge_weight`` and ``num_nodes`` read if present; ids
        ``0..num_nodes-1``).
    directed : bool, default False
        Read an edge table's or ``edge_index``'s edges as arcs.
    unweighted : bool, default False
        Ignore the weights.

    Returns
    -------
    EdgeArrays or None
        The graph's edges (dense ids) and node ids, or ``None`` when ``obj`` is not of a kind
        read here.

    Raises
    ------
    InputError
        Missing ids, ids that are floats, ids written alike (``1`` and ``'1'``), a DataFrame
        of other columns than an edge table's, a repeated column name, an ``edge_index`` of
        another shape or one whose reading raises, a ``num_nodes`` that is not an integer,
        weights that are not positive finite numbers, or no edges.
    """
    if is_igraph(obj):
        return _from_igraph(obj, unweighted)
    if is_edge_dataframe(obj):
        return _from_table(_DataFrameColumns(obj), directed, unweighted, "DataFrame")
    if is_arrow_table(obj):
        return _from_table(_ArrowColumns(obj), directed, unweighted, "Table")
    if has_edge_index(obj):
        return _from_edge_index(obj, directed, unweighted)
    return None


# -- edge tables ------------------------------------------------------------------------------

def _named_columns(names: list) -> tuple[Any, Any, Any] | None:
    """``(source, target, weight or None)`` column names found by name, or None."""
    lower = {str(c).lower(): c for c in names}
    src = next((lower[k] for k in SOURCE_NAMES if k in lower), None)
    dst = next((lower[k] for k in TARGET_NAMES if k in lower), None)
    if src is None or dst is None:
        return None
    weight = next((lower[k] for k in WEIGHT_NAMES if k in lower), None)
    return src, dst, weight


class _DataFrameColumns:
    """Column access to a pandas DataFrame, as numpy arrays."""

    def __init__(self, df: Any) -> None:
        self.names = list(df.columns)
        self._df = df

    def array(self, name: Any) -> np.ndarray:
        column = self._df[name]
        if bool(column.isna().any()):
            raise InputError(f"column {name!r} has missing values")
        return column.to_numpy()


class _ArrowColumns:
    """Column access to a pyarrow Table, as numpy arrays."""

    def __init__(self, table: Any) -> None:
        self.names = list(table.column_names)
        self._table = table

    def array(self, name: Any) -> np.ndarray:
        column = self._table.column(name)
        if column.null_count:
            raise InputError(f"column {name!r} has missing values")
        return column.to_numpy()


def _table_columns(names: list, kind: str) -> tuple[Any, Any, Any]:
    """The source, target and weight (or None) columns of an edge table."""
    repeated = next((c for c in names if names.count(c) > 1), None)
    if repeated is not None:
        raise InputError(f"column {repeated!r} appears {names.count(repeated)} times in the "
                         f"{kind}: name each column once")
    named = _named_columns(names)
    if named is not None:
        return named
    listed = ", ".join(repr(c) for c in names[:6]) + (", ..." if len(names) > 6 else "")
    needs = ("name its columns 'source' and 'target' (and 'weight'), or give two or three "
             "columns: source, target [, weight]")
    if len(names) < 2:
        raise InputError(f"an edge {kind} needs a source and a target column, found "
                         f"{len(names)} column(s){f' ({listed})' if names else ''}: {needs}")
    if len(names) > 3 and kind == "DataFrame":
        raise InputError(f"a DataFrame of {len(names)} columns ({listed}) names no source and "
                         f"target column: {needs} (an adjacency matrix: pass df.to_numpy())")
    return names[0], names[1], (names[2] if len(names) >= 3 else None)


def _from_table(columns: Any, directed: bool, unweighted: bool, kind: str) -> EdgeArrays:
    src_name, dst_name, w_name = _table_columns(columns.names, kind)
    heads, tails = columns.array(src_name), columns.array(dst_name)
    if len(heads) == 0:
        raise InputError(f"no edges found (empty {kind})")
    weights = None
    if w_name is not None and not unweighted:
        weights = columns.array(w_name)
        if weights.dtype.kind not in "iuf":
            raise InputError(f"weight column {w_name!r} is not numeric ({weights.dtype}): "
                             "name the id columns 'source' and 'target', or pass two columns")
        weights = weights.astype(np.float64)
    m = len(heads)
    dense, nodes = by_row_order(
        *dense_ids(np.concatenate([_ids(heads, src_name), _ids(tails, dst_name)]), kind), m)
    return EdgeArrays(dense[:m], dense[m:], weights, len(nodes), nodes, directed)


def _ids(values: np.ndarray, column: Any) -> np.ndarray:
    """A column of node ids as int64 (integer ids) or objects (any other hashable ids)."""
    if values.dtype.kind in "iu":
        if values.dtype.kind == "u" and len(values) and values.max() >= 2**63:
            raise InputError(f"column {column!r}: node id {values.max()} does not fit int64")
        return values.astype(np.int64)
    if values.dtype.kind in "fc":
        raise InputError(f"column {column!r} holds floats ({values.dtype}), not node ids: "
                         "cast it to integers or strings")
    if values.dtype.kind == "b":
        raise InputError(f"column {column!r} holds booleans, not node ids")
    return values.astype(object)


def dense_ids(ids: np.ndarray, where: str = "graph") -> tuple[np.ndarray, np.ndarray]:
    """``(dense ids, node ids)`` of a sequence of node ids: integers in numeric order, any
    other ids in order of first appearance; two ids written alike (``1`` and ``'1'``) are
    refused, naming ``where``."""
    if ids.dtype.kind in "iu":
        return dense_int_ids(ids.astype(np.int64))
    if all(isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))
           for x in ids):
        return dense_int_ids(np.array([int(x) for x in ids], dtype=np.int64))
    index: dict = {}
    try:
        dense = np.fromiter((index.setdefault(_plain(x), len(index)) for x in ids), np.int64,
                            len(ids))
    except TypeError as exc:
        raise InputError(f"node ids must be hashable ({exc})") from None
    check_id_texts(index, where)
    nodes = np.empty(len(index), dtype=object)
    nodes[:] = list(index)
    return dense, nodes


def check_id_texts(nodes: Any, where: str) -> None:
    """Refuse two distinct node ids written alike (``1`` and ``'1'``): embedding and model
    files hold ids as text or as one array type, so their readers would find one id twice.

    Parameters
    ----------
    nodes : sequence
        Distinct node ids (of any hashable type).
    where : str
        What holds them, named in the error (``"DataFrame"``, ``"igraph graph"``).

    Raises
    ------
    InputError
        Naming the first two ids with one text form.
    """
    seen: dict[str, Any] = {}
    for x in nodes:
        other = seen.setdefault(str(x), x)
        if other is not x:
            raise InputError(
                f"{where}: node ids {other!r} ({type(other).__name__}) and {x!r} "
                f"({type(x).__name__}) are two nodes written alike, which the embedding files "
                "cannot tell apart: give every id one type (all integers or all strings)")


def _plain(x: Any) -> Any:
    return x.item() if isinstance(x, np.generic) else x


# -- igraph -----------------------------------------------------------------------------------

def _from_igraph(g: Any, unweighted: bool) -> EdgeArrays:
    n = g.vcount()
    if n == 0:
        raise InputError("no nodes found (empty igraph graph)")
    edges = np.array(g.get_edgelist(), dtype=np.int64).reshape(-1, 2)
    weights = None
    if not unweighted and "weight" in g.es.attributes() and len(edges):
        weights = np.array(g.es["weight"], dtype=np.float64)
    if "name" in g.vs.attributes():
        names = list(g.vs["name"])
        if any(x is None for x in names):
            raise InputError("igraph graph: some vertices have no 'name' (set them all, or "
                             "delete the attribute for ids 0..n-1)")
        if len(set(names)) != n:
            raise InputError("igraph graph: vertex names repeat (node ids must be distinct)")
        if all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in names):
            nodes = np.array(names, dtype=np.int64)
        else:
            check_id_texts(names, "igraph graph: vertex names")
            nodes = np.empty(n, dtype=object)
            nodes[:] = names
    else:
        nodes = np.arange(n, dtype=np.int64)
    return EdgeArrays(edges[:, 0], edges[:, 1], weights, n, nodes, bool(g.is_directed()))


# -- edge_index (PyG) -------------------------------------------------------------------------

def to_numpy(x: Any) -> np.ndarray:
    """A tensor-like as numpy, without importing its library: ``.detach()``, ``.cpu()`` and
    ``.numpy()`` if it has them, else ``np.asarray``."""
    if isinstance(x, np.ndarray):
        return x
    for step in ("detach", "cpu"):
        if callable(getattr(x, step, None)):
            x = getattr(x, step)()
    if callable(getattr(x, "numpy", None)):
        return np.asarray(x.numpy())
    return np.asarray(x)


def _num_nodes(obj: Any) -> int | None:
    """``obj.num_nodes`` as an int (``None`` if absent); a non-integer is refused."""
    n = getattr(obj, "num_nodes", None)
    if n is None:
        return None
    try:
        if isinstance(n, (bool, np.bool_)):
            raise TypeError
        return operator.index(n)
    except TypeError:
        raise InputError(f"num_nodes must be an integer, got {n!r}") from None


def _from_edge_index(obj: Any, directed: bool, unweighted: bool) -> EdgeArrays:
    try:
        ei = to_numpy(obj.edge_index)
    except InputError:
        raise
    except Exception as exc:
        raise _edge_index_error(obj, exc) from exc
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise InputError(f"edge_index must have shape (2, m), got {ei.shape}")
    if ei.dtype.kind not in "iu":
        raise InputError(f"edge_index must hold integers, got {ei.dtype}")
    if ei.shape[1] == 0:
        raise InputError("no edges found (empty edge_index)")
    if ei.dtype.kind == "u" and ei.max() >= 2**63:
        raise InputError(f"edge_index holds node index {ei.max()}, beyond the int64 range "
                         "of node ids")
    ei = ei.astype(np.int64)
    if ei.min() < 0:
        raise InputError(f"edge_index holds a negative node index ({ei.min()})")
    n = _num_nodes(obj)
    n = int(ei.max()) + 1 if n is None else n
    if ei.max() >= n:
        raise InputError(f"edge_index names node {ei.max()}, but num_nodes is {n}")
    weights = None
    raw = None if unweighted else getattr(obj, "edge_weight", None)
    if raw is not None:
        weights = to_numpy(raw).astype(np.float64).reshape(-1)
        if len(weights) != ei.shape[1]:
            raise InputError(f"edge_weight has {len(weights)} values for {ei.shape[1]} edges")
    return EdgeArrays(ei[0], ei[1], weights, n, np.arange(n, dtype=np.int64), directed)


# -- Parquet and CSV files --------------------------------------------------------------------

def read_parquet(path: Path, directed: bool = False, unweighted: bool = False) -> EdgeArrays:
    """The edges of a Parquet edge table (columns as for a DataFrame, see
    :func:`from_ecosystem`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"not a readable Parquet file ({_first_line(exc)})", path) from None
    try:
        return _from_table(_ArrowColumns(table), directed, unweighted, "table")
    except InputError as exc:
        raise InputError(exc.problem, path) from None


def names_columns(first_fields: list[str]) -> bool:
    """Whether a CSV file's first line names a source and a target column."""
    return _named_columns(first_fields) is not None


def read_csv_table(path: Path, data: bytes, header_fields: list[str], directed: bool = False,
                   unweighted: bool = False) -> EdgeArrays:
    """The edges of a CSV edge table (bytes ``data``) whose first line names its columns.

    The id columns are read as text and follow the edge list's id rule (integers if every id
    is a canonical int64 decimal, else strings), so ``007`` and ``7`` stay distinct.
    """
    import pyarrow as pa
    from pyarrow import csv

    from kernelne.graphs.edgelist_fast import arrow_stream, map_arrow_ids

    src, dst, weight = _table_columns(header_fields, "table")
    if unweighted:
        weight = None
    types = {src: pa.string(), dst: pa.string()}
    if weight is not None:
        types[weight] = pa.float64()
    wanted = [c for c in (src, dst, weight) if c is not None]
    try:
        table = csv.read_csv(
            arrow_stream(data),  # a copy in Arrow's own memory (see arrow_stream)
            parse_options=csv.ParseOptions(delimiter=","),
            convert_options=csv.ConvertOptions(column_types=types, include_columns=wanted,
                                               strings_can_be_null=True),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError) as exc:
        raise InputError(f"not a readable CSV edge table ({_first_line(exc)})",
                         path) from None
    for name in wanted:
        if table.column(name).null_count:
            raise InputError(f"column {name!r} has missing values", path)
    if table.num_rows == 0:
        raise InputError("no edges found (empty graph)", path)
    dense, nodes = map_arrow_ids(table.column(src), table.column(dst))
    weights = table.column(weight).to_numpy() if weight is not None else None
    m = table.num_rows
    return EdgeArrays(dense[:m], dense[m:], weights, len(nodes), nodes, directed)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
