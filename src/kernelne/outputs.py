"""Output paths: checked before any work (writable, not a folder, not a URL, and neither the
output nor any file written with it, such as an ids sidecar, one of the inputs) and written
atomically (a temporary file renamed into place, so a failed run leaves nothing)."""

from __future__ import annotations

import errno
import os
import re
import tempfile
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from kernelne.errors import InputError, quote, write_failure


def _same_file(a: Path, b: Path) -> bool:
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def check_not_url(path: str | Path, role: str) -> None:
    """Fail now (``InputError``) if ``path`` is a URL (``s3://...``, ``https://...``):
    inputs and outputs are local files; only ``--partition-dir`` takes a URL.

    ``role``: how the message names the path (``"the output"``, ``"an input"``).
    """
    text = str(path)
    if isinstance(path, str) and _URL.match(text):
        raise InputError(f"{quote(text, bare=True)}: {role} is a URL; inputs and outputs are "
                         "local files (only --partition-dir takes a URL): copy it to or from "
                         "a local path first")


def check_not_inputs(written: Iterable[tuple[str | Path, str]],
                     inputs: Iterable[str | Path | None]) -> None:
    """Fail now (``InputError``) if a file a command writes (or deletes) is one of its inputs.

    Parameters
    ----------
    written : iterable of (path, role)
        Every file the command may write or remove: the output itself (role ``""``) and its
        companions, such as the ids sidecar of a ``.npy`` output or the files written into an
        output folder (role: how the message names it).
    inputs : iterable of str, Path or None
        The files the command reads; ``None`` and non-paths are skipped.

    Raises
    ------
    InputError
        A written path and an input are the same file (same path once resolved, a symbolic
        link to it, or a hard link).
    """
    sources = [Path(s) for s in inputs if isinstance(s, (str, Path)) and str(s) not in ("", "-")]
    for out, role in written:
        out = Path(out)
        for source in sources:
            if _same_file(out, source):
                what = "the output" if not role else f"{out} ({role})"
                raise InputError(f"{what} is the input file {source}: refusing to overwrite "
                                 "it (choose another output path)", out if not role else None)


