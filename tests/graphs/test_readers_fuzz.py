"""Property-based fuzzing of every reader: a correct result or one InputError naming the file.

Never another exception type (no traceback can reach a user) and, readers being read-only,
nothing written.
"""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kernelne.embedding_io import load_embedding
from kernelne.errors import InputError
from kernelne.evaluation.classification import read_node_labels
from kernelne.evaluation.splits import LinkSplit
from kernelne.graphs.datasets import read_labels
from kernelne.graphs.graph import Graph, load_graph

ALPHABET = list("0127a -,\t\n#%._+e") + ["\ufeff", "\r\n", "x y", "9" * 20, "\x00", "é"]
texts = st.lists(st.sampled_from(ALPHABET), max_size=60).map("".join)
FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def _write(folder, name, text, gz):
    path = folder / name
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def _check(call, path):
    """Run ``call``; return its result, or None after checking the InputError names path."""
    before = sorted(p.name for p in path.parent.iterdir())
    try:
        result = call()
    except InputError as exc:
        assert path.name in str(exc), str(exc)
        result = None
    assert sorted(p.name for p in path.parent.iterdir()) == before  # nothing written
    return result


def _valid_graph(g: Graph) -> None:
    assert g.indptr[0] == 0 and g.indptr[-1] == len(g.indices) == (
        g.n_edges * (1 if g.directed else 2))
    assert len(g.nodes) == g.n_nodes
    if len(g.indices):
        assert 0 <= g.indices.min() and g.indices.max() < g.n_nodes


@FUZZ
@given(texts, st.booleans(), st.booleans())
def test_edge_list_reader(tmp_path_factory, text, gz, header):
    path = _write(tmp_path_factory.mktemp("e"), "g.txt", text, gz)
    g = _check(lambda: load_graph(path, header=header), path)
    if g is not None:
        _valid_graph(g)


@FUZZ
@given(texts, st.booleans())
def test_label_readers(tmp_path_factory, text, gz):
    path = _write(tmp_path_factory.mktemp("l"), "labels.txt", text, gz)
    got = _check(lambda: read_node_labels(path), path)
    if got is not None:
        nodes, Y = got
        assert Y.shape[0] == len(nodes)
    _check(lambda: read_labels(path, n_nodes=30), path)


@FUZZ
@given(texts)
def test_embedding_reader(tmp_path_factory, text):
    path = _write(tmp_path_factory.mktemp("m"), "emb.txt", text, False)
    got = _check(lambda: load_embedding(path), path)
    if got is not None:
        vectors, nodes = got
        assert vectors.ndim == 2 and len(nodes) == len(vectors)


@FUZZ
@given(st.binary(max_size=200), st.sampled_from(["emb.npy", "graph.npz"]))
@example(b"PK\x03\x04", "emb.npy")  # a zip's magic under a .npy name: numpy opens a zip
def test_binary_readers(tmp_path_factory, data, name):
    path = tmp_path_factory.mktemp("b") / name
    path.write_bytes(data)
    reader = load_embedding if name.endswith(".npy") else load_graph
    _check(lambda: reader(path), path)


def test_an_npz_archive_named_npy_is_refused_in_one_line(tmp_path):
    path = tmp_path / "emb.npy"
    with open(path, "wb") as fh:
        np.savez(fh, vectors=np.ones((3, 2)))
    with pytest.raises(InputError, match="not a .npy array file"):
        load_embedding(path)


@FUZZ
@given(texts, st.binary(max_size=200))
def test_split_folder_reader(tmp_path_factory, meta, arrays):
    folder = tmp_path_factory.mktemp("s")
    (folder / "split.json").write_text(meta)
    (folder / "split.npz").write_bytes(arrays)
    try:
        LinkSplit.load(folder)
    except InputError as exc:
        assert "split" in str(exc)


@FUZZ
@given(st.sampled_from(["dense", "sparse", "text", "ragged", "cube", "negative"]),
       st.integers(0, 6), st.sampled_from(["network", "other"]))
def test_mat_reader(tmp_path_factory, kind, n, key):
    rng = np.random.default_rng(n)
    value = {
        "dense": rng.integers(0, 2, (n, n)).astype(float),
        "sparse": sp.random(max(n, 1), max(n, 1), density=0.5, random_state=n, format="csc"),
        "text": np.array(["abc"]),
        "ragged": rng.random((n, n + 1)),
        "cube": rng.random((2, 2, 2)),
        "negative": -np.ones((max(n, 1), max(n, 1))),
    }[kind]
    path = tmp_path_factory.mktemp("mat") / "g.mat"
    scipy.io.savemat(path, {key: value})
    g = _check(lambda: load_graph(path), path)
    if g is not None:
        _valid_graph(g)


def test_fuzz_json_metadata_is_named(tmp_path):
    (tmp_path / "split.json").write_text(json.dumps({"seed": "x"}))
    (tmp_path / "split.npz").write_bytes(b"")
    with pytest.raises(InputError, match="split"):
        LinkSplit.load(tmp_path)
