"""Label-free evidence for choosing KernelNE's setting, against node classification.

For each graph, every candidate setting (``--candidates``: by default ``kernelne tune``'s seven
defaults and the dense-graph setting ``sch+shrink+win5``) is

* fitted on the whole graph (``workers=1``, ``random_state=--seed``) and scored by node
  classification (one-vs-rest logistic regression, top-k rule, ``--repeats`` splits at 10% and
  50% of the labels, with C = 1 and with C chosen per split), and with C = 1 again after the
  rows are rescaled to each median row norm of ``--target-norms`` (the output scale);
* fitted briefly (``--short-walks`` walks per node) on a residual graph with 10% of the edges
  held out, and scored without labels by the ROC-AUC of the held-out edges against as many
  non-edges, with two pair scores: the cosine of the two rows and minus their distance.

It then prints per graph the Spearman rank correlation of each label-free score with each
classification column, over the candidates, and which candidate each criterion would choose.
Graph names as in ``bench_loss_options.py`` (``cora``, ``citeseer``, ``dblp``, its planted
shorthands, or ``sbm:N:M:K:MU:SEED``), ``wsbm:N:M:K:MU:SEED`` (that planted partition with
log-normal edge weights, independent of the communities), ``lfr:N:DEG:MU:SEED`` (networkx's
LFR benchmark: power-law degrees of mean about ``DEG`` and community sizes, a share ``MU`` of
each node's edges leaving its community) and the shorthands in :data:`UNSEEN`. Usage:

    python benchmarks/bench_auto_setting.py --graphs cora citeseer --json auto.json
    python benchmarks/bench_auto_setting.py --summarize a.json b.json
    python benchmarks/bench_auto_setting.py --cost cora --repeats 3 [--walks-per-node 10]
    python benchmarks/bench_auto_setting.py --scales DIR --graphs cora ... --target-norms 2 3 4
    python benchmarks/bench_auto_setting.py --compare auto.json --summarize a.json b.json
    python benchmarks/bench_auto_setting.py --graphs citeseer --candidates auto loglik \\
        --seeds 1 2 3 4 5 --short-walks 0 --target-norms 2.5 --json s.json
    python benchmarks/bench_auto_setting.py --noise s.json

``--cost G`` fits nothing else: it times the library's default ``KernelNE()`` against the
paper's setting with rows as trained (``setting="given", normalize="none"``) on graph ``G``
(a name above or a graph file), alternating (``--paper-first``: the paper's setting first),
``--repeats`` times each after a warm-up, and prints the medians and their ratio. ``--scales
DIR`` fits nothing either: it reads the rows ``--save-dir DIR`` wrote
(``GRAPH.CANDIDATE.npy``, as trained) and prints, per graph, the Micro-F1 with C chosen
and, for each target median norm of ``--target-norms``, with C = 1 after the rows are
rescaled to it. ``--compare AUTO.json --summarize A.json ...`` prints, per
graph, the default (the ``auto`` candidate of ``AUTO.json``) against the best of ``kernelne
tune``'s seven defaults (in the other files; C = 1 on rows rescaled to the first target norm,
as ``KernelNE(setting="given")`` gives them, and C chosen), and the paper's setting with its
rows as trained (``squared``), before the output scale. ``--seeds`` fits every candidate
once per seed; ``--noise`` then prints, per graph and column, the candidate furthest ahead of
the default and the 95% interval of that lead over the seeds (:func:`seed_noise`).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import bench_loss_options
import networkx as nx
import numpy as np
from bench_loss_options import make_model
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from kernelne.evaluation import evaluate_node_classification
from kernelne.evaluation.classification import SELECT_CS
from kernelne.evaluation.validation import held_out_edges
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.graphs.graph import Graph

CANDIDATES = ["squared", "sch", "multi", "loglik", "sch+loglik", "multi+loglik", "sch+shrink",
              "sch+shrink+win5"]
COLUMNS = ["10%", "50%", "10% C chosen", "50% C chosen"]
#: graphs no setting or rule was chosen on: heavy-tailed degrees, a density between the sparse
#: and dense planted partitions, and edge weights
UNSEEN = {
    "lfr-dense": "lfr:4000:40:0.5:11",
    "lfr-sparse": "lfr:5000:12:0.4:12",
    "sbm-mid": "sbm:6000:120000:15:0.55:7",
    "wsbm": "wsbm:4000:24000:16:0.4:8",
}


def load_graph_and_labels(name: str):
    """A graph and its labels: :data:`UNSEEN` and the ``lfr:`` / ``wsbm:`` specs here, the
    rest from ``bench_loss_options``."""
    spec = UNSEEN.get(name, name)
    kind, *fields = spec.split(":")
    if kind == "wsbm":
        n, m, k, mu, seed = fields
        edges, comm = planted_partition_sbm(int(n), int(m), int(k), float(mu), int(seed))
        weights = np.random.default_rng(int(seed)).lognormal(0.0, 1.0, len(edges))
        return Graph.from_edges(edges[:, 0], edges[:, 1], weights, n_nodes=int(n)), comm
    if kind == "lfr":
        n, deg, mu, seed = int(fields[0]), float(fields[1]), float(fields[2]), int(fields[3])
        G = nx.LFR_benchmark_graph(n, 2.5, 1.5, mu, average_degree=deg,
                                   max_degree=int(deg * 10), min_community=n // 50,
                                   max_community=n // 8, seed=seed)
        G.remove_edges_from(nx.selfloop_edges(G))
        comm = {v: i for i, c in enumerate({frozenset(G.nodes[v]["community"]) for v in G})
                for v in c}
        edges = np.array(G.edges(), dtype=np.int64)
        return (Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=n),
                np.array([comm[v] for v in range(n)]))
    return bench_loss_options.load_graph_and_labels(spec)


def pair_scores(A: np.ndarray, pairs: np.ndarray) -> dict[str, np.ndarray]:
    """Cosine and minus the distance of the rows of each pair."""
    X, Y = A[pairs[:, 0]].astype(np.float64), A[pairs[:, 1]].astype(np.float64)
    nx, ny = np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1)
    return {"cos": (X * Y).sum(1) / np.maximum(nx * ny, 1e-12),
            "dist": -np.linalg.norm(X - Y, axis=1)}


def classification(A, labels, graph, args, select_C=None) -> list[float]:
    table = evaluate_node_classification(A, labels, graph.nodes, ratios=(0.1, 0.5),
                                         repeats=args.repeats, seed=0, n_jobs=1,
                                         select_C=select_C)
    return [table.value("micro_f1", "0.1"), table.value("micro_f1", "0.5")]


def run_graph(name: str, args: argparse.Namespace) -> list[dict]:
    graph, labels = load_graph_and_labels(name)
    print(f"# {name}: {graph.summary()}", flush=True)
    split, residual, _, _ = held_out_edges(graph, 0.1, args.seed)
    pairs, y = split.test_pairs()
    records = []
    for cand in args.candidates:
        rec: dict = {"graph": name, "candidate": cand}
        model = make_model(cand, args, args.seed)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(graph)
        rec["fit_s"] = time.perf_counter() - start
        A = np.asarray(model.embedding_)
        if args.save_dir is not None:  # the rows as trained, for other scores later
            args.save_dir.mkdir(parents=True, exist_ok=True)
            np.save(args.save_dir / f"{name}.{cand}.npy", A / np.float32(model.output_scale_))
        rec["narrowed"] = len(model.narrowed_)
        rec["f1"] = (classification(A, labels, graph, args)
                     + classification(A, labels, graph, args, SELECT_CS))
        norm = float(np.median(np.linalg.norm(A, axis=1)))
        rec["median_norm"] = norm
        rec["setting"] = getattr(model, "setting_", {}).get("name")
        rec["scaled"] = {str(t): classification(A * (t / norm), labels, graph, args)
                         for t in args.target_norms}
        if args.short_walks == 0:  # no label-free criterion
            records.append(rec)
            print(f"{name:12s} {cand:16s} f1 " + " ".join(f"{v:.4f}" for v in rec["f1"])
                  + f" | setting {rec['setting']} | fit {rec['fit_s']:.1f} s", flush=True)
            continue
        short = make_model(cand, argparse.Namespace(**{**vars(args),
                                                       "walks_per_node": args.short_walks}),
                           args.seed)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            short.fit(residual)
        rec["short_s"] = time.perf_counter() - start
        scores = pair_scores(np.asarray(short.embedding_), pairs)
        rec["auc"] = {k: float(roc_auc_score(y, s)) for k, s in scores.items()}
        records.append(rec)
        print(f"{name:12s} {cand:16s} f1 " + " ".join(f"{v:.4f}" for v in rec["f1"])
              + f" | norm {norm:.2f} scaled " + " ".join(
                  f"{t}:{v[0]:.4f}/{v[1]:.4f}" for t, v in rec["scaled"].items())
              + " | auc " + " ".join(f"{k} {v:.4f}" for k, v in rec["auc"].items())
              + f" | fit {rec['fit_s']:.1f} s short {rec['short_s']:.1f} s"
              + (f" narrowed x{rec['narrowed']}" if rec["narrowed"] else ""), flush=True)
    return records


def summarize(records: list[dict]) -> str:
    lines = ["| graph | criterion | " + " | ".join(f"rho {c}" for c in COLUMNS)
             + " | chosen | chosen's gap to best " + " / ".join(COLUMNS) + " |",
             "|---|---|" + "---|" * len(COLUMNS) + "---|---|"]
    for name in dict.fromkeys(r["graph"] for r in records):
        rows = [r for r in records if r["graph"] == name]
        f1 = np.array([r["f1"] for r in rows])
        for crit in rows[0].get("auc", {}):
            auc = np.array([r["auc"][crit] for r in rows])
            rhos = [spearmanr(auc, f1[:, j]).statistic for j in range(f1.shape[1])]
            pick = int(np.argmax(auc))
            gaps = f1[pick] - f1.max(0)
            lines.append(f"| {name} | {crit} | " + " | ".join(f"{r:+.2f}" for r in rhos)
                         + f" | {rows[pick]['candidate']} | "
                         + " / ".join(f"{g:+.4f}" for g in gaps) + " |")
    return "\n".join(lines)


def cost(args: argparse.Namespace) -> None:
    """Median fit seconds of ``KernelNE()`` and of the paper's setting, alternating."""
    from kernelne import KernelNE, load_graph

    name = args.cost
    graph = load_graph(name) if Path(name).exists() else load_graph_and_labels(name)[0]
    print(f"# {name}: {graph.summary()}", flush=True)
    common = {"walks_per_node": args.walks_per_node, "workers": args.workers,
              "random_state": args.seed}
    fits = {"auto": lambda: KernelNE(**common),
            "paper": lambda: KernelNE(**common, setting="given", normalize="none")}
    if args.paper_first:
        fits = dict(reversed(fits.items()))
    seconds: dict[str, list[float]] = {k: [] for k in fits}
    for i in range(1 - args.warmup, args.repeats + 1):  # round 0 warms up (numba, page cache)
        for label, make in fits.items():
            model = make()
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(graph)
            elapsed = time.perf_counter() - start
            if i > 0:
                seconds[label].append(elapsed)
            print(f"{label:6s} run {i} {elapsed:8.1f} s setting {model.setting_['name']}"
                  f" scale {model.output_scale_:.3g}" + (" (warm-up)" if i == 0 else ""),
                  flush=True)
    auto, paper = (float(np.median(seconds[k])) for k in ("auto", "paper"))
    print(f"{name}: KernelNE() {auto:.1f} s, paper's setting {paper:.1f} s, "
          f"ratio {auto / paper:.2f} (medians of {args.repeats})")


