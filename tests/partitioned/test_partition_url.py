"""Partitioned training at an fsspec URL (kernelne.partitioned.store): an S3 API (moto's server)
read and written by Dask workers that share no folder, ``memory://`` in one process, resuming
from the URL's record after a killed driver, a killed worker, and URLs that cannot be used."""

from __future__ import annotations

import json
import os
import signal
import socket
import uuid

import numpy as np
import pytest

import kernelne.partitioned.buckets as buckets
import kernelne.partitioned.driver as partitioned
import kernelne.partitioned.kept_blocks as kept_blocks
import kernelne.partitioned.locks as locks
from kernelne import Graph, KernelNE
from kernelne.cli.app import main
from kernelne.errors import InputError
from kernelne.graphs.generators import planted_partition_sbm
from kernelne.partitioned.store import RemotePath, create_exclusive, location

BUCKET = "kernelne-runs"
SETTINGS = dict(random_state=0, workers=1, walks_per_node=4, dim=8, partitions=3, rounds=2,
                verbose=False)
STEPS = 3 * 2  # partitions x rounds: the steps of one epoch
REAL_BUCKET_TASK = buckets.bucket_task
REAL_KEPT_TASK = kept_blocks.kept_bucket_task


class Crash(Exception):
    pass


def sbm_graph() -> Graph:
    edges, _ = planted_partition_sbm(300, 1200, 3, 0.2, seed=0)
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=300)


def fit(partition_dir: str, client=None) -> KernelNE:
    return KernelNE(partition_dir=partition_dir, **SETTINGS).fit(sbm_graph(), client=client)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def s3():
    """moto's S3 server on a free localhost port with one bucket; the AWS_* variables (fake
    credentials, the endpoint) point s3fs at it here and in every Dask worker started later."""
    server_module = pytest.importorskip(
        "moto.server", reason="moto is not installed: pip install 'moto[server]'")
    s3fs = pytest.importorskip("s3fs")
    port = free_port()
    server = server_module.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    with pytest.MonkeyPatch.context() as env:
        for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                            "AWS_DEFAULT_REGION": "us-east-1",
                            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"}.items():
            env.setenv(name, value)
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
            env.delenv(name, raising=False)
        s3fs.S3FileSystem.clear_instance_cache()
        fs = s3fs.S3FileSystem()
        fs.mkdir(BUCKET)
        try:
            yield fs
        finally:
            s3fs.S3FileSystem.clear_instance_cache()
            server.stop()


@pytest.fixture(scope="module")
def cluster(s3, tmp_path_factory):
    """Two Dask worker processes (one thread each), each started in its own empty folder:
    no folder is common to them and the driver."""
    distributed = pytest.importorskip("distributed")
    here = os.getcwd()
    homes = [tmp_path_factory.mktemp(f"worker{k}") for k in range(2)]
    with distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as local, \
            distributed.Client(local) as client:
        try:
            for k, home in enumerate(homes, start=1):
                os.chdir(home)
                local.scale(k)
                client.wait_for_workers(k, timeout=60)
        finally:
            os.chdir(here)
        yield client, homes


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> KernelNE:
    """The same fit in a local folder."""
    return fit(str(tmp_path_factory.mktemp("local") / "run"))


def same_rows(model: KernelNE, reference: KernelNE) -> None:
    np.testing.assert_array_equal(model.embedding_, reference.embedding_)
    np.testing.assert_array_equal(model.context_embedding_, reference.context_embedding_)
    np.testing.assert_array_equal(model.beta_, reference.beta_)


def record(s3, run: str) -> dict:
    return json.loads(s3.cat_file(f"{BUCKET}/{run}/progress.json"))


@pytest.mark.long  # a Dask cluster of worker processes
def test_an_s3_fit_on_workers_without_a_shared_folder_equals_the_local_fit(s3, cluster,
                                                                           reference):
    client, homes = cluster
    assert sorted(client.run(os.getcwd).values()) == sorted(map(str, homes))
    model = fit(f"s3://{BUCKET}/on-workers", client=client)
    same_rows(model, reference)
    assert record(s3, "on-workers")["step"] == STEPS
    left = {p.rsplit("/", 1)[-1] for p in s3.ls(f"{BUCKET}/on-workers")}
    assert {"plan.json", "progress.json", locks.MARKER, "blocks", "walks"} <= left
    assert locks.LOCK not in left  # released
    assert all(not any(home.iterdir()) for home in homes)  # nothing written where they run


