"""Options and summaries shared by the commands that read a graph and fit a model
(``embed``, ``update``, ``convert``, ``demo``): argument groups, the model they describe, and
the lines printed about the graph and the fit."""

from __future__ import annotations

import argparse
import math
import sys

from kernelne.cli.grammar import seed_value
from kernelne.errors import InputError
from kernelne.memory import peak_memory_mb
from kernelne.outputs import positive_count


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The KernelNE options shared by ``embed`` and ``demo``."""
    g = parser.add_argument_group("KernelNE model")
    g.add_argument("--kernel", default="gauss", choices=["gauss", "schoenberg", "sch", "linear",
                   "multi"], help="kernel (linear = the 'NE' ablation; multi = learned mix)")
    g.add_argument("--sigma", type=positive_number, default=math.sqrt(2.0),
                   metavar="SIGMA", help="Gaussian sigma, paper's form exp(-|x-y|^2/sigma^2) "
                   "(default: sqrt 2 = %(default).4f)")
    g.add_argument("--alpha", type=positive_number, default=1.0, metavar="ALPHA",
                   help="Schoenberg alpha")
    g.add_argument("--kernels", default=None, metavar="LIST",
                   help="dictionary for --kernel multi, e.g. gauss:1,gauss:2,sch:1")
    g.add_argument("--dim", type=positive_count, default=128, metavar="D",
                   help="embedding dimension d")
    g.add_argument("--walks-per-node", type=positive_count, default=80, metavar="N",
                   help="walks per node")
    g.add_argument("--walk-length", type=positive_count, default=10, metavar="L",
                   help="walk length")
    g.add_argument("--window", type=positive_count, default=10, metavar="W",
                   help="context window gamma")
    g.add_argument("--negatives", type=positive_count, default=5, metavar="K",
                   help="negative samples k (at least 1)")
    g.add_argument("--lr", type=positive_number, default=0.025, metavar="LR",
                   help="initial learning rate")
    g.add_argument("--min-lr", type=positive_number, default=1e-4, metavar="LR",
                   help="learning-rate floor")
    g.add_argument("--reg", type=non_negative_number, default=0.01, metavar="LAMBDA",
                   help="L2 penalty lambda")
    g.add_argument("--beta-reg", type=non_negative_number, default=0.01, metavar="LAMBDA",
                   help="L2 penalty on kernel weights, --kernel multi")
    g.add_argument("-p", "--p", type=positive_number, default=1.0, metavar="P",
                   help="node2vec return parameter p")
    g.add_argument("-q", "--q", type=positive_number, default=1.0, metavar="Q",
                   help="node2vec in-out parameter q")
    g.add_argument("--epochs", type=positive_count, default=1, metavar="N",
                   help="passes over the walks")
    g.add_argument("--workers", type=positive_count, default=None, metavar="N",
                   help="threads (default: all cores)")
    g.add_argument("--seed", type=seed_value, default=None, metavar="N",
                   help="random seed (1 worker: exact)")
    g.add_argument("--setting", default="auto", choices=["auto", "given"],
                   help="auto: start with the paper's setting and switch to --kernel "
                   "schoenberg --window-shrink when the restart test finds the rows collapsing "
                   "(dense graphs), if --kernel, --sigma, --loss and --window-shrink are left "
                   "at their defaults; given: the options as given")
    g.add_argument("--normalize", default="auto", choices=["auto", "none"],
                   help="auto: rows rescaled by one factor to a median norm of 2.5 (for "
                   "logistic regression at C = 1; cosines, neighbours and k-means are "
                   "unchanged); none: rows as trained")
    g.add_argument("--paper", action="store_true",
                   help="the paper's exact algorithm and setting: --setting given "
                   "--normalize none, and no robust restart with a narrower kernel when the "
                   "rows collapse (`kernelne docs collapse`)")
    g.add_argument("--shared-negatives", action="store_true",
                   help="one set of negatives per center for all its contexts, one weighted "
                   "step (several times faster on large graphs; Micro-F1 about 0.005 lower "
                   "on Cora and CiteSeer)")
    g.add_argument("--negative-pool", type=pool_setting, default="auto", metavar="Q",
                   help="each walk's pairs pick their k negatives from a pool of Q draws made "
                   "at the walk's start (0: k fresh draws per pair, the paper's; auto: "
                   f"128 on graphs of 100,000+ nodes, 0 below; at most {MAX_POOL:,})")
    g.add_argument("--beta-update", default="projected", choices=["projected", "simplex"],
                   help="kernel weights of --kernel multi: projected SGD (paper) or on the "
                   "simplex by mirror descent")
    g.add_argument("--beta-select", default="train", choices=["train", "uniform", "validation"],
                   help="kernel weights of --kernel multi: train (learned by SGD), "
                   "uniform (fixed 1/m) or validation (each single kernel, uniform and train "
                   "fitted and scored on 20%% held-out edges; the best refitted on the whole "
                   "graph; `kernelne docs method`, section 4)")
    g.add_argument("--loss", default="squared", choices=["squared", "loglik"],
                   help="squared (the paper's (y - k)^2) or loglik (-log k for a "
                   "context, -log(1 - k) for a negative; k clipped to [1e-4, 0.99])")
    g.add_argument("--window-shrink", action="store_true",
                   help="word2vec's shrinking window: each center draws its window uniformly "
                   "in 1..--window, so nearer contexts weigh more")
    g.add_argument("--subsample", type=subsample_threshold, default=0.0, metavar="T",
                   help="word2vec's frequent-node subsampling: drop an occurrence of a node "
                   "with probability 1 - sqrt(T / its frequency in the walks); 0: off")
    g.add_argument("--propagate", nargs="?", const="on", default=None, type=propagate_setting,
                   metavar="SPEC",
                   help="spectrally propagate the final rows (ProNE's enhancement: a Chebyshev "
                   "band-pass filter on the normalised Laplacian, then a thin SVD); alone: "
                   "order=10,mu=0.2,theta=0.5, or give any of those keys, e.g. "
                   "--propagate order=10,mu=0.2,theta=0.5; off: none (ProNE's factorisation "
                   "only, with --method prone); works with every --method")


#: the largest --negative-pool: every walk draws its pool, so a pool beyond the negatives a
#: walk uses (at most walk length x 2 window x k) only costs draws; 10^6 is far beyond that
MAX_POOL = 1_000_000


def pool_setting(text: str) -> int | str:
    """``--negative-pool``'s value: ``auto`` or a pool size in 0..:data:`MAX_POOL`."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected auto or a pool size >= 0, got {text!r}")
    if value > MAX_POOL:
        raise argparse.ArgumentTypeError(
            f"{value:,}: at most {MAX_POOL:,} (every walk draws the whole pool at its start, and "
            "a walk uses at most walk length x 2 window x k negatives: a larger pool only "
            "costs time)")
    return value


