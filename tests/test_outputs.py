"""``atomic_path``: a killed writer's temporary is removed by the next write, concurrent writers
leave one whole file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path):
    out = tmp_path / "emb.txt"
    script = ("import os, signal, sys\nfrom kernelne.outputs import atomic_path\n"
              "with atomic_path(sys.argv[1]) as tmp:\n"
              "    tmp.write_text('half')\n    os.kill(os.getpid(), signal.SIGKILL)\n")
    done = subprocess.run([sys.executable, "-c", script, str(out)], env=_env())
    assert done.returncode == -9
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith(".emb.txt.") and left[0].endswith(".tmp")
    from kernelne.outputs import atomic_path

    live = tmp_path / f".emb.txt.{os.getpid()}.abcdefgh.tmp"  # a live writer's: kept
    live.write_text("being written")
    with atomic_path(out) as tmp:
        tmp.write_text("whole")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, "emb.txt"])
    assert out.read_text() == "whole"


def test_concurrent_writers_leave_one_whole_file(tmp_path):
    out = tmp_path / "emb.txt"
    script = ("import sys\nfrom kernelne.outputs import atomic_path\n"
              "for _ in range(40):\n"
              "    with atomic_path(sys.argv[1]) as tmp:\n"
              "        tmp.write_text(sys.argv[2] * 100000)\n")
    writers = [subprocess.Popen([sys.executable, "-c", script, str(out), c], env=_env())
               for c in "abcd"]
    assert all(w.wait() == 0 for w in writers)
    text = out.read_text()
    assert len(text) == 100000 and len(set(text)) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["emb.txt"]


def _env():
    return {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}


def test_numpys_short_write_reads_as_a_full_disk(tmp_path):
    """numpy reports a short write (a full disk, a quota) as 'N requested and M written',
    without errno: the error line says what it means."""
    from kernelne.errors import InputError
    from kernelne.outputs import atomic_path

    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with open("/dev/full", "wb", buffering=0) as full:
        with pytest.raises(OSError) as raised:
            np.zeros(662).tofile(full)  # none of the 662 values written
    assert raised.value.errno is None and "requested and" in str(raised.value)
    target = tmp_path / "B2.v1.npy"
    with pytest.raises(InputError) as err:
        with atomic_path(target):
            raise raised.value
    assert str(err.value) == (f"cannot write {target}: No space left on device (only 0 of "
                              "662 values written)")
    assert list(tmp_path.iterdir()) == []
