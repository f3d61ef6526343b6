"""``KernelNE``: the estimator (scikit-learn conventions) that turns a graph into embeddings.

Celikkanat & Malliaros, "Kernel Node Embeddings", GlobalSIP 2019; multiple kernels from
Celikkanat, Shen & Malliaros, TKDE 2022. Walks come from :mod:`kernelne.engine.walks`, the SGD from
:mod:`kernelne.engine.trainer`, the kernels from :mod:`kernelne.engine.kernels`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kernelne.engine.compiling import announce_first_compile
from kernelne.engine.propagation import choose_propagation, is_auto
from kernelne.engine.sampling import seed_to_uint64
from kernelne.errors import ParamError
from kernelne.graphs.graph import Graph
from kernelne.model.device import refuse_on_device
from kernelne.model.drivers import fit_in_memory, fit_partitioned_model
from kernelne.model.estimator import EmbeddingEstimator, is_matrix_input
from kernelne.model.kernel_choice import fit_chosen, fixed_weights
from kernelne.model.kernel_methods import DEFAULT_DICTIONARY, KernelMethods
from kernelne.model.model_file import load_model, save_model
from kernelne.model.params import check_params, param
from kernelne.model.update import partial_fit

BETA_UPDATES = param("beta_update").rule.choices


class KernelNE(KernelMethods, EmbeddingEstimator):
    """Kernel node embeddings learned from random walks by SGD with negative sampling.

    Celikkanat & Malliaros, "Kernel Node Embeddings" (GlobalSIP 2019) for one kernel;
    MKernelNE (Celikkanat, Shen & Malliaros, TKDE 2022) for a learned combination of kernels.
    The paper's symbol of each parameter is given in brackets.

    Parameters
    ----------
    kernel : {"auto", "gauss", "schoenberg", "linear", "multi"}, default "auto"
        The kernel: Gaussian, Schoenberg, ``"linear"`` (the "NE" ablation, no kernel) or
        ``"multi"`` (a learned non-negative combination of ``kernels``). ``"auto"``: chosen at
        fit time by ``setting`` (the Gaussian, or the Schoenberg kernel of the dense setting);
        a kernel given is used as given, ``"gauss"`` too.
    sigma : float or "auto", default "auto"
        Gaussian width [sigma], in the paper's form ``exp(-||x-y||^2 / sigma^2)``;
        ``"auto"`` is ``sqrt(2)``, sigma^2 = 2 (a width given, ``sqrt(2)`` too, keeps the
        Gaussian: the automatic setting does not apply). The authors' code's width is
        ``sigma_code = sigma / sqrt(2)``.
    alpha : float, default 1.0
        Schoenberg exponent [alpha] in ``(1 + ||x-y||^2)^(-alpha)``.
    kernels : list of str, optional
        The dictionary for ``kernel="multi"``, e.g. ``["gauss:1", "sch:2"]`` (``gauss:SIGMA``,
        ``sch:ALPHA``). None: :data:`~kernelne.model.kernelne.DEFAULT_DICTIONARY`.
    dim : int, default 128
        Embedding dimension [d].
    walks_per_node : int or "auto", default "auto"
        Walks started from every node [N]: with ``walk_length``, the size of the walk corpus
        (at most 10,000). ``"auto"``: 80 (the paper's), or
        :data:`~kernelne.model.auto_setting.LARGE_GRAPH_WALKS` where ``setting="auto"``
        trains in memory a graph of at least
        :data:`~kernelne.model.auto_setting.LARGE_GRAPH_NODES` nodes whose mean degree is at
        least :data:`~kernelne.engine.propagation.AUTO_MIN_DEGREE`
        (:func:`~kernelne.model.auto_setting.walk_budget`); ``setting_["params"]`` holds the
        value taken.
    walk_length : int, default 10
        Nodes per walk [L] (at most 100,000).
    window : int, default 10
        Context window [gamma] (at most 1,000).
    negatives : int, default 5
        Negative samples per (center, context) pair [k] (at most 1,000).
    lr : float, default 0.025
        Initial learning rate [eta], decayed linearly down to ``min_lr``.
    min_lr : float, default 1e-4
        Floor of the linearly decaying learning rate.
    reg : float, default 0.01
        L2 penalty on the updated embedding rows [lambda].
    beta_reg : float, default 0.01
        L2 penalty on the kernel weights (``kernel="multi"`` only) [lambda_beta].
    p : float, default 1.0
        node2vec's return parameter (``p = q = 1``: uniform walks).
    q : float, default 1.0
        node2vec's in-out parameter.
    epochs : int, default 1
        Passes over the walk corpus (at most 1,000).
    workers : int, optional
        Threads; None uses all cores. A partitioned fit on a Dask client gives each bucket
        task this many threads (None: 1, bit for bit; more race within the bucket).
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
        ``None`` (fresh entropy), an integer seed >= 0, or a NumPy random state or generator
        (each fit draws its seed from it), as :func:`sklearn.utils.check_random_state`. With
        an integer seed and ``workers=1`` a fit is bit-for-bit reproducible; with more threads
        the lock-free updates race, so results vary slightly from run to run.
    keep_walks : bool, default False
        Keep the walk corpus after the fit (``walks_``). During a fit the counting pass'
        chunks are held for training wherever they fit in memory
        (:func:`~kernelne.model.restarts.walks_held`), else made again.
    chunk_walks : int, default 8192
        Walks generated and trained per chunk (at most 1,000,000).
    verbose : bool, default False
        Show a progress bar. Either way, the first fit of a process that has numba compile
        its loops (no disk cache yet) says so in one line on stderr,
        ``kernelne: compiling (first run only)...``;
        ``kernelne.engine.compiling.ANNOUNCE = False`` silences it.
    beta_update : {"projected", "simplex"}, default "projected"
        The step on MKernelNE's kernel weights: ``"projected"`` is the paper's, with the
        weights kept >= 0; ``"simplex"`` keeps the weights on the simplex with an
        exponentiated-gradient (mirror-descent) step (see
        :func:`kernelne.engine.trainer.train_walks`). With ``loss="loglik"`` the weights are always
        on the simplex: the log-likelihood reads the mixed kernel as a probability, and
        projected weights summing above 1 collapsed (Cora .27).
    robust : bool, default True
        Restart with the kernel narrowed 8x (in ``||x - y||^2``; at most twice) when, after 5% of
        the run (:doc:`METHOD </METHOD>` §7: when, and a second look), the rows are forming the
        collapsed "shell" that wide kernels fall into on dense graphs (see :doc:`/COLLAPSE`).
        ``False`` is the paper's algorithm; on graphs where nothing collapses (all seven of the
        paper's) both are identical.
    shared_negatives : bool, default False
        Draw one set of k negatives per center for all its contexts and take their terms as
        one step weighted by the number of contexts (Ji et al. 2016; see
        :func:`kernelne.engine.trainer.train_walks`): the same loss, about 4x fewer kernel
        evaluations and random rows per pair. ``False`` is the paper's k negatives per pair.
        On large graphs (10^5+ nodes) training is several times faster.
    partitions : int, default 1
        Train in ``P`` partitions, bucket by bucket with only two blocks of rows in memory, on
        this machine or on a Dask cluster (``fit(graph, client=...)``); see
        :mod:`kernelne.partitioned.driver` and :doc:`/DISTRIBUTED`. 1 is the plain fit.
    partition_dir : str, optional
        The folder of a partitioned fit's blocks, walks and checkpoints (a fit restarted with
        the same folder resumes; ``embedding_`` is then memory-mapped from it), or an fsspec
        URL (``s3://bucket/run``, ``gs://...``; ``memory://...`` in one process) that Dask
        workers reach without a shared disk (:mod:`kernelne.partitioned.store`; ``embedding_``
        is then memory-mapped from a local temporary file). None: a temporary folder,
        removed after the fit, so the rows are read into memory at its end (give a folder
        when the model does not fit in memory).
    rounds : int, optional
        A partitioned fit's rounds of walks (each trained in ``P`` steps); None: 20
        (:data:`kernelne.partitioned.driver.DEFAULT_ROUNDS`).
    loss : {"auto", "squared", "loglik"}, default "auto"
        ``"squared"`` is the paper's ``(y - k)^2``; ``"loglik"`` reads the kernel as an edge
        probability: ``-log k`` for a context, ``-log(1 - k)`` for a negative, with ``k``
        clipped to ``[1e-4, 0.99]`` (:doc:`METHOD </METHOD>` §2). ``"auto"``: ``"squared"``
        (a loss given, ``"squared"`` too, turns the automatic setting off).
    window_shrink : bool or "auto", default "auto"
        Each center draws its window uniformly in ``1..window`` (word2vec's shrinking window:
        a context at distance ``j`` weighs ``(window - j + 1) / window``). ``False``: every
        context in the window weighs 1, the paper's setting. ``"auto"``: chosen at fit time
        by ``setting`` (``True`` in the dense setting, else ``False``).
    subsample : float, default 0.0
        word2vec's frequent-node subsampling threshold ``t``: an occurrence of ``v`` in the
        walks is dropped (as center and as context) with probability ``1 - sqrt(t / f_v)``,
        ``f_v`` its frequency in the walks; 0 keeps all.
    negative_pool : int or "auto", default "auto"
        Each walk draws a pool of this many nodes from the noise distribution and each of its pairs
        picks its k negatives uniformly from the pool (:doc:`METHOD </METHOD>` §8): a walk reads Q
        random rows of B instead of k per pair. 0: k fresh draws per pair (the paper's). ``"auto"``:
        128 on graphs of 100,000 nodes or more, where those random rows are the cost of training
        (about 1.8x faster per pair at 1M nodes, Micro-F1 within 0.002 at 100k), 0 below (the
        paper's graphs). At most 1,000,000.
    beta_select : {"train", "uniform", "validation"} or sequence of float, default "train"
        How MKernelNE's weights are set (``kernel="multi"`` only; :doc:`METHOD </METHOD>` §4).
        ``"train"``: learned by SGD with the rows (see Notes). ``"uniform"``: fixed at ``1/m``. A
        sequence of ``m`` weights (>= 0): fixed at those. ``"validation"``: chosen among each single
        kernel of the dictionary, ``"uniform"`` and ``"train"`` by a validation score (held-out
        labels passed as ``fit(graph, y)``, else held-out edges), and the winner fitted on the whole
        graph; see :mod:`kernelne.model.kernel_choice` (``beta_choice_`` holds every candidate's
        score).
    setting : {"auto", "given"}, default "auto"
        ``"auto"``: where the graph's mean degree (of the undirected graph, over the nodes with
        an edge) is at least 8, train with the Schoenberg kernel and shrinking windows
        (:data:`~kernelne.model.auto_setting.DENSE_SETTING`); below, start with the parameters
        as given and, if the robust restart test finds the rows collapsing onto a shell,
        restart with that dense setting instead of a narrower Gaussian. This applies only
        while ``kernel``, ``sigma``, ``loss`` and ``window_shrink`` are ``"auto"`` (not
        given: a value given is used, the paper's too), ``kernels`` and ``beta_select`` at
        their defaults, ``robust=True`` and ``partitions=1``; ``setting_`` says what was kept
        and why (:mod:`kernelne.model.auto_setting`). On a dense graph of
        :data:`~kernelne.model.auto_setting.LARGE_GRAPH_NODES` nodes or more (and ``alpha``
        at its default) the kernel starts 8x narrower, as the restart test would narrow it
        (:func:`~kernelne.model.auto_setting.start_scale`; ``setting_["scale"]``).
        ``"given"``: the parameters as given, always (``"auto"``: the paper's values).
    normalize : {"auto", "none"}, default "auto"
        ``"auto"``: ``embedding_`` and ``context_embedding_`` are multiplied by one factor
        (``output_scale_``) that brings the median row norm to
        :data:`~kernelne.model.auto_setting.OUTPUT_NORM` (2.5), the scale at which logistic
        regression at C = 1 scores about as it does with C chosen; cosines, neighbours and
        k-means clusters do not change. ``"none"``: the rows as trained (the paper's; set it,
        with ``setting="given"``, ``robust=False`` and ``propagate=False``, for the paper's
        algorithm bit for bit).
    propagate : bool or str, default "auto"
        Spectrally propagate ``embedding_`` after training (ProNE's enhancement,
        :func:`kernelne.engine.propagation.propagate_rows`: a Chebyshev band-pass filter on
        the normalised Laplacian, then a thin SVD and unit rows, times
        :data:`~kernelne.model.auto_setting.OUTPUT_NORM` with ``normalize="auto"``). ``True``:
        order 10, mu 0.2, theta 0.5; ``"order=K,mu=M,theta=T"``: those; ``False``: off;
        ``"auto"``: ``True`` where the graph's mean degree is at least 8, it has at least
        ``dim`` nodes and the filter's three ``n x dim`` float32 buffers fit in the memory
        available, in a fit in memory, off otherwise
        (:func:`~kernelne.engine.propagation.choose_propagation`; ``setting_["propagation"]``
        says which and why). A propagation given on a graph of fewer nodes than ``dim`` is
        refused before the fit (its thin SVD keeps one column per node at most).
        ``context_embedding_`` and ``trained_embedding_`` stay as trained. A partitioned fit
        given ``True`` propagates the assembled rows (in memory, ``n x dim`` float32, even
        with a ``partition_dir``). The propagation is global: :meth:`partial_fit` trains the
        new rows on the rows as trained, then propagates every row again on the grown graph.
    device : {"cpu", "cuda"}, default "cpu"
        The training engine: numba on the CPU's cores, or numba-cuda on a CUDA GPU
        (:mod:`kernelne.engine.cuda`; the extras ``kernelne[cuda12]`` or ``kernelne[cuda13]``):
        rows A and B on the device in float32, walks made on the CPU and streamed to it, the
        same loss, gradients and learning-rate schedule. It trains one kernel (Gaussian,
        Schoenberg or linear) with either loss, a shrinking window and the negative pool; it
        refuses ``kernel="multi"``, ``beta_select`` other than ``"train"``, ``partitions > 1``,
        ``shared_negatives``, ``subsample`` and ``keep_walks``. The restart test and the
        propagation run on the CPU; :meth:`partial_fit` trains on the CPU.

    Attributes
    ----------
    embedding_ : ndarray of shape (n, dim)
        The center vectors A, one row per node in node order, times ``output_scale_``.
    context_embedding_ : ndarray of shape (n, dim)
        The context vectors B, times ``output_scale_``. The trained kernel's value of a pair
        is that of the rows divided by ``output_scale_``.
    output_scale_ : float
        The factor of ``normalize="auto"`` (1.0 with ``normalize="none"``).
    propagation_ : Propagation or None
        The spectral propagation applied to ``embedding_`` (None: none).
    trained_embedding_ : ndarray of shape (n, dim) or None
        With a propagation: the center vectors as trained (times ``output_scale_``), before
        it. None without one.
    setting_ : dict
        The setting kept: ``name`` ("paper", "dense" or "given"), ``params`` (the values the
        parameters left at ``"auto"`` took: those the fit trained with instead of the
        estimator's), ``given`` (the names of the automatic setting's parameters that were
        given) and ``evidence`` (why).
    nodes_ : ndarray
        The user's node ids, in row order.
    kernels_ : list of Kernel
        The kernel dictionary fitted (one kernel unless ``kernel="multi"``).
    beta_ : ndarray
        The kernel weights.
    beta_history_ : ndarray
        Snapshots of the kernel weights during training, one row each.
    n_pairs_ : int
        (center, context) pairs trained.
    n_walks_ : int
        Walks trained (over all epochs).
    isolated_nodes_ : ndarray
        User ids of the nodes without any edge.
    fit_seconds_ : float
        Wall time of the fit.
    graph_summary_ : str
        One line describing the fitted graph.
    loss_history_ : ndarray of shape (n_chunks, 3)
        One row per chunk: pairs so far, mean positive term ``(1 - k)^2``, mean negative term
        ``k^2``.
    health_ : EmbeddingHealth
        The check of the result (:class:`~kernelne.engine.diagnostics.EmbeddingHealth`).
    kernel_scale_ : float
        1, or the robust fit's narrowing (with the automatic setting's start on a large
        dense graph, ``setting_["scale"]``).
    lr_restarts_ : list of dict
        Each run that diverged and was restarted with half its learning rate: its ``lr``
        and ``bad_rows`` of ``rows`` (empty if none diverged).
    fit_lr_ : float
        The learning rate of the kept run: ``lr``, or halved after each divergence.
    narrowed_ : list of dict
        What each restart saw.
    shell_checks_ : list of dict
        Every restart test's figures and verdict, restarts included.
    negative_pool_ : int
        The pool size used: ``negative_pool`` resolved, 0 = per pair.
    walk_counts_ : ndarray
        Each node's occurrences in the walks: the negatives' unigram counts.
    degrees_ : ndarray
        Each node's degree in the fitted graph.
    neighbour_hashes_ : ndarray of uint64
        A fingerprint of each node's neighbour set in the fitted graph
        (:func:`~kernelne.graphs.neighbours.neighbour_hashes`): :meth:`partial_fit` tells the
        touched nodes by it.
    beta_choice_ : KernelChoice
        With ``beta_select="validation"``: the
        :class:`~kernelne.model.kernel_choice.KernelChoice` (every candidate's score).
    directed_ : bool
        How the graph was read.
    walks_ : ndarray or None
        The walk corpus, with ``keep_walks=True``; else None.
    stage_seconds_ : dict
        Seconds of the stages: ``"walks"`` and ``"training"``.
    compile_seconds_ : float
        numba's first-run compilation, left out of the stages; 0 once its disk cache holds
        the code.

    Raises
    ------
    TrainingError
        From ``fit``: NaN/inf rows (the run diverged) or no trainable pair.

    See Also
    --------
    kernelne.tune.search : choose the settings on validation data.
    kernelne.baselines.make_method : the paper's baselines behind the same interface.

    Notes
    -----
    Multiple kernels (``kernel="multi"``): ``k = sum_j beta_j k_j``. The weights start at
    ``beta_j = 1/m`` (the average kernel, ``k(x, x) = 1`` like a single kernel) and take one
    projected SGD step per (center, context) pair, ``beta_j <- max(0, beta_j + lr (2
    sum_terms (y - k) k_j - beta_reg beta_j))``. The start barely matters: with ``B = 0`` the
    first pairs' negatives pull every weight to about 0, and they regrow from there
    (``beta_j = 1`` gives the same run). In practice one kernel takes (almost) all the weight
    (ending between 1 and 1.5) and the fit then matches that kernel alone; a larger
    ``beta_reg`` spreads the weights but shrinks them (on Cora, 1.0 did not beat the best
    single kernel).

    Every fit checks its result: NaN/inf rows (diverged) restart the fit with the learning
    rates (``lr`` and ``min_lr``) halved, at most twice
    (:data:`~kernelne.model.restarts.MAX_LR_HALVINGS`; the plain fit, not a partitioned
    one); rows still diverged, or no trainable pair, raise
    :class:`~kernelne.errors.TrainingError`; an uninformative (collapsed) embedding issues a
    :class:`~kernelne.engine.diagnostics.DegenerateEmbeddingWarning` naming the likely cause
    and fix.

    New nodes without retraining: :meth:`save_model` / :meth:`load_model` keep a fitted model
    in one file; :meth:`partial_fit` adds a grown graph's new nodes with the old rows frozen
    (:mod:`kernelne.model.update`).

    Examples
    --------
    >>> from kernelne import KernelNE, load_dataset
    >>> karate = load_dataset("karate").graph  # shipped: 34 nodes, 78 edges
    >>> model = KernelNE(dim=32, walks_per_node=10, workers=1, random_state=0)
    >>> vectors = model.fit_transform(karate)
    >>> vectors.shape
    (34, 32)
    """

    def __init__(
        self,
        kernel: str = "auto",
        sigma: float | str = "auto",
        alpha: float = 1.0,
        kernels: list[str] | None = None,
        dim: int = 128,
        walks_per_node: int | str = "auto",
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
        loss: str = "auto",
        window_shrink: bool | str = "auto",
        subsample: float = 0.0,
        negative_pool: int | str = "auto",
        beta_select: str | Sequence[float] = "train",
        setting: str = "auto",
        normalize: str = "auto",
        propagate: bool | str = "auto",
        device: str = "cpu",
    ):
        self.device = device
        self.setting = setting
        self.normalize = normalize
        self.propagate = propagate
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

    def _check_params(self) -> None:
        check_params(self)  # every parameter against its rule (kernelne.model.params)
        if self.device == "cuda":
            refuse_on_device(self)
        if self.min_lr > self.lr:
            raise ValueError(f"need 0 < min_lr <= lr, got min_lr={self.min_lr}, lr={self.lr}")
        if int(self.partitions) > 1 and self.shared_negatives:
            raise ParamError("partitioned training ({partitions} > 1) uses negatives per "
                             "pair: drop {shared_negatives}")
        if not (isinstance(self.beta_select, str) and self.beta_select == "train"):
            fixed_weights(self.beta_select, len(self.kernel_dictionary()))  # ValueError if bad
            if int(self.partitions) > 1:
                raise ParamError("partitioned training ({partitions} > 1) learns the kernel "
                                 "weights: use {beta_select=train}")

    def fit(self, graph: Any, y: Any = None, monitor: Callable | None = None,
            client: Any = None) -> KernelNE:
        """Learn embeddings of ``graph``.

        Parameters
        ----------
        graph : Graph, path, networkx or igraph graph, DataFrame, PyG Data or sparse matrix
            Any source :func:`kernelne.load_graph` takes.
        y : str, tuple or array-like, optional
            Only with ``beta_select="validation"``: held-out labels to choose the kernel
            weights on (a label file, ``(node ids, labels)`` or labels in the graph's node
            order: only labels you may train on). Otherwise ignored (the fit is
            unsupervised).
        monitor : callable, optional
            ``monitor(pairs, A, B)`` is called after every chunk of walks with the number of
            pairs trained so far and the current rows (to watch training; do not keep
            references to the arrays: they change in place).
        client : distributed.Client, optional
            A Dask client whose workers make a partitioned fit's walks and train its
            buckets (``partitions > 1`` only).

        Returns
        -------
        KernelNE
            The fitted estimator itself (see the class's Attributes).

        Raises
        ------
        ValueError
            A setting out of range, or a ``client`` / ``monitor`` the fit cannot use.
        TrainingError
            NaN/inf rows (diverged) or no (center, context) pair to train on.
        InputError
            ``graph`` cannot be read.

        Examples
        --------
        >>> from kernelne import KernelNE, load_dataset
        >>> model = KernelNE(dim=8, walks_per_node=5, workers=1, random_state=0)
        >>> model = model.fit(load_dataset("karate").graph)
        >>> model.embedding_.shape, model.nodes_[:3].tolist()
        ((34, 8), [0, 1, 2])
        """
        with announce_first_compile():  # numba's first-run compilation, said once
            return self._fit(graph, y, monitor, client)

    def _fit(self, graph: Any, y: Any, monitor: Callable | None, client: Any) -> KernelNE:
        self._check_params()
        kernels = self.kernel_dictionary()
        g = self._fit_graph(graph)
        if not is_auto(self.propagate):  # one given on fewer nodes than dim: refused now
            choose_propagation(self.propagate, g, int(self.dim))
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
        if int(self.partitions) > 1:
            return fit_partitioned_model(self, g, kernels, seed, client, start)
        if client is not None:
            raise ValueError("a Dask client trains partitioned fits only: set partitions > 1")
        return fit_in_memory(self, g, kernels, fixed, seed, monitor, start)

    def partial_fit(self, graph: Any, y: Any = None, *, touched_rate: float = 0.0,
                    new_walks_factor: int = 2) -> KernelNE:
        """Embed the new nodes of a grown graph without retraining the old rows.

        See :func:`kernelne.model.update.partial_fit` and the method reference (:doc:`METHOD
        </METHOD>`
        §9).

        Parameters
        ----------
        graph : Graph, path, networkx graph or sparse matrix
            The grown graph: the old nodes plus new ones (any source
            :func:`kernelne.load_graph` takes; a path is read as directed or not as fitted).
        y : object, optional
            Ignored (scikit-learn's signature).
        touched_rate : float, default 0.0
            Learning rate factor in ``[0, 1]`` of the touched old nodes (those whose
            neighbours changed); 0 keeps them frozen, above 0 they also get ``walks_per_node`` walks
            each. Every other old row stays bit for bit what it was.
        new_walks_factor : int, default 2
            Walks from every new (and relearned) node, as a multiple of ``walks_per_node``
            (at least 1).

        Returns
        -------
        KernelNE
            The model itself, updated in place: ``embedding_``, ``context_embedding_``,
            ``nodes_`` (the new graph's order), ``walk_counts_``, ``degrees_``,
            ``neighbour_hashes_``, ``new_nodes_``, ``touched_nodes_`` and
            ``relearned_nodes_`` (user ids),
            ``removed_nodes_``, ``n_walks_``, ``n_pairs_``, ``loss_history_``,
            ``isolated_nodes_``, ``graph_summary_`` and ``fit_seconds_``.

        Raises
        ------
        ValueError
            ``touched_rate`` outside ``[0, 1]``, ``new_walks_factor < 1``, a ``dim``
            setting that differs from the fitted rows' dimension, a matrix with fewer
            columns than the model has nodes, or a propagated model read from a file that
            holds no rows as trained.

        Warns
        -----
        UserWarning
            More than 80% of the nodes the graph shares with the model have other
            neighbours than when it was fitted
            (:data:`~kernelne.model.update.MAX_TOUCHED`): most likely another network with
            the same node ids, which a refit learns and an update does not.

        Notes
        -----
        On a model neither fitted nor loaded with :meth:`load_model`, ``partial_fit`` is
        :meth:`fit` (scikit-learn's convention: the first call starts the model).

        Examples
        --------
        >>> from kernelne import Graph, KernelNE, load_dataset
        >>> karate = load_dataset("karate").graph
        >>> edges = karate.edges()
        >>> old = Graph.from_edges(*edges[(edges < 30).all(axis=1)].T)  # before 30-33 joined
        >>> model = KernelNE(dim=8, walks_per_node=5, workers=1, random_state=0).fit(old)
        >>> model.partial_fit(karate).embedding_.shape
        (34, 8)
        >>> sorted(model.new_nodes_.tolist())
        [30, 31, 32, 33]
        """
        if not hasattr(self, "walk_counts_"):
            return self.fit(graph, y)
        if is_matrix_input(graph):
            shape = getattr(graph, "shape", None) or np.shape(graph)
            m = shape[1] if len(shape) == 2 else 1
            if m < self.n_features_in_ or len(shape) != 2 or shape[0] != m:
                raise ValueError(f"X has {m} features, but {type(self).__name__} is expecting "
                                 f"{self.n_features_in_} features as input (or more: the "
                                 "square adjacency matrix of the grown graph)")
        with announce_first_compile():
            partial_fit(self, graph, touched_rate, new_walks_factor)
        self.__dict__.pop("_row_signatures", None)  # the fitted matrix's rows are gone
        return self

    def save_model(self, path: str | Path) -> None:
        """Write the fitted model (rows A and B, settings, ids, kernels) to one ``.npz`` file.

        The file is written atomically; :meth:`load_model` reads it back.

        Parameters
        ----------
        path : str or Path
            The ``.npz`` file to write.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the model is not fitted.

        Examples
        --------
        >>> from kernelne import KernelNE, load_dataset
        >>> model = KernelNE(dim=8, walks_per_node=5, workers=1, random_state=0)
        >>> model.fit(load_dataset("karate").graph).save_model("karate.model.npz")
        >>> KernelNE.load_model("karate.model.npz").embedding_.shape
        (34, 8)
        """
        save_model(self, path)

    @classmethod
    def load_model(cls, path: str | Path) -> KernelNE:
        """Read a model written by :meth:`save_model`.

        Parameters
        ----------
        path : str or Path
            A model file (``.npz``) written by :meth:`save_model`.

        Returns
        -------
        KernelNE
            A model made from the saved settings with its fitted attributes set, ready to
            :meth:`partial_fit` and to :meth:`transform`.

        Raises
        ------
        InputError
            If ``path`` is not a kernelne model file (or of an unsupported version).

        Examples
        --------
        >>> from kernelne import KernelNE, load_dataset
        >>> KernelNE(dim=8, walks_per_node=5, workers=1, random_state=0).fit(
        ...     load_dataset("karate").graph).save_model("karate.model.npz")
        >>> model = KernelNE.load_model("karate.model.npz")
        >>> model.dim, model.embedding_.shape
        (8, (34, 8))
        """
        return load_model(path, cls)


__all__ = ["KernelNE", "DEFAULT_DICTIONARY", "Graph"]
