"""The experiment grid: embedding jobs (dataset, method, settings, seed) and the evaluation jobs
that score them (one per training ratio, or per link-prediction operator).

Experiments: ``table2`` (classification), ``table3`` (link prediction, embeddings of the residual
graph of one seeded split, and heuristic jobs that score the same split from its residual graph)
and the sensitivity sweeps ``dim``, ``sigma2``, ``alpha``. Identical embeddings (same key) are
listed once, whatever experiments use them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelne.errors import InputError
from kernelne.evaluation.heuristics import KATZ_BETA, KATZ_LENGTH
from kernelne.graphs.datasets import load_manifest
from kernelne.reproduce.cache import file_sha256, make_key
from kernelne.reproduce.config import Config, key_params

# Every classification job scores both rules (one fit): the paper's top-k, whose k is each
# test node's true label count (an oracle), and the non-oracle rule; RULE_METRICS names their
# metrics in the scores.
RULES = ("top-k", "non-oracle")
RULE_METRICS = {"top-k": ("micro_f1", "macro_f1"),
                "non-oracle": ("micro_f1_non_oracle", "macro_f1_non_oracle")}
CLASSIFIER = {"classifier": "logistic-l2-liblinear", "C": 1.0, "rules": list(RULES)}
HEURISTIC_SETTINGS = {"katz_beta": KATZ_BETA, "katz_length": KATZ_LENGTH}


@dataclass(frozen=True)
class SplitSpec:
    """A seeded link-prediction split of one network."""

    key: str
    dataset: str
    test_fraction: float
    seed: int
    capped: bool = False


@dataclass(frozen=True, eq=False)
class EmbedJob:
    """Fit ``model`` with ``params`` and seed on a dataset's graph (or a split's residual)."""

    key: str
    dataset: str
    method: str
    model: str
    params: dict[str, Any]
    seed: int
    split: SplitSpec | None = None


@dataclass(frozen=True, eq=False)
class EvalJob:
    """Score one embedding: a training ratio (``repeats`` splits) or a link operator."""

    key: str
    embed: EmbedJob
    experiment: str
    task: str
    setting: str
    repeats: int
    seed: int
    x: float | None = None
    single_label: bool = False


@dataclass(frozen=True)
class HeuristicJob:
    """Score a split's test pairs with link-prediction heuristic ``name`` (no embedding)."""

    key: str
    split: SplitSpec
    name: str


@dataclass
class Grid:
    embeddings: list[EmbedJob] = field(default_factory=list)
    evaluations: list[EvalJob] = field(default_factory=list)
    heuristics: list[HeuristicJob] = field(default_factory=list)

    def add(self, job: EmbedJob) -> EmbedJob:
        """Register ``job`` unless an identical one is listed; return the listed one."""
        for known in self.embeddings:
            if known.key == job.key:
                return known
        self.embeddings.append(job)
        return job

    def splits(self) -> list[SplitSpec]:
        """The link splits the embeddings and heuristics use, each once."""
        specs = [j.split for j in self.embeddings if j.split] + [j.split for j in self.heuristics]
        return list({s.key: s for s in specs}.values())


def check_datasets(config: Config, data_dir: Path) -> dict[str, dict]:
    """The manifest entries of every dataset the config names; InputError for missing ones."""
    manifest = load_manifest(data_dir)
    wanted = list(config.task("classification")["datasets"])
    wanted += config.task("link_prediction")["datasets"]
    missing = sorted({d for d in wanted if d not in manifest
                      or not (data_dir / f"{d}.edges.gz").is_file()})
    if missing:
        raise InputError(f"dataset(s) {', '.join(missing)} not in the data folder "
                         f"(it has: {', '.join(manifest)})", data_dir)
    unlabelled = [d for d in config.task("classification")["datasets"]
                  if not (data_dir / label_file(d, config.single_label(d))).is_file()]
    if unlabelled:
        raise InputError(f"no labels for classification dataset(s) {', '.join(unlabelled)} "
                         "(single-label datasets need NAME.label_fractions.gz)", data_dir)
    return {d: manifest[d] for d in wanted}


def label_file(dataset: str, single_label: bool) -> str:
    """The file a classification dataset's labels are read from."""
    return f"{dataset}.label_fractions.gz" if single_label else f"{dataset}.labels.gz"


def build_grid(config: Config, data_dir: str | Path) -> Grid:
    """Every embedding and evaluation job of ``config`` on the data folder."""
    data_dir = Path(data_dir)
    check_datasets(config, data_dir)
    grid = Grid()
    seed = config.seed

    def embed(dataset: str, method: str, params: dict, split: SplitSpec | None) -> EmbedJob:
        edges = file_sha256(data_dir / f"{dataset}.edges.gz")
        model = config.model(method)
        key = make_key("embedding", dataset, edges, split and split.key, model, key_params(params),
                       seed)
        return grid.add(EmbedJob(key, dataset, method, model, params, seed, split))

    def classify(job: EmbedJob, experiment: str, ratios: list, repeats: int, x=None) -> None:
        single = config.single_label(job.dataset)
        labels = file_sha256(data_dir / label_file(job.dataset, single))
        for ratio in ratios:
            key = make_key("classification", job.key, labels, single and "argmax",
                           float(ratio), repeats, seed, CLASSIFIER)
            grid.evaluations.append(EvalJob(key, job, experiment, "classification",
                                            f"{ratio:g}", repeats, seed, x, single))

    cls = config.task("classification")
    for dataset in cls["datasets"]:
        for method in cls["methods"]:
            job = embed(dataset, method, config.params("classification", dataset, method), None)
            classify(job, "table2", cls["ratios"], cls["repeats"])

    link = config.task("link_prediction")
    for dataset in link["datasets"]:
        edges = file_sha256(data_dir / f"{dataset}.edges.gz")
        fraction = float(link["test_fraction"])
        capped = config.capped(dataset)
        key = make_key("split", dataset, edges, fraction, seed, *(["capped"] if capped else []))
        split = SplitSpec(key, dataset, fraction, seed, capped)
        for name in link["heuristics"]:
            grid.heuristics.append(HeuristicJob(
                make_key("heuristic", split.key, name, HEURISTIC_SETTINGS), split, name))
        for method in link["methods"]:
            job = embed(dataset, method, config.params("link_prediction", dataset, method), split)
            operator = link["operator"]
            key = make_key("link_prediction", job.key, operator)
            grid.evaluations.append(
                EvalJob(key, job, "table3", "link_prediction", operator, 1, seed)
            )

    sens = config.sensitivity
    dataset = sens["dataset"]
    if dataset:
        sweeps = [("dim", kind, "dim", v, int(v)) for v in sens["dim"] for kind in ("gauss", "sch")]
        sweeps += [("sigma2", "gauss", "sigma", v, math.sqrt(v)) for v in sens["sigma2"]]
        sweeps += [("alpha", "sch", "alpha", v, float(v)) for v in sens["alpha"]]
        for experiment, kind, param, x, value in sweeps:
            method = sens[kind]
            if not method:
                continue
            params = config.params("classification", dataset, method) | {param: value}
            job = embed(dataset, method, params, None)
            classify(job, experiment, sens["ratios"], int(sens["repeats"]), float(x))
    return grid
