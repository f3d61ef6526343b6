"""``kernelne plot``: a 2-D map of an embedding, coloured by label, as an image or as a
self-contained interactive HTML page (plotly).

Projections: PCA, t-SNE (scikit-learn; PCA to at most 50 dimensions first), UMAP if
``umap-learn`` is installed. Large embeddings are sampled (seeded) to ``sample`` points; a
multi-label node is coloured by its first label; unlabelled nodes are grey.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from kernelne.errors import InputError

PROJECTIONS = ("pca", "tsne", "umap")


@contextlib.contextmanager
def elapsed_bar(desc: str, enabled: bool) -> Iterator[None]:
    """While the block runs, a line on stderr counting its seconds (for one long call, such
    as t-SNE, whose own steps cannot be counted); nothing if not ``enabled``."""
    if not enabled:
        yield
        return
    from tqdm.auto import tqdm

    bar = tqdm(desc=desc, bar_format="{desc}: {elapsed} elapsed", file=sys.stderr, leave=False)
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(1.0):
            bar.refresh()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.close()


def project(vectors: np.ndarray, method: str = "pca", seed: int = 0,
            progress: bool = False) -> np.ndarray:
    """2-D coordinates of the rows of ``vectors``.

    Any number of rows and columns works: one row is drawn at the origin, and a
    one-dimensional PCA or embedding gets a zero second coordinate. t-SNE first reduces the
    rows by PCA to at most 50 dimensions (never more than the data has: rows - 1 and columns)
    and keeps its perplexity below the number of rows.
    """
    from sklearn.decomposition import PCA

    if method not in PROJECTIONS:
        raise InputError(f"unknown projection {method!r} (use {', '.join(PROJECTIONS)})")
    X = np.asarray(vectors, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise InputError(f"nothing to project: the embedding is {X.shape}, not rows x columns")
    n, d = X.shape
    if n == 1:
        return np.zeros((1, 2))
    if method == "pca":
        return _two_columns(PCA(n_components=min(2, n, d), random_state=seed).fit_transform(X))
    if method == "tsne":
        from sklearn.manifold import TSNE

        k = min(50, n - 1, d)
        if k < d:
            X = PCA(n_components=k, random_state=seed).fit_transform(X)
        perplexity = min(30.0, max(5.0, (n - 1) / 3), n - 1.0)
        with elapsed_bar(f"t-SNE of {n:,} points", progress):
            return TSNE(n_components=2, init="pca" if X.shape[1] >= 2 else "random",
                        random_state=seed, perplexity=perplexity).fit_transform(X)
    try:
        import umap
    except ImportError:
        raise InputError("--projection umap needs the umap-learn package "
                         "(pip install umap-learn)") from None
    if n < 4:
        raise InputError(f"UMAP needs at least 4 points, got {n} (use --projection pca or "
                         "tsne)")
    with elapsed_bar(f"UMAP of {n:,} points", progress):
        return umap.UMAP(n_components=2, random_state=seed,
                         n_neighbors=min(15, n - 1)).fit_transform(X)


def check_image_suffix(path: str | Path) -> str:
    """The image format of ``path``'s suffix (``png`` without one); :class:`InputError` naming
    the formats matplotlib writes if it writes none by that name."""
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = Path(path).suffix.lstrip(".").lower() or "png"
    formats = FigureCanvasBase.get_supported_filetypes()
    if suffix not in formats:
        raise InputError(f"cannot draw a .{suffix} image (formats: "
                         f"{', '.join(sorted(formats))})", path)
    return suffix


def _two_columns(xy: np.ndarray) -> np.ndarray:
    """``xy`` with a zero second column if it has only one."""
    return xy if xy.shape[1] == 2 else np.column_stack([xy, np.zeros(len(xy))])


def is_html(path: str | Path) -> bool:
    """Whether ``path`` names an interactive page (``.html`` or ``.htm``, any case)."""
    return Path(path).suffix.lower() in (".html", ".htm")


class _Map:
    """The points of a map: 2-D coordinates, node ids, label index (-1: none), label names."""

    def __init__(self, embedding: Any, labels: Any, method: str, sample: int, seed: int,
                 notes: bool, progress: bool = False) -> None:
        from kernelne.evaluation.classification import read_node_labels
        from kernelne.evaluation.embeddings import as_embedding

        if method not in PROJECTIONS:
            raise InputError(f"unknown projection {method!r} (use {', '.join(PROJECTIONS)})")
        if int(sample) < 1:
            raise InputError(f"sample must be at least 1 point, got {sample}")
        vectors, nodes = as_embedding(embedding)
        if len(vectors) == 0:
            raise InputError("the embedding has no rows: nothing to plot",
                             embedding if isinstance(embedding, (str, Path)) else None)
        rng = np.random.default_rng(seed)
        keep = np.arange(len(vectors))
        if len(keep) > sample:
            keep = np.sort(rng.choice(len(vectors), sample, replace=False))
        self.n_total = len(vectors)
        self.nodes = nodes[keep]
        self.colour = np.full(len(keep), -1)
        self.names: list[str] = []
        if labels is not None:
            label_nodes, Y = (read_node_labels(labels) if isinstance(labels, (str, Path))
                              else labels)
            first = {str(n): int(Y[i].indices[0]) for i, n in enumerate(label_nodes)
                     if Y[i].nnz}
            _check_label_match(first, nodes, labels, notes)
            self.colour = np.array([first.get(str(x), -1) for x in self.nodes])
            self.names = _label_names(labels, Y.shape[1])
        self.xy = project(vectors[keep], method, seed, progress)


def _label_names(labels: Any, k: int) -> list[str]:
    """The names of a label file's labels in its label matrix's column order (the file's own
    tokens); ``0..k-1`` for labels given as arrays."""
    if not isinstance(labels, (str, Path)):
        return [str(j) for j in range(k)]
    from kernelne.graphs.graph import iter_records, map_ids

    _, names = map_ids([fields[1] for _, fields in iter_records(labels)])
    return [str(x) for x in names]


def plot_embedding(embedding: Any, labels: Any = None, path: str | Path = "map.png", *,
                   method: str = "pca", sample: int = 20000, seed: int = 0,
                   title: str | None = None, notes: bool = False,
                   progress: bool = False) -> Path:
    """Draw the map of ``embedding`` (anything the evaluation takes) and write ``path``.

    An ``.html`` path writes the interactive page of :func:`write_map_html`; any other suffix
    an image in that format (matplotlib's formats: ``.png``, ``.pdf``, ``.svg`` ...). A
    multi-label node is coloured by its first label; unlabelled nodes are grey.

    Parameters
    ----------
    embedding : str, Path, estimator, tuple or array-like
        Anything :func:`kernelne.evaluation.embeddings.as_embedding` takes.
    labels : str, Path or (nodes, label matrix), optional
        A ``node label`` file, or node ids and a sparse label matrix.
    path : str or Path, default "map.png"
        The image or page to write (atomically).
    method : {"pca", "tsne", "umap"}, default "pca"
        The 2-D projection.
    sample : int, default 20000
        At most this many points (a seeded sample).
    seed : int, default 0
        Seed of the sample and the projection.
    title : str, optional
        The map's title; default names the projection and the counts.
    notes : bool, default False
        Print a ``kernelne: note:`` line to stderr when only some nodes have labels.
    progress : bool, default False
        Count the seconds of a t-SNE or UMAP projection on stderr.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    InputError
        An image format matplotlib does not write, an unknown projection, a sample below 1,
        an empty embedding, or labels that match none of the embedding's nodes.
    """
    if is_html(path):
        return write_map_html(embedding, labels, path, method=method, sample=sample,
                              seed=seed, title=title, notes=notes, progress=progress)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kernelne.outputs import atomic_path

    if method not in PROJECTIONS:
        raise InputError(f"unknown projection {method!r} (use {', '.join(PROJECTIONS)})")
    image_format = check_image_suffix(path)
    points = _Map(embedding, labels, method, sample, seed, notes, progress)
    xy, colour, names = points.xy, points.colour, points.names
    fig, ax = plt.subplots(figsize=(7.5, 7))
    if (colour < 0).any():
        ax.scatter(*xy[colour < 0].T, s=3, c="lightgrey", label="no label")
    cmap = plt.get_cmap("tab20" if len(names) > 10 else "tab10")
    for k in np.unique(colour[colour >= 0]):
        ax.scatter(*xy[colour == k].T, s=3, color=cmap(k % cmap.N), label=names[k])
    if names and len(names) <= 20:
        ax.legend(markerscale=4, fontsize=8, loc="best", title="label")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title or f"{method.upper()} map of {len(xy):,} of {points.n_total:,} nodes")
    fig.tight_layout()
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=image_format, dpi=110)
    plt.close(fig)
    return path


#: above this many points the page draws with WebGL (``scattergl``) instead of SVG
WEBGL_FROM = 5000


def write_map_html(embedding: Any, labels: Any = None, path: str | Path = "map.html", *,
                   method: str = "pca", sample: int = 20000, seed: int = 0,
                   title: str | None = None, notes: bool = False,
                   progress: bool = False) -> Path:
    """Write an interactive map of ``embedding`` as one self-contained HTML page.

    The page holds plotly.js itself (nothing is fetched: it opens offline); one point per
    node, coloured by the node's (first) label, unlabelled nodes grey; hovering a point
    shows its node id and label; the legend hides and shows labels. Above
    :data:`WEBGL_FROM` points the page draws with WebGL.

    Parameters
    ----------
    embedding : str, Path, estimator, tuple or array-like
        Anything :func:`kernelne.evaluation.embeddings.as_embedding` takes.
    labels : str, Path or (nodes, label matrix), optional
        A ``node label`` file, or node ids and a sparse label matrix.
    path : str or Path, default "map.html"
        The page to write (atomically).
    method : {"pca", "tsne", "umap"}, default "pca"
        The 2-D projection.
    sample : int, default 20000
        At most this many points (a seeded sample).
    seed : int, default 0
        Seed of the sample and the projection.
    title : str, optional
        The page's title; default names the projection and the counts.
    notes : bool, default False
        Print a ``kernelne: note:`` line to stderr when only some nodes have labels.
    progress : bool, default False
        Count the seconds of a t-SNE or UMAP projection on stderr.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    InputError
        plotly is not installed, an unknown projection, a sample below 1, an empty
        embedding, or labels that match no node.
    """
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise InputError("an .html map needs plotly, an extra that kernelne does not install "
                         "by default: pip install 'kernelne[plot]' (an image, .png, .pdf or "
                         ".svg, needs nothing more)", path) from None
    from kernelne.outputs import atomic_path

    points = _Map(embedding, labels, method, sample, seed, notes, progress)
    scatter = go.Scattergl if len(points.xy) > WEBGL_FROM else go.Scatter
    fig = go.Figure()
    groups = [(-1, "no label")] if (points.colour < 0).any() else []
    groups += [(int(k), points.names[k]) for k in np.unique(points.colour[points.colour >= 0])]
    for k, name in groups:
        mask = points.colour == k
        ids = [str(x) for x in points.nodes[mask]]
        marker = {"size": 6, "opacity": 0.85}
        if k < 0:
            marker["color"] = "lightgrey"
        fig.add_trace(scatter(
            x=points.xy[mask, 0].tolist(), y=points.xy[mask, 1].tolist(), mode="markers",
            name=name,
            marker=marker, customdata=[[i, name] for i in ids],
            hovertemplate="node %{customdata[0]}<br>label %{customdata[1]}<extra></extra>"))
    heading = title or (f"{method.upper()} map of {len(points.xy):,} of {points.n_total:,} "
                        "nodes")
    fig.update_layout(title=heading, template="plotly_white", legend_title_text="label",
                      xaxis={"visible": False}, yaxis={"visible": False}, hovermode="closest")
    page = fig.to_html(include_plotlyjs=True, full_html=True, include_mathjax=False,
                       config={"displaylogo": False})
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return path


def _check_label_match(first: dict[str, int], nodes: np.ndarray, labels: Any,
                       notes: bool) -> None:
    """Fail if no embedding node has a label; note the counts of a partial match."""
    import sys

    ids = {str(x) for x in nodes}
    labelled = sum(1 for x in ids if x in first)
    source = labels if isinstance(labels, (str, Path)) else None
    if labelled == 0:
        shown = ", ".join(sorted(first)[:3]) or "none"
        raise InputError(f"none of the {len(first):,} labelled nodes (e.g. {shown}) is a node "
                         f"of the embedding ({len(ids):,} nodes, e.g. "
                         f"{', '.join(str(x) for x in nodes[:3])})", source)
    absent = sum(1 for x in first if x not in ids)
    if notes and (labelled < len(ids) or absent):
        text = f"{labelled:,} of the embedding's {len(ids):,} nodes have a label"
        if labelled < len(ids):
            text += f" ({len(ids) - labelled:,} drawn grey)"
        if absent:
            text += f"; {absent:,} labelled nodes are not in the embedding"
        print(f"kernelne: note: {text}", file=sys.stderr)
