"""Shared helpers for the benchmark scripts: timing medians, peak memory, JSON lines."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path


def reset_peak_rss() -> None:
    """Reset the process' peak resident set size (Linux: writing 5 to clear_refs)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_rss_mb() -> float:
    """Peak resident set size since the last reset, in MiB (VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed(fn, repeats: int) -> tuple[float, float, list[float]]:
    """Run ``fn`` ``repeats`` times; return (median seconds, peak MiB above start, all times)."""
    times = []
    peak = 0.0
    for _ in range(repeats):
        base = current_rss_mb()
        reset_peak_rss()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
        peak = max(peak, peak_rss_mb() - base)
    return statistics.median(times), peak, times


#: Python source that starts a thread sampling this process's ``RssAnon`` every 20 ms into
#: ``anon[0]`` (KiB): the peak of the memory it holds itself, not the file pages it maps.
#: Prepended to a child process's script (``python -c``).
WATCH_ANONYMOUS = r"""
import threading as _threading, time as _time
anon = [0]
def _watch():
    while True:
        with open("/proc/self/status") as fh:
            kib = next(int(l.split()[1]) for l in fh if l.startswith("RssAnon:"))
        anon[0] = max(anon[0], kib)
        _time.sleep(0.02)
_threading.Thread(target=_watch, daemon=True).start()
"""


def emit(line: dict, out: str | None = None) -> None:
    """Print ``line`` as one JSON line and, with ``out``, append it to that file."""
    text = json.dumps(line)
    print(text, flush=True)
    if out:
        with open(out, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