def check_output_path(path: str | Path, inputs: Iterable[str | Path | None] = (),
                      folder: bool = False,
                      companions: Iterable[tuple[str | Path, str]] = ()) -> Path:
    """Fail now (``InputError``) if ``path`` cannot be written or would replace an input.

    ``folder``: the output is a folder (created if missing) rather than a file. The parent
    folder must exist and take a new file (probed with a real temporary file, so read-only
    mounts and ``/proc`` are caught even for root). ``companions``: ``(path, role)`` of the
    other files written with the output (a sidecar; the files written into an output
    folder), checked against ``inputs`` too (:func:`check_not_inputs`).
    """
    if str(path).strip() == "":
        raise InputError("the output path is empty")
    check_not_url(path, "the output")
    out = Path(path)
    inputs = list(inputs)
    check_not_inputs([(out, ""), *companions], inputs)
    if folder:
        if out.exists() and not out.is_dir():
            raise InputError("cannot write a folder here: a file of that name exists", out)
        probe_dir = out if out.is_dir() else out.parent
    else:
        if out.is_dir():
            raise InputError("cannot write: it is an existing folder", out)
        if out.exists() and not out.is_file():  # the atomic rename would replace the node
            raise InputError("cannot write: not a regular file (a device, pipe or socket); "
                             "-o - writes text to standard output", out)
        probe_dir = out.parent
    if not probe_dir.is_dir():
        raise InputError("cannot write: its folder does not exist", out)
    try:
        fd, tmp = tempfile.mkstemp(dir=probe_dir, prefix=".kernelne-probe-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise InputError(f"cannot write in {probe_dir}: {exc.strerror}", out) from None
    return out


def cap_jobs(n_jobs: int | None, tasks: int) -> int:
    """Processes worth starting: at most one per task and one per core."""
    cores = os.cpu_count() or 1
    wanted = cores if n_jobs is None or n_jobs < 0 else n_jobs
    return max(1, min(wanted, tasks, cores))


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` may be running on this host (True when it cannot be told:
    another user's process, or a number no process can have)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def remove_stale_temporaries(path: Path) -> None:
    """Delete the ``.NAME.<pid>.<random>.tmp`` files (or staging folders) a killed writer of
    ``path`` left behind (those whose process is gone; a live writer's are never touched)."""
    prefix = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid, dot, rest = name[len(prefix):-len(".tmp")].partition(".")
        if not (dot and rest and pid.isdigit()) or pid_alive(int(pid)):
            continue
        stale = path.parent / name
        try:
            if stale.is_dir() and not stale.is_symlink():
                import shutil

                shutil.rmtree(stale)
            else:
                os.unlink(stale)
        except OSError:
            pass


@contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path in ``path``'s folder; on success rename it to ``path``.

    The temporary file is ``.NAME.<pid>.<random>.tmp``, so that the ones left by a killed
    process (SIGKILL skips every cleanup) are removed by the next write of ``NAME``. A failed
    write (disk full, quota, I/O error) is an :class:`InputError` ``cannot write PATH:
    REASON`` and leaves nothing.
    """
    path = Path(path)
    if path.parent and not path.parent.exists():
        raise InputError("cannot write: its folder does not exist", path)
    remove_stale_temporaries(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.",
                                   suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {write_failure(exc)}") from None
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {write_failure(exc)}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


_FOLDER_LOCKS: dict[tuple[str, int], list] = {}  # (folder, thread): [descriptor, depth]


@contextmanager
def folder_lock(folder: str | Path, what: str = "another process"):
    """Hold an exclusive lock on the existing ``folder`` for the block (``flock`` on the folder
    itself: no lock file, released when the process ends, however it ends).

    One writer at a time: a second process (or thread) asking for it while it is held gets an
    :class:`InputError` at once; the thread holding it may ask again (nested blocks).

    Parameters
    ----------
    folder : str or Path
        The folder, which must exist.
    what : str, default "another process"
        Who holds it, as the refusal names them (e.g. ``"another split"``).

    Raises
    ------
    InputError
        The folder is locked by another process or thread, or cannot be opened.
    """
    import fcntl
    import threading

    key = (os.path.realpath(folder), threading.get_ident())
    held = _FOLDER_LOCKS.get(key)
    if held is not None:
        held[1] += 1
        try:
            yield
        finally:
            held[1] -= 1
        return
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise InputError(f"cannot open the folder: {exc.strerror or exc}", folder) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"{what} is writing into this folder now: wait for it to end or "
                             "choose another folder", folder) from None
        _FOLDER_LOCKS[key] = [fd, 1]
        try:
            yield
        finally:
            del _FOLDER_LOCKS[key]
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def allocated_memmap(path: Path, dtype, shape: tuple[int, ...]) -> np.memmap:
    """A new .npy file at ``path`` memory-mapped for writing
    (``np.lib.format.open_memmap(path, "w+")``), its disk blocks allocated first
    (``posix_fallocate``): a full disk is an ``OSError`` (``ENOSPC``) here, where a sparse
    file's map died of ``SIGBUS`` at the first page the disk had no room for.

    Parameters
    ----------
    path : Path
        The new file (a temporary name: the caller removes it on error).
    dtype : numpy dtype
        The array's type.
    shape : tuple of int
        The array's shape.

    Returns
    -------
    numpy.memmap
        The array, mapped.
    """
    out = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
    allocate = getattr(os, "posix_fallocate", None)
    if allocate is None:
        return out
    fd = os.open(path, os.O_RDWR)
    try:
        allocate(fd, 0, os.fstat(fd).st_size)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            del out
            raise
    finally:
        os.close(fd)
    return out


def write_npy_header(fh, dtype, shape: tuple[int, ...]) -> None:
    """Write the header ``np.save`` writes for an array of ``shape`` values of ``dtype`` to the
    open binary file ``fh``: its C-order values follow."""
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
              "shape": tuple(int(x) for x in shape)}
    np.lib.format.write_array_header_1_0(fh, header)


def write_npy(path: Path, dtype, shape: tuple[int, ...], windows: Iterable[np.ndarray]) -> None:
    """A new ``.npy`` file at ``path`` of ``shape`` values of ``dtype`` (the bytes of
    ``np.save``), its header then the arrays ``windows`` yields in order (C order, cast to
    ``dtype``), written through a file handle: a matrix never all in memory (a map, a file's
    edges read a window at a time), and a full disk is an ``OSError``.

    Parameters
    ----------
    path : Path
        The new file (a temporary name: the caller removes it on error).
    dtype : numpy dtype
        The array's type.
    shape : tuple of int
        The array's shape; the windows hold its values in order.
    windows : iterable of ndarray
        The values, a window at a time.
    """
    with open(path, "wb") as fh:
        write_npy_header(fh, dtype, shape)
        for window in windows:
            fh.write(np.ascontiguousarray(window, dtype=dtype).data)
