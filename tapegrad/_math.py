"""Elementwise math beyond the foundation: the breadth rows of the op table (tan ... erf,
clamp, maximum, atan2, remainder ...) and compositions with torch's node names (exp2, log2,
log10, rsqrt, square, frac, lerp, where ...), comparisons and logical operations.

Compositions record their intermediate entries ``HIDDEN`` (``next_functions`` skips them) and
the last one under torch's name, so a graph reads as torch's. Where a composition's value can
differ from torch's by rounding (log2 = log / ln 2), the result carries numpy's exact value.
"""
import math

import numpy as np

from . import kernels as _K
from . import tape as _tp
from .autograd.grad_mode import STATE
from .autograd.graph import ONE_INPUT, _CPP_NAMES, entry_name, multi_name_id, tap_name_id
from .autograd.function import Function
from .kernels import F_HIDDEN, FL, K, NK, NM, NPROD
from .ops import BY_NAME
from .tensor import (GUARD, Tensor, _DEFAULT, _check_shapes, _convert, _nm, _par_map, _vm_of,
                     _record_binary, _record_unary, _rename_last, _result_dtype, _wrap, bool_, int64)

# Composite nodes whose last entry is binary but which torch shows with one input.
ONE_INPUT.update({"RemainderBackward0", "FmodBackward0", "FracBackward0", "LogsumexpBackward0", "AmaxBackward0", "AminBackward0",
                  "SoftmaxBackward0", "LogSoftmaxBackward0", "LogitBackward0", "RoundBackward1",
                  "NativeDropoutBackward0", "MaxBackward1", "MinBackward1",
                  # Scalar overloads (x * number, x / number inside torch's composites)
                  "MulBackward1", "DivBackward1", "MaskedFillBackward0"})

_CPP_NAMES["NotImplemented"] = "torch::autograd::NotImplemented"


class _NotDifferentiable(Function):
    """torch's NotImplemented node: the result requires grad, backward through it raises."""

    @staticmethod
    def forward(ctx, value, opname, *inputs):
        ctx.opname = opname
        return _wrap(value[0], value[1])

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("derivative for aten::%s is not implemented" % ctx.opname)


def not_differentiable(out, opname, *inputs):
    """``out`` (computed without grad) as torch's NotImplemented node over ``inputs``."""
    if not (STATE.enabled and any(isinstance(t, Tensor) and t._rg for t in inputs)) \
            or out._dtype._cat < 2:
        return out
    res = _NotDifferentiable.apply((out._data, out._dtype), opname, *inputs)
    return named(res, "NotImplemented")


_KERNEL_FWD = {"erf", "gelu", "leaky_relu", "elu", "silu", "softplus", "log_sigmoid",
               "smooth_l1", "step", "clamp_min", "clamp_max", "scale"}


# ----------------------------------------------------------------------------- helpers
def entry_of(t):
    tp, node = _tp.resolve(t)
    return tp, tp.N[node * NK + NPROD]       # (array.array items: no numpy view needed)


def hide(*ts):
    """Mark the entries producing these (intermediate) tensors HIDDEN."""
    for t in ts:
        if t is not None:
            tp = t._tape
            if tp is None:
                continue
            if tp.into is None:                  # (entry_of, inlined: composites hide a few)
                e = tp.N[t._node * NK + NPROD]
            else:
                tp, e = entry_of(t)
            if e >= 0:
                tp.E[e * K + FL] |= F_HIDDEN


def named(t, name, arity=None):
    """Give the entry producing ``t`` torch's name (when ``t`` was recorded); ``arity``: the
    node lists that many inputs, found through ``tap``/``tap_entry`` marks below it."""
    if t._tape is not None:
        if arity is None:
            _rename_last(t, name)
        else:
            _set_name_id(t, multi_name_id(name, arity))
    return t


def _set_name_id(t, nid):
    tp, e = entry_of(t)
    if e >= 0:
        tp.E[e * K + NM] = nid


def tap_entry(t, *slots):
    """Mark the (hidden) entry producing ``t``: its operands are inputs ``slots`` of the
    composite node named with an arity above it (see ``autograd.graph.TAPS``)."""
    if t is not None and t._tape is not None:
        tp, e = entry_of(t)
        if e >= 0:
            E = tp.E
            E[e * K + NM] = tap_name_id(entry_name(tp, e), slots)
            E[e * K + FL] |= F_HIDDEN
    return t


