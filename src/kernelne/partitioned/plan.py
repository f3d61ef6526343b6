"""The record of a partitioned fit (``plan.json``): what its files depend on, and the checks a
resumed fit makes of the folder before it trains.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

from kernelne.engine.trainer import Noise
from kernelne.errors import InputError, unreadable_array_file
from kernelne.partitioned.blocks import block_path, masks_file, part_size, read_block
from kernelne.partitioned.locks import PLAN_VERSION
from kernelne.partitioned.part_files import index_file, part_file
from kernelne.partitioned.store import Location, load_npy, load_npz, npy_header, read_bytes, size

DIGEST_CHUNK = 1 << 20  # values hashed at a time by :func:`graph_digest`


def graph_digest(graph) -> str:
    """A BLAKE2b digest of everything of ``graph`` a partitioned fit's files depend on: the
    CSR (``indptr`` as int64, ``indices`` as int32, the weights as float32 or their absence)
    and the node ids, read :data:`DIGEST_CHUNK` values at a time (linear time, no copy of
    the graph).

    Parameters
    ----------
    graph : Graph
        The graph of the fit.

    Returns
    -------
    str
        The digest in hexadecimal (32 characters).
    """
    h = hashlib.blake2b(digest_size=16)

    def add(name: str, values: np.ndarray, dtype) -> None:
        h.update(f"{name}:{len(values)}:".encode())
        for lo in range(0, len(values), DIGEST_CHUNK):
            h.update(np.ascontiguousarray(values[lo:lo + DIGEST_CHUNK], dtype=dtype).data)

    add("indptr", graph.indptr, np.int64)
    add("indices", graph.indices, np.int32)
    if graph.weights is None:
        h.update(b"unweighted:")
    else:
        add("weights", graph.weights, np.float32)
    nodes = np.asarray(graph.nodes)
    if nodes.dtype.kind in "iub":
        add("ids", nodes, np.int64)
    elif nodes.dtype.kind == "f":
        add("ids", nodes, np.float64)
    else:  # strings or objects: each id's text, separated
        h.update(f"ids:{len(nodes)}:".encode())
        for lo in range(0, len(nodes), 1 << 16):
            h.update("\0".join(map(str, nodes[lo:lo + (1 << 16)].tolist())).encode("utf-8",
                     "surrogatepass") + b"\0")
    return h.hexdigest()


def make_plan(model, graph, kernels, rounds: int, parts: int, seed) -> dict[str, Any]:
    return {
        "version": PLAN_VERSION,
        "graph": {"weighted": bool(graph.is_weighted), "digest": graph_digest(graph)},
        "n": int(graph.n_nodes), "edges": int(len(graph.indices)),
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


def check_folder(folder: Location, rounds: int, parts: int, n: int, d: int, step: int,
                 slot: int, filed: bool = False) -> None:
    """Before a resumed fit trains: every file it reads is there and whole (the walks and
    masks by their headers, with ``filed`` the rounds' part files and indexes too, the counts
    and the negatives read), and the blocks of step ``step`` in ``slot`` (if above 0: version
    0 is made again) have their shape and only finite values. Otherwise :func:`damaged`
    naming the first bad file."""
    for r in range(rounds):
        round_file = folder / "walks" / f"round{r}.npy"
        paths = [round_file, folder / masks_file(f"walks/round{r}.npy")]
        if filed:
            paths += [index_file(round_file)] + [part_file(round_file, c) for c in range(parts)]
        for path in paths:
            _check_npy(path, folder)
    def noise(path: Location) -> None:
        z = load_npz(path)
        Noise(z["prob"], z["alias"])

    reads = [(folder / "walks" / "counts.npy", load_npy)]
    reads += [(folder / "noise" / f"noise{j}.npz", noise) for j in range(parts)]
    for path, read in reads:
        try:
            read(path)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the same damage
            raise damaged(path, folder, unreadable_array_file(exc, path)) from None
    if step == 0:
        return
    for which in "AB":
        for i in range(parts):
            path = block_path(folder, which, i, slot)
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


def check_progress(state: dict, path: Location, folder: Location, steps: int,
                   n_kernels: int) -> None:
    """The record ``progress.json`` of a fit of ``steps`` steps and ``n_kernels`` kernels
    checked before a resume uses it: a step in ``0..steps``, counts and losses that are
    numbers, one loss record a step (a step edited to the last is no finished fit), a
    positive finite kernel scale, finite kernel weights; otherwise
    :func:`damaged` naming the file and the first bad entry."""
    def number(x) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool) and np.isfinite(x)

    def bad(why: str) -> InputError:
        return damaged(path, folder, f"records {why}")

    step = state["step"]
    if isinstance(step, bool) or not 0 <= step <= steps:
        raise bad(f"step {step!r}, not one of 0..{steps}")
    pairs = state.get("pairs", 0)
    if isinstance(pairs, bool) or not isinstance(pairs, int) or pairs < 0:
        raise bad(f"pairs {str(pairs)[:40]!r}, not a count")
    losses = state.get("losses", [])
    if not isinstance(losses, list) or not all(
            isinstance(x, list) and len(x) == 3 and all(number(v) for v in x) for x in losses):
        raise bad("losses that are not finite numbers")
    if len(losses) != step:  # one loss record a step: a step edited by hand (a fit not done)
        raise bad(f"step {step} but {len(losses)} loss records (one a step): the progress "
                  "record is inconsistent")
    if state.get("slot", 0) not in (0, 1) or isinstance(state.get("slot"), bool):
        raise bad(f"slot {repr(state.get('slot'))[:40]}, not 0 or 1")
    if "scale" in state and not (number(state["scale"]) and state["scale"] > 0):
        raise bad(f"scale {str(state['scale'])[:40]!r}, not a positive number")
    beta = state.get("beta")
    if beta is not None and not (isinstance(beta, list) and len(beta) == n_kernels
                                 and all(number(b) for b in beta)):
        raise bad(f"kernel weights (beta) that are not {n_kernels} finite numbers")
    for key in ("narrowed", "checks"):
        looks = state.get(key, [])
        if not isinstance(looks, list) or not all(
                isinstance(x, dict) and number(x.get("kernel_scale")) for x in looks):
            raise bad(f"{key} that is not a list of the robust check's readings")
    if not isinstance(state.get("simplex", False), bool):
        raise bad("simplex that is not true or false")


def recorded_seed(plan: dict, path: Location, folder: Location) -> np.uint64:
    """The seed a folder's plan recorded (a fit resumed without ``random_state``)."""
    try:
        return np.uint64(int(plan["seed"]) % 2**64)
    except (KeyError, TypeError, ValueError):
        raise InputError(f"records no seed: the folder {folder} is damaged; remove it to "
                         "start over", path) from None


def check_same_graph(old: dict, plan: dict, folder: Location) -> None:
    """An :class:`InputError` if the folder's plan ``old`` (of this plan version) records
    another graph than ``plan``: other edges, weights or node ids, or weights on one side
    only."""
    if old.get("version") != plan["version"] or old.get("graph") == plan["graph"]:
        return
    was = old.get("graph") if isinstance(old.get("graph"), dict) else {}
    weighted, now = was.get("weighted"), plan["graph"]["weighted"]
    if isinstance(weighted, bool) and weighted != now:
        why = (f"a {'weighted' if weighted else 'unweighted'} graph, and this one is "
               f"{'weighted' if now else 'unweighted'}")
    else:
        why = "its edges, weights or node ids differ from this graph's"
    raise InputError(f"--partition-dir {folder} holds a fit of another graph ({why}): give "
                     "an empty folder, or the graph that fit was made of")


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
