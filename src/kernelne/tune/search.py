"""Choose a method's settings on validation data cut from the training data: :func:`tune`.

Protocol (explicit, EvalNE-style):

* **With labels** (node classification): nodes in ``test_nodes`` (or a seeded ``holdout``
  fraction of the labelled nodes) are the test part. Their labels are dropped before the
  search starts and never read by it. Each trial fits the embedding on the whole graph
  (unsupervised, as in the evaluation protocol) and scores the mean Micro-F1 of
  ``val_repeats`` seeded 50/50 splits of the remaining labelled nodes (one-vs-rest logistic
  regression, top-k rule; its C chosen per split among 0.01-100 by 3-fold cross-validation on
  the split's training nodes, as ``kernelne evaluate classify --select-C`` does, or the
  paper's C = 1 with ``select_C=False``). Each trial also records its Micro-F1 with C = 1 on
  the same splits. After the search, the winner is refitted and, if there is a test part,
  scored once on it (classifier trained on all non-test labelled nodes, its C chosen the
  same way).
* **Without labels** (link prediction): the given graph is the training graph (e.g. the
  residual graph of a ``kernelne split`` folder; its held-out edges are never passed here).
  A validation split holds out ``val_fraction`` of its edges (residual kept connected, as many
  true non-edges); each trial fits on the validation residual graph and scores ROC-AUC
  (``weighted_l2`` operator). The winner is refitted on the whole given graph.

The search is Optuna's seeded TPE sampler over :data:`SEARCH_SPACES` (one function per method
that turns a trial into constructor parameters; edit them to widen the search). It runs in two
stages, so that a cheap search cannot pick a setting worse than the method's defaults:

1. **Search.** The method's documented defaults (:data:`DEFAULT_CANDIDATES`; for KernelNE the
   default Gauss, the default Schoenberg and MKernelNE "multi", each with the paper's squared
   loss and with the kernel log-likelihood, and Schoenberg with shrinking windows) are the
   first trials, enqueued in Optuna; TPE then searches (a parameter in ``fixed`` is held
   there, not searched). A trial may be cheap: ``search_walks`` walks per node and
   ``val_repeats`` validation splits.
2. **Finalists.** If the trials were cheap (``search_walks`` given), the ``finalists`` best
   trials by their cheap score *and every default* are refitted with the full settings (the
   walk count of ``fixed`` or the method's default) and re-scored on ``final_repeats``
   validation splits; without ``search_walks`` every trial is already scored that way. The
   winner has the best of these precise scores, so it is never worse on validation than the
   best default (ties go to the default, the earlier trial).

Every score carries its standard error: over the validation splits for classification (the
finalists share the splits, so the gap between two of them gets the paired standard error),
Hanley and McNeil's for the one ROC-AUC of link validation. :attr:`TuneResult.ranking` and
:meth:`TuneResult.summary` say whether the winner's lead over the runner-up exceeds twice the
gap's standard error ("the top two are within noise" otherwise).

Trials are numbered from 1 (``trials[i]["number"]``, the ranking, the table). A fit that
raises one of :data:`~kernelne.errors.FIT_ERRORS` (diverged rows, a refused combination,
out of memory) is a failed trial: Optuna records it as ``FAIL``, the trial keeps
``state="failed"`` and its ``reason``, and the search goes on; a finalist whose refit
fails is left out of the choice the same way, and a winner whose refit on the whole graph
fails gives way to the next best.

The search space and the defaults live in :mod:`kernelne.tune.space`, the two validation
protocols in :mod:`kernelne.tune.protocols`, the outcome in :mod:`kernelne.tune.result`.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from kernelne.engine.diagnostics import DegenerateEmbeddingWarning
from kernelne.errors import FIT_ERRORS, InputError, TrainingError, failure_reason
from kernelne.evaluation.validation import rank_finalists
from kernelne.graphs.graph import Graph, load_graph
from kernelne.model.auto_setting import resolved
from kernelne.model.params import is_auto
from kernelne.tune import space
from kernelne.tune.protocols import ClassificationProtocol, LinkProtocol, labels_of
from kernelne.tune.result import TuneResult, format_se
from kernelne.tune.space import SEARCH_SPACES

#: What a trial's fit or its scoring may raise for its setting alone: the trial is recorded
#: as failed, with its reason, and the search goes on.
TRIAL_ERRORS = FIT_ERRORS


#: A score's C = 1 counterpart (with labels), carried by every trial and finalist.
_C1_KEYS = ("score_c1", "se_c1")


class _TrialFailed(Exception):
    """Raised from the objective after a trial's failure is recorded: Optuna marks the trial
    ``FAIL`` (``study.optimize(catch=...)``) and the search goes on."""


def check_search(method: str, trials: int, timeout: float | None, test_nodes, holdout,
                 val_fraction: float, val_repeats: int, search_walks: int | None,
                 finalists: int = 3, final_repeats: int = 10) -> None:
    """The search's own settings (:func:`tune`'s parameters), checked before anything is
    read: :class:`InputError` for a value out of range."""
    import optuna  # noqa: F401 (a missing Optuna fails here, before anything is read)

    if method not in SEARCH_SPACES:
        raise InputError(f"unknown method {method!r} (use one of: {', '.join(SEARCH_SPACES)})")
    if int(trials) < 1:
        raise InputError(f"trials must be at least 1, got {trials}")
    if timeout is not None and not timeout > 0:
        raise InputError(f"timeout must be a positive number of seconds, got {timeout}")
    if holdout is not None and not 0 < holdout < 1:
        raise InputError(f"holdout must lie strictly between 0 and 1, got {holdout}")
    if holdout is not None and test_nodes is not None:
        raise InputError("give the test nodes or a holdout fraction, not both")
    if not 0 < val_fraction < 1:
        raise InputError(f"val_fraction must lie strictly between 0 and 1, got {val_fraction}")
    if int(val_repeats) < 1:
        raise InputError(f"val_repeats must be at least 1, got {val_repeats}")
    if search_walks is not None and int(search_walks) < 1:
        raise InputError(f"search_walks must be at least 1, got {search_walks}")
    if int(finalists) < 1:
        raise InputError(f"finalists must be at least 1, got {finalists}")
    if int(final_repeats) < 1:
        raise InputError(f"final_repeats must be at least 1, got {final_repeats}")


def _progress_failed(what: str, name: str | None, params: dict[str, Any], reason: str) -> None:
    tag = f" (default {name})" if name else ""
    print(f"kernelne tune: {what}{tag}  failed: {reason}  {json.dumps(params)}",
          file=sys.stderr, flush=True)


def _setting(number: int, names: dict[int, str], params: dict[str, Any] | None) -> str:
    """A trial's setting in a message: its default's name, else its parameters."""
    name = names.get(number)
    return f"trial {number} ({name if name else json.dumps(params)})"


def _every_fit_failed(stage: str, failed: list[dict[str, Any]], names: dict[int, str],
                      records: list[dict[str, Any]]) -> Exception:
    """The error when every trial (or finalist) failed, naming each setting (``records``:
    the trials, for their parameters) and its reason: :class:`InputError` if every reason is
    a setting the method refuses, else :class:`TrainingError`."""
    params = {r["number"]: r["params"] for r in records}
    parts = [f"{_setting(r['number'], names, params[r['number']])}: {r['reason']}"
             for r in failed]
    text = f"every {stage} failed: " + "; ".join(parts)
    if all(r.get("input_error") for r in failed):
        return InputError(text)
    return TrainingError(text)


def _optimize(study, objective, **kwargs) -> None:
    """``study.optimize``, with a Ctrl-C that lands while Optuna records a finished trial
    raised as the :class:`KeyboardInterrupt` it is: Optuna (5.0) then fails in its own
    ``finally`` clause with an ``UnboundLocalError`` (``updated_state``) instead. A failed
    trial (:class:`_TrialFailed`) is recorded as ``FAIL`` and the search goes on."""
    try:
        study.optimize(objective, catch=(_TrialFailed,), **kwargs)
    except UnboundLocalError as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise


def _is_input(exc: BaseException) -> bool:
    """Whether a fit's failure is a setting the method refuses (not a training failure)."""
    return isinstance(exc, ValueError) and not isinstance(exc, ArithmeticError)


