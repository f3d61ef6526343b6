"""Options and summaries shared by the commands that read a graph and fit a model
(``embed``, ``update``, ``convert``, ``demo``): argument groups, the model they describe, and
the lines printed about the graph and the fit."""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
from collections.abc import Iterator

from kernelne.cli.grammar import positive_count, seed_value
from kernelne.errors import InputError, quote
from kernelne.memory import peak_memory_mb
from kernelne.model.params import (
    AUTO,
    BY_NAME,
    MAX_POOL,
    PAPER,
    PARAMS,
    AnyOf,
    Flag,
    Folder,
    Integer,
    KernelSpecs,
    Options,
    Param,
    Real,
    Rule,
    Seed,
    Spectral,
    is_auto,
)


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The KernelNE options shared by ``embed`` and ``demo``: one per row of
    :data:`kernelne.model.params.PARAMS` in the ``"model"`` group, with its default and help."""
    g = parser.add_argument_group("KernelNE model")
    for row in PARAMS:
        if row.cli is not None and row.cli.group == "model":
            add_param_option(g, row)


#: namespace attribute: ``{dest: option string}`` of the model options given on the command
#: line (a value equal to the default included), by :func:`add_param_option`'s actions
GIVEN = "_given_options"


def given_options(args: argparse.Namespace) -> dict[str, str]:
    """``{dest: option string}`` of the model options given on the command line."""
    return getattr(args, GIVEN, {})


def _note_given(namespace: argparse.Namespace, dest: str, option_string: str | None) -> None:
    given = dict(given_options(namespace))
    given[dest] = option_string or ""
    setattr(namespace, GIVEN, given)


class _StoreGiven(argparse._StoreAction):
    """``store``, noting that the option was given."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        _note_given(namespace, self.dest, option_string)


class _StoreTrueGiven(argparse._StoreTrueAction):
    """``store_true``, noting that the switch was given."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        _note_given(namespace, self.dest, option_string)


class _StoreFalseGiven(argparse._StoreFalseAction):
    """``store_false``, noting that the switch was given."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        _note_given(namespace, self.dest, option_string)


def add_param_option(group, row: Param) -> None:
    """The option of parameter ``row``: its flags, default, type or choices, metavar, help;
    given on the command line, it is noted in :func:`given_options`."""
    cli = row.cli
    if isinstance(row.rule, Flag):
        if not row.rule.auto:
            group.add_argument(*cli.flags, dest=cli.dest, action=_StoreTrueGiven,
                               help=cli.help)
            return
        both = group.add_mutually_exclusive_group()  # "auto" unless one of them is given
        both.add_argument(*cli.flags, dest=cli.dest, action=_StoreTrueGiven, help=cli.help,
                          default=row.default)
        both.add_argument(*(f"--no-{flag[2:]}" for flag in cli.flags if flag.startswith("--")),
                          dest=cli.dest, action=_StoreFalseGiven, default=row.default,
                          help=f"{cli.flags[-1]} off, as given (the automatic setting does "
                          "not choose it)")
        return
    kwargs: dict = {"dest": cli.dest, "default": row.default, "help": cli.help,
                    "action": _StoreGiven}
    rule = cli.rule or row.rule
    if isinstance(rule, (Options, AnyOf)) and cli.choices is not None:
        kwargs["choices"] = list(cli.choices)
    elif isinstance(rule, Options):
        kwargs["choices"] = list(rule.choices)
    else:
        kwargs["type"] = option_type(rule)
    if cli.metavar is not None:
        kwargs["metavar"] = cli.metavar
    if cli.const is not None:
        kwargs.update(nargs="?", const=cli.const)
    group.add_argument(*cli.flags, **kwargs)


