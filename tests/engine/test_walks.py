"""Random walks: they follow edges, obey weights and node2vec's p/q, and depend only on the seed."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy.stats import chi2

from kernelne.engine.walks import (
    WalkCorpus,
    cumulative_weight_windows,
    cumulative_weights,
    random_walks,
)
from kernelne.graphs.graph import Graph, from_networkx

# --- helpers ------------------------------------------------------------------------------------


def assert_walks_follow_edges(graph: Graph, walks: np.ndarray) -> None:
    adj = graph.adjacency().tocsr()
    valid = walks >= 0
    # -1 only as a suffix, and only after a node without out-neighbours
    assert np.all(valid[:, 0])
    assert np.all(valid[:, :-1] | ~valid[:, 1:]), "a walk resumed after -1"
    stops = valid[:, :-1] & ~valid[:, 1:]
    dead = walks[:, :-1][stops]
    assert np.all(graph.degrees[dead] == 0), "stopped early at a node that has neighbours"
    both = valid[:, :-1] & valid[:, 1:]
    u, v = walks[:, :-1][both], walks[:, 1:][both]
    assert len(u) > 0
    assert np.all(np.asarray(adj[u, v]).ravel() > 0), "a step that is not an edge"


def node2vec_probs(graph: Graph, t: int, v: int, p: float, q: float) -> dict[int, float]:
    """Exact node2vec transition probabilities out of ``v`` having come from ``t`` (brute force)."""
    adj = graph.adjacency().toarray()
    weights = {}
    for x in range(graph.n_nodes):
        if adj[v, x] == 0:
            continue
        if x == t:
            alpha = 1 / p
        elif adj[t, x] > 0:
            alpha = 1.0
        else:
            alpha = 1 / q
        weights[x] = alpha * adj[v, x]
    total = sum(weights.values())
    return {x: w / total for x, w in weights.items()}


def node2vec_table(graph: Graph, p: float, q: float) -> np.ndarray:
    """``table[t, v, x]`` = P(t -> v -> x | t -> v) for every edge (t, v)."""
    n = graph.n_nodes
    table = np.zeros((n, n, n))
    for t in range(n):
        for v in graph.neighbors(t):
            for x, pr in node2vec_probs(graph, t, int(v), p, q).items():
                table[t, v, x] = pr
    return table


def triple_counts(walks: np.ndarray, n: int) -> np.ndarray:
    """``counts[t, v, x]``: how often a walk went t -> v -> x."""
    t, v, x = walks[:, :-2].ravel(), walks[:, 1:-1].ravel(), walks[:, 2:].ravel()
    keep = (t >= 0) & (v >= 0) & (x >= 0)
    flat = (t[keep].astype(np.int64) * n + v[keep]) * n + x[keep]
    return np.bincount(flat, minlength=n**3).reshape(n, n, n)


def chi_square_vs_node2vec(graph, counts, p, q) -> tuple[float, int]:
    """Pooled chi-square statistic of the observed second steps against node2vec's law."""
    stat, dof = 0.0, 0
    for t in range(graph.n_nodes):
        for v in graph.neighbors(t):
            observed = counts[t, v]
            total = observed.sum()
            probs = node2vec_probs(graph, t, int(v), p, q)
            assert observed[[x for x in range(graph.n_nodes) if x not in probs]].sum() == 0
            if total == 0:
                continue
            for x, pr in probs.items():
                expected = total * pr
                stat += (observed[x] - expected) ** 2 / expected
            dof += len(probs) - 1
    return stat, dof


def weighted_kite(kite: Graph) -> Graph:
    e = kite.edges()
    w = 1.0 + (np.arange(len(e)) % 4)  # weights 1..4
    return Graph.from_edges(e[:, 0], e[:, 1], w, kite.n_nodes)


# --- walks follow edges -------------------------------------------------------------------------


