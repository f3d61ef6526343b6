"""A partitioned fit's last stage: the rows put together from their blocks
(:func:`kernelne.partitioned.blocks.assemble`, ``A.npy`` from ``A{c}`` of every part ``c``).

    python benchmarks/bench_assembly.py --nodes 2000000 --dim 128 --partitions 8 64

For each P, writes the P blocks of an ``n x d`` float32 matrix (random rows, a block at a
time) into a folder (``--folder``, a new temporary one by default, removed after), then
times the assembly ``--repeats`` times (``A.npy`` removed between them; the blocks stay in
the page cache if memory allows), checks 1,000 random rows against their blocks, and prints
one JSON line: median seconds, MB/s of the matrix, and the process' peak resident memory
(``VmHWM``: pages of a mapped output count). Run it under a memory cap below the matrix (a
cgroup, as ``bench_out_of_core.py`` shows) to see the out-of-core case, where the page cache
cannot hold the matrix.
"""

from __future__ import annotations

import argparse
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import emit, peak_rss_mb

import kernelne
from kernelne.partitioned.blocks import assemble, block_path, part_size


def write_blocks(folder: Path, n: int, d: int, parts: int) -> None:
    (folder / "blocks").mkdir(parents=True, exist_ok=True)
    for i in range(parts):
        rows = np.random.default_rng(i).standard_normal((part_size(n, parts, i), d))
        np.save(block_path(folder, "A", i, 0), rows.astype(np.float32))


def check(matrix: np.ndarray, folder: Path, n: int, parts: int) -> None:
    for v in np.random.default_rng(1).integers(0, n, 1000):
        block = np.load(block_path(folder, "A", int(v % parts), 0), mmap_mode="r")
        assert np.array_equal(matrix[v], block[v // parts]), f"row {v} differs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=2_000_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--partitions", type=int, nargs="+", default=[8, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--folder", default=None, help="where the files go (default: temporary)")
    ap.add_argument("--out", default=None, help="append the JSON lines to this file")
    args = ap.parse_args()
    n, d = args.nodes, args.dim
    base = Path(tempfile.mkdtemp(prefix="bench-assembly-", dir=args.folder))
    try:
        for parts in args.partitions:
            folder = base / f"P{parts}"
            write_blocks(folder, n, d, parts)
            times = []
            for _ in range(args.repeats):
                (folder / "A.npy").unlink(missing_ok=True)
                start = time.perf_counter()
                matrix = assemble(folder, "A", n, parts, d, 0)
                times.append(time.perf_counter() - start)
                check(matrix, folder, n, parts)
                del matrix
            seconds = statistics.median(times)
            line = {"nodes": n, "dim": d, "parts": parts, "matrix_mb": round(n * d * 4 / 2**20),
                    "seconds": round(seconds, 3), "times": [round(t, 3) for t in times],
                    "mb_per_s": round(n * d * 4 / 2**20 / seconds), "peak_mb": round(peak_rss_mb()),
                    "kernelne": kernelne.__version__,
                    "machine": platform.processor() or platform.machine()}
            emit(line, args.out)
            shutil.rmtree(folder)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
