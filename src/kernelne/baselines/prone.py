"""ProNE: sparse matrix factorisation, then spectral propagation.

J. Zhang, Y. Dong, Y. Wang, J. Tang and M. Ding, "ProNE: Fast and Scalable Network
Representation Learning", IJCAI 2019. Step 1 (section 3.1) factorises the sparse matrix, on the
edges only,

    F_ij = log(A_ij / d_i) - log(P_j),    P_j = c_j^{3/4} / sum_k c_k^{3/4},

``d_i`` the (weighted) degree and ``c_j = sum_i A_ij / d_i`` the column sums of the
row-normalised adjacency (the negative-sampling distribution), by a randomised truncated SVD
(5 power iterations): ``R = U_d sqrt(Σ_d)`` with unit rows. Step 2 (section 3.2) is the
spectral propagation of :mod:`kernelne.engine.propagation` applied to ``R``. Both steps are
linear in the edges. The graph is read as undirected (``max(A, Aᵀ)``, self-loops dropped), as
in the authors' code. Zero entries of ``F`` (edges with ``A_ij / d_i = P_j``) are kept
implicit, as there.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.extmath import randomized_svd

from kernelne.baselines._base import BaselineEmbedding
from kernelne.engine.propagation import check_propagation, choose_propagation, propagate_rows
from kernelne.engine.sampling import random_generator
from kernelne.errors import ParamError
from kernelne.graphs.graph import Graph


def undirected_adjacency(adjacency: sp.spmatrix) -> sp.csr_matrix:
    """``max(A, Aᵀ)`` without self-loops, float64 CSR."""
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    a = sp.csr_matrix(a.maximum(a.T))
    a.setdiag(0.0)
    a.eliminate_zeros()
    return a


def prone_matrix(adjacency: sp.spmatrix) -> sp.csr_matrix:
    """ProNE's sparse matrix ``F`` (see the module), non-zero only on the edges."""
    a = undirected_adjacency(adjacency)
    deg = np.asarray(a.sum(axis=1)).ravel()
    inv = np.zeros_like(deg)
    np.divide(1.0, deg, out=inv, where=deg > 0)
    c = sp.csr_matrix(sp.diags(inv) @ a)  # A_ij / d_i
    col = np.asarray(c.sum(axis=0)).ravel() ** 0.75
    p = col / col.sum()
    f = c.copy()
    f.data = np.log(c.data) - np.log(p[c.indices])
    f.eliminate_zeros()
    return f


def randomized_rows(matrix: sp.spmatrix, dim: int, seed: int) -> np.ndarray:
    """``U_d sqrt(Σ_d)`` of a randomised truncated SVD (5 power iterations), unit rows."""
    u, s, _ = randomized_svd(sp.csc_matrix(matrix), n_components=dim, n_iter=5,
                             random_state=seed)
    emb = u * np.sqrt(s)[None, :]
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    np.divide(emb, norms, out=emb, where=norms > 0)
    return emb


class ProNE(BaselineEmbedding):
    """ProNE (Zhang et al. 2019): sparse matrix factorisation plus spectral propagation.

    The randomised truncated SVD of ProNE's sparse matrix (on the edges only), then the
    Chebyshev band-pass propagation of :func:`kernelne.engine.propagation.propagate_rows`; see
    :mod:`kernelne.baselines.prone`. Time and memory are linear in the edges.

    Parameters
    ----------
    dim : int, default 128
        Embedding dimension [d], smaller than the number of nodes.
    propagate : bool or str, default True
        The propagation step: ``True`` (ProNE's order 10, mu 0.2, theta 0.5), a setting
        ``"order=K,mu=M,theta=T"`` (:func:`~kernelne.engine.propagation.parse_propagation`),
        ``"auto"`` (:func:`~kernelne.engine.propagation.choose_propagation`),
        or ``False``: the factorisation's rows only (ProNE's "SMF" ablation).
    workers : int, optional
        Accepted for a uniform interface; BLAS decides the threads.
    random_state : int, optional
        Seed of the randomised SVD: fits are deterministic given a seed.

    Attributes
    ----------
    embedding_ : ndarray of shape (n, dim), float32
        Unit rows, row ``i`` = dense node ``i``.
    nodes_ : ndarray
        The user's node ids, in row order.
    fit_seconds_ : float
        Wall time of the fit, graph loading excluded.
    propagation_ : Propagation or None
        The propagation applied.
    propagation_reason_ : str
        Why: ``"as given"``, or the evidence of ``propagate="auto"``.
    """

    propagates_itself = True

    def __init__(
        self,
        dim: int = 128,
        propagate: bool | str = True,
        workers: int | None = None,
        random_state: int | None = None,
    ):
        self.dim = dim
        self.propagate = propagate
        self.workers = workers
        self.random_state = random_state

    def _embed(self, graph: Graph) -> np.ndarray:
        dim = self._check_dim()
        check_propagation(self.propagate)
        if dim >= graph.n_nodes:
            raise ParamError(f"ProNE: {{dim={dim}}} must be smaller than the number "
                             f"of nodes ({graph.n_nodes:,}): choose a smaller {{dim}}")
        a = graph.adjacency()
        seed = int(random_generator(self.random_state).integers(2**31))
        rows = randomized_rows(prone_matrix(a), dim, seed)
        settings, self.propagation_reason_ = choose_propagation(self.propagate, graph,
                                                                rows.shape[1])
        self.propagation_ = settings
        return rows if settings is None else propagate_rows(graph, rows, settings)