def propagate_setting(text: str) -> str:
    """``--propagate``'s value, checked (kept as text: the estimators read it)."""
    from kernelne.engine.propagation import parse_propagation

    try:
        parse_propagation(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("propagate: ")) from None
    return text


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text}: not a finite number")
    return value


def positive_number(text: str) -> float:
    """argparse type of a rate or kernel width: a finite number > 0."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: must be greater than 0")
    return value


def non_negative_number(text: str) -> float:
    """argparse type of a penalty: a finite number >= 0."""
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be 0 or more")
    return value


def subsample_threshold(text: str) -> float:
    """argparse type of ``--subsample``: a threshold in [0, 1) (0 = off)."""
    value = _number(text)
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"{text}: a threshold in [0, 1) (0 = off; word2vec "
                                         "uses 1e-3 to 1e-5)")
    return value


#: the smallest share of walk occurrences --subsample may keep (expected, on the graph)
MIN_KEPT_SHARE = 0.01


def check_model_options(args: argparse.Namespace) -> None:
    """The checks of the model options that involve two of them, made right after parsing,
    each naming its options."""
    if args.min_lr > args.lr:
        raise InputError(f"--min-lr {args.min_lr:g} is above --lr {args.lr:g}: the "
                         "learning rate decays from --lr down to --min-lr")
    pool = args.negative_pool
    used = args.walk_length * 2 * args.window * args.negatives
    if isinstance(pool, int) and pool > used:
        print(f"kernelne: note: --negative-pool {pool:,} draws more than the at most {used:,} "
              "negatives a walk uses (--walk-length x 2 --window x --negatives): "
              "--negative-pool 0 (draws per pair) costs less", file=sys.stderr)


def check_options_on_graph(args: argparse.Namespace, graph) -> None:
    """The model options whose range depends on the graph, checked before the walks:
    ``--subsample`` must keep at least :data:`MIN_KEPT_SHARE` of the walks' occurrences."""
    if args.subsample > 0:
        share = expected_kept_share(graph, args.subsample)
        if share < MIN_KEPT_SHARE:
            lowest = MIN_KEPT_SHARE**2 / max(graph.n_nodes, 1)
            raise InputError(
                f"--subsample {args.subsample:g}: would keep about {share * 100:.2g}% of the "
                f"node occurrences in the walks on this graph ({graph.n_nodes:,} nodes), too "
                f"few to train on; use 0 (off) or at least {lowest:.1g} here (word2vec uses "
                "1e-3 to 1e-5)")