def _c1_note(got: dict[str, Any], select_C: bool | None) -> str:
    """A progress line's C = 1 score, when the score beside it had its C chosen."""
    return f" (C = 1: {got['score_c1']:.4f})" if select_C else ""



def tune(graph: Any, labels: Any = None, *, method: str = "kernelne", trials: int = 20,
         timeout: float | None = None, seed: int = 0, test_nodes: Sequence | None = None,
         holdout: float | None = None, val_fraction: float = 0.2, val_repeats: int = 2,
         search_walks: int | None = None, finalists: int = 3, final_repeats: int = 10,
         fixed: dict[str, Any] | None = None, select_C: bool = True,
         progress: bool = True) -> TuneResult:
    """Search ``method``'s settings (:data:`SEARCH_SPACES`) on validation data, then refit,
    by the protocol of :mod:`kernelne.tune.search` (Optuna's seeded TPE sampler).

    Parameters
    ----------
    graph : Graph, path, networkx graph or sparse matrix
        The training graph (any source :func:`kernelne.load_graph` takes).
    labels : str, Path or tuple, optional
        A label file or ``(node ids, n x K indicator)``: trials are scored by the Micro-F1 of
        seeded 50/50 splits of the labelled non-test nodes; without labels, by the ROC-AUC
        of links held out of ``graph``.
    method : str, default "kernelne"
        ``"kernelne"`` or a baseline: ``"deepwalk"``, ``"node2vec"``, ``"line"``, ``"hope"``,
        ``"netmf"``.
    trials : int, default 20
        Trials in all. The method's defaults (:data:`DEFAULT_CANDIDATES`) are the first
        trials and count in ``trials`` (all of them run, even past ``timeout``).
    timeout : float, optional
        Seconds after which no further search trial starts.
    seed : int, default 0
        Seed of the sampler, the splits, the holdout and every fit (``random_state``).
    test_nodes : sequence, optional
        The test part of the labelled nodes, by node id: never read by the search.
    holdout : float, optional
        Instead of ``test_nodes``: a seeded fraction in ``(0, 1)`` of the labelled nodes held
        out as the test part.
    val_fraction : float, default 0.2
        Without labels: the fraction of the edges held out as validation links.
    val_repeats : int, default 2
        Validation splits of a cheap trial (one with ``search_walks``).
    search_walks : int, optional
        Walks per node during the search only; the ``finalists`` best trials and the
        defaults are then refitted with the full count and re-scored on ``final_repeats``
        splits (the best precise score wins). Without it every trial is scored that way.
    finalists : int, default 3
        Best cheap trials refitted and re-scored (with ``search_walks``).
    final_repeats : int, default 10
        Validation splits of a precise score.
    fixed : dict, optional
        Parameters every fit gets (e.g. ``{"dim": 64, "workers": 2}``); a fixed parameter of
        the search space is not searched, and the defaults that set it to another value are
        not tried (:func:`~kernelne.tune.space.default_candidates`).
    select_C : bool, default True
        With labels: choose the classifier's C per validation split among
        :data:`~kernelne.evaluation.classification.SELECT_CS` by 3-fold cross-validation on
        that split's training nodes (as ``kernelne evaluate classify --select-C``), the test
        score's C the same way; every score's C = 1 counterpart is recorded beside it
        (``score_c1``). False: the paper's C = 1 throughout. Ignored without labels.
    progress : bool, default True
        Print one line per trial (and the refit) to standard error.

    Returns
    -------
    TuneResult
        ``best_params``, ``best_score`` and ``best_se``, every trial and finalist, the
        refitted ``model``, ``validation``, ``chosen_by``, ``ranking`` and the ``test_score``
        (None without a test part); with labels also the winner's C = 1 scores.

    Raises
    ------
    InputError
        An unknown method, a setting out of range, test nodes or a holdout without labels,
        labels that cannot be validated on, or every trial failed on a refused setting.
    TrainingError
        Every trial (or every finalist) failed; the message names each setting and reason.

    Examples
    --------
    >>> from kernelne import load_dataset
    >>> from kernelne.tune import tune
    >>> karate = load_dataset("karate")
    >>> result = tune(karate.graph, (karate.graph.nodes, karate.labels), trials=3,
    ...               holdout=0.3, fixed={"workers": 1, "dim": 16, "walks_per_node": 10})
    >>> result.model.embedding_.shape  # refitted on the whole graph with the best settings
    (34, 16)
    """
    check_search(method, trials, timeout, test_nodes, holdout, val_fraction, val_repeats,
                 search_walks, finalists, final_repeats)
    fixed, search_fixed, candidates, defaults = _settings(method, seed, fixed, search_walks)
    if labels is None and (test_nodes is not None or holdout is not None):
        raise InputError("test nodes and a holdout fraction need labels")
    label_data = labels_of(labels) if labels is not None else None
    g: Graph = load_graph(graph)
    space.check_settings(method, fixed, g.n_nodes)
    start = time.perf_counter()
    staged = search_fixed != fixed  # cheap search trials, then finalists
    counts = (f"{val_repeats} per search trial, {final_repeats} per finalist" if staged
              else f"{final_repeats} per trial")
    protocol = (LinkProtocol(g, val_fraction, seed) if label_data is None else
                ClassificationProtocol(g, *label_data, labels, test_nodes, holdout, seed,
                                       select_C, counts))
    search = _Search(method, protocol, fixed, search_fixed, candidates, defaults,
                     max(int(trials), len(defaults)), progress)
    search.run(seed, timeout, start, int(val_repeats) if staged else int(final_repeats))
    return search.result(search.finals(finalists, final_repeats), g, start)


