"""``project`` and ``kernelne plot`` on small and odd inputs: any shape, a zero sample, labels that
match no node or only some."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from cli_runs import only_error_line, random_embedding
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelne.cli.app import main
from kernelne.evaluation.plot import plot_embedding, project


def leftovers(folder: Path, before: set[str]) -> set[str]:
    """Names in ``folder`` that were not there ``before`` (temporary files included)."""
    return set(os.listdir(folder)) - before


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 60), d=st.integers(1, 70), method=st.sampled_from(["pca", "tsne"]),
       seed=st.integers(0, 3))
def test_project_takes_any_shape(n, d, method, seed):
    X = np.random.default_rng(seed).normal(size=(n, d))
    xy = project(X, method, seed=seed)
    assert xy.shape == (n, 2) and np.isfinite(xy).all()


@pytest.mark.parametrize("n", [1, 2, 34])
@pytest.mark.parametrize("method", ["pca", "tsne"])
def test_plot_command_draws_small_embeddings(tmp_path, capsys, n, method):
    emb = random_embedding(tmp_path / "emb.txt", n, d=64)
    out = tmp_path / "map.png"
    assert main(["plot", str(emb), "--method", method, "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Traceback" not in capsys.readouterr().err


def test_plot_sample_zero_is_an_error(tmp_path, capsys):
    emb = random_embedding(tmp_path / "emb.txt", 20)
    before = set(os.listdir(tmp_path))
    assert main(["plot", str(emb), "--sample", "0", "-o", str(tmp_path / "m.png")]) == 2
    assert "--sample" in only_error_line(capsys.readouterr().err)
    assert not leftovers(tmp_path, before)


def test_plot_labels_matching_no_node_is_an_error(tmp_path, capsys):
    emb = random_embedding(tmp_path / "emb.txt", 20)
    labels = tmp_path / "other.labels"
    labels.write_text("".join(f"x{i} {i % 2}\n" for i in range(20)))
    before = set(os.listdir(tmp_path))
    code = main(["plot", str(emb), "--labels", str(labels), "-o", str(tmp_path / "m.png")])
    assert code == 2
    line = only_error_line(capsys.readouterr().err)
    assert "none of the 20 labelled nodes" in line and str(labels) in line
    assert not leftovers(tmp_path, before)


def test_plot_partial_labels_get_a_note_with_counts(tmp_path, capsys):
    emb = random_embedding(tmp_path / "emb.txt", 20)
    labels = tmp_path / "some.labels"
    labels.write_text("".join(f"{i} {i % 2}\n" for i in range(15)) + "99 1\n")
    assert main(["plot", str(emb), "--labels", str(labels), "-o", str(tmp_path / "m.png")]) == 0
    err = capsys.readouterr().err
    assert "kernelne: note: 15 of the embedding's 20 nodes have a label (5 drawn grey); " \
           "1 labelled nodes are not in the embedding" in err


def test_plot_embedding_api_raises_on_unmatched_labels(tmp_path):
    from kernelne.errors import InputError

    vectors = np.random.default_rng(0).normal(size=(10, 4))
    labels = (np.array(["a", "b"]), sp.csr_matrix(np.eye(2)))
    with pytest.raises(InputError, match="none of the 2 labelled nodes"):
        plot_embedding((vectors, np.arange(10)), labels, tmp_path / "m.png")
    assert not (tmp_path / "m.png").exists()
