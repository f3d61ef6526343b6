"""Partitioned training's folder and Dask scheduler: absolute folders the workers must see,
a scheduler that is not one, resuming without the seed, folders of other files, two runs on
one folder, folders that cannot be written, damaged folders and impossible settings."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time

import numpy as np
import pytest
from cli_runs import one_error_line

import kernelne.partitioned.blocks as blocks
import kernelne.partitioned.buckets as buckets
import kernelne.partitioned.driver as partitioned
import kernelne.partitioned.locks as locks
from kernelne import Graph, KernelNE
from kernelne.cli.app import main
from kernelne.errors import InputError
from kernelne.graphs.generators import planted_partition_sbm


def small_graph(n=150, m=600, seed=0) -> Graph:
    edges, _ = planted_partition_sbm(n, m, 3, 0.2, seed=seed)
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=n)


def small_model(folder, **kw) -> KernelNE:
    settings = dict(random_state=0, workers=1, walks_per_node=4, dim=8, partitions=2, rounds=2,
                    verbose=False, partition_dir=None if folder is None else str(folder))
    settings.update(kw)
    return KernelNE(**settings)


@pytest.fixture
def edge_file(tmp_path):
    g = small_graph()
    path = tmp_path / "g.txt"
    src = np.repeat(np.arange(g.n_nodes), np.diff(g.indptr))
    path.write_text("".join(f"{u} {v}\n" for u, v in zip(src, g.indices, strict=True) if u < v))
    return path


FAST = ["--dim", "8", "--walks-per-node", "4", "--workers", "1", "--quiet", "--seed", "0",
        "--partitions", "2", "--rounds", "2"]


def run_cli(argv, capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


# --- DK01: the folder sent to the workers ----------------------------------------------------


def test_a_relative_partition_dir_works_on_workers_started_in_another_folder(tmp_path,
                                                                            monkeypatch):
    distributed = pytest.importorskip("distributed")
    g = small_graph()
    clean = small_model(tmp_path / "clean").fit(g)
    elsewhere = tmp_path / "workers-start-here"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        driver = tmp_path / "driver"
        driver.mkdir()
        monkeypatch.chdir(driver)  # the worker's folder stays the one it started in
        model = small_model("parts").fit(g, client=client)
    assert (driver / "parts" / "plan.json").exists()
    assert not (elsewhere / "parts").exists()
    np.testing.assert_array_equal(model.embedding_, clean.embedding_)


def test_a_folder_the_workers_cannot_see_is_refused_before_any_work(tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    g = small_graph()
    real = locks.worker_sees

    def sees_nothing(lock_path, token):  # a worker on another machine: no such file there
        return real(lock_path + ".elsewhere", token)

    monkeypatch.setattr(locks, "worker_sees", sees_nothing)
    monkeypatch.chdir(tmp_path)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with pytest.raises(InputError) as err:
            small_model("parts").fit(g, client=client)
    message = str(err.value)
    assert f"the Dask workers cannot see --partition-dir {tmp_path / 'parts'}" in message
    assert "shared file system" in message
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == [locks.MARKER]


# --- R16: a folder of the user's own files ---------------------------------------------------


def test_a_folder_of_other_files_is_refused_and_left_as_it_was(tmp_path, edge_file, capsys):
    mine = tmp_path / "mydata"
    mine.mkdir()
    (mine / "A.npy").write_bytes(b"the user's own array")
    code, err = run_cli(["embed", edge_file, "-o", tmp_path / "e.npy", *FAST,
                         "--partition-dir", mine], capsys)
    assert code == 2
    one_error_line(err, str(mine), "A.npy", "new or empty folder")
    assert sorted(p.name for p in mine.iterdir()) == ["A.npy"]
    assert (mine / "A.npy").read_bytes() == b"the user's own array"
    assert not (tmp_path / "e.npy").exists()


def test_a_folder_a_fit_made_is_used_again_and_an_empty_one_too(tmp_path):
    g = small_graph()
    empty = tmp_path / "empty"
    empty.mkdir()
    first = small_model(empty).fit(g)
    assert (empty / locks.MARKER).exists() and not (empty / locks.LOCK).exists()
    again = small_model(empty).fit(g)  # a finished fit: resumed at its end
    np.testing.assert_array_equal(first.embedding_, again.embedding_)


# --- CC01: two runs on one folder ------------------------------------------------------------


def test_a_second_run_on_a_locked_folder_is_refused(tmp_path):
    g = small_graph()
    folder = tmp_path / "parts"
    seen = {}
    real = partitioned._fit_in

    def second_run_meanwhile(*args, **kw):
        with pytest.raises(InputError) as err:
            small_model(folder).fit(g)
        seen["message"] = str(err.value)
        return real(*args, **kw)

    partitioned._fit_in = second_run_meanwhile
    try:
        model = small_model(folder).fit(g)
    finally:
        partitioned._fit_in = real
    lock = folder / locks.LOCK
    assert seen["message"] == (
        f"--partition-dir {folder} is in use by pid {os.getpid()} on host "
        f"{socket.gethostname()} (remove {lock} if that process is gone)")
    assert not lock.exists()  # released at the end
    np.testing.assert_array_equal(model.embedding_, small_model(tmp_path / "b").fit(g).embedding_)


def test_a_stale_lock_is_reported_not_taken(tmp_path, edge_file, capsys):
    import subprocess
    import sys

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = tmp_path / "parts"
    folder.mkdir()
    lock = folder / locks.LOCK
    lock.write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "token": "x"}))
    code, err = run_cli(["embed", edge_file, "-o", tmp_path / "e.npy", *FAST,
                         "--partition-dir", folder], capsys)
    assert code == 2
    one_error_line(err, f"pid {dead.pid}", "looks stale", f"remove {lock}")
    assert json.loads(lock.read_text())["pid"] == dead.pid  # not taken
    assert sorted(p.name for p in folder.iterdir()) == [locks.LOCK]


@pytest.mark.parametrize("pid", [10**23, -1])
def test_a_lock_with_an_impossible_pid_is_one_line(tmp_path, edge_file, capsys, pid):
    """Audit 5 H9: a pid no process can have (os.kill overflows or refuses it) is reported
    as the lock's holder in one line, not a traceback; the lock is not taken."""
    folder = tmp_path / "parts"
    folder.mkdir()
    lock = folder / locks.LOCK
    lock.write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "token": "x"}))
    code, err = run_cli(["embed", edge_file, "-o", tmp_path / "e.npy", *FAST,
                         "--partition-dir", folder], capsys)
    assert code == 2
    one_error_line(err, f"pid {pid}", str(lock))
    assert json.loads(lock.read_text())["pid"] == pid


