"""A partition folder is bound to its graph (audit 5, A43-A45): a resume or a reuse with
another graph, even one of the same size and degrees, is refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_runs import one_error_line, run_cli

import kernelne.partitioned.buckets as buckets
from kernelne import Graph
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.partitioned.plan import graph_digest

FAST = ["--dim", "8", "--walks-per-node", "4", "--workers", "1", "--quiet", "--seed", "0",
        "--partitions", "2", "--rounds", "2"]


def sbm_edges(n=150, m=600, seed=0) -> np.ndarray:
    edges, _ = planted_partition_sbm(n, m, 3, 0.2, seed=seed)
    return np.unique(np.sort(edges[edges[:, 0] != edges[:, 1]], axis=1), axis=0)


def rewired(edges: np.ndarray, swaps: int, seed: int = 0) -> np.ndarray:
    """``edges`` with ``swaps`` pairs a-b, c-d made a-d, c-b: every degree kept."""
    rng = np.random.default_rng(seed)
    out = [tuple(e) for e in edges]
    have = set(out)
    done = 0
    while done < swaps:
        x, y = rng.choice(len(out), 2, replace=False)
        (a, b), (c, d) = out[x], out[y]
        new1, new2 = tuple(sorted((a, d))), tuple(sorted((c, b)))
        if a == d or c == b or new1 in have or new2 in have or new1 == new2:
            continue
        have -= {out[x], out[y]}
        have |= {new1, new2}
        out[x], out[y] = new1, new2
        done += 1
    return np.array(out)


def write_edges(path, edges, weights=None) -> None:
    lines = [f"{u} {v}" + ("" if weights is None else f" {w}")
             for (u, v), w in zip(edges, weights if weights is not None else [None] * len(edges),
                                  strict=True)]
    path.write_text("\n".join(lines) + "\n")


def crash_after(monkeypatch, done: int) -> None:
    """The fit stops (like a killed driver) when it starts bucket number ``done + 1``."""
    real, calls = buckets.bucket_task, []

    class Crash(Exception):
        pass

    def dies(*args):
        calls.append(args)
        if len(calls) > done:
            raise Crash
        return real(*args)

    monkeypatch.setattr(buckets, "bucket_task", dies)
    return Crash


def killed_fit(tmp_path, monkeypatch, capsys, graph_file, folder, *extra) -> None:
    with monkeypatch.context() as m:
        crash = crash_after(m, 3)  # step 0 done, step 1 cut
        with pytest.raises(crash):
            run_cli(["embed", graph_file, "-o", tmp_path / "x.npy", *FAST, *extra,
                     "--partition-dir", folder], capsys)
    assert json.loads((folder / "progress.json").read_text())["step"] == 1


def test_the_digest_sees_weights_edges_and_ids_but_not_their_dtypes():
    edges = sbm_edges()
    g = Graph.from_edges(edges[:, 0], edges[:, 1])
    same = Graph(g.indptr.astype(np.int32), g.indices.astype(np.int64), None, g.nodes)
    assert graph_digest(same) == graph_digest(g)
    weights = np.arange(1, len(edges) + 1) % 7 + 1.0
    assert graph_digest(Graph.from_edges(edges[:, 0], edges[:, 1], weights=weights)) != \
        graph_digest(g)
    r = rewired(edges, 40)
    other = Graph.from_edges(r[:, 0], r[:, 1])
    np.testing.assert_array_equal(other.degrees, g.degrees)
    assert graph_digest(other) != graph_digest(g)
    named = Graph(g.indptr, g.indices, None, np.array([f"n{v}" for v in g.nodes], dtype=object))
    assert graph_digest(named) != graph_digest(g)


def test_a43_a_weighted_fit_resumed_unweighted_is_refused(tmp_path, monkeypatch, capsys):
    edges = sbm_edges()
    graph_file = tmp_path / "w.txt"
    write_edges(graph_file, edges, np.random.default_rng(0).integers(1, 50, len(edges)))
    folder = tmp_path / "run"
    killed_fit(tmp_path, monkeypatch, capsys, graph_file, folder)
    out = tmp_path / "a.npy"
    code, err = run_cli(["embed", graph_file, "-o", out, *FAST, "--unweighted",
                         "--partition-dir", folder], capsys)
    assert code == 2 and not out.exists()
    one_error_line(err, str(folder), "holds a fit of another graph",
                   "a weighted graph, and this one is unweighted")
    code, err = run_cli(["embed", graph_file, "-o", out, *FAST, "--partition-dir", folder],
                        capsys)
    assert code == 0 and out.exists()  # the same graph still resumes


def test_a44_a_rewired_graph_of_the_same_degrees_cannot_resume(tmp_path, monkeypatch, capsys):
    edges = sbm_edges()
    first, second = tmp_path / "g.txt", tmp_path / "g_rewired.txt"
    write_edges(first, edges)
    write_edges(second, rewired(edges, 100))
    folder = tmp_path / "run"
    killed_fit(tmp_path, monkeypatch, capsys, first, folder)
    out = tmp_path / "b.npy"
    code, err = run_cli(["embed", second, "-o", out, *FAST, "--partition-dir", folder], capsys)
    assert code == 2 and not out.exists()
    one_error_line(err, str(folder), "holds a fit of another graph",
                   "edges, weights or node ids differ")


def test_a44_a_rewired_graph_cannot_reuse_the_walks_of_a_fit_killed_while_walking(tmp_path):
    from kernelne.engine.walks import WalkCorpus
    from kernelne.partitioned.rounds import walk_plan

    edges = sbm_edges()
    r = rewired(edges, 100)
    g, h = (Graph.from_edges(e[:, 0], e[:, 1]) for e in (edges, r))
    plans = [walk_plan(WalkCorpus(x, 4, 20, 1.0, 1.0, 0, 64), 2, 2) for x in (g, h)]
    assert plans[0] != plans[1]


def test_a45_a_finished_folder_reused_for_another_graph_is_refused(tmp_path, capsys):
    edges = sbm_edges()
    first, second = tmp_path / "g.txt", tmp_path / "g_rewired.txt"
    write_edges(first, edges)
    write_edges(second, rewired(edges, 100))
    folder = tmp_path / "run"
    assert run_cli(["embed", first, "-o", tmp_path / "a.npy", *FAST, "--partition-dir",
                    folder], capsys)[0] == 0
    out = tmp_path / "b.npy"
    code, err = run_cli(["embed", second, "-o", out, *FAST, "--partition-dir", folder], capsys)
    assert code == 2 and not out.exists()
    one_error_line(err, str(folder), "holds a fit of another graph")
    assert "finished fit" not in err
