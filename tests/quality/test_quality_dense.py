"""Full-size check (slow): the dense planted-partition graph of docs/COLLAPSE.md.

``kernelne generate 10000 330000 40 0.6 -o dense --seed 1``: measured here, seed 0, Micro-F1
at 50%: paper Gauss 0.90, paper Schoenberg 0.05 (collapsed); robust default 0.9965 (Gauss)
and 0.9961 (Schoenberg). Run with ``python -m pytest -m slow`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import warnings

import pytest

from kernelne import KernelNE, load_graph
from kernelne.engine.diagnostics import DegenerateEmbeddingWarning
from kernelne.evaluation import evaluate_node_classification
from kernelne.graphs.generators import write_planted_partition

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dense(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("dense") / "dense"
    write_planted_partition(prefix, 10000, 330000, 40, 0.6, seed=1)
    return load_graph(f"{prefix}.edges"), f"{prefix}.labels"


def _f1(model, labels):
    return evaluate_node_classification((model.embedding_, model.nodes_), labels,
                                        ratios=[0.5], repeats=3).value("micro_f1")


@pytest.mark.parametrize("kernel", ["gauss", "schoenberg"])
def test_robust_default_on_the_dense_graph(dense, kernel):
    graph, labels = dense
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateEmbeddingWarning)
        model = KernelNE(kernel=kernel, random_state=0).fit(graph)
    assert model.kernel_scale_ > 1 and _f1(model, labels) >= 0.97


def test_paper_schoenberg_collapses_with_a_warning(dense):
    graph, labels = dense
    with pytest.warns(DegenerateEmbeddingWarning, match="collapsed or uninformative"):
        model = KernelNE(kernel="schoenberg", robust=False, random_state=0).fit(graph)
    assert _f1(model, labels) < 0.2
