"""The CUDA training engine (``device="cuda"``): numba-cuda kernels beside the numba CPU engine.

Imported only by a fit with ``device="cuda"``, never by a CPU fit or the command line's parser
(a test holds this): ``available`` (numba-cuda and the device, or the one-line errors when either
is missing), ``simulator`` (the warp shuffles numba's CUDA simulator lacks), ``kernels`` (the
SGD kernel: one warp per walk, one pair at a time, lanes over the dimensions) and ``trainer``
(rows and alias table on the device, walks streamed to it in double-buffered chunks). Like the
rest of :mod:`kernelne.engine`, it imports the engine and the base modules only.
"""
