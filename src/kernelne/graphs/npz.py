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
            indptr, indices = z["indptr"], z["indices"]
            weights = z["weights"] if "weights" in z else None
            nodes = z["nodes"]
            directed = bool(z["directed"])
            loops, dups = int(z["self_loops_dropped"]), int(z["duplicates_dropped"])
    except InputError:
        raise
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"not a readable graph file ({exc})", path) from None
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
    if nodes.dtype.kind == "U":
        nodes = nodes.astype(object)
    return dict(indptr=indptr, indices=indices, weights=weights, nodes=nodes,
                directed=directed, self_loops_dropped=loops, duplicates_dropped=dups)
