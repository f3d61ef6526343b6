"""Graph input: the readers that build the CSR :class:`~kernelne.graphs.csr.Graph` (which this
module re-exports).

Sources: edge-list text (space, tab or comma separated; ``#``/``%`` comments; optional weight
column; string or integer ids; gzip read transparently), the dataset-folder format of
``kernelne/data`` (an edge file beside a ``MANIFEST.json`` that gives the node count), MATLAB
``.mat`` files, networkx graphs and scipy sparse matrices; pandas and pyarrow edge tables,
Parquet and CSV edge files, igraph graphs and PyG-style ``edge_index`` objects through
:mod:`kernelne.graphs.ecosystem`.

Undirected by default: edges are symmetrised, self-loops and duplicate edges are dropped and
counted. Node ids are mapped to dense ids ``0..n-1``; ``Graph.nodes`` keeps the user's ids in
that order so every output can speak them.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from kernelne.errors import InputError, quote
from kernelne.graphs.csr import (  # noqa: F401 (kernelne.graphs.graph's API)
    WEIGHT_MAX,
    WEIGHT_MIN,
    WEIGHT_RANGE,
    Graph,
    weights_out_of_float32,
)
from kernelne.graphs.ecosystem import (
    EdgeArrays,
    check_id_texts,
    from_ecosystem,
    is_adjacency_dataframe,
    names_columns,
    read_parquet,
)
from kernelne.graphs.edgelist_fast import (
    CANONICAL_INT,
    by_row_order,
    dense_int_ids,
    parse_fast,
    read_bytes,
)
from kernelne.graphs.npz import read_graph_arrays
from kernelne.outputs import check_not_url

_SPLIT = re.compile(r"[,\s]+")
_CANONICAL = re.compile(CANONICAL_INT)
_NUMBERISH = re.compile(r"[+-]?[0-9][0-9_.eE+-]*")
_COMMENTS = ("#", "%")


def open_text(path: str | Path):
    """Open a text file for reading, gunzipping it when it is gzip-compressed."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            magic = fh.read(2)
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", path) from None
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8-sig")
    return open(path, encoding="utf-8-sig")


