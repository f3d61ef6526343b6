"""The record of a fitted model, from which its fitted attributes are set.

Every way a :class:`~kernelne.model.kernelne.KernelNE` gets its rows (a fit in memory, a
partitioned fit, :meth:`~kernelne.model.kernelne.KernelNE.partial_fit` and
:meth:`~kernelne.model.kernelne.KernelNE.load_model`) ends in a :class:`FitRecord` and one call
of :func:`set_fitted`, which sets the attribute ``NAME_`` of every field ``NAME`` the record
holds and ``n_features_in_``. A field left at :data:`NOT_SET` is not written (a model file
does not hold a fit's health figures, say); ``None`` is a value (``walks_`` of a fit that
kept no walks). :func:`record_of` reads the record back from a fitted model; a model file
holds its first group of fields (:mod:`kernelne.model.model_file`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

NOT_SET: Any = type("NotSet", (), {"__repr__": lambda self: "NOT_SET"})()


@dataclass
class FitRecord:
    """The fitted state of a model: the rows and what they were fitted with.

    The first group (the rows, their ids, the kernels and weights, the walk counts and
    degrees, how the graph was read, the output factor, the setting, the spectral
    propagation applied (None: none), the rows as trained before it (None: not
    propagated) and the fingerprints of the nodes' neighbour sets
    (:func:`~kernelne.graphs.neighbours.neighbour_hashes`)) is what a model file keeps; the
    second describes one training run.
    """

    embedding: np.ndarray
    context_embedding: np.ndarray
    nodes: np.ndarray
    kernels: list
    beta: np.ndarray
    kernel_scale: float
    beta_update: str
    walk_counts: np.ndarray
    degrees: np.ndarray
    directed: bool | None
    output_scale: float = 1.0
    setting: Any = NOT_SET
    propagation: Any = NOT_SET
    trained_embedding: Any = NOT_SET
    neighbour_hashes: Any = NOT_SET
    # one training run
    health: Any = NOT_SET
    narrowed: Any = NOT_SET
    shell_checks: Any = NOT_SET
    beta_history: Any = NOT_SET
    n_pairs: Any = NOT_SET
    loss_history: Any = NOT_SET
    n_walks: Any = NOT_SET
    isolated_nodes: Any = NOT_SET
    negative_pool: Any = NOT_SET
    walks: Any = NOT_SET
    graph_summary: Any = NOT_SET
    fit_seconds: Any = NOT_SET

    def updated(self, **changes: Any) -> FitRecord:
        """A copy with ``changes`` (field name -> value)."""
        return replace(self, **changes)


def set_fitted(model: Any, record: FitRecord) -> None:
    """Set ``model``'s fitted attributes from ``record``: ``NAME_`` for every field ``NAME``
    not :data:`NOT_SET`, and ``n_features_in_`` (the number of nodes)."""
    for f in fields(record):
        value = getattr(record, f.name)
        if value is not NOT_SET:
            setattr(model, f.name + "_", value)
    model.n_features_in_ = len(record.nodes)


def record_of(model: Any) -> FitRecord:
    """The record of a fitted ``model`` (fields whose attribute it lacks are
    :data:`NOT_SET`; the output factor of a model without one is 1)."""
    values = {f.name: getattr(model, f.name + "_", NOT_SET) for f in fields(FitRecord)}
    if values["output_scale"] is NOT_SET:
        values["output_scale"] = 1.0
    if values["directed"] is NOT_SET:
        values["directed"] = None
    return FitRecord(**values)
