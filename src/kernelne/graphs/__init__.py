"""Graphs in and out: the CSR :class:`~kernelne.graphs.csr.Graph` (``csr``), its readers
(``graph``: edge lists, ``.mat``, networkx, scipy), the binary ``.npz`` format, the packaged
datasets and the planted-partition generators.

It imports the base modules only.
"""
