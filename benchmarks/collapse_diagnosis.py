"""Why KernelNE collapses on dense graphs: trajectories of the rows during training.

For each run, every few chunks: the neighbour AUC and the rows' shape statistics of
:mod:`kernelne.engine.diagnostics`, the median row norms of A and B, and the kernel values of
sampled
edges (positives) and random pairs (negatives); the loss history of the fit; Micro-F1 at 50%
at the end. Writes ``docs/figures/collapse_*.png`` and prints a table (docs/COLLAPSE.md).

    kernelne generate 10000 330000 40 0.6 -o dense --seed 1
    python benchmarks/collapse_diagnosis.py --dense /tmp/dense
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from kernelne import KernelNE, load_graph  # noqa: E402
from kernelne.engine.diagnostics import embedding_health, sample_edges  # noqa: E402
from kernelne.evaluation import evaluate_node_classification  # noqa: E402
from kernelne.graphs.datasets import find_data_dir  # noqa: E402

RUNS = [  # (label, graph key, KernelNE parameters)
    ("dense, Gauss sigma^2=2 (paper)", "dense", {"kernel": "gauss", "robust": False}),
    ("dense, Sch alpha=1 (paper)", "dense", {"kernel": "schoenberg", "robust": False}),
    ("dense, Gauss robust", "dense", {"kernel": "gauss"}),
    ("dense, Sch robust", "dense", {"kernel": "schoenberg"}),
    ("cora, Gauss sigma^2=2 (paper)", "cora", {"kernel": "gauss", "robust": False}),
]


def kernel_values(model: KernelNE, A, B, pairs: np.ndarray) -> np.ndarray:
    s = ((A[pairs[:, 0]] - B[pairs[:, 1]]) ** 2).sum(axis=1) * model.kernel_scale_now
    out = np.zeros(len(pairs))
    for kern in model.kernel_dictionary():
        out += np.exp(-s / kern.param**2) if kern.kind == "gauss" else (1 + s) ** -kern.param
    return out / len(model.kernel_dictionary())


def trace(label: str, graph, labels: str, params: dict, every: int) -> dict:
    rng = np.random.default_rng(0)
    pos = sample_edges(graph.indptr, graph.indices, 3000, rng)
    neg = rng.integers(0, graph.n_nodes, (3000, 2))
    model = KernelNE(random_state=0, workers=2, **params)
    model.kernel_scale_now = 1.0
    rows: list[dict] = []
    calls = {"n": 0, "restarts": 0}

    def monitor(pairs, A, B):
        if rows and pairs < rows[-1]["pairs"]:  # a robust restart: the kernel was narrowed
            model.kernel_scale_now *= 8.0
            rows.append({"restart": True, "pairs": pairs})
        calls["n"] += 1
        if calls["n"] % every:
            return
        h = embedding_health(A, B, graph.indptr, graph.indices)
        rows.append({
            "pairs": pairs, "auc": h.neighbour_auc, "offset": h.offset_ratio,
            "top": h.top_direction_share,
            "normA": float(np.median(np.linalg.norm(A, axis=1))),
            "normB": float(np.median(np.linalg.norm(B, axis=1))),
            "kpos": float(kernel_values(model, A, B, pos).mean()),
            "kneg": float(kernel_values(model, A, B, neg).mean()),
        })

    model.fit(graph, monitor=monitor)
    f1 = evaluate_node_classification(
        (model.embedding_, model.nodes_), labels, ratios=[0.5], repeats=3, n_jobs=1
    ).value("micro_f1")
    print(f"{label:34} Micro-F1@50% {f1:.3f}  kernel scale {model.kernel_scale_:g}  "
          f"final {model.health_}", flush=True)
    return {"label": label, "rows": [r for r in rows if "restart" not in r],
            "restarts": [r["pairs"] for r in rows if "restart" in r],
            "loss": model.loss_history_.tolist(), "f1": f1, "scale": model.kernel_scale_}


def plot(results: list[dict], out: Path) -> None:
    panels = [("auc", "neighbour AUC (0.5 = chance)"), ("offset", "offset ratio of A"),
              ("top", "top-direction share of B"), ("kpos", "mean kernel, edges"),
              ("kneg", "mean kernel, random pairs"), ("normA", "median |A row|")]
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5))
    for ax, (key, title) in zip(axes.flat, panels, strict=True):
        for res in results:
            rows = res["rows"]
            if not rows:
                continue
            total = res["loss"][-1][0]
            x = [r["pairs"] / total for r in rows]
            # a restart begins a new line: split where the pair count falls
            cut = [i for i in range(1, len(x)) if x[i] < x[i - 1]]
            for seg in np.split(np.arange(len(x)), cut):
                ax.plot([x[i] for i in seg], [rows[i][key] for i in seg],
                        label=res["label"] if seg[0] == 0 else None,
                        color=f"C{results.index(res)}",
                        linestyle="--" if seg[0] == 0 and cut else "-")
        ax.set_title(title)
        ax.set_xlabel("share of the run's pairs")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("KernelNE rows during training (dashed: a robust run's first attempt, "
                 "stopped at its checkpoint)")
    fig.tight_layout()
    fig.savefig(out / "collapse_trajectories.png", dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    for i, res in enumerate(results):
        loss = np.array(res["loss"])
        ax.plot(loss[:, 0] / loss[-1, 0], loss[:, 1], color=f"C{i}", label=res["label"])
        ax.plot(loss[:, 0] / loss[-1, 0], loss[:, 2], color=f"C{i}", linestyle=":")
    ax.set_xlabel("share of the run's pairs")
    ax.set_ylabel("mean term loss per chunk")
    ax.set_title("loss_history_: positive (1-k)^2 solid, negative k^2 dotted")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "collapse_loss.png", dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dense", required=True,
                    help="prefix of `kernelne generate` output (dense graph)")
    ap.add_argument("--data", default=None,
                    help="data folder (default: $KERNELNE_DATA, else the packaged networks)")
    ap.add_argument("--out", default="docs/figures")
    ap.add_argument("--every", type=int, default=4, help="chunks between measurements")
    ap.add_argument("--json", default=None, help="also write the measurements here")
    args = ap.parse_args()
    data = find_data_dir(args.data)
    graphs = {
        "dense": (args.dense + ".edges", args.dense + ".labels"),
        "cora": (f"{data}/cora.edges.gz", f"{data}/cora.labels.gz"),
    }
    loaded = {key: load_graph(path) for key, (path, _) in graphs.items()}
    results = []
    for label, key, params in RUNS:
        every = args.every if key == "dense" else 1
        results.append(trace(label, loaded[key], graphs[key][1], params, every))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plot(results, out)
    if args.json:
        Path(args.json).write_text(json.dumps(results))
    print(f"wrote {out}/collapse_trajectories.png, collapse_loss.png")


if __name__ == "__main__":
    main()
