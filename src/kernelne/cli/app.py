"""The ``kernelne`` command: ``embed``, ``update``, ``demo`` and the evaluation subcommands.

Every subcommand answers ``--help``. Bad input ends with one line ``kernelne: error: ...``
naming the file, line and problem, exit status 2 and no output file.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence

from kernelne.cli.grammar import (
    PROGRESS_HELP,
    HelpFormatter,
    add_command,
    check_deprecated_spellings,
    output_or_positional,
    progress_shown,
    seed_value,
)
from kernelne.cli.options import (
    OPTION_FLAGS,
    OPTION_PARAMS,
    add_graph_input_options,
    add_model_options,
    add_partition_options,
    check_method_options,
    check_model_options,
    check_options_on_graph,
    compiling_announced,
    describe_fit,
    given_options,
    model_from_args,
    propagation_line,
    read_input_graph,
    report_graph,
)
from kernelne.errors import InputError, ParamError, TrainingError
from kernelne.memory import peak_memory_mb


def report_unused_options(args: argparse.Namespace, accepted: set[str]) -> None:
    """A note for every model option set on the command line that the method ignores."""
    defaults = vars(build_parser().parse_args(["embed", "-", "-o", "-"]))
    for dest, param in OPTION_PARAMS.items():
        if getattr(args, dest) != defaults[dest] and param not in accepted:
            flag = "--" + dest.replace("_", "-")
            print(f"kernelne: note: {flag} is not used by --method {args.method}",
                  file=sys.stderr)


OUTPUT_HELP = ("output file: .npz (vectors and node ids), .npy (NumPy; ids other than 0..n-1 "
               "in NAME.nodes.txt beside it), .parquet (columns node, dim_0..), or word2vec "
               "text as .txt/.emb/.vec/.w2v (- for standard output)")


def _wrote(output: str) -> str:
    """The summary's name of the embedding output, with its ids sidecar if one was written."""
    from kernelne.embedding_io import is_npy, nodes_sidecar

    if output != "-" and is_npy(output) and nodes_sidecar(output).exists():
        return f"{output} (+ {nodes_sidecar(output)}, the node ids)"
    return _shown(output)


def _summary_stream(args: argparse.Namespace):
    """Standard output, unless the embedding goes there (``-o -``): then standard error."""
    return sys.stderr if args.output == "-" else sys.stdout


def _shown(output: str) -> str:
    return "standard output" if output == "-" else output


def cmd_embed(args: argparse.Namespace) -> int:
    from kernelne.embedding_io import check_embedding_output, check_ids_writable
    from kernelne.parallel import dask_client, dask_errors_unlogged

    check_embedding_output(args.output, [args.input])
    if args.method == "kernelne":
        check_model_options(args)
    else:
        check_method_options(args)
    if args.device != "cpu" and args.method != "kernelne":
        raise InputError(f"--device {args.device} trains KernelNE only; --method "
                         f"{args.method} trains on the CPU: leave out --device")
    if args.model_out is not None:
        if args.method != "kernelne":
            raise InputError(f"--model-out saves a KernelNE model, not --method {args.method}")
        check_distinct_outputs(args.output, args.model_out, [args.input])
    start = time.perf_counter()
    graph = read_input_graph(args)
    load_seconds = time.perf_counter() - start
    check_ids_writable(args.output, graph.nodes)
    report_graph(graph)
    bars = progress_shown(args)
    if args.method == "kernelne":
        check_options_on_graph(args, graph)
        model = model_from_args(args, verbose=bars)
    else:
        from kernelne.baselines import make_method, method_params
        from kernelne.model.auto_setting import PAPER_SETTING
        from kernelne.model.params import is_auto

        shared = dict(
            dim=args.dim, walk_length=args.walk_length,
            # "auto" (not given): the method's own default, the paper's 80
            walks_per_node=(PAPER_SETTING["walks_per_node"] if is_auto(args.walks_per_node)
                            else args.walks_per_node),
            window=args.window, negatives=args.negatives, p=args.p, q=args.q,
            epochs=args.epochs, lr=args.lr, min_lr=args.min_lr, workers=args.workers,
            random_state=args.seed, verbose=bars,
            # not given: the method's own default (off but in ProNE), not KernelNE's "auto"
            propagate=args.propagate if "propagate" in given_options(args) else None,
        )
        report_unused_options(args, set(method_params(args.method)))
        model = make_method(args.method, ignore_unknown=True, **shared)
    if args.scheduler is not None and args.method != "kernelne":
        raise InputError(f"--scheduler trains a partitioned KernelNE fit; --method "
                         f"{args.method} runs in this process: leave out --scheduler")
    if args.scheduler is not None and args.partitions < 2:
        raise InputError("--scheduler trains a partitioned KernelNE fit: add --partitions P "
                         "(P >= 2)")
    with rows_on_disk(model) as temporary, compiling_announced(not args.quiet):
        if args.scheduler is not None:
            with dask_errors_unlogged(), dask_client(args.scheduler) as client:
                model.fit(graph, client=client)
        else:
            model.fit(graph)
        if temporary is not None:  # the model file records no folder removed after the run
            model.partition_dir = None
        save_outputs(model, args.output, graph.nodes, args.model_out)
    if not args.quiet:
        out = _summary_stream(args)
        seconds = time.perf_counter() - start
        if args.method == "kernelne":
            print(describe_fit(model, graph, seconds, load_seconds), file=out)
        else:
            said = propagation_line(getattr(model, "propagation_", None),
                                    getattr(model, "propagation_reason_", None))
            print(f"graph      {graph.summary()}\nmethod     {args.method}\n"
                  + ("" if said is None else said + "\n")
                  + f"time       {seconds:.1f} s, peak memory {peak_memory_mb():.0f} MiB", file=out)
        print(f"wrote      {_wrote(args.output)}", file=out)
        if args.model_out is not None:
            print(f"wrote      {args.model_out} (model file, for `kernelne update`)", file=out)
    return 0