def tap(t, slot):
    """``t`` through a hidden identity entry marked as input ``slot`` of a composite node (for
    inputs used by several entries); ``t`` itself when it records nothing."""
    if isinstance(t, Tensor) and t._rg and STATE.enabled:
        from ._shape import _reshape_view
        return tap_entry(_reshape_view(t, t._data.shape, "ViewBackward0"), slot)
    return t


def exact(t, value):
    """Replace a composition's value by numpy's exact one (same dtype and shape)."""
    v = np.asarray(value, dtype=t._dtype.np)
    t._data = v if v.ndim else v[()]
    return t


def _floatify(x):
    if not isinstance(x, Tensor):
        raise TypeError("expected a Tensor, got %s" % type(x).__name__)
    if x._dtype._cat < 2:
        return _convert(x, _DEFAULT[0])
    return x


def kernel_forward(opname, d, c):
    """Eager forward through the row's Numba kernel (rows without a numpy ufunc)."""
    k = getattr(_K, "fwd_" + opname)
    a = np.asarray(d)
    xf = np.ascontiguousarray(a).reshape(-1)
    y = np.empty_like(xf)
    k(xf.size, xf, 0, float(c), y, 0)
    return y.reshape(a.shape)


def unary(x, opname, c=None, name=None):
    """Apply unary row ``opname`` (constant ``c``) and record it under ``name``."""
    op = BY_NAME[opname]
    x = _floatify(x)
    d = x._data
    cc = 0.0 if c is None else float(c)
    vm, big = _vm_of(op)
    if np.size(d) >= big and (op.fwd_out is not None or vm):
        y = _par_map(op.fwd_out, (d, cc), np.shape(d), x._dtype.np, vm)
    elif opname in _KERNEL_FWD and np.size(d) > 64:
        y = kernel_forward(opname, d, cc)
    else:
        y = op.ref(d, cc)
    y = np.asarray(y, x._dtype.np)
    if y.ndim == 0:
        y = y[()]
    if x._rg and STATE.enabled:
        return _record_unary(x, op, y if type(y) is np.ndarray else np.asarray(y),
                             c=c, nm=_nm(name) if name else None)
    return _wrap(y, x._dtype)


def _unary_fn(opname, name=None, alias=None):
    def f(input):
        return unary(input, opname, name=name)
    f.__name__ = alias or opname
    return f


tan = _unary_fn("tan")
asin = arcsin = _unary_fn("asin")
acos = arccos = _unary_fn("acos")
atan = arctan = _unary_fn("atan")
sinh = _unary_fn("sinh")
cosh = _unary_fn("cosh")
erf = _unary_fn("erf")
log1p = _unary_fn("log1p")
expm1 = _unary_fn("expm1")


def scale(x, c, name="MulBackward0"):
    return unary(x, "scale", c=c, name=name)


def exp2(input):
    x = _floatify(input)
    from .tensor import exp
    if not (x._rg and STATE.enabled):
        return _wrap(np.asarray(np.exp2(x._data), x._dtype.np)[()] if x._data.ndim == 0 else
                     np.exp2(x._data).astype(x._dtype.np), x._dtype)
    t = scale(x, math.log(2.0))
    hide(t)
    return exact(named(exp(t), "Exp2Backward0"), np.exp2(x._data))


def _log_base(input, base, name, npf):
    x = _floatify(input)
    from .tensor import log
    if not (x._rg and STATE.enabled):
        return _wrap(np.asarray(npf(x._data), x._dtype.np)[()], x._dtype)
    t = log(x)
    hide(t)
    return exact(scale(t, 1.0 / math.log(base), name), npf(x._data))


def log2(input):
    return _log_base(input, 2.0, "Log2Backward0", np.log2)


def log10(input):
    return _log_base(input, 10.0, "Log10Backward0", np.log10)


def rsqrt(input):
    x = _floatify(input)
    from .tensor import pow as _pow
    y = _pow(x, -0.5)
    return exact(named(y, "RsqrtBackward0"), 1.0 / np.sqrt(x._data))


