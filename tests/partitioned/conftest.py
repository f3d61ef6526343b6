"""What the partitioned tests share: a local Dask cluster of two worker processes."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def client():
    """A client of a ``LocalCluster`` of 2 single-thread worker processes, one a module."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c
