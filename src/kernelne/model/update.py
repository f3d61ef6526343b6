"""New nodes without retraining: ``KernelNE.partial_fit(graph)`` on a grown graph.

Given a fitted model (rows ``A``, ``B`` of the old graph's nodes) and the new whole graph
``G'`` (old nodes plus new nodes and edges), the old rows are kept and only the new nodes'
rows are learned, with the same loss and SGD as a fit (:mod:`kernelne.engine.trainer`):

* Nodes are matched by id. New nodes get fresh rows as in a fit, ``A_v ~ U(+-0.5/d)``,
  ``B_v = 0``; old nodes absent from ``G'`` are dropped from the result.
* Relearned old nodes: those without edges when the model was fitted (``degrees_ == 0``; in a
  directed graph also not reached by other walks), whose rows no pair trained (``A`` is still
  the random initialisation), but with edges in ``G'``. They are
  learned exactly like new nodes (fresh rows, walks, rate 1). On Cora with 10% of the nodes
  held out, about 50 old nodes are isolated in the base graph; relearning them halved the new
  nodes' gap to a full refit (Micro-F1 -0.022 -> -0.011 over 10 seeds) for 3% of a refit's
  CPU time. Without it, their untrained rows (``B = 0``) were the context rows the new
  neighbours learned against, and noise among the classifier's training rows.
* Touched old nodes: those whose neighbours in ``G'`` differ from their neighbours at fit
  time (the endpoints of new, removed or rewired edges, every old neighbour of a new node
  among them), told by the fingerprints of the neighbour sets the model keeps
  (``neighbour_hashes_``, :mod:`kernelne.graphs.neighbours`) and by the degrees (a model file
  written without the fingerprints: by the degrees alone). When more than
  :data:`MAX_TOUCHED` of the shared nodes are touched, the graph looks like another network
  with the same ids rather than a grown one, and a warning advises a refit.
* Walks: ``new_walks_factor * walks_per_node`` walks from every new and relearned node (their
  rows start from scratch) and, when ``touched_rate > 0``, ``walks_per_node`` from every
  touched node (the model's walk settings); nothing else, so the work grows with the change
  and not with the graph. With frozen touched rows their walks would only add pairs with a new
  node, which the new nodes' own walks already give: on Cora (4 seeds) they cost 2.4x the time
  for no gain in the new nodes' Micro-F1, while 2 walk rounds per new node gained 0.003 over
  1.
* Training: per-row rates ``r_v`` (``train_walks(..., rates=)``): 1 for new and relearned
  nodes, ``touched_rate`` for touched nodes (default 0), 0 for every other old node. A row with
  ``r_v = 0`` is never written, so old embeddings stay bit for bit what they were, and a pair
  of two frozen rows is skipped. New rows' centers learn against the frozen context rows
  ``B`` of their neighbourhood and so land in the old embedding's coordinates. Kernel weights
  ``beta`` and the kernel scale stay fixed.
* Negatives: ``p-(v) ~ c_v^0.75`` with ``c_v`` the model's saved walk count of ``v``
  (``walk_counts_``, 0 for a new node) plus its count in the new walks: the old corpus' noise
  distribution with the new walks added to it.
* A spectrally propagated model (``propagation_``): the update works on the rows as trained
  (``trained_embedding_``) as above, then propagates every row again on ``G'`` (the
  propagation is global, so ``embedding_`` changes everywhere; ``trained_embedding_`` keeps
  the frozen rows bit for bit).

The graph is refused (``InputError``) when it is read directed and the model's was not (or
the reverse), when its ids are of another type than the model's (integers against strings),
or when it holds fewer than half of the model's nodes (then it is most likely another
network, or was read with other options).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.utils.validation import check_is_fitted

from kernelne.engine.chunks import train_chunks
from kernelne.engine.diagnostics import check_finite
from kernelne.engine.rows import aligned_rows, uniform_rows
from kernelne.engine.sampling import alias_table, seed_to_uint64
from kernelne.engine.trainer import (
    Noise,
    keep_probabilities,
    kernel_arrays,
    train_settings,
)
from kernelne.engine.walks import WalkCorpus, count_visits
from kernelne.errors import InputError
from kernelne.graphs.graph import Graph, load_graph
from kernelne.graphs.neighbours import neighbour_hashes
from kernelne.model.auto_setting import fitted_params
from kernelne.model.drivers import propagated
from kernelne.model.fitted import record_of, set_fitted
from kernelne.parallel import numba_threads

MIN_SHARED = 0.5  # the new graph must hold at least this fraction of the model's nodes
#: beyond this fraction of the shared nodes touched, an update warns that the graph looks like
#: another network and advises a refit (another planted partition with the same 400 ids
#: touches 95%; the four nodes that join the karate club last, two hubs among them, 63%)
MAX_TOUCHED = 0.8
_UPDATE_STREAM = np.uint64(0x757064617465)  # keeps an update's random streams apart from fit's


def match_nodes(model_nodes: np.ndarray, graph_nodes: np.ndarray) -> np.ndarray:
    """Position in ``graph_nodes`` of each of ``model_nodes`` (-1 where it is absent)."""
    order = np.argsort(graph_nodes, kind="stable")
    ordered = graph_nodes[order]
    at = np.minimum(np.searchsorted(ordered, model_nodes), len(ordered) - 1)
    found = ordered[at] == model_nodes if len(ordered) else np.zeros(len(model_nodes), bool)
    return np.where(found, order[at], -1)


def _id_kind(nodes: np.ndarray) -> str:
    return "integers" if nodes.dtype.kind in "iu" else "strings"


def check_graph(model: Any, graph: Graph, source: Any = None) -> np.ndarray:
    """Refuse a graph that cannot be an update of ``model``; return :func:`match_nodes`."""
    where = source if isinstance(source, (str, Path)) else None
    fitted = getattr(model, "directed_", None)  # None: an older model file, unrecorded
    if fitted is not None and bool(fitted) != graph.directed:
        read = "directed" if graph.directed else "undirected"
        fix = ("leave out --directed" if graph.directed
               else "pass --directed (or a Graph read with directed=True)")
        raise InputError(
            f"the model was fitted on {'a directed' if fitted else 'an undirected'} graph but this "
            f"graph is read {read}: {fix}", where)
    old, new = _id_kind(model.nodes_), _id_kind(graph.nodes)
    if old != new:
        raise InputError(
            f"the graph's node ids are {new} (e.g. {graph.nodes[0]!r}) but the model's are "
            f"{old} (e.g. {model.nodes_[0]!r}): not the graph the model was fitted on", where)
    pos = match_nodes(model.nodes_, graph.nodes)
    shared = int((pos >= 0).sum())
    if shared < MIN_SHARED * len(model.nodes_):
        raise InputError(
            f"the graph holds only {shared:,} of the model's {len(model.nodes_):,} nodes (fewer "
            f"than {MIN_SHARED:.0%}): is it the network the model was fitted on?", where)
    return pos


def warn_if_another_graph(touched: int, shared: int, source: Any = None) -> None:
    """Warn when more than :data:`MAX_TOUCHED` of the ``shared`` nodes (those of the model
    the graph holds) have other neighbours than when the model was fitted: an update keeps
    their rows (or retrains them at ``touched_rate``), a refit learns the new graph."""
    if shared and touched > MAX_TOUCHED * shared:
        where = f"{source}: " if isinstance(source, (str, Path)) else ""
        warnings.warn(
            f"{where}{touched:,} of the {shared:,} nodes the graph shares with the model have "
            f"other neighbours than when it was fitted (more than {MAX_TOUCHED:.0%}): this "
            "looks like another graph with the same node ids rather than a grown one; a refit "
            "is advised (kernelne embed, KernelNE.fit)", stacklevel=4)


def partial_fit(model: Any, graph: Any, touched_rate: float = 0.0,
                new_walks_factor: int = 2) -> Any:
    """Update ``model`` in place to the grown ``graph`` (module docstring); returns it.

    Sets ``embedding_``, ``context_embedding_``, ``nodes_`` (the new graph's order),
    ``walk_counts_``, ``degrees_``, ``new_nodes_``, ``touched_nodes_`` and
    ``relearned_nodes_`` (user ids; relearned nodes are touched nodes too),
    ``removed_nodes_`` (model ids absent from ``graph``), ``n_walks_``, ``n_pairs_``,
    ``loss_history_``, ``isolated_nodes_``, ``graph_summary_`` and ``fit_seconds_``.
    """
    check_is_fitted(model, "walk_counts_",
                    msg="This %(name)s instance is not fitted yet: partial_fit adds nodes to a "
                        "fitted model (call fit or KernelNE.load_model first).")
    propagation = getattr(model, "propagation_", None)
    trained = getattr(model, "trained_embedding_", None)  # the rows before the propagation
    if propagation is not None and trained is None:
        raise ValueError("partial_fit adds rows to the rows as trained, but this model holds "
                         "only its spectrally propagated rows (a model file written without "
                         "its rows as trained): refit on the grown graph")
    if propagation is None:
        trained = model.embedding_
    if not 0.0 <= touched_rate <= 1.0:
        raise ValueError(f"touched_rate must lie in [0, 1], got {touched_rate}")
    if int(new_walks_factor) < 1:
        raise ValueError(f"new_walks_factor must be at least 1, got {new_walks_factor}")
    model._check_params()
    d = model.embedding_.shape[1]
    if int(model.dim) != d:
        raise ValueError(f"the model's rows have dimension {d} but its dim setting is "
                         f"{model.dim}: partial_fit keeps the fitted dimension")
    g = load_graph(graph, directed=bool(getattr(model, "directed_", None)))  # a path: as fitted
    start = time.perf_counter()
    pos = check_graph(model, g, graph)
    kept = pos >= 0
    n = g.n_nodes
    is_old = np.zeros(n, dtype=bool)
    is_old[pos[kept]] = True
    old_degrees = np.zeros(n, dtype=np.int64)
    old_degrees[pos[kept]] = model.degrees_[kept]
    new = np.flatnonzero(~is_old)
    hashes = neighbour_hashes(g)
    changed = g.degrees != old_degrees
    fingerprints = getattr(model, "neighbour_hashes_", None)  # None: an older model file
    if fingerprints is not None:
        old_hashes = np.zeros(n, dtype=np.uint64)
        old_hashes[pos[kept]] = fingerprints[kept]
        changed |= hashes != old_hashes
    touched = np.flatnonzero(is_old & changed)
    warn_if_another_graph(len(touched), int(kept.sum()), graph)
    old_counts = np.zeros(n, dtype=np.int64)
    old_counts[pos[kept]] = model.walk_counts_[kept]
    # No pair trained an old row if the node had no edge at fit time (a walk from it stops at
    # once; in a directed graph a sink is also reached by other walks, then its count is more)
    untrained = is_old & (old_degrees == 0)
    if g.directed:
        untrained &= old_counts <= int(fitted_params(model).walks_per_node)
    untrained[g.isolated_nodes()] = False
    relearned = np.flatnonzero(untrained)
    fresh = np.flatnonzero(~is_old | untrained)  # new and relearned: learned from scratch

    seed = seed_to_uint64(model.random_state) ^ _UPDATE_STREAM
    rng = np.random.default_rng(int(seed))
    A = aligned_rows(n, d)
    B = aligned_rows(n, d, 0.0)
    scale = np.float32(getattr(model, "output_scale_", 1.0))  # normalize="auto"'s factor
    A[pos[kept]] = trained[kept] / scale  # the rows as trained
    B[pos[kept]] = model.context_embedding_[kept] / scale
    A[fresh] = uniform_rows(rng, len(fresh), d, 0.5 / d)
    B[relearned] = 0.0  # as in a fit (the fit only pushed it as a negative)
    rates = np.zeros(n, dtype=np.float32)
    rates[touched] = touched_rate
    rates[fresh] = 1.0

    starts = np.repeat(fresh, int(new_walks_factor))
    if touched_rate > 0:
        starts = np.concatenate([starts, touched])
    corpus = WalkCorpus(g, int(fitted_params(model).walks_per_node), model.walk_length,
                        model.p, model.q,
                        int(seed), model.chunk_walks, starts=starts)
    counts = old_counts.copy()
    pairs, loss_rows = 0, []
    with numba_threads(model.workers):
        for _, walks in corpus:
            count_visits(walks, counts)
        if corpus.n_walks:
            pairs, loss_rows = _train(model, corpus, A, B, rates, counts, seed)
    check_finite(A, B, model.beta_)
    if scale != 1:  # back to the output's scale; frozen rows exactly as they were
        A *= scale
        B *= scale
        frozen = rates[pos[kept]] == 0
        A[pos[kept][frozen]] = trained[kept][frozen]
        B[pos[kept][frozen]] = model.context_embedding_[kept][frozen]

    model.removed_nodes_ = np.asarray(model.nodes_)[~kept]
    model.new_nodes_, model.touched_nodes_ = g.nodes[new], g.nodes[touched]
    model.relearned_nodes_ = g.nodes[relearned]
    set_fitted(model, record_of(model).updated(
        embedding=A if propagation is None else propagated(model, g, A, propagation),
        trained_embedding=None if propagation is None else A, context_embedding=B,
        nodes=g.nodes, walk_counts=counts, degrees=g.degrees, neighbour_hashes=hashes,
        n_walks=model.epochs * corpus.n_walks, n_pairs=pairs,
        loss_history=np.array(loss_rows).reshape(-1, 3),
        isolated_nodes=g.nodes[g.isolated_nodes()], graph_summary=g.summary(),
        directed=bool(g.directed), fit_seconds=time.perf_counter() - start))
    return model


def _train(model: Any, corpus: WalkCorpus, A: np.ndarray, B: np.ndarray,
           rates: np.ndarray, counts: np.ndarray, seed: np.uint64) -> tuple[int, list]:
    """One run of :func:`~kernelne.engine.trainer.train_chunks` over the update's walks, rows
    at their ``rates``."""
    noise = Noise(*alias_table(counts.astype(np.float64) ** 0.75))
    # the weights stay fixed: learn_beta is off
    kernel = kernel_arrays(model.kernels_, np.array(model.beta_, dtype=np.float32),
                           model.kernel_scale_)
    total_centers = float(model.epochs * corpus.n_walks * corpus.walk_length)
    settings = train_settings(fitted_params(model), total_centers, seed, len(A),
                              shared_negatives=False)
    keep = keep_probabilities(counts, float(model.subsample)) if model.subsample > 0 else None
    pairs, rows = 0, []
    for _, chunk_pairs, losses in train_chunks(lambda: corpus, corpus.n_walks, model.epochs,
                                               A, B, kernel, noise, settings, rates, keep):
        pairs += chunk_pairs
        rows.append((pairs, losses[0] / max(chunk_pairs, 1),
                     losses[1] / max(chunk_pairs * model.negatives, 1)))
    return pairs, rows
