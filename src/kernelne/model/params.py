"""The parameter table of :class:`~kernelne.model.kernelne.KernelNE`: one row per constructor
parameter, in the constructor's order.

A row (:class:`Param`) holds the parameter's default (:data:`AUTO` for those the automatic
setting chooses at fit time: a value given, even the paper's, is used as given), the rule its
value must follow, the paper's symbol, whether the automatic setting needs it at its default
(:data:`kernelne.model.auto_setting.CHOICE_DEFAULTS`), the ``--kernel`` values that use it,
and its command-line option (:class:`Cli`: flags, metavar, help). From the table come

- the estimator's validation (:func:`check_params`, a loop over the rules);
- the ``kernelne embed`` / ``demo`` model options, their defaults and help
  (:func:`kernelne.cli.options.add_model_options`), and the estimator the options describe
  (:func:`kernelne.cli.options.model_from_args`);
- :data:`kernelne.model.auto_setting.CHOICE_DEFAULTS`.

``KernelNE.__init__`` stays explicit, as scikit-learn requires; ``tests/model/test_params.py``
holds its signature, its docstring's ``Parameters`` list and the command line's defaults equal
to the table. This module imports nothing from the rest of the package at import time: the
command line reads it before any numba code loads.
"""

from __future__ import annotations

import copy
import math
import numbers
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


