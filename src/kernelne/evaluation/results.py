"""Tidy evaluation results: one row per (method, dataset, task, setting, metric).

``setting`` is the training ratio for node classification (e.g. ``"0.1"``) and the edge
operator for link prediction (e.g. ``"weighted_l2"``). ``mean`` and ``std`` summarise ``n``
scores (repeats); ``std`` is the population standard deviation (0 when ``n`` is 1).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from kernelne.errors import InputError
from kernelne.outputs import atomic_path


@dataclass(frozen=True)
class ResultRow:
    """One score: a (method, dataset, task, setting, metric) and its mean over ``n`` repeats.

    Parameters
    ----------
    method : str
        The embedding method's name.
    dataset : str
        The dataset's name.
    task : str
        ``"node_classification"`` or ``"link_prediction"``.
    setting : str
        The training ratio (e.g. ``"0.1"``) or the edge operator (e.g. ``"weighted_l2"``).
    metric : str
        E.g. ``"micro_f1"``, ``"macro_f1"``, ``"roc_auc"``, ``"average_precision"``.
    mean : float
        The mean score over the repeats.
    std : float
        The population standard deviation of the scores (0 when ``n`` is 1).
    n : int
        Number of scores (repeats).
    """

    method: str
    dataset: str
    task: str
    setting: str
    metric: str
    mean: float
    std: float
    n: int


COLUMNS = [f.name for f in fields(ResultRow)]


class ResultTable:
    """A list of :class:`ResultRow`, printable as text and writable as CSV or JSON.

    Tables add up (``table_a + table_b``), iterate over their rows and have a length.

    Parameters
    ----------
    rows : list of ResultRow, optional
        The rows; default none.

    Attributes
    ----------
    rows : list of ResultRow
        The rows.
    skipped : sequence
        Ids of labelled nodes left out because the embedding lacks them (``missing="skip"``).
    per_split : dict
        ``(setting, metric)`` to the score of each repeat, where the protocol keeps them.
    """

    def __init__(self, rows: list[ResultRow] | None = None):
        self.rows = list(rows or [])
        # ids of labelled nodes left out because the embedding lacks them (missing="skip")
        self.skipped: Sequence = ()
        # (setting, metric) -> the score of each repeat, where the protocol keeps them
        self.per_split: dict[tuple[str, str], list[float]] = {}

    def __iter__(self):
        """The rows, in order."""
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __add__(self, other: ResultTable) -> ResultTable:
        return ResultTable(self.rows + other.rows)

    def value(self, metric: str, setting: str | None = None) -> float:
        """The mean of the one row with this metric (and setting).

        Parameters
        ----------
        metric : str
            The metric, e.g. ``"micro_f1"``.
        setting : str, optional
            The setting, e.g. ``"0.5"``; None matches any.

        Returns
        -------
        float
            That row's mean.

        Raises
        ------
        KeyError
            If not exactly one row matches.
        """
        hits = [r for r in self.rows if r.metric == metric and setting in (None, r.setting)]
        if len(hits) != 1:
            raise KeyError(f"{len(hits)} rows for metric={metric!r}, setting={setting!r}")
        return hits[0].mean

    def records(self) -> list[dict]:
        """The rows as dicts (the CSV and JSON records)."""
        return [asdict(r) for r in self.rows]

    def to_text(self) -> str:
        """An aligned plain-text table, scores with 4 decimals."""
        cells = [COLUMNS] + [
            [r.method, r.dataset, r.task, r.setting, r.metric, f"{r.mean:.4f}", f"{r.std:.4f}",
             str(r.n)]
            for r in self.rows
        ]
        widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
        numeric = {"mean", "std", "n"}
        lines = []
        for row in cells:
            parts = [
                c.rjust(w) if name in numeric else c.ljust(w)
                for c, w, name in zip(row, widths, COLUMNS, strict=True)
            ]
            lines.append("  ".join(parts).rstrip())
        return "\n".join(lines)

    def write(self, path: str | Path) -> None:
        """Write as CSV (``.csv``) or JSON (``.json``), atomically.

        Parameters
        ----------
        path : str or Path
            The results file; its suffix names the format.

        Raises
        ------
        InputError
            Another suffix, or a folder that does not exist.
        """
        suffix = check_results_path(path)
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
            if suffix == ".json":
                json.dump(self.records(), fh, indent=1)
                fh.write("\n")
            else:
                writer = csv.DictWriter(fh, fieldnames=COLUMNS)
                writer.writeheader()
                writer.writerows(self.records())


def check_results_path(path: str | Path) -> str:
    """The format (``.csv`` or ``.json``) of a results file that can be written; else InputError."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".json"):
        raise InputError("results file must end in .csv or .json", path)
    if not path.parent.is_dir():
        raise InputError("cannot write: its folder does not exist", path)
    return suffix
