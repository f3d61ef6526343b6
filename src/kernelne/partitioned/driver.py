"""Partitioned training: one embedding with only two blocks of rows in memory at a time, on
one machine (blocks on disk) or on a Dask cluster (docs/DISTRIBUTED.md; after PyTorch-BigGraph,
Lerer et al., SysML 2019).

Nodes fall into ``P`` parts, ``part(v) = v mod P``, row ``v // P`` of the part's blocks ``A_i``,
``B_i`` (no table of ids is stored). A (center, context) pair of the walks belongs to bucket
``(part(center), part(context))``; bucket ``(i, j)`` is trained with only ``A_i`` and ``B_j`` by
the same step as a plain fit (:func:`kernelne.engine.trainer.pair_step`: one ``_term`` for every
kernel),
its negatives drawn from part ``j`` (unigram^0.75 within it).

The corpus is cut into rounds of walks (walk ids in order, as a plain fit trains them, so the
learning rate follows the same schedule ``lr_t = max(lr (1 - t / T), min_lr)``). The walks are
made once, counted (the negatives' unigram counts) and written to one ``.npy`` file per round,
with each walk's part mask (:func:`part_masks`): bucket ``(i, j)`` reads only the walks that
visit both parts, so a round costs each bucket a pass over about
``1 - 2 (1 - 1/P)^L + (1 - 2/P)^L`` of its walks (walk length ``L``), not all of them.
Where it saves reads (:func:`~kernelne.partitioned.part_files.files_by_part`) the rounds are
also filed by part and bucket ``(i, j)`` reads part ``i``'s file only.
Each round is trained in ``P`` steps; step ``s`` trains the buckets ``(i, (i + s) mod P)``, which
touch disjoint blocks and so run in parallel. In one process every block is read and written
once per step: step ``t`` reads version ``t`` of the blocks from one of a block's two files
(its slot, recorded in ``progress.json``) and writes version ``t + 1`` into the other, over a
version nothing reads any more; version ``t + 1`` is valid only when the whole step has
finished and ``progress.json`` says so. On Dask the blocks stay on the workers between
checkpoints (the end of a round, a look of the robust check, the end of the fit;
:mod:`kernelne.partitioned.kept_blocks`), where they are written the same way. A bucket that
dies is rerun from its inputs (Dask reruns the task of a lost worker, and the tasks that made
its lost inputs); a driver that dies is restarted with the same folder and resumes at the
last recorded step. Buckets are deterministic on one thread
(negatives seeded by (seed, bucket, the chunk's first walk with a pair there)), so a resumed
or rerun fit equals a clean one bit for bit. The folder can be an fsspec URL
(``s3://bucket/run``, :mod:`kernelne.partitioned.store`) that workers reach without a shared
disk.

MKernelNE's weights are learned in every bucket and averaged over a step's buckets. The robust
restart (docs/METHOD.md §7) is the plain fit's: when :func:`kernelne.engine.robust.look_due` says so
the rows are checked for the collapsed shell and, if it is forming, training starts again
from version 0 of the blocks with the kernel narrowed 8x (the walks are kept). Not supported
here: shared negatives and per-row rates (``partial_fit``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from kernelne.engine.robust import (
    CHECKPOINT_PAIRS,
    MAX_NARROWING,
    NARROWING,
    look_due,
    shell_figures,
)
from kernelne.engine.trainer import (
    KernelArrays,
    TrainSettings,
    keep_probabilities,
    kernel_arrays,
    train_settings,
)
from kernelne.engine.walks import WalkCorpus, count_visits
from kernelne.errors import InputError, ParamError, TrainingError
from kernelne.outputs import allocated_memmap
from kernelne.partitioned.blocks import (
    BlockRows,
    assemble,
    init_blocks,
    make_noise,
    masks_file,
    save_array,
    write_json,
)
from kernelne.partitioned.buckets import (
    READ_WALKS,
    bucket_order,
    bucket_task,
    gather_watching_workers,
    run_step,
    train_bucket,
)
from kernelne.partitioned.kept_blocks import KeptBlocks
from kernelne.partitioned.locks import (
    check_lock_held,
    partition_folder,
    reason,
    remove_folder,
)
from kernelne.partitioned.part_files import file_round, files_by_part
from kernelne.partitioned.plan import (
    check_folder,
    check_progress,
    check_same_graph,
    differences,
    make_plan,
    read_json,
    recorded_seed,
)
from kernelne.partitioned.rounds import make_rounds, part_masks, rounds_to_make
from kernelne.partitioned.store import (
    Location,
    exists,
    is_remote,
    load_npy,
    makedirs,
    staged,
    unreachable,
)

__all__ = ["DEFAULT_ROUNDS", "PartitionedResult", "bucket_task", "fit_partitioned",
           "max_partitions", "max_rounds", "check_partition_settings", "remove_folder",
           "train_bucket"]

# Rounds of walks: Cora at P = 4 scored Micro-F1 .805 with one round and .824 with 20 (the
# plain fit .823): the finer the rounds, the more the parts' updates interleave.
DEFAULT_ROUNDS = 20


@dataclass
class PartitionedResult:
    """What a partitioned fit returns: the rows (memory-mapped from ``folder``), the weights,
    the unigram counts and the run's figures (``bucket_phases``: seconds summed over this
    run's buckets by phase: reading the blocks, reading the walks, listing and training the
    pairs, writing the blocks; ``filed``: whether the buckets read their part's files of the
    rounds, :mod:`kernelne.partitioned.part_files`; ``kept_blocks``: whether the blocks were
    kept on the Dask workers between checkpoints, :mod:`kernelne.partitioned.kept_blocks`)."""

    A: np.ndarray
    B: np.ndarray
    beta: np.ndarray
    counts: np.ndarray
    scale: float
    narrowed: list[dict]
    checks: list[dict]
    simplex: bool
    pairs: int
    losses: list[tuple[int, float, float]]
    resumed_at_step: int
    bucket_seconds: list[float]
    bucket_phases: dict[str, float]
    bucket_peak_mb: float
    walk_seconds: float
    train_seconds: float
    seed: int = 0
    trained_pairs: int = 0
    steps: int = 0
    filed: bool = False
    kept_blocks: bool = False


def round_bounds(n_walks: int, rounds: int) -> list[tuple[int, int]]:
    return [(r * n_walks // rounds, (r + 1) * n_walks // rounds) for r in range(rounds)]


def fit_partitioned(model, graph, kernels, seed, client=None, progress: bool = False,
                    ) -> PartitionedResult:
    """Train ``model`` (a :class:`~kernelne.model.kernelne.KernelNE` with ``partitions > 1``) on
    ``graph`` bucket by bucket, in ``model.partition_dir`` (a new temporary folder if None),
    on ``client`` (a ``distributed.Client``) or in this process. The folder is made absolute
    and, with a client, checked to be the same folder on every worker before any work."""
    check_partition_settings(model, graph.n_nodes)
    with partition_folder(model.partition_dir, client) as folder:
        try:
            return _fit_in(folder, model, graph, kernels, seed, client, progress)
        except Exception as exc:
            if not (is_remote(folder) and unreachable(exc)):
                raise
            raise TrainingError(
                f"--partition-dir {folder} stopped answering during the fit ({reason(exc)}): "
                "the same command resumes from the last recorded step once the store answers "
                "again (if its lock is left, the message says how to remove it)") from None


def max_partitions(n_nodes: int) -> int:
    """The most partitions a graph of ``n_nodes`` nodes is cut into: fewer than a third of its
    nodes (a round trains ``P x P`` buckets: parts of a few nodes only add steps)."""
    return max(1, (n_nodes - 1) // 3)


def max_rounds(walks_per_node: int) -> int:
    """The most rounds of walks: one per walk of each node (:data:`DEFAULT_ROUNDS` at least);
    each round is two files and ``P`` steps, and a round shorter than a walk per node only adds
    steps."""
    return max(DEFAULT_ROUNDS, int(walks_per_node))


def check_partition_settings(model, n_nodes: int) -> None:
    """An :class:`InputError` before any work if ``model.partitions`` or ``model.rounds``
    cannot be trained on a graph of ``n_nodes`` nodes (:func:`max_partitions`,
    :func:`max_rounds`)."""
    parts, limit = int(model.partitions), max_partitions(n_nodes)
    if parts > limit:
        raise ParamError(f"{{partitions={parts}}} is too many for a graph of {n_nodes:,} "
                         f"nodes: at most {limit} (fewer than a third of the nodes)")
    rounds, most = model.rounds, max_rounds(model.walks_per_node)
    if rounds is not None and int(rounds) > most:
        raise ParamError(f"{{rounds={rounds}}} is too many: at most {most} (the walks per node, "
                         f"or {DEFAULT_ROUNDS}; every round is 2 files and P steps, and a "
                         "round of less than one walk per node only adds steps)")


def _fit_in(folder: Location, model, graph, kernels, seed, client, progress: bool,
            ) -> PartitionedResult:
    """:func:`fit_partitioned` in ``folder`` (absolute, usable by every worker)."""
    seed, corpus, rounds, plan, state = _open_plan(folder, model, graph, kernels, seed)
    resumed_at = int(state["step"])
    filed = files_by_part(int(model.partitions), corpus.walk_length)
    walk_start = time.perf_counter()
    counts = _prepare(folder, model, graph, corpus, rounds, seed, plan, state, progress,
                      client, filed)
    walk_seconds = time.perf_counter() - walk_start
    train_start = time.perf_counter()
    run = _train(folder, model, graph, kernels, seed, client, progress, corpus, counts, rounds,
                 state, filed)
    train_seconds = time.perf_counter() - train_start
    state = run.state
    n, parts, d = graph.n_nodes, int(model.partitions), int(model.dim)
    A = assemble(folder, "A", n, parts, d, current_slot(state))
    B = assemble(folder, "B", n, parts, d, current_slot(state))
    return PartitionedResult(
        A, B, np.array(state["beta"], dtype=np.float32), counts, float(state["scale"]),
        list(state["narrowed"]), list(state.get("checks", [])), bool(state["simplex"]),
        int(state["pairs"]),
        [tuple(x) for x in state["losses"]],
        resumed_at, run.bucket_seconds, run.bucket_phases, run.peak, walk_seconds,
        train_seconds, int(seed), run.trained, run.steps, filed,
        keeps_blocks(client, folder),
    )


def _open_plan(folder: Location, model, graph, kernels, seed,
               ) -> tuple[Any, WalkCorpus, int, dict[str, Any], dict[str, Any]]:
    """The seed, walks, rounds, plan and recorded progress of a fit in ``folder``: a new fit's, or
    the one its ``plan.json`` records if it is this fit's (an :class:`InputError` if not)."""
    parts = int(model.partitions)
    plan_file, progress_file = folder / "plan.json", folder / "progress.json"
    old = read_json(plan_file, folder) if exists(plan_file) else None
    if old is not None and model.random_state is None:  # resumed: the recorded fit's seed
        seed = recorded_seed(old, plan_file, folder)
    corpus = WalkCorpus(graph, model.walks_per_node, model.walk_length, model.p, model.q,
                        int(seed), model.chunk_walks)
    rounds = int(model.rounds) if model.rounds else min(DEFAULT_ROUNDS, corpus.n_walks)
    plan = make_plan(model, graph, kernels, rounds, parts, seed)
    state: dict[str, Any] = {"step": 0, "pairs": 0, "losses": []}
    if old is not None:
        if isinstance(old.get("params"), dict):
            old["params"].pop("random_state", None)  # recorded as "seed"
        check_same_graph(old, plan, folder)
        if old != plan:
            raise InputError("holds a partitioned fit of another graph or other settings "
                             f"({differences(old, plan)} differ); give an empty folder "
                             "(--partition-dir)", folder)
        if exists(progress_file):
            state = read_json(progress_file, folder)
            check_progress(state, progress_file, folder,
                           int(model.epochs) * rounds * parts, len(kernels))
    return seed, corpus, rounds, plan, state


