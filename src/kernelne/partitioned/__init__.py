"""Partitioned training: rows in blocks on disk or object storage, trained bucket by bucket,
on one machine or a Dask cluster.

``driver`` (a fit's steps, from the plan to the assembled rows), ``buckets`` (the bucket
step, its task and the submission of a step to Dask), ``blocks`` (the block files), ``locks``
(the folder and its lock), ``plan`` (``plan.json`` and the checks of a resumed folder),
``rounds`` (each round's walks) and ``store`` (files by path or fsspec URL). It imports only
the engine, the graphs and the base modules (a test holds this).
"""

from __future__ import annotations

from typing import Any

_PUBLIC = {"fit_partitioned", "bucket_task", "DEFAULT_ROUNDS"}


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:  # the paths of 0.2.0, ``kernelne.partitioned.fit_partitioned`` ...
        from kernelne.partitioned import driver

        return getattr(driver, name)
    raise AttributeError(f"module 'kernelne.partitioned' has no attribute {name!r}")
