"""The chunk loop of an in-memory training run: :func:`~kernelne.engine.trainer.train_walks`
over each chunk of walks of each epoch, with the seconds spent waiting for walks and
training them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from kernelne.engine.trainer import KernelArrays, Noise, TrainSettings, train_walks


@dataclass
class StageClock:
    """Seconds of a run spent waiting for walks (made while training, or the caller's work
    between chunks) and training them."""

    walks: float = 0.0
    training: float = 0.0


def train_chunks(
    chunks: Callable[[], Iterable[tuple[int, np.ndarray]]], n_walks: int, epochs: int,
    A: np.ndarray, B: np.ndarray, kernel: KernelArrays, noise: Noise, settings: TrainSettings,
    rates: np.ndarray | None = None, keep: np.ndarray | None = None,
    clock: StageClock | None = None,
) -> Iterator[tuple[np.ndarray, int, np.ndarray]]:
    """The chunk loop of every in-memory run (a fit's runs, ``partial_fit``).

    For each epoch ``e`` and each ``(first, walks)`` of ``chunks()`` (a fresh iterator of the
    epoch's chunks, ``first`` the index of the chunk's first walk among ``n_walks``), one
    :func:`train_walks` over the chunk at walk index ``e * n_walks + first``, then yields
    ``(walks, pairs, losses)``: the chunk, its trained pairs and its summed positive and
    negative squared errors (an array reused by the next chunk). ``clock``, if given, adds the
    seconds spent between chunks (walks made, the caller's work) and in training.
    """
    losses = np.zeros(2)
    clock = StageClock() if clock is None else clock
    for epoch in range(epochs):
        before = time.perf_counter()
        for first, walks in chunks():
            losses[:] = 0
            started = time.perf_counter()
            clock.walks += started - before
            pairs = train_walks(walks, epoch * n_walks + first, A, B, kernel, noise, settings,
                                losses, rates, keep)
            before = time.perf_counter()
            clock.training += before - started
            yield walks, pairs, losses
