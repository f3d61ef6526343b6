"""Negatives from a per-walk pool (``negative_pool``): where "auto" turns it on,
that the pool is an i.i.d. sample of the noise distribution and each pair picks from it only,
what a walk's negatives are with a pool of one, how often a bucket renews its pool, quality against
negatives per pair (plain and partitioned fits) and the default left bit for bit unchanged.

Which negatives a walk drew is read from the trainer's ``losses`` output as in
test_loss_options.py: with the linear kernel, one-hot rows ``A_v = e_v``, a learning rate of
~0 (nothing moves) and ``B[u] = sqrt(w_u) * 1``, a negative ``u`` adds ``w_u`` to
``losses[1]`` whatever its center, so ``losses[1]`` is the sum of the drawn nodes' ``w``.
"""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from kernelne import Graph, KernelNE
from kernelne.engine import trainer
from kernelne.engine.kernels import Kernel
from kernelne.engine.sampling import alias_table, stream_state
from kernelne.engine.trainer import (
    DENSE_POOL_SIZE,
    POOL_FROM_NODES,
    POOL_SIZE,
    Noise,
    TrainSettings,
    fill_pool,
    kernel_arrays,
    negative_pool_size,
    next_negatives,
    train_walks,
)
from kernelne.evaluation import evaluate_node_classification
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.parallel import numba_threads
from kernelne.partitioned.driver import train_bucket

TINY_LR = 1e-30


def test_auto_is_the_pool_from_the_large_graph_size_on_and_per_pair_below():
    assert negative_pool_size("auto", POOL_FROM_NODES - 1) == 0
    assert negative_pool_size("auto", POOL_FROM_NODES) == POOL_SIZE
    assert negative_pool_size("auto", POOL_FROM_NODES, dense=True) == DENSE_POOL_SIZE
    assert negative_pool_size("auto", POOL_FROM_NODES - 1, dense=True) == 0
    assert negative_pool_size(64, 10**7, dense=True) == 64
    assert negative_pool_size(0, 10**7) == 0
    assert negative_pool_size(32, 10) == 32


@pytest.mark.parametrize("bad", [-1, 2.5, "big", True, None])
def test_bad_pool_settings_are_refused(bad):
    with pytest.raises(ValueError, match="negative_pool"):
        KernelNE(negative_pool=bad).fit(np.array([[0, 1], [1, 2]]))


@njit
def _pool_and_picks(seed, q, k, rounds, prob, alias, B):
    noise = Noise(prob, alias)
    pool = np.empty(q, np.int64)
    negs = np.empty(k, np.int64)
    ahead = np.empty(k, np.int64)
    pools = np.empty((rounds, q), np.int64)
    picks = np.empty((rounds, 20, k), np.int64)
    state = stream_state(np.uint64(seed), np.uint64(0))
    for r in range(rounds):
        state = fill_pool(state, pool, noise, B)
        pools[r] = pool
        for t in range(20):
            state = next_negatives(state, negs, ahead, noise, B, pool)
            picks[r, t] = negs
    return pools, picks


def test_the_pool_samples_the_noise_and_pairs_pick_from_their_pool_only():
    weights = np.array([1.0, 2.0, 4.0, 8.0, 0.0, 1.0])
    prob, alias = alias_table(weights)
    B = np.zeros((6, 4), np.float32)
    pools, picks = _pool_and_picks(7, 16, 5, 4000, prob, alias, B)
    freq = np.bincount(pools.ravel(), minlength=6) / pools.size
    np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.005)
    for pool, pick in zip(pools[:200], picks[:200], strict=True):
        assert set(pick.ravel()) <= set(pool)
    # each pick is uniform over the pool's slots: its frequencies follow the noise too
    freq_picks = np.bincount(picks.ravel(), minlength=6) / picks.size
    np.testing.assert_allclose(freq_picks, weights / weights.sum(), atol=0.005)