def _prepare(folder: Location, model, graph, corpus: WalkCorpus, rounds: int, seed,
             plan: dict, state: dict, progress: bool, client, filed: bool) -> np.ndarray:
    """Check a resumed folder's files, make what is missing (the walks, filed by part if
    ``filed``, the negatives, version 0 of the blocks) and return the unigram counts."""
    parts, d, n = int(model.partitions), int(model.dim), graph.n_nodes
    resumed_at = int(state["step"])
    if state.get("walks_done"):
        check_folder(folder, rounds, parts, n, d, resumed_at, current_slot(state), filed)
    counts = _make_walks(folder, corpus, rounds, parts, progress, state, client,
                         plan["graph"]["digest"], filed)
    if "walks_done" not in state:
        make_noise(folder, counts, parts)
        state["walks_done"] = True
        write_json(folder / "plan.json", plan)
    if resumed_at == 0:  # version 0 is made again from the seed: it may have been removed
        init_blocks(folder, n, parts, d, seed)
        write_json(folder / "progress.json", state)
    return counts


@dataclass
class _Run:
    """What the steps of one run did: the state recorded, and the run's own figures."""

    state: dict
    steps: int = 0
    trained: int = 0
    bucket_seconds: list[float] = field(default_factory=list)
    bucket_phases: dict[str, float] = field(default_factory=dict)
    peak: float = 0.0

    def add(self, results: list[dict], beta: np.ndarray, negatives: int) -> None:
        """Record a finished step's bucket results (``beta``: the step's kernel weights)."""
        state = self.state
        step_pairs = sum(res["pairs"] for res in results)
        self.trained += step_pairs
        pos = sum(res["losses"][0] for res in results)
        neg = sum(res["losses"][1] for res in results)
        state["pairs"] = int(state["pairs"]) + step_pairs
        state["losses"].append((state["pairs"], pos / max(step_pairs, 1),
                                neg / max(step_pairs * negatives, 1)))
        state["step"] = int(state["step"]) + 1
        state["beta"] = beta.tolist()
        self.bucket_seconds += [res["seconds"] for res in results]
        for res in results:
            for phase, seconds in res["phases"].items():
                self.bucket_phases[phase] = self.bucket_phases.get(phase, 0.0) + seconds
        self.peak = max([self.peak] + [res["peak_mb"] for res in results])


