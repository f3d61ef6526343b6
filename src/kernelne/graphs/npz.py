"""The binary graph format: a ``.npz`` of the CSR arrays, written by ``kernelne convert``.

Keys: ``format`` ("kernelne-graph"), ``version`` (1), ``indptr`` (int64), ``indices`` (int32),
``weights`` (float32, absent when unweighted), ``nodes`` (int64, or unicode strings),
``directed``, ``self_loops_dropped``, ``duplicates_dropped``. Loading is a few array reads
(no parsing), checked so that a corrupt or foreign file is an :class:`InputError`.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from kernelne.errors import InputError
from kernelne.outputs import atomic_path

FORMAT, VERSION = "kernelne-graph", 1


MAX_EXPANSION = 64  # bytes an array may declare per stored byte (float data barely compresses)


def check_member_sizes(z: Any, keys: Any, path: str | Path) -> None:
    """Fail (``InputError``) before reading if an array of the open ``.npz`` ``z`` declares
    more bytes than its file could hold: an edited header or a decompression bomb would
    otherwise make numpy allocate them first.

    Each named array present must declare at most :data:`MAX_EXPANSION` times its stored
    (possibly compressed) size, plus 1 MiB; arrays not named are never read.
    """
    archive = getattr(z, "zip", None)
    if archive is None:
        return
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


def read_graph_arrays(path: str | Path) -> dict[str, Any]:
    """Read a graph written by :func:`save_graph`: the keyword arguments of
    :class:`~kernelne.graphs.graph.Graph` (which :func:`kernelne.graphs.graph.load_graph` builds
    from them)."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z.get("format", "")) != FORMAT:
                raise InputError("not a kernelne graph file (convert one with "
                                 "`kernelne convert GRAPH -o OUT.npz`)", path)
            if int(z["version"]) != VERSION:
                raise InputError(f"graph file version {int(z['version'])} is not supported "
                                 f"(this kernelne reads version {VERSION})", path)
            check_member_sizes(z, ("indptr", "indices", "weights", "nodes"), path)
            indptr, indices = z["indptr"], z["indices"]
            weights = z["weights"] if "weights" in z else None
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
    if indices.dtype != np.int32:
        if indices.size and (indices.min() < 0 or indices.max() >= len(indptr) - 1):
            raise InputError("corrupt graph file (inconsistent CSR arrays)", path)
        indices = indices.astype(np.int32)
    n = len(indptr) - 1
    ok = (n >= 0 and indptr.ndim == indices.ndim == 1 and len(nodes) == n and indptr[0] == 0
          and indptr[-1] == len(indices) and np.all(np.diff(indptr) >= 0)
          and (len(indices) == 0 or (indices.min() >= 0 and indices.max() < n))
          and (weights is None or len(weights) == len(indices)))
    if not ok:
        raise InputError("corrupt graph file (inconsistent CSR arrays)", path)
    if weights is not None and not (weights.dtype == np.float32 and np.isfinite(weights).all()
                                    and (weights >= np.finfo(np.float32).tiny).all()):
        raise InputError("corrupt graph file (edge weights must be positive normal float32 "
                         "numbers)", path)
    if len(np.unique(nodes)) != n:
        raise InputError("corrupt graph file (a node id is listed twice)", path)
    if nodes.dtype.kind == "U":
        nodes = nodes.astype(object)
    return dict(indptr=indptr, indices=indices, weights=weights, nodes=nodes,
                directed=directed, self_loops_dropped=loops, duplicates_dropped=dups)
