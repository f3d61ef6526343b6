"""``--paper`` and the options it sets: an explicit option that contradicts it is refused
naming both, one that agrees is accepted (audit 5 E6)."""

from __future__ import annotations

import pytest
from cli_runs import FAST, KARATE, only_error_line, run_cli

from kernelne.cli.app import build_parser
from kernelne.cli.options import check_model_options, given_options, model_from_args
from kernelne.model.params import BY_NAME, PAPER

#: for each option --paper sets, values that contradict it and values that say the same
CONTRADICTING = {"setting": ["auto"], "normalize": ["auto"],
                 "propagate": ["auto", "on", "order=5"]}
AGREEING = {"setting": ["given"], "normalize": ["none"], "propagate": ["off"]}


def test_every_option_paper_sets_is_tested():
    assert set(CONTRADICTING) == set(AGREEING) == set(PAPER)


def spelled(name: str) -> str:
    """What --paper sets ``name`` to, as the command line writes it."""
    return BY_NAME[name].rule.spelled(PAPER[name])


def flag(name: str) -> str:
    return BY_NAME[name].cli.flags[-1]


@pytest.mark.parametrize("name, value", [(n, v) for n in sorted(CONTRADICTING)
                                         for v in CONTRADICTING[n]])
@pytest.mark.parametrize("paper_first", [True, False])
def test_an_option_contradicting_paper_is_refused_naming_both(tmp_path, capsys, name, value,
                                                              paper_first):
    options = [flag(name), value]
    options = ["--paper", *options] if paper_first else [*options, "--paper"]
    out = tmp_path / "e.npy"
    code, err = run_cli(["embed", KARATE, "-o", out, *FAST, *options], capsys)
    line = only_error_line(err)
    assert code == 2 and not out.exists() and list(tmp_path.iterdir()) == []
    assert f"{flag(name)} {value} contradicts --paper" in line
    assert f"sets {flag(name)} {spelled(name)}" in line


def test_the_audit_command_is_refused(tmp_path, capsys):
    out = tmp_path / "e18.npy"
    code, err = run_cli(["embed", KARATE, "-o", out, "--walks-per-node", "2", "--dim", "8",
                         "--seed", "0", "--workers", "1", "--paper", "--normalize", "auto",
                         "--setting", "auto"], capsys)
    assert code == 2 and not out.exists()
    assert "contradicts --paper" in only_error_line(err)


def test_options_agreeing_with_paper_are_accepted(tmp_path, capsys):
    agreeing = [part for name, values in AGREEING.items() for part in (flag(name), values[0])]
    out = tmp_path / "e.npy"
    code, err = run_cli(["embed", KARATE, "-o", out, *FAST, "--paper", *agreeing], capsys)
    assert code == 0 and out.exists(), err
    args = build_parser().parse_args(["embed", "g", "-o", "e.npy", "--paper", *agreeing])
    check_model_options(args)
    params = model_from_args(args, verbose=False).get_params()
    assert {name: params[name] for name in PAPER} == PAPER and params["robust"] is False
    assert BY_NAME["propagate"].rule.same("off", False)


def test_without_paper_the_defaults_given_explicitly_are_kept():
    explicit = [part for name in PAPER for part in (flag(name), BY_NAME[name].default)]
    args = build_parser().parse_args(["embed", "g", "-o", "e.npy", *explicit])
    check_model_options(args)
    params = model_from_args(args, verbose=False).get_params()
    assert {name: params[name] for name in PAPER} == {n: BY_NAME[n].default for n in PAPER}
    assert set(given_options(args)) == {BY_NAME[name].cli.dest for name in PAPER}
    assert given_options(build_parser().parse_args(["embed", "g", "-o", "e.npy"])) == {}


def test_the_help_of_paper_says_what_it_sets():
    help_text = " ".join(BY_NAME["robust"].cli.help.split())
    for name in PAPER:
        assert f"{flag(name)} {spelled(name)}" in help_text
