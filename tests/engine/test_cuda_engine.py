"""The CUDA engine (``device="cuda"``) on numba's CUDA simulator, against the CPU engine.

The module switches numba to its CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``, read again by
numba's configuration) before anything imports :mod:`numba.cuda`; the CPU engine does not
read the setting, and the variable is put back after the module. The graphs are tiny: the
simulator runs each CUDA thread as a Python thread. What only a device can show carries the
``gpu`` mark (out of the default run).
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

KARATE = Path(__file__).resolve().parents[2] / "examples" / "karate.edgelist"


@pytest.fixture(scope="module", autouse=True)
def simulator():
    from numba.core import config

    before = os.environ.get("NUMBA_ENABLE_CUDASIM")
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    config.reload_config()
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
        else:
            os.environ["NUMBA_ENABLE_CUDASIM"] = before
        config.reload_config()


def _karate():
    from kernelne import load_dataset

    return load_dataset("karate").graph


def _setup(graph, walks_per_node, d, seed=0):
    from kernelne.engine.sampling import alias_table
    from kernelne.engine.trainer import Noise
    from kernelne.engine.walks import WalkCorpus

    corpus = WalkCorpus(graph, walks_per_node, 10, 1.0, 1.0, seed, 8192)
    walks = corpus.chunk(0, corpus.n_walks)
    counts = np.bincount(walks[walks >= 0].ravel(), minlength=graph.n_nodes)
    noise = Noise(*alias_table(counts.astype(np.float64) ** 0.75))
    rng = np.random.default_rng(seed)
    A = rng.uniform(-0.5 / d, 0.5 / d, (graph.n_nodes, d)).astype(np.float32)
    return walks, noise, A


def _both(walks, noise, A0, kernel, settings, launch, B0=None):
    """The rows after the CPU engine (one thread) and after the CUDA engine, and the pairs
    and losses of each."""
    import numba

    from kernelne.engine.cuda.trainer import train_chunks_on_device
    from kernelne.engine.trainer import kernel_arrays, train_walks

    B0 = np.zeros_like(A0) if B0 is None else B0
    A, B = A0.copy(), B0.copy()
    losses = np.zeros(2)
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        pairs = train_walks(walks, 0, A, B, kernel_arrays([kernel]), noise, settings, losses)
    finally:
        numba.set_num_threads(threads)
    A2, B2 = A0.copy(), B0.copy()
    out = list(train_chunks_on_device(lambda: [(0, walks)], len(walks), 1, A2, B2,
                                      kernel_arrays([kernel]), noise, settings, launch=launch))
    assert len(out) == 1
    return (A, B, pairs, losses), (A2, B2, out[0][1], out[0][2].copy())


KERNELS = {"gauss": ("gauss", 1.4), "schoenberg": ("schoenberg", 1.0), "linear": ("linear",)}


@pytest.mark.parametrize("loss", ["squared", "loglik"])
@pytest.mark.parametrize("kind", sorted(KERNELS))
def test_one_walks_pairs_match_the_cpu_step(kind, loss):
    """A walk of two nodes (two pairs, 5 negatives each) on 8 lanes with shuffles: the rows
    after the CUDA kernel's steps are the CPU engine's to 1e-5."""
    from kernelne.engine.cuda.trainer import Launch
    from kernelne.engine.kernels import Kernel
    from kernelne.engine.trainer import TrainSettings

    _, noise, A0 = _setup(_karate(), 1, 16)
    A0 *= 40  # rows of norm ~1: kernel values away from 0 and 1
    B0 = np.random.default_rng(1).normal(0, 0.3, A0.shape).astype(np.float32)
    walks = np.array([[3, 7, -1, -1]], dtype=np.int32)
    settings = TrainSettings(40.0, window=2, lr=0.2, seed=5, loglik=loss == "loglik")
    (A, B, pairs, losses), (A2, B2, pairs2, losses2) = _both(
        walks, noise, A0, Kernel(*KERNELS[kind]), settings, Launch(8, 1, 1), B0)
    assert pairs == pairs2 == 2
    assert np.abs(A - A0).max() > 1e-3 and np.abs(B - B0).max() > 1e-3  # steps were taken
    np.testing.assert_allclose(A2, A, atol=1e-5, rtol=0)
    np.testing.assert_allclose(B2, B, atol=1e-5, rtol=0)
    np.testing.assert_allclose(losses2, losses, rtol=1e-5)


def test_negative_pool_matches_the_cpu_step():
    from kernelne.engine.cuda.trainer import Launch
    from kernelne.engine.kernels import Kernel
    from kernelne.engine.trainer import TrainSettings

    _, noise, A0 = _setup(_karate(), 1, 16)
    walks = np.array([[3, 7, 1, -1], [0, 4, 10, 2]], dtype=np.int32)
    settings = TrainSettings(80.0, window=2, lr=0.2, seed=9, negative_pool=8,
                             window_shrink=True)
    (A, B, *_), (A2, B2, *_) = _both(walks, noise, A0 * 40, Kernel("gauss", 1.0), settings,
                                     Launch(4, 1, 1))
    np.testing.assert_allclose(A2, A, atol=1e-5, rtol=0)
    np.testing.assert_allclose(B2, B, atol=1e-5, rtol=0)


@pytest.mark.parametrize("variant", ["gauss", "schoenberg loglik shrink pool"])
def test_karate_with_one_group_equals_one_cpu_thread(variant):
    """One group of one lane trains the walks in the CPU's order: the rows of a karate run
    are the CPU engine's with one thread, within float32 rounding."""
    from kernelne.engine.cuda.trainer import Launch
    from kernelne.engine.kernels import Kernel
    from kernelne.engine.trainer import TrainSettings

    walks, noise, A0 = _setup(_karate(), 1, 8)
    if variant == "gauss":
        kernel = Kernel("gauss", 2**0.5)
        settings = TrainSettings(float(walks.size), seed=3)
    else:
        kernel = Kernel("schoenberg", 1.0)
        settings = TrainSettings(float(walks.size), seed=3, loglik=True, window_shrink=True,
                                 negative_pool=16)
    (A, B, pairs, losses), (A2, B2, pairs2, losses2) = _both(
        walks, noise, A0, kernel, settings, Launch(1, 1, 1))
    assert pairs == pairs2 > 1000
    np.testing.assert_allclose(A2, A, atol=2e-5 * np.abs(A).max(), rtol=0)
    np.testing.assert_allclose(B2, B, atol=2e-5 * np.abs(B).max(), rtol=0)
    np.testing.assert_allclose(losses2, losses, rtol=1e-5)