def _train(folder: Location, model, graph, kernels, seed, client, progress: bool,
           corpus: WalkCorpus, counts: np.ndarray, rounds: int, state: dict, filed: bool,
           ) -> _Run:
    """Train the steps from the recorded one to the last, recording each in
    ``progress.json``, and restart narrowed when the robust check says so (``filed``: the
    buckets read their part's files of the rounds)."""
    parts, d, n = int(model.partitions), int(model.dim), graph.n_nodes
    progress_file = folder / "progress.json"
    state.setdefault("scale", 1.0)
    state.setdefault("narrowed", [])
    state.setdefault("simplex", model.simplex_weights())
    can_narrow = bool(model.robust) and kernels[0].kind != "linear"
    total_centers = float(model.epochs * corpus.n_walks * corpus.walk_length)
    keep = keep_probabilities(counts, float(model.subsample)) if model.subsample > 0 else None
    bounds = round_bounds(corpus.n_walks, rounds)
    schedule = [(e, r, s) for e in range(model.epochs) for r in range(rounds)
                for s in range(parts)]
    steps = bucket_order(parts)
    # a Dask task's numba threads: 1 (bit for bit) unless ``workers`` is given
    threads = model.workers if client is None or model.workers is not None else 1
    min_pairs = CHECKPOINT_PAIRS * int((counts > 0).sum())
    run = _Run(state, steps=len(schedule))
    if int(state["step"]) >= len(schedule):
        warnings.warn(f"--partition-dir {folder} holds a finished fit: nothing was trained, "
                      "its rows are read back (give an empty folder to fit again)",
                      stacklevel=4)
    bar = tqdm(total=len(schedule), initial=int(state["step"]), unit="step",
               disable=not progress, desc=f"training {parts}x{parts} buckets",
               dynamic_ncols=True)
    with bar, blocks_held(client, folder, parts) as kept:
        t = int(state["step"])
        kinds_params, settings = _run_settings(model, kernels, total_centers, seed, state, n)
        while t < len(schedule):
            beta = np.array(state.get("beta", kinds_params.beta), dtype=np.float32)
            epoch, r, s = schedule[t]
            kernel = KernelArrays(kinds_params.kinds, kinds_params.params, beta,
                                  kinds_params.scale)
            first = epoch * corpus.n_walks + bounds[r][0]
            slot = current_slot(state)
            args = [(str(folder), slot, i, j, parts, f"walks/round{r}.npy", first, kernel,
                     settings, threads, keep, filed) for i, j in steps[s]]
            check_lock_held(folder)
            results = kept.step(t, args) if kept else run_step(client, t, args)
            if settings.learn_beta:
                beta = np.mean([res["beta"] for res in results], axis=0).astype(np.float32)
            run.add(results, beta, model.negatives)
            t = int(state["step"])
            shell = None
            looks = [c for c in state.get("checks", [])  # this run's: its kernel scale
                     if c["kernel_scale"] == state["scale"]]
            due = (can_narrow and not state.get("no_verdict")
                   and len(state["narrowed"]) < MAX_NARROWING
                   and look_due(t, len(schedule), state["pairs"], min_pairs, looks))
            if kept is None:
                state["slot"] = 1 - slot
            elif due or t % parts == 0 or t == len(schedule):  # a checkpoint
                check_lock_held(folder)
                written = kept.checkpoint(str(folder), 1 - slot, t - 1)
                run.bucket_phases["write blocks"] = (
                    run.bucket_phases.get("write blocks", 0.0) + written)
                state["slot"] = 1 - slot
            if due:
                shell = _shell(folder, graph, counts, parts, d, state["slot"], beta, state,
                               looks[0] if looks else None)
                state["no_verdict"] = shell is None  # None: not finite or too few rows
            if shell is not None:
                state.setdefault("checks", []).append(shell)
            if shell is not None and shell["collapsing"]:
                check_lock_held(folder)
                state = run.state = _restart(folder, state, shell, n, parts, d, seed,
                                             progress_file)
                kinds_params, settings = _run_settings(model, kernels, total_centers, seed,
                                                       state, n)
                t = 0
                bar.reset()
                continue
            if kept is None or not kept.held:  # the blocks of step t are in their files
                check_lock_held(folder)
                write_json(progress_file, state)
            bar.update(1)
    return run


