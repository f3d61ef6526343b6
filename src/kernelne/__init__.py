"""kernelne: Kernel Node Embeddings (KernelNE, MKernelNE), baselines and evaluation.

The names below are loaded on first use (PEP 562), so importing one submodule, as a Dask
worker does to run :func:`kernelne.partitioned.bucket_task`, does not load the estimator,
scikit-learn and the evaluation with it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kernelne._version import __version__

_WHERE = {
    "Graph": "kernelne.graph", "InputError": "kernelne.errors", "KernelNE": "kernelne.model",
    "TrainingError": "kernelne.errors", "WalkCorpus": "kernelne.walks",
    "load_dataset": "kernelne.datasets", "load_embedding": "kernelne.embedding_io",
    "load_graph": "kernelne.graph", "random_walks": "kernelne.walks",
    "read_labels": "kernelne.datasets", "save_embedding": "kernelne.embedding_io",
    "tune": "kernelne.tune",
}

__all__ = [
    "Graph", "InputError", "KernelNE", "TrainingError", "WalkCorpus", "load_dataset",
    "load_embedding", "load_graph", "random_walks", "read_labels", "save_embedding", "tune",
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


if TYPE_CHECKING:
    from kernelne.datasets import load_dataset, read_labels
    from kernelne.embedding_io import load_embedding, save_embedding
    from kernelne.errors import InputError, TrainingError
    from kernelne.graph import Graph, load_graph
    from kernelne.model import KernelNE
    from kernelne.tune import tune
    from kernelne.walks import WalkCorpus, random_walks
