"""Run every example that kernelne shows, as written, from the installed package.

The examples are: each ``example:`` (and ``first commands:``) block of ``kernelne --help`` and
of every subcommand's help, the README's ``bash`` and ``python`` blocks, and the docstrings'
``Examples`` sections (doctest). Each block runs in its own empty temporary folder, line by line
in the order shown, with the ``kernelne`` of the running interpreter's environment first on
PATH, so a passing run shows that the examples work from a wheel with no checkout beside it.

README blocks that cannot run on one machine without network are skipped, and named: the
install commands (``pip install``, ``python -m pytest``: CI runs them itself) and the cluster
commands (``--scheduler``).

Usage (with the Python of the environment the wheel is installed in)::

    VENV/bin/python .ci/help_examples.py [--readme README.md] [--only help|readme|docstrings]

Exit status 0 if every example ran without error, 1 otherwise (each failure printed with its
output).
"""

from __future__ import annotations

import argparse
import doctest
import importlib
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKIP_README = {"pip install": "an install command", "python -m pytest": "the test suite",
               "--scheduler": "needs a Dask cluster"}


def help_blocks() -> list[tuple[str, list[str]]]:
    """(name, command lines) of every example block in the CLI's help, each distinct once."""
    import argparse as ap

    from kernelne.cli.app import build_parser

    blocks: list[tuple[str, list[str]]] = []
    seen: set[tuple[str, ...]] = set()

    def walk(parser: ap.ArgumentParser, path: list[str]) -> None:
        lines, inside = [], False
        for line in (parser.epilog or "").splitlines():
            if line.rstrip().endswith(":") and not line.startswith(" "):
                inside = line.strip() in ("example:", "first commands:")
            elif inside and line.startswith("  ") and line.strip():
                lines.append(line.strip())
        if lines and tuple(lines) not in seen:
            seen.add(tuple(lines))
            blocks.append((" ".join(path) + " --help", lines))
        for action in parser._actions:
            if isinstance(action, ap._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, path + [name])

    walk(build_parser(), ["kernelne"])
    return blocks


def readme_blocks(readme: Path) -> tuple[list[tuple[str, str, str]], list[str]]:
    """(name, language, text) of the README's bash and python blocks; and the skipped ones."""
    text = readme.read_text()
    run, skipped = [], []
    for match in re.finditer(r"^```(bash|python)\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        lang, body = match.group(1), match.group(2)
        line_no = text[:match.start()].count("\n") + 1
        name = f"README.md:{line_no} ({lang})"
        reason = next((why for key, why in SKIP_README.items() if key in body), None)
        if reason:
            skipped.append(f"{name}: {reason}")
        else:
            run.append((name, lang, body))
    return run, skipped


def shell_lines(body: str) -> list[str]:
    """The commands of a bash block: continuation lines joined, blank lines dropped."""
    return [line for line in body.replace("\\\n", " ").splitlines() if line.strip()]


def run_commands(name: str, lines: list[str], env: dict) -> tuple[bool, str]:
    """Run ``lines`` one after another in one bash, in a fresh empty folder."""
    with tempfile.TemporaryDirectory(prefix="kernelne-example-") as folder:
        script = "set -euo pipefail\n" + "\n".join(
            f"echo '$ {line.replace(chr(39), chr(39) + chr(92) + chr(39) + chr(39))}'\n{line}"
            for line in lines)
        proc = subprocess.run(["bash", "-c", script], cwd=folder, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return proc.returncode == 0, proc.stdout


def run_python(body: str, env: dict) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory(prefix="kernelne-example-") as folder:
        proc = subprocess.run([sys.executable, "-c", body], cwd=folder, env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        return proc.returncode == 0, proc.stdout


def docstring_modules() -> list[str]:
    """The modules of the installed kernelne whose source holds a doctest."""
    import kernelne

    names = []
    for info in pkgutil.walk_packages(kernelne.__path__, "kernelne."):
        spec = importlib.util.find_spec(info.name)
        origin = getattr(spec, "origin", None)
        if origin and origin.endswith(".py") and ">>> " in Path(origin).read_text():
            names.append(info.name)
    return sorted(names)


def run_doctests(module: str) -> tuple[bool, str]:
    """doctest.testmod of ``module`` in a fresh empty folder; its report as the output."""
    import contextlib
    import io

    here = os.getcwd()
    out = io.StringIO()
    with tempfile.TemporaryDirectory(prefix="kernelne-example-") as folder:
        os.chdir(folder)
        try:
            with contextlib.redirect_stdout(out):
                result = doctest.testmod(importlib.import_module(module),
                                         optionflags=doctest.ELLIPSIS
                                         | doctest.NORMALIZE_WHITESPACE)
        finally:
            os.chdir(here)
    return result.failed == 0, out.getvalue() + f"{result.attempted} examples\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readme", type=Path,
                        default=Path(__file__).resolve().parent.parent / "README.md")
    parser.add_argument("--only", choices=["help", "readme", "docstrings"])
    args = parser.parse_args(argv)
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    jobs = []
    if args.only in (None, "help"):
        jobs += [(name, lambda lines=lines, name=name: run_commands(name, lines, env))
                 for name, lines in help_blocks()]
    if args.only in (None, "readme"):
        blocks, skipped = readme_blocks(args.readme)
        for line in skipped:
            print(f"skip  {line}")
        for name, lang, body in blocks:
            if lang == "bash":
                jobs.append((name, lambda body=body, name=name:
                             run_commands(name, shell_lines(body), env)))
            else:
                jobs.append((name, lambda body=body: run_python(body, env)))
    if args.only in (None, "docstrings"):
        jobs += [(f"doctest {m}", lambda m=m: run_doctests(m)) for m in docstring_modules()]
    failed = []
    start = time.perf_counter()
    for name, job in jobs:
        t0 = time.perf_counter()
        ok, output = job()
        print(f"{'ok  ' if ok else 'FAIL'}  {name} ({time.perf_counter() - t0:.1f} s)",
              flush=True)
        if not ok:
            failed.append(name)
            print(output[-6000:])
    print(f"{len(jobs) - len(failed)} of {len(jobs)} example blocks ran "
          f"({time.perf_counter() - start:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
