"""NetMF: factorise the matrix that DeepWalk's skip-gram implicitly factorises.

J. Qiu, Y. Dong, H. Ma, J. Li, K. Wang and J. Tang, "Network Embedding as Matrix Factorization:
Unifying DeepWalk, LINE, PTE, and node2vec", WSDM 2018. With ``vol(G) = sum_ij A_ij``,
``D = diag(row sums)``, window ``T`` and ``b`` negatives (Theorem 2.3):

    M = vol(G) / (b T) * ( sum_{r=1..T} (D^{-1} A)^r ) D^{-1}
      = vol(G) / (b T) * D^{-1/2} ( sum_{r=1..T} X^r ) D^{-1/2},   X = D^{-1/2} A D^{-1/2}.

NetMF takes the truncated logarithm ``log max(M, 1)`` (a sparse matrix), its rank-``d`` SVD
``U_d Sigma_d V_dᵀ`` and returns ``U_d sqrt(Sigma_d)`` (Algorithm 1, "small T").
For large graphs ("large T", Algorithm 2) ``X`` is replaced by its top-``h`` eigenpairs
``X ≈ U_h Λ_h U_hᵀ`` and ``M ≈ vol/b * D^{-1/2} U_h F(Λ_h) U_hᵀ D^{-1/2}``, with the filter
``F(λ) = (1/T) sum_{r=1..T} λ^r`` clipped at 0 (eigenvalue 1 maps to 1), as in the authors' code.

``mode="auto"`` uses the exact matrix up to ``max_exact_nodes`` nodes (dense float64 ``n x n``
powers: about ``3 n^2 * 8`` bytes, 2.4 GB at the default 10,000) and the approximation beyond.
Deviations: nodes of degree 0 get ``D^{-1} = 0`` (zero rows in ``M``; the authors' code, through
scipy's normalised Laplacian, gives them a unit self-loop in ``X``); the approximate ``M`` is
built in row blocks and kept sparse, never as a dense ``n x n`` matrix. The SVD is ARPACK
(``svds``, the authors' choice) or scikit-learn's randomised SVD; both seeded by
``random_state``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh, svds
from sklearn.utils.extmath import randomized_svd

from kernelne.baselines._base import BaselineEmbedding
from kernelne.engine.sampling import random_generator
from kernelne.errors import ParamError
from kernelne.graphs.graph import Graph
from kernelne.model.estimator import check_int_params

_BLOCK_ROWS = 2048


def _normalised(adjacency: sp.spmatrix) -> tuple[sp.csr_matrix, np.ndarray, float]:
    """``X = D^{-1/2} A D^{-1/2}``, ``D^{-1/2}`` (0 at degree 0) and ``vol(G)``."""
    a = sp.csr_matrix(adjacency, dtype=np.float64)
    deg = np.asarray(a.sum(axis=1)).ravel()
    inv_sqrt = np.zeros_like(deg)
    np.divide(1.0, np.sqrt(deg), out=inv_sqrt, where=deg > 0)
    scale = sp.diags(inv_sqrt)
    return sp.csr_matrix(scale @ a @ scale), inv_sqrt, float(deg.sum())


def _truncated_log(m: np.ndarray) -> sp.csr_matrix:
    """``log max(m, 1)`` as a sparse matrix (entries below 1 become exact zeros)."""
    out = np.zeros_like(m)
    np.log(m, out=out, where=m > 1.0)
    return sp.csr_matrix(out)


def netmf_matrix_exact(graph: Graph, window: int = 10, negative: float = 1.0) -> sp.csr_matrix:
    """``log max(M, 1)`` with the exact ``M`` of NetMF (small T, dense powers of ``X``)."""
    x, inv_sqrt, vol = _normalised(graph.adjacency())
    power = np.eye(x.shape[0])
    total = np.zeros_like(power)
    for _ in range(window):
        power = x @ power
        total += power
    total *= vol / (negative * window)
    total *= inv_sqrt[:, None]
    total *= inv_sqrt[None, :]
    return _truncated_log(total)


def deepwalk_filter(eigenvalues: np.ndarray, window: int) -> np.ndarray:
    """``F(λ) = (1/T) sum_{r=1..T} λ^r`` (1 at λ >= 1), clipped at 0: NetMF's large-T filter."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    out = np.ones_like(lam)
    below = lam < 1.0
    x = lam[below]
    out[below] = x * (1.0 - x**window) / (1.0 - x) / window
    return np.maximum(out, 0.0)


def netmf_matrix_approx(
    graph: Graph,
    window: int = 10,
    negative: float = 1.0,
    rank: int = 256,
    rng: np.random.Generator | None = None,
) -> sp.csr_matrix:
    """``log max(M, 1)`` with ``M`` from the top-``rank`` eigenpairs of ``X`` (large T).

    ``M ≈ (vol/b) Y Yᵀ`` with ``Y = D^{-1/2} U_h sqrt(F(Λ_h))``, computed in row blocks.
    """
    x, inv_sqrt, vol = _normalised(graph.adjacency())
    n = x.shape[0]
    rank = min(int(rank), n - 1)
    v0 = (rng or np.random.default_rng(0)).random(n) - 0.5
    # tol 1e-3: at full precision ARPACK needs tens of minutes on graphs with many components
    # (DBLP: 2115, so eigenvalue 1 has multiplicity 2115); 1e-3 takes ~40 s there.
    lam, vecs = eigsh(x, k=rank, which="LA", v0=v0, tol=1e-3)
    y = inv_sqrt[:, None] * vecs * np.sqrt(deepwalk_filter(lam, window))[None, :]
    scale = vol / negative
    blocks = [
        _truncated_log(scale * (y[i : i + _BLOCK_ROWS] @ y.T)) for i in range(0, n, _BLOCK_ROWS)
    ]
    return sp.csr_matrix(sp.vstack(blocks))


