"""What a fit on the CUDA engine (``device="cuda"``) cannot train, refused in one line.

The CUDA engine (:mod:`kernelne.engine.cuda`) trains one kernel with either loss, a shrinking
window and the negative pool. :func:`refuse_on_device` raises for the rest instead of running
it on the CPU.
"""

from __future__ import annotations

from typing import Any

from kernelne.engine.cuda.available import MAX_DIM
from kernelne.errors import ParamError

_TAIL = ": the CUDA engine does not train it; leave it out or use {device=cpu}"


def refuse_on_device(model: Any) -> None:
    """Raise for the first setting of ``model`` the CUDA engine does not train.

    Parameters
    ----------
    model : KernelNE
        An estimator with ``device="cuda"``.

    Raises
    ------
    ParamError
        ``kernel="multi"`` (MKernelNE's weight step), ``beta_select`` other than
        ``"train"``, ``partitions > 1``, ``shared_negatives``, ``subsample > 0`` or
        ``keep_walks``, or ``dim`` above :data:`~kernelne.engine.cuda.available.MAX_DIM`,
        named in the message.
    """
    if str(model.kernel).lower() in ("multi", "multiple"):
        raise ParamError("{device=cuda} trains one kernel; MKernelNE's weight step "
                         "({kernel=multi}) runs on the CPU only: use {device=cpu}")
    if not (isinstance(model.beta_select, str) and model.beta_select == "train"):
        raise ParamError("{device=cuda} with {beta_select}" + _TAIL)
    checks = (
        (int(model.partitions) > 1, "{device=cuda} with {partitions} > 1"),
        (bool(model.shared_negatives), "{device=cuda} with {shared_negatives}"),
        (float(model.subsample) > 0, "{device=cuda} with {subsample} > 0"),
        (bool(model.keep_walks), "{device=cuda} with {keep_walks}"),
    )
    if int(model.dim) > MAX_DIM:
        raise ParamError(f"{{device=cuda}} trains {{dim}} up to {MAX_DIM:,}, got "
                         f"{int(model.dim):,}: lower it or use {{device=cpu}}")
    for refused, text in checks:
        if refused:
            raise ParamError(text + _TAIL)
