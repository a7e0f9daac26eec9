"""Big index maps' VJPs in compiled loops: a gather's scatter-add and a segment sum's take.

The sweep hands entries touching big nodes to numpy (``tape.np_entry``). A gather's VJP
(gx[idx[i]] += g[i]) was ``np.bincount(idx, weights=g)``: it converts g to float64, checks the
index, and adds one element at a time through a generic loop; a segment sum's VJP
(gx[i] = c g[idx[i]]) was ``g[idx] * c``, a fancy take and a second pass. Here both are one
serial Numba loop (the im2col index of a 32 x 16 x 16 x 16 convolution, 1.2 M positions:
bincount ~2.5 ms, the loop ~0.7 ms; take and scale ~0.6 against ~0.25 ms).

``add`` accumulates in float64 in index order, as bincount did, then rounds once to g's
dtype: the results are bit-identical to the numpy versions they replace. ``take`` multiplies
in g's dtype by c rounded to that dtype, as ``g[idx] * g.dtype.type(c)`` did.
"""
import numpy as np
from numba import njit

_opts = dict(nogil=True, cache=True, boundscheck=False)


@njit(**_opts)
def _add(idx, g, acc):
    for i in range(idx.size):
        acc[idx[i]] += g[i]


@njit(**_opts)
def _take(g, idx, c, out):
    s = c[0]
    for i in range(idx.size):
        out[i] = g[idx[i]] * s


def add(idx, g, m):
    """bincount(idx, weights=g, minlength=m) rounded to g's dtype (float32/float64)."""
    acc = np.zeros(m, np.float64)
    _add(idx, g.reshape(-1), acc)
    return acc if g.dtype == np.float64 else acc.astype(g.dtype)


def take(g, idx, c=1.0):
    """g[idx] * c in g's dtype (float32/float64)."""
    out = np.empty(idx.size, g.dtype)
    _take(g.reshape(-1), idx, np.full(1, c, g.dtype), out)
    return out


@njit(**_opts)
def _maxpool(x, Ho, Wo, kh, kw, sh, sw, ph, pw, dh, dw, out):
    # torch's CPU kernel: the window's first in-bounds position to start with, then a value
    # greater than the running maximum, or a NaN, takes over (the first maximum, the last NaN)
    B, H, W = x.shape
    for b in range(B):
        for oh in range(Ho):
            h0 = oh * sh - ph
            ih0 = h0
            while ih0 < 0:
                ih0 += dh
            for ow in range(Wo):
                w0 = ow * sw - pw
                iw0 = w0
                while iw0 < 0:
                    iw0 += dw
                best = ih0 * W + iw0
                m = -np.inf
                for i in range(kh):
                    ih = h0 + i * dh
                    if ih < 0 or ih >= H:
                        continue
                    for j in range(kw):
                        iw = w0 + j * dw
                        if iw < 0 or iw >= W:
                            continue
                        v = x[b, ih, iw]
                        if v > m or np.isnan(v):
                            m = v
                            best = ih * W + iw
                out[b, oh, ow] = best


def maxpool_argmax(x, Ho, Wo, K, S, P, D):
    """Plane positions (ih W + iw) of max_pool2d's maxima, (B, Ho, Wo), for x (B, H, W) of
    float32/float64."""
    out = np.empty((x.shape[0], Ho, Wo), np.int64)
    _maxpool(np.ascontiguousarray(x), Ho, Wo, K[0], K[1], S[0], S[1], P[0], P[1], D[0], D[1],
             out)
    return out


@njit(**_opts)
def _adaptive_max(x, hs, he, ws, we, out):
    # torch's adaptive max pool kernel: the window's first position to start with, then a
    # value greater than the running maximum, or a NaN, takes over
    B, H, W = x.shape
    for b in range(B):
        for oh in range(hs.size):
            for ow in range(ws.size):
                best = hs[oh] * W + ws[ow]
                m = -np.inf
                for ih in range(hs[oh], he[oh]):
                    for iw in range(ws[ow], we[ow]):
                        v = x[b, ih, iw]
                        if v > m or np.isnan(v):
                            m = v
                            best = ih * W + iw
                out[b, oh, ow] = best


def adaptive_max_argmax(x, hs, he, ws, we):
    """Plane positions (ih W + iw) of adaptive_max_pool2d's maxima, (B, Ho, Wo), for x
    (B, H, W) of float32/float64 and the windows' bounds [hs, he) x [ws, we)."""
    out = np.empty((x.shape[0], hs.size, ws.size), np.int64)
    _adaptive_max(np.ascontiguousarray(x), hs, he, ws, we, out)
    return out
