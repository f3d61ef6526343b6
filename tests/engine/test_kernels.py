"""Kernel values at known points and the SGD step's gradient against finite differences."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from gradcheck import numeric_grad
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelne.engine.kernels import (
    GAUSS,
    LINEAR,
    SCHOENBERG,
    Kernel,
    dictionary_arrays,
    kernel_value,
    parse_kernel,
)
from kernelne.engine.trainer import _term

F32 = np.float32


@numba.njit
def _kernel_value(kind, param, s):
    return kernel_value(kind, param, s)


@numba.njit
def _term_jit(a, b, neu, y, lr, lr_reg, linear, kinds, params, beta, kv, rho, loglik):
    return _term(a, b, neu, y, lr, lr_reg, linear, kinds, params, beta, kv, rho, loglik)


def _term_call(a, b, neu, y, lr, lr_reg, linear, kinds, params, beta, kv, rho=1.0,
               loglik=False):
    """``(y - k, ca)`` of :func:`_term` with the squared loss (``loglik``: ``(y - k, ca, g)``)."""
    err, ca, g = _term_jit(a, b, neu, y, lr, lr_reg, linear, kinds, params, beta, kv, F32(rho),
                           loglik)
    return (err, ca, g) if loglik else (err, ca)


def _at_distance(s: float, d: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Two vectors with squared distance ``s``."""
    x = np.linspace(-0.3, 0.4, d)
    y = x.copy()
    y[1] += math.sqrt(s)
    return x, y


# --- values at known points -------------------------------------------------------------------


def test_gauss_known_values():
    k = Kernel("gauss", math.sqrt(2.0))  # paper's sigma^2 = 2
    assert k(*_at_distance(2.0)) == pytest.approx(math.exp(-1.0), rel=1e-12)
    assert k(*_at_distance(0.0)) == pytest.approx(1.0)
    assert Kernel("gauss", 0.5)(*_at_distance(1.0)) == pytest.approx(math.exp(-4.0), rel=1e-12)


def test_schoenberg_known_values():
    assert Kernel("schoenberg", 2.0)(*_at_distance(1.0)) == pytest.approx(0.25, rel=1e-12)
    assert Kernel("schoenberg", 1.0)(*_at_distance(3.0)) == pytest.approx(0.25, rel=1e-12)
    assert Kernel("schoenberg", 0.5)(*_at_distance(8.0)) == pytest.approx(1 / 3, rel=1e-12)


def test_linear_is_the_inner_product():
    x = np.array([[1.0, 2.0, -3.0], [0.5, 0.0, 1.0]])
    y = np.array([[4.0, -1.0, 2.0], [2.0, 7.0, 3.0]])
    np.testing.assert_allclose(Kernel("linear")(x, y), [-4.0, 4.0])


def test_kernel_is_symmetric_and_bounded():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(2, 50, 6))
    for k in (Kernel("gauss", 0.7), Kernel("schoenberg", 1.5)):
        kxy = k(x, y)
        np.testing.assert_allclose(kxy, k(y, x))
        assert np.all((kxy > 0) & (kxy <= 1))
        np.testing.assert_allclose(k(x, x), 1.0)


@pytest.mark.parametrize(
    "kernel",
    [Kernel("gauss", math.sqrt(2)), Kernel("gauss", 0.3), Kernel("schoenberg", 2.0),
     Kernel("schoenberg", 0.5)],
    ids=str,
)
@pytest.mark.parametrize("s", [0.0, 0.01, 0.5, 1.0, 2.0, 7.5])
def test_numba_kernel_value_matches_reference(kernel, s):
    k, dk = _kernel_value(kernel.code, F32(kernel.numba_param), F32(s))
    ref = float(kernel(*_at_distance(s)))
    assert k == pytest.approx(ref, rel=2e-6, abs=1e-12)
    # dk/ds by central differences of the reference in s
    h = 1e-5
    num = (float(kernel(*_at_distance(s + h))) - float(kernel(*_at_distance(max(s - h, 0.0)))))
    num /= (s + h) - max(s - h, 0.0)
    assert dk == pytest.approx(num, rel=1e-3, abs=1e-9)


