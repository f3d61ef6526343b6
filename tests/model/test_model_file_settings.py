"""The settings of a model file follow the parameter table's rules and bounds when it is read
(audit 5 H17: a file edited to 10^6 walks per node made ``kernelne update`` run for ever)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from cli_runs import FAST, KARATE, only_error_line, run_cli

from kernelne.cli.app import main
from kernelne.errors import InputError
from kernelne.model.kernelne import KernelNE
from kernelne.model.params import LIMITS, MAX_POOL, param

#: karate with two new nodes, each tied to two old ones
GROWN = KARATE.read_text() + "34 0\n34 1\n35 33\n35 32\n"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    assert main(["embed", str(KARATE), "-o", str(folder / "e.npy"), *FAST, "--seed", "0",
                 "--model-out", str(folder / "m.npz")]) == 0
    (folder / "grown.txt").write_text(GROWN)
    return folder


def edited(saved, tmp_path, **changes):
    """A copy of the saved model file with ``changes`` in its settings."""
    with np.load(saved / "m.npz") as z:
        arrays = {k: z[k] for k in z.files}
    params = {**json.loads(str(arrays["params"])), **changes}
    path = tmp_path / "edited.npz"
    np.savez(path, **{**arrays, "params": np.array(json.dumps(params))})
    return path


def test_the_audit_file_is_refused_before_any_work(saved, tmp_path, capsys):
    model = edited(saved, tmp_path, walks_per_node=10**6, workers=10**9)
    out = tmp_path / "h26.npy"
    start = time.perf_counter()
    code, err = run_cli(["update", model, saved / "grown.txt", "-o", out, "--quiet"], capsys)
    line = only_error_line(err)
    assert code == 2 and not out.exists() and time.perf_counter() - start < 30
    assert str(model) in line and "bad setting in the model file" in line
    assert f"walks_per_node must be at most {LIMITS['walks_per_node']:,}, got 1000000" in line


@pytest.mark.parametrize("name, value, words", [
    *[(name, high + 1, f"{name} must be at most {high:,}") for name, high in LIMITS.items()],
    ("negative_pool", MAX_POOL + 1, f"pool size from 0 to {MAX_POOL:,}"),
    ("walks_per_node", 0, "walks_per_node must be at least 1"),
    ("window", "ten", "window must be an integer, got 'ten'"),
    ("lr", -1.0, "lr must be greater than 0"),
    ("min_lr", 1.0, "need 0 < min_lr <= lr"),
    ("kernel", "cubic", "unknown kernel 'cubic'"),
])
def test_load_model_checks_every_setting_against_the_table(saved, tmp_path, name, value,
                                                           words):
    path = edited(saved, tmp_path, **{name: value})
    with pytest.raises(InputError, match="bad setting in the model file") as raised:
        KernelNE.load_model(path)
    assert str(raised.value).startswith(f"{path}: ") and words in str(raised.value)


def test_the_limits_are_the_command_lines(tmp_path, capsys):
    for name, high in LIMITS.items():
        flag = param(name).cli
        if flag is None:  # chunk_walks: Python only
            continue
        with pytest.raises(SystemExit) as stopped:  # refused while parsing
            main(["embed", str(KARATE), "-o", str(tmp_path / "e.npy"), flag.flags[-1],
                  str(high + 1)])
        err = capsys.readouterr().err
        assert stopped.value.code == 2 and f"{high + 1:,}: at most {high:,}" in err, err
        assert not (tmp_path / "e.npy").exists()
    with pytest.raises(ValueError, match="walks_per_node must be at most"):
        KernelNE(walks_per_node=LIMITS["walks_per_node"] + 1)._check_params()
    KernelNE(**{name: high for name, high in LIMITS.items()})._check_params()  # the bound


def test_workers_beyond_the_cores_train_on_the_cores_there_are(saved, tmp_path, capsys):
    from kernelne.parallel import resolve_workers

    model = edited(saved, tmp_path, workers=10**9)
    assert resolve_workers(10**9) == resolve_workers(None)
    out = tmp_path / "u.npy"
    code, err = run_cli(["update", model, saved / "grown.txt", "-o", out, "--quiet"], capsys)
    assert code == 0, err
    assert np.load(out).shape == (36, 4)


def test_the_docstring_states_each_limit():
    doc = " ".join(KernelNE.__doc__.split())
    for name, high in LIMITS.items():
        entry = doc[doc.index(f"{name} : int"):]
        entry = entry[:entry.index(" : ", len(name) + 6)]
        assert f"at most {high:,}" in entry, name
