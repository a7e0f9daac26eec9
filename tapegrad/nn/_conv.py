"""Convolutions, pooling, unfold/fold and scatter_reduce, composed from the index rows and ``mm``.

* ``conv1d``/``conv2d``: zero padding is one hidden ``segsum`` (scatter into the padded
  buffer), im2col one hidden ``gather`` laid out as (groups, C/g * K, N * L), one ``mm`` per
  group with the weight viewed as (O, C/g * K), each product scattered to its channels of
  (N, O, *L) by one hidden ``segsum`` (the groups' scatters added), and the bias added on top;
  the top entry is named ``ConvolutionBackward0`` with three input slots (input, weight, bias)
  marked by taps, as torch lists them. Unbatched inputs go through ``unsqueeze(0)`` /
  ``squeeze(0)`` as in torch. The index arrays are cached per (shape, parameters).
* ``max_pool2d``: the maxima's positions are found by a compiled loop (``_scatter``, torch's
  CPU kernel's rule: first maximum, last NaN; numpy for other dtypes); the result is one
  ``gather`` of the input named ``MaxPool2DWithIndicesBackward0``.
* ``avg_pool2d``: padding scatter, window gather, one segment sum of each window (times
  1/divisor when the divisor is the same everywhere, else times the reciprocal divisors, a
  constant), named ``AvgPool2DBackward0``.
* the 1-d pools are torch's composition: ``unsqueeze(-2)``, the 2-d pool, ``squeeze(-2)``.
* ``unfold`` (im2col): hidden padding scatter, one gather named ``Im2ColBackward0``;
  ``fold`` (col2im): one segment sum into the padded output (then a gather of its interior)
  named ``Col2ImBackward0``.
* ``adaptive_avg_pool2d``: gather of the windows' elements, segment sum, times the reciprocal
  window sizes (``AdaptiveAvgPool2DBackward0``; a 1 x 1 output is torch's ``mean``);
  ``adaptive_max_pool2d``: one gather of the maxima (``AdaptiveMaxPool2DBackward0``).
* ``scatter_reduce``: the value is numpy's; the gradient is linear in the cotangent given the
  saved coefficients of torch's ``scatter_reduce_backward`` (sum, prod with zeros, mean,
  amax/amin split evenly between ties), recorded as hidden products by constant coefficient
  tensors feeding ``_merge`` (``ScatterReduceBackward0``). The coefficients are constants, so
  a second derivative (``create_graph``) through prod/amax/amin is not supported.
"""
import functools
import math

import numpy as np

from .._state import STATE
from .._core.names import ONE_INPUT, name_id as _name_id
from ..autograd.function import Function
from ..tensor import GUARD
from . import _fused
from .._schema import F_HIDDEN
from ..tensor import Tensor, _guard_sel, _wrap
from .._record import _nm, _out, _record_index, _src, _tape_for
from .._record import hide, named, saves_inputs, saves_result, tap_entry
from .._math import exact
from .._shape import _flat
from .._compiled import _scatter
from .._shape import (_add_entry, _install_index_family, _merge, _scatter_entry, _scatter_setup,
                      squeeze, unsqueeze)
from .._matrix import matmul
from ..tensor import int64
import builtins
from .._core.names import multi_name_id
from .._record import _set_name_id, entry_of
from .._info import _warn_once

# the names of torch's namespace this family defines (tapegrad/__init__.py imports them)
__all__ = ["conv1d", "conv2d", "index_reduce", "scatter_reduce"]

ONE_INPUT.update({"AvgPool2DBackward0", "AdaptiveAvgPool2DBackward0"})

_TNAME = {"float32": "torch.FloatTensor", "float64": "torch.DoubleTensor",
          "int64": "torch.LongTensor", "int32": "torch.IntTensor"}
