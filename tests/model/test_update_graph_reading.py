"""``kernelne update`` reads the graph as the model was fitted (directed or not); older model files
fall back to their parameters."""

from __future__ import annotations

import numpy as np
import pytest
from cli_runs import FAST, KARATE
from cli_runs import run_cli as _run

from kernelne.cli.app import main
from kernelne.errors import InputError
from kernelne.graphs.graph import load_graph


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    for name, extra in [("directed", ["--directed"]), ("undirected", [])]:
        assert main(["embed", str(KARATE), "-o", str(folder / f"{name}.npy"), *FAST,
                     "--model-out", str(folder / f"{name}.npz"), *extra]) == 0
    return folder


@pytest.mark.parametrize("fitted, extra, message", [
    ("directed", [], "fitted on a directed graph but this graph is read undirected: pass "
     "--directed"),
    ("undirected", ["--directed"], "fitted on an undirected graph but this graph is read "
     "directed: leave out --directed"),
])
def test_update_refuses_the_other_reading_of_the_graph(models, tmp_path, capsys, fitted, extra,
                                                       message):
    out = tmp_path / "u.txt"
    code, err = _run(["update", models / f"{fitted}.npz", KARATE, "-o", out, "--quiet", *extra],
                     capsys)
    assert code == 2 and message in err and not out.exists()
    code, err = _run(["update", models / f"{fitted}.npz", KARATE, "-o", out, "--quiet",
                      *(["--directed"] if fitted == "directed" else [])], capsys)
    assert code == 0, err


def test_older_model_files_fall_back_to_params_or_accept(models, tmp_path):
    import json

    from kernelne.model.kernelne import KernelNE

    with np.load(models / "directed.npz") as z:
        arrays = {k: z[k] for k in z.files if k != "directed"}
    np.savez(tmp_path / "old.npz", **arrays)  # written before the key existed
    assert KernelNE.load_model(tmp_path / "old.npz").directed_ is None
    KernelNE.load_model(tmp_path / "old.npz").partial_fit(load_graph(KARATE))  # accepted
    params = json.loads(str(arrays["params"]))
    np.savez(tmp_path / "p.npz", **{**arrays, "params": np.array(json.dumps(
        {**params, "directed": True}))})
    model = KernelNE.load_model(tmp_path / "p.npz")
    assert model.directed_ is True
    with pytest.raises(InputError, match="fitted on a directed graph"):
        model.partial_fit(load_graph(KARATE))
    model.partial_fit(KARATE)  # a path is read as the model's graph was