def _planted():
    from kernelne.graphs.generators import planted_partition_graph

    graph, labels = planted_partition_graph(60, 200, 3, 0.05, seed=2)
    return graph, labels[graph.nodes]


def _quality(model, labels):
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    found = KMeans(3, n_init=10, random_state=0).fit_predict(model.embedding_)
    return adjusted_rand_score(labels, found), model.health_.neighbour_auc


def test_the_normal_launch_is_within_the_cpus_seed_spread():
    """Four groups at once (lock-free, the simulator's default launch): k-means ARI and the
    neighbour AUC of a planted partition's fit fall within the CPU engine's spread over
    seeds."""
    from kernelne import KernelNE

    graph, labels = _planted()
    params = dict(dim=8, walks_per_node=8, window=3, random_state=0, propagate=False)
    cpu = [_quality(KernelNE(**{**params, "random_state": s}, workers=1).fit(graph), labels)
           for s in range(4)]
    model = KernelNE(**params, device="cuda").fit(graph)
    assert model.device == "cuda" and model.health_.measured
    ari, auc = _quality(model, labels)
    cpu_ari, cpu_auc = np.array(cpu).T
    assert cpu_auc.min() > 0.55  # the CPU's rows are informative: a test that can fail
    assert ari >= cpu_ari.min() - 0.1, (ari, cpu_ari)
    assert cpu_auc.min() - 0.05 <= auc <= cpu_auc.max() + 0.05, (auc, cpu_auc)
    assert model.stage_seconds_["walks"] >= 0


@pytest.mark.parametrize("change, named", [
    ({"kernel": "multi"}, "kernel='multi'"),
    ({"partitions": 2}, "partitions"),
    ({"shared_negatives": True}, "shared_negatives"),
    ({"subsample": 1e-3}, "subsample"),
    ({"keep_walks": True}, "keep_walks"),
    ({"beta_select": "uniform"}, "beta_select"),
    ({"dim": 2048}, "dim up to 1,024, got 2,048"),
])
def test_what_the_device_does_not_train_is_refused(change, named):
    from kernelne import KernelNE
    from kernelne.errors import ParamError

    with pytest.raises(ParamError, match=named) as err:
        KernelNE(device="cuda", **change).fit(_karate())
    assert "\n" not in str(err.value) and "device='cuda'" in str(err.value)


