"""The robust restart's test (kernelne/robust.py): its verdicts and when it looks."""

import numpy as np
import pytest

from kernelne.engine import robust
from kernelne.engine.diagnostics import EmbeddingHealth
from kernelne.engine.robust import AUC_RISE, SECOND_LOOK, look_due, shell_figures


def reading(monkeypatch, offset: float, auc: float, previous: dict | None = None,
            pairs: int = 1000, measured: bool = True) -> dict | None:
    """The test's verdict on rows whose health reads (offset ratio, neighbour AUC)."""
    monkeypatch.setattr(robust, "embedding_health",
                        lambda *args: EmbeddingHealth(auc, offset, 0.1, measured=measured))
    rows = np.zeros((4, 2), dtype=np.float32)
    return shell_figures(rows, rows, np.zeros(5, np.int64), np.zeros(0, np.int64),
                         np.ones(4, bool), np.ones(1, np.float32), 1.0, pairs,
                         previous=previous)


def test_the_shell_fires_at_once_and_a_healthy_reading_is_not_doubtful(monkeypatch):
    assert reading(monkeypatch, 2.5, 0.60)["collapsing"]
    assert reading(monkeypatch, 1.5, 0.50)["collapsing"]
    healthy = reading(monkeypatch, 0.4, 0.60)
    assert not healthy["collapsing"] and not healthy["doubtful"]
    assert not reading(monkeypatch, 1.5, 0.90)["doubtful"]
    assert reading(monkeypatch, 1.5, 0.50, measured=False) is None  # too few rows: no verdict


def test_a_doubtful_reading_is_the_shell_only_if_the_auc_stalls(monkeypatch):
    first = reading(monkeypatch, 1.6, 0.60)
    assert first["doubtful"] and not first["collapsing"]
    stalled = reading(monkeypatch, 1.7, 0.60 + AUC_RISE / 2, previous=first)
    assert stalled["collapsing"]
    learning = reading(monkeypatch, 1.7, 0.60 + 2 * AUC_RISE, previous=first)
    assert not learning["collapsing"]
    assert not reading(monkeypatch, 0.8, 0.60, previous=first)["collapsing"]  # off the shell


def test_the_first_look_waits_for_enough_pairs_or_half_the_run():
    total, min_pairs = 100, 2000
    assert not look_due(4, total, 5000, min_pairs, [])  # before 5%
    assert look_due(5, total, 5000, min_pairs, [])
    assert not look_due(30, total, 1500, min_pairs, [])  # too few pairs, before half
    assert look_due(50, total, 1500, min_pairs, [])  # ... half-way: look anyway
    assert not look_due(51, total, 1e9, min_pairs, [])  # never after half
    assert look_due(50, 101, 1500, min_pairs, [])  # an odd count: the step before half
    assert not look_due(1, 1, 1e9, min_pairs, [])  # one chunk: no step before its end


@pytest.mark.parametrize("doubtful", [True, False])
def test_a_second_look_only_after_a_doubtful_first_one(doubtful):
    first = {"doubtful": doubtful, "collapsing": False, "at_pairs": 3000}
    total, min_pairs = 100, 2000
    assert not look_due(10, total, SECOND_LOOK * 3000 - 1, min_pairs, [first])
    assert look_due(11, total, SECOND_LOOK * 3000, min_pairs, [first]) == doubtful
    assert look_due(50, total, 4000, min_pairs, [first]) == doubtful  # half-way
    assert not look_due(20, total, 1e9, min_pairs, [first, {**first, "doubtful": True}])
