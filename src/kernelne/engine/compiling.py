"""Numba compiles the walk and training loops on first use (``cache=True`` keeps them on disk
afterwards): about 20 s to a few minutes on a first run, nothing later. :func:`watch_compiling`
says so when it happens and times it, so that the speed reported is the training's, not the
compiler's; :func:`announce_first_compile` is the same line for a fit called from Python,
once per process (set :data:`ANNOUNCE` to ``False`` to silence it)."""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from contextlib import contextmanager

from numba.core import event

MESSAGE = "kernelne: compiling (first run only)..."

#: whether a fit called from Python prints :data:`MESSAGE` when numba starts compiling (once
#: per process; loads from numba's disk cache are not compilations): ``False`` silences it
ANNOUNCE = True

#: ``shown``: :data:`MESSAGE` printed in this process; ``watching``: :func:`watch_compiling`
#: blocks open (an enclosing one, the command line's, decides whether to announce)
_STATE = {"shown": False, "watching": 0}


class CompileWatch(event.Listener):
    """Seconds spent compiling, by the outermost numba function compiled (``seconds``)."""

    def __init__(self, announce: bool):
        self.announce = announce
        self.announced = False
        self.seconds: dict[str, float] = defaultdict(float)
        self._depth = 0
        self._name = ""
        self._started = 0.0

    def on_start(self, ev) -> None:
        if self._depth == 0:
            self._started = time.perf_counter()
            dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
            self._name = getattr(getattr(dispatcher, "py_func", None), "__name__", "?")
            if self.announce and not self.announced:
                from tqdm.auto import tqdm

                tqdm.write(MESSAGE, file=sys.stderr)
                self.announced = True
                _STATE["shown"] = True
        self._depth += 1

    def on_end(self, ev) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.seconds[self._name] += time.perf_counter() - self._started

    @property
    def total(self) -> float:
        return float(sum(self.seconds.values()))

    def of(self, *names: str) -> float:
        return float(sum(self.seconds.get(n, 0.0) for n in names))


@contextmanager
def watch_compiling(announce: bool = True):
    """Yield a :class:`CompileWatch` that records every numba compilation inside the block
    (loads from numba's disk cache are not compilations) and, with ``announce``, prints
    :data:`MESSAGE` once when the first one starts."""
    watch = CompileWatch(announce)
    _STATE["watching"] += 1
    try:
        with event.install_listener("numba:compile", watch):
            yield watch
    finally:
        _STATE["watching"] -= 1


@contextmanager
def announce_first_compile():
    """The announcement of a fit called from Python (``KernelNE.fit``, ``partial_fit``):
    :data:`MESSAGE` on stderr when the first numba compilation of the process starts, unless
    :data:`ANNOUNCE` is ``False``, the message was already printed, or an enclosing
    :func:`watch_compiling` block (the command line's, which honours ``--quiet``) decides.
    Yields the :class:`CompileWatch`."""
    announce = ANNOUNCE and not _STATE["shown"] and _STATE["watching"] == 0
    with watch_compiling(announce) as watch:
        yield watch
