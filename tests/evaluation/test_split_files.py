"""A split folder with corrupt arrays is an input error."""

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


def test_corrupt_split_arrays_are_an_input_error(graph_file, tmp_path, capsys):
    from kernelne.errors import InputError
    from kernelne.evaluation.splits import LinkSplit

    assert _run(["split", graph_file, "-o", tmp_path / "s", "--test-fraction", "0.05"],
                capsys)[0] == 0
    (tmp_path / "s" / "split.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(InputError, match="split.npz"):
        LinkSplit.load(tmp_path / "s")