def scales(args: argparse.Namespace) -> None:
    """C = 1 at each target median norm against C chosen, for the rows in ``args.scales``."""
    print("| graph | rows | norm | C chosen 10% / 50% | "
          + " | ".join(f"C = 1 at norm {t:g}" for t in args.target_norms) + " |")
    for name in args.graphs:
        graph, labels = load_graph_and_labels(name)
        for path in sorted(args.scales.glob(f"{name}.*.npy")):
            A = np.load(path)
            norm = float(np.median(np.linalg.norm(A, axis=1)))
            chosen = classification(A, labels, graph, args, SELECT_CS)
            cells = [classification(A * (t / norm), labels, graph, args)
                     for t in args.target_norms]
            print(f"| {name} | {path.stem.split('.', 1)[1]} | {norm:.2f} | "
                  f"{chosen[0]:.4f} / {chosen[1]:.4f} | "
                  + " | ".join(f"{c[0]:.4f} / {c[1]:.4f}" for c in cells) + " |", flush=True)


SEVEN = CANDIDATES[:7]  # kernelne tune's seven defaults (KERNELNE_DEFAULTS)


def compare(auto: list[dict], records: list[dict]) -> str:
    """Per graph: the default's four scores, its gap to the best of the seven, and the paper's
    setting as trained at C = 1."""
    lines = ["| graph | setting kept | " + " | ".join(COLUMNS) + " | paper's setting, rows as "
             "trained, 10% / 50% at C = 1 |", "|---|---|" + "---|" * len(COLUMNS) + "---|"]
    for rec in auto:
        rows = {r["candidate"]: r for r in records
                if r["graph"] == rec["graph"] and r["candidate"] in SEVEN}
        if not rows:
            continue
        target = next(iter(next(iter(rows.values()))["scaled"]))
        seven = {c: r["scaled"][target] + r["f1"][2:4] for c, r in rows.items()}
        cells = []
        for j, value in enumerate(rec["f1"]):
            best = max(seven, key=lambda c: seven[c][j])
            cells.append(f"{value:.4f} ({value - seven[best][j]:+.4f} vs {best})")
        paper = rows.get("squared", {}).get("f1", [float("nan")] * 2)
        lines.append(f"| {rec['graph']} | {rec.get('setting')} | " + " | ".join(cells)
                     + f" | {paper[0]:.4f} / {paper[1]:.4f} |")
    return "\n".join(lines)


