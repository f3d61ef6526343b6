"""``kernelne convert`` of a large edge list without the graph in memory: the text is parsed a
block at a time and the CSR is built in files, so the process holds O(n) (the ids, the row
counts) and one block, never the edges.

The graph is the one :func:`kernelne.graphs.graph.read_edgelist` and
:meth:`~kernelne.graphs.csr.Graph.from_edges` make, array for array (self-loops dropped, of
duplicate edges the first kept with its weight, rows sorted, weights all 1 read as none). It
takes the files the fast reader takes (:mod:`kernelne.graphs.edgelist_fast`: one separator,
two or three fields, comments only at the top) with integer ids; for any other file
:func:`stream_edgelist` returns None before writing anything and the caller reads the file
whole (the line reader names the line of an error).

The scratch files take about 56 bytes per edge of an undirected graph beside the output (48
without a weight column) until it is written; a full disk is one ``cannot write`` line. Four
passes: (1) the text, block by block, to binary ends and weights in a scratch folder beside
the output, with the sorted distinct ids; (2) each edge's dense ends, counted per row; (3)
each edge placed at its row's next free entry (rows then hold their entries in edge order);
(4) each row sorted by neighbour (stably: the first of a duplicate comes first) and its
duplicates dropped, in place. The ``.npz`` is then written an array at a time.
"""

from __future__ import annotations

import gzip
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from numba import njit

from kernelne.errors import InputError, write_failure
from kernelne.graphs.csr import Graph, weights_out_of_float32
from kernelne.graphs.edgelist_fast import (
    _maybe_noncanonical,
    _read_table,
    _strip_top_comments,
    irregular,
)
from kernelne.graphs.edgelist_fast import layout as first_layout
from kernelne.graphs.npz import FORMAT, VERSION
from kernelne.outputs import allocated_memmap, atomic_path

BLOCK_BYTES = 1 << 24  # text parsed at a time (16 MiB; a block ends at a line's end)
EDGE_BLOCK = 1 << 20  # edges mapped and placed at a time in passes 2 and 3


def convert_edgelist(path: str | Path, out: str | Path, directed: bool = False,
                     header: bool = False, unweighted: bool = False) -> Graph | None:
    """``kernelne convert`` of ``path`` by :func:`stream_edgelist` where it is an edge list
    this reader takes (a regular file, not ``.mat``, ``.npz``, ``.parquet`` or a ``.csv``
    table with named columns); None otherwise, with nothing written (read it whole). Header
    lines are judged as :func:`~kernelne.graphs.graph.read_edgelist` judges them, and a
    ``MANIFEST.json`` beside the file gives the node count the same way."""
    from kernelne.graphs.ecosystem import names_columns
    from kernelne.graphs.graph import (
        _check_header,
        check_readable,
        iter_records,
        manifest_node_count,
    )

    path = Path(path)
    check_readable(path)
    if path.suffix.lower() in (".mat", ".npz", ".parquet") or not path.is_file():
        return None
    if path.suffix.lower() == ".csv":  # a table with named columns is read by name
        first = next(iter_records(path), None)
        if first is not None and names_columns(first[1]):
            return None
    first_line, header = _check_header(path, header)
    return stream_edgelist(path, out, directed, manifest_node_count(path),
                           first_line if header else None, unweighted)


class NotStreamable(Exception):
    """The file is not one :func:`stream_edgelist` reads: read it whole instead."""


def text_blocks(path: Path, block_bytes: int = BLOCK_BYTES) -> Iterator[bytes]:
    """The file's bytes (gunzipped, without a UTF-8 byte-order mark) in blocks of about
    ``block_bytes`` that end at a line's end (the last at the file's)."""
    try:
        with open(path, "rb") as raw:
            gz = raw.read(2) == b"\x1f\x8b"
        fh = (gzip.open if gz else open)(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path) from None
    with fh:
        carry, first = b"", True
        while True:
            try:
                data = fh.read(block_bytes)
            except (EOFError, OSError) as exc:  # a cut or damaged gzip stream
                raise InputError(f"cannot read file: {getattr(exc, 'strerror', None) or exc}",
                                 path) from None
            if first and data[:3] == b"\xef\xbb\xbf":
                data = data[3:]
            first = False
            if not data:
                if carry:
                    yield carry
                return
            data = carry + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                carry = data
                continue
            carry = data[cut:]
            yield data[:cut]


