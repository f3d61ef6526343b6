"""What the command-line tests share: small graphs, the fast options and one run of main."""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kernelne.cli.app import main

#: a 30-node ring with two chords
EDGES = "\n".join(f"{i} {(i + 1) % 30}" for i in range(30)) + "\n0 15\n3 20\n"
KARATE = Path(__file__).resolve().parents[1] / "examples" / "karate.edgelist"
#: the options of a fit that takes a moment
FAST = ["--dim", "4", "--walks-per-node", "2", "--workers", "1", "--quiet"]


class FullDisk:
    """A file whose writes fail as on a full disk."""

    def __init__(self, fh):
        self.fh = fh

    def write(self, data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()


def run_cli(argv, capsys) -> tuple[int, str]:
    """``(exit code, stderr)`` of ``kernelne ARGV`` run in this process."""
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def one_error_line(err: str, *words: str) -> None:
    """``err`` holds no traceback and exactly one ``kernelne: error:`` line (other lines, such
    as Dask's own log, may stand beside it), and that line holds every one of ``words``."""
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if line.startswith("kernelne: error:")]
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], err


def only_error_line(err: str) -> str:
    """The single non-blank line of ``err``, which must be a ``kernelne: error:`` line (no
    traceback, nothing else)."""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("kernelne: error: "), err
    assert "Traceback" not in err
    return lines[0]


def random_embedding(path: Path, n: int, d: int = 8, seed: int = 0) -> Path:
    """Write ``n`` seeded normal rows of dimension ``d`` as word2vec text (ids ``0..n-1``)."""
    vectors = np.random.default_rng(seed).normal(size=(n, d))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{n} {d}\n")
        for i, row in enumerate(vectors):
            fh.write(f"{i} " + " ".join(f"{x:.5f}" for x in row) + "\n")
    return path


@dataclass
class ClientLog:
    """What :func:`client_errors_seen` saw: ``distributed.client``'s logger, the ERROR
    records it passed to its handlers, and its filters as they were before the block."""

    logger: logging.Logger
    filters_before: list
    errors: list[logging.LogRecord] = field(default_factory=list)


@contextmanager
def client_errors_seen() -> Iterator[ClientLog]:
    """Within the block, a handler on ``distributed.client`` collects the ERROR records its
    filters let through (a command that quiets them leaves none); removed after the block."""
    logger = logging.getLogger("distributed.client")
    seen = ClientLog(logger, list(logger.filters))
    handler = logging.Handler(logging.ERROR)
    handler.emit = seen.errors.append
    logger.addHandler(handler)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)
