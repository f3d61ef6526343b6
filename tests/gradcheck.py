"""Central finite differences, shared by the gradient tests."""

import numpy as np


def numeric_grad(f, x, h=1e-6):
    """Gradient of scalar ``f`` at ``x`` by central differences, coordinate by coordinate."""
    g = np.zeros_like(x)
    for t in range(len(x)):
        e = np.zeros_like(x)
        e[t] = h
        g[t] = (f(x + e) - f(x - e)) / (2 * h)
    return g
