"""Fused training kernels: one tape entry per layer_norm and per scaled-dot-product attention.

The compositions in ``functional.py`` record about ten entries per layer norm and, for
attention, a selection and an ``mm`` entry per (batch, head) product; at training sizes the
recording and the per-entry sweep cost more than the arithmetic. Here each is one ``pyfunc``
entry (an internal ``autograd.Function``, as the fused recurrent layers in
``modules/rnn.py``) whose forward and backward are a numpy/Numba kernel pair:

* ``layer_norm``: a Numba kernel over the rows (statistics accumulated in float64, the values
  in the input's dtype), the backward torch's formula
  ``dx = rstd * (dy*w - mean(dy*w) - xhat * mean(dy*w*xhat))``, ``dw = sum(dy*xhat)``,
  ``db = sum(dy)``; node ``NativeLayerNormBackward0``.
* ``scaled_dot_product_attention`` where torch's CPU dispatcher picks its flash kernel
  (4-D query/key/value with the same batch and head sizes and head dims, unit last stride, no
  dropout, a mask that needs no gradient): batched BLAS products (numpy's matmul) and a
  row softmax, the backward ``dv = P^T dO``, ``dS = P * (dO V^T - rowsum(...))``,
  ``dq = dS K scale``, ``dk = dS^T Q scale``; node
  ``ScaledDotProductFlashAttentionForCpuBackward0``.

* ``linear`` of a matrix with a bias: torch's ``addmm(bias, x, weight.t())``, one entry
  (node ``AddmmBackward0`` over (bias, x, ``TBackward0`` of the weight), as torch's) instead
  of an ``mm`` entry and a broadcast of the bias (a gather with an index array as large as
  the output); the backward ``db = sum(g)``, ``dx = g W``, ``d(W^T) = x^T g``.

* the axis permutations inside multi-head attention (``transpose``/``permute`` of 3-D and
  4-D tensors, torch's node names): a numpy view recorded as one entry whose backward is the
  inverse permutation, instead of a gather with an index array as large as the tensor.
  Used only on tensors the attention consumes itself (the view's in-place rules are a custom
  Function's).

Gradients of gradients (``create_graph=True``): the layer norm's backward then runs as
recorded tensor operations (differentiable again, as torch's); differentiating the
attention's backward raises torch's "derivative for ... is not implemented" (its flash
kernel has none). Inside ``tapegrad.func`` recordings (``GUARD``) the callers keep the
composition (replays and vmap's batched plans see primitive entries only).

``TAPEGRAD_NN_FUSED=0`` (environment, read at import; ``ENABLED[0]`` at run time) keeps the
compositions everywhere (for comparisons: benchmarks/bench_train.py --ab).
"""
import os

import numpy as np
from numba import njit

from .._compiled import _vmath
from .._state import STATE, no_grad
from ..tensor import GUARD, _wrap, float32, float64
from ..autograd.function import Function
from .._core.names import name_id


ENABLED = [os.environ.get("TAPEGRAD_NN_FUSED", "1") != "0"]


# ----------------------------------------------------------------------------- layer norm
@njit(cache=True, error_model="numpy")
def _ln_fwd(x, w, b, eps, y, mean, rstd):
    R, C = x.shape
    for r in range(R):
        s = 0.0
        for c in range(C):
            s += x[r, c]
        mu = s / C
        v = 0.0
        for c in range(C):
            d = x[r, c] - mu
            v += d * d
        rs = 1.0 / np.sqrt(v / C + eps)
        mean[r] = mu
        rstd[r] = rs
        for c in range(C):
            y[r, c] = (x[r, c] - mu) * rs * w[c] + b[c]


@njit(cache=True, error_model="numpy")
def _ln_bwd(g, x, w, mean, rstd, dx, dw, db, want_x):
    R, C = x.shape
    for c in range(C):
        dw[c] = 0.0
        db[c] = 0.0
    for r in range(R):
        mu = mean[r]
        rs = rstd[r]
        a = 0.0
        s = 0.0
        for c in range(C):
            xh = (x[r, c] - mu) * rs
            gw = g[r, c] * w[c]
            a += gw * xh
            s += gw
            dw[c] += g[r, c] * xh
            db[c] += g[r, c]
        if want_x:
            a /= C
            s /= C
            for c in range(C):
                xh = (x[r, c] - mu) * rs
                dx[r, c] = rs * (g[r, c] * w[c] - s - xh * a)