def option_type(rule: Rule):
    """The argparse type that reads a value of ``rule`` from the command line (``None``:
    the text as given)."""
    if isinstance(rule, Integer) and rule.low == 1 and not rule.also:
        count = positive_count if rule.high is None else count_at_most(rule.high)
        return auto_or(count) if rule.auto else count
    if isinstance(rule, Real) and rule.auto and rule.low == 0 and not rule.low_closed:
        return auto_or_positive_number
    if isinstance(rule, Real) and rule.low == 0 and rule.high == math.inf:
        return non_negative_number if rule.low_closed else positive_number
    if isinstance(rule, Real) and (rule.low, rule.high) == (0, 1):
        return subsample_threshold
    if isinstance(rule, AnyOf) and any(isinstance(r, Integer) for r in rule.rules):
        return pool_setting
    if isinstance(rule, Seed):
        return seed_value
    if isinstance(rule, Spectral):
        return propagate_setting
    if isinstance(rule, (KernelSpecs, Folder)):
        return None
    raise TypeError(f"no command-line type for {rule!r}")


def count_at_most(high: int):
    """The argparse type of a count in ``1..high``."""
    def count(text: str) -> int:
        value = positive_count(text)
        if value > high:
            raise argparse.ArgumentTypeError(f"{value:,}: at most {high:,}")
        return value

    count.__name__ = f"count_at_most_{high}"
    return count


def auto_or(count):
    """The argparse type of ``auto`` (any case) or a value of ``count``."""
    def read(text: str) -> int | str:
        return AUTO if is_auto(text) else count(text)

    read.__name__ = f"auto_or_{count.__name__}"
    return read


def pool_setting(text: str) -> int | str:
    """``--negative-pool``'s value: ``auto`` or a pool size in 0..:data:`MAX_POOL`."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected auto or a pool size >= 0, got {quote(text)}")
    if value > MAX_POOL:
        raise argparse.ArgumentTypeError(
            f"{value:,}: at most {MAX_POOL:,} (every walk draws the whole pool at its start, and "
            "a walk uses at most walk length x 2 window x k negatives: a larger pool only "
            "costs time)")
    return value


def propagate_setting(text: str) -> str:
    """``--propagate``'s value, checked (kept as text: the estimators read it)."""
    from kernelne.engine.propagation import check_propagation

    try:
        check_propagation(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("propagate: ")) from None
    return text


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {quote(text)}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text}: not a finite number")
    return value


def positive_number(text: str) -> float:
    """argparse type of a rate or kernel width: a finite number > 0."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: must be greater than 0")
    return value


def auto_or_positive_number(text: str) -> float | str:
    """argparse type of a kernel width chosen at fit time unless given: ``auto`` or a finite
    number > 0."""
    return text if text == "auto" else positive_number(text)


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
    check_learning_rates(args)
    check_paper_options(args)
    if getattr(args, "partitions", 1) == 1:  # a plain fit has no folder and no rounds
        for flag in ("--partition-dir", "--rounds"):
            if getattr(args, flag[2:].replace("-", "_"), None) is not None:
                raise InputError(f"{flag} is an option of a partitioned fit: give "
                                 "--partitions P (2 or more) with it, or drop it")
    pool = args.negative_pool
    used = args.walk_length * 2 * args.window * args.negatives
    if isinstance(pool, int) and pool > used:
        print(f"kernelne: note: --negative-pool {pool:,} draws more than the at most {used:,} "
              "negatives a walk uses (--walk-length x 2 --window x --negatives): "
              "--negative-pool 0 (draws per pair) costs less", file=sys.stderr)


def check_paper_options(args: argparse.Namespace) -> None:
    """``--paper`` sets the options of :data:`~kernelne.model.params.PAPER`: each of them given
    on the command line must say the same (``--paper --setting given`` is fine,
    ``--paper --setting auto`` is refused, naming both options)."""
    if not getattr(args, "paper", False):
        return
    given = given_options(args)
    for name, value in PAPER.items():
        row = BY_NAME[name]
        dest, flag = row.cli.dest, row.cli.flags[-1]
        if dest in given and not row.rule.same(getattr(args, dest), value):
            raise InputError(f"{flag} {getattr(args, dest)} contradicts --paper, which "
                             f"sets {flag} {row.rule.spelled(value)}: drop one of them")


def check_learning_rates(args: argparse.Namespace) -> None:
    """``--min-lr`` must not be above ``--lr``."""
    if args.min_lr > args.lr:
        raise InputError(f"--min-lr {args.min_lr:g} is above --lr {args.lr:g}: the "
                         "learning rate decays from --lr down to --min-lr")


def check_method_options(args: argparse.Namespace) -> None:
    """The checks of a baseline's options (``embed --method``) that involve two of them: the
    learning rates of a method that takes both (DeepWalk, node2vec)."""
    from kernelne.baselines import method_params

    if {"lr", "min_lr"} <= set(method_params(args.method)):
        check_learning_rates(args)


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


@contextlib.contextmanager
def compiling_announced(shown: bool) -> Iterator[None]:
    """With ``shown``, the enclosed block announces numba's first-run compilation on stderr
    (:func:`kernelne.engine.compiling.watch_compiling`), bars or not; without, it keeps the
    library's own announcement (``--quiet``) silent."""
    from kernelne.engine.compiling import watch_compiling

    with watch_compiling(announce=shown):
        yield


