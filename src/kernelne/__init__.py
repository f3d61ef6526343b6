"""kernelne: Kernel Node Embeddings (KernelNE, MKernelNE), baselines and evaluation.

The names below are loaded on first use (PEP 562), so importing one submodule, as a Dask
worker does to run :func:`kernelne.partitioned.buckets.bucket_task`, does not load the estimator,
scikit-learn and the evaluation with it.

The package is laid out by role (``CONTRIBUTING.md`` has the table): ``cli``, ``model``,
``engine``, ``partitioned``, ``graphs``, ``evaluation``, ``tune``, ``baselines`` and
``reproduce``. The flat module paths of 0.2.0 (``kernelne.kernels``, ``kernelne.graph``, ...)
still import, with a :class:`DeprecationWarning`, until 0.4."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import TYPE_CHECKING, Any

from kernelne._version import __version__

_WHERE = {
    "Graph": "kernelne.graphs.graph", "InputError": "kernelne.errors",
    "KernelNE": "kernelne.model.kernelne",
    "TrainingError": "kernelne.errors", "WalkCorpus": "kernelne.engine.walks",
    "load_dataset": "kernelne.graphs.datasets", "load_embedding": "kernelne.embedding_io",
    "load_graph": "kernelne.graphs.graph", "random_walks": "kernelne.engine.walks",
    "propagate": "kernelne.model.enhance",
    "read_labels": "kernelne.graphs.datasets", "save_embedding": "kernelne.embedding_io",
    "tune": "kernelne.tune.search",
}

__all__ = [
    "Graph", "InputError", "KernelNE", "TrainingError", "WalkCorpus", "load_dataset",
    "load_embedding", "load_graph", "propagate", "random_walks", "read_labels",
    "save_embedding", "tune",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'kernelne' has no attribute {name!r}")
    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


#: the module paths of 0.2.0 and where each module lives now
MOVED_MODULES = {
    "kernelne.auto_setting": "kernelne.model.auto_setting",
    "kernelne.cli_grammar": "kernelne.cli.grammar",
    "kernelne.cli_options": "kernelne.cli.options",
    "kernelne.compiling": "kernelne.engine.compiling",
    "kernelne.datasets": "kernelne.graphs.datasets",
    "kernelne.demo": "kernelne.cli.demo",
    "kernelne.diagnostics": "kernelne.engine.diagnostics",
    "kernelne.edgelist_fast": "kernelne.graphs.edgelist_fast",
    "kernelne.estimator": "kernelne.model.estimator",
    "kernelne.evaluation.cli": "kernelne.cli.evaluate",
    "kernelne.generators": "kernelne.graphs.generators",
    "kernelne.graph": "kernelne.graphs.graph",
    "kernelne.graph_npz": "kernelne.graphs.npz",
    "kernelne.kernel_choice": "kernelne.model.kernel_choice",
    "kernelne.kernels": "kernelne.engine.kernels",
    "kernelne.model_file": "kernelne.model.model_file",
    "kernelne.partition_store": "kernelne.partitioned.store",
    "kernelne.plot": "kernelne.evaluation.plot",
    "kernelne.prefetch": "kernelne.engine.prefetch",
    "kernelne.reproduce.cli": "kernelne.cli.reproduce",
    "kernelne.robust": "kernelne.engine.robust",
    "kernelne.round_walks": "kernelne.partitioned.rounds",
    "kernelne.rows": "kernelne.engine.rows",
    "kernelne.sampling": "kernelne.engine.sampling",
    "kernelne.trainer": "kernelne.engine.trainer",
    "kernelne.update": "kernelne.model.update",
    "kernelne.userdocs": "kernelne.cli.docs",
    "kernelne.validation_scores": "kernelne.evaluation.validation",
    "kernelne.walks": "kernelne.engine.walks",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports a 0.2.0 module path as the module that now holds its code, with a warning."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED_MODULES:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        new = MOVED_MODULES[spec.name]
        warnings.warn(f"{spec.name} is deprecated and goes in kernelne 0.4: import {new}",
                      DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module) -> None:
        """Nothing to run: :meth:`create_module` returned the module, already loaded."""


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.append(_MovedModules())


if TYPE_CHECKING:
    from kernelne.embedding_io import load_embedding, save_embedding
    from kernelne.engine.walks import WalkCorpus, random_walks
    from kernelne.errors import InputError, TrainingError
    from kernelne.graphs.datasets import load_dataset, read_labels
    from kernelne.graphs.graph import Graph, load_graph
    from kernelne.model.enhance import propagate
    from kernelne.model.kernelne import KernelNE
    from kernelne.tune.search import tune