def square(input):
    from .tensor import pow as _pow
    if input._dtype is bool_:
        input = _convert(input, int64)
    return _pow(input, 2)


def _step(input, k, name, npf):
    if input._dtype._cat < 2:
        if k == 4 and input._dtype is bool_:
            return _wrap(np.array(input._data, copy=True), input._dtype)
        return _wrap(np.asarray(npf(input._data), input._dtype.np)[()], input._dtype)
    return unary(input, "step", c=float(k), name=name)


def floor(input):
    return _step(input, 0, "FloorBackward0", np.floor)


def ceil(input):
    return _step(input, 1, "CeilBackward0", np.ceil)


def round(input, decimals=0):
    if decimals:
        x = _floatify(input)
        f = 10.0 ** decimals
        y = scale(_step(scale(x, f), 2, "RoundBackward0", np.rint), 1.0 / f, "RoundBackward1")
        if y._tape is not None:
            tp, e = entry_of(y)
            E = _tp.view_i64(tp.E)
            a = int(E[e * K + 3])
            del E
            # hide the inner entries (scale, round)
            _hide_chain(tp, a, 2)
        return exact(y, np.round(x._data * f) / f)
    return _step(input, 2, "RoundBackward0", np.rint)


def _hide_chain(tp, node, count):
    """Hide ``count`` entries up the IA chain starting at the producer of ``node``."""
    E = _tp.view_i64(tp.E)
    N = _tp.view_i64(tp.N)
    for _ in range(count):
        e = int(N[node * NK + NPROD])
        if e < 0:
            break
        E[e * K + FL] |= F_HIDDEN
        node = int(E[e * K + 3])
    del E, N


def trunc(input):
    return _step(input, 3, "TruncBackward0", np.trunc)


fix = trunc


def sign(input):
    return _step(input, 4, "SignBackward0", np.sign)


def sgn(input):
    return sign(input)


def frac(input):
    if input._dtype._cat < 2:
        raise NotImplementedError("\"frac_cpu\" not implemented for '%s'"
                                  % input._dtype._tname)
    x = _floatify(input)
    if not (x._rg and STATE.enabled):
        d = x._data
        return _wrap(np.asarray(d - np.trunc(d), x._dtype.np)[()], x._dtype)
    tr = unary(x, "step", c=3.0)
    hide(tr)
    return named(x - tr, "FracBackward0")