_SCALAR = {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
           "float16": "Half", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _recording(x):
    return isinstance(x, Tensor) and x._rg and STATE.enabled


def _gather(x, idx, shape, name="ConvolutionBackward0", hidden=True):
    """y = x.flat[idx] (of ``shape``), one gather entry when x records."""
    y = _take(np.asarray(x._data).reshape(-1), idx).reshape(shape)
    if not _recording(x):
        return _wrap(y, x._dtype)
    tp, e, n = _record_index(x, "gather", np.ascontiguousarray(idx, np.int64).reshape(-1), y,
                             nm=_nm(name))
    out = _out(y, x._dtype, tp, n)
    if hidden:
        hide(out)
    return out


def _take(flat, idx):
    """flat[idx] (a compiled loop for big float arrays: ~2x numpy's fancy take)."""
    idx = idx.reshape(-1)
    if idx.size >= 4096 and flat.dtype.kind == "f" and flat.dtype.itemsize >= 4:
        return _scatter.take(flat, idx)
    return flat[idx]


@functools.lru_cache(maxsize=64)
def _pad_index(shape, pads):
    """Flat positions, in the padded buffer, of the elements of x (``shape``)."""
    k = len(pads)
    pshape = shape[:-k] + tuple(s + lo + hi for s, (lo, hi) in zip(shape[-k:], pads))
    sl = (Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(shape[-k:], pads))
    pos = np.ascontiguousarray(np.arange(int(np.prod(pshape, dtype=np.int64)),
                                         dtype=np.int64).reshape(pshape)[sl].reshape(-1))
    pos.setflags(write=False)
    return pos


def _pad_zero(x, pads, fill=0.0, hidden=True):
    """x (N, C, *S) padded by pads [(lo, hi) per spatial dim] with ``fill``: one hidden segsum
    (scatter of x into the padded buffer) when x records."""
    if not any(lo or hi for lo, hi in pads):
        return x
    d = np.asarray(x._data)
    k = len(pads)
    shape = d.shape[:-k] + tuple(s + lo + hi for s, (lo, hi) in zip(d.shape[-k:], pads))
    y = np.full(shape, fill, d.dtype)
    sl = (Ellipsis,) + tuple(slice(lo, lo + s) for s, (lo, _) in zip(d.shape[-k:], pads))
    y[sl] = d
    if not _recording(x):
        return _wrap(y, x._dtype)
    pos = _pad_index(tuple(d.shape), tuple(tuple(p) for p in pads))
    tp = _tape_for(x)
    nn = _scatter_entry(tp, _src(x, tp), pos, y.size, x._dtype.slot,
                        _nm("ConstantPadNdBackward0"), F_HIDDEN if hidden else 0)
    return _out(y, x._dtype, tp, nn)


# ----------------------------------------------------------------------------- convolution
def _tuple(v, k, name):
    if isinstance(v, (tuple, list)):
        v = tuple(int(a) for a in v)
    else:
        v = (int(v),)
    if len(v) == 1:
        v = v * k
    if len(v) != k:
        raise RuntimeError("expected %s to be a single integer value or a list of %d values to "
                           "match the convolution dimensions, but got %s=%s"
                           % (name, k, name, list(v)))
    return v


@functools.lru_cache(maxsize=64)
def _im2col_index(N, C, P, O, K, s, d, g):
    """Flat positions in the padded input (N, C, *P) of im2col laid out as
    (g, C/g * prod(K), N * prod(O))."""
    k = len(P)
    pstr = [int(np.prod(P[j + 1:], dtype=np.int64)) for j in range(k)]
    plane = np.zeros((1, 1), np.int64)
    for j in range(k):
        pos = (np.arange(O[j], dtype=np.int64)[None, :] * s[j]
               + np.arange(K[j], dtype=np.int64)[:, None] * d[j]) * pstr[j]      # (K_j, O_j)
        plane = (plane[:, None, :, None] + pos[None, :, None, :]).reshape(
            plane.shape[0] * K[j], plane.shape[1] * O[j])
    Pn = int(np.prod(P, dtype=np.int64))
    Cg = C // g
    idx = (np.arange(N, dtype=np.int64)[None, None, None, :, None] * (C * Pn)
           + (np.arange(g, dtype=np.int64)[:, None, None, None, None] * Cg
              + np.arange(Cg, dtype=np.int64)[None, :, None, None, None]) * Pn
           + plane[None, None, :, None, :])
    idx = idx.reshape(g, Cg * plane.shape[0], N * plane.shape[1])
    idx.setflags(write=False)
    return idx


@functools.lru_cache(maxsize=64)
def _out_pos(O, N, L):
    """Flat positions in (N, O, L) of the elements of (O, N, L), in order."""
    idx = np.arange(O * N * L, dtype=np.int64).reshape(N, O, L).transpose(1, 0, 2).reshape(-1)
    idx = np.ascontiguousarray(idx)
    idx.setflags(write=False)
    return idx


def _conv(nd, input, weight, bias, stride, padding, dilation, groups):
    fname = "conv%dd" % nd
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("%s(): argument 'input' (position 1) must be Tensor" % fname)
    x = input
    if x._data.ndim not in (nd + 1, nd + 2):
        raise RuntimeError("Expected %dD (unbatched) or %dD (batched) input to %s, but got input of "
                           "size: %s" % (nd + 1, nd + 2, fname, list(x._data.shape)))
    if x._data.ndim == nd + 1:
        y = _conv(nd, unsqueeze(x, 0), weight, bias, stride, padding, dilation, groups)
        return squeeze(y, 0)
    wd = weight._data.ndim
    k = max(wd - 2, 1)
    groups = int(groups)
    stride = _tuple(_tuple(stride, nd, "stride"), k, "stride")
    dilation = _tuple(_tuple(dilation, nd, "dilation"), k, "dilation")
    pad_str = None
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError("Invalid padding string: '%s'" % padding)
        pad_str = padding
        pads = [(0, 0)] * k
        if padding == "same" and any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
    else:
        pp = _tuple(_tuple(padding, nd, "padding"), k, "padding")
        pads = [(p, p) for p in pp]
    if any(p < 0 for lo_hi in pads for p in lo_hi):
        raise RuntimeError("negative padding is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(v <= 0 for v in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    xs, ws = tuple(x._data.shape), tuple(weight._data.shape)
    if wd != x._data.ndim:
        raise RuntimeError("Expected %d-dimensional input for %d-dimensional weight %s, but got "
                           "%d-dimensional input of size %s instead"
                           % (wd, wd, list(ws), x._data.ndim, list(xs)))
    if ws[0] < groups or ws[0] % groups:
        raise RuntimeError("Given groups=%d, expected weight to be divisible by %d at dimension 0, "
                           "but got weight of size [%s] instead" % (groups, groups, list(ws)))
    if xs[1] != ws[1] * groups:
        raise RuntimeError("Given groups=%d, weight of size %s, expected input%s to have %d "
                           "channels, but got %d channels instead"
                           % (groups, list(ws), list(xs), ws[1] * groups, xs[1]))
    if bias is not None and (bias._data.ndim != 1 or bias._data.shape[0] != ws[0]):
        raise RuntimeError("Given weight of size %s, expected bias to be 1-dimensional with %d "
                           "elements, but got bias of size %s instead"
                           % (list(ws), ws[0], list(bias._data.shape)))
    if x._dtype is not weight._dtype or (bias is not None and bias._dtype is not x._dtype):
        other = weight if x._dtype is not weight._dtype else bias
        if x._dtype.name == "float32":
            raise RuntimeError("Input type (%s) and %s type (%s) should be the same or input should "
                               "be a MKLDNN tensor and weight is a dense tensor"
                               % (_TNAME.get(x._dtype.name, x._dtype.name),
                                  "weight" if other is weight else "bias",
                                  _TNAME.get(other._dtype.name, other._dtype.name)))
        raise RuntimeError("expected scalar type %s but found %s"
                           % (_SCALAR.get(x._dtype.name), _SCALAR.get(other._dtype.name)))
    K = ws[2:]
    if pad_str == "same":
        pads = []
        for kk, dd in zip(K, dilation):
            tot = dd * (kk - 1)
            pads.append((tot // 2, tot - tot // 2))
        if any(lo != hi for lo, hi in pads):
            # torch: a zero-padded copy for the odd part (ConstantPadNdBackward0), then the
            # symmetric padding inside the convolution
            import warnings
            warnings.warn("Using padding='same' with even kernel lengths and odd dilation may "
                          "require a zero-padded copy of the input be created", UserWarning)
            x = _pad_zero(x, [(0, hi - lo) for lo, hi in pads], hidden=False)
            pads = [(lo, lo) for lo, _ in pads]
    xs = tuple(x._data.shape)
    S = xs[2:]
    P = tuple(s + lo + hi for s, (lo, hi) in zip(S, pads))
    eff = tuple(dd * (kk - 1) + 1 for kk, dd in zip(K, dilation))
    if any(e > p for e, p in zip(eff, P)):
        raise RuntimeError("Calculated padded input size per channel: (%s). Kernel size: (%s). "
                           "Kernel size can't be greater than actual input size"
                           % (" x ".join(map(str, P)), " x ".join(map(str, eff))))
    Os = tuple((p - e) // s + 1 for p, e, s in zip(P, eff, stride))
    N, C, Oc = xs[0], xs[1], ws[0]
    if k == 2 and groups == 1 and _fused_conv_ok(x, weight, bias):
        return _Conv2d.apply(x, weight, bias if bias is not None else _placeholder(x),
                             bias is not None, tuple(pads), stride, dilation, Os)
    g = groups
    L = int(np.prod(Os, dtype=np.int64))
    idx = _im2col_index(N, C, P, Os, K, stride, dilation, g)
    xp = _pad_zero(x, pads)
    padded = xp is not x
    cols = _gather(xp, idx, idx.shape)                             # (g, C/g K, N L)
    # one mm per group (no batched matmul: its own tap marks would shadow ours), each
    # product (O/g, N L) scattered to its channels of (N, O, *L) by one hidden segsum (the
    # groups' scatters added up)
    Og, CKg = Oc // g, idx.shape[1]
    w2 = weight.reshape(Oc, CKg)                                   # (O, C/g K)
    c2 = cols.reshape(g * CKg, N * L) if g > 1 else cols.reshape(CKg, N * L)
    pos = _out_pos(Oc, N, L).reshape(Oc, N * L)
    dt = x._dtype
    yv = np.empty((N, Oc, L), dt.np)
    # the bias: one more product per group, b (O/g, 1) @ ones (1, N L), added to the group's
    # product before the scatter (its VJP a matrix-vector product: no (N, O, *L) expand
    # index to record and scatter back)
    b2 = bias.reshape(Oc, 1) if bias is not None else None
    ones = _wrap(np.ones((1, N * L), dt.np), dt) if bias is not None else None
    live = []
    for gi in range(g):
        wg = w2[gi * Og:(gi + 1) * Og] if g > 1 else w2
        cg = c2[gi * CKg:(gi + 1) * CKg] if g > 1 else c2
        yg = matmul(wg, cg)                                        # (O/g, N L)
        if b2 is not None:
            bg = b2[gi * Og:(gi + 1) * Og] if g > 1 else b2
            yb = matmul(bg, ones)
            ysum = yg + yb
            hide(bg if g > 1 else None, yb, yg)
            yg = ysum
        yd = np.asarray(yg._data)
        yv[:, gi * Og:(gi + 1) * Og] = yd.reshape(Og, N, L).transpose(1, 0, 2)
        if yg._tape is not None:
            hide(wg if g > 1 else None, cg if g > 1 else None, yg)
            live.append((gi, yg))
    acc = -1
    if live:
        tp = _tape_for(*[t for _, t in live])
        nm = _nm("ConvolutionBackward0")
        for j, (gi, yg) in enumerate(live):
            # the last entry is the top one (renamed below, or hidden under the bias add)
            fl = 0 if len(live) == 1 else F_HIDDEN
            sc = _scatter_entry(tp, _src(yg, tp), pos[gi * Og:(gi + 1) * Og].reshape(-1),
                                yv.size, dt.slot, nm, fl)
            acc = sc if j == 0 else _add_entry(tp, acc, sc, None, yv.size, dt.slot, nm,
                                               F_HIDDEN if j < len(live) - 1 else 0)
    yv = yv.reshape((N, Oc) + Os)
    y = _wrap(yv, dt) if acc < 0 else _out(yv, dt, tp, acc)
    if c2 is not cols:
        hide(c2)
    out = y
    if out._tape is not None:
        tap_entry(xp if padded else cols, 0)
        if w2 is not weight:
            tap_entry(w2, 1)
        if b2 is not None:
            tap_entry(b2, 2)
        named(out, "ConvolutionBackward0", 3)
    return out


# ----------------------------------------------------------------------------- fused conv2d
def _fused_conv_ok(x, w, b):
    """Whether conv2d runs as one entry (``_Conv2d``): a graph being recorded outside
    tapegrad.func, float arrays, nothing empty."""
    if GUARD[0] is not None or not _fused.ENABLED[0] or not _fused._float(x):
        return False
    if not (STATE.enabled and (x._rg or w._rg or (b is not None and b._rg))):
        return False
    arrs = (x._data, w._data) + (() if b is None else (b._data,))
    return all(type(a) is np.ndarray and a.size for a in arrs)


def _placeholder(x):
    return _wrap(np.zeros(0, x._data.dtype), x._dtype)


def _windows2d(xp, K, stride, dilation, Os):
    """(N, C, Oh, Ow, Kh, Kw) strided view of the padded input: the im2col windows."""
    N, C = xp.shape[:2]
    st = xp.strides
    return np.lib.stride_tricks.as_strided(
        xp, (N, C, Os[0], Os[1], K[0], K[1]),
        (st[0], st[1], st[2] * stride[0], st[3] * stride[1], st[2] * dilation[0],
         st[3] * dilation[1]), writeable=False)


class _Conv2d(Function):
    """conv2d (groups 1) as one entry: im2col by a strided view copied once (no index
    arrays), one BLAS product, the bias added; backward dW = g^T cols, db = sum(g),
    dx = col2im(g W) by one strided add per kernel offset. Node ``ConvolutionBackward0``
    over (input, weight, bias), as torch's; a graph of the gradients (create_graph) is
    built from unfold / fold / matmul, differentiable again."""

    @staticmethod
    def _node_name_id():
        return _name_id("ConvolutionBackward0")

    @staticmethod
    def forward(ctx, x, w, b, has_b, pads, stride, dilation, Os):
        xd = np.asarray(x._data)
        N, C = xd.shape[:2]
        O, K = w._data.shape[0], w._data.shape[2:]
        xp = xd
        if any(lo or hi for lo, hi in pads):
            xp = np.zeros((N, C) + tuple(s + lo + hi for s, (lo, hi) in
                                         zip(xd.shape[2:], pads)), xd.dtype)
            xp[:, :, pads[0][0]:pads[0][0] + xd.shape[2], pads[1][0]:pads[1][0] + xd.shape[3]] = xd
        L = Os[0] * Os[1]
        cols = np.ascontiguousarray(_windows2d(xp, K, stride, dilation, Os).transpose(
            0, 2, 3, 1, 4, 5)).reshape(N * L, C * K[0] * K[1])
        w2 = np.ascontiguousarray(w._data).reshape(O, -1)
        y2 = np.matmul(cols, w2.T)                                   # (N L, O)
        if has_b:
            y2 += b._data
        y = np.ascontiguousarray(y2.reshape(N, L, O).transpose(0, 2, 1)).reshape(
            (N, O) + tuple(Os))
        ctx.arrays = (cols, w2, xp.shape)
        ctx.conf = (has_b, pads, stride, dilation, Os, xd.shape)
        ctx.save_for_backward(x, w, b if has_b else None)
        return _wrap(y, x._dtype)

    @staticmethod
    def backward(ctx, g):
        x, w, b = ctx.saved_tensors
        has_b, pads, stride, dilation, Os, xshape = ctx.conf
        need = ctx.needs_input_grad
        if STATE.enabled:                   # create_graph: recorded, differentiable again
            return _conv2d_vjp_tensors(ctx, x, w, g, need) + (None,) * 5
        cols, w2, pshape = ctx.arrays
        N, O = g._data.shape[:2]
        L = Os[0] * Os[1]
        g2 = np.ascontiguousarray(np.asarray(g._data).reshape(N, O, L).transpose(0, 2, 1)
                                  ).reshape(N * L, O)
        d = g._dtype
        gw = _wrap(np.matmul(g2.T, cols).reshape(w._data.shape), d) if need[1] else None
        gb = _wrap(g2.sum(0), d) if has_b and need[2] else None
        gx = None
        if need[0]:
            K = w._data.shape[2:]
            C = xshape[1]
            dc = np.matmul(g2, w2).reshape(N, Os[0], Os[1], C, K[0], K[1])
            dxp = np.zeros(pshape, dc.dtype)
            s0, s1 = stride
            for i in range(K[0]):
                h0 = i * dilation[0]
                for j in range(K[1]):
                    w0 = j * dilation[1]
                    dxp[:, :, h0:h0 + s0 * (Os[0] - 1) + 1:s0,
                        w0:w0 + s1 * (Os[1] - 1) + 1:s1] += dc[..., i, j].transpose(0, 3, 1, 2)
            dx = dxp[:, :, pads[0][0]:pads[0][0] + xshape[2], pads[1][0]:pads[1][0] + xshape[3]]
            gx = _wrap(np.ascontiguousarray(dx), d)
        return gx, gw, gb, None, None, None, None, None


def _conv2d_vjp_tensors(ctx, x, w, g, need):
    """The fused conv2d's gradients as recorded tensor operations (create_graph=True)."""
    has_b, pads, stride, dilation, Os, xshape = ctx.conf
    N, O = g.shape[0], g.shape[1]
    K = tuple(w.shape[2:])
    pad = (pads[0][0], pads[1][0])
    g2 = g.reshape(N, O, -1)                                          # (N, O, L)
    gx = gw = gb = None
    if need[1]:
        cols = unfold(x, K, dilation, pad, stride)                    # (N, C K, L)
        gw = matmul(g2, cols.transpose(1, 2)).sum(0).reshape(w.shape)
    if has_b and need[2]:
        gb = g2.sum((0, 2))
    if need[0]:
        dcols = matmul(w.reshape(O, -1).t(), g2)                      # (N, C K, L)
        gx = fold(dcols, tuple(xshape[2:]), K, dilation, pad, stride)
    return gx, gw, gb


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(2, input, weight, bias, stride, padding, dilation, groups)


# ----------------------------------------------------------------------------- pooling
def _pair(v, name, k=2):
    if isinstance(v, (tuple, list)):
        v = tuple(int(a) for a in v)
        if len(v) == 1:
            v = v * k
    else:
        v = (int(v),) * k
    if len(v) != k:
        raise RuntimeError("%s must either be a single int, or a tuple of %d ints" % (name, k))
    return v


def _pool_out(n, k, p, s, d, ceil):
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = num // s + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _pool_setup(x, kernel_size, stride, padding, dilation, ceil_mode, fname):
    if fname == "max_pool2d":
        kname, sname = "max_pool2d: kernel_size", "max_pool2d: stride"
    else:
        kname, sname = "avg_pool2d: kernel_size", "avg_pool2d: stride"
    K = _pair(kernel_size, kname)
    S = K if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) \
        else _pair(stride, sname)
    Pd = _pair(padding, fname + ": padding")
    D = _pair(dilation, fname + ": dilation")
    nd = x._data.ndim
    if nd not in (3, 4) or (nd == 4 and 0 in x._data.shape[1:]) or (nd == 3 and 0 in x._data.shape):
        if fname == "max_pool2d":
            raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    if any(k <= 0 for k in K):
        raise RuntimeError("kernel size should be greater than zero, but got kH: %d kW: %d" % K)
    if any(s <= 0 for s in S):
        raise RuntimeError("stride should not be zero")
    if any(d <= 0 for d in D):
        raise RuntimeError("dilation should be greater than zero, but got dilationH: %d "
                           "dilationW: %d" % D)
    for k, p, d in zip(K, Pd, D):
        if fname == "max_pool2d" and p > ((k - 1) * d + 1) // 2:
            raise RuntimeError("pad should be at most half of effective kernel size, but got "
                               "pad=%d, kernel_size=%d and dilation=%d" % (p, k, d))
        if fname != "max_pool2d" and p > k // 2:
            raise RuntimeError("pad should be at most half of effective kernel size, but got "
                               "pad=%d, kernel_size=%d and dilation=%d" % (p, k, d))
    H, W = x._data.shape[-2:]
    Ho = _pool_out(H, K[0], Pd[0], S[0], D[0], ceil_mode)
    Wo = _pool_out(W, K[1], Pd[1], S[1], D[1], ceil_mode)
    if Ho < 1 or Wo < 1:
        C = x._data.shape[-3]
        raise RuntimeError("Given input size: (%dx%dx%d). Calculated output size: (%dx%dx%d). "
                           "Output size is too small" % (C, H, W, C, Ho, Wo))
    return K, S, Pd, D, Ho, Wo


def _windows(H, W, K, S, Pd, D, Ho, Wo, ceil_pad):
    """Positions (Ho, Wo, kh*kw) in the padded plane (H + 2p + extra, W + ...)."""
    Pw = W + 2 * Pd[1] + ceil_pad[1]
    r = (np.arange(Ho)[:, None] * S[0] + np.arange(K[0])[None, :] * D[0])     # (Ho, kh)
    c = (np.arange(Wo)[:, None] * S[1] + np.arange(K[1])[None, :] * D[1])     # (Wo, kw)
    pos = r[:, None, :, None] * Pw + c[None, :, None, :]
    return pos.reshape(Ho, Wo, K[0] * K[1]).astype(np.int64)


@functools.lru_cache(maxsize=64)
def _pool_index(B, H, W, K, S, Pd, D, Ho, Wo, ex):
    """Flat positions in the padded (B, Ph, Pw) of the windows (B, Ho, Wo, kh * kw)."""
    Ph, Pw = H + 2 * Pd[0] + ex[0], W + 2 * Pd[1] + ex[1]
    pos = _windows(H, W, K, S, Pd, D, Ho, Wo, ex)
    idx = pos[None] + (np.arange(B, dtype=np.int64) * (Ph * Pw))[:, None, None, None]
    idx = np.ascontiguousarray(idx.reshape(-1))
    idx.setflags(write=False)
    return idx


@functools.lru_cache(maxsize=64)
def _seg_index(n, k):
    """0, .., 0, 1, .., 1, ..: each of n segments k times."""
    idx = np.repeat(np.arange(n, dtype=np.int64), k)
    idx.setflags(write=False)
    return idx


def _extra(n, k, p, s, d, o):
    """Padding past the high end that the last window (ceil_mode) reaches."""
    return max(0, (o - 1) * s + d * (k - 1) + 1 - (n + 2 * p))


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    x = input
    K, S, Pd, D, Ho, Wo = _pool_setup(x, kernel_size, stride, padding, dilation, ceil_mode,
                                      "max_pool2d")
    _guard_sel(x, "order", None, 2)      # (tapegrad.func: the maxima's positions)
    d = np.asarray(x._data)
    H, W = d.shape[-2:]
    ex = (_extra(H, K[0], Pd[0], S[0], D[0], Ho), _extra(W, K[1], Pd[1], S[1], D[1], Wo))
    lead = d.shape[:-2]
    B = int(np.prod(lead, dtype=np.int64))
    if d.dtype.kind == "f" and d.dtype.itemsize >= 4:
        plane = _scatter.maxpool_argmax(d.reshape(B, H, W), Ho, Wo, K, S, Pd, D)
    else:
        plane = _maxpool_numpy(d, B, H, W, K, S, Pd, D, Ho, Wo, ex)
    flat = plane + (np.arange(B, dtype=np.int64) * (H * W))[:, None, None]
    out = _gather(x, flat.reshape(-1), lead + (Ho, Wo), "MaxPool2DWithIndicesBackward0",
                  hidden=False)
    if return_indices:
        return out, _wrap(plane.reshape(lead + (Ho, Wo)).astype(np.int64), int64)
    return out


def _maxpool_numpy(d, B, H, W, K, S, Pd, D, Ho, Wo, ex):
    """max_pool2d's argmax positions (B, Ho, Wo) in numpy (dtypes without the kernel)."""
    fill = -np.inf if d.dtype.kind == "f" else np.iinfo(d.dtype).min
    Ph, Pw = H + 2 * Pd[0] + ex[0], W + 2 * Pd[1] + ex[1]
    xp = np.full((B, Ph, Pw), fill, d.dtype)
    xp[:, Pd[0]:Pd[0] + H, Pd[1]:Pd[1] + W] = d.reshape(B, H, W)
    pos = _windows(H, W, K, S, Pd, D, Ho, Wo, ex)
    win = xp.reshape(B, -1)[:, pos]                                       # (B, Ho, Wo, kk)
    if d.dtype.kind == "f":
        isn = np.isnan(win)
        # torch keeps the last NaN of a window, otherwise the first maximum
        am = np.where(isn.any(-1), win.shape[-1] - 1 - np.argmax(isn[..., ::-1], -1),
                      np.argmax(np.where(isn, -np.inf, win), -1))
    else:
        am = np.argmax(win, -1)
    ppos = np.take_along_axis(np.broadcast_to(pos, win.shape), am[..., None], -1)[..., 0]
    pr, pc = ppos // Pw - Pd[0], ppos % Pw - Pd[1]
    return pr * W + pc                                                   # (B, Ho, Wo)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    x = input
    if x._data.ndim < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-%d, %d], but got -3)"
                         % (max(x._data.ndim, 1), max(x._data.ndim, 1) - 1))
    if x._data.ndim == 2:
        raise IndexError("Dimension out of range (expected to be in range of [-2, 1], but got -3)")
    K, S, Pd, D, Ho, Wo = _pool_setup(x, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    if x._dtype._cat < 2:
        raise NotImplementedError("avg_pool2d of integer tensors is not supported by tapegrad")
    d = np.asarray(x._data)
    H, W = d.shape[-2:]
    ex = (_extra(H, K[0], Pd[0], S[0], 1, Ho), _extra(W, K[1], Pd[1], S[1], 1, Wo))
    lead = d.shape[:-2]
    B = int(np.prod(lead, dtype=np.int64))
    # divisors as torch's kernel: windows clipped to the padded input (count_include_pad) or
    # to the input
    hs = np.arange(Ho) * S[0] - Pd[0]
    ws = np.arange(Wo) * S[1] - Pd[1]
    he, we = np.minimum(hs + K[0], H + Pd[0]), np.minimum(ws + K[1], W + Pd[1])
    if divisor_override is not None:
        div = np.full((Ho, Wo), float(divisor_override))
    elif count_include_pad:
        div = (he - hs)[:, None] * (we - ws)[None, :]
    else:
        div = ((np.minimum(he, H) - np.maximum(hs, 0))[:, None]
               * (np.minimum(we, W) - np.maximum(ws, 0))[None, :])
    x3 = x.reshape(B, H, W) if x._data.ndim != 3 or B != lead[0] else x
    xp = _pad_zero(x3, [(Pd[0], Pd[0] + ex[0]), (Pd[1], Pd[1] + ex[1])])
    kk = K[0] * K[1]
    idx = _pool_index(B, H, W, K, S, Pd, D, Ho, Wo, ex)
    win = _gather(xp, idx, (B * Ho * Wo * kk,))                  # the windows, one after another
    wv = np.asarray(win._data).reshape(-1, kk)
    sv = wv.sum(-1, dtype=np.float64).astype(d.dtype).reshape(lead + (Ho, Wo))
    val = (sv / div.astype(d.dtype)).astype(d.dtype)
    # the window sums: one segment sum of the windows (times 1 / divisor when it is the same
    # for every window), then times the reciprocal divisors (a constant) otherwise
    uniform = bool(np.all(div == div.flat[0]))
    if win._tape is None:
        out = _wrap(val, x._dtype)
    else:
        tp, _, n = _record_index(win, "segsum", _seg_index(B * Ho * Wo, kk), sv,
                                 c=1.0 / float(div.flat[0]) if uniform else 1.0,
                                 nm=_nm("AvgPool2DBackward0"))
        out = _out(val if uniform else sv, x._dtype, tp, n)
        if not uniform:
            s = out
            inv = _wrap(np.broadcast_to((1.0 / div).astype(d.dtype), sv.shape).copy(), x._dtype)
            out = s * inv
            hide(s)
        hide(x3 if x3 is not x else None)
        named(out, "AvgPool2DBackward0")
    return exact(out, val)


def _pool1d_dims(x, fname):
    nd = x._data.ndim
    if fname == "max_pool1d" and (nd not in (2, 3) or 0 in x._data.shape[-2:]):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim "
                           "batch size for input, but got:%s" % list(x._data.shape))
    if fname == "avg_pool1d" and nd not in (2, 3):
        raise RuntimeError("Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument "
                           "#1 'self' (while checking arguments for avg_pool1d)" % nd)


def _one(v, name):
    if isinstance(v, (tuple, list)):
        if len(v) != 1:
            raise RuntimeError("%s must be an int or a tuple of 1 int" % name)
        return int(v[0])
    return int(v)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    _pool1d_dims(input, "max_pool1d")
    k = _one(kernel_size, "max_pool1d() kernel_size")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) \
        else _one(stride, "max_pool1d() stride")
    p, dl = _one(padding, "max_pool1d() padding"), _one(dilation, "max_pool1d() dilation")
    if k <= 0:
        raise RuntimeError("max_pool1d() kernel_size must be greater than zero, but got %d" % k)
    if s <= 0:
        raise RuntimeError("max_pool1d() stride must be greater than zero, but got %d" % s)
    if p < 0:
        raise RuntimeError("max_pool1d() padding must be non-negative, but got %d" % p)
    if p > k // 2:
        raise RuntimeError("max_pool1d() padding should be at most half of kernel size, but got "
                           "padding=%d and kernel_size=%d" % (p, k))
    if dl <= 0:
        raise RuntimeError("max_pool1d() dilation must be greater than zero, but got %d" % dl)
    L = input._data.shape[-1]
    if _pool_out(L, k, p, s, dl, ceil_mode) < 1:
        raise RuntimeError("max_pool1d() Invalid computed output size: %d"
                           % _pool_out(L, k, p, s, dl, ceil_mode))
    r = max_pool2d(unsqueeze(input, -2), (1, k), (1, s), (0, p), (1, dl), ceil_mode, return_indices)
    if return_indices:
        return squeeze(r[0], -2), squeeze(r[1], -2)
    return squeeze(r, -2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    _pool1d_dims(input, "avg_pool1d")
    k = _one(kernel_size, "avg_pool1d() kernel_size")
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) \
        else _one(stride, "avg_pool1d() stride")
    p = _one(padding, "avg_pool1d() padding")
    y = avg_pool2d(unsqueeze(input, -2), (1, k), (1, s), (0, p), ceil_mode, count_include_pad)
    return squeeze(y, -2)


