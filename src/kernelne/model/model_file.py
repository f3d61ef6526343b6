"""The model file: a fitted :class:`~kernelne.model.kernelne.KernelNE` in one ``.npz``, to update
later.

Keys: ``format`` ("kernelne-model"), ``version`` (1), ``embedding`` (A, float32, n x d),
``context_embedding`` (B, float32, n x d), ``nodes`` (int64, or unicode strings), ``params``
(the estimator's ``get_params()`` as JSON), ``kernel_kinds`` / ``kernel_params`` (the fitted
kernel dictionary: "gauss" / "schoenberg" / "linear" and sigma / alpha, float64),
``beta`` (float32 kernel weights), ``kernel_scale`` (the robust fit's narrowing rho),
``beta_update`` (the fitted weight rule), ``walk_counts`` (int64: how often each node occurs
in the training walks, the negatives' unigram counts), ``degrees`` (int64: each node's
degree in the fitted graph), ``neighbour_hashes`` (uint64: a fingerprint of each node's
neighbour set, :mod:`kernelne.graphs.neighbours`; with the degrees, to tell which nodes a new
graph touched; older files: the degrees alone) and ``directed`` (bool:
how the fitted graph was read; an update must read its graph the same way. Files written
before it was recorded fall back to a ``directed`` setting in ``params``, else accept either).

A model file holds the first group of fields of a :class:`~kernelne.model.fitted.FitRecord`;
they round-trip bit for bit. Writing is atomic (a temporary file renamed into place);
reading checks the format, every shape and dtype and then every value
(:mod:`kernelne.model.model_fields`), so a corrupt, edited or foreign file is an
:class:`~kernelne.errors.InputError` naming the file (and the array at fault).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from kernelne.engine.kernels import Kernel
from kernelne.errors import InputError
from kernelne.graphs.npz import is_short_text, member_headers
from kernelne.model.fitted import NOT_SET, record_of, set_fitted
from kernelne.model.model_fields import (
    check_version,
    corrupt,
    fitted_record,
    make_estimator,
    read_params,
)
from kernelne.outputs import atomic_path

FORMAT, VERSION = "kernelne-model", 1


def _plain_param(value):
    """A setting as JSON can hold it (a :class:`Kernel` as its exact ``kind:param`` spec)."""
    if isinstance(value, Kernel):
        short = {"gauss": "gauss", "schoenberg": "sch", "linear": "linear"}[value.kind]
        return short if value.kind == "linear" else f"{short}:{value.param!r}"
    if isinstance(value, (list, tuple)):
        return [_plain_param(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


# the arrays a model file holds (any other array of the archive is never read)
MODEL_KEYS = ("format", "version", "embedding", "context_embedding", "nodes", "params",
              "kernel_kinds", "kernel_params", "beta", "kernel_scale", "beta_update",
              "walk_counts", "degrees", "output_scale", "setting", "directed", "propagation",
              "trained_embedding", "neighbour_hashes")


def check_model_path(path: str | Path) -> None:
    """``InputError`` unless ``path`` names an ``.npz`` file (a model file is an ``.npz``
    archive; ``.npy`` and text names are the embedding formats)."""
    if Path(path).suffix.lower() != ".npz":
        raise InputError("a model file is an .npz archive: name it with the .npz suffix "
                         "(save writes the embedding alone)", path)


def save_model(model: Any, path: str | Path, then: Any = None) -> None:
    """Write the fitted ``model`` (a :class:`~kernelne.model.kernelne.KernelNE`) to ``path``
    (``.npz``), atomically.

    ``then``: a callable run after the model is written to its temporary name and before it
    is renamed into place (the CLI writes the embedding there): if it fails, ``path`` is left
    as it was, so that a run leaves both files or neither."""
    check_is_fitted(model, "walk_counts_",
                    msg="This %(name)s instance is not fitted yet: only a fitted model can be "
                        "saved (call fit or load_model first).")
    check_model_path(path)
    try:
        params = json.dumps({k: _plain_param(v) for k, v in model.get_params().items()})
    except TypeError as exc:
        raise ValueError(f"cannot save the model's settings as JSON ({exc})") from None
    record = record_of(model)
    nodes = record.nodes
    if nodes.dtype == object:
        nodes = nodes.astype(str)
    arrays = {
        "format": np.array(FORMAT), "version": np.array(VERSION),
        "embedding": np.asarray(record.embedding, dtype=np.float32),
        "context_embedding": np.asarray(record.context_embedding, dtype=np.float32),
        "nodes": nodes, "params": np.array(params),
        "kernel_kinds": np.array([k.kind for k in record.kernels]),
        "kernel_params": np.array([k.param for k in record.kernels], dtype=np.float64),
        "beta": np.asarray(record.beta, dtype=np.float32),
        "kernel_scale": np.array(record.kernel_scale, dtype=np.float64),
        "beta_update": np.array(record.beta_update),
        "walk_counts": np.asarray(record.walk_counts, dtype=np.int64),
        "degrees": np.asarray(record.degrees, dtype=np.int64),
        "output_scale": np.array(record.output_scale, dtype=np.float64),
        "setting": np.array(json.dumps({} if record.setting is NOT_SET else record.setting)),
    }
    if record.directed is not None:
        arrays["directed"] = np.array(bool(record.directed))
    if record.propagation is not NOT_SET:
        arrays["propagation"] = np.array("off" if record.propagation is None
                                         else str(record.propagation))
    if record.trained_embedding is not NOT_SET and record.trained_embedding is not None:
        arrays["trained_embedding"] = np.asarray(record.trained_embedding, dtype=np.float32)
    if record.neighbour_hashes is not NOT_SET:
        arrays["neighbour_hashes"] = np.asarray(record.neighbour_hashes, dtype=np.uint64)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
        if then is not None:
            then()


#: arrays every model file holds (the others of :data:`MODEL_KEYS` came in later versions)
REQUIRED_KEYS = ("format", "version", "embedding", "context_embedding", "nodes", "params",
                 "kernel_kinds", "kernel_params", "beta", "kernel_scale", "beta_update",
                 "walk_counts", "degrees")
#: arrays holding one value (a number, a flag or a text such as the settings' JSON)
SCALAR_KEYS = ("format", "version", "params", "kernel_scale", "beta_update", "output_scale",
               "setting", "directed", "propagation")
#: the most bytes a one-value array may declare (the settings' JSON takes a few hundred)
SCALAR_BYTES = 1 << 20
#: the rows' arrays, float32 n x d
ROW_KEYS = ("embedding", "context_embedding", "trained_embedding")


def check_scalars(headers: dict, path: str | Path) -> None:
    """Each one-value array of the model file (:data:`SCALAR_KEYS`) declares one value of at
    most :data:`SCALAR_BYTES` bytes (``headers`` as
    :func:`~kernelne.graphs.npz.member_headers` reads them): checked before any is read."""
    for key in SCALAR_KEYS:
        if key in headers:
            shape, dtype = headers[key]
            if shape != () or dtype.itemsize > SCALAR_BYTES:
                raise corrupt(f"{key} must be a single value, found shape {shape} of {dtype}",
                              path)


def check_declared(headers: dict, dim: int, path: str | Path) -> None:
    """Before an array of the rows is read: the shapes and dtypes the model file's headers
    declare agree with one another and with the saved ``dim`` (``headers`` as
    :func:`~kernelne.graphs.npz.member_headers` reads them), so that a forged file is refused
    without numpy allocating what it declares.

    Raises
    ------
    InputError
        Naming ``path``, the array and what is wrong with it."""
    for key in REQUIRED_KEYS:
        if key not in headers:
            raise corrupt(f"it has no array {key}", path)
    nodes = headers["nodes"][0]
    if len(nodes) != 1:
        raise corrupt(f"nodes must be a 1-D array, found shape {nodes}", path)
    n = nodes[0]
    for key in ROW_KEYS:
        if key not in headers:
            continue
        shape, dtype = headers[key]
        if dtype != np.float32:
            raise corrupt(f"{key} holds {dtype} numbers; a model file holds float32 rows, as "
                          "save_model writes them", path)
        if shape != (n, dim):
            raise corrupt(f"{key} has shape {shape}, not {(n, dim)}: {n:,} nodes of dim {dim}",
                          path)
    for key in ("walk_counts", "degrees", "neighbour_hashes"):
        if key in headers and headers[key][0] != (n,):
            raise corrupt(f"{key} has shape {headers[key][0]}, not {(n,)}: one per node", path)
    if "neighbour_hashes" in headers and headers["neighbour_hashes"][1] != np.uint64:
        raise corrupt(f"neighbour_hashes holds {headers['neighbour_hashes'][1]} numbers, not "
                      "uint64", path)
    kinds, weights, params = (headers[k][0] for k in ("kernel_kinds", "beta", "kernel_params"))
    if not (len(kinds) == 1 and kinds[0] >= 1 and weights == params == kinds):
        raise corrupt(f"kernel_kinds, kernel_params and beta must list the same kernels, "
                      f"found shapes {kinds}, {params} and {weights}", path)


def load_model(path: str | Path, estimator: type) -> Any:
    """Read a model written by :func:`save_model`: an ``estimator`` (the class
    :class:`~kernelne.model.kernelne.KernelNE`) made from the saved settings, with its fitted
    attributes set, ready to ``partial_fit`` (and to ``transform``).

    Every array's header is checked before any array is read (its declared size against the
    bytes the file holds, its shape and dtype against the others' and the saved ``dim``):
    a forged file is refused before numpy allocates what it declares. Then every setting and
    every value is checked (:func:`~kernelne.model.model_fields.fitted_record`): a value no
    fit writes is refused, naming the array, before any training."""
    path = Path(path)
    if path.is_file() and not zipfile.is_zipfile(path):  # numpy would talk about pickles
        raise InputError("not a readable model file (not an .npz archive; save one with "
                         "`kernelne embed ... --model-out MODEL.npz`)", path)
    try:
        with np.load(path, allow_pickle=False) as z:
            headers = member_headers(z, MODEL_KEYS, path)  # every header, before any array
            if not is_short_text(headers.get("format")) or str(z["format"]) != FORMAT:
                raise InputError("not a kernelne model file (save one with `kernelne embed "
                                 "... --model-out MODEL.npz`)", path)
            check_scalars(headers, path)
            check_version(headers, z, VERSION, path)
            params = read_params(z, path)
            directed = params.pop("directed", None)  # older files: the only record, if any
            model = make_estimator(estimator, params, path)
            check_declared(headers, int(model.dim), path)
            arrays = {k: z[k] for k in MODEL_KEYS if k in z.files}
    except InputError:
        raise
    except (OSError, ValueError, KeyError, TypeError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"not a readable model file ({exc})", path) from None
    set_fitted(model, fitted_record(arrays, model, params, directed, path))
    return model
