"""The setting ``KernelNE(setting="auto")`` chooses from the graph, and the scale of its rows.

**The setting.** On sparse graphs the paper's setting (Gaussian kernel, squared loss, every
context in the window weighted 1) is within noise of the best of ``kernelne tune``'s seven
defaults; on dense graphs the Schoenberg kernel with shrinking windows (:data:`DENSE_SETTING`)
is far ahead, before and after the spectral propagation that ``propagate="auto"`` adds there.
So an automatic fit trains with the dense setting where the graph's mean degree is at least
:data:`~kernelne.engine.propagation.AUTO_MIN_DEGREE` (:func:`dense_by_degree`, the bound from
which ``propagate="auto"`` propagates), and below it starts with the paper's setting: if the
robust restart test (:mod:`kernelne.engine.robust`) sees the wide Gaussian's rows collapse onto
a shell after 5% of the run (heavy-tailed graphs), it restarts with the dense setting instead
of a narrower Gaussian. The evidence is read from the graph itself without labels: its mean
degree, or the test's own figures (offset ratio and neighbour AUC of the rows). A restart costs
the 5% of the run before it, as a narrowing restart does; a fit whose test finds no shell costs
nothing more. If the dense setting's rows form a shell too, its kernel is narrowed as usual.

The choice applies only while the parameters it reads are not given: ``kernel``, ``sigma``,
``loss`` and ``window_shrink`` at their default ``"auto"`` (and ``kernels``, ``beta_select`` at
theirs; :func:`chooses`). A value given is used as given, the paper's value too
(``kernel="gauss"`` on a dense graph trains the Gaussian). ``setting="given"`` always uses the
parameters as given, a partitioned fit too; there, as in the paper's setting, ``"auto"`` is
:data:`PAPER_SETTING`'s value. ``setting_["params"]`` holds the value each ``"auto"`` took,
``setting_["given"]`` the automatic setting's parameters that were given.

**The scale.** With ``normalize="auto"`` the rows (``embedding_`` and ``context_embedding_``)
are multiplied by one factor ``s`` (``output_scale_``) so that the median row norm of
``embedding_`` is :data:`OUTPUT_NORM`. One factor for all rows keeps the geometry: distances
and inner products scale by ``s`` and ``s^2``, cosines and nearest neighbours, k-means
clusters and every ranking are unchanged; the trained kernel's values are those of the rows
divided by ``s``. What changes is how hard an L2-regularised linear model (logistic
regression at ``C = 1``, the paper's protocol) shrinks its weights: scaling the rows by ``s``
is the same as scaling ``C`` by ``s^2``. The dense setting's rows have a median norm of about
0.6 as trained (regularised as if ``C`` were about 17 times smaller than at 2.5), the paper's
setting's 1.5-1.9 on sparse graphs. 2.5 was chosen on Cora, CiteSeer and three planted
partitions as the norm at which C = 1 comes closest to C chosen per split in the worst case,
at d = 128 (docs/QUALITY.md, "The output scale").
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from kernelne.engine.propagation import AUTO_MIN_DEGREE
from kernelne.engine.robust import NARROWING
from kernelne.model.params import PARAMS, is_auto, param

#: ``KernelNE(setting=...)``: choose from the graph, or use the parameters as given
SETTINGS = param("setting").rule.choices
#: ``KernelNE(normalize=...)``: rescale the rows to :data:`OUTPUT_NORM`, or keep them as trained
NORMALIZE = param("normalize").rule.choices
#: the value each parameter left at ``"auto"`` takes in the paper's setting (and wherever the
#: automatic choice does not apply)
PAPER_SETTING: dict[str, Any] = {"kernel": "gauss", "sigma": math.sqrt(2.0), "loss": "squared",
                                 "window_shrink": False, "walks_per_node": 80}
#: the parameters an automatic fit switches to when the restart test finds the shell
DENSE_SETTING: dict[str, Any] = {"kernel": "schoenberg", "window_shrink": True}
#: the parameters that must be at their defaults for the automatic choice to apply (the rows
#: of :data:`kernelne.model.params.PARAMS` marked ``auto``)
CHOICE_DEFAULTS: dict[str, Any] = {row.name: row.default for row in PARAMS if row.auto}
#: ``walks_per_node="auto"`` on a large dense graph: from this many nodes (and a mean degree of
#: at least :data:`~kernelne.engine.propagation.AUTO_MIN_DEGREE`) an automatic fit makes
#: :data:`LARGE_GRAPH_WALKS` walks per node instead of the paper's 80
LARGE_GRAPH_NODES = 100_000
#: walks per node of an automatic fit on a large dense graph: on planted partitions of 10^5
#: nodes and mean degree 20, Micro-F1 at 20 walks is within .004 of 80 walks' (docs/QUALITY.md,
#: rule 6), at a quarter of the pairs
LARGE_GRAPH_WALKS = 20
#: the kernel scale (on ``||x - y||^2``) an automatic fit of a large dense graph starts at: the
#: dense setting's kernel narrowed once, as the restart test narrowed it in every such fit
#: measured (docs/QUALITY.md, rule 6)
LARGE_GRAPH_SCALE = NARROWING
#: median row norm of ``embedding_`` with ``normalize="auto"``
OUTPUT_NORM = 2.5
#: rows the median norm is estimated from (a seeded sample on larger graphs)
NORM_SAMPLE = 100_000


def chooses(model) -> bool:
    """Whether ``model``'s fit may switch to :data:`DENSE_SETTING`.

    Parameters
    ----------
    model : KernelNE
        The estimator.

    Returns
    -------
    bool
        ``setting="auto"``, the robust restart on, a fit in memory (``partitions=1``), and
        every parameter of :data:`CHOICE_DEFAULTS` at its default (none of them given).
    """
    if model.setting != "auto" or not model.robust or int(model.partitions) > 1:
        return False
    return all(_at_default(getattr(model, name), default)
               for name, default in CHOICE_DEFAULTS.items())


def _at_default(value: Any, default: Any) -> bool:
    if is_auto(default):
        return is_auto(value)
    if default is None or isinstance(default, str):
        return value is None if default is None else (isinstance(value, str)
                                                      and value == default)
    if isinstance(default, float):
        return isinstance(value, (int, float)) and math.isclose(value, default)
    return isinstance(value, (bool, np.bool_)) and bool(value) == default


def start_params(model) -> dict[str, Any]:
    """The values the parameters of ``model`` left at ``"auto"`` take at the start of a fit:
    those of :data:`PAPER_SETTING` (the dense setting replaces two of them where it applies).

    Parameters
    ----------
    model : KernelNE
        The estimator.

    Returns
    -------
    dict
        ``{name: value}`` of every parameter at ``"auto"``; empty if none is.
    """
    return {name: value for name, value in PAPER_SETTING.items()
            if is_auto(getattr(model, name, None))}


def resolved(model):
    """``model`` with every ``"auto"`` parameter at its :func:`start_params` value (itself if
    none is): the parameters a run trains with before any switch."""
    params = start_params(model)
    return with_params(model, params) if params else model


def given_params(model) -> list[str]:
    """The automatic setting's parameters (:data:`CHOICE_DEFAULTS`) that ``model`` was given:
    the names of those not at their default, in the table's order."""
    return [name for name, default in CHOICE_DEFAULTS.items()
            if not _at_default(getattr(model, name), default)]


