"""The restarts of a fit: training runs from fresh rows until one is kept.

A run (:class:`Run`) trains every chunk of walks once per epoch. :func:`train_with_restarts`
starts runs until one is kept. Where the automatic setting applies and the graph is dense (mean
degree at least :data:`~kernelne.engine.propagation.AUTO_MIN_DEGREE`),
the first run already trains with :data:`~kernelne.model.auto_setting.DENSE_SETTING`. It
restarts in three cases:

* the rows collapse onto a shell (:func:`~kernelne.engine.robust.shell_figures`) and the
  automatic setting may still switch: the next run trains with
  :data:`~kernelne.model.auto_setting.DENSE_SETTING`;
* the rows collapse otherwise: the distance kernels are narrowed, ``rho <- NARROWING * rho``
  (at most :data:`~kernelne.engine.robust.MAX_NARROWING` times), and learned weights move to
  the simplex if they collapsed too;
* the rows diverge (NaN or infinite): the learning rates are halved, at most
  :data:`MAX_LR_HALVINGS` times.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from kernelne.engine.chunks import StageClock, train_chunks
from kernelne.engine.diagnostics import check_finite
from kernelne.engine.kernels import Kernel
from kernelne.engine.robust import (
    CHECKPOINT_PAIRS,
    MAX_NARROWING,
    NARROWING,
    look_due,
    shell_figures,
)
from kernelne.engine.rows import aligned_rows, out_of_memory, uniform_rows
from kernelne.engine.trainer import (
    Noise,
    kernel_arrays,
    train_settings,
)
from kernelne.engine.walks import WalkCorpus, count_visits
from kernelne.errors import TrainingError
from kernelne.graphs.graph import Graph
from kernelne.memory import available_memory_bytes
from kernelne.model.auto_setting import (
    DENSE_SETTING,
    chooses,
    dense_by_degree,
    resolved,
    start_scale,
    with_params,
)

#: a fit in memory holds its walks from the counting pass to the training runs (instead of
#: making them again) where they take at most this share of the memory left beside the rows
HELD_WALKS_SHARE = 0.25


def walks_held(corpus: WalkCorpus, dim: int) -> bool:
    """Whether a fit in memory keeps ``corpus``' walks from its counting pass for its training
    runs: where the walks (``n_walks x walk_length`` int32) take at most
    :data:`HELD_WALKS_SHARE` of the memory available
    (:func:`~kernelne.memory.available_memory_bytes`) less the rows (``2 n dim`` float32, not
    yet allocated). The runs then train on the same chunks, byte for byte, without a second
    pass of walks; False where the memory cannot be read."""
    free = available_memory_bytes()
    if free is None:
        return False
    need = float(corpus.n_walks) * corpus.walk_length * 4
    rows = 2.0 * corpus.graph.n_nodes * dim * 4
    return need <= HELD_WALKS_SHARE * (free - rows)


def count_walks(corpus: WalkCorpus, n_nodes: int, hold: bool, verbose: bool
                ) -> tuple[np.ndarray, np.ndarray | None]:
    """``(counts, held)``: how often each node occurs in one pass over ``corpus`` (the
    noise distribution's and subsampling's counts), and with ``hold`` the walks themselves,
    one ``n_walks x walk_length`` array (one allocation, so that freeing it gives its memory
    back to the system; else None)."""
    counts = np.zeros(n_nodes, dtype=np.int64)
    held = (np.empty((corpus.n_walks, corpus.walk_length), dtype=np.int32) if hold
            else None)
    with tqdm(total=corpus.n_walks, unit="walk", disable=not verbose, desc="counting",
              dynamic_ncols=True) as bar:
        for first, stop in corpus.bounds():
            walks = corpus.chunk(first, stop, None if held is None else held[first:stop])
            count_visits(walks, counts)
            bar.update(len(walks))
    return counts, held


@dataclass
class Restarts:
    """What :func:`train_with_restarts` ends with: the kept ``run``, the ``kernels`` it
    trained (the dense setting's after a switch), the kernel scale ``rho`` (and why it did not
    start at 1, ``scale_why``: :func:`~kernelne.model.auto_setting.start_scale`), the shell
    figures of each narrowing (``narrowed``), whether the weights moved to the simplex,
    the shell test that switched to the dense setting (``switched_at``, None: no switch), the
    graph's mean degree where the automatic setting applies (``mean_degree``, None elsewhere;
    from :data:`~kernelne.engine.propagation.AUTO_MIN_DEGREE` up the dense setting from the
    start),
    every shell test (``checks``), the learning-rate factor ``rate`` and its halvings
    (``lr_restarts``), and the seconds of walks and training given up with restarted runs."""

    run: Run
    kernels: list[Kernel]
    rho: float = 1.0
    narrowed: list[dict] = field(default_factory=list)
    simplex: bool = False
    switched_at: dict | None = None
    mean_degree: float | None = None
    checks: list[dict] = field(default_factory=list)
    rate: float = 1.0
    lr_restarts: list[dict] = field(default_factory=list)
    given_up_walks: float = 0.0
    given_up_training: float = 0.0
    scale_why: str | None = None


def train_with_restarts(model: Any, g: Graph, corpus: WalkCorpus,
                        stored: np.ndarray | None, negatives: tuple, keep, kernels:
                        list[Kernel], fixed: np.ndarray | None, seed,
                        monitor: Callable | None, degree: float | None = None) -> Restarts:
    """Train runs of ``model`` on ``g`` until one is kept (see the module docstring).

    ``degree``: the graph's mean degree (:func:`~kernelne.engine.propagation.mean_degree`),
    measured by the caller wherever the automatic setting applies (None elsewhere).

    ``fixed``: the kernels' fixed weights (None: learned); kernels of weight 0 are left out
    of training. ``negatives``: the noise distribution's alias table; ``keep``: subsampling's
    keep probabilities (None: off).

    Raises
    ------
    TrainingError
        No (center, context) pair to train on, or rows that diverge after
        :data:`MAX_LR_HALVINGS` halvings.
    """
    active = kernels if fixed is None else [k for k, b in zip(kernels, fixed, strict=True)
                                            if b > 0]
    weights = None if fixed is None else fixed[fixed > 0]
    can_narrow = model.robust and kernels[0].kind != "linear"
    may_switch = chooses(model)
    params = resolved(model)  # the parameters the runs train with ("auto": the paper's)
    out = Restarts(run=None, kernels=kernels, simplex=model.simplex_weights())
    if may_switch:
        out.mean_degree = degree
    if dense_by_degree(out.mean_degree):  # a dense graph: the dense setting from the start
        may_switch = False
        params = with_params(params, DENSE_SETTING)
        out.kernels = active = params.kernel_dictionary()
    out.rho, out.scale_why = start_scale(model, g.n_nodes, out.mean_degree)
    while True:
        run = Run(params, g, corpus, stored, negatives, keep, active, seed, out.rho,
                  out.simplex, weights, out.rate)
        looks = run.train(can_narrow and len(out.narrowed) < MAX_NARROWING, monitor)
        out.checks += looks
        if looks and looks[-1]["collapsing"] and may_switch and out.switched_at is None:
            out.switched_at = looks[-1]  # a dense graph: the dense setting, not narrowing
            params = with_params(params, DENSE_SETTING)
            out.kernels = active = params.kernel_dictionary()
        elif looks and looks[-1]["collapsing"]:
            shell = looks[-1]
            out.narrowed.append(shell)
            out.rho *= NARROWING
            out.simplex = out.simplex or shell["weights_collapsed"]
        elif run.pairs == 0:
            raise TrainingError(
                f"no (center, context) pair to train on in {g.summary()} with "
                f"walk_length={model.walk_length}, window={model.window}: the graph has "
                "no edges between distinct nodes or the walks are too short "
                "(walk_length >= 2 needed)")
        else:
            halved = diverged(run, out.rate, model.lr, out.lr_restarts)
            if halved is None:
                out.run = run
                return out
            out.lr_restarts.append(halved)
            out.rate /= 2
        out.given_up_walks += run.walk_seconds
        out.given_up_training += run.train_seconds
        del run  # its rows are given up: freed before the next run makes its own


#: A fit whose rows diverge (NaN or infinite) is restarted with the learning rate halved, at
#: most this many times, before :class:`~kernelne.errors.TrainingError` is raised.
MAX_LR_HALVINGS = 2


def diverged(run: Run, rate: float, lr: float, restarts: list[dict]) -> dict | None:
    """None if ``run``'s rows and weights are finite; else what
    :attr:`~kernelne.model.kernelne.KernelNE.lr_restarts_` records of it (``lr``: the
    diverged run's, ``bad_rows``, ``rows``, ``reason``), or :class:`TrainingError` if the
    learning rate was halved :data:`MAX_LR_HALVINGS` times already."""
    try:
        check_finite(run.A, run.B, run.beta)
    except TrainingError as exc:
        if len(restarts) >= MAX_LR_HALVINGS:
            tried = ", ".join(f"{r['lr']:g}" for r in restarts)
            raise TrainingError(f"{exc}; it diverged at lr {tried} and {lr * rate:g} (the "
                                "learning rate halved after each)") from None
        bad = int(np.count_nonzero(~np.isfinite(run.A).all(axis=1)))
        return {"lr": lr * rate, "bad_rows": bad, "rows": len(run.A), "reason": str(exc)}
    return None


def finite_sample(A: np.ndarray, beta: np.ndarray, rows: int = 64) -> bool:
    """Whether ``beta`` and about ``rows`` evenly spaced rows of ``A`` are finite: a cheap
    look after each chunk that stops a diverged run early (the whole check comes after)."""
    return bool(np.isfinite(beta).all() and np.isfinite(A[::max(1, len(A) // rows)]).all())


class Run:
    """One training run from a fresh initialisation: ``A ~ U(+-0.5/d)``, ``B = 0``, ``beta =
    1/m``; distance kernels see ``rho * ||a - b||^2``; the learning rates (``lr``,
    ``min_lr``) are the model's times ``rate``."""

    def __init__(self, model, graph, corpus, stored, negatives, keep, kernels, seed, rho,
                 simplex, beta=None, rate: float = 1.0):
        self.model, self.graph, self.corpus, self.stored = model, graph, corpus, stored
        self.rate = rate
        self.noise = Noise(*negatives)
        self.keep = keep  # subsampling's keep probabilities, None: off
        self.seed = seed
        n, d = graph.n_nodes, int(model.dim)
        rng = np.random.default_rng(int(seed))
        try:
            self.A = uniform_rows(rng, n, d, 0.5 / d)
            self.B = aligned_rows(n, d, 0.0)
        except MemoryError:
            raise out_of_memory(n, d) from None
        self.kernel = kernel_arrays(kernels, None if beta is None else beta.copy(), scale=rho)
        self.beta, self.scale = self.kernel.beta, self.kernel.scale
        self.learn_beta = len(self.beta) > 1 and beta is None  # beta given: fixed weights
        self.simplex = simplex
        self.history = [self.beta.copy()]
        self.loss_rows: list[tuple[int, float, float]] = []
        self.pairs = 0
        self.clock = StageClock()  # walks made while training (streamed corpus), training

    @property
    def walk_seconds(self) -> float:
        return self.clock.walks

    @property
    def train_seconds(self) -> float:
        return self.clock.training

    def train(self, check_shell: bool, monitor: Callable | None = None) -> list[dict]:
        """Train on every chunk; with ``check_shell``, test the rows whenever
        :func:`~kernelne.engine.robust.look_due` says so and return the tests' figures; training
        stops at a test that finds them ``collapsing``, or at rows that are no longer
        finite."""
        m, corpus = self.model, self.corpus
        total_chunks = m.epochs * corpus.n_chunks
        min_pairs = CHECKPOINT_PAIRS * int((self.graph.degrees > 0).sum())
        total_centers = float(m.epochs * corpus.n_walks * corpus.walk_length)
        snapshot_every = max(1, total_chunks // 10)
        settings = train_settings(m, total_centers, self.seed, self.graph.n_nodes,
                                  learn_beta=self.learn_beta,
                                  beta_simplex=self.simplex, lr=m.lr * self.rate,
                                  min_lr=m.min_lr * self.rate)
        bar = tqdm(total=m.epochs * corpus.n_walks, unit="walk", disable=not m.verbose,
                   desc="training", dynamic_ncols=True)
        step = 0
        looks: list[dict] = []

        def chunks():
            if self.stored is None:
                return corpus
            step = corpus.chunk_walks  # the held walks in the corpus' own chunks
            return ((first, self.stored[first:first + step])
                    for first in range(0, corpus.n_walks, step))

        chunk_loop = train_chunks
        if getattr(m, "device", "cpu") == "cuda":  # the rows come back after each chunk
            from kernelne.engine.cuda.trainer import train_chunks_on_device as chunk_loop
        with bar, closing(chunk_loop(
            chunks, corpus.n_walks, m.epochs, self.A, self.B, self.kernel, self.noise,
            settings, keep=self.keep, clock=self.clock,
        )) as loop:
            for walks, chunk_pairs, losses in loop:
                self.pairs += chunk_pairs
                self.loss_rows.append((
                    self.pairs, losses[0] / max(chunk_pairs, 1),
                    losses[1] / max(chunk_pairs * m.negatives, 1),
                ))
                bar.update(len(walks))
                if monitor is not None:
                    monitor(self.pairs, self.A, self.B)
                if not finite_sample(self.A, self.beta):  # diverged: no use going on
                    return looks
                step += 1 if chunk_loop is train_chunks else -(-len(walks) // corpus.chunk_walks)
                if settings.learn_beta and step % snapshot_every == 0:
                    self.history.append(self.beta.copy())
                if check_shell and look_due(step, total_chunks, self.pairs, min_pairs,
                                            looks):
                    look = shell_figures(
                        self.A, self.B, self.graph.indptr, self.graph.indices,
                        self.graph.degrees > 0, self.beta, self.scale[0], self.pairs,
                        previous=looks[0] if looks else None)
                    if look is None:  # not finite or too few rows: no verdict
                        check_shell = False
                    else:
                        looks.append(look)
                        if look["collapsing"]:
                            return looks
        return looks
