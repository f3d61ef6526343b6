"""The kernel methods of :class:`~kernelne.model.kernelne.KernelNE`: the dictionary a model
combines, whether its weights start on the simplex, and the fitted kernels with the kernel
scale applied."""

from __future__ import annotations

from kernelne.engine.kernels import Kernel, parse_kernel
from kernelne.model.auto_setting import resolved

# The learned weights go winner-take-all (see KernelNE): a narrow kernel fits the squared loss
# fastest and takes the weight, so the dictionary holds none narrower than a good single one.
# Measured winners on Cora: gauss:1.41421 here; gauss:0.5 over gauss:1-2 and sch:0.5-2 (Micro-F1
# at 50% 0.79 instead of 0.83); sch:2 over gauss:1.41421-3 and sch:1 (0.81).
#: MKernelNE's kernel dictionary when ``kernels`` is not given
DEFAULT_DICTIONARY = ("gauss:1.41421", "gauss:2", "gauss:3", "sch:0.5", "sch:1")


class KernelMethods:
    """The kernel methods :class:`~kernelne.model.kernelne.KernelNE` inherits (they read its
    ``kernel``, ``sigma``, ``alpha``, ``kernels``, ``beta_update`` and ``loss``)."""

    def kernel_dictionary(self) -> list[Kernel]:
        """The kernels this model combines (one, unless ``kernel="multi"``).

        Returns
        -------
        list of Kernel
            ``kernels`` parsed (or :data:`DEFAULT_DICTIONARY`) for ``kernel="multi"``, else
            the one kernel ``kernel`` names with its ``sigma`` or ``alpha`` (``"auto"``: the
            Gaussian of width ``sqrt(2)`` a fit starts with).

        Raises
        ------
        ValueError
            If ``kernel`` is not gauss, schoenberg, linear or multi.

        Examples
        --------
        >>> from kernelne import KernelNE
        >>> KernelNE(kernel="schoenberg", alpha=2.0).kernel_dictionary()
        [Kernel(kind='schoenberg', param=2.0)]
        >>> len(KernelNE(kernel="multi").kernel_dictionary())
        5
        """
        start = resolved(self)  # "auto": the paper's kernel (the dense setting: another)
        name, sigma = start.kernel.lower(), start.sigma
        if name in ("multi", "multiple"):
            specs = self.kernels if self.kernels is not None else DEFAULT_DICTIONARY
            if isinstance(specs, str):
                specs = specs.split(",")
            return [parse_kernel(s) if isinstance(s, str) else s for s in specs]
        if name in ("gauss", "gaussian"):
            return [Kernel("gauss", float(sigma))]
        if name in ("sch", "schoenberg"):
            return [Kernel("schoenberg", float(self.alpha))]
        if name in ("linear", "ne", "nokernel"):
            return [Kernel("linear")]
        raise ValueError(
            f"unknown kernel {self.kernel!r} (use gauss, schoenberg, linear or multi)"
        )

    def simplex_weights(self) -> bool:
        """Whether MKernelNE's weights start on the simplex step.

        Returns
        -------
        bool
            True with ``beta_update="simplex"`` or the log-likelihood loss (:doc:`METHOD </METHOD>`
            §4).

        Examples
        --------
        >>> from kernelne import KernelNE
        >>> KernelNE().simplex_weights(), KernelNE(loss="loglik").simplex_weights()
        (False, True)
        """
        return self.beta_update == "simplex" or self.loss == "loglik"

    def effective_kernels(self) -> list[Kernel]:
        """The fitted kernels with the kernel scale applied (the user's, unless narrowed).

        Returns
        -------
        list of Kernel
            ``kernels_`` narrowed by ``kernel_scale_``.

        Raises
        ------
        AttributeError
            If the model is not fitted (no ``kernels_``).

        Examples
        --------
        >>> from kernelne import KernelNE, load_dataset
        >>> model = KernelNE(dim=8, walks_per_node=5, workers=1, random_state=0)
        >>> model.fit(load_dataset("karate").graph).effective_kernels()
        [Kernel(kind='gauss', param=1.414...)]
        """
        return self.effective_kernels_of(self.kernels_, self.kernel_scale_)

    @staticmethod
    def effective_kernels_of(kernels: list[Kernel], rho: float) -> list[Kernel]:
        """The kernels of ``rho ||x - y||^2``: each of ``kernels`` narrowed by ``rho``.

        Parameters
        ----------
        kernels : list of Kernel
            A kernel dictionary.
        rho : float
            The scale of the squared distance (1: the kernels themselves).

        Returns
        -------
        list of Kernel
            :meth:`Kernel.narrowed <kernelne.engine.kernels.Kernel.narrowed>` of each kernel.

        Examples
        --------
        >>> from kernelne import KernelNE
        >>> KernelNE.effective_kernels_of(KernelNE().kernel_dictionary(), 2.0)
        [Kernel(kind='gauss', param=1.0)]
        """
        return [k.narrowed(rho) for k in kernels]


__all__ = ["DEFAULT_DICTIONARY", "KernelMethods"]
