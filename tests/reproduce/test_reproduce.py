"""kernelne reproduce: settings file, cache, cell format, the grid end to end, the Dask path."""

from __future__ import annotations

import gzip
import json
import re

import networkx as nx
import pytest

from kernelne.cli.app import main
from kernelne.errors import InputError
from kernelne.reproduce import run as run_module
from kernelne.reproduce.config import default_config_text, load_config
from kernelne.reproduce.grid import build_grid
from kernelne.reproduce.paper import paper_micro_f1, paper_roc_auc
from kernelne.reproduce.report import format_cell

# A tiny grid: one labelled network, three methods, small everything.
TINY = """
seed = 0
[defaults]
dim = 8
walks_per_node = 4
walk_length = 6
window = 3
negatives = 2
[methods.deepwalk]
model = "deepwalk"
label = "DeepWalk"
[methods.hope]
model = "hope"
label = "HOPE"
[methods.kernelne-gauss]
model = "kernelne"
label = "KernelNE Gauss"
kernel = "gauss"
[methods.kernelne-sch]
model = "kernelne"
kernel = "schoenberg"
[classification]
datasets = ["cora"]
methods = ["deepwalk", "hope", "kernelne-gauss"]
ratios = [0.1, 0.5]
repeats = 2
[link_prediction]
datasets = ["cora"]
methods = ["hope", "kernelne-gauss"]
test_fraction = 0.5
heuristics = ["common_neighbours", "jaccard", "adamic_adar", "preferential_attachment", "katz"]
[link_prediction.settings."*".kernelne-gauss]
sigma = 0.3
[sensitivity]
dataset = "cora"
gauss = "kernelne-gauss"
sch = "kernelne-sch"
ratios = [0.5]
repeats = 2
dim = [4, 8]
sigma2 = [2.0]
alpha = [1.0, 2.0]
"""


def write_edges(path, g) -> None:
    with gzip.open(path, "wt") as fh:
        fh.writelines(f"{min(u, v)} {max(u, v)}\n" for u, v in sorted(g.edges()))