def _parse_block(body: bytes, delimiter: str, n_fields: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """One block's ends (int64) and weights (float64, or None), under the fast reader's
    checks of a plainly regular file with integer ids (:class:`NotStreamable` otherwise)."""
    if irregular(body, delimiter) or _maybe_noncanonical(body):
        raise NotStreamable
    table = _read_table(body, delimiter, n_fields, ints=True)
    if table is None:
        raise NotStreamable
    weights = table.column(2).to_numpy() if n_fields == 3 else None
    if weights is not None and not (np.isfinite(weights).all() and (weights > 0).all()
                                    and not weights_out_of_float32(weights).any()):
        raise NotStreamable  # the line reader names the line
    return table.column(0).to_numpy(), table.column(1).to_numpy(), weights


def stream_edgelist(path: str | Path, out: str | Path, directed: bool = False,
                    n_nodes: int | None = None, first_line: int | None = None,
                    unweighted: bool = False, block_bytes: int = BLOCK_BYTES) -> Graph | None:
    """Convert the edge list ``path`` to the graph ``.npz`` ``out`` block by block.

    Parameters
    ----------
    path : str or Path
        The edge list (``source target [weight]``; gzip read transparently).
    out : str or Path
        The ``.npz`` to write (atomically; scratch files beside it are removed however the
        conversion ends).
    directed : bool, default False
        Keep the edges as arcs.
    n_nodes : int, optional
        The ids are then ``0..n_nodes-1`` (a dataset folder's ``MANIFEST.json``).
    first_line : int, optional
        The line number of a header line to skip.
    unweighted : bool, default False
        Ignore a weight column.
    block_bytes : int
        Text parsed at a time.

    Returns
    -------
    Graph or None
        The written graph, memory-mapped from ``out`` (``duplicates_reweighted`` set), or None
        if the file is not one this reader takes (nothing written).
    """
    path, out = Path(path), Path(out)
    try:
        scratch = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".convert",
                                        dir=out.parent))
    except OSError as exc:
        raise InputError(f"cannot write {out}: {write_failure(exc)}") from None
    try:
        try:
            ids, m, weighted, loops = _to_binary(path, scratch, first_line, unweighted,
                                                 block_bytes)
        except NotStreamable:
            return None
        except OSError as exc:  # the scratch files: a full disk, a quota
            raise InputError(f"cannot write {out}: {write_failure(exc)}") from None
        if n_nodes is not None:  # the ids are the dense ids: 0..n_nodes-1
            seen = ids.ids()
            if len(seen) and (seen[0] < 0 or seen[-1] >= n_nodes):
                raise InputError(f"node ids must be integers in 0..{n_nodes - 1}", path)
            ids = IdSet()
            ids.present = np.ones(n_nodes, dtype=bool)
        try:
            reweighted = _write_csr(scratch, ids, m, weighted, directed, loops, out)
        except OSError as exc:
            raise InputError(f"cannot write {out}: {write_failure(exc)}") from None
        graph = _mapped(out)
        graph.duplicates_reweighted = reweighted
        return graph
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


class IdSet:
    """The distinct ids seen so far: a bit per id from 0 to the largest while the ids are
    compact (non-negative, the largest below ``4 x`` the file's ends plus 1,024, the whole
    reader's rule; the ends are the more of those seen and ``expected``, the file's
    estimated from its first block), else a sorted array merged block by block. :meth:`dense`
    maps ids to their ranks (dense ids in numeric order). Judged on the ends seen alone, a
    file of 10^8 edges among 10^7 nodes in random order left the bits at its first block and
    converted 7x slower."""

    def __init__(self) -> None:
        self.present: np.ndarray | None = np.zeros(0, dtype=bool)
        self.sorted = np.empty(0, dtype=np.int64)
        self.seen = 0
        self.expected = 0
        self.rank: np.ndarray | None = None

    def add(self, ends: np.ndarray) -> None:
        self.seen += ends.size
        if self.present is not None and ends.size:
            lo, hi = int(ends.min()), int(ends.max())
            if lo >= 0 and hi < 4 * max(self.seen, self.expected) + 1024:
                if hi >= len(self.present):
                    grown = np.zeros(max(hi + 1, 2 * len(self.present)), dtype=bool)
                    grown[:len(self.present)] = self.present
                    self.present = grown
                self.present[ends] = True
                return
            self.sorted = np.flatnonzero(self.present).astype(np.int64)
            self.present = None
        if ends.size:
            self.sorted = np.union1d(self.sorted, np.unique(ends))

    def ids(self) -> np.ndarray:
        """The distinct ids, in increasing order (int64)."""
        if self.present is not None:
            return np.flatnonzero(self.present).astype(np.int64)
        return self.sorted

    def dense(self, ends: np.ndarray) -> np.ndarray:
        """The dense id of each of ``ends``."""
        if self.present is None:
            return np.searchsorted(self.sorted, ends)
        if self.rank is None:
            self.rank = np.cumsum(self.present, dtype=np.int64) - 1
        return self.rank[ends]