def expected_kept_share(graph, subsample: float) -> float:
    """The share of walk occurrences subsampling with threshold ``subsample`` keeps, estimated
    before the walks: the larger of the estimates with each node as frequent as its degree
    share (long walks) and all nodes equally frequent (walk starts)."""
    import numpy as np

    degree = np.diff(graph.indptr).astype(np.float64)
    degree = degree[degree > 0]
    if not len(degree):
        return 1.0
    shares = []
    for freq in (degree / degree.sum(), np.full(len(degree), 1.0 / len(degree))):
        shares.append(float(np.minimum(freq, np.sqrt(subsample * freq)).sum()))
    return max(shares)


def add_partition_options(parser: argparse.ArgumentParser) -> None:
    """Partitioned training (``embed``): P x P buckets, blocks on disk, optionally on Dask."""
    g = parser.add_argument_group("partitioned training (`kernelne docs distributed`)")
    g.add_argument("--partitions", type=positive_count, default=1, metavar="P",
                   help="train in P partitions with two blocks of rows in memory (1: the "
                        "plain fit)")
    g.add_argument("--partition-dir", default=None, metavar="DIR|URL",
                   help="folder or fsspec URL of the blocks, walks and checkpoints, e.g. "
                        "/mnt/nfs/run or s3://bucket/run (gs://, memory:// in one process; "
                        "a URL needs no shared disk: every worker reaches it with the AWS_* "
                        "or other credentials of its file system); a rerun with the same "
                        "folder or URL resumes; default: a temporary folder")
    g.add_argument("--rounds", type=positive_count, default=None, metavar="R",
                   help="rounds of walks, each trained in P steps (default: 20)")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="train the buckets on this Dask scheduler's workers, e.g. "
                        "tcp://host:8786 (needs --partitions > 1)")


def add_graph_input_options(parser: argparse.ArgumentParser) -> None:
    """How the ``input`` graph file is read (``embed``, ``update``, ``convert``)."""
    parser.add_argument("--directed", action="store_true", help="treat edges as directed")
    parser.add_argument("--mat-key", default="network", metavar="NAME",
                        help="matrix name in a .mat file")
    parser.add_argument("--header", action="store_true",
                        help="skip the first line (column names) of an edge list")
    parser.add_argument("--unweighted", action="store_true", help="ignore a weight column")


def read_input_graph(args: argparse.Namespace):
    """The graph of ``args.input``, read as :func:`add_graph_input_options` said."""
    from kernelne.graphs.graph import load_graph

    return load_graph(args.input, directed=args.directed, mat_key=args.mat_key,
                      header=args.header, unweighted=args.unweighted)


# kernel options and the --kernel values that use them
KERNEL_OPTIONS = {"kernels": ("multi",), "sigma": ("gauss",), "alpha": ("schoenberg", "sch"),
                  "beta_reg": ("multi",), "beta_update": ("multi",),
                  "beta_select": ("multi",)}
KERNEL_DEFAULTS = {"kernels": None, "sigma": math.sqrt(2.0), "alpha": 1.0, "beta_reg": 0.01,
                   "beta_update": "projected", "beta_select": "train"}


def report_unused_kernel_options(args: argparse.Namespace) -> None:
    """A note for every kernel option set on the command line that ``--kernel`` ignores."""
    for dest, kernels in KERNEL_OPTIONS.items():
        if getattr(args, dest) != KERNEL_DEFAULTS[dest] and args.kernel not in kernels:
            flag = "--" + dest.replace("_", "-")
            print(f"kernelne: note: {flag} is not used by --kernel {args.kernel} (only by "
                  f"--kernel {kernels[0]})", file=sys.stderr)