# ----------------------------------------------------------------------------- clamp
def clamp(input, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return _clamp_tensor(input, min, max)
    x = input
    if x._dtype._cat < 2:
        cat_num = any(isinstance(v, float) for v in (min, max) if v is not None)
        if not cat_num:
            d = np.clip(x._data, min, max)
            return _wrap(np.asarray(d, x._dtype.np)[()], x._dtype)
        x = _convert(x, _DEFAULT[0])
    d = x._data
    if min is not None and max is not None:
        y = np.minimum(np.maximum(d, x._dtype.np.type(min)), x._dtype.np.type(max))
        if x._rg and STATE.enabled:
            lo = unary(x, "clamp_min", c=float(min))
            hide(lo)
            out = unary(lo, "clamp_max", c=float(max), name="ClampBackward1")
            return exact(out, y)
        return _wrap(np.asarray(y, x._dtype.np)[()], x._dtype)
    if min is not None:
        return unary(x, "clamp_min", c=float(min), name="ClampBackward1")
    return unary(x, "clamp_max", c=float(max), name="ClampBackward1")


clip = clamp


def clamp_min(input, min):
    if isinstance(min, Tensor):
        return clamp(input, min=min)
    return named(clamp(input, min=min), "ClampMinBackward0")


def clamp_max(input, max):
    if isinstance(max, Tensor):
        return clamp(input, max=max)
    return named(clamp(input, max=max), "ClampMaxBackward0")


def _clamp_tensor(input, lo, hi):
    """clamp with tensor bounds: torch's ClampBackward0 (the gradient goes to the input where
    lo <= x <= hi, to the bound that is hit elsewhere)."""
    x = input
    y = x
    if lo is not None:
        lo_t = lo if isinstance(lo, Tensor) else _wrap(np.asarray(lo, x._dtype.np), x._dtype)
        y = where(x < lo_t, lo_t, y)
        if hi is not None:
            hide(y)
    if hi is not None:
        hi_t = hi if isinstance(hi, Tensor) else _wrap(np.asarray(hi, x._dtype.np), x._dtype)
        y = where(y > hi_t, hi_t, y)
    return named(y, "ClampBackward0")


# ----------------------------------------------------------------------------- binary rows
def _binary(opname, a, b, name=None):
    op = BY_NAME[opname]
    _check_shapes(a, b)
    if isinstance(a, Tensor):
        rdt = _result_dtype(a, b)
    else:
        rdt = _result_dtype(b, a)
    if rdt._cat < 2:
        rdt = _DEFAULT[0] if opname in ("atan2", "hypot") else rdt
    av = a._data if isinstance(a, Tensor) else a
    bv = b._data if isinstance(b, Tensor) else b
    av = np.asarray(av).astype(rdt.np) if isinstance(a, Tensor) else rdt.np.type(av)
    bv = np.asarray(bv).astype(rdt.np) if isinstance(b, Tensor) else rdt.np.type(bv)
    if av.ndim == 0 and isinstance(a, Tensor):
        av = av[()]
    if np.ndim(bv) == 0 and isinstance(b, Tensor):
        bv = bv[()]
    with np.errstate(all="ignore"):
        y = op.ref(av, bv)
    y = np.asarray(y, rdt.np)
    if y.ndim == 0:
        y = y[()]
    grads = STATE.enabled and ((isinstance(a, Tensor) and a._rg) or (isinstance(b, Tensor) and b._rg))
    if grads:
        if rdt._cat < 2:
            raise RuntimeError("only floating point tensors can be differentiated")
        out = _record_binary(op, a, b, y if type(y) is np.ndarray else np.asarray(y), rdt,
                             nm=_nm(name) if name else None)
        return out
    return _wrap(y, rdt)


def maximum(input, other):
    if not isinstance(other, Tensor):
        raise TypeError("maximum(): argument 'other' (position 2) must be Tensor, not %s"
                        % type(other).__name__)
    return _binary("maximum", input, other)


def minimum(input, other):
    if not isinstance(other, Tensor):
        raise TypeError("minimum(): argument 'other' (position 2) must be Tensor, not %s"
                        % type(other).__name__)
    return _binary("minimum", input, other)


def fmax(input, other):
    """Maximum ignoring NaN; the gradient of ties goes to ``input`` (torch's FmaxBackward0)."""
    return _fm(input, other, np.fmax, lambda a, b: (a >= b) | (b != b), "FmaxBackward0")


def fmin(input, other):
    return _fm(input, other, np.fmin, lambda a, b: (a <= b) | (b != b), "FminBackward0")


def _fm(a, b, npf, pick_a, name):
    y = npf(a._data, b._data)
    mask = _wrap(np.asarray(pick_a(a._data, b._data)), bool_)
    return exact(named(where(mask, a, b), name), y) if STATE.enabled and (a._rg or b._rg) else \
        _wrap(_val0(y, _result_dtype(a, b)), _result_dtype(a, b))


def atan2(input, other):
    return _binary("atan2", input, other)


arctan2 = atan2


def hypot(input, other):
    return _binary("hypot", input, other)


def remainder(input, other):
    if isinstance(input, Tensor) and input._dtype._cat < 2 and not (
            isinstance(other, float) or (isinstance(other, Tensor) and other._dtype._cat == 2)):
        return _wrap(np.asarray(np.remainder(input._data, _npv(other)), _result_dtype(
            input, other).np)[()], _result_dtype(input, other))
    if not isinstance(input, Tensor):
        # a number % tensor: torch has no derivative for it (a NotImplemented node)
        rdt = _result_dtype(other, input)
        with np.errstate(all="ignore"):
            y = np.remainder(np.asarray(input, rdt.np), np.asarray(other._data, rdt.np))
        return not_differentiable(_wrap(_val0(y, rdt), rdt), "remainder", other)
    name = "RemainderBackward1" if isinstance(other, Tensor) else "RemainderBackward0"
    return _binary("remainder", input, other, name)


def fmod(input, other):
    """C's fmod: the remainder of truncated division (sign of ``input``). The gradient is 1 for
    ``input`` and -trunc(input / other) for a tensor ``other`` (torch's FmodBackward0/1)."""
    if not isinstance(input, Tensor):
        raise TypeError("fmod(): argument 'input' (position 1) must be Tensor, not %s"
                        % type(input).__name__)
    if isinstance(other, Tensor):
        _check_shapes(input, other)
    rdt = _result_dtype(input, other)
    av = np.asarray(input._data, rdt.np)
    bv = np.asarray(_npv(other), rdt.np)
    if rdt._cat < 2:
        if np.any(bv == 0):
            raise RuntimeError("ZeroDivisionError")
        return _wrap(_val0(np.fmod(av, bv), rdt), rdt)
    with np.errstate(all="ignore"):
        y = np.fmod(av, bv)
    gb = isinstance(other, Tensor) and other._rg and STATE.enabled
    ga = input._rg and STATE.enabled
    if not (ga or gb):
        return _wrap(_val0(y, rdt), rdt)
    a = input if input._dtype is rdt else _convert(input, rdt)
    if a is not input:
        hide(a)          # torch promotes inside the kernel: no ToCopy node
    if not gb:
        # d/d input = 1: input plus a constant (one entry)
        with np.errstate(all="ignore"):
            shift = np.asarray(y - np.broadcast_to(av, y.shape), rdt.np)
        # (a tensor ``other`` shows as the constant operand: (None, 0), as in torch)
        out = named(a + _wrap(shift, rdt), "FmodBackward1" if isinstance(other, Tensor)
                    else "FmodBackward0")
        return exact(out, y)
    b = other if other._dtype is rdt else _convert(other, rdt)
    # input - other * trunc(input / other), the quotient a constant (trunc has zero gradient):
    # nothing saves ``input``, so fmod_ in place works; next_functions read (input, other)
    with np.errstate(all="ignore"):
        tq = np.trunc(np.broadcast_to(av, y.shape) / np.broadcast_to(bv, y.shape)).astype(rdt.np)
    p = b * _wrap(tq, rdt)
    out = a - p
    hide(p, a if a is not input else None, b if b is not other else None)
    return exact(named(out, "FmodBackward1"), y)


def _val0(y, rdt):
    y = np.asarray(y, rdt.np)
    return y if y.ndim else y[()]


def _npv(v):
    return v._data if isinstance(v, Tensor) else v


def floor_divide(input, other):
    a = input if isinstance(input, Tensor) else None
    ref = a if a is not None else other
    rdt = _result_dtype(ref, other if a is not None else input)
    with np.errstate(all="ignore"):
        if rdt._cat < 2:
            av, bv = np.asarray(_npv(input)), np.asarray(_npv(other))
            if np.any(bv == 0):
                raise RuntimeError("ZeroDivisionError")
            y = np.floor_divide(av, bv)
        else:
            y = np.floor(np.divide(np.asarray(_npv(input), rdt.np), np.asarray(_npv(other), rdt.np)))
    if isinstance(input, Tensor) and isinstance(other, Tensor):
        _check_shapes(input, other)
    out = _wrap(np.asarray(y, rdt.np)[()] if np.ndim(y) == 0 else np.asarray(y, rdt.np), rdt)
    return not_differentiable(out, "floor_divide", input, other)


def lerp(input, end, weight):
    w_t = isinstance(weight, Tensor)
    d = np.asarray(input._data)
    e = np.asarray(end._data)
    wv = np.asarray(weight._data if w_t else weight)
    with np.errstate(all="ignore"):
        val = np.where(np.abs(wv) < 0.5, d + wv * (e - d), e - (e - d) * (1 - wv))
    grads = STATE.enabled and (input._rg or end._rg or (w_t and weight._rg))
    if not grads:
        return _wrap(np.asarray(val, input._dtype.np)[()] if val.ndim == 0 else
                     val.astype(input._dtype.np), input._dtype)
    diff = end - input
    step_ = diff * weight
    out = input + step_
    hide(diff, step_)
    named(out, "LerpBackward1" if w_t else "LerpBackward0")
    return exact(out, np.broadcast_to(val, out._data.shape))


# ----------------------------------------------------------------------------- where
def where(condition, input=None, other=None):
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    cond = np.asarray(condition._data if isinstance(condition, Tensor) else condition)
    if cond.dtype != np.bool_:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           "with dtype %s" % _dtname(condition))
    ta, tb = isinstance(input, Tensor), isinstance(other, Tensor)
    if ta and tb:
        rdt = _result_dtype(input, other)
    elif ta:
        rdt = _result_dtype(input, other)
    elif tb:
        rdt = _result_dtype(other, input)
    else:
        rdt = _result_dtype(_wrap(np.asarray(input), _DEFAULT[0] if isinstance(input, float) else int64),
                            other)
    av = np.asarray(_npv(input), rdt.np)
    bv = np.asarray(_npv(other), rdt.np)
    try:
        shape = np.broadcast_shapes(cond.shape, av.shape, bv.shape)
    except ValueError:
        raise RuntimeError("The size of tensor a must match the size of tensor b (where: shapes "
                           "%s, %s and %s do not broadcast)" % (list(cond.shape), list(av.shape),
                                                                list(bv.shape)))
    y = np.where(cond, av, bv).astype(rdt.np)
    ga = ta and input._rg and STATE.enabled
    gb = tb and other._rg and STATE.enabled
    if not (ga or gb):
        return _wrap(y if y.ndim else y[()], rdt)
    if rdt.slot < 0:
        raise RuntimeError("only floating point tensors can be differentiated")
    cb = np.broadcast_to(cond, shape).reshape(-1)
    pos_t = np.flatnonzero(cb).astype(np.int64)
    pos_f = np.flatnonzero(~cb).astype(np.int64)
    return _select_merge([(input, av, pos_t, ga), (other, bv, pos_f, gb)], shape, rdt, y,
                         "WhereBackward0")


