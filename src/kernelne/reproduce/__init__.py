"""``kernelne reproduce``: the paper's experiment grid (docs/METHOD.md §13), cached and resumable,
run locally or on a Dask cluster, reported beside the paper's numbers.

Modules: :mod:`.config` (the TOML settings), :mod:`.paper` (the paper's numbers),
:mod:`.grid` (the jobs), :mod:`.cache` (results on disk), :mod:`.run` (execution through
joblib), :mod:`.report` (tables, figures, RESULTS.md), :mod:`.cli` (the subcommand).
"""