def _drawn_counts(walk_id, pool, negatives, n=5):
    """How often each node was drawn as a negative over one walk ``0..n-1`` (window 2: 14
    pairs) with walk index ``walk_id``: ``losses[1]`` of a run that moves nothing is the sum of
    the drawn nodes' ``w_u = 16^u`` (module docstring; exact in float32), whose base-16 digits
    are the counts."""
    A = np.eye(n, dtype=np.float32)
    w = 16.0 ** np.arange(n)
    B = np.repeat(np.sqrt(w)[:, None], n, axis=1).astype(np.float32)
    losses = np.zeros(2)
    settings = TrainSettings(1e9, 2, negatives, TINY_LR, TINY_LR * 0.5, 0.0, seed=11,
                             negative_pool=pool)
    pairs = train_walks(np.arange(n)[None, :], walk_id, A, B, kernel_arrays([Kernel("linear")]),
                        Noise(*alias_table(np.ones(n))), settings, losses)
    total, counts = int(round(losses[1])), []
    for _ in range(n):
        counts.append(total % 16)
        total //= 16
    assert sum(counts) == pairs * negatives < 16
    return np.array(counts)


@pytest.mark.parametrize("pool", [1, 2, 3])
def test_a_walk_draws_at_most_its_pool_of_distinct_negatives(pool):
    distinct = [np.count_nonzero(_drawn_counts(walk_id, pool, 1)) for walk_id in range(20)]
    assert max(distinct) <= pool
    assert max(distinct) == pool
    per_pair = [np.count_nonzero(_drawn_counts(walk_id, 0, 1)) for walk_id in range(20)]
    assert np.mean(per_pair) > 4  # 14 fresh draws over 5 nodes: 4.8 distinct expected


@pytest.mark.parametrize("shared", [False, True])
def test_a_walks_pool_is_its_own_whatever_walks_train_before_it(shared):
    """Each walk's pool is drawn (and its rows prefetched) while the walk before it trains;
    the pool must still be the walk's own: walks trained together (one thread) leave the rows
    bit for bit as each trained alone, in turn, with its own index."""
    rng = np.random.default_rng(3)
    n, d = 40, 8
    walks = rng.integers(0, n, (12, 7)).astype(np.int32)
    walks[4, 5:] = -1  # a walk that stopped early: fewer pairs than planned
    kernel = kernel_arrays([Kernel("gauss", 1.0)])
    noise = Noise(*alias_table(np.bincount(walks[walks >= 0], minlength=n) ** 0.75))
    settings = TrainSettings(float(walks.size), 3, 2, seed=5, negative_pool=8,
                             shared_negatives=shared)
    A0 = rng.normal(0, 0.3, (n, d)).astype(np.float32)
    together, alone = (A0.copy(), np.zeros((n, d), np.float32)), (A0.copy(),
                                                                  np.zeros((n, d), np.float32))
    with numba_threads(1):
        train_walks(walks, 100, *together, kernel, noise, settings)
        for i in range(len(walks)):
            train_walks(walks[i:i + 1], 100 + i, *alone, kernel, noise, settings)
    np.testing.assert_array_equal(together[0], alone[0])
    np.testing.assert_array_equal(together[1], alone[1])
    assert np.abs(together[1]).sum() > 0


