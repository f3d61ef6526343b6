"""HOPE with Katz proximity: a rank-``d/2`` SVD of ``S = (I - beta A)^{-1} beta A``.

M. Ou, P. Cui, J. Pei, Z. Zhang and W. Zhu, "Asymmetric Transitivity Preserving Graph
Embedding", KDD 2016. HOPE writes a proximity as ``S = M_g^{-1} M_l`` (eq. 4); Katz is
``M_g = I - beta A``, ``M_l = beta A`` (Table 1), which needs ``beta < 1 / rho(A)``. It minimises
``||S - U_s U_tᵀ||_F`` (eq. 2) by the top ``K = d/2`` singular triplets ``(sigma_i, u_i, v_i)``
of ``S``, with ``U_s = [sqrt(sigma_i) u_i]`` and ``U_t = [sqrt(sigma_i) v_i]`` (eq. 5); the node
embedding is ``[U_s, U_t]`` (d dimensions in total), so ``<U_s[i], U_t[j]>`` approximates
``S[i, j]``.

The paper gets the triplets with the generalised SVD of ``(M_gᵀ, M_lᵀ)`` (JDGSVD, Algorithm 1);
the same triplets of ``S`` with ARPACK (``scipy.sparse.linalg.svds``) on a linear
operator that applies ``S x = M_g^{-1} (M_l x)`` and ``Sᵀ x = M_lᵀ (M_g^{-T} x)`` through one
sparse LU factorisation of ``M_g``: the dense ``n x n`` matrix is never formed. Same result,
different solver. ``beta`` defaults to ``0.5 / rho(A)`` (HOPE tunes it; ``rho`` is the spectral
radius, from ARPACK); ARPACK's start vectors come from ``random_state``, so fits are
deterministic given a seed (up to the usual sign ambiguity of each singular pair, which the
seed also fixes).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, eigs, eigsh, splu, svds

from kernelne.baselines._base import BaselineEmbedding
from kernelne.engine.sampling import random_generator
from kernelne.graphs.graph import Graph


def spectral_radius(adjacency: sp.spmatrix, rng: np.random.Generator) -> float:
    """Largest absolute eigenvalue of a non-negative (sparse) adjacency matrix, by ARPACK."""
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    n = a.shape[0]
    if a.nnz == 0:
        return 0.0
    if n < 3:
        return float(np.max(np.abs(np.linalg.eigvals(a.toarray()))))
    v0 = rng.random(n) + 0.5  # positive start: not orthogonal to the Perron vector
    if abs(a - a.T).max() == 0:
        return float(abs(eigsh(a, k=1, which="LA", v0=v0, return_eigenvectors=False)[0]))
    return float(np.abs(eigs(a, k=1, which="LM", v0=v0, return_eigenvectors=False)).max())


def katz_operator(adjacency: sp.spmatrix, beta: float) -> LinearOperator:
    """``S = (I - beta A)^{-1} beta A`` as a linear operator (``matvec`` and ``rmatvec``)."""
    a = sp.csc_matrix(adjacency, dtype=np.float64)
    n = a.shape[0]
    local = beta * a
    lu = splu((sp.identity(n, format="csc") - local).tocsc())
    local_t = local.T.tocsr()
    return LinearOperator(
        (n, n),
        matvec=lambda x: lu.solve(np.asarray(local @ x, dtype=np.float64)),
        rmatvec=lambda x: local_t @ lu.solve(np.asarray(x, dtype=np.float64), trans="T"),
        dtype=np.float64,
    )


class HOPE(BaselineEmbedding):
    """HOPE (Ou et al. 2016) with the Katz index: embedding ``[U_s, U_t]``, ``dim/2`` each.

    The top ``K = d/2`` singular triplets of ``S = (I - beta A)^{-1} beta A``, computed by
    ARPACK on a linear operator (one sparse LU factorisation; the dense ``n x n`` matrix is
    never formed); ``<U_s[i], U_t[j]>`` approximates ``S[i, j]``.

    Parameters
    ----------
    dim : int, default 128
        Embedding dimension [d = 2K]; must be even, and ``dim/2`` smaller than the number of
        nodes.
    beta : float, optional
        Katz decay, below ``1 / rho(A)`` (``rho``: the spectral radius); None: ``beta_ratio
        / rho(A)``.
    beta_ratio : float, default 0.5
        The decay as a share of ``1 / rho(A)``, when ``beta`` is None; must lie in (0, 1).
    workers : int, optional
        Accepted for a uniform interface; the solvers run in one thread.
    random_state : int, optional
        Seed of ARPACK's start vectors: fits are deterministic given a seed (the sign of each
        singular pair included).
    propagate : bool or str, default False
        Spectrally propagate the rows after the fit (ProNE's enhancement,
        :func:`kernelne.engine.propagation.propagate_rows`; unit rows): ``True`` (order 10,
        mu 0.2, theta 0.5) or ``"order=K,mu=M,theta=T"``; ``False``: the rows as fitted.

    Attributes
    ----------
    embedding_ : ndarray of shape (n, dim), float32
        ``[U_s, U_t]``, row ``i`` = dense node ``i``.
    nodes_ : ndarray
        The user's node ids, in row order.
    fit_seconds_ : float
        Wall time of the fit, graph loading excluded.
    propagation_ : Propagation or None
        The spectral propagation applied (None: none).
    propagation_reason_ : str
        Why: ``"as given"``, or the evidence of ``propagate="auto"``.
    beta_ : float
        The Katz decay used.
    singular_values_ : ndarray
        The ``dim/2`` singular values, descending.
    """

    def __init__(
        self,
        dim: int = 128,
        beta: float | None = None,
        beta_ratio: float = 0.5,
        workers: int | None = None,
        random_state: int | None = None,
        propagate: bool | str = False,
    ):
        self.dim = dim
        self.beta = beta
        self.beta_ratio = beta_ratio
        self.workers = workers
        self.random_state = random_state
        self.propagate = propagate

    def _embed(self, graph: Graph) -> np.ndarray:
        dim = self._check_dim()
        if dim % 2:
            raise ValueError(f"HOPE needs an even dim (d/2 source + d/2 target), got {dim}")
        k = dim // 2
        n = graph.n_nodes
        if k >= n:
            raise ValueError(f"dim/2 = {k} must be smaller than the number of nodes ({n})")
        a = graph.adjacency().astype(np.float64)
        rng = random_generator(self.random_state)
        rho = spectral_radius(a, rng)
        if self.beta is None:
            if not 0 < self.beta_ratio < 1:
                raise ValueError(f"beta_ratio must be in (0, 1), got {self.beta_ratio}")
            beta = self.beta_ratio / rho if rho > 0 else self.beta_ratio
        else:
            beta = float(self.beta)
        if not 0 < beta * max(rho, 1e-300) < 1:
            raise ValueError(f"Katz needs 0 < beta < 1/rho(A) = {1 / rho:.4g}, got {beta:.4g}")
        u, s, vt = svds(katz_operator(a, beta), k=k, v0=rng.random(n) - 0.5, solver="arpack")
        order = np.argsort(-s)
        s, u, v = s[order], u[:, order], vt[order].T
        root = np.sqrt(np.maximum(s, 0.0))
        self.beta_ = beta
        self.singular_values_ = s
        return np.hstack([u * root, v * root])