def keeps_blocks(client, folder: Location) -> bool:
    """Whether a fit keeps its blocks on the Dask workers between checkpoints
    (:mod:`kernelne.partitioned.kept_blocks`): on a client with the folder at a URL, where
    every block read and write is a whole object moved through the store (on moto's S3 the
    fit ran 1.7x as fast kept). In a folder the blocks go through the page cache, which
    measured faster than Dask's transfers and held a third of the workers' memory
    (docs/DISTRIBUTED.md, the plan's item 1); in one process they go through the folder
    (what lets a model larger than memory be trained)."""
    return client is not None and is_remote(folder)


@contextmanager
def blocks_held(client, folder: Location, parts: int) -> Iterator[KeptBlocks | None]:
    """A :class:`~kernelne.partitioned.kept_blocks.KeptBlocks` for the steps if
    :func:`keeps_blocks` (its blocks dropped however the steps end), else None."""
    if not keeps_blocks(client, folder):
        yield None
        return
    kept = KeptBlocks(client, parts)
    try:
        yield kept
    finally:
        kept.release()


def current_slot(state: dict) -> int:
    """The slot of the block files that hold the recorded version (``progress.json``'s
    ``"slot"``; the step's parity in a record without one)."""
    return int(state.get("slot", int(state["step"]) % 2))