def test_a_buckets_pool_is_renewed_every_l_times_l_minus_1_pairs():
    """P = 2: walks ``[0, 1, -1]`` (length L = 3) have one pair in bucket (0, 1) each; with a
    pool of one slot and k = 1 the 12 pairs draw one negative per L (L - 1) = 6 pairs, so each
    node's count of negatives (read from ``losses[1]`` as above) is a multiple of 6."""
    rows = 5
    A = np.eye(1, rows, dtype=np.float32)  # part 0's block: node 0 is row 0
    w = 16.0 ** np.arange(rows)
    B = np.repeat(np.sqrt(w)[:, None], rows, axis=1).astype(np.float32)
    walks = np.tile(np.array([0, 1, -1], np.int32), (12, 1))
    seen = set()
    for seed in range(10):
        settings = TrainSettings(1e9, 1, 1, TINY_LR, TINY_LR * 0.5, 0.0, seed=seed,
                                 negative_pool=1)
        losses = np.zeros(2)
        with numba_threads(1):
            pairs = train_bucket(walks, np.arange(len(walks)), A, B.copy(), 0, 1, 2,
                                 kernel_arrays([Kernel("linear")]),
                                 Noise(*alias_table(np.ones(rows))), settings, losses)
        total, counts = int(round(losses[1])), []
        for _ in range(rows):
            counts.append(total % 16)
            total //= 16
        assert pairs == 12 and sum(counts) == 12
        assert all(c % 6 == 0 for c in counts), counts
        seen.add(tuple(counts))
    assert len(seen) > 1  # the draws differ between seeds
    assert any(max(c) == 6 for c in seen)  # two draws, not one for all 12 pairs


def _sbm(n=2000, m=12000, k=5, mu=0.3):
    edges, comm = planted_partition_sbm(n, m, k, mu, seed=0)
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=n), comm


def _f1(X, labels):
    table = evaluate_node_classification(X, labels, ratios=[0.5], repeats=3, n_jobs=1)
    return table.value("micro_f1")


def test_a_pool_learns_the_communities_like_negatives_per_pair_plain_and_partitioned():
    g, comm = _sbm()
    fits = {}
    for pool, parts in ((0, 1), (32, 1), (32, 4)):
        model = KernelNE(random_state=0, workers=1, walks_per_node=10, dim=32, sigma=0.5,
                         negative_pool=pool, partitions=parts,
                         propagate=False).fit(g)  # rows as trained, as partitioned
        assert model.negative_pool_ == pool
        fits[pool, parts] = _f1(model.embedding_, comm)
    assert fits[0, 1] > 0.8
    assert fits[32, 1] > fits[0, 1] - 0.02
    assert fits[32, 4] > fits[0, 1] - 0.02


def test_auto_on_a_small_graph_is_the_paper_fit_bit_for_bit():
    g, _ = _sbm(600, 3000, 4, 0.2)
    kw = dict(random_state=3, workers=1, walks_per_node=2, dim=16, sigma=0.5)
    auto = KernelNE(**kw).fit(g)
    paper = KernelNE(negative_pool=0, **kw).fit(g)
    assert auto.negative_pool_ == 0
    np.testing.assert_array_equal(auto.embedding_, paper.embedding_)
    np.testing.assert_array_equal(auto.context_embedding_, paper.context_embedding_)
    pooled = KernelNE(negative_pool=16, **kw).fit(g)
    assert not np.array_equal(pooled.embedding_, paper.embedding_)
    again = KernelNE(negative_pool=16, **kw).fit(g)
    np.testing.assert_array_equal(pooled.embedding_, again.embedding_)


@pytest.mark.parametrize("params, dense", [
    ({}, True),  # mean degree 10: the automatic setting trains the dense setting's values
    ({"kernel": "schoenberg", "window_shrink": True}, True),
    ({"kernel": "schoenberg"}, False),
    ({"setting": "given"}, False),
])
def test_auto_pool_is_the_dense_pool_where_a_run_trains_the_dense_settings_values(
        params, dense, monkeypatch):
    monkeypatch.setattr(trainer, "POOL_FROM_NODES", 100)  # this graph counts as large
    g, _ = _sbm(600, 3000, 4, 0.2)
    kw = dict(random_state=3, workers=1, walks_per_node=2, dim=16, propagate=False, **params)
    auto = KernelNE(**kw).fit(g)
    pool = DENSE_POOL_SIZE if dense else POOL_SIZE
    assert auto.negative_pool_ == pool
    given = KernelNE(negative_pool=pool, **kw).fit(g)  # the run trained with that pool
    np.testing.assert_array_equal(auto.embedding_, given.embedding_)
