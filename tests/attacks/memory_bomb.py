"""A memory bomb in mean_context: 800 MB of ones (within the address-space limit), touched
page by page at full speed: the memory watch must stop it."""
import numpy as _np


def mean_context(X):
    return _np.ones((800 * 2**20) // 8).sum() + _np.asarray(X, dtype=float).mean(axis=-2)