def _to_binary(path: Path, scratch: Path, first_line: int | None, unweighted: bool,
               block_bytes: int) -> tuple[IdSet, int, bool, int]:
    """Pass 1: the ends to ``ends.bin`` (int64 pairs) and the weights, where the file has a
    weight column read, to ``weights.bin`` (float64; else that file stays empty); returns the
    distinct ids, the edge count, whether a weight differs from 1 and the self-loops."""
    ids = IdSet()
    m = loops = 0
    weighted = False
    layout = None
    with open(scratch / "ends.bin", "wb") as ends, open(scratch / "weights.bin", "wb") as wf:
        for k, body in enumerate(text_blocks(path, block_bytes)):
            if k == 0:
                if first_line is not None:
                    body = _blank_line(body, first_line)
                body = _strip_top_comments(body)
                if body is None:
                    raise NotStreamable
                if not body:
                    continue
            elif b"#" in body or b"%" in body:
                raise NotStreamable
            if layout is None:
                if not body.strip():
                    continue
                layout = first_layout(body)
                if layout is None:
                    raise NotStreamable
            heads, tails, w = _parse_block(body, *layout)
            if not ids.expected:  # the file's ends, at this block's bytes per edge (gzipped:
                size = Path(path).stat().st_size  # fewer, as the compressed size is smaller)
                ids.expected = int(2 * len(heads) * (size / max(len(body), 1)))
            del body
            if unweighted:
                w = None
            pair = np.empty((len(heads), 2), dtype=np.int64)
            pair[:, 0], pair[:, 1] = heads, tails
            del heads, tails
            ends.write(pair.data)
            if w is not None:
                weights = w.astype(np.float64)
                weighted |= bool((weights != 1.0).any())
                wf.write(weights.data)
            loops += int(np.count_nonzero(pair[:, 0] == pair[:, 1]))
            ids.add(pair)
            m += len(pair)
    if layout is None:
        raise NotStreamable  # no edge: the whole reader says so
    return ids, m, weighted, loops


def _blank_line(body: bytes, lineno: int) -> bytes:
    """``body`` with its line ``lineno`` (1-based) blanked (:class:`NotStreamable` if the
    block does not hold it)."""
    start = 0
    for _ in range(lineno - 1):
        start = body.find(b"\n", start) + 1
        if start == 0:
            raise NotStreamable
    end = body.find(b"\n", start)
    return body[:start] + body[end if end >= 0 else len(body):]


def _edge_blocks(scratch: Path, m: int, ids: IdSet, weighted: bool):
    """Passes 2 and 3's input: ``(sources, targets, weights)`` a block at a time, the ends as
    dense ids; the weights from ``weights.bin`` where one differs from 1 (``weighted``), else
    one block of ones, made once (no file read)."""
    ends = np.memmap(scratch / "ends.bin", dtype=np.int64, mode="r", shape=(m, 2))
    weights = (np.memmap(scratch / "weights.bin", dtype=np.float64, mode="r", shape=(m,))
               if weighted else None)
    ones = None if weighted else np.ones(min(m, EDGE_BLOCK))
    for lo in range(0, m, EDGE_BLOCK):
        hi = min(m, lo + EDGE_BLOCK)
        pair = ids.dense(ends[lo:hi])
        yield pair[:, 0], pair[:, 1], (np.asarray(weights[lo:hi]) if weighted
                                       else ones[:hi - lo])