def add_partition_options(parser: argparse.ArgumentParser) -> None:
    """Partitioned training (``embed``): P x P buckets, blocks on disk, optionally on Dask."""
    g = parser.add_argument_group("partitioned training (`kernelne docs distributed`)")
    for row in PARAMS:
        if row.cli is not None and row.cli.group == "partition":
            add_param_option(g, row)
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
    """The graph of ``args.input``, read as :func:`add_graph_input_options` said (a graph
    ``.npz``'s edges left in the file for a partitioned fit, ``--partitions`` above 1)."""
    from kernelne.graphs.graph import load_graph

    return load_graph(args.input, directed=args.directed, mat_key=args.mat_key,
                      header=args.header, unweighted=args.unweighted,
                      mapped=(getattr(args, "partitions", None) or 1) > 1)


# kernel options and the --kernel values that use them
KERNEL_OPTIONS = {row.cli.dest: row.kernels for row in PARAMS if row.kernels and row.cli}
KERNEL_DEFAULTS = {row.cli.dest: row.default for row in PARAMS if row.kernels and row.cli}


def report_unused_kernel_options(args: argparse.Namespace) -> None:
    """A note for every kernel option set on the command line that ``--kernel`` ignores
    (``--kernel auto``: the Gaussian, a ``--sigma`` given keeps it; the Schoenberg kernel
    where the automatic setting picks the dense setting)."""
    from kernelne.model.params import is_auto

    for dest, kernels in KERNEL_OPTIONS.items():
        if getattr(args, dest) == KERNEL_DEFAULTS[dest]:
            continue
        flag = "--" + dest.replace("_", "-")
        if not is_auto(args.kernel):
            if args.kernel not in kernels:
                print(f"kernelne: note: {flag} is not used by --kernel {args.kernel} (only by "
                      f"--kernel {kernels[0]})", file=sys.stderr)
        elif "schoenberg" in kernels:
            print(f"kernelne: note: {flag} is used only where --kernel auto becomes "
                  "--kernel schoenberg (the dense setting: a mean degree of 8 or more)",
                  file=sys.stderr)
        elif "gauss" not in kernels:
            print(f"kernelne: note: {flag} is not used by --kernel auto (only by --kernel "
                  f"{kernels[0]})", file=sys.stderr)


def model_from_args(args: argparse.Namespace, verbose: bool):
    from kernelne.model.kernelne import KernelNE

    report_unused_kernel_options(args)

    params = {}
    for row in PARAMS:
        if row.cli is not None and hasattr(args, row.cli.dest):
            value = getattr(args, row.cli.dest)
            params[row.name] = not value if row.cli.invert else value
    params["verbose"] = verbose
    if args.paper:
        params.update(PAPER)
    return KernelNE(**params)


