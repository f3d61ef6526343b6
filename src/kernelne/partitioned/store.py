"""Where a partitioned fit keeps its files: a local folder, or an fsspec URL (``s3://``,
``gs://``, ``memory://``, ...) that every Dask worker reaches through the URL's file system.

A location is a :class:`~pathlib.Path` (a plain path or a ``file://`` URL) or a
:class:`RemotePath` (any other URL). The functions here take either: on a ``Path`` they do
what :mod:`kernelne.partitioned.driver` does on a folder (``os.replace`` after a temporary file),
on a
``RemotePath`` they go through ``fsspec.core.url_to_fs``. A file is never seen half-written: on
an object store (:data:`OBJECT_STORES`) a whole object is put in one request (an upload is
visible only once complete), on another file system it is written under a temporary name and
moved. Credentials and endpoints come from the file system's usual configuration (for S3 the
``AWS_*`` variables, e.g. ``AWS_ENDPOINT_URL``, or ``~/.aws``), on the driver and every worker.
"""

from __future__ import annotations

import functools
import io
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kernelne.outputs import atomic_path, pid_alive

#: Protocols whose writes of a whole object are atomic and that have no folders to make.
OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oss",
                           "memory"})
HEADER_BYTES = 4096  # read at once for a .npy header (a block's or a round's is 128 bytes)