def _select_merge(parts, shape, rdt, y, name):
    """y = sum over parts of scatter(gather(part at the positions it supplies)); parts:
    (tensor or number, value, output positions, needs grad). Hidden gathers and scatters, the
    last entry named ``name`` (two grad-requiring parts: an add of both)."""
    from ._shape import _add_entry, _scatter_entry
    from .ops import OPCODE
    from .tensor import _out, _src, _tape_for
    m = int(np.prod(shape, dtype=np.int64))
    dt = rdt.slot
    tp = _tape_for(*[p[0] for p in parts if p[3]])
    nodes = []
    const = np.zeros(m, rdt.np)
    for t, v, pos, g in parts:
        if g:
            tt = t if t._dtype is rdt else _convert(t, rdt)
            node = _src(tt, tp)
            src_idx = np.broadcast_to(np.arange(tt._data.size, dtype=np.int64).reshape(tt._data.shape),
                                      shape).reshape(-1)[pos]
            e, gnode = tp.entry(OPCODE["gather"], _nm("IndexBackward0"), pos.size, dt, node, -1,
                                p0=tp.index(src_idx), p1=src_idx.size, fl=F_HIDDEN)
            nodes.append((gnode, pos))
        else:
            const[pos] = np.broadcast_to(v, shape).reshape(-1)[pos]
    has_const = bool(np.any(const != 0)) or len(nodes) == 1
    if len(nodes) == 2:
        a = _scatter_entry(tp, nodes[0][0], nodes[0][1], m, dt, _nm(name), F_HIDDEN)
        b = _scatter_entry(tp, nodes[1][0], nodes[1][1], m, dt, _nm(name), F_HIDDEN)
        node = _add_entry(tp, a, b, None, m, dt, _nm(name), 0)
    else:
        if has_const:
            a = _scatter_entry(tp, nodes[0][0], nodes[0][1], m, dt, _nm(name), F_HIDDEN)
            if parts[0][3]:
                node = _add_entry(tp, a, -1, const, m, dt, _nm(name), 0)
            else:                               # the constant is the first operand (torch order)
                ca = tp.save(const, dt)
                node = tp.entry(OPCODE["add"], _nm(name), m, dt, -1, a, sa=ca, p0=1, p1=1)[1]
        else:
            node = _scatter_entry(tp, nodes[0][0], nodes[0][1], m, dt, _nm(name), 0)
    return _out(y if y.ndim else y[()], rdt, tp, node)