@pytest.fixture
def tiny_data(tmp_path):
    """A data folder in the packaged data format (MANIFEST.json and gzipped files): a
    3-block planted partition named cora (multi-label: every 4th node also has the next
    block's label, with a smaller share in ``cora.label_fractions.gz``) and a near-tree
    named citeseer (unlabelled)."""
    folder = tmp_path / "data"
    folder.mkdir()
    g = nx.planted_partition_graph(3, 20, 0.4, 0.02, seed=1)
    write_edges(folder / "cora.edges.gz", g)
    pairs = [(v, v // 20, 1.0) for v in range(60)]
    pairs = [(v, b, 0.75 if v % 4 == 0 else f) for v, b, f in pairs]
    pairs += [(v, (v // 20 + 1) % 3, 0.25) for v in range(0, 60, 4)]
    with gzip.open(folder / "cora.labels.gz", "wt") as fh:
        fh.writelines(f"{v} {b}\n" for v, b, _ in pairs)
    with gzip.open(folder / "cora.label_fractions.gz", "wt") as fh:
        fh.writelines(f"{v} {b} {f}\n" for v, b, f in pairs)
    tree = nx.random_labeled_tree(40, seed=0)
    tree.add_edges_from([(0, 20), (5, 30), (10, 35)])
    write_edges(folder / "citeseer.edges.gz", tree)
    manifest = {"cora": {"nodes": 60, "edges": g.number_of_edges(), "labels": 3},
                "citeseer": {"nodes": 40, "edges": tree.number_of_edges()}}
    (folder / "MANIFEST.json").write_text(json.dumps(manifest))
    return folder


@pytest.fixture
def tiny_config(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


@pytest.fixture
def count_fits(monkeypatch):
    """Count embedding fits (the local path runs them in this process)."""
    calls = []
    real = run_module.embed_job

    def counting(job, graph, workers):
        calls.append(job.key)
        return real(job, graph, workers)

    monkeypatch.setattr(run_module, "embed_job", counting)
    return calls


def reproduce(*args: str) -> int:
    return main(["reproduce", "--no-progress", *map(str, args)])


def test_config_round_trip(tmp_path):
    path = tmp_path / "mine.toml"
    assert main(["reproduce", "--write-config", str(path)]) == 0
    assert path.read_text() == default_config_text()
    assert load_config(path).data == load_config().data
    assert main(["reproduce", "--write-config", str(path)]) == 2  # never overwrites


def test_paper_settings_and_quick():
    config = load_config()
    assert config.params("classification", "citeseer", "kernelne-gauss")["sigma"] ** 2 == \
        pytest.approx(2.0)
    assert config.params("classification", "dblp", "kernelne-sch")["alpha"] == 3.0
    assert config.params("link_prediction", "hepth", "kernelne-gauss")["sigma"] == 0.3
    # Gnutella's "sigma = 3.0" read as the authors' code's sigma: kernelne's = 3 sqrt(2)
    assert config.params("link_prediction", "gnutella", "kernelne-gauss")["sigma"] == \
        pytest.approx(3.0 * 2 ** 0.5)
    assert config.params("link_prediction", "hepth", "kernelne-sch")["alpha"] == 2.0
    assert config.params("classification", "cora", "hope") == {
        "beta": None, "beta_ratio": 0.5, "dim": 128, "propagate": False}
    quick = load_config(quick=True)
    assert quick.params("classification", "cora", "deepwalk")["dim"] == 32
    assert quick.task("classification")["repeats"] == 2
    assert paper_micro_f1("cora", "kernelne-gauss", 0.02) == 0.706
    assert paper_roc_auc("gnutella", "kernelne-sch") == 0.677
    assert paper_micro_f1("cora", "kernelne-ne", 0.1) is None


def test_bad_config(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(TINY.replace('kernel = "gauss"', 'kernel = "gauss"\nsigmaa = 1.0'))
    with pytest.raises(InputError, match="sigmaa"):
        load_config(bad)
    bad.write_text("seed = [")
    with pytest.raises(InputError, match="TOML"):
        load_config(bad)


def test_cell_format():
    assert format_cell(0.5612, 0.0123, 50, 0.560) == "0.561 ± 0.012 (0.560)"
    assert format_cell(0.6012, 0.01, 50, 0.560) == "0.601 ± 0.010 (0.560) **+0.041**"
    assert format_cell(0.530, 0.01, 50, 0.560) == "0.530 ± 0.010 (0.560) **-0.030**"
    assert format_cell(0.575, 0.0, 1, 0.560) == "0.575 (0.560)"
    assert format_cell(0.575, 0.01, 2, None) == "0.575 ± 0.010"


def test_grid_shares_identical_embeddings(tiny_data, tiny_config):
    grid = build_grid(load_config(tiny_config), tiny_data)
    # 3 classification + 2 residual + sensitivity (dim 4 x2, dim 8 sch, alpha 2; sigma2 = 2,
    # dim 8 gauss and alpha 1 are embeddings listed already: defaults are filled in)
    assert len(grid.embeddings) == 3 + 2 + 4
    assert len({j.key for j in grid.embeddings}) == len(grid.embeddings)


def test_end_to_end_and_cache(tiny_data, tiny_config, tmp_path, count_fits):
    out = tmp_path / "out"
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--jobs", 1) == 0
    assert len(count_fits) == 9
    results = (out / "RESULTS.md").read_text()
    assert "KernelNE Gauss" in results and "ROC-AUC" in results
    assert "(0.782)" in results  # the paper's Cora Gauss Micro-F1 at 10%
    for name in ("ratio_cora.png", "sensitivity_dim.png", "sensitivity_sigma2.png",
                 "sensitivity_alpha.png"):
        assert (out / "figures" / name).read_bytes()[:4] == b"\x89PNG"
    rows = json.loads((out / "scores.json").read_text())
    assert {r["experiment"] for r in rows} == {"table2", "table3", "dim", "sigma2", "alpha"}
    micro = [r for r in rows if r["experiment"] == "table2" and r["metric"] == "micro_f1"]
    assert len(micro) == 3 * 2 * 2 and all(0 <= r["value"] <= 1 for r in micro)
    assert all(r["embedding_seed"] == 0 and r["params"] for r in rows
               if r["setting"] != "heuristic")  # a heuristic has no embedding
    assert (out / "scores.csv").read_text().startswith("experiment,x,task,dataset")
    log = json.loads((out / "run.json").read_text())
    assert log["versions"]["kernelne"] and log["invocations"][0]["embeddings_run"] == 9
    before = (out / "scores.csv").read_text()

    # The second run finds everything in the cache: no fit, the same scores.
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out) == 0
    assert len(count_fits) == 9
    assert (out / "scores.csv").read_text() == before
    assert json.loads((out / "run.json").read_text())["invocations"][1]["embeddings_cached"] == 9


def test_resume_after_interruption(tiny_data, tiny_config, tmp_path, monkeypatch):
    out = tmp_path / "out"
    real, calls = run_module.embed_job, []

    def flaky(job, graph, workers):
        calls.append(job.key)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(job, graph, workers)

    monkeypatch.setattr(run_module, "embed_job", flaky)
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--tasks", "classification") == 130
    assert len(list((out / "cache" / "embeddings").glob("*.npy"))) == 2
    monkeypatch.setattr(run_module, "embed_job", real)
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--tasks", "classification") == 0
    invocations = json.loads((out / "run.json").read_text())["invocations"]
    assert invocations[0]["interrupted"] and invocations[0]["embeddings_run"] == 2
    assert invocations[1]["embeddings_cached"] == 2
    assert invocations[1]["embeddings_run"] == 1
    assert "interrupted" in (out / "run.log").read_text()


def test_narrowing(tiny_data, tiny_config, tmp_path, count_fits):
    out = tmp_path / "out"
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--methods", "hope", "--tasks", "link_prediction") == 0
    assert len(count_fits) == 1
    rows = json.loads((out / "scores.json").read_text())
    assert {(r["method"], r["experiment"]) for r in rows} == {("hope", "table3")}
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--methods", "nope") == 2
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--datasets", "astroph") == 2


def test_data_folder_choice(tmp_path, monkeypatch, capsys):
    """--data-dir, else $KERNELNE_DATA, else the packaged networks; a chosen folder without
    MANIFEST.json is an error naming it (the packaged data is not used silently instead)."""
    from kernelne.graphs.datasets import find_data_dir, packaged_data_dir

    monkeypatch.delenv("KERNELNE_DATA", raising=False)
    monkeypatch.chdir(tmp_path)  # nothing beside the working directory either
    assert find_data_dir() == packaged_data_dir()
    assert (find_data_dir() / "cora.edges.gz").is_file()
    monkeypatch.setenv("KERNELNE_DATA", str(tmp_path))
    assert reproduce("--out", tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "not a data folder" in err and "KERNELNE_DATA" in err and str(tmp_path) in err
    assert reproduce("--data-dir", tmp_path, "--out", tmp_path / "out") == 2
    assert "MANIFEST.json" in capsys.readouterr().err


def test_packaged_data_missing_is_explained(tmp_path, monkeypatch):
    from kernelne.errors import InputError
    from kernelne.graphs import datasets

    monkeypatch.delenv("KERNELNE_DATA", raising=False)
    monkeypatch.setattr(datasets.resources, "files", lambda package: tmp_path)
    with pytest.raises(InputError, match="packaged data folder is missing.*KERNELNE_DATA"):
        datasets.find_data_dir()


def test_dask_scheduler(tiny_data, tiny_config, tmp_path):
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "out"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  protocol="tcp", host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                         "--scheduler", cluster.scheduler_address, "--workers", 1) == 0
    log = json.loads((out / "run.json").read_text())["invocations"][0]
    assert log["scheduler"] == cluster.scheduler_address and log["dask_workers"] == 1
    assert log["embeddings_run"] == 9 and log["evaluations_run"] == log["evaluations"]
    local = tmp_path / "local"
    # HOPE is deterministic: the same scores as a local run
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", local,
                     "--methods", "hope", "--jobs", 1) == 0
    local_rows = json.loads((local / "scores.json").read_text())
    dask_hope = {(r["score_key"], r["metric"], r["repeat"]): r["value"]
                 for r in json.loads((out / "scores.json").read_text()) if r["method"] == "hope"}
    assert len(local_rows) == len(dask_hope) > 0
    for r in local_rows:
        assert dask_hope[(r["score_key"], r["metric"], r["repeat"])] == pytest.approx(r["value"])


_LOSE = {"cluster": None, "calls": 0}
_REAL_EMBED_JOB = run_module.embed_job


def scheduler_dies_at_the_second_fit(job, graph, workers):
    """An embedding job under which, at the second fit, the scheduler of
    ``_LOSE["cluster"]`` goes away."""
    import threading
    import time

    _LOSE["calls"] += 1
    if _LOSE["calls"] == 2:
        cluster = _LOSE["cluster"]
        threading.Timer(0.2, lambda: cluster.sync(cluster.scheduler.close)).start()
        time.sleep(3)
    return _REAL_EMBED_JOB(job, graph, workers)


@pytest.mark.long  # the client waits out its reconnection: tens of seconds
def test_a_lost_scheduler_is_one_line_not_distributed_s_logged_tracebacks(
        tiny_data, tiny_config, tmp_path, monkeypatch, capsys):
    """As ``embed --scheduler``: ``distributed.client`` logs no ERROR (its reconnection's
    tracebacks) while the command drives the client, only kernelne's line; the logger is
    left as it was after the run."""
    from cli_runs import client_errors_seen, only_error_line

    distributed = pytest.importorskip("distributed")
    with client_errors_seen() as client_log:
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                           protocol="tcp", host="127.0.0.1",
                                           dashboard_address=None)
        address = cluster.scheduler_address
        _LOSE.update(cluster=cluster, calls=0)
        monkeypatch.setattr(run_module, "embed_job", scheduler_dies_at_the_second_fit)
        try:
            code = reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out-dir",
                             tmp_path / "out", "--scheduler", address, "--workers", 1,
                             "--methods", "hope", "deepwalk")
        finally:
            _LOSE["cluster"] = None
            cluster.close()
    assert code == 1
    line = only_error_line(capsys.readouterr().err)
    assert f"the Dask scheduler {address} was lost" in line and "resumes" in line
    assert client_log.errors == []
    assert client_log.logger.filters == client_log.filters_before


def test_multiple_kernel_rows_and_weights(tiny_data, tmp_path):
    config = tmp_path / "multi.toml"
    config.write_text(TINY.replace(
        '[classification]\ndatasets = ["cora"]\nmethods = ["deepwalk", "hope", "kernelne-gauss"]',
        '[methods.kernelne-multi]\nmodel = "kernelne"\nlabel = "MKernelNE"\nkernel = "multi"\n'
        'kernels = ["gauss:1", "sch:1"]\n'
        '[classification]\ndatasets = ["cora"]\nmethods = ["kernelne-multi"]'))
    out = tmp_path / "out"
    assert reproduce("--config", config, "--data-dir", tiny_data, "--out", out,
                     "--tasks", "classification") == 0
    text = (out / "RESULTS.md").read_text()
    section = text.split("## MKernelNE: learned kernel weights")[1]
    weights = [float(x) for x in re.findall(r"(?:gauss:1|sch:1) ([0-9.]+)", section)[:2]]
    assert len(weights) == 2 and min(weights) >= 0 and max(weights) > 0
    assert (out / "figures" / "kernel_weights.png").stat().st_size > 1000
    assert "MKernelNE" in (out / "tables.md").read_text()


def test_impossible_link_split_is_skipped_not_fatal(tiny_data, tiny_config, tmp_path, capsys):
    config = tmp_path / "tree.toml"
    config.write_text(tiny_config.read_text().replace("test_fraction = 0.5",
                                                      "test_fraction = 0.99"))
    out = tmp_path / "out"
    assert reproduce("--config", config, "--data-dir", tiny_data, "--out", out,
                     "--tasks", "link_prediction") == 0
    assert "skipping link prediction on cora" in (out / "run.log").read_text()


def test_corrupt_cache_entries_are_named_and_recomputed(tmp_path):
    import json as _json
    import warnings as _warnings

    import numpy as _np

    from kernelne.reproduce.cache import Cache

    cache = Cache(tmp_path / "cache")
    cache.save_embedding("k1", _np.ones((4, 3)), {"m": 1})
    assert cache.has_embedding("k1")
    npy = tmp_path / "cache" / "embeddings" / "k1.npy"
    npy.write_bytes(npy.read_bytes()[:100])  # truncated
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        assert not cache.has_embedding("k1")
    assert "k1.json" in str(caught[0].message) and "corrupt cached embedding" in str(
        caught[0].message)
    assert not npy.exists()  # removed, so the next run recomputes it
    cache.save_scores("s1", {"a": 1})
    (tmp_path / "cache" / "scores" / "s1.json").write_text("{broken")
    with _warnings.catch_warnings(record=True) as caught:
        _warnings.simplefilter("always")
        assert cache.scores("s1") is None
    assert "s1.json" in str(caught[0].message)
    folder = cache.split_folder("sp")
    folder.mkdir()
    (folder / "split.json").write_text(_json.dumps({"seed": 0, "test_fraction": 0.5}))
    (folder / "split.npz").write_bytes(b"garbage")
    with _warnings.catch_warnings(record=True):
        _warnings.simplefilter("always")
        assert not cache.valid_split("sp")
    assert not (folder / "split.json").exists()


def table_rows(text: str, first_cell: str) -> list[list[str]]:
    """The cells of every Markdown table row whose first cell is ``first_cell``."""
    return [[c.strip() for c in line.strip("|").split("|")]
            for line in text.splitlines() if line.startswith(f"| {first_cell} |")]


def test_link_table_has_heuristic_rows(tiny_data, tiny_config, tmp_path, count_fits):
    grid = build_grid(load_config(tiny_config), tiny_data)
    embedded = {j.split.key for j in grid.embeddings if j.split}
    assert {j.split.key for j in grid.heuristics} == embedded, "the embeddings' split"
    out = tmp_path / "out"
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--tasks", "link_prediction", "--jobs", 1) == 0
    for name in ("RESULTS.md", "tables.md"):
        text = (out / name).read_text()
        assert "the paper has no such rows" in text
        for label in ("Common neighbours", "Jaccard", "Adamic-Adar", "Preferential attachment",
                      "Katz (β = 0.005, L = 3)"):
            (row,) = table_rows(text, f"{label} (heuristic)")
            assert re.fullmatch(r"[01]\.\d{3}", row[1]), row  # a score, no paper number
        (hope,) = table_rows(text, "HOPE")
        assert "(0.728)" in hope[1]  # embeddings keep the paper's number
    rows = json.loads((out / "scores.json").read_text())
    heur = [r for r in rows if r["setting"] == "heuristic"]
    assert len(heur) == 5 * 2 and {r["experiment"] for r in heur} == {"table3"}
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--tasks", "link_prediction") == 0
    second = json.loads((out / "run.json").read_text())["invocations"][1]
    assert second["evaluations_run"] == 0 and second["evaluations_cached"] == 2 + 5


def test_both_classification_rules_are_reported_and_named(tiny_data, tiny_config, tmp_path):
    out = tmp_path / "out"
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--tasks", "classification", "--methods", "kernelne-gauss",
                     "--jobs", 1) == 0
    rows = json.loads((out / "scores.json").read_text())
    assert {r["metric"] for r in rows} == {"micro_f1", "macro_f1", "micro_f1_non_oracle",
                                           "macro_f1_non_oracle"}
    for name in ("RESULTS.md", "tables.md"):
        text = (out / name).read_text()
        assert "reads the test labels' count" in text and "it reads no test label" in text
        (oracle,) = table_rows(text, "Micro-F1, top-k, oracle label count: cora")
        (honest,) = table_rows(text, "Micro-F1, non-oracle (p > 0.5 or the most probable): cora")
        assert oracle[1:] == ["10%", "50%"] == honest[1:]
        tables = text.split("| Micro-F1, non-oracle")
        assert "(0.782)" in tables[0] and "(0.782)" not in tables[1]  # paper numbers: top-k


def test_single_label_option(tiny_data, tiny_config, tmp_path):
    import numpy as np
    import scipy.sparse as sp

    from kernelne.graphs.datasets import load_single_labels, single_labels
    from kernelne.reproduce.cache import Cache
    from kernelne.reproduce.run import Data

    ties = sp.csr_matrix([[0.5, 0.5, 0.0], [0.2, 0.0, 0.8], [0.0, 0.0, 0.0]])
    assert single_labels(ties).toarray().tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
    single = load_single_labels("cora", tiny_data).toarray()
    assert (single.sum(axis=1) == 1).all() and (single.argmax(axis=1) == np.arange(60) // 20).all()
    data = Data(tiny_data, Cache(tmp_path / "cache"))
    assert data.labels("cora", False).sum() == 75  # the multi-label file
    assert (data.labels("cora", True).toarray() == single).all()

    on = tmp_path / "single.toml"
    on.write_text(TINY.replace("ratios = [0.1, 0.5]\nrepeats = 2\n",
                               'ratios = [0.1, 0.5]\nrepeats = 2\nsingle_label = ["cora"]\n'))
    off_grid, on_grid = build_grid(load_config(tiny_config), tiny_data), build_grid(
        load_config(on), tiny_data)
    classify = [j for j in on_grid.evaluations if j.task == "classification"]
    assert classify and all(j.single_label for j in classify)
    assert not any(j.single_label for j in off_grid.evaluations)
    assert not {j.key for j in classify} & {j.key for j in off_grid.evaluations}
    paper = load_config()
    assert paper.single_label("dblp") and not paper.single_label("cora")

    out = tmp_path / "out"
    assert reproduce("--config", on, "--data-dir", tiny_data, "--out", out, "--tasks",
                     "classification", "--methods", "hope", "--jobs", 1) == 0
    text = (out / "RESULTS.md").read_text()
    assert "Labels: cora single-label" in text
    assert "Micro-F1, top-k, oracle label count: cora (single-label" in text
    (tiny_data / "cora.label_fractions.gz").unlink()
    with pytest.raises(InputError, match="label_fractions"):
        build_grid(load_config(on), tiny_data)


def test_capped_split_gives_a_near_tree_a_row(tiny_data, tiny_config, tmp_path):
    from scipy.sparse import csgraph

    from kernelne.evaluation.splits import LinkSplit

    args = ["--data-dir", tiny_data, "--datasets", "citeseer", "--tasks", "link_prediction",
            "--methods", "hope", "common_neighbours", "--jobs", 1]
    out = tmp_path / "plain"
    assert reproduce("--config", tiny_config, "--out", out, *args) == 0
    assert "skipping link prediction on citeseer" in (out / "run.log").read_text()
    capped = tmp_path / "capped.toml"
    capped.write_text(TINY.replace("test_fraction = 0.5\n",
                                   'test_fraction = 0.5\ncap_to_connected = ["citeseer"]\n'))
    out = tmp_path / "capped"
    assert reproduce("--config", capped, "--out", out, *args) == 0
    text = (out / "RESULTS.md").read_text()
    assert "citeseer: 3 of 42 edges held out (7.1%; capped)" in text
    assert "For citeseer the held-out share is capped" in text
    for label in ("HOPE", "Common neighbours (heuristic)"):
        (row,) = table_rows(text, label)
        assert re.match(r"[01]\.\d{3}", row[1])
    (folder,) = (out / "cache" / "splits").iterdir()
    split = LinkSplit.load(folder)
    n_comp, _ = csgraph.connected_components(split.residual_graph().adjacency(), directed=False)
    assert n_comp == 1 and split.n_nodes == 40
    residual = {tuple(e) for e in split.train_edges.tolist()}
    assert len(split.test_edges) == 3 and not residual & {tuple(e) for e in
                                                          split.test_edges.tolist()}


def test_cache_keys_ignore_options_at_their_off_value_only():
    from kernelne.reproduce.cache import make_key
    from kernelne.reproduce.config import OFF_VALUES, key_params

    before = {"dim": 128, "kernel": "gauss", "sigma": 1.0}  # a fit cached before the options
    with_off = {**before, **OFF_VALUES}
    assert make_key(key_params(with_off)) == make_key(before)
    for name, value in {"loss": "loglik", "window_shrink": True, "subsample": 1e-3}.items():
        assert make_key(key_params({**with_off, name: value})) != make_key(before), name


def test_a_failed_fit_is_recorded_and_the_run_goes_on(tiny_data, tiny_config, tmp_path,
                                                     monkeypatch, capsys):
    from kernelne.errors import TrainingError

    out = tmp_path / "out"
    real = run_module.embed_job

    def diverging(job, graph, workers):
        if job.method == "kernelne-gauss":
            raise TrainingError("training diverged: 60 of 60 embedding rows are NaN")
        return real(job, graph, workers)

    monkeypatch.setattr(run_module, "embed_job", diverging)
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--tasks", "classification") == 0
    err = capsys.readouterr().err
    assert "kernelne: warning: 1 job(s) failed" in err and "training diverged" in err
    log = (out / "run.log").read_text()
    assert re.search(r"embedding \w+ cora kernelne-gauss .*: FAILED: training diverged", log)
    run = json.loads((out / "run.json").read_text())["invocations"][0]
    assert run["embeddings_failed"] == 1 and run["embeddings_run"] == 2
    assert run["failures"][0]["reason"] == "training diverged: 60 of 60 embedding rows are NaN"
    results = (out / "RESULTS.md").read_text()
    assert "## Failed jobs" in results and "kernelne-gauss" in results.split("## Failed")[1]
    methods = {r["method"] for r in json.loads((out / "scores.json").read_text())}
    assert methods == {"deepwalk", "hope"}  # the other cells were run and scored
    # the next run retries the failed fit only
    monkeypatch.setattr(run_module, "embed_job", real)
    assert reproduce("--config", tiny_config, "--data-dir", tiny_data, "--out", out,
                     "--tasks", "classification") == 0
    run = json.loads((out / "run.json").read_text())["invocations"][1]
    assert run["embeddings_run"] == 1 and run["embeddings_failed"] == 0
    assert "## Failed jobs" not in (out / "RESULTS.md").read_text()
