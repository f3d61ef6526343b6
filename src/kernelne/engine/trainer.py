"""The KernelNE SGD loop (numba): negative sampling on the squared kernel loss.

For each walk, each center ``v = w_l`` and each context ``u+ = w_c`` with ``0 < |c - l| <= gamma``,
one SGD step is taken on (docs/METHOD.md §1-§2; GlobalSIP 2019, eq. 7)

    (1 - k(A_v, B_u+))^2 + sum over k negatives u- ~ p-:  k(A_v, B_u-)^2

plus the L2 penalty ``lambda/2 (||A_v||^2 + ||B_u||^2)`` on the updated rows. With the label
``y`` (1 for the context, 0 for a negative) each term ``(y - k)^2`` has gradient
``-2 (y - k) grad k``; :func:`_term` is that update, written once: the kernel (dictionary) is the
only thing that varies. For distance kernels ``k = f(s)``, ``s = ||a - b||^2``:
``grad_b k = 2 f'(s) (b - a) = -grad_a k``; for the linear kernel ``grad_b k = a``,
``grad_a k = b``.
The center row is updated after its k + 1 terms, as in word2vec and the authors' code.

Options (docs/METHOD.md §2, §5): ``loglik`` replaces each term by ``-log k`` (context) or
``-log(1 - k)`` (negative) with ``k`` clipped (:func:`_term`; only the factor ``dloss/dk``
changes); ``window_shrink`` draws each center's window uniformly in ``1..gamma``; ``keep``
(:func:`train_walks`) subsamples frequent nodes. Their draws come from a per-walk stream of
their own, so the negatives, and the default results, do not change.

The learning rate decays linearly with the number of processed centers,
``lr_t = max(lr (1 - t / T), min_lr)`` with ``T`` the corpus size times the number of epochs.

Multiple kernels (MKernelNE): ``k = sum_j beta_j k_j``; with ``learn_beta``, after each pair the
weights take the step ``beta_j += lr (2 sum_terms (y - k) k_j - lambda_beta beta_j)`` (the
gradient of the pair's k + 1 terms plus the L2 penalty, as in the authors' code) and are
projected onto ``beta >= 0`` (the authors' code lets them go negative).

Frozen rows (:func:`train_walks`' ``rates``, for adding nodes to a trained model): row ``v`` of
``A`` and ``B`` takes ``rates[v]`` times its step, ``x <- x + r_v (x' - x)`` with ``x'`` the
plain SGD update (so ``r_v = 0`` never writes it, ``r_v = 1`` is the plain step). A row with
``0 < r_v < 1`` of ``B`` is stepped in a scratch copy by :func:`_term` and blended back. A term
whose center and context (or negative) rows are both frozen is skipped, as is a pair whose
center and context rows are (only its negatives could learn from it); skipped terms are not in
``losses``.

Negative pool (``negative_pool = Q > 0``, the large-graph default; docs/METHOD.md §8): each
walk's ``Q`` nodes are drawn from the noise distribution by its own generator while the walk
before it trains, and their rows of ``B`` are prefetched spread over that walk's pairs; each
pair then draws its k negatives uniformly from that pool. Every negative is
still a draw from the noise distribution (the pool is an i.i.d. sample of it), but a walk reads
``Q`` random rows of ``B`` instead of k per pair (about 450 on a walk of 10 with window 10): on
graphs whose rows do not fit in cache the random rows are the cost of the paper's step.

Each walk's negatives come from a generator seeded by ``(seed, walk index)``; rows are updated
lock-free (Hogwild, Recht et al. 2011), so results are bit-for-bit reproducible with one thread
only.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

from kernelne.engine.kernels import LINEAR, dictionary_arrays, kernel_value
from kernelne.engine.prefetch import prefetch_row
from kernelne.engine.sampling import alias_draw, rand_below, rand_float, stream_state

_ZERO = np.float32(0.0)
ONE = np.float32(1.0)
#: a simplex weight below this is set to 0 (a smaller one is subnormal or near it, and
#: every kernel evaluation it enters then takes the CPU's slow path)
_BETA_FLOOR = np.float32(1e-30)
_TWO = np.float32(2.0)
NEG_STREAM = np.uint64(0x6E656761746976)  # keeps negatives' streams apart from the walks'
CTX_STREAM = np.uint64(0x636F6E74657874)  # subsampling and shrunk windows: a third stream
LOSSES = ("squared", "loglik")
POOL_SIZE = 128  # negative_pool="auto": the pool's size Q on graphs of POOL_FROM_NODES nodes
#: negative_pool="auto"'s Q where a run trains the dense setting's values (one Schoenberg
#: kernel, shrinking windows): a quarter of the reads of B a walk makes at POOL_SIZE, and no
#: lower score on the graphs measured (docs/QUALITY.md, rule 6)
DENSE_POOL_SIZE = 32
POOL_FROM_NODES = 100_000  # from here B (n x 128 x 4 bytes >= 51 MB) no longer fits in cache
# loss="loglik" reads the kernel as an edge probability: -log k (context), -log(1 - k)
# (negative), with k clipped to [LOGLIK_MIN, LOGLIK_MAX] so that the derivatives 1/k and
# 1/(1 - k) stay bounded (at most 1/LOGLIK_MIN and 1/(1 - LOGLIK_MAX) = 100).
LOGLIK_MIN = np.float32(1e-4)
LOGLIK_MAX = np.float32(0.99)
_HALF = np.float32(0.5)


class KernelArrays(NamedTuple):
    """A kernel dictionary as the numba code reads it: ``kinds`` (int), ``params`` (float32:
    ``1/sigma^2`` or ``alpha``), the weights ``beta`` (float32, learned in place) and the
    kernel scale ``scale`` (float32, length 1: distance kernels see ``rho ||a - b||^2``)."""

    kinds: np.ndarray
    params: np.ndarray
    beta: np.ndarray
    scale: np.ndarray


class Noise(NamedTuple):
    """The negatives' distribution: an alias table
    (:func:`kernelne.engine.sampling.alias_table`)."""

    prob: np.ndarray
    alias: np.ndarray


class TrainSettings(NamedTuple):
    """The scalar settings of a training run (numba reads the record as a tuple, at no cost).

    ``total_centers``: the run's number of centers (the learning-rate schedule's length);
    ``lr``, ``min_lr``: ``lr_t = max(lr (1 - t / T), min_lr)``; ``reg``, ``beta_reg``: the L2
    penalties of the rows and of the kernel weights; ``learn_beta``: the weights are learned
    (MKernelNE), ``beta_simplex`` on the simplex; ``shared_negatives``: one set of negatives per
    center; ``seed``: the negatives' streams; ``loglik``: the log-likelihood loss instead of the
    squared one (:func:`_term`); ``window_shrink``: each center's window is drawn uniformly in
    ``1..window`` (word2vec); ``negative_pool``: each walk's negatives are drawn from a pool of
    this many noise draws (0: k fresh draws per pair, the paper's). Frequent-node subsampling
    is :func:`train_walks`' ``keep``.
    """

    total_centers: float
    window: int = 10
    negatives: int = 5
    lr: float = 0.025
    min_lr: float = 1e-4
    reg: float = 0.01
    beta_reg: float = 0.01
    learn_beta: bool = False
    beta_simplex: bool = False
    shared_negatives: bool = False
    seed: int = 0
    loglik: bool = False
    window_shrink: bool = False
    negative_pool: int = 0

    def typed(self) -> TrainSettings:
        """The record with numba's types fixed (one compiled signature for every caller)."""
        return TrainSettings(
            float(self.total_centers), int(self.window), int(self.negatives),
            np.float32(self.lr), np.float32(self.min_lr), np.float32(self.reg),
            np.float32(self.beta_reg), bool(self.learn_beta), bool(self.beta_simplex),
            bool(self.shared_negatives), np.uint64(self.seed), bool(self.loglik),
            bool(self.window_shrink), int(self.negative_pool),
        )


def negative_pool_size(setting: int | str, n_nodes: int, dense: bool = False) -> int:
    """The pool size ``Q`` a ``negative_pool`` setting gives on a graph of ``n_nodes`` nodes:
    ``"auto"`` is :data:`POOL_SIZE` from :data:`POOL_FROM_NODES` nodes (:data:`DENSE_POOL_SIZE`
    where the run trains the dense setting's values, ``dense``: :func:`trains_dense_values`)
    and 0 (negatives per pair) below; an integer is itself."""
    if isinstance(setting, str):
        if setting != "auto":
            raise ValueError(f"negative_pool must be 'auto' or a pool size >= 0, got {setting!r}")
        if n_nodes < POOL_FROM_NODES:
            return 0
        return DENSE_POOL_SIZE if dense else POOL_SIZE
    if (isinstance(setting, bool) or not isinstance(setting, (int, np.integer))
            or setting < 0):
        raise ValueError(f"negative_pool must be 'auto' or a pool size >= 0, got {setting!r}")
    return int(setting)


def trains_dense_values(model) -> bool:
    """Whether a :class:`~kernelne.model.kernelne.KernelNE`'s (resolved) parameters are the
    dense setting's: one Schoenberg kernel and shrinking windows."""
    kernels = model.kernel_dictionary()
    shrink = model.window_shrink
    return (not isinstance(shrink, str) and bool(shrink) and len(kernels) == 1
            and kernels[0].kind == "schoenberg")


def pool_of(model, n_nodes: int) -> int:
    """The negative pool a run with ``model``'s (resolved) parameters trains with on a graph
    of ``n_nodes`` nodes (:func:`negative_pool_size`)."""
    return negative_pool_size(getattr(model, "negative_pool", 0), n_nodes,
                              trains_dense_values(model))


def train_settings(model, total_centers: float, seed, n_nodes: int,
                   **changes) -> TrainSettings:
    """The :class:`TrainSettings` of a :class:`~kernelne.model.kernelne.KernelNE`'s parameters on a
    graph of ``n_nodes`` nodes (``changes``: fields set otherwise, e.g. ``learn_beta``)."""
    settings = TrainSettings(
        total_centers, int(model.window), int(model.negatives), model.lr, model.min_lr,
        model.reg, model.beta_reg, shared_negatives=bool(model.shared_negatives), seed=seed,
        loglik=model.loss == "loglik", window_shrink=bool(model.window_shrink),
        negative_pool=pool_of(model, n_nodes),
    )
    return settings._replace(**changes).typed()


def keep_probabilities(counts: np.ndarray, subsample: float) -> np.ndarray:
    """word2vec's subsampling of frequent nodes (Mikolov et al. 2013): an occurrence of node
    ``v`` is kept with probability ``min(1, sqrt(t / f_v))``, ``f_v = c_v / sum_u c_u`` its
    frequency in the walks, ``t = subsample`` (float32, length n). ``subsample = 0``: an empty
    array, i.e. no subsampling."""
    if subsample <= 0:
        return np.empty(0, dtype=np.float32)
    counts = np.asarray(counts, dtype=np.float64)
    freq = counts / max(counts.sum(), 1.0)
    with np.errstate(divide="ignore"):
        keep = np.sqrt(float(subsample) / freq)
    return np.minimum(keep, 1.0).astype(np.float32)


def kernel_arrays(kernels, beta=None, scale: float = 1.0) -> KernelArrays:
    """The :class:`KernelArrays` of a list of :class:`~kernelne.engine.kernels.Kernel` (``beta``:
    the weights to train in place, default ``1/m`` each)."""
    kinds, params = dictionary_arrays(kernels)
    if beta is None:
        beta = np.full(len(kinds), 1.0 / len(kinds), dtype=np.float32)
    return KernelArrays(kinds, params, beta, np.full(1, scale, dtype=np.float32))


@njit(inline="always", fastmath=True)
def _term(a, b, neu, y, lr, lr_reg, linear, kinds, params, beta, kv, rho, loglik):
    """One term ``(y - k(a, b))^2``: update ``b`` in place and return ``(y - k, ca, g)``.

    ``a``'s step is ``ca * a + (what this adds to neu)``: its ``b`` part is accumulated in
    ``neu``, its ``a`` part is the returned scalar, so the center row is only read per term.
    Fills ``kv[j]`` with each dictionary kernel's value. Distance kernels see the statistic
    ``rho * ||a - b||^2`` (``rho``: the kernel scale, 1 unless a robust fit narrowed it).
    ``g`` is minus half the loss' derivative in ``k`` (the kernel weights' gradient factor):
    ``y - k`` for the squared loss. With ``loglik`` the term is ``-log k`` (``y = 1``) or
    ``-log(1 - k)`` (``y = 0``) at ``k`` clipped to ``[LOGLIK_MIN, LOGLIK_MAX]``, and
    ``g = 1 / (2 k)`` or ``-1 / (2 (1 - k))``; only this factor differs between the losses.
    """
    d = a.shape[0]
    s = _ZERO
    if linear:
        for t in range(d):
            s += a[t] * b[t]
    else:
        for t in range(d):
            diff = b[t] - a[t]
            s += diff * diff
        s *= rho
    k = _ZERO
    dk = _ZERO
    for j in range(kinds.shape[0]):
        kj, dkj = kernel_value(kinds[j], params[j], s)
        kv[j] = kj
        k += beta[j] * kj
        dk += beta[j] * dkj
    err = y - k
    g = err
    if loglik:
        kc = min(max(k, LOGLIK_MIN), LOGLIK_MAX)
        g = _HALF / kc if y > _HALF else -_HALF / (ONE - kc)
    e = lr * _TWO * g  # minus the loss' derivative in k, times lr
    if linear:  # grad_a k = b, grad_b k = a
        ca, cb, da, db = _ZERO, e, e, _ZERO
    else:  # grad_a k = 2 rho f'(rho s) (a - b), grad_b k = 2 rho f'(rho s) (b - a)
        h = e * _TWO * rho * dk
        ca, cb, da, db = h, -h, -h, h
    keep = ONE - lr_reg + db
    for t in range(d):
        at = a[t]
        bt = b[t]
        neu[t] += cb * bt
        b[t] = keep * bt + da * at
    return err, ca, g


@njit(inline="always", fastmath=True)
def _scale_step(neu, keep, r):
    """Scale the center's step ``a <- keep a + neu`` by the rate ``r``: ``neu <- r neu`` and
    return ``1 + r (keep - 1)`` (``r = 0``: ``neu`` cleared, the step is the identity)."""
    if r == ONE:
        return keep
    for t in range(neu.shape[0]):
        neu[t] = r * neu[t] if r != _ZERO else _ZERO
    return ONE + r * (keep - ONE)


@njit(inline="always", fastmath=True)
def _blend(row, stepped, r):
    """``row <- row + r (stepped - row)``: a fraction ``r`` of the step taken in ``stepped``."""
    for t in range(row.shape[0]):
        row[t] += r * (stepped[t] - row[t])


def train_walks(
    walks: np.ndarray, first_walk: int, A: np.ndarray, B: np.ndarray, kernel: KernelArrays,
    noise: Noise, settings: TrainSettings, losses: np.ndarray | None = None,
    rates: np.ndarray | None = None, keep: np.ndarray | None = None,
) -> int:
    """Train on a chunk of walks (rows of ``walks``; ``-1`` pads a walk that stopped early).

    ``first_walk`` is the index of the chunk's first walk in the whole run (epochs included):
    it places the chunk on the learning-rate schedule and seeds its negatives. Each of numba's
    threads takes one contiguous block of walks. Returns the number of (center, context) pairs
    trained. ``losses`` (float64, length 2), if given, is incremented by the chunk's summed
    positive terms ``(1 - k)^2`` and negative terms ``k^2``, each measured just before its step.
    ``settings.beta_simplex``: the kernel weights stay on the simplex, one exponentiated-gradient
    (mirror descent) step per pair, ``beta_j <- beta_j exp(lr 2 g_j) / sum_i beta_i exp(lr 2
    g_i)`` with ``g_j = sum_terms (y - k) k_j`` (``beta_reg`` unused), instead of the projected
    step. ``settings.shared_negatives``: one set of k negatives per center, shared by all its
    contexts (see :func:`_train_walk`) instead of k fresh negatives per pair;
    ``settings.negative_pool``: the negatives come from a pool drawn per walk (module docstring).
    ``rates`` (float32, length n, in [0, 1]), if given: each row's learning-rate multiplier
    (0 = frozen: never written); ``None`` trains every row at the full rate. Not with
    ``shared_negatives``. ``keep`` (float32, length n), if given: frequent-node subsampling,
    each occurrence of ``v`` in a walk is kept with probability ``keep[v]``
    (:func:`keep_probabilities`) and the dropped ones are removed from the walk before its
    windows are taken, as word2vec does; ``None`` keeps every occurrence. Walks of another
    integer type are read as int32 (the type of every walk the library draws), so that numba
    compiles and caches one version of the loop.
    """
    settings = settings.typed()
    walks = np.ascontiguousarray(walks, dtype=np.int32)
    if rates is None:
        rates = np.empty(0, dtype=np.float32)
    elif settings.shared_negatives:
        raise ValueError("per-row rates (partial fits) need negatives per pair")
    if keep is None:
        keep = np.empty(0, dtype=np.float32)
    elif len(keep) != len(A):
        raise ValueError(f"keep has {len(keep)} probabilities for {len(A)} rows")
    n_blocks = max(1, min(numba.get_num_threads(), len(walks)))
    block_losses = np.zeros((n_blocks, 2), dtype=np.float64)
    pairs = int(_train_blocks(
        walks, first_walk, A, B, kernel, noise, settings, n_blocks, block_losses, rates,
        np.asarray(keep, dtype=np.float32),
    ))
    if losses is not None:
        losses += block_losses.sum(axis=0)
    return pairs


@njit(inline="always")
def thread_buffers(d, m, negatives):
    """One thread's scratch for the pair step: the center's accumulated step ``neu`` (d),
    the kernel values ``kv`` and weight gradient ``gbeta`` (m), this and the next pair's
    negatives ``negs``, ``ahead`` (k)."""
    return (np.zeros(d, np.float32), np.empty(m, np.float32), np.zeros(m, np.float32),
            np.empty(negatives, np.int64), np.empty(negatives, np.int64))


@njit(inline="always", fastmath=True)
def draw_pool(state, pool, noise):
    """A walk's negative pool: ``len(pool)`` draws from the noise distribution. Returns the
    generator's new state."""
    for q in range(pool.shape[0]):
        state, pool[q] = alias_draw(state, noise.prob, noise.alias)
    return state


@njit(inline="always", fastmath=True)
def fill_pool(state, pool, noise, B):
    """:func:`draw_pool`, then the pool's rows of ``B`` prefetched at once."""
    state = draw_pool(state, pool, noise)
    prefetch_rows(B, pool, 0, pool.shape[0])
    return state


@njit(inline="always")
def prefetch_rows(B, rows, start, stop):
    """Prefetch the rows ``rows[start:stop]`` of ``B``; returns ``max(start, stop)``, where the
    next call should start."""
    for q in range(start, stop):
        prefetch_row(B, rows[q])
    return max(start, stop)


@njit(inline="always", fastmath=True)
def next_negatives(state, negs, ahead, noise, B, pool):
    """The next pair's (or center's) k negatives in ``negs``: uniform picks from ``pool`` if it
    is not empty, else fresh draws (:func:`_draw_negatives`). Returns the new state."""
    if pool.shape[0] == 0:
        return _draw_negatives(state, negs, ahead, noise, B)
    for k in range(negs.shape[0]):
        state, r = rand_below(state, pool.shape[0])
        negs[k] = pool[r]
    return state


@njit(parallel=True, fastmath=True, cache=True)
def _train_blocks(walks, first_walk, A, B, kernel, noise, cfg, n_blocks, block_losses, rates,
                  keep):
    n_walks = walks.shape[0]
    d = A.shape[1]
    m = kernel.kinds.shape[0]
    pairs = np.zeros(n_blocks, np.int64)
    for blk in prange(n_blocks):
        neu, kv, gbeta, negs, ahead = thread_buffers(d, m, cfg.negatives)
        pool = np.empty(cfg.negative_pool, np.int64)
        pool_next = np.empty(cfg.negative_pool, np.int64)
        scratch = np.empty(d, np.float32)
        kept = np.empty(walks.shape[1], walks.dtype)
        loss = block_losses[blk]
        count = 0
        start = blk * n_walks // n_blocks
        stop = (blk + 1) * n_walks // n_blocks
        state_next = np.uint64(0)
        if pool.shape[0] > 0 and start < stop:
            state_next = fill_pool(_neg_stream(cfg, first_walk + start), pool_next, noise, B)
        for i in range(start, stop):
            if i + 1 < stop:  # the next walk's rows: random rows of A and B on large graphs
                for w in walks[i + 1]:
                    if w >= 0:
                        prefetch_row(A, np.int64(w))
                        prefetch_row(B, np.int64(w))
            # The pool drawn during the last walk is this walk's; the next walk's pool is drawn
            # now and its rows prefetched a few per pair while this walk trains.
            pool, pool_next = pool_next, pool
            state = state_next
            ahead_pool = pool_next[:0]
            if pool.shape[0] > 0 and i + 1 < stop:
                state_next = draw_pool(_neg_stream(cfg, first_walk + i + 1), pool_next, noise)
                ahead_pool = pool_next
            count += _train_walk(
                walks[i], first_walk + i, A, B, kernel, noise, cfg, neu, kv, gbeta, negs,
                ahead, loss, rates, scratch, keep, kept, pool, state, ahead_pool,
            )
        pairs[blk] = count
    return pairs.sum()


@njit(inline="always")
def _neg_stream(cfg, walk_id):
    """The generator of walk ``walk_id``'s negatives (and pool)."""
    return stream_state(cfg.seed ^ NEG_STREAM, np.uint64(walk_id))


@njit(inline="always", fastmath=True)
def beta_step(beta, gbeta, lr, beta_reg, weight, simplex):
    """One step on the kernel weights from the accumulated ``gbeta = sum_terms (y - k) k_j``
    (then reset): projected, ``beta_j <- max(0, beta_j + lr (2 gbeta_j - weight lambda_beta
    beta_j))``, or mirror descent on the simplex. ``weight``: pairs the step stands for."""
    m = beta.shape[0]
    if simplex:
        # beta_j exp(lr 2 g_j) / sum_i beta_i exp(lr 2 g_i), each exponent shifted by the
        # largest one of a kernel in use (the same weights): the factors stay in (0, 1], so
        # the step can neither overflow (inf / inf) nor underflow every weight (0 / 0) when
        # the log-likelihood's gradient (up to 1 / (2 LOGLIK_MIN) per term) meets a large lr.
        shift = 0.0
        found = False
        for j in range(m):
            if beta[j] > _ZERO:
                arg = float(lr) * 2.0 * float(gbeta[j])
                if not found or arg > shift:
                    shift, found = arg, True
        total = _ZERO
        for j in range(m):
            if beta[j] > _ZERO:
                factor = math.exp(float(lr) * 2.0 * float(gbeta[j]) - shift)
                beta[j] = np.float32(float(beta[j]) * factor)
                total += beta[j]
        if total > _ZERO:  # the kernel of the largest exponent keeps its weight: always
            for j in range(m):
                beta[j] = beta[j] / total
                if beta[j] < _BETA_FLOOR:  # out for good: subnormal floats are ~100x slower
                    beta[j] = _ZERO
        for j in range(m):
            gbeta[j] = _ZERO
    else:
        for j in range(m):
            step = lr * (_TWO * gbeta[j] - weight * beta_reg * beta[j])
            beta[j] = max(_ZERO, beta[j] + step)
            gbeta[j] = _ZERO


@njit(inline="always", fastmath=True)
def _draw_negatives(state, negs, ahead, noise, B):
    """The pair's negatives are the ones drawn one pair ahead; draw the next pair's and
    prefetch their rows of ``B``. Returns the generator's new state."""
    for k in range(negs.shape[0]):
        negs[k] = ahead[k]
        state, ahead[k] = alias_draw(state, noise.prob, noise.alias)
        prefetch_row(B, ahead[k])
    return state


@njit(inline="always", fastmath=True)
def pair_step(a, B, u, negs, neu, kv, gbeta, lr, lr_reg, linear, kernel, learn_beta, loss, loglik):
    """The k + 1 terms of the pair (``a``, context row ``B[u]``) with negatives ``negs`` (rows
    of ``B``), then the center's step ``a <- (1 - lr lambda + ca) a + neu``. Adds the positive
    and negative squared errors to ``loss[0]``, ``loss[1]``; accumulates ``gbeta``.
    ``loglik``: the log-likelihood loss (:func:`_term`)."""
    rho = kernel.scale[0]
    ca = _ZERO
    for k in range(negs.shape[0] + 1):
        if k == 0:
            row = B[u]
            y = ONE
        else:
            row = B[negs[k - 1]]
            y = _ZERO
        err, ca_k, g = _term(
            a, row, neu, y, lr, lr_reg, linear, kernel.kinds, kernel.params, kernel.beta, kv, rho,
            loglik,
        )
        ca += ca_k
        loss[min(k, 1)] += err * err
        if learn_beta:
            for j in range(kv.shape[0]):
                gbeta[j] += g * kv[j]
    keep = ONE - lr_reg + ca
    for t in range(a.shape[0]):
        a[t] = keep * a[t] + neu[t]
        neu[t] = _ZERO


@njit(inline="always", fastmath=True)
def _train_walk(
    walk, walk_id, A, B, kernel, noise, cfg, neu, kv, gbeta, negs, ahead, loss, rates, scratch,
    keep, kept, pool, pool_state, pool_next,
):
    """All pairs of one walk; returns their number. ``neu``..``ahead``, ``scratch`` and
    ``kept`` (the walk's length) are scratch buffers. ``pool``: the walk's negative pool (empty
    if off), drawn from its negatives' stream, which continues from ``pool_state``;
    ``pool_next``: the next walk's pool, whose rows of ``B`` are prefetched a few per pair;
    ``loss[0]``, ``loss[1]`` accumulate the positive and negative terms' squared errors.
    ``rates``: per-row rates, or empty (every row at the full rate). ``keep``: subsampling's
    keep probabilities, or empty (no subsampling).

    With ``shared_negatives`` (after Ji et al., "Parallelizing Word2Vec in Shared and
    Distributed Memory", 2016) a center ``v`` with contexts ``C`` draws one set ``N`` of k
    negatives for all of them. Its pairs' negative terms are then ``|C|`` copies of
    ``sum_{u in N} k(A_v, B_u)^2``, which is taken as one step of weight ``|C|``: the loss is
    the same sum, but each center costs ``|C| + k`` terms instead of ``|C| (k + 1)`` and reads
    k random rows of B instead of ``|C| k``. The center row is updated once per center.
    """
    d = A.shape[1]
    m = kernel.kinds.shape[0]
    kinds, params, beta = kernel.kinds, kernel.params, kernel.beta
    rho = kernel.scale[0]
    linear = kinds[0] == LINEAR
    window, negatives, reg = cfg.window, cfg.negatives, cfg.reg
    learn_beta, beta_reg, beta_simplex = cfg.learn_beta, cfg.beta_reg, cfg.beta_simplex
    loglik = cfg.loglik
    masked = rates.shape[0] > 0
    length = walk.shape[0]
    # Negatives are drawn one pair (or center) ahead and their rows prefetched, or the pool
    # was drawn (and its rows prefetched) during the walk before.
    if pool.shape[0] > 0:
        state = pool_state
    else:
        state = _neg_stream(cfg, walk_id)
        for k in range(negatives):
            state, ahead[k] = alias_draw(state, noise.prob, noise.alias)
    fetched = 0  # rows of pool_next prefetched so far: spread evenly over the walk's pairs
    count = 0
    n = length
    while n > 0 and walk[n - 1] < 0:
        n -= 1
    ctx = stream_state(cfg.seed ^ CTX_STREAM, np.uint64(walk_id))
    seq = walk
    if keep.shape[0] > 0:
        ctx, n = subsample_walk(walk, n, keep, ctx, kept)
        seq = kept
    center_index = walk_id * length
    n_next = pool_next.shape[0]
    planned = max(1, _window_pairs(n, window)) if n_next > 0 else 1
    pair_loss = np.zeros(2, np.float32)
    for pos in range(n):
        frac = 1.0 - (center_index + pos) / cfg.total_centers
        lr = np.float32(max(cfg.lr * frac, cfg.min_lr))
        lr_reg = lr * reg
        a = A[seq[pos]]
        ctx, b = center_window(ctx, window, cfg.window_shrink)
        lo = max(0, pos - b)
        hi = min(n, pos + b + 1)
        if cfg.shared_negatives:
            n_ctx = hi - lo - 1
            if n_ctx <= 0:
                continue
            count += n_ctx
            state = next_negatives(state, negs, ahead, noise, B, pool)
            if n_next > 0:
                fetched = prefetch_rows(B, pool_next, fetched, (pos + 1) * n_next // n)
            ca = _ZERO
            for c in range(lo, hi):
                if c == pos:
                    continue
                err, ca_k, g = _term(
                    a, B[seq[c]], neu, ONE, lr, lr_reg, linear, kinds, params, beta, kv, rho,
                    loglik,
                )
                ca += ca_k
                pair_loss[0] += err * err
                if learn_beta:
                    for j in range(m):
                        gbeta[j] += g * kv[j]
            w = np.float32(n_ctx)
            lr_w = lr * w
            for k in range(negatives):
                err, ca_k, g = _term(
                    a, B[negs[k]], neu, _ZERO, lr_w, lr_w * reg, linear, kinds, params, beta,
                    kv, rho, loglik,
                )
                ca += ca_k
                we = w * err
                pair_loss[1] += we * err
                if learn_beta:
                    wg = w * g if loglik else we  # squared: g is err (kept as one product)
                    for j in range(m):
                        gbeta[j] += wg * kv[j]
            keep = ONE - w * lr_reg + ca
            for t in range(d):
                a[t] = keep * a[t] + neu[t]
                neu[t] = _ZERO
            if learn_beta:
                beta_step(beta, gbeta, lr, beta_reg, w, beta_simplex)
            continue
        for c in range(lo, hi):
            if c == pos:
                continue
            if masked and rates[seq[pos]] == _ZERO and rates[seq[c]] == _ZERO:
                continue
            count += 1
            state = next_negatives(state, negs, ahead, noise, B, pool)
            if n_next > 0:  # no division per pair without a pool
                fetched = prefetch_rows(B, pool_next, fetched,
                                        min(n_next, count * n_next // planned))
            if not masked:
                pair_step(a, B, np.int64(seq[c]), negs, neu, kv, gbeta, lr, lr_reg, linear, kernel,
                      learn_beta, pair_loss, loglik)
            else:
                _masked_pair(a, B, np.int64(seq[c]), negs, neu, kv, gbeta, lr, lr_reg, linear,
                             kernel, learn_beta, pair_loss, rates, rates[seq[pos]], scratch,
                             loglik)
            if learn_beta:  # one step per pair, as for the rows
                beta_step(beta, gbeta, lr, beta_reg, ONE, beta_simplex)
    prefetch_rows(B, pool_next, fetched, n_next)
    loss[0] += pair_loss[0]
    loss[1] += pair_loss[1]
    return count


@njit(inline="always")
def _window_pairs(n, window):
    """The (center, context) pairs of a walk of ``n`` nodes with windows of ``window``."""
    total = 0
    for pos in range(n):
        total += min(pos, window) + min(n - 1 - pos, window)
    return total


@njit(inline="always")
def subsample_walk(walk, n, keep, ctx, out):
    """word2vec's subsampling: copy to ``out`` the occurrences among ``walk[:n]`` that are
    kept (each with probability ``keep[v]``, one draw of the stream ``ctx`` per occurrence).
    Returns ``(ctx, number kept)``."""
    m = 0
    for pos in range(n):
        ctx, r = rand_float(ctx)
        if r < keep[walk[pos]]:
            out[m] = walk[pos]
            m += 1
    return ctx, m


@njit(inline="always")
def center_window(ctx, window, shrink):
    """A center's window: ``window``, or with ``shrink`` (word2vec's shrinking window) a
    draw uniform in ``1..window`` from the stream ``ctx``, so that a context at distance ``j``
    is used with probability ``(window - j + 1) / window``. Returns ``(ctx, window)``."""
    if shrink:
        ctx, r = rand_below(ctx, window)
        return ctx, r + 1
    return ctx, window


@njit(inline="always", fastmath=True)
def _masked_pair(a, B, u_pos, negs, neu, kv, gbeta, lr, lr_reg, linear, kernel, learn_beta,
                 loss, rates, rate_a, scratch, loglik):
    """:func:`pair_step` with per-row rates: each row takes ``rate`` times its step, a frozen row
    (rate 0) is never written, a term between two frozen rows is skipped."""
    rho = kernel.scale[0]
    ca = _ZERO
    for k in range(negs.shape[0] + 1):
        if k == 0:
            u = u_pos
            y = ONE
        else:
            u = negs[k - 1]
            y = _ZERO
        if rates[u] != ONE:  # step a copy, keep a fraction of it
            if rates[u] == _ZERO and rate_a == _ZERO:
                continue  # two frozen rows: nothing to learn
            scratch[:] = B[u]
            err, ca_k, g = _term(a, scratch, neu, y, lr, lr_reg, linear, kernel.kinds,
                                 kernel.params, kernel.beta, kv, rho, loglik)
            if rates[u] != _ZERO:
                _blend(B[u], scratch, rates[u])
        else:
            err, ca_k, g = _term(a, B[u], neu, y, lr, lr_reg, linear, kernel.kinds,
                                 kernel.params, kernel.beta, kv, rho, loglik)
        ca += ca_k
        loss[min(k, 1)] += err * err
        if learn_beta:
            for j in range(kv.shape[0]):
                gbeta[j] += g * kv[j]
    keep = _scale_step(neu, ONE - lr_reg + ca, rate_a)  # a frozen center is not written
    if rate_a != _ZERO:
        for t in range(a.shape[0]):
            a[t] = keep * a[t] + neu[t]
            neu[t] = _ZERO