def _cli(*args, env=None, prelude=""):
    code = (prelude + "import sys\nfrom kernelne.cli.app import main\n"
            f"sys.argv = ['kernelne', *{list(args)!r}]\nsys.exit(main())\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=300)


@pytest.mark.parametrize("extra, named", [
    (["--method", "deepwalk"], "--method deepwalk"),
    (["--partitions", "2"], "--partitions"),
    (["--shared-negatives"], "--shared-negatives"),
])
def test_cli_refuses_what_the_device_does_not_train(tmp_path, capsys, extra, named):
    from cli_runs import only_error_line, run_cli

    out = tmp_path / "x.npy"
    code, err = run_cli(["embed", KARATE, "-o", out, "--device", "cuda", *extra], capsys)
    assert code == 2
    assert named in only_error_line(err) and "--device cuda" in err
    assert not out.exists()


def test_without_numba_cuda_the_cli_says_what_to_install(tmp_path):
    block = ("import sys\nclass _Block:\n    def find_spec(self, name, path=None, target=None):\n"
             "        if name.split('.')[0] == 'numba_cuda':\n"
             "            raise ImportError('blocked')\nsys.meta_path.insert(0, _Block())\n")
    out = tmp_path / "x.npy"
    done = _cli("embed", str(KARATE), "-o", str(out), "--device", "cuda", prelude=block)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        'kernelne: error: --device cuda needs numba-cuda: pip install "kernelne[cuda12]" '
        '(CUDA 12) or "kernelne[cuda13]" (CUDA 13)']
    assert not out.exists()


def test_without_a_device_the_cli_says_none_was_found(tmp_path):
    out = tmp_path / "x.npy"
    done = _cli("embed", str(KARATE), "-o", str(out), "--device", "cuda",
                "--walks-per-node", "1", env={"NUMBA_ENABLE_CUDASIM": "0"})
    if done.returncode == 0:
        pytest.skip("a CUDA device answered")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(
        "kernelne: error: --device cuda: no CUDA device was found")
    assert not out.exists()


def test_cli_embeds_on_the_simulator(tmp_path):
    out = tmp_path / "x.npy"
    done = _cli("embed", str(KARATE), "-o", str(out), "--device", "cuda", "--walks-per-node",
                "1", "--dim", "8", "--seed", "0", "--quiet",
                env={"NUMBA_ENABLE_CUDASIM": "1"})
    assert done.returncode == 0, done.stderr
    assert np.load(out).shape == (34, 8)


def test_the_device_memory_check_names_the_largest_graph():
    from kernelne.engine.cuda.trainer import check_device_memory, device_bytes
    from kernelne.errors import InputError

    class Context:
        def get_memory_info(self):
            return 10 * 2**30, 80 * 2**30

    class FakeCuda:
        def current_context(self):
            return Context()

    check_device_memory(FakeCuda(), 10**6, 128, 65536, 10, 1024, 128)  # 1 GiB: fits
    with pytest.raises(InputError, match=r"at most 10,3\d\d,\d\d\d nodes fit") as err:
        check_device_memory(FakeCuda(), 10**8, 128, 65536, 10, 1024, 128)
    assert "GiB of device memory" in str(err.value)
    largest = int(str(err.value).split("at most ")[1].split(" nodes")[0].replace(",", ""))
    assert device_bytes(largest, 128, 65536, 10, 1024, 128) <= 10 * 2**30
    assert device_bytes(largest + 1, 128, 65536, 10, 1024, 128) > 10 * 2**30


def test_a_device_model_saves_loads_and_updates_on_the_cpu(tmp_path):
    from sklearn.base import clone

    from kernelne import KernelNE, load_graph

    lines = KARATE.read_text().splitlines()
    part = tmp_path / "part.edgelist"
    part.write_text("\n".join(lines[:-12]) + "\n")
    small, graph = load_graph(str(part)), load_graph(str(KARATE))
    model = KernelNE(dim=8, walks_per_node=1, random_state=0, device="cuda").fit(small)
    assert clone(model).get_params()["device"] == "cuda"
    path = tmp_path / "m.npz"
    model.save_model(path)
    loaded = KernelNE.load_model(path)
    assert loaded.device == "cuda"
    np.testing.assert_array_equal(loaded.embedding_, model.embedding_)
    loaded.partial_fit(graph)  # on the CPU
    assert loaded.embedding_.shape == (graph.n_nodes, 8)
    assert np.isfinite(loaded.embedding_).all()


@pytest.mark.slow
def test_the_gpu_benchmark_runs_on_the_simulator():
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_gpu.py"
    done = subprocess.run(
        [sys.executable, str(script), "--nodes", "120", "--edges", "500", "--communities", "3",
         "--walks-per-node", "1", "--dim", "8", "--threads", "1", "--simulator"],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    table = done.stdout.splitlines()
    assert table[-11].split() == ["cuda", "cpu"]
    assert table[-1].startswith("Micro-F1")
