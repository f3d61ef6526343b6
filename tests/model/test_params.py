"""The parameter table (:mod:`kernelne.model.params`) against what is derived from it or must
match it: the constructor's signature and docstring, the validation, the command line's options
and defaults, and the automatic setting's defaults."""

from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest

from kernelne import KernelNE
from kernelne.cli.app import build_parser, main
from kernelne.cli.options import (
    KERNEL_DEFAULTS,
    KERNEL_OPTIONS,
    MAX_POOL,
    OPTION_PARAMS,
    model_from_args,
    option_type,
)
from kernelne.engine.trainer import LOSSES
from kernelne.model.auto_setting import CHOICE_DEFAULTS, NORMALIZE, PAPER_SETTING, SETTINGS
from kernelne.model.kernelne import BETA_UPDATES
from kernelne.model.params import (
    PARAMS,
    AnyOf,
    Integer,
    Options,
    Real,
    check_params,
    defaults,
    param,
)

NAMES = [row.name for row in PARAMS]


def constructor_defaults() -> dict:
    return {name: p.default for name, p in inspect.signature(KernelNE).parameters.items()}


def docstring_parameters(doc: str) -> dict[str, str]:
    """``{name: its entry's text}`` of the ``Parameters`` section, in order."""
    section = re.search(r"\n    Parameters\n    -+\n(.*?)\n    [A-Z]\w+\n    -+\n", doc, re.S)
    assert section is not None
    entries: dict[str, str] = {}
    name = None
    for line in section.group(1).splitlines():
        head = re.match(r"^    (\w+) : ", line)
        if head:
            name = head.group(1)
            entries[name] = ""
        elif name is not None:
            entries[name] += " " + line.strip()
    return entries


# ---- the table against the constructor --------------------------------------------------------


def test_the_constructor_signature_is_the_table():
    sig = constructor_defaults()
    assert list(sig) == NAMES  # names and order
    assert sig == defaults()
    assert {name: sig[name] for name in ("kernel", "sigma", "loss", "window_shrink")} == {
        "kernel": "auto", "sigma": "auto", "loss": "auto", "window_shrink": "auto"}


def test_the_docstring_lists_the_table_and_the_paper_symbols():
    entries = docstring_parameters(KernelNE.__doc__)
    assert list(entries) == NAMES
    for row in PARAMS:
        if row.symbol:
            assert f"[{row.symbol}]" in entries[row.name], row.name


def test_the_docstring_reader_sees_a_missing_parameter():
    doc = KernelNE.__doc__.replace("    window : int, default 10\n", "")
    assert "window" not in docstring_parameters(doc)


def test_every_default_follows_its_rule():
    for row in PARAMS:
        row.rule.check(row.name, row.default)
    check_params(KernelNE())


def test_defaults_and_lookups():
    assert param("dim").default == 128 and param("dim").symbol == "d"
    with pytest.raises(KeyError):
        param("nope")


# ---- every rule refuses a bad value with its message -----------------------------------------

