"""Sums along dimensions, accumulated in float64: the eager forward of ``sum``/``mean``/``var``
over some of a tensor's dimensions (``x.sum(0)``, ``x.var(0)``).

numpy adds along a dimension that is not the innermost one row by row in the array's own
dtype: ``np.ones((2 * 10**7, 2), np.float32).sum(0)`` is 16777216 (2^24 + 1 rounds back to
2^24), where torch's cascade sum gives 2e7; and it is slow when the rows are short (a
(10^5, 4) float32 ``sum(0)``: ~1.5 ms, torch ~0.3). Here the array is viewed as
``(A, R, B)`` (the reduced dimensions one contiguous run of length R between A outer and B
inner elements; other layouts are first copied into that order) and each of the A * B sums is
accumulated in float64:

* a block of rows is read as one flat stretch, each element added into one of ``L`` float64
  accumulators (``L`` a multiple of B, at least 32), so the loop vectorises whatever B is;
  the accumulators of one column are added at the end;
* blocks of ``RB`` rows (about 16K elements) are independent tasks, run on every core from
  ``_vmath.PAR`` elements; their partial sums are added in block order. The blocking depends
  on the shape only, so a result does not depend on the number of threads.

``var`` is two passes of the same kernel: the mean, then the sum of squared deviations from
it (mode 1), both in float64.
"""
from math import prod as _prod

import numpy as np
from numba import njit, prange

from . import _cache, _vmath
from ._addr import INTERNAL, _u

_opts = dict(cache=True, nogil=True, error_model="numpy", boundscheck=False,
             no_cfunc_wrapper=True)
TASK = 1 << 14        # elements per task (a block of rows)
LANES = 32            # least number of float64 accumulators


@njit(fastmath={"reassoc"}, error_model="numpy", boundscheck=False, **INTERNAL)
def _run_sum(x, o, M, c, mode):
    """sum of x[o:o + M] (mode 0) or of (x[o:o + M] - c)^2 (mode 1) in float64, reassociated
    (the loop vectorises)."""
    s = 0.0
    if mode == 0:
        for i in range(M):
            s += x[_u(o + i)]
    else:
        for i in range(M):
            v = x[_u(o + i)] - c
            s += v * v
    return s


