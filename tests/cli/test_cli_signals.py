"""SIGTERM and a killed main process leave no partial output and no worker."""

from __future__ import annotations

import os


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

    # the workers arm their parent-death signal as the pool starts them (joblib's initializer),
    # before their first task imports scikit-learn: wait until two children have run for a
    # while (3 s of CPU; when the signal was armed in the task, a kill within the import
    # orphaned them on slow machines)
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
