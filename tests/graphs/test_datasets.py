"""The paper's seven networks shipped in the package: checksums, loading, the override by
$KERNELNE_DATA and ``kernelne datasets``."""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from kernelne.cli.app import main
from kernelne.errors import InputError
from kernelne.graphs.datasets import (
    find_data_dir,
    load_dataset,
    load_manifest,
    load_single_labels,
    packaged_data_dir,
)

SEVEN = {"citeseer", "cora", "dblp", "astroph", "hepth", "facebook", "gnutella"}
SHIPPED = SEVEN | {"karate"}  # the paper's seven and the examples' karate club


@pytest.fixture
def no_env(monkeypatch):
    monkeypatch.delenv("KERNELNE_DATA", raising=False)


def test_packaged_files_match_the_manifest(no_env):
    folder = packaged_data_dir()
    manifest = load_manifest()
    assert set(manifest) == SHIPPED
    listed = {"MANIFEST.json", "README.md"}
    for info in manifest.values():
        assert info["source"]["url"].startswith("https://") and info["transformation"]
        for file, meta in info["files"].items():
            data = (folder / file).read_bytes()
            assert len(data) == meta["bytes"], file
            assert hashlib.sha256(data).hexdigest() == meta["sha256"], file
            listed.add(file)
    shipped = {p.name for p in folder.iterdir() if not p.name.startswith(("_", "."))}
    assert shipped == listed  # nothing unlisted, nothing missing
    assert sum((folder / f).stat().st_size for f in listed) < 2_000_000


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_each_network_loads_with_the_manifest_statistics(no_env, name):
    ds = load_dataset(name)
    info = ds.info
    assert (ds.graph.n_nodes, ds.graph.n_edges) == (info["nodes"], info["edges"])
    if info.get("labels"):
        assert ds.labels.shape == (info["nodes"], info["labels"])
        assert ds.labels.sum() == info["label_lines"]
    else:
        assert ds.labels is None


def test_dblp_single_labels(no_env):
    single = load_single_labels("dblp")
    assert single.shape == (27199, 4) and (single.sum(axis=1) == 1).all()


def test_environment_variable_overrides(tmp_path, monkeypatch):
    with gzip.open(tmp_path / "tiny.edges.gz", "wt") as fh:
        fh.write("0 1\n1 2\n")
    (tmp_path / "MANIFEST.json").write_text(json.dumps({"tiny": {"nodes": 4, "edges": 2}}))
    monkeypatch.setenv("KERNELNE_DATA", str(tmp_path))
    assert find_data_dir() == tmp_path
    assert load_dataset("tiny").graph.n_nodes == 4  # the manifest's count: node 3 isolated
    with pytest.raises(InputError, match="unknown dataset 'cora'"):
        load_dataset("cora")
    assert find_data_dir(packaged_data_dir()) == packaged_data_dir()  # --data-dir wins