class Rule:
    """What a parameter's value must be: :meth:`check` raises ``ValueError`` naming the
    parameter, :meth:`accepts` says whether a value passes."""

    def check(self, name: str, value: Any) -> None:  # pragma: no cover - every rule overrides
        """Raise ``ValueError`` naming ``name`` unless ``value`` follows the rule."""
        raise NotImplementedError

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` follows the rule."""
        try:
            self.check("value", value)
        except ValueError:
            return False
        return True

    def same(self, a: Any, b: Any) -> bool:
        """Whether two accepted values set the same thing (``"off"`` and ``False`` for a
        spectral setting)."""
        return a == b

    def spelled(self, value: Any) -> str:
        """``value`` as the command line writes it."""
        return str(value)


#: the default of the parameters the automatic setting chooses at fit time
#: (:mod:`kernelne.model.auto_setting`); any other value is used as given
AUTO = "auto"


def is_auto(value: Any) -> bool:
    """Whether ``value`` is :data:`AUTO`, in any case (the value is chosen at fit time)."""
    return isinstance(value, str) and value.lower() == AUTO


def _is_integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True)
class Integer(Rule):
    """An integer (``numbers.Integral``, not a bool) of at least ``low`` and, with ``high``, at
    most ``high``; ``none``: ``None`` is accepted too; ``also``: other accepted integers
    (``workers=-1``); ``auto``: ``"auto"`` too (chosen at fit time)."""

    low: int
    none: bool = False
    also: tuple[int, ...] = ()
    high: int | None = None
    auto: bool = False

    def check(self, name: str, value: Any) -> None:
        if (value is None and self.none) or (self.auto and is_auto(value)):
            return
        if not _is_integer(value):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        if value < self.low and value not in self.also:
            raise ValueError(f"{name} must be at least {self.low}, got {value!r}")
        if self.high is not None and value > self.high:
            raise ValueError(f"{name} must be at most {self.high:,}, got {value!r}")


@dataclass(frozen=True)
class Real(Rule):
    """A finite real number in the range from ``low`` to ``high`` (each end closed or open);
    ``none``: ``None`` is accepted too; ``auto``: ``"auto"`` too (chosen at fit time);
    ``message``: what the error says the value must be, instead of the range."""

    low: float = -math.inf
    high: float = math.inf
    low_closed: bool = True
    high_closed: bool = True
    none: bool = False
    message: str | None = None
    auto: bool = False

    def range_text(self) -> str:
        """The range in words: ``greater than 0``, ``0 or more``, ``in [0, 1)``."""
        if self.high == math.inf:
            return f"{self.low:g} or more" if self.low_closed else f"greater than {self.low:g}"
        return (f"in {'[' if self.low_closed else '('}{self.low:g}, {self.high:g}"
                f"{']' if self.high_closed else ')'}")

    def check(self, name: str, value: Any) -> None:
        if (value is None and self.none) or (self.auto and is_auto(value)):
            return
        finite = isinstance(value, numbers.Real) and math.isfinite(float(value))
        if not finite and self.message is None:
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        inside = finite and (
            (value >= self.low if self.low_closed else value > self.low)
            and (value <= self.high if self.high_closed else value < self.high))
        if not inside:
            raise ValueError(f"{name} must be {self.message or self.range_text()}, "
                             f"got {value!r}")


@dataclass(frozen=True)
class Options(Rule):
    """One of ``choices`` (strings), or one of their ``aliases``; ``ignore_case``: compared
    in lower case; ``message``: the error's text, formatted with ``name`` and ``value``."""

    choices: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    ignore_case: bool = False
    message: str | None = None

    def check(self, name: str, value: Any) -> None:
        if isinstance(value, str):
            text = value.lower() if self.ignore_case else value
            if text in self.choices or text in self.aliases:
                return
        if self.message is not None:
            raise ValueError(self.message.format(name=name, value=value))
        raise ValueError(f"{name} must be one of {', '.join(self.choices)}, got {value!r}")


@dataclass(frozen=True)
class Flag(Rule):
    """``True`` or ``False`` (a NumPy bool too); ``auto``: ``"auto"`` too (chosen at fit
    time)."""

    auto: bool = False

    def check(self, name: str, value: Any) -> None:
        if self.auto and is_auto(value):
            return
        if not isinstance(value, (bool, np.bool_)):
            either = "'auto', True or False" if self.auto else "True or False"
            raise ValueError(f"{name} must be {either}, got {value!r}")


@dataclass(frozen=True)
class Seed(Rule):
    """A random state as :func:`kernelne.engine.sampling.seed_to_uint64` reads it: None, an
    integer in ``[0, 2^64)``, a ``numpy.random.RandomState`` or ``Generator``."""

    def check(self, name: str, value: Any) -> None:
        from kernelne.engine.sampling import seed_to_uint64

        seed_to_uint64(copy.deepcopy(value), name)  # a copy: a generator is not advanced


@dataclass(frozen=True)
class Folder(Rule):
    """A path (``str`` or ``os.PathLike``) or URL; ``None`` too."""

    def check(self, name: str, value: Any) -> None:
        if value is not None and not isinstance(value, (str, os.PathLike)):
            raise ValueError(f"{name} must be None, a folder or a URL, got {value!r}")


@dataclass(frozen=True)
class KernelSpecs(Rule):
    """None, or kernel specifications (``"gauss:1"``, ``"sch:2"`` or
    :class:`~kernelne.engine.kernels.Kernel` objects) as a list or one comma-separated
    string; each is parsed when the dictionary is built
    (:meth:`~kernelne.model.kernelne.KernelNE.kernel_dictionary`)."""

    def check(self, name: str, value: Any) -> None:
        if value is None or isinstance(value, str):
            return
        if isinstance(value, (Sequence, np.ndarray)) and len(value) and not any(
                isinstance(v, (bytes, numbers.Number)) or v is None for v in value):
            return
        raise ValueError(f"{name} must be None or a list of kernels such as 'gauss:1' or "
                         f"'sch:2', got {value!r}")


@dataclass(frozen=True)
class Weights(Rule):
    """A sequence of finite weights >= 0, not all 0 (its length is checked against the
    kernel dictionary by :func:`kernelne.model.kernel_choice.fixed_weights`)."""

    def check(self, name: str, value: Any) -> None:
        try:
            beta = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            beta = np.array([math.nan])
        if (isinstance(value, str) or beta.ndim != 1 or not len(beta)
                or not np.all(np.isfinite(beta)) or (beta < 0).any() or beta.sum() <= 0):
            raise ValueError(f"{name} must be a sequence of finite weights >= 0, not all 0, "
                             f"got {value!r}")


@dataclass(frozen=True)
class Spectral(Rule):
    """A spectral propagation setting as
    :func:`kernelne.engine.propagation.parse_propagation` reads it: ``True``/``False``,
    ``None``, ``"on"``, ``"off"`` or ``"order=K,mu=M,theta=T"`` (any of the three keys), or
    ``"auto"`` (:func:`~kernelne.engine.propagation.choose_propagation`)."""

    def check(self, name: str, value: Any) -> None:
        from kernelne.engine.propagation import check_propagation

        try:
            check_propagation(value)
        except ValueError as exc:
            raise ValueError(str(exc).replace("propagate", name, 1)) from None

    def same(self, a: Any, b: Any) -> bool:
        from kernelne.engine.propagation import is_auto, parse_propagation

        if is_auto(a) or is_auto(b):
            return is_auto(a) and is_auto(b)
        return parse_propagation(a) == parse_propagation(b)

    def spelled(self, value: Any) -> str:
        if value is None or value is False:
            return "off"
        return "on" if value is True else str(value)


@dataclass(frozen=True)
class AnyOf(Rule):
    """A value that follows one of ``rules``; ``message``: what the error says it must be."""

    rules: tuple[Rule, ...]
    message: str

    def check(self, name: str, value: Any) -> None:
        if not any(rule.accepts(value) for rule in self.rules):
            raise ValueError(f"{name} must be {self.message}, got {value!r}")


@dataclass(frozen=True)
class Cli:
    """A parameter's command-line option (``kernelne embed``, ``demo``).

    ``flags``: the option strings (the last one names the ``argparse`` destination);
    ``help``: argparse's help text (``%(default)`` works, ``%`` is written ``%%``);
    ``metavar``: the value's name in the help; ``group``: ``"model"`` or ``"partition"``
    (:func:`kernelne.cli.options.add_partition_options`); ``choices``: the values offered,
    when not the rule's; ``rule``: a stricter rule for the command line than the
    constructor's; ``invert``: a switch that sets the parameter to ``False``
    (``--paper``: ``robust=False``)."""

    flags: tuple[str, ...]
    help: str
    metavar: str | None = None
    group: str = "model"
    choices: tuple[str, ...] | None = None
    rule: Rule | None = None
    invert: bool = False
    const: Any = None

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments."""
        return self.flags[-1].lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Param:
    """One constructor parameter: ``name``, ``default``, ``rule``, ``help`` (one line),
    ``cli`` (its option, None: none), ``symbol`` (the paper's, empty: none), ``auto``
    (the automatic setting applies only while it is at its default) and ``kernels`` (the
    ``--kernel`` values that use it; empty: every kernel)."""

    name: str
    default: Any
    rule: Rule
    help: str
    cli: Cli | None = None
    symbol: str = ""
    auto: bool = False
    kernels: tuple[str, ...] = ()


_POSITIVE = Real(0.0, low_closed=False)
_PENALTY = Real(0.0)
_COUNT = Integer(1)

#: the largest value of each count that scales a fit's work, far beyond any use (the paper:
#: 80 walks of 10 nodes, a window of 10, 5 negatives, 1 epoch): a model file edited to
#: 10^6 walks per node is refused when read, not trained for hours
LIMITS = {"walks_per_node": 10_000, "walk_length": 100_000, "window": 1_000,
          "negatives": 1_000, "epochs": 1_000, "chunk_walks": 1_000_000}

#: the largest ``negative_pool``: every walk draws its pool, so a pool beyond the negatives a
#: walk uses (at most walk length x 2 window x k) only costs draws; 10^6 is far beyond that
MAX_POOL = 1_000_000


def _bounded(name: str, low: int = 1, auto: bool = False) -> Integer:
    return Integer(low, high=LIMITS[name], auto=auto)


_AUTO_GIVEN = "given: the options as given"

#: every parameter of ``KernelNE``, in the constructor's order
PARAMS: tuple[Param, ...] = (
    Param("kernel", AUTO, Options(
        (AUTO, "gauss", "schoenberg", "linear", "multi"),
        aliases=("gaussian", "sch", "ne", "nokernel", "multiple"), ignore_case=True,
        message="unknown kernel {value!r} (use auto, gauss, schoenberg, linear or multi)"),
        "the kernel", Cli(("--kernel",), "kernel (linear = the 'NE' ablation; multi = learned "
                          "mix; auto: gauss, or schoenberg where --setting auto picks the "
                          "dense setting)",
                          choices=(AUTO, "gauss", "schoenberg", "sch", "linear", "multi")),
        auto=True),
    Param("sigma", AUTO, Real(0.0, low_closed=False, none=True, auto=True), "Gaussian width",
          Cli(("--sigma",), "Gaussian sigma, paper's form exp(-|x-y|^2/sigma^2) (auto: sqrt 2 "
              "= 1.4142; a width given keeps --kernel auto the Gaussian)", "SIGMA"),
          symbol="sigma", auto=True, kernels=("gauss",)),
    Param("alpha", 1.0, Real(0.0, low_closed=False, none=True), "Schoenberg exponent",
          Cli(("--alpha",), "Schoenberg alpha", "ALPHA"), symbol="alpha",
          kernels=("schoenberg", "sch")),
    Param("kernels", None, KernelSpecs(), "the dictionary of kernel='multi'",
          Cli(("--kernels",), "dictionary for --kernel multi, e.g. gauss:1,gauss:2,sch:1",
              "LIST"), auto=True, kernels=("multi",)),
    Param("dim", 128, _COUNT, "embedding dimension",
          Cli(("--dim",), "embedding dimension d", "D"), symbol="d"),
    Param("walks_per_node", AUTO, _bounded("walks_per_node", auto=True),
          "walks started from every node",
          Cli(("--walks-per-node",), "walks per node (auto: 80, the paper's; 20 where "
              "--setting auto trains a graph of 100,000 nodes or more with mean degree 8 or "
              "more)", "N"), symbol="N"),
    Param("walk_length", 10, _bounded("walk_length"), "nodes per walk",
          Cli(("--walk-length",), "walk length", "L"), symbol="L"),
    Param("window", 10, _bounded("window"), "context window",
          Cli(("--window",), "context window gamma", "W"), symbol="gamma"),
    Param("negatives", 5, _bounded("negatives", 0), "negative samples per pair",
          Cli(("--negatives",), "negative samples k (at least 1)", "K",
              rule=_bounded("negatives")),
          symbol="k"),
    Param("lr", 0.025, _POSITIVE, "initial learning rate",
          Cli(("--lr",), "initial learning rate", "LR"), symbol="eta"),
    Param("min_lr", 1e-4, _POSITIVE, "learning-rate floor",
          Cli(("--min-lr",), "learning-rate floor", "LR")),
    Param("reg", 0.01, _PENALTY, "L2 penalty on the rows",
          Cli(("--reg",), "L2 penalty lambda", "LAMBDA"), symbol="lambda"),
    Param("beta_reg", 0.01, _PENALTY, "L2 penalty on the kernel weights",
          Cli(("--beta-reg",), "L2 penalty on kernel weights, --kernel multi", "LAMBDA"),
          symbol="lambda_beta", kernels=("multi",)),
    Param("p", 1.0, _POSITIVE, "node2vec return parameter",
          Cli(("-p", "--p"), "node2vec return parameter p", "P")),
    Param("q", 1.0, _POSITIVE, "node2vec in-out parameter",
          Cli(("-q", "--q"), "node2vec in-out parameter q", "Q")),
    Param("epochs", 1, _bounded("epochs"), "passes over the walks",
          Cli(("--epochs",), "passes over the walks", "N")),
    Param("workers", None, Integer(1, none=True, also=(-1,)), "threads (None, -1: all cores)",
          Cli(("--workers",), "threads (default: all cores; with --scheduler, a bucket "
              "task's: default 1)", "N", rule=_COUNT)),
    Param("random_state", None, Seed(), "random seed",
          Cli(("--seed",), "random seed (1 worker: exact)", "N")),
    Param("keep_walks", False, Flag(), "keep the walk corpus in memory"),
    Param("chunk_walks", 8192, _bounded("chunk_walks"), "walks generated and trained per chunk"),
    Param("verbose", False, Flag(), "show a progress bar"),
    Param("beta_update", "projected", Options(("projected", "simplex")),
          "the step on the kernel weights",
          Cli(("--beta-update",), "kernel weights of --kernel multi: projected SGD (paper) or "
              "on the simplex by mirror descent"), kernels=("multi",)),
    Param("robust", True, Flag(), "restart with a narrower kernel when the rows collapse",
          Cli(("--paper",), "the paper's exact algorithm and setting: --setting given "
              "--normalize none --propagate off, and no robust restart with a narrower kernel "
              "when the rows collapse (`kernelne docs collapse`)", invert=True)),
    Param("shared_negatives", False, Flag(), "one set of negatives per center",
          Cli(("--shared-negatives",), "one set of negatives per center for all its contexts, "
              "one weighted step (several times faster on large graphs; Micro-F1 about 0.005 "
              "lower on Cora and CiteSeer)")),
    Param("partitions", 1, _COUNT, "partitions of a partitioned fit",
          Cli(("--partitions",), "train in P partitions with two blocks of rows in memory (1: "
              "the plain fit)", "P", group="partition")),
    Param("partition_dir", None, Folder(), "a partitioned fit's folder or URL",
          Cli(("--partition-dir",), "folder or fsspec URL of the blocks, walks and "
              "checkpoints, e.g. /mnt/nfs/run or s3://bucket/run (gs://, memory:// in one "
              "process; a URL needs no shared disk: every worker reaches it with the AWS_* or "
              "other credentials of its file system); a rerun with the same folder or URL "
              "resumes; default: a temporary folder", "DIR|URL", group="partition")),
    Param("rounds", None, Integer(1, none=True), "a partitioned fit's rounds of walks",
          Cli(("--rounds",), "rounds of walks, each trained in P steps (default: 20)", "R",
              group="partition")),
    Param("loss", AUTO, Options((AUTO, "squared", "loglik")), "the loss",
          Cli(("--loss",), "squared (the paper's (y - k)^2) or loglik (-log k for a context, "
              "-log(1 - k) for a negative; k clipped to [1e-4, 0.99]); auto: squared"),
          auto=True),
    Param("window_shrink", AUTO, Flag(auto=True), "word2vec's shrinking window",
          Cli(("--window-shrink",), "word2vec's shrinking window: each center draws its "
              "window uniformly in 1..--window, so nearer contexts weigh more (neither this "
              "nor --no-window-shrink given: on where --setting auto picks the dense "
              "setting, else off)"), auto=True),
    Param("subsample", 0.0, Real(0.0, 1.0, high_closed=False, message=(
        "a threshold in [0, 1) (0 = off; word2vec uses 1e-3 to 1e-5)")),
        "frequent-node subsampling threshold",
        Cli(("--subsample",), "word2vec's frequent-node subsampling: drop an occurrence of a "
            "node with probability 1 - sqrt(T / its frequency in the walks); 0: off", "T")),
    Param("negative_pool", "auto", AnyOf((Options(("auto",)), Integer(0, high=MAX_POOL)),
                                         f"'auto' or a pool size from 0 to {MAX_POOL:,}"),
          "negatives drawn per walk", Cli(
              ("--negative-pool",), "each walk's pairs pick their k negatives from a pool of "
              "Q draws made at the walk's start (0: k fresh draws per pair, the paper's; auto: "
              "128 on graphs of 100,000+ nodes, 0 below; at most 1,000,000)", "Q")),
    Param("beta_select", "train", AnyOf((Options(("train", "uniform", "validation")),
                                         Weights()),
                                        "one of train, uniform, validation or a sequence of "
                                        "weights"),
          "how the kernel weights are set", Cli(
              ("--beta-select",), "kernel weights of --kernel multi: train (learned by SGD), "
              "uniform (fixed 1/m) or validation (each single kernel, uniform and train fitted "
              "and scored on 20%% held-out edges; the best refitted on the whole graph; "
              "`kernelne docs method`, section 4)",
              choices=("train", "uniform", "validation")), auto=True, kernels=("multi",)),
    Param("setting", "auto", Options(("auto", "given")), "choose the setting from the graph",
          Cli(("--setting",), "auto: --kernel schoenberg --window-shrink (the dense "
              "setting) where the graph's mean degree is 8 or more; below, the paper's setting, "
              "switched to the dense one when the restart test finds the rows collapsing; "
              "only while none of --kernel, --sigma, --loss and --window-shrink is given (a "
              f"value given is used, even the default's); {_AUTO_GIVEN}")),
    Param("normalize", "auto", Options(("auto", "none")), "rescale the rows",
          Cli(("--normalize",), "auto: rows rescaled by one factor to a median norm of 2.5 "
              "(for logistic regression at C = 1; cosines, neighbours and k-means are "
              "unchanged); none: rows as trained")),
    Param("propagate", "auto", Spectral(), "spectral propagation of the final rows",
          Cli(("--propagate",), "spectrally propagate the final rows (ProNE's enhancement: a "
              "Chebyshev band-pass filter on the normalised Laplacian, then a thin SVD); "
              "alone: order=10,mu=0.2,theta=0.5, or give any of those keys, e.g. --propagate "
              "order=5,theta=1; off: none (with --method prone: its factorisation only); "
              "auto: on where the mean degree is 8 or more, the graph has at least --dim "
              "nodes and the filter (3 x nodes x --dim float32) fits in the memory available, in "
              "memory; given on fewer nodes than --dim: refused; works with every --method. "
              "Default: auto "
              "for KernelNE, off for the other methods but prone", "SPEC", const="on")),
    Param("device", "cpu", Options(("cpu", "cuda")), "the training engine",
          Cli(("--device",), "cpu: the numba engine on the CPU's cores; cuda: the numba-cuda "
              "engine on a CUDA GPU (pip install \"kernelne[cuda12]\" or \"kernelne[cuda13]\"; "
              "one kernel, no --partitions, --shared-negatives or --subsample; "
              "`kernelne docs guide`, GPU)")),
)

#: what ``--paper`` sets besides ``robust=False`` (the row whose option it is): the paper's
#: setting, kept as given, and its rows as trained
PAPER: dict[str, Any] = {"setting": "given", "normalize": "none", "propagate": False}

#: the rows by parameter name
BY_NAME: dict[str, Param] = {row.name: row for row in PARAMS}


def param(name: str) -> Param:
    """The row of a parameter.

    Parameters
    ----------
    name : str
        A ``KernelNE`` parameter, e.g. ``"dim"``.

    Returns
    -------
    Param
        Its row of :data:`PARAMS`.

    Raises
    ------
    KeyError
        ``name`` is not a parameter.
    """
    return BY_NAME[name]


def defaults() -> dict[str, Any]:
    """Every parameter's default.

    Returns
    -------
    dict
        ``{name: default}`` in the constructor's order.
    """
    return {row.name: row.default for row in PARAMS}


def check_params(estimator: Any) -> None:
    """Check every parameter of ``estimator`` against its row's rule, in the table's order.

    Parameters
    ----------
    estimator : KernelNE
        Any object with the table's parameters as attributes.

    Raises
    ------
    ValueError
        The first parameter whose value breaks its rule, named in the message.
    """
    for row in PARAMS:
        row.rule.check(row.name, getattr(estimator, row.name))
