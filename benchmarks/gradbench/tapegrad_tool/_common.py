"""Conversions shared by the eval modules (all untimed: before and after the runs)."""
import numpy as np
import tapegrad as tg


def f64(data):
    """A float64 tensor from JSON lists (no grad: tapegrad.func makes its own leaves)."""
    return tg.from_numpy(np.asarray(data, dtype=np.float64))


def tolist(t):
    return t.numpy().tolist() if isinstance(t, tg.Tensor) else np.asarray(t).tolist()
