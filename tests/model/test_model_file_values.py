"""Every value of a model file is checked when it is read (audit 6 M4, M6, M8-M11): a file
edited to values no fit writes is refused with one line naming the file and the array, not
turned into wrong rows with exit 0, a blame on ``--lr`` or a run without bound."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from cli_runs import FAST, KARATE, only_error_line, run_cli

from kernelne.cli.app import main
from kernelne.errors import InputError
from kernelne.model.kernelne import KernelNE

#: karate with two new nodes, each tied to two old ones
GROWN = KARATE.read_text() + "34 0\n34 1\n35 33\n35 32\n"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A plain model (``m.npz``), a propagated one (``mp.npz``) and the grown graph."""
    folder = tmp_path_factory.mktemp("model")
    assert main(["embed", str(KARATE), "-o", str(folder / "e.npy"), *FAST, "--seed", "0",
                 "--model-out", str(folder / "m.npz")]) == 0
    assert main(["embed", str(KARATE), "-o", str(folder / "ep.npy"), *FAST, "--seed", "0",
                 "--propagate", "--model-out", str(folder / "mp.npz")]) == 0
    (folder / "grown.txt").write_text(GROWN)
    return folder


def edited(source, target, changes):
    """A copy of the model file ``source`` at ``target``: each of ``changes`` (array name ->
    a function of the old array, or None to drop it) applied."""
    with np.load(source) as z:
        arrays = {k: z[k] for k in z.files}
    for key, change in changes.items():
        if change is None:
            arrays.pop(key)
        else:
            arrays[key] = change(arrays[key])
    np.savez(target, **arrays)
    return target


def _setting(params):
    return lambda old: np.array(json.dumps({**json.loads(str(old)), "params": params}))