# ----------------------------------------------------------------------------- unfold / fold
def _pair4(v, name):
    """A 2-d op's int or pair argument as a pair (unfold / fold)."""
    if isinstance(v, (tuple, list)):
        v = tuple(int(a) for a in v)
        if len(v) == 1:
            v = v * 2
    else:
        v = (int(v),) * 2
    if len(v) != 2:
        raise RuntimeError("%s must be an int or a tuple of two ints" % name)
    return v


def _blocks_args(kernel_size, dilation, padding, stride):
    K, D = _pair4(kernel_size, "kernel_size"), _pair4(dilation, "dilation")
    P, S = _pair4(padding, "padding"), _pair4(stride, "stride")
    if K[0] <= 0 or K[1] <= 0:
        raise RuntimeError("kernel size should be greater than zero, but got kernel_height: %d "
                           "kernel_width: %d" % K)
    if D[0] <= 0 or D[1] <= 0:
        raise RuntimeError("dilation should be greater than zero, but got dilation_height: %d "
                           "dilation_width: %d" % D)
    if P[0] < 0 or P[1] < 0:
        raise RuntimeError("padding should be non-negative, but got pad_height: %d pad_width: %d"
                           % P)
    if S[0] <= 0 or S[1] <= 0:
        raise RuntimeError("stride should be greater than zero, but got stride_height: %d "
                           "stride_width: %d" % S)
    return K, D, P, S