def test_the_lock_is_released_when_the_fit_fails(tmp_path, monkeypatch):
    g = small_graph()

    def fails(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(buckets, "bucket_task", fails)
    with pytest.raises(KeyboardInterrupt):
        small_model(tmp_path / "parts").fit(g)
    assert not (tmp_path / "parts" / locks.LOCK).exists()


# --- E44d/D07: folders that cannot be used ---------------------------------------------------


@pytest.mark.parametrize("case", ["file", "under a file", "unwritable"])
def test_a_partition_dir_that_cannot_be_a_folder_is_one_line(tmp_path, edge_file, capsys,
                                                             case):
    a_file = tmp_path / "a-file"
    a_file.write_text("keep me")
    folder = {"file": a_file, "under a file": a_file / "parts",
              "unwritable": "/sys/kernelne-parts"}[case]
    code, err = run_cli(["embed", edge_file, "-o", tmp_path / "e.npy", *FAST,
                         "--partition-dir", folder], capsys)
    assert code == 2
    one_error_line(err, "--partition-dir", str(folder))
    assert a_file.read_text() == "keep me" and not (tmp_path / "e.npy").exists()


# --- D11/RP17: a --scheduler that is not a Dask scheduler ------------------------------------


@pytest.fixture
def web_server():
    """An HTTP server on a free localhost port (like a dashboard): it waits for a request."""
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             http.server.SimpleHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def greeter():
    """A service that speaks first with something that is not a Dask message (like SSH)."""
    import threading

    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn, contextlib.suppress(OSError):
                conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n" * 4)
                conn.recv(1024)

    threading.Thread(target=serve, daemon=True).start()
    yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


def test_embed_on_a_web_server_instead_of_a_scheduler_is_one_line_in_time(
        tmp_path, edge_file, capsys, web_server):
    pytest.importorskip("distributed")
    import time

    start = time.monotonic()
    code, err = run_cli(["embed", edge_file, "-o", tmp_path / "e.npy", *FAST,
                         "--scheduler", web_server], capsys)
    assert time.monotonic() - start < 30
    assert code == 2
    one_error_line(err, f"no Dask scheduler answered at {web_server} within 10 s",
                   "the scheduler's default is 8786")
    assert not (tmp_path / "e.npy").exists()


def test_reproduce_on_a_web_server_instead_of_a_scheduler_is_one_line(
        tmp_path, capsys, web_server, monkeypatch):
    pytest.importorskip("distributed")
    import kernelne.parallel

    monkeypatch.setattr(kernelne.parallel, "CONNECT_TIMEOUT", 2.0)
    code, err = run_cli(["reproduce", "--quick", "--no-progress", "--scheduler", web_server,
                         "--out", tmp_path / "out"], capsys)
    assert code == 2
    one_error_line(err, f"no Dask scheduler answered at {web_server} within 2 s")


def test_a_service_that_answers_garbage_is_not_read_as_a_scheduler(tmp_path, edge_file, capsys,
                                                                  greeter):
    pytest.importorskip("distributed")
    code, err = run_cli(["embed", edge_file, "-o", tmp_path / "e.npy", *FAST,
                         "--scheduler", greeter], capsys)
    assert code == 2
    one_error_line(err, f"no Dask scheduler at {greeter}: something else answered", "SSH-2.0")
    assert "out of memory" not in err


# --- R15: resuming a fit made without a seed -------------------------------------------------


class Crash(Exception):
    pass


def crash_after(monkeypatch, done: int) -> None:
    """Make the fit stop (like a killed driver) when it starts bucket number ``done + 1``."""
    real, calls = buckets.bucket_task, []

    def dies(*args):
        calls.append(args)
        if len(calls) > done:
            raise Crash
        return real(*args)

    monkeypatch.setattr(buckets, "bucket_task", dies)


@pytest.mark.parametrize("give_seed", [False, True])
def test_a_fit_without_a_seed_resumes_with_the_seed_of_its_plan(tmp_path, monkeypatch,
                                                                 give_seed):
    g = small_graph()
    folder = tmp_path / "run"
    with monkeypatch.context() as m:
        crash_after(m, 3)  # step 0 (2 buckets) done, step 1 cut
        with pytest.raises(Crash):
            small_model(folder, random_state=None).fit(g)
    seed = json.loads((folder / "plan.json").read_text())["seed"]
    assert json.loads((folder / "progress.json").read_text())["step"] == 1
    resumed = small_model(folder, random_state=seed if give_seed else None).fit(g)
    assert resumed.partition_run_.resumed_at_step == 1
    clean = small_model(tmp_path / "clean", random_state=seed).fit(g)
    np.testing.assert_array_equal(resumed.embedding_, clean.embedding_)


def test_another_seed_on_a_folder_is_refused_naming_the_seed(tmp_path):
    g = small_graph()
    small_model(tmp_path / "run", random_state=1).fit(g)
    with pytest.raises(InputError, match=r"another graph or other settings \(seed differ"):
        small_model(tmp_path / "run", random_state=2).fit(g)


# --- R04/R06/R07/R08: a damaged folder on resume ---------------------------------------------


def interrupted_fit(folder, monkeypatch, g) -> None:
    """A fit stopped after its first step (2 buckets): it resumes at step 1."""
    with monkeypatch.context() as m:
        crash_after(m, 3)
        with pytest.raises(Crash):
            small_model(folder).fit(g)
    assert json.loads((folder / "progress.json").read_text())["step"] == 1


@pytest.mark.parametrize("damage", ["missing", "cut short", "NaN"])
def test_a_damaged_block_on_resume_names_the_file(tmp_path, monkeypatch, damage):
    g = small_graph()
    folder = tmp_path / "run"
    interrupted_fit(folder, monkeypatch, g)
    block = blocks.block_path(folder, "B", 1, 1)
    if damage == "missing":
        block.unlink()
    elif damage == "cut short":
        with open(block, "r+b") as fh:
            fh.truncate(block.stat().st_size - 8)
    else:
        rows = np.load(block)
        rows[3, 2] = np.nan
        np.save(block, rows)
    with pytest.raises(InputError) as err:
        small_model(folder).fit(g)
    message = str(err.value)
    assert message.startswith(f"{block}: ") and "damaged; remove it to start over" in message
    if damage == "NaN":
        assert "NaN" in message


@pytest.mark.parametrize("record", ["progress.json", "plan.json"])
def test_a_corrupt_record_names_the_file(tmp_path, monkeypatch, capsys, edge_file, record):
    folder = tmp_path / "run"
    argv = ["embed", edge_file, "-o", tmp_path / "e.npy", *FAST, "--partition-dir", folder]
    with monkeypatch.context() as m:
        crash_after(m, 3)
        with pytest.raises(Crash):
            run_cli(argv, capsys)
    (folder / record).write_text('{"step": ')
    code, err = run_cli(argv, capsys)
    assert code == 2
    one_error_line(err, str(folder / record), "damaged")


def test_a_cut_round_of_walks_on_resume_names_the_file(tmp_path, monkeypatch):
    g = small_graph()
    folder = tmp_path / "run"
    interrupted_fit(folder, monkeypatch, g)
    walks = folder / "walks" / "round1.npy"
    with open(walks, "r+b") as fh:
        fh.truncate(walks.stat().st_size // 2)
    with pytest.raises(InputError, match=f"^{walks}: is cut short"):
        small_model(folder).fit(g)


# --- O34: NaN and infinite parameters --------------------------------------------------------


@pytest.mark.parametrize("option, value", [("--reg", "nan"), ("--lr", "inf"), ("-p", "nan")])
def test_a_parameter_that_is_not_finite_is_refused(tmp_path, edge_file, capsys, option, value):
    with pytest.raises(SystemExit) as exit_:  # refused while parsing, naming the option
        main([str(a) for a in ["embed", edge_file, "-o", tmp_path / "e.npy", *FAST, option,
                               value]])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert f"{value}: not a finite number" in err and option in err
    assert not (tmp_path / "e.npy").exists()
    name = {"--reg": "reg", "--lr": "lr", "-p": "p"}[option]
    with pytest.raises(ValueError, match=f"^{name} must be a finite number, got {value}"):
        KernelNE(partitions=2, **{name: float(value)}).fit(Graph.from_edges([0, 1], [1, 2]))


# --- R01: a rerun on a finished folder -------------------------------------------------------


def test_a_rerun_on_a_finished_folder_says_it_trained_nothing(tmp_path, edge_file, capsys):
    argv = ["embed", edge_file, *FAST, "--partition-dir", tmp_path / "run"]
    argv.remove("--quiet")
    assert main([str(a) for a in [*argv, "-o", tmp_path / "a.npy"]]) == 0
    first = capsys.readouterr().out
    assert "pairs/s" in first and "trained by this run" not in first
    assert main([str(a) for a in [*argv, "-o", tmp_path / "b.npy"]]) == 0
    out, err = capsys.readouterr()
    assert "holds a finished fit: nothing was trained" in err
    pairs = next(line for line in out.splitlines() if line.startswith("pairs"))
    assert "none trained by this run" in pairs and "pairs/s" not in pairs
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))


