"""A split folder with corrupt arrays is an input error."""

from __future__ import annotations

import pytest
from cli_runs import run_cli as _run


def test_corrupt_split_arrays_are_an_input_error(graph_file, tmp_path, capsys):
    from kernelne.errors import InputError
    from kernelne.evaluation.splits import LinkSplit

    assert _run(["split", graph_file, "-o", tmp_path / "s", "--test-fraction", "0.05"],
                capsys)[0] == 0
    (tmp_path / "s" / "split.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(InputError, match="split.npz"):
        LinkSplit.load(tmp_path / "s")