def _dtname(t):
    return t._dtype._tname if isinstance(t, Tensor) else type(t).__name__


def nonzero(input, as_tuple=False):
    nz = np.nonzero(np.asarray(input._data))
    if as_tuple:
        if np.ndim(input._data) == 0:
            return (_wrap(np.zeros(int(bool(input._data)), np.int64), int64),)
        return tuple(_wrap(i.astype(np.int64), int64) for i in nz)
    if np.ndim(input._data) == 0:
        return _wrap(np.zeros((int(bool(input._data)), 0), np.int64), int64)
    return _wrap(np.stack(nz, axis=1).astype(np.int64) if nz else np.zeros((0, 0), np.int64), int64)


def argwhere(input):
    return nonzero(input)


def count_nonzero(input, dim=None):
    from .tensor import _norm_dims
    d = np.asarray(input._data)
    # a 0-d tensor: dim 0 is itself; dim=() counts over all of them (as torch)
    axis = (_norm_dims(dim, d.ndim) or None) if d.ndim else None
    r = np.count_nonzero(d, axis=axis)
    return _wrap(np.asarray(r, np.int64)[()] if np.ndim(r) == 0 else np.asarray(r, np.int64), int64)


# ----------------------------------------------------------------------------- comparisons
def _cmp_fn(npf, name):
    def f(input, other):
        if other is None:
            return name == "ne"
        if not isinstance(input, Tensor):
            input = _wrap(np.asarray(input), _DEFAULT[0] if isinstance(input, float) else int64)
        _check_shapes(input, other)
        r = npf(input._data, _npv(other))
        r = np.asarray(r, np.bool_)
        out = _wrap(r if r.ndim else r[()], bool_)
        if GUARD[0] is not None:                  # tapegrad.func is recording: a branch?
            GUARD[0]("cmp", input, other, npf, out)
        return out
    f.__name__ = name
    return f


