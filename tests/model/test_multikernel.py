"""MKernelNE (docs/METHOD.md §4): the trainer's step in A, B and beta against finite differences,
the one-kernel dictionary against the single-kernel model, non-negative weights, the beta penalty.

The trainer-level checks run :func:`kernelne.engine.trainer.train_walks` on one walk ``[0, 1]`` with
window 1, one negative (always node 2) and ``total_centers = 1``, ``min_lr = 0``: the second
center's learning rate is then 0, so exactly one (center, context) pair moves the parameters.
That pair's loss is ``L = (1 - k(a, b+))^2 + k(a, b-)^2`` with ``k = sum_j beta_j k_j`` and the
step is ``x -> x - lr (grad_x L + penalty)`` for x in {a, b+, b-} (penalty ``reg x``) and for
``beta`` (penalty ``beta_reg beta``, then projection onto ``beta >= 0``).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from gradcheck import numeric_grad
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelne import KernelNE
from kernelne.engine.kernels import Kernel, dictionary_arrays, parse_kernel
from kernelne.engine.sampling import alias_table
from kernelne.engine.trainer import KernelArrays, Noise, TrainSettings, train_walks
from kernelne.graphs.graph import from_networkx

F32 = np.float32
SMALL = {"dim": 16, "walks_per_node": 5, "walk_length": 8, "window": 3, "negatives": 3}

DICTIONARIES = {
    "gauss+sch": ["gauss:1", "sch:2"],
    "three-mixed": ["gauss:0.7", "gauss:2", "sch:1"],
    "five": ["gauss:1", "gauss:1.41421", "gauss:3", "sch:0.5", "sch:2"],
}
WEIGHTS = {"gauss+sch": [0.3, 0.7], "three-mixed": [0.2, 1.3, 0.05],
           "five": [0.1, 0.4, 0.2, 0.6, 0.15]}


# --- one pair through the trainer ---------------------------------------------------------------


def one_pair(kernels, beta, A, B, lr=0.1, reg=0.0, beta_reg=0.0):
    """Run the trainer on the single pair (center 0, context 1, negative 2); new (A, B, beta)."""
    kinds, params = dictionary_arrays(kernels)
    prob, alias = alias_table(np.array([0.0, 0.0, 1.0]))
    A, B = A.astype(F32), B.astype(F32)
    beta = np.asarray(beta, F32).copy()
    pairs = train_walks(
        np.array([[0, 1]]), 0, A, B, KernelArrays(kinds, params, beta, np.ones(1, F32)),
        Noise(prob, alias), TrainSettings(1.0, 1, 1, lr, 0.0, reg, beta_reg, True, seed=5),
    )
    assert pairs == 2  # the second pair has learning rate 0
    return A, B, beta


def pair_loss(a, bpos, bneg, kernels, beta):
    def k(x, y):
        return sum(bj * kern(x, y) for kern, bj in zip(kernels, beta, strict=True))

    return (1.0 - k(a, bpos)) ** 2 + k(a, bneg) ** 2


def rows(seed: int, d: int = 8, spread: float = 0.4) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(0, spread, (3, d)).astype(F32), rng.normal(0, spread, (3, d)).astype(F32)


def assert_close(got, want, rtol=2e-3):
    got, want = np.asarray(got, float), np.asarray(want, float)
    assert np.linalg.norm(got - want) <= rtol * np.linalg.norm(want) + 1e-7, (got, want)


@pytest.mark.parametrize("name", list(DICTIONARIES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_pair_step_matches_finite_differences(name, seed):
    kernels = [parse_kernel(s) for s in DICTIONARIES[name]]
    beta = np.asarray(WEIGHTS[name], F32)
    A, B = rows(seed)
    lr = 0.02
    A1, B1, beta1 = one_pair(kernels, beta, A, B, lr=lr)
    assert np.all(beta1 > 0)  # the projection is not active here
    a, bp, bn = (x.astype(float) for x in (A[0], B[1], B[2]))
    b64 = beta.astype(float)

    g_beta = numeric_grad(lambda v: pair_loss(a, bp, bn, kernels, v), b64)
    g_a = numeric_grad(lambda v: pair_loss(v, bp, bn, kernels, b64), a)
    g_bp = numeric_grad(lambda v: pair_loss(a, v, bn, kernels, b64), bp)
    g_bn = numeric_grad(lambda v: pair_loss(a, bp, v, kernels, b64), bn)
    assert min(map(np.linalg.norm, (g_beta, g_a, g_bp, g_bn))) > 1e-4  # not vacuous
    assert_close(beta1 - b64, -lr * g_beta)
    assert_close(A1[0] - a, -lr * g_a)
    assert_close(B1[1] - bp, -lr * g_bp)
    assert_close(B1[2] - bn, -lr * g_bn)
    np.testing.assert_array_equal(A1[1:], A[1:])  # only the center row moves
    np.testing.assert_array_equal(B1[0], B[0])


def test_beta_step_is_the_documented_formula():
    """``beta_j += lr (2 sum_terms (y - k) k_j - beta_reg beta_j)``, with L2 penalties on."""
    kernels = [parse_kernel(s) for s in DICTIONARIES["three-mixed"]]
    beta = np.asarray(WEIGHTS["three-mixed"], F32)
    A, B = rows(4)
    lr, beta_reg = 0.05, 0.3
    _, _, beta1 = one_pair(kernels, beta, A, B, lr=lr, reg=0.01, beta_reg=beta_reg)
    kpos = np.array([k(A[0], B[1]) for k in kernels])
    kneg = np.array([k(A[0], B[2]) for k in kernels])
    grad = (1 - beta @ kpos) * kpos + (0 - beta @ kneg) * kneg
    np.testing.assert_allclose(beta1, beta + lr * (2 * grad - beta_reg * beta), rtol=1e-5)


def test_beta_is_projected_onto_the_non_negative_orthant():
    """A step that would make a weight negative stops at exactly 0; the others follow the step."""
    kernels = [Kernel("gauss", 0.5), Kernel("gauss", 3.0)]
    A, B = rows(5)
    B[2] = A[0]  # the negative sits on the center: k_j = 1, a strong push down for every beta_j
    beta = np.array([0.01, 2.0], F32)
    _, _, beta1 = one_pair(kernels, beta, A, B, lr=0.1, beta_reg=0.0)
    kpos = np.array([k(A[0], B[1]) for k in kernels])
    unprojected = beta + 0.1 * 2 * ((1 - beta @ kpos) * kpos - beta.sum())
    assert unprojected[0] < 0 < unprojected[1]
    assert beta1[0] == 0.0
    assert beta1[1] == pytest.approx(unprojected[1], rel=1e-5)


# --- the estimator --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "single"),
    [("gauss:1.5", {"kernel": "gauss", "sigma": 1.5}),
     ("sch:2", {"kernel": "schoenberg", "alpha": 2.0})],
)
def test_one_kernel_dictionary_is_the_single_kernel_model(small_graph, spec, single):
    multi = KernelNE(kernel="multi", kernels=[spec], **SMALL, random_state=3, workers=1)
    one = KernelNE(**single, **SMALL, random_state=3, workers=1)
    multi.fit(small_graph)
    one.fit(small_graph)
    np.testing.assert_array_equal(multi.embedding_, one.embedding_)
    np.testing.assert_array_equal(multi.context_embedding_, one.context_embedding_)
    np.testing.assert_array_equal(multi.beta_, [1.0])
    assert multi.beta_history_.shape == (1, 1) and multi.kernels_ == one.kernels_


KERNEL_SPECS = st.one_of(
    st.floats(0.2, 4.0).map(lambda s: Kernel("gauss", s)),
    st.floats(0.2, 4.0).map(lambda a: Kernel("schoenberg", a)),
)


@settings(max_examples=15, deadline=None)
@given(
    kernels=st.lists(KERNEL_SPECS, min_size=2, max_size=6),
    beta_reg=st.sampled_from([0.0, 0.01, 1.0, 50.0]),
    lr=st.sampled_from([0.025, 0.2, 1.0]),
    seed=st.integers(0, 2**31),
)
def test_weights_are_never_negative(small_graph, kernels, beta_reg, lr, seed):
    m = KernelNE(kernel="multi", kernels=kernels, beta_reg=beta_reg, lr=lr, **SMALL,
                 random_state=seed, workers=1).fit(small_graph)
    assert m.beta_history_.shape[1] == len(kernels) and len(m.beta_history_) >= 2
    assert np.all(np.isfinite(m.beta_history_)) and np.all(np.isfinite(m.beta_))
    assert np.all(m.beta_history_ >= 0) and np.all(m.beta_ >= 0)
    np.testing.assert_allclose(m.beta_history_[0], 1 / len(kernels))  # documented start


def fitted_weights(graph, beta_reg: float, **kwargs) -> np.ndarray:
    m = KernelNE(kernel="multi", kernels=["gauss:1", "gauss:2", "sch:1"], beta_reg=beta_reg,
                 **{**SMALL, **kwargs}, random_state=0, workers=1)
    return m.fit(graph).beta_


def test_penalty_shrinks_the_weights(small_graph):
    sums = [fitted_weights(small_graph, r).sum() for r in (0.0, 0.1, 1.0, 10.0)]
    assert np.all(np.diff(sums) < 0), sums


def test_huge_penalty_drives_the_weights_to_zero():
    tiny = from_networkx(nx.cycle_graph(12))
    free = fitted_weights(tiny, 0.0, walks_per_node=2)
    crushed = fitted_weights(tiny, 35.0, walks_per_node=2)  # lr * beta_reg = 0.875 < 1
    assert crushed.sum() < 0.5 * free.sum(), (crushed, free)
    assert fitted_weights(tiny, 1e6, walks_per_node=2).sum() < 1e-3  # 0, or one step from 0


@pytest.mark.parametrize("g1", [-45.0, -80.0])
def test_simplex_step_sets_a_vanishing_weight_to_zero_not_subnormal(g1):
    """A weight the mirror-descent step drives below 1e-30 (here to about 1e-40, float32's
    subnormal range, where every multiplication takes the CPU's slow path) is set to 0; the
    others are renormalised."""
    from kernelne.engine.trainer import beta_step

    beta = np.array([0.5, 0.5], F32)
    gbeta = np.array([0.0, g1], F32)
    beta_step(beta, gbeta, F32(1.0), F32(0.0), F32(1.0), True)
    assert beta[1] == 0.0 and beta[0] == 1.0
    assert not np.any((beta > 0) & (beta < np.finfo(F32).tiny))
