"""The CUDA engine on a CUDA device: what the simulator cannot show (``gpu`` mark, out of the
default run; ``python -m pytest -m gpu tests/engine/test_cuda_device.py`` on a machine with a
device and numba-cuda)."""

import numpy as np
import pytest

pytestmark = pytest.mark.gpu


def _device_only():
    from numba import config

    if config.ENABLE_CUDASIM:
        pytest.skip("needs a CUDA device, not the simulator")
    from kernelne.engine.cuda.available import cuda_module
    from kernelne.errors import InputError

    try:
        cuda_module()
    except InputError as err:
        pytest.skip(str(err))


def test_a_warp_on_the_device_equals_one_cpu_thread():  # pragma: no cover - a device
    """On a device: one warp of 32 lanes (real shuffles) trains karate as one CPU thread."""
    _device_only()
    from test_cuda_engine import _both, _karate, _setup

    from kernelne.engine.cuda.trainer import Launch
    from kernelne.engine.kernels import Kernel
    from kernelne.engine.trainer import TrainSettings

    walks, noise, A0 = _setup(_karate(), 2, 128)
    (A, B, pairs, _), (A2, B2, pairs2, _) = _both(
        walks, noise, A0, Kernel("gauss", 2**0.5), TrainSettings(float(walks.size), seed=3),
        Launch(32, 1, 1))
    assert pairs == pairs2
    np.testing.assert_allclose(A2, A, atol=1e-4 * np.abs(A).max(), rtol=0)
    np.testing.assert_allclose(B2, B, atol=1e-4 * np.abs(B).max(), rtol=0)


def test_the_device_refuses_a_graph_beyond_its_memory():  # pragma: no cover - a device
    _device_only()
    from numba import cuda

    from kernelne.engine.cuda.trainer import check_device_memory
    from kernelne.errors import InputError

    free = cuda.current_context().get_memory_info()[0]
    with pytest.raises(InputError, match="nodes fit"):
        check_device_memory(cuda, int(free // 512) + 10**6, 128, 65536, 10, 1024, 128)


def test_a_device_fit_frees_its_memory_after_an_interrupt():  # pragma: no cover - a device
    """On a device: a Ctrl-C during training leaves no device memory allocated."""
    _device_only()
    from numba import cuda
    from test_cuda_engine import _karate

    from kernelne import KernelNE

    free_before = cuda.current_context().get_memory_info()[0]

    def stop(pairs, A, B):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        KernelNE(device="cuda", walks_per_node=4, random_state=0).fit(_karate(), monitor=stop)
    assert cuda.current_context().get_memory_info()[0] >= free_before - 2**20