def test_rounds_filed_by_part_on_s3_train_the_local_fit(s3, reference, monkeypatch):
    """At a URL the driver files the rounds and uploads the part files; the buckets read them
    with ranged reads: the rows of the local fit that read the whole rounds."""
    monkeypatch.setattr(partitioned, "files_by_part", lambda parts, length: True)
    model = fit(f"s3://{BUCKET}/filed")
    assert model.partition_run_.filed and not reference.partition_run_.filed
    same_rows(model, reference)
    walks = {p.rsplit("/", 1)[-1] for p in s3.ls(f"{BUCKET}/filed/walks")}
    assert {f"round1.part{c}.npy" for c in range(3)} | {"round1.index.npy"} <= walks


def test_a_memory_url_in_one_process_equals_the_local_fit(reference):
    fsspec = pytest.importorskip("fsspec")
    run = f"memory://kernelne/{uuid.uuid4().hex}"
    model = fit(run)
    same_rows(model, reference)
    assert fsspec.filesystem("memory").exists(run.removeprefix("memory:/") + "/plan.json")


def test_a_file_url_is_the_local_folder_with_its_memory_maps(tmp_path, reference):
    model = fit((tmp_path / "run").as_uri())
    same_rows(model, reference)
    assert isinstance(model.embedding_, np.memmap)
    assert os.fspath(model.embedding_.filename) == str(tmp_path / "run" / "A.npy")


def test_a_file_system_without_whole_object_writes_gets_each_file_by_a_move(reference,
                                                                            monkeypatch):
    import fsspec

    from kernelne.partitioned import store as partition_store

    monkeypatch.setattr(partition_store, "OBJECT_STORES", frozenset())  # as sftp:// is
    moves = []
    memory = fsspec.filesystem("memory")
    real_mv = type(memory).mv

    def mv(self, source, target, **kwargs):
        moves.append((source, target))
        return real_mv(self, source, target, **kwargs)

    monkeypatch.setattr(type(memory), "mv", mv)
    run = f"memory://kernelne/{uuid.uuid4().hex}"
    model = fit(run)
    same_rows(model, reference)
    assert any(target.endswith("/progress.json") for _, target in moves)
    assert all(".tmp" in source.rsplit("/", 1)[-1] for source, _ in moves)
    assert not [p for p in memory.find(run) if p.endswith(".tmp")]


def test_a_lock_is_taken_once_where_the_store_has_no_exclusive_write(monkeypatch):
    import fsspec

    memory = fsspec.filesystem("memory")
    real_pipe = type(memory).pipe_file

    def pipe_file(self, path, value):  # an older file system: no ``mode``
        return real_pipe(self, path, value)

    monkeypatch.setattr(type(memory), "pipe_file", pipe_file)
    lock = location(f"memory://kernelne/{uuid.uuid4().hex}") / locks.LOCK
    assert create_exclusive(lock, b"first")
    assert not create_exclusive(lock, b"second")
    assert memory.cat_file(str(lock).removeprefix("memory:/")) == b"first"


def test_a_memory_url_with_workers_in_other_processes_is_refused_before_any_work(cluster):
    client, _ = cluster
    run = f"memory://kernelne/{uuid.uuid4().hex}"
    with pytest.raises(InputError) as err:
        fit(run, client=client)
    message = str(err.value)
    assert f"the Dask workers cannot see --partition-dir {run}" in message
    assert "memory:// lives in one process" in message
    import fsspec

    assert fsspec.filesystem("memory").ls(run, detail=False) == [
        run.removeprefix("memory:/") + "/" + locks.MARKER]