def walk_budget(model, n_nodes: int, mean_degree: float | None) -> tuple[int, str | None]:
    """The walks per node a fit of ``model`` makes, and why (None: as given).

    ``walks_per_node="auto"`` takes :data:`LARGE_GRAPH_WALKS` where ``setting="auto"``
    trains in memory (``partitions=1``) a graph of at least :data:`LARGE_GRAPH_NODES` nodes
    whose mean degree (None: not measured) is at least
    :data:`~kernelne.engine.propagation.AUTO_MIN_DEGREE`: there the quality of the default
    saturates well before the paper's 80 walks, which every other ``"auto"`` fit makes
    (:data:`PAPER_SETTING`).

    Parameters
    ----------
    model : KernelNE
        The estimator.
    n_nodes : int
        Nodes of the graph.
    mean_degree : float or None
        Its mean degree (:func:`~kernelne.engine.propagation.mean_degree`).

    Returns
    -------
    (int, str or None)
        The walks per node and the reason for an ``"auto"`` value.
    """
    if not is_auto(model.walks_per_node):
        return int(model.walks_per_node), None
    paper = int(PAPER_SETTING["walks_per_node"])
    if model.setting != "auto" or int(model.partitions) > 1 or mean_degree is None:
        return paper, f"auto: {paper}, the paper's"
    large = large_dense(n_nodes, mean_degree)
    if large is not None:
        return LARGE_GRAPH_WALKS, f"auto: {LARGE_GRAPH_WALKS} ({large})"
    return paper, f"auto: {paper}, the paper's ({n_nodes:,} nodes, mean degree {mean_degree:.1f})"


