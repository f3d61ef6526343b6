"""The reproduce settings file: a TOML file (``paper.toml`` is the paper's), loaded and checked.

Top-level keys: ``seed``, ``[defaults]`` (parameters for every method), ``[methods.NAME]``
(``model``, ``label`` and that model's parameters), ``[classification]``, ``[link_prediction]``
(each with ``datasets``, ``methods`` and ``[TASK.settings.DATASET.METHOD]`` overrides, ``"*"``
for every dataset; classification also ``single_label``, the datasets labelled by the argmax of
their label fractions; link prediction also ``heuristics`` and ``cap_to_connected``, the
datasets whose split holds out fewer edges when a connected residual needs it),
``[sensitivity]`` and ``[quick]`` (merged over the rest by ``--quick``).
"""

from __future__ import annotations

import copy
import math
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kernelne.errors import InputError
from kernelne.evaluation.heuristics import HEURISTIC_LABELS, HEURISTICS

TASKS = ("classification", "link_prediction")
MODELS = ("kernelne", "deepwalk", "node2vec", "line", "hope", "netmf")
_TOP_KEYS = {"seed", "defaults", "methods", "sensitivity", "quick", *TASKS}
_TASK_KEYS = {
    "classification": {"datasets", "methods", "ratios", "repeats", "settings", "single_label"},
    "link_prediction": {"datasets", "methods", "test_fraction", "operator", "settings",
                        "heuristics", "cap_to_connected"},
}
_PER_RUN = {"workers", "random_state", "verbose"}
# Options added to a model after results were cached, at the value that trains exactly as the
# model did before they existed (tested bit for bit): left out of cache keys at that value, so
# adding an option keeps every cached result; any other value is part of the key.
# negative_pool "auto" is 0 (negatives per pair) on every graph of the paper (all far below
# kernelne.engine.trainer.POOL_FROM_NODES nodes).
OFF_VALUES: dict[str, Any] = {"loss": "squared", "window_shrink": False, "subsample": 0.0,
                              "negative_pool": "auto"}


def key_params(params: dict[str, Any]) -> dict[str, Any]:
    """The parameters that identify a fit in the cache: ``params`` without the options of
    :data:`OFF_VALUES` at their off value."""
    return {k: v for k, v in params.items() if not (k in OFF_VALUES and v == OFF_VALUES[k])}
_SENSITIVITY_KEYS = {"dataset", "gauss", "sch", "ratios", "repeats", "dim", "sigma2", "alpha"}


def default_config_text() -> str:
    """The text of the shipped settings file (the paper's grid, with comments)."""
    return resources.files("kernelne.reproduce").joinpath("paper.toml").read_text("utf-8")


def write_default_config(path: str | Path) -> None:
    """Write the shipped settings file to ``path`` for editing (never overwrites)."""
    path = Path(path)
    if path.exists():
        raise InputError("will not overwrite an existing file", path)
    if not path.parent.is_dir():
        raise InputError("cannot write: its folder does not exist", path)
    path.write_text(default_config_text(), encoding="utf-8")


def model_defaults(model: str) -> dict[str, Any]:
    """Constructor parameters of ``model`` (KernelNE or a baseline) and their defaults."""
    if model == "kernelne":
        from kernelne.model.auto_setting import PAPER_SETTING
        from kernelne.model.kernelne import KernelNE

        # the paper's setting (its values, not "auto") and rows as trained: the defaults
        return {**KernelNE().get_params(), **PAPER_SETTING, "setting": "given",
                "normalize": "none", "propagate": False}
    from kernelne.baselines import make_method

    return make_method(model).get_params()


def model_params(model: str) -> set[str]:
    """Constructor parameter names of ``model``."""
    return set(model_defaults(model))


