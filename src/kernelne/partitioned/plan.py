"""The record of a partitioned fit (``plan.json``): what its files depend on, and the checks a
resumed fit makes of the folder before it trains.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from kernelne.engine.trainer import Noise
from kernelne.errors import InputError
from kernelne.partitioned.blocks import block_path, masks_file, part_size, read_block
from kernelne.partitioned.locks import PLAN_VERSION
from kernelne.partitioned.store import Location, load_npy, load_npz, npy_header, read_bytes, size


def make_plan(model, graph, kernels, rounds: int, parts: int, seed) -> dict[str, Any]:
    return {
        "version": PLAN_VERSION, "n": int(graph.n_nodes), "edges": int(len(graph.indices)),
        "indptr_sum": int(graph.indptr.astype(np.int64).sum() % (1 << 61)),
        "parts": parts, "rounds": rounds, "seed": int(seed), "dim": int(model.dim),
        "kernels": [str(k) for k in kernels],
        "params": {k: repr(v) for k, v in sorted(model.get_params().items())
                   if k not in ("workers", "verbose", "partition_dir", "random_state",
                                "setting", "normalize")},  # neither changes the training
    }


def damaged(path: Location, folder: Location, why: str) -> InputError:
    """The error of a file of a partitioned fit's folder that cannot be used."""
    return InputError(f"{why}: the partitioned fit's folder {folder} is damaged; remove it "
                      "to start over", path)


def check_folder(folder: Location, rounds: int, parts: int, n: int, d: int, version: int) -> None:
    """Before a resumed fit trains: every file it reads is there and whole (the walks and
    masks by their headers, the counts and the negatives read), and version ``version`` of
    the blocks (if above 0: version 0 is made again) has its shape and only finite values.
    Otherwise :func:`damaged` naming the first bad file."""
    for r in range(rounds):
        for name in (f"walks/round{r}.npy", masks_file(f"walks/round{r}.npy")):
            _check_npy(folder / name, folder)
    try:
        load_npy(folder / "walks" / "counts.npy")
        for j in range(parts):
            z = load_npz(folder / "noise" / f"noise{j}.npz")
            Noise(z["prob"], z["alias"])
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same damage
        raise damaged(Path(getattr(exc, "filename", None) or folder), folder,
                      f"cannot be read ({exc})") from None
    if version == 0:
        return
    for which in "AB":
        for i in range(parts):
            path = block_path(folder, which, i, version)
            try:
                block = read_block(path)
            except (OSError, ValueError) as exc:
                raise damaged(path, folder, f"cannot be read ({exc.strerror or exc})") from None
            if block.shape != (part_size(n, parts, i), d):
                raise damaged(path, folder, f"holds a block of shape {block.shape}, not "
                              f"{(part_size(n, parts, i), d)}")
            if not np.isfinite(block).all():
                raise damaged(path, folder, "holds NaN or infinite values (a damaged file, or "
                              "a fit that diverged: then start over with a smaller --lr)")


def _check_npy(path: Location, folder: Location) -> None:
    """A .npy file whose size is what its header says, or :func:`damaged`."""
    try:
        shape, _, dtype, offset = npy_header(path)
        expected = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        found = size(path)
    except (OSError, ValueError) as exc:
        raise damaged(path, folder, f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
                      ) from None
    if found < expected:
        raise damaged(path, folder, f"is cut short ({found:,} of {expected:,} bytes)")


def read_json(path: Location, folder: Location) -> dict:
    """A record of the folder (``plan.json``, ``progress.json``), or an :class:`InputError`
    naming it if it cannot be read as one."""
    try:
        data = json.loads(read_bytes(path).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot be read ({exc}): the partitioned fit's folder {folder} is "
                         "damaged; remove it to start over", path) from None
    if not isinstance(data, dict) or (path.name == "progress.json" and not isinstance(
            data.get("step"), int)):
        raise InputError(f"is not a record of a partitioned fit: the folder {folder} is "
                         "damaged; remove it to start over", path)
    return data


def recorded_seed(plan: dict, path: Location, folder: Location) -> np.uint64:
    """The seed a folder's plan recorded (a fit resumed without ``random_state``)."""
    try:
        return np.uint64(int(plan["seed"]) % 2**64)
    except (KeyError, TypeError, ValueError):
        raise InputError(f"records no seed: the folder {folder} is damaged; remove it to "
                         "start over", path) from None


def differences(old: dict, plan: dict) -> str:
    """The settings in which a folder's plan and this fit's differ, by name."""
    names = [k for k in plan if k != "params" and old.get(k) != plan[k]]
    params, old_params = plan.get("params", {}), old.get("params", {})
    if not isinstance(old_params, dict):
        old_params = {}
    names += [k for k in sorted(set(params) | set(old_params))
              if old_params.get(k) != params.get(k)]
    names += [k for k in old if k not in plan]
    return ", ".join(dict.fromkeys(names)) or "the records"