def _ln_vjp_tensors(x, w, g, ns, eps, want):
    """create_graph=True: the layer norm's gradients as recorded tensor operations (torch's
    NativeLayerNormBackwardBackward: differentiable again)."""
    dims = tuple(range(x.dim() - len(ns), x.dim()))
    lead = tuple(range(x.dim() - len(ns)))
    n = float(np.prod(ns, dtype=np.int64))
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    rs = ((xc * xc).mean(dims, keepdim=True) + eps).rsqrt()
    xh = xc * rs
    gw = g if w is None else g * w
    gx = gw_ = None
    if want[0]:
        a = (gw * xh).sum(dims, keepdim=True) / n
        s = gw.sum(dims, keepdim=True) / n
        gx = rs * (gw - s - xh * a)
    if want[1]:
        gw_ = (g * xh).sum(lead) if lead else g * xh
    gb = (g.sum(lead) if lead else g * 1.0) if want[2] else None
    return gx, gw_, gb


class _LayerNorm(Function):
    @staticmethod
    def _node_name_id():
        return name_id("NativeLayerNormBackward0")

    @staticmethod
    def forward(ctx, x, w, b, ns, eps, has_w, has_b):
        xa = np.ascontiguousarray(x._data)
        C = int(np.prod(ns, dtype=np.int64))
        x2 = xa.reshape(-1, C)
        dt = xa.dtype
        wa = np.ascontiguousarray(w._data, dt).reshape(C) if has_w else np.ones(C, dt)
        ba = np.ascontiguousarray(b._data, dt).reshape(C) if has_b else np.zeros(C, dt)
        y = np.empty_like(x2)
        mean = np.empty(x2.shape[0], np.float64)
        rstd = np.empty(x2.shape[0], np.float64)
        _ln_fwd(x2, wa, ba, float(eps), y, mean, rstd)
        ctx.arrays = (x2, wa, mean, rstd)
        ctx.meta = (xa.shape, ns, eps, has_w, has_b)
        ctx.save_for_backward(x, w if has_w else None, b if has_b else None)
        return _wrap(y.reshape(xa.shape), x._dtype)

    @staticmethod
    def backward(ctx, g):
        shape, ns, eps, has_w, has_b = ctx.meta
        if STATE.enabled:                   # create_graph: differentiable
            x, w, _ = ctx.saved_tensors
            need = ctx.needs_input_grad
            return _ln_vjp_tensors(x, w, g, ns, eps, (need[0], has_w and need[1],
                                                      has_b and need[2])) + (None,) * 4
        ctx.saved_tensors                   # (raises when an input was written in place)
        x2, wa, mean, rstd = ctx.arrays
        ga = np.ascontiguousarray(g._data, x2.dtype).reshape(x2.shape)
        want_x = ctx.needs_input_grad[0]
        dx = np.empty_like(x2) if want_x else np.empty((1, 1), x2.dtype)
        dw = np.empty(x2.shape[1], np.float64)
        db = np.empty(x2.shape[1], np.float64)
        _ln_bwd(ga, x2, wa, mean, rstd, dx, dw, db, want_x)
        dt = g._dtype
        gx = _wrap(dx.reshape(shape), dt) if want_x else None
        gw = _wrap(dw.astype(x2.dtype).reshape(ns), dt) if has_w and ctx.needs_input_grad[1] \
            else None
        gb = _wrap(db.astype(x2.dtype).reshape(ns), dt) if has_b and ctx.needs_input_grad[2] \
            else None
        return gx, gw, gb, None, None, None, None


def _float(t):
    return t._dtype is float32 or t._dtype is float64


def layer_norm(x, ns, w, b, eps):
    """The fused layer norm, or None when the composition must run (a func recording, an
    empty or non-float input, weights of another dtype)."""
    if GUARD[0] is not None or not ENABLED[0] or not _float(x) or x._data.size == 0:
        return None
    for t in (w, b):
        if t is not None and t._dtype is not x._dtype:
            return None
    if not (STATE.enabled and any(t is not None and t._rg for t in (x, w, b))):
        return None                      # no graph: the composition's values, no recording
    # an absent weight or bias: a placeholder tensor without grad (torch's node lists the
    # three inputs, None for those)
    ph = _wrap(np.zeros(0, x._data.dtype), x._dtype)
    return _LayerNorm.apply(x, ph if w is None else w, ph if b is None else b, ns, eps,
                            w is not None, b is not None)


# ----------------------------------------------------------------------------- attention
_CAUSAL = {}


def _causal(L, S, dt):
    key = (L, S, dt)
    m = _CAUSAL.get(key)
    if m is None:
        m = np.zeros((L, S), dt)
        m[np.triu_indices(L, 1, S)] = -np.inf
        m = _CAUSAL[key] = m
        m.flags.writeable = False
    return m


