"""Fast path of the edge-list reader: pyarrow's multithreaded CSV parser, no Python per line.

It takes only plainly regular files: one separator (a comma, a tab or a single space), two or
three fields on every line, comment lines (``#``/``%``) only at the top, no blank fields. For
anything else it returns ``None`` and :func:`kernelne.graph.read_edgelist` reads the file line
by line, which names the file, line and problem of any error. Both apply the same id rule
(:data:`CANONICAL_INT`).
"""

from __future__ import annotations

import gzip
import io
import re
from pathlib import Path

import numpy as np

# An id is an integer only if written as the canonical decimal of an int64: no sign but a
# leading "-", no leading zeros, no "_" (so "007" and "7", or "1_0" and "10", stay distinct).
CANONICAL_INT = r"^(0|-?[1-9][0-9]{0,18})$"
_COMMENT_LINE = re.compile(rb"(^|\n)[ \t]*[#%]")
_IRREGULAR_SPACE = re.compile(rb"  |^ | \r?\n|\n | $")
_OTHER_SEPARATORS = {",": (b" ", b"\t"), "\t": (b" ", b","), " ": (b",", b"\t")}


def read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped if gzip-compressed, without a UTF-8 byte-order mark."""
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data[3:] if data[:3] == b"\xef\xbb\xbf" else data


def _strip_top_comments(data: bytes) -> bytes | None:
    """Drop comment and blank lines at the top; None if comments appear further down."""
    start = 0
    while start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        line = data[start:end].strip()
        if line and not line.startswith((b"#", b"%")):
            break
        start = end
    body = data[start:]
    return None if _COMMENT_LINE.search(body) else body


def parse_fast(data: bytes):
    """``(heads, tails, weights or None)`` as pyarrow arrays of strings (and float64), or
    ``None`` when the file is not plainly regular (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv

    body = _strip_top_comments(data)
    if not body:
        return None
    first = body[: body.find(b"\n")] if b"\n" in body else body
    if b"," in first:
        delimiter = ","
    elif b"\t" in first:
        delimiter = "\t"
    else:
        delimiter = " "
        if _IRREGULAR_SPACE.search(body.rstrip(b"\r\n")):
            return None
    # the line reader splits on any run of commas and whitespace: leave mixtures to it
    if any(c in body for c in _OTHER_SEPARATORS[delimiter]):
        return None
    n_fields = len(first.strip().split(delimiter.encode()))
    if n_fields not in (2, 3):
        return None
    types = {"f0": pa.string(), "f1": pa.string()}
    if n_fields == 3:
        types["f2"] = pa.float64()
    try:
        table = csv.read_csv(
            io.BytesIO(body),
            read_options=csv.ReadOptions(autogenerate_column_names=True),
            parse_options=csv.ParseOptions(delimiter=delimiter),
            convert_options=csv.ConvertOptions(column_types=types, strings_can_be_null=True),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if table.num_columns != n_fields or any(c.null_count for c in table.columns):
        return None
    heads, tails = table.column(0), table.column(1)
    if pc.any(pc.equal(pc.utf8_length(heads), 0)).as_py() or pc.any(
            pc.equal(pc.utf8_length(tails), 0)).as_py():
        return None
    weights = table.column(2) if n_fields == 3 else None
    return heads, tails, weights


def map_arrow_ids(heads, tails) -> tuple[np.ndarray, np.ndarray]:
    """Dense ids of the ``heads`` then ``tails`` tokens, and the node ids, by the id rule:
    integers (in numeric order) if every token is a canonical int64 decimal, else strings (in
    order of first appearance)."""
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
    return encoded.indices.to_numpy().astype(np.int64), nodes


def dense_int_ids(ints: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(ints, return_inverse=True)``, in O(n + m) when the ids are compact."""
    lo, hi = int(ints.min()), int(ints.max())
    if lo >= 0 and hi < 4 * len(ints) + 1024:
        present = np.zeros(hi + 1, dtype=bool)
        present[ints] = True
        nodes = np.flatnonzero(present)
        rank = np.cumsum(present) - 1
        return rank[ints].astype(np.int64), nodes.astype(np.int64)
    nodes, dense = np.unique(ints, return_inverse=True)
    return dense.astype(np.int64), nodes