@settings(max_examples=50, deadline=None)
@given(
    kind=st.sampled_from([GAUSS, SCHOENBERG]),
    param=st.floats(0.1, 5.0),
    s=st.floats(0.0, 50.0),
)
def test_numba_kernel_value_closed_forms(kind, param, s):
    k, dk = _kernel_value(kind, F32(param), F32(s))
    p, s = float(F32(param)), float(F32(s))
    if kind == GAUSS:  # numba param is 1 / sigma^2
        ref, dref = math.exp(-p * s), -p * math.exp(-p * s)
    else:
        ref, dref = (1 + s) ** -p, -p * (1 + s) ** (-p - 1)
    assert k == pytest.approx(ref, rel=1e-5, abs=1e-30)
    assert dk == pytest.approx(dref, rel=1e-5, abs=1e-30)


def test_numba_linear_kernel_passes_the_statistic_through():
    k, dk = _kernel_value(LINEAR, F32(0.0), F32(-1.25))
    assert (k, dk) == (F32(-1.25), F32(1.0))


def test_parse_kernel_and_numba_params():
    g = parse_kernel("gauss:2")
    assert g == Kernel("gauss", 2.0) and g.numba_param == pytest.approx(0.25)
    s = parse_kernel(" Sch:3 ")
    assert s == Kernel("schoenberg", 3.0) and s.numba_param == 3.0
    assert parse_kernel("linear") == Kernel("linear")
    assert str(parse_kernel("gaussian:1.5")) == "gauss:1.5"
    for bad in ("gauss", "gauss:-1", "gauss:0", "sch:abc", "rbf:1", "sch:nan"):
        with pytest.raises(ValueError):
            parse_kernel(bad)


def test_dictionary_arrays():
    kinds, params = dictionary_arrays([Kernel("gauss", 2.0), Kernel("schoenberg", 3.0)])
    assert kinds.tolist() == [GAUSS, SCHOENBERG]
    np.testing.assert_allclose(params, [0.25, 3.0])
    assert params.dtype == np.float32
    with pytest.raises(ValueError):
        dictionary_arrays([])
    with pytest.raises(ValueError):
        dictionary_arrays([Kernel("linear"), Kernel("gauss", 1.0)])


# --- the SGD step against finite differences ---------------------------------------------------

CASES = {
    "gauss": ([Kernel("gauss", math.sqrt(2.0))], [1.0]),
    "gauss-narrow": ([Kernel("gauss", 0.8)], [1.0]),
    "schoenberg": ([Kernel("schoenberg", 2.0)], [1.0]),
    "schoenberg-half": ([Kernel("schoenberg", 0.5)], [1.0]),
    "linear": ([Kernel("linear")], [1.0]),
    "dictionary": ([Kernel("gauss", 1.0), Kernel("schoenberg", 2.0)], [0.3, 0.7]),
}


def _loss(a, b, y, kernels, beta, rho=1.0):
    """The term's loss; distance kernels see ``rho ||a - b||^2`` (``a / sqrt(rho)`` scaling)."""
    r = math.sqrt(rho)
    k = sum(bj * kern(r * a, r * b) for kern, bj in zip(kernels, beta, strict=True))
    return (y - k) ** 2


def _run_term(a, b, y, kernels, beta, lr=1.0, lr_reg=0.0):
    kinds, params = dictionary_arrays(kernels)
    a32, b32 = a.astype(F32), b.astype(F32)
    b_new = b32.copy()
    neu = np.zeros_like(a32)
    kv = np.zeros(len(kernels), F32)
    err, ca = _term_call(
        a32, b_new, neu, F32(y), F32(lr), F32(lr_reg), kinds[0] == LINEAR, kinds, params,
        np.asarray(beta, F32), kv,
    )
    return a32, b32, b_new, neu + ca * a32, kv, err  # a's step: ca * a + the neu part


