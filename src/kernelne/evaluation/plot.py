"""``kernelne plot``: a 2-D map of an embedding, coloured by label.

Projections: PCA, t-SNE (scikit-learn; PCA to at most 50 dimensions first), UMAP if
``umap-learn`` is installed. Large embeddings are sampled (seeded) to ``sample`` points; a
multi-label node is coloured by its first label; unlabelled nodes are grey.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kernelne.errors import InputError

PROJECTIONS = ("pca", "tsne", "umap")


def project(vectors: np.ndarray, method: str = "pca", seed: int = 0) -> np.ndarray:
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


def plot_embedding(embedding: Any, labels: Any = None, path: str | Path = "map.png", *,
                   method: str = "pca", sample: int = 20000, seed: int = 0,
                   title: str | None = None, notes: bool = False) -> Path:
    """Draw the map of ``embedding`` (anything the evaluation takes) and write ``path``.

    Labels that match none of the embedding's nodes raise :class:`InputError`; with
    ``notes``, a partial match prints a ``kernelne: note:`` line with the counts to stderr.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kernelne.evaluation.classification import read_node_labels
    from kernelne.evaluation.embeddings import as_embedding
    from kernelne.outputs import atomic_path

    if method not in PROJECTIONS:
        raise InputError(f"unknown projection {method!r} (use {', '.join(PROJECTIONS)})")
    image_format = check_image_suffix(path)
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
    colour = np.full(len(keep), -1)
    names: list[str] = []
    if labels is not None:
        label_nodes, Y = read_node_labels(labels) if isinstance(labels, (str, Path)) else labels
        first = {str(n): int(Y[i].indices[0]) for i, n in enumerate(label_nodes)
                 if Y[i].nnz}
        _check_label_match(first, nodes, labels, notes)
        colour = np.array([first.get(str(nodes[i]), -1) for i in keep])
        names = [str(k) for k in range(Y.shape[1])]
    xy = project(vectors[keep], method, seed)
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
    ax.set_title(title or f"{method.upper()} map of {len(keep):,} of {len(vectors):,} nodes")
    fig.tight_layout()
    path = Path(path)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=image_format, dpi=110)
    plt.close(fig)
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
