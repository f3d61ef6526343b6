"""The two drivers of a fit, each ending in one :class:`~kernelne.model.fitted.FitRecord`.

:func:`fit_in_memory` makes the walks, counts them and trains the runs of
:func:`~kernelne.model.restarts.train_with_restarts`; :func:`fit_partitioned_model` runs
:func:`kernelne.partitioned.driver.fit_partitioned` and brings its rows back. Both turn the
rows into a record with :func:`fit_record` (the collapse warnings, ``normalize="auto"``'s
factor, the setting kept, the spectral propagation) and set the model's fitted attributes from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kernelne.engine.compiling import watch_compiling
from kernelne.engine.diagnostics import (
    check_finite,
    embedding_health,
    warn_if_collapsed,
    warn_if_undertrained,
)
from kernelne.engine.kernels import Kernel
from kernelne.engine.propagation import (
    Propagation,
    choose_propagation,
    mean_degree,
    propagate_rows,
)
from kernelne.engine.rows import check_row_memory
from kernelne.engine.sampling import alias_table
from kernelne.engine.trainer import keep_probabilities, pool_of
from kernelne.engine.walks import WalkCorpus
from kernelne.errors import TrainingError
from kernelne.graphs.graph import Graph
from kernelne.graphs.neighbours import neighbour_hashes
from kernelne.model.auto_setting import (
    OUTPUT_NORM,
    chooses,
    describe_setting,
    output_scale,
    resolved,
    scale_rows,
    walk_budget,
)
from kernelne.model.fitted import FitRecord, set_fitted
from kernelne.model.params import is_auto
from kernelne.model.restarts import count_walks, train_with_restarts, walks_held
from kernelne.outputs import allocated_memmap, atomic_path
from kernelne.parallel import numba_threads
from kernelne.partitioned.driver import fit_partitioned, remove_folder

#: the CUDA engine's scalar functions, compiled by numba's CPU compiler on the simulator
DEVICE_FUNCTIONS = ("mix64", "stream_state", "walk_streams", "next_u64", "rand_below",
                    "alias_bits", "learning_rate", "term_factors")


def fit_in_memory(model: Any, g: Graph, kernels: list[Kernel], fixed: np.ndarray | None, seed,
                  monitor: Callable | None, start: float) -> Any:
    """The walks, their counts and the training runs of a fit in memory, and the fitted
    attributes (:func:`~kernelne.model.restarts.train_with_restarts`)."""
    check_row_memory(g.n_nodes, int(model.dim))  # in memory (partitioned: on disk)
    if getattr(model, "device", "cpu") == "cuda":  # numba-cuda and a device, before any work
        from kernelne.engine.cuda.available import cuda_module

        cuda_module()
    degree = (mean_degree(g) if model.setting == "auto"
              and (chooses(model) or is_auto(model.walks_per_node)) else None)
    walks_per_node, walks_why = walk_budget(model, g.n_nodes, degree)
    corpus = WalkCorpus(
        g, walks_per_node, model.walk_length, model.p, model.q, int(seed), model.chunk_walks
    )
    on_cpu = getattr(model, "device", "cpu") != "cuda"
    hold = bool(model.keep_walks) or (on_cpu and walks_held(corpus, int(model.dim)))
    with numba_threads(model.workers), watch_compiling(False) as compiled:
        counts, stored = count_walks(corpus, g.n_nodes, hold, model.verbose)
        negatives = alias_table(counts.astype(np.float64) ** 0.75)
        keep = (keep_probabilities(counts, float(model.subsample))
                if model.subsample > 0 else None)  # subsampling: None = off
        counting_seconds = time.perf_counter() - start
        out = train_with_restarts(model, g, corpus, stored, negatives, keep, kernels, fixed,
                                  seed, monitor, degree)
    run = out.run
    walks = stored if model.keep_walks else None
    run.stored = stored = None  # held for training only: freed before the propagation
    set_fitted(model, fit_record(
        model, g, run.A, run.B, out.kernels, rho=out.rho, checks=out.checks,
        health=embedding_health(run.A, run.B, g.indptr, g.indices, counts > 0,
                                seed=int(seed % 2**32)),
        narrowed=out.narrowed, simplex=out.simplex,
        beta=run.beta if fixed is None else fixed,
        beta_history=np.array(run.history) if fixed is None else fixed[None, :],
        pairs=run.pairs, losses=run.loss_rows, n_walks=model.epochs * corpus.n_walks,
        counts=counts, walks=walks,
        seed=int(seed % 2**32), switched_at=out.switched_at, start=start,
        choice_degree=out.mean_degree, walks_made=(walks_per_node, walks_why),
        scale_why=out.scale_why,
        pool=pool_of(run.model, g.n_nodes)))
    model.lr_restarts_ = out.lr_restarts
    model.fit_lr_ = float(model.lr) * out.rate
    training_compile = compiled.of("_train_blocks", *DEVICE_FUNCTIONS)  # the rest: walks,
    # counts, alias
    model.stage_seconds_ = {  # a restart's given-up run included
        "walks": counting_seconds + run.walk_seconds + out.given_up_walks
        - (compiled.total - training_compile),
        "training": run.train_seconds + out.given_up_training - training_compile,
    }
    model.compile_seconds_ = compiled.total  # numba's first-run compilation, 0 later
    return model


def fit_record(model: Any, g: Graph, A: np.ndarray, B: np.ndarray, kernels: list[Kernel], *,
               health: dict, rho: float, checks: list[dict], narrowed: list[dict],
               simplex: bool, beta: np.ndarray, beta_history: np.ndarray, pairs: int,
               losses: Any, n_walks: int, counts: np.ndarray, walks: np.ndarray | None,
               seed: int, switched_at: dict | None, start: float,
               partitioned: bool = False, choice_degree: float | None = None,
               walks_made: tuple[int, str | None] | None = None,
               scale_why: str | None = None, pool: int | None = None) -> FitRecord:
    """The record of a fit (in memory or partitioned) from its rows ``A``, ``B`` (rescaled
    in place with ``normalize="auto"``) and its run's figures, with the propagation
    ``propagate`` gives on ``g`` (:func:`~kernelne.engine.propagation.choose_propagation`);
    warns if the rows look collapsed or undertrained. ``walks_made``: the walks per node and
    why (:func:`~kernelne.model.auto_setting.walk_budget`; None: the resolved value);
    ``scale_why``: why the kernel scale started above 1
    (:func:`~kernelne.model.auto_setting.start_scale`; recorded as ``setting_["scale"]``);
    ``pool``: the negative pool the kept run trained with (None: ``negative_pool`` resolved
    on the model's parameters, as a partitioned fit's runs are)."""
    if walks_made is None:
        walks_made = (int(resolved(model).walks_per_node), None)
    mean_degree = len(g.indices) / max(1, int((g.degrees > 0).sum()))
    # shared negatives: a low AUC off the shell means too few walks, not a too-wide kernel
    if not (model.shared_negatives
            and warn_if_undertrained(health, walks_made[0])):
        warn_if_collapsed(health, mean_degree,
                          ", ".join(str(k) for k in (k.narrowed(rho) for k in kernels)),
                          model.robust)
    scale = rescale(model, A, B, seed)
    on_disk = rows_file_beside(A) if partitioned else None
    propagation, why = choose_propagation(model.propagate, g, A.shape[1],
                                          on_disk is not None, degree=choice_degree)
    setting = describe_setting(model, switched_at, bool(checks), choice_degree)
    if why != "as given":
        setting["propagation"] = why
    if walks_made[1] is not None:  # "auto": the value taken, and why
        setting["params"]["walks_per_node"] = walks_made[0]
        setting["walks"] = walks_made[1]
    if scale_why is not None:
        setting["scale"] = scale_why
    return FitRecord(
        embedding=A if propagation is None else propagated(model, g, A, propagation,
                                                           on_disk),
        context_embedding=B, nodes=g.nodes, kernels=kernels, beta=beta,
        kernel_scale=rho, beta_update="simplex" if simplex else "projected",
        walk_counts=counts, degrees=g.degrees, directed=bool(g.directed),
        output_scale=scale, setting=setting, propagation=propagation,
        trained_embedding=None if propagation is None else A,
        neighbour_hashes=neighbour_hashes(g), health=health, narrowed=narrowed,
        shell_checks=checks, beta_history=beta_history,
        n_pairs=int(pairs), loss_history=np.array(losses, dtype=float).reshape(-1, 3),
        n_walks=n_walks, isolated_nodes=g.nodes[g.isolated_nodes()],
        negative_pool=pool if pool is not None else pool_of(resolved(model), g.n_nodes),
        walks=walks,
        graph_summary=g.summary(), fit_seconds=time.perf_counter() - start)


def rescale(model: Any, A: np.ndarray, B: np.ndarray, seed: int) -> float:
    """``normalize="auto"``: multiply ``A`` and ``B`` in place by the factor that brings
    the median row norm of ``A`` to :data:`~kernelne.model.auto_setting.OUTPUT_NORM`, and return
    it (1.0 with ``normalize="none"``)."""
    if model.normalize == "none":
        return 1.0
    s = output_scale(A, seed)
    scale_rows(A, s)
    scale_rows(B, s)
    return s


def rows_file_beside(A: np.ndarray) -> Path | None:
    """Where the propagation of a partitioned fit's rows ``A`` goes: ``embedding.npy`` beside
    ``A``'s file in the partition folder, or None where ``A`` is in memory (or its file's
    folder is gone, as a URL's local copy is)."""
    name = getattr(A, "filename", None)
    if not isinstance(A, np.memmap) or not name or not Path(name).parent.is_dir():
        return None
    return Path(name).with_name("embedding.npy")


