"""Execute the grid through joblib: locally, or on a Dask cluster with ``scheduler``.

Job functions are top-level and take plain, picklable arguments (graphs, arrays, job records);
the driver alone reads and writes the cache, so Dask workers need no shared file system.
Locally, embeddings run one at a time in this process, each on every core (numba and gensim
use all threads themselves), and the evaluation jobs run in parallel processes.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed, parallel_config
from tqdm.auto import tqdm

from kernelne.errors import FIT_ERRORS, InputError, TrainingError, failure_reason
from kernelne.evaluation.classification import default_classifier, score_split_rules
from kernelne.evaluation.heuristics import evaluate_heuristics
from kernelne.evaluation.linkpred import evaluate_link_prediction
from kernelne.evaluation.splits import LinkSplit, make_link_split
from kernelne.graphs.datasets import Dataset, load_dataset, load_single_labels
from kernelne.graphs.graph import Graph
from kernelne.outputs import cap_jobs
from kernelne.parallel import dask_client, die_with_parent
from kernelne.reproduce.cache import Cache
from kernelne.reproduce.config import model_defaults
from kernelne.reproduce.grid import (
    HEURISTIC_SETTINGS,
    RULE_METRICS,
    RULES,
    EmbedJob,
    EvalJob,
    Grid,
    SplitSpec,
)


def make_model(model: str, params: dict[str, Any], seed: int, workers: int | None):
    """An unfitted estimator: KernelNE or a baseline."""
    if model == "kernelne":
        from kernelne.model.kernelne import KernelNE

        return KernelNE(**params, random_state=seed, workers=workers)
    from kernelne.baselines import make_method

    return make_method(model, **params, random_state=seed, workers=workers)


def changed_params(job: EmbedJob) -> dict[str, Any]:
    """The job's parameters that differ from its model's defaults (for the log)."""
    defaults = model_defaults(job.model)
    return {k: v for k, v in job.params.items() if defaults.get(k) != v}


def embed_job(
    job: EmbedJob, graph: Graph, workers: int | None
) -> tuple[str, np.ndarray, float, dict]:
    """Fit one embedding; returns ``(key, vectors, seconds, extra metadata)``.

    The metadata of a multiple-kernel fit holds its dictionary and learned weights (final and
    snapshots), for the weights table and figure.
    """
    die_with_parent()
    start = time.perf_counter()
    model = make_model(job.model, job.params, job.seed, workers).fit(graph)
    extra = {}
    if len(getattr(model, "kernels_", ())) > 1:
        extra = {"kernels": [str(k) for k in model.kernels_], "beta": model.beta_.tolist(),
                 "beta_history": model.beta_history_.tolist()}
    return job.key, model.embedding_, time.perf_counter() - start, extra


@dataclass(frozen=True)
class Failed:
    """A job that raised one of :data:`~kernelne.errors.FIT_ERRORS`: its key and why."""

    key: str
    reason: str


def guarded(job_function, key: str, *args) -> Any:
    """``job_function(*args)``, or :class:`Failed` if it raises one of
    :data:`~kernelne.errors.FIT_ERRORS` (a diverged fit, an impossible setting, out of
    memory): one failed cell of the grid is recorded, and the run goes on."""
    try:
        return job_function(*args)
    except FIT_ERRORS as exc:
        return Failed(key, failure_reason(exc))


def classify_job(
    key: str, X: np.ndarray, Y: np.ndarray, ratio: float, seed: int, repeats: int
) -> tuple[str, dict]:
    """Micro-/Macro-F1 of ``repeats`` seeded splits at one training ratio, under each rule
    (one classifier fit per split); metrics named by :data:`RULE_METRICS`."""
    die_with_parent()
    start = time.perf_counter()
    clf = default_classifier()
    scores = [score_split_rules(X, Y, ratio, seed, i, clf, RULES) for i in range(repeats)]
    record: dict[str, Any] = {}
    for rule, (micro, macro) in RULE_METRICS.items():
        record[micro] = [s[rule][0] for s in scores]
        record[macro] = [s[rule][1] for s in scores]
    return key, record | {"seconds": time.perf_counter() - start}


def linkpred_job(key: str, vectors: np.ndarray, split: LinkSplit, operator: str):
    """ROC-AUC and average precision of a residual-graph embedding on its split."""
    die_with_parent()
    start = time.perf_counter()
    table = evaluate_link_prediction((vectors, split.nodes), split, operators=[operator])
    return key, {
        "roc_auc": [table.value("roc_auc")],
        "average_precision": [table.value("average_precision")],
        "seconds": time.perf_counter() - start,
    }


def heuristic_job(key: str, split: LinkSplit, name: str) -> tuple[str, dict]:
    """ROC-AUC and average precision of heuristic ``name`` on the split's residual graph."""
    die_with_parent()
    start = time.perf_counter()
    table = evaluate_heuristics(split, [name])
    return key, {
        "roc_auc": [table.value("roc_auc")],
        "average_precision": [table.value("average_precision")],
        "seconds": time.perf_counter() - start,
    }