def _softmax_rows(s):
    """softmax over the last axis of s, in place (a row of -inf only gives nan, as torch)."""
    m = s.max(axis=-1, keepdims=True)
    np.subtract(s, m, out=s)
    if s.size >= _vmath.MIN and _vmath.OK and s.flags.c_contiguous:
        flat = s.reshape(-1)                # exp on the vector-math kernels (SIMD)
        _vmath.unary_fwd("exp", flat, flat)
    else:
        np.exp(s, out=s)
    np.divide(s, s.sum(axis=-1, keepdims=True), out=s)
    return s


class _Attention(Function):
    @staticmethod
    def _node_name_id():
        return name_id("ScaledDotProductFlashAttentionForCpuBackward0")

    @staticmethod
    def forward(ctx, q, k, v, mask, scale):
        lead = q._data.shape[:-2]
        L, E = q._data.shape[-2:]
        S = k._data.shape[-2]
        qa = np.ascontiguousarray(q._data).reshape(-1, L, E)
        ka = np.ascontiguousarray(k._data).reshape(-1, S, E)
        va = np.ascontiguousarray(v._data).reshape(-1, S, v._data.shape[-1])
        dt = qa.dtype
        s = np.matmul(qa, ka.transpose(0, 2, 1))
        s *= dt.type(scale)
        if mask is not None:
            if mask.ndim <= 2:
                s += mask
            else:
                s.reshape(lead + (L, S))[...] += mask
        p = _softmax_rows(s)
        out = np.matmul(p, va)
        ctx.arrays = (qa, ka, va, p, scale)
        ctx.mask = mask
        ctx.save_for_backward(q, k, v)
        # the output in the query's memory layout (torch's flash kernel: empty_like(query));
        # inside multi-head attention its permute(2, 0, 1, 3) is then contiguous
        o = np.empty_like(q._data)
        o[...] = out.reshape(o.shape)
        return _wrap(o, q._dtype)

    @staticmethod
    def backward(ctx, g):
        if STATE.enabled:                   # create_graph: torch's flash backward has no
            with no_grad():             # derivative (differentiating it raises)
                res = _Attention._grads(ctx, g)
            ins = ctx.saved_tensors + (g,)
            return tuple(None if r is None else _NoDerivative.apply(r, *ins) for r in res)
        return _Attention._grads(ctx, g)

    @staticmethod
    def _grads(ctx, g):
        saved = ctx.saved_tensors           # (raises when an input was written in place)
        qa, ka, va, p, scale = ctx.arrays
        dt = qa.dtype
        ga = np.ascontiguousarray(g._data, dt).reshape(p.shape[0], p.shape[1], -1)
        need = ctx.needs_input_grad
        gv = np.matmul(p.transpose(0, 2, 1), ga) if need[2] else None
        gq = gk = None
        if need[0] or need[1]:
            dp = np.matmul(ga, va.transpose(0, 2, 1))
            r = np.einsum("bij,bij->bi", dp, p)[..., None]
            np.subtract(dp, r, out=dp)
            np.multiply(dp, p, out=dp)
            dp *= dt.type(scale)
            if need[0]:
                gq = np.matmul(dp, ka)
            if need[1]:
                gk = np.matmul(dp.transpose(0, 2, 1), qa)
        qs, ks, vs = (t._data.shape for t in saved)
        d = g._dtype
        return (None if gq is None else _wrap(gq.reshape(qs), d),
                None if gk is None else _wrap(gk.reshape(ks), d),
                None if gv is None else _wrap(gv.reshape(vs), d), None, None)


class _NoDerivative(Function):
    """Over the gradients of the fused attention when a graph of them is built: torch's
    flash-attention backward has no derivative, and differentiating it raises."""
    _node_name_id = staticmethod(lambda: name_id("NotImplemented"))

    @staticmethod
    def forward(ctx, x, *inputs):           # (inputs: the node's inputs, as torch's)
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("derivative for aten::_scaled_dot_product_flash_attention_for_cpu"
                           "_backward is not implemented")


def _unit_last(t):
    a = t._data
    return type(a) is np.ndarray and (a.shape[-1] <= 1 or a.strides[-1] == a.itemsize)