BAD = [
    ("kernel", "bogus", r"^unknown kernel 'bogus' \(use auto, gauss, schoenberg, linear or "
                        r"multi\)$"),
    ("kernel", 3, r"^unknown kernel 3 "),
    ("sigma", -1.0, r"^sigma must be greater than 0, got -1.0$"),
    ("sigma", math.nan, r"^sigma must be a finite number, got nan$"),
    ("alpha", 0.0, r"^alpha must be greater than 0, got 0.0$"),
    ("kernels", [1, 2], r"^kernels must be None or a list of kernels such as 'gauss:1'"),
    ("dim", 2.5, r"^dim must be an integer, got 2.5$"),
    ("dim", 0, r"^dim must be at least 1, got 0$"),
    ("walks_per_node", 0, r"^walks_per_node must be at least 1"),
    ("walk_length", True, r"^walk_length must be an integer, got True$"),
    ("window", np.float64(3.0), r"^window must be an integer"),
    ("negatives", -1, r"^negatives must be at least 0, got -1$"),
    ("lr", 0.0, r"^lr must be greater than 0, got 0.0$"),
    ("lr", math.inf, r"^lr must be a finite number, got inf$"),
    ("min_lr", -1e-4, r"^min_lr must be greater than 0"),
    ("reg", -0.1, r"^reg must be 0 or more, got -0.1$"),
    ("beta_reg", math.nan, r"^beta_reg must be a finite number, got nan$"),
    ("p", 0.0, r"^p must be greater than 0"),
    ("q", "1", r"^q must be a finite number, got '1'$"),
    ("epochs", 0, r"^epochs must be at least 1"),
    ("workers", 0, r"^workers must be at least 1, got 0$"),
    ("workers", -2, r"^workers must be at least 1, got -2$"),
    ("workers", 1.0, r"^workers must be an integer"),
    ("random_state", -1, r"^random_state must be None, an integer in \[0, 2\^64\)"),
    ("random_state", 1.5, r"^random_state must be None, an integer"),
    ("keep_walks", 1, r"^keep_walks must be True or False, got 1$"),
    ("chunk_walks", 0, r"^chunk_walks must be at least 1"),
    ("verbose", "yes", r"^verbose must be True or False, got 'yes'$"),
    ("beta_update", "sgd", r"^beta_update must be one of projected, simplex, got 'sgd'$"),
    ("robust", None, r"^robust must be True or False, got None$"),
    ("shared_negatives", 0, r"^shared_negatives must be True or False"),
    ("partitions", 0, r"^partitions must be at least 1"),
    ("partition_dir", 3, r"^partition_dir must be None, a folder or a URL, got 3$"),
    ("rounds", 0, r"^rounds must be at least 1"),
    ("loss", "l2", r"^loss must be one of auto, squared, loglik, got 'l2'$"),
    ("window_shrink", 1, r"^window_shrink must be 'auto', True or False, got 1$"),
    ("window_shrink", "yes", r"^window_shrink must be 'auto', True or False, got 'yes'$"),
    ("sigma", "automatic", r"^sigma must be a finite number, got 'automatic'$"),
    ("subsample", 1.0, r"^subsample must be a threshold in \[0, 1\) \(0 = off; word2vec uses "
                       r"1e-3 to 1e-5\), got 1.0$"),
    ("subsample", math.nan, r"^subsample must be a threshold in \[0, 1\)"),
    ("negative_pool", -1, r"^negative_pool must be 'auto' or a pool size from 0 to "
                          r"1,000,000, got -1$"),
    ("negative_pool", "big", r"^negative_pool must be 'auto' or a pool size from 0 to "
                             r"1,000,000, got 'big'$"),
    ("negative_pool", 10**6 + 1, r"^negative_pool must be 'auto' or a pool size from 0 to "),
    ("walks_per_node", 10**6, r"^walks_per_node must be at most 10,000, got 1000000$"),
    ("beta_select", "best", r"^beta_select must be one of train, uniform, validation or a "
                            r"sequence of weights, got 'best'$"),
    ("beta_select", [-1.0, 2.0], r"^beta_select must be one of train, uniform, validation"),
    ("setting", "manual", r"^setting must be one of auto, given, got 'manual'$"),
    ("propagate", "order=0", r"^propagate: order must be a whole number >= 1, got 0$"),
    ("propagate", "mu=3", r"^propagate: mu must be in \[0, 2\], got 3$"),
    ("propagate", "theta=-1", r"^propagate: theta must be > 0, got -1$"),
    ("propagate", "size=3", r"^propagate: 'size=3' is not order=K, mu=M or theta=T"),
    ("propagate", 1, r"^propagate must be True, False, 'auto' or 'order=K,mu=M,theta=T', "
                     r"got 1$"),
    ("normalize", "l2", r"^normalize must be one of auto, none, got 'l2'$"),
    ("device", "gpu", r"^device must be one of cpu, cuda, got 'gpu'$"),
]


def test_every_parameter_has_a_bad_value_case():
    assert {name for name, _, _ in BAD} == set(NAMES)


@pytest.mark.parametrize("name, value, message", BAD)
def test_every_rule_refuses_a_bad_value_with_its_message(name, value, message):
    with pytest.raises(ValueError, match=message):
        param(name).rule.check(name, value)
    assert not param(name).rule.accepts(value)
    with pytest.raises(ValueError, match=message):  # the estimator's validation is the loop
        KernelNE(**{name: value})._check_params()


@pytest.mark.parametrize("name, value", [
    ("kernel", "Gaussian"), ("kernel", "sch"), ("sigma", None), ("kernels", "gauss:1,sch:2"),
    ("kernels", ["gauss:1", "sch:2"]), ("negatives", 0), ("workers", -1), ("workers", None),
    ("dim", np.int64(8)), ("random_state", np.random.default_rng(0)), ("rounds", None),
    ("window_shrink", np.bool_(True)), ("negative_pool", 0), ("negative_pool", np.int32(64)),
    ("kernel", "auto"), ("kernel", "AUTO"), ("sigma", "auto"), ("loss", "auto"),
    ("window_shrink", "auto"),
    ("partition_dir", "s3://bucket/run"), ("subsample", 1e-3), ("reg", 0),
])
def test_rules_accept_the_documented_forms(name, value):
    assert param(name).rule.accepts(value)


def test_the_cross_checks_stay_after_the_rules():
    with pytest.raises(ValueError, match=r"^need 0 < min_lr <= lr"):
        KernelNE(lr=0.01, min_lr=0.02)._check_params()
    with pytest.raises(ValueError, match="drop shared_negatives"):
        KernelNE(partitions=2, shared_negatives=True)._check_params()
    with pytest.raises(ValueError, match="needs kernel='multi'"):
        KernelNE(beta_select="uniform")._check_params()


def test_a_random_state_generator_is_not_advanced_by_the_check():
    rng = np.random.default_rng(3)
    KernelNE(random_state=rng)._check_params()
    assert rng.integers(0, 2**31) == np.random.default_rng(3).integers(0, 2**31)


# ---- what is derived from the table ----------------------------------------------------------


