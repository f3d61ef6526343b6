"""Graphs in and out: the CSR :class:`~kernelne.graphs.graph.Graph`, its readers (edge lists,
``.mat``, networkx, scipy), the binary ``.npz`` format, the packaged datasets and the
planted-partition generators.

It imports the base modules only.
"""