def _close(got, want, rtol=1e-3):
    err = np.linalg.norm(got - want)
    assert err <= rtol * np.linalg.norm(want) + 1e-7, (got, want)


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("y", [1.0, 0.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_term_gradient_matches_finite_differences(case, y, seed):
    kernels, beta = CASES[case]
    rng = np.random.default_rng(seed)
    d = 8
    a = rng.normal(0, 0.3, d)
    b = rng.normal(0, 0.3, d)
    a32, b32, b_new, neu, kv, err = _run_term(a, b, y, kernels, beta)
    a64, b64 = a32.astype(float), b32.astype(float)  # differentiate at the float32 point

    grad_b = numeric_grad(lambda v: _loss(a64, v, y, kernels, beta), b64)
    grad_a = numeric_grad(lambda v: _loss(v, b64, y, kernels, beta), a64)
    assert np.linalg.norm(grad_a) > 1e-4  # the check below is not vacuous
    _close(b_new.astype(float) - b64, -grad_b)  # lr = 1: b moves by minus the gradient
    _close(neu.astype(float), -grad_a)  # a's step is accumulated, a itself untouched
    np.testing.assert_array_equal(a32, a.astype(F32))

    k_ref = sum(bj * kern(a64, b64) for kern, bj in zip(kernels, beta, strict=True))
    assert err == pytest.approx(y - k_ref, rel=1e-4, abs=1e-6)
    np.testing.assert_allclose(kv, [kern(a64, b64) for kern in kernels], rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("case", ["gauss", "linear", "dictionary"])
def test_term_learning_rate_and_l2_penalty(case):
    kernels, beta = CASES[case]
    rng = np.random.default_rng(7)
    a, b = rng.normal(0, 0.3, (2, 8))
    lr, lr_reg, y = 0.05, 0.01, 1.0
    a32, b32, b_new, neu, _, _ = _run_term(a, b, y, kernels, beta, lr=lr, lr_reg=lr_reg)
    a64, b64 = a32.astype(float), b32.astype(float)
    grad_b = numeric_grad(lambda v: _loss(a64, v, y, kernels, beta), b64)
    grad_a = numeric_grad(lambda v: _loss(v, b64, y, kernels, beta), a64)
    # the penalty applies to b here; a's penalty is applied by the caller after all terms
    _close(b_new.astype(float), b64 - lr * grad_b - lr_reg * b64, rtol=1e-5)
    _close(neu.astype(float), -lr * grad_a)


def test_term_accumulates_into_neu():
    kernels, beta = CASES["gauss"]
    kinds, params = dictionary_arrays(kernels)
    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 0.3, (2, 8)).astype(F32)
    start = rng.normal(size=8).astype(F32)
    neu = start.copy()
    kv = np.zeros(1, F32)
    _term_call(a, b.copy(), neu, F32(1), F32(1), F32(0), False, kinds, params,
               np.ones(1, F32), kv)
    fresh = np.zeros(8, F32)
    _term_call(a, b.copy(), fresh, F32(1), F32(1), F32(0), False, kinds, params,
               np.ones(1, F32), kv)
    np.testing.assert_allclose(neu, start + fresh, rtol=1e-6)


@pytest.mark.parametrize("case", ["gauss", "schoenberg", "dictionary"])
@pytest.mark.parametrize("y", [1.0, 0.0])
def test_term_kernel_scale_gradients_match_finite_differences(case, y):
    """With kernel scale ``rho`` (a robust fit's narrowed kernel): the rows' steps."""
    kernels, beta = CASES[case]
    kinds, params = dictionary_arrays(kernels)
    rng = np.random.default_rng(11)
    a, b = rng.normal(0, 0.3, (2, 8))
    rho = 2.7
    a32, b32 = a.astype(F32), b.astype(F32)
    b_new, neu = b32.copy(), np.zeros(8, F32)
    kv = np.zeros(len(kernels), F32)
    err, ca = _term_call(a32, b_new, neu, F32(y), F32(1), F32(0), False, kinds, params,
                         np.asarray(beta, F32), kv, rho=rho)
    a64, b64 = a32.astype(float), b32.astype(float)
    grad_b = numeric_grad(lambda v: _loss(a64, v, y, kernels, beta, rho), b64)
    grad_a = numeric_grad(lambda v: _loss(v, b64, y, kernels, beta, rho), a64)
    _close(b_new.astype(float) - b64, -grad_b)
    _close((neu + ca * a32).astype(float), -grad_a)
    assert np.linalg.norm(grad_a) > 1e-4
    r = math.sqrt(rho)
    k_ref = sum(bj * kern(r * a64, r * b64) for kern, bj in zip(kernels, beta, strict=True))
    assert err == pytest.approx(y - k_ref, rel=1e-4, abs=1e-6)
