"""The kernels of KernelNE and their dictionaries (docs/METHOD.md §3-§4).

With ``s = ||x - y||^2``:

* Gaussian   ``k_G(x, y) = exp(-s / sigma^2)``, the paper's form (GlobalSIP 2019, eq. 5).
  The authors' C++ code writes ``exp(-s / (2 sigma_code^2))``, so ``sigma_code = sigma / sqrt(2)``;
  the paper's "sigma^2 = 2" is ``sigma = sqrt(2)`` here and ``sigma_code = 1`` there.
* Schoenberg ``k_S(x, y) = (1 + s)^(-alpha)``, ``alpha > 0`` (eq. 6).
* Linear     ``<x, y>``: no kernel, the "NE" ablation (statistic: the inner product).

A dictionary ``k = sum_j beta_j k_j`` combines distance kernels (MKernelNE, TKDE 2022); a
single kernel is the dictionary of one with ``beta = 1``. In the numba code a dictionary is
three arrays: ``kinds`` (int), ``params`` (float32: ``1/sigma^2`` or ``alpha``) and ``beta``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

GAUSS, SCHOENBERG, LINEAR = 0, 1, 2
_NAMES = {
    "gauss": GAUSS, "gaussian": GAUSS,
    "sch": SCHOENBERG, "schoenberg": SCHOENBERG,
    "linear": LINEAR, "ne": LINEAR, "nokernel": LINEAR,
}
_ONE = np.float32(1.0)


@dataclass(frozen=True)
class Kernel:
    """One kernel: its kind and its parameter.

    Calling it gives the kernel values of the rows of two arrays (NumPy reference
    implementation); ``str(kernel)`` is its spec (``"gauss:1.5"``, ``"sch:2"``, ``"linear"``).

    Parameters
    ----------
    kind : {"gauss", "schoenberg", "linear"}
        Gaussian ``exp(-||x-y||^2 / sigma^2)``, Schoenberg ``(1 + ||x-y||^2)^(-alpha)`` or the
        inner product.
    param : float, default 0.0
        ``sigma`` of the Gaussian or ``alpha`` of the Schoenberg kernel (positive and finite);
        unused by the linear kernel.

    Raises
    ------
    ValueError
        An unknown kind, or a parameter that is not positive and finite.

    Examples
    --------
    >>> from kernelne.engine.kernels import Kernel
    >>> k = Kernel("gauss", 2.0)
    >>> float(k([0.0, 0.0], [2.0, 0.0]))  # exp(-4 / 4)
    0.36787944117144233
    """

    kind: str
    param: float = 0.0

    def __post_init__(self):
        if self.kind not in ("gauss", "schoenberg", "linear"):
            raise ValueError(f"unknown kernel {self.kind!r}")
        if self.kind != "linear" and not (self.param > 0 and math.isfinite(self.param)):
            name = "sigma" if self.kind == "gauss" else "alpha"
            raise ValueError(f"{self.kind} kernel needs {name} > 0, got {self.param}")

    @property
    def code(self) -> int:
        """The kind's integer code in the numba trainer (0 Gaussian, 1 Schoenberg, 2 linear)."""
        return _NAMES[self.kind]

    @property
    def numba_param(self) -> float:
        """``1/sigma^2`` for the Gaussian, ``alpha`` for the Schoenberg kernel, 0 for linear."""
        return 1.0 / self.param**2 if self.kind == "gauss" else self.param

    def narrowed(self, rho: float) -> Kernel:
        """The kernel of ``rho ||x - y||^2``.

        Parameters
        ----------
        rho : float
            The scale of the squared distance.

        Returns
        -------
        Kernel
            A Gaussian of width ``sigma / sqrt(rho)``, or this kernel itself when ``rho = 1``
            (linear and Schoenberg kernels have no such form: a narrowed Schoenberg kernel is
            reported by its scale, ``KernelNE.kernel_scale_``).
        """
        if rho == 1.0 or self.kind != "gauss":
            return self
        return Kernel("gauss", self.param / math.sqrt(rho))

    def __str__(self) -> str:
        short = {"gauss": "gauss", "schoenberg": "sch", "linear": "linear"}[self.kind]
        return short if self.kind == "linear" else f"{short}:{self.param:g}"

    def __call__(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Kernel values of the rows of ``x`` and ``y`` (NumPy reference implementation).

        Parameters
        ----------
        x, y : array-like of shape (..., d)
            Vectors, compared row by row (broadcast).

        Returns
        -------
        ndarray of shape (...)
            ``k(x, y)`` of each row pair, float64.
        """
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if self.kind == "linear":
            return np.sum(x * y, axis=-1)
        s = np.sum((x - y) ** 2, axis=-1)
        if self.kind == "gauss":
            return np.exp(-s / self.param**2)
        return (1.0 + s) ** (-self.param)


def parse_kernel(text: str) -> Kernel:
    """Parse a kernel spec.

    Parameters
    ----------
    text : str
        ``"gauss:SIGMA"`` (``gaussian`` too; sigma in the paper's form), ``"sch:ALPHA"``
        (``schoenberg`` too) or ``"linear"`` (``ne``, ``nokernel``), e.g. ``"gauss:1.5"``.

    Returns
    -------
    Kernel
        The kernel.

    Raises
    ------
    ValueError
        An unknown name, or no positive number after ``:``.

    Examples
    --------
    >>> from kernelne.engine.kernels import parse_kernel
    >>> parse_kernel("sch:2")
    Kernel(kind='schoenberg', param=2.0)
    """
    name, _, value = text.strip().partition(":")
    code = _NAMES.get(name.lower())
    if code is None:
        raise ValueError(f"unknown kernel {name!r} (use gauss:SIGMA, sch:ALPHA or linear)")
    kind = ("gauss", "schoenberg", "linear")[code]
    if kind == "linear":
        return Kernel("linear")
    try:
        return Kernel(kind, float(value))
    except ValueError:
        raise ValueError(f"kernel {text!r} needs a positive number after ':'") from None


def dictionary_arrays(kernels: list[Kernel]) -> tuple[np.ndarray, np.ndarray]:
    """``(kinds, params)`` arrays of a kernel dictionary, for the numba trainer.

    Parameters
    ----------
    kernels : list of Kernel
        The dictionary: at least one kernel; the linear kernel only alone.

    Returns
    -------
    kinds : ndarray of int64
        Each kernel's code (0 Gaussian, 1 Schoenberg, 2 linear).
    params : ndarray of float32
        ``1/sigma^2`` for a Gaussian, ``alpha`` for a Schoenberg kernel, 0 for linear.

    Raises
    ------
    ValueError
        An empty dictionary, or the linear kernel combined with distance kernels.
    """
    if not kernels:
        raise ValueError("a kernel dictionary needs at least one kernel")
    if len(kernels) > 1 and any(k.kind == "linear" for k in kernels):
        raise ValueError("the linear kernel cannot be combined with distance kernels")
    kinds = np.array([k.code for k in kernels], dtype=np.int64)
    params = np.array([k.numba_param for k in kernels], dtype=np.float32)
    return kinds, params


@njit(inline="always", fastmath=True)
def kernel_value(kind, param, s):
    """``(k(s), dk/ds)`` of one kernel at statistic ``s`` (float32 in, float32 out).

    Gaussian: ``k = exp(-c s)``, ``dk/ds = -c k`` with ``c = 1/sigma^2``.
    Schoenberg: ``k = (1 + s)^(-alpha)``, ``dk/ds = -alpha k / (1 + s)``.
    Linear: ``k = s`` (``s`` is the inner product), ``dk/ds = 1``.
    """
    if kind == GAUSS:
        k = math.exp(-param * s)
        return k, -param * k
    if kind == SCHOENBERG:
        inv = _ONE / (_ONE + s)
        k = math.exp(param * math.log(inv))
        return k, -param * k * inv
    return s, _ONE
