"""What a search tries: each method's search space (:data:`SEARCH_SPACES`), its documented
defaults (:data:`DEFAULT_CANDIDATES`, tried first) and the estimator a setting makes
(:func:`make_estimator`, :func:`check_settings`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernelne.errors import InputError
from kernelne.model.params import is_auto

#: The subsampling thresholds KernelNE's search tries: off, or word2vec's range (log spaced).
SUBSAMPLE_CHOICES = [0.0, 1e-5, 1e-4, 1e-3]


def _kernelne_space(trial) -> dict[str, Any]:
    kernel = trial.suggest_categorical("kernel", ["gauss", "schoenberg", "multi"])
    params: dict[str, Any] = {"kernel": kernel}
    if kernel == "gauss":
        params["sigma"] = trial.suggest_float("sigma", 0.25, 4.0, log=True)
    elif kernel == "schoenberg":
        params["alpha"] = trial.suggest_float("alpha", 0.5, 8.0, log=True)
    else:
        params["beta_update"] = trial.suggest_categorical("beta_update",
                                                          ["projected", "simplex"])
    params["negatives"] = trial.suggest_int("negatives", 1, 5)
    params["loss"] = trial.suggest_categorical("loss", ["squared", "loglik"])
    params["window"] = trial.suggest_int("window", 2, 10)
    params["window_shrink"] = trial.suggest_categorical("window_shrink", [False, True])
    params["subsample"] = trial.suggest_categorical("subsample", SUBSAMPLE_CHOICES)
    return params


#: ProNE's band-pass filters searched: its own (``on``: order 10, mu 0.2, theta 0.5), with
#: the centre moved or the width changed (:func:`kernelne.engine.propagation.parse_propagation`)
PRONE_FILTERS = ("on", "mu=0.1", "mu=0.5", "theta=0.25", "theta=1")


SEARCH_SPACES: dict[str, Callable[[Any], dict[str, Any]]] = {
    "kernelne": _kernelne_space,
    "deepwalk": lambda t: {"window": t.suggest_int("window", 2, 10)},
    "node2vec": lambda t: {"p": t.suggest_float("p", 0.25, 4.0, log=True),
                           "q": t.suggest_float("q", 0.25, 4.0, log=True)},
    "line": lambda t: {"samples_per_arc": t.suggest_float("samples_per_arc", 50, 2000, log=True)},
    "hope": lambda t: {"beta_ratio": t.suggest_float("beta_ratio", 0.01, 0.95, log=True)},
    "netmf": lambda t: {"window": t.suggest_int("window", 1, 10)},
    "prone": lambda t: {"propagate": t.suggest_categorical("propagate", PRONE_FILTERS)},
}


#: KernelNE's documented defaults, tried first by every KernelNE search: the three kernels with
#: the paper's squared loss and with the kernel log-likelihood (MKernelNE's weights then stay on
#: the simplex), and Schoenberg with shrinking windows, docs/QUALITY.md's setting for dense
#: graphs. Each dict holds the parameters that differ from the constructor's defaults
#: (every other parameter the search space suggests takes the constructor's default; a key the
#: search space does not suggest is passed to the constructor as it is). Adding a default to
#: try is one line here.
KERNELNE_DEFAULTS: tuple[dict[str, Any], ...] = (
    {"kernel": "gauss"},
    {"kernel": "schoenberg"},
    {"kernel": "multi"},
    {"kernel": "gauss", "loss": "loglik"},
    {"kernel": "schoenberg", "loss": "loglik"},
    {"kernel": "multi", "loss": "loglik"},
    {"kernel": "schoenberg", "window_shrink": True},
)


#: The settings each method's search tries first (its documented defaults).
DEFAULT_CANDIDATES: dict[str, tuple[dict[str, Any], ...]] = {
    "kernelne": KERNELNE_DEFAULTS,
    **{name: ({},) for name in ("deepwalk", "node2vec", "line", "hope", "netmf")},
    "prone": ({"propagate": "on"},),
}


class _DefaultsTrial:
    """Stands in for an Optuna trial: each suggestion is the value in ``values``."""

    def __init__(self, values: dict[str, Any]):
        self.values = values

    def _pick(self, name: str, *args, **kwargs) -> Any:
        return self.values[name]

    suggest_categorical = suggest_float = suggest_int = _pick


class _FixedTrial:
    """An Optuna trial whose suggestion of a parameter in ``fixed`` is that value: a fixed
    parameter is not searched (nor recorded by Optuna); the others are suggested by ``trial``."""

    def __init__(self, trial, fixed: dict[str, Any]):
        self.trial, self.fixed = trial, fixed

    def suggest_categorical(self, name: str, *args, **kwargs) -> Any:
        return self._pick("suggest_categorical", name, *args, **kwargs)

    def suggest_float(self, name: str, *args, **kwargs) -> Any:
        return self._pick("suggest_float", name, *args, **kwargs)

    def suggest_int(self, name: str, *args, **kwargs) -> Any:
        return self._pick("suggest_int", name, *args, **kwargs)

    def _pick(self, how: str, name: str, *args, **kwargs) -> Any:
        if name in self.fixed:
            return self.fixed[name]
        return getattr(self.trial, how)(name, *args, **kwargs)


def search_space(method: str, trial, fixed: dict[str, Any] | None = None) -> dict[str, Any]:
    """The constructor parameters :data:`SEARCH_SPACES` suggests for ``trial``, with every
    parameter in ``fixed`` held at its fixed value instead of searched."""
    return SEARCH_SPACES[method](_FixedTrial(trial, fixed) if fixed else trial)


def default_candidates(method: str, fixed: dict[str, Any] | None = None
                       ) -> list[dict[str, Any]]:
    """The method's defaults (:data:`DEFAULT_CANDIDATES`) that agree with ``fixed``: a default
    that sets a fixed parameter to another value is dropped (e.g. the ``loglik`` defaults under
    ``loss="squared"``), and one that ``fixed`` turns into an earlier one (``gauss`` under
    ``loss="loglik"`` is ``gauss,loglik``) is tried once, under the earlier name."""
    fixed = fixed or {}
    kept: list[dict[str, Any]] = []
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for c in DEFAULT_CANDIDATES.get(method, ()):
        if any(k in fixed and fixed[k] != v for k, v in c.items()):
            continue
        params = default_params(method, c, fixed)
        if params not in seen:
            kept.append(c)
            seen.append(params)
    return kept


def default_name(candidate: dict[str, Any]) -> str:
    """A default's short name: its values, a switch by its name (``"gauss,loglik"``,
    ``"schoenberg,window_shrink"``), or ``"default"``."""
    return ",".join(k if v is True else str(v) for k, v in candidate.items()) or "default"


def default_params(method: str, candidate: dict[str, Any],
                   fixed: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(search-space values, extra parameters)`` of a default: the values of the parameters
    :data:`SEARCH_SPACES` suggests (the candidate's, else the constructor's default under
    ``fixed``) and the candidate's other keys, passed to the constructor as they are."""
    values = {**constructor_values(method, {**(fixed or {}), **candidate}), **candidate}
    space = search_space(method, _DefaultsTrial(values), fixed)
    return space, {k: v for k, v in candidate.items() if k not in space}