def _run_settings(model, kernels, total_centers: float, seed, state: dict, n_nodes: int,
                  ) -> tuple[KernelArrays, TrainSettings]:
    """The kernel arrays and training settings of a run: they change only at a restart (the
    kernel scale, MKernelNE's step)."""
    kinds_params = kernel_arrays(kernels, scale=state["scale"])
    settings = train_settings(model, total_centers, seed, n_nodes, learn_beta=len(kernels) > 1,
                              beta_simplex=bool(state["simplex"]))
    return kinds_params, settings


def _shell(folder: Location, graph, counts: np.ndarray, parts: int, d: int, slot: int,
           beta: np.ndarray, state: dict, previous: dict | None) -> dict | None:
    """The robust restart's test (:func:`kernelne.engine.robust.shell_figures`) on the blocks
    in ``slot``, read where they lie (:class:`BlockRows`); ``previous``: the run's first
    reading, if this is the second look."""
    A = BlockRows(folder, "A", graph.n_nodes, parts, d, slot)
    B = BlockRows(folder, "B", graph.n_nodes, parts, d, slot)
    return shell_figures(A, B, graph.indptr, graph.indices, counts > 0, beta,
                         float(state["scale"]), int(state["pairs"]), parts,
                         len(state["narrowed"]), previous, finite=A.all_finite())


