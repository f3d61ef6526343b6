"""Any embedding as ``(vectors, node ids)``, and its rows looked up by the user's node ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kernelne.embedding_io import is_npy, load_embedding, nodes_sidecar
from kernelne.errors import InputError

_SHOW = 10


def as_embedding(source: Any, dtype: Any = np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Any embedding as ``(vectors, nodes)``.

    Parameters
    ----------
    source : str, Path, estimator, tuple or array-like
        A file path (word2vec text or ``.npy``), a fitted estimator (``embedding_`` and
        ``nodes_``), a ``(vectors, nodes)`` pair or a bare ``n x d`` matrix (node ids
        ``0..n-1``).
    dtype : numpy dtype, default float64
        The vectors' type (no copy where they have it already).

    Returns
    -------
    vectors : ndarray of shape (n, d)
        The embedding rows.
    nodes : ndarray
        The node id of each row.

    Raises
    ------
    InputError
        Not an ``n x d`` matrix, a node-id count other than ``n``, or NaN/inf entries.
    """
    if isinstance(source, (str, Path)):
        vectors, nodes = load_embedding(source)
    elif hasattr(source, "embedding_"):
        vectors, nodes = source.embedding_, getattr(source, "nodes_", None)
    elif isinstance(source, tuple) and len(source) == 2:
        vectors, nodes = source
    else:
        vectors, nodes = source, None
    vectors = np.asarray(vectors, dtype=dtype)
    if vectors.ndim != 2:
        raise InputError(f"an embedding must be an n x d matrix, got shape {vectors.shape}")
    nodes = np.arange(len(vectors)) if nodes is None else np.asarray(nodes)
    if len(nodes) != len(vectors):
        raise InputError(f"{len(nodes)} node ids for {len(vectors)} vectors")
    if not np.all(np.isfinite(vectors)):
        raise InputError("the embedding has NaN or infinite entries")
    return vectors, nodes


def check_sidecar(source: Any, n: int, rows: np.ndarray, strict: bool) -> None:
    """Raise :class:`InputError` when ``source`` is an ``.npy`` embedding without its node ids
    sidecar (so its ids read as ``0..n-1``) and the wanted ids (``rows``: their rows, ``-1``
    for an id it lacks) suggest other ids: any id outside ``0..n-1`` when ``strict``, else
    more ids outside than inside."""
    if not isinstance(source, (str, Path)) or not is_npy(source):
        return
    side = nodes_sidecar(source)
    outside = int((rows < 0).sum())
    if side.exists() or outside == 0 or (not strict and 2 * outside <= len(rows)):
        return
    raise InputError(
        f"{outside:,} of {len(rows):,} node ids are outside 0..{n - 1}, the ids of an .npy "
        f"embedding without its node ids file: {side} is missing (copy it along with the "
        ".npy, or write the embedding as .npz, which holds the ids)", source)


def embedding_rows(nodes: np.ndarray, wanted: np.ndarray, source: Any = None,
                   missing: str = "error") -> np.ndarray:
    """Row of each id of ``wanted`` in an embedding whose row ids are ``nodes``.

    Ids match by their text form, so ``3``, ``np.int64(3)`` and ``"3"`` are the same node.

    Parameters
    ----------
    nodes : ndarray
        The node id of each row of the embedding.
    wanted : ndarray
        The node ids to look up.
    source : object, optional
        Where the embedding came from; a path is named in the error.
    missing : {"error", "skip"}, default "error"
        ``"error"`` raises :class:`~kernelne.InputError` naming the ids the embedding lacks;
        ``"skip"`` gives them row ``-1``.

    Returns
    -------
    ndarray of int64
        The row of each wanted id (``-1``: missing, with ``missing="skip"``).

    Raises
    ------
    InputError
        Ids missing from the embedding (``missing="error"``), or another ``missing`` value.
    """
    if missing not in ("error", "skip"):
        raise InputError(f"missing must be 'error' or 'skip', got {missing!r}")
    index = {str(x): i for i, x in enumerate(nodes)}
    rows = np.fromiter((index.get(str(x), -1) for x in wanted), np.int64, len(wanted))
    check_sidecar(source, len(nodes), rows, strict=missing == "error")
    if missing == "skip":
        return rows
    missing = np.asarray(wanted)[rows < 0]
    if len(missing):
        shown = ", ".join(str(x) for x in missing[:_SHOW])
        more = f" and {len(missing) - _SHOW} more" if len(missing) > _SHOW else ""
        path = source if isinstance(source, (str, Path)) else None
        raise InputError(
            f"{len(missing)} node(s) missing from the embedding: {shown}{more}", path
        )
    return rows
