"""Degree-corrected planted-partition graphs with labels, for tests, benchmarks and scale runs.

:func:`planted_partition_sbm` draws the graph from its arguments and seed alone (the same
arguments and seed give the same graph): node weights follow a power law (Pareto with shape
1.5, so a degree exponent of 2.5, minimum 2, capped at ``10 sqrt(n)``), communities are drawn
uniformly, and each of ``1.15 m`` edge draws takes its first end by weight; its second end is,
with probability ``mu``, drawn by weight from the whole graph, else from the first end's
community. Self-loops and duplicates are dropped and at most ``m`` distinct edges kept (so
slightly fewer than ``m`` may result).

From the command line::

    kernelne generate 10000 330000 40 0.6 -o dense --seed 1   # dense.edges, dense.labels
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from kernelne.errors import InputError


def planted_partition_sbm(
    n: int, m: int, k: int, mu: float, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A degree-corrected planted-partition graph with its communities.

    Node weights follow a power law (Pareto with shape 1.5, so a degree exponent of 2.5,
    minimum 2, capped at ``10 sqrt(n)``), communities are drawn uniformly, and each of
    ``1.15 m`` edge draws takes its first end by weight; its second end is, with probability
    ``mu``, drawn by weight from the whole graph, else from the first end's community.
    Self-loops and duplicates are dropped and at most ``m`` distinct edges kept.

    Parameters
    ----------
    n : int
        Nodes (at least 2).
    m : int
        Edges, at most (slightly fewer may result); at least 1.
    k : int
        Communities (at least 1).
    mu : float
        The share in ``[0, 1]`` of edge ends drawn from the whole graph (mixing).
    seed : int, default 0
        Seed: the same arguments and seed give the same graph.

    Returns
    -------
    edges : ndarray of shape (E, 2), int64
        Undirected edges ``u < v`` on nodes ``0..n-1``, no loops or duplicates, shuffled.
    communities : ndarray of shape (n,)
        Each node's community in ``0..k-1``.

    Raises
    ------
    InputError
        ``n < 2``, ``m < 1``, ``k < 1`` or ``mu`` outside ``[0, 1]``.

    Examples
    --------
    >>> from kernelne.generators import planted_partition_sbm
    >>> edges, communities = planted_partition_sbm(300, 1500, 4, 0.3, seed=1)
    >>> edges.shape[1], communities.shape, int(communities.max()) <= 3
    (2, (300,), True)
    """
    if n < 2 or m < 1 or k < 1:
        raise InputError(f"need n >= 2, m >= 1 and k >= 1, got n={n}, m={m}, k={k}")
    if k > n:
        raise InputError(f"k={k} communities for n={n} nodes: need k <= n (a community "
                         "needs a node)")
    if not 0 <= mu <= 1:
        raise InputError(f"mu must lie in [0, 1], got {mu}")
    rng = np.random.default_rng(seed)
    theta = (rng.pareto(1.5, n) + 1.0) * 2.0
    theta = np.minimum(theta, np.sqrt(n) * 10)
    comm = rng.integers(0, k, n)
    order = np.argsort(comm, kind="stable")
    starts = np.searchsorted(comm[order], np.arange(k + 1))
    cum = np.cumsum(theta[order])  # cumulative weights over the community-sorted node order
    draws = int(m * 1.15)
    p_all = theta / theta.sum()
    u = rng.choice(n, size=draws, p=p_all)
    v = np.empty(draws, np.int64)
    inter = rng.random(draws) < mu
    v[inter] = rng.choice(n, size=int(inter.sum()), p=p_all)
    intra = np.flatnonzero(~inter)
    cu = comm[u[intra]]
    lo = np.where(starts[cu] > 0, cum[starts[cu] - 1], 0.0)
    hi = cum[starts[cu + 1] - 1]
    r = lo + rng.random(len(intra)) * (hi - lo)
    v[intra] = order[np.minimum(np.searchsorted(cum, r), n - 1)]
    a, b = np.minimum(u, v), np.maximum(u, v)
    keep = a != b
    key = np.unique(a[keep] * n + b[keep])[:m]
    rng.shuffle(key)
    return np.column_stack([key // n, key % n]), comm


def write_planted_partition(prefix: str | Path, n: int, m: int, k: int, mu: float,
                            seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Write a :func:`planted_partition_sbm` graph and its communities to two text files.

    ``PREFIX.edges`` holds ``u v`` per line and ``PREFIX.labels`` ``node community``; both are
    written atomically. A node the draws left without an edge is in neither file: the labels
    name exactly the nodes of the edge list, so the pair is a valid input of ``kernelne tune``
    and ``kernelne evaluate classify``.

    Parameters
    ----------
    prefix : str or Path
        The output prefix.
    n, m, k, mu, seed
        As :func:`planted_partition_sbm`.

    Returns
    -------
    edges, communities : ndarray
        The graph's edges and each node's community, as :func:`planted_partition_sbm`.
    """
    from kernelne.embedding_io import atomic_path

    edges, comm = planted_partition_sbm(n, m, k, mu, seed)
    linked = np.flatnonzero(np.bincount(edges.ravel(), minlength=n) > 0)
    prefix = str(prefix)
    with atomic_path(prefix + ".edges") as tmp:
        np.savetxt(tmp, edges, fmt="%d %d")
    with atomic_path(prefix + ".labels") as tmp:
        np.savetxt(tmp, np.column_stack([linked, comm[linked]]), fmt="%d %d")
    return edges, comm


def cmd_generate(args: argparse.Namespace) -> int:
    from kernelne.cli_grammar import output_or_positional

    prefix = output_or_positional(args, "kernelne generate N M K MU", "PREFIX")
    if args.k > args.n:
        raise InputError(f"K={args.k} communities for N={args.n} nodes: K must be at most N "
                         "(a community needs a node)")
    start = time.perf_counter()
    edges, comm = write_planted_partition(prefix, args.n, args.m, args.k, args.mu, args.seed)
    deg = np.bincount(edges.ravel(), minlength=args.n)
    isolated = int((deg == 0).sum())
    present = len(np.unique(comm[deg > 0]))
    print(f"{args.n:,} nodes ({isolated:,} isolated), {len(edges):,} edges, {args.k} "
          "communities" + (f" ({present} with a linked node)" if present < args.k else "")
          + f", max degree {deg.max()}, {time.perf_counter() - start:.1f} s")
    print(f"wrote {prefix}.edges and {prefix}.labels"
          + (f" ({isolated:,} isolated node(s) left out of both: no edge)" if isolated else ""))
    return 0


def register(subparsers) -> None:
    """Add ``generate`` to the ``kernelne`` CLI."""
    from kernelne.cli_grammar import add_command, seed_value

    p = add_command(
        subparsers, "generate", help="write a labelled degree-corrected planted-partition graph",
        description="Write PREFIX.edges ('u v' per line, ids 0..N-1, u < v) and PREFIX.labels "
        "('node community') of a degree-corrected planted partition: power-law degrees "
        "(exponent 2.5, min 2), K communities, a share MU of edge ends drawn from the whole "
        "graph. About M distinct edges (duplicates dropped). A node left without an edge is in "
        "neither file.",
        example="kernelne generate 300 1500 4 0.3 -o sbm300 --seed 0")
    p.add_argument("n", type=int, metavar="N", help="nodes")
    p.add_argument("m", type=int, metavar="M", help="edges (at most)")
    p.add_argument("k", type=int, metavar="K", help="communities")
    p.add_argument("mu", type=float, metavar="MU", help="mixing: share of edges drawn globally")
    p.add_argument("legacy_output", nargs="?", default=None, help=argparse.SUPPRESS)
    p.add_argument("-o", "--output", default=None, metavar="PREFIX",
                   help="output prefix: writes PREFIX.edges and PREFIX.labels (required)")
    p.add_argument("--seed", type=seed_value, default=0, metavar="N", help="random seed")
    p.set_defaults(func=cmd_generate)
