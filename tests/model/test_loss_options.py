"""The loss and context-weighting options: ``loss="loglik"`` against finite
differences for every kernel, word2vec's shrinking window and frequent-node subsampling as
the trainer applies them, reproducibility, and rejected values.

The window and subsampling checks read which pairs the trainer formed from its ``losses``
output: with the linear kernel, no negatives and a learning rate of ~0 (nothing moves), node
``v``'s row of ``A`` is the unit vector ``e_v`` and ``B[u, v]`` is the kernel value of the pair
(center ``v``, context ``u``); a pair adds ``(1 - B[u, v])^2`` to ``losses[0]``, so setting
``B[u, v] = 0`` on the pairs of interest and 1 elsewhere makes ``losses[0]`` their count.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from gradcheck import numeric_grad
from test_multikernel import assert_close, rows

from kernelne import KernelNE
from kernelne.engine.kernels import Kernel, dictionary_arrays
from kernelne.engine.sampling import alias_table
from kernelne.engine.trainer import (
    LOGLIK_MAX,
    LOGLIK_MIN,
    KernelArrays,
    Noise,
    TrainSettings,
    keep_probabilities,
    train_walks,
)


def _test_module(folder: str, name: str):
    """The test module ``tests/<folder>/<name>.py``, loaded by path: the test folders are not
    packages, and ``folder`` is on ``sys.path`` only once pytest has collected a file in it."""
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).resolve().parents[1] / folder / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_kernel_tests = _test_module("engine", "test_kernels")
CASES, _close, _term_call = _kernel_tests.CASES, _kernel_tests._close, _kernel_tests._term_call

F32 = np.float32
TINY_LR = 1e-30  # rows do not move: the losses count pairs


def _k(a, b, kernels, beta):
    return sum(bj * kern(a, b) for kern, bj in zip(kernels, beta, strict=True))


def _loglik(a, b, y, kernels, beta):
    k = _k(a, b, kernels, beta)
    return -math.log(k) if y == 1.0 else -math.log(1.0 - k)


def _rows_with_kernel_inside_the_clip(case, seed, d=8):
    """Rows whose kernel value lies well inside ``[LOGLIK_MIN, LOGLIK_MAX]`` (finite
    differences are only valid off the clip)."""
    kernels, beta = CASES[case]
    rng = np.random.default_rng(seed)
    for _ in range(1000):
        a = rng.normal(0, 0.5, d)
        b = rng.normal(0, 0.5, d) if kernels[0].kind != "linear" else a * rng.uniform(0.5, 3)
        k = _k(a.astype(F32).astype(float), b.astype(F32).astype(float), kernels, beta)
        if 0.05 < k < 0.9:
            return a, b
    raise AssertionError("no rows found")


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("y", [1.0, 0.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_loglik_term_gradient_matches_finite_differences(case, y, seed):
    kernels, beta = CASES[case]
    kinds, params = dictionary_arrays(kernels)
    a, b = _rows_with_kernel_inside_the_clip(case, seed)
    a32, b32 = a.astype(F32), b.astype(F32)
    b_new, neu = b32.copy(), np.zeros_like(a32)
    kv = np.zeros(len(kernels), F32)
    err, ca, g = _term_call(a32, b_new, neu, F32(y), F32(1), F32(0), kinds[0] == 2, kinds,
                            params, np.asarray(beta, F32), kv, loglik=True)
    a64, b64 = a32.astype(float), b32.astype(float)
    grad_b = numeric_grad(lambda v: _loglik(a64, v, y, kernels, beta), b64)
    grad_a = numeric_grad(lambda v: _loglik(v, b64, y, kernels, beta), a64)
    assert np.linalg.norm(grad_a) > 1e-4
    _close(b_new.astype(float) - b64, -grad_b)  # lr = 1: b moves by minus the gradient
    _close((neu + ca * a32).astype(float), -grad_a)
    k = _k(a64, b64, kernels, beta)
    assert err == pytest.approx(y - k, rel=1e-4, abs=1e-6)  # bookkeeping: still y - k
    # g = -1/2 dloss/dk: the kernel weights' gradient factor
    assert g == pytest.approx(0.5 / k if y else -0.5 / (1 - k), rel=1e-4)


@pytest.mark.parametrize("y", [1.0, 0.0])
def test_loglik_clips_the_kernel_value(y):
    """A negative on top of its center (k = 1) and a linear positive with k <= 0: the
    derivative is taken at the clipped value, so the step stays finite."""
    a = np.linspace(-0.3, 0.4, 8).astype(F32)
    if y == 0.0:  # gauss, b = a: k = 1 > LOGLIK_MAX
        kinds, params = dictionary_arrays([Kernel("gauss", 1.0)])
        b = a.copy()
        want = -0.5 / (1 - float(LOGLIK_MAX))
    else:  # linear, b = -a: k < 0 < LOGLIK_MIN
        kinds, params = dictionary_arrays([Kernel("linear")])
        b = -a
        want = 0.5 / float(LOGLIK_MIN)
    kv = np.zeros(1, F32)
    neu = np.zeros(8, F32)
    b_new = b.copy()
    _, _, g = _term_call(a, b_new, neu, F32(y), F32(0.01), F32(0), kinds[0] == 2, kinds,
                         params, np.ones(1, F32), kv, loglik=True)
    assert g == pytest.approx(want, rel=1e-5)
    assert np.isfinite(b_new).all() and np.isfinite(neu).all()


def test_loglik_one_pair_with_kernel_weights_matches_finite_differences():
    """MKernelNE: one pair (context and one negative) through the trainer, rows and beta."""
    kernels = [Kernel("gauss", 1.0), Kernel("schoenberg", 2.0), Kernel("gauss", 2.0)]
    beta = np.array([0.2, 0.5, 0.3], F32)
    kinds, params = dictionary_arrays(kernels)
    A, B = rows(4, spread=0.3)
    prob, alias = alias_table(np.array([0.0, 0.0, 1.0]))
    lr = 0.05
    A1, B1, beta1 = A.copy(), B.copy(), beta.copy()
    pairs = train_walks(
        np.array([[0, 1]]), 0, A1, B1, KernelArrays(kinds, params, beta1, np.ones(1, F32)),
        Noise(prob, alias), TrainSettings(1.0, 1, 1, lr, 0.0, 0.0, 0.0, True, seed=5,
                                          loglik=True),
    )
    assert pairs == 2  # the second pair has learning rate 0
    a, bp, bn, b64 = (A[0].astype(float), B[1].astype(float), B[2].astype(float),
                      beta.astype(float))

    def loss(a, bp, bn, w):
        return (-math.log(_k(a, bp, kernels, w)) - math.log(1 - _k(a, bn, kernels, w)))

    assert 0.05 < _k(a, bp, kernels, b64) < 0.95 and 0.05 < _k(a, bn, kernels, b64) < 0.95
    assert_close(A1[0] - A[0], -lr * numeric_grad(lambda v: loss(v, bp, bn, b64), a))
    assert_close(B1[1] - B[1], -lr * numeric_grad(lambda v: loss(a, v, bn, b64), bp))
    assert_close(B1[2] - B[2], -lr * numeric_grad(lambda v: loss(a, bp, v, b64), bn))
    assert_close(beta1 - beta, -lr * numeric_grad(lambda v: loss(a, bp, bn, v), b64))


# --- which pairs the trainer forms ---------------------------------------------------------


def _count_pairs(walks, n, mark, window=5, shrink=False, keep=None, seed=3):
    """Pairs (center v, context u) with ``mark[u, v]`` among those the trainer forms."""
    A = np.eye(n, dtype=F32)
    B = np.where(mark, F32(0), F32(1)).astype(F32)  # B[u, v]: kernel of (v, u)
    kinds, params = dictionary_arrays([Kernel("linear")])
    prob, alias = alias_table(np.ones(n))
    losses = np.zeros(2)
    settings = TrainSettings(1e12, window, 0, TINY_LR, TINY_LR, 0.0, seed=seed,
                             window_shrink=shrink)
    pairs = train_walks(walks, 0, A, B, KernelArrays(kinds, params, np.ones(1, F32),
                                                     np.ones(1, F32)),
                        Noise(prob, alias), settings, losses, keep=keep)
    return losses[0], pairs


def test_window_shrink_weighs_a_context_by_its_distance():
    """Shrunk windows: a context at distance j is used with probability (w - j + 1) / w."""
    window, length, n_walks = 5, 11, 3000
    walks = np.tile(np.arange(length, dtype=np.int32), (n_walks, 1))  # node id = position
    full, shrunk = [], []
    for j in range(1, window + 1):
        mark = np.zeros((length, length), bool)
        for v in range(length - j):
            mark[v + j, v] = mark[v, v + j] = True
        full.append(_count_pairs(walks, length, mark, window)[0])
        shrunk.append(_count_pairs(walks, length, mark, window, shrink=True)[0])
    full, shrunk = np.array(full), np.array(shrunk)
    np.testing.assert_array_equal(full, [2 * (length - j) * n_walks for j in range(1, 6)])
    ratio = shrunk / full
    np.testing.assert_allclose(ratio, [(window - j + 1) / window for j in range(1, 6)],
                               atol=0.02)
    assert np.all(np.diff(ratio) < 0)  # nearer contexts are more frequent
    # every pair of the shrunk run is one of the full run's: the marked counts add up
    assert shrunk.sum() == _count_pairs(walks, length, np.ones((length, length), bool),
                                        window, shrink=True)[1]


def test_subsampling_drops_frequent_nodes_more():
    """Node 0 fills half of every walk: its occurrences are dropped far more often than a
    rare node's, at the rate min(1, sqrt(t / f)) of word2vec."""
    rng = np.random.default_rng(0)
    n, length, n_walks = 41, 20, 3000
    walks = rng.integers(1, n, (n_walks, length)).astype(np.int32)
    walks[:, ::2] = 0
    counts = np.bincount(walks.ravel(), minlength=n)
    t = 0.01
    keep = keep_probabilities(counts, t)
    freq = counts / counts.sum()
    np.testing.assert_allclose(keep, np.minimum(1, np.sqrt(t / freq)), rtol=1e-6)
    assert keep[0] < 0.2 and keep[1:].min() > 0.7
    as_center = np.zeros((n, n), bool)
    centers = {}
    for v in (0, 5):
        mark = as_center.copy()
        mark[:, v] = True  # every pair whose center is v
        full, _ = _count_pairs(walks, n, mark, window=1)
        sub, _ = _count_pairs(walks, n, mark, window=1, keep=keep)
        centers[v] = sub / full
    # a center survives with keep[v]; its surviving neighbours are the same mix for both
    ratio = centers[0] / centers[5]
    assert ratio == pytest.approx(keep[0] / keep[5], rel=0.15)
    assert ratio < 0.3


