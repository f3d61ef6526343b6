"""A partitioned fit's driver holds no copy of the edges: given a graph ``.npz`` it maps the
CSR read-only, the Dask workers make the walks and train the buckets, and the driver's own
memory (``RLIMIT_DATA``: its heap and private mappings, not the file's pages) can be capped
below the size of the graph's CSR. The embedding is the in-memory partitioned fit's, bit for
bit (one thread per task)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import distributed
import numpy as np
import pytest

from kernelne import Graph, KernelNE
from kernelne.graphs.graph import load_graph
from kernelne.graphs.npz import save_graph

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="RLIMIT_DATA and /proc/self/status are Linux's")

SETTINGS = dict(dim=8, walks_per_node=1, partitions=2, propagate=False, random_state=0)

# The driver: warmed up (imports, numba's compiled loops for read-only arrays, the client) on
# a small mapped graph, then capped at its memory so far plus HEADROOM, below the CSR's size.
DRIVER = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from dask.distributed import Client
    import kernelne.graphs.neighbours as neighbours
    from kernelne import KernelNE
    from kernelne.graphs.graph import load_graph

    def data_bytes():
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmData:"))

    address, small, big, out, headroom = sys.argv[1:6]
    settings = {settings!r}
    neighbours.CHUNK_EDGES = 1 << 16  # its bounded temporaries, below this test's headroom
    with Client(address) as client:
        KernelNE(**settings).fit(small, client=client)
        limit = data_bytes() + int(headroom)
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        model = KernelNE(**settings).fit(big, client=client)
        np.save(out, model.embedding_)
        print(f"grew {{data_bytes() - limit + int(headroom)}} of {{headroom}} bytes")
        try:
            load_graph(big)  # read whole, the CSR alone is above the cap
        except MemoryError:
            print("reading the graph whole: MemoryError")
""")


def random_graph(n: int, m: int, seed: int) -> Graph:
    """A weighted graph (the walks' cumulative weights are then made too)."""
    rng = np.random.default_rng(seed)
    return Graph.from_edges(rng.integers(0, n, m), rng.integers(0, n, m),
                            weights=rng.uniform(0.5, 2.0, m), n_nodes=n)


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as local:
        yield local


@pytest.mark.filterwarnings("ignore::kernelne.engine.diagnostics.DegenerateEmbeddingWarning")
def test_a_driver_capped_below_the_csr_fits_the_in_memory_embedding(cluster, tmp_path):
    big, small, out = tmp_path / "big.npz", tmp_path / "small.npz", tmp_path / "rows.npy"
    graph = random_graph(50_000, 3_000_000, seed=0)
    save_graph(graph, big)
    save_graph(random_graph(300, 3_000, seed=1), small)
    csr_bytes = graph.indptr.nbytes + graph.indices.nbytes + graph.weights.nbytes
    headroom = csr_bytes // 2
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    run = subprocess.run(
        [sys.executable, "-c", DRIVER.format(settings=SETTINGS), cluster.scheduler_address,
         str(small), str(big), str(out), str(headroom)],
        capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    print(run.stdout)
    assert "reading the graph whole: MemoryError" in run.stdout  # the cap bites
    expected = KernelNE(**SETTINGS, workers=1).fit(load_graph(big)).embedding_
    assert np.array_equal(np.load(out), expected)


def test_a_mapped_graph_is_the_graph_read_whole(tmp_path):
    path = tmp_path / "g.npz"
    rng = np.random.default_rng(2)
    g = Graph.from_edges(rng.integers(0, 500, 4000), rng.integers(0, 500, 4000),
                         weights=rng.uniform(0.5, 2.0, 4000))
    save_graph(g, path)
    whole, mapped = load_graph(path), load_graph(path, mapped=True)
    for name in ("indptr", "indices", "weights"):
        assert isinstance(getattr(mapped, name), np.memmap)
        assert not getattr(mapped, name).flags.writeable
        assert np.array_equal(getattr(mapped, name), getattr(whole, name))
    assert np.array_equal(mapped.nodes, whole.nodes)


def test_a_partitioned_fit_maps_a_graph_npz_and_a_plain_one_reads_it(tmp_path):
    import argparse

    from kernelne.cli.options import read_input_graph

    path = tmp_path / "g.npz"
    save_graph(random_graph(300, 3000, seed=3), path)
    options = dict(input=str(path), directed=False, mat_key="network", header=False,
                   unweighted=False)
    for parts, mapped in ((2, True), (1, False)):
        cli = read_input_graph(argparse.Namespace(partitions=parts, **options))
        api = KernelNE(partitions=parts)._fit_graph(str(path))
        for graph in (cli, api):
            assert isinstance(graph.indices, np.memmap) is mapped
