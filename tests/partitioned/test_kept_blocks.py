"""Blocks kept on the Dask workers between checkpoints (kernelne.partitioned.kept_blocks): the
rows are those of blocks that go through the folder at every step, the folder is written only
at checkpoints (a round's end, a look of the robust check), and a driver killed in the middle
of a round resumes from the last checkpoint, on Dask or in one process. (A worker killed in
the middle of a round: tests/partitioned/test_partition_url.py.)"""

from __future__ import annotations

import json

import numpy as np
import pytest

import kernelne.partitioned.driver as driver
import kernelne.partitioned.kept_blocks as kept_blocks
from kernelne import Graph, KernelNE
from kernelne.graphs.generators import planted_partition_sbm

distributed = pytest.importorskip("distributed")

SETTINGS = dict(random_state=0, workers=1, walks_per_node=4, dim=8, partitions=3, rounds=2,
                robust=False)


class Crash(Exception):
    pass


@pytest.fixture(autouse=True)
def kept_in_folders(monkeypatch):
    """Blocks kept on the workers in a folder too (by default only at a URL)."""
    monkeypatch.setattr(driver, "keeps_blocks", lambda client, folder: client is not None)


def sbm() -> Graph:
    edges, _ = planted_partition_sbm(240, 1200, 4, 0.2, seed=3)
    return Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=240)


def fit(folder, client=None, **kw) -> KernelNE:
    return KernelNE(partition_dir=str(folder), **{**SETTINGS, **kw}).fit(sbm(), client=client)


def submitted(client, monkeypatch) -> list[str]:
    """The names of the functions ``client`` is given from now on."""
    names: list[str] = []
    real = client.submit

    def submit(fn, *args, **kw):
        names.append(getattr(fn, "__name__", ""))
        return real(fn, *args, **kw)

    monkeypatch.setattr(client, "submit", submit)
    return names


def test_kept_blocks_are_the_folder_s_rows_and_are_written_at_each_round_s_end(
        client, tmp_path, monkeypatch):
    plain = fit(tmp_path / "here")  # in this process: every step through the folder
    with monkeypatch.context() as m:
        m.setattr(driver, "keeps_blocks", lambda client, folder: False)
        names = submitted(client, m)
        through = fit(tmp_path / "through", client)
    assert names.count("bucket_task") == 2 * 3 * 3 and "kept_bucket_task" not in names
    names = submitted(client, monkeypatch)
    kept = fit(tmp_path / "kept", client)
    # 2 rounds of 3 steps of 3 buckets; each round's end writes the 6 blocks once
    assert names.count("kept_bucket_task") == 2 * 3 * 3 and "bucket_task" not in names
    assert names.count("write_kept_block") == 2 * 6
    for other in (through, kept):
        np.testing.assert_array_equal(other.embedding_, plain.embedding_)
        np.testing.assert_array_equal(other.context_embedding_, plain.context_embedding_)
    assert kept.partition_run_.bucket_phases["write blocks"] > 0
    assert not client.futures


def test_a_look_of_the_robust_check_in_mid_round_is_a_checkpoint(client, tmp_path,
                                                                  monkeypatch):
    """The look reads the blocks of the step it follows: kept ones are written there first."""
    looked: list[int] = []

    def look_due(t, *args):
        return t == 4

    def shell(folder, graph, counts, parts, d, slot, beta, state, previous):
        rows = driver.BlockRows(folder, "A", graph.n_nodes, parts, d, slot)[np.arange(10)]
        looked.append(int(state["step"]))
        np.save(tmp_path / f"look{len(looked)}.npy", rows)
        return None

    monkeypatch.setattr(driver, "look_due", look_due)
    monkeypatch.setattr(driver, "_shell", shell)
    here = fit(tmp_path / "here", robust=True)
    on_dask = fit(tmp_path / "kept", client, robust=True)
    assert looked == [4, 4]  # step 4: the second of the second round
    np.testing.assert_array_equal(np.load(tmp_path / "look1.npy"),
                                  np.load(tmp_path / "look2.npy"))
    np.testing.assert_array_equal(on_dask.embedding_, here.embedding_)


@pytest.mark.parametrize("resume_on", ["dask", "process"])
def test_a_driver_killed_in_mid_round_resumes_from_the_round_s_start(client, tmp_path,
                                                                     monkeypatch, resume_on):
    """Killed at step 4 (the second round's second step), the record is step 3, whose blocks
    are in slot 1 (not the step's parity: a checkpoint a round); either way of resuming reads
    them there and gives the clean fit's rows."""
    clean = fit(tmp_path / "clean")
    folder = tmp_path / "run"
    real = kept_blocks.KeptBlocks.step

    def dies_at_step_4(self, step, args):
        if step == 4:
            raise Crash
        return real(self, step, args)

    with monkeypatch.context() as m:
        m.setattr(kept_blocks.KeptBlocks, "step", dies_at_step_4)
        with pytest.raises(Crash):
            fit(folder, client)
    state = json.loads((folder / "progress.json").read_text())
    assert (state["step"], state["slot"]) == (3, 1)
    assert not client.futures
    resumed = fit(folder, client if resume_on == "dask" else None)
    assert resumed.partition_run_.resumed_at_step == 3
    np.testing.assert_array_equal(resumed.embedding_, clean.embedding_)
    np.testing.assert_array_equal(resumed.context_embedding_, clean.context_embedding_)
