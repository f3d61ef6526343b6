"""SHA-256 digests of what the commands and the estimator write, one thread, fixed seeds.

A guard for changes that must not move a single output bit (a refactor, a file move):
record the digests on the commit before the change, then check them after it.

    python benchmarks/output_digests.py record   # writes benchmarks/output_digests.json
    python benchmarks/output_digests.py check    # exit 1 and the differing cases if any

Every case runs with ``--workers 1`` (or ``workers=1``) and a seed, so its bytes are exact.
The graphs are the packaged karate club and Cora, and a generated planted partition dense
enough for the automatic setting to switch.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORD = HERE / "output_digests.json"
KARATE = HERE.parent / "examples" / "karate.edgelist"


def kernelne(*args: str, cwd: Path) -> None:
    cmd = [sys.executable, "-m", "kernelne", *args]
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr}")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cli_cases(tmp: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    one = ["--workers", "1", "--seed", "0", "--quiet"]
    cora = str(Path(subprocess.run(
        [sys.executable, "-m", "kernelne", "datasets", "--path"], capture_output=True,
        text=True, check=True).stdout.strip()) / "cora.edges.gz")
    kernelne("generate", "400", "6000", "4", "0.3", "-o", "dense", "--seed", "1", cwd=tmp)
    runs = {
        "embed karate --paper": [str(KARATE), "--paper"],
        "embed karate default": [str(KARATE)],
        "embed dense default": ["dense.edges"],
        "embed karate multi": [str(KARATE), "--kernel", "multi", "--paper"],
        "embed karate schoenberg loglik shrink": [
            str(KARATE), "--kernel", "schoenberg", "--loss", "loglik", "--window-shrink",
            "--subsample", "0.01"],
        "embed karate shared negatives pool": [
            str(KARATE), "--shared-negatives", "--negative-pool", "64"],
        "embed karate beta-select validation": [
            str(KARATE), "--kernel", "multi", "--beta-select", "validation"],
        "embed cora --paper short": [cora, "--paper", "--walks-per-node", "4", "--dim", "32"],
        "embed karate partitioned": [
            str(KARATE), "--partitions", "2", "--rounds", "2", "--partition-dir", "parts"],
        "embed cora partitioned": [
            cora, "--partitions", "3", "--rounds", "2", "--walks-per-node", "4", "--dim", "32"],
    }
    for method in ("deepwalk", "node2vec", "line", "hope", "netmf"):
        runs[f"embed karate --method {method}"] = [str(KARATE), "--method", method, "--dim", "16"]
    for i, (name, args) in enumerate(runs.items()):
        target = tmp / f"out{i}.npy"
        kernelne("embed", *args, "-o", str(target), *one, cwd=tmp)
        out[name] = digest(target)
    # update: a model of the karate club without its last edges, then the whole graph
    lines = KARATE.read_text().splitlines()
    (tmp / "part.edgelist").write_text("\n".join(lines[:-12]) + "\n")
    kernelne("embed", "part.edgelist", "-o", "part.npy", "--model-out", "part.model.npz",
             *one, cwd=tmp)
    kernelne("update", "part.model.npz", str(KARATE), "-o", "upd.npy", "--workers", "1",
             "--quiet", cwd=tmp)
    out["update karate"] = digest(tmp / "upd.npy")
    kernelne("update", "part.model.npz", str(KARATE), "-o", "upd2.npy", "--workers", "1",
             "--touched-rate", "0.5", "--quiet", cwd=tmp)
    out["update karate touched 0.5"] = digest(tmp / "upd2.npy")
    kernelne("embed", "part.edgelist", "-o", "partp.npy", "--model-out", "partp.model.npz",
             "--paper", *one, cwd=tmp)
    kernelne("update", "partp.model.npz", str(KARATE), "-o", "updp.npy", "--workers", "1",
             "--quiet", cwd=tmp)
    out["update karate --paper model"] = digest(tmp / "updp.npy")
    return out


def api_cases() -> dict[str, str]:
    import numpy as np

    from kernelne import KernelNE, load_graph

    def rows(model) -> str:
        return hashlib.sha256(np.ascontiguousarray(model.embedding_).tobytes()).hexdigest()

    lines = KARATE.read_text().splitlines()
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "part.edgelist"
        part.write_text("\n".join(lines[:-12]) + "\n")
        small = load_graph(str(part))
    graph = load_graph(str(KARATE))
    out = {}
    model = KernelNE(random_state=0, workers=1, walks_per_node=10).fit(graph)
    out["api fit"] = rows(model)
    model = KernelNE(random_state=0, workers=1, walks_per_node=10).fit(small)
    out["api fit part"] = rows(model)
    out["api partial_fit touched 0.3"] = rows(model.partial_fit(graph, touched_rate=0.3))
    return out


def main(argv: list[str]) -> int:
    mode = argv[1] if len(argv) > 1 else "check"
    with tempfile.TemporaryDirectory() as tmp:
        now = cli_cases(Path(tmp))
    now.update(api_cases())
    if mode == "record":
        RECORD.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"recorded {len(now)} digests in {RECORD.name}")
        return 0
    before = json.loads(RECORD.read_text())
    bad = [k for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
    for k in bad:
        print(f"DIFFERS  {k}")
    print(f"{len(now) - len(bad)} of {len(now)} digests equal")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
