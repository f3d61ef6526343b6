"""Any embedding as ``(vectors, node ids)``, and its rows looked up by the user's node ids."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kernelne.embedding_io import is_npy, load_embedding, nodes_sidecar
from kernelne.errors import InputError
from kernelne.graphs.graph import is_canonical_int

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
    finite = np.isfinite(vectors)
    if not finite.all():
        bad = int(finite.size - np.count_nonzero(finite))
        row, column = np.argwhere(~finite)[0]
        raise InputError(
            f"the embedding has {bad:,} NaN or infinite "
            + ("entry (" if bad == 1 else "entries (the first: ")
            + f"{vectors[row, column]} at node {nodes[row]}, row {row}, column {column})",
            source if isinstance(source, (str, Path)) else None)
    return vectors, nodes


def _is_int_id(x: Any) -> bool:
    """Whether a node id is an integer (or the canonical decimal text of one)."""
    if isinstance(x, (bool, np.bool_)):
        return False
    if isinstance(x, (int, np.integer)):
        return True
    return isinstance(x, str) and is_canonical_int(x)


def _shown(ids: Any) -> str:
    """The first ids of ``ids``, with the count of the rest."""
    ids = list(ids)
    text = ", ".join(str(x) for x in ids[:_SHOW])
    return text + (f" and {len(ids) - _SHOW:,} more" if len(ids) > _SHOW else "")


def describe_ids(nodes: np.ndarray, source: Any = None) -> str:
    """The embedding's node ids in words, for an error line: ``"0..33"`` (with the reason
    for an ``.npy`` embedding without its node ids file), ``"34 integers from 5 to 900"``
    or ``"34 strings such as 'a', 'b', 'c'"``.

    Parameters
    ----------
    nodes : ndarray
        The node id of each row of the embedding.
    source : object, optional
        Where the embedding came from (a path to an ``.npy`` file is said to have no ids
        file beside it when that is why its ids are its row numbers).

    Returns
    -------
    str
        The description.
    """
    nodes = np.asarray(nodes)
    n = len(nodes)
    if n == 0:
        return "none (an empty embedding)"
    if nodes.dtype.kind in "iu" or all(_is_int_id(x) for x in nodes):
        values = (nodes.astype(np.int64) if nodes.dtype.kind in "iu"
                  else np.array([int(x) for x in nodes], dtype=np.int64))
        if values.min() == 0 and values.max() == n - 1 and len(np.unique(values)) == n:
            text = f"0..{n - 1}"
            if isinstance(source, (str, Path)) and is_npy(source) \
                    and not nodes_sidecar(source).exists():
                text += f" (an .npy without a {nodes_sidecar(source).name} beside it)"
            return text
        return f"{n:,} integers from {values.min()} to {values.max()}"
    sample = ", ".join(repr(str(x)) for x in nodes[:3])
    return f"{n:,} strings such as {sample}"


def _kind_mismatch(nodes: np.ndarray, wanted: np.ndarray, source: Any,
                   wanted_from: str) -> InputError | None:
    """The :class:`InputError` for integer ids wanted from an embedding of string ids (or
    the reverse), or ``None`` when both are of one kind."""
    wanted_int = all(_is_int_id(x) for x in wanted)
    if wanted_int == all(_is_int_id(x) for x in nodes):
        return None
    kind = "integers" if wanted_int else "strings"
    sample = ", ".join(str(x) if wanted_int else repr(str(x)) for x in wanted[:3])
    return InputError(
        f"{wanted_from} names its nodes by {kind} ({sample}, ...) but the ids of "
        f"{_where(source)} are {describe_ids(nodes, source)}: none of its {len(wanted):,} "
        "nodes is in the embedding")


def _where(source: Any) -> str:
    return f"the embedding {source}" if isinstance(source, (str, Path)) else "the embedding"


def _lacking(nodes: np.ndarray, wanted: np.ndarray, rows: np.ndarray, source: Any,
             wanted_from: str) -> str:
    """The wanted ids the embedding lacks, in words."""
    lacking = wanted[rows < 0]
    return (f"{wanted_from} names {len(lacking):,} node(s) {_where(source)} lacks "
            f"({_shown(lacking)}); the embedding's ids are {describe_ids(nodes, source)}")


def embedding_rows(nodes: np.ndarray, wanted: np.ndarray, source: Any = None,
                   missing: str = "error", wanted_from: str = "the node list") -> np.ndarray:
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
    wanted_from : str, default "the node list"
        Where ``wanted`` came from, named in the error (e.g. ``"labels file x.labels"``).

    Returns
    -------
    ndarray of int64
        The row of each wanted id (``-1``: missing, with ``missing="skip"``).

    Raises
    ------
    InputError
        Ids missing from the embedding (``missing="error"``); with ``"skip"``, integer ids
        wanted from an embedding of string ids (or the reverse), more than half of the ids
        missing from an ``.npy`` embedding whose ids are its row numbers (its ids file left
        behind), or another ``missing`` value.
    """
    if missing not in ("error", "skip"):
        raise InputError(f"missing must be 'error' or 'skip', got {missing!r}")
    wanted = np.asarray(wanted)
    index = {str(x): i for i, x in enumerate(nodes)}
    rows = np.fromiter((index.get(str(x), -1) for x in wanted), np.int64, len(wanted))
    outside = int((rows < 0).sum())
    if outside == 0:
        return rows
    if outside == len(rows):
        mismatch = _kind_mismatch(nodes, wanted, source, wanted_from)
        if mismatch is not None:
            raise mismatch
    if missing == "error":
        raise InputError(_lacking(nodes, wanted, rows, source, wanted_from))
    row_numbers = isinstance(source, (str, Path)) and is_npy(source) \
        and not nodes_sidecar(source).exists()
    if row_numbers and len(rows) > outside > len(rows) / 2:
        raise InputError(_lacking(nodes, wanted, rows, source, wanted_from)
                         + ": more than half, so they are not skipped (an .npy embedding "
                         "copied without its ids file reads as ids 0..n-1)")
    return rows
