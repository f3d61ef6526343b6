"""Fast path of the edge-list reader: pyarrow's multithreaded CSV parser, no Python per line.

It takes only plainly regular files: one separator (a comma, a tab or a single space), two or
three fields on every line, comment lines (``#``/``%``) only at the top, no blank fields. For
anything else it returns ``None`` and :func:`kernelne.graphs.graph.read_edgelist` reads the file
line
by line, which names the file, line and problem of any error. Both apply the same id rule
(:data:`CANONICAL_INT`).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

# An id is an integer only if written as the canonical decimal of an int64: no sign but a
# leading "-", no leading zeros, no "_" (so "007" and "7", or "1_0" and "10", stay distinct).
CANONICAL_INT = r"^(0|-?[1-9][0-9]{0,18})$"
_IRREGULAR_SPACE = (b"  ", b" \n", b" \r", b"\n ")  # and a space at either end
_OTHER_SEPARATORS = {",": (b" ", b"\t"), "\t": (b" ", b","), " ": (b",", b"\t")}


def read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped if gzip-compressed, without a UTF-8 byte-order mark."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data[3:] if data[:3] == b"\xef\xbb\xbf" else data


def _strip_top_comments(data: bytes) -> bytes | None:
    """Drop comment and blank lines at the top; None if a ``#`` or ``%`` appears further
    down (a comment line, or a character the line reader should judge)."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        line = data[start:end].strip()
        if line and not line.startswith((b"#", b"%")):
            break
        start = end
    body = data[start:]
    return None if b"#" in body or b"%" in body else body


def parse_fast(data: bytes):
    """``(dense ids of heads then tails, node ids, edge count, weights or None)``, or ``None``
    when the file is not plainly regular (see the module docstring).

    Integer ids are parsed straight to int64 when no token could be a non-canonical integer
    (``+7``, ``-0``, ``007``); otherwise, or if that parse fails, as strings. The memory
    pyarrow's pool keeps for reuse after the parse (a third of the file's parse at 10^7
    edges) is given back to the system.
    """
    import pyarrow as pa

    try:
        return _parse(data)
    finally:
        pa.default_memory_pool().release_unused()


def layout(body: bytes) -> tuple[str, int] | None:
    """The separator and field count of ``body``'s first line (a comma, else a tab, else a
    space; 2 or 3 fields), or None when the fast path does not take such a file."""
    first = body[: body.find(b"\n")] if b"\n" in body else body
    delimiter = "," if b"," in first else "\t" if b"\t" in first else " "
    n_fields = len(first.strip().split(delimiter.encode()))
    return (delimiter, n_fields) if n_fields in (2, 3) else None


def irregular(body: bytes, delimiter: str) -> bool:
    """Whether ``body`` (whole lines) breaks the fast path's layout for ``delimiter``: spaces
    doubled or at a line's ends (space-separated), or another separator anywhere (the line
    reader splits on any run of commas and whitespace: mixtures are left to it)."""
    if delimiter == " ":
        end = body.rstrip(b"\r\n")
        if end.startswith(b" ") or end.endswith(b" ") or any(
                pattern in body for pattern in _IRREGULAR_SPACE):
            return True
    return any(c in body for c in _OTHER_SEPARATORS[delimiter])


def _parse(data: bytes):
    body = _strip_top_comments(data)
    if not body:
        return None
    found = layout(body)
    if found is None or irregular(body, found[0]):
        return None
    delimiter, n_fields = found
    table = None
    if not _maybe_noncanonical(body):
        table = _read_table(body, delimiter, n_fields, ints=True)
    if table is not None:
        ids = np.concatenate([table.column(0).to_numpy(), table.column(1).to_numpy()])
        dense, nodes = dense_int_ids(ids)
        del ids
    else:
        table = _read_table(body, delimiter, n_fields, ints=False)
        if table is None:
            return None
        dense, nodes = map_arrow_ids(table.column(0), table.column(1))
    weights = table.column(2).to_numpy() if n_fields == 3 else None
    return dense, nodes, table.num_rows, weights


