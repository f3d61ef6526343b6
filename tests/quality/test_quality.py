"""End-to-end quality on the paper's citation graphs (docs/METHOD.md §13; the quality bar).

Default KernelNE settings, Gaussian kernel with the paper's sigma^2 = 2, one worker (so the
fits are bit-for-bit repeatable), Micro-F1 at a 50% training ratio from a one-vs-rest
liblinear logistic regression (C = 1) over 10 seeded splits. Marked ``long``: CI runs them
after the default suite (``python -m pytest -m long``). Measured here: Cora 0.815-0.825
over embedding seeds 0..7 (mean 0.821), so the bar is checked on the mean of seeds 0, 1, 2;
CiteSeer 0.612-0.614. The authors' C++ code gives 0.827 and 0.616, the paper 0.830 and 0.615.
"""

from __future__ import annotations

import numpy as np
import pytest

from kernelne import KernelNE
from kernelne.evaluation import evaluate_node_classification
from kernelne.graphs.datasets import load_dataset

pytestmark = pytest.mark.long  # full fits of Cora and CiteSeer: after the default suite


def micro_f1_at_half(name: str, seed: int, **params) -> float:
    ds = load_dataset(name)
    model = KernelNE(kernel="gauss", sigma=np.sqrt(2.0), workers=1, random_state=seed, **params)
    model.fit(ds.graph)
    table = evaluate_node_classification(
        model.embedding_, ds.labels, ratios=[0.5], repeats=10, seed=0, n_jobs=2
    )
    return next(r.mean for r in table.rows if r.metric == "micro_f1")


def test_cora_micro_f1_at_half_reaches_the_authors_level():
    scores = [micro_f1_at_half("cora", seed) for seed in (0, 1, 2)]
    assert np.mean(scores) >= 0.82, scores


def test_citeseer_micro_f1_at_half_reaches_the_authors_level():
    assert micro_f1_at_half("citeseer", 0) >= 0.605


def test_shared_negatives_cost_little_on_cora():
    """Measured (seeds 0, 1, 2): 0.8226, 0.8213, 0.8191 (per pair: 0.8234, 0.8269, 0.8290)."""
    assert micro_f1_at_half("cora", 0, shared_negatives=True) >= 0.81