def model_from_args(args: argparse.Namespace, verbose: bool):
    from kernelne.model.kernelne import KernelNE

    report_unused_kernel_options(args)

    return KernelNE(
        kernel=args.kernel, sigma=args.sigma, alpha=args.alpha, kernels=args.kernels,
        dim=args.dim, walks_per_node=args.walks_per_node, walk_length=args.walk_length,
        window=args.window, negatives=args.negatives, lr=args.lr, min_lr=args.min_lr,
        reg=args.reg, beta_reg=args.beta_reg, p=args.p, q=args.q, epochs=args.epochs,
        workers=args.workers, random_state=args.seed, verbose=verbose,
        robust=not args.paper, beta_update=args.beta_update, beta_select=args.beta_select,
        setting="given" if args.paper else args.setting,
        normalize="none" if args.paper else args.normalize,
        shared_negatives=args.shared_negatives, loss=args.loss,
        window_shrink=args.window_shrink, subsample=args.subsample,
        negative_pool=args.negative_pool, partitions=getattr(args, "partitions", 1),
        partition_dir=getattr(args, "partition_dir", None), rounds=getattr(args, "rounds", None),
        propagate=getattr(args, "propagate", None) or False,
    )


def describe_fit(model, graph, seconds: float, load_seconds: float = 0.0) -> str:
    from kernelne.engine.diagnostics import MIN_ROWS
    from kernelne.model.auto_setting import OUTPUT_NORM, fitted_params

    compiling = getattr(model, "compile_seconds_", 0.0)
    running = model.fit_seconds_ - compiling
    lines = [
        f"graph      {graph.summary()}",
        f"walks      {model.n_walks_:,} (x{model.walk_length} nodes)",
        pairs_line(model, running, compiling),
        "kernel     " + ", ".join(str(k) for k in model.kernels_),
    ]
    pool = getattr(model, "negative_pool_", 0)
    if model.shared_negatives:
        lines.append(f"negatives  {model.negatives} per center, shared by its contexts"
                     + (f", from a pool of {pool} per walk" if pool else ""))
    elif pool:
        lines.append(f"negatives  {model.negatives} per pair, from a pool of {pool} drawn per walk")
    trained = fitted_params(model)  # the setting chosen, if an automatic fit switched
    setting = getattr(model, "setting_", None)
    if setting is not None:
        lines.append(f"setting    {setting['name']}: {setting['evidence']}")
    options = ([f"loss {trained.loss}"] if trained.loss != "squared" else []) + (
        ["shrinking windows"] if trained.window_shrink else []) + (
        [f"subsample {model.subsample:g}"] if model.subsample > 0 else [])
    if options:
        lines.append("options    " + ", ".join(options))
    for diverged in getattr(model, "lr_restarts_", []):
        lines.append(f"diverged   at lr {diverged['lr']:g} ({diverged['bad_rows']:,} of "
                     f"{diverged['rows']:,} rows NaN or infinite): restarted with lr "
                     f"{diverged['lr'] / 2:g}")
    for shell in model.narrowed_:
        lines.append(
            f"narrowed   the rows were collapsing after {shell['at_pairs']:,} pairs (offset ratio "
            f"{shell['offset_ratio']:.1f}, neighbour AUC {shell['neighbour_auc']:.2f}): "
            f"restarted with the kernel {model.kernel_scale_ / shell['kernel_scale']:g}x narrower")
    if model.narrowed_ and not (trained.kernel == "schoenberg" and trained.window_shrink):
        lines.append("hint       the kernel was narrowed, as on dense graphs; there --kernel "
                     "schoenberg --window-shrink --window 5 scored highest, and 160 walks per "
                     "node higher still (`kernelne docs quality`)")
    for check in getattr(model, "shell_checks_", []):
        if not check["collapsing"]:
            lines.append(f"checked    the rows after {check['at_pairs']:,} pairs: offset ratio "
                         f"{check['offset_ratio']:.2f}, neighbour AUC "
                         f"{check['neighbour_auc']:.2f}: no shell")
    if model.kernel_scale_ != 1.0:
        lines.append("effective  " + ", ".join(str(k) for k in model.effective_kernels())
                     + f" (kernel scale {model.kernel_scale_:g} on |x-y|^2)")
    hist = model.loss_history_
    if len(hist):
        lines.append(f"loss       positive (1-k)^2 {hist[0, 1]:.4f} -> {hist[-1, 1]:.4f}, "
                     f"negative k^2 {hist[0, 2]:.4f} -> {hist[-1, 2]:.4f} (first -> last chunk)")
    h = model.health_
    if getattr(h, "measured", True):
        lines.append(f"health     neighbour AUC {h.neighbour_auc:.3f}, offset ratio "
                     f"{h.offset_ratio:.2f}, top direction {h.top_direction_share:.1%}"
                     + ("  << COLLAPSED" if h.collapsed else ""))
    else:
        lines.append(f"health     not measured (fewer than {MIN_ROWS} nodes in the walks: too "
                     "few for the statistics)")
    if len(model.kernels_) > 1:
        hist = model.beta_history_
        snapshots = [("weights    start", hist[0]), ("           middle", hist[len(hist) // 2]),
                     ("           final", model.beta_)]
        for label, row in snapshots:
            lines.append(f"{label:17} " + ", ".join(
                f"{k}={b:.4f}" for k, b in zip(model.kernels_, row, strict=True)))
    choice = getattr(model, "beta_choice_", None)
    if choice is not None:
        lines.append(f"chosen     {choice.winner_name} by {choice.validation}")
        lines.extend("           " + line for line in choice.table().splitlines())
    scale = getattr(model, "output_scale_", 1.0)
    if scale != 1.0:
        lines.append(f"rows       scaled by {scale:.3g} to a median norm of {OUTPUT_NORM:g} "
                     "(--normalize none: as trained)")
    stages = model.stage_seconds_
    lines.append(f"time       {seconds:.1f} s (loading {load_seconds:.1f} s, "
                 + (f"compiling {compiling:.1f} s (first run only), " if compiling else "")
                 + f"walks {stages['walks']:.1f} s, training {stages['training']:.1f} s), "
                 f"peak memory {peak_memory_mb():.0f} MiB")
    return "\n".join(lines)


def duplicates_note(dropped: int, reweighted: int) -> str:
    """The note on ``dropped`` repeated edges, ``reweighted`` of them with another weight than
    the edge's first line (whose weight is the one kept)."""
    text = f"dropped {dropped:,} duplicate edges"
    if reweighted:
        text += (f" ({reweighted:,} of them with a weight different from the edge's first "
                 "occurrence: the first weight was kept)")
    return text


def pairs_line(model, running: float, compiling: float) -> str:
    """The summary's pairs and their speed; a resumed partitioned fit's speed counts only the
    pairs this run trained, and a finished fit read back says it trained nothing."""
    run = getattr(model, "partition_run_", None)
    if run is None or not run.resumed_at_step:
        return (f"pairs      {model.n_pairs_:,} at {model.n_pairs_ / max(running, 1e-9):,.0f}"
                " pairs/s" + (" (compiling excluded)" if compiling else ""))
    if run.trained_pairs == 0:
        return (f"pairs      {model.n_pairs_:,}, none trained by this run: it resumed a "
                "finished fit (--partition-dir) and read its rows back")
    return (f"pairs      {model.n_pairs_:,}, {run.trained_pairs:,} trained by this run "
            f"(resumed at step {run.resumed_at_step} of {run.steps}) at "
            f"{run.trained_pairs / max(running, 1e-9):,.0f} pairs/s")


def report_graph(graph, out=None) -> None:
    out = sys.stderr if out is None else out  # the stream of now (tests replace it)
    notes = []
    if graph.self_loops_dropped:
        notes.append(f"dropped {graph.self_loops_dropped:,} self-loops")
    if graph.duplicates_dropped:
        notes.append(duplicates_note(graph.duplicates_dropped,
                                     graph.duplicates_reweighted))
    isolated = len(graph.isolated_nodes())
    if isolated:
        notes.append(f"{isolated:,} isolated nodes (their vectors stay at initialisation)")
    sinks = len(graph.sink_nodes())
    if sinks:
        notes.append(f"{sinks:,} nodes with in-edges but no out-edges: walks stop there; their "
                     "rows are trained only as the last node of the walks that reach them "
                     "(with the nodes before it as contexts)")
    for note in notes:
        print(f"kernelne: note: {note}", file=out)


# model options and the constructor parameter each sets
OPTION_PARAMS = {
    "kernel": "kernel", "sigma": "sigma", "alpha": "alpha", "kernels": "kernels", "dim": "dim",
    "walks_per_node": "walks_per_node", "walk_length": "walk_length", "window": "window",
    "negatives": "negatives", "lr": "lr", "min_lr": "min_lr", "reg": "reg",
    "beta_reg": "beta_reg", "p": "p", "q": "q", "epochs": "epochs", "paper": "robust",
    "beta_update": "beta_update", "beta_select": "beta_select",
    "shared_negatives": "shared_negatives", "loss": "loss",
    "window_shrink": "window_shrink", "subsample": "subsample",
    "negative_pool": "negative_pool", "propagate": "propagate",
    "partitions": "partitions", "partition_dir": "partition_dir", "rounds": "rounds",
}
