"""Messages that name a parameter spell it as their reader writes it: ``--beta-select train``
on the command line, ``beta_select='train'`` in Python (audit 5 A42)."""

from __future__ import annotations

import pytest
from cli_runs import FAST, KARATE, only_error_line, run_cli

from kernelne.errors import InputError, ParamError
from kernelne.model.kernelne import KernelNE


@pytest.mark.parametrize("options, cli_words, python", [
    (["--partitions", "2", "--kernel", "multi", "--beta-select", "validation"],
     ["(--partitions > 1) learns the kernel weights: use --beta-select train"],
     dict(partitions=2, kernel="multi", beta_select="validation")),
    (["--partitions", "2", "--shared-negatives"],
     ["(--partitions > 1) uses negatives per pair: drop --shared-negatives"],
     dict(partitions=2, shared_negatives=True)),
    (["--kernel", "gauss", "--beta-select", "uniform"],
     ["--beta-select uniform needs --kernel multi with at least two kernels"],
     dict(kernel="gauss", beta_select="uniform")),
])
def test_a_parameter_conflict_names_the_options_on_the_command_line(tmp_path, capsys, options,
                                                                    cli_words, python):
    out = tmp_path / "e.npy"
    code, err = run_cli(["embed", KARATE, "-o", out, *FAST, *options], capsys)
    line = only_error_line(err.replace(
        "kernelne: note: --beta-select is not used by --kernel gauss (only by --kernel "
        "multi)\n", ""))
    assert code == 2 and not out.exists()
    for words in cli_words:
        assert words in line
    assert "=" not in line and "_" not in line  # no Python spelling left
    with pytest.raises(ValueError) as raised:  # the same check in Python: Python's spelling
        KernelNE(**python)._check_params()
    text = str(raised.value)
    assert "--" not in text and ("beta_select=" in text or "shared_negatives" in text)


def test_the_partitioned_limits_name_the_option_or_the_parameter(tmp_path, capsys):
    from kernelne.graphs.graph import load_graph

    code, err = run_cli(["embed", KARATE, "-o", tmp_path / "e.npy", *FAST, "--partitions",
                         "20"], capsys)
    assert code == 2 and "--partitions 20 is too many" in only_error_line(err)
    with pytest.raises(InputError, match=r"^partitions=20 is too many for a graph of 34 nodes"):
        KernelNE(partitions=20, dim=4, walks_per_node=2, workers=1).fit(load_graph(KARATE))


def test_param_error_spells_values_as_python_literals():
    error = ParamError("{a=train} {b=2} {c=True} {d} {e=x}", "f.npz")
    assert str(error) == "f.npz: a='train' b=2 c=True d e='x'"
    assert error.spelled({"a": "--a", "b": "--bee", "d": "--d"}) == (
        "f.npz: --a train --bee 2 c=True --d e='x'")
