"""Choosing a method's settings on validation data, then refitting: :func:`tune` and
:class:`TuneResult`.

It may import the model, the baselines, the evaluation, the graphs and the base modules;
never the CLI.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name in ("tune", "TuneResult"):
        from kernelne.tune import search

        return getattr(search, name)
    raise AttributeError(f"module 'kernelne.tune' has no attribute {name!r}")