@pytest.mark.filterwarnings("ignore::kernelne.engine.diagnostics.DegenerateEmbeddingWarning")
def test_options_that_change_nothing_leave_the_fit_bit_for_bit(small_graph):
    """Window 1 shrunk is window 1, a threshold above every frequency keeps every node: the
    options' random streams do not touch the negatives' or the walks'."""
    base = {"dim": 8, "walks_per_node": 2, "walk_length": 6, "window": 1, "workers": 1,
            "random_state": 3}
    plain = KernelNE(**base).fit(small_graph).embedding_
    for extra in ({"window_shrink": True}, {"subsample": 0.999}):
        np.testing.assert_array_equal(KernelNE(**base, **extra).fit(small_graph).embedding_,
                                      plain)


@pytest.mark.filterwarnings("ignore::kernelne.engine.diagnostics.DegenerateEmbeddingWarning")
@pytest.mark.parametrize("extra", [{"loss": "loglik"}, {"window_shrink": True},
                                   {"subsample": 1e-2}])
def test_options_are_reproducible_and_change_the_fit(small_graph, extra):
    base = {"dim": 8, "walks_per_node": 2, "walk_length": 6, "window": 3, "workers": 1,
            "random_state": 3}
    plain = KernelNE(**base).fit(small_graph).embedding_
    one = KernelNE(**base, **extra).fit(small_graph).embedding_
    np.testing.assert_array_equal(KernelNE(**base, **extra).fit(small_graph).embedding_, one)
    assert not np.array_equal(one, plain)
    other = KernelNE(**{**base, "random_state": 4}, **extra).fit(small_graph).embedding_
    assert not np.array_equal(one, other)


