"""kernelne plot: maps are drawn from any embedding, coloured by label."""

from __future__ import annotations

import numpy as np
import pytest

from kernelne.cli.app import main
from kernelne.evaluation.plot import plot_embedding, project


def test_projection_separates_planted_groups():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(3), 40)
    X = np.eye(3)[groups] * 5 + rng.normal(0, 0.3, (120, 3))
    for method in ("pca", "tsne"):
        xy = project(X, method, seed=0)
        centres = np.array([xy[groups == g].mean(axis=0) for g in range(3)])
        spread = max(np.linalg.norm(xy[groups == g] - centres[g], axis=1).mean()
                     for g in range(3))
        gaps = [np.linalg.norm(centres[a] - centres[b]) for a in range(3) for b in range(a)]
        assert min(gaps) > 2 * spread, method


def test_plot_command_writes_an_image(tmp_path, capsys):
    rng = np.random.default_rng(1)
    emb = tmp_path / "emb.npy"
    np.save(emb, rng.normal(size=(60, 8)).astype(np.float32))
    labels = tmp_path / "labels.txt"
    labels.write_text("\n".join(f"{i} {i % 3}" for i in range(50)))  # 10 unlabelled nodes
    out = tmp_path / "map.png"
    assert main(["plot", str(emb), "--labels", str(labels), "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["plot", str(emb), "-o", str(emb)]) == 2  # never over an input


def test_sampling_caps_the_points(tmp_path):
    rng = np.random.default_rng(2)
    path = plot_embedding(rng.normal(size=(500, 4)), None, tmp_path / "m.png", sample=100)
    assert path.exists()
    with pytest.raises(Exception, match="umap"):
        project(np.zeros((5, 2)), "nope")
