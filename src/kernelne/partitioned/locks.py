"""The folder of a partitioned fit: made or checked usable (a local folder or an fsspec URL),
locked for one run at a time, and checked to be the same folder on every Dask worker.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernelne.errors import InputError
from kernelne.outputs import pid_alive
from kernelne.partitioned.blocks import write_json
from kernelne.partitioned.store import (
    Location,
    RemotePath,
    create_exclusive,
    exists,
    filesystem,
    is_file,
    is_remote,
    location,
    makedirs,
    names,
    read_bytes,
    remove,
    scratch_folder,
    write_bytes,
)

MARKER = "kernelne-partitions.json"  # marks a folder a partitioned fit made
LOCK = "kernelne.lock"  # the running fit's pid, host and token
WORKER_CHECK_SECONDS = 120.0  # how long the folder check waits for the Dask workers
#: fsspec protocols that cannot hold a partitioned fit, and why
NOT_FOLDERS = {
    **dict.fromkeys(("http", "https"), "web servers are read only"),
    **dict.fromkeys(("zip", "tar", "libarchive", "reference", "github", "git"),
                    "a read-only view of other files"),
    **dict.fromkeys(("simplecache", "filecache", "blockcache", "cached"),
                    "a cache serves old copies of files that every step rewrites"),
}
_HELD: dict[str, str] = {}  # the folders this process holds the lock of, and its tokens
PLAN_VERSION = 4  # 4: plan.json binds the folder to its graph (graph_digest)


@contextmanager
def partition_folder(partition_dir: str | os.PathLike | None, client=None,
                     ) -> Iterator[Location]:
    """The folder of a partitioned fit, locked for the enclosed block.

    Parameters
    ----------
    partition_dir
        The user's folder (made absolute; it must be absent, empty or made by a partitioned
        fit) or fsspec URL (``s3://bucket/run``, ``gs://...``, ``memory://...``: see
        :mod:`kernelne.partitioned.store`), or ``None`` for a new temporary
        ``kernelne-parts-*`` folder, removed if the block raises (any exception,
        ``KeyboardInterrupt`` and the CLI's SIGTERM included).
    client
        A ``distributed.Client``: every connected worker must read the lock file at the same
        path or URL and write beside it, or :class:`InputError` is raised before any work.

    Yields
    ------
    Path or RemotePath
        The absolute folder or the URL, holding :data:`MARKER` and this run's :data:`LOCK`
        (removed on exit).
    """
    temporary = partition_dir is None
    if temporary:
        folder = scratch_folder("parts").resolve()
    else:
        folder = usable_folder(partition_dir)
    done = False
    token = None
    try:
        token = take_lock(folder)
        _HELD[str(folder)] = token
        if not is_remote(folder):
            refuse_links(folder)
        if not exists(folder / MARKER):
            write_json(folder / MARKER, {"kernelne": "partitioned fit",
                                          "plan_version": PLAN_VERSION})
        if client is not None:
            check_workers_see(client, folder, token, temporary)
        yield folder
        done = True
    finally:
        if token is not None:
            _HELD.pop(str(folder), None)
            release_lock(folder, token)
        if temporary and not done:
            remove_folder(folder)


def check_lock_held(folder: Location) -> None:
    """An :class:`InputError` if the lock this process took on ``folder``
    (:func:`partition_folder`) was removed or replaced meanwhile: another run may be writing
    the same files, so the fit stops before it writes or records another step."""
    token = _HELD.get(str(folder))
    if token is None:
        return
    path = folder / LOCK
    try:
        held = json.loads(read_bytes(path).decode("utf-8")).get("token") == token
    except (FileNotFoundError, ValueError, AttributeError):  # a store not answering: raised
        held = False
    if not held:
        raise InputError(f"--partition-dir {folder}: this run's lock {path} was removed or "
                         "replaced while it trained, so another run may be writing the same "
                         "files: stopped before the next step; once no other run uses the "
                         "folder, remove it and start over")


def usable_folder(partition_dir: str | os.PathLike) -> Location:
    """``partition_dir`` as an absolute folder that exists and can be written: absent (made
    here), empty, or made by a partitioned fit (it holds :data:`MARKER`, or :data:`LOCK` if
    the fit was stopped before it wrote the marker); a URL (:func:`usable_url`) under the
    same rules. Anything else is one :class:`InputError` naming the folder."""
    text = os.fspath(partition_dir)
    if not text.strip():  # not the current folder: "" is most often an unset variable
        raise InputError(f"--partition-dir is empty ({text!r}): give a folder (. for the "
                         "current one) or a URL such as s3://bucket/run, or leave it out for "
                         "a temporary folder")
    protocol, sep, rest = text.partition("://")
    if "::" in text and sep:
        raise InputError(f"--partition-dir {text}: a chained URL (PROTOCOL::URL) is not "
                         "supported: a caching or archive layer serves old copies of files that "
                         "every step rewrites; give the store's own URL (s3://bucket/run)")
    if sep and protocol and os.sep not in protocol and not rest.strip("/"):
        raise InputError(f"--partition-dir {text}: the URL names no bucket or folder after "
                         f"{protocol}://: give one (such as {protocol}://bucket/run)")
    where = location(text)
    if is_remote(where):
        return usable_url(where)
    folder = Path(os.path.abspath(os.path.expanduser(os.fspath(where))))
    if folder.exists() and not folder.is_dir():
        raise InputError("--partition-dir names a file, not a folder: give a new or empty "
                         "folder", folder)
    try:
        entries = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        if entries and not {MARKER, LOCK} & set(entries):
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise InputError(f"--partition-dir holds files a partitioned fit did not make "
                             f"({shown}): give a new or empty folder", folder)
        folder.mkdir(parents=True, exist_ok=True)
    except InputError:
        raise
    except OSError as exc:
        raise InputError(f"--partition-dir cannot be made or read "
                         f"({exc.strerror or exc}): give a folder you can write", folder) from None
    return folder


def install_hint(protocol: str) -> str:
    """What to install for fsspec's ``protocol``: ``kernelne[dask]`` brings fsspec and s3fs;
    another protocol's package is the one fsspec's registry names (gcsfs for ``gs://``), or,
    for a protocol of fsspec itself, the one its message names."""
    base = "pip install 'kernelne[dask]' installs fsspec and s3fs"
    if protocol in ("s3", "s3a"):
        return base
    try:
        from fsspec.registry import known_implementations

        package = known_implementations[protocol]["class"].split(".")[0]
    except (ImportError, KeyError, AttributeError, TypeError):
        return base
    return "install the package it names" if package == "fsspec" else f"pip install {package}"


def usable_url(url: RemotePath) -> RemotePath:
    """The URL of a partitioned fit's files if its file system can be reached and it holds
    nothing but a partitioned fit's files (as :func:`usable_folder`); otherwise one
    :class:`InputError` naming ``--partition-dir`` and the problem."""
    if url.protocol in NOT_FOLDERS:
        raise InputError(f"--partition-dir {url}: {url.protocol}:// cannot hold a partitioned "
                         f"fit ({NOT_FOLDERS[url.protocol]}): give a local folder or an "
                         "object store's URL (s3://bucket/run, gs://...)")
    try:
        filesystem(url)
    except ImportError as exc:
        raise InputError(f"--partition-dir {url}: {url.protocol}:// needs a package that is "
                         f"not installed ({exc}); {install_hint(url.protocol)}") from None
    except ValueError as exc:
        from fsspec import available_protocols

        written = str(url).split("://", 1)[0]  # url.protocol is in lower case
        if written != url.protocol and url.protocol in available_protocols():
            raise InputError(f"--partition-dir {url}: the protocol {written}:// must be written "
                             f"in lower case: write it {url.protocol}:// (as fsspec names its "
                             "protocols)") from None
        raise InputError(f"--partition-dir {url}: unknown protocol {url.protocol}:// ({exc}): "
                         "give a folder or an fsspec URL such as s3://bucket/run") from None
    except Exception as exc:  # noqa: BLE001 - a file system that connects when made (ftp://)
        raise InputError(f"--partition-dir {url} cannot be reached ({reason(exc)}): give a "
                         "URL you can read and write") from None
    try:
        if is_file(url):
            raise InputError(f"--partition-dir {url} names a file, not a folder: give a new or "
                             "empty folder")
        entries = names(url)
        if entries and not {MARKER, LOCK} & set(entries):
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise InputError(f"--partition-dir {url} holds files a partitioned fit did not "
                             f"make ({shown}): give a new or empty folder")
        makedirs(url)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the store says: not reachable
        raise InputError(f"--partition-dir {url} cannot be read ({reason(exc)}): give a "
                         "URL you can read and write") from None
    return url


def reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def take_lock(folder: Location) -> str:
    """Create ``folder/LOCK`` (atomically: ``O_CREAT | O_EXCL``, or a conditional write at a
    URL) holding this process' pid, host and a new token, and return the token; a lock
    already there is an :class:`InputError` saying who holds it, or that it looks stale."""
    import socket
    import uuid

    path = folder / LOCK
    token = uuid.uuid4().hex
    owner = {"pid": os.getpid(), "host": socket.gethostname(), "token": token}
    try:
        made = create_exclusive(path, json.dumps(owner).encode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - an OSError, or a store's own error
        if not is_remote(folder) and not isinstance(exc, OSError):
            raise
        raise InputError(f"--partition-dir cannot be written ({reason(exc)}): give a "
                         "folder you can write", folder) from None
    if not made:
        raise InputError(_held(folder, path))
    return token


def _held(folder: Location, path: Location) -> str:
    """Why the lock at ``path`` refuses this run: who holds it, or that it looks stale."""
    import socket

    try:
        owner = json.loads(read_bytes(path).decode("utf-8"))
        pid, host = int(owner["pid"]), str(owner["host"])
    except (OSError, ValueError, KeyError, TypeError):
        return (f"--partition-dir {folder} is locked by another run ({path} is unreadable); "
                f"remove {path} if no other run uses the folder")
    if host == socket.gethostname() and not pid_alive(pid):
        return (f"--partition-dir {folder} is locked by pid {pid} on host {host}, which is no "
                f"longer running: the lock looks stale (a run that was killed); remove {path} "
                "to use the folder (it resumes that fit)")
    return (f"--partition-dir {folder} is in use by pid {pid} on host {host} (remove {path} "
            "if that process is gone)")


def release_lock(folder: Location, token: str) -> None:
    """Remove ``folder/LOCK`` if it is still this run's (its token)."""
    path = folder / LOCK
    try:
        if json.loads(read_bytes(path).decode("utf-8")).get("token") == token:
            remove(path)
    except Exception:  # noqa: BLE001 - unreadable, or a store that no longer answers
        pass


def worker_sees(lock_path: str, token: str) -> str | None:
    """On a Dask worker: ``None`` if the lock file at ``lock_path`` (a path or URL) holds
    ``token`` and a file can be written beside it, else what went wrong."""
    try:
        lock = location(lock_path)
        if json.loads(read_bytes(lock).decode("utf-8")).get("token") != token:
            return "another folder is at that path there"
        probe = lock.with_name(f".probe-{token}-{os.getpid()}")
        write_bytes(probe, b"")
        remove(probe)
    except Exception as exc:  # noqa: BLE001 - an OSError, or a store's own error
        return reason(exc)
    return None


def check_workers_see(client, folder: Location, token: str, temporary: bool = False) -> None:
    """Ask every worker connected to ``client``'s scheduler to read this run's lock file
    (:func:`worker_sees`); an :class:`InputError` if one cannot, or if no worker answers
    within :data:`WORKER_CHECK_SECONDS`."""
    lock = str(folder / LOCK)
    deadline = time.monotonic() + WORKER_CHECK_SECONDS
    warned = False
    while True:
        answers = client.run(worker_sees, lock, token)
        if answers or time.monotonic() > deadline:
            break
        if not warned:
            warnings.warn(f"no Dask worker is connected to the scheduler "
                          f"({client.scheduler.address}) yet: the partitioned fit waits up to "
                          f"{WORKER_CHECK_SECONDS:.0f} s for one (start `dask worker ADDRESS`)",
                          stacklevel=2)
            warned = True
        time.sleep(1.0)
    if not answers:
        raise InputError(f"no Dask worker is connected to the scheduler "
                         f"({client.scheduler.address}) after {WORKER_CHECK_SECONDS:.0f} s: "
                         "start workers (dask worker ADDRESS) and run again")
    failed = {w: why for w, why in answers.items() if why is not None}
    if failed:
        worker, why = next(iter(failed.items()))
        what = ("the temporary folder" if temporary else "--partition-dir")
        hint = (": give --partition-dir a folder every worker reads and writes at the same "
                "path (a shared file system)" if temporary else
                ": it must be a folder every worker reads and writes at the same path (a shared "
                "file system)")
        if is_remote(folder):
            hint = (": memory:// lives in one process, and the workers run in others; give "
                    "an s3:// or gs:// URL or a shared folder" if folder.protocol == "memory"
                    else ": every worker must reach the URL with the driver's credentials and "
                    "endpoint (for s3:// the AWS_* variables or ~/.aws)")
        raise InputError(f"the Dask workers cannot see {what} {folder}{hint} "
                         f"({len(failed)} of {len(answers)} workers; {worker}: {why})")


def refuse_links(folder: Path) -> None:
    """An :class:`InputError` naming the first symbolic link inside ``folder`` (the folder
    itself may be one): whoever can write into a shared folder could otherwise make the fit
    read or overwrite a file out of it through a link."""
    for root, dirs, files in os.walk(folder):
        for name in sorted(dirs + files):
            path = Path(root) / name
            if path.is_symlink():
                raise InputError(f"is a symbolic link in the partition folder {folder}: a "
                                 "partitioned fit follows no link out of its folder; remove "
                                 "the link", path)


def remove_folder(folder: str | Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