def start_scale(model, n_nodes: int, mean_degree: float | None) -> tuple[float, str | None]:
    """The kernel scale ``rho`` (on ``||x - y||^2``) a fit of ``model`` starts at, and why
    (None: 1, the kernel as given).

    :data:`LARGE_GRAPH_SCALE` where the automatic setting chooses (:func:`chooses`) and
    trains the dense setting from the start (:func:`dense_by_degree`) on a graph of at least
    :data:`LARGE_GRAPH_NODES` nodes: there the restart test narrowed ``sch:1`` by
    :data:`~kernelne.engine.robust.NARROWING` in every fit measured, after a fifth of the
    pairs or less, so the run before it was lost work. The restart test still looks and may
    narrow further; a kernel or ``alpha`` given starts as given.

    Parameters
    ----------
    model : KernelNE
        The estimator.
    n_nodes : int
        Nodes of the graph.
    mean_degree : float or None
        Its mean degree (None: not measured, the automatic choice does not apply).

    Returns
    -------
    (float, str or None)
        The scale and the reason for a scale other than 1.
    """
    large = large_dense(n_nodes, mean_degree)
    if (large is None or not chooses(model)
            or not _at_default(model.alpha, param("alpha").default)):
        return 1.0, None
    return LARGE_GRAPH_SCALE, (f"kernel scale {LARGE_GRAPH_SCALE:g} from the start ({large}: "
                               "the restart test narrowed the dense setting's kernel on such "
                               "graphs)")


def large_dense(n_nodes: int, mean_degree: float | None) -> str | None:
    """Why a graph is large and dense for :func:`walk_budget` and :func:`start_scale` (at
    least :data:`LARGE_GRAPH_NODES` nodes and :func:`dense_by_degree`), one phrase, or None
    if it is not (or its mean degree was not measured)."""
    if n_nodes < LARGE_GRAPH_NODES or not dense_by_degree(mean_degree):
        return None
    return (f"{n_nodes:,} nodes >= {LARGE_GRAPH_NODES:,}, mean degree {mean_degree:.1f} >= "
            f"{AUTO_MIN_DEGREE:g}")


def dense_by_degree(mean_degree: float | None) -> bool:
    """Whether an automatic fit trains with :data:`DENSE_SETTING` from the start: the graph's
    mean degree (:func:`~kernelne.engine.propagation.mean_degree`; None: not measured, the
    choice does not apply) is at least :data:`~kernelne.engine.propagation.AUTO_MIN_DEGREE`,
    the bound from which ``propagate="auto"`` propagates too."""
    return mean_degree is not None and mean_degree >= AUTO_MIN_DEGREE


def fitted_params(model):
    """The parameters ``model``'s rows were trained with: the estimator's, or a copy with
    ``setting_["params"]`` applied (the values its ``"auto"`` parameters took, the dense
    setting's where an automatic fit switched) and any ``"auto"`` left at its
    :func:`start_params` value (for training more rows against them,
    :func:`kernelne.model.update.partial_fit`).

    Parameters
    ----------
    model : KernelNE
        A fitted estimator.

    Returns
    -------
    KernelNE
        ``model`` itself or the copy.
    """
    params = getattr(model, "setting_", {}).get("params")
    return resolved(with_params(model, params) if params else model)


def with_params(model, params: dict[str, Any]):
    """A shallow copy of ``model`` with ``params`` set: the parameters a run trains with (the
    estimator's own stay as the user set them).

    Parameters
    ----------
    model : KernelNE
        The estimator.
    params : dict
        Parameter names and values, e.g. :data:`DENSE_SETTING`.

    Returns
    -------
    KernelNE
        The copy.
    """
    copied = copy.copy(model)
    for name, value in params.items():
        setattr(copied, name, value)
    return copied


