"""Model options a baseline method ignores are reported."""

from __future__ import annotations

import pytest

from kernelne.cli.app import main

EDGES = "\n".join(f"{i} {(i + 1) % 30}" for i in range(30)) + "\n0 15\n3 20\n"


@pytest.fixture
def graph_file(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text(EDGES)
    return path


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_options_a_method_ignores_are_reported(graph_file, tmp_path, capsys):
    code, err = _run(["embed", graph_file, "-o", tmp_path / "e.npy", "--method", "hope",
                      "--sigma", "0.5", "--dim", "4", "--quiet"], capsys)
    assert code == 0 and "--sigma is not used by --method hope" in err
    assert "--dim" not in err