@pytest.mark.parametrize(("p", "q"), [(1, 1), (0.5, 2), (4, 0.25)])
@pytest.mark.parametrize("kind", ["unweighted", "weighted", "directed"])
def test_walks_only_follow_edges(p, q, kind):
    G = nx.gnm_random_graph(60, 150, seed=3, directed=kind == "directed")
    if kind == "weighted":
        rng = np.random.default_rng(0)
        for u, v in G.edges():
            G[u][v]["weight"] = float(rng.uniform(0.1, 5))
    g = from_networkx(G)
    assert g.is_weighted == (kind == "weighted")
    walks = random_walks(g, walks_per_node=5, walk_length=12, p=p, q=q, seed=1)
    assert walks.shape == (5 * 60, 12) and walks.dtype == np.int32
    assert_walks_follow_edges(g, walks)


def test_dead_ends_and_isolated_nodes():
    d = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), n_nodes=4, directed=True)
    walks = random_walks(d, walks_per_node=3, walk_length=5, seed=0)
    by_start = {int(w[0]): w.tolist() for w in walks}
    assert by_start[0] == [0, 1, 2, -1, -1]
    assert by_start[1] == [1, 2, -1, -1, -1]
    assert by_start[2] == [2, -1, -1, -1, -1]
    assert by_start[3] == [3, -1, -1, -1, -1]  # isolated
    assert_walks_follow_edges(d, walks)
    u = Graph.from_edges(np.array([0, 1]), np.array([1, 2]), n_nodes=4)
    walks = random_walks(u, walks_per_node=4, walk_length=6, p=0.5, q=2, seed=0)
    assert np.all(walks[walks[:, 0] == 3, 1:] == -1)
    assert np.all(walks[walks[:, 0] != 3] >= 0)
    assert_walks_follow_edges(u, walks)


def test_every_node_starts_walks_per_node_walks(kite):
    walks = random_walks(kite, walks_per_node=7, walk_length=3, seed=5)
    n = kite.n_nodes
    for r in range(7):  # each round of n walks starts once from every node
        assert sorted(walks[r * n : (r + 1) * n, 0].tolist()) == list(range(n))
    assert not np.array_equal(walks[:n, 0], walks[n : 2 * n, 0])  # rounds are shuffled


def test_walk_length_one():
    g = Graph.from_edges(np.array([0]), np.array([1]))
    walks = random_walks(g, walks_per_node=3, walk_length=1, seed=0)
    assert walks.shape == (6, 1) and sorted(walks[:, 0].tolist()) == [0, 0, 0, 1, 1, 1]


def test_bad_parameters(kite):
    for kwargs in ({"walks_per_node": 0}, {"walk_length": 0}, {"p": 0}, {"q": -1}):
        with pytest.raises(ValueError):
            WalkCorpus(kite, **kwargs)


# --- transition frequencies ---------------------------------------------------------------------


def test_first_order_walks_follow_weights():
    w = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    star = Graph.from_edges(np.zeros(5, int), np.arange(1, 6), w)
    walks = random_walks(star, walks_per_node=20000, walk_length=2, seed=11)
    nxt = walks[walks[:, 0] == 0, 1]
    observed = np.bincount(nxt, minlength=6)[1:]
    expected = len(nxt) * w / w.sum()
    stat = ((observed - expected) ** 2 / expected).sum()
    assert chi2.sf(stat, df=4) > 1e-4, (observed, expected)
    uniform = np.full(5, len(nxt) / 5)  # the check has power: uniform steps are rejected
    assert chi2.sf(((observed - uniform) ** 2 / uniform).sum(), df=4) < 1e-12


@pytest.mark.parametrize(("p", "q"), [(1.0, 1.0), (0.25, 4.0), (4.0, 0.25), (0.5, 2.0)])
@pytest.mark.parametrize("weighted", [False, True])
def test_node2vec_transition_frequencies(kite, p, q, weighted):
    g = weighted_kite(kite) if weighted else kite
    walks = random_walks(g, walks_per_node=3000, walk_length=10, p=p, q=q, seed=2024)
    counts = triple_counts(walks, g.n_nodes)
    stat, dof = chi_square_vs_node2vec(g, counts, p, q)
    assert chi2.sf(stat, dof) > 1e-4, (stat, dof)
    if (p, q) != (1.0, 1.0):  # the check has power: first-order (p = q = 1) law is rejected
        stat1, dof1 = chi_square_vs_node2vec(g, counts, 1.0, 1.0)
        assert chi2.sf(stat1, dof1) < 1e-12