def attention(q, k, v, attn_mask, dropout_p, is_causal, scale):
    """The fused attention where torch's CPU dispatcher uses its flash kernel (see the module
    docstring), or None for the composition."""
    if GUARD[0] is not None or not ENABLED[0] or dropout_p > 0.0:
        return None
    if not (STATE.enabled and (q._rg or k._rg or v._rg)):
        return None
    qd, kd, vd = q._data, k._data, v._data
    if not (qd.ndim == kd.ndim == vd.ndim == 4) or not (_float(q) and q._dtype is k._dtype
                                                      is v._dtype):
        return None
    if qd.shape[:2] != kd.shape[:2] or kd.shape[:3] != vd.shape[:3]:
        return None
    if not (qd.shape[-1] == kd.shape[-1] == vd.shape[-1]) or qd.shape[-1] == 0:
        return None
    L, S = qd.shape[-2], kd.shape[-2]
    if L == 0 or S == 0 or not (_unit_last(q) and _unit_last(k) and _unit_last(v)):
        return None
    dt = qd.dtype
    mask = None
    if is_causal:
        mask = _causal(L, S, dt)
    elif attn_mask is not None:
        if attn_mask._rg and STATE.enabled:
            return None
        ma = np.asarray(attn_mask._data)
        try:
            np.broadcast_shapes(ma.shape, qd.shape[:2] + (L, S))
        except ValueError:
            return None
        if ma.ndim > 4:
            return None
        if ma.dtype == np.bool_:
            mask = np.where(ma, dt.type(0), dt.type(-np.inf))
        elif ma.dtype == dt:
            mask = ma
        else:
            return None
    return _Attention.apply(q, k, v, mask, scale)


# ----------------------------------------------------------------------------- linear
class _Addmm(Function):
    @staticmethod
    def _node_name_id():
        return name_id("AddmmBackward0")

    @staticmethod
    def forward(ctx, b, x, wt):
        y = np.matmul(x._data, wt._data)
        y += b._data
        ctx.save_for_backward(b, x, wt)
        return _wrap(y, x._dtype)

    @staticmethod
    def backward(ctx, g):
        b, x, wt = ctx.saved_tensors
        need = ctx.needs_input_grad
        if STATE.enabled:                   # create_graph: recorded (differentiable again)
            return (g.sum(0) if need[0] else None, g.mm(wt.t()) if need[1] else None,
                    x.t().mm(g) if need[2] else None)
        ga = g._data
        d = g._dtype
        gb = _wrap(ga.sum(0), d) if need[0] else None
        gx = _wrap(np.matmul(ga, wt._data.T), d) if need[1] else None
        gw = _wrap(np.matmul(x._data.T, ga), d) if need[2] else None
        return gb, gx, gw


def addmm(b, x, w):
    """linear(x, w, b) of a matrix x as one entry, or None for the composition (a func
    recording, no graph, dtypes other than one float dtype, a bias that is not a vector of
    the output's width, an empty product)."""
    if (GUARD[0] is not None or not ENABLED[0] or not _float(x)
            or not (w._dtype is x._dtype is b._dtype)):
        return None
    if not (STATE.enabled and (x._rg or w._rg or b._rg)):
        return None
    xd, wd, bd = x._data, w._data, b._data
    if (type(xd) is not np.ndarray or type(wd) is not np.ndarray or type(bd) is not np.ndarray
            or bd.shape != (wd.shape[0],) or xd.size == 0 or wd.size == 0):
        return None
    return _Addmm.apply(b, x, w.t())


# ----------------------------------------------------------------------------- permutations
_PERMUTE = {}


def _permute_cls(name):
    cls = _PERMUTE.get(name)
    if cls is not None:
        return cls

    class _Permuted(Function):
        @staticmethod
        def _node_name_id():
            return name_id(name)

        @staticmethod
        def forward(ctx, x, perm):
            ctx.perm = perm
            return _wrap(np.transpose(x._data, perm), x._dtype)

        @staticmethod
        def backward(ctx, g):
            inv = tuple(int(i) for i in np.argsort(ctx.perm))
            if STATE.enabled:               # create_graph: recorded
                return g.permute(inv), None
            return _wrap(np.transpose(g._data, inv), g._dtype), None

    _Permuted.__name__ = name.replace("Backward0", "")
    cls = _PERMUTE[name] = _Permuted
    return cls


def permuted(x, perm, name):
    """x.permute(perm) (a view) as one entry named ``name``, or None for the tensor op
    (see the module docstring: for tensors consumed inside the attention only)."""
    if GUARD[0] is not None or not ENABLED[0] or not (STATE.enabled and x._rg):
        return None
    if type(x._data) is not np.ndarray or not _float(x):
        return None
    return _permute_cls(name).apply(x, tuple(perm))


def transposed(x, d0, d1):
    """x.transpose(d0, d1) as ``permuted`` (TransposeBackward0), or the tensor op."""
    nd = x._data.ndim
    perm = list(range(nd))
    perm[d0 % nd], perm[d1 % nd] = perm[d1 % nd], perm[d0 % nd]
    out = permuted(x, perm, "TransposeBackward0")
    return x.transpose(d0, d1) if out is None else out
