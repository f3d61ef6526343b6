"""Model options a baseline method ignores are reported."""

from __future__ import annotations

from cli_runs import run_cli as _run


def test_options_a_method_ignores_are_reported(graph_file, tmp_path, capsys):
    code, err = _run(["embed", graph_file, "-o", tmp_path / "e.npy", "--method", "hope",
                      "--sigma", "0.5", "--dim", "4", "--quiet"], capsys)
    assert code == 0 and "--sigma is not used by --method hope" in err
    assert "--dim" not in err
