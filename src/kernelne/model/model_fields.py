"""The values of a model file's arrays, each checked once when the file is read.

:func:`~kernelne.model.model_file.load_model` reads the headers first (shapes and dtypes,
:func:`~kernelne.model.model_file.check_declared`); this module checks what the arrays hold
and turns them into the :class:`~kernelne.model.fitted.FitRecord` the model is set from
(:func:`fitted_record`). A value no fit writes (an ``output_scale`` of ``1e30``, a NaN kernel
weight, negative walk counts, a recorded propagation of order ``10^9``) is refused as an
:class:`~kernelne.errors.InputError` naming the file, the array and what is wrong, before
any training starts: an edited file neither yields wrong rows with success nor runs without
bound.

The rules, array by array:

* ``version``: the integer :data:`~kernelne.model.model_file.VERSION` (not a text);
* ``params``: a JSON object of the estimator's parameters;
* ``embedding``, ``context_embedding``, ``trained_embedding``: finite numbers;
* ``nodes``: distinct integers or strings;
* ``kernel_kinds``: "gauss", "schoenberg" or "linear"; ``kernel_params``: each distance
  kernel's sigma or alpha positive and finite;
* ``beta``: finite weights, none negative, not all 0;
* ``kernel_scale``: from 1 (never narrowed) to
  ``NARROWING ** MAX_NARROWING`` (:mod:`kernelne.engine.robust`);
* ``beta_update``: "projected" or "simplex";
* ``walk_counts``: whole numbers >= 0, not all 0; ``degrees``: whole numbers >= 0;
* ``output_scale``: from :data:`MIN_OUTPUT_SCALE` to :data:`MAX_OUTPUT_SCALE`;
* ``setting``: a JSON object whose ``params``, if any, pass the parameter table's rules;
* ``directed``: a flag;
* ``propagation``: "off" or a setting :func:`~kernelne.engine.propagation.parse_propagation`
  reads (its bounds included; "auto" is decided on a graph and never recorded), and "off"
  only where the file keeps no ``trained_embedding``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from kernelne.engine.kernels import Kernel
from kernelne.engine.propagation import Propagation, is_auto, parse_propagation
from kernelne.engine.robust import MAX_NARROWING, NARROWING
from kernelne.errors import InputError, quote
from kernelne.model.auto_setting import with_params
from kernelne.model.fitted import NOT_SET, FitRecord
from kernelne.model.params import param

#: ``normalize="auto"``'s factor is ``OUTPUT_NORM / median row norm`` of the rows as trained:
#: below this the rows as trained would have a median norm above 25,000 (diverged), ...
MIN_OUTPUT_SCALE = 1e-4
#: ... above this one below 2.5e-4 (fresh rows of dimension 128 have a norm of about 0.026)
MAX_OUTPUT_SCALE = 1e4
#: the largest kernel scale a fit reaches (each narrowing multiplies it by ``NARROWING``)
MAX_KERNEL_SCALE = NARROWING ** MAX_NARROWING
#: the weight rules a fit records
BETA_UPDATES = param("beta_update").rule.choices


def corrupt(why: str, path: str | Path) -> InputError:
    """The error of a model file holding something no fit writes."""
    return InputError(f"corrupt model file ({why})", path)


def _text(arrays: dict, key: str, path: str | Path) -> str:
    value = arrays[key]
    if value.dtype.kind != "U":
        raise corrupt(f"{key} must be a text, found {value.dtype} {quote(value, bare=True)}",
                      path)
    return str(value)


def _number(arrays: dict, key: str, path: str | Path) -> float:
    value = arrays[key]
    if value.dtype.kind not in "iuf":
        raise corrupt(f"{key} must be a number, found {value.dtype} {quote(value)}", path)
    return float(value)


def _json_object(text: str, key: str, path: str | Path) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise corrupt(f"{key} is not JSON ({exc}): {quote(text)}", path) from None
    if not isinstance(value, dict):
        raise corrupt(f"{key} must be a JSON object, found {quote(text)}", path)
    return value


def check_version(headers: dict, z: Any, version: int, path: str | Path) -> None:
    """The file's ``version`` (its header in ``headers``, the open archive ``z``) is the
    integer ``version``."""
    kind = headers["version"][1].kind if "version" in headers else None
    if kind not in ("i", "u"):
        found = "no version" if kind is None else f"{quote(z['version'])} ({z['version'].dtype})"
        raise corrupt(f"version must be the integer {version}, found {found}", path)
    if int(z["version"]) != version:
        raise InputError(f"model file version {int(z['version'])} is not supported "
                         f"(this kernelne reads version {version})", path)


def read_params(z: Any, path: str | Path) -> dict:
    """The estimator's parameters the open archive ``z`` holds (``params``, a JSON object)."""
    return _json_object(_text(z, "params", path), "params", path)