def _settings(method: str, seed: int, fixed: dict[str, Any] | None, search_walks: int | None
              ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]],
                         list[tuple[dict[str, Any], dict[str, Any]]]]:
    """``(fixed, search_fixed, candidates, defaults)``: the parameters every full fit and
    every search fit gets, the method's defaults that agree with them and each default's
    ``(search-space values, extra parameters)``, all checked (:class:`InputError`)."""
    fixed = {"random_state": seed, **(fixed or {})}
    search_fixed = dict(fixed)
    if search_walks is not None and method in ("kernelne", "deepwalk", "node2vec"):
        search_fixed["walks_per_node"] = int(search_walks)
    space.check_settings(method, search_fixed)
    space.check_settings(method, fixed)
    candidates = space.default_candidates(method, fixed)
    defaults = [space.default_params(method, c, fixed) for c in candidates]
    for values, extra in defaults:
        space.check_settings(method, {**fixed, **values, **extra})
    return fixed, search_fixed, candidates, defaults


class _Search:
    """One search's state: the trials' records (``records``), the defaults' names by trial
    number (``names``) and the best model fitted with the full settings on the whole graph
    (with labels: the winner's, so that it need not be refitted)."""

    def __init__(self, method: str, protocol, fixed: dict[str, Any],
                 search_fixed: dict[str, Any], candidates: list[dict[str, Any]],
                 defaults: list[tuple[dict[str, Any], dict[str, Any]]], total: int,
                 progress: bool):
        self.method, self.protocol, self.progress = method, protocol, progress
        self.fixed, self.search_fixed = fixed, search_fixed
        self.candidates, self.defaults, self.total = candidates, defaults, total
        self.staged = search_fixed != fixed
        self.records: list[dict[str, Any]] = []
        self.names: dict[int, str] = {}  # trial number (from 1) -> default name
        self.kept: dict[str, Any] = {"score": -np.inf, "number": None, "model": None}
        self.repeats = 0

    def fit(self, params: dict[str, Any], base: dict[str, Any]):
        """A fit of ``params`` over ``base`` on the protocol's graph."""
        with warnings.catch_warnings():  # a collapsed trial simply scores low
            warnings.simplefilter("ignore", DegenerateEmbeddingWarning)
            return space.make_estimator(self.method, {**base, **params}).fit(
                self.protocol.fit_graph)

    def walks(self, params: dict[str, Any], base: dict[str, Any]) -> int | None:
        """The walks per node a fit of ``params`` over ``base`` makes (None: no walks)."""
        est = space.make_estimator(self.method, {**base, **params})
        walks = est.get_params().get("walks_per_node")
        return int(resolved(est).walks_per_node) if is_auto(walks) else walks

    def keep(self, number: int, score: float, model) -> None:
        """Hold ``model`` if the protocol fits on the whole graph and it scores best."""
        if self.protocol.keeps_models and score > self.kept["score"]:
            self.kept.update(score=score, number=number, model=model)

    def run(self, seed: int, timeout: float | None, start: float, repeats: int) -> None:
        """The Optuna study: the defaults first (all of them, whatever the timeout), then TPE
        until ``total`` trials or ``timeout`` seconds after ``start``; each trial scored on
        ``repeats`` validation splits."""
        import optuna

        self.repeats = repeats
        # A failed fit is recorded (Optuna's state FAIL) and the search goes on; an
        # interrupted trial is re-raised to the caller, who reports it: Optuna's own "Trial
        # failed" warning and traceback would only repeat either.
        verbosity = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(optuna.logging.ERROR)
        try:
            study = optuna.create_study(direction="maximize",
                                        sampler=optuna.samplers.TPESampler(seed=seed))
            for i, (values, _) in enumerate(self.defaults):
                study.enqueue_trial({k: v for k, v in values.items() if k not in self.fixed},
                                    user_attrs={"default": i})
            first = max(len(self.defaults), 1)  # the defaults (or one trial)
            _optimize(study, self.objective, n_trials=first)
            if self.total > first:
                left = None if timeout is None else timeout - (time.perf_counter() - start)
                if left is None or left > 0:
                    _optimize(study, self.objective, n_trials=self.total - first, timeout=left)
        finally:
            optuna.logging.set_verbosity(verbosity)
        if not self.completed():
            raise _every_fit_failed("trial", self.records, self.names, self.records)

    def completed(self) -> list[dict[str, Any]]:
        """The records of the trials that completed."""
        return [r for r in self.records if r["state"] == "complete"]

    def objective(self, trial) -> float:
        """Fit and score one Optuna trial, recording it; :class:`_TrialFailed` if it fails."""
        number = trial.number + 1  # trials are numbered from 1 everywhere they are shown
        params = space.search_space(self.method, trial, self.fixed)
        which = trial.user_attrs.get("default")
        if which is not None:
            params.update(self.defaults[which][1])
            self.names[number] = space.default_name(self.candidates[which])
        record: dict[str, Any] = {"number": number, "default": self.names.get(number, ""),
                                  "params": params, "state": "complete"}
        self.records.append(record)
        t0 = time.perf_counter()
        try:
            model = self.fit(params, self.search_fixed)
            got = self.protocol.validate(model, self.repeats)
            tested = {} if self.staged else self.protocol.test(model)
        except TRIAL_ERRORS as exc:
            record.update(state="failed", reason=failure_reason(exc),
                          input_error=_is_input(exc), score=None, se=None,
                          splits=None, values=[], walks=self.walks(params, self.search_fixed),
                          seconds=time.perf_counter() - t0)
            if self.progress:
                _progress_failed(f"trial {number}/{self.total}", self.names.get(number),
                                 params, record["reason"])
            raise _TrialFailed(record["reason"]) from None
        record.update(**got, walks=self.walks(params, self.search_fixed),
                      seconds=time.perf_counter() - t0)
        if not self.staged:
            self.keep(number, got["score"], model)
            record.update(tested)
        del model
        if self.progress:
            best = max(r["score"] for r in self.completed())
            tag = f" (default {self.names[number]})" if number in self.names else ""
            print(f"kernelne tune: trial {number}/{self.total}{tag}  {self.protocol.metric} "
                  f"{got['score']:.4f} ± {format_se(got['se'])}"
                  f"{_c1_note(got, self.protocol.select_C)}  (best {best:.4f})  "
                  f"{json.dumps(params)}", file=sys.stderr, flush=True)
        return got["score"]

    def finals(self, finalists: int, final_repeats: int) -> list[dict[str, Any]]:
        """The finalists' precise scores: cheap trials (fewer walks) are re-scored
        (:meth:`rescore_finalists`); full ones were precise at once."""
        if self.staged:
            return self.rescore_finalists(finalists, final_repeats)
        return self.finals_as_scored()

    def finals_as_scored(self) -> list[dict[str, Any]]:
        """Without cheap trials: every completed trial is a finalist, with its score."""
        return [{"number": r["number"], "score": r["score"], "se": r["se"],
                 "splits": r["splits"], "values": r["values"], "walks": r["walks"],
                 "seconds": 0.0, **{k: r.get(k) for k in _C1_KEYS},
                 "test_score": r["test_score"], "test_score_c1": r.get("test_score_c1")}
                for r in self.completed()]

    def rescore_finalists(self, finalists: int, final_repeats: int) -> list[dict[str, Any]]:
        """Refit the ``finalists`` best trials and every default with the full settings and
        score each on ``final_repeats`` validation splits, in trial order (and, with a test
        part, on it, for the audit). A finalist whose refit fails is kept with ``state``
        ``"failed"`` and its ``reason``."""
        done = self.completed()
        top = sorted(done, key=lambda r: -r["score"])[:int(finalists)]
        chosen = {r["number"] for r in top} | set(self.names)
        pool = [r for r in done if r["number"] in chosen]
        if self.progress:
            print(f"kernelne tune: re-scoring {len(pool)} finalists (the "
                  f"{min(finalists, len(done))} best trials and the defaults) with the full "
                  f"settings on {final_repeats} validation splits", file=sys.stderr, flush=True)
        return [self._rescore(r, f"finalist {i + 1}/{len(pool)}: trial {r['number']}",
                              final_repeats) for i, r in enumerate(pool)]

    def _rescore(self, r: dict[str, Any], what: str, final_repeats: int) -> dict[str, Any]:
        """One finalist's refit with the full settings and its precise score."""
        t0 = time.perf_counter()
        try:
            model = self.fit(r["params"], self.fixed)
            got = self.protocol.validate(model, final_repeats)
            tested = self.protocol.test(model)
        except TRIAL_ERRORS as exc:
            final = {"number": r["number"], "state": "failed",
                     "reason": failure_reason(exc), "input_error": _is_input(exc),
                     "score": None, "se": None, "splits": None, "values": [],
                     "walks": self.walks(r["params"], self.fixed), "test_score": None,
                     "seconds": time.perf_counter() - t0}
            if self.progress:
                _progress_failed(what, self.names.get(r["number"]), r["params"],
                                 final["reason"])
            return final
        final = {"number": r["number"], **got, "walks": self.walks(r["params"], self.fixed),
                 "seconds": time.perf_counter() - t0, **tested}
        self.keep(r["number"], got["score"], model)
        del model
        if self.progress:
            tag = f" (default {self.names[r['number']]})" if r["number"] in self.names else ""
            print(f"kernelne tune: {what}{tag}  {self.protocol.metric} {got['score']:.4f} ± "
                  f"{format_se(got['se'])}{_c1_note(got, self.protocol.select_C)}  "
                  f"(search {r['score']:.4f})", file=sys.stderr, flush=True)
        return final

    def refit_winner(self, finals: list[dict[str, Any]], graph: Graph
                     ) -> tuple[dict[str, Any], dict[str, Any], Any]:
        """``(winning finalist, its trial's record, its model on the whole graph)``: the
        best scored finalist (the first best: ties go to the defaults), refitted unless its
        model is kept; a refit that fails gives way to the next best."""
        while True:
            scored = [f for f in finals if f.get("state") != "failed"]
            if not scored:
                raise _every_fit_failed("finalist", finals, self.names, self.records)
            win = max(scored, key=lambda f: f["score"])
            best = next(r for r in self.records if r["number"] == win["number"])
            if self.kept["number"] == win["number"]:
                model = self.kept["model"]  # fitted with the full settings on the whole graph
                break
            if self.progress:
                print("kernelne tune: refitting the best settings on the whole graph",
                      file=sys.stderr, flush=True)
            try:
                model = space.make_estimator(self.method,
                                             {**self.fixed, **best["params"]}).fit(graph)
                break
            except TRIAL_ERRORS as exc:  # the next best finalist is refitted instead
                win.update(state="failed", input_error=_is_input(exc),
                           reason="refit on the whole graph: " + failure_reason(exc))
                if self.progress:
                    _progress_failed(f"refit of trial {win['number']}",
                                     self.names.get(win["number"]), best["params"],
                                     win["reason"])
        self.kept.clear()
        return win, best, model

    def result(self, finals: list[dict[str, Any]], graph: Graph, start: float) -> TuneResult:
        """The :class:`TuneResult`: the winner of ``finals`` refitted on ``graph`` (see
        :meth:`refit_winner`), timed from ``start``."""
        win, best, model = self.refit_winner(finals, graph)
        scored = [f for f in finals if f.get("state") != "failed"]
        p = self.protocol
        return TuneResult(self.method, best["params"], win["score"], p.metric, self.records,
                          model, p.validation, win["test_score"], time.perf_counter() - start,
                          self.fixed, finals=finals, ranking=rank_finalists(scored, self.names),
                          best_se=win["se"], select_C=p.select_C, chosen_by=p.chosen_by,
                          best_score_c1=win.get("score_c1"), best_se_c1=win.get("se_c1"),
                          test_score_c1=win.get("test_score_c1"))