@dataclass
class Config:
    """A checked settings file; ``data`` is the parsed TOML (``[quick]`` already applied)."""

    data: dict[str, Any]
    source: str

    @property
    def seed(self) -> int:
        return int(self.data["seed"])

    def task(self, name: str) -> dict[str, Any]:
        return self.data[name]

    @property
    def sensitivity(self) -> dict[str, Any]:
        return self.data["sensitivity"]

    def label(self, method: str) -> str:
        """The name shown in tables (a heuristic's is marked as such)."""
        if method in HEURISTIC_LABELS:
            return f"{HEURISTIC_LABELS[method]} (heuristic)"
        return self.data["methods"][method].get("label", method)

    def single_label(self, dataset: str) -> bool:
        """Whether classification on ``dataset`` uses the argmax of its label fractions."""
        return dataset in self.data["classification"]["single_label"]

    def capped(self, dataset: str) -> bool:
        """Whether ``dataset``'s link split may hold out fewer edges to stay connected."""
        return dataset in self.data["link_prediction"]["cap_to_connected"]

    def model(self, method: str) -> str:
        return self.data["methods"][method]["model"]

    def params(self, task: str, dataset: str, method: str) -> dict[str, Any]:
        """Every parameter ``method`` gets on ``dataset`` for ``task``: the model's defaults,
        ``[defaults]`` (those the model takes), the method's own, then the task's ``"*"`` and
        per-dataset overrides. Seed and thread count are set per run, not here."""
        spec = self.data["methods"][method]
        settings = self.data[task].get("settings", {})
        merged = model_defaults(spec["model"])
        merged.update({k: v for k, v in self.data["defaults"].items() if k in merged})
        merged.update({k: v for k, v in spec.items() if k not in ("model", "label")})
        merged.update(settings.get("*", {}).get(method, {}))
        merged.update(settings.get(dataset, {}).get(method, {}))
        return {k: v for k, v in sorted(merged.items()) if k not in _PER_RUN}

    def narrowed(
        self,
        datasets: list[str] | None = None,
        methods: list[str] | None = None,
        repeats: int | None = None,
        labelled: set[str] | None = None,
        tasks: list[str] | None = None,
    ) -> Config:
        """A copy with the CLI's ``--datasets``, ``--methods``, ``--repeats``, ``--tasks``.

        ``--datasets`` replaces both tasks' lists (classification keeps the ``labelled`` ones);
        the sensitivity figures run only when their dataset is among them. ``--methods`` may
        name link-prediction heuristics too; those not named are left out. ``tasks`` keeps
        only those of ``classification``, ``link_prediction`` and ``sensitivity``.
        """
        data = copy.deepcopy(self.data)
        if methods is not None:
            unknown = sorted(set(methods) - set(data["methods"]) - set(HEURISTICS))
            if unknown:
                raise InputError(f"unknown method(s) {', '.join(unknown)} (the config has: "
                                 f"{', '.join([*data['methods'], *HEURISTICS])})")
            for task in TASKS:
                data[task]["methods"] = [m for m in methods if m in data["methods"]]
            data["link_prediction"]["heuristics"] = [m for m in methods if m in HEURISTICS]
            sens = data["sensitivity"]
            for kind in ("gauss", "sch"):
                if sens.get(kind) not in methods:
                    sens[kind] = ""
        if datasets is not None:
            data["classification"]["datasets"] = [
                d for d in datasets if labelled is None or d in labelled
            ]
            data["link_prediction"]["datasets"] = list(datasets)
            if data["sensitivity"]["dataset"] not in data["classification"]["datasets"]:
                data["sensitivity"]["dataset"] = ""
        if repeats is not None:
            if repeats < 1:
                raise InputError(f"--repeats must be at least 1, got {repeats}")
            data["classification"]["repeats"] = repeats
            data["sensitivity"]["repeats"] = repeats
        if tasks is not None:
            for task in TASKS:
                if task not in tasks:
                    data[task]["datasets"] = []
            if "sensitivity" not in tasks:
                data["sensitivity"]["dataset"] = ""
        return Config(data, self.source)


