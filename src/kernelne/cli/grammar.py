"""The grammar every ``kernelne`` subcommand follows: help layout, examples, old spellings.

- :class:`HelpFormatter` prints each option's default after its help text, so no help text
  writes its default by hand, and keeps the description and example epilog as written.
- :func:`add_command` registers a subcommand with that formatter and an ``example:`` epilog.
- :func:`add_deprecated_alias` keeps an old option spelling working for one release, with a
  one-line deprecation warning naming the new spelling.
- :func:`seed_value` is the ``--seed`` type of every command (a whole number >= 0).

Output options: ``-o/--output FILE`` for a command that writes one file (or one file prefix),
``--out-dir DIR`` for a command that writes a folder. ``--method`` always names an embedding
method (``kernelne``, ``deepwalk``, ...).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

#: the release in which the deprecated spellings are removed
REMOVED_IN = "0.3.0"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help with ``(default: X)`` appended where an option has a default worth showing.

    Defaults that say nothing (``None``, ``False`` for a flag, suppressed values) are left out;
    a help text that already mentions ``%(default)s`` is left as it is.
    """

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("%(default)" in text or default is None or default is False
                or default is argparse.SUPPRESS or isinstance(action, argparse._HelpAction)
                or isinstance(action, argparse._VersionAction)):
            return text
        if not action.option_strings and action.nargs not in ("?", "*"):
            return text
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


def add_command(subparsers: Any, name: str, *, help: str, description: str,
                example: str | list[str], **kwargs: Any) -> argparse.ArgumentParser:
    """Register subcommand ``name`` with :class:`HelpFormatter` and an ``example:`` epilog.

    Parameters
    ----------
    subparsers
        The object returned by :meth:`argparse.ArgumentParser.add_subparsers`.
    name, help, description
        As for ``add_parser``.
    example
        One command line, or several, shown at the end of ``--help``.
    """
    lines = [example] if isinstance(example, str) else list(example)
    epilog = "example:\n" + "\n".join(f"  {line}" for line in lines)
    return subparsers.add_parser(name, help=help, description=description, epilog=epilog,
                                 formatter_class=HelpFormatter, **kwargs)


class _DeprecatedOption(argparse.Action):
    """Store like the new option, after a warning that names it."""

    def __init__(self, option_strings, dest, new: str, new_default: Any = None, nargs=None,
                 **kwargs):
        self.new, self.new_default = new, new_default
        super().__init__(option_strings, dest, nargs=nargs, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"kernelne: warning: {option_string} is deprecated, use {self.new} (the old "
              f"spelling is removed in {REMOVED_IN})", file=sys.stderr)
        value = True if self.nargs == 0 else values
        given = vars(namespace).setdefault(DEPRECATED_GIVEN, {})
        if self.dest not in given:  # the value before: not the default if the new one came first
            given[self.dest] = [option_string, self.new, getattr(namespace, self.dest,
                                                                 self.new_default),
                                self.new_default, value]
        elif given[self.dest][4] != value:  # the old spelling twice, with two values
            raise argparse.ArgumentError(self, f"given twice ({given[self.dest][4]}, then "
                                               f"{value}): give {self.new} once")
        given[self.dest][4] = value
        setattr(namespace, self.dest, value)


DEPRECATED_GIVEN = "_deprecated_given"  # namespace attribute: the deprecated spellings used


def add_deprecated_alias(parser: argparse.ArgumentParser, old: str, new: str, dest: str,
                         **kwargs: Any) -> None:
    """Accept option ``old`` as a hidden synonym of ``new`` (stored in ``dest``) for one
    release, warning on use. ``kwargs`` (``type``, ``nargs``, ...) must match ``new``'s.
    Both spellings given together are refused by :func:`check_deprecated_spellings`."""
    new_default = next((a.default for a in parser._actions if new in a.option_strings), None)
    parser.add_argument(old, dest=dest, action=_DeprecatedOption, new=new,
                        new_default=new_default, default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS, **kwargs)


def check_deprecated_spellings(args: argparse.Namespace) -> None:
    """Refuse a deprecated option given together with its new spelling (in either order),
    rather than keeping whichever came last.

    Raises
    ------
    InputError
        Naming both spellings.
    """
    from kernelne.errors import InputError

    for dest, (old, new, before, default, last) in vars(args).pop(DEPRECATED_GIVEN,
                                                                    {}).items():
        if before != default or getattr(args, dest) != last:
            raise InputError(f"{old} (deprecated) and {new} both given: give only {new}")


def output_or_positional(args: argparse.Namespace, command: str, metavar: str) -> str:
    """The output of a command whose positional output form is deprecated.

    Parameters
    ----------
    args : argparse.Namespace
        With ``output`` (``-o/--output``) and ``legacy_output`` (the positional form).
    command : str
        The command line before the output, e.g. ``"kernelne convert GRAPH"``.
    metavar : str
        What the output is, e.g. ``"FILE.npz"`` or ``"PREFIX"``.

    Returns
    -------
    str
        ``-o/--output``, or the positional output after a deprecation warning.

    Raises
    ------
    InputError
        Both forms given, or neither.
    """
    from kernelne.errors import InputError

    name = command.split()[1]
    if args.legacy_output is not None:
        if args.output is not None:
            raise InputError(f"two outputs: -o {args.output} and {args.legacy_output} (give "
                             "only -o/--output)")
        print(f"kernelne: warning: `{command} {metavar}` is deprecated, use `{command} -o "
              f"{metavar}` (the positional form is removed in {REMOVED_IN})", file=sys.stderr)
        return args.legacy_output
    if args.output is None:
        raise InputError(f"{name} needs the output {'file' if '.' in metavar else 'prefix'}: "
                         f"-o/--output {metavar}")
    return args.output


def whole_number(text: str) -> int:
    """``text`` as an int, or argparse's error "not a whole number" (the start of every
    count type of the command line)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def job_count(text: str) -> int:
    """argparse type for ``--jobs``: a positive count, or -1 for every core."""
    value = whole_number(text)
    if value == 0 or value < -1:
        raise argparse.ArgumentTypeError(
            f"{value}: use a positive number of jobs, or -1 for every core")
    return value


def positive_count(text: str) -> int:
    """argparse type for counts such as ``--workers``: a whole number of at least 1 (checked
    while parsing, so nothing is created before a bad value is refused)."""
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


def seed_value(text: str) -> int:
    """argparse type of ``--seed``: a whole number >= 0 (numpy's seeds), refused while parsing
    so that nothing runs before a bad seed is reported."""
    value = whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value}: a seed is a whole number >= 0")
    return value


PROGRESS_HELP = "no progress bars (there are none either when stderr is not a terminal)"


def progress_shown(args: argparse.Namespace) -> bool:
    """Whether a fit draws its progress bars: on a terminal only, and neither ``--quiet`` nor
    ``--no-progress`` given (the rule of every command that draws them)."""
    return (not getattr(args, "quiet", False) and not getattr(args, "no_progress", False)
            and sys.stderr.isatty())
