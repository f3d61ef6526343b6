"""Embedding outputs by suffix: Parquet (``node`` + ``dim_*`` float32) round-trips through
pyarrow and ``load_embedding``; a suffix that names no format is refused before the fit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from kernelne.cli.app import main
from kernelne.embedding_io import WRITE_SUFFIXES, load_embedding, save_embedding
from kernelne.errors import InputError
from kernelne.model.kernelne import KernelNE

KARATE = Path(__file__).parents[2] / "examples" / "karate.edgelist"
SMALL = ["--dim", "8", "--walks-per-node", "2", "--walk-length", "5", "--window", "3",
         "--workers", "1", "--seed", "0"]


def test_embed_writes_parquet_that_pyarrow_reads(tmp_path, capsys):
    out, ref = tmp_path / "emb.parquet", tmp_path / "emb.npy"
    assert main(["embed", str(KARATE), "-o", str(out), *SMALL]) == 0
    assert main(["embed", str(KARATE), "-o", str(ref), *SMALL]) == 0
    assert out.read_bytes()[:4] == b"PAR1"
    table = pq.read_table(out)
    assert table.column_names == ["node"] + [f"dim_{j}" for j in range(8)]
    assert str(table.schema.field("node").type) == "int64"
    assert all(str(table.schema.field(f"dim_{j}").type) == "float" for j in range(8))
    rows = np.column_stack([table.column(f"dim_{j}").to_numpy() for j in range(8)])
    np.testing.assert_array_equal(rows, np.load(ref))
    assert table.column("node").to_pylist() == list(range(34))
    vectors, nodes = load_embedding(out)
    np.testing.assert_array_equal(vectors, rows)
    assert nodes.tolist() == list(range(34))
    assert main(["plot", str(out), "-o", str(tmp_path / "m.png")]) == 0  # read back by plot


def test_parquet_keeps_string_ids(tmp_path):
    vectors = np.arange(6, dtype=np.float32).reshape(3, 2)
    nodes = np.array(["b", "007", "x y"], dtype=object)
    save_embedding(tmp_path / "e.PARQUET", vectors, nodes)
    table = pq.read_table(tmp_path / "e.PARQUET")
    assert table.column("node").to_pylist() == ["b", "007", "x y"]
    back, ids = load_embedding(tmp_path / "e.PARQUET")
    np.testing.assert_array_equal(back, vectors)
    assert ids.tolist() == ["b", "007", "x y"]


def test_a_table_that_is_not_an_embedding_is_refused(tmp_path):
    import pyarrow as pa

    pq.write_table(pa.table({"source": [0], "target": [1]}), tmp_path / "g.parquet")
    with pytest.raises(InputError, match="g.parquet: not an embedding table"):
        load_embedding(tmp_path / "g.parquet")


@pytest.mark.parametrize("name", ["emb.parq", "emb.csv", "emb", "emb.txt.gz", "emb.pkl"])
def test_an_unknown_suffix_is_refused_before_the_fit(name, tmp_path, capsys, monkeypatch):
    fits = []
    monkeypatch.setattr(KernelNE, "fit", lambda self, *a, **k: fits.append(1))
    out = tmp_path / name
    assert main(["embed", str(KARATE), "-o", str(out), *SMALL]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("kernelne: error: ")
    assert str(out) in err and ".parquet" in err and "Traceback" not in err
    assert fits == [] and not out.exists()
    with pytest.raises(InputError, match="cannot write an embedding"):
        save_embedding(out, np.zeros((2, 2)))
    assert not out.exists()


@pytest.mark.parametrize("suffix", sorted(WRITE_SUFFIXES))
def test_every_known_suffix_round_trips(suffix, tmp_path):
    vectors = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    nodes = np.array([10, 3, 7, 99, 1])
    save_embedding(tmp_path / f"e{suffix}", vectors, nodes)
    back, ids = load_embedding(tmp_path / f"e{suffix}")
    np.testing.assert_allclose(back, vectors, rtol=1e-5)
    assert ids.tolist() == nodes.tolist()
