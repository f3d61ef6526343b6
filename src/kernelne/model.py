"""``KernelNE``: the estimator (scikit-learn conventions) that turns a graph into embeddings.

Celikkanat & Malliaros, "Kernel Node Embeddings", GlobalSIP 2019; multiple kernels from
Celikkanat, Shen & Malliaros, TKDE 2022. Walks come from :mod:`kernelne.walks`, the SGD from
:mod:`kernelne.trainer`, the kernels from :mod:`kernelne.kernels`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from kernelne.compiling import watch_compiling
from kernelne.diagnostics import (
    check_finite,
    embedding_health,
    warn_if_collapsed,
    warn_if_undertrained,
)
from kernelne.errors import TrainingError
from kernelne.estimator import EmbeddingEstimator
from kernelne.graph import Graph, load_graph
from kernelne.kernel_choice import fit_chosen, fixed_weights
from kernelne.kernels import Kernel, parse_kernel
from kernelne.model_file import load_model, save_model
from kernelne.parallel import numba_threads
from kernelne.partitioned import fit_partitioned, remove_folder
from kernelne.robust import (
    CHECKPOINT_PAIRS,
    MAX_NARROWING,
    NARROWING,
    look_due,
    shell_figures,
)
from kernelne.rows import aligned_rows, check_row_memory, out_of_memory, uniform_rows
from kernelne.sampling import alias_table, seed_to_uint64
from kernelne.trainer import (
    LOSSES,
    Noise,
    keep_probabilities,
    kernel_arrays,
    negative_pool_size,
    train_settings,
    train_walks,
)
from kernelne.update import partial_fit
from kernelne.walks import WalkCorpus, count_visits

# The learned weights go winner-take-all (see KernelNE): a narrow kernel fits the squared loss
# fastest and takes the weight, so the dictionary holds none narrower than a good single one.
# Measured winners on Cora: gauss:1.41421 here; gauss:0.5 over gauss:1-2 and sch:0.5-2 (Micro-F1
# at 50% 0.79 instead of 0.83); sch:2 over gauss:1.41421-3 and sch:1 (0.81).
BETA_UPDATES = ("projected", "simplex")
DEFAULT_DICTIONARY = ("gauss:1.41421", "gauss:2", "gauss:3", "sch:0.5", "sch:1")


class KernelNE(EmbeddingEstimator):
    """Kernel node embeddings learned from random walks by SGD with negative sampling.

    Parameters (paper symbol in brackets):
        kernel: ``"gauss"``, ``"schoenberg"``, ``"linear"`` (the "NE" ablation, no kernel) or
            ``"multi"`` (a learned non-negative combination of ``kernels``).
        sigma: Gaussian width [sigma], paper's form ``exp(-||x-y||^2 / sigma^2)``; default
            ``sqrt(2)`` (sigma^2 = 2). The authors' code's ``sigma_code = sigma / sqrt(2)``.
        alpha: Schoenberg exponent [alpha] in ``(1 + ||x-y||^2)^(-alpha)``.
        kernels: dictionary for ``kernel="multi"``, e.g. ``["gauss:1", "sch:2"]`` (gauss:SIGMA,
            sch:ALPHA); default :data:`DEFAULT_DICTIONARY`.
        dim: embedding dimension [d]. walks_per_node, walk_length: walk corpus size [N, L].
        window: context window [gamma]. negatives: negative samples per pair [k].
        lr, min_lr: initial learning rate and its floor (linear decay) [eta].
        reg: L2 penalty on updated embedding rows [lambda]. beta_reg: L2 penalty on the kernel
            weights (multi only) [lambda_beta].
        p, q: node2vec return and in-out parameters (1, 1 = uniform walks).
        epochs: passes over the corpus. workers: threads (None = all cores).
        random_state: seed; with ``workers=1`` a fit is bit-for-bit reproducible. With more
            threads the lock-free updates race, so results vary slightly from run to run.
        keep_walks: keep the walk corpus in memory (``walks_``) instead of streaming it.
        chunk_walks: walks generated and trained per chunk. verbose: show a progress bar.
        beta_update: ``"projected"`` (the paper's step on the kernel weights, kept >= 0) or
            ``"simplex"`` (weights on the simplex, exponentiated-gradient / mirror-descent
            step; see :func:`kernelne.trainer.train_walks`). With ``loss="loglik"`` the weights
            are always on the simplex: the log-likelihood reads the mixed kernel as a
            probability, and projected weights summing above 1 collapsed (Cora .27).
        robust: restart with the kernel narrowed 8x (in ``||x - y||^2``; at most twice) when,
            after 5% of the run (docs/METHOD.md §7: when, and a second look), the rows are
            forming the collapsed "shell" that wide kernels fall into on dense graphs
            (docs/COLLAPSE.md). ``False`` is the paper's algorithm;
            on graphs where nothing collapses (all seven of the paper's) both are identical.
        shared_negatives: draw one set of k negatives per center for all its contexts and take
            their terms as one step weighted by the number of contexts (Ji et al. 2016; see
            :func:`kernelne.trainer.train_walks`): the same loss, about 4x fewer kernel
            evaluations and random rows per pair. ``False`` (default) is the paper's k
            negatives per pair. On large graphs (10^5+ nodes) training is several times faster.
        partitions: train in ``P`` partitions, bucket by bucket with only two blocks of rows in
            memory, on this machine or on a Dask cluster (``fit(graph, client=...)``); see
            :mod:`kernelne.partitioned` and docs/DISTRIBUTED.md. 1 (default) is the plain fit.
        partition_dir: the folder of a partitioned fit's blocks, walks and checkpoints (a
            fit restarted with the same folder resumes; ``embedding_`` is then memory-mapped
            from it). ``None``: a temporary folder, removed after the fit.
        rounds: a partitioned fit's rounds of walks (each trained in ``P`` steps); ``None``:
            20 (:data:`kernelne.partitioned.DEFAULT_ROUNDS`).
        loss: ``"squared"`` (the paper's ``(y - k)^2``, default) or ``"loglik"`` (the kernel
            read as an edge probability: ``-log k`` for a context, ``-log(1 - k)`` for a
            negative, ``k`` clipped to ``[1e-4, 0.99]``; docs/METHOD.md §2).
        window_shrink: each center draws its window uniformly in ``1..window`` (word2vec's
            shrinking window: a context at distance ``j`` weighs ``(window - j + 1) / window``).
            ``False`` (default): every context in the window weighs 1, the paper's setting.
        subsample: word2vec's frequent-node subsampling threshold ``t``: an occurrence of
            ``v`` in the walks is dropped (as center and as context) with probability
            ``1 - sqrt(t / f_v)``, ``f_v`` its frequency in the walks; 0 (default) keeps all.
        negative_pool: each walk draws a pool of this many nodes from the noise distribution
            and each of its pairs picks its k negatives uniformly from the pool (docs/METHOD.md
            §8): a walk reads Q random rows of B instead of k per pair. 0: k fresh draws per
            pair (the paper's). ``"auto"`` (default): 128 on graphs of 100,000 nodes or more,
            where those random rows are the cost of training (about 1.8x faster per pair at
            1M nodes, Micro-F1 within 0.002 at 100k), 0 below (the paper's graphs).
        beta_select: how MKernelNE's weights are set (``kernel="multi"`` only; docs/METHOD.md
            §4). ``"train"`` (default): learned by SGD with the rows, as above. ``"uniform"``:
            fixed at ``1/m``. A sequence of ``m`` weights (>= 0): fixed at those. ``"validation"``:
            chosen among each single kernel of the dictionary, ``"uniform"`` and ``"train"`` by
            a validation score (held-out labels passed as ``fit(graph, y)``, else held-out
            edges), and the winner fitted on the whole graph; see
            :mod:`kernelne.kernel_choice` (``beta_choice_`` holds every candidate's score).

    Multiple kernels (``kernel="multi"``): ``k = sum_j beta_j k_j``, the weights start at
    ``beta_j = 1/m`` (the average kernel, ``k(x, x) = 1`` like a single kernel) and take one
    projected SGD step per (center, context) pair, ``beta_j <- max(0, beta_j + lr (2 sum_terms
    (y - k) k_j - beta_reg beta_j))``. The start barely matters: with ``B = 0`` the first pairs'
    negatives pull every weight to about 0, and they regrow from there (``beta_j = 1`` gives the
    same run). In practice one kernel takes (almost) all the weight (ending between 1 and 1.5)
    and the fit then matches that kernel alone; a larger ``beta_reg`` spreads the weights but
    shrinks them (on Cora, 1.0 did not beat the best single kernel).

    Every fit checks its result: NaN/inf rows (diverged) or no trainable pair raise
    :class:`~kernelne.errors.TrainingError`; an uninformative (collapsed) embedding issues a
    :class:`~kernelne.diagnostics.DegenerateEmbeddingWarning` naming the likely cause and fix.

    Attributes after ``fit``: ``embedding_`` (n x d, node order; the center vectors A),
    ``context_embedding_`` (B), ``nodes_`` (the user's node ids), ``kernels_``, ``beta_`` and
    ``beta_history_`` (kernel weights; snapshots during training), ``n_pairs_``, ``n_walks_``,
    ``isolated_nodes_`` (user ids), ``fit_seconds_``, ``graph_summary_``, ``loss_history_``
    (one row per chunk: pairs so far, mean positive term ``(1 - k)^2``, mean negative term
    ``k^2``), ``health_`` (:class:`~kernelne.diagnostics.EmbeddingHealth`), ``kernel_scale_``
    (1, or the robust fit's narrowing), ``narrowed_`` (what each restart saw) and
    ``shell_checks_`` (every restart test's figures and verdict, restarts included),
    ``negative_pool_`` (the pool size used: ``negative_pool`` resolved, 0 = per pair),
    ``walk_counts_`` (each node's occurrences in the walks: the negatives' unigram counts),
    ``degrees_`` (each node's degree in the fitted graph), ``beta_choice_`` (with
    ``beta_select="validation"``: the :class:`~kernelne.kernel_choice.KernelChoice`),
    ``directed_`` (how the graph was read), ``stage_seconds_`` (walks, training) and
    ``compile_seconds_`` (numba's first-run compilation, left out of the stages; 0 once its
    disk cache holds the code).

    New nodes without retraining: :meth:`save_model` / :meth:`load_model` keep a fitted model
    in one file; :meth:`partial_fit` adds a grown graph's new nodes with the old rows frozen
    (:mod:`kernelne.update`).
    """

    def __init__(
        self,
        kernel: str = "gauss",
        sigma: float = math.sqrt(2.0),
        alpha: float = 1.0,
        kernels: list[str] | None = None,
        dim: int = 128,
        walks_per_node: int = 80,
        walk_length: int = 10,
        window: int = 10,
        negatives: int = 5,
        lr: float = 0.025,
        min_lr: float = 1e-4,
        reg: float = 0.01,
        beta_reg: float = 0.01,
        p: float = 1.0,
        q: float = 1.0,
        epochs: int = 1,
        workers: int | None = None,
        random_state: int | None = None,
        keep_walks: bool = False,
        chunk_walks: int = 8192,
        verbose: bool = False,
        beta_update: str = "projected",
        robust: bool = True,
        shared_negatives: bool = False,
        partitions: int = 1,
        partition_dir: str | None = None,
        rounds: int | None = None,
        loss: str = "squared",
        window_shrink: bool = False,
        subsample: float = 0.0,
        negative_pool: int | str = "auto",
        beta_select: str | Sequence[float] = "train",
    ):
        self.kernel = kernel
        self.sigma = sigma
        self.alpha = alpha
        self.kernels = kernels
        self.dim = dim
        self.walks_per_node = walks_per_node
        self.walk_length = walk_length
        self.window = window
        self.negatives = negatives
        self.lr = lr
        self.min_lr = min_lr
        self.reg = reg
        self.beta_reg = beta_reg
        self.p = p
        self.q = q
        self.epochs = epochs
        self.workers = workers
        self.random_state = random_state
        self.keep_walks = keep_walks
        self.chunk_walks = chunk_walks
        self.verbose = verbose
        self.beta_update = beta_update
        self.robust = robust
        self.shared_negatives = shared_negatives
        self.partitions = partitions
        self.partition_dir = partition_dir
        self.rounds = rounds
        self.loss = loss
        self.window_shrink = window_shrink
        self.subsample = subsample
        self.negative_pool = negative_pool
        self.beta_select = beta_select

    def kernel_dictionary(self) -> list[Kernel]:
        """The kernels this model combines (one, unless ``kernel="multi"``)."""
        name = self.kernel.lower()
        if name in ("multi", "multiple"):
            specs = self.kernels if self.kernels is not None else DEFAULT_DICTIONARY
            if isinstance(specs, str):
                specs = specs.split(",")
            return [parse_kernel(s) if isinstance(s, str) else s for s in specs]
        if name in ("gauss", "gaussian"):
            return [Kernel("gauss", float(self.sigma))]
        if name in ("sch", "schoenberg"):
            return [Kernel("schoenberg", float(self.alpha))]
        if name in ("linear", "ne", "nokernel"):
            return [Kernel("linear")]
        raise ValueError(
            f"unknown kernel {self.kernel!r} (use gauss, schoenberg, linear or multi)"
        )

    def _check_params(self) -> None:
        for name in ("dim", "walks_per_node", "walk_length", "window", "epochs"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.negatives < 0:
            raise ValueError(f"negatives must be >= 0, got {self.negatives}")
        if not 0 < self.min_lr <= self.lr:
            raise ValueError(f"need 0 < min_lr <= lr, got min_lr={self.min_lr}, lr={self.lr}")
        if self.reg < 0 or self.beta_reg < 0:
            raise ValueError("reg and beta_reg must be >= 0")
        if int(self.partitions) < 1 or (self.rounds is not None and int(self.rounds) < 1):
            raise ValueError(f"partitions and rounds must be at least 1, got partitions="
                             f"{self.partitions}, rounds={self.rounds}")
        if int(self.partitions) > 1 and self.shared_negatives:
            raise ValueError("partitioned training (partitions > 1) uses negatives per pair: "
                             "drop shared_negatives")
        if self.beta_update not in BETA_UPDATES:
            raise ValueError(f"beta_update must be one of {', '.join(BETA_UPDATES)}, "
                             f"got {self.beta_update!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        if not isinstance(self.window_shrink, (bool, np.bool_)):
            raise ValueError(f"window_shrink must be True or False, got {self.window_shrink!r}")
        negative_pool_size(self.negative_pool, 0)  # raises ValueError if it is not a setting
        if not (isinstance(self.beta_select, str) and self.beta_select == "train"):
            fixed_weights(self.beta_select, len(self.kernel_dictionary()))  # ValueError if bad
            if int(self.partitions) > 1:
                raise ValueError("partitioned training (partitions > 1) learns the kernel "
                                 "weights: use beta_select='train'")
        try:
            subsample = float(self.subsample)
        except (TypeError, ValueError):
            subsample = math.nan
        if not (math.isfinite(subsample) and 0 <= subsample < 1):
            raise ValueError(f"subsample must be a threshold in [0, 1) (0 = off; word2vec "
                             f"uses 1e-3 to 1e-5), got {self.subsample!r}")
        self._check_finite()

    def _check_finite(self) -> None:
        """A ``ValueError`` naming the first float parameter that is NaN or infinite (the
        comparisons of :meth:`_check_params` let NaN through)."""
        for name in ("lr", "min_lr", "reg", "beta_reg", "sigma", "alpha", "p", "q"):
            value = getattr(self, name)
            if value is None:  # unused by the kernel (sigma, alpha) or refused where used
                continue
            try:
                finite = math.isfinite(float(value))
            except (TypeError, ValueError):
                finite = False
            if not finite:
                raise ValueError(f"{name} must be a finite number, got {value!r}")

    def fit(self, graph: Any, y: Any = None, monitor: Callable | None = None,
            client: Any = None) -> KernelNE:
        """Learn embeddings of ``graph`` (any source :func:`kernelne.graph.load_graph` takes).

        ``y``: only with ``beta_select="validation"``, held-out labels to choose the kernel
        weights on (a label file, ``(node ids, labels)`` or labels in the graph's node order:
        only labels you may train on); otherwise ignored (the fit is unsupervised).
        ``monitor(pairs, A, B)``, if given, is called after every chunk of walks with the
        number of pairs trained so far and the current rows (to watch training; do not keep
        references to the arrays: they change in place). ``client``: a
        ``distributed.Client`` whose workers train a partitioned fit's buckets.
        """
        self._check_params()
        kernels = self.kernel_dictionary()
        g = load_graph(graph)
        start = time.perf_counter()
        if isinstance(self.beta_select, str) and self.beta_select == "validation":
            if client is not None or monitor is not None:
                raise ValueError("beta_select='validation' fits several candidates: no "
                                 "client or monitor")
            fit_chosen(self, g, y)
            self.fit_seconds_ = time.perf_counter() - start  # all candidates' fits
            return self
        seed = seed_to_uint64(self.random_state)
        fixed = fixed_weights(self.beta_select, len(kernels))  # None: learned
        # fixed weights: zero-weight kernels are left out of training (one-hot = a single kernel)
        active = kernels if fixed is None else [k for k, b in zip(kernels, fixed, strict=True)
                                                if b > 0]
        if int(self.partitions) > 1:
            return self._fit_partitioned(g, kernels, seed, client, start)
        if client is not None:
            raise ValueError("a Dask client trains partitioned fits only: set partitions > 1")
        check_row_memory(g.n_nodes, int(self.dim))  # in memory (partitioned: on disk)
        corpus = WalkCorpus(
            g, self.walks_per_node, self.walk_length, self.p, self.q, int(seed), self.chunk_walks
        )
        with numba_threads(self.workers), watch_compiling(self.verbose) as compiled:
            counts = np.zeros(g.n_nodes, dtype=np.int64)
            stored = [] if self.keep_walks else None
            bar = tqdm(total=corpus.n_walks, unit="walk", disable=not self.verbose,
                       desc="counting", dynamic_ncols=True)
            with bar:
                for _, walks in corpus:
                    count_visits(walks, counts)
                    if stored is not None:
                        stored.append(walks)
                    bar.update(len(walks))
            negatives = alias_table(counts.astype(np.float64) ** 0.75)
            keep = (keep_probabilities(counts, float(self.subsample))
                    if self.subsample > 0 else None)  # subsampling: None = off
            counting_seconds = time.perf_counter() - start
            rho, narrowed, simplex = 1.0, [], self.simplex_weights()
            can_narrow = self.robust and kernels[0].kind != "linear"
            checks: list[dict] = []
            given_up_walks = given_up_training = 0.0  # seconds of runs a restart gave up
            while True:
                run = _Run(self, g, corpus, stored, negatives, keep, active, seed, rho, simplex,
                           None if fixed is None else fixed[fixed > 0])
                looks = run.train(can_narrow and len(narrowed) < MAX_NARROWING, monitor)
                checks += looks
                if not looks or not looks[-1]["collapsing"]:
                    break
                shell = looks[-1]
                given_up_walks += run.walk_seconds
                given_up_training += run.train_seconds
                narrowed.append(shell)
                rho *= NARROWING
                simplex = simplex or shell["weights_collapsed"]
                del run  # its rows are given up: freed before the next run makes its own
        if run.pairs == 0:
            raise TrainingError(
                f"no (center, context) pair to train on in {g.summary()} with walk_length="
                f"{self.walk_length}, window={self.window}: the graph has no edges between "
                "distinct nodes or the walks are too short (walk_length >= 2 needed)"
            )
        check_finite(run.A, run.B, run.beta)
        self.health_ = embedding_health(
            run.A, run.B, g.indptr, g.indices, counts > 0, seed=int(seed % 2**32)
        )
        mean_degree = len(g.indices) / max(1, int((g.degrees > 0).sum()))
        # shared negatives: a low AUC off the shell means too few walks, not a too-wide kernel
        if not (self.shared_negatives
                and warn_if_undertrained(self.health_, int(self.walks_per_node))):
            warn_if_collapsed(self.health_, mean_degree,
                              ", ".join(str(k) for k in self.effective_kernels_of(kernels, rho)),
                              self.robust)
        self.embedding_ = run.A
        self.context_embedding_ = run.B
        self.nodes_ = g.nodes
        self.kernels_ = kernels
        self.kernel_scale_ = rho
        self.narrowed_ = narrowed
        self.shell_checks_ = checks
        self.beta_update_ = "simplex" if simplex else "projected"
        self.beta_ = run.beta if fixed is None else fixed
        self.beta_history_ = np.array(run.history) if fixed is None else fixed[None, :]
        self.n_pairs_ = int(run.pairs)
        self.loss_history_ = np.array(run.loss_rows).reshape(-1, 3)
        self.n_walks_ = self.epochs * corpus.n_walks
        self.isolated_nodes_ = g.nodes[g.isolated_nodes()]
        self.negative_pool_ = negative_pool_size(self.negative_pool, g.n_nodes)
        self.walk_counts_ = counts
        self.degrees_ = g.degrees
        self.walks_ = np.concatenate(stored) if stored else None
        self.graph_summary_ = g.summary()
        self.directed_ = bool(g.directed)
        self.fit_seconds_ = time.perf_counter() - start
        training_compile = compiled.of("_train_blocks")  # the rest: walks, counts, alias
        self.stage_seconds_ = {  # a restart's given-up run included
            "walks": counting_seconds + run.walk_seconds + given_up_walks
            - (compiled.total - training_compile),
            "training": run.train_seconds + given_up_training - training_compile,
        }
        self.compile_seconds_ = compiled.total  # numba's first-run compilation, 0 later
        return self

    def _fit_partitioned(self, g: Graph, kernels: list[Kernel], seed, client,
                         start: float) -> KernelNE:
        """:func:`kernelne.partitioned.fit_partitioned`, and the fitted attributes."""
        with numba_threads(self.workers):
            run = fit_partitioned(self, g, kernels, seed, client, progress=self.verbose)
            A, B = run.A, run.B
            if self.partition_dir is None:  # a temporary folder: the rows come into memory
                try:
                    A, B = np.array(A), np.array(B)
                finally:
                    remove_folder(Path(run.A.filename).parent)
            if run.pairs == 0:
                raise TrainingError(f"no (center, context) pair to train on in {g.summary()}")
            check_finite(A, B, run.beta)
            self.health_ = embedding_health(A, B, g.indptr, g.indices, run.counts > 0,
                                            seed=int(run.seed % 2**32))  # a resumed fit's
        mean_degree = len(g.indices) / max(1, int((g.degrees > 0).sum()))
        warn_if_collapsed(self.health_, mean_degree,
                          ", ".join(str(k) for k in self.effective_kernels_of(kernels, run.scale)),
                          self.robust)
        self.embedding_, self.context_embedding_ = A, B
        self.nodes_ = g.nodes
        self.kernels_ = kernels
        self.kernel_scale_ = run.scale
        self.narrowed_ = run.narrowed
        self.shell_checks_ = run.checks
        self.beta_update_ = "simplex" if run.simplex else "projected"
        self.beta_ = run.beta
        self.beta_history_ = np.array([run.beta])
        self.n_pairs_ = run.pairs
        self.loss_history_ = np.array(run.losses, dtype=float).reshape(-1, 3)
        self.n_walks_ = self.epochs * self.walks_per_node * g.n_nodes
        self.isolated_nodes_ = g.nodes[g.isolated_nodes()]
        self.negative_pool_ = negative_pool_size(self.negative_pool, g.n_nodes)
        self.walk_counts_ = run.counts
        self.degrees_ = g.degrees
        self.walks_ = None
        self.graph_summary_ = g.summary()
        self.directed_ = bool(g.directed)
        self.fit_seconds_ = time.perf_counter() - start
        self.stage_seconds_ = {"walks": run.walk_seconds, "training": run.train_seconds}
        self.partition_run_ = run
        return self

    def partial_fit(self, graph: Any, touched_rate: float = 0.0,
                    new_walks_factor: int = 2) -> KernelNE:
        """Embed the new nodes of ``graph`` (the grown graph: old nodes plus new ones) without
        retraining the old rows; see :func:`kernelne.update.partial_fit`."""
        return partial_fit(self, graph, touched_rate, new_walks_factor)

    def save_model(self, path: str | Path) -> None:
        """Write the fitted model (rows A and B, settings, ids, kernels) to one ``.npz`` file."""
        save_model(self, path)

    @classmethod
    def load_model(cls, path: str | Path) -> KernelNE:
        """Read a model written by :meth:`save_model` (``InputError`` if it is not one)."""
        return load_model(path, cls)

    def simplex_weights(self) -> bool:
        """Whether MKernelNE's weights start on the simplex step: ``beta_update="simplex"``, or
        the log-likelihood loss (docs/METHOD.md §4)."""
        return self.beta_update == "simplex" or self.loss == "loglik"

    def effective_kernels(self) -> list[Kernel]:
        """The fitted kernels with the kernel scale applied (the user's, unless narrowed)."""
        return self.effective_kernels_of(self.kernels_, self.kernel_scale_)

    @staticmethod
    def effective_kernels_of(kernels: list[Kernel], rho: float) -> list[Kernel]:
        return [k.narrowed(rho) for k in kernels]


class _Run:
    """One training run from a fresh initialisation: ``A ~ U(+-0.5/d)``, ``B = 0``, ``beta =
    1/m``; distance kernels see ``rho * ||a - b||^2``."""

    def __init__(self, model, graph, corpus, stored, negatives, keep, kernels, seed, rho,
                 simplex, beta=None):
        self.model, self.graph, self.corpus, self.stored = model, graph, corpus, stored
        self.noise = Noise(*negatives)
        self.keep = keep  # subsampling's keep probabilities, None: off
        self.seed = seed
        n, d = graph.n_nodes, int(model.dim)
        rng = np.random.default_rng(int(seed))
        try:
            self.A = uniform_rows(rng, n, d, 0.5 / d)
            self.B = aligned_rows(n, d, 0.0)
        except MemoryError:
            raise out_of_memory(n, d) from None
        self.kernel = kernel_arrays(kernels, None if beta is None else beta.copy(), scale=rho)
        self.beta, self.scale = self.kernel.beta, self.kernel.scale
        self.learn_beta = len(self.beta) > 1 and beta is None  # beta given: fixed weights
        self.simplex = simplex
        self.history = [self.beta.copy()]
        self.loss_rows: list[tuple[int, float, float]] = []
        self.pairs = 0
        self.walk_seconds = 0.0  # generating walks while training (streamed corpus)
        self.train_seconds = 0.0

    def train(self, check_shell: bool, monitor: Callable | None = None) -> list[dict]:
        """Train on every chunk; with ``check_shell``, test the rows whenever
        :func:`~kernelne.robust.look_due` says so and return the tests' figures; training
        stops at a test that finds them ``collapsing``."""
        m, corpus = self.model, self.corpus
        total_chunks = m.epochs * corpus.n_chunks
        min_pairs = CHECKPOINT_PAIRS * int((self.graph.degrees > 0).sum())
        total_centers = float(m.epochs * corpus.n_walks * corpus.walk_length)
        snapshot_every = max(1, total_chunks // 10)
        settings = train_settings(m, total_centers, self.seed, self.graph.n_nodes,
                                  learn_beta=self.learn_beta,
                                  beta_simplex=self.simplex)
        losses = np.zeros(2)
        bar = tqdm(total=m.epochs * corpus.n_walks, unit="walk", disable=not m.verbose,
                   desc="training", dynamic_ncols=True)
        step = 0
        looks: list[dict] = []
        with bar:
            for epoch in range(m.epochs):
                chunks = (
                    zip(range(0, corpus.n_walks, corpus.chunk_walks), self.stored, strict=True)
                    if self.stored is not None else corpus
                )
                before = time.perf_counter()
                for first, walks in chunks:
                    losses[:] = 0
                    started = time.perf_counter()
                    self.walk_seconds += started - before
                    chunk_pairs = train_walks(
                        walks, epoch * corpus.n_walks + first, self.A, self.B, self.kernel,
                        self.noise, settings, losses, keep=self.keep,
                    )
                    self.pairs += chunk_pairs
                    before = time.perf_counter()
                    self.train_seconds += before - started
                    self.loss_rows.append((
                        self.pairs, losses[0] / max(chunk_pairs, 1),
                        losses[1] / max(chunk_pairs * m.negatives, 1),
                    ))
                    bar.update(len(walks))
                    if monitor is not None:
                        monitor(self.pairs, self.A, self.B)
                    step += 1
                    if settings.learn_beta and step % snapshot_every == 0:
                        self.history.append(self.beta.copy())
                    if check_shell and look_due(step, total_chunks, self.pairs, min_pairs,
                                                looks):
                        look = shell_figures(
                            self.A, self.B, self.graph.indptr, self.graph.indices,
                            self.graph.degrees > 0, self.beta, self.scale[0], self.pairs,
                            previous=looks[0] if looks else None)
                        if look is None:  # not finite or too few rows: no verdict
                            check_shell = False
                        else:
                            looks.append(look)
                            if look["collapsing"]:
                                return looks
        return looks


__all__ = ["KernelNE", "DEFAULT_DICTIONARY", "Graph"]