def propagated(model: Any, g: Graph, A: np.ndarray, settings: Propagation,
               on_disk: Path | None = None) -> np.ndarray:
    """The spectral propagation of the rows ``A`` on ``g``
    (:func:`~kernelne.engine.propagation.propagate_rows`), brought to the median row norm
    :data:`~kernelne.model.auto_setting.OUTPUT_NORM` unless ``normalize="none"``; on the
    model's ``workers`` threads. ``on_disk``: a file for the result (written whole, then
    memory-mapped), None: in memory."""
    if on_disk is None:
        with numba_threads(model.workers):
            rows = propagate_rows(g, A, settings)
        if model.normalize != "none":
            rows *= np.float32(OUTPUT_NORM)
        return rows
    with atomic_path(on_disk) as tmp:
        out = allocated_memmap(tmp, np.float32, A.shape)
        with numba_threads(model.workers):
            propagate_rows(g, A, settings, out=out)
        if model.normalize != "none":
            scale_rows(out, OUTPUT_NORM)
        out.flush()
        del out
    return np.load(on_disk, mmap_mode="r+")


def fit_partitioned_model(model: Any, g: Graph, kernels: list[Kernel], seed, client,
                          start: float) -> Any:
    """:func:`kernelne.partitioned.driver.fit_partitioned`, and the fitted attributes."""
    with numba_threads(model.workers):
        run = fit_partitioned(resolved(model), g, kernels, seed, client,
                              progress=model.verbose)  # "auto": the paper's setting
        A, B = run.A, run.B
        if model.partition_dir is None:  # a temporary folder: the rows come into memory
            try:
                A, B = np.array(A), np.array(B)
            finally:
                remove_folder(Path(run.A.filename).parent)
        if run.pairs == 0:
            raise TrainingError(f"no (center, context) pair to train on in {g.summary()}")
        check_finite(A, B, run.beta)
        health = embedding_health(A, B, g.indptr, g.indices, run.counts > 0,
                                  seed=int(run.seed % 2**32))  # a resumed fit's
    if model.normalize != "none" and not A.flags.writeable:  # the folder's memory maps
        A, B = (np.load(rows.filename, mmap_mode="r+") for rows in (A, B))
    set_fitted(model, fit_record(
        model, g, A, B, kernels, health=health, rho=run.scale, checks=run.checks,
        narrowed=run.narrowed, simplex=run.simplex, beta=run.beta,
        beta_history=np.array([run.beta]), pairs=run.pairs, losses=run.losses,
        n_walks=model.epochs * int(resolved(model).walks_per_node) * g.n_nodes,
        counts=run.counts,
        walks=None, seed=int(run.seed % 2**32), switched_at=None, start=start,
        partitioned=True))
    model.stage_seconds_ = {"walks": run.walk_seconds, "training": run.train_seconds}
    model.partition_run_ = run
    return model
