"""Edge weights float32 cannot hold (inf, 0, subnormal) are refused with the file and line, from
every reader, never changed silently."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from cli_runs import FAST
from cli_runs import run_cli as _run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelne.errors import InputError
from kernelne.graphs.graph import from_networkx, from_scipy, load_graph


@pytest.mark.parametrize("weight", ["1e308", "1e-50", "4e38", "1e-40"])
@pytest.mark.parametrize("sep", [" ", "\t", " ,"])  # " ,": the line-by-line reader
def test_weights_float32_cannot_hold_are_refused_with_the_line(tmp_path, capsys, weight, sep):
    path = tmp_path / "w.txt"
    path.write_text(f"0{sep}1{sep}2\n1{sep}2{sep}{weight}\n2{sep}0{sep}1\n")
    out = tmp_path / "emb.txt"
    code, err = _run(["embed", path, "-o", out, *FAST], capsys)
    assert code == 2 and f"{path}:2: weight {weight} is outside the float32 range" in err
    assert "Traceback" not in err and not out.exists() and not list(tmp_path.glob(".*tmp"))


@pytest.mark.parametrize("weight", [1e308, 1e-50])
def test_weights_float32_cannot_hold_are_refused_from_python(weight):
    matrix = sp.coo_matrix(([2.0, weight], ([0, 1], [1, 2])), shape=(3, 3))
    with pytest.raises(InputError, match="outside the float32 range"):
        from_scipy(matrix, directed=True)
    import networkx as nx

    g = nx.Graph()
    g.add_edge(0, 1, weight=1.0)
    g.add_edge(1, 2, weight=weight)
    with pytest.raises(InputError, match="outside the float32 range"):
        from_networkx(g)


def test_mat_weights_float32_cannot_hold_name_the_file(tmp_path):
    from scipy.io import savemat

    path = tmp_path / "g.mat"
    savemat(path, {"network": sp.csc_matrix(np.array([[0, 1e-50], [1e-50, 0]]))})
    with pytest.raises(InputError, match=f"{path}: edge weight 1e-50 is outside"):
        load_graph(path)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.floats(min_value=0, exclude_min=True, allow_infinity=False))
def test_a_weight_is_kept_or_refused_never_changed_silently(tmp_path, weight):
    path = tmp_path / "w.txt"
    path.write_text(f"0 1 2\n1 2 {weight!r}\n")
    try:
        g = load_graph(path, directed=True)
    except InputError as exc:
        assert ":2: weight" in str(exc)
        return
    w = g.weights[g.indptr[1]] if g.weights is not None else np.float32(1)
    assert np.isfinite(w) and w >= np.finfo(np.float32).tiny
    assert w == np.float32(weight)


@pytest.mark.parametrize("bad", [np.inf, 0.0, 1e-40])
def test_npz_graph_weights_float32_cannot_use_are_refused(tmp_path, bad):
    from kernelne.graphs.npz import save_graph

    path = tmp_path / "g.npz"
    save_graph(load_graph(from_scipy(sp.csr_matrix(np.array([[0, 2.0], [2.0, 0]])))), path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["weights"] = np.array([bad, bad], dtype=np.float32)
    np.savez(path, **arrays)
    with pytest.raises(InputError, match="edge weights must be positive normal float32"):
        load_graph(path)
