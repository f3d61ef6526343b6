"""``kernelne embed`` notes kernel options the chosen kernel ignores, and only those."""

from __future__ import annotations

import pytest
from cli_runs import FAST, KARATE
from cli_runs import run_cli as _run


@pytest.mark.parametrize("extra, flag", [
    (["--kernels", "gauss:1,sch:1"], "--kernels"),
    (["--kernel", "sch", "--sigma", "2"], "--sigma"),
    (["--kernel", "gauss", "--alpha", "2"], "--alpha"),
    (["--beta-update", "simplex"], "--beta-update"),
])
def test_kernel_options_the_kernel_ignores_get_a_note(tmp_path, capsys, extra, flag):
    code, err = _run(["embed", KARATE, "-o", tmp_path / "e.txt", *FAST, *extra], capsys)
    assert code == 0 and f"kernelne: note: {flag} is not used by --kernel" in err


def test_kernel_options_the_kernel_uses_get_no_note(tmp_path, capsys):
    code, err = _run(["embed", KARATE, "-o", tmp_path / "e.txt", *FAST, "--kernel", "multi",
                      "--kernels", "gauss:1,sch:1", "--beta-reg", "0.1"], capsys)
    assert code == 0 and "note" not in err


def test_kernel_auto_notes_what_it_may_not_use(tmp_path, capsys):
    code, err = _run(["embed", KARATE, "-o", tmp_path / "e.txt", *FAST, "--alpha", "2"], capsys)
    assert code == 0 and ("kernelne: note: --alpha is used only where --kernel auto becomes "
                          "--kernel schoenberg") in err
    code, err = _run(["embed", KARATE, "-o", tmp_path / "e.txt", *FAST, "--sigma", "2"], capsys)
    assert code == 0 and "note" not in err  # a width given keeps the Gaussian