@contextlib.contextmanager
def rows_on_disk(model):
    """For a partitioned fit without ``--partition-dir``: a temporary partition folder for
    the enclosed block (removed after it), so that the fitted rows stay memory-mapped in it
    until they are written (a fit in a temporary folder of its own reads them into memory:
    the whole model, which a partitioned fit may be too large for)."""
    if int(getattr(model, "partitions", 1)) < 2 or model.partition_dir is not None:
        yield None
        return
    import shutil

    from kernelne.partitioned.store import scratch_folder

    folder = str(scratch_folder("parts"))  # a dead run's are removed (SIGKILL, OOM killer)
    model.partition_dir = folder
    try:
        yield folder
    finally:
        model.partition_dir = None
        shutil.rmtree(folder, ignore_errors=True)


def save_outputs(model, output: str, nodes, model_out: str | None) -> None:
    """Write the embedding ``output`` and, with ``model_out``, the model file: both or neither.

    The model file is written first to a temporary name (the larger file, so a full disk
    stops the run there), then the embedding and its ids sidecar, then the model file is
    renamed into place: a failure leaves the files from before the run as they were."""
    from kernelne.embedding_io import save_embedding
    from kernelne.model.model_file import save_model

    def embedding() -> None:
        save_embedding(output, model.embedding_, nodes)

    if model_out is None:
        embedding()
    else:
        save_model(model, model_out, then=embedding)


def check_distinct_outputs(output, model_out, inputs) -> None:
    """Check the model file output like the embedding output, and that they differ."""
    from kernelne.outputs import check_output_path

    if not str(model_out).endswith(".npz"):
        raise InputError("the model file must end in .npz", model_out)
    check_output_path(model_out, inputs)
    if output != "-" and os.path.realpath(output) == os.path.realpath(model_out):
        raise InputError("--model-out is the embedding output (-o): choose another path",
                         model_out)


