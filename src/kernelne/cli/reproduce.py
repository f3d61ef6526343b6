"""CLI: ``kernelne reproduce``, the paper's tables and figures from one command."""

from __future__ import annotations

import argparse
import sys
import time

from kernelne.cli.grammar import (
    add_command,
    add_deprecated_alias,
    job_count,
    positive_count,
    progress_shown,
)
from kernelne.outputs import check_output_path

GRID_TASKS = ("classification", "link_prediction", "sensitivity")


def cmd_reproduce(args: argparse.Namespace) -> int:
    from kernelne.graphs.datasets import find_data_dir
    from kernelne.parallel import dask_errors_unlogged
    from kernelne.reproduce.cache import Cache
    from kernelne.reproduce.config import load_config, write_default_config
    from kernelne.reproduce.grid import build_grid
    from kernelne.reproduce.report import now, update_run_log, write_report
    from kernelne.reproduce.run import (
        Data,
        RunStats,
        backend,
        collect_kernel_weights,
        collect_records,
        collect_split_info,
        execute,
        run_folder,
    )

    if args.write_config:
        write_default_config(args.write_config)
        print(f"wrote {args.write_config} (edit it, then: kernelne reproduce --config "
              f"{args.write_config})")
        return 0
    config = load_config(args.config, quick=args.quick)
    data_dir = find_data_dir(args.data_dir)
    labelled = {p.name.split(".")[0] for p in data_dir.glob("*.labels.gz")}
    config = config.narrowed(args.datasets, args.methods, args.repeats, labelled, args.tasks)
    grid = build_grid(config, data_dir)
    check_output_path(args.out_dir, [args.config], folder=True)
    out = run_folder(args.out_dir)
    cache = Cache(args.cache_dir or out / "cache")
    n_evals = len({j.key for j in grid.evaluations}) + len(grid.heuristics)
    invocation: dict = {"started": now(), "argv": sys.argv[1:], "data_dir": str(data_dir),
                        "embeddings": len(grid.embeddings), "evaluations": n_evals,
                        "report_only": args.report_only}
    stats, start = RunStats(), time.perf_counter()
    with open(out / "run.log", "a", encoding="utf-8") as log_file:

        def log(line: str) -> None:
            log_file.write(f"{now()} {line}\n")
            log_file.flush()

        log(f"start: {len(grid.embeddings)} embeddings, {n_evals} evaluations, "
            f"config {config.source}, data {data_dir}, argv {sys.argv[1:]}")
        try:
            if not args.report_only:
                with dask_errors_unlogged(), backend(args.scheduler) as info:
                    invocation.update(info)
                    execute(grid, Data(data_dir, cache), cache, dask=bool(args.scheduler),
                            jobs=args.jobs, workers=args.workers,
                            progress=progress_shown(args), log=log,
                            stats=stats)
        except KeyboardInterrupt:
            invocation["interrupted"] = True
            raise
        finally:
            invocation.update(vars(stats))
            invocation["wall_seconds"] = round(time.perf_counter() - start, 1)
            log(f"end after {invocation['wall_seconds']} s" + (
                " (interrupted: run again to resume)" if invocation.get("interrupted") else ""))
            run_log = update_run_log(out, config, invocation)
    records = collect_records(grid, cache)
    path = write_report(out, records, config, run_log, args.results_md,
                        collect_kernel_weights(grid, cache), collect_split_info(grid, cache))
    done = len({r["score_key"] for r in records})
    print(f"{done} of {n_evals} evaluations done ({invocation['wall_seconds']:.0f} s); "
          f"report: {path}")
    if stats.failures:
        first = stats.failures[0]
        print(f"kernelne: warning: {len(stats.failures)} job(s) failed and were left out "
              f"(listed in run.log and {path.name}); the first: {first['kind']} "
              f"{first['what']}: {first['reason']}", file=sys.stderr)
    return 0


def register(subparsers) -> None:
    """Add ``reproduce`` to the ``kernelne`` CLI."""
    p = add_command(
        subparsers, "reproduce",
        help="run the paper's experiment grid and write its tables and figures",
        example="kernelne reproduce --quick --out-dir reproduce-results",
        description="Run the experiment grid of the KernelNE paper (Table II node "
        "classification, Table III link prediction, sensitivity figures) on a data folder, "
        "cache every result, and write Markdown tables beside the paper's numbers, raw scores "
        "(CSV/JSON), PNG figures, RESULTS.md and a run log into --out-dir. An interrupted run "
        "resumes from the cache.",
    )
    p.add_argument("--data-dir", metavar="DIR",
                   help="data folder with MANIFEST.json (default: $KERNELNE_DATA if set, else "
                   "the paper's networks shipped with the package)")
    p.add_argument("--out-dir", default="reproduce-results", metavar="DIR",
                   help="output folder (created)")
    add_deprecated_alias(p, "--out", "--out-dir", "out_dir")
    p.add_argument("--cache-dir", metavar="DIR", help="cache folder (default: OUT_DIR/cache)")
    p.add_argument("--config", metavar="FILE",
                   help="settings file (TOML; default: the paper's, built in)")
    p.add_argument("--write-config", metavar="FILE",
                   help="write the default settings file to FILE for editing, and stop")
    p.add_argument("--quick", action="store_true",
                   help="the reduced grid of the settings' [quick] table (under a minute)")
    p.add_argument("--datasets", nargs="+", metavar="NAME", help="only these datasets")
    p.add_argument("--methods", nargs="+", metavar="NAME",
                   help="only these methods (link-prediction heuristics such as katz included; "
                   "those not named are left out)")
    p.add_argument("--tasks", nargs="+", choices=GRID_TASKS, help="only these parts of the grid")
    p.add_argument("--repeats", type=positive_count, metavar="N",
                   help="classification repeats per ratio")
    p.add_argument("--jobs", type=job_count, default=-1, metavar="N",
                   help="parallel evaluation processes, local runs (-1 = all cores)")
    p.add_argument("--workers", type=positive_count, default=None, metavar="N",
                   help="threads per embedding fit (default: all cores)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the jobs on this Dask distributed scheduler, e.g. tcp://host:8786")
    p.add_argument("--results-md", metavar="FILE",
                   help="also write the report to FILE (a checkout's RESULTS.md, say) with its "
                   "figures copied to a figures/ folder beside it")
    p.add_argument("--report-only", action="store_true",
                   help="compute nothing: rewrite the report from the cached results")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_reproduce)