def _read_table(body: bytes, delimiter: str, n_fields: int, ints: bool):
    """pyarrow's parse of ``body``: ids as int64 (``ints``) or strings; None on any
    irregularity (a parse error, a missing or empty field)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv

    id_type = pa.int64() if ints else pa.string()
    types = {"f0": id_type, "f1": id_type}
    if n_fields == 3:
        types["f2"] = pa.float64()
    try:
        table = csv.read_csv(
            arrow_stream(body),
            read_options=csv.ReadOptions(autogenerate_column_names=True),
            parse_options=csv.ParseOptions(delimiter=delimiter),
            convert_options=csv.ConvertOptions(column_types=types, strings_can_be_null=True),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if table.num_columns != n_fields or any(c.null_count for c in table.columns):
        return None
    if not ints and any(pc.any(pc.equal(pc.utf8_length(table.column(i)), 0)).as_py()
                        for i in (0, 1)):
        return None
    return table


def arrow_stream(body: bytes):
    """``body`` as an Arrow stream over a copy in Arrow's own memory.

    Not ``io.BytesIO`` (nor a buffer borrowing ``body``): the CSV reader's worker threads may
    drop their last reference to the input just after ``read_csv`` returned. If that is a
    Python object, the worker must take the GIL to release it; during interpreter shutdown
    that ends the thread with a forced unwind, which libstdc++ turns into "terminate called
    without an active exception" (SIGABRT, exit 134). A command that failed right after
    reading a graph (``tune --holdout -0.5``) hit this about once in 20-40 runs.
    """
    import pyarrow as pa

    buf = pa.allocate_buffer(len(body))
    np.frombuffer(buf, dtype=np.uint8)[:] = np.frombuffer(body, dtype=np.uint8)
    return pa.BufferReader(buf)


def _maybe_noncanonical(body: bytes, chunk: int = 1 << 24) -> bool:
    """Whether a token starts with ``+``, ``-0`` or ``0`` and a digit (vectorised, by chunk)."""
    raw = np.frombuffer(body, dtype=np.uint8)
    for start in range(0, len(raw), chunk):
        c = raw[max(0, start - 1): start + chunk + 1]
        prev_sep = np.empty(len(c), dtype=bool)
        prev_sep[0] = start == 0
        prev_sep[1:] = (c[:-1] == 10) | (c[:-1] == 32) | (c[:-1] == 44) | (c[:-1] == 9)
        if start:
            prev_sep, c = prev_sep[1:], c[1:]
        nxt = np.append(c[1:], np.uint8(10))
        nxt_digit = (nxt >= 48) & (nxt <= 57)
        bad = prev_sep & ((c == 43) | ((c == 45) & (nxt == 48)) | ((c == 48) & nxt_digit))
        if bad.any():
            return True
    return False


def map_arrow_ids(heads, tails) -> tuple[np.ndarray, np.ndarray]:
    """Dense ids of the ``heads`` then ``tails`` tokens, and the node ids, by the id rule:
    integers (in numeric order) if every token is a canonical int64 decimal, else strings (in
    order of first appearance, row by row: :func:`by_row_order`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tokens = pa.chunked_array(heads.chunks + tails.chunks, type=pa.string())
    if pc.all(pc.match_substring_regex(tokens, CANONICAL_INT)).as_py():
        try:
            ints = pc.cast(tokens, pa.int64()).to_numpy()
        except (pa.ArrowInvalid, OverflowError):
            ints = None
        if ints is not None:
            return dense_int_ids(ints)
    encoded = tokens.combine_chunks().dictionary_encode()
    nodes = np.array(encoded.dictionary.to_pylist(), dtype=object)
    return by_row_order(encoded.indices.to_numpy().astype(np.int64), nodes, len(heads))


def by_row_order(dense: np.ndarray, nodes: np.ndarray,
                 m: int) -> tuple[np.ndarray, np.ndarray]:
    """Non-integer node ids renumbered in order of first appearance reading the edges row by
    row, source before target (the order networkx and igraph give a graph built from the
    same rows). ``dense``: the ids of the ``m`` sources then the ``m`` targets, numbered
    ``0..len(nodes)-1`` in any order; integer ``nodes`` (numeric order) are returned as
    they are."""
    if nodes.dtype != object or m == 0:
        return dense, nodes
    rows = np.empty(2 * m, dtype=np.int64)
    rows[0::2], rows[1::2] = dense[:m], dense[m:]
    _, first = np.unique(rows, return_index=True)  # every node appears: one per node
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(nodes), dtype=np.int64)
    rank[order] = np.arange(len(nodes))
    return rank[dense], nodes[order]


def dense_int_ids(ints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ints, return_inverse=True)``, in O(n + m) when the ids are compact."""
    lo, hi = int(ints.min()), int(ints.max())
    if lo >= 0 and hi < 4 * len(ints) + 1024:
        present = np.zeros(hi + 1, dtype=bool)
        present[ints] = True
        nodes = np.flatnonzero(present)
        rank = np.cumsum(present, dtype=np.int64) - 1
        return rank[ints], nodes.astype(np.int64)
    nodes, dense = np.unique(ints, return_inverse=True)
    return dense.astype(np.int64), nodes
