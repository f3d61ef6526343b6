"""The scikit-learn surface: the :class:`~kernelne.model.kernelne.KernelNE` estimator and what
it is made of.

``kernelne`` (the estimator), ``params`` (its parameter table: defaults, rules, command-line
options), ``drivers`` (a fit in memory and a partitioned fit, each ending in a record),
``restarts`` (the training runs of a fit in memory and their restarts),
``fitted`` (the record every fit ends in, from which the fitted attributes are set),
``estimator`` (the base shared with the baselines),
``auto_setting`` (the setting read from the graph and the output scale), ``kernel_choice``
(kernel weights chosen on held-out edges), ``update`` (new nodes without retraining) and
``model_file`` (saved models) with ``model_fields`` (the values a model file's arrays may
hold, checked when it is read). It may import the engine, the partitioned driver, the graphs,
the evaluation and the base modules; never the CLI.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "KernelNE":  # the path of 0.2.0, ``kernelne.model.KernelNE``
        from kernelne.model.kernelne import KernelNE

        return KernelNE
    raise AttributeError(f"module 'kernelne.model' has no attribute {name!r}")