def _return_and_distance(graph, walks):
    """Fractions of second steps that return to t, stay at distance 1 of t, or move away."""
    t, x = walks[:, :-2].ravel(), walks[:, 2:].ravel()
    adj = graph.adjacency().tocsr()
    back = x == t
    near = ~back & (np.asarray(adj[t, x]).ravel() > 0)
    return back.mean(), near.mean(), (~back & ~near).mean()


def test_p_and_q_bias_in_the_right_direction(kite):
    kw = {"walks_per_node": 500, "walk_length": 10, "seed": 9}
    local = _return_and_distance(kite, random_walks(kite, p=0.25, q=4, **kw))
    uniform = _return_and_distance(kite, random_walks(kite, **kw))
    outward = _return_and_distance(kite, random_walks(kite, p=4, q=0.25, **kw))
    assert local[0] > uniform[0] + 0.2 > outward[0] + 0.3  # returns: BFS-like walks go back
    assert outward[2] > uniform[2] + 0.1 > local[2] + 0.2  # moving away: DFS-like walks
    # the return frequency matches the exact law, pooled over (t, v)
    for (p, q), got in (((0.25, 4), local), ((4, 0.25), outward)):
        walks = random_walks(kite, p=p, q=q, **kw)
        t, v = walks[:, :-2].ravel(), walks[:, 1:-1].ravel()
        exact = node2vec_table(kite, p, q)[t, v, t].mean()
        assert got[0] == pytest.approx(exact, abs=0.01)


# --- seeds and threads --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def medium_graph():
    return from_networkx(nx.gnm_random_graph(500, 2500, seed=1))


@pytest.mark.parametrize(("p", "q"), [(1, 1), (0.5, 2)])
def test_same_seed_same_walks_whatever_the_threads(medium_graph, p, q):
    kw = {"walks_per_node": 10, "walk_length": 10, "p": p, "q": q, "seed": 42}
    one = random_walks(medium_graph, workers=1, **kw)
    two = random_walks(medium_graph, workers=2, **kw)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(one, random_walks(medium_graph, workers=-1, **kw))
    other = random_walks(medium_graph, workers=1, **{**kw, "seed": 43})
    assert (one != other).mean() > 0.5


def test_chunking_does_not_change_the_corpus(medium_graph):
    whole = random_walks(medium_graph, walks_per_node=4, walk_length=8, p=0.5, q=2, seed=3)
    for chunk in (1, 7, 500, 1999, 10**6):
        corpus = WalkCorpus(medium_graph, 4, 8, 0.5, 2, seed=3, chunk_walks=chunk)
        firsts, parts = zip(*corpus, strict=True)
        assert list(firsts) == list(range(0, corpus.n_walks, chunk))
        assert all(len(part) <= chunk for part in parts)
        assert len(parts) == corpus.n_chunks
        np.testing.assert_array_equal(np.concatenate(parts), whole)


def test_no_seed_gives_fresh_walks(medium_graph):
    a = random_walks(medium_graph, walks_per_node=2, walk_length=10)
    b = random_walks(medium_graph, walks_per_node=2, walk_length=10)
    assert not np.array_equal(a, b)


@pytest.mark.parametrize("max_edges", [1, 7, 10_000])
def test_cumulative_weights_by_windows_are_the_whole_ones_bit_for_bit(max_edges):
    """The windows carry the running sum (a float64 of every weight before them): their
    values are the whole pass's, not each row's own sums, whatever the windows."""
    rng = np.random.default_rng(max_edges)
    g = Graph.from_edges(rng.integers(0, 300, 3000), rng.integers(0, 300, 3000),
                         weights=rng.uniform(0.1, 3.0, 3000).astype(np.float32), n_nodes=310)
    windows = list(cumulative_weight_windows(g, max_edges))
    assert (len(windows) == 1) == (max_edges >= len(g.indices))
    assert np.concatenate(windows).tobytes() == cumulative_weights(g).tobytes()
