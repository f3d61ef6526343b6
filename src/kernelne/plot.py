"""``kernelne plot``: a 2-D map of an embedding, coloured by label.

Projections: PCA, t-SNE (scikit-learn; PCA to 50 dimensions first), UMAP if ``umap-learn`` is
installed. Large embeddings are sampled (seeded) to ``sample`` points; a multi-label node is
coloured by its first label; unlabelled nodes are grey.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kernelne.errors import InputError

PROJECTIONS = ("pca", "tsne", "umap")


def project(vectors: np.ndarray, method: str = "pca", seed: int = 0) -> np.ndarray:
    """2-D coordinates of the rows of ``vectors``."""
    from sklearn.decomposition import PCA

    X = np.asarray(vectors, dtype=np.float64)
    if method == "pca":
        return PCA(n_components=2, random_state=seed).fit_transform(X)
    if method == "tsne":
        from sklearn.manifold import TSNE

        if X.shape[1] > 50:
            X = PCA(n_components=50, random_state=seed).fit_transform(X)
        return TSNE(n_components=2, init="pca", random_state=seed,
                    perplexity=min(30.0, max(5.0, (len(X) - 1) / 3))).fit_transform(X)
    if method == "umap":
        try:
            import umap
        except ImportError:
            raise InputError("--method umap needs the umap-learn package "
                             "(pip install umap-learn)") from None
        return umap.UMAP(n_components=2, random_state=seed).fit_transform(X)
    raise InputError(f"unknown projection {method!r} (use {', '.join(PROJECTIONS)})")


def plot_embedding(embedding: Any, labels: Any = None, path: str | Path = "map.png", *,
                   method: str = "pca", sample: int = 20000, seed: int = 0,
                   title: str | None = None) -> Path:
    """Draw the map of ``embedding`` (anything the evaluation takes) and write ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kernelne.evaluation.classification import read_node_labels
    from kernelne.evaluation.embeddings import as_embedding
    from kernelne.outputs import atomic_path

    vectors, nodes = as_embedding(embedding)
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
        fig.savefig(tmp, format=path.suffix.lstrip(".") or "png", dpi=110)
    plt.close(fig)
    return path


def cmd_plot(args) -> int:
    from kernelne.outputs import check_output_path

    check_output_path(args.output, [args.embedding, args.labels])
    out = plot_embedding(args.embedding, args.labels, args.output, method=args.method,
                         sample=args.sample, seed=args.seed)
    print(f"wrote {out}")
    return 0


def register(sub) -> None:
    """Add ``kernelne plot`` to the CLI."""
    p = sub.add_parser("plot", help="draw a 2-D map of an embedding, coloured by label",
                       description="Project an embedding to 2-D (PCA, t-SNE or UMAP) and draw "
                       "it, coloured by each node's (first) label.")
    p.add_argument("embedding", help="embedding file (word2vec text or .npy)")
    p.add_argument("--labels", default=None, help="label file, 'node label' per line")
    p.add_argument("-o", "--output", required=True, help="image file (.png, .pdf, .svg)")
    p.add_argument("--method", default="pca", choices=PROJECTIONS, help="projection (pca)")
    p.add_argument("--sample", type=int, default=20000, help="at most this many points")
    p.add_argument("--seed", type=int, default=0, help="seed of sampling and projection")
    p.set_defaults(func=cmd_plot)