def make_estimator(estimator: type, params: dict, path: str | Path) -> Any:
    """``estimator(**params)``, every one of ``params`` a parameter of it, checked against the
    parameter table's rules and the estimator's cross checks (a file edited to
    ``walks_per_node=10**6`` is refused, not trained for hours)."""
    known = estimator().get_params()
    unknown = [name for name in params if name not in known]
    if unknown:
        raise corrupt(f"params holds {quote(unknown[0])}, which is no setting of "
                      f"{estimator.__name__}", path)
    model = estimator(**params)
    check_settings(model, path)
    return model


def check_settings(model: Any, path: str | Path, where: str = "") -> None:
    """The settings ``model`` holds follow the rules of the parameter table
    (:mod:`kernelne.model.params`, its bounds included) and the estimator's cross checks.
    ``workers`` beyond the cores is kept, and trains on the cores there are
    (:func:`kernelne.parallel.resolve_workers`), as for a fit.

    Raises
    ------
    InputError
        Naming ``path``, the setting and its bound (``where``: the array holding it, if not
        ``params``)."""
    try:
        model._check_params()
    except InputError as exc:  # its problem, without a path of its own
        raise InputError(f"bad setting in the model file{where}: {exc.problem}", path) from None
    except ValueError as exc:
        raise InputError(f"bad setting in the model file{where}: {exc}", path) from None


def _rows(arrays: dict, path: str | Path) -> None:
    for key in ("embedding", "context_embedding", "trained_embedding"):
        if key in arrays and not np.isfinite(arrays[key]).all():
            raise corrupt(f"{key} holds NaN or infinite values", path)


def _nodes(arrays: dict, path: str | Path) -> np.ndarray:
    nodes = arrays["nodes"]
    if nodes.dtype.kind not in "iuU" or len(np.unique(nodes)) != len(nodes):
        raise corrupt("nodes: node ids must be distinct integers or strings", path)
    return nodes.astype(object) if nodes.dtype.kind == "U" else nodes


def _kernels(arrays: dict, path: str | Path) -> list[Kernel]:
    kinds, values = arrays["kernel_kinds"], arrays["kernel_params"]
    if kinds.dtype.kind != "U":
        raise corrupt(f"kernel_kinds must be texts, found {kinds.dtype}", path)
    if values.dtype.kind not in "iuf":
        raise corrupt(f"kernel_params must be numbers, found {values.dtype}", path)
    kernels = []
    for kind, value in zip(kinds, values, strict=True):
        if str(kind) not in ("gauss", "schoenberg", "linear"):
            raise corrupt(f"kernel_kinds: {quote(kind)} is not gauss, schoenberg or linear", path)
        try:
            kernels.append(Kernel(str(kind), float(value)))
        except ValueError as exc:
            raise corrupt(f"kernel_params: {exc}", path) from None
    return kernels


def _beta(arrays: dict, path: str | Path) -> np.ndarray:
    beta = arrays["beta"]
    if beta.dtype.kind != "f":
        raise corrupt(f"beta must hold float weights, found {beta.dtype}", path)
    if not (np.isfinite(beta).all() and (beta >= 0).all() and beta.sum() > 0):
        raise corrupt(f"beta must hold finite kernel weights >= 0, not all 0, found "
                      f"{quote(beta.tolist())}", path)
    return beta


def _bounded(arrays: dict, key: str, low: float, high: float, path: str | Path) -> float:
    value = _number(arrays, key, path)
    if not (math.isfinite(value) and low <= value <= high):
        raise corrupt(f"{key} must be a number from {low:g} to {high:g}, found {value!r}", path)
    return value


def _counts(arrays: dict, key: str, path: str | Path, some: bool) -> np.ndarray:
    counts = arrays[key]
    if counts.dtype.kind not in "iu":
        raise corrupt(f"{key} must hold whole numbers, found {counts.dtype}", path)
    if (counts < 0).any():
        raise corrupt(f"{key} holds negative counts (the least is {int(counts.min())})", path)
    if some and not counts.any():
        raise corrupt(f"{key} is 0 for every node: no walk was counted", path)
    return counts


