"""CLI: ``kernelne evaluate classify|linkpred`` and ``kernelne split`` (docs/METHOD.md §10-§11)."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from kernelne.cli.grammar import (
    PROGRESS_HELP,
    add_command,
    add_deprecated_alias,
    job_count,
    progress_shown,
    seed_value,
)
from kernelne.errors import InputError, quote
from kernelne.evaluation.choices import OPERATORS, PAPER_RATIOS, RULE_NAMES, RULES, SELECT_CS
from kernelne.evaluation.results import check_results_path
from kernelne.outputs import check_output_path, folder_lock


def parse_ratios(text: str) -> list[float]:
    """``"10%"``, ``"0.1"`` or a comma list of them, as fractions."""
    out = []
    for token in filter(None, text.split(",")):
        try:
            value = float(token.rstrip("%")) / (100 if token.endswith("%") else 1)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a ratio: {quote(token)}") from None
        if not 0 < value < 1:
            raise argparse.ArgumentTypeError(
                f"ratio {token} must lie strictly between 0 and 1 (or 0% and 100%)"
            )
        out.append(value)
    return out


def stem(path: str) -> str:
    return Path(path).name.split(".")[0]


def check_output(args: argparse.Namespace) -> None:
    """Fail on an unwritable results path (or one that is an input) before any work."""
    if args.output:
        check_results_path(args.output)
        inputs = [getattr(args, name, None) for name in ("embedding", "labels")]
        split_dir = getattr(args, "split_dir", None)
        if split_dir:
            inputs += [p for p in Path(split_dir).glob("*")]
        check_output_path(args.output, inputs)


def emit(table, args: argparse.Namespace) -> None:
    print(table.to_text())
    if args.output:
        table.write(args.output)
        print(f"wrote {args.output}")


def check_training_sizes(ratios: Sequence[float], Y, given: bool = True) -> None:
    """Refuse a training ratio whose training set cannot train a classifier: fewer than 2
    nodes or, when each node has one label, fewer nodes than labels (so some label has no
    training node). ``Y``: the label file's node x label indicator matrix; ``given``: the
    ratios come from ``--ratios`` (else they are the paper's default ones)."""
    per_node = Y.getnnz(axis=1)
    n = int((per_node > 0).sum())
    n_labels = int((Y.getnnz(axis=0) > 0).sum())
    single = bool(per_node.max(initial=0) <= 1)
    for ratio in ratios:
        n_train = min(max(round(ratio * n), 1), n - 1)
        if n_train < 2 or (single and n_train < n_labels):
            need = max(2, n_labels if single else 2)
            lowest = f"{need / max(n, 1):.2g}"
            raise InputError(
                (f"--ratios {ratio:g}" if given else f"the default training ratio {ratio:g}")
                + f": trains on {n_train} of the {n:,} labelled nodes, fewer than {need}"
                + (f" (one per label: {n_labels} labels)" if need > 2 else "")
                + (f"; use ratios of at least {lowest}" if given
                   else f"; give --ratios of at least {lowest}"))


def announce_select_C(splits: int, rules: list[str]) -> None:
    """The line ``--select-C`` starts with on stderr: what it fits, and how many."""
    grid = ", ".join(f"{c:g}" for c in SELECT_CS)
    fits = splits * len(SELECT_CS) * 3
    shared = f", scored by {' and '.join(rules)} alike" if len(rules) > 1 else ""
    print(f"kernelne: choosing C among {grid} by 3-fold cross-validation on each split's "
          f"training nodes: {splits:,} splits x {len(SELECT_CS)} C x 3 folds = {fits:,} "
          f"classifier fits{shared}, then each split's fit with its C", file=sys.stderr,
          flush=True)


def cmd_classify(args: argparse.Namespace) -> int:
    import numpy as np
    import scipy.sparse as sp

    from kernelne.evaluation.classification import (
        default_classifier,
        evaluate_node_classification_rules,
        labelled_rows,
    )

    check_output(args)
    ratios = [r for group in args.ratios for r in group] if args.ratios else PAPER_RATIOS
    X, Y, skipped = labelled_rows(args.embedding, args.labels, missing=args.missing)
    check_training_sizes(ratios, sp.csr_matrix(Y), given=bool(args.ratios))
    start = time.perf_counter()
    rules = ["top-k", "non-oracle"] if args.rule == "both" else [args.rule]
    method = args.name or stem(args.embedding)
    suffix = ", C chosen on training nodes" if args.select_C else ""
    if args.select_C:
        announce_select_C(len(ratios) * args.repeats, rules)
    parts = evaluate_node_classification_rules(
        (X, np.arange(len(X))), Y, rules=rules, ratios=ratios, repeats=args.repeats,
        seed=args.seed, classifier=default_classifier(args.C), n_jobs=args.jobs,
        method={rule: f"{method} [{RULE_NAMES[rule]}{suffix}]" for rule in rules},
        dataset=args.dataset or stem(args.labels),
        select_C=SELECT_CS if args.select_C else None, progress=progress_shown(args),
    )
    table = None
    for part in parts.values():
        table = part if table is None else table + part
    emit(table, args)
    if len(skipped):
        shown = ", ".join(str(x) for x in skipped[:10])
        more = f" and {len(skipped) - 10} more" if len(skipped) > 10 else ""
        print(f"skipped {len(skipped)} labelled node(s) the embedding lacks "
              f"(--missing skip): {shown}{more}")
    if "top-k" in rules:
        print("rule: top-k gives each test node as many labels as it truly has (an oracle, "
              "as in the published tables); 'p > 0.5 or the most probable' reads no test label")
    print(f"{len(ratios)} ratios x {args.repeats} repeats in {time.perf_counter() - start:.1f} s")
    return 0


def cmd_linkpred(args: argparse.Namespace) -> int:
    from kernelne.evaluation.linkpred import default_edge_classifier, evaluate_link_prediction
    from kernelne.evaluation.splits import LinkSplit

    check_output(args)
    split = LinkSplit.load(args.split_dir)
    operators = list(OPERATORS) if "all" in args.operator else args.operator
    dataset = args.dataset or stem(split.info.get("source", args.split_dir))
    table = evaluate_link_prediction(
        args.embedding, split, operators=operators, classifier=default_edge_classifier(args.C),
        method=args.name or stem(args.embedding), dataset=dataset, select=args.select,
        progress=progress_shown(args),
    )
    emit(table, args)
    return 0


def cmd_heuristics(args: argparse.Namespace) -> int:
    from kernelne.evaluation.heuristics import evaluate_heuristics
    from kernelne.evaluation.splits import LinkSplit

    check_output(args)
    split = LinkSplit.load(args.split_dir)
    dataset = args.dataset or stem(split.info.get("source", args.split_dir))
    emit(evaluate_heuristics(split, dataset=dataset), args)
    return 0


def cmd_split(args: argparse.Namespace) -> int:
    from kernelne.evaluation.splits import SPLIT_FILES, make_link_split

    folder = Path(args.out_dir)
    check_output_path(args.out_dir, [args.graph], folder=True, companions=[
        (folder / name, f"written by split into --out-dir {args.out_dir}")
        for name in SPLIT_FILES])
    start = time.perf_counter()
    try:
        folder.mkdir()
        created = True
    except FileExistsError:
        created = False
    except OSError as exc:
        raise InputError(f"cannot create the folder: {exc.strerror or exc}", folder) from None
    locked = False
    try:
        with folder_lock(folder, f"another split (--out-dir {args.out_dir})"):
            locked = True  # one split into a folder at a time: its three files are one run's
            split = make_link_split(args.graph, test_fraction=args.test_fraction,
                                    seed=args.seed, cap=args.cap)
            split.save(args.out_dir)
    except BaseException:
        if created and locked:
            with contextlib.suppress(OSError):
                folder.rmdir()  # made for this run and left empty: removed again
        raise
    info = split.info
    print(f"graph      {info['nodes']:,} nodes, {info['edges']:,} edges; largest component "
          f"{info['lcc_nodes']:,} nodes, {info['lcc_edges']:,} edges")
    print(f"held out   {len(split.test_edges):,} edges + {len(split.test_negatives):,} non-edges "
          f"(test), seed {split.seed}" + (" (capped: residual kept connected)"
                                          if info["capped"] else ""))
    print(f"residual   {len(split.train_edges):,} edges (connected) + "
          f"{len(split.train_negatives):,} non-edges (classifier training)")
    print(f"time       {time.perf_counter() - start:.1f} s")
    print(f"wrote      {args.out_dir}/ (embed {Path(args.out_dir) / 'residual.edgelist'})")
    return 0


CLASSIFY_EXAMPLE = [
    "kernelne datasets --copy karate",
    "kernelne embed karate.edgelist -o karate.npy --seed 0",
    "kernelne evaluate classify karate.npy karate.labels --ratios 0.5 --repeats 5"]


def register(subparsers) -> None:
    """Add ``evaluate`` (``classify``, ``linkpred``, ``heuristics``) and ``split`` to the
    ``kernelne`` CLI."""
    evaluate = add_command(
        subparsers, "evaluate",
        help="score an embedding on node classification or link prediction",
        description="Score an embedding (word2vec text, .npy or .npz) by the protocols of "
        "`kernelne docs method` (sections 10-11).",
        example=CLASSIFY_EXAMPLE)
    tasks = evaluate.add_subparsers(dest="task", required=True, metavar="TASK")
    _register_classify(tasks)
    _register_linkpred(tasks)
    _register_heuristics(tasks)
    _register_split(subparsers)


def _register_classify(tasks) -> None:
    classify = add_command(
        tasks, "classify", help="node classification (one-vs-rest L2 logistic regression)",
        description="Node classification: for each training ratio, repeated seeded splits of "
        "the labelled nodes; Micro-/Macro-F1 mean and std.",
        example=CLASSIFY_EXAMPLE)
    classify.add_argument("embedding", metavar="EMBEDDING",
                          help="embedding file (word2vec text, .npy or .npz)")
    classify.add_argument("labels", metavar="LABELS",
                          help="label file, 'node label' per line (.gz allowed)")
    classify.add_argument("--ratios", nargs="+", type=parse_ratios, metavar="R",
                          help="training ratios, e.g. 0.1 0.5 or 10%% 50%% "
                          "(default: the paper's 2..90%%)")
    classify.add_argument("--repeats", type=int, default=50, metavar="N",
                          help="splits per ratio")
    classify.add_argument("--seed", type=seed_value, default=0, metavar="N", help="split seed")
    classify.add_argument("--rule", choices=[*RULES, "both"], default="both",
                          help="top-k: k = true label count (an oracle, as published); "
                          "non-oracle: p > 0.5 or the most probable label; threshold: p > 0.5; "
                          "both: top-k and non-oracle, named in the output")
    classify.add_argument("-C", type=float, default=1.0, metavar="C",
                          help="inverse L2 strength")
    classify.add_argument("--select-C", action="store_true",
                          help="choose C per split among "
                          f"{', '.join(f'{c:g}' for c in SELECT_CS)} by 3-fold "
                          "cross-validation on that split's training nodes only "
                          "(15 more fits per split: about 15x the time)")
    classify.add_argument("--missing", choices=["error", "skip"], default="error",
                          help="labelled nodes the embedding lacks (e.g. isolated nodes): "
                          "error (name them and stop) or skip (leave them out, "
                          "counted in the output)")
    classify.add_argument("--jobs", type=job_count, default=-1, metavar="N",
                          help="parallel jobs (-1 = all cores; capped at the work)")
    classify.add_argument("--no-progress", action="store_true", help=PROGRESS_HELP)
    add_common(classify)
    classify.set_defaults(func=cmd_classify)


def _register_linkpred(tasks) -> None:
    linkpred = add_command(
        tasks, "linkpred", help="link prediction on a saved split",
        description="Link prediction: L2 logistic regression on edge features of the split's "
        "training pairs, ROC-AUC and average precision on its test pairs. The embedding "
        "should be learned on SPLIT_DIR/residual.edgelist.",
        example=["kernelne datasets --copy karate",
                 "kernelne split karate.edgelist --out-dir karate-split --seed 0",
                 "kernelne embed karate-split/residual.edgelist -o karate-res.npy --seed 0",
                 "kernelne evaluate linkpred karate-res.npy karate-split"])
    linkpred.add_argument("embedding", metavar="EMBEDDING",
                          help="embedding file (word2vec text, .npy or .npz)")
    linkpred.add_argument("split_dir", metavar="SPLIT_DIR",
                          help="folder written by `kernelne split`")
    linkpred.add_argument("--operator", nargs="+", default=["weighted_l2"],
                          choices=[*OPERATORS, "all"], help="edge operator(s)")
    linkpred.add_argument("-C", type=float, default=1.0, metavar="C",
                          help="inverse L2 strength")
    linkpred.add_argument("--select", action="store_true",
                          help="choose the operator (among --operator) and C by 3-fold "
                          "cross-validated ROC-AUC on the training pairs only; one result")
    linkpred.add_argument("--no-progress", action="store_true", help=PROGRESS_HELP)
    add_common(linkpred)
    linkpred.set_defaults(func=cmd_linkpred)


def _register_heuristics(tasks) -> None:
    heuristics = add_command(
        tasks, "heuristics", help="link-prediction heuristics on a saved split (no embedding)",
        description="Common neighbours, Jaccard, Adamic-Adar, preferential attachment and "
        "truncated Katz, computed on the split's residual graph only, scored (ROC-AUC, AP) on "
        "its test pairs: the bar an embedding should clear.",
        example=["kernelne datasets --copy karate",
                 "kernelne split karate.edgelist --out-dir karate-split --seed 0",
                 "kernelne evaluate heuristics karate-split"])
    heuristics.add_argument("split_dir", metavar="SPLIT_DIR",
                            help="folder written by `kernelne split`")
    add_common(heuristics, name=False)
    heuristics.set_defaults(func=cmd_heuristics)


def _register_split(subparsers) -> None:
    split = add_command(
        subparsers, "split", help="make a link-prediction split of a graph",
        description="Hold out a fraction of the largest component's edges (residual kept "
        "connected) and sample as many non-edges; save to a folder with the residual edge list. "
        "One split writes into a folder at a time (a second is refused while the first runs), "
        "so its three files are always of one run.",
        example=["kernelne datasets --copy karate",
                 "kernelne split karate.edgelist --out-dir karate-split --seed 0"])
    split.add_argument("graph", metavar="GRAPH",
                       help="edge list (.txt/.csv/.gz, 'u v' per line) or .mat")
    out = split.add_mutually_exclusive_group(required=True)
    out.add_argument("--out-dir", metavar="DIR", help="folder to write (created if needed)")
    for old in ("-o", "--output"):
        add_deprecated_alias(out, old, "--out-dir", "out_dir")
    split.add_argument("--test-fraction", type=float, default=0.5, metavar="F",
                       help="fraction of edges held out")
    split.add_argument("--seed", type=seed_value, default=0, metavar="N", help="random seed")
    split.add_argument("--cap", action="store_true",
                       help="when the fraction cannot be held out with a connected residual, "
                       "hold out as many edges as can (instead of failing)")
    split.set_defaults(func=cmd_split)


def add_common(parser: argparse.ArgumentParser, name: bool = True) -> None:
    """The result options of every ``evaluate`` task: names in the table and a results file
    (``name``: the task scores an embedding, whose method is named by ``--name``)."""
    if name:
        parser.add_argument("--name", metavar="NAME", help="method name in the results "
                            "(default: the embedding's file name)")
        add_deprecated_alias(parser, "--method", "--name", "name")
    else:  # accepted and unused, as it always was: the results name each heuristic
        parser.add_argument("--method", help=argparse.SUPPRESS)
    parser.add_argument("--dataset", metavar="NAME", help="dataset name in the results")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="also write the results to a .csv or .json file")
