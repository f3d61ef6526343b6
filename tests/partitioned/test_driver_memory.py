"""A partitioned fit's driver holds no copy and no map of the edges: given a graph ``.npz`` it
leaves the edges in the file (read a window at a time where the driver needs them), the Dask
workers make the walks and train the buckets, and the driver's address space
(``RLIMIT_AS``: everything it holds or maps) can be capped below the size of the graph's CSR.
The embedding is the in-memory partitioned fit's, bit for bit (one thread per task)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import distributed
import numpy as np
import pytest

from kernelne import Graph, KernelNE
from kernelne.graphs.file_vector import FileVector
from kernelne.graphs.graph import load_graph
from kernelne.graphs.npz import save_graph

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="RLIMIT_AS and /proc/self/status are Linux's")

SETTINGS = dict(dim=8, walks_per_node=1, partitions=2, propagate=False, random_state=0)

# The driver: warmed up (imports, numba's compiled loops, its threads, the client) on a small
# graph file, then its address space capped at its size so far plus HEADROOM, below the CSR's.
DRIVER = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from dask.distributed import Client
    import kernelne.graphs.neighbours as neighbours
    import kernelne.graphs.npz as npz
    import kernelne.partitioned.part_walks as part_walks
    import kernelne.partitioned.plan as plan
    import kernelne.partitioned.rounds as rounds
    from kernelne import KernelNE
    from kernelne.graphs.graph import load_graph

    def address_bytes():
        with open("/proc/self/status") as fh:
            return next(int(l.split()[1]) * 1024 for l in fh if l.startswith("VmSize:"))

    address, small, big, out, headroom = sys.argv[1:6]
    settings = {settings!r}
    # the windows the driver reads the edges by, below this test's headroom
    neighbours.CHUNK_EDGES = npz.CHECK_BLOCK = plan.DIGEST_CHUNK = 1 << 16
    rounds.WRITE_EDGES = part_walks.WRITE_EDGES = 1 << 16
    with Client(address) as client:
        KernelNE(**settings).fit(small, client=client)
        limit = address_bytes() + int(headroom)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        model = KernelNE(**settings).fit(big, client=client)
        np.save(out, model.embedding_)
        print(f"grew {{address_bytes() - limit + int(headroom)}} of {{headroom}} bytes")
        try:
            load_graph(big)  # read whole, the CSR alone is above the cap
        except MemoryError:
            print("reading the graph whole: MemoryError")
        try:
            np.memmap(big, mode="r")  # mapped whole, the file is above the cap too
        except (MemoryError, OSError):
            print("mapping the graph whole: refused")
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
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MALLOC_ARENA_MAX="2")  # no new malloc arena reserved in the capped space
    run = subprocess.run(
        [sys.executable, "-c", DRIVER.format(settings=SETTINGS), cluster.scheduler_address,
         str(small), str(big), str(out), str(headroom)],
        capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    print(run.stdout)
    assert "reading the graph whole: MemoryError" in run.stdout  # the cap bites
    assert "mapping the graph whole: refused" in run.stdout
    expected = KernelNE(**SETTINGS, workers=1).fit(load_graph(big)).embedding_
    assert np.array_equal(np.load(out), expected)


def test_a_graph_left_in_its_file_is_the_graph_read_whole(tmp_path):
    path = tmp_path / "g.npz"
    rng = np.random.default_rng(2)
    g = Graph.from_edges(rng.integers(0, 500, 4000), rng.integers(0, 500, 4000),
                         weights=rng.uniform(0.5, 2.0, 4000))
    save_graph(g, path)
    whole, kept = load_graph(path), load_graph(path, mapped=True)
    assert isinstance(kept.indptr, np.memmap) and not kept.indptr.flags.writeable
    for name in ("indices", "weights"):
        edges, expected = getattr(kept, name), getattr(whole, name)
        assert isinstance(edges, FileVector)
        assert np.array_equal(edges[:], expected)
        assert np.array_equal(edges[17:1234], expected[17:1234])
        at = rng.integers(-len(expected), len(expected), 300)
        assert np.array_equal(edges[at], expected[at])
        assert edges[-1] == expected[-1] and edges[5:5].shape == (0,)
        mapped = np.asarray(edges)  # what a numba loop is given: a read-only map
        assert not mapped.flags.writeable and np.array_equal(mapped, expected)
        with pytest.raises(IndexError):
            edges[len(expected)]
        with pytest.raises(IndexError):
            edges[::2]
    assert np.array_equal(kept.nodes, whole.nodes)
    fresh = load_graph(path, mapped=True)  # read (at its load's checks), not yet mapped
    other = tmp_path / "other.npz"  # the file replaced (renamed over) after it was read
    save_graph(Graph.from_edges([0, 1], [1, 2]), other)
    os.replace(other, path)
    assert np.array_equal(kept.indices[:], whole.indices)
    assert np.array_equal(np.asarray(fresh.weights), whole.weights)  # mapped: the same file


def test_a_partitioned_fit_leaves_a_graph_npz_in_its_file_and_a_plain_one_reads_it(tmp_path):
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
            assert isinstance(graph.indices, FileVector) is mapped


@pytest.mark.filterwarnings("ignore::kernelne.engine.diagnostics.DegenerateEmbeddingWarning")
@pytest.mark.parametrize("directed", [False, True])
def test_a_graph_file_left_on_disk_fits_and_propagates_as_the_graph_in_memory(tmp_path,
                                                                             directed):
    """Every stage that needs the edges whole (the walks, the propagation's filter) maps
    them; the rest reads windows: the rows are those of the graph read whole."""
    rng = np.random.default_rng(4)
    path = tmp_path / "g.npz"
    g = Graph.from_edges(rng.integers(0, 400, 4000), rng.integers(0, 400, 4000),
                         weights=None if directed else rng.uniform(0.5, 2.0, 4000),
                         directed=directed)
    save_graph(g, path)
    settings = dict(SETTINGS, walks_per_node=2, propagate=True, workers=1)
    from_file = KernelNE(**settings).fit(str(path))
    assert np.array_equal(from_file.embedding_, KernelNE(**settings).fit(g).embedding_)