def _spelled_value(value) -> str:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:.5g}"
    return str(value)


def setting_values(model, setting: dict) -> str:
    """The values the automatic setting's parameters took in a fit, chosen (left at
    ``auto``) or given, as options: ``chosen: --kernel schoenberg, ...; given: --loss
    loglik`` (empty for a record without them)."""
    chosen = setting.get("params") or {}
    given = setting.get("given")
    if not chosen and not given:
        return ""

    def spell(name: str, value) -> str:
        return f"{OPTION_FLAGS.get(name, name)} {_spelled_value(value)}"

    kernel = str(chosen.get("kernel", model.kernel)).lower()
    used = {n: v for n, v in chosen.items()  # sigma only where the kernel is the Gaussian
            if n not in KERNEL_OPTIONS or any(kernel.startswith(k) for k in KERNEL_OPTIONS[n])}
    parts = ", ".join(spell(n, v) for n, v in used.items()) or "none"
    text = f"chosen: {parts}"
    if given is not None:
        text += "; given: " + (", ".join(spell(n, getattr(model, n)) for n in given)
                               or "none")
    return text


def describe_fit(model, graph, seconds: float, load_seconds: float = 0.0) -> str:
    from kernelne.engine.diagnostics import MIN_ROWS
    from kernelne.model.auto_setting import OUTPUT_NORM, fitted_params

    compiling = getattr(model, "compile_seconds_", 0.0)
    running = model.fit_seconds_ - compiling
    setting = getattr(model, "setting_", None)
    walks_why = (setting or {}).get("walks")  # walks_per_node="auto": the value and why
    lines = [
        f"graph      {graph.summary()}",
        f"walks      {model.n_walks_:,} (x{model.walk_length} nodes"
        + (f"; per node {walks_why})" if walks_why else ")"),
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
    if setting is not None:
        lines.append(f"setting    {setting['name']}: {setting['evidence']}")
        values = setting_values(model, setting)
        if values:
            lines.append(f"values     {values}")
    options = ([f"loss {trained.loss}"] if trained.loss != "squared" else []) + (
        ["shrinking windows"] if trained.window_shrink else []) + (
        [f"subsample {model.subsample:g}"] if model.subsample > 0 else [])
    if options:
        lines.append("options    " + ", ".join(options))
    said = propagation_line(getattr(model, "propagation_", None),
                            (setting or {}).get("propagation"),  # propagate="auto": why
                            " (health: the rows as trained)")
    if said is not None:
        lines.append(said)
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
        started = (setting or {}).get("scale")  # a large dense graph: narrower from the start
        lines.append("effective  " + ", ".join(str(k) for k in model.effective_kernels())
                     + f" (kernel scale {model.kernel_scale_:g} on |x-y|^2"
                     + (f"; {started})" if started else ")"))
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


def propagation_line(propagation, why: str | None, extra: str = "") -> str | None:
    """The summary's ``propagated`` line: the ``propagation`` applied (None: none) and ``why``
    (``propagate="auto"``'s evidence; None or ``"as given"``: the setting as given), with
    ``extra`` after a propagation; None where nothing was propagated as given."""
    why = None if why == "as given" else why
    if propagation is not None:
        return (f"propagated {propagation}" + (f" ({why})" if why else "")
                + ": band-pass filter, thin SVD" + extra)
    return f"propagated no ({why})" if why else None


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
OPTION_PARAMS = {row.cli.dest: row.name for row in PARAMS if row.cli is not None}

#: the option that sets each constructor parameter (the spelling of
#: :class:`~kernelne.errors.ParamError` messages on the command line)
OPTION_FLAGS = {row.name: row.cli.flags[-1] for row in PARAMS
                if row.cli is not None and not row.cli.invert}
