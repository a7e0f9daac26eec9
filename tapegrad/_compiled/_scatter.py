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

from . import _cache

_opts = dict(nogil=True, cache=True, boundscheck=False, no_cfunc_wrapper=True)


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
    if not _cache.ON:               # not compiled yet (``_cache``): bincount itself
        acc = np.bincount(idx, weights=g.reshape(-1), minlength=m)
        return acc if g.dtype == np.float64 else acc.astype(g.dtype)
    acc = np.zeros(m, np.float64)
    _add(idx, g.reshape(-1), acc)
    return acc if g.dtype == np.float64 else acc.astype(g.dtype)


def take(g, idx, c=1.0):
    """g[idx] * c in g's dtype (float32/float64)."""
    if not _cache.ON:
        return g.reshape(-1)[idx] * g.dtype.type(c)
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
    if not _cache.ON:
        return _maxpool_np(x, Ho, Wo, K[0], K[1], S[0], S[1], P[0], P[1], D[0], D[1])
    out = np.empty((x.shape[0], Ho, Wo), np.int64)
    _maxpool(np.ascontiguousarray(x), Ho, Wo, K[0], K[1], S[0], S[1], P[0], P[1], D[0], D[1],
             out)
    return out


def _first_in(start, step):
    """The first of start, start + step, ... that is not negative (start an array)."""
    k = np.where(start < 0, (-start + step - 1) // step, 0)
    return start + k * step


def _maxpool_np(x, Ho, Wo, kh, kw, sh, sw, ph, pw, dh, dw):
    """``_maxpool`` with numpy (the compiled code not in use yet): the same rule, the
    window's positions in the same order, over every plane and output position at once."""
    B, H, W = x.shape
    h0 = np.arange(Ho) * sh - ph
    w0 = np.arange(Wo) * sw - pw
    best = np.broadcast_to(_first_in(h0, dh)[:, None] * W + _first_in(w0, dw)[None, :],
                           (B, Ho, Wo)).copy()
    m = np.full((B, Ho, Wo), -np.inf)
    for i in range(kh):
        ih = h0 + i * dh
        vh = (ih >= 0) & (ih < H)
        for j in range(kw):
            iw = w0 + j * dw
            ok = vh[:, None] & ((iw >= 0) & (iw < W))[None, :]
            v = x[:, np.clip(ih, 0, H - 1)][:, :, np.clip(iw, 0, W - 1)]
            take = ok & ((v > m) | np.isnan(v))
            m = np.where(take, v, m)
            best = np.where(take, ih[:, None] * W + iw[None, :], best)
    return best


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
    if not _cache.ON:               # numpy: the last NaN of a window, else its first maximum
        H, W = x.shape[1:]
        for oh in range(hs.size):
            for ow in range(ws.size):
                h, w = np.arange(hs[oh], he[oh]), np.arange(ws[ow], we[ow])
                pos = (h[:, None] * W + w[None, :]).reshape(-1)
                v = x[:, hs[oh]:he[oh], ws[ow]:we[ow]].reshape(x.shape[0], -1)
                nan = np.isnan(v)
                last = nan.shape[1] - 1 - np.argmax(nan[:, ::-1], axis=1)
                out[:, oh, ow] = pos[np.where(nan.any(axis=1), last, np.argmax(v, axis=1))]
        return out
    _adaptive_max(np.ascontiguousarray(x), hs, he, ws, we, out)
    return out
