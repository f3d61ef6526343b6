"""Negatives shared by a center's contexts (``shared_negatives``) and the large-graph plumbing.

The shared step is checked against a NumPy reference of the rule in
:func:`kernelne.engine.trainer._train_walk`: each context's positive term, then the center's k
negative terms as one step of weight ``|C|`` (learning rate ``|C| lr``), then one center update.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from kernelne import KernelNE
from kernelne.cli.demo import separation_scores
from kernelne.engine.diagnostics import (
    SHARED_AUC_LIMIT,
    DegenerateEmbeddingWarning,
    EmbeddingHealth,
    warn_if_undertrained,
)
from kernelne.engine.kernels import Kernel, dictionary_arrays
from kernelne.engine.sampling import alias_table
from kernelne.engine.trainer import KernelArrays, Noise, TrainSettings, train_walks
from kernelne.engine.walks import WalkCorpus, count_visits, walk_starts

F32 = np.float32
C = F32(0.5)  # Gaussian 1 / sigma^2 with sigma^2 = 2


def gauss_term(a, b, neu, y, lr, reg):
    """Reference of ``trainer._term`` for the Gaussian kernel (updates ``b`` and ``neu``)."""
    diff = b - a
    k = np.exp(-C * np.dot(diff, diff))
    h = lr * 2 * (y - k) * 2 * (-C * k)
    neu += -h * b
    b[:] = (1 - lr * reg + h) * b - h * a
    return h


def reference(walk, A, B, neg, negatives, window, lr0, total, reg):
    """The shared-negatives rule on one walk, every negative being node ``neg``."""
    n = len(walk)
    for pos in range(n):
        lr = F32(max(lr0 * (1 - pos / total), 0.0))
        ctx = [c for c in range(max(0, pos - window), min(n, pos + window + 1)) if c != pos]
        a = A[walk[pos]]
        neu = np.zeros_like(a)
        ca = F32(0)
        for c in ctx:
            ca += gauss_term(a, B[walk[c]], neu, F32(1), lr, reg)
        w = F32(len(ctx))
        for _ in range(negatives):
            ca += gauss_term(a, B[neg], neu, F32(0), lr * w, reg)
        a[:] = (1 - w * lr * reg + ca) * a + neu


def run_trainer(walk, A, B, neg_weights, negatives, window, lr0, total, reg, shared):
    kinds, params = dictionary_arrays([Kernel("gauss", float(np.sqrt(2.0)))])
    prob, alias = alias_table(neg_weights)
    return train_walks(
        np.array([walk]), 0, A, B, KernelArrays(kinds, params, np.ones(1, F32), np.ones(1, F32)),
        Noise(prob, alias), TrainSettings(total, window, negatives, lr0, 1e-9, reg, 0.0,
                                          shared_negatives=shared, seed=3),
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shared_step_matches_the_weighted_rule(seed):
    rng = np.random.default_rng(seed)
    walk, d = [0, 1, 2, 1], 8
    A = rng.normal(0, 0.4, (5, d)).astype(F32)
    B = rng.normal(0, 0.4, (5, d)).astype(F32)
    A_ref, B_ref = A.copy(), B.copy()
    weights = np.array([0, 0, 0, 0, 1.0])  # every negative is node 4
    pairs = run_trainer(walk, A, B, weights, 3, 2, 0.1, 8.0, 0.01, True)
    reference(walk, A_ref, B_ref, 4, 3, 2, F32(0.1), 8.0, F32(0.01))
    assert pairs == 2 + 3 + 3 + 2  # contexts per center
    np.testing.assert_allclose(A, A_ref, rtol=2e-4, atol=1e-6)
    np.testing.assert_allclose(B, B_ref, rtol=2e-4, atol=1e-6)


def test_with_one_context_per_center_shared_and_per_pair_are_the_same():
    rng = np.random.default_rng(4)
    A0 = rng.normal(0, 0.4, (6, 8)).astype(F32)
    B0 = rng.normal(0, 0.4, (6, 8)).astype(F32)
    weights = np.arange(1.0, 7.0)
    out = []
    for shared in (False, True):
        A, B = A0.copy(), B0.copy()
        run_trainer([0, 1], A, B, weights, 4, 1, 0.05, 2.0, 0.01, shared)
        out.append((A, B))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_walks_of_any_integer_type_train_the_one_compiled_loop():
    """int64 walks (``np.array``'s default) train as the int32 walks the library draws: the
    same rows, and numba keeps one compiled loop (no second compilation, no second cache
    entry) whatever the walks' type."""
    from kernelne.engine.trainer import _train_blocks

    rng = np.random.default_rng(5)
    A0 = rng.normal(0, 0.4, (6, 8)).astype(F32)
    B0 = rng.normal(0, 0.4, (6, 8)).astype(F32)
    kinds, params = dictionary_arrays([Kernel("gauss", 1.0)])
    out = []
    for dtype in (np.int32, np.int64, np.int16):
        A, B = A0.copy(), B0.copy()
        train_walks(np.array([[0, 1, 2, 3, 4, 5]], dtype=dtype), 0, A, B,
                    KernelArrays(kinds, params, np.ones(1, F32), np.ones(1, F32)),
                    Noise(*alias_table(np.ones(6))), TrainSettings(6.0, 2, 2, seed=3))
        out.append((A, B))
    for A, B in out[1:]:
        np.testing.assert_array_equal(A, out[0][0])
        np.testing.assert_array_equal(B, out[0][1])
    assert {sig[0].dtype for sig in _train_blocks.signatures} == {numba.int32}


def test_shared_negatives_change_a_longer_walk(small_graph):
    a = KernelNE(dim=16, walks_per_node=4, workers=1, random_state=0).fit(small_graph)
    b = KernelNE(dim=16, walks_per_node=4, workers=1, random_state=0,
                 shared_negatives=True).fit(small_graph)
    assert a.n_pairs_ == b.n_pairs_
    assert not np.array_equal(a.embedding_, b.embedding_)
    assert np.isfinite(b.embedding_).all()


def test_shared_negatives_separate_planted_groups(planted):
    graph, groups = planted
    quick = {"dim": 16, "walks_per_node": 10, "walk_length": 10, "window": 5, "lr": 0.1}
    for seed in (1, 2):  # measured: ARI 0.895, 0.896; accuracy 0.97, 0.94
        m = KernelNE(**quick, workers=1, random_state=seed, shared_negatives=True).fit(graph)
        scores = separation_scores(m.embedding_, groups, seed=0)
        assert scores["kmeans_ari"] > 0.8, scores
        assert scores["accuracy"] > 0.9, scores


def test_stage_seconds_cover_walks_and_training(small_graph):
    m = KernelNE(dim=16, walks_per_node=4, workers=1, random_state=0).fit(small_graph)
    assert set(m.stage_seconds_) == {"walks", "training"}
    assert all(v > 0 for v in m.stage_seconds_.values())
    assert sum(m.stage_seconds_.values()) <= m.fit_seconds_


def test_count_visits_skips_padding():
    counts = np.zeros(5, np.int64)
    count_visits(np.array([[0, 1, 1, -1], [4, 4, 4, 4]], np.int32), counts)
    count_visits(np.array([[1, -1, -1, -1]], np.int32), counts)
    assert counts.tolist() == [1, 3, 0, 0, 4]


def test_cached_round_permutations_give_the_same_starts():
    seed = np.uint64(11)
    perms: dict = {}
    for first, stop in [(0, 7), (7, 23), (23, 24), (24, 61), (61, 100)]:
        np.testing.assert_array_equal(walk_starts(20, first, stop, seed, perms),
                                      walk_starts(20, first, stop, seed))
    assert len(perms) == 1  # only the current round is kept


def test_walk_corpus_is_independent_of_chunking(small_graph):
    whole = WalkCorpus(small_graph, 3, 6, seed=5, chunk_walks=10_000)
    chunked = WalkCorpus(small_graph, 3, 6, seed=5, chunk_walks=37)
    np.testing.assert_array_equal(np.concatenate([w for _, w in whole]),
                                  np.concatenate([w for _, w in chunked]))


def test_an_undertrained_shared_fit_is_not_silent(planted):
    graph, _ = planted
    with pytest.warns(DegenerateEmbeddingWarning, match="undertrained.*--walks-per-node"):
        m = KernelNE(dim=16, walks_per_node=10, workers=1, random_state=0,
                     shared_negatives=True).fit(graph)
    assert m.health_.neighbour_auc < SHARED_AUC_LIMIT  # measured 0.557


def test_the_undertrained_warning_needs_a_low_auc():
    assert not warn_if_undertrained(EmbeddingHealth(0.93, 0.1, 0.1), 80)
    with pytest.warns(DegenerateEmbeddingWarning, match="with 10 walks per node"):
        assert warn_if_undertrained(EmbeddingHealth(0.52, 0.1, 0.1), 10)
    assert not warn_if_undertrained(EmbeddingHealth(0.52, 4.0, 0.1), 10)  # a shell instead