def svd_embedding(
    matrix: sp.spmatrix, dim: int, solver: str, rng: np.random.Generator
) -> np.ndarray:
    """``U_d sqrt(Sigma_d)`` of the top-``dim`` singular triplets (descending)."""
    n = matrix.shape[0]
    if solver == "arpack":
        u, s, _ = svds(matrix, k=dim, v0=rng.random(n) - 0.5, solver="arpack")
    elif solver == "randomized":
        u, s, _ = randomized_svd(matrix, dim, random_state=int(rng.integers(2**31)))
    else:
        raise ValueError(f"svd must be 'arpack' or 'randomized', got {solver!r}")
    order = np.argsort(-s)
    return u[:, order] * np.sqrt(s[order])


class NetMF(BaselineEmbedding):
    """NetMF (Qiu et al. 2018): SVD of the truncated log of DeepWalk's matrix.

    The embedding is ``U_d sqrt(Sigma_d)`` of the rank-``d`` SVD of ``log max(M, 1)``, ``M``
    the matrix DeepWalk's skip-gram implicitly factorises; see
    :mod:`kernelne.baselines.netmf`.

    Parameters
    ----------
    dim : int, default 128
        Embedding dimension [d], smaller than the number of nodes.
    window : int, default 10
        Window size [T]; 10 is the KernelNE paper's setting.
    negative : float, default 1.0
        Negative samples [b].
    mode : {"auto", "exact", "approx"}, default "auto"
        ``"exact"``: dense powers of the normalised adjacency (about ``3 n^2 * 8`` bytes);
        ``"approx"``: the top-``rank`` eigenpairs ("large T"); ``"auto"``: exact up to
        ``max_exact_nodes`` nodes.
    rank : int, default 256
        Eigenpairs for the approximation [h].
    max_exact_nodes : int, default 10000
        ``mode="auto"`` switches to the approximation above this many nodes.
    svd : {"arpack", "randomized"}, default "arpack"
        The SVD solver: ARPACK (``svds``, the authors' choice) or scikit-learn's randomised
        SVD.
    workers : int, optional
        Accepted for a uniform interface; BLAS decides the threads.
    random_state : int, optional
        Seed of the eigen- and SVD solvers.
    propagate : bool or str, default False
        Spectrally propagate the rows after the fit (ProNE's enhancement,
        :func:`kernelne.engine.propagation.propagate_rows`; unit rows): ``True`` (order 10,
        mu 0.2, theta 0.5) or ``"order=K,mu=M,theta=T"``; ``False``: the rows as fitted.

    Attributes
    ----------
    embedding_ : ndarray of shape (n, dim), float32
        ``U_d sqrt(Sigma_d)``, row ``i`` = dense node ``i``.
    nodes_ : ndarray
        The user's node ids, in row order.
    fit_seconds_ : float
        Wall time of the fit, graph loading excluded.
    propagation_ : Propagation or None
        The spectral propagation applied (None: none).
    propagation_reason_ : str
        Why: ``"as given"``, or the evidence of ``propagate="auto"``.
    mode_ : str
        ``"exact"`` or ``"approx"``: the mode used.
    """

    def __init__(
        self,
        dim: int = 128,
        window: int = 10,
        negative: float = 1.0,
        mode: str = "auto",
        rank: int = 256,
        max_exact_nodes: int = 10_000,
        svd: str = "arpack",
        workers: int | None = None,
        random_state: int | None = None,
        propagate: bool | str = False,
    ):
        self.dim = dim
        self.window = window
        self.negative = negative
        self.mode = mode
        self.rank = rank
        self.max_exact_nodes = max_exact_nodes
        self.svd = svd
        self.workers = workers
        self.random_state = random_state
        self.propagate = propagate

    def matrix(self, graph: Graph) -> sp.csr_matrix:
        """The sparse ``log max(M, 1)`` this estimator factorises (sets ``mode_``).

        Parameters
        ----------
        graph : Graph
            The graph.

        Returns
        -------
        scipy.sparse.csr_matrix of shape (n, n)
            The truncated logarithm of NetMF's matrix, exact or approximated by ``mode``.

        Raises
        ------
        ValueError
            ``window``, ``rank`` or ``max_exact_nodes`` not a whole number >= 1,
            ``negative <= 0`` or an unknown mode.
        """
        check_int_params(self, {"window": 1, "rank": 1, "max_exact_nodes": 1})
        if not self.negative > 0:
            raise ValueError(f"negative must be > 0, got {self.negative!r}")
        mode = self.mode
        if mode == "auto":
            mode = "exact" if graph.n_nodes <= self.max_exact_nodes else "approx"
        self.mode_ = mode
        if mode == "exact":
            return netmf_matrix_exact(graph, int(self.window), float(self.negative))
        if mode == "approx":
            rng = random_generator(self.random_state)
            return netmf_matrix_approx(
                graph, int(self.window), float(self.negative), int(self.rank), rng
            )
        raise ValueError(f"mode must be 'auto', 'exact' or 'approx', got {self.mode!r}")

    def _embed(self, graph: Graph) -> np.ndarray:
        dim = self._check_dim()
        if dim >= graph.n_nodes:
            raise ParamError(f"NetMF: {{dim={dim}}} must be smaller than the number "
                             f"of nodes ({graph.n_nodes:,}): choose a smaller {{dim}}")
        m = self.matrix(graph)
        rng = random_generator(self.random_state)
        return svd_embedding(m, dim, self.svd, rng)
