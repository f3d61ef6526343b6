"""The numerical core: random walks, noise tables, kernels and the SGD training loop.

numba and numpy only, what a Dask worker imports to train a bucket: ``walks``, ``sampling``
(alias tables, the per-thread RNG), ``kernels``, ``trainer`` (the SGD step over a chunk of
walks), ``chunks`` (the chunk loop of a run), ``robust`` and ``diagnostics`` (the rows'
health checks), ``rows``, ``prefetch``, ``compiling``. It imports the graphs and the base
modules only: nothing from the model, the partitioned driver, tune, the CLI or scikit-learn
(a test holds this).
"""
