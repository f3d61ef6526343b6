"""``atomic_path``: a killed writer's temporary is removed by the next write, concurrent writers
leave one whole file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


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
