"""DeepWalk and node2vec: random walks + skip-gram with negative sampling (gensim Word2Vec).

DeepWalk: B. Perozzi, R. Al-Rfou and S. Skiena, "DeepWalk: Online Learning of Social
Representations", KDD 2014. node2vec: A. Grover and J. Leskovec, "node2vec: Scalable Feature
Learning for Networks", KDD 2016. Both treat walks as sentences and maximise the skip-gram
objective ``sum log sigma(<f(v), g(u)>) + sum_{k negatives} log sigma(-<f(v), g(u-)>)`` over
(center, context) pairs within the window, with negatives drawn from unigram^0.75.

Walks come from :mod:`kernelne.engine.walks` (node2vec's biased walks by rejection sampling; uniform
walks when ``p = q = 1``, which makes DeepWalk node2vec with ``p = q = 1``). Defaults follow the
KernelNE paper's comparison (docs/METHOD.md §13): 80 walks per node, length 10, window 10, d = 128,
5 negatives. Deviations from the originals: DeepWalk's reference code used hierarchical softmax;
here both use negative sampling (as the comparison specifies). One pass over the corpus
(``epochs=1``, node2vec's reference default), no frequent-node subsampling (``sample=0``),
gensim's shrinking windows as in both reference codes. The walk corpus is held as an int32 array
and streamed to gensim as lists of string ids; the vocabulary is built from node counts, so
gensim reads the corpus once.

Reproducibility: with ``workers=1`` and a ``random_state`` gensim is deterministic (its vector
initialisation and its negative-sampling generator are seeded; node ids are ordered by count
and then by first appearance, both fixed by the seeded walks). With more workers the thread
scheduling changes the result slightly.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from gensim.models import Word2Vec

from kernelne.baselines._base import BaselineEmbedding
from kernelne.engine.sampling import seed_to_uint64
from kernelne.engine.walks import random_walks
from kernelne.graphs.graph import Graph
from kernelne.model.estimator import check_int_params, check_workers
from kernelne.parallel import resolve_workers


class _Sentences:
    """A re-iterable view of a walk array as lists of string node ids (``-1`` padding dropped)."""

    def __init__(self, walks: np.ndarray, tokens: list[str]):
        self.walks = walks
        self.tokens = tokens

    def __iter__(self) -> Iterator[list[str]]:
        tokens = self.tokens
        for row in self.walks:
            yield [tokens[v] for v in row if v >= 0]


class SkipGramWalks(BaselineEmbedding):
    """Shared machinery of DeepWalk and node2vec; subclasses say which walks (``_pq``)."""

    def _pq(self) -> tuple[float, float]:
        raise NotImplementedError

    def _embed(self, graph: Graph) -> np.ndarray:
        dim = self._check_dim()
        check_int_params(self, dict.fromkeys(
            ("walks_per_node", "walk_length", "window", "negatives", "epochs"), 1))
        check_workers(self)
        p, q = self._pq()
        seed = int(seed_to_uint64(self.random_state) % np.uint64(2**31))
        workers = resolve_workers(self.workers)
        walks = random_walks(
            graph, int(self.walks_per_node), int(self.walk_length), p, q, seed, workers
        )
        n = graph.n_nodes
        tokens = [str(i) for i in range(n)]
        counts = np.bincount(walks[walks >= 0], minlength=n)
        model = Word2Vec(
            vector_size=dim, window=int(self.window), sg=1, hs=0, negative=int(self.negatives),
            ns_exponent=0.75, alpha=float(self.lr), min_alpha=float(self.min_lr), min_count=0,
            sample=0, workers=workers, seed=seed, epochs=int(self.epochs),
        )
        model.build_vocab_from_freq({tokens[i]: int(counts[i]) for i in range(n) if counts[i]})
        model.train(
            _Sentences(walks, tokens), total_examples=len(walks), total_words=int(counts.sum()),
            epochs=int(self.epochs),
        )
        emb = np.zeros((n, dim), dtype=np.float32)
        seen = np.flatnonzero(counts)
        emb[seen] = model.wv.vectors[[model.wv.key_to_index[tokens[i]] for i in seen]]
        return emb


class DeepWalk(SkipGramWalks):
    """DeepWalk (Perozzi et al. 2014): uniform random walks + skip-gram, negative sampling.

    The walks come from :func:`kernelne.random_walks`, the skip-gram from gensim's Word2Vec
    (negative sampling from unigram^0.75, shrinking windows, no subsampling); see
    :mod:`kernelne.baselines.skipgram` for the deviations from the original.

    Parameters
    ----------
    dim : int, default 128
        Embedding dimension [d].
    walks_per_node : int, default 80
        Walks per vertex [gamma].
    walk_length : int, default 10
        Nodes per walk [t].
    window : int, default 10
        Context window [w].
    negatives : int, default 5
        Negative samples per pair.
    epochs : int, default 1
        Passes over the walks.
    lr : float, default 0.025
        gensim's initial alpha, decayed linearly.
    min_lr : float, default 1e-4
        gensim's final alpha.
    workers : int, optional
        Threads for the walks and gensim; None uses all. With ``workers=1`` and a
        ``random_state`` the fit is deterministic.
    random_state : int, optional
        Seed.
    propagate : bool or str, default False
        Spectrally propagate the rows after the fit (ProNE's enhancement,
        :func:`kernelne.engine.propagation.propagate_rows`; unit rows): ``True`` (order 10,
        mu 0.2, theta 0.5) or ``"order=K,mu=M,theta=T"``; ``False``: the rows as fitted.

    Attributes
    ----------
    embedding_ : ndarray of shape (n, dim), float32
        Row ``i`` = dense node ``i`` (zero for a node no walk visits).
    nodes_ : ndarray
        The user's node ids, in row order.
    fit_seconds_ : float
        Wall time of the fit, graph loading excluded.
    propagation_ : Propagation or None
        The spectral propagation applied (None: none).
    propagation_reason_ : str
        Why: ``"as given"``, or the evidence of ``propagate="auto"``.
    """

    def __init__(
        self,
        dim: int = 128,
        walks_per_node: int = 80,
        walk_length: int = 10,
        window: int = 10,
        negatives: int = 5,
        epochs: int = 1,
        lr: float = 0.025,
        min_lr: float = 1e-4,
        workers: int | None = None,
        random_state: int | None = None,
        propagate: bool | str = False,
    ):
        self.dim = dim
        self.walks_per_node = walks_per_node
        self.walk_length = walk_length
        self.window = window
        self.negatives = negatives
        self.epochs = epochs
        self.lr = lr
        self.min_lr = min_lr
        self.workers = workers
        self.random_state = random_state
        self.propagate = propagate

    def _pq(self) -> tuple[float, float]:
        return 1.0, 1.0


class Node2Vec(SkipGramWalks):
    """node2vec (Grover & Leskovec 2016): biased second-order walks + skip-gram.

    As :class:`DeepWalk`, plus the return parameter ``p`` and in-out parameter ``q`` (the
    KernelNE paper's comparison uses ``p = q = 1``).

    Parameters
    ----------
    dim : int, default 128
        Embedding dimension [d].
    walks_per_node : int, default 80
        Walks per vertex.
    walk_length : int, default 10
        Nodes per walk.
    window : int, default 10
        Context window.
    negatives : int, default 5
        Negative samples per pair.
    p : float, default 1.0
        Return parameter.
    q : float, default 1.0
        In-out parameter.
    epochs : int, default 1
        Passes over the walks.
    lr : float, default 0.025
        gensim's initial alpha, decayed linearly.
    min_lr : float, default 1e-4
        gensim's final alpha.
    workers : int, optional
        Threads for the walks and gensim; None uses all.
    random_state : int, optional
        Seed.
    propagate : bool or str, default False
        Spectrally propagate the rows after the fit (ProNE's enhancement,
        :func:`kernelne.engine.propagation.propagate_rows`; unit rows): ``True`` (order 10,
        mu 0.2, theta 0.5) or ``"order=K,mu=M,theta=T"``; ``False``: the rows as fitted.

    Attributes
    ----------
    embedding_ : ndarray of shape (n, dim), float32
        Row ``i`` = dense node ``i`` (zero for a node no walk visits).
    nodes_ : ndarray
        The user's node ids, in row order.
    fit_seconds_ : float
        Wall time of the fit, graph loading excluded.
    propagation_ : Propagation or None
        The spectral propagation applied (None: none).
    propagation_reason_ : str
        Why: ``"as given"``, or the evidence of ``propagate="auto"``.
    """

    def __init__(
        self,
        dim: int = 128,
        walks_per_node: int = 80,
        walk_length: int = 10,
        window: int = 10,
        negatives: int = 5,
        p: float = 1.0,
        q: float = 1.0,
        epochs: int = 1,
        lr: float = 0.025,
        min_lr: float = 1e-4,
        workers: int | None = None,
        random_state: int | None = None,
        propagate: bool | str = False,
    ):
        self.dim = dim
        self.walks_per_node = walks_per_node
        self.walk_length = walk_length
        self.window = window
        self.negatives = negatives
        self.p = p
        self.q = q
        self.epochs = epochs
        self.lr = lr
        self.min_lr = min_lr
        self.workers = workers
        self.random_state = random_state
        self.propagate = propagate

    def _pq(self) -> tuple[float, float]:
        return float(self.p), float(self.q)