def load_config(path: str | Path | None = None, quick: bool = False) -> Config:
    """Read and check a settings file (default: the shipped ``paper.toml``)."""
    if path is None:
        text, source = default_config_text(), "paper.toml (built in)"
    else:
        try:
            text, source = Path(path).read_text(encoding="utf-8"), str(path)
        except OSError as exc:
            raise InputError(f"cannot read the config: {exc.strerror}", path) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", source) from None
    quick_table = data.pop("quick", {})
    if quick:
        data = _merge(data, quick_table)
        source += " with [quick] (a reduced grid: not comparable with the paper)"
    _check(data, source)
    return Config(data, source)


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _check(data: dict, source: str) -> None:
    def fail(problem: str):
        raise InputError(problem, source)

    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        fail(f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_TOP_KEYS))})")
    for key in ("seed", "defaults", "methods", "sensitivity", *TASKS):
        if key not in data:
            fail(f"missing {key!r}")
    if not isinstance(data["seed"], int) or data["seed"] < 0:
        fail("seed must be a non-negative integer")
    methods = data["methods"]
    for name, spec in methods.items():
        model = spec.get("model")
        if model not in MODELS:
            fail(f"methods.{name}.model must be one of {', '.join(MODELS)}, got {model!r}")
        extra = sorted(set(spec) - {"model", "label"} - model_params(model))
        if extra:
            fail(f"methods.{name}: {model} does not take {', '.join(extra)}")
    for task in TASKS:
        table = data[task]
        unknown = sorted(set(table) - _TASK_KEYS[task])
        if unknown:
            fail(f"{task}: unknown key(s) {', '.join(unknown)}")
        for key in ("datasets", "methods"):
            if not isinstance(table.get(key), list):
                fail(f"{task}.{key} must be a list")
        missing = sorted(set(table["methods"]) - set(methods))
        if missing:
            fail(f"{task}.methods: no [methods.X] table for {', '.join(missing)}")
        for dataset, per_method in table.get("settings", {}).items():
            for name, params in per_method.items():
                if name not in methods:
                    fail(f"{task}.settings.{dataset}.{name}: no such method")
                extra = sorted(set(params) - model_params(methods[name]["model"]))
                if extra:
                    fail(f"{task}.settings.{dataset}.{name}: does not take {', '.join(extra)}")
    cls = data["classification"]
    if not cls.get("ratios") or any(not 0 < r < 1 for r in cls["ratios"]):
        fail("classification.ratios must be a list of numbers strictly between 0 and 1")
    if not isinstance(cls.get("repeats"), int) or cls["repeats"] < 1:
        fail("classification.repeats must be a positive integer")
    link = data["link_prediction"]
    if not 0 < link.get("test_fraction", 0) < 1:
        fail("link_prediction.test_fraction must lie strictly between 0 and 1")
    link.setdefault("operator", "weighted_l2")
    for key, allowed in (("heuristics", HEURISTICS), ("cap_to_connected", None)):
        values = link.setdefault(key, [])
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            fail(f"link_prediction.{key} must be a list of names")
        if allowed is not None and set(values) - set(allowed):
            fail(f"link_prediction.{key}: unknown {', '.join(sorted(set(values) - set(allowed)))}"
                 f" (allowed: {', '.join(allowed)})")
    single = cls.setdefault("single_label", [])
    if not isinstance(single, list) or not all(isinstance(v, str) for v in single):
        fail("classification.single_label must be a list of dataset names")
    sens = data["sensitivity"]
    unknown = sorted(set(sens) - _SENSITIVITY_KEYS)
    if unknown:
        fail(f"sensitivity: unknown key(s) {', '.join(unknown)}")
    for kind in ("gauss", "sch"):
        if sens.get(kind) and sens[kind] not in methods:
            fail(f"sensitivity.{kind}: no such method {sens[kind]!r}")
    for key in ("dim", "sigma2", "alpha", "ratios"):
        values = sens.setdefault(key, [])
        if any(not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)) for v in values):
            fail(f"sensitivity.{key} must be a list of positive numbers")
    sens.setdefault("dataset", "")
    sens.setdefault("repeats", cls["repeats"])