def _restart(folder: Location, state: dict, shell: dict, n: int, parts: int, d: int, seed,
             progress_file: Path) -> dict:
    """Start again from version 0 with the kernel narrowed :data:`NARROWING` times (and
    MKernelNE on the simplex step if its weights collapsed); the walks are kept. The new
    state is written before the blocks change, so a driver killed here resumes at step 0."""
    state = {
        "step": 0, "slot": 0, "pairs": 0, "losses": [], "walks_done": True,
        "scale": float(state["scale"]) * NARROWING,
        "narrowed": [*state["narrowed"], shell],
        "checks": state["checks"],
        "simplex": bool(state["simplex"]) or bool(shell["weights_collapsed"]),
    }
    write_json(progress_file, state)
    init_blocks(folder, n, parts, d, seed)
    return state


def _make_walks(folder: Path, corpus: WalkCorpus, rounds: int, parts: int, progress: bool,
                state: dict, client=None, digest: str | None = None, filed: bool = False,
                ) -> np.ndarray:
    """Write every round's walks to ``walks/round{r}.npy`` and their part masks beside them
    (once; a round already written is kept), filed by part if ``filed``
    (:mod:`kernelne.partitioned.part_files`), and return the unigram counts (one epoch's walks,
    as a plain fit counts them). With ``client`` and a folder (not a URL) the Dask workers make
    the walks (:func:`kernelne.partitioned.rounds.make_rounds`): the same files and counts.
    ``digest``: the graph's, recorded with the rounds (made again if not given)."""
    counts_file = folder / "walks" / "counts.npy"
    if state.get("walks_done"):
        return load_npy(counts_file)
    makedirs(folder / "walks")
    counts = np.zeros(corpus.graph.n_nodes, dtype=np.int64)
    bounds = round_bounds(corpus.n_walks, rounds)
    files = [(folder / "walks" / f"round{r}.npy", folder / masks_file(f"walks/round{r}.npy"))
             for r in range(rounds)]
    # at a URL the driver makes every round (the workers' tasks write into shared files)
    remote = is_remote(folder)
    todo = (list(range(rounds)) if remote
            else rounds_to_make(folder, corpus, files, parts, counts, digest, filed))
    bar = tqdm(total=corpus.n_walks, unit="walk", disable=not progress, desc="walks",
               dynamic_ncols=True)
    with bar:
        bar.update(corpus.n_walks - sum(bounds[r][1] - bounds[r][0] for r in todo))
        if client is not None and not remote:
            make_rounds(client, gather_watching_workers, folder, corpus, parts,
                        [(r, bounds[r], files[r]) for r in todo], counts, bar.update, filed)
            todo = []
        for r in todo:
            lo, hi = bounds[r]
            walk_file, mask_file = files[r]
            with staged(walk_file) as tmp, staged(mask_file) as mask_tmp:
                out = allocated_memmap(tmp, np.int32, (hi - lo, corpus.walk_length))
                masks = allocated_memmap(mask_tmp, np.uint64, (hi - lo,))
                for a in range(lo, hi, corpus.chunk_walks):
                    b = min(hi, a + corpus.chunk_walks)
                    walks = corpus.chunk(a, b)
                    count_visits(walks, counts)
                    out[a - lo:b - lo] = walks
                    masks[a - lo:b - lo] = part_masks(walks, parts)
                    bar.update(b - a)
                out.flush()
                masks.flush()
                del out, masks
                if filed:  # the part files before the round's: the round file marks it made
                    file_round(tmp, mask_tmp, walk_file, parts, READ_WALKS)
    save_array(counts_file, counts)
    return counts
