"""``kernelne reproduce`` checks its counts before it creates anything."""

from __future__ import annotations

import pytest

from kernelne.cli.app import main


@pytest.mark.parametrize("option, value", [("--workers", "0"), ("--workers", "-2"),
                                           ("--repeats", "0")])
def test_reproduce_refuses_bad_counts_before_creating_anything(tmp_path, capsys, monkeypatch,
                                                               option, value):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "--quick", "--out", str(tmp_path / "r"), option, value])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and f"argument {option}: {value}: must be at least 1" in err
    assert list(tmp_path.iterdir()) == []
