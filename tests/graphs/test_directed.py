"""Directed graphs: sinks (in-edges, no out-edges) are not isolated nodes, and what their rows
become."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from cli_runs import FAST
from cli_runs import run_cli as _run

from kernelne.graphs.graph import from_scipy


def test_directed_sinks_are_not_called_isolated(tmp_path, capsys):
    path = tmp_path / "d.txt"
    path.write_text("0 1\n1 2\n2 0\n0 3\n1 3\n2 4\n4 0\n")
    code, err = _run(["embed", path, "-o", tmp_path / "e.txt", "--directed", *FAST], capsys)
    assert code == 0 and "isolated" not in err
    assert "kernelne: note: 1 nodes with in-edges but no out-edges: walks stop there" in err


def test_what_happens_to_sink_and_isolated_rows():
    from kernelne.engine.rows import uniform_rows
    from kernelne.engine.sampling import seed_to_uint64
    from kernelne.model.kernelne import KernelNE

    M = np.zeros((6, 6))
    for u, v in [(0, 1), (1, 2), (2, 0), (0, 3), (1, 3), (2, 4), (4, 0)]:
        M[u, v] = 1
    g = from_scipy(sp.csr_matrix(M), directed=True)
    assert g.sink_nodes().tolist() == [3] and g.isolated_nodes().tolist() == [5]
    m = KernelNE(dim=8, walks_per_node=20, workers=1, random_state=1, verbose=False,
                 robust=False, normalize="none").fit(g)  # the rows as trained
    init = uniform_rows(np.random.default_rng(int(seed_to_uint64(1))), 6, 8, 0.5 / 8)
    assert not np.array_equal(m.embedding_[3], init[3])  # the sink's row is trained
    assert np.array_equal(m.embedding_[5], init[5])  # the isolated node's stays
    assert m.isolated_nodes_.tolist() == [5]
