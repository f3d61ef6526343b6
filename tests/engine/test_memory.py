"""The peak memory that ``embed`` and the benchmarks report belongs to this process alone."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from kernelne.memory import peak_memory_mb, reset_peak_memory

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_the_peak_follows_an_allocation_and_starts_again_after_a_reset():
    rows = np.ones((100, 1 << 17))  # 100 MiB, touched
    high = peak_memory_mb()
    del rows
    assert reset_peak_memory()
    assert peak_memory_mb() < high - 80


def test_a_child_process_does_not_report_its_parents_peak():
    rows = np.ones((200, 1 << 17))  # 200 MiB resident in this process
    code = "from kernelne.memory import peak_memory_mb; print(peak_memory_mb())"
    child = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout)
    assert peak_memory_mb() > 200 > child
    del rows
