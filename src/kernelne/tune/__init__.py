"""Choosing a method's settings on validation data, then refitting: :func:`tune` and
:class:`TuneResult`.

``space`` holds each method's search space and defaults, ``protocols`` the two ways a trial
is scored (labelled nodes, held-out links), ``result`` the outcome and its report, ``search``
the search itself.

It may import the model, the baselines, the evaluation, the graphs and the base modules;
never the CLI.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "tune":
        from kernelne.tune.search import tune

        return tune
    if name == "TuneResult":
        from kernelne.tune.result import TuneResult

        return TuneResult
    raise AttributeError(f"module 'kernelne.tune' has no attribute {name!r}")