def _nblocks(HW, K, D, P, S):
    return tuple((HW[i] + 2 * P[i] - (D[i] * (K[i] - 1) + 1)) // S[i] + 1 for i in range(2))


@functools.lru_cache(maxsize=64)
def _unfold_index(N, C, Pp, O, K, S, D):
    """Flat positions in the padded (N, C, *Pp) of unfold's (N, C kh kw, L)."""
    ck, nl = C * K[0] * K[1], N * O[0] * O[1]
    idx = _im2col_index(N, C, Pp, O, K, S, D, 1).reshape(ck, N, nl // max(N, 1))
    idx = np.ascontiguousarray(idx.transpose(1, 0, 2)).reshape(-1)
    idx.setflags(write=False)
    return idx


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: (N, C, H, W) -> (N, C kh kw, L); one gather of the (zero-padded) input
    named ``Im2ColBackward0`` (unbatched (C, H, W) -> (C kh kw, L), as torch)."""
    x = input
    nd = x._data.ndim
    if nd < 3:
        raise IndexError("Dimension out of range (expected to be in range of [-%d, %d], but got %d)"
                         % (max(nd, 1), max(nd, 1) - 1, nd))
    if nd != 4 and nd != 3 or 0 in x._data.shape[-3:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and "
                           "other non-zero dimensions for input, but got: %s"
                           % list(x._data.shape))
    K, D, P, S = _blocks_args(kernel_size, dilation, padding, stride)
    shp = x._data.shape
    N, C, H, W = (1,) + tuple(shp) if nd == 3 else tuple(shp)
    O = _nblocks((H, W), K, D, P, S)
    if O[0] < 1 or O[1] < 1:
        raise RuntimeError("Given input with spatial size (%d, %d), kernel_size=(%d, %d), "
                           "dilation=(%d, %d), padding=(%d, %d), calculated shape of the array of "
                           "sliding blocks as (%d, %d), but its components must be at least one."
                           % ((H, W) + K + D + P + O))
    Pp = (H + 2 * P[0], W + 2 * P[1])
    idx = _unfold_index(N, C, Pp, O, K, S, D)
    xp = _pad_zero(x, [(P[0], P[0]), (P[1], P[1])])
    shape = (C * K[0] * K[1], O[0] * O[1])
    return _gather(xp, idx, shape if nd == 3 else (N,) + shape, "Im2ColBackward0", hidden=False)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im: (N, C kh kw, L) -> (N, C, H, W), the blocks added up; one segment sum into the
    zero-padded output (then a gather of its interior when padded), named
    ``Col2ImBackward0``."""
    c = input
    nd = c._data.ndim
    if nd not in (2, 3) or 0 in c._data.shape[-2:]:
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch "
                           "size and non-zero dimensions for input, but got: %s"
                           % list(c._data.shape))
    HW = _pair4(output_size, "output_size")
    K, D, P, S = _blocks_args(kernel_size, dilation, padding, stride)
    shp = c._data.shape
    N, CK, L = (1,) + tuple(shp) if nd == 2 else tuple(shp)
    if CK % (K[0] * K[1]):
        raise RuntimeError("Expected size of input's dimension %d to be divisible by the product "
                           "of kernel_size, but got input.size(%d)=%d and kernel_size=(%d, %d)."
                           % ((nd - 2, nd - 2, CK) + K))
    O = _nblocks(HW, K, D, P, S)
    if O[0] * O[1] != L:
        raise RuntimeError("Given output_size=(%d, %d), kernel_size=(%d, %d), dilation=(%d, %d), "
                           "padding=(%d, %d), stride=(%d, %d), expected size of input's dimension "
                           "%d to match the calculated number of sliding blocks %d * %d = %d, but "
                           "got input.size(%d)=%d."
                           % (HW + K + D + P + S + (nd - 1,) + O + (O[0] * O[1], nd - 1, L)))
    if O[0] < 1 or O[1] < 1:
        raise RuntimeError("Given output_size=(%d, %d), kernel_size=(%d, %d), dilation=(%d, %d), "
                           "padding=(%d, %d), stride=(%d, %d), calculated shape of the array of "
                           "sliding blocks as (%d, %d), but its components must be at least one."
                           % (HW + K + D + P + S + O))
    if c._dtype._cat < 2:
        raise NotImplementedError("fold of integer tensors is not supported by tapegrad")
    C = CK // (K[0] * K[1])
    Pp = (HW[0] + 2 * P[0], HW[1] + 2 * P[1])
    idx = _unfold_index(N, C, Pp, O, K, S, D)
    m = N * C * Pp[0] * Pp[1]
    cv = np.ascontiguousarray(c._data).reshape(-1)
    yp = (_scatter.add(idx, cv, m) if cv.dtype.itemsize >= 4
          else np.bincount(idx, weights=cv, minlength=m).astype(cv.dtype))
    yp = yp.reshape(N, C, Pp[0], Pp[1])
    inner = _pad_index((N, C) + HW, ((P[0], P[0]), (P[1], P[1])))
    padded = P[0] or P[1]
    y = np.ascontiguousarray(yp[:, :, P[0]:P[0] + HW[0], P[1]:P[1] + HW[1]])
    oshape = ((C,) if nd == 2 else (N, C)) + HW
    if not _recording(c):
        return _wrap(y.reshape(oshape), c._dtype)
    tp = _tape_for(c)
    nn = _scatter_entry(tp, _src(c, tp), idx, m, c._dtype.slot, _nm("Col2ImBackward0"),
                        F_HIDDEN if padded else 0)
    if not padded:
        return _out(y.reshape(oshape), c._dtype, tp, nn)
    full = _out(yp, c._dtype, tp, nn)
    return _gather(full, inner, oshape, "Col2ImBackward0", hidden=False)


# ----------------------------------------------------------------------------- adaptive pools
def _adaptive_bounds(n, o):
    i = np.arange(o, dtype=np.int64)
    return (i * n) // o, -((-(i + 1) * n) // o)        # floor(i n / o), ceil((i + 1) n / o)


def _adaptive_setup(x, output_size, fname):
    nd = x._data.ndim
    if nd not in (3, 4):
        raise RuntimeError("%s(): Expected 3D or 4D tensor, but got %s"
                           % (fname, list(x._data.shape)))
    shp = x._data.shape
    for i in range(1, nd):
        if shp[i] == 0:
            raise RuntimeError("%s(): Expected input to have non-zero size for non-batch "
                               "dimensions, but input has sizes %s with dimension %d being empty"
                               % (fname, list(shp), i))
    if isinstance(output_size, (tuple, list)):
        os_ = tuple(output_size)
    else:
        os_ = (output_size, output_size)
    if len(os_) != 2:
        raise RuntimeError("%s: output_size must be 2" % fname)
    H, W = shp[-2:]
    os_ = tuple(int(v) if v is not None else n for v, n in zip(os_, (H, W)))
    if os_[0] < 0 or os_[1] < 0:
        raise RuntimeError("%s: elements of output_size must be greater than or equal to 0 but "
                           "received {%d, %d}" % ((fname,) + os_))
    return os_


def adaptive_avg_pool2d(input, output_size):
    """Windows [floor(i H / Ho), ceil((i + 1) H / Ho)): one gather of the windows' elements,
    one segment sum into the outputs, times the reciprocal window sizes (a constant), named
    ``AdaptiveAvgPool2DBackward0``; an output of 1 x 1 is torch's ``mean`` (MeanBackward1)."""
    x = input
    Ho, Wo = _adaptive_setup(x, output_size, "adaptive_avg_pool2d")
    if (Ho, Wo) == (1, 1):
        return x.mean((-1, -2), keepdim=True)
    if x._dtype._cat < 2:
        raise NotImplementedError("adaptive_avg_pool2d of integer tensors is not supported by "
                                  "tapegrad")
    d = np.asarray(x._data)
    H, W = d.shape[-2:]
    lead = d.shape[:-2]
    B = int(np.prod(lead, dtype=np.int64))
    src, seg, cnt = _adaptive_index(B, H, W, Ho, Wo)
    xv = _take(d.reshape(-1), src) if src.size else np.zeros(0, d.dtype)
    sums = np.bincount(seg, weights=xv, minlength=B * Ho * Wo) if seg.size else \
        np.zeros(B * Ho * Wo)
    val = (sums.astype(d.dtype) / cnt.astype(d.dtype)).astype(d.dtype).reshape(lead + (Ho, Wo))
    if not _recording(x):
        return _wrap(val, x._dtype)
    win = _gather(x, src, (src.size,))
    tp, _, n = _record_index(win, "segsum", seg, sums, c=1.0, nm=_nm("AdaptiveAvgPool2DBackward0"))
    s = _out(sums.astype(d.dtype).reshape(lead + (Ho, Wo)), x._dtype, tp, n)
    out = s * _wrap((1.0 / cnt).astype(d.dtype).reshape(lead + (Ho, Wo)), x._dtype)
    hide(s)
    named(out, "AdaptiveAvgPool2DBackward0")
    return exact(out, val)


@functools.lru_cache(maxsize=64)
def _adaptive_index(B, H, W, Ho, Wo):
    """(positions in x (B, H, W) of the windows' elements, window number of each, window
    sizes (B Ho Wo,))."""
    hs, he = _adaptive_bounds(H, Ho)
    ws, we = _adaptive_bounds(W, Wo)
    src, seg = [], []
    for oh in range(Ho):
        for ow in range(Wo):
            r = np.arange(hs[oh], he[oh])[:, None] * W + np.arange(ws[ow], we[ow])[None, :]
            src.append(r.reshape(-1))
            seg.append(np.full(r.size, oh * Wo + ow, np.int64))
    one = np.concatenate(src) if src else np.zeros(0, np.int64)
    sg = np.concatenate(seg) if seg else np.zeros(0, np.int64)
    b = np.arange(B, dtype=np.int64)
    src = (one[None, :] + (b * (H * W))[:, None]).reshape(-1)
    seg = (sg[None, :] + (b * (Ho * Wo))[:, None]).reshape(-1)
    cnt = np.tile(((he - hs)[:, None] * (we - ws)[None, :]).reshape(-1), B)
    for a in (src, seg, cnt):
        a.setflags(write=False)
    return src, seg, cnt


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """The windows' maxima (torch's rule: the first maximum, the last NaN): one gather named
    ``AdaptiveMaxPool2DBackward0``; indices are positions in the (H, W) plane."""
    x = input
    Ho, Wo = _adaptive_setup(x, output_size, "adaptive_max_pool2d")
    _guard_sel(x, "order", None, 2)
    d = np.asarray(x._data)
    H, W = d.shape[-2:]
    lead = d.shape[:-2]
    B = int(np.prod(lead, dtype=np.int64))
    hs, he = _adaptive_bounds(H, Ho)
    ws, we = _adaptive_bounds(W, Wo)
    if d.dtype.kind == "f" and d.dtype.itemsize >= 4:
        plane = _scatter.adaptive_max_argmax(d.reshape(B, H, W), hs, he, ws, we)
    else:
        if d.dtype.kind != "f" and d.dtype.kind not in "iu":
            raise NotImplementedError("adaptive_max_pool2d of %s tensors is not supported by "
                                      "tapegrad" % d.dtype)
        plane = np.empty((B, Ho, Wo), np.int64)
        d3 = d.reshape(B, H, W).astype(np.float64)
        for oh in range(Ho):
            for ow in range(Wo):
                w = d3[:, hs[oh]:he[oh], ws[ow]:we[ow]].reshape(B, -1)
                isn = np.isnan(w)
                k = np.where(isn.any(-1), w.shape[1] - 1 - np.argmax(isn[:, ::-1], -1),
                             np.argmax(np.where(isn, -np.inf, w), -1))
                ww = we[ow] - ws[ow]
                plane[:, oh, ow] = (hs[oh] + k // ww) * W + ws[ow] + k % ww
    flat = plane + (np.arange(B, dtype=np.int64) * (H * W))[:, None, None]
    out = _gather(x, flat.reshape(-1), lead + (Ho, Wo), "AdaptiveMaxPool2DBackward0",
                  hidden=False)
    if return_indices:
        return out, _wrap(plane.reshape(lead + (Ho, Wo)), int64)
    return out


def _adaptive1d(input, output_size, fname):
    nd = input._data.ndim
    if nd not in (2, 3):
        raise RuntimeError("Expected 2 to 3 dimensions, but got %d-dimensional tensor for argument "
                           "#1 'self' (while checking arguments for %s)" % (nd, fname))
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != 1:
            raise RuntimeError("%s() argument 'output_size' should contain one int (got %d)"
                               % (fname, len(output_size)))
        output_size = output_size[0]
    return (1, output_size)


def adaptive_avg_pool1d(input, output_size):
    os_ = _adaptive1d(input, output_size, "adaptive_avg_pool1d")
    return squeeze(adaptive_avg_pool2d(unsqueeze(input, -2), os_), -2)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    os_ = _adaptive1d(input, output_size, "adaptive_max_pool1d")
    r = adaptive_max_pool2d(unsqueeze(input, -2), os_, return_indices)
    if return_indices:
        return squeeze(r[0], -2), squeeze(r[1], -2)
    return squeeze(r, -2)


# ----------------------------------------------------------------------------- scatter_reduce
_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    if reduce in ("max", "min"):
        raise NotImplementedError("scatter_reduce(reduce=%r) is not supported by tapegrad (use "
                                  "'a%s')" % (reduce, reduce))
    if reduce not in _REDUCES:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got %s"
                           % reduce)
    if not isinstance(src, Tensor):
        raise TypeError("scatter_reduce(): argument 'src' (position 3) must be Tensor, not %s"
                        % type(src).__name__)
    P, spos = _scatter_setup(input, dim, index, src, "scatter")
    x = np.asarray(input._data)
    dt = x.dtype
    xf = x.reshape(-1)
    sv = np.asarray(src._data).reshape(-1)[spos]
    n = xf.size
    cnt = np.bincount(P, minlength=n)
    touched = cnt > 0
    y = xf.copy()
    if reduce in ("sum", "mean"):
        if not include_self:
            y[touched] = 0
        np.add.at(y, P, sv)
        if reduce == "mean":
            N = cnt + (1 if include_self else 0)
            N = np.where(N == 0, 1, N)
            if dt.kind == "f":
                y = (y / N).astype(dt)
            else:
                y = np.floor_divide(y, N).astype(dt)
    elif reduce == "prod":
        if not include_self:
            y[touched] = 1
        np.multiply.at(y, P, sv)
    else:
        ufn = np.maximum if reduce == "amax" else np.minimum
        if not include_self:
            if dt.kind == "f":
                y[touched] = -np.inf if reduce == "amax" else np.inf
            else:
                y[touched] = np.iinfo(dt).min if reduce == "amax" else np.iinfo(dt).max
        ufn.at(y, P, sv)
    y = y.reshape(x.shape)
    live = STATE.enabled and (input._rg or src._rg)
    if live and reduce in ("prod", "amax", "amin"):
        # (tapegrad.func: the gradient coefficients below are constants of these values)
        _guard_sel(input, "never")
        _guard_sel(src, "never")
    if not live:
        return _wrap(y if y.ndim else y[()], input._dtype)
    if reduce == "mean" and dt.kind != "f":
        raise RuntimeError("only floating point tensors can be differentiated")
    yf = y.reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if reduce == "sum":
            cs, cr = np.ones(n, dt), np.ones(P.size, dt)
        elif reduce == "mean":
            N = cnt + (1 if include_self else 0)
            N = np.where(N == 0, 1, N).astype(dt)
            cs, cr = (1 / N).astype(dt), (1 / N[P]).astype(dt)
        elif reduce == "prod":
            ms = np.where(xf == 0, 1, xf).astype(dt)
            msr = ms.copy()
            if not include_self:
                msr[touched] = 1
            np.multiply.at(msr, P, sv)
            cs = (msr / ms).astype(dt)
            sz = sv == 0
            nz = np.bincount(P, weights=sz.astype(np.float64), minlength=n)[P]
            single = sz & (nz == 1)
            msrc = np.where(single, 1, sv).astype(dt)
            mres = xf.copy()
            if not include_self:
                mres[touched] = 1
            np.multiply.at(mres, P, msrc)
            cr = np.where(single, mres[P], yf[P] / np.where(sz, 1, sv)).astype(dt)
        else:
            selfr = (xf == yf).astype(dt)
            srcr = (sv == yf[P]).astype(dt)
            nd = selfr.copy()
            np.add.at(nd, P, srcr)
            cs = (selfr / nd).astype(dt)
            cr = (srcr / nd[P]).astype(dt)
    if not include_self:
        cs = cs.copy()
        cs[touched] = 0
    parts = []
    if input._rg:
        a = input if reduce == "sum" and include_self else input * _wrap(cs.reshape(x.shape),
                                                                           input._dtype)
        if a is not input:
            hide(a)
        keep = _flat(n) if include_self or reduce != "sum" else np.flatnonzero(~touched)
        parts.append((a, keep, keep, 1.0, 0))
    if src._rg:
        s = src
        sshape = src._data.shape
        if reduce != "sum":
            cfull = np.zeros(src._data.size, dt)
            cfull[spos] = cr
            s = src * _wrap(cfull.reshape(sshape), src._dtype)
            hide(s)
        parts.append((s, spos, P, 1.0, 1))
    out = _merge(y, input._dtype, "ScatterReduceBackward0", parts, 2)
    # torch's node saves self, index, src and the result: writing one makes backward raise
    saves_inputs(saves_result(out), input, index, src)
    if reduce == "prod":
        # prod's gradient coefficients are recorded as constants (exact to first order only):
        # a create_graph backward through the node (grad mode on in its hooks) raises instead
        # of giving wrong second derivatives
        out.grad_fn.register_prehook(_prod_first_order_only)
    return out


def _prod_first_order_only(grads):
    if STATE.enabled:
        raise NotImplementedError(
            "tapegrad differentiates scatter_reduce(reduce='prod') once only: a backward with "
            "create_graph=True through it is not supported")


def _install(Tensor):

    def scatter_reduce_m(self, dim, index, src, reduce, *, include_self=True):
        return scatter_reduce(self, dim, index, src, reduce, include_self=include_self)

    def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
        return self._inplace(src, lambda s, o: scatter_reduce(s, dim, index, src, reduce,
                                                              include_self=include_self))
    Tensor.scatter_reduce = scatter_reduce_m
    Tensor.scatter_reduce_ = scatter_reduce_


# ----------------------------------------------------------------------------- index_reduce
def _torch():
    import tapegrad     # the torch namespace: the bodies below call T.<name> (KNOWN_UPWARD)
    return tapegrad


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    _warn_once("index_reduce", "index_reduce() is in beta and the API may change at any time.")
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError("index_reduce(): Expected reduce to be one of prod, mean, amax or amin "
                           "but got %s." % reduce)
    nd = source._data.ndim
    d = dim % builtins.max(input._data.ndim, 1)
    iv = np.asarray(index._data, np.int64).reshape(-1)
    if iv.size != (source._data.shape[d] if nd else 1):
        raise IndexError("index_reduce_(): Number of indices (%d) should be equal to "
                         "source.size(dim) (%d)" % (iv.size, source._data.shape[d] if nd else 1))
    shp = [1] * nd
    if nd:
        shp[d] = -1
    full = np.broadcast_to(iv.reshape(shp), source._data.shape).copy()
    T = _torch()
    out = scatter_reduce(input, d, T.from_numpy(full), source, reduce, include_self=include_self)
    if out._tape is not None:
        from ..autograd.graph import node_class
        _set_name_id(out, multi_name_id("IndexReduceBackward0", 2))
        tp, e = entry_of(out)
        v = tp.views.get(e)            # (prod's node view exists already: it holds a hook)
        if v is not None:
            v.__class__ = node_class("IndexReduceBackward0")
    return out


def _install_composed(Tensor):
    Tn = Tensor
    Tn.index_reduce = index_reduce
    Tn.index_reduce_ = lambda self, dim, index, source, reduce, *, include_self=True: \
        self._inplace(source, lambda s, o: index_reduce(s, dim, index, o, reduce,
                                                        include_self=include_self))