def constructor_values(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The parameters of :func:`make_estimator`'s estimator, each as a candidate trains it:
    KernelNE's ``"auto"`` defaults at the paper's values (``setting="given"``)."""
    estimator = make_estimator(method, params or {})
    if method == "kernelne":
        from kernelne.model.auto_setting import resolved

        estimator = resolved(estimator)
    return estimator.get_params()


def make_estimator(method: str, params: dict[str, Any]):
    """A fresh estimator of ``method`` with ``params``."""
    if method == "kernelne":
        from kernelne.model.kernelne import KernelNE

        return KernelNE(**{"setting": "given", **params})  # each candidate as it is named
    from kernelne.baselines import make_method

    return make_method(method, ignore_unknown=True, **params)


_COUNTS = ("dim", "walks_per_node", "walk_length", "window", "epochs")


def check_settings(method: str, params: dict[str, Any], n_nodes: int | None = None) -> None:
    """Raise :class:`InputError` if ``method`` cannot fit with ``params`` (e.g. the fixed ones
    and the method's defaults), so that a bad setting fails before the first trial rather
    than inside every one. ``n_nodes``: also check what depends on the graph's size."""
    from kernelne.parallel import resolve_workers

    try:
        est = make_estimator(method, params)
        got = est.get_params()
        for name in _COUNTS:
            if (name in got and got[name] is not None and not is_auto(got[name])
                    and int(got[name]) < 1):
                raise ValueError(f"{name} must be at least 1, got {got[name]}")
        if "workers" in got:
            resolve_workers(got["workers"])
        check = getattr(est, "_check_params", None)
        if check is not None:
            check()
    except (TypeError, ValueError) as exc:
        raise InputError(str(exc)) from None
    if got.get("partition_dir") is not None:
        raise InputError(f"partition_dir={got['partition_dir']}: every trial (and the refit) "
                         "would share one partition folder, and all but the first would be "
                         "refused as another fit's: leave partition_dir out (each partitioned "
                         "trial gets a temporary folder of its own)")
    dim = int(got.get("dim") or 0)
    if method == "hope" and dim % 2:
        raise InputError(f"HOPE needs an even dim (d/2 source + d/2 target), got {dim}")
    if n_nodes is None:
        return
    if method == "hope" and dim // 2 >= n_nodes:
        raise InputError(f"HOPE's dim/2 = {dim // 2} must be smaller than the number of nodes "
                         f"({n_nodes:,}): choose a smaller dim")
    if method in ("netmf", "prone") and dim >= n_nodes:
        name = {"netmf": "NetMF", "prone": "ProNE"}[method]
        raise InputError(f"{name}'s dim = {dim} must be smaller than the number of nodes "
                         f"({n_nodes:,}): choose a smaller dim")

