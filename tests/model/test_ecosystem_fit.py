"""``KernelNE.fit`` on graphs held by pandas, igraph and PyG-style objects: the same rows, bit
for bit, as on the equivalent edge list under a seed and one worker."""

from __future__ import annotations

from pathlib import Path

import igraph as ig
import numpy as np
import pandas as pd
import pytest

from kernelne import KernelNE
from kernelne.graphs.graph import load_graph

KARATE = Path(__file__).parents[2] / "examples" / "karate.edgelist"


class EdgeIndexArray:
    """A PyG ``Data`` look-alike whose ``edge_index`` is a numpy array."""

    def __init__(self, edge_index: np.ndarray) -> None:
        self.edge_index = edge_index


class Tensor:
    """A tensor-like with ``.numpy()`` (as torch's, on the CPU) and no ``__array__``."""

    def __init__(self, values: np.ndarray) -> None:
        self._values = values

    def numpy(self) -> np.ndarray:
        return self._values


class EdgeIndexTensor:
    def __init__(self, edge_index: np.ndarray, num_nodes: int) -> None:
        self.edge_index = Tensor(edge_index)
        self.num_nodes = num_nodes


@pytest.fixture(scope="module")
def reference():
    model = KernelNE(workers=1, random_state=0).fit(str(KARATE))
    return model.embedding_.copy(), model.nodes_.tolist()


def _inputs():
    g = load_graph(KARATE)
    e = g.edges()
    pyg = np.concatenate([e, e[:, ::-1]]).T.copy()  # both directions, as PyG stores it
    return {
        "dataframe": pd.DataFrame({"source": e[:, 0], "target": e[:, 1]}),
        "igraph": ig.Graph(n=g.n_nodes, edges=e.tolist()),
        "edge_index_numpy": EdgeIndexArray(pyg),
        "edge_index_tensor": EdgeIndexTensor(pyg, g.n_nodes),
    }


@pytest.mark.parametrize("kind", ["dataframe", "igraph", "edge_index_numpy",
                                  "edge_index_tensor"])
def test_fit_gives_the_edge_lists_rows(kind, reference):
    rows, nodes = reference
    model = KernelNE(workers=1, random_state=0).fit(_inputs()[kind])
    assert model.nodes_.tolist() == nodes
    assert model.n_features_in_ == len(nodes)
    np.testing.assert_array_equal(model.embedding_, rows)


def test_another_seed_gives_other_rows_from_a_reversed_table(reference):
    """The equality above is not vacuous: the rows depend on the seed; the edges' order and
    direction in the table do not change the node ids."""
    rows, nodes = reference
    e = load_graph(KARATE).edges()
    df = pd.DataFrame({"source": e[::-1, 1], "target": e[::-1, 0]})
    model = KernelNE(workers=1, random_state=1).fit(df)
    assert model.nodes_.tolist() == nodes
    assert not np.array_equal(model.embedding_, rows)
