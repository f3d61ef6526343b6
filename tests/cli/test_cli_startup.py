"""Start-up: building the parser, ``--version`` and a subcommand's ``--help`` load none of
the heavy libraries; each command imports what it needs when it runs."""

from __future__ import annotations

import json
import subprocess
import sys

#: libraries that take a large share of a second or more to import, and their compiled code
HEAVY = ("sklearn", "gensim", "distributed", "dask", "optuna", "matplotlib", "numba",
         "scipy.sparse.linalg", "pyarrow", "networkx", "kernelne.engine.walks",
         "kernelne.engine.trainer", "kernelne.model.kernelne")

PROBE = """
import json, sys
from kernelne.cli.app import build_parser, main
build_parser()
for argv in {argvs!r}:
    try:
        main(argv)
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def loaded_after(*argvs: list[str]) -> list[str]:
    """The modules of :data:`HEAVY` loaded in a fresh interpreter after building the parser
    and running ``kernelne ARGV`` for each of ``argvs``."""
    code = PROBE.format(argvs=list(argvs), heavy=HEAVY)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_parser_and_help_load_no_heavy_library():
    assert loaded_after(["--version"], ["embed", "--help"], ["update", "--help"],
                        ["evaluate", "--help"], ["evaluate", "classify", "--help"],
                        ["tune", "--help"], ["reproduce", "--help"], ["plot", "--help"],
                        ["datasets", "--help"], ["generate", "--help"]) == []


def test_the_probe_sees_a_command_that_loads_them(tmp_path):
    """The same probe, on a command that needs scikit-learn, reports it: the test above can
    fail."""
    assert "sklearn" in loaded_after(["evaluate", "classify", str(tmp_path / "missing.npy"),
                                      str(tmp_path / "missing.labels")])