eq = _cmp_fn(np.equal, "eq")
ne = not_equal = _cmp_fn(np.not_equal, "ne")
lt = less = _cmp_fn(np.less, "lt")
le = less_equal = _cmp_fn(np.less_equal, "le")
gt = greater = _cmp_fn(np.greater, "gt")
ge = greater_equal = _cmp_fn(np.greater_equal, "ge")


def equal(input, other):
    return input._data.shape == other._data.shape and bool(np.all(input._data == other._data))


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    r = np.isclose(input._data, _npv(other), rtol=rtol, atol=atol, equal_nan=equal_nan)
    return _wrap(np.asarray(r)[()] if np.ndim(r) == 0 else r, bool_)


def _pred(npf, name):
    def f(input):
        r = np.asarray(npf(input._data))
        return _wrap(r if r.ndim else r[()], bool_)
    f.__name__ = name
    return f


isnan = _pred(np.isnan, "isnan")
isinf = _pred(np.isinf, "isinf")
isfinite = _pred(np.isfinite, "isfinite")
isposinf = _pred(np.isposinf, "isposinf")
isneginf = _pred(np.isneginf, "isneginf")
signbit = _pred(np.signbit, "signbit")


def isreal(input):
    return _wrap(np.ones(np.shape(input._data), np.bool_), bool_)


def _logical(npf, name):
    def f(input, other=None):
        r = npf(np.asarray(input._data)) if other is None else npf(np.asarray(input._data),
                                                                   np.asarray(_npv(other)))
        r = np.asarray(r, np.bool_)
        return _wrap(r if r.ndim else r[()], bool_)
    f.__name__ = name
    return f


logical_and = _logical(np.logical_and, "logical_and")
logical_or = _logical(np.logical_or, "logical_or")
logical_xor = _logical(np.logical_xor, "logical_xor")
logical_not = _logical(np.logical_not, "logical_not")


def _bitwise(npf, name):
    def f(input, other):
        if isinstance(input, Tensor) and input._dtype._cat == 2 or (
                isinstance(other, Tensor) and other._dtype._cat == 2) or isinstance(other, float):
            raise RuntimeError("\"%s_cpu\" not implemented for 'Float'" % name)
        a = input if isinstance(input, Tensor) else other
        b = other if isinstance(input, Tensor) else input
        rdt = _result_dtype(a, b)
        r = np.asarray(npf(np.asarray(_npv(input)), np.asarray(_npv(other))), rdt.np)
        return _wrap(r if r.ndim else r[()], rdt)
    f.__name__ = name
    return f


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor")


