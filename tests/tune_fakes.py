"""What the tune tests share: a stand-in estimator's settings and the labelled karate files.

The stand-ins replace KernelNE (``tune.make_estimator``) so that a search runs in
milliseconds; each test module's subclass decides which settings embed the groups well.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import networkx as nx

KARATE = Path(__file__).resolve().parents[1] / "examples" / "karate.edgelist"
FULL = 80  # KernelNE's default walks per node: the finalists' count


class FakeEstimator:
    """KernelNE's searched settings at their defaults, overridden by ``params``; a subclass
    gives ``fit``."""

    def __init__(self, **params):
        self.params = {"kernel": "gauss", "sigma": 2 ** 0.5, "alpha": 1.0, "negatives": 5,
                       "beta_update": "projected", "walks_per_node": FULL, "dim": 8,
                       "loss": "squared", "window": 10, "window_shrink": False,
                       "subsample": 0.0, "random_state": None, **params}

    def get_params(self):
        return dict(self.params)


def write_karate(folder: Path) -> tuple[Path, Path]:
    """``(edge list, labels of the two clubs)`` of the karate club, written in ``folder``."""
    edges = folder / "karate.edgelist"
    shutil.copy(KARATE, edges)
    labels = folder / "karate.labels"
    clubs = nx.get_node_attributes(nx.karate_club_graph(), "club")
    labels.write_text("".join(f"{n} {c.replace(' ', '_')}\n" for n, c in clubs.items()))
    return edges, labels