class Data:
    """Datasets and link splits, loaded on first use; splits are cached on disk."""

    def __init__(self, data_dir: Path, cache: Cache):
        self.data_dir, self.cache = data_dir, cache
        self._datasets: dict[str, Dataset] = {}
        self._single_labels: dict[str, sp.csr_matrix] = {}
        self._splits: dict[str, LinkSplit] = {}

    def dataset(self, name: str) -> Dataset:
        if name not in self._datasets:
            self._datasets[name] = load_dataset(name, self.data_dir)
        return self._datasets[name]

    def split(self, spec: SplitSpec) -> LinkSplit:
        if spec.key not in self._splits:
            folder = self.cache.split_folder(spec.key)
            if self.cache.valid_split(spec.key):
                split = LinkSplit.load(folder)
            else:
                graph = self.dataset(spec.dataset).graph
                split = make_link_split(graph, spec.test_fraction, spec.seed, cap=spec.capped)
                split.save(folder)
            self._splits[spec.key] = split
        return self._splits[spec.key]

    def graph(self, job: EmbedJob) -> Graph:
        if job.split is None:
            return self.dataset(job.dataset).graph
        return self.split(job.split).residual_graph()

    def labels(self, dataset: str, single_label: bool) -> sp.csr_matrix:
        """The dataset's label matrix, or its single-label variant (argmax of the fractions)."""
        if not single_label:
            return self.dataset(dataset).labels
        if dataset not in self._single_labels:
            self._single_labels[dataset] = load_single_labels(dataset, self.data_dir)
        return self._single_labels[dataset]

    def classification_data(self, dataset: str, vectors: np.ndarray, single_label: bool = False):
        """Rows of the labelled nodes and their dense label matrix (empty labels dropped)."""
        labels = self.labels(dataset, single_label)
        labelled = np.flatnonzero(labels.getnnz(axis=1) > 0)
        Y = labels[labelled]
        return vectors[labelled], Y[:, np.flatnonzero(Y.getnnz(axis=0) > 0)].toarray()


@dataclass
class RunStats:
    """What a run did (written to ``run.json``): jobs run, found cached, failed; ``failures``
    holds one record per failed job (``kind``, ``key``, what it was, ``reason``)."""

    embeddings_run: int = 0
    evaluations_run: int = 0
    embeddings_cached: int = 0
    evaluations_cached: int = 0
    embeddings_failed: int = 0
    evaluations_failed: int = 0
    failures: list[dict] = field(default_factory=list)

    def failed(self, kind: str, key: str, what: str, reason: str, log) -> None:
        """Record a failed job and log it."""
        self.failures.append({"kind": kind, "key": key, "what": what, "reason": reason})
        if kind == "embedding":
            self.embeddings_failed += 1
        else:
            self.evaluations_failed += 1
        log(f"{kind} {key} {what}: FAILED: {reason}")


@contextlib.contextmanager
def backend(scheduler: str | None) -> Iterator[dict]:
    """joblib settings for the run: Dask (via ``distributed.Client``) or local processes.

    Raises
    ------
    TrainingError
        When the scheduler is lost during the enclosed block (Dask cancels the jobs, closes
        the connection or stops answering): one line naming it; the jobs finished before
        are cached, so the same command resumes from them."""
    if scheduler is None:
        yield {"scheduler": None}
        return
    from concurrent.futures import CancelledError

    from distributed.comm.core import CommClosedError

    with dask_client(scheduler) as client, parallel_config(backend="dask"):
        try:
            yield {"scheduler": scheduler,
                   "dask_workers": len(client.scheduler_info()["workers"])}
        except (CancelledError, CommClosedError, TimeoutError) as exc:
            if client.status == "running" and not isinstance(exc, CancelledError):
                raise  # the scheduler still answers: not its loss
            raise TrainingError(
                f"the Dask scheduler {scheduler} was lost ({type(exc).__name__}): the jobs "
                "finished before are cached; the same command resumes from them once a "
                "scheduler is back") from None


