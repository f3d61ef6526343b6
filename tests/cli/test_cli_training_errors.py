"""Training that diverges or has no pairs is one error line and no output."""

from __future__ import annotations

from cli_runs import FAST
from cli_runs import run_cli as _run


def test_diverged_training_is_an_error_without_output(graph_file, tmp_path, capsys):
    out = tmp_path / "emb.txt"
    code, err = _run(["embed", graph_file, "-o", out, "--kernel", "linear", "--lr", "1000",
                      "--min-lr", "1000", *FAST], capsys)
    assert code == 1 and "diverged" in err and not out.exists()
    assert not list(tmp_path.glob(".emb.txt.*"))  # no temporary file left behind


def test_zero_pair_training_is_an_error(graph_file, tmp_path, capsys):
    out = tmp_path / "emb.txt"
    code, err = _run(["embed", graph_file, "-o", out, "--walk-length", "1", *FAST], capsys)
    assert code == 1 and "no (center, context) pair" in err and not out.exists()
