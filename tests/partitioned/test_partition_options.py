"""The options of a partitioned fit and its scheduler (audit 5): folder and rounds without
partitions (A37, A38), a tls:// scheduler without TLS settings (C28), a scheduler with no
worker (C5), a URL whose file system's package is missing (B17)."""

from __future__ import annotations

import numpy as np
import pytest
from cli_runs import one_error_line, run_cli

import kernelne.partitioned.locks as locks
from kernelne import Graph, KernelNE
from kernelne.errors import InputError
from kernelne.graphs.generators import planted_partition_sbm

FAST = ["--dim", "8", "--walks-per-node", "4", "--workers", "1", "--quiet", "--seed", "0"]


@pytest.fixture
def edge_file(tmp_path):
    edges, _ = planted_partition_sbm(150, 600, 3, 0.2, seed=0)
    path = tmp_path / "g.txt"
    path.write_text("".join(f"{u} {v}\n" for u, v in edges if u != v))
    return path


@pytest.mark.parametrize("option, value", [("--partition-dir", "run"), ("--rounds", "3")])
def test_a37_a38_a_partition_option_without_partitions_is_refused(tmp_path, edge_file, capsys,
                                                                  option, value):
    out = tmp_path / "e.npy"
    for partitions in ([], ["--partitions", "1"]):
        code, err = run_cli(["embed", edge_file, "-o", out, *FAST, *partitions, option,
                             tmp_path / value if option == "--partition-dir" else value],
                            capsys)
        assert code == 2
        one_error_line(err, option, "--partitions P (2 or more)")
        assert not out.exists() and not (tmp_path / "run").exists()
    code, err = run_cli(["embed", edge_file, "-o", out, *FAST, "--partitions", "2", option,
                         tmp_path / value if option == "--partition-dir" else value], capsys)
    assert code == 0 and out.exists()


def test_b17_a_gs_url_without_gcsfs_names_gcsfs_not_s3fs(tmp_path, edge_file, capsys):
    pytest.importorskip("fsspec")
    try:
        import gcsfs  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("gcsfs is installed: gs:// URLs need no package")
    out = tmp_path / "e.npy"
    code, err = run_cli(["embed", edge_file, "-o", out, *FAST, "--partitions", "2",
                         "--partition-dir", "gs://bucket/run"], capsys)
    assert code == 2 and not out.exists()
    one_error_line(err, "--partition-dir gs://bucket/run", "pip install gcsfs")
    assert "s3fs" not in err
    assert locks.install_hint("s3") == "pip install 'kernelne[dask]' installs fsspec and s3fs"


def test_c28_a_tls_scheduler_without_tls_settings_is_one_line(tmp_path, edge_file, capsys):
    pytest.importorskip("distributed")
    out = tmp_path / "e.npy"
    code, err = run_cli(["embed", edge_file, "-o", out, *FAST, "--partitions", "2",
                         "--scheduler", "tls://127.0.0.1:1"], capsys)
    assert code == 2 and not out.exists()
    one_error_line(err, "tls://127.0.0.1:1", "distributed.comm.tls")


def test_c5_a_scheduler_without_workers_says_so_while_waiting(monkeypatch, tmp_path):
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr(locks, "WORKER_CHECK_SECONDS", 2.0)
    edges, _ = planted_partition_sbm(150, 600, 3, 0.2, seed=0)
    g = Graph.from_edges(edges[:, 0], edges[:, 1], n_nodes=150)
    model = KernelNE(random_state=0, workers=1, walks_per_node=4, dim=8, partitions=2,
                     rounds=2, verbose=False, partition_dir=str(tmp_path / "run"))
    with distributed.LocalCluster(n_workers=0, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with pytest.warns(UserWarning, match="no Dask worker is connected .* yet: the "
                          "partitioned fit waits up to 2 s") as record, \
                pytest.raises(InputError, match="no Dask worker is connected"):
            model.fit(g, client=client)
    assert len([w for w in record if "waits up to" in str(w.message)]) == 1
    assert not (tmp_path / "run" / locks.LOCK).exists()
    assert np.all([not p.name.endswith(".npy") for p in (tmp_path / "run").rglob("*")])


def test_h19_the_guide_says_dask_exchanges_pickles_and_whom_to_trust():
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[2] / "docs" / "DISTRIBUTED.md").read_text()
    trust = " ".join(guide[guide.index("**Trust only your own cluster"):][:600].split())
    assert "pickles" in trust and "run any code in the kernelne process" in trust
    assert "TLS" in trust
