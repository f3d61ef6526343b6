"""Output paths: checked before any work (writable, not a folder, never one of the inputs) and
written atomically (a temporary file renamed into place, so a failed run leaves nothing)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from contextlib import contextmanager
from pathlib import Path

from kernelne.errors import InputError


def _same_file(a: Path, b: Path) -> bool:
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def check_output_path(path: str | Path, inputs: Iterable[str | Path | None] = (),
                      folder: bool = False) -> Path:
    """Fail now (``InputError``) if ``path`` cannot be written or would replace an input.

    ``folder``: the output is a folder (created if missing) rather than a file. The parent
    folder must exist and take a new file (probed with a real temporary file, so read-only
    mounts and ``/proc`` are caught even for root).
    """
    if str(path).strip() == "":
        raise InputError("the output path is empty")
    out = Path(path)
    for source in inputs:
        if source is None or not isinstance(source, (str, Path)):
            continue
        if _same_file(out, Path(source)):
            raise InputError(f"the output is the input file {source}: refusing to overwrite "
                             "it (choose another output path)", out)
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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True
    return True


def remove_stale_temporaries(path: Path) -> None:
    """Delete the ``.NAME.<pid>.<random>.tmp`` files a killed writer of ``path`` left behind
    (those whose process is gone; a live writer's file is never touched)."""
    prefix = f".{path.name}."
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid, dot, rest = name[len(prefix):-len(".tmp")].partition(".")
        if not (dot and rest and pid.isdigit()) or _pid_alive(int(pid)):
            continue
        try:
            os.unlink(path.parent / name)
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
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
