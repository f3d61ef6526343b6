"""The one exception type for bad user input.

Every reader raises :class:`InputError` with a message that names the file, the line (when
there is one) and the problem; the CLI prints it and exits with status 2, without a traceback.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

QUOTE_LIMIT = 80  # characters of user input an error line quotes


def quote(text: object, limit: int = QUOTE_LIMIT, bare: bool = False) -> str:
    """``repr(text)`` for an error line, cut to ``limit`` characters of ``text`` with its full
    length said (a malformed 1 MB line is not echoed whole).

    Parameters
    ----------
    text : object
        The offending input (turned into a string).
    limit : int, default 80
        The characters kept.
    bare : bool, default False
        Without the quotes of ``repr`` (a number).

    Returns
    -------
    str
        ``'abc'``, or ``'abcd...' (1,000,000 characters)`` when cut.
    """
    text = str(text)
    shown = text if bare else repr(text)
    if len(text) <= limit:
        return shown
    cut = text[:limit] if bare else repr(text[:limit])
    return f"{cut}... ({len(text):,} characters)"


class InputError(ValueError):
    """Bad user input: an unreadable file, a malformed line, an impossible parameter.

    A :class:`ValueError`. Its message is ``PATH:LINE: PROBLEM`` (or ``PATH: PROBLEM``, or the
    problem alone); the CLI prints it as one ``kernelne: error: ...`` line and exits with
    status 2, without a traceback.

    Parameters
    ----------
    problem : str
        What is wrong.
    path : str or Path, optional
        The file the problem is in.
    line : int, optional
        The line of ``path`` the problem is on.

    Attributes
    ----------
    problem : str
        What is wrong.
    path : str or None
        The file, as a string.
    line : int or None
        The line number.
    """

    def __init__(self, problem: str, path: str | Path | None = None, line: int | None = None):
        self.problem = problem
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        super().__init__(where + problem)


_SPELLED = re.compile(r"\{([a-z_]+)(?:=([^{}]*))?\}")


class ParamError(InputError):
    """An :class:`InputError` about parameters, spelled for whoever reads it.

    ``template`` names each parameter in braces: ``{partitions}`` or ``{beta_select=train}``
    (a parameter and its value). The message (``str(exc)``) spells them as Python does
    (``partitions``, ``beta_select='train'``); :meth:`spelled` as the command line does
    (``--partitions``, ``--beta-select train``).

    Parameters
    ----------
    template : str
        The problem, with the parameters in braces.
    path : str or Path, optional
        The file the problem is in.

    Attributes
    ----------
    template : str
        The problem as given, braces included.
    """

    def __init__(self, template: str, path: str | Path | None = None):
        self.template = template
        super().__init__(_SPELLED.sub(_python_spelling, template), path)

    def spelled(self, flags: Mapping[str, str]) -> str:
        """The message with every parameter named by its command-line option.

        Parameters
        ----------
        flags : mapping
            ``{parameter: option}``, e.g. ``{"beta_select": "--beta-select"}``; a parameter
            without an option keeps its Python spelling.

        Returns
        -------
        str
            The message, e.g. ``... use --beta-select train``.
        """
        def option(match: re.Match) -> str:
            name, value = match.group(1), match.group(2)
            if name not in flags:
                return _python_spelling(match)
            return flags[name] if value is None else f"{flags[name]} {value}"

        problem = _SPELLED.sub(option, self.template)
        return problem if self.path is None else f"{self.path}: {problem}"


def _python_spelling(match: re.Match) -> str:
    """``name`` or ``name=value``, the value quoted unless a number, bool or None."""
    name, value = match.group(1), match.group(2)
    if value is None:
        return name
    try:
        float(value)
        literal = True
    except ValueError:
        literal = value in ("True", "False", "None")
    return f"{name}={value if literal else repr(value)}"


class TrainingError(RuntimeError):
    """Training produced no usable embedding: NaN/inf rows (diverged) or no pair to train on.

    A :class:`RuntimeError` taking the message as its one argument. The CLI prints it as one
    ``kernelne: error: ...`` line and exits non-zero without writing an output file; the
    Python API raises it from ``fit``.
    """


#: What one fit (or its scoring) may raise for its setting alone: diverged or collapsed rows
#: (:class:`TrainingError`), a combination of parameters the method refuses (``ValueError``,
#: :class:`InputError` included), out of memory, a numerical error. A loop over fits (``tune``'s
#: trials, ``reproduce``'s grid) records such a fit as failed, with its reason, and goes on.
FIT_ERRORS: tuple[type[BaseException], ...] = (TrainingError, ValueError, MemoryError,
                                               ArithmeticError)


_SHORT_WRITE = re.compile(r"(\d+) requested and (\d+) written")


def write_failure(exc: BaseException) -> str:
    """Why a write failed, for a ``cannot write FILE: REASON`` line: the system's reason
    (``No space left on device``, ``Permission denied``), or for numpy's short write
    (``5312 requested and 5088 written``: the disk or the quota full) that reason in words.

    Parameters
    ----------
    exc : BaseException
        What the write raised (an ``OSError`` as a rule).

    Returns
    -------
    str
        The reason, on one line.
    """
    strerror = getattr(exc, "strerror", None)
    if strerror:
        return strerror
    text = " ".join(str(exc).split())
    short = _SHORT_WRITE.fullmatch(text)
    if short:
        return (f"No space left on device (only {int(short[2]):,} of {int(short[1]):,} values "
                "written)")
    return text or type(exc).__name__


def failure_reason(exc: BaseException) -> str:
    """One line saying why a fit (or its scoring) failed, for a log or a table: the
    exception's message on one line (its type if it has none)."""
    if isinstance(exc, MemoryError):
        return "out of memory" + (f" ({exc})" if str(exc) else "")
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def unreadable_array_file(exc: BaseException, path: str | Path) -> str:
    """Why numpy could not read the ``.npy`` or ``.npz`` file ``path``, in words about the
    file, for an error line.

    numpy takes any file that is neither a zip archive nor a ``.npy`` array for a pickle and
    refuses it with advice to load it unsafely: such a file (junk, a text, a pickle) is said
    to be no readable ``.npz`` (or ``.npy``) file, and the advice is not passed on.

    Parameters
    ----------
    exc
        What ``np.load`` (or reading the array) raised.
    path
        The file; its suffix says which of the two formats it was read as.

    Returns
    -------
    str
        ``"not a readable .npz file (...)"``, or ``"cannot be read (...)"`` with the reason.
    """
    text = " ".join((getattr(exc, "strerror", None) or str(exc) or type(exc).__name__).split())
    kind = ".npy" if str(path).lower().endswith(".npy") else ".npz"
    if "pickled" in text:
        return (f"not a readable {kind} file (" + ("not a zip archive of arrays" if kind == ".npz"
                                                    else "no .npy header") + ")")
    if "Object arrays cannot be loaded" in text:
        return "cannot be read (it holds Python objects, which are never loaded)"
    return f"cannot be read ({text})"
