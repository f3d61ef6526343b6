"""The KernelNE paper's baselines (docs/METHOD.md §13) behind one estimator interface.

Every method is a scikit-learn-style estimator like :class:`kernelne.KernelNE`: parameters in
the constructor (``dim=128``, ``workers``, ``random_state`` plus its own), ``fit(graph)`` with
anything :func:`kernelne.graphs.graph.load_graph` accepts, then ``embedding_`` (n x dim float32, row
``i`` = dense node ``i``), ``nodes_`` and ``fit_seconds_``.

- ``deepwalk``: :class:`DeepWalk` (Perozzi et al., KDD 2014)
- ``node2vec``: :class:`Node2Vec` (Grover & Leskovec, KDD 2016)
- ``line``: :class:`LINE`, LINE(1st+2nd) (Tang et al., WWW 2015)
- ``hope``: :class:`HOPE` with Katz proximity (Ou et al., KDD 2016)
- ``netmf``: :class:`NetMF` (Qiu et al., WSDM 2018)
- ``prone``: :class:`ProNE` (Zhang et al., IJCAI 2019)

Every method takes ``propagate``: ProNE's spectral propagation of the fitted rows
(:mod:`kernelne.engine.propagation`), off by default except in ProNE itself.
"""

from __future__ import annotations

from typing import Any

from kernelne.baselines._base import BaselineEmbedding
from kernelne.baselines.hope import HOPE
from kernelne.baselines.line import LINE
from kernelne.baselines.netmf import NetMF
from kernelne.baselines.prone import ProNE
from kernelne.baselines.skipgram import DeepWalk, Node2Vec

METHODS: dict[str, type[BaselineEmbedding]] = {
    "deepwalk": DeepWalk,
    "node2vec": Node2Vec,
    "line": LINE,
    "hope": HOPE,
    "netmf": NetMF,
    "prone": ProNE,
}


def method_params(name: str) -> list[str]:
    """The constructor parameters of a baseline.

    Parameters
    ----------
    name : str
        A key of :data:`METHODS` (case-insensitive): ``deepwalk``, ``node2vec``, ``line``,
        ``hope``, ``netmf`` or ``prone``.

    Returns
    -------
    list of str
        The parameter names, sorted.

    Raises
    ------
    ValueError
        An unknown method (the message lists the known ones).
    """
    return sorted(_lookup(name)._get_param_names())


def make_method(name: str, ignore_unknown: bool = False, **params: Any) -> BaselineEmbedding:
    """Build baseline ``name`` with ``params``.

    Parameters
    ----------
    name : str
        A key of :data:`METHODS` (case-insensitive): ``deepwalk``, ``node2vec``, ``line``,
        ``hope``, ``netmf`` or ``prone``.
    ignore_unknown : bool, default False
        Drop a parameter the method does not take (e.g. ``walk_length`` passed to ``hope``)
        instead of raising.
    **params
        Constructor parameters. Those whose value is ``None`` are dropped, so the method's own
        default applies (handy for a CLI whose unset options are ``None``).

    Returns
    -------
    BaselineEmbedding
        The unfitted estimator.

    Raises
    ------
    ValueError
        An unknown method, or (without ``ignore_unknown``) a parameter the method does not
        take; the message names the accepted ones.

    Examples
    --------
    >>> from kernelne.baselines import make_method
    >>> make_method("DeepWalk", dim=64, walk_length=None)
    DeepWalk(dim=64)
    >>> make_method("hope", dim=64, walk_length=40, ignore_unknown=True)
    HOPE(dim=64)
    """
    cls = _lookup(name)
    accepted = set(cls._get_param_names())
    given = {k: v for k, v in params.items() if v is not None}
    unknown = sorted(set(given) - accepted)
    if unknown and not ignore_unknown:
        raise ValueError(
            f"{name} does not take {', '.join(unknown)} (it takes: {', '.join(sorted(accepted))})"
        )
    return cls(**{k: v for k, v in given.items() if k in accepted})


def _lookup(name: str) -> type[BaselineEmbedding]:
    try:
        return METHODS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown method {name!r} (use one of: {', '.join(METHODS)})") from None


__all__ = [
    "METHODS", "make_method", "method_params", "BaselineEmbedding",
    "DeepWalk", "Node2Vec", "LINE", "HOPE", "NetMF", "ProNE",
]
