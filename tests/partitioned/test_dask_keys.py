"""A partitioned fit's Dask tasks (audit 5, C9/C11/C12): keys unique per fit and per step's
attempt, and futures released on every path, so that no step is handed another's results."""

from __future__ import annotations

import numpy as np
import pytest

import kernelne.partitioned.buckets as buckets
import kernelne.partitioned.kept_blocks as kept_blocks
from kernelne import Graph, KernelNE
from kernelne.graphs.generators import planted_partition_sbm

distributed = pytest.importorskip("distributed")


def sbm_graph(n, m, seed) -> Graph:
    edges, _ = planted_partition_sbm(n, m, 3, 0.2, seed=seed)
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=n)


def model(**kw) -> KernelNE:
    settings = dict(random_state=0, workers=1, walks_per_node=2, dim=8, partitions=2, rounds=2,
                    verbose=False, partition_dir=None)
    settings.update(kw)
    return KernelNE(**settings)


@pytest.fixture
def client():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def test_c12_two_fits_on_one_client_each_get_their_own_results(client, monkeypatch):
    monkeypatch.setattr(buckets, "WORKER_WATCH_SECONDS", 0.001)  # every wait times out
    big, small = sbm_graph(400, 2400, 1), sbm_graph(150, 600, 0)
    clean = model().fit(small)
    model().fit(big, client=client)
    second = model().fit(small, client=client)
    assert second.n_pairs_ == clean.n_pairs_
    np.testing.assert_array_equal(second.embedding_, clean.embedding_)
    assert not client.futures  # nothing held once the fit returns


def restart_once_at(monkeypatch, step: int) -> None:
    """The robust check finds the shell forming once, after step ``step``: the fit restarts
    from version 0 of the blocks, narrowed, and trains its steps again."""
    import kernelne.partitioned.driver as driver

    seen = []

    def look_due(t, *args):
        seen.append(t)
        return t == step and seen.count(step) == 1

    def shell(folder, graph, counts, parts, d, t, beta, state, previous):
        return {"kernel_scale": float(state["scale"]), "at_pairs": int(state["pairs"]),
                "neighbour_auc": 0.5, "offset_ratio": 1.0, "weights_collapsed": False,
                "doubtful": False, "collapsing": True}

    monkeypatch.setattr(driver, "look_due", look_due)
    monkeypatch.setattr(driver, "_shell", shell)


def test_c11_steps_trained_again_after_a_restart_get_fresh_results(client, monkeypatch):
    """After a restart the steps are run again from new blocks: the results of the first
    attempt (whose waits timed out, as any step longer than the watch interval) are not
    handed back, and the fit equals the same fit in this process."""
    g = sbm_graph(150, 600, 0)
    restart_once_at(monkeypatch, 3)
    clean = model(walks_per_node=4).fit(g)
    assert len(clean.narrowed_) == 1
    monkeypatch.setattr(buckets, "WORKER_WATCH_SECONDS", 0.001)
    restart_once_at(monkeypatch, 3)
    on_dask = model(walks_per_node=4).fit(g, client=client)
    assert len(on_dask.narrowed_) == 1
    assert on_dask.n_pairs_ == clean.n_pairs_
    np.testing.assert_array_equal(on_dask.embedding_, clean.embedding_)
    assert not client.futures


def test_a_step_that_fails_leaves_no_future_held(client, monkeypatch):
    def fails(*args):
        raise RuntimeError("bucket failed")

    monkeypatch.setattr(buckets, "bucket_task", fails)
    monkeypatch.setattr(kept_blocks, "kept_bucket_task", fails)
    with pytest.raises(RuntimeError, match="bucket failed"):
        model().fit(sbm_graph(150, 600, 0), client=client)
    assert not client.futures


_LOSE = {"cluster": None, "calls": 0}
_REAL_TASK = buckets.bucket_task


def scheduler_dies_at_the_third_bucket(*args):
    """A bucket task under which, at step 1, the scheduler of ``_LOSE["cluster"]`` goes away."""
    import threading
    import time

    _LOSE["calls"] += 1
    if _LOSE["calls"] == 3:
        cluster = _LOSE["cluster"]
        threading.Timer(0.2, lambda: cluster.sync(cluster.scheduler.close)).start()
        time.sleep(3)
    return _REAL_TASK(*args)


@pytest.mark.long  # the client waits out its reconnection: tens of seconds
def test_c13_a_scheduler_lost_mid_step_is_one_error_and_the_folder_resumes(monkeypatch,
                                                                          tmp_path):
    import json

    from kernelne.errors import TrainingError

    g = sbm_graph(150, 600, 0)
    folder = tmp_path / "run"
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    _LOSE.update(cluster=cluster, calls=0)
    monkeypatch.setattr(buckets, "bucket_task", scheduler_dies_at_the_third_bucket)
    try:
        with distributed.Client(cluster) as c, \
                pytest.raises(TrainingError, match="the Dask scheduler .* was lost during step "
                              "1 .*resumes from the last recorded step"):
            model(partition_dir=str(folder)).fit(g, client=c)
    finally:
        _LOSE["cluster"] = None
        cluster.close()
    assert json.loads((folder / "progress.json").read_text())["step"] == 1
    assert not (folder / "kernelne.lock").exists()
    monkeypatch.undo()
    resumed = model(partition_dir=str(folder)).fit(g)
    assert resumed.partition_run_.resumed_at_step == 1
    np.testing.assert_array_equal(resumed.embedding_, model().fit(g).embedding_)


@pytest.mark.long  # the client waits out its reconnection: tens of seconds
def test_c13_the_cli_shows_one_line_not_distributed_s_logged_tracebacks(monkeypatch, tmp_path,
                                                                        capsys):
    """The scheduler lost mid-fit: ``distributed.client`` logs no ERROR (its reconnection's
    two chained tracebacks) while the command line drives the client, only kernelne's line;
    the logger is left as it was after the run."""
    from cli_runs import client_errors_seen, only_error_line, run_cli

    g = sbm_graph(150, 600, 0)
    edges = tmp_path / "g.txt"
    src = np.repeat(np.arange(g.n_nodes), np.diff(g.indptr))
    edges.write_text("".join(f"{u} {v}\n" for u, v in zip(src, g.indices, strict=True)
                             if u < v))
    with client_errors_seen() as client_log:
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                           dashboard_address=None)
        _LOSE.update(cluster=cluster, calls=0)
        monkeypatch.setattr(buckets, "bucket_task", scheduler_dies_at_the_third_bucket)
        try:
            code, err = run_cli(["embed", edges, "-o", tmp_path / "e.npy", "--dim", "8",
                                 "--walks-per-node", "2", "--workers", "1", "--quiet",
                                 "--seed", "0", "--partitions", "2", "--rounds", "2",
                                 "--partition-dir", tmp_path / "run", "--scheduler",
                                 cluster.scheduler_address], capsys)
        finally:
            _LOSE["cluster"] = None
            cluster.close()
    assert code == 1
    assert "was lost during step 1" in only_error_line(err)
    assert client_log.errors == []
    assert client_log.logger.filters == client_log.filters_before
