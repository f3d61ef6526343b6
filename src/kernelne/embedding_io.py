"""Saving and loading embeddings: NumPy ``.npz``, NumPy ``.npy``, Parquet and word2vec text.

* ``.npz`` (any case): vectors and node ids in one file: keys ``format``
  ("kernelne-embedding"), ``embedding`` (float32, ``n x d``, node order) and ``nodes`` (int64,
  or unicode strings). :func:`load_embedding` also reads the rows and ids of a model file
  (:mod:`kernelne.model.model_file`, ``--model-out``); a graph file (``kernelne convert``) is
  refused.
* ``.npy`` (any case): the ``n x d`` matrix in node order. When the node ids are not ``0..n-1``
  they are written beside it, one per line, to ``NAME.nodes.txt`` (the sidecar: copy it with
  the ``.npy``). A ``NAME.nodes.txt`` that is not the sidecar of the ``NAME.npy`` being
  replaced is refused (:func:`check_sidecar_replaceable`), never deleted or replaced.
* ``.parquet`` (any case): a table with a column ``node`` (the ids: integers or strings) and
  the float32 columns ``dim_0`` .. ``dim_{d-1}``, one row per node, for pandas, polars, DuckDB
  or Spark.
* word2vec text (``.txt``, ``.emb``, ``.vec``, ``.w2v``): a header ``n d``, then
  ``node_id v_1 ... v_d`` per line, readable by gensim's
  ``KeyedVectors.load_word2vec_format``. The path ``-`` is standard output.

Any other suffix is refused (:data:`WRITE_SUFFIXES`) rather than written in a format the
name does not say.

Writes go to a temporary file that is renamed into place, so a failed run leaves nothing behind.
"""

from __future__ import annotations

import os
import re
import sys
import zipfile
from pathlib import Path

import numpy as np

from kernelne.errors import InputError, quote, unreadable_array_file
from kernelne.graphs.graph import iter_records
from kernelne.graphs.npz import is_short_text, member_headers
from kernelne.outputs import atomic_path, check_not_url, check_output_path, write_npy

STDOUT = "-"
FORMAT = "kernelne-embedding"
NPY_ROWS = 1 << 16  # rows copied at a time into a .npy output
_TEXT_ID_BAD = re.compile(r"[\s,]|^[#%]|^$")  # ids word2vec text cannot hold
MODEL_FORMAT = "kernelne-model"  # kernelne.model.model_file.FORMAT: its rows and ids read too


#: the suffixes an embedding can be written to (any case), each with its format
WRITE_SUFFIXES = {".npy": "NumPy matrix", ".npz": "vectors and node ids",
                  ".parquet": "Parquet table", ".txt": "word2vec text", ".emb": "word2vec text",
                  ".vec": "word2vec text", ".w2v": "word2vec text"}


