"""What a partition folder may be (audit 5): no chained or read-only URL (B18, B28, B29, B30),
no URL without a bucket (B19) or with an upper-case protocol (B26), not an empty name (A55),
and no symbolic link inside it followed out of it (H11)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from cli_runs import FullDisk, one_error_line, run_cli

import kernelne.partitioned.blocks as blocks
import kernelne.partitioned.buckets as buckets
from kernelne import Graph, KernelNE
from kernelne.errors import InputError
from kernelne.graphs.generators import planted_partition_sbm

FAST = ["--dim", "8", "--walks-per-node", "4", "--workers", "1", "--quiet", "--seed", "0",
        "--partitions", "2", "--rounds", "2"]


def small_graph() -> Graph:
    edges, _ = planted_partition_sbm(150, 600, 3, 0.2, seed=0)
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=150)


def small_model(folder) -> KernelNE:
    return KernelNE(random_state=0, workers=1, walks_per_node=4, dim=8, partitions=2, rounds=2,
                    verbose=False, partition_dir=str(folder))


@pytest.fixture
def edge_file(tmp_path):
    g = small_graph()
    src = np.repeat(np.arange(g.n_nodes), np.diff(g.indptr))
    path = tmp_path / "g.txt"
    path.write_text("".join(f"{u} {v}\n" for u, v in zip(src, g.indices, strict=True) if u < v))
    return path


@pytest.mark.parametrize("url, words", [
    ("simplecache::memory://kernelne-b28/run", ["chained URL", "old copies"]),  # B28
    ("zip://x::{tmp}/z.zip", ["chained URL"]),  # B29
    ("http://127.0.0.1:1/bkt/h", ["http:// cannot hold a partitioned fit", "read only"]),  # B18
    ("tar://x", ["tar:// cannot hold a partitioned fit"]),
    ("ftp://127.0.0.1:1/x", ["ftp://127.0.0.1:1/x cannot be reached"]),  # B30
    ("s3://", ["names no bucket or folder after s3://"]),  # B19
    ("memory:///", ["names no bucket or folder after memory://"]),
    ("S3://bkt/upper", ["S3:// must be written in lower case", "write it s3://"]),  # B26
    ("FOO://x/y", ["unknown protocol foo://"]),  # not a known protocol in upper case
])
def test_a_url_that_cannot_hold_a_fit_is_one_line_before_any_work(tmp_path, edge_file, capsys,
                                                                  monkeypatch, url, words):
    monkeypatch.chdir(tmp_path)
    url = url.format(tmp=tmp_path)
    out = tmp_path / "e.npy"
    before = sorted(os.listdir(tmp_path))
    code, err = run_cli(["embed", edge_file, "-o", out, *FAST, "--partition-dir", url], capsys)
    assert code == 2
    one_error_line(err, "--partition-dir", *words)
    assert sorted(os.listdir(tmp_path)) == before  # no local folder "s3:", no output


@pytest.mark.parametrize("empty", ["", "  "])
def test_a55_an_empty_partition_dir_is_refused_not_the_current_folder(tmp_path, edge_file,
                                                                      capsys, monkeypatch,
                                                                      empty):
    cwd = tmp_path / "empty"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    out = tmp_path / "e.npy"
    code, err = run_cli(["embed", edge_file, "-o", out, *FAST, "--partition-dir", empty], capsys)
    assert code == 2
    one_error_line(err, "--partition-dir is empty", "give a folder (. for the current one)")
    assert os.listdir(cwd) == [] and not out.exists()
    with pytest.raises(InputError, match="^--partition-dir is empty"):
        small_model(empty).fit(small_graph())
    assert os.listdir(cwd) == []


class Crash(Exception):
    pass


def test_h11_a_symlink_in_a_resumed_folder_is_refused_and_its_target_kept(tmp_path, monkeypatch):
    g = small_graph()
    folder = tmp_path / "run"
    real, calls = buckets.bucket_task, []

    def dies(*args):
        calls.append(args)
        if len(calls) > 3:
            raise Crash
        return real(*args)

    with monkeypatch.context() as m:
        m.setattr(buckets, "bucket_task", dies)
        with pytest.raises(Crash):
            small_model(folder).fit(g)
    assert json.loads((folder / "progress.json").read_text())["step"] == 1
    victim = tmp_path / "victim.txt"
    victim.write_text("precious user data\n")
    block = blocks.block_path(folder, "A", 0, 0)  # written again at step 1 (version 2)
    block.unlink()
    block.symlink_to(victim)
    with pytest.raises(InputError, match=f"^{block}: is a symbolic link in the partition folder"):
        small_model(folder).fit(g)
    assert victim.read_text() == "precious user data\n"
    assert not (folder / "kernelne.lock").exists()


@pytest.mark.parametrize("same_shape", [True, False])
def test_h11_a_block_write_never_follows_a_link_planted_meanwhile(tmp_path, same_shape):
    victim = tmp_path / "victim.npy"
    np.save(victim, np.zeros((4, 3) if same_shape else (2, 2), dtype=np.float32))
    before = victim.read_bytes()
    (tmp_path / "blocks").mkdir()
    block = blocks.block_path(tmp_path, "A", 0, 1)
    block.symlink_to(victim)
    with pytest.raises(InputError, match="is a symbolic link"):
        blocks.write_block(block, np.ones((4, 3), dtype=np.float32))
    assert victim.read_bytes() == before


def test_a_new_block_file_is_written_whole(tmp_path):
    (tmp_path / "blocks").mkdir()
    block = blocks.block_path(tmp_path, "B", 1, 1)
    rows = np.arange(12, dtype=np.float32).reshape(4, 3)
    blocks.write_block(block, rows)
    np.testing.assert_array_equal(np.load(block), rows)
    blocks.write_block(block, rows + 1)  # in place, same shape
    np.testing.assert_array_equal(np.load(block), rows + 1)


# --- H12-H16: a progress record edited or damaged --------------------------------------------


@pytest.mark.parametrize("edit, words", [
    ({"step": -5}, ["records step -5, not one of 0..4"]),  # H12
    ({"step": 13}, ["records step 13, not one of 0..4"]),  # H13
    ({"step": 10 ** 9}, ["not one of 0..4"]),
    ({"beta": [float("nan")]}, ["kernel weights (beta)"]),  # H14
    ({"scale": "x"}, ["records scale 'x', not a positive number"]),  # H15
    ({"scale": 0}, ["not a positive number"]),
    ({"losses": "x"}, ["losses that are not finite numbers"]),  # H16
    ({"pairs": "x"}, ["records pairs 'x', not a count"]),
    ({"checks": ["x"]}, ["checks that is not a list"]),
    ({"slot": 2}, ["records slot 2, not 0 or 1"]),
    ({"slot": True}, ["records slot True, not 0 or 1"]),
    ({"step": 4}, ["records step 4 but 1 loss records", "inconsistent"]),  # H13c: "finished"
])
def test_h12_h16_an_edited_progress_record_is_one_line_naming_it(tmp_path, monkeypatch, capsys,
                                                                 edge_file, edit, words):
    folder = tmp_path / "run"
    argv = ["embed", edge_file, "-o", tmp_path / "e.npy", *FAST, "--partition-dir", folder]
    real, calls = buckets.bucket_task, []

    def dies(*args):
        calls.append(args)
        if len(calls) > 3:
            raise Crash
        return real(*args)

    with monkeypatch.context() as m:
        m.setattr(buckets, "bucket_task", dies)
        with pytest.raises(Crash):
            run_cli(argv, capsys)
    record = folder / "progress.json"
    state = json.loads(record.read_text())
    assert state["step"] == 1
    state.update(edit)
    record.write_text(json.dumps(state))
    code, err = run_cli(argv, capsys)
    assert code == 2 and not (tmp_path / "e.npy").exists()
    one_error_line(err, f"{record}: ", "damaged", *words)


# --- A48: the lock removed while a fit trains ------------------------------------------------


def test_a48_a_fit_whose_lock_is_taken_meanwhile_stops_before_the_next_step(tmp_path,
                                                                            monkeypatch):
    g = small_graph()
    folder = tmp_path / "run"
    lock = folder / "kernelne.lock"
    other = {"pid": 1, "host": "elsewhere", "token": "another run"}
    real, calls = buckets.bucket_task, []

    def second_run_takes_the_folder(*args):
        calls.append(args)
        if len(calls) == 3:  # step 1: the lock removed by hand, a second run takes it
            lock.unlink()
            lock.write_text(json.dumps(other))
        return real(*args)

    monkeypatch.setattr(buckets, "bucket_task", second_run_takes_the_folder)
    with pytest.raises(InputError, match=f"^--partition-dir {folder}: this run's lock .* was "
                       "removed or replaced while it trained"):
        small_model(folder).fit(g)
    assert len(calls) == 4  # step 1's buckets ran; nothing after
    assert json.loads((folder / "progress.json").read_text())["step"] == 1  # not recorded
    assert json.loads(lock.read_text()) == other  # the other run's lock is left alone


# --- A25, B27: temporary folders of killed runs ----------------------------------------------


def test_a25_b27_temporary_folders_of_dead_runs_are_removed_by_the_next(tmp_path, monkeypatch,
                                                                        edge_file, capsys):
    import subprocess
    import sys
    import tempfile

    from kernelne.partitioned import store

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    store.remove_dead_scratch.cache_clear()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = [f"kernelne-parts-{dead}-ab12", f"kernelne-stage-{dead}-x9", f"kernelne-rows-{dead}-q"]
    kept = [f"kernelne-parts-{os.getpid()}-live", "kernelne-parts-oldstyle", "mine",
            f"kernelne-other-{dead}-x"]
    for name in stale + kept:
        (scratch / name).mkdir()
        (scratch / name / "blocks.npy").write_bytes(b"x" * 100)
    code, _ = run_cli(["embed", edge_file, "-o", tmp_path / "e.npy", *FAST], capsys)
    assert code == 0
    assert sorted(os.listdir(scratch)) == sorted(kept)  # the run's own folder removed too
    store.remove_dead_scratch.cache_clear()


# --- A28, A30, A31, A33: a full disk ---------------------------------------------------------


def no_space(*args, **kwargs):
    import errno

    raise OSError(errno.ENOSPC, "No space left on device")


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith((".tmp", ".partial"))
                  or p.name == "kernelne.lock")


def test_a30_a33_a_full_disk_under_a_memory_map_is_one_line_not_sigbus(tmp_path, monkeypatch,
                                                                       edge_file, capsys):
    """The memory-mapped files (a round's walks) get their blocks before they are mapped: a
    full disk is an error there, not a SIGBUS when a page is written."""
    from kernelne.partitioned import store

    real = os.posix_fallocate

    def allocate(fd, offset, length):
        if "round" in os.readlink(f"/proc/self/fd/{fd}"):
            no_space()
        return real(fd, offset, length)

    monkeypatch.setattr(store.os, "posix_fallocate", allocate)
    full_disk_is_one_line(tmp_path, monkeypatch, edge_file, capsys)


def test_a_full_disk_while_the_rows_are_put_together_is_one_line(tmp_path, monkeypatch,
                                                                 edge_file, capsys):
    """``A.npy`` is written from the blocks a chunk at a time: a full disk there is one line,
    nothing left behind, and the folder is used again."""
    import builtins

    import kernelne.outputs

    def opened(path, *args, **kw):
        fh = builtins.open(path, *args, **kw)
        return FullDisk(fh) if "/.A.npy." in str(path) else fh

    monkeypatch.setattr(kernelne.outputs, "open", opened, raising=False)
    full_disk_is_one_line(tmp_path, monkeypatch, edge_file, capsys)


def full_disk_is_one_line(tmp_path, monkeypatch, edge_file, capsys) -> None:
    folder, out = tmp_path / "run", tmp_path / "e.npy"
    argv = ["embed", edge_file, "-o", out, *FAST, "--partition-dir", folder]
    code, err = run_cli(argv, capsys)
    assert code == 2 and not out.exists()
    one_error_line(err, "No space left on device")
    assert leftovers(folder) == []
    monkeypatch.undo()
    assert run_cli(argv, capsys)[0] == 0  # the folder is used again


def test_a31_a_full_temporary_folder_leaves_nothing(tmp_path, monkeypatch, edge_file, capsys):
    import tempfile

    from kernelne.partitioned import store

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(store.os, "posix_fallocate", no_space)
    code, err = run_cli(["embed", edge_file, "-o", tmp_path / "e.npy", *FAST], capsys)
    assert code == 2
    one_error_line(err, "No space left on device")
    assert os.listdir(scratch) == []


def test_a28_a_full_disk_while_a_block_is_written_is_one_line_and_resumes(tmp_path,
                                                                          monkeypatch,
                                                                          edge_file, capsys):
    real = np.save

    def save(file, array, *args, **kwargs):
        if "blocks" in str(getattr(file, "name", file)) and ".v1.npy" in str(
                getattr(file, "name", file)):
            no_space()
        return real(file, array, *args, **kwargs)

    folder, out = tmp_path / "run", tmp_path / "e.npy"
    argv = ["embed", edge_file, "-o", out, *FAST, "--partition-dir", folder]
    with monkeypatch.context() as m:
        m.setattr(np, "save", save)
        code, err = run_cli(argv, capsys)
    assert code == 2 and not out.exists()
    one_error_line(err, "blocks", "No space left on device")
    assert leftovers(folder) == []
    assert run_cli(argv, capsys)[0] == 0
    clean = tmp_path / "clean.npy"
    assert run_cli(["embed", edge_file, "-o", clean, *FAST, "--partition-dir",
                    tmp_path / "clean"], capsys)[0] == 0
    np.testing.assert_array_equal(np.load(out), np.load(clean))


# --- A5, A6, A15: folders and files a partitioned fit did not make ---------------------------


@pytest.mark.parametrize("plan", ['{"experiment": 3}', "not json"])
def test_a5_a6_a_plan_json_of_something_else_is_a_folder_of_other_files(tmp_path, edge_file,
                                                                        capsys, plan):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "plan.json").write_text(plan)
    (folder / "data.csv").write_text("1,2\n")
    code, err = run_cli(["embed", edge_file, "-o", tmp_path / "e.npy", *FAST, "--partition-dir",
                         folder], capsys)
    assert code == 2
    one_error_line(err, "holds files a partitioned fit did not make (data.csv, plan.json)")
    assert "damaged" not in err and "differ" not in err
    assert sorted(os.listdir(folder)) == ["data.csv", "plan.json"]  # no marker left


def test_a15_a_junk_noise_file_is_no_readable_npz_without_numpys_advice(tmp_path, monkeypatch):
    g = small_graph()
    folder = tmp_path / "run"
    real, calls = buckets.bucket_task, []

    def dies(*args):
        calls.append(args)
        if len(calls) > 3:
            raise Crash
        return real(*args)

    with monkeypatch.context() as m:
        m.setattr(buckets, "bucket_task", dies)
        with pytest.raises(Crash):
            small_model(folder).fit(g)
    noise = folder / "noise" / "noise1.npz"
    noise.write_text("junk\n")
    with pytest.raises(InputError) as err:
        small_model(folder).fit(g)
    message = str(err.value)
    assert message.startswith(f"{noise}: not a readable .npz file (not a zip archive of arrays)")
    assert "pickle" not in message
    assert "allow_pickle" not in message and "damaged" in message


# --- B8: the store at a URL stops answering --------------------------------------------------


def lost_connection() -> Exception:
    try:
        from botocore.exceptions import EndpointConnectionError
    except ImportError:
        return ConnectionRefusedError(111, "Connection refused")
    return EndpointConnectionError(endpoint_url="http://127.0.0.1:1/bkt/run/progress.json")


def test_b8_a_store_that_stops_answering_is_one_line_and_the_fit_resumes(monkeypatch):
    import uuid

    from kernelne.errors import TrainingError

    g = small_graph()
    url = f"memory://kernelne-b8-{uuid.uuid4().hex}/run"
    real, calls = blocks.write_bytes, []

    def gone_after_step_1(path, data):
        calls.append(str(path))
        if str(path).endswith("progress.json") and calls.count(str(path)) == 3:
            raise lost_connection()  # the write recording step 2
        return real(path, data)

    with monkeypatch.context() as m:
        m.setattr(blocks, "write_bytes", gone_after_step_1)
        with pytest.raises(TrainingError, match=f"^--partition-dir {url} stopped answering "
                           "during the fit .*resumes from the last recorded step"):
            small_model(url).fit(g)
    resumed = small_model(url).fit(g)
    assert resumed.partition_run_.resumed_at_step == 1
    clean = KernelNE(random_state=0, workers=1, walks_per_node=4, dim=8, partitions=2, rounds=2,
                     verbose=False).fit(g)
    np.testing.assert_array_equal(resumed.embedding_, clean.embedding_)
