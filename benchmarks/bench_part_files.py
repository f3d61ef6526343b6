"""What a partitioned fit's bucket reads of its round: the whole round's file against its part's
file (walks filed by part, :mod:`kernelne.partitioned.part_files`).

    python benchmarks/bench_part_files.py --graph sbm1m.npz --walks 2 --partitions 8 16 32 64

Makes one round of walks of the graph (``--walks`` per node of 10 nodes, seed 0) into a
folder (``--folder``, a new temporary one by default, removed after). For each P: the walks'
part masks; the round filed by part (seconds, and the part files' bytes over the round's);
then, for ``--buckets`` buckets ``(c, (c + 1) mod P)``, the windows the bucket trains read
both ways (:func:`kernelne.partitioned.buckets.bucket_walks`: the windows read and the
bucket's walks selected, as :func:`~kernelne.partitioned.buckets.bucket_task` does; checked
to pass on the same walks with the same ids), timed as the median of ``--repeats`` reads,
with the bytes read and the ratio. The files are read from the page cache after the first
read: a store or a cold disk makes the bytes cost more. A step of P buckets reads P times a
bucket's bytes. Prints one JSON line per P and the process' peak memory (``--out`` appends
them to a file).
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
from kernelne.engine.walks import WalkCorpus
from kernelne.graphs.graph import load_graph
from kernelne.outputs import allocated_memmap
from kernelne.partitioned.buckets import READ_WALKS, bucket_walks
from kernelne.partitioned.part_files import (
    file_round,
    filed_share,
    files_by_part,
    index_file,
    part_file,
)
from kernelne.partitioned.rounds import part_masks

LENGTH = 10


def make_round(graph, walks_per_node: int, folder: Path) -> Path:
    """The graph's walks (seed 0) written to ``folder/round0.npy``."""
    corpus = WalkCorpus(graph, walks_per_node, LENGTH, 1.0, 1.0, 0)
    path = folder / "round0.npy"
    out = allocated_memmap(path, np.int32, (corpus.n_walks, LENGTH))
    chunk = np.empty((corpus.chunk_walks, LENGTH), np.int32)
    for a, b in corpus.bounds():
        out[a:b] = corpus.chunk(a, b, out=chunk[: b - a])
    out.flush()
    return path


def write_masks(walk_file: Path, parts: int) -> Path:
    walks = np.load(walk_file, mmap_mode="r")
    masks = np.empty(len(walks), np.uint64)
    for lo in range(0, len(walks), READ_WALKS):
        masks[lo:lo + READ_WALKS] = part_masks(np.asarray(walks[lo:lo + READ_WALKS]), parts)
    path = walk_file.with_name("round0.masks.npy")
    np.save(path, masks)
    return path


def read_bucket(walk_file: Path, i: int, j: int, filed: bool) -> tuple[int, np.ndarray]:
    """A bucket's reading of its round: the walks it passes on, and sums of their ids and
    nodes (to check both ways against each other, outside the time)."""
    read = list(bucket_walks(walk_file, i, j, 0, filed))
    total = np.array([sum(int(ids.sum()) for ids, _ in read),
                      sum(int(walks.sum(dtype=np.int64)) for _, walks in read)])
    return sum(len(ids) for ids, _ in read), total


def timed_read(walk_file: Path, i: int, j: int, filed: bool) -> float:
    """Seconds of a bucket's reading of its round (its windows read and selected)."""
    t = time.perf_counter()
    for _ in bucket_walks(walk_file, i, j, 0, filed):
        pass
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", required=True, help="a graph file (a .npz is memory-mapped)")
    ap.add_argument("--walks", type=int, default=2, help="walks per node (one round)")
    ap.add_argument("--partitions", type=int, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--buckets", type=int, default=4, help="buckets read per P")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--folder", default=None, help="where the files go (default: temporary)")
    ap.add_argument("--out", default=None, help="append the JSON lines to this file")
    args = ap.parse_args()
    graph = load_graph(args.graph, mapped=args.graph.endswith(".npz"))
    folder = Path(args.folder or tempfile.mkdtemp(prefix="bench-part-files-", dir="."))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        start = time.perf_counter()
        walk_file = make_round(graph, args.walks, folder)
        print(f"{graph.n_nodes:,} nodes, {len(graph.indices):,} stored edges; "
              f"{args.walks} walks per node in {time.perf_counter() - start:.1f} s")
        for parts in args.partitions:
            emit(measure(walk_file, parts, args.buckets, args.repeats), args.out)
            for path in folder.glob("round0.*"):
                if path != walk_file:
                    path.unlink()
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)


def measure(walk_file: Path, parts: int, n_buckets: int, repeats: int) -> dict:
    mask_file = write_masks(walk_file, parts)
    round_bytes = walk_file.stat().st_size + mask_file.stat().st_size
    start = time.perf_counter()
    file_round(walk_file, mask_file, walk_file, parts, READ_WALKS)
    filing = time.perf_counter() - start
    part_bytes = [part_file(walk_file, c).stat().st_size for c in range(parts)]
    seconds = {True: [], False: []}
    for c in range(min(n_buckets, parts)):
        j = (c + 1) % parts
        got = {}
        for filed in (False, True):
            got[filed] = read_bucket(walk_file, c, j, filed)  # fills the page cache
            times = [timed_read(walk_file, c, j, filed) for _ in range(repeats)]
            seconds[filed].append(statistics.median(times))
        assert got[True][0] == got[False][0] and (got[True][1] == got[False][1]).all()
    whole, filed = statistics.median(seconds[False]), statistics.median(seconds[True])
    row = {
        "parts": parts, "walks": int(np.load(walk_file, mmap_mode="r").shape[0]),
        "round_mb": round(round_bytes / 2**20, 1),
        "bucket_mb_whole": round(round_bytes / 2**20, 1),
        "bucket_mb_filed": round(float(np.mean(part_bytes)) / 2**20, 1),
        "share_read": round(float(np.mean(part_bytes)) / round_bytes, 3),
        "share_predicted": round(filed_share(parts, LENGTH), 3),
        "stored_times_round": round((sum(part_bytes) + index_file(walk_file).stat().st_size)
                                    / round_bytes, 2),
        "filing_s": round(filing, 2),
        "bucket_read_s_whole": round(whole, 4), "bucket_read_s_filed": round(filed, 4),
        "speedup": round(whole / filed, 2), "filed_by_default": files_by_part(parts, LENGTH),
        "peak_mb": round(peak_rss_mb(), 0),
        "kernelne": kernelne.__version__, "machine": platform.processor() or platform.machine(),
    }
    return row


if __name__ == "__main__":
    main()