def _red_src(x, A, R, B, c, mode, out):
    """out[a, b] = sum over r of x[a, r, b] (mode 0) or of (x[a, r, b] - c[a, b])^2 (mode 1),
    in float64; x flat and contiguous, out float64 (A * B)."""
    RB = max(1, TASK // B)
    nrb = (R + RB - 1) // RB
    part = np.zeros((A * nrb, B), np.float64)
    L = B * ((LANES + B - 1) // B)
    for t in prange(A * nrb):
        a = t // nrb
        r0 = (t - a * nrb) * RB
        r1 = min(R, r0 + RB)
        base = (a * R + r0) * B
        p = part[t]
        if B == 1:
            p[0] = _run_sum(x, base, r1 - r0, c[a] if mode else 0.0, mode)
        elif B >= LANES:                # a row at a time into the B sums
            if mode == 0:
                for r in range(r1 - r0):
                    o = base + r * B
                    for b in range(B):
                        p[b] += x[_u(o + b)]
            else:
                cb = c[a * B:a * B + B]
                for r in range(r1 - r0):
                    o = base + r * B
                    for b in range(B):
                        v = x[_u(o + b)] - cb[b]
                        p[b] += v * v
        else:                           # short rows: L lanes (a multiple of B) at a time
            M = (r1 - r0) * B
            full = M - M % L
            acc = np.zeros(L, np.float64)
            cl = np.zeros(L, np.float64)
            if mode:
                for j in range(L):
                    cl[j] = c[a * B + j % B]
            for i in range(full // L):
                o = base + i * L
                if mode == 0:
                    for j in range(L):
                        acc[j] += x[_u(o + j)]
                else:
                    for j in range(L):
                        v = x[_u(o + j)] - cl[j]
                        acc[j] += v * v
            for j in range(M - full):
                v = x[_u(base + full + j)] - cl[j]
                acc[j] += v if mode == 0 else v * v
            for j in range(L):
                p[j % B] += acc[j]
    for a in range(A):
        o = out[a * B:a * B + B]
        for b in range(B):
            o[b] = 0.0
        for k in range(nrb):
            p = part[a * nrb + k]
            for b in range(B):
                o[b] += p[b]


def _scan_src(x, A, R, B, prod, y):
    """y[a, r, b] = sum (prod: product) of x[a, :r + 1, b], accumulated in float64 (as
    torch's CPU cumsum / cumprod) and rounded to y's dtype once per element."""
    for a in prange(A):
        acc = np.full(B, 1.0 if prod else 0.0)
        base = a * R * B
        for r in range(R):
            o = base + r * B
            if prod:
                for b in range(B):
                    acc[b] *= x[_u(o + b)]
                    y[_u(o + b)] = acc[b]
            else:
                for b in range(B):
                    acc[b] += x[_u(o + b)]
                    y[_u(o + b)] = acc[b]


_red_s = njit(**_opts)(_red_src)
_red_p = njit(parallel=True, **_opts)(_vmath._twin(_red_src, "_par"))
_scan_s = njit(**_opts)(_scan_src)
_scan_p = njit(parallel=True, **_opts)(_vmath._twin(_scan_src, "_par"))
_NOC = np.zeros(1, np.float64)


def _layout(d, dims):
    """(x, A, R, B, kshape, perm): x a flat C-contiguous array (d's data or a copy, possibly
    with its axes permuted by ``perm``) whose reduced dimensions are one run of length R
    between A outer and B inner elements; kshape: the keepdim shape of the result in x's
    axis order."""
    perm = None
    if not d.flags.c_contiguous:
        # a permuted C-contiguous array (x.t(), x.permute(...)): its axes in memory order
        order = sorted(range(d.ndim), key=lambda k: -d.strides[k])
        v = d.transpose(order)
        if v.flags.c_contiguous:
            d, perm = v, order
            dims = tuple(sorted(order.index(k) for k in dims))
        else:
            d = np.ascontiguousarray(d)
    shape = d.shape
    lo, hi = dims[0], dims[-1] + 1
    if hi - lo != len(dims) and any(shape[k] != 1 for k in range(lo, hi) if k not in dims):
        # reduced dimensions apart: copied with the kept ones first (one run at the end)
        kept = [k for k in range(d.ndim) if k not in dims]
        order = kept + list(dims)
        d = np.ascontiguousarray(d.transpose(order))
        perm = order if perm is None else [perm[k] for k in order]
        lo, hi = len(kept), d.ndim
        dims = tuple(range(lo, hi))
        shape = d.shape
    kshape = tuple(1 if k in dims else s for k, s in enumerate(shape))
    return (d.reshape(-1), _prod(shape[:lo]), _prod(shape[lo:hi]), _prod(shape[hi:]), kshape,
            perm)


def _back(y, perm):
    """A keepdim result in memory order back to the tensor's axis order."""
    if perm is None:
        return y
    inv = [0] * len(perm)
    for i, k in enumerate(perm):
        inv[k] = i
    return y.transpose(inv)


def _run(x, A, R, B, c, mode):
    if not _cache.ON:               # not compiled yet (``_cache``): numpy, in float64
        v = x.reshape(A, R, B).astype(np.float64)
        if mode:
            v -= c.reshape(A, 1, B)
            v *= v
        return v.sum(axis=1).reshape(-1)
    out = np.empty(A * B, np.float64)
    if x.size < _vmath.PAR:
        if x.size:
            _red_s(x, A, R, B, c, mode, out)
        else:
            out.fill(0.0)
    else:
        if not _vmath._threads:
            _vmath.start_threads()
        _red_p(x, A, R, B, c, mode, out)
    return out


def sum_dims(d, dims):
    """float64 sum of the float array d over dims (sorted tuple of non-negative ints), of the
    keepdim shape."""
    lo, hi = dims[0], dims[-1] + 1
    if hi - lo == len(dims) and d.flags.c_contiguous:     # the common case: one run
        shape = d.shape
        out = _run(d.reshape(-1), _prod(shape[:lo]), _prod(shape[lo:hi]), _prod(shape[hi:]),
                   _NOC, 0)
        return out.reshape(shape[:lo] + (1,) * (hi - lo) + shape[hi:])
    x, A, R, B, kshape, perm = _layout(d, dims)
    return _back(_run(x, A, R, B, _NOC, 0).reshape(kshape), perm)


def var_dims(d, dims, correction):
    """(var, mean) of the float array d over dims, float64, keepdim shape: two passes (the
    mean, then the squared deviations from it), ``correction`` subtracted from the count."""
    x, A, R, B, kshape, perm = _layout(d, dims)
    m = _run(x, A, R, B, _NOC, 0) / R if R else np.full(A * B, np.nan)
    ss = _run(x, A, R, B, m, 1)
    den = max(R - correction, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        v = ss / den
    return _back(v.reshape(kshape), perm), _back(m.reshape(kshape), perm)


def scan(d, ax, prod=False):
    """cumsum (prod: cumprod) of the float array d along ax, accumulated in float64, in d's
    dtype."""
    y = np.empty(d.shape, d.dtype)
    if d.size == 0:
        return y
    x = np.ascontiguousarray(d).reshape(-1)
    shape = d.shape
    A, R, B = _prod(shape[:ax]), shape[ax], _prod(shape[ax + 1:])
    if not _cache.ON:               # not compiled yet (``_cache``): numpy, in float64
        v = x.reshape(A, R, B).astype(np.float64)
        f = np.cumprod if prod else np.cumsum
        y.reshape(A, R, B)[...] = f(v, axis=1)
        return y
    if x.size < _vmath.PAR or A == 1:
        _scan_s(x, A, R, B, prod, y.reshape(-1))
    else:
        if not _vmath._threads:
            _vmath.start_threads()
        _scan_p(x, A, R, B, prod, y.reshape(-1))
    return y