def _write_csr(scratch: Path, id_set: IdSet, m: int, weighted: bool, directed: bool,
               loops: int, out: Path) -> int:
    """Passes 2 to 4 and the ``.npz``; returns the dropped duplicates whose weight differs
    from the kept edge's."""
    ids = id_set.ids()
    n = len(ids)
    rows = np.zeros(n + 1, dtype=np.int64)
    for src, dst, _ in _edge_blocks(scratch, m, id_set, weighted):
        _count_rows(src, dst, directed, rows)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(rows[:n], out=indptr[1:])
    entries = int(indptr[-1])
    cols = _scratch_array(scratch / "cols.npy", np.int32, entries)
    vals = _scratch_array(scratch / "vals.npy", np.float64, entries)
    cursor = indptr[:-1].copy()
    for src, dst, w in _edge_blocks(scratch, m, id_set, weighted):
        _place(src, dst, w, directed, cursor, cols, vals)
    del cursor
    kept = np.zeros(n + 1, dtype=np.int64)
    figures = np.zeros(2, dtype=np.int64)
    _dedup_rows(indptr, cols, vals, directed, kept, figures)
    final = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(kept[:n], out=final[1:])
    size = int(final[-1])
    arrays = {"format": np.array(FORMAT), "version": np.array(VERSION), "indptr": final,
              "indices": cols[:size], "nodes": ids, "directed": np.array(bool(directed)),
              "self_loops_dropped": np.array(loops),
              "duplicates_dropped": np.array(int(figures[0]))}
    if weighted:
        arrays["weights"] = _float32_file(scratch / "w32.npy", vals, size)
    _write_npz(out, arrays)
    return int(figures[1])


def _scratch_array(path: Path, dtype, size: int) -> np.ndarray:
    """A scratch file of ``size`` values mapped for writing, its disk blocks allocated first
    (:func:`kernelne.outputs.allocated_memmap`: a full disk is an ``OSError`` here, not a
    ``SIGBUS`` later)."""
    if size == 0:
        return np.empty(0, dtype=dtype)
    return allocated_memmap(path, dtype, (size,))


def _float32_file(path: Path, vals: np.ndarray, size: int) -> np.ndarray:
    """The first ``size`` weights as float32, written a block at a time into ``path``."""
    out = _scratch_array(path, np.float32, size)
    for lo in range(0, size, EDGE_BLOCK):
        out[lo:lo + EDGE_BLOCK] = vals[lo:min(size, lo + EDGE_BLOCK)]
    return out


@njit(cache=True)
def _count_rows(src, dst, directed, rows):
    for e in range(len(src)):
        u, v = src[e], dst[e]
        if u == v:
            continue
        if directed:
            rows[u] += 1
        else:
            rows[min(u, v)] += 1
            rows[max(u, v)] += 1


@njit(cache=True)
def _place(src, dst, w, directed, cursor, cols, vals):
    for e in range(len(src)):
        u, v = src[e], dst[e]
        if u == v:
            continue
        if directed:
            a, b = u, v
        else:
            a, b = min(u, v), max(u, v)
        cols[cursor[a]] = b
        vals[cursor[a]] = w[e]
        cursor[a] += 1
        if not directed:
            cols[cursor[b]] = a
            vals[cursor[b]] = w[e]
            cursor[b] += 1


@njit(cache=True)
def _dedup_rows(indptr, cols, vals, directed, kept, figures):
    """Sort each row by neighbour, stably, keep the first of each neighbour and write the
    row back compacted toward the start (rows in order: a row never overwrites one not yet
    read). ``figures``: the duplicate edges dropped and, of those, the reweighted ones
    (counted once per undirected edge, in the row of its smaller end)."""
    out = 0
    for r in range(len(indptr) - 1):
        lo, hi = indptr[r], indptr[r + 1]
        row_cols = cols[lo:hi].copy()
        row_vals = vals[lo:hi].copy()
        order = np.argsort(row_cols, kind="mergesort")
        last = -1
        first_w = 0.0
        for i in order:
            c = row_cols[i]
            if c == last:
                if directed or c > r:
                    figures[0] += 1
                    if row_vals[i] != first_w:
                        figures[1] += 1
                continue
            last, first_w = c, row_vals[i]
            cols[out] = c
            vals[out] = row_vals[i]
            out += 1
            kept[r] += 1


def _write_npz(out: Path, arrays: dict) -> None:
    """The graph ``.npz`` as ``np.savez`` writes it (uncompressed members), an array at a
    time: a memory-mapped array is copied through in numpy's buffered chunks."""
    with atomic_path(out) as tmp:
        with zipfile.ZipFile(tmp, mode="w", compression=zipfile.ZIP_STORED,
                             allowZip64=True) as zf:
            for key, value in arrays.items():
                with zf.open(key + ".npy", "w", force_zip64=True) as fh:
                    np.lib.format.write_array(fh, np.asanyarray(value), allow_pickle=False)


def _mapped(out: Path) -> Graph:
    from kernelne.graphs.npz import read_graph_arrays

    return Graph(**read_graph_arrays(out, mapped=True))