# --- PX10/D04/D06: too many partitions or rounds ---------------------------------------------


@pytest.mark.parametrize("option, value, words", [
    ("--partitions", "50", ["--partitions 50 is too many for a graph of 149 nodes",
                            "at most 49"]),
    ("--rounds", "100000", ["--rounds 100000 is too many: at most 20"]),
])
def test_too_many_partitions_or_rounds_are_refused_before_any_work(tmp_path, edge_file, capsys,
                                                                  option, value, words):
    argv = ["embed", edge_file, "-o", tmp_path / "e.npy", *FAST, "--partition-dir",
            tmp_path / "run"]
    argv[argv.index(option) + 1] = value
    code, err = run_cli(argv, capsys)
    assert code == 2
    one_error_line(err, *words)
    assert not (tmp_path / "run").exists()


def test_the_most_partitions_still_train(tmp_path):
    g = small_graph(n=30, m=90)
    model = small_model(None, partitions=partitioned.max_partitions(30), rounds=1).fit(g)
    assert model.embedding_.shape == (30, 8) and np.isfinite(model.embedding_).all()


# --- temporary folders -----------------------------------------------------------------------


@pytest.mark.parametrize("stop", ["SIGTERM", "error"])
def test_the_temporary_folder_is_removed_when_the_fit_stops(tmp_path, edge_file, capsys,
                                                             monkeypatch, stop):
    import tempfile

    import kernelne.cli.app

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    calls = []

    def stops(*args):
        calls.append(args)
        if len(calls) == 3:
            raise kernelne.cli.app._Terminated if stop == "SIGTERM" else OSError("disk full")
        return real(*args)

    real = buckets.bucket_task
    monkeypatch.setattr(buckets, "bucket_task", stops)
    out = tmp_path / "e.npy"
    if stop == "SIGTERM":
        assert main([str(a) for a in ["embed", edge_file, "-o", out, *FAST]]) == 143
    else:
        with pytest.raises(OSError, match="disk full"):
            main([str(a) for a in ["embed", edge_file, "-o", out, *FAST]])
    assert len(calls) == 3
    assert list(scratch.iterdir()) == [] and not out.exists()



def _slow_square(x):
    import time as _time

    _time.sleep(1.5)
    return x * x


def test_every_worker_lost_is_said_while_the_step_waits():
    """K02: with every worker gone the step waits for one and says so, once; a worker that
    joins later finishes the step (Dask reschedules its tasks)."""
    import threading

    from distributed import Client, LocalCluster

    from kernelne.partitioned.buckets import gather_watching_workers

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        futures = [client.submit(_slow_square, x, pure=False) for x in (2, 3)]
        cluster.scale(0)
        deadline = time.monotonic() + 20
        while client.scheduler_info()["workers"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not client.scheduler_info()["workers"]
        threading.Timer(2.0, lambda: cluster.scale(1)).start()
        with pytest.warns(UserWarning, match="no Dask worker is connected") as record:
            results = gather_watching_workers(client, futures, interval=0.5)
    assert results == [4, 9]
    assert len([w for w in record if "no Dask worker" in str(w.message)]) == 1
