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


def test_a_fit_on_ids_one_and_text_one_is_refused_so_no_file_it_writes_fails_to_load(tmp_path):
    from kernelne.errors import InputError

    frame = pd.DataFrame({"source": [1, "1", 2, 3], "target": [2, 3, 3, 1]})
    model = KernelNE(dim=4, walks_per_node=2, random_state=0, workers=1)
    with pytest.raises(InputError, match=r"node ids 1 \(int\) and '1' \(str\)"):
        model.fit(frame)
    mixed = model.fit(pd.DataFrame({"source": [1, "a", 2], "target": ["b", 2, 3]}))
    mixed.save_model(tmp_path / "m.npz")
    assert [str(x) for x in KernelNE.load_model(tmp_path / "m.npz").nodes_] == \
        [str(x) for x in mixed.nodes_]
    for name in ("e.npy", "e.txt", "e.npz"):
        mixed.save(tmp_path / name)
        assert [str(x) for x in KernelNE.load(tmp_path / name)[1]] == \
            [str(x) for x in mixed.nodes_]
