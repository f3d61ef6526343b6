"""A diverged fit restarts with the learning rate halved; MKernelNE's weights on the simplex
stay finite whatever the log-likelihood's gradient."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kernelne.errors import TrainingError
from kernelne.graphs.graph import load_graph
from kernelne.model.kernelne import KernelNE

KARATE = Path(__file__).resolve().parents[2] / "examples" / "karate.edgelist"


@pytest.fixture(scope="module")
def karate():
    return load_graph(KARATE)


def linear(lr: float) -> KernelNE:
    """The linear kernel on the karate club diverges at lr 0.4 (and above), not at 0.2."""
    return KernelNE(kernel="linear", lr=lr, min_lr=lr, dim=8, walks_per_node=5, workers=1,
                    random_state=0)


def test_a_diverged_fit_restarts_with_half_the_learning_rate(karate):
    model = linear(0.4).fit(karate)
    assert np.isfinite(model.embedding_).all() and np.isfinite(model.context_embedding_).all()
    assert [r["lr"] for r in model.lr_restarts_] == [pytest.approx(0.4)]
    assert model.lr_restarts_[0]["bad_rows"] == model.lr_restarts_[0]["rows"] == 34
    assert model.fit_lr_ == pytest.approx(0.2) and model.lr == 0.4  # the parameter is kept
    twice = linear(0.8).fit(karate)
    assert [r["lr"] for r in twice.lr_restarts_] == [pytest.approx(0.8), pytest.approx(0.4)]
    assert twice.fit_lr_ == pytest.approx(0.2) and np.isfinite(twice.embedding_).all()
    assert linear(0.2).fit(karate).lr_restarts_ == []


def test_the_fit_summary_says_it_was_restarted(karate):
    from kernelne.cli.options import describe_fit

    model = linear(0.4).fit(karate)
    text = describe_fit(model, karate, model.fit_seconds_)
    assert "diverged   at lr 0.4 (34 of 34 rows NaN or infinite): restarted with lr 0.2" in text


def test_still_diverged_after_two_halvings_is_an_error(karate):
    with pytest.raises(TrainingError, match=r"training diverged: .*it diverged at lr 1000, "
                                            r"500 and 250 \(the learning rate halved"):
        linear(1000.0).fit(karate)


def test_loglik_simplex_weights_do_not_underflow_at_a_large_lr(karate):
    """With B = 0 every kernel value starts near 1: each negative's log-likelihood gradient
    is -50, so at lr 0.3 every weight's unshifted exp(lr 2 g) underflows to 0 (0 / 0: NaN
    rows)."""
    model = KernelNE(kernel="multi", loss="loglik", lr=0.3, dim=8, walks_per_node=10,
                     workers=1, random_state=0).fit(karate)
    assert model.lr_restarts_ == [] and np.isfinite(model.embedding_).all()
    assert np.isfinite(model.beta_).all() and model.beta_.sum() == pytest.approx(1, abs=1e-5)


def test_loglik_simplex_weights_with_shared_negatives_at_the_default_lr(karate):
    """Shared negatives step the weights once per center for all its contexts (up to 2
    window x negatives terms of -50 at the start): at the default lr the unshifted
    exp(lr 2 g) underflows for every weight, on any graph."""
    model = KernelNE(kernel="multi", loss="loglik", shared_negatives=True, dim=8,
                     walks_per_node=10, workers=1, random_state=0).fit(karate)
    assert model.lr_restarts_ == [] and np.isfinite(model.embedding_).all()
    assert model.beta_.sum() == pytest.approx(1, abs=1e-5)


@pytest.mark.parametrize("gbeta, expected", [
    ([-250.0, -250.0, -250.0, -250.0, 1.0], [0.5, 0.5]),  # unshifted: 0 / 0
    ([5000.0, 0.0, 5000.0, 5000.0, 1.0], [1.0, 0.0]),  # unshifted: inf / inf
])
def test_the_simplex_step_stays_on_the_simplex(gbeta, expected):
    from kernelne.engine.trainer import beta_step

    beta = np.array([0.5, 0.5, 0.0, 1e-30, 0.0], dtype=np.float32)
    gbeta = np.array(gbeta, dtype=np.float32)
    beta_step(beta, gbeta, np.float32(0.5), np.float32(0.01), np.float32(1.0), True)
    assert np.isfinite(beta).all() and beta.sum() == pytest.approx(1, abs=1e-6)
    assert beta[2] == 0 and beta[4] == 0 and (gbeta == 0).all()  # a zero weight stays 0
    assert beta[:2] == pytest.approx(expected, abs=1e-6)