def bitwise_not(input):
    if input._dtype._cat == 2:
        raise RuntimeError("\"bitwise_not_cpu\" not implemented for 'Float'")
    r = np.asarray(np.invert(input._data))
    return _wrap(r if r.ndim else r[()], input._dtype)


# ----------------------------------------------------------------------------- Tensor methods
def _install():
    T = Tensor
    for nm_ in ("tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh", "erf",
                "log1p", "expm1", "exp2", "log2", "log10", "rsqrt", "square", "floor", "ceil",
                "round", "trunc", "fix", "sign", "sgn", "frac", "clamp", "clip", "clamp_min",
                "clamp_max", "maximum", "minimum", "fmax", "fmin", "atan2", "arctan2", "hypot",
                "remainder", "fmod", "floor_divide", "lerp", "nonzero", "argwhere", "count_nonzero",
                "eq", "ne", "lt", "le", "gt", "ge", "not_equal", "less", "less_equal",
                "greater", "greater_equal", "equal", "isclose", "isnan", "isinf", "isfinite",
                "isposinf", "isneginf", "signbit", "logical_and", "logical_or", "logical_xor",
                "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"):
        setattr(T, nm_, globals()[nm_])

    def _where_m(self, condition, other):
        return where(condition, self, other)
    T.where = _where_m

    def _special(name):
        def f(self, *args, **kw):
            from . import special
            return getattr(special, name)(self, *args, **kw)
        return f
    for nm_ in ("lgamma", "digamma", "logit", "erfc", "xlogy", "mvlgamma"):
        setattr(T, nm_, _special(nm_))
    T.polygamma = lambda self, n: __import__("tapegrad.special", fromlist=["x"]).polygamma(n, self)
    T.__floordiv__ = lambda self, other: floor_divide(self, other)
    T.__rfloordiv__ = lambda self, other: floor_divide(other, self)
    T.__mod__ = lambda self, other: remainder(self, other)
    T.__rmod__ = lambda self, other: remainder(other, self)
    T.__and__ = lambda self, other: (logical_and(self, other) if self._dtype is bool_ and (
        not isinstance(other, Tensor) or other._dtype is bool_) else bitwise_and(self, other))
    T.__or__ = lambda self, other: (logical_or(self, other) if self._dtype is bool_ and (
        not isinstance(other, Tensor) or other._dtype is bool_) else bitwise_or(self, other))
    T.__xor__ = lambda self, other: (logical_xor(self, other) if self._dtype is bool_ and (
        not isinstance(other, Tensor) or other._dtype is bool_) else bitwise_xor(self, other))
    T.__rand__ = T.__and__
    T.__ror__ = T.__or__
    T.__rxor__ = T.__xor__

    def _invert(self):
        if self._dtype is bool_:
            return logical_not(self)
        return bitwise_not(self)
    T.__invert__ = _invert
    T.__eq__ = lambda self, other: eq(self, other)
    T.__ne__ = lambda self, other: ne(self, other)
    T.__lt__ = lambda self, other: lt(self, other)
    T.__le__ = lambda self, other: le(self, other)
    T.__gt__ = lambda self, other: gt(self, other)
    T.__ge__ = lambda self, other: ge(self, other)
    T.__hash__ = lambda self: id(self)

    def _inplace_fn(f):
        def g(self, *args, **kw):
            return self._inplace(args[0] if args else None, lambda s, o: f(s, *args, **kw))
        return g
    for nm_ in ("clamp", "clip", "clamp_min", "clamp_max", "floor", "ceil", "round", "trunc",
                "sign", "frac", "tan", "sinh", "cosh", "erf", "log1p", "expm1", "exp2", "log2",
                "log10", "rsqrt", "square", "asin", "acos", "atan", "atan2", "hypot", "remainder", "fmod",
                "floor_divide", "lerp", "maximum", "minimum"):
        f = globals()[nm_]
        setattr(T, nm_ + "_", _inplace_fn(f))
    import sys
    _t = sys.modules[__name__.rsplit(".", 1)[0] + ".tensor"]
    for nm_ in ("exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "abs", "neg", "reciprocal"):
        setattr(T, nm_ + "_", _inplace_fn(getattr(_t, nm_)))
    T.__imod__ = T.remainder_
    T.__ifloordiv__ = T.floor_divide_


_install()
