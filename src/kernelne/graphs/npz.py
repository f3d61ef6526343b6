"""The binary graph format: a ``.npz`` of the CSR arrays, written by ``kernelne convert``.

Keys: ``format`` ("kernelne-graph"), ``version`` (1), ``indptr`` (int64), ``indices`` (int32),
``weights`` (float32, absent when unweighted), ``nodes`` (int64, or unicode strings),
``directed``, ``self_loops_dropped``, ``duplicates_dropped``. Loading is a few array reads
(no parsing), checked so that a corrupt or foreign file is an :class:`InputError`. With
``mapped=True`` (:func:`read_graph_arrays`; a partitioned fit's) the CSR arrays are not read
(``np.savez`` stores them uncompressed): ``indptr`` is memory-mapped read-only and the edges
(``indices``, ``weights``) stay in the file as
:class:`~kernelne.graphs.file_vector.FileVector` s, read a window at a time where they are
used (``np.asarray`` maps them): a partitioned fit's driver holds no copy and no map of the
edges.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from kernelne.errors import InputError
from kernelne.graphs.file_vector import FileVector
from kernelne.outputs import atomic_path

FORMAT, VERSION = "kernelne-graph", 1


MAX_EXPANSION = 64  # bytes an array may declare per stored byte (float data barely compresses)


#: the arrays of a graph file
GRAPH_KEYS = ("format", "version", "indptr", "indices", "weights", "nodes", "directed",
              "self_loops_dropped", "duplicates_dropped")


def is_short_text(header: tuple | None, chars: int = 64) -> bool:
    """Whether an array's ``(shape, dtype)`` header declares one text of at most ``chars``
    characters, as the ``format`` entry of kernelne's ``.npz`` files (read only then: a
    forged ``format`` would otherwise be read whatever its declared size)."""
    return (header is not None and header[0] == () and header[1].kind == "U"
            and header[1].itemsize <= 4 * chars)


def member_headers(z: Any, keys: Any, path: str | Path) -> dict[str, tuple[tuple, np.dtype]]:
    """The declared shape and dtype of each named array present in the open ``.npz`` ``z``,
    read from the ``.npy`` headers alone (no array data). Each must declare at most
    :data:`MAX_EXPANSION` times its stored (possibly compressed) size, plus 1 MiB; the
    arrays not named are never read.

    Parameters
    ----------
    z
        The archive, as ``np.load`` opens it.
    keys
        The array names; those absent are left out.
    path
        The file, for the messages.

    Returns
    -------
    dict
        ``{name: (shape, dtype)}``.

    Raises
    ------
    InputError
        A header cannot be read, or an array declares more bytes than its file could hold:
        an edited header or a decompression bomb would otherwise make numpy allocate them
        before the file is refused.
    """
    archive = getattr(z, "zip", None)
    if archive is None:
        return {}
    headers = {}
    for key in keys:
        try:
            info = archive.getinfo(key + ".npy")
        except KeyError:
            continue
        try:
            with archive.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read(fh)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise InputError(f"cannot read its array {key} ({exc})", path) from None
        declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if declared > MAX_EXPANSION * info.compress_size + (1 << 20):
            raise InputError(f"corrupt file: its array {key} declares shape {shape} "
                             f"({declared:,} bytes) but holds {info.compress_size:,} bytes",
                             path)
        headers[key] = (tuple(shape), dtype)
    return headers


def member_location(path: Path, archive: zipfile.ZipFile, key: str,
                    ) -> tuple[int, int, np.dtype] | None:
    """Where the 1-D array ``key`` of the ``.npz`` at ``path`` lies in the file, as
    ``(byte offset, length, dtype)``, where the archive stores it uncompressed (as ``np.savez``
    does), else None (read it instead)."""
    info = archive.getinfo(key + ".npy")
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    with open(path, "rb") as fh:  # the local header: its name and extra field's lengths
        fh.seek(info.header_offset)
        local = fh.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            return None
        start = info.header_offset + 30 + int.from_bytes(local[26:28], "little") \
            + int.from_bytes(local[28:30], "little")
        fh.seek(start)
        version = np.lib.format.read_magic(fh)
        read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                else np.lib.format.read_array_header_2_0)
        shape, fortran, dtype = read(fh)
        offset = fh.tell()
    if fortran or dtype.hasobject or len(shape) != 1:
        return None
    if offset + shape[0] * dtype.itemsize > start + info.file_size:
        raise InputError(f"corrupt graph file (its array {key} is cut short)", path)
    return offset, int(shape[0]), dtype


def mapped_member(path: Path, archive: zipfile.ZipFile, key: str) -> np.ndarray | None:
    """The array ``key`` of the ``.npz`` at ``path`` memory-mapped read-only where the archive
    stores it uncompressed (:func:`member_location`), else None (read it instead)."""
    where = member_location(path, archive, key)
    if where is None:
        return None
    offset, length, dtype = where
    if length == 0:
        return np.empty(0, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=(length,))


def file_member(path: Path, archive: zipfile.ZipFile, key: str) -> FileVector | None:
    """The array ``key`` of the ``.npz`` at ``path`` left in the file
    (:class:`~kernelne.graphs.file_vector.FileVector`) where the archive stores it
    uncompressed, else None (read it instead)."""
    where = member_location(path, archive, key)
    if where is None:
        return None
    offset, length, dtype = where
    return FileVector(path, dtype, offset, length)


def save_graph(graph: Any, path: str | Path) -> None:
    """Write ``graph`` (a :class:`~kernelne.graphs.graph.Graph`) to ``path`` (``.npz``),
    atomically."""
    nodes = graph.nodes
    if nodes.dtype == object:
        nodes = nodes.astype(str)
    arrays = {
        "format": np.array(FORMAT), "version": np.array(VERSION),
        "indptr": np.asarray(graph.indptr, np.int64),
        "indices": np.asarray(graph.indices, np.int32),  # no copy when already so
        "nodes": nodes, "directed": np.array(graph.directed),
        "self_loops_dropped": np.array(graph.self_loops_dropped),
        "duplicates_dropped": np.array(graph.duplicates_dropped),
    }
    if graph.weights is not None:
        arrays["weights"] = np.asarray(graph.weights, np.float32)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)


def read_graph_arrays(path: str | Path, mapped: bool = False) -> dict[str, Any]:
    """Read a graph written by :func:`save_graph`: the keyword arguments of
    :class:`~kernelne.graphs.graph.Graph` (which :func:`kernelne.graphs.graph.load_graph` builds
    from them). ``mapped``: where they are stored uncompressed, ``indptr`` memory-mapped
    read-only (:func:`mapped_member`) and ``indices``, ``weights`` left in the file
    (:func:`file_member`), all checked a block at a time, with no temporary of the edges'
    size."""
    path = Path(path)
    if path.is_file() and not zipfile.is_zipfile(path):  # numpy would talk about pickles
        raise InputError("not a readable graph file (not an .npz archive; convert a graph "
                         "with `kernelne convert GRAPH -o OUT.npz`)", path)
    try:
        with np.load(path, allow_pickle=False) as z:
            headers = member_headers(z, GRAPH_KEYS, path)  # every header, before any array
            if not is_short_text(headers.get("format")) or str(z["format"]) != FORMAT:
                raise InputError("not a kernelne graph file (convert one with "
                                 "`kernelne convert GRAPH -o OUT.npz`)", path)
            for key in ("version", "directed", "self_loops_dropped", "duplicates_dropped"):
                if key in headers and headers[key][0] != ():
                    raise InputError(f"corrupt graph file ({key} must be a single value, "
                                     f"found shape {headers[key][0]})", path)
            if int(z["version"]) != VERSION:
                raise InputError(f"graph file version {int(z['version'])} is not supported "
                                 f"(this kernelne reads version {VERSION})", path)
            csr = {key: (None if not mapped else mapped_member(path, z.zip, key)
                         if key == "indptr" else file_member(path, z.zip, key))
                   for key in ("indptr", "indices", "weights") if key in headers}
            indptr, indices = (z[key] if csr[key] is None else csr[key]
                               for key in ("indptr", "indices"))
            weights = None
            if "weights" in headers:
                weights = z["weights"] if csr["weights"] is None else csr["weights"]
            nodes = z["nodes"]
            directed = bool(z["directed"])
            loops, dups = int(z["self_loops_dropped"]), int(z["duplicates_dropped"])
    except InputError:
        raise
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"not a readable graph file ({exc})", path) from None
    for name, array, kinds, wanted in (("indptr", indptr, "iu", "integers"),
                                       ("indices", indices, "iu", "integers"),
                                       ("nodes", nodes, "iuU", "integers or strings"),
                                       ("weights", weights, "f", "float32 numbers")):
        if array is not None and (array.dtype.kind not in kinds or array.ndim != 1):
            raise InputError(f"corrupt graph file ({name} must be a 1-D array of {wanted}, "
                             f"found {array.dtype} of shape {array.shape})", path)
    if indptr.dtype != np.int64:
        if indptr.size and (indptr.min() < 0 or indptr.max() > np.iinfo(np.int64).max):
            raise InputError("corrupt graph file (inconsistent CSR arrays)", path)
        indptr = indptr.astype(np.int64)
    n = len(indptr) - 1
    ids_in_range = _ids_below(indices, n)  # one pass, before a cast could wrap them
    if indices.dtype != np.int32:
        if not ids_in_range:
            raise InputError("corrupt graph file (inconsistent CSR arrays)", path)
        indices = np.asarray(indices).astype(np.int32)
    ok = (n >= 0 and indptr.ndim == indices.ndim == 1 and len(nodes) == n and indptr[0] == 0
          and indptr[-1] == len(indices) and np.all(np.diff(indptr) >= 0)
          and ids_in_range and (weights is None or len(weights) == len(indices)))
    if not ok:
        raise InputError("corrupt graph file (inconsistent CSR arrays)", path)
    if weights is not None and not (weights.dtype == np.float32 and _normal_weights(weights)):
        raise InputError("corrupt graph file (edge weights must be positive normal float32 "
                         "numbers)", path)
    if len(np.unique(nodes)) != n:
        raise InputError("corrupt graph file (a node id is listed twice)", path)
    if nodes.dtype.kind == "U":
        nodes = nodes.astype(object)
    return dict(indptr=indptr, indices=indices, weights=weights, nodes=nodes,
                directed=directed, self_loops_dropped=loops, duplicates_dropped=dups)


CHECK_BLOCK = 1 << 20  # values checked at a time (edges left in the file are never read whole)


def _ids_below(indices, n: int) -> bool:
    """Whether every neighbour id is in ``0..n-1``, checked :data:`CHECK_BLOCK` values at a
    time."""
    for lo in range(0, len(indices), CHECK_BLOCK):
        block = indices[lo:lo + CHECK_BLOCK]
        if block.min() < 0 or block.max() >= n:
            return False
    return True


def _normal_weights(weights: np.ndarray) -> bool:
    """Whether every weight is a finite float32 of at least the smallest normal one, checked
    :data:`CHECK_BLOCK` values at a time."""
    tiny = np.finfo(np.float32).tiny
    for lo in range(0, len(weights), CHECK_BLOCK):
        block = weights[lo:lo + CHECK_BLOCK]
        if not (np.isfinite(block).all() and (block >= tiny).all()):
            return False
    return True
