"""The dataset-folder format (``shared/datasets``) and node-label files.

A data folder holds ``NAME.edges.gz`` (``u v`` per line, dense ids), optionally
``NAME.labels.gz`` (``node label`` per (node, label) pair) and ``NAME.label_fractions.gz``
(``node label fraction``: each node's share per label), and a ``MANIFEST.json`` that gives
each network's node count. The folder is found from ``--data-dir``, else the environment
variable ``KERNELNE_DATA``, else ``../shared/datasets`` seen from the working directory or from
this source checkout.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from kernelne.errors import InputError
from kernelne.graph import Graph, is_canonical_int, iter_records, read_edgelist

DATA_ENV = "KERNELNE_DATA"


def find_data_dir(data_dir: str | Path | None = None) -> Path:
    """The data folder to use; :class:`InputError` with a hint when there is none."""
    if data_dir is not None:
        path = Path(data_dir)
        if not (path / "MANIFEST.json").is_file():
            raise InputError("not a data folder (no MANIFEST.json inside)", path)
        return path
    candidates = []
    if os.environ.get(DATA_ENV):
        candidates.append(Path(os.environ[DATA_ENV]))
    candidates.append(Path.cwd().parent / "shared" / "datasets")
    candidates.append(Path(__file__).resolve().parents[3] / "shared" / "datasets")
    for path in candidates:
        if (path / "MANIFEST.json").is_file():
            return path
    raise InputError(
        f"no data folder found: pass --data-dir or set {DATA_ENV} to a folder holding "
        "MANIFEST.json and NAME.edges.gz files"
    )


@dataclass
class Dataset:
    """A network of the data folder: its graph, its labels (if any) and its manifest entry."""

    name: str
    graph: Graph
    labels: sp.csr_matrix | None
    info: dict


def load_manifest(data_dir: str | Path | None = None) -> dict:
    path = find_data_dir(data_dir) / "MANIFEST.json"
    try:
        return json.loads(path.read_text())
    except ValueError as exc:
        raise InputError(f"cannot parse JSON ({exc})", path) from None


def load_dataset(name: str, data_dir: str | Path | None = None) -> Dataset:
    """Load network ``name`` (e.g. ``"cora"``) from the data folder."""
    folder = find_data_dir(data_dir)
    manifest = load_manifest(folder)
    if name not in manifest:
        raise InputError(f"unknown dataset {name!r} (have: {', '.join(manifest)})", folder)
    info = manifest[name]
    graph = read_edgelist(folder / f"{name}.edges.gz", n_nodes=int(info["nodes"]))
    label_path = folder / f"{name}.labels.gz"
    labels = read_labels(label_path, graph) if label_path.is_file() else None
    return Dataset(name, graph, labels, info)


def read_labels(path: str | Path, graph: Graph | None = None, n_nodes: int | None = None):
    """Read ``node label`` pairs into an ``n x K`` boolean CSR label matrix.

    Node ids are looked up in ``graph.nodes`` (the user's ids); without a graph they must be the
    integers ``0..n_nodes-1``. Label tokens are mapped to ``0..K-1`` (integers keep their order).
    A node may have several labels (one line each); nodes without a line have an empty row.
    """
    rows: list[int] = []
    tokens: list[str] = []
    for lineno, fields in iter_records(path):
        if len(fields) != 2:
            raise InputError(f"expected 2 fields (node label), found {len(fields)}", path, lineno)
        node = fields[0]
        if graph is not None:
            try:
                if graph.nodes.dtype.kind in "iu" and not is_canonical_int(node):
                    raise KeyError(node)  # "007" is not node 7 (the graph readers' id rule)
                key: object = int(node) if graph.nodes.dtype.kind in "iu" else node
                rows.append(graph.index_of(key))
            except (KeyError, ValueError):
                raise InputError(f"node {node!r} is not in the graph", path, lineno) from None
        else:
            try:
                rows.append(int(node))
            except ValueError:
                raise InputError(f"node id {node!r} is not an integer", path, lineno) from None
            if n_nodes is not None and not 0 <= rows[-1] < n_nodes:
                raise InputError(f"node id {node} outside 0..{n_nodes - 1}", path, lineno)
        tokens.append(fields[1])
    if not rows:
        raise InputError("no labels found (empty file)", path)
    try:
        values = np.array([int(t) for t in tokens])
    except ValueError:
        values = np.array(tokens, dtype=object)
    _, cols = np.unique(values, return_inverse=True)
    n = graph.n_nodes if graph is not None else (n_nodes or max(rows) + 1)
    data = np.ones(len(rows), dtype=bool)
    matrix = sp.csr_matrix((data, (np.array(rows), cols)), shape=(n, int(cols.max()) + 1))
    matrix.sum_duplicates()
    matrix.data[:] = True
    return matrix


def read_label_fractions(path: str | Path, n_nodes: int) -> sp.csr_matrix:
    """Read ``node label fraction`` lines (dense integer ids and labels) into an
    ``n_nodes x K`` float CSR matrix."""
    rows: list[int] = []
    cols: list[int] = []
    values: list[float] = []
    for lineno, fields in iter_records(path):
        if len(fields) != 3:
            raise InputError(f"expected 3 fields (node label fraction), found {len(fields)}",
                             path, lineno)
        try:
            node, label, fraction = int(fields[0]), int(fields[1]), float(fields[2])
        except ValueError:
            raise InputError("node and label must be integers, fraction a number",
                             path, lineno) from None
        if not 0 <= node < n_nodes or label < 0:
            raise InputError(f"node {node} outside 0..{n_nodes - 1} or negative label",
                             path, lineno)
        rows.append(node)
        cols.append(label)
        values.append(fraction)
    if not rows:
        raise InputError("no label fractions found (empty file)", path)
    shape = (n_nodes, max(cols) + 1)
    return sp.csr_matrix((np.array(values), (np.array(rows), np.array(cols))), shape=shape)


def single_labels(fractions: sp.csr_matrix) -> sp.csr_matrix:
    """Each node's largest-fraction label (ties: the lowest label) as a bool CSR matrix;
    nodes without any fraction keep an empty row."""
    dense = fractions.toarray()
    labelled = np.flatnonzero(fractions.getnnz(axis=1) > 0)
    best = dense[labelled].argmax(axis=1)
    return sp.csr_matrix((np.ones(len(labelled), dtype=bool), (labelled, best)),
                         shape=fractions.shape)


def load_single_labels(name: str, data_dir: str | Path | None = None) -> sp.csr_matrix:
    """The single-label variant of network ``name``: the argmax of
    ``NAME.label_fractions.gz`` per node (as the data folder's README describes)."""
    folder = find_data_dir(data_dir)
    n_nodes = int(load_manifest(folder)[name]["nodes"])
    return single_labels(read_label_fractions(folder / f"{name}.label_fractions.gz", n_nodes))
