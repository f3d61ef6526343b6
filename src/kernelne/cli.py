"""The ``kernelne`` command: ``embed``, ``update``, ``demo`` and the evaluation subcommands.

Every subcommand answers ``--help``. Bad input ends with one line ``kernelne: error: ...``
naming the file, line and problem, exit status 2 and no output file.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence

from kernelne.errors import InputError, TrainingError


def peak_memory_mb() -> float:
    """Peak resident memory of this process so far, in MiB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The KernelNE options shared by ``embed`` and ``demo``."""
    g = parser.add_argument_group("KernelNE model")
    g.add_argument("--kernel", default="gauss", choices=["gauss", "schoenberg", "sch", "linear",
                   "multi"], help="kernel (linear = the 'NE' ablation; multi = learned mix)")
    g.add_argument("--sigma", type=float, default=math.sqrt(2.0),
                   help="Gaussian sigma, paper's form exp(-|x-y|^2/sigma^2) (default sqrt 2)")
    g.add_argument("--alpha", type=float, default=1.0, help="Schoenberg alpha (default 1)")
    g.add_argument("--kernels", default=None,
                   help="dictionary for --kernel multi, e.g. gauss:1,gauss:2,sch:1")
    g.add_argument("--dim", type=int, default=128, help="embedding dimension d (default 128)")
    g.add_argument("--walks-per-node", type=int, default=80, help="walks per node (default 80)")
    g.add_argument("--walk-length", type=int, default=10, help="walk length (default 10)")
    g.add_argument("--window", type=int, default=10, help="context window gamma (default 10)")
    g.add_argument("--negatives", type=int, default=5, help="negative samples k (default 5)")
    g.add_argument("--lr", type=float, default=0.025, help="initial learning rate (0.025)")
    g.add_argument("--min-lr", type=float, default=1e-4, help="learning-rate floor (1e-4)")
    g.add_argument("--reg", type=float, default=0.01, help="L2 penalty lambda (default 0.01)")
    g.add_argument("--beta-reg", type=float, default=0.01,
                   help="L2 penalty on kernel weights, --kernel multi (default 0.01)")
    g.add_argument("-p", "--p", type=float, default=1.0, help="node2vec return parameter p")
    g.add_argument("-q", "--q", type=float, default=1.0, help="node2vec in-out parameter q")
    g.add_argument("--epochs", type=int, default=1, help="passes over the walks (default 1)")
    g.add_argument("--workers", type=int, default=None, help="threads (default: all cores)")
    g.add_argument("--seed", type=int, default=None, help="random seed (1 worker: exact)")
    g.add_argument("--paper", action="store_true",
                   help="the paper's exact algorithm: no robust restart with a narrower kernel "
                   "when the rows collapse (docs/COLLAPSE.md)")
    g.add_argument("--shared-negatives", action="store_true",
                   help="one set of negatives per center for all its contexts, one weighted "
                   "step (several times faster on large graphs; Micro-F1 about 0.005 lower "
                   "on Cora and CiteSeer)")
    g.add_argument("--beta-update", default="projected", choices=["projected", "simplex"],
                   help="kernel weights of --kernel multi: projected SGD (paper) or on the "
                   "simplex by mirror descent")


def add_graph_input_options(parser: argparse.ArgumentParser) -> None:
    """How the ``input`` graph file is read (``embed``, ``update``, ``convert``)."""
    parser.add_argument("--directed", action="store_true", help="treat edges as directed")
    parser.add_argument("--mat-key", default="network", help="matrix name in a .mat file")
    parser.add_argument("--header", action="store_true",
                        help="skip the first line (column names) of an edge list")
    parser.add_argument("--unweighted", action="store_true", help="ignore a weight column")


def read_input_graph(args: argparse.Namespace):
    """The graph of ``args.input``, read as :func:`add_graph_input_options` said."""
    from kernelne.graph import load_graph

    return load_graph(args.input, directed=args.directed, mat_key=args.mat_key,
                      header=args.header, unweighted=args.unweighted)


def model_from_args(args: argparse.Namespace, verbose: bool):
    from kernelne.model import KernelNE

    return KernelNE(
        kernel=args.kernel, sigma=args.sigma, alpha=args.alpha, kernels=args.kernels,
        dim=args.dim, walks_per_node=args.walks_per_node, walk_length=args.walk_length,
        window=args.window, negatives=args.negatives, lr=args.lr, min_lr=args.min_lr,
        reg=args.reg, beta_reg=args.beta_reg, p=args.p, q=args.q, epochs=args.epochs,
        workers=args.workers, random_state=args.seed, verbose=verbose,
        robust=not args.paper, beta_update=args.beta_update,
        shared_negatives=args.shared_negatives,
    )


def describe_fit(model, graph, seconds: float, load_seconds: float = 0.0) -> str:
    lines = [
        f"graph      {graph.summary()}",
        f"walks      {model.n_walks_:,} (x{model.walk_length} nodes)",
        f"pairs      {model.n_pairs_:,} at {model.n_pairs_ / max(model.fit_seconds_, 1e-9):,.0f}"
        " pairs/s",
        "kernel     " + ", ".join(str(k) for k in model.kernels_),
    ]
    if model.shared_negatives:
        lines.append(f"negatives  {model.negatives} per center, shared by its contexts")
    for shell in model.narrowed_:
        lines.append(
            f"narrowed   the rows were collapsing after {shell['at_pairs']:,} pairs (offset ratio "
            f"{shell['offset_ratio']:.1f}, neighbour AUC {shell['neighbour_auc']:.2f}): "
            f"restarted with the kernel {model.kernel_scale_ / shell['kernel_scale']:g}x narrower")
    if model.kernel_scale_ != 1.0:
        lines.append("effective  " + ", ".join(str(k) for k in model.effective_kernels())
                     + f" (kernel scale {model.kernel_scale_:g} on |x-y|^2)")
    hist = model.loss_history_
    if len(hist):
        lines.append(f"loss       positive (1-k)^2 {hist[0, 1]:.4f} -> {hist[-1, 1]:.4f}, "
                     f"negative k^2 {hist[0, 2]:.4f} -> {hist[-1, 2]:.4f} (first -> last chunk)")
    h = model.health_
    lines.append(f"health     neighbour AUC {h.neighbour_auc:.3f}, offset ratio "
                 f"{h.offset_ratio:.2f}, top direction {h.top_direction_share:.1%}"
                 + ("  << COLLAPSED" if h.collapsed else ""))
    if len(model.kernels_) > 1:
        hist = model.beta_history_
        snapshots = [("weights    start", hist[0]), ("           middle", hist[len(hist) // 2]),
                     ("           final", model.beta_)]
        for label, row in snapshots:
            lines.append(f"{label:17} " + ", ".join(
                f"{k}={b:.4f}" for k, b in zip(model.kernels_, row, strict=True)))
    stages = model.stage_seconds_
    lines.append(f"time       {seconds:.1f} s (loading {load_seconds:.1f} s, walks "
                 f"{stages['walks']:.1f} s, training {stages['training']:.1f} s), peak memory "
                 f"{peak_memory_mb():.0f} MiB")
    return "\n".join(lines)


def report_graph(graph, out=sys.stderr) -> None:
    notes = []
    if graph.self_loops_dropped:
        notes.append(f"dropped {graph.self_loops_dropped:,} self-loops")
    if graph.duplicates_dropped:
        notes.append(f"dropped {graph.duplicates_dropped:,} duplicate edges")
    isolated = len(graph.isolated_nodes())
    if isolated:
        notes.append(f"{isolated:,} isolated nodes (their vectors stay at initialisation)")
    for note in notes:
        print(f"kernelne: note: {note}", file=out)


# from this many nodes on, the rows no longer fit in cache and shared negatives pay off
LARGE_GRAPH = 100_000

# model options and the constructor parameter each sets
_OPTION_PARAMS = {
    "kernel": "kernel", "sigma": "sigma", "alpha": "alpha", "kernels": "kernels", "dim": "dim",
    "walks_per_node": "walks_per_node", "walk_length": "walk_length", "window": "window",
    "negatives": "negatives", "lr": "lr", "min_lr": "min_lr", "reg": "reg",
    "beta_reg": "beta_reg", "p": "p", "q": "q", "epochs": "epochs", "paper": "robust",
    "beta_update": "beta_update", "shared_negatives": "shared_negatives",
}


def report_unused_options(args: argparse.Namespace, accepted: set[str]) -> None:
    """A note for every model option set on the command line that the method ignores."""
    defaults = vars(build_parser().parse_args(["embed", "-", "-o", "-"]))
    for dest, param in _OPTION_PARAMS.items():
        if getattr(args, dest) != defaults[dest] and param not in accepted:
            flag = "--" + dest.replace("_", "-")
            print(f"kernelne: note: {flag} is not used by --method {args.method}",
                  file=sys.stderr)


def cmd_embed(args: argparse.Namespace) -> int:
    from kernelne.embedding_io import save_embedding
    from kernelne.outputs import check_output_path

    check_output_path(args.output, [args.input])
    if args.model_out is not None:
        if args.method != "kernelne":
            raise InputError(f"--model-out saves a KernelNE model, not --method {args.method}")
        check_distinct_outputs(args.output, args.model_out, [args.input])
    start = time.perf_counter()
    graph = read_input_graph(args)
    load_seconds = time.perf_counter() - start
    report_graph(graph)
    if args.method == "kernelne":
        model = model_from_args(args, verbose=not args.quiet)
        if graph.n_nodes >= LARGE_GRAPH and not args.shared_negatives and not args.quiet:
            print(f"kernelne: note: {graph.n_nodes:,} nodes: --shared-negatives trains several "
                  "times faster on graphs this large (Micro-F1 about 0.005 lower on Cora)",
                  file=sys.stderr)
    else:
        from kernelne.baselines import make_method, method_params

        shared = dict(
            dim=args.dim, walks_per_node=args.walks_per_node, walk_length=args.walk_length,
            window=args.window, negatives=args.negatives, p=args.p, q=args.q,
            epochs=args.epochs, workers=args.workers, random_state=args.seed,
            verbose=not args.quiet,
        )
        report_unused_options(args, set(method_params(args.method)))
        model = make_method(args.method, ignore_unknown=True, **shared)
    model.fit(graph)
    save_embedding(args.output, model.embedding_, graph.nodes)
    if args.model_out is not None:
        model.save_model(args.model_out)
    if not args.quiet:
        seconds = time.perf_counter() - start
        if args.method == "kernelne":
            print(describe_fit(model, graph, seconds, load_seconds))
        else:
            print(f"graph      {graph.summary()}\nmethod     {args.method}\n"
                  f"time       {seconds:.1f} s, peak memory {peak_memory_mb():.0f} MiB")
        print(f"wrote      {args.output}")
        if args.model_out is not None:
            print(f"wrote      {args.model_out} (model file, for `kernelne update`)")
    return 0


def check_distinct_outputs(output, model_out, inputs) -> None:
    """Check the model file output like the embedding output, and that they differ."""
    from kernelne.outputs import check_output_path

    if not str(model_out).endswith(".npz"):
        raise InputError("the model file must end in .npz", model_out)
    check_output_path(model_out, inputs)
    if os.path.realpath(output) == os.path.realpath(model_out):
        raise InputError("--model-out is the embedding output (-o): choose another path",
                         model_out)


def cmd_update(args: argparse.Namespace) -> int:
    from kernelne.embedding_io import save_embedding
    from kernelne.model import KernelNE
    from kernelne.outputs import check_output_path

    check_output_path(args.output, [args.model, args.input])
    if args.model_out is not None:
        check_distinct_outputs(args.output, args.model_out, [args.model, args.input])
    start = time.perf_counter()
    model = KernelNE.load_model(args.model)
    if args.workers is not None:
        model.set_params(workers=args.workers)
    if args.seed is not None:
        model.set_params(random_state=args.seed)
    graph = read_input_graph(args)
    report_graph(graph)
    model.partial_fit(graph, touched_rate=args.touched_rate)
    save_embedding(args.output, model.embedding_, model.nodes_)
    if args.model_out is not None:
        model.save_model(args.model_out)
    if not args.quiet:
        seconds = time.perf_counter() - start
        print(f"graph      {graph.summary()}\n"
              f"nodes      {len(model.new_nodes_):,} new, {len(model.touched_nodes_):,} touched "
              f"(rate {args.touched_rate:g}), {len(model.removed_nodes_):,} removed; every "
              "other row kept as it was\n"
              f"walks      {model.n_walks_:,} (x{model.walk_length} nodes) from the new nodes"
              + (" and the touched ones" if args.touched_rate > 0 else "") + "\n"
              f"pairs      {model.n_pairs_:,} trained in {model.fit_seconds_:.1f} s\n"
              f"time       {seconds:.1f} s, peak memory {peak_memory_mb():.0f} MiB\n"
              f"wrote      {args.output}")
        if args.model_out is not None:
            print(f"wrote      {args.model_out} (model file)")
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from kernelne.graph_npz import save_graph
    from kernelne.outputs import check_output_path

    if not str(args.output).endswith(".npz"):
        raise InputError("the output of convert must end in .npz", args.output)
    check_output_path(args.output, [args.input])
    start = time.perf_counter()
    graph = read_input_graph(args)
    report_graph(graph)
    save_graph(graph, args.output)
    print(f"graph      {graph.summary()}\ntime       {time.perf_counter() - start:.1f} s, "
          f"peak memory {peak_memory_mb():.0f} MiB\nwrote      {args.output}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from kernelne.demo import run_demo

    return run_demo(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kernelne", description="Kernel node embeddings: learn, evaluate, reproduce."
    )
    parser.add_argument("--version", action="version", version=f"kernelne {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    embed = sub.add_parser("embed", help="learn node embeddings of a graph",
                           description="Learn node embeddings of a graph and write them.")
    embed.add_argument("input", help="edge list (.txt/.csv/.gz, 'u v [w]' per line) or .mat")
    embed.add_argument("-o", "--output", required=True,
                       help="output file: .npy, or word2vec text format for any other suffix")
    add_graph_input_options(embed)
    embed.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    embed.add_argument("--method", default="kernelne",
                       choices=["kernelne", "deepwalk", "node2vec", "line", "hope", "netmf"],
                       help="embedding method (baselines take the shared options: --dim, walk "
                       "options, -p/-q, --epochs, --workers, --seed)")
    embed.add_argument("--model-out", default=None, metavar="MODEL.npz",
                       help="also save the fitted model (for `kernelne update`)")
    add_model_options(embed)
    embed.set_defaults(func=cmd_embed)

    update = sub.add_parser(
        "update", help="embed the new nodes of a grown graph without retraining",
        description="Load a model saved by `embed --model-out`, read the grown graph (old "
        "nodes plus new nodes and edges) and learn rows for the new nodes only, the old rows "
        "frozen; write the embedding of the whole graph.")
    update.add_argument("model", help="model file written by `kernelne embed --model-out`")
    update.add_argument("input", help="the grown graph: edge list (.txt/.csv/.gz), .mat or .npz")
    update.add_argument("-o", "--output", required=True,
                        help="output file: .npy, or word2vec text format for any other suffix")
    update.add_argument("--model-out", default=None, metavar="MODEL.npz",
                        help="also save the updated model")
    update.add_argument("--touched-rate", type=float, default=0.0,
                        help="learning-rate multiplier of old nodes with new edges (default 0: "
                        "frozen; every old row stays exactly as it was)")
    add_graph_input_options(update)
    update.add_argument("--workers", type=int, default=None,
                        help="threads (default: the model's setting)")
    update.add_argument("--seed", type=int, default=None,
                        help="random seed (default: the model's)")
    update.add_argument("--quiet", action="store_true", help="no summary")
    update.set_defaults(func=cmd_update)

    convert = sub.add_parser(
        "convert", help="write a graph in the binary .npz format (fast to load)",
        description="Read a graph (edge list, .mat, ...) once and write it as .npz, which "
        "every command reads in a fraction of the time.")
    convert.add_argument("input", help="edge list (.txt/.csv/.gz) or .mat")
    convert.add_argument("output", help="output .npz file")
    add_graph_input_options(convert)
    convert.set_defaults(func=cmd_convert)

    demo = sub.add_parser("demo", help="embed a built-in graph and show how well groups separate",
                          description="Embed a seeded planted-partition graph (no download) and "
                          "report how well the embedding recovers its groups.")
    add_model_options(demo)
    demo.set_defaults(func=cmd_demo)

    for register in _extensions():
        register(sub)
    return parser


def _version() -> str:
    from kernelne import __version__

    return __version__


def _extensions() -> list[Callable]:
    """Subcommands defined next to the code they run (evaluation, baselines, reproduce)."""
    found = []
    for module, attr in [("kernelne.evaluation.cli", "register"),
                         ("kernelne.reproduce.cli", "register"),
                         ("kernelne.tune", "register"),
                         ("kernelne.plot", "register"),
                         ("kernelne.datasets", "register"),
                         ("kernelne.generators", "register")]:
        try:
            mod = __import__(module, fromlist=[attr])
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("kernelne"):
                continue
            raise
        found.append(getattr(mod, attr))
    return found


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one ``kernelne: warning: ...`` line (no source location)."""
    print(f"kernelne: warning: {message}", file=sys.stderr)


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that partial outputs are cleaned up."""


def _on_sigterm(signum, frame) -> None:
    raise _Terminated


def main(argv: Sequence[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:  # a SIGTERM during start-up (imports take seconds on a busy machine) exits 143 too
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except InputError as exc:
        print(f"kernelne: error: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:  # an impossible parameter combination
        print(f"kernelne: error: {exc}", file=sys.stderr)
        return 2
    except TrainingError as exc:
        print(f"kernelne: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kernelne: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print("kernelne: terminated", file=sys.stderr)
        return 143


if __name__ == "__main__":
    sys.exit(main())