def is_parquet(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".parquet"


def check_embedding_suffix(path: str | Path) -> None:
    """``InputError`` naming the known formats unless ``path`` (or ``-``) names one of
    :data:`WRITE_SUFFIXES`."""
    if str(path) == STDOUT or Path(path).suffix.lower() in WRITE_SUFFIXES:
        return
    suffix = Path(path).suffix
    shown = f"the suffix {suffix!r}" if suffix else "a name without a suffix"
    raise InputError(f"cannot write an embedding to {shown}: use .npz, .npy, .parquet, or "
                     ".txt/.emb/.vec/.w2v (word2vec text), or - for standard output", path)


def is_npy(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".npy"


def is_npz(path: str | Path) -> bool:
    return Path(path).suffix.lower() == ".npz"


def check_embedding_output(path: str | Path, inputs=()) -> None:
    """Fail now (``InputError``) if ``path`` cannot take an embedding: a path
    :func:`~kernelne.outputs.check_output_path` refuses (``-``, standard output, is fine), or
    a suffix that names no embedding format (:func:`check_embedding_suffix`)."""
    if str(path) == STDOUT:
        return
    companions = [(nodes_sidecar(path), "the node ids written beside it")] if is_npy(path) else []
    check_output_path(path, inputs, companions=companions)
    check_embedding_suffix(path)
    if is_npy(path):
        check_sidecar_replaceable(path)


def check_ids_writable(path: str | Path, nodes) -> None:
    """Fail now (``InputError``) if the node ids cannot be written to ``path`` and read back.

    word2vec text (any suffix but ``.npy``/``.npz``, and ``-``) separates fields by spaces
    (kernelne's reader also by commas, and skips ``#`` and ``%`` comment lines): an empty id,
    an id holding whitespace or a comma, or one starting with ``#`` or ``%`` is refused there.
    The ``.npy`` ids sidecar holds one id per line: an id holding a line break is refused.
    ``.npz`` stores every id.

    Raises
    ------
    InputError
        The first id the format cannot hold, quoted (at most 80 characters).
    """
    if nodes is None or is_npz(path) or is_parquet(path):
        return
    nodes = np.asarray(nodes)
    if nodes.dtype.kind in "iub":
        return
    npy = str(path) != STDOUT and is_npy(path)
    for node in nodes:
        text = str(node)
        bad = ("\n" in text or "\r" in text) if npy else _TEXT_ID_BAD.search(text)
        if bad:
            if npy:
                raise InputError(f"node id {quote(text)} holds a line break: the ids file beside a "
                                 ".npy holds one id per line; write .npz instead", path)
            raise InputError(f"node id {quote(text)} is empty, holds whitespace or a comma, or "
                             "starts a comment (# or %): word2vec text cannot hold it; write "
                             ".npz or .npy instead", path)


def nodes_sidecar(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.stem + ".nodes.txt")


def _count_lines(path: Path) -> int:
    """The lines of a text file as :func:`_read_sidecar` counts them (a last line may lack
    its line break)."""
    count, last = 0, b"\n"
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


def _is_sidecar_of(side: Path, path: Path) -> bool:
    """Whether the regular file ``side`` is the ids file of the ``.npy`` ``path``: ``path`` is a
    readable matrix with one row per line of ``side`` (the pair :func:`save_embedding` writes
    and :func:`load_embedding` reads together)."""
    try:
        if not path.is_file() or path.is_symlink():
            return False
        shape = np.load(path, mmap_mode="r", allow_pickle=False).shape
        return len(shape) == 2 and shape[0] == _count_lines(side)
    except (OSError, ValueError, EOFError, TypeError):
        return False


def check_sidecar_replaceable(path: str | Path) -> None:
    """Fail now (``InputError``) if writing the ``.npy`` ``path`` would replace or delete a
    ``NAME.nodes.txt`` beside it that is not its ids file.

    :func:`save_embedding` replaces the sidecar (ids other than ``0..n-1``) or removes it
    (ids ``0..n-1``). It does so only to the sidecar of the ``.npy`` it replaces (one line per
    row of that matrix) or to a symbolic link (the link goes, its target is never opened);
    any other file of that name is the user's and is refused here, before any work.

    Parameters
    ----------
    path : str or Path
        The ``.npy`` output.

    Raises
    ------
    InputError
        ``NAME.nodes.txt`` is a regular file (or a folder) that no ``NAME.npy`` of as many rows
        stands beside.
    """
    path = Path(path)
    side = nodes_sidecar(path)
    if side.is_symlink() or not os.path.lexists(side):
        return
    if side.is_file() and _is_sidecar_of(side, path):
        return
    what = "a folder" if side.is_dir() else "a file"
    raise InputError(f"{what} of this name is there and is not the ids file of {path} (one "
                     f"line per row of it): writing {path.name} would replace or delete it; move "
                     "it away or write another name", side)


def save_embedding(path: str | Path, vectors: np.ndarray, nodes: np.ndarray | None = None) -> None:
    """Write an embedding in the format the path's suffix names.

    ``.npy`` (any case): the ``n x d`` float32 matrix in node order; when the node ids are not
    ``0..n-1`` they are written beside it, one per line, to ``NAME.nodes.txt``. ``.npz``:
    vectors and ids in one file. ``.parquet``: a column ``node`` and float32 columns
    ``dim_0`` .. ``dim_{d-1}``. ``.txt``, ``.emb``, ``.vec``, ``.w2v``: word2vec text format
    (a header ``n d``, then ``node_id v_1 ... v_d`` per line, readable by gensim's
    ``KeyedVectors.load_word2vec_format``). The file is written to a temporary name and
    renamed into place, so a failed write leaves nothing behind.

    Parameters
    ----------
    path : str or Path
        The output file; ``-`` writes word2vec text to standard output.
    vectors : array-like of shape (n, d)
        The embedding; row ``i`` belongs to ``nodes[i]``.
    nodes : array-like, optional
        The node id of each row; default ``0..n-1``.

    Raises
    ------
    InputError
        A suffix that names none of these formats, or an id the format cannot hold (see
        :func:`check_ids_writable`), checked before anything is written; or a failed write.

    See Also
    --------
    load_embedding : read it back.
    """
    check_embedding_suffix(path)
    to_stdout = str(path) == STDOUT
    path = Path(path)
    if not (isinstance(vectors, np.ndarray) and vectors.ndim == 2 and is_npy(path)
            and not to_stdout):
        vectors = np.asarray(vectors, dtype=np.float32)
    n = vectors.shape[0]
    if nodes is None:
        nodes = np.arange(n)
    check_ids_writable(STDOUT if to_stdout else path, nodes)
    if is_npy(path) and not to_stdout:
        check_sidecar_replaceable(path)
    identity = np.asarray(nodes).dtype.kind in "iu" and np.array_equal(nodes, np.arange(n))
    if to_stdout:
        _write_text(sys.stdout, vectors, nodes)
        sys.stdout.flush()
        return
    if is_npz(path):
        nodes = np.asarray(nodes)
        with atomic_path(path) as tmp:
            with open(tmp, "wb") as fh:
                np.savez(fh, format=np.array(FORMAT), embedding=vectors,
                         nodes=nodes.astype(str) if nodes.dtype == object else nodes)
        return
    if is_parquet(path):
        with atomic_path(path) as tmp:
            _write_parquet(tmp, vectors, np.asarray(nodes))
        return
    if is_npy(path):
        with atomic_path(path) as tmp:
            _write_npy(tmp, vectors)
        side = nodes_sidecar(path)
        if not identity:
            with atomic_path(side) as tmp:
                tmp.write_text("".join(f"{x}\n" for x in nodes), encoding="utf-8")
        elif os.path.lexists(side):
            side.unlink()  # the sidecar of the matrix just replaced, or a link (not its target)
        return
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        _write_text(fh, vectors, nodes)


def _write_npy(path: Path, vectors: np.ndarray) -> None:
    """``vectors`` as a float32 ``.npy`` file (the bytes of ``np.save``), written
    :data:`NPY_ROWS` rows at a time (:func:`kernelne.outputs.write_npy`): a memory-mapped
    matrix (a partitioned fit's rows) or one of another dtype is never all in memory."""
    write_npy(path, np.float32, vectors.shape,
              (vectors[lo:lo + NPY_ROWS] for lo in range(0, len(vectors), NPY_ROWS)))


def _write_parquet(path: Path, vectors: np.ndarray, nodes: np.ndarray) -> None:
    """``node`` (int64, or strings) and ``dim_0`` .. ``dim_{d-1}`` (float32) as Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if nodes.dtype.kind in "iu":
        ids = pa.array(nodes.astype(np.int64))
    else:
        ids = pa.array([str(x) for x in nodes], type=pa.string())
    columns = {"node": ids}
    for j in range(vectors.shape[1]):
        columns[f"dim_{j}"] = pa.array(np.ascontiguousarray(vectors[:, j], dtype=np.float32))
    pq.write_table(pa.table(columns), path)


def _load_parquet(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The rows and ids of a ``.parquet`` embedding (:func:`_write_parquet`'s layout)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        text = str(exc).strip().splitlines()
        raise InputError(f"not a readable Parquet file ({text[0] if text else exc!r})",
                         path) from None
    names = table.column_names
    dims = [f"dim_{j}" for j in range(len(names) - 1)]
    if "node" not in names or sorted(names) != sorted(["node", *dims]) or not dims:
        raise InputError("not an embedding table: expected a column 'node' and columns "
                         "dim_0 .. dim_{d-1}", path)
    if any(table.column(c).null_count for c in names):
        raise InputError("the embedding table has missing values", path)
    try:
        vectors = np.column_stack([table.column(c).to_numpy().astype(np.float32)
                                   for c in dims])
    except (ValueError, TypeError, pa.ArrowException):
        raise InputError("the dim_ columns must be numbers", path) from None
    nodes = table.column("node").to_numpy()
    if nodes.dtype.kind not in "iu":
        nodes = _as_ints(nodes.astype(object))
    if len(set(nodes.tolist())) != len(nodes):
        raise InputError("a node appears twice in the 'node' column", path)
    return vectors, nodes


def _write_text(fh, vectors: np.ndarray, nodes) -> None:
    fh.write(f"{vectors.shape[0]} {vectors.shape[1]}\n")
    for node, row in zip(nodes, vectors, strict=True):
        fh.write(str(node) + " " + " ".join(f"{x:.6g}" for x in row) + "\n")


def load_embedding(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Read an embedding written by :func:`save_embedding` (or by word2vec / gensim).

    Parameters
    ----------
    path : str or Path
        A ``.npy`` matrix (with its ``NAME.nodes.txt`` ids, if any), an ``.npz`` embedding
        or model file, a ``.parquet`` table (``node``, ``dim_0`` ..) or a word2vec text file
        (the ``n d`` header line is optional).

    Returns
    -------
    vectors : ndarray of shape (n, d), float32
        The embedding rows.
    nodes : ndarray
        The node id of each row; integer ids come back as integers.

    Raises
    ------
    InputError
        An unreadable file, a row with the wrong number of fields, a non-numeric entry, a
        node listed twice, or a header whose count disagrees with the rows.
    """
    check_not_url(path, "the embedding")
    path = Path(path)
    if is_npz(path):
        return _load_npz(path)
    if is_parquet(path):
        return _load_parquet(path)
    if is_npy(path):
        try:
            vectors = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise InputError(unreadable_array_file(exc, path), path) from None
        if not isinstance(vectors, np.ndarray):  # numpy opened a zip archive
            vectors.close()
            raise InputError("not a .npy array file (it holds a zip archive: an .npz file is "
                             "named .npz)", path)
        if vectors.ndim != 2:
            raise InputError(f"expected a 2-D matrix, found shape {vectors.shape}", path)
        side = nodes_sidecar(path)
        if side.exists():
            nodes = _as_ints(_read_sidecar(side))
            if len(nodes) != len(vectors):
                raise InputError(f"{len(nodes)} ids for {len(vectors)} vectors", side)
        else:
            nodes = np.arange(len(vectors))
        return vectors.astype(np.float32, copy=False), nodes

    ids: list[str] = []
    rows: list[list[float]] = []
    dim = declared = None
    seen: dict[str, int] = {}
    for lineno, fields in iter_records(path):
        if dim is None and len(fields) == 2 and not rows:
            try:
                declared, dim = int(fields[0]), int(fields[1])
                continue
            except ValueError:
                pass
        if dim is None:
            dim = len(fields) - 1
        if len(fields) != dim + 1:
            raise InputError(
                f"expected a node id and {dim} numbers ({dim + 1} fields), found "
                f"{len(fields)} fields", path, lineno
            )
        try:
            rows.append([float(x) for x in fields[1:]])
        except ValueError:
            raise InputError("a vector entry is not a number", path, lineno) from None
        if fields[0] in seen:
            raise InputError(f"node {quote(fields[0])} appears twice (first on line "
                             f"{seen[fields[0]]})", path, lineno)
        seen[fields[0]] = lineno
        ids.append(fields[0])
    if not rows:
        raise InputError("no vectors found (empty file)", path)
    if declared is not None and declared != len(rows):
        raise InputError(f"the header announces {declared} vectors, the file has {len(rows)}",
                         path, 1)
    return np.array(rows, dtype=np.float32), _as_ints(np.array(ids, dtype=object))


def _read_sidecar(side: Path) -> np.ndarray:
    """The ids of a ``NAME.nodes.txt`` sidecar: each line exactly (an id may hold spaces),
    without its line ending; an id listed twice is refused."""
    try:
        text = side.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", side) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", side) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    ids = [line[:-1] if line.endswith("\r") else line for line in lines]
    seen: dict[str, int] = {}
    for lineno, node in enumerate(ids, 1):
        if node in seen:
            raise InputError(f"node {quote(node)} appears twice (first on line {seen[node]})",
                             side, lineno)
        seen[node] = lineno
    return np.array(ids, dtype=object)


def _load_npz(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """The rows and ids of an ``.npz`` embedding (or of a model file)."""
    if path.is_file() and not zipfile.is_zipfile(path):
        raise InputError("not a readable .npz embedding (not an .npz archive)", path)
    try:
        with np.load(path, allow_pickle=False) as z:
            headers = member_headers(z, ("format", "embedding", "nodes"), path)
            kind = str(z["format"]) if is_short_text(headers.get("format")) else ""
            if kind not in (FORMAT, MODEL_FORMAT):
                raise InputError("not an embedding file (write one with `kernelne embed ... -o "
                                 "EMB.npz`; a model file is read too)", path)
            rows, ids = (headers[k][0] if k in headers else None for k in ("embedding", "nodes"))
            if rows is not None and ids is not None and not (
                    len(rows) == 2 and len(ids) == 1 and rows[0] == ids[0]):
                raise InputError(f"corrupt embedding file (ids of shape {ids} for vectors of "
                                 f"shape {rows})", path)  # checked before either is read
            vectors, nodes = z["embedding"], z["nodes"]
    except InputError:
        raise
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
        raise InputError(f"not a readable .npz embedding ({exc})", path) from None
    if vectors.ndim != 2 or nodes.ndim != 1 or len(nodes) != len(vectors):
        raise InputError(f"corrupt embedding file ({len(nodes)} ids for vectors of shape "
                         f"{vectors.shape})", path)
    if nodes.dtype.kind == "U":
        nodes = _as_ints(nodes.astype(object))
    return vectors.astype(np.float32, copy=False), nodes


def _as_ints(ids: np.ndarray) -> np.ndarray:
    """Integer ids if every id is a canonical int64 decimal (the graph readers' rule)."""
    from kernelne.graphs.graph import is_canonical_int

    if all(is_canonical_int(str(x)) for x in ids):
        return np.array([int(x) for x in ids], dtype=np.int64)
    return ids
