"""Edge-list loading: the pyarrow fast path vs the line-by-line reader, the .npz format read
and with its edges left in the file (a partitioned fit's: ``mapped=True``), and ``kernelne
convert`` whole against block by block.

Each measurement runs in a fresh Python process (so peak RSS is that load's own); medians of
``--repeats`` runs. The line reader is timed on the first ``--line-edges`` edges only (it is
slow) and its time scaled per edge; the ratio is per edge. "peak MiB" is the peak resident
size (file pages a map touched included), "anon MiB" the peak of the anonymous memory alone
(``RssAnon``, sampled every 20 ms). The conversions write the same
``.npz``: read whole and saved (``load_graph`` + ``save_graph``), or block by block
(:func:`kernelne.graphs.stream_convert.stream_edgelist`, what ``kernelne convert`` runs).

    kernelne generate 1000000 10000000 50 0.5 -o sbm1m
    python benchmarks/bench_loading.py sbm1m.edges
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import WATCH_ANONYMOUS

CHILD = WATCH_ANONYMOUS + r"""
import json, sys, time
from kernelne.memory import peak_memory_mb
import kernelne.graphs.graph as kg
path, mode = sys.argv[1], sys.argv[2]
if mode == "lines":
    kg.parse_fast = lambda data: None
t = time.perf_counter()
if mode == "stream":
    from kernelne.graphs.stream_convert import stream_edgelist
    g = stream_edgelist(path, sys.argv[3])
elif mode == "whole":
    from kernelne.graphs.npz import save_graph
    g = kg.load_graph(path)
    save_graph(g, sys.argv[3])
else:
    g = kg.load_graph(path, mapped=mode == "mapped")
print(json.dumps({"seconds": time.perf_counter() - t, "edges": g.n_edges,
                  "peak_mib": peak_memory_mb(), "anon_mib": anon[0] / 1024}))
"""


def measure(path: Path, mode: str, repeats: int, *extra: str) -> dict:
    runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD, str(path), mode, *extra],
                                      check=True, capture_output=True, text=True).stdout)
            for _ in range(repeats)]
    return {"seconds": statistics.median(r["seconds"] for r in runs),
            "peak_mib": statistics.median(r["peak_mib"] for r in runs),
            "anon_mib": statistics.median(r["anon_mib"] for r in runs),
            "edges": runs[0]["edges"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("edges", help="an edge-list file ('u v' per line)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--line-edges", type=int, default=1_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        head = Path(tmp) / "head.txt"
        with open(args.edges, "rb") as src, open(head, "wb") as dst:
            for i, line in enumerate(src):
                if i == args.line_edges:
                    break
                dst.write(line)
        npz = Path(tmp) / "graph.npz"
        # in a child: on Linux a child inherits its parent's peak RSS across exec
        subprocess.run([sys.executable, "-m", "kernelne", "convert", args.edges, "-o",
                        str(npz)], check=True, capture_output=True)
        fast = measure(Path(args.edges), "fast", args.repeats)
        fast_head = measure(head, "fast", args.repeats)
        lines_head = measure(head, "lines", args.repeats)
        binary = measure(npz, "fast", args.repeats)
        mapped = measure(npz, "mapped", args.repeats)
        whole = measure(Path(args.edges), "whole", args.repeats, str(Path(tmp) / "whole.npz"))
        stream = measure(Path(args.edges), "stream", args.repeats, str(Path(tmp) / "blocks.npz"))
    print(f"{'reader':34} {'edges':>11} {'seconds':>8} {'peak MiB':>9} {'anon MiB':>9}")
    rows = [("fast path (pyarrow), whole file", fast), ("fast path, first lines", fast_head),
            ("line by line, first lines", lines_head), (".npz (kernelne convert)", binary),
            (".npz, edges left in the file", mapped), ("convert: read whole, save", whole),
            ("convert: block by block", stream)]
    for name, r in rows:
        print(f"{name:34} {r['edges']:>11,} {r['seconds']:>8.2f} {r['peak_mib']:>9.0f} "
              f"{r['anon_mib']:>9.0f}")
    ratio = lines_head["seconds"] / fast_head["seconds"]
    print(f"fast path vs line reader on the same {lines_head['edges']:,} edges: {ratio:.1f}x")


if __name__ == "__main__":
    main()
