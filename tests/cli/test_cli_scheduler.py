"""An unreachable ``--scheduler`` is one line."""

from __future__ import annotations

import pytest
from cli_runs import run_cli as _run


def test_unreachable_scheduler_is_one_line(tmp_path, capsys, data_dir):
    pytest.importorskip("distributed")
    code, err = _run(["reproduce", "--quick", "--no-progress", "--scheduler",
                      "tcp://127.0.0.1:9", "--out-dir", tmp_path / "out"], capsys)
    assert code == 2 and "cannot reach the Dask scheduler" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
