"""A fit called from Python says, once per process, that numba is compiling (no disk cache
yet); the command line's ``--quiet`` and ``compiling.ANNOUNCE = False`` silence it. The
compilation is mocked: the fit fires numba's compile event instead of compiling."""

from __future__ import annotations

import pytest
from numba.core import event

from kernelne.cli.options import compiling_announced
from kernelne.engine import compiling
from kernelne.graphs.datasets import load_dataset
from kernelne.model import kernelne as kernelne_module
from kernelne.model.kernelne import KernelNE


@pytest.fixture
def compiles(monkeypatch):
    """Each fit "compiles" (numba's compile event, as a first run without a cache fires it);
    the process has not announced yet."""
    monkeypatch.setattr(compiling, "_STATE", {"shown": False, "watching": 0})

    def fake_fit(model, *args, **kwargs):
        with event.trigger_event("numba:compile", data={}):
            pass
        return model

    monkeypatch.setattr(kernelne_module, "fit_in_memory", fake_fit)
    graph = load_dataset("karate").graph
    return graph


def test_the_first_compiling_fit_says_so_once(compiles, capsys):
    KernelNE(workers=1, random_state=0).fit(compiles)  # verbose=False: no bar, but the line
    assert capsys.readouterr().err.splitlines() == [compiling.MESSAGE]
    KernelNE(workers=1, random_state=0, verbose=True).fit(compiles)
    assert compiling.MESSAGE not in capsys.readouterr().err  # once per process


def test_no_compilation_no_line(monkeypatch, capsys):
    monkeypatch.setattr(compiling, "_STATE", {"shown": False, "watching": 0})
    monkeypatch.setattr(kernelne_module, "fit_in_memory", lambda model, *a, **k: model)
    graph = load_dataset("karate").graph
    KernelNE(workers=1, random_state=0).fit(graph)  # numba's disk cache: nothing compiled
    assert capsys.readouterr().err == ""


def test_announce_false_and_the_command_lines_quiet_silence_it(compiles, capsys,
                                                               monkeypatch):
    with compiling_announced(False):  # `kernelne embed --quiet`
        KernelNE(workers=1, random_state=0).fit(compiles)
    assert capsys.readouterr().err == ""
    with compiling_announced(True):  # the command line's own line, not a second one
        KernelNE(workers=1, random_state=0).fit(compiles)
    assert capsys.readouterr().err.splitlines() == [compiling.MESSAGE]
    monkeypatch.setattr(compiling, "_STATE", {"shown": False, "watching": 0})
    monkeypatch.setattr(compiling, "ANNOUNCE", False)
    KernelNE(workers=1, random_state=0).fit(compiles)
    assert capsys.readouterr().err == ""