def iter_records(path: str | Path, data: bytes | None = None):
    """Yield ``(line_number, fields)`` for each non-blank, non-comment line of a text file.

    ``data``: the file's bytes, already read (and gunzipped) by the caller; the path is then
    only named in messages (a pipe or FIFO can be read only once).
    """
    try:
        with (open_text(path) if data is None else
              io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig")) as fh:
            for lineno, line in enumerate(fh, 1):
                s = line.strip()
                if not s or s.startswith(_COMMENTS):
                    continue
                yield lineno, _SPLIT.split(s)
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", path) from None
    except (EOFError, gzip.BadGzipFile, OSError) as exc:
        raise InputError(f"cannot read file: {exc}", path) from None


def is_canonical_int(token: str) -> bool:
    """Whether ``token`` is the canonical decimal of an int64 (the id rule)."""
    return _CANONICAL.fullmatch(token) is not None and -(2**63) <= int(token) < 2**63


def map_ids(tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Map id tokens to dense ids.

    Ids are integers only if every token is the canonical decimal of an int64 (``7``, ``-3``;
    not ``007``, ``+7``, ``1_0`` or ``2**63``): they keep their numeric order (so ``0..n-1``
    maps to itself). Otherwise every id is a string, kept exactly and numbered in order of
    first appearance. Returns ``(dense, nodes)``.
    """
    if all(is_canonical_int(t) for t in tokens):
        return dense_int_ids(np.array([int(t) for t in tokens], dtype=np.int64))
    index: dict[str, int] = {}
    dense = np.fromiter((index.setdefault(t, len(index)) for t in tokens), np.int64, len(tokens))
    return dense, np.array(list(index), dtype=object)


def read_edgelist(
    path: str | Path,
    directed: bool = False,
    n_nodes: int | None = None,
    header: bool = False,
    unweighted: bool = False,
) -> Graph:
    """Read an edge list: ``source target [weight]`` per line.

    When ``n_nodes`` is given the ids must be the integers ``0..n_nodes-1`` (the dataset-folder
    format, where isolated nodes appear in no edge). ``header``: skip the first line (a line of
    column names is detected and reported otherwise). ``unweighted``: ignore a weight column.
    Regular files are parsed by pyarrow (:mod:`kernelne.graphs.edgelist_fast`); anything else, and
    every file with an error, line by line.
    """
    path = Path(path)
    try:
        data = read_bytes(path)
    except IsADirectoryError:
        raise InputError("is a directory, not a file", path) from None
    except (EOFError, gzip.BadGzipFile, OSError) as exc:
        raise InputError(f"cannot read file: {getattr(exc, 'strerror', None) or exc}",
                         path) from None
    # a FIFO or pipe is read once: the header check and the line reader use its bytes
    kept = None if path.is_file() else data
    first_line, header = _check_header(path, header, kept)
    parsed = parse_fast(_drop_line(data, first_line) if header else data)
    del data
    if parsed is not None:
        dense, nodes, m, weights = parsed
        if unweighted:
            weights = None
        if weights is not None and not (np.isfinite(weights).all() and (weights > 0).all()
                                        and not weights_out_of_float32(weights).any()):
            parsed = None  # the line-by-line reader names the line
    if parsed is None:
        dense, nodes, m, weights = _read_lines(path, first_line if header else None, kept)
        if unweighted:
            weights = None
    if nodes.dtype == object:
        bad = next((x for x in nodes if "\x00" in x), None)
        if bad is not None:
            raise InputError(f"node id {quote(bad)} holds a NUL byte (a binary or damaged "
                             "file?)", path)
    if not header:
        _warn_if_header_like(path, first_line, dense, nodes, m)
    if n_nodes is not None:
        if nodes.dtype == object or nodes[0] < 0 or nodes[-1] >= n_nodes:
            raise InputError(f"node ids must be integers in 0..{n_nodes - 1}", path)
        src, dst = nodes[dense[:m]], nodes[dense[m:]]
        nodes = np.arange(n_nodes, dtype=np.int64)
    else:
        src, dst = dense[:m], dense[m:]
    return Graph.from_edges(src, dst, weights, len(nodes), nodes, directed=directed)


# column names that mark a first line as a header even above string ids
HEADER_WORDS = frozenset({
    "source", "target", "from", "to", "src", "dst", "dest", "destination", "node", "nodes",
    "node1", "node2", "node_1", "node_2", "u", "v", "head", "tail", "id1", "id2", "weight",
    "weights", "w", "start", "end", "origin", "sender", "receiver", "in", "out"})


def _check_header(path: Path, header: bool,
                  data: bytes | None = None) -> tuple[int | None, bool]:
    """``(line number of the first record, whether to skip it as a header)``.

    * ``header`` and the first line is an edge of integer ids like the lines below it: an
      InputError (``--header`` would drop an edge).
    * not ``header``, a first line without a number-like id above integer ids: an InputError
      (pass ``--header``).
    * not ``header``, a first line of column names (:data:`HEADER_WORDS`) above string ids:
      skipped as a header, with a warning.
    """
    records = []
    for lineno, fields in iter_records(path, data):
        records.append((lineno, fields))
        if len(records) == 50:
            break
    if not records:
        return None, header
    lineno, fields = records[0]
    ids = lambda f: f[:2]  # noqa: E731
    rest_ints = len(records) >= 2 and all(
        is_canonical_int(t) for _, f in records[1:] for t in ids(f))
    if header:
        if rest_ints and len(fields) in (2, 3) and all(is_canonical_int(t) for t in ids(fields)):
            raise InputError(
                f"--header (header=True): the first line {quote(' '.join(fields))} is an edge of "
                "integer ids like the lines below it, not column names: it would be dropped "
                "(leave out --header)", path, lineno)
        return lineno, True
    if len(records) < 2:
        return lineno, False
    if not any(_NUMBERISH.fullmatch(t) for t in ids(fields)) and rest_ints:
        raise InputError(
            f"looks like a header line ({quote(' '.join(fields))} above integer ids): pass "
            "--header (header=True) to skip it", path, lineno)
    if len(fields) in (2, 3) and all(t.lower() in HEADER_WORDS for t in fields):
        import warnings

        warnings.warn(f"{path}:{lineno}: {quote(' '.join(fields))} taken for column names and "
                      "skipped (pass --header to say so)", stacklevel=3)
        return lineno, True
    return lineno, False


def _warn_if_header_like(path: Path, lineno: int | None, dense: np.ndarray, nodes: np.ndarray,
                         m: int) -> None:
    """Warn when the first edge's two string ids appear nowhere else in the file: it may be a
    header line read as an edge."""
    if lineno is None or nodes.dtype != object or m < 2:
        return
    first = (dense[0], dense[m])
    if first[0] == first[1]:
        return
    counts = np.bincount(dense, minlength=len(nodes))
    if counts[first[0]] == 1 and counts[first[1]] == 1:
        import warnings

        names = f"{nodes[first[0]]} {nodes[first[1]]}"
        warnings.warn(f"{path}:{lineno}: the first line {quote(names)} names two nodes that appear "
                      "nowhere else: if it holds column names, pass --header to skip it",
                      stacklevel=3)


def _drop_line(data: bytes, lineno: int | None) -> bytes:
    """``data`` without its line ``lineno`` (1-based), kept as a blank line."""
    if lineno is None:
        return data
    start = 0
    for _ in range(lineno - 1):
        start = data.index(b"\n", start) + 1
    end = data.find(b"\n", start)
    return data[:start] + (b"" if end < 0 else data[end:])


def _read_lines(path: Path, skip: int | None, data: bytes | None = None):
    """The line-by-line reader: ``(dense ids, nodes, edge count, weights or None)``; ``data``:
    the file's bytes when it cannot be opened again (a pipe)."""
    heads: list[str] = []
    tails: list[str] = []
    weights: list[float] = []
    n_fields = None
    for lineno, fields in iter_records(path, data):
        if lineno == skip:
            continue
        if len(fields) not in (2, 3):
            raise InputError(
                f"expected 2 or 3 fields (source target [weight]), found {len(fields)}",
                path,
                lineno,
            )
        if n_fields is None:
            n_fields = len(fields)
        elif len(fields) != n_fields:
            had = "a weight" if n_fields == 3 else "no weight"
            raise InputError(
                f"{len(fields)} fields, but earlier lines have {n_fields} ({had})", path, lineno
            )
        heads.append(fields[0])
        tails.append(fields[1])
        if n_fields == 3:
            try:
                w = float(fields[2])
            except ValueError:
                raise InputError(f"weight {quote(fields[2])} is not a number", path,
                                 lineno) from None
            if not np.isfinite(w) or w < 0:
                shown = quote(fields[2], bare=True)
                raise InputError(f"negative or non-finite weight {shown}", path, lineno)
            if w == 0:
                raise InputError("zero weight (leave the edge out instead)", path, lineno)
            if weights_out_of_float32(np.array([w]))[0]:
                raise InputError(f"weight {quote(fields[2], bare=True)} is outside the float32 "
                                 "range "
                                 f"{WEIGHT_RANGE} the walks use: rescale the weights",
                                 path, lineno)
            weights.append(w)
    if not heads:
        raise InputError("no edges found (empty graph)", path)
    dense, nodes = by_row_order(*map_ids(heads + tails), len(heads))
    return dense, nodes, len(heads), (np.array(weights) if n_fields == 3 else None)


def read_mat(path: str | Path, key: str = "network", directed: bool = False) -> Graph:
    """Read the adjacency matrix stored under ``key`` in a MATLAB ``.mat`` file."""
    from scipy.io import loadmat

    try:
        mat = loadmat(str(path))
    except FileNotFoundError:
        raise InputError("cannot read file: no such file", path) from None
    except Exception as exc:  # scipy raises several types for corrupt files
        raise InputError(f"not a readable .mat file ({exc})", path) from None
    if key not in mat:
        keys = ", ".join(k for k in mat if not k.startswith("__"))
        raise InputError(f"no matrix named {key!r} (found: {keys or 'none'})", path)
    try:
        return from_scipy(mat[key], directed=directed)
    except InputError as exc:
        raise InputError(exc.problem, path) from None


def from_scipy(matrix: Any, directed: bool = False) -> Graph:
    """Build a graph from a square scipy sparse (or dense numpy) adjacency matrix."""
    try:
        coo = sp.coo_matrix(matrix)
    except (TypeError, ValueError) as exc:
        raise InputError(f"not a numeric 2-D adjacency matrix ({exc})") from None
    if coo.dtype.kind not in "biuf":
        raise InputError(f"not a numeric adjacency matrix (values of type {coo.dtype})")
    if coo.shape[0] != coo.shape[1]:
        raise InputError(f"adjacency matrix must be square, got {coo.shape}")
    coo.sum_duplicates()
    keep = coo.data != 0
    csr = coo.tocsr()
    if not directed and (abs(csr - csr.T) > 0).nnz == 0:
        keep &= coo.row <= coo.col  # symmetric: each edge once, not as a duplicate
    if not keep.any():
        raise InputError("no edges found (empty graph)")
    return Graph.from_edges(
        coo.row[keep], coo.col[keep], coo.data[keep], coo.shape[0], directed=directed
    )


def from_networkx(nx_graph: Any, weight: str | None = "weight") -> Graph:
    """Build a graph from a networkx graph; node ids are kept as given."""
    nodes = list(nx_graph.nodes())
    if not nodes:
        raise InputError("no nodes found (empty graph)")
    index = {v: i for i, v in enumerate(nodes)}
    src, dst, w = [], [], []
    for u, v, data in nx_graph.edges(data=True):
        src.append(index[u])
        dst.append(index[v])
        w.append(float(data.get(weight, 1.0)) if weight else 1.0)
    if all(isinstance(v, (int, np.integer)) for v in nodes):
        ids = np.array(nodes, dtype=np.int64)
    else:
        check_id_texts(nodes, "networkx graph")
        ids = np.empty(len(nodes), dtype=object)
        ids[:] = nodes
    return Graph.from_edges(
        np.array(src, np.int64), np.array(dst, np.int64), np.array(w), len(nodes), ids,
        directed=nx_graph.is_directed(),
    )


def manifest_node_count(path: Path) -> int | None:
    """Node count of ``NAME.edges[.gz]`` from a ``MANIFEST.json`` beside it, if there is one."""
    manifest = path.parent / "MANIFEST.json"
    name = path.name.split(".edges")[0]
    if ".edges" not in path.name or not manifest.is_file():
        return None
    try:
        entry = json.loads(manifest.read_text()).get(name)
    except (OSError, ValueError):
        raise InputError("cannot parse MANIFEST.json", manifest) from None
    return None if not entry else int(entry["nodes"])


def check_readable(path: Path) -> None:
    """An :class:`InputError` naming the reason if ``path`` cannot be opened: no such file, a
    symbolic link loop, no permission."""
    try:
        os.stat(path)
    except OSError as exc:
        reason = {errno.ENOENT: "no such file", errno.ELOOP: "symbolic link loop"}.get(
            exc.errno, exc.strerror or str(exc))
        raise InputError(f"cannot read file: {reason}", path) from None


def _npz_graph(path: Path, directed: bool, unweighted: bool, mapped: bool = False) -> Graph:
    """The graph of a ``.npz`` file, which records its direction and weights: ``directed`` on
    an undirected one and ``unweighted`` on a weighted one are refused rather than ignored
    (``mapped``: its CSR left in the file, :func:`kernelne.graphs.npz.read_graph_arrays`)."""
    graph = Graph(**read_graph_arrays(path, mapped))
    if directed and not graph.directed:
        raise InputError("--directed: this .npz graph records an undirected graph; to read the "
                         "edges as directed, convert the edge list again with --directed", path)
    if unweighted and graph.weights is not None:
        raise InputError("--unweighted: this .npz graph records edge weights; to drop them, "
                         "convert the edge list again with --unweighted", path)
    return graph


def _from_edge_arrays(edges: EdgeArrays, path: Path | None = None) -> Graph:
    """The graph of :class:`~kernelne.graphs.ecosystem.EdgeArrays`; an error names ``path``."""
    try:
        return Graph.from_edges(*edges[:5], directed=edges.directed)
    except InputError as exc:
        raise InputError(exc.problem, path) from None


def _csv_table(path: Path, directed: bool, unweighted: bool) -> Graph | None:
    """The graph of a ``.csv`` file whose first line names a source and a target column
    (:data:`kernelne.graphs.ecosystem.SOURCE_NAMES`, ...), read by column name; ``None`` for
    a CSV file without such a line (an edge list, ``header`` or not)."""
    from kernelne.graphs.ecosystem import read_csv_table

    first = next(iter_records(path), None)
    if first is None or not names_columns(first[1]):
        return None
    try:
        data = read_bytes(path)
    except (EOFError, gzip.BadGzipFile, OSError) as exc:
        raise InputError(f"cannot read file: {getattr(exc, 'strerror', None) or exc}",
                         path) from None
    return _from_edge_arrays(read_csv_table(path, data, first[1], directed, unweighted), path)


def load_graph(source: Any, directed: bool = False, mat_key: str = "network",
               header: bool = False, unweighted: bool = False, mapped: bool = False) -> Graph:
    """Turn any supported source into a :class:`Graph`.

    Edge lists are ``source target [weight]`` per line (space, tab or comma separated; ``#``
    and ``%`` comments; string or integer ids; gzip read transparently). Undirected by
    default: edges are symmetrised, self-loops and duplicate edges are dropped and counted.
    Node ids are mapped to dense ids ``0..n-1``; ``Graph.nodes`` keeps the user's ids, in
    one order for every edge list and edge table (file, DataFrame, pyarrow Table): integer
    ids in numeric order, other ids in order of first appearance reading the edges row by
    row, source before target. A networkx graph keeps the order of ``G.nodes``, an igraph
    graph its vertex order, an ``edge_index`` or a matrix ``0..n-1``.

    Parameters
    ----------
    source : Graph, graph object, edge table, matrix, str or Path
        A Graph (returned as is), a networkx graph (node ids kept, its ``weight`` attribute
        read), an ``igraph.Graph`` (ids from ``vs["name"]`` if set, weights from
        ``es["weight"]``), a pandas DataFrame or pyarrow Table of edges (columns ``source``,
        ``target`` [``weight``] by name, else the first two [three]; a square DataFrame of
        four or more float columns without those names is an adjacency matrix), any object
        with an ``edge_index`` of shape ``(2, m)`` (PyG ``Data``: numpy, or a tensor turned into
        numpy through its own methods; ``edge_weight`` and ``num_nodes`` read if present),
        a square scipy sparse or dense adjacency matrix, or a path to an edge list (``.gz``
        allowed; node count from a ``MANIFEST.json`` beside it), to a Parquet edge table
        (``.parquet``), to a CSV file (``.csv``: read by column name when its first line
        names a source and a target column, else as an edge list), to a ``.mat`` file
        (matrix ``mat_key``) or to a graph ``.npz`` file. Node ids are kept as given.
    directed : bool, default False
        Read edges as arcs (matrices, edge tables, ``edge_index`` and files; a networkx or
        igraph graph says so itself). A graph ``.npz`` records its direction: ``True`` on an
        undirected one is refused.
    mat_key : str, default "network"
        The variable holding the adjacency matrix in a ``.mat`` file.
    header : bool, default False
        Skip the edge list's first line (a line of column names is detected and reported
        otherwise).
    unweighted : bool, default False
        Ignore the edge weights (refused on a graph ``.npz`` that records weights).
    mapped : bool, default False
        Leave a graph ``.npz``'s CSR arrays in the file instead of reading them (a
        partitioned fit's): ``indptr`` memory-mapped read-only, the edges ``indices`` and
        ``weights`` as :class:`~kernelne.graphs.file_vector.FileVector` s read a window at a
        time where they are used (``np.asarray`` maps them), so that the process holds no
        copy and no map of the edges; other sources are read as usual.

    Returns
    -------
    Graph
        The graph in CSR form.

    Raises
    ------
    InputError
        The source cannot be read: no such file, a malformed line (named by file and line),
        an empty graph, an unsupported type, or ``directed``/``unweighted`` against what a
        graph ``.npz`` records.

    Examples
    --------
    >>> from kernelne import load_graph
    >>> from kernelne.graphs.datasets import dataset_file
    >>> g = load_graph(dataset_file("karate"))  # the shipped karate.edges.gz
    >>> g.summary()
    '34 nodes, 78 edges (undirected)'
    """
    if isinstance(source, Graph):
        return source
    edges = from_ecosystem(source, directed=directed, unweighted=unweighted)
    if edges is not None:
        return _from_edge_arrays(edges)
    if hasattr(source, "adj") and hasattr(source, "is_directed"):
        return from_networkx(source)
    if sp.issparse(source) or isinstance(source, np.ndarray):
        return from_scipy(source, directed=directed)
    if is_adjacency_dataframe(source):  # as KernelNE.fit reads it
        return from_scipy(source.to_numpy(), directed=directed)
    if isinstance(source, (str, Path)):
        check_not_url(source, "the graph")
        path = Path(source)
        check_readable(path)
        if path.suffix.lower() == ".mat":
            return read_mat(path, key=mat_key, directed=directed)
        if path.suffix.lower() == ".npz":
            return _npz_graph(path, directed, unweighted, mapped)
        if path.suffix.lower() == ".parquet":
            return _from_edge_arrays(read_parquet(path, directed, unweighted), path)
        if path.suffix.lower() == ".csv":
            table = _csv_table(path, directed, unweighted)
            if table is not None:
                return table
        return read_edgelist(path, directed=directed, n_nodes=manifest_node_count(path),
                             header=header, unweighted=unweighted)
    raise InputError(f"cannot make a graph from a {type(source).__name__}")