def test_cli_datasets(no_env, capsys, tmp_path, monkeypatch):
    assert main(["datasets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["name", "nodes", "edges", "labels", "components"]
    rows = {line.split()[0]: line.split() for line in lines[1:9]}
    assert set(rows) == SHIPPED
    assert rows["cora"][1:5] == ["2,708", "5,278", "7", "78"]
    assert rows["dblp"][1:6] == ["27,199", "66,832", "4", "(multi)", "2,115"]
    assert rows["facebook"][1:5] == ["4,039", "88,234", "-", "1"]
    assert "citeseer.mat (GTmac/HARP)" in " ".join(rows["citeseer"])
    assert rows["karate"][1:5] == ["34", "78", "2", "1"]
    assert lines[9].startswith(f"folder: {packaged_data_dir()}")
    assert main(["datasets", "--path"]) == 0
    assert capsys.readouterr().out.strip() == str(packaged_data_dir())
    monkeypatch.setenv("KERNELNE_DATA", str(tmp_path))
    assert main(["datasets"]) == 2
    assert "not a data folder" in capsys.readouterr().err


def test_karate_is_the_examples_graph(no_env, capsys, tmp_path, monkeypatch):
    """``datasets --copy karate`` writes the edge list and labels every example reads."""
    import networkx as nx

    from kernelne.graphs.datasets import copy_dataset, dataset_file

    karate = load_dataset("karate")
    club = {"Mr. Hi": 0, "Officer": 1}
    reference = nx.karate_club_graph()
    assert {tuple(e) for e in karate.graph.edges().tolist()} == {
        tuple(sorted(e)) for e in reference.edges()}
    assert karate.labels.toarray().argmax(axis=1).tolist() == [
        club[reference.nodes[n]["club"]] for n in range(34)]
    monkeypatch.chdir(tmp_path)
    assert main(["datasets", "--copy", "karate"]) == 0
    assert capsys.readouterr().out.split() == ["wrote", "karate.edgelist", "wrote",
                                               "karate.labels"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["karate.edgelist", "karate.labels"]
    edges = (tmp_path / "karate.edgelist").read_text().splitlines()
    assert len(edges) == 78 and edges[0] == "0 1"
    assert len((tmp_path / "karate.labels").read_text().splitlines()) == 34
    assert main(["datasets", "--path", "karate"]) == 0
    assert capsys.readouterr().out.strip() == str(dataset_file("karate"))
    assert dataset_file("karate", kind="labels").name == "karate.labels.gz"
    assert main(["datasets", "--copy", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown dataset 'nope'" in err
    assert main(["datasets", "--path", "hepth"]) == 0  # unlabelled: --copy writes edges only
    assert copy_dataset("hepth", tmp_path) == [tmp_path / "hepth.edgelist"]
    with pytest.raises(InputError, match="no labels file"):
        dataset_file("hepth", kind="labels")
    with pytest.raises(InputError, match="not a folder"):
        copy_dataset("karate", tmp_path / "missing")


def test_source_tree_does_not_point_into_shared():
    """The package reads only its own copy: no path into a folder beside the repository."""
    import kernelne

    root = packaged_data_dir().parent
    assert root == type(root)(kernelne.__file__).parent
    for path in root.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for needle in ("shared/datasets", "shared/tools", '"shared"'):
            assert needle not in text, f"{path.name} mentions {needle}"


def _datasets_error(capsys, *args: str) -> str:
    capsys.readouterr()
    assert main(["datasets", *map(str, args)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_copy_writes_both_files_or_neither(no_env, tmp_path, capsys):
    out = tmp_path / "out"
    (out / "karate.labels").mkdir(parents=True)  # the second target is a folder
    assert _datasets_error(capsys, "--copy", "karate", "--out-dir", out) == (
        f"kernelne: error: cannot write {out / 'karate.labels'}: it is a folder")
    assert sorted(p.name for p in out.iterdir()) == ["karate.labels"]  # no edgelist either
    data = tmp_path / "data"
    data.mkdir()
    with gzip.open(data / "tiny.edges.gz", "wt") as fh:
        fh.write("0 1\n1 2\n")
    (data / "tiny.labels.gz").write_bytes(b"\x1f\x8b not gzip")  # fails once opened
    (data / "MANIFEST.json").write_text(json.dumps({"tiny": {"nodes": 3, "edges": 2}}))
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    err = _datasets_error(capsys, "--data-dir", data, "--copy", "tiny", "--out-dir", fresh)
    assert err.startswith(f"kernelne: error: cannot copy {data / 'tiny.labels.gz'} to "
                          f"{fresh / 'tiny.labels'}: ")
    assert list(fresh.iterdir()) == []


def test_an_empty_copy_name_is_an_unknown_dataset_not_the_listing(no_env, capsys):
    assert "unknown dataset '' (have: " in _datasets_error(capsys, "--copy", "")


@pytest.mark.parametrize(("manifest", "problem"), [
    ({"../escaped": {"nodes": 3, "edges": 2}},
     "network name '../escaped' is not a plain file name"),
    ({"a/b": {"nodes": 3, "edges": 2}}, "network name 'a/b' is not a plain file name"),
    ({"ghost": {"edges": 2}}, "network 'ghost': 'nodes' must be a non-negative integer, "
                              "found nothing"),
    ({"ghost": {"nodes": -1, "edges": 2}}, "network 'ghost': 'nodes' must be a non-negative "
                                           "integer, found -1"),
    ([1, 2], "expected a JSON object of networks (name: entry), found [1, 2]"),
    ({"ghost": 3}, "network 'ghost': expected an object, found 3"),
])
def test_a_bad_manifest_is_one_line_naming_it(tmp_path, capsys, manifest, problem):
    (tmp_path / "MANIFEST.json").write_text(json.dumps(manifest))
    with gzip.open(tmp_path.parent / "escaped.edges.gz", "wt") as fh:
        fh.write("0 1\n1 2\n")
    out = tmp_path / "out"
    out.mkdir()
    for args in (["--data-dir", tmp_path], ["--data-dir", tmp_path, "--path", "ghost"],
                 ["--data-dir", tmp_path, "--copy", "../escaped", "--out-dir", out]):
        assert _datasets_error(capsys, *args).startswith(
            f"kernelne: error: {tmp_path / 'MANIFEST.json'}: {problem}")
    assert list(out.iterdir()) == [] and not (tmp_path.parent / "escaped.edgelist").exists()


# DS1: --copy never replaces a user's file of the same name unless --force is given

def test_copy_refuses_to_replace_the_users_files(no_env, capsys, tmp_path):
    from kernelne.graphs.datasets import copy_dataset

    edited = tmp_path / "karate.edgelist"
    edited.write_text("an edited graph 0 1\n")
    (tmp_path / "karate.labels").write_text("edited labels\n")
    assert main(["datasets", "--copy", "karate", "--out-dir", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert f"{edited}: exists and is not the packaged karate.edgelist" in captured.err
    assert "--force" in captured.err
    assert edited.read_text() == "an edited graph 0 1\n"
    assert (tmp_path / "karate.labels").read_text() == "edited labels\n"
    edited.unlink()  # only the labels differ: nothing is written either
    assert main(["datasets", "--copy", "karate", "--out-dir", str(tmp_path)]) == 2
    assert "karate.labels: exists" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["karate.labels"]
    with pytest.raises(InputError, match="refusing to replace"):
        copy_dataset("karate", tmp_path)
    assert main(["datasets", "--copy", "karate", "--out-dir", str(tmp_path), "--force"]) == 0
    assert capsys.readouterr().out.count("wrote") == 2
    assert len((tmp_path / "karate.labels").read_text().splitlines()) == 34
    assert main(["datasets", "--copy", "karate", "--out-dir", str(tmp_path)]) == 0  # the same
    assert capsys.readouterr().out.count("kept") == 2


def test_copy_help_names_force(capsys):
    with pytest.raises(SystemExit):
        main(["datasets", "--help"])
    assert "--force" in capsys.readouterr().out
