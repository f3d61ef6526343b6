"""The dataset-folder format, the paper's seven networks shipped with the package, and
node-label files.

A data folder holds ``NAME.edges.gz`` (``u v`` per line, dense ids), optionally
``NAME.labels.gz`` (``node label`` per (node, label) pair) and ``NAME.label_fractions.gz``
(``node label fraction``: each node's share per label), and a ``MANIFEST.json`` that gives
each network's node count, source, checksums and transformation. The package ships one
(``kernelne/data``: the paper's seven networks and the karate club of the examples, read with
:mod:`importlib.resources`). The
folder used is ``--data-dir`` if given, else the environment variable ``KERNELNE_DATA`` if set,
else the packaged one.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from kernelne.errors import InputError, quote
from kernelne.graphs.graph import Graph, is_canonical_int, iter_records, read_edgelist

DATA_ENV = "KERNELNE_DATA"


def packaged_data_dir() -> Path:
    """The folder of the networks shipped inside the package (``kernelne/data``)."""
    folder = resources.files("kernelne") / "data"
    if not isinstance(folder, Path) or not (folder / "MANIFEST.json").is_file():
        raise InputError(  # e.g. a zipped install, or a source tree without its data
            f"the packaged data folder is missing ({folder}): pass --data-dir or set {DATA_ENV}"
        )
    return folder


def find_data_dir(data_dir: str | Path | None = None) -> Path:
    """The data folder to use: ``data_dir``, else ``$KERNELNE_DATA``, else the packaged one.

    :class:`InputError` if the folder chosen holds no ``MANIFEST.json``.
    """
    if data_dir is not None:
        path = Path(data_dir)
        if not (path / "MANIFEST.json").is_file():
            raise InputError("not a data folder (no MANIFEST.json inside)", path)
        return path
    if os.environ.get(DATA_ENV):
        path = Path(os.environ[DATA_ENV])
        if not (path / "MANIFEST.json").is_file():
            raise InputError(f"not a data folder (no MANIFEST.json inside; set by {DATA_ENV}: "
                             "unset it to use the packaged networks)", path)
        return path
    return packaged_data_dir()


@dataclass
class Dataset:
    """A network of the data folder: its graph, its labels (if any) and its manifest entry.

    Returned by :func:`kernelne.load_dataset`.

    Parameters
    ----------
    name : str
        The network's name, e.g. ``"cora"``.
    graph : Graph
        The graph (dense integer ids ``0..n-1``, isolated nodes included).
    labels : scipy.sparse.csr_matrix or None
        The ``n x K`` boolean label matrix, or None for an unlabelled network.
    info : dict
        The network's ``MANIFEST.json`` entry: node count, source, checksums and
        transformation.
    """

    name: str
    graph: Graph
    labels: sp.csr_matrix | None
    info: dict


def is_plain_name(name: object) -> bool:
    """Whether ``name`` can name a network's files inside the data folder: a non-empty
    string without a path separator, not ``.`` or ``..``."""
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name
            and "\\" not in name and "\0" not in name)


def load_manifest(data_dir: str | Path | None = None) -> dict:
    """The data folder's ``MANIFEST.json``: network name to its entry.

    Parameters
    ----------
    data_dir : str or Path, optional
        The data folder; default ``$KERNELNE_DATA`` if set, else the packaged one.

    Returns
    -------
    dict
        Each network's entry (``nodes``, ``edges``, source, checksums, ...).

    Raises
    ------
    InputError
        Naming ``MANIFEST.json``: unreadable JSON, not an object of entries, a name that is
        not a plain file name (``..``, a path separator), or an entry without integer
        ``nodes`` and ``edges``.
    """
    path = find_data_dir(data_dir) / "MANIFEST.json"
    try:
        manifest = json.loads(path.read_text())
    except ValueError as exc:
        raise InputError(f"cannot parse JSON ({exc})", path) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", path) from None
    if not isinstance(manifest, dict):
        raise InputError("expected a JSON object of networks (name: entry), found "
                         f"{quote(json.dumps(manifest), bare=True)}", path)
    for name, info in manifest.items():
        if not is_plain_name(name):
            raise InputError(f"network name {quote(name)} is not a plain file name (it is "
                             "empty, '.' or '..', or holds a path separator)", path)
        if not isinstance(info, dict):
            raise InputError(f"network {name!r}: expected an object, found "
                             f"{quote(json.dumps(info), bare=True)}", path)
        for key in ("nodes", "edges"):
            value = info.get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                found = "nothing" if key not in info else quote(json.dumps(value), bare=True)
                raise InputError(f"network {name!r}: {key!r} must be a non-negative integer, "
                                 f"found {found}", path)
    return manifest


def load_dataset(name: str, data_dir: str | Path | None = None) -> Dataset:
    """Load a network of the data folder, with its labels if it has any.

    Parameters
    ----------
    name : str
        The network's name in the folder's ``MANIFEST.json``, e.g. ``"cora"``; the package
        ships the paper's seven (``kernelne datasets`` lists them).
    data_dir : str or Path, optional
        The data folder; default ``$KERNELNE_DATA`` if set, else the packaged one.

    Returns
    -------
    Dataset
        ``name``, ``graph`` (a :class:`Graph`), ``labels`` (an ``n x K`` boolean CSR matrix,
        or None for an unlabelled network) and ``info`` (its manifest entry).

    Raises
    ------
    InputError
        An unknown name (the message lists the known ones), or a folder without
        ``MANIFEST.json``.

    Examples
    --------
    >>> from kernelne import load_dataset
    >>> cora = load_dataset("cora")  # doctest: +SKIP
    >>> cora.graph.summary(), cora.labels.shape  # doctest: +SKIP
    ('2,708 nodes, 5,278 edges (undirected)', (2708, 7))
    """
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

    Label tokens are mapped to ``0..K-1`` (integers keep their order). A node may have several
    labels (one line each); nodes without a line have an empty row.

    Parameters
    ----------
    path : str or Path
        A text file of ``node label`` lines (gzip allowed; ``#`` and ``%`` comments).
    graph : Graph, optional
        The graph whose node ids (``graph.nodes``, the user's ids) the file's node ids are
        looked up in; its node count is the matrix's row count.
    n_nodes : int, optional
        Without a graph: the node ids must be the integers ``0..n_nodes-1``; default the
        largest id plus 1.

    Returns
    -------
    scipy.sparse.csr_matrix of shape (n, K), dtype bool
        Row ``i`` holds the labels of dense node ``i``.

    Raises
    ------
    InputError
        A malformed line, a node not in the graph (or outside ``0..n_nodes-1``), or an empty
        file; the message names the file and the line.
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
                raise InputError(f"node {quote(node)} is not in the graph", path, lineno) from None
        else:
            try:
                rows.append(int(node))
            except ValueError:
                raise InputError(f"node id {quote(node)} is not an integer", path, lineno) from None
            if n_nodes is not None and not 0 <= rows[-1] < n_nodes:
                raise InputError(f"node id {quote(node, bare=True)} outside 0..{n_nodes - 1}",
                                 path, lineno)
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


def describe_datasets(data_dir: str | Path | None = None) -> list[dict]:
    """One row per network of the data folder's manifest: name, nodes, edges, labels (count,
    ``"-"`` if unlabelled, ``"multi"`` noted), components and source."""
    rows = []
    for name, info in load_manifest(data_dir).items():
        n_labels = info.get("labels")
        if not n_labels:
            labels = "-"
        else:
            multi = info.get("multi_labelled_nodes", 0)
            labels = f"{n_labels} (multi)" if multi else str(n_labels)
        source = info.get("source") or {}
        origin = Path(source.get("path", "")).name
        if source.get("repo"):
            origin = f"{origin} ({source['repo']})" if origin else source["repo"]
        rows.append({"name": name, "nodes": int(info["nodes"]), "edges": int(info["edges"]),
                     "labels": labels, "components": info.get("components", ""),
                     "source": origin or "-"})
    return rows


def dataset_file(name: str, data_dir: str | Path | None = None, kind: str = "edges") -> Path:
    """The path of a network's ``NAME.edges.gz`` (or ``NAME.labels.gz`` with
    ``kind="labels"``) in the data folder.

    Parameters
    ----------
    name : str
        The network's name in the folder's ``MANIFEST.json``, e.g. ``"karate"``.
    data_dir : str or Path, optional
        The data folder; default ``$KERNELNE_DATA`` if set, else the packaged one.
    kind : {"edges", "labels"}
        Which file.

    Returns
    -------
    Path
        The file; every reader of kernelne accepts it as it is (gzipped).

    Raises
    ------
    InputError
        An unknown name, or a network without that file.

    Examples
    --------
    >>> from kernelne.graphs.datasets import dataset_file
    >>> dataset_file("karate").name
    'karate.edges.gz'
    """
    folder = find_data_dir(data_dir)
    manifest = load_manifest(folder)
    if name not in manifest or not is_plain_name(name):
        raise InputError(f"unknown dataset {name!r} (have: {', '.join(manifest)})", folder)
    path = folder / f"{name}.{kind}.gz"
    if not path.is_file():
        raise InputError(f"dataset {name!r} has no {kind} file", folder)
    return path


def copy_dataset(name: str, out_dir: str | Path = ".", data_dir: str | Path | None = None,
                 overwrite: bool = False) -> list[Path]:
    """Write a network as plain text into ``out_dir``: ``NAME.edgelist`` (``u v`` per line)
    and, for a labelled network, ``NAME.labels`` (``node label`` per line).

    Parameters
    ----------
    name : str
        The network's name in the folder's ``MANIFEST.json``, e.g. ``"karate"``.
    out_dir : str or Path, default "."
        The folder to write into.
    data_dir : str or Path, optional
        The data folder; default ``$KERNELNE_DATA`` if set, else the packaged one.
    overwrite : bool, default False
        Replace existing files of the same names. Without it, a file of one of these names
        whose contents differ from the network's (or a link, or a folder) is refused before
        anything is written; a file that already holds exactly the network's text is left
        as it is.

    Returns
    -------
    list of Path
        The files written or already in place (each file is written whole or not at all).

    Raises
    ------
    InputError
        An unknown name, an ``out_dir`` that is not a folder, a file of the same name that
        differs (without ``overwrite``), or a failed write.
    """
    import gzip

    from kernelne.outputs import atomic_path

    edges = dataset_file(name, data_dir)
    out = Path(out_dir)
    if not out.is_dir():
        raise InputError("not a folder", out)
    pairs = [(src, out / f"{name}.{kind}") for src, kind in
             ((edges, "edgelist"), (edges.with_name(f"{name}.labels.gz"), "labels"))
             if src.is_file()]
    for _, target in pairs:
        if target.is_dir():
            raise InputError(f"cannot write {target}: it is a folder")
    copies = []
    for src, target in pairs:
        try:
            with gzip.open(src, "rb") as fh:
                copies.append((target, fh.read()))
        except (OSError, EOFError) as exc:
            raise InputError(f"cannot copy {src} to {target}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
    fresh = []
    for path, data in copies:  # every file checked before any is written
        if not os.path.lexists(path) or overwrite:
            fresh.append((path, data))
        elif not (path.is_file() and not path.is_symlink()
                  and path.stat().st_size == len(data) and path.read_bytes() == data):
            raise InputError(f"exists and is not the packaged {path.name}: refusing to replace "
                             "it (--force, or overwrite=True, replaces it)", path)
    # every file is written to a temporary first and renamed only when all are: a failed
    # write leaves neither (no network half copied)
    with contextlib.ExitStack() as stack:
        for path, data in fresh:
            tmp = stack.enter_context(atomic_path(path))
            try:
                tmp.write_bytes(data)
            except OSError as exc:
                raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return [path for path, _ in copies]
