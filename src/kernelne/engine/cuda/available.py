"""numba-cuda and a CUDA device, or the one line that says which is missing.

:func:`cuda_module` imports :mod:`numba.cuda` (numba-cuda, the extras ``kernelne[cuda12]`` and
``kernelne[cuda13]``); under ``NUMBA_ENABLE_CUDASIM=1`` numba's CUDA simulator stands in for a
device, with the warp shuffles of :mod:`kernelne.engine.cuda.simulator`.
"""

from __future__ import annotations

from types import ModuleType

from kernelne.errors import ParamError

#: the largest ``dim`` the CUDA engine trains (32 entries of a row per lane of a warp)
MAX_DIM = 1024
#: the one line when numba-cuda is not installed
INSTALL_HINT = ('{device=cuda} needs numba-cuda: pip install "kernelne[cuda12]" (CUDA 12) or '
                '"kernelne[cuda13]" (CUDA 13)')
#: the one line when no device answers
NO_DEVICE = ("{device=cuda}: no CUDA device was found (numba-cuda is installed; check the "
             "driver with nvidia-smi), or train with {device=cpu}")


def simulated() -> bool:
    """Whether numba runs CUDA kernels on its simulator (``NUMBA_ENABLE_CUDASIM=1``)."""
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def installed() -> bool:
    """Whether numba-cuda can be imported."""
    try:
        import numba_cuda  # noqa: F401
    except ImportError:
        return False
    return True


def cuda_module() -> ModuleType:
    """:mod:`numba.cuda` with a device (or the simulator) behind it.

    Returns
    -------
    module
        :mod:`numba.cuda`.

    Raises
    ------
    ParamError
        numba-cuda is not installed (:data:`INSTALL_HINT`) or no CUDA device answers
        (:data:`NO_DEVICE`).
    """
    if not installed():
        raise ParamError(INSTALL_HINT)
    try:
        from numba import cuda
    except ImportError:
        raise ParamError(INSTALL_HINT) from None
    if simulated():
        from kernelne.engine.cuda.simulator import install_shuffles

        install_shuffles()
        return cuda
    try:
        found = cuda.is_available()
    except Exception:  # a driver that fails to load says so in many ways  # noqa: BLE001
        found = False
    if not found:
        raise ParamError(NO_DEVICE)
    return cuda
