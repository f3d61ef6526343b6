"""The fit summary: compiling announced once and timed apart from the speed; health not claimed
when not measured."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kernelne.cli.app import main

KARATE = Path(__file__).parents[2] / "examples" / "karate.edgelist"


FAST = ["--dim", "4", "--walks-per-node", "2", "--workers", "1", "--quiet"]


def test_compiling_is_announced_once_and_timed(capsys):
    from numba import njit

    from kernelne.engine.compiling import MESSAGE, watch_compiling

    @njit
    def fresh(x):  # never compiled before: a real compilation
        return x * 2 + 1

    with watch_compiling() as watch:
        assert fresh(3) == 7 and fresh(4) == 9
    assert capsys.readouterr().err.splitlines() == [MESSAGE]
    assert watch.seconds["fresh"] > 0 and watch.total == watch.of("fresh")
    with watch_compiling() as again:
        fresh(5)
    assert capsys.readouterr().err == "" and again.total == 0.0


def test_a_warm_run_does_not_claim_to_compile_and_small_graphs_are_not_measured(tmp_path,
                                                                                capsys):
    from kernelne.engine.compiling import MESSAGE

    args = ["embed", str(KARATE), "-o", str(tmp_path / "e.txt"), *FAST[:-1]]
    assert main(args) == 0  # compiles if this process has not yet
    capsys.readouterr()
    assert main(args) == 0
    captured = capsys.readouterr()
    assert MESSAGE not in captured.err and "compiling" not in captured.out
    assert ("health     not measured (fewer than 50 nodes in the walks: too few for the "
            "statistics)") in captured.out
    assert "neighbour AUC" not in captured.out


def test_describe_fit_takes_compiling_out_of_the_speed():
    from types import SimpleNamespace

    from kernelne.cli.options import describe_fit
    from kernelne.engine.diagnostics import EmbeddingHealth

    model = SimpleNamespace(
        n_walks_=10, walk_length=10, n_pairs_=1000, fit_seconds_=21.0, kernels_=["gauss:1"],
        shared_negatives=False, loss="squared", window_shrink=False, subsample=0.0,
        narrowed_=[], kernel_scale_=1.0, loss_history_=np.empty((0, 3)),
        health_=EmbeddingHealth(0.9, 0.5, 0.1),
        stage_seconds_={"walks": 0.5, "training": 0.5}, compile_seconds_=20.0)
    graph = SimpleNamespace(summary=lambda: "g")
    text = describe_fit(model, graph, 22.0)
    assert "1,000 at 1,000 pairs/s (compiling excluded)" in text
    assert "compiling 20.0 s (first run only), walks 0.5 s, training 0.5 s" in text
    assert "neighbour AUC 0.900" in text
