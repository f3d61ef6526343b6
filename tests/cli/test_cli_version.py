"""``--version`` and the job counts."""

from __future__ import annotations

import os

import pytest

from kernelne.cli.app import main
from kernelne.outputs import cap_jobs


def test_version_and_job_counts(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and "kernelne 0." in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["reproduce", "--jobs", "0"])
    assert exit_.value.code == 2 and "positive number of jobs" in capsys.readouterr().err
    cores = os.cpu_count() or 1
    assert cap_jobs(1000, 3) == min(3, cores) and cap_jobs(-1, 100) == cores
    assert cap_jobs(None, 0) == 1