def _stream(tasks: Iterable, n_jobs: int, total: int, desc: str, progress: bool) -> Iterator:
    """Run joblib ``tasks``, yielding results as they finish, with a progress bar."""
    if total == 0:
        return
    with tqdm(total=total, desc=desc, unit="job", disable=not progress, dynamic_ncols=True) as bar:
        jobs = cap_jobs(n_jobs, total) if n_jobs is not None else n_jobs
        for result in Parallel(n_jobs=jobs, return_as="generator_unordered",
                               initializer=die_with_parent)(tasks):
            bar.update(1)
            yield result


def execute(
    grid: Grid,
    data: Data,
    cache: Cache,
    *,
    dask: bool = False,
    jobs: int = -1,
    workers: int | None = None,
    progress: bool = True,
    log=print,
    stats: RunStats | None = None,
) -> RunStats:
    """Run every job of ``grid`` whose result is not cached yet, caching each as it ends.

    ``stats`` (updated as jobs end, so it is current even after an interruption) is returned.
    """
    stats = RunStats() if stats is None else stats
    impossible = _impossible_splits(grid, data, log)
    todo = [j for j in grid.embeddings
            if not cache.has_embedding(j.key) and not (j.split and j.split.key in impossible)]
    stats.embeddings_cached = len(grid.embeddings) - len(todo)
    by_key = {j.key: j for j in todo}
    tasks = (delayed(guarded)(embed_job, j.key, j, data.graph(j), workers) for j in todo)
    failed: set[str] = set()
    for result in _stream(tasks, -1 if dask else 1, len(todo), "embeddings", progress):
        if isinstance(result, Failed):  # its evaluations are skipped; a new run retries it
            job = by_key[result.key]
            failed.add(result.key)
            stats.failed("embedding", result.key, _describe(job), result.reason, log)
            continue
        key, vectors, seconds, extra = result
        job = by_key[key]
        cache.save_embedding(key, vectors, {
            "dataset": job.dataset, "method": job.method, "model": job.model,
            "params": job.params, "seed": job.seed,
            "split": job.split and job.split.key, "seconds": seconds, **extra,
        })
        stats.embeddings_run += 1
        log(f"embedding {key} {_describe(job)}: {seconds:.1f} s")

    pending: dict[str, EvalJob] = {}
    for job in grid.evaluations:
        if job.embed.split and job.embed.split.key in impossible:
            continue
        if job.embed.key in failed:
            continue
        if job.key not in pending and cache.scores(job.key) is None:
            pending[job.key] = job
    stats.evaluations_cached = len({j.key for j in grid.evaluations}) - len(pending)
    for result in _stream(_eval_tasks(pending.values(), data, cache),
                          -1 if dask else jobs, len(pending), "evaluations", progress):
        if isinstance(result, Failed):
            job = pending[result.key]
            stats.failed("evaluation", result.key, f"{job.embed.dataset} {job.embed.method} "
                         f"{job.task} {job.setting}", result.reason, log)
            continue
        key, record = result
        cache.save_scores(key, record)
        stats.evaluations_run += 1
        job = pending[key]
        log(f"evaluation {key} {job.embed.dataset} {job.embed.method} {job.task} "
            f"{job.setting} x{job.repeats}: {record['seconds']:.1f} s")
    _run_heuristics(grid, data, cache, impossible, jobs=-1 if dask else jobs,
                    progress=progress, log=log, stats=stats)
    return stats


def _describe(job: EmbedJob) -> str:
    """An embedding job in the log: dataset, method, the settings off their defaults, seed."""
    return (f"{job.dataset}{' (residual)' if job.split else ''} {job.method} "
            f"{json.dumps(changed_params(job))} seed={job.seed}")


def _run_heuristics(grid: Grid, data: Data, cache: Cache, impossible: set[str], *, jobs: int,
                    progress: bool, log, stats: RunStats) -> None:
    """Score the grid's heuristic jobs not cached yet (skipping impossible splits)."""
    todo = {j.key: j for j in grid.heuristics
            if j.split.key not in impossible and cache.scores(j.key) is None}
    stats.evaluations_cached += len(grid.heuristics) - len(todo)
    tasks = (delayed(guarded)(heuristic_job, j.key, j.key, data.split(j.split), j.name)
             for j in todo.values())
    for result in _stream(tasks, jobs, len(todo), "heuristics", progress):
        if isinstance(result, Failed):
            job = todo[result.key]
            stats.failed("heuristic", result.key, f"{job.split.dataset} {job.name}",
                         result.reason, log)
            continue
        key, record = result
        cache.save_scores(key, record)
        stats.evaluations_run += 1
        job = todo[key]
        log(f"heuristic {key} {job.split.dataset} {job.name}: {record['seconds']:.1f} s")


