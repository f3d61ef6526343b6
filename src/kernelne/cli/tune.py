"""CLI: ``kernelne tune``, a method's settings chosen on validation data, then refitted."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kernelne.cli.grammar import add_command, add_deprecated_alias, seed_value
from kernelne.errors import InputError, write_failure
from kernelne.tune import space
from kernelne.tune.space import SEARCH_SPACES


def parse_fixed(method: str, items: Sequence[str]) -> dict[str, Any]:
    """``--fix NAME=VALUE`` options as constructor parameters of ``method``: the value is read
    as the parameter's default's type (``true``/``false`` for a flag; a number, ``null`` or a
    JSON list where JSON reads one; a word as it is)."""
    known = space.constructor_values(method)  # typed: "auto" defaults at their values
    fixed: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name, text = name.strip().replace("-", "_"), text.strip()
        if not sep or not name or not text:
            raise InputError(f"--fix takes NAME=VALUE (e.g. loss=squared), got {item!r}")
        if name not in known:
            raise InputError(f"--fix {item}: {method} has no parameter {name!r} (it has: "
                             f"{', '.join(sorted(known))})")
        default = known[name]
        if isinstance(default, (bool, np.bool_)):
            flags = {"true": True, "1": True, "yes": True, "false": False, "0": False,
                     "no": False}
            if text.lower() not in flags:
                raise InputError(f"--fix {item}: {name} is true or false")
            value: Any = flags[text.lower()]
        else:
            try:
                value = json.loads(text)
            except ValueError:
                value = text
            if isinstance(default, float) and isinstance(value, int) \
                    and not isinstance(value, bool):
                value = float(value)
        if name in fixed and fixed[name] != value:
            raise InputError(f"--fix {name} given twice ({json.dumps(fixed[name])}, then "
                             f"{json.dumps(value)}): give it once")
        fixed[name] = value
    return fixed


def cmd_tune(args: argparse.Namespace) -> int:
    """``kernelne tune``: search, refit, write the embedding and the report."""
    from kernelne.embedding_io import check_embedding_output
    from kernelne.graphs.graph import iter_records
    from kernelne.outputs import check_output_path
    from kernelne.tune.result import format_se, write_outputs
    from kernelne.tune.search import tune

    inputs = [args.graph, args.labels, args.test_nodes]
    check_embedding_output(args.output, inputs)
    report = args.report_dir
    if report:
        check_output_path(report, inputs, folder=True, companions=[
            (Path(report) / name, f"written by tune into --report-dir {report}")
            for name in ("trials.csv", "best.json", "trials.png", "map.png")])
        if os.path.realpath(report) == os.path.realpath(args.output):
            raise InputError("--report-dir is the embedding output (-o): choose another "
                             "folder", report)
    if getattr(args, "finalists_given", False) and args.search_walks is None:
        raise InputError("--finalists only matters with --search-walks (without it every "
                         "trial is scored with the full settings): give --search-walks, or "
                         "leave out --finalists")
    if getattr(args, "select_C_given", False) and args.labels is None:
        flag = "--select-C" if args.select_C else "--no-select-C"
        raise InputError(f"{flag} only matters with --labels (link validation trains no "
                         "classifier): give --labels, or leave it out")
    test_nodes = None
    if args.test_nodes:
        test_nodes = [x for _, fields in iter_records(args.test_nodes) for x in fields]
        if not test_nodes:
            raise InputError("no node ids found (empty file)", args.test_nodes)
    fixed = parse_fixed(args.method, args.fix or [])
    for name in ("dim", "workers"):
        if getattr(args, name) is not None:
            if name in fixed:
                raise InputError(f"--{name} and --fix {name}=... both given: give one")
            fixed[name] = getattr(args, name)
    result = tune(args.graph, args.labels, method=args.method, trials=args.trials,
                  timeout=args.timeout, seed=args.seed, test_nodes=test_nodes,
                  holdout=args.holdout, search_walks=args.search_walks,
                  finalists=args.finalists, final_repeats=args.final_repeats, fixed=fixed,
                  select_C=args.select_C, progress=not args.quiet)
    try:
        write_outputs(result, args.output, report, args.labels)
    except OSError as exc:  # e.g. a full disk: write_outputs leaves nothing behind
        where = exc.filename or report or args.output
        raise InputError(f"cannot write the outputs: {write_failure(exc)}", where) from None
    print(result.table())
    print(f"validation  {result.validation}")
    print(f"best        trial {result.ranking.get('winner', '-')}  "
          f"{json.dumps(result.best_params)}  {result.metric} "
          f"{result.best_score:.4f} ± {format_se(result.best_se)}")
    print(result.summary())
    if result.test_score is not None:
        how = (f", C chosen on the non-test labelled nodes (C = 1: "
               f"{result.test_score_c1:.4f})" if result.select_C else "")
        print(f"test        Micro-F1 {result.test_score:.4f} on the held-out test nodes{how} "
              "(read only after the search)")
    print(f"time        {result.seconds:.1f} s")
    print(f"wrote       {args.output}" + (f", {report}/" if report else ""))
    return 0


#: ``--finalists``' value when it is not given (it matters with ``--search-walks`` only)
DEFAULT_FINALISTS = 3


class _Given(argparse.Action):
    """Store the value and note that the option was given (``finalists_given``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


class _GivenFlag(argparse.BooleanOptionalAction):
    """``--NAME/--no-NAME``, noting that either was given (``select_C_given``)."""

    def __call__(self, parser, namespace, values, option_string=None):
        super().__call__(parser, namespace, values, option_string)
        setattr(namespace, f"{self.dest}_given", True)


def register(sub) -> None:
    """Add ``kernelne tune`` to the CLI."""
    from kernelne.evaluation.choices import SELECT_CS

    p = add_command(
        sub, "tune", help="choose a method's settings on validation data, then refit",
        description="Search a method's settings with Optuna on validation data cut from the "
        "training data only (labelled non-test nodes, or held-out links when there are no "
        "labels), refit the best on the whole graph and write its embedding. A trial whose "
        "fit fails (diverged, out of memory, a refused combination) is recorded as failed "
        "with its reason and the search goes on.",
        example=["kernelne datasets --copy karate",
                 "kernelne tune karate.edgelist --labels karate.labels --holdout 0.3 "
                 "--trials 4 --search-walks 5 -o best.npy --report-dir tune-report",
                 "kernelne split karate.edgelist --out-dir karate-split --test-fraction 0.2 "
                 "--seed 0",
                 "kernelne tune karate-split/residual.edgelist --fix loss=squared --trials 4 "
                 "-o best.txt"])
    p.add_argument("graph", help="graph file (the training graph, e.g. a split's residual)")
    p.add_argument("-o", "--output", required=True,
                   help="embedding of the refitted winner (.npy, or word2vec text)")
    p.add_argument("--labels", default=None, help="node labels: validate by classification")
    p.add_argument("--test-nodes", default=None,
                   help="file of test node ids (whitespace separated): never read")
    p.add_argument("--holdout", type=float, default=None,
                   help="hold out this fraction of labelled nodes as the test part instead")
    p.add_argument("--method", default="kernelne", choices=sorted(SEARCH_SPACES),
                   help="the embedding method whose settings are searched")
    p.add_argument("--trials", type=int, default=20, help="number of trials")
    p.add_argument("--timeout", type=float, default=None, help="stop searching after S s")
    p.add_argument("--search-walks", type=int, default=None,
                   help="walks per node during the search only, instead of the method's "
                   "own; the finalists are then re-scored with the full count")
    p.add_argument("--finalists", type=int, default=DEFAULT_FINALISTS, action=_Given,
                   help="with --search-walks only: re-score this many best trials, and every "
                   "default, with the full settings before choosing")
    p.add_argument("--final-repeats", type=int, default=10,
                   help="validation splits of a precise score (labels only)")
    p.add_argument("--select-C", dest="select_C", action=_GivenFlag, default=True,
                   help="with --labels only: choose the classifier's C per validation split "
                   f"among {', '.join(f'{c:g}' for c in SELECT_CS)} by 3-fold "
                   "cross-validation on that split's training nodes, and choose the settings "
                   "by that Micro-F1 (the C = 1 score is recorded beside it); "
                   "--no-select-C: the paper's C = 1 throughout")
    p.add_argument("--fix", action="append", default=None, metavar="NAME=VALUE",
                   help="hold a parameter of the method at VALUE in every fit, searched or "
                   "not (repeatable, once per parameter; e.g. --fix loss=squared --fix "
                   "window_shrink=false); the defaults that set it otherwise are then not "
                   "tried")
    p.add_argument("--dim", type=int, default=None, help="embedding dimension (all fits)")
    p.add_argument("--workers", type=int, default=None, help="threads per fit")
    p.add_argument("--seed", type=seed_value, default=0,
                   help="seed of splits, sampler and fits")
    p.add_argument("--report-dir", default=None, metavar="DIR",
                   help="folder for trials.csv, best.json, trials.png (and map.png)")
    add_deprecated_alias(p, "--report", "--report-dir", "report_dir")
    p.add_argument("--quiet", action="store_true", help="no per-trial progress lines")
    p.set_defaults(func=cmd_tune)

