"""The rows' float32 initialisation (bit for bit the float64 one, a chunk at a time) and what a dim
too large for memory says."""

from __future__ import annotations

import numpy as np
import pytest
from cli_runs import FAST, KARATE
from cli_runs import run_cli as _run


@pytest.mark.parametrize("n, d, chunk", [(34, 128, 1000), (7, 5, 3), (10, 1, 1 << 20), (3, 9, 4)])
def test_float32_initialisation_is_bit_for_bit_the_float64_one(monkeypatch, n, d, chunk):
    import kernelne.engine.rows

    monkeypatch.setattr(kernelne.engine.rows, "CHUNK_VALUES", chunk)
    before = np.random.default_rng(7).uniform(-0.5 / d, 0.5 / d, size=(n, d)).astype(np.float32)
    after = kernelne.engine.rows.uniform_rows(np.random.default_rng(7), n, d, 0.5 / d)
    assert after.dtype == np.float32 and after.tobytes() == before.tobytes()


def test_a_huge_dim_is_one_line_naming_the_sizes(tmp_path, capsys):
    out = tmp_path / "emb.txt"
    code, err = _run(["embed", KARATE, "-o", out, *FAST,
                      "--dim", str(10**12)], capsys)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "2 x 34 nodes x 1,000,000,000,000 float32 = 253,319.7 GiB" in err and "--dim" in err
    assert not out.exists()


def test_running_out_of_memory_for_the_rows_is_one_line(tmp_path, capsys, monkeypatch):
    import kernelne.model.restarts

    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(kernelne.model.restarts, "uniform_rows", no_memory)
    code, err = _run(["embed", KARATE, "-o", tmp_path / "e.txt", *FAST],
                     capsys)
    assert code == 2 and err.strip() == ("kernelne: error: dim=4: not enough free memory for "
                                         "the rows (2 x 34 nodes x 4 float32 = 0.0 GiB): lower "
                                         "--dim, or train with --partitions P (the rows on "
                                         "disk)")