@pytest.mark.parametrize("bad", [{"loss": "hinge"}, {"loss": None}, {"window_shrink": "yes"},
                                 {"subsample": -1e-3}, {"subsample": 1.0},
                                 {"subsample": float("nan")}, {"subsample": "often"}])
def test_bad_values_are_rejected(small_graph, bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        KernelNE(dim=4, walks_per_node=1, **bad).fit(small_graph)


def test_keep_probabilities_off_and_unseen_nodes():
    assert keep_probabilities(np.array([3, 4]), 0.0).shape == (0,)
    keep = keep_probabilities(np.array([0, 10, 90]), 0.05)
    assert keep[0] == 1.0  # a node the walks never visit
    assert keep[1] == pytest.approx(math.sqrt(0.5))
    assert keep[2] == pytest.approx(math.sqrt(0.05 / 0.9))
    assert keep_probabilities(np.array([1, 1]), 0.6).tolist() == [1.0, 1.0]


@pytest.mark.filterwarnings("ignore::kernelne.engine.diagnostics.DegenerateEmbeddingWarning")
def test_cli_options_reach_the_model_and_its_file(tmp_path, capsys):
    from kernelne.cli.app import main

    path = tmp_path / "ring.txt"
    path.write_text("\n".join(f"{i}\t{(i + 1) % 12}" for i in range(12)))
    out, model_file = tmp_path / "emb.npy", tmp_path / "model.npz"
    assert main(["embed", str(path), "-o", str(out), "--model-out", str(model_file), "--dim",
                 "8", "--walks-per-node", "4", "--walk-length", "6", "--window", "3",
                 "--seed", "1", "--workers", "1", "--loss", "loglik", "--window-shrink",
                 "--subsample", "0.05"]) == 0
    assert "options    loss loglik, shrinking windows, subsample 0.05" in capsys.readouterr().out
    back = KernelNE.load_model(model_file)
    assert (back.loss, back.window_shrink, back.subsample) == ("loglik", True, 0.05)
    with pytest.raises(SystemExit):
        main(["embed", str(path), "-o", str(out), "--loss", "hinge"])


@pytest.mark.filterwarnings("ignore::kernelne.engine.diagnostics.DegenerateEmbeddingWarning")
@pytest.mark.parametrize("parts", [1, 2])
def test_loglik_keeps_mkernelne_weights_on_the_simplex(small_graph, parts):
    """The log-likelihood reads the mixed kernel as a probability: its weights sum to 1 even
    with the default projected step, which lets them grow past 1 under the squared loss."""
    kw = dict(kernel="multi", dim=8, walks_per_node=4, workers=1, random_state=0,
              partitions=parts)
    loglik = KernelNE(loss="loglik", **kw).fit(small_graph)
    assert loglik.beta_update_ == "simplex"
    assert loglik.beta_.sum() == pytest.approx(1.0, abs=1e-4)
    squared = KernelNE(robust=False, **kw).fit(small_graph)  # 4 walks: the half-way look
    assert squared.beta_update_ == "projected"  # would see the weights shrink and restart
    assert abs(squared.beta_.sum() - 1.0) > 1e-3