def test_a_driver_killed_mid_step_resumes_from_the_s3_record(s3, reference, monkeypatch):
    calls = []

    def dies_on_the_eighth_bucket(*args):
        calls.append(args[1:4])
        if len(calls) == 8:  # step 2, its second bucket: step 2's first bucket already wrote
            raise Crash
        return REAL_BUCKET_TASK(*args)

    monkeypatch.setattr(buckets, "bucket_task", dies_on_the_eighth_bucket)
    with pytest.raises(Crash):
        fit(f"s3://{BUCKET}/resumed")
    assert record(s3, "resumed")["step"] == 2
    assert s3.exists(f"{BUCKET}/resumed/blocks/A0.v1.npy")  # version 3: half a step written
    monkeypatch.setattr(buckets, "bucket_task", REAL_BUCKET_TASK)
    model = fit(f"s3://{BUCKET}/resumed")
    assert model.partition_run_.resumed_at_step == 2
    same_rows(model, reference)


def test_a_lock_at_the_url_refuses_a_second_run_and_says_whose_it_is(s3):
    run = f"s3://{BUCKET}/locked"
    owner = {"pid": os.getpid(), "host": socket.gethostname(), "token": "other"}
    assert create_exclusive(location(run) / locks.LOCK, json.dumps(owner).encode())
    assert not create_exclusive(location(run) / locks.LOCK, b"{}")
    with pytest.raises(InputError, match=f"--partition-dir {run} is in use by pid {os.getpid()}"):
        fit(run)
    assert json.loads(s3.cat_file(f"{BUCKET}/locked/{locks.LOCK}"))["token"] == "other"


def test_a_bad_url_is_one_error_naming_partition_dir_before_any_work(s3, monkeypatch, tmp_path,
                                                                   capsys):
    def no_walks(*args, **kwargs):
        raise AssertionError("the walks were made for a URL that cannot be used")

    monkeypatch.setattr(partitioned, "_make_walks", no_walks)
    with pytest.raises(InputError, match=r"--partition-dir nosuch://x/run: unknown protocol"):
        fit("nosuch://x/run")
    with pytest.raises(InputError, match=r"--partition-dir cannot be written \(.*bucket"):
        fit("s3://no-such-bucket/run")
    edges = tmp_path / "g.txt"
    edges.write_text("0 1\n1 2\n2 0\n2 3\n3 4\n4 5\n5 3\n5 6\n6 7\n7 8\n8 6\n8 9\n9 0\n")
    code = main(["embed", str(edges), "-o", str(tmp_path / "e.npy"), "--partitions", "2",
                 "--partition-dir", "s3://no-such-bucket/run", "--quiet", "--seed", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("kernelne: error:")]
    assert len(lines) == 1 and "--partition-dir" in lines[0] and "bucket" in lines[0]
    assert not (tmp_path / "e.npy").exists()


def kills_its_worker_once(*args):
    """A bucket task (blocks kept on the workers) that, the first time it is given a block
    trained by the step before (not read from the store), kills its own worker process
    (SIGKILL), once per fit folder (a marker object beside it). The blocks that worker held
    are lost: Dask computes them again from the tasks that made them, back to the last
    checkpoint in the store."""
    folder, given = args[0], args[-2:]
    if (given[0] is not None
            and create_exclusive(RemotePath(folder + "-killed-a-worker"), b"")):
        os.kill(os.getpid(), signal.SIGKILL)
    return REAL_KEPT_TASK(*args)


@pytest.mark.long  # a Dask cluster of worker processes, one killed
def test_a_dask_worker_killed_mid_bucket_at_s3_costs_only_that_bucket(s3, cluster, reference,
                                                                       monkeypatch, tmp_path):
    client, _ = cluster
    monkeypatch.chdir(tmp_path)  # where the worker that replaces the killed one starts
    pids = set(client.run(os.getpid).values())
    monkeypatch.setattr(kept_blocks, "kept_bucket_task", kills_its_worker_once)
    model = fit(f"s3://{BUCKET}/killed", client=client)
    assert s3.exists(f"{BUCKET}/killed-killed-a-worker")
    assert pids - set(client.run(os.getpid).values())  # one of them is gone
    same_rows(model, reference)