def cmd_update(args: argparse.Namespace) -> int:
    from kernelne.embedding_io import check_embedding_output, check_ids_writable
    from kernelne.model.kernelne import KernelNE

    check_embedding_output(args.output, [args.model, args.input])
    if args.model_out is not None:
        check_distinct_outputs(args.output, args.model_out, [args.model, args.input])
    start = time.perf_counter()
    model = KernelNE.load_model(args.model)
    if args.workers is not None:
        model.set_params(workers=args.workers)
    if args.seed is not None:
        model.set_params(random_state=args.seed)
    graph = read_input_graph(args)
    check_ids_writable(args.output, model.nodes_)
    check_ids_writable(args.output, graph.nodes)
    report_graph(graph)
    with compiling_announced(not args.quiet):
        model.partial_fit(graph, touched_rate=args.touched_rate)
    save_outputs(model, args.output, model.nodes_, args.model_out)
    if not args.quiet:
        seconds = time.perf_counter() - start
        propagation = getattr(model, "propagation_", None)
        kept = ("every other row kept as it was" if propagation is None
                else "every other row as trained kept as it was")
        print(f"graph      {graph.summary()}\n"
              f"nodes      {len(model.new_nodes_):,} new, {len(model.relearned_nodes_):,} "
              "relearned (no edge when fitted), "
              f"{len(model.touched_nodes_):,} touched "
              f"(rate {args.touched_rate:g}), {len(model.removed_nodes_):,} removed; {kept}\n"
              + ("" if propagation is None else
                 f"propagated {propagation} again, over the whole new graph: every row of the "
                 "output changes (the propagation is global)\n")
              + f"walks      {model.n_walks_:,} (x{model.walk_length} nodes) from the new nodes"
              + (" and the touched ones" if args.touched_rate > 0 else "") + "\n"
              f"pairs      {model.n_pairs_:,} trained in {model.fit_seconds_:.1f} s\n"
              f"time       {seconds:.1f} s, peak memory {peak_memory_mb():.0f} MiB\n"
              f"wrote      {_wrote(args.output)}", file=_summary_stream(args))
        if args.model_out is not None:
            print(f"wrote      {args.model_out} (model file)", file=_summary_stream(args))
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from kernelne.graphs.npz import save_graph
    from kernelne.graphs.stream_convert import convert_edgelist
    from kernelne.outputs import check_output_path

    args.output = output_or_positional(args, "kernelne convert GRAPH", "FILE.npz")

    if not str(args.output).endswith(".npz"):
        raise InputError("the output of convert must end in .npz", args.output)
    check_output_path(args.output, [args.input])
    start = time.perf_counter()
    # a regular edge list of integer ids is converted block by block (never whole in memory)
    graph = convert_edgelist(args.input, args.output, args.directed, args.header,
                             args.unweighted)
    if graph is None:
        graph = read_input_graph(args)
        report_graph(graph)
        save_graph(graph, args.output)
    else:
        report_graph(graph)
    print(f"graph      {graph.summary()}\ntime       {time.perf_counter() - start:.1f} s, "
          f"peak memory {peak_memory_mb():.0f} MiB\nwrote      {args.output}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from kernelne.cli.demo import run_demo

    return run_demo(args)


FIRST_COMMANDS = ["kernelne demo",
                  "kernelne datasets --copy karate",
                  "kernelne embed karate.edgelist -o karate.npy --seed 0",
                  "kernelne embed --help"]


def build_parser() -> argparse.ArgumentParser:
    """The ``kernelne`` argument parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="kernelne", description="Kernel node embeddings: learn, evaluate, reproduce.",
        formatter_class=HelpFormatter,
        epilog="first commands:\n" + "\n".join(f"  {line}" for line in FIRST_COMMANDS),
    )
    parser.add_argument("--version", action="version", version=f"kernelne {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _register_embed(sub)
    _register_update(sub)
    _register_convert(sub)
    _register_demo(sub)
    for register in _extensions():
        register(sub)
    return parser


def _register_embed(sub) -> None:
    embed = add_command(sub, "embed", help="learn node embeddings of a graph",
                        description="Learn node embeddings of a graph and write them.",
                        example=["kernelne datasets --copy karate",
                                 "kernelne embed karate.edgelist -o karate.npy --seed 0"])
    embed.add_argument("input", metavar="GRAPH",
                       help="edge list (.txt/.csv/.gz, 'u v [w]' per line), .mat or .npz")
    embed.add_argument("-o", "--output", required=True, metavar="FILE",
                       help=OUTPUT_HELP)
    add_graph_input_options(embed)
    embed.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    embed.add_argument("--no-progress", action="store_true", help=PROGRESS_HELP)
    embed.add_argument("--method", default="kernelne",
                       choices=["kernelne", "deepwalk", "node2vec", "line", "hope", "netmf",
                                "prone"],
                       help="embedding method (baselines take the shared options: --dim, walk "
                       "options, -p/-q, --epochs, --workers, --seed)")
    embed.add_argument("--model-out", default=None, metavar="MODEL.npz",
                       help="also save the fitted model (for `kernelne update`)")
    add_model_options(embed)
    add_partition_options(embed)
    embed.set_defaults(func=cmd_embed)


def _register_update(sub) -> None:
    update = add_command(
        sub, "update", help="embed the new nodes of a grown graph without retraining",
        description="Load a model saved by `embed --model-out`, read the grown graph (old "
        "nodes plus new nodes and edges) and learn rows for the new nodes only, the old rows "
        "frozen; write the embedding of the whole graph.",
        example=["kernelne datasets --copy karate",
                 "awk '$1 < 30 && $2 < 30' karate.edgelist > before.edgelist   "
                 "# the edges among nodes 0-29",
                 "kernelne embed before.edgelist -o before.npy --model-out before.model.npz "
                 "--seed 0",
                 "kernelne update before.model.npz karate.edgelist -o karate.npy"])
    update.add_argument("model", metavar="MODEL.npz",
                        help="model file written by `kernelne embed --model-out`")
    update.add_argument("input", metavar="GRAPH",
                        help="the grown graph: edge list (.txt/.csv/.gz), .mat or .npz")
    update.add_argument("-o", "--output", required=True, metavar="FILE",
                        help=OUTPUT_HELP)
    update.add_argument("--model-out", default=None, metavar="MODEL.npz",
                        help="also save the updated model")
    update.add_argument("--touched-rate", type=float, default=0.0, metavar="RATE",
                        help="learning-rate multiplier of old nodes whose neighbours changed "
                        "(0: frozen; every old row stays exactly as it was)")
    add_graph_input_options(update)
    update.add_argument("--workers", type=int, default=None, metavar="N",
                        help="threads (default: the model's setting)")
    update.add_argument("--seed", type=seed_value, default=None, metavar="N",
                        help="random seed (default: the model's)")
    update.add_argument("--quiet", action="store_true", help="no summary")
    update.set_defaults(func=cmd_update)


def _register_convert(sub) -> None:
    convert = add_command(
        sub, "convert", help="write a graph in the binary .npz format (fast to load)",
        description="Read a graph (edge list, .mat, ...) once and write it as .npz, which "
        "every command reads in a fraction of the time (and a partitioned fit maps without "
        "copying the edges). A regular edge list of integer ids is converted block by block, "
        "never whole in memory.",
        example=["kernelne datasets --copy karate",
                 "kernelne convert karate.edgelist -o karate.npz"])
    convert.add_argument("input", metavar="GRAPH", help="edge list (.txt/.csv/.gz) or .mat")
    convert.add_argument("legacy_output", nargs="?", default=None, help=argparse.SUPPRESS)
    convert.add_argument("-o", "--output", default=None, metavar="FILE.npz",
                         help="output .npz file (required)")
    add_graph_input_options(convert)
    convert.set_defaults(func=cmd_convert)


def _register_demo(sub) -> None:
    demo = add_command(sub, "demo", help="embed a built-in graph and show how well groups "
                       "separate", description="Embed a seeded planted-partition graph (no "
                       "download) and report how well the embedding recovers its groups.",
                       example="kernelne demo --seed 0")
    demo.add_argument("--no-progress", action="store_true", help=PROGRESS_HELP)
    add_model_options(demo)
    demo.set_defaults(func=cmd_demo)


def _version() -> str:
    from kernelne import __version__

    return __version__


def _extensions() -> list[Callable]:
    """The ``register`` functions of the subcommands with a module of their own."""
    from kernelne.cli import (
        datasets,
        docs,
        evaluate,
        generate,
        plot,
        propagate,
        reproduce,
        tune,
    )

    return [evaluate.register, reproduce.register, tune.register, plot.register,
            propagate.register, datasets.register, generate.register, docs.register]


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings as one ``kernelne: warning: ...`` line (no source location)."""
    print(f"kernelne: warning: {message}", file=sys.stderr)


#: exit status when standard output is closed early (``kernelne embed G -o - | head``): the
#: shells' 128 + SIGPIPE, as for a program that the signal ended
BROKEN_PIPE_STATUS = 141


def _closed_pipe() -> int:
    """Standard output's reader has gone: point standard output at the null device (so that
    flushing it at exit raises nothing) and end quietly with :data:`BROKEN_PIPE_STATUS`."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no file descriptor (a captured stream)
        pass
    return BROKEN_PIPE_STATUS


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so that partial outputs are cleaned up."""


def _on_sigterm(signum, frame) -> None:
    raise _Terminated


MESSAGE_LIMIT = 2000  # characters of an error line; the quotes in it are capped already


def _capped(exc: BaseException) -> str:
    """The error's message on one line, at most about :data:`MESSAGE_LIMIT` characters (its
    start and end kept): a message quoting a huge input is never echoed whole. Parameters
    are named by their options (:class:`~kernelne.errors.ParamError`)."""
    message = exc.spelled(OPTION_FLAGS) if isinstance(exc, ParamError) else str(exc)
    text = " ".join(message.splitlines())
    if len(text) <= MESSAGE_LIMIT:
        return text
    return f"{text[:MESSAGE_LIMIT - 500]} ... {text[-400:]}"


def main(argv: Sequence[str] | None = None) -> int:
    warnings.showwarning = _show_warning
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:  # a SIGTERM during start-up (imports take seconds on a busy machine) exits 143 too
        args = build_parser().parse_args(argv)
        check_deprecated_spellings(args)
        status = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return status
    except InputError as exc:
        print(f"kernelne: error: {_capped(exc)}", file=sys.stderr)
        return 2
    except ValueError as exc:  # an impossible parameter combination
        print(f"kernelne: error: {_capped(exc)}", file=sys.stderr)
        return 2
    except TrainingError as exc:
        print(f"kernelne: error: {_capped(exc)}", file=sys.stderr)
        return 1
    except MemoryError as exc:
        print(f"kernelne: error: out of memory{f' ({exc})' if str(exc) else ''}",
              file=sys.stderr)
        return 1
    except BrokenPipeError:
        return _closed_pipe()
    except KeyboardInterrupt:
        print("kernelne: interrupted", file=sys.stderr)
        return 130
    except _Terminated:
        print("kernelne: terminated", file=sys.stderr)
        return 143


if __name__ == "__main__":
    sys.exit(main())