def _impossible_splits(grid: Grid, data: Data, log) -> set[str]:
    """Keys of the grid's link splits that cannot be made (logged; their jobs are skipped).

    E.g. CiteSeer's largest component is nearly a tree: half of its edges cannot be held out
    while the residual graph stays connected (unless its split is capped).
    """
    bad = set()
    for spec in grid.splits():
        try:
            data.split(spec)
        except InputError as exc:
            log(f"skipping link prediction on {spec.dataset}: {exc}")
            bad.add(spec.key)
    return bad


def _eval_tasks(jobs: Iterable[EvalJob], data: Data, cache: Cache) -> Iterator:
    """joblib tasks of the evaluations; each embedding is read from the cache when needed."""
    for job in jobs:
        vectors = cache.load_embedding(job.embed.key)
        if job.task == "classification":
            X, Y = data.classification_data(job.embed.dataset, vectors, job.single_label)
            yield delayed(guarded)(classify_job, job.key, job.key, X, Y, float(job.setting),
                                   job.seed, job.repeats)
        else:
            split = data.split(job.embed.split)
            yield delayed(guarded)(linkpred_job, job.key, job.key, vectors, split, job.setting)


def collect_records(grid: Grid, cache: Cache) -> list[dict]:
    """One record per raw score (repeat, metric) of every evaluated job, with its settings."""
    records = []
    for job in grid.evaluations:
        scores = cache.scores(job.key)
        if scores is None:
            continue
        embed = job.embed
        meta = cache.embedding_meta(embed.key)
        for metric, values in scores.items():
            if metric == "seconds":
                continue
            for repeat, value in enumerate(values):
                records.append({
                    "experiment": job.experiment, "x": job.x, "task": job.task,
                    "dataset": embed.dataset, "method": embed.method, "setting": job.setting,
                    "metric": metric, "repeat": repeat, "value": value,
                    "embedding_seed": embed.seed, "split_seed": job.seed,
                    "params": json.dumps(embed.params, sort_keys=True),
                    "fit_seconds": round(meta["seconds"], 3),
                    "eval_seconds": round(scores["seconds"], 3),
                    "embedding_key": embed.key, "score_key": job.key,
                })
    return records + _heuristic_records(grid, cache)


def _heuristic_records(grid: Grid, cache: Cache) -> list[dict]:
    """Records of the cached heuristic scores (Table III rows with no embedding)."""
    records = []
    for job in grid.heuristics:
        scores = cache.scores(job.key)
        if scores is None:
            continue
        for metric in ("roc_auc", "average_precision"):
            records.append({
                "experiment": "table3", "x": None, "task": "link_prediction",
                "dataset": job.split.dataset, "method": job.name, "setting": "heuristic",
                "metric": metric, "repeat": 0, "value": scores[metric][0],
                "embedding_seed": None, "split_seed": job.split.seed,
                "params": json.dumps(HEURISTIC_SETTINGS if job.name == "katz" else {}),
                "fit_seconds": None, "eval_seconds": round(scores["seconds"], 3),
                "embedding_key": "", "score_key": job.key,
            })
    return records


def collect_split_info(grid: Grid, cache: Cache) -> dict[str, dict]:
    """Per link dataset, its cached split's edge counts: ``lcc_edges``, ``test_edges`` and
    whether the held-out share was ``capped`` to keep the residual connected."""
    from kernelne.evaluation.splits import LinkSplit

    out = {}
    for spec in grid.splits():
        if cache.valid_split(spec.key):
            split = LinkSplit.load(cache.split_folder(spec.key))
            out[spec.dataset] = {"lcc_edges": int(split.info.get("lcc_edges", 0)),
                                 "test_edges": len(split.test_edges),
                                 "capped": bool(split.info.get("capped", False))}
    return out


def run_folder(out: str | Path) -> Path:
    """Create the output folder; InputError when impossible."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from kernelne.errors import InputError

        raise InputError(f"cannot create the output folder: {exc.strerror}", out) from None
    return out


def collect_kernel_weights(grid: Grid, cache: Cache) -> list[dict]:
    """The learned kernel weights of every cached multiple-kernel embedding of the grid."""
    out = []
    for job in grid.embeddings:
        if not cache.has_embedding(job.key):
            continue
        meta = cache.embedding_meta(job.key)
        if "beta" in meta:
            out.append({"dataset": job.dataset, "method": job.method,
                        "task": "link_prediction" if job.split else "classification",
                        "kernels": meta["kernels"], "beta": meta["beta"]})
    return out