@dataclass(frozen=True)
class RemotePath:
    """A file or folder at an fsspec URL; ``/``, ``name``, ``parent`` and ``with_name`` as on
    a :class:`~pathlib.Path`, ``str()`` the URL."""

    url: str

    def __truediv__(self, name: str) -> RemotePath:
        return RemotePath(f"{self.url.rstrip('/')}/{name}")

    def __str__(self) -> str:
        return self.url

    @property
    def name(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def parent(self) -> RemotePath:
        return RemotePath(self.url.rstrip("/").rsplit("/", 1)[0])

    def with_name(self, name: str) -> RemotePath:
        return self.parent / name

    @property
    def protocol(self) -> str:
        return self.url.split("://", 1)[0].lower()


Location = Path | RemotePath


def location(spec: str | os.PathLike) -> Location:
    """``spec`` as a location: a URL other than ``file://`` is a :class:`RemotePath`, anything
    else a :class:`~pathlib.Path` (not made absolute)."""
    text = os.fspath(spec)
    protocol, sep, rest = text.partition("://")
    if not sep or os.sep in protocol or not protocol:
        return Path(text)
    if protocol.lower() in ("file", "local"):
        return Path(rest)
    return RemotePath(text.rstrip("/"))


#: the errors of the HTTP clients under fsspec's stores that say the server is not answering
CONNECTION_ERRORS = frozenset({"EndpointConnectionError", "ConnectTimeoutError",
                               "ConnectionClosedError", "ReadTimeoutError",
                               "ClientConnectorError", "ServerDisconnectedError",
                               "ClientOSError", "ServerTimeoutError"})


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it was raised from) says that a URL's store stopped
    answering: a connection error of the OS, or of botocore or aiohttp by name.

    Parameters
    ----------
    exc : BaseException
        The exception a store's call raised.

    Returns
    -------
    bool
        True for a lost connection, False for any other error.
    """
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ConnectionError | TimeoutError) or any(
                cls.__name__ in CONNECTION_ERRORS for cls in type(exc).__mro__):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def is_remote(path: Location) -> bool:
    """Whether ``path`` is reached through fsspec (not a local folder)."""
    return isinstance(path, RemotePath)


def filesystem(path: RemotePath) -> tuple[Any, str]:
    """The fsspec file system and its path for ``path`` (``ValueError`` for an unknown
    protocol, ``ImportError`` when the protocol's package is missing)."""
    from fsspec.core import url_to_fs

    return url_to_fs(path.url)


def _fresh(path: RemotePath) -> tuple[Any, str]:
    """As :func:`filesystem`, the listings cached for ``path`` dropped: other processes (the
    workers) write beside this one."""
    fs, where = filesystem(path)
    fs.invalidate_cache(where)
    return fs, where


def exists(path: Location) -> bool:
    """Whether a file or folder is at ``path``."""
    if not is_remote(path):
        return path.exists()
    fs, where = _fresh(path)
    return fs.exists(where)


def is_file(path: Location) -> bool:
    """Whether a file (not a folder) is at ``path``."""
    if not is_remote(path):
        return path.is_file()
    fs, where = _fresh(path)
    return fs.isfile(where)


def names(path: Location) -> list[str]:
    """The names in the folder ``path``, sorted; none if it does not exist."""
    if not is_remote(path):
        return sorted(p.name for p in path.iterdir()) if path.is_dir() else []
    fs, where = _fresh(path)
    try:
        entries = fs.ls(where, detail=False)
    except FileNotFoundError:
        return []
    return sorted({str(e).rstrip("/").rsplit("/", 1)[-1] for e in entries} - {""})


def makedirs(path: Location) -> None:
    """Make the folder ``path`` (nothing to make on an object store)."""
    if not is_remote(path):
        path.mkdir(parents=True, exist_ok=True)
    elif path.protocol not in OBJECT_STORES:
        fs, where = filesystem(path)
        fs.makedirs(where, exist_ok=True)


def remove(path: Location) -> None:
    """Remove the file at ``path`` (nothing if it is not there)."""
    try:
        if not is_remote(path):
            path.unlink()
        else:
            fs, where = filesystem(path)
            fs.rm_file(where)
    except FileNotFoundError:
        pass


def size(path: Location) -> int:
    """The bytes of the file at ``path``."""
    if not is_remote(path):
        return path.stat().st_size
    fs, where = _fresh(path)
    return int(fs.size(where))


def read_bytes(path: Location, start: int | None = None, end: int | None = None) -> bytes:
    """The bytes ``[start, end)`` of the file at ``path`` (all of them by default)."""
    if not is_remote(path):
        with open(path, "rb") as fh:
            fh.seek(start or 0)
            return fh.read() if end is None else fh.read(max(end - (start or 0), 0))
    fs, where = filesystem(path)
    return fs.cat_file(where, start=start, end=end)


def write_bytes(path: Location, data: bytes) -> None:
    """Write ``data`` as the file at ``path``, seen whole or not at all."""
    if not is_remote(path):
        with atomic_path(path) as tmp:
            tmp.write_bytes(data)
        return
    fs, where = filesystem(path)
    if path.protocol in OBJECT_STORES:
        fs.pipe_file(where, data)
        return
    tmp = _temporary_name(where)
    try:
        fs.pipe_file(tmp, data)
        fs.mv(tmp, where)
    finally:
        if fs.exists(tmp):
            fs.rm_file(tmp)


def _temporary_name(where: str) -> str:
    folder, _, name = where.rpartition("/")
    return f"{folder}/.{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"


def create_exclusive(path: Location, data: bytes) -> bool:
    """Write ``data`` as a new file at ``path``; ``False`` (nothing written) if one is there.
    Atomic on a local folder (``O_EXCL``) and on a store with conditional writes (S3's
    ``If-None-Match``, ``memory://``); a file system without them is looked at, then
    written."""
    if not is_remote(path):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return True
    fs, where = filesystem(path)
    try:
        fs.pipe_file(where, data, mode="create")
    except FileExistsError:
        return False
    except TypeError:  # no ``mode`` argument: no exclusive write
        fs.invalidate_cache(where)
        if fs.exists(where):
            return False
        fs.pipe_file(where, data)
    return True


#: the kinds of temporary folders a partitioned fit makes: ``kernelne-{kind}-{pid}-*``
SCRATCH_KINDS = ("parts", "stage", "rows")


def scratch_folder(kind: str) -> Path:
    """A new temporary folder ``kernelne-{kind}-{pid}-*`` in the system's temporary folder;
    the first one a process makes there removes those left by dead processes
    (:func:`remove_dead_scratch`).

    Parameters
    ----------
    kind : str
        One of :data:`SCRATCH_KINDS`.

    Returns
    -------
    Path
        The new, empty folder.
    """
    where = tempfile.gettempdir()
    remove_dead_scratch(where)
    return Path(tempfile.mkdtemp(prefix=f"kernelne-{kind}-{os.getpid()}-", dir=where))


@functools.cache
def remove_dead_scratch(where: str) -> None:
    """Remove the temporary folders of :data:`SCRATCH_KINDS` in ``where`` whose process is no
    longer running on this host (killed by SIGKILL or the OOM killer, which skip every clean-up:
    a fit's walks and blocks, gigabytes at scale); once per process and folder. A live
    process' folders, another user's and folders of other names are left alone.

    Parameters
    ----------
    where : str
        The temporary folder looked in.
    """
    try:
        entries = list(os.scandir(where))
    except OSError:
        return
    for entry in entries:
        for kind in SCRATCH_KINDS:
            pid, dash, rest = entry.name.removeprefix(f"kernelne-{kind}-").partition("-")
            if (entry.name.startswith(f"kernelne-{kind}-") and dash and rest and pid.isdigit()
                    and entry.is_dir(follow_symlinks=False) and not pid_alive(int(pid))):
                shutil.rmtree(entry.path, ignore_errors=True)


@contextmanager
def staged(path: Location) -> Iterator[Path]:
    """A local temporary file to write; on success it becomes the file at ``path`` whole (a
    local folder: renamed, :func:`~kernelne.outputs.atomic_path`; a URL: uploaded)."""
    if not is_remote(path):
        with atomic_path(path) as tmp:
            yield tmp
        return
    scratch = scratch_folder("stage")
    try:
        tmp = scratch / path.name
        yield tmp
        fs, where = filesystem(path)
        if path.protocol in OBJECT_STORES:
            fs.put_file(str(tmp), where)
        else:
            temporary = _temporary_name(where)
            fs.put_file(str(tmp), temporary)
            fs.mv(temporary, where)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def npy_header(path: Location) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """Shape, Fortran order, dtype and the data's offset of the .npy file at ``path``."""
    if not is_remote(path):
        with open(path, "rb") as fh:
            return (*read_npy_header(fh), fh.tell())
    head = io.BytesIO(read_bytes(path, 0, HEADER_BYTES))
    return (*read_npy_header(head), head.tell())


def read_npy_header(fh) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Shape, Fortran order and dtype from the header of the .npy file open as ``fh``
    (version 1 or 2), leaving ``fh`` at its data.

    Parameters
    ----------
    fh : binary file
        Positioned at the file's start.

    Returns
    -------
    tuple
        ``(shape, fortran_order, dtype)``.
    """
    fmt = np.lib.format
    read_header = (fmt.read_array_header_1_0 if fmt.read_magic(fh) == (1, 0)
                   else fmt.read_array_header_2_0)
    return read_header(fh)


def read_npy_rows(path: RemotePath, lo: int, hi: int,
                  header: tuple[tuple[int, ...], bool, np.dtype, int] | None = None,
                  ) -> np.ndarray:
    """Rows ``[lo, hi)`` of the C-order .npy file at the URL ``path``: one ranged read, and
    one for the header unless ``header`` (:func:`npy_header`'s) is given."""
    shape, _, dtype, offset = npy_header(path) if header is None else header
    hi = min(hi, shape[0])
    row = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
    count = max(hi - lo, 0)
    data = read_bytes(path, offset + lo * row, offset + (lo + count) * row) if count else b""
    if len(data) != count * row:
        raise OSError(f"{path}: rows {lo}-{hi} cut short ({len(data)} of {count * row} "
                      "bytes): the file is truncated")
    return np.frombuffer(data, dtype=dtype).reshape((count, *shape[1:])).copy()


def load_npy(path: Location, mmap: bool = False) -> np.ndarray:
    """The array of the .npy file at ``path`` (memory-mapped if ``mmap`` and local)."""
    if not is_remote(path):
        return np.load(path, mmap_mode="r" if mmap else None)
    return np.load(io.BytesIO(read_bytes(path)))


def load_npz(path: Location) -> dict[str, np.ndarray]:
    """The arrays of the .npz file at ``path``."""
    source = path if not is_remote(path) else io.BytesIO(read_bytes(path))
    with np.load(source) as z:
        return {name: z[name] for name in z.files}


def npy_bytes(array: np.ndarray) -> bytes:
    """``array`` as the bytes of a .npy file."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()
