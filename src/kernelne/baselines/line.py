"""LINE: first- and second-order proximity embeddings, concatenated (LINE(1st+2nd)).

J. Tang, M. Qu, M. Wang, M. Zhang, J. Yan and Q. Mei, "LINE: Large-scale Information Network
Embedding", WWW 2015. For an edge ``(i, j)`` with weight ``w_ij`` (an undirected edge is two
arcs), with ``sigma`` the logistic function and ``K`` negatives ``n ~ P_n(v) ∝ d_v^0.75``:

- first order (eq. 3 with negative sampling, eq. 7 using ``u_j`` as the context):
  ``log sigma(<u_i, u_j>) + sum_K log sigma(-<u_i, u_n>)``, one vector ``u`` per vertex;
- second order (eq. 7): ``log sigma(<u_i, c_j>) + sum_K log sigma(-<u_i, c_n>)`` with separate
  context vectors ``c``.

Optimisation as in the authors' ``line.cpp``: edges are sampled with probability ∝ weight by an
alias table (edge sampling, section 4.2.2), so every step has unit weight; asynchronous SGD
(Hogwild) on the sampled edge with learning rate ``rho_t = rho_0 (1 - t / T)``, floored at
``rho_0 1e-4``; ``u`` starts uniform in ``(-0.5/d, 0.5/d)``, ``c`` at zero; sigmoid clipped at
±6 as the code's table. Each order has ``d/2`` dimensions; each is L2-normalised per row and the
two are concatenated (the paper's LINE(1st+2nd), section 5.1).

Deviation: the number of samples ``T`` (per order) is scaled to the graph. The paper sets
``T`` in absolute terms (10 billion on its networks of millions of edges, hundreds of samples per
edge); here ``T = samples_per_arc * (number of arcs)`` with ``samples_per_arc = 1000`` unless
``samples`` is given (on Cora, Micro-F1 stops improving from about 300 samples per arc on).
Low-degree vertices are not expanded with second-order neighbours (the paper's optional
reconstruction, section 4.3).
Threads: samples are split into blocks of ``_BLOCK``, each with its own generator seeded by
``(seed, block)``; with ``workers=1`` a fit is reproducible bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from tqdm.auto import tqdm

from kernelne.baselines._base import BaselineEmbedding
from kernelne.engine.sampling import alias_draw, alias_table, seed_to_uint64, stream_state
from kernelne.graphs.graph import Graph
from kernelne.model.estimator import check_int_params, check_workers
from kernelne.parallel import numba_threads

_BLOCK = 16384
_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)
_BOUND = np.float32(6.0)
_SECOND_STREAM = np.uint64(0x7365636F6E64)  # keeps the second order's streams apart


@njit(inline="always", fastmath=True)
def _sigmoid(x):
    if x > _BOUND:
        return _ONE
    if x < -_BOUND:
        return _ZERO
    return _ONE / (_ONE + np.exp(-x))


@njit(parallel=True, fastmath=True, cache=True)
def train_line(
    src, dst, edge_prob, edge_alias, neg_prob, neg_alias, emb, ctx, total, negatives, rho0, seed,
    first_block, stop_block,
):
    """Blocks ``first_block..stop_block-1`` of ``total`` edge-sampling SGD steps on ``emb``
    (vertex) and ``ctx`` (context) vectors (blocks of ``_BLOCK`` steps, each seeded by its
    index, so any split into calls gives the same result).

    First order: pass ``ctx = emb``. Each step samples arc ``e``, takes ``u = emb[src[e]]``, and
    for the positive target ``dst[e]`` (label 1) and ``negatives`` noise vertices (label 0)
    updates the target's context row by ``g u`` and accumulates ``g c`` for ``u``, where
    ``g = rho (label - sigma(<u, c>))``: gradient ascent on the log-likelihood.
    """
    d = emb.shape[1]
    floor = rho0 * np.float32(1e-4)
    for blk in prange(first_block, stop_block):
        state = stream_state(seed, np.uint64(blk))
        err = np.empty(d, np.float32)
        for t in range(blk * _BLOCK, min(total, (blk + 1) * _BLOCK)):
            rho = max(np.float32(rho0 * (1.0 - t / (total + 1.0))), floor)
            state, e = alias_draw(state, edge_prob, edge_alias)
            a = emb[src[e]]
            err[:] = _ZERO
            for k in range(negatives + 1):
                if k == 0:
                    target = np.int64(dst[e])
                    label = _ONE
                else:
                    state, target = alias_draw(state, neg_prob, neg_alias)
                    label = _ZERO
                c = ctx[target]
                x = _ZERO
                for i in range(d):
                    x += a[i] * c[i]
                g = (label - _sigmoid(x)) * rho
                for i in range(d):
                    err[i] += g * c[i]
                    c[i] += g * a[i]
            for i in range(d):
                a[i] += err[i]


def _normalise_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, 1.0)


class LINE(BaselineEmbedding):
    """LINE(1st+2nd) (Tang et al. 2015): two ``dim/2`` halves, each L2-normalised, concatenated.

    First- and second-order proximity, each trained by edge sampling with negative sampling
    and asynchronous SGD as in the authors' ``line.cpp``; see :mod:`kernelne.baselines.line`.

    Parameters
    ----------
    dim : int, default 128
        Total embedding dimension [d], at least 2; the first order gets the extra dimension
        when odd.
    negatives : int, default 5
        Negative samples per edge sample [K].
    lr : float, default 0.025
        Initial learning rate [rho_0], decayed linearly (floored at ``rho_0 1e-4``).
    samples : int, optional
        SGD steps per order [T]; None: ``samples_per_arc`` times the number of arcs
        (directed edges; an undirected edge is two).
    samples_per_arc : float, default 1000.0
        Steps per arc when ``samples`` is None.
    workers : int, optional
        Threads; None uses all. With ``workers=1`` a fit is reproducible bit for bit.
    random_state : int, optional
        Seed.
    verbose : bool, default False
        Show a progress bar per order.
    propagate : bool or str, default False
        Spectrally propagate the rows after the fit (ProNE's enhancement,
        :func:`kernelne.engine.propagation.propagate_rows`; unit rows): ``True`` (order 10,
        mu 0.2, theta 0.5) or ``"order=K,mu=M,theta=T"``; ``False``: the rows as fitted.

    Attributes
    ----------
    embedding_ : ndarray of shape (n, dim), float32
        The two normalised halves, row ``i`` = dense node ``i``.
    nodes_ : ndarray
        The user's node ids, in row order.
    fit_seconds_ : float
        Wall time of the fit, graph loading excluded.
    propagation_ : Propagation or None
        The spectral propagation applied (None: none).
    propagation_reason_ : str
        Why: ``"as given"``, or the evidence of ``propagate="auto"``.
    samples_ : int
        The number of samples T used per order.
    """

    def __init__(
        self,
        dim: int = 128,
        negatives: int = 5,
        lr: float = 0.025,
        samples: int | None = None,
        samples_per_arc: float = 1000.0,
        workers: int | None = None,
        random_state: int | None = None,
        verbose: bool = False,
        propagate: bool | str = False,
    ):
        self.dim = dim
        self.negatives = negatives
        self.lr = lr
        self.samples = samples
        self.samples_per_arc = samples_per_arc
        self.verbose = verbose
        self.workers = workers
        self.random_state = random_state
        self.propagate = propagate

    def _embed(self, graph: Graph) -> np.ndarray:
        dim = self._check_dim()
        if dim < 2:
            raise ValueError("LINE(1st+2nd) needs dim >= 2")
        check_int_params(self, {"negatives": 0, "samples": 1}, optional=("samples",))
        check_workers(self)
        arcs = len(graph.indices)
        if arcs == 0:
            raise ValueError("LINE needs a graph with at least one edge")
        total = int(self.samples if self.samples is not None else self.samples_per_arc * arcs)
        if total < 1:
            raise ValueError(f"the number of samples must be positive, got {total}")
        src = np.repeat(np.arange(graph.n_nodes, dtype=np.int32), graph.degrees)
        dst = graph.indices
        w = np.ones(arcs) if graph.weights is None else graph.weights.astype(np.float64)
        edge_prob, edge_alias = alias_table(w)
        out_weight = np.bincount(src, weights=w, minlength=graph.n_nodes)
        neg_prob, neg_alias = alias_table(out_weight**0.75)

        seed = seed_to_uint64(self.random_state)
        rng = np.random.default_rng(int(seed))
        d2 = dim // 2
        d1 = dim - d2
        halves = []
        with numba_threads(self.workers):
            for order, d in ((1, d1), (2, d2)):
                emb = ((rng.random((graph.n_nodes, d)) - 0.5) / d).astype(np.float32)
                ctx = emb if order == 1 else np.zeros_like(emb)
                n_blocks = (total + _BLOCK - 1) // _BLOCK
                step = max(1, n_blocks // 50)
                with tqdm(total=total, unit="sample", desc=f"LINE order {order}",
                          disable=not self.verbose, dynamic_ncols=True) as bar:
                    for first in range(0, n_blocks, step):
                        stop = min(n_blocks, first + step)
                        train_line(
                            src, dst, edge_prob, edge_alias, neg_prob, neg_alias, emb, ctx,
                            total, int(self.negatives), np.float32(self.lr),
                            seed if order == 1 else seed ^ _SECOND_STREAM, first, stop,
                        )
                        bar.update(min(total, stop * _BLOCK) - first * _BLOCK)
                halves.append(_normalise_rows(emb))
        self.samples_ = total
        return np.hstack(halves)