@pytest.mark.parametrize("command", [["embed", "-", "-o", "-"], ["demo"]])
def test_the_command_line_defaults_are_the_constructor_defaults(command):
    args = build_parser().parse_args(command)
    sig = constructor_defaults()
    mapped = [row for row in PARAMS if row.cli is not None and hasattr(args, row.cli.dest)]
    groups = {"model", "partition"} if command[0] == "embed" else {"model"}
    assert mapped == [row for row in PARAMS if row.cli is not None and row.cli.group in groups]
    for row in mapped:
        value = getattr(args, row.cli.dest)
        if row.cli.invert:
            value = not value
        assert value == sig[row.name], row.name


def test_the_model_of_the_default_options_is_the_default_model():
    args = build_parser().parse_args(["embed", "-", "-o", "-"])
    model = model_from_args(args, verbose=False)
    assert model.get_params() == KernelNE().get_params()


def test_options_reach_the_model():
    args = build_parser().parse_args(
        ["embed", "-", "-o", "-", "--kernel", "sch", "--alpha", "2", "--negatives", "3",
         "--seed", "7", "--window-shrink", "--negative-pool", "64", "--rounds", "4",
         "--partition-dir", "memory://x", "--beta-select", "uniform", "--lr", "0.05"])
    got = model_from_args(args, verbose=True).get_params()
    assert {k: got[k] for k in ("kernel", "alpha", "negatives", "random_state",
                                "window_shrink", "negative_pool", "rounds", "partition_dir",
                                "beta_select", "lr", "verbose", "robust", "setting")} == {
        "kernel": "sch", "alpha": 2.0, "negatives": 3, "random_state": 7,
        "window_shrink": True, "negative_pool": 64, "rounds": 4, "partition_dir": "memory://x",
        "beta_select": "uniform", "lr": 0.05, "verbose": True, "robust": True,
        "setting": "auto"}
    paper = model_from_args(build_parser().parse_args(["embed", "-", "-o", "-", "--paper"]),
                            verbose=False)
    assert (paper.robust, paper.setting, paper.normalize) == (False, "given", "none")


def test_the_option_maps_come_from_the_table():
    assert OPTION_PARAMS["seed"] == "random_state" and OPTION_PARAMS["paper"] == "robust"
    assert OPTION_PARAMS["partitions"] == "partitions" and "keep_walks" not in OPTION_PARAMS
    assert KERNEL_OPTIONS == {"sigma": ("gauss",), "alpha": ("schoenberg", "sch"),
                              "kernels": ("multi",), "beta_reg": ("multi",),
                              "beta_update": ("multi",), "beta_select": ("multi",)}
    sig = constructor_defaults()
    assert KERNEL_DEFAULTS == {name: sig[name] for name in KERNEL_OPTIONS}


def test_the_automatic_setting_defaults_come_from_the_table():
    assert CHOICE_DEFAULTS == {"kernel": "auto", "sigma": "auto", "kernels": None,
                               "loss": "auto", "window_shrink": "auto",
                               "beta_select": "train"}
    assert PAPER_SETTING == {"kernel": "gauss", "sigma": math.sqrt(2.0), "loss": "squared",
                             "window_shrink": False, "walks_per_node": 80}
    assert "walks_per_node" not in CHOICE_DEFAULTS  # given, it keeps the setting's choice
    sig = constructor_defaults()
    assert all(CHOICE_DEFAULTS[name] == sig[name] for name in CHOICE_DEFAULTS)


def test_the_choices_are_those_of_the_code_that_reads_them():
    assert ("auto", *LOSSES) == param("loss").rule.choices
    assert BETA_UPDATES == ("projected", "simplex")
    assert SETTINGS == ("auto", "given") and NORMALIZE == ("auto", "none")


def test_the_command_line_rule_may_be_stricter():
    assert param("negatives").rule.accepts(0)
    args = build_parser().parse_args(["embed", "-", "-o", "-", "--negatives", "1"])
    assert args.negatives == 1
    with pytest.raises(SystemExit):
        build_parser().parse_args(["embed", "-", "-o", "-", "--negatives", "0"])


def test_every_option_has_a_command_line_type():
    for row in PARAMS:
        if row.cli is not None and not isinstance(row.cli.rule or row.rule, Options):
            rule = row.cli.rule or row.rule
            if row.cli.choices is None and type(rule).__name__ != "Flag":
                option_type(rule)  # TypeError if none
    with pytest.raises(TypeError, match="no command-line type"):
        option_type(Integer(5))
    assert option_type(Real(0.0, low_closed=False)).__name__ == "positive_number"
    assert option_type(AnyOf((Options(("auto",)), Integer(0)), "x")).__name__ == "pool_setting"


def test_the_pool_option_names_its_cap():
    assert f"at most {MAX_POOL:,})" in param("negative_pool").cli.help


def test_a_bad_option_value_is_refused_naming_the_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["embed", "-", "-o", "-", "--subsample", "1"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--subsample" in err and "a threshold in [0, 1)" in err and "Traceback" not in err
