"""The fit's progress bars (counting, walks, training) on stderr on a terminal only, as for
``evaluate`` and ``plot``; ``--no-progress`` and ``--quiet`` turn them off; the library's
``verbose`` keeps its meaning."""

from __future__ import annotations

import sys

import pytest
from cli_runs import KARATE

from kernelne.cli.app import main

SMALL = ["--dim", "8", "--walks-per-node", "2", "--workers", "1", "--seed", "0"]
BARS = ("counting:", "training:", "walk/s")


def shows_bars(err: str) -> bool:
    return all(word in err for word in BARS)


def shows_no_bar(err: str) -> bool:
    return not any(word in err for word in BARS)


@pytest.mark.parametrize("command", ["embed", "demo"])
def test_the_fit_draws_its_bars_on_a_terminal_only(tmp_path, capsys, monkeypatch, command):
    argv = (["embed", str(KARATE), "-o", str(tmp_path / "e.npy")] if command == "embed"
            else ["demo"]) + SMALL
    assert main(argv) == 0  # capsys: stderr is not a terminal
    piped = capsys.readouterr()
    assert shows_no_bar(piped.err), piped.err
    assert "pairs" in piped.out  # the summary stays
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(argv) == 0
    assert shows_bars(capsys.readouterr().err)
    assert main(argv + ["--no-progress"]) == 0
    shown = capsys.readouterr()
    assert shows_no_bar(shown.err) and "pairs" in shown.out


def test_quiet_draws_no_bar_on_a_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["embed", str(KARATE), "-o", str(tmp_path / "e.npy"), *SMALL, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_a_fit_without_bars_still_announces_compiling(capsys):
    from numba import njit

    from kernelne.cli.options import compiling_announced
    from kernelne.engine.compiling import MESSAGE

    @njit
    def fresh(x):  # never compiled before: a real compilation
        return x * 3 + 1

    with compiling_announced(True):
        assert fresh(2) == 7
    assert capsys.readouterr().err.splitlines() == [MESSAGE]

    @njit
    def other(x):
        return x * 5 + 1

    with compiling_announced(False):
        assert other(2) == 11
    assert capsys.readouterr().err == ""


def test_the_library_verbose_draws_bars_anywhere(capsys):
    from kernelne.graphs.graph import load_graph
    from kernelne.model.kernelne import KernelNE

    graph = load_graph(KARATE)
    KernelNE(dim=8, walks_per_node=2, workers=1, random_state=0, verbose=True).fit(graph)
    assert shows_bars(capsys.readouterr().err)  # stderr is not a terminal: drawn anyway
    KernelNE(dim=8, walks_per_node=2, workers=1, random_state=0).fit(graph)
    assert shows_no_bar(capsys.readouterr().err)
