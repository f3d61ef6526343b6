"""No input is ever overwritten, outputs are checked before work, failures are errors."""

from __future__ import annotations

import os

import pytest

from kernelne.cli.app import main
from kernelne.outputs import cap_jobs

EDGES = "\n".join(f"{i} {(i + 1) % 30}" for i in range(30)) + "\n0 15\n3 20\n"


@pytest.fixture
def graph_file(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text(EDGES)
    return path


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


FAST = ["--dim", "4", "--walks-per-node", "2", "--workers", "1", "--quiet"]


def test_embed_refuses_to_overwrite_its_input(graph_file, capsys):
    before = graph_file.read_text()
    code, err = _run(["embed", graph_file, "-o", graph_file, *FAST], capsys)
    assert code == 2 and "refusing to overwrite" in err
    assert graph_file.read_text() == before


def test_embed_refuses_a_link_to_its_input(graph_file, tmp_path, capsys):
    link = tmp_path / "link.txt"
    os.symlink(graph_file, link)
    code, err = _run(["embed", graph_file, "-o", link, *FAST], capsys)
    assert code == 2 and "refusing to overwrite" in err
    assert graph_file.read_text() == EDGES


@pytest.mark.parametrize("bad, message", [
    ("missing/out.txt", "folder does not exist"),
    ("", "output path is empty"),
    (".", "existing folder"),
    ("/proc/kernelne-out.txt", "cannot write"),
])
def test_bad_output_paths_fail_before_any_work(graph_file, tmp_path, capsys, monkeypatch, bad,
                                               message):
    monkeypatch.chdir(tmp_path)
    import kernelne.graphs.graph

    def no_work(*args, **kwargs):
        raise AssertionError("the graph was read before the output was checked")

    monkeypatch.setattr(kernelne.graphs.graph, "load_graph", no_work)
    code, err = _run(["embed", graph_file, "-o", bad, *FAST], capsys)
    assert code == 2 and message in err and "Traceback" not in err


def test_split_and_evaluate_refuse_their_inputs(graph_file, tmp_path, capsys):
    code, err = _run(["split", graph_file, "-o", graph_file], capsys)
    assert code == 2 and "refusing to overwrite" in err
    emb = tmp_path / "emb.txt"
    assert _run(["embed", graph_file, "-o", emb, *FAST], capsys)[0] == 0
    labels = tmp_path / "labels.csv"
    labels.write_text("\n".join(f"{i} {i % 2}" for i in range(30)))
    before = labels.read_text()
    code, err = _run(["evaluate", "classify", emb, labels, "--repeats", "1", "-o", labels],
                     capsys)
    assert code == 2 and "refusing to overwrite" in err and labels.read_text() == before


def test_diverged_training_is_an_error_without_output(graph_file, tmp_path, capsys):
    out = tmp_path / "emb.txt"
    code, err = _run(["embed", graph_file, "-o", out, "--kernel", "linear", "--lr", "1000",
                      "--min-lr", "1000", *FAST], capsys)
    assert code == 1 and "diverged" in err and not out.exists()
    assert not list(tmp_path.glob(".emb.txt.*"))  # no temporary file left behind


def test_zero_pair_training_is_an_error(graph_file, tmp_path, capsys):
    out = tmp_path / "emb.txt"
    code, err = _run(["embed", graph_file, "-o", out, "--walk-length", "1", *FAST], capsys)
    assert code == 1 and "no (center, context) pair" in err and not out.exists()


def test_version_and_job_counts(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and "kernelne 0." in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["reproduce", "--jobs", "0"])
    assert exit_.value.code == 2 and "positive number of jobs" in capsys.readouterr().err
    cores = os.cpu_count() or 1
    assert cap_jobs(1000, 3) == min(3, cores) and cap_jobs(-1, 100) == cores
    assert cap_jobs(None, 0) == 1


def test_options_a_method_ignores_are_reported(graph_file, tmp_path, capsys):
    code, err = _run(["embed", graph_file, "-o", tmp_path / "e.npy", "--method", "hope",
                      "--sigma", "0.5", "--dim", "4", "--quiet"], capsys)
    assert code == 0 and "--sigma is not used by --method hope" in err
    assert "--dim" not in err


def test_embedding_reader_checks_header_count_and_duplicates(tmp_path):
    from kernelne.embedding_io import load_embedding
    from kernelne.errors import InputError

    (tmp_path / "a.txt").write_text("3 2\n0 1 2\n1 3 4\n")
    with pytest.raises(InputError, match=r"a.txt:1: the header announces 3 vectors"):
        load_embedding(tmp_path / "a.txt")
    (tmp_path / "b.txt").write_text("2 2\nx 1 2\nx 3 4\n")
    with pytest.raises(InputError, match=r"b.txt:3: node 'x' appears twice"):
        load_embedding(tmp_path / "b.txt")
    (tmp_path / "c.txt").write_text("2 2\n0 1 2\n1 3\n")
    with pytest.raises(InputError, match=r"expected a node id and 2 numbers \(3 fields\)"):
        load_embedding(tmp_path / "c.txt")


def test_corrupt_split_arrays_are_an_input_error(graph_file, tmp_path, capsys):
    from kernelne.errors import InputError
    from kernelne.evaluation.splits import LinkSplit

    assert _run(["split", graph_file, "-o", tmp_path / "s", "--test-fraction", "0.05"],
                capsys)[0] == 0
    (tmp_path / "s" / "split.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(InputError, match="split.npz"):
        LinkSplit.load(tmp_path / "s")


def test_sigterm_leaves_no_partial_output(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    big = tmp_path / "big.txt"
    big.write_text("\n".join(f"{i} {(i * 7 + 1) % 3000}" for i in range(3000)))
    out = tmp_path / "emb.txt"
    proc = subprocess.Popen([sys.executable, "-m", "kernelne", "embed", str(big), "-o",
                             str(out), "--walks-per-node", "400", "--workers", "1", "--quiet"],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode in (143, -signal.SIGTERM) or "terminated" in err
    assert not out.exists() and not list(tmp_path.glob(".emb.txt.*"))


def test_killed_main_process_leaves_no_workers(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    import numpy as np

    rng = np.random.default_rng(0)
    emb, labels = tmp_path / "emb.npy", tmp_path / "labels.txt"
    np.save(emb, rng.normal(size=(3000, 32)).astype(np.float32))
    labels.write_text("\n".join(f"{i} {i % 5}" for i in range(3000)))
    proc = subprocess.Popen([sys.executable, "-m", "kernelne", "evaluate", "classify",
                             str(emb), str(labels), "--repeats", "500", "--jobs", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def children():
        out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def cpu_seconds(pid):  # utime + stime of a live process
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    # the workers arm their parent-death signal in their first task: wait until two children
    # have run tasks for a while (3 s of CPU: importing scikit-learn alone takes 1-2 s)
    deadline = time.time() + 120
    workers = []
    while len(workers) < 2 and time.time() < deadline:
        time.sleep(0.5)
        workers = [p for p in children() if cpu_seconds(p) > 3.0]
    assert workers, "no worker processes started"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 15
    alive = workers
    while alive and time.time() < deadline:
        time.sleep(0.5)
        alive = [p for p in workers if os.path.exists(f"/proc/{p}")
                 and open(f"/proc/{p}/stat").read().split()[2] != "Z"]
    assert not alive, f"orphaned workers {alive}"


def test_unreachable_scheduler_is_one_line(tmp_path, capsys, data_dir):
    pytest.importorskip("distributed")
    code, err = _run(["reproduce", "--quick", "--no-progress", "--scheduler",
                      "tcp://127.0.0.1:9", "--out-dir", tmp_path / "out"], capsys)
    assert code == 2 and "cannot reach the Dask scheduler" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