def seed_noise(records: list[dict]) -> str:
    """Per graph and column: the default against each other candidate over the seeds.

    For seeds :math:`s = 1..n` the paired gap is :math:`d_s = F_s(\\text{auto}) - F_s(c)`
    (each :math:`F_s` a mean over the splits, the splits the same for every fit); the cell
    shows the candidate with the lowest mean gap :math:`\\bar d` and its 95% t-interval
    :math:`\\bar d \\pm t_{.975, n-1}\\, s_d / \\sqrt{n}`. The gap is within noise when the
    interval reaches 0.
    """
    from scipy.stats import t as student_t

    lines = ["| graph | seeds | default " + " / ".join(COLUMNS) + " | "
             + " | ".join(f"lowest gap {c} [95% CI]" for c in COLUMNS) + " |",
             "|---|---|---|" + "---|" * len(COLUMNS)]
    for name in dict.fromkeys(r["graph"] for r in records):
        by_cand: dict[str, dict[int, list[float]]] = {}
        for r in records:
            if r["graph"] == name:
                target = next(iter(r["scaled"]))
                by_cand.setdefault(r["candidate"], {})[r["seed"]] = (r["scaled"][target]
                                                                     + r["f1"][2:4])
        auto = by_cand.pop("auto")
        seeds = sorted(auto)
        base = np.array([auto[s] for s in seeds])
        cells = []
        for j in range(len(COLUMNS)):
            worst = None
            for cand, scores in by_cand.items():
                d = base[:, j] - np.array([scores[s][j] for s in seeds])
                half = student_t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
                if worst is None or d.mean() < worst[1]:
                    worst = (cand, d.mean(), half)
            cand, mean, half = worst
            cells.append(f"{mean:+.4f} {cand} [{mean - half:+.4f}, {mean + half:+.4f}]")
        lines.append(f"| {name} | {len(seeds)} | "
                     + " / ".join(f"{v:.4f}" for v in base.mean(0)) + " | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graphs", nargs="+", default=["cora", "citeseer"])
    ap.add_argument("--candidates", nargs="+", default=CANDIDATES)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", nargs="+", type=int, default=None,
                    help="fit every candidate once per seed (instead of --seed)")
    ap.add_argument("--noise", type=Path, nargs="+", default=None, metavar="JSON",
                    help="the default against each candidate over the seeds of --seeds runs")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--short-walks", type=int, default=10, help="0: no label-free criterion")
    ap.add_argument("--target-norms", nargs="+", type=float, default=[4.0, 8.0])
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--summarize", type=Path, nargs="+", default=None)
    ap.add_argument("--cost", default=None, metavar="GRAPH")
    ap.add_argument("--scales", type=Path, default=None, metavar="DIR")
    ap.add_argument("--compare", type=Path, default=None, metavar="AUTO_JSON")
    ap.add_argument("--save-dir", type=Path, default=None,
                    help="write each fit's rows as trained (divided by output_scale_) here")
    ap.add_argument("--walks-per-node", type=int, default=80)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--warmup", type=int, choices=[0, 1], default=1,
                    help="--cost: 1 fits each once before the timed runs")
    ap.add_argument("--paper-first", action="store_true",
                    help="--cost: each round fits the paper's setting first")
    args = ap.parse_args()
    for key, value in {"walk_length": 10, "window": 10, "dim": 128, "subsample": 1e-3}.items():
        setattr(args, key, value)
    if args.cost:
        cost(args)
        return
    if args.scales:
        scales(args)
        return
    if args.noise:
        print(seed_noise([r for p in args.noise for r in json.loads(p.read_text())["records"]]))
        return
    if args.summarize:
        records = [r for p in args.summarize for r in json.loads(p.read_text())["records"]]
        if args.compare:
            print(compare(json.loads(args.compare.read_text())["records"], records))
        else:
            print(summarize(records))
        return
    records = []
    for name in args.graphs:
        for seed in args.seeds or [args.seed]:
            args.seed = seed
            records += [{**r, "seed": seed} for r in run_graph(name, args)]
        if args.json:
            args.json.write_text(json.dumps({"records": records}, indent=1))
    print(summarize(records))


if __name__ == "__main__":
    main()
