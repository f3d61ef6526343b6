"""``--header`` and header lines: refused where there is none, skipped where there is one, pointed
out above string ids."""

from __future__ import annotations

import pytest
from cli_runs import EDGES, FAST
from cli_runs import run_cli as _run

from kernelne.graphs.graph import load_graph


@pytest.mark.parametrize("sep", [" ", ",", " ,"])
def test_header_on_a_file_without_one_is_refused(tmp_path, capsys, sep):
    path = tmp_path / "g.txt"
    path.write_text(EDGES.replace(" ", sep))
    out = tmp_path / "e.txt"
    code, err = _run(["embed", path, "-o", out, "--header", *FAST], capsys)
    assert code == 2 and f"{path}:1: --header (header=True): the first line '0 1' is an edge" in err
    assert not out.exists()


def test_header_still_skips_column_names(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("a b\n" + EDGES)
    assert load_graph(path, header=True).n_edges == 32


@pytest.mark.parametrize("first", ["source,target", "Source Target Weight", "from\tto"])
def test_known_column_names_above_string_ids_are_skipped_with_a_warning(tmp_path, first):
    sep = "," if "," in first else ("\t" if "\t" in first else " ")
    weight = f"{sep}1.5" if "Weight" in first else ""
    body = "".join(f"{u}{sep}{v}{weight}\n" for u, v in [("a", "b"), ("b", "c"), ("c", "a")])
    path = tmp_path / "g.txt"
    path.write_text(first + "\n" + body)
    with pytest.warns(UserWarning, match=r"g.txt:1: .* taken for column names and skipped"):
        g = load_graph(path)
    assert sorted(g.nodes) == ["a", "b", "c"] and g.n_edges == 3


def test_an_unknown_header_above_string_ids_is_pointed_out(tmp_path, capsys):
    path = tmp_path / "g.txt"
    path.write_text("person friend\nann bob\nbob cy\ncy ann\n")
    out = tmp_path / "e.txt"
    code, err = _run(["embed", path, "-o", out, *FAST], capsys)
    assert code == 0 and (f"kernelne: warning: {path}:1: the first line 'person friend' names "
                          "two nodes that appear nowhere else") in err
    with pytest.warns(UserWarning, match="--header"):
        load_graph(path)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_graph(path, header=True).n_nodes == 3
