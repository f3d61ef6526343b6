"""kernelne: Kernel Node Embeddings (KernelNE, MKernelNE), baselines and evaluation."""

from kernelne._version import __version__
from kernelne.datasets import load_dataset, read_labels
from kernelne.embedding_io import load_embedding, save_embedding
from kernelne.errors import InputError, TrainingError
from kernelne.graph import Graph, load_graph
from kernelne.model import KernelNE
from kernelne.tune import tune
from kernelne.walks import WalkCorpus, random_walks

__all__ = [
    "Graph", "InputError", "KernelNE", "TrainingError", "WalkCorpus", "load_dataset",
    "load_embedding", "load_graph", "random_walks", "read_labels", "save_embedding", "tune",
    "__version__",
]