# (id, model, changes, the words of the refusal)
EDITS = [
    ("output_scale-nan", "m", {"output_scale": lambda a: np.array(np.nan)},
     "output_scale must be a number from 0.0001 to 10000, found nan"),
    ("output_scale-0", "m", {"output_scale": lambda a: np.array(0.0)}, "output_scale must be"),
    ("output_scale--1", "m", {"output_scale": lambda a: np.array(-1.0)}, "output_scale must be"),
    ("output_scale-1e30", "m", {"output_scale": lambda a: np.array(1e30)},
     "output_scale must be a number from 0.0001 to 10000, found 1e+30"),
    ("output_scale-text", "m", {"output_scale": lambda a: np.array("2")},
     "output_scale must be a number"),
    ("beta-nan", "m", {"beta": lambda a: np.full_like(a, np.nan)},
     "beta must hold finite kernel weights >= 0, not all 0"),
    ("beta--1", "m", {"beta": lambda a: np.full_like(a, -1.0)}, "beta must hold finite"),
    ("beta-0", "m", {"beta": lambda a: np.zeros_like(a)}, "beta must hold finite"),
    ("kernel_scale-nan", "m", {"kernel_scale": lambda a: np.array(np.nan)},
     "kernel_scale must be a number from 1 to 64, found nan"),
    ("kernel_scale-0", "m", {"kernel_scale": lambda a: np.array(0.0)}, "kernel_scale must be"),
    ("kernel_scale--2", "m", {"kernel_scale": lambda a: np.array(-2.0)},
     "kernel_scale must be"),
    ("kernel_params--1", "m", {"kernel_params": lambda a: np.full_like(a, -1.0)},
     "kernel_params: gauss kernel needs sigma > 0, got -1.0"),
    ("walk_counts-negative", "m", {"walk_counts": lambda a: -a},
     "walk_counts holds negative counts"),
    ("walk_counts-0", "m", {"walk_counts": np.zeros_like}, "walk_counts is 0 for every node"),
    ("walk_counts-float", "m", {"walk_counts": lambda a: a.astype(float)},
     "walk_counts must hold whole numbers"),
    ("degrees--1", "m", {"degrees": lambda a: np.full_like(a, -1)},
     "degrees holds negative counts (the least is -1)"),
    ("kernel_kinds-evil", "m", {"kernel_kinds": lambda a: np.array(["evil"])},
     "kernel_kinds: 'evil' is not gauss, schoenberg or linear"),
    ("setting-junk", "m", {"setting": lambda a: np.array("junk{")}, "setting is not JSON"),
    ("setting-list", "m", {"setting": lambda a: np.array("[1]")},
     "setting must be a JSON object"),
    ("setting-params", "m", {"setting": _setting({"walks_per_node": 10**6})},
     "bad setting in the model file (setting): walks_per_node must be at most"),
    ("setting-unknown", "m", {"setting": _setting({"speed": 1})},
     "setting: params holds 'speed', which is no setting of KernelNE"),
    ("beta_update-x", "m", {"beta_update": lambda a: np.array("x")},
     "beta_update must be projected or simplex, found 'x'"),
    ("version-text", "m", {"version": lambda a: np.array("1")},
     "version must be the integer 1, found '1'"),
    ("format", "m", {"format": lambda a: np.array("kernelne-graph")},
     "not a kernelne model file"),
    ("params-junk", "m", {"params": lambda a: np.array("junk{")}, "params is not JSON"),
    ("params-unknown", "m",
     {"params": lambda a: np.array(json.dumps({**json.loads(str(a)), "speed": 1}))},
     "params holds 'speed', which is no setting of KernelNE"),
    ("directed-text", "m", {"directed": lambda a: np.array("yes")},
     "directed must be a flag"),
    ("propagation-garbage", "mp", {"propagation": lambda a: np.array("garbage")},
     "propagation 'garbage': "),
    ("propagation-order-1", "mp", {"propagation": lambda a: np.array("order=-1")},
     "propagation 'order=-1': "),
    ("propagation-auto", "mp", {"propagation": lambda a: np.array("auto")},
     "propagation is 'auto', which is decided on a graph"),
    ("propagation-off", "mp", {"propagation": lambda a: np.array("off")},
     "it keeps rows as trained (trained_embedding) but its propagation is 'off'"),
    ("propagation-removed", "mp", {"propagation": None},
     "trained_embedding) but has no array propagation"),
    ("propagation-removed-auto", "m", {"propagation": None},
     "it has no array propagation, which every file of propagate='auto' holds"),
    ("propagation-order-1e9", "mp", {"propagation": lambda a: np.array("order=1000000000")},
     "propagation 'order=1000000000': "),
]


@pytest.mark.parametrize("model, changes, words", [e[1:] for e in EDITS],
                         ids=[e[0] for e in EDITS])
def test_update_refuses_an_edited_value_naming_the_file_and_the_array(saved, tmp_path, capsys,
                                                                       model, changes, words):
    path = edited(saved / f"{model}.npz", tmp_path / "edited.npz", changes)
    out = tmp_path / "u.npy"
    start = time.perf_counter()
    code, err = run_cli(["update", path, saved / "grown.txt", "-o", out, "--quiet"], capsys)
    line = only_error_line(err)
    assert code == 2 and not out.exists() and time.perf_counter() - start < 30
    assert line.startswith(f"kernelne: error: {path}: ") and words in line, line
    with pytest.raises(InputError) as raised:  # the library: the same error
        KernelNE.load_model(path)
    assert str(raised.value) == line.removeprefix("kernelne: error: ")


def test_the_saved_files_load_and_update(saved, tmp_path, capsys):
    for model in ("m", "mp"):
        out = tmp_path / f"{model}.npy"
        code, err = run_cli(["update", saved / f"{model}.npz", saved / "grown.txt", "-o", out,
                             "--quiet"], capsys)
        assert code == 0, err
        assert np.load(out).shape == (36, 4)
    loaded = KernelNE.load_model(saved / "mp.npz")
    assert loaded.propagation_ is not None and loaded.trained_embedding_.shape == (34, 4)
