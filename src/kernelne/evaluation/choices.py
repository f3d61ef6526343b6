"""The evaluation protocols' fixed choices: the paper's training ratios, the grid of the
classifiers' ``C``, the prediction rules and the edge operators.

They live in a module of their own, without scikit-learn, so that the command line can name
them in its options' choices, defaults and help without loading the protocols
(:mod:`kernelne.evaluation.classification` and :mod:`kernelne.evaluation.linkpred` use them
under the same names).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: the training ratios of the paper's node-classification tables
PAPER_RATIOS = (0.02, 0.04, 0.06, 0.08, 0.1, 0.3, 0.5, 0.7, 0.9)
#: the ``C`` values a classifier's regularisation is chosen among (``select_C``)
SELECT_CS = (0.01, 0.1, 1.0, 10.0, 100.0)
#: the multi-label prediction rules of node classification
RULES = ("top-k", "threshold", "non-oracle")
#: how each rule is named in outputs: the top-k rule reads each test node's true label count
RULE_NAMES = {"top-k": "top-k, oracle label count", "threshold": "p > 0.5",
              "non-oracle": "p > 0.5 or the most probable"}
#: the edge operators of link prediction: the features of a pair of rows ``x``, ``y``
OPERATORS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "weighted_l2": lambda x, y: (x - y) ** 2,
    "hadamard": lambda x, y: x * y,
    "average": lambda x, y: (x + y) / 2,
    "l1": lambda x, y: np.abs(x - y),
}
