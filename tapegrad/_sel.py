"""Signatures of the decisions an op takes from the values of a recorded tensor, for the
guards of ``tapegrad.func`` (see ``tensor._guard_sel``): a replay recomputes the signature from
its own values and records the function again when it differs, as for a comparison.

* ``order(a, axis, tail)``: the order type of the values along ``axis`` (None: all of them;
  ``tail`` > 0: over the last ``tail`` dimensions together): the stable argsort, which
  neighbours in sorted order are equal, and where the NaNs are. Any choice made from the
  order of the values (max / min and their indices, amax's ties, sort, topk, kthvalue,
  median, mode, cummax, quantile, max pooling) is a function of it.
* ``cuts(a, *c)``: for each value, its side of each cut point (and NaN): the masks of
  hardtanh, threshold, hardshrink, softshrink, hardsigmoid.
* ``exponent(a)``: frexp's exponents (the mantissa's gradient is 2^-exponent).
* ``vals(a)``: the values themselves, for values that leave the recording (``detach()``,
  ``numpy()``, ``tolist()``, a cast to an integer or bool dtype, searchsorted / bucketize,
  clamp's tensor bounds): a replay on other values records again.
* ``mask(a, name)``: numpy's predicate ``name`` (isnan, isinf, isfinite, signbit ...).
* ``never(a)``: a guard that never holds (the op's recorded constants depend on the values
  in a way no signature captures: scatter_reduce's prod / amax / amin): every call records.
"""
import numpy as np


def order(a, axis=None, tail=0):
    a = np.asarray(a)
    if tail:
        a = a.reshape(a.shape[:a.ndim - tail] + (-1,))
        axis = -1
    if axis is None or a.ndim == 0:
        a = a.reshape(-1)
        axis = -1
    idx = np.argsort(a, axis=axis, kind="stable")
    s = np.take_along_axis(a, idx, axis)
    eq = np.diff(s, axis=axis) == 0
    return np.concatenate([idx.reshape(-1), eq.reshape(-1), (a != a).reshape(-1)])


def cuts(a, *c):
    a = np.asarray(a)
    side = [np.sign(a - v).reshape(-1) for v in c]
    return np.concatenate(side + [(a != a).reshape(-1).astype(side[0].dtype if side else int)])


def exponent(a):
    return np.frexp(np.asarray(a))[1].reshape(-1)


def vals(a):
    return np.array(a, copy=True).reshape(-1)


def mask(a, name):
    return getattr(np, name)(np.asarray(a)).reshape(-1)


def never(a):
    return np.array([np.nan])


SEL = {"order": order, "cuts": cuts, "exponent": exponent, "vals": vals, "mask": mask,
       "never": never}