def describe_setting(model, switched_at: dict | None, checked: bool,
                     mean_degree: float | None = None) -> dict[str, Any]:
    """``setting_``: the name of the setting a fit kept, its parameters and the evidence.

    Parameters
    ----------
    model : KernelNE
        The estimator.
    switched_at : dict or None
        The restart test that found the shell (a ``shell_checks_`` entry), None if none did.
    checked : bool
        Whether the restart test ran (it needs enough pairs and rows).
    mean_degree : float or None
        The graph's mean degree where the automatic setting applies (None elsewhere); from
        :data:`~kernelne.engine.propagation.AUTO_MIN_DEGREE` up, the fit trained with the
        dense setting from the start.

    Returns
    -------
    dict
        ``name`` ("paper", "dense" or "given"), ``params`` (the value each parameter left at
        ``"auto"`` took: the parameters that differ from the estimator's), ``given`` (the
        names of the automatic setting's parameters given, :func:`given_params`) and
        ``evidence`` (one sentence).
    """
    start, given = start_params(model), given_params(model)
    dense = {**start, **DENSE_SETTING}
    if dense_by_degree(mean_degree):
        return {"name": "dense", "params": dense, "given": given,
                "evidence": f"mean degree {mean_degree:.1f} >= {AUTO_MIN_DEGREE:g}"}
    if switched_at is not None:
        return {"name": "dense", "params": dense, "given": given,
                "evidence": (f"the restart test found the rows collapsing after "
                             f"{switched_at['at_pairs']:,} pairs (offset ratio "
                             f"{switched_at['offset_ratio']:.1f}, neighbour AUC "
                             f"{switched_at['neighbour_auc']:.2f}), as on dense graphs")}
    if chooses(model):
        degree = "" if mean_degree is None else (f"mean degree {mean_degree:.1f} < "
                                                 f"{AUTO_MIN_DEGREE:g} and ")
        return {"name": "paper", "params": start, "given": given,
                "evidence": degree + ("the restart test found no shell, as on sparse graphs"
                                      if checked else "too few pairs or rows for the restart test")}
    why = ("setting='given'" if model.setting != "auto"
           else "a partitioned fit" if int(model.partitions) > 1
           else "no restart test (robust=False)" if not model.robust
           else ", ".join(given) + " given")
    return {"name": "given", "params": start, "given": given,
            "evidence": f"the parameters as given ({why})"}


def output_scale(A: np.ndarray, seed: int = 0) -> float:
    """The factor that brings the median row norm of ``A`` to :data:`OUTPUT_NORM`.

    Parameters
    ----------
    A : ndarray of shape (n, d)
        The rows (a memory map is read in a sample of :data:`NORM_SAMPLE` rows).
    seed : int, default 0
        Seed of the sample.

    Returns
    -------
    float
        ``OUTPUT_NORM / median_i ||A_i||`` over the non-zero rows; 1.0 if every row is zero
        or not finite.
    """
    n = len(A)
    if n > NORM_SAMPLE:
        rows = np.sort(np.random.default_rng(seed).choice(n, NORM_SAMPLE, replace=False))
        A = A[rows]
    norms = np.sqrt(np.einsum("ij,ij->i", A, A))  # no n x d temporary
    norms = norms[np.isfinite(norms) & (norms > 0)]
    if not len(norms):
        return 1.0
    return float(OUTPUT_NORM / np.median(norms))


def scale_rows(A: np.ndarray, s: float, chunk: int = 65_536) -> None:
    """Multiply ``A`` by ``s`` in place, ``chunk`` rows at a time (a memory map is never
    read whole).

    Parameters
    ----------
    A : ndarray of shape (n, d)
        Writable rows (float32).
    s : float
        The factor.
    chunk : int, default 65536
        Rows per step.
    """
    factor = np.float32(s)
    for lo in range(0, len(A), chunk):
        A[lo:lo + chunk] *= factor
    if hasattr(A, "flush"):
        A.flush()