def _setting(arrays: dict, model: Any, path: str | Path) -> Any:
    if "setting" not in arrays:  # files of kernelne 0.2.0 and before
        return {"name": "given", "params": {}, "evidence": "an older model file"}
    setting = _json_object(_text(arrays, "setting", path), "setting", path)
    chosen = setting.get("params", {})
    if not isinstance(chosen, dict):
        raise corrupt(f"setting: params must be a JSON object, found {quote(chosen)}", path)
    known = model.get_params()
    unknown = [name for name in chosen if name not in known]
    if unknown:
        raise corrupt(f"setting: params holds {quote(unknown[0])}, which is no setting of "
                      f"{type(model).__name__}", path)
    check_settings(with_params(model, chosen), path, " (setting)")
    return setting


def _propagation(arrays: dict, params: dict, path: str | Path) -> Propagation | None:
    trained = "trained_embedding" in arrays
    if "propagation" not in arrays:  # older files: the saved parameter (never "auto" there)
        spec = params.get("propagate", False)
        if trained:
            raise corrupt("it keeps rows as trained (trained_embedding) but has no array "
                          "propagation to say how they were propagated", path)
        if is_auto(spec):
            raise corrupt("it has no array propagation, which every file of "
                          "propagate='auto' holds (the propagation applied)", path)
        try:
            return parse_propagation(spec)
        except ValueError as exc:
            raise InputError(f"bad setting in the model file: {exc}", path) from None
    text = _text(arrays, "propagation", path)
    if is_auto(text):
        raise corrupt("propagation is 'auto', which is decided on a graph: a model file "
                      "records the propagation applied ('off' or order=K,mu=M,theta=T)", path)
    try:
        propagation = parse_propagation(text)
    except ValueError as exc:
        raise corrupt(f"propagation {quote(text)}: {exc}", path) from None
    if trained and propagation is None:
        raise corrupt("it keeps rows as trained (trained_embedding) but its propagation is "
                      "'off'", path)
    return propagation


def fitted_record(arrays: dict, model: Any, params: dict, directed: Any,
                  path: str | Path) -> FitRecord:
    """The record a model file's ``arrays`` hold (shapes and dtypes of the rows already
    checked), each value checked (module docstring).

    Parameters
    ----------
    arrays : dict
        The file's arrays by name.
    model : KernelNE
        The estimator made from the file's settings (:func:`make_estimator`).
    params : dict
        The file's settings as read (``propagate`` read for files without ``propagation``).
    directed : bool or None
        A ``directed`` setting of an older file's ``params`` (None: none).
    path : str or Path
        The file, for the errors.

    Returns
    -------
    FitRecord
        The fitted state.

    Raises
    ------
    InputError
        Naming ``path``, the array and what is wrong with it.
    """
    _rows(arrays, path)
    nodes = _nodes(arrays, path)
    kernels = _kernels(arrays, path)
    beta = _beta(arrays, path)
    kernel_scale = _bounded(arrays, "kernel_scale", 1.0, MAX_KERNEL_SCALE, path)
    beta_update = _text(arrays, "beta_update", path)
    if beta_update not in BETA_UPDATES:
        raise corrupt(f"beta_update must be {' or '.join(BETA_UPDATES)}, found "
                      f"{quote(beta_update)}", path)
    walk_counts = _counts(arrays, "walk_counts", path, some=True)
    degrees = _counts(arrays, "degrees", path, some=False)
    # files of kernelne 0.2.0 and before: the rows as trained, the parameters as given
    output_scale = (_bounded(arrays, "output_scale", MIN_OUTPUT_SCALE, MAX_OUTPUT_SCALE, path)
                    if "output_scale" in arrays else 1.0)
    setting = _setting(arrays, model, path)
    if "directed" in arrays:
        if arrays["directed"].dtype.kind != "b":
            raise corrupt(f"directed must be a flag (True or False), found "
                          f"{quote(arrays['directed'])}", path)
        directed = bool(arrays["directed"])
    propagation = _propagation(arrays, params, path)
    trained = arrays.get("trained_embedding")
    return FitRecord(
        embedding=arrays["embedding"], context_embedding=arrays["context_embedding"],
        nodes=nodes, kernels=kernels, beta=beta, kernel_scale=kernel_scale,
        beta_update=beta_update, walk_counts=walk_counts, degrees=degrees,
        directed=None if directed is None else bool(directed), output_scale=output_scale,
        setting=setting, propagation=propagation,
        trained_embedding=trained if propagation is not None else None,
        neighbour_hashes=arrays.get("neighbour_hashes", NOT_SET))
