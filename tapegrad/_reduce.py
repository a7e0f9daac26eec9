"""Reductions and scans beyond sum/mean: prod, var, std, norm, logsumexp, cumsum, cumprod,
max/min (with indices), amax/amin, argmax/argmin, sort/argsort/topk, median, any/all.

All are compositions over the primitive rows: selections (max with dim, sort, topk) are
gathers at the selected positions; even splits of tied extrema are gathers followed by a
scaled sum; prod is a balanced tree of multiplications (exact gradients with zeros); cumsum
and cumprod are Hillis-Steele scans of shifted index maps (O(n log k), exact and replayable).
Intermediate entries are hidden and the last carries torch's grad_fn name.

Selections (max/min/sort/topk/median, amax ties) are data-dependent: a compiled replay on new
leaf values reuses the recorded positions (as any traced program does).
"""
import builtins
import collections
import math
import numbers
import warnings

import numpy as np

from ._core import tape as _tp
from ._state import STATE
from ._core.names import ONE_INPUT, name_id
from ._schema import F_HIDDEN
from .ops import OPCODE
from .tensor import (Tensor, _DEFAULT, _ND, _guard_order, _guard_sel, _as_dtype, _wrap, bool_,
                     float64, int32, int64)
from ._record import _convert, _nm, _out, _src, _tape_for
from .tensor import _norm_dims
from ._math import _NotDifferentiable, exact, _not_tensor, unary
from ._record import hide, named, saves_inputs, saves_result, tap, tap_entry
from ._record import _SUM0_NM, _add_reduce, _record_unary_sum, _red_args, _reduce
from ._compiled import _vmath
from ._shape import _add_entry, _scatter_entry, cat, narrow, select
from ._math import clamp, logical_xor, maximum, minimum, not_differentiable
from ._record import _rename_last, _reshape_view, as_result
from .creation import empty_like, ones, zeros
from ._record import _hide_below
from ._math import _div_scalar, _inplace_of, _mul_scalar

# the names of torch's namespace this family defines (tapegrad/__init__.py imports them)
__all__ = ["all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "argsort", "bincount",
           "bucketize", "cdist", "corrcoef", "cov", "cummax", "cummin", "cumprod", "cumsum",
           "cumulative_trapezoid", "diff", "dist", "frexp", "gradient", "histc", "histogram",
           "kthvalue", "logcumsumexp", "logsumexp", "max", "mean", "median", "min", "mode", "msort",
           "nanmean", "nanmedian", "nanquantile", "nansum", "norm", "prod", "quantile", "renorm",
           "return_types", "searchsorted", "sort", "std", "std_mean", "sum", "topk", "trapezoid",
           "trapz", "unique", "unique_consecutive", "var", "var_mean"]


def sum(input, dim=_ND, keepdim=_ND, dtype=None, *, axis=_ND, keepdims=_ND, out=None):
    if not isinstance(input, Tensor):
        raise _not_tensor("sum", input)
    if dim is _ND and dtype is None and keepdim is _ND and axis is _ND and keepdims is _ND \
            and input._dtype._cat == 2:
        # x.sum() of a floating tensor (_reduce's first branch, without its dispatch)
        d = input._data
        if d.size >= _vmath.MIN and _vmath.OK and d.flags.c_contiguous:
            y = input._dtype.np.type(_vmath.total(d.reshape(-1)))
        else:
            y = input._dtype.np.type(_add_reduce(d, axis=None))
        if input._rg and STATE.enabled:
            return _record_unary_sum(input, y, 1.0, _SUM0_NM)
        return _wrap(y, input._dtype)
    dim, keepdim, named1 = _red_args("sum", dim, keepdim, axis, keepdims)
    return _reduce(input, dim, keepdim, dtype, False, named1)


def mean(input, dim=_ND, keepdim=_ND, dtype=None, *, axis=_ND, keepdims=_ND, out=None):
    dim, keepdim, named1 = _red_args("mean", dim, keepdim, axis, keepdims)
    return _reduce(input, dim, keepdim, dtype, True, named1)


ONE_INPUT.update({"CumsumBackward0", "CumprodBackward0", "LogcumsumexpBackward0"})


def _rt(name, fields=("values", "indices")):
    cls = collections.namedtuple(name, fields)
    cls.__module__ = "torch.return_types"
    cls.__qualname__ = name

    def __repr__(self):
        return "torch.return_types.%s(\n%s)" % (
            name, ",\n".join("%s=%r" % (f, getattr(self, f)) for f in fields))
    cls.__repr__ = __repr__
    return cls


class return_types:
    max = _rt("max")
    min = _rt("min")
    sort = _rt("sort")
    topk = _rt("topk")
    median = _rt("median")
    kthvalue = _rt("kthvalue")
    mode = _rt("mode")
    aminmax = _rt("aminmax", ("min", "max"))


# ----------------------------------------------------------------------------- helpers
def _grads(x):
    return x._rg and STATE.enabled


def _alias(dim, keepdim, axis, keepdims):
    """numpy's spellings ``axis=`` / ``keepdims=``, which torch accepts for dim / keepdim."""
    return (dim if axis is _ND else axis), (keepdim if keepdims is _ND else keepdims)


def _one_dim(dim, nd):
    return _norm_dims(dim, nd)[0] if nd else 0


def _val(arr, dt):
    arr = np.asarray(arr, dt.np)
    return arr if arr.ndim else arr[()]


def _pick(x, pos, shape, y, name):
    """Tensor of x's elements at flat positions ``pos`` (a gather named ``name``)."""
    if not _grads(x):
        return _wrap(_val(y, x._dtype), x._dtype)
    if x._dtype.slot < 0:
        raise RuntimeError("only floating point tensors can be differentiated")
    tp = _tape_for(x)
    node = _src(x, tp)
    pos = np.ascontiguousarray(pos, np.int64).reshape(-1)
    e, n = tp.entry(OPCODE["gather"], _nm(name), pos.size, x._dtype.slot, node, -1,
                    p0=tp.index(pos), p1=pos.size)
    return _out(_val(y, x._dtype).reshape(shape) if shape else _val(y, x._dtype), x._dtype, tp, n)


_GATHER = OPCODE["gather"]


def _even_split(x, tied, out_index, nout, out_shape, y, name, nan_out=None):
    """Extrema with ties: each output's gradient split evenly over its tied inputs.
    tied: flat positions of tied elements; out_index: their output numbers; nan_out: outputs
    whose gradient is NaN on all their inputs (amax of a slice holding a NaN, as torch).
    torch's nodes (amax, max(), median(), the inf norms) save the result."""
    if not _grads(x):
        return _wrap(_val(y, x._dtype), x._dtype)
    tp = _tape_for(x)
    node = _src(x, tp)
    dt = x._dtype.slot
    if nout == 1 and tied.size == 1 and nan_out is None:   # one extremum: one gather
        e, n = tp.entry(_GATHER, _nm(name), 1, dt, node, -1, p0=tp.index(tied), p1=1)
        return saves_result(_out(_val(y, x._dtype), x._dtype, tp, n))
    counts = np.bincount(out_index, minlength=nout)
    if nan_out is None and np.all(counts == 1):
        order = np.argsort(out_index, kind="stable")
        e, n = tp.entry(OPCODE["gather"], _nm(name), nout, dt, node, -1,
                        p0=tp.index(tied[order]), p1=tied.size)
        return saves_result(_out(_val(y, x._dtype), x._dtype, tp, n))
    e, g = tp.entry(OPCODE["gather"], _nm("IndexBackward0"), tied.size, dt, node, -1,
                    p0=tp.index(tied), p1=tied.size, fl=F_HIDDEN)
    if nout == 1:
        c = math.nan if nan_out is not None else 1.0 / tied.size
        e, n = tp.entry(OPCODE["sum"], _nm(name), 1, dt, g, -1, ci=tp.const(c))
        return saves_result(_out(_val(y, x._dtype), x._dtype, tp, n))
    s = _scatter_entry(tp, g, np.ascontiguousarray(out_index, np.int64), nout, dt,
                       _nm("SumBackward1"), F_HIDDEN)
    w = (1.0 / np.maximum(counts, 1)).astype(x._dtype.np)
    if nan_out is not None:
        w[nan_out] = np.nan
    cw = tp.save(w, dt)
    e, n = tp.entry(OPCODE["mul"], _nm(name), nout, dt, s, -1, sb=cw, p0=1, p1=1, fl=2)
    return saves_result(_out(_val(y, x._dtype), x._dtype, tp, n))


# ----------------------------------------------------------------------------- max / min
def _extreme(input, dim, keepdim, other, largest, fname):
    if other is not None or isinstance(dim, Tensor):
        o = other if other is not None else dim
        return maximum(input, o) if largest else minimum(input, o)
    d = np.asarray(input._arr())
    _guard_order(input, dim)            # (tapegrad.func: the positions chosen by value)
    if dim is None:
        if d.size == 0:
            raise RuntimeError("%s(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument." % fname)
        y = np.max(d) if largest else np.min(d)
        if input._dtype._cat < 2 or not _grads(input):
            return _wrap(_val(y, input._dtype), input._dtype)
        flat = d.reshape(-1)
        # torch's evenly_distribute_backward: split over the elements equal to the result
        # (over the NaNs when it is NaN)
        tied = np.flatnonzero(flat == y) if y == y else np.flatnonzero(flat != flat)
        return _even_split(input, tied.astype(np.int64), np.zeros(tied.size, np.int64), 1, (),
                           y, "MaxBackward1" if largest else "MinBackward1")
    if isinstance(dim, (tuple, list)):
        raise TypeError("%s() received an invalid combination of arguments - got (Tensor, tuple)"
                        % fname)
    nd = d.ndim
    ax = _one_dim(dim, nd)
    if nd == 0:
        vals, idx = d, np.zeros((), np.int64)
        pos = np.zeros((), np.int64)
    else:
        if d.shape[ax] == 0:
            raise IndexError("%s(): Expected reduction dim %d to have non-zero size." % (fname, ax))
        idx = (np.argmax if largest else np.argmin)(d, axis=ax)
        idx = np.expand_dims(idx, ax)
        vals = np.take_along_axis(d, idx, ax)
        pos = np.take_along_axis(np.arange(d.size, dtype=np.int64).reshape(d.shape), idx, ax)
        if not keepdim:
            vals, idx, pos = (np.squeeze(v, ax) for v in (vals, idx, pos))
    name = "MaxBackward0" if largest else "MinBackward0"
    if input._dtype._cat == 2:
        v = _pick(input, pos, np.shape(vals), vals, name)
    else:
        v = _wrap(_val(vals, input._dtype), input._dtype)
    rt = return_types.max if largest else return_types.min
    return rt(v, _wrap(_val(idx, int64), int64))


def max(input, dim=None, keepdim=False, *, other=None, out=None, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _extreme(input, dim, keepdim, other, True, "max")


def min(input, dim=None, keepdim=False, *, other=None, out=None, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _extreme(input, dim, keepdim, other, False, "min")


def _amax(input, dim, keepdim, largest, name=None, nan_grad=True):
    d = np.asarray(input._arr())
    _guard_order(input, dim)
    nd = d.ndim
    dims = tuple(range(nd)) if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0) \
        else _norm_dims(dim, nd) if nd else ()
    fname = "amax" if largest else "amin"
    if d.size == 0:
        if dim is None or not isinstance(dim, int) and len(dim) == 0:
            raise RuntimeError("%s(): Expected reduction dim to be specified for input.numel() == 0. "
                               "Specify the reduction dim with the 'dim' argument." % fname)
        zero = [k for k in dims if d.shape[k] == 0]
        if zero:
            raise IndexError("%s(): Expected reduction dim %d to have non-zero size."
                             % (fname, zero[0]))
    mk = (d.max(axis=dims, keepdims=True) if largest else d.min(axis=dims, keepdims=True)) \
        if nd else d
    y = mk if keepdim else (mk.reshape(()) if nd and len(dims) == nd else
                            np.squeeze(mk, dims) if nd else mk)
    name = name or ("AmaxBackward0" if largest else "AminBackward0")
    if input._dtype._cat < 2 or not _grads(input):
        return _wrap(_val(y, input._dtype), input._dtype)
    if d.size == 0:
        return _final(input, np.shape(y), name, copy=True)
    # torch scales the gradient by the count of elements equal to the result: a slice whose
    # result is NaN (it holds one) matches none, 0/0, and all its elements get NaN (nan_grad;
    # vector_norm's inf orders split it over the NaNs instead)
    nanm = mk != mk
    if mk.size == 1:                         # all of it reduced: no output map
        v = mk.item()
        if v != v and not nan_grad:
            flat = d.reshape(-1)
            tied = np.flatnonzero(flat != flat)
            return _even_split(input, tied, np.zeros(tied.size, np.int64), 1, np.shape(y), y, name)
        if v != v:
            tied = np.arange(d.size, dtype=np.int64)
            return _even_split(input, tied, np.zeros(tied.size, np.int64), 1, np.shape(y), y,
                               name, nan_out=True)
        tied = np.flatnonzero(d.reshape(-1) == v)
        return _even_split(input, tied, np.zeros(tied.size, np.int64), 1, np.shape(y), y, name)
    kshape = np.shape(mk)
    nout = int(np.prod(kshape, dtype=np.int64))
    oidx = np.broadcast_to(np.arange(nout, dtype=np.int64).reshape(kshape), d.shape).reshape(-1)
    tiedm = (d == mk) | (nanm if nan_grad else (d != d))
    tied = np.flatnonzero(tiedm.reshape(-1)).astype(np.int64)
    nan_out = nanm.reshape(-1) if nan_grad and nanm.any() else None
    return _even_split(input, tied, oidx[tied], nout, np.shape(y), y, name, nan_out=nan_out)


def amax(input, dim=(), keepdim=False, *, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _amax(input, dim, keepdim, True)


def amin(input, dim=(), keepdim=False, *, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _amax(input, dim, keepdim, False)


def aminmax(input, *, dim=None, keepdim=False, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if input._data.size == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    d = () if dim is None else dim
    lo = _amax(input, d, keepdim, False, "AminmaxBackward0")
    hi = _amax(input, d, keepdim, True, "AminmaxBackward0")
    return return_types.aminmax(lo, hi)


def _arg(input, dim, keepdim, largest):
    d = np.asarray(input._data)
    _guard_order(input, dim)
    f = np.argmax if largest else np.argmin
    fname = "argmax" if largest else "argmin"
    if d.dtype == np.bool_:
        raise RuntimeError("%s(): does not support bool input" % fname)
    if dim is None:
        if d.size == 0:
            raise IndexError("%s(): Expected reduction dim to be specified for input.numel() == 0."
                             % fname)
        r = f(d.reshape(-1))
        if keepdim:
            r = np.reshape(r, (1,) * d.ndim)
        return _wrap(_val(r, int64), int64)
    ax = _one_dim(dim, d.ndim)
    if d.ndim == 0:
        return _wrap(np.int64(0), int64)
    if d.shape[ax] == 0:
        raise IndexError("%s(): Expected reduction dim %d to have non-zero size." % (fname, ax))
    r = f(d, axis=ax)
    if keepdim:
        r = np.expand_dims(r, ax)
    return _wrap(_val(r, int64), int64)


def argmax(input, dim=None, keepdim=False, *, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _arg(input, dim, keepdim, True)


def argmin(input, dim=None, keepdim=False, *, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _arg(input, dim, keepdim, False)


# ----------------------------------------------------------------------------- sort / topk
def _order(d, ax, descending):
    """Stable sort order along ax (NaN largest, as torch)."""
    if not descending:
        return np.argsort(d, axis=ax, kind="stable")
    key = -(d.astype(np.float64) if d.dtype.kind in "biu" else d)
    if key.dtype.kind == "f":
        key = np.where(key != key, -np.inf, key)
    return np.argsort(key, axis=ax, kind="stable")


def sort(input, dim=-1, descending=False, stable=None, *, out=None, axis=_ND):
    if axis is not _ND:
        dim = axis
    # torch's sort(*, stable, ...) overload (any stable= given) is SortBackward1; its CPU sort
    # without stable=True may order ties differently (here: always stable)
    name = "SortBackward0" if stable is None else "SortBackward1"
    d = np.asarray(input._arr())
    _guard_order(input, dim)
    if d.ndim == 0:
        return return_types.sort(_pick(input, np.zeros((), np.int64), (), d, name)
                                 if input._dtype._cat == 2 else _wrap(d[()], input._dtype),
                                 _wrap(np.int64(0), int64))
    ax = _one_dim(dim, d.ndim)
    idx = _order(d, ax, descending)
    vals = np.take_along_axis(d, idx, ax)
    pos = np.take_along_axis(np.arange(d.size, dtype=np.int64).reshape(d.shape), idx, ax)
    v = _pick(input, pos, vals.shape, vals, name) if input._dtype._cat == 2 else \
        _wrap(vals, input._dtype)
    return return_types.sort(v, _wrap(idx.astype(np.int64), int64))


def argsort(input, dim=-1, descending=False, stable=False, *, axis=_ND):
    if axis is not _ND:
        dim = axis
    return sort(input, dim, descending, stable).indices


def msort(input):
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None, axis=_ND):
    if axis is not _ND:
        dim = axis
    d = np.asarray(input._arr())
    ax = _one_dim(dim, d.ndim)
    n = d.shape[ax] if d.ndim else 1
    if k > n or k < 0:
        raise RuntimeError("selected index k out of range")
    _guard_order(input, dim)
    if d.ndim == 0:
        # torch: a 0-dim result (the element itself, for k = 0 too)
        idx = np.zeros((), np.int64)
        return return_types.topk(_pick(input, idx, (), d, "TopkBackward0")
                                 if input._dtype._cat == 2 else _wrap(d[()], input._dtype),
                                 _wrap(np.int64(0), int64))
    idx = np.take(_order(d, ax, largest), np.arange(k), axis=ax)
    vals = np.take_along_axis(d, idx, ax)
    pos = np.take_along_axis(np.arange(d.size, dtype=np.int64).reshape(d.shape), idx, ax)
    v = _pick(input, pos, vals.shape, vals, "TopkBackward0") if input._dtype._cat == 2 else \
        _wrap(vals, input._dtype)
    return return_types.topk(v, _wrap(idx.astype(np.int64), int64))


def kthvalue(input, k, dim=-1, keepdim=False, *, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    _guard_order(input, dim)
    d = np.asarray(input._arr())
    ax = _one_dim(dim, d.ndim)
    n = d.shape[ax] if d.ndim else 1
    if n == 0:
        raise IndexError("kthvalue(): Expected reduction dim %d to have non-zero size." % ax)
    if not 1 <= k <= n:
        raise RuntimeError("kthvalue(): selected number k out of range for dimension %d" % ax)
    if d.ndim == 0:             # dim 0 / -1 of a 0-dim tensor: the element itself
        v = _pick(input, np.zeros((), np.int64), (), d, "KthvalueBackward0") \
            if input._dtype._cat == 2 else _wrap(d[()], input._dtype)
        return return_types.kthvalue(v, _wrap(np.int64(0), int64))
    idx = np.take(_order(d, ax, False), [k - 1], axis=ax)
    vals = np.take_along_axis(d, idx, ax)
    pos = np.take_along_axis(np.arange(d.size, dtype=np.int64).reshape(d.shape), idx, ax)
    if not keepdim:
        vals, idx, pos = (np.squeeze(a, ax) for a in (vals, idx, pos))
    v = _pick(input, pos, vals.shape, vals, "KthvalueBackward0") if input._dtype._cat == 2 else \
        _wrap(_val(vals, input._dtype), input._dtype)
    return return_types.kthvalue(v, _wrap(_val(idx, int64), int64))


def median(input, dim=None, keepdim=False, *, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    _guard_order(input, dim)
    d = np.asarray(input._arr())
    if dim is None:
        flat = d.reshape(-1)
        if flat.size == 0:
            if input._dtype._cat == 2 and _grads(input):     # NaN, with a grad_fn (torch)
                return exact(named(input.sum(), "MedianBackward0"), _val(np.nan, input._dtype))
            return _wrap(_val(np.nan, input._dtype), input._dtype)
        if input._dtype._cat == 2 and np.isnan(flat).any():
            y = flat.dtype.type(np.nan)
            tied = np.flatnonzero(flat != flat)
        else:
            y = np.partition(flat, (flat.size - 1) // 2)[(flat.size - 1) // 2]   # the lower one
            tied = np.flatnonzero(flat == y)
        if input._dtype._cat < 2 or not _grads(input):
            return _wrap(_val(y, input._dtype), input._dtype)
        # torch's evenly_distribute_backward: split over the elements equal to the median
        return _even_split(input, tied.astype(np.int64), np.zeros(tied.size, np.int64), 1, (), y,
                           "MedianBackward0")
    ax = _one_dim(dim, d.ndim)
    n = d.shape[ax] if d.ndim else 1
    if n == 0:
        raise IndexError("median(): Expected reduction dim %d to have non-zero size." % ax)
    if d.ndim and input._dtype._cat == 2 and np.isnan(d).any():
        # a slice holding NaN: the median is NaN, at its first NaN (as torch)
        isn = np.isnan(d)
        idx = np.expand_dims(_order(d, ax, False).take((n - 1) // 2, axis=ax), ax)
        idx = np.where(isn.any(axis=ax, keepdims=True), np.expand_dims(isn.argmax(axis=ax), ax),
                       idx)
        vals = np.take_along_axis(d, idx, ax)
        pos = np.take_along_axis(np.arange(d.size, dtype=np.int64).reshape(d.shape), idx, ax)
        if not keepdim:
            vals, idx, pos = (np.squeeze(a, ax) for a in (vals, idx, pos))
        v = _pick(input, pos, vals.shape, vals, "MedianBackward1") if _grads(input) else \
            _wrap(_val(vals, input._dtype), input._dtype)
        return return_types.median(v, _wrap(_val(idx, int64), int64))
    r = kthvalue(input, (n - 1) // 2 + 1, dim if d.ndim == 0 else ax, keepdim)
    if r.values._tape is not None:
        _rename(r.values, "MedianBackward1")
    return return_types.median(r.values, r.indices)


def _rename(t, name):
    _rename_last(t, name)


# ----------------------------------------------------------------------------- any / all
def _bool_red(input, dim, keepdim, f):
    d = np.asarray(input._data)
    # uint8 in, uint8 out (torch keeps that legacy); every other dtype gives bool
    dt = input._dtype if d.dtype == np.uint8 else bool_
    if dim is None:
        r = f(d)
        if keepdim:
            r = np.reshape(r, (1,) * d.ndim)
    else:
        dims = _norm_dims(dim, d.ndim) if d.ndim else None
        if dims == ():                       # torch: no dimension reduced, an elementwise test
            r = d != 0
        else:
            r = f(d, axis=dims, keepdims=keepdim)
    return _wrap(_val(r, dt), dt)


def any(input, dim=None, keepdim=False, *, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _bool_red(input, dim, keepdim, np.any)


def all(input, dim=None, keepdim=False, *, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    return _bool_red(input, dim, keepdim, np.all)


# ----------------------------------------------------------------------------- prod
def _tree_prod(x, ax):
    """Product along ``ax`` (keepdim) by a balanced tree of hidden multiplications."""
    k = x._data.shape[ax]
    K = 1
    while K < k:
        K *= 2
    cur = x
    if K > k:
        shp = list(x._data.shape)
        shp[ax] = K - k
        cur = cat([x, ones(tuple(shp), dtype=x._dtype)], ax)
        hide(cur)
    while K > 1:
        h = K // 2
        a = narrow(cur, ax, 0, h)
        b = narrow(cur, ax, h, h)
        nxt = a * b
        hide(a, b, nxt)
        cur = nxt
        K = h
    return cur


def _prod_args(dim, keepdim, axis, keepdims):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if dim is _ND:
        if keepdim is not _ND:
            raise TypeError("prod() received an invalid combination of arguments - got "
                            "(keepdim=bool, ), but expected one of:")
        return None, False
    if not isinstance(dim, numbers.Integral):
        raise TypeError("prod(): argument 'dim' (position 2) must be int, not %s"
                        % type(dim).__name__)
    return dim, (False if keepdim is _ND else bool(keepdim))


def _prod_linear(x, d, yk, dims, keepdim, name):
    """torch's prod gradient when the input holds no zero: g * prod / x (NaN or inf where
    the tree of products would stay finite: x holds an inf or a NaN). Recorded as
    sum(x * w) with the constant w = prod / x (its value replaced by numpy's)."""
    with np.errstate(all="ignore"):
        w = (yk / d).astype(d.dtype)
    p = x * _wrap(w, x._dtype)
    t = p.sum(dims, keepdim=keepdim) if dims is not None else p.sum()
    hide(p)
    return named(t, name)


def _prod(input, dim=_ND, keepdim=_ND, dtype=None, *, axis=_ND, keepdims=_ND):
    dim, keepdim = _prod_args(dim, keepdim, axis, keepdims)
    x = input
    if dtype is not None:
        x = x.to(_as_dtype(dtype))
    elif x._dtype._cat < 2:
        x = _convert(x, int64)
    d = np.asarray(x._arr())
    if dim is None:
        y = np.prod(d, dtype=x._dtype.np)
        if not _grads(x):
            return _wrap(_val(y, x._dtype), x._dtype)
        if d.size == 0:
            return exact(named(x.sum(), "ProdBackward0"), y)
        if not np.isfinite(d).all() and not (d == 0).any():
            return exact(_prod_linear(x, d, y, None, False, "ProdBackward0"), y)
        flat = x.reshape(-1)
        hide(flat)
        p = _tree_prod(flat, 0)
        return exact(_final(p, (), "ProdBackward0"), y)
    ax = _one_dim(dim, d.ndim)
    y = np.prod(d, axis=ax, keepdims=keepdim, dtype=x._dtype.np) if d.ndim else d
    if not _grads(x) or d.ndim == 0:
        if d.ndim == 0 and _grads(x):
            return _final(x, (), "ProdBackward1", copy=True)
        return _wrap(_val(y, x._dtype), x._dtype)
    if d.size == 0:
        return exact(named(x.sum(ax, keepdim=keepdim), "ProdBackward1"), y)
    if not np.isfinite(d).all() and not (d == 0).any():
        yk = y if keepdim else np.expand_dims(y, ax)
        return exact(_prod_linear(x, d, yk, ax, keepdim, "ProdBackward1"), y)
    p = _tree_prod(x, ax)
    return exact(_final(p, np.shape(y), "ProdBackward1", copy=p is x), y)


def prod(input, dim=_ND, keepdim=_ND, dtype=None, *, axis=_ND, keepdims=_ND):
    """torch's node saves the input and the result: writing either in place makes backward
    raise."""
    out = saves_result(_prod(input, dim, keepdim, dtype, axis=axis, keepdims=keepdims))
    return saves_inputs(out, input) if out._tape is not None else out


def _final(t, shape, name, copy=False):
    """An identity entry named ``name`` giving ``t`` its final shape (the visible node; not a
    view: ``copy`` when t is the op's input, see ``as_result``)."""
    return as_result(t, tuple(shape), name, copy)


# ----------------------------------------------------------------------------- var / std
def _var_args(dim, unbiased, keepdim, correction, axis=_ND, keepdims=_ND):
    if isinstance(dim, bool):               # var(x, unbiased)
        unbiased, dim = dim, None
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if correction is None:
        correction = 1 if (unbiased is None or unbiased) else 0
    elif unbiased is not None:
        raise TypeError("var() received an invalid combination of arguments - got (unbiased=bool, "
                        "correction=Number), but expected one of:")
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return dim, keepdim, correction


def _var_core(input, dim, keepdim, correction, sqrt_, name):
    """var / std over dims: the value in float64, two passes (the mean, then the squared
    deviations from it); recorded as (x - mean(x))^2 summed and scaled (std: the square root
    of its clamp at the dtype's tiny, so a constant slice has gradient 0 as in torch)."""
    x = input
    if x._dtype._cat < 2:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    d = np.asarray(x._arr())
    nd = d.ndim
    dims = tuple(range(nd)) if dim is None else (_norm_dims(dim, nd) if nd else ())
    n = 1
    for i in dims:
        n *= d.shape[i]
    if nd:
        if d.size:
            from ._compiled import _sums  # deferred: Numba machine code, loaded on first use
            v, _ = _sums.var_dims(d if d.dtype.itemsize >= 4 else d.astype(np.float32), dims,
                                  correction)
        else:
            with np.errstate(all="ignore"):
                v = np.full(tuple(1 if i in dims else s for i, s in enumerate(d.shape)),
                            0.0 / (n - correction if n > correction else 0) if n else np.nan)
        if not keepdim:
            v = v.reshape(tuple(s for i, s in enumerate(d.shape) if i not in dims))
    else:
        with np.errstate(all="ignore"):
            v = np.float64(0.0) / (1 - correction if correction < 1 else 0)
    with np.errstate(all="ignore"):
        y = np.asarray(np.sqrt(v) if sqrt_ else v, x._dtype.np)
    den = n - correction
    if den <= 0:
        warnings.warn("%s(): degrees of freedom is <= 0. Correction should be strictly less than "
                      "the reduction factor (input numel divided by output numel)."
                      % ("std" if sqrt_ else "var"), stacklevel=3)
    if not _grads(x):
        return _wrap(_val(y, x._dtype), x._dtype)
    if den <= 0 and nd and d.size:
        # torch: grad * (inf where x != mean(x), nan where x == mean(x)), as a product with
        # that constant summed (the value is numpy's)
        mv = np.asarray(x.detach().mean(dims, keepdim=True)._data)
        w = np.where(d == mv, np.nan, np.inf).astype(d.dtype)
        p = x * _wrap(w, x._dtype)
        s = p.sum(dims, keepdim=keepdim)
        hide(p)
        if not sqrt_:
            return exact(named(s, name), y)
        cl = unary(s, "clamp_min", c=float(np.finfo(x._dtype.np).tiny))
        hide(s, cl)
        return exact(named(cl.sqrt(), name), y)
    c = 1.0 / den if den > 0 else math.nan
    m = x.mean(dims, keepdim=True) if nd else x
    dv = x - m
    big = 1.0
    if sqrt_ and d.size:
        # std = M sqrt(sum((dv / M)^2) c) for a constant power of two M: the same function
        # and gradient, without dv^2 overflowing (or underflowing) the dtype
        with np.errstate(all="ignore"):
            mx = float(np.max(np.abs(np.asarray(dv._data, np.float64))))
        if math.isfinite(mx) and mx > 0 and not 2.0 ** -40 < mx < 2.0 ** 40:
            big = 2.0 ** round(math.log2(mx))
            dv0 = dv
            dv = scale(dv0, 1.0 / big, "MulBackward0")
            hide(dv0)
    sq = dv * dv
    s = sq.sum(dims, keepdim=keepdim) if nd else sq
    hide(m, dv, sq, s)
    if not nd:
        s = _final(s, (), "VarBackward0")
        hide(s)
    if sqrt_:
        var_ = scale(s, c, "VarBackward0")
        cl = unary(var_, "clamp_min", c=float(np.finfo(x._dtype.np).tiny))
        hide(var_, cl)
        out = cl.sqrt()
        if big != 1.0:
            hide(out)
            out = scale(out, big, "MulBackward0")
        return exact(named(out, name), y)
    return exact(scale(s, c, name), y)


def scale(t, c, name):
    return unary(t, "scale", c=c, name=name)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=_ND, keepdims=_ND):
    dim, keepdim, correction = _var_args(dim, unbiased, keepdim, correction, axis, keepdims)
    return _var_core(input, dim, keepdim, correction, False, "VarBackward0")


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=_ND, keepdims=_ND):
    dim, keepdim, correction = _var_args(dim, unbiased, keepdim, correction, axis, keepdims)
    return _var_core(input, dim, keepdim, correction, True, "StdBackward0")


def _joint(parts, name):
    """Tensors sharing one entry named ``name`` (like torch's several-output nodes): the
    parts are concatenated flat (hidden) and one identity entry covers them, one alias node
    per part."""
    live = [p for p in parts if p._tape is not None]
    if not live:
        return parts
    flat = [p.reshape(-1) for p in parts]
    both = cat(flat)
    hide(*flat, both)
    tp, node = _tp.resolve(both)
    e, n = tp.entry(OPCODE["copy"], _nm(name), both._data.size, both._dtype.slot, node, -1)
    N = _tp.view_i64(tp.N)
    base_off, slot = int(N[n * 5]), int(N[n * 5 + 2])
    del N
    outs, off = [], 0
    for i, p in enumerate(parts):
        a = len(tp.N) // 5
        tp.N.extend((base_off + off, p._data.size, slot, e, i))
        off += p._data.size
        outs.append(_out(p._data, p._dtype, tp, a))
    return tuple(outs)


def _mean_of(input, dim, keepdim):
    if input._data.ndim == 0:
        return input.mean()
    return input.mean(dim if dim is not None else tuple(range(input._data.ndim)), keepdim=keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=_ND,
             keepdims=_ND):
    dim, keepdim, correction = _var_args(dim, unbiased, keepdim, correction, axis, keepdims)
    v = _var_core(input, dim, keepdim, correction, False, "VarBackward0")
    return _joint((v, _mean_of(input, dim, keepdim)), "VarMeanBackward0")


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=_ND,
             keepdims=_ND):
    dim, keepdim, correction = _var_args(dim, unbiased, keepdim, correction, axis, keepdims)
    s = _var_core(input, dim, keepdim, correction, True, "StdBackward0")
    return _joint((s, _mean_of(input, dim, keepdim)), "StdMeanBackward0")


# ----------------------------------------------------------------------------- norms
_NORM = "LinalgVectorNormBackward0"


def _vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    if dtype is not None:
        x = x.to(_as_dtype(dtype))
    if x._dtype._cat < 2:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           "Got %s" % x._dtype._tname)
    if not isinstance(ord, numbers.Number):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, not %s"
                        % type(ord).__name__)
    d = np.asarray(x._arr())
    nd = d.ndim
    dims = None if dim is None else (_norm_dims(dim, nd) if nd else None)
    axis = dims
    p = float(ord)
    with np.errstate(all="ignore"):
        a = np.abs(d)
        if p == math.inf:
            y = np.amax(a, axis=axis, keepdims=keepdim) if a.size else np.zeros(())
        elif p == -math.inf:
            y = np.amin(a, axis=axis, keepdims=keepdim)
        elif p == 0:
            y = np.sum(a != 0, axis=axis, keepdims=keepdim).astype(d.dtype)
        elif p == 1:
            y = np.sum(a, axis=axis, keepdims=keepdim)
        elif p == 2:
            y = np.sqrt(np.sum(a * a, axis=axis, keepdims=keepdim, dtype=np.float64))
        else:
            y = np.sum(a ** p, axis=axis, keepdims=keepdim, dtype=np.float64) ** (1.0 / p)
    y = np.asarray(y, x._dtype.np)
    if not _grads(x):
        return _wrap(_val(y, x._dtype), x._dtype)
    sdims = tuple(range(nd)) if dims is None else dims
    if p == math.inf or p == -math.inf:
        ab = x.abs()
        hide(ab)
        r = _amax(ab, sdims if nd else None, keepdim, p > 0, nan_grad=False)
        return exact(named(r, _NORM), y)
    if p == 0:
        s = x.sum(sdims, keepdim=keepdim) if nd else x
        if nd:
            hide(s)
        return exact(scale(s, 0.0, _NORM), y)
    if p == 1:
        ab = x.abs()
        s = ab.sum(sdims, keepdim=keepdim) if nd else ab
        hide(ab)
        return exact(named(s if nd else _final(s, (), _NORM), _NORM), y)
    tiny = float(np.finfo(x._dtype.np).tiny)
    if p == 2:
        sq = x * x
        s = sq.sum(sdims, keepdim=keepdim) if nd else sq
        cl = unary(s, "clamp_min", c=tiny)
        out = cl.sqrt()
        hide(sq, s, cl)
        return exact(named(_nan_slices(out, x, sdims, keepdim, y), _NORM), y)
    ab = x.abs()
    pw = ab ** p
    s = pw.sum(sdims, keepdim=keepdim) if nd else pw
    cl = unary(s, "clamp_min", c=tiny)
    out = cl ** (1.0 / p)
    hide(ab, pw, s, cl)
    return exact(named(_nan_slices(out, x, sdims, keepdim, y), _NORM), y)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """torch's node saves the result: writing it in place makes backward raise."""
    return saves_result(_vector_norm(x, ord, dim, keepdim, dtype=dtype, out=out))


def _nan_slices(out, x, dims, keepdim, y):
    """A norm's gradient is NaN over a slice whose norm is NaN (torch divides by it), where
    the clamp before the root gives 0: ``out + sum(x * z)`` with z NaN on those slices, 0
    elsewhere (a hidden term: the value is numpy's)."""
    nan = np.isnan(y)
    if not nan.any():
        return out
    d = x._data
    if d.ndim and not keepdim:
        nan = np.expand_dims(nan, dims)
    z = np.broadcast_to(np.where(nan, np.nan, 0.0).astype(d.dtype), np.shape(d))
    p = x * _wrap(np.ascontiguousarray(z) if z.ndim else z[()], x._dtype)
    t = p.sum(dims, keepdim=keepdim) if d.ndim else p
    hide(out, p, t)
    return out + t


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None, *, axis=_ND,
         keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        # torch.norm: 'nuc' (and any other string) goes to linalg.matrix_norm over dim (all dims
        # when None), which raises for orders it does not know
        from .linalg import matrix_norm
        d = list(range(input._data.ndim)) if dim is None else ([dim] if isinstance(dim, int) else
                                                                list(dim))
        return matrix_norm(input, p, d, keepdim, dtype=dtype)
    return vector_norm(input, p, dim, keepdim, dtype=dtype)


# ----------------------------------------------------------------------------- logsumexp
def logsumexp(input, dim=_ND, keepdim=False, *, axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if dim is _ND:
        raise TypeError("logsumexp() missing 1 required positional arguments: \"dim\"")
    x = input
    if x._dtype._cat < 2:
        x = _convert(x, _DEFAULT[0])
    d = np.asarray(x._arr())
    nd = d.ndim
    dims = _norm_dims(dim, nd) if nd else ()
    if nd and dims == () and not keepdim:
        # torch reduces over everything into a keepdim-shaped buffer, then fails to copy it
        raise RuntimeError("output with shape [] doesn't match the broadcast shape [%s]"
                           % ", ".join(["1"] * nd))
    if nd and dims == ():
        dims = tuple(range(nd))
    if d.size == 0:
        m = np.zeros(tuple(1 if i in dims else s for i, s in enumerate(d.shape)), d.dtype)
    else:
        m = d.max(axis=dims, keepdims=True) if nd else np.array(d)
    if m.size == 1 and math.isfinite(m.item()):
        whole = True                      # the common case: no errstate, one shift value
    else:
        whole = False
        m = np.where(np.isfinite(m), m, 0).astype(d.dtype)
    if not _grads(x):
        with np.errstate(all="ignore"):
            s = np.sum(np.exp(d - m), axis=dims, keepdims=True) if nd else np.exp(d - m)
            yk = np.log(s) + m
        y = yk if (keepdim or not nd) else np.squeeze(yk, dims)
        return _wrap(_val(y, x._dtype), x._dtype)
    # the same arithmetic recorded (the values are numpy's: no separate evaluation)
    if whole and nd and len(dims) == nd and not keepdim:
        # all dimensions reduced to a scalar: the shift is a number (x's dtype holds it
        # exactly, so x - m and lg + m round as with the array), no reshape entry at the end
        mf = m.item()
        z = x - mf
        e = z.exp()
        sm = e.sum()
        lg = sm.log()
        out = lg + mf
        hide(z, e, sm, lg)
        return saves_result(named(out, "LogsumexpBackward0"))
    mt = _wrap(m, x._dtype)
    z = x - mt
    e = z.exp()
    sm = e.sum(dims, keepdim=True) if nd else e
    lg = sm.log()
    out = lg + mt
    hide(z, e, sm, lg)
    if not keepdim and nd:
        hide(out)
        out = _final(out, np.squeeze(out._data, dims).shape, "LogsumexpBackward0")
    else:
        named(out, "LogsumexpBackward0")
    return saves_result(out)


# ----------------------------------------------------------------------------- scans
def _need_dim(dim, axis, fname):
    """A scan's dim (or numpy's ``axis=``), which torch requires."""
    if axis is not _ND:
        dim = axis
    if dim is _ND:
        raise TypeError("%s() missing 1 required positional arguments: \"dim\"" % fname)
    return dim


def _scan(d, ax, dt, prod):
    """cumsum / cumprod values: floats accumulated in float64 (torch's CPU scans), integers
    by numpy in their dtype."""
    if d.ndim == 0:
        return d.astype(dt.np)
    if d.dtype.kind == "f" and d.dtype.itemsize >= 4:
        from ._compiled import _sums  # deferred: Numba machine code, loaded on first use
        return _sums.scan(d, ax, prod)
    return (np.cumprod if prod else np.cumsum)(d, axis=ax, dtype=dt.np)


def cumsum(input, dim=_ND, dtype=None, out=None, *, axis=_ND):
    """Hillis-Steele scan: log2(k) steps of y += shift(y, s) (hidden gathers, scatters, adds)."""
    dim = _need_dim(dim, axis, "cumsum")
    x = input
    if dtype is not None:
        x = x.to(_as_dtype(dtype))
    elif x._dtype._cat < 2:
        x = _convert(x, int64)
    d = np.asarray(x._arr())
    nd = d.ndim
    ax = _one_dim(dim, nd)
    y = _scan(d, ax, x._dtype, False)
    if not _grads(x):
        return _wrap(_val(y, x._dtype), x._dtype)
    k = d.shape[ax] if nd else 1
    if k <= 1:
        return _final(x, d.shape, "CumsumBackward0", copy=True)
    tp = _tape_for(x)
    node = _src(x, tp)
    dt = x._dtype.slot
    m = d.size
    pos = np.arange(m, dtype=np.int64).reshape(d.shape)
    s = 1
    pre = (slice(None),) * ax
    while s < k:
        src = pos[pre + (slice(0, k - s),)].reshape(-1)
        dst = pos[pre + (slice(s, k),)].reshape(-1)
        e, g = tp.entry(OPCODE["gather"], _nm("IndexBackward0"), src.size, dt, node, -1,
                        p0=tp.index(src), p1=src.size, fl=F_HIDDEN)
        sh = _scatter_entry(tp, g, dst, m, dt, _nm("SumBackward1"), F_HIDDEN)
        node = _add_entry(tp, node, sh, None, m, dt, _nm("CumsumBackward0"),
                          0 if s * 2 >= k else F_HIDDEN)
        s *= 2
    return _out(_val(y, x._dtype), x._dtype, tp, node)


def _cumprod(input, dim=_ND, dtype=None, out=None, *, axis=_ND):
    """cumprod: Hillis-Steele products; every step's operand values are saved for its VJP."""
    dim = _need_dim(dim, axis, "cumprod")
    x = input
    if dtype is not None:
        x = x.to(_as_dtype(dtype))
    elif x._dtype._cat < 2:
        x = _convert(x, int64)
    d = np.asarray(x._arr())
    ax = _one_dim(dim, d.ndim)
    if not _grads(x):
        y = _scan(d, ax, x._dtype, True)
        return _wrap(_val(y, x._dtype), x._dtype)
    k = d.shape[ax] if d.ndim else 1
    if k <= 1:
        return _final(x, d.shape, "CumprodBackward0", copy=True)
    if not np.isfinite(d).all() and not (d == 0).any():
        # torch's gradient without zeros: reversed_cumsum(g * y) / x, NaN or inf where the
        # scan of products would stay finite (x holds an inf or a NaN). Recorded as
        # y * cumsum(x * (1 / x)) with y and 1 / x constants (the value is numpy's)
        y = _scan(d, ax, x._dtype, True)
        with np.errstate(all="ignore"):
            r = (1.0 / d).astype(d.dtype)
        p = x * _wrap(r, x._dtype)
        c = cumsum(p, ax)
        hide(p, c)
        return exact(named(c * _wrap(y, x._dtype), "CumprodBackward0"), y)
    if (d == 0).any() and not np.isfinite(d).all():
        # zeros and inf / nan: torch's backward (cumprod_backward) takes the first zero of each
        # slice apart; the product rule through the scan below would make inf * 0 = nan
        return _CumprodFn[0].apply(x, ax) if _CumprodFn else _cumprod_fn().apply(x, ax)
    # tensor-level Hillis-Steele (values tracked by the tensors themselves)
    cur = x
    s = 1
    while s < k:
        shp = list(d.shape)
        shp[ax] = s
        head = ones(tuple(shp), dtype=x._dtype)
        shifted = cat([head, narrow(cur, ax, 0, k - s)], ax)
        nxt = cur * shifted
        hide(shifted)
        if s * 2 < k:
            hide(nxt)
        cur = nxt
        s *= 2
    y = _scan(d, ax, x._dtype, True)
    return exact(named(cur, "CumprodBackward0"), y)


_CumprodFn = []


def _cumprod_zeros_grad(g, d, y, ax):
    """torch's first-order cumprod_backward for an input with zeros (numpy): before each
    slice's first zero z1, reversed_cumsum(g y) / x; at z1, prod(x[:z1]) times the sum over
    [z1, z2) of g times the products of x over (z1, j]; 0 from z1 + 1 on."""
    g, d, y = (np.moveaxis(np.asarray(a), ax, -1) for a in (g, d, y))
    with np.errstate(all="ignore"):
        w = y * g
        cs = np.cumsum(d == 0, axis=-1)
        m0 = cs == 0
        rc = np.flip(np.cumsum(np.flip(np.where(m0, w, 0), -1), -1), -1)
        gi = np.where(m0, rc / d, 0).astype(d.dtype)
        m1 = cs == 1
        fz = np.argmax(m1, axis=-1)[..., None]
        fzm = np.zeros(m1.shape, bool)
        np.put_along_axis(fzm, fz, True, axis=-1)
        fzm &= m1
        between = m1 & ~fzm
        acc = (np.cumprod(np.where(between, d, 1), axis=-1) * np.where(m1, g, 0)).sum(
            -1, keepdims=True)
        before = np.where(fz == 0, 1, np.take_along_axis(y, np.maximum(fz - 1, 0), -1))
        gi = np.where(fzm, acc * before, gi).astype(d.dtype)
    return np.moveaxis(gi, -1, ax)


def _cumprod_fn():
    from .autograd.function import Function  # deferred: built on first use, as _matrix's

    class Cumprod(Function):
        """cumprod of an input with zeros and inf / nan, with torch's backward: the masked
        O(n) formula, or (create_graph) the O(n^2) one of products of slices around each
        element, as cumprod_backward in grad mode."""
        _node_name_id = staticmethod(lambda: name_id("CumprodBackward0"))

        @staticmethod
        def forward(ctx, x, ax):
            ctx.save_for_backward(x)
            ctx.ax = ax
            return _wrap(_scan(np.asarray(x._data), ax, x._dtype, True), x._dtype)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            ax = ctx.ax
            d = np.asarray(x._data)
            if not STATE.enabled:
                y = _scan(d, ax, x._dtype, True)
                return _wrap(_cumprod_zeros_grad(g._data, d, y, ax), x._dtype), None
            n = d.shape[ax]
            parts = []
            for k in builtins.range(n):
                if k == 0:
                    om = cat([ones_like_slice(x, ax), cumprod(narrow(x, ax, 1, n - 1), ax)], ax)
                elif k == n - 1:
                    om = prod(narrow(x, ax, 0, k), ax, True)
                else:
                    until = prod(narrow(x, ax, 0, k), ax, True)
                    after = cumprod(narrow(x, ax, k + 1, n - k - 1), ax)
                    om = cat([until, until.expand_as(after) * after], ax)
                parts.append((narrow(g, ax, k, n - k) * om).sum(ax, keepdim=True))
            return cat(parts, ax), None

    def ones_like_slice(x, ax):
        shp = list(x.shape)
        shp[ax] = 1
        return ones(tuple(shp), dtype=x._dtype)
    _CumprodFn.append(Cumprod)
    return Cumprod


def cumprod(input, dim=_ND, dtype=None, out=None, *, axis=_ND):
    """torch's node saves the result: writing it in place makes backward raise."""
    return saves_result(_cumprod(input, dim, dtype, out, axis=axis))


def _logcumsumexp(input, dim=_ND, *, axis=_ND):
    dim = _need_dim(dim, axis, "logcumsumexp")
    x = input
    if x._dtype._cat < 2:
        raise NotImplementedError("\"logcumsumexp_out_cpu\" not implemented for '%s'"
                                  % x._dtype._tname)
    d = np.asarray(x._arr())
    ax = _one_dim(dim, d.ndim)
    m = np.amax(d, axis=ax, keepdims=True) if d.ndim else d
    m = np.where(np.isfinite(m), m, 0).astype(d.dtype)
    mt = _wrap(m, x._dtype)
    z = x - mt
    e = z.exp()
    c = cumsum(e, ax)
    lg = c.log()
    out = lg + mt
    hide(z, e, c, lg)
    # the value: torch's scan of log-add-exp accumulated in double (the first element is x's
    # own: log(exp(1e-30)) would round it to 0)
    with np.errstate(all="ignore"):
        y = np.logaddexp.accumulate(d.astype(np.float64), axis=ax) if d.ndim else d
    return exact(named(out, "LogcumsumexpBackward0"), y)


def logcumsumexp(input, dim=_ND, *, axis=_ND):
    """torch's node saves the result: writing it in place makes backward raise."""
    return saves_result(_logcumsumexp(input, dim, axis=axis))


# ----------------------------------------------------------------------------- Tensor methods
def _install(Tensor):
    T = Tensor

    def _norm_m(self, p="fro", dim=None, keepdim=False, dtype=None, *, axis=_ND, keepdims=_ND):
        return norm(self, p, dim, keepdim, dtype=dtype, axis=axis, keepdims=keepdims)

    def _cov_m(self, *, correction=1, fweights=None, aweights=None):
        return cov(self, correction=correction, fweights=fweights, aweights=aweights)
    methods = dict(max=max, min=min, amax=amax, amin=amin, aminmax=aminmax, argmax=argmax,
                   argmin=argmin, sort=sort, argsort=argsort, msort=msort, topk=topk,
                   kthvalue=kthvalue, median=median, any=any, all=all, prod=prod, var=var, std=std,
                   norm=_norm_m, logsumexp=logsumexp, cumsum=cumsum, cumprod=cumprod,
                   logcumsumexp=logcumsumexp, nansum=nansum, nanmean=nanmean,
                   nanmedian=nanmedian, cummax=cummax, cummin=cummin, mode=mode,
                   bincount=bincount, unique=unique, unique_consecutive=_unique_consecutive_m,
                   diff=diff, histc=histc, quantile=quantile, nanquantile=nanquantile, dist=dist,
                   cov=_cov_m, corrcoef=corrcoef)
    for k, f in methods.items():
        setattr(T, k, f)

    def _cumsum_(self, dim, dtype=None):
        return self._inplace(None, lambda s, o: cumsum(s, dim))
    T.cumsum_ = _cumsum_



# ----------------------------------------------------------------------------- NaN-aware
def _float_only(x, fname):
    if x._dtype._cat < 2:
        raise RuntimeError("%s(): expected input to have floating point or complex dtype but "
                           "got %s" % (fname, x._dtype._tname))


def _sum_over(x, dim, keepdim, dtype):
    """x.sum over dim (None / () / []: all of them, keepdim honoured), SumBackward1."""
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return _reduce(x, dim, keepdim, dtype, False, True)


def _nan_args(dim, keepdim, axis, keepdims):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    if isinstance(dim, (tuple, list)) and len(dim) == 0:
        dim = None
    return dim, keepdim


def _nansum(x, dim, keepdim, dtype, empty_nan=False):
    """sum treating NaN as 0 (NansumBackward0). Recorded, when x holds NaNs, as a gather of
    the other elements added into their outputs: torch's gradient g * ~isnan(x). empty_nan
    (nanmean): the slices holding only NaNs get all their elements and a NaN weight, so
    their gradient is NaN as torch's (g / 0) * 0."""
    if dtype is not None:
        x = x.to(_as_dtype(dtype))
    d = x._data
    isn = np.isnan(d) if x._dtype._cat == 2 else None
    if isn is None or not isn.any():        # (an explicit dtype is the result's, as torch's)
        return named(_sum_over(x, dim, keepdim, None if dtype is None else x._dtype),
                     "NansumBackward0")
    d = np.asarray(d)
    y = _sum_over(_wrap(np.where(isn, 0, d).astype(d.dtype), x._dtype), dim, keepdim, None)
    if not _grads(x):
        return y
    nd = d.ndim
    dims = tuple(range(nd)) if dim is None else (_norm_dims(dim, nd) if nd else ())
    kshape = tuple(1 if i in dims else n for i, n in enumerate(d.shape))
    nout = int(np.prod(kshape, dtype=np.int64))
    oidx = np.broadcast_to(np.arange(nout, dtype=np.int64).reshape(kshape), d.shape).reshape(-1)
    keepm = ~isn.reshape(-1)
    empty = None
    if empty_nan:
        empty = isn.all(axis=dims, keepdims=True).reshape(-1) if nd else isn.reshape(-1)
        if empty.any():
            keepm = keepm | empty[oidx]
        else:
            empty = None
    keep = np.flatnonzero(keepm).astype(np.int64)
    tp = _tape_for(x)
    node = _src(x, tp)
    dt = x._dtype.slot
    e, g = tp.entry(_GATHER, _nm("IndexBackward0"), keep.size, dt, node, -1, p0=tp.index(keep),
                    p1=keep.size, fl=F_HIDDEN)
    nm = _nm("NansumBackward0")
    if nout == 1:
        c = math.nan if empty is not None else 1.0
        e, n = tp.entry(OPCODE["sum"], nm, 1, dt, g, -1, ci=tp.const(c))
    elif empty is None:
        e, n = tp.entry(OPCODE["segsum"], nm, nout, dt, g, -1, p0=tp.index(oidx[keep]),
                        p1=keep.size, ci=tp.const(1.0))
    else:
        sc = _scatter_entry(tp, g, np.ascontiguousarray(oidx[keep]), nout, dt,
                            _nm("SumBackward1"), F_HIDDEN)
        w = np.where(empty, np.nan, 1.0).astype(x._dtype.np)
        e, n = tp.entry(OPCODE["mul"], nm, nout, dt, sc, -1, sb=tp.save(w, dt), p0=1, p1=1, fl=2)
    return _out(y._data, x._dtype, tp, n)


def nansum(input, dim=None, keepdim=False, *, dtype=None, axis=_ND, keepdims=_ND):
    dim, keepdim = _nan_args(dim, keepdim, axis, keepdims)
    return _nansum(input, dim, keepdim, dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None, axis=_ND, keepdims=_ND):
    """torch's composition: nansum(x) / count of non-NaN elements (DivBackward0)."""
    _float_only(input, "nanmean")
    dim, keepdim = _nan_args(dim, keepdim, axis, keepdims)
    s = _nansum(input, dim, keepdim, dtype, empty_nan=True)
    ok = ~np.isnan(np.asarray(input._data))
    nd = ok.ndim
    dims = None if dim is None else (_norm_dims(dim, nd) if nd else None)
    cnt = np.sum(ok, axis=dims, keepdims=keepdim and nd > 0)
    if keepdim and dims is None and nd:
        cnt = np.reshape(cnt, (1,) * nd)
    cnt = np.asarray(cnt, s._dtype.np)
    return s / _wrap(cnt[()] if cnt.ndim == 0 else cnt, s._dtype)


def nanmedian(input, dim=_ND, keepdim=False, *, axis=_ND, keepdims=_ND):
    """median of the non-NaN elements (NaN when there are none)."""
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    _guard_order(input, None if dim is _ND else dim)
    d = np.asarray(input._arr())
    if dim is _ND:
        flat = d.reshape(-1)
        ok = flat == flat
        if flat.size == 0 or not ok.any():
            if flat.size == 0 and input._dtype._cat == 2 and _grads(input):  # (as median)
                return exact(named(input.sum(), "NanmedianBackward0"), _val(np.nan, input._dtype))
            if flat.size == 0 or input._dtype._cat < 2 or not _grads(input):
                return _wrap(_val(np.nan, input._dtype), input._dtype)
            tied = np.flatnonzero(~ok)
            return _even_split(input, tied, np.zeros(tied.size, np.int64), 1, (),
                               flat.dtype.type(np.nan), "NanmedianBackward0")
        vals = flat[ok]
        y = np.partition(vals, (vals.size - 1) // 2)[(vals.size - 1) // 2]
        if input._dtype._cat < 2 or not _grads(input):
            return _wrap(_val(y, input._dtype), input._dtype)
        tied = np.flatnonzero(flat == y)
        return _even_split(input, tied.astype(np.int64), np.zeros(tied.size, np.int64), 1, (), y,
                           "NanmedianBackward0")
    ax = _one_dim(dim, d.ndim)
    if d.ndim == 0:
        r = kthvalue(input, 1, 0, keepdim)
        _rename(r.values, "NanmedianBackward1")
        return return_types.nanmedian(r.values, r.indices)
    n = d.shape[ax]
    if n == 0:
        raise IndexError("nanmedian(): Expected reduction dim %d to have non-zero size." % ax)
    order = _order(d, ax, False)                      # NaNs last, stable
    valid = (d == d).sum(axis=ax, keepdims=True)
    k = np.maximum((valid - 1) // 2, 0)
    idx = np.take_along_axis(order, k, ax)
    vals = np.take_along_axis(d, idx, ax)
    pos = np.take_along_axis(np.arange(d.size, dtype=np.int64).reshape(d.shape), idx, ax)
    if not keepdim:
        vals, idx, pos = (np.squeeze(a, ax) for a in (vals, idx, pos))
    v = _pick(input, pos, vals.shape, vals, "NanmedianBackward1") \
        if input._dtype._cat == 2 and _grads(input) else \
        _wrap(_val(vals, input._dtype), input._dtype)
    return return_types.nanmedian(v, _wrap(_val(idx, int64), int64))


return_types.nanmedian = _rt("nanmedian")
return_types.cummax = _rt("cummax")
return_types.cummin = _rt("cummin")


# ----------------------------------------------------------------------------- cummax / cummin / mode
def _cumext(input, dim, largest):
    name = "cummax" if largest else "cummin"
    d = np.asarray(input._arr())
    if d.ndim == 0:
        v = _final(input, (), "CummaxBackward0" if largest else "CumminBackward0", copy=True) \
            if _grads(input) else _wrap(d[()], input._dtype)
        return getattr(return_types, name)(v, _wrap(np.int64(0), int64))
    ax = _one_dim(dim, d.ndim)
    if d.size == 0:
        return getattr(return_types, name)(
            _final(input, d.shape, "CummaxBackward0" if largest else "CumminBackward0", True)
            if _grads(input) else _wrap(d.copy(), input._dtype),
            _wrap(np.zeros(d.shape, np.int64), int64))
    with np.errstate(invalid="ignore"):
        vals = (np.maximum if largest else np.minimum).accumulate(d, axis=ax)
    # torch updates the index on ties and at every NaN: the last position at which the
    # running extremum was attained
    at = d == vals
    if d.dtype.kind == "f":
        at |= d != d
    k = d.shape[ax]
    ar = np.arange(k, dtype=np.int64).reshape((k,) + (1,) * (d.ndim - ax - 1))
    idx = np.maximum.accumulate(np.where(at, ar, 0), axis=ax)
    if input._dtype._cat == 2 and _grads(input):
        pos = np.take_along_axis(np.arange(d.size, dtype=np.int64).reshape(d.shape), idx, ax)
        v = _pick(input, pos, vals.shape, vals, "CummaxBackward0" if largest else
                  "CumminBackward0")
    else:
        v = _wrap(vals, input._dtype)
    return getattr(return_types, name)(v, _wrap(idx, int64))


def cummax(input, dim=_ND, *, axis=_ND):
    dim = _need_dim(dim, axis, "cummax")
    _guard_order(input, dim)
    return _cumext(input, dim, True)


def cummin(input, dim=_ND, *, axis=_ND):
    dim = _need_dim(dim, axis, "cummin")
    _guard_order(input, dim)
    return _cumext(input, dim, False)


def _std_sort_order(v):
    """The permutation libstdc++'s ``std::sort(first, last, [](a, b) { return a.first <
    b.first; })`` makes of the pairs (v[i], i): introsort (median-of-three quicksort, heapsort
    past depth 2 log2 n), then insertion sort; nan compares false both ways, as in C++."""
    a = [(x, i) for i, x in enumerate(v)]
    n = len(a)

    def lt(p, q):
        return p[0] < q[0]

    def adjust_heap(first, hole, ln, value):
        top = hole
        child = hole
        while child < (ln - 1) // 2:
            child = 2 * (child + 1)
            if lt(a[first + child], a[first + child - 1]):
                child -= 1
            a[first + hole] = a[first + child]
            hole = child
        if ln % 2 == 0 and child == (ln - 2) // 2:
            child = 2 * (child + 1)
            a[first + hole] = a[first + child - 1]
            hole = child - 1
        parent = (hole - 1) // 2
        while hole > top and lt(a[first + parent], value):
            a[first + hole] = a[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        a[first + hole] = value

    def heap_sort(first, last):
        ln = last - first
        if ln >= 2:
            parent = (ln - 2) // 2
            while True:
                adjust_heap(first, parent, ln, a[first + parent])
                if parent == 0:
                    break
                parent -= 1
        while last - first > 1:
            last -= 1
            value = a[last]
            a[last] = a[first]
            adjust_heap(first, 0, last - first, value)

    def median_to_first(res, x, y, z):
        if lt(a[x], a[y]):
            j = y if lt(a[y], a[z]) else z if lt(a[x], a[z]) else x
        else:
            j = x if lt(a[x], a[z]) else z if lt(a[y], a[z]) else y
        a[res], a[j] = a[j], a[res]

    def partition(first, last, pivot):
        while True:
            while first < n and lt(a[first], a[pivot]):
                first += 1
            last -= 1
            while last > 0 and lt(a[pivot], a[last]):
                last -= 1
            if not first < last:
                return first
            a[first], a[last] = a[last], a[first]
            first += 1

    def introsort(first, last, depth):
        while last - first > 16:
            if depth == 0:
                heap_sort(first, last)
                return
            depth -= 1
            median_to_first(first, first + 1, first + (last - first) // 2, last - 1)
            cut = partition(first + 1, last, first)
            introsort(cut, last, depth)
            last = cut

    def linear_insert(i, lo):
        val = a[i]
        j = i - 1
        while j >= lo and lt(val, a[j]):
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = val

    if n > 1:
        introsort(0, n, 2 * (n.bit_length() - 1))
        m = 16 if n > 16 else n
        for i in range(1, m):                       # __insertion_sort of the first 16
            if lt(a[i], a[0]):
                val = a[i]
                a[1:i + 1] = a[0:i]
                a[0] = val
            else:
                linear_insert(i, 0)
        for i in range(m, n):                       # __unguarded_insertion_sort of the rest
            linear_insert(i, 0)
    return [i for _, i in a]


def mode(input, dim=-1, keepdim=False, *, axis=_ND, keepdims=_ND):
    """The most frequent value of each slice (the smallest of equally frequent ones) and the
    index of its last occurrence, as torch's CPU kernel on slices it sorts stably."""
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    _guard_order(input, dim)
    d = np.asarray(input._arr())
    if d.ndim == 0:
        v = _final(input, (), "ModeBackward0", copy=True) if _grads(input) and \
            input._dtype._cat == 2 \
            else _wrap(d[()], input._dtype)
        return return_types.mode(v, _wrap(np.int64(0), int64))
    ax = _one_dim(dim, d.ndim)
    k = d.shape[ax]
    if k == 0:
        raise IndexError("mode(): Expected reduction dim %d to have non-zero size." % ax)
    m = np.moveaxis(d, ax, -1).reshape(-1, k)
    order = np.argsort(m, axis=1, kind="stable")
    if k > 16 or (m.dtype.kind in "fc" and np.isnan(m).any()):
        # torch sorts (value, index) pairs by value with std::sort: an insertion sort (stable,
        # as above) up to 16 elements without nan; beyond, or with nan (no order), the pairs
        # land where libstdc++'s introsort puts them
        for r in range(m.shape[0]):
            if k > 16 or np.isnan(m[r]).any():
                order[r] = _std_sort_order(m[r].tolist())
    s = np.take_along_axis(m, order, 1)
    rows = m.shape[0]
    vi = np.empty(rows, np.int64)
    for r in range(rows):               # runs of equal values in the sorted slice
        sr = s[r]
        brk = np.flatnonzero(sr[1:] != sr[:-1]) + 1
        starts = np.concatenate(([0], brk))
        ends = np.concatenate((brk, [k]))
        j = int(np.argmax(ends - starts))          # the first (smallest) most frequent run
        vi[r] = order[r, ends[j] - 1]              # its last element: the last occurrence
    out_shape = np.moveaxis(d, ax, -1).shape[:-1]
    idx = vi.reshape(out_shape)
    vals = np.take_along_axis(m, vi[:, None], 1).reshape(out_shape)
    pos = np.moveaxis(np.arange(d.size, dtype=np.int64).reshape(d.shape), ax, -1).reshape(
        -1, k)[np.arange(rows), vi].reshape(out_shape)
    if keepdim:
        vals, idx, pos = (np.expand_dims(a, ax) for a in (vals, idx, pos))
    v = _pick(input, pos, vals.shape, vals, "ModeBackward0") \
        if input._dtype._cat == 2 and _grads(input) else \
        _wrap(_val(vals, input._dtype), input._dtype)
    return return_types.mode(v, _wrap(_val(idx, int64), int64))


# ----------------------------------------------------------------------------- counting
class _NoDerivative(_NotDifferentiable):
    """A result that requires grad under torch's node ``name`` whose backward raises
    NotImplementedError (``opname`` holds the message)."""

    @staticmethod
    def backward(ctx, *grads):
        raise NotImplementedError(ctx.opname)


def _no_derivative(out, name, message, *inputs):
    if not (STATE.enabled and builtins.any(isinstance(t, Tensor) and t._rg for t in inputs)) \
            or out._dtype._cat < 2:
        return out
    return named(_NoDerivative.apply((out._data, out._dtype), message, *inputs), name)


def bincount(input, weights=None, minlength=0):
    d = np.asarray(input._data)
    if d.dtype.kind not in "biu":
        raise NotImplementedError("\"bincount_cpu\" not implemented for '%s'" % input._dtype._tname)
    if d.ndim != 1 or (d.size and d.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is None:
        return _wrap(np.bincount(d, minlength=minlength).astype(np.int64), int64)
    w = np.asarray(weights._data)
    if w.shape != d.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    # float32 weights keep their dtype, any other weights give float64 (as torch)
    dt = weights._dtype if weights._dtype.np == np.float32 else float64
    out = _wrap(np.bincount(d, weights=w.astype(np.float64), minlength=minlength).astype(dt.np),
                dt)
    return not_differentiable(out, "bincount", weights)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Sorted unique elements (dim None) or slices along dim; NaNs are all distinct, as in
    torch. Not differentiable (torch's Unique2Backward0 / UniqueDimBackward0 raise)."""
    d = np.asarray(input._data)
    if dim is None:
        flat = d.reshape(-1)
        kw = {"equal_nan": False} if flat.dtype.kind == "f" else {}
        u, inv, cnt = np.unique(flat, return_inverse=True, return_counts=True, **kw)
        inv = inv.reshape(d.shape)
        name, msg = "Unique2Backward0", "the derivative for '_unique2' is not implemented."
    else:
        ax = _one_dim(dim, d.ndim) if d.ndim else _norm_dims(dim, 0)[0]
        if d.size == 0 and d.shape[ax] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")
        if d.ndim == 0:
            u, inv, cnt = d.reshape(1), np.zeros(1, np.int64), np.ones(1, np.int64)
        elif d.size == 0:
            u, inv, cnt = d, np.zeros(0, np.int64), np.zeros(0, np.int64)
        else:
            u, inv, cnt = np.unique(d, return_inverse=True, return_counts=True, axis=ax)
        name, msg = "UniqueDimBackward0", "the derivative for 'unique_dim' is not implemented."
    out = _no_derivative(_wrap(np.ascontiguousarray(u), input._dtype), name, msg, input)
    res = [out]
    if return_inverse:
        res.append(_wrap(np.asarray(inv, np.int64).reshape(np.shape(inv)), int64))
    if return_counts:
        res.append(_wrap(np.asarray(cnt, np.int64), int64))
    return res[0] if len(res) == 1 else tuple(res)


def histc(input, bins=100, min=0, max=0):
    d = np.asarray(input._data)
    if input._dtype._cat < 2:
        raise NotImplementedError("\"histogram_cpu\" not implemented for '%s'" % input._dtype._tname)
    if bins <= 0:
        raise RuntimeError("torch.histc(): bins must be > 0, but got %d for dim 0" % bins)
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if lo == hi and d.size:
        lo, hi = float(d.min()), float(d.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError("torch.histc: range of [%s, %s] is not finite" % (lo, hi))
    v = d.reshape(-1).astype(np.float64)
    v = v[(v >= lo) & (v <= hi)]
    pos = np.floor((v - lo) * bins / (hi - lo)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return _wrap(np.bincount(pos, minlength=bins).astype(d.dtype), input._dtype)


def _bsearch(s2, v2, right):
    """torch's binary search (cus_lower_bound / cus_upper_bound) of each row of values ``v2`` in
    the row of boundaries ``s2``, all rows at once: the same probes, so the same positions for
    unsorted boundaries or nan (numpy's search reuses bounds between keys)."""
    ct = np.result_type(s2, v2)
    s2, v2 = s2.astype(ct, copy=False), v2.astype(ct, copy=False)
    n = s2.shape[-1]
    start = np.zeros(v2.shape, np.int64)
    end = np.full(v2.shape, n, np.int64)
    rows = np.arange(s2.shape[0])[:, None]
    with np.errstate(invalid="ignore"):
        while True:
            act = start < end
            if not act.any():
                return start
            mid = start + ((end - start) >> 1)
            mv = s2[rows, np.minimum(mid, n - 1)]
            up = ~(mv > v2) if right else ~(mv >= v2)
            start = np.where(act & up, mid + 1, start)
            end = np.where(act & ~up, mid, end)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None,
                 out=None):
    _guard_sel(sorted_sequence, "vals")          # (tapegrad.func: positions from values)
    _guard_sel(input, "vals")
    s = np.asarray(sorted_sequence._data)
    scalar = not isinstance(input, Tensor)
    v = np.asarray(input if scalar else input._data)
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError("torch.searchsorted(): side can only be 'left' or 'right' but "
                               "got %s" % side)
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    how = "right" if right else "left"
    if sorter is not None:
        so = np.asarray(sorter._data)
        if so.shape != s.shape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same size, "
                               "but got boundary tensor %s and got sorter tensor %s"
                               % (list(s.shape), list(so.shape)))
        s = np.take_along_axis(s, so, -1) if s.ndim else s
    if s.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    if s.ndim == 1:
        r = _bsearch(s.reshape(1, -1), v.reshape(1, -1), how == "right").reshape(v.shape)
    else:
        if scalar or v.shape[:-1] != s.shape[:-1]:
            raise RuntimeError("torch.searchsorted(): boundaries tensor should be 1 dimension or "
                               "the first N-1 dimensions of boundaries tensor and input value "
                               "tensor must match, but we got boundaries tensor %s and input "
                               "value tensor %s" % (list(s.shape), list(v.shape)))
        s2 = s.reshape(-1, s.shape[-1])
        v2 = v.reshape(-1, v.shape[-1])
        r = _bsearch(s2, v2, how == "right").reshape(v.shape) if s2.shape[0] else \
            np.zeros(v.shape, np.int64)
    dt = int32 if out_int32 else int64
    return _wrap(np.asarray(r, dt.np)[()] if np.ndim(r) == 0 else np.asarray(r, dt.np), dt)


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    if np.ndim(boundaries._data) != 1:
        raise RuntimeError("boundaries tensor must be 1 dimension, but got dim(%d)"
                           % np.ndim(boundaries._data))
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ----------------------------------------------------------------------------- diff / cov
def diff(input, n=1, dim=-1, prepend=None, append=None, *, axis=_ND):
    """torch's composition: x.narrow(dim, 1, k - 1) - x.narrow(dim, 0, k - 1), n times
    (logical_xor for bool), after prepend / append are concatenated along dim."""
    if axis is not _ND:
        dim = axis
    d = input._data
    if np.ndim(d) == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError("order must be non-negative but got %d" % n)
    ax = _one_dim(dim, d.ndim)
    x = input
    parts = [t for t in (prepend, x, append) if t is not None]
    for t in parts:
        if np.ndim(t._data) != d.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    if n == 0:          # torch: a copy of the input (CopyBackwards), prepend / append unused
        return empty_like(input).copy_(input)
    if len(parts) > 1:
        x = cat(parts, ax)
    for _ in range(n):
        k = x._data.shape[ax]
        if k == 0:
            break
        hi = narrow(x, ax, 1, k - 1)
        lo = narrow(x, ax, 0, k - 1)
        x = logical_xor(hi, lo) if x._dtype is bool_ else hi - lo
    return x


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """torch's composition (Integration.cpp): with a spacing ``dx``,
    (y.sum(dim) - (y[0] + y[-1]) * 0.5) * dx; with sample points ``x``,
    ((y[1:] + y[:-1]) * diff(x)).sum(dim) / 2 (x of one dimension lies along ``dim``)."""
    if x is not None and (dx is not None or not isinstance(x, Tensor)):
        got = ["Tensor", type(x).__name__ if not isinstance(x, Tensor) else "Tensor"]
        if dx is not None:
            got.append("dx=%s" % type(dx).__name__)
        raise TypeError("trapezoid() received an invalid combination of arguments - got "
                        "(%s), but expected one of:\n"
                        " * (Tensor y, Tensor x, *, int dim = -1)\n"
                        " * (Tensor y, *, Number dx = 1, int dim = -1)\n" % ", ".join(got))
    d = y._data
    ax = _one_dim(dim, np.ndim(d))
    k = d.shape[ax]
    if isinstance(x, Tensor):
        xd = x._data
        if np.ndim(xd) == 1:
            if xd.shape[0] != k:
                raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
            shape = [1] * d.ndim
            shape[ax] = k
            xv = x.view(*shape)
        elif np.ndim(xd) < d.ndim:
            xv = x.view(*((1,) * (d.ndim - np.ndim(xd)) + tuple(xd.shape)))
        else:
            xv = x
        if k == 0:
            return _zeros_except(y, ax)
        kx = xv._data.shape[ax]
        step = narrow(xv, ax, 1, kx - 1) - narrow(xv, ax, 0, kx - 1)
        return named(((narrow(y, ax, 1, k - 1) + narrow(y, ax, 0, k - 1)) * step).sum(ax) / 2.0,
                     "DivBackward1")
    if dx is None:
        dx = 1
    if k == 0:
        return _zeros_except(y, ax)
    ends = named((select(y, ax, 0) + select(y, ax, -1)) * 0.5, "MulBackward1")
    return named((y.sum(ax) - ends) * dx, "MulBackward1")


def _zeros_except(y, ax):
    shape = tuple(s for i, s in enumerate(y._data.shape) if i != ax)
    return zeros(shape, dtype=y._dtype)


trapz = trapezoid


def _cov_check(w, name, nobs, integral):
    a = np.asarray(w._data)
    if a.ndim > 1:
        raise RuntimeError("cov(): expected %s to have one or fewer dimensions but got %s with "
                           "%d dimensions" % (name, name, a.ndim))
    if (w._dtype._cat < 2) != integral:
        raise RuntimeError("cov(): expected %s to have %s dtype but got %s with %s dtype"
                           % (name, "integral" if integral else "floating point", name,
                              w._dtype._tname))
    if a.size != nobs:
        raise RuntimeError("cov(): expected %s to have the same numel as there are observations "
                           "in the input but got %d != %d" % (name, a.size, nobs))
    if (a < 0).any():
        raise RuntimeError("cov(): %s cannot be negative" % name)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """torch's composition (Correlation.cpp): rows are variables, columns observations."""
    d = input._data
    if np.ndim(d) > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           "input with %d dimensions" % np.ndim(d))
    x = input if np.ndim(d) == 2 else input.reshape(1, -1)
    if x._dtype._cat < 2:
        x = _convert(x, _DEFAULT[0])
    nobs = x._data.shape[1]
    w = None
    if fweights is not None:
        _cov_check(fweights, "fweights", nobs, True)
        w = fweights
    if aweights is not None:
        _cov_check(aweights, "aweights", nobs, False)
        w = aweights if w is None else w * aweights
    if w is not None:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    else:
        w_sum = float(nobs)
        avg = x.sum(1) / w_sum
    if w is not None and aweights is not None and correction != 0:
        norm = w_sum - correction * (w * aweights).sum() / w_sum
    else:
        norm = w_sum - correction
    nv = float(norm._data) if isinstance(norm, Tensor) else norm
    if nv <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.")
        norm = norm * 0.0 if isinstance(norm, Tensor) else 0.0
    xc = x - avg.unsqueeze(1)
    c = xc @ (xc * w if w is not None else xc).t()
    return (c / norm).squeeze()


def corrcoef(input):
    c = cov(input)
    if c._data.ndim == 0:
        return c / c
    dg = c.diagonal()
    sd = dg.sqrt()
    c = c / sd.reshape(-1, 1)
    c = c / sd.reshape(1, -1)
    return clamp(c, -1, 1)


# ----------------------------------------------------------------------------- quantile
_INTERP = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input, q, dim, keepdim, interpolation, ignore_nan):
    fname = "nanquantile" if ignore_nan else "quantile"
    x = input
    if x._dtype.np not in (np.float32, np.float64):
        raise RuntimeError("%s() input tensor must be either float or double dtype" % fname)
    if interpolation not in _INTERP:
        raise RuntimeError("%s() interpolation must be one of linear, lower, higher, midpoint "
                           "or nearest, but got %s" % (fname, interpolation))
    d = np.asarray(x._arr())
    if isinstance(q, Tensor):
        if q._dtype is not x._dtype:
            raise RuntimeError("%s() q tensor must be same dtype as the input tensor" % fname)
        qv = np.asarray(q._data, np.float64)
        if qv.ndim > 1:
            raise RuntimeError("%s() q must be a scalar or 1D tensor" % fname)
        if ((qv < 0) | (qv > 1)).any():
            raise RuntimeError("%s() q values must be in the range [0, 1]" % fname)
        qs = qv.reshape(-1)
        qshape = qv.shape
    else:
        qf = float(q)
        if not 0 <= qf <= 1:
            raise RuntimeError("%s() q must be in the range [0, 1] but got %s" % (fname, q))
        qs, qshape = np.array([qf]), ()
    if d.size == 0:
        raise RuntimeError("%s() input tensor must be non-empty" % fname)
    nd = d.ndim
    # slices along the last axis of s (k elements each), out_shape: the result's shape
    if dim is None:
        s = d.reshape(1, -1)
        pos_all = np.arange(d.size, dtype=np.int64).reshape(1, -1)
        red_shape = (1,) * nd if keepdim else ()
    else:
        ax = _one_dim(dim, nd)
        if nd == 0:
            s = d.reshape(1, 1)
            pos_all = np.zeros((1, 1), np.int64)
            red_shape = ()
        else:
            s = np.moveaxis(d, ax, -1).reshape(-1, d.shape[ax])
            pos_all = np.moveaxis(np.arange(d.size, dtype=np.int64).reshape(d.shape), ax,
                                  -1).reshape(s.shape)
            red_shape = tuple(1 if i == ax else n for i, n in enumerate(d.shape)) if keepdim \
                else tuple(n for i, n in enumerate(d.shape) if i != ax)
    k = s.shape[1]
    order = np.argsort(s, axis=1, kind="stable")                 # NaNs last
    isn = np.isnan(s)
    if ignore_nan:
        last = (k - isn.sum(axis=1, keepdims=True) - 1).astype(np.float64)
    else:
        last = np.where(isn.any(axis=1, keepdims=True), np.nan, k - 1.0)
    ranks = qs[None, :] * last                                    # (rows, nq)
    if not ignore_nan:                                            # NaN slices: the last one
        ranks = np.where(np.isnan(ranks), k - 1.0, ranks)
    ranks = np.maximum(ranks, 0.0)                                 # all-NaN slices (nanquantile)
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)                                    # half to even, as torch
    below = np.floor(ranks).astype(np.int64)
    above = np.ceil(ranks).astype(np.int64)
    w = np.full(ranks.shape, 0.5) if interpolation == "midpoint" else ranks - below
    rows = np.arange(s.shape[0])[:, None]
    ib = order[rows, below]
    ia = order[rows, above]
    vb, va = s[rows, ib].astype(np.float64), s[rows, ia].astype(np.float64)
    with np.errstate(invalid="ignore"):
        val = np.where(w < 0.5, vb + w * (va - vb), va - (va - vb) * (1 - w))
    # result layout: q first (when q is a 1-D tensor), then the reduced shape
    def lay(a):
        a = a.T.reshape((qs.size,) + red_shape)
        return a.reshape(red_shape) if qshape == () else a
    out_shape = (() if qshape == () else (qs.size,)) + red_shape
    y = np.asarray(lay(val), x._dtype.np)
    if not _grads(x):
        return _wrap(_val(y, x._dtype), x._dtype)
    pb, pa = lay(pos_all[rows, ib]), lay(pos_all[rows, ia])
    # torch's graph: SqueezeBackward4 over (TransposeBackward1 over UnsqueezeBackward1 when q
    # is a 1-D tensor, over) LerpBackward1 of two GatherBackward0 (one gather without lerp)
    gb = _pick(x, pb, out_shape, lay(vb), "GatherBackward0")
    if interpolation in ("linear", "midpoint"):
        ga = _pick(x, pa, out_shape, lay(va), "GatherBackward0")
        wt = _wrap(np.asarray(lay(w), x._dtype.np)[()] if not out_shape else
                   np.asarray(lay(w), x._dtype.np), x._dtype)
        a, b = tap(gb, 0), tap(ga, 1)
        dv = b - a
        st = dv * wt
        r = named(a + st, "LerpBackward1", 3)
        hide(dv, st)
    else:
        r = gb
    if qshape != ():
        r = _final(_final(r, out_shape, "UnsqueezeBackward1"), out_shape, "TransposeBackward1")
    return exact(_final(r, out_shape, "SqueezeBackward4"), y)


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None, axis=_ND,
             keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    _guard_order(input, dim)
    return _quantile(input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None,
                axis=_ND, keepdims=_ND):
    dim, keepdim = _alias(dim, keepdim, axis, keepdims)
    _guard_order(input, dim)
    return _quantile(input, q, dim, keepdim, interpolation, True)


# ----------------------------------------------------------------------------- distances
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Distances between the rows of x1 (..., P, M) and x2 (..., R, M): the p-norm of their
    differences (..., P, R, M) over the last dimension."""
    a, b = x1._data, x2._data
    if np.ndim(a) < 2 or np.ndim(b) < 2:
        raise RuntimeError("cdist only supports at least 2D tensors, X%d got: %dD"
                           % ((1, np.ndim(a)) if np.ndim(a) < 2 else (2, np.ndim(b))))
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError("X1 and X2 must have the same number of columns. X1: %d X2: %d"
                           % (a.shape[-1], b.shape[-1]))
    if x1._dtype._cat < 2 or x2._dtype._cat < 2:
        raise RuntimeError("cdist only supports floating-point dtypes, X1 got: %s"
                           % x1._dtype._tname)
    p = float(p)
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in (None, "use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError("%s is not a valid value for compute_mode" % compute_mode)
    u1, u2 = tap_entry(x1.unsqueeze(-2), 0), tap_entry(x2.unsqueeze(-3), 1)
    df = u1 - u2
    P, R = a.shape[-2], b.shape[-2]
    mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode in (None, "use_mm_for_euclid_dist_if_necessary") and (P > 25 or R > 25)))
    if p == math.inf and _grads(df):
        # torch: every element at the maximum gets the whole gradient (not a share)
        ab = df.abs()
        _guard_order(ab, -1)
        y = np.amax(np.asarray(ab._data), axis=-1) if a.shape[-1] else \
            np.zeros(np.shape(ab._data)[:-1], a.dtype)
        mask = (np.asarray(ab._data) == y[..., None]).astype(a.dtype)
        t = ab * _wrap(mask, ab._dtype)
        out = t.sum(-1)
        hide(df, ab, t)
        return exact(named(out, "CdistBackward0", 2), y)
    out = vector_norm(df, p, dim=-1)
    hide(df)
    if not mm or out._tape is None:
        return named(out, "CdistBackward0", 2)
    named(out, "EuclideanDistBackward0", 2)
    return _reshape_view(out, out._data.shape, "ViewBackward0")


def dist(input, other, p=2):
    df = tap(input, 0) - tap(other, 1)
    out = vector_norm(df, p)
    hide(df)
    return named(out, "DistBackward0", 2)


def _unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """torch's kernel (_VF.unique_consecutive): (output, inverse, counts), the inverse and
    counts empty unless asked for, except along a dim (other than 0 of a 1-d tensor), where
    torch computes both always."""
    d = np.asarray(input._data)
    name, msg = "UniqueConsecutiveBackward0", \
        "the derivative for 'unique_consecutive' is not implemented."
    flat = dim is None or (d.ndim == 1 and dim == 0)
    if flat:
        v = d.reshape(-1)
        new = np.ones(v.size, bool)
        new[1:] = v[1:] != v[:-1]
        u = v[new]
        ishape = d.shape
    else:
        if d.ndim == 0:
            raise IndexError("Dimension specified as %s but tensor has no dimensions" % dim)
        ax = _one_dim(dim, d.ndim)
        if d.size == 0 and d.shape[ax] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")
        m = np.moveaxis(d, ax, 0)
        m = m.reshape(d.shape[ax], int(np.prod(m.shape[1:])))
        new = np.ones(m.shape[0], bool)
        new[1:] = (m[1:] != m[:-1]).any(axis=1)
        u = np.compress(new, d, axis=ax)
        ishape = (-1,)
    inv = np.cumsum(new) - 1
    cnt = np.diff(np.append(np.flatnonzero(new), new.size))
    out = _no_derivative(_wrap(np.ascontiguousarray(u), input._dtype), name, msg, input)
    inv = inv.astype(np.int64).reshape(ishape) if return_inverse or not flat else \
        np.zeros(0, np.int64)
    cnt = cnt.astype(np.int64) if return_counts or not flat else np.zeros(0, np.int64)
    return out, _wrap(inv, int64), _wrap(cnt, int64)


def unique_consecutive(*args, **kwargs):
    """Drops every element (slice along dim) equal to the one before it. The result's
    structure follows torch's boolean dispatch, which reads return_inverse from positional
    argument 2 and return_counts from positional argument 1 (the flags' positions swapped, as
    torch.functional has them): ``unique_consecutive(x, True)`` returns (output, counts), the
    counts empty."""
    def flag(name, i):
        if name in kwargs:
            return kwargs[name]
        return args[i] if i < len(args) else False
    ri, rc = flag("return_inverse", 2), flag("return_counts", 1)
    out, inv, cnt = _unique_consecutive(*args, **kwargs)
    if ri:
        return (out, inv, cnt) if rc else (out, inv)
    return (out, cnt) if rc else out


def _unique_consecutive_m(self, return_inverse=False, return_counts=False, dim=None):
    return unique_consecutive(self, return_inverse=return_inverse, return_counts=return_counts,
                              dim=dim)




class TensorMethods:
    """Tensor methods of this module, attached by tapegrad/_methods.py."""

    sum = sum
    mean = mean


# ----------------------------------------------------------------------------- calculus (cumulative_trapezoid, gradient), renorm, sum_to_size, frexp, histogram
def _torch():
    import tapegrad     # the torch namespace: the bodies below call T.<name> (KNOWN_UPWARD)
    return tapegrad


return_types.frexp = _rt("frexp", ("mantissa", "exponent"))


return_types.histogram = _rt("histogram", ("hist", "bin_edges"))


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    nd = y._data.ndim
    if nd == 0:
        raise IndexError("cumulative_trapezoid: Dimension specified as -1 but tensor has no "
                         "dimensions")
    d = dim % nd if -nd <= dim < nd else None
    if d is None:
        raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (-nd, nd - 1, dim))
    L = y._data.shape[d]
    left = y.narrow(d, 0, builtins.max(L - 1, 0))
    right = y.narrow(d, builtins.min(1, L), builtins.max(L - 1, 0))
    if x is not None:
        if dx is not None:
            raise RuntimeError("cumulative_trapezoid: received both x and dx")
        if x._data.ndim == 1:
            if x._data.shape[0] != L:
                raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each "
                                   "sample point")
            shp = [1] * nd
            shp[d] = builtins.max(L - 1, 0)
            dxs = (x[1:] - x[:-1]).reshape(shp)
        else:
            xd = x._data.ndim
            xdim = dim % xd
            Lx = x._data.shape[xdim]
            dxs = x.narrow(xdim, 1, Lx - 1) - x.narrow(xdim, 0, Lx - 1)
        return _div_scalar((dxs * (left + right)).cumsum(d), 2.0)
    h = 1.0 if dx is None else dx
    return _mul_scalar(left + right, h / 2.0).cumsum(d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    T = _torch()
    nd = input._data.ndim
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(range(nd))
    elif isinstance(dim, int):
        dims = [dim % nd]
    else:
        dims = [d % nd for d in dim]
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(
                "torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                "equal to 'self.dim() = %d', since dim argument was not given, but got a list of "
                "length %d" % (len(dims), len(spacing)))
        sp = list(spacing)
    else:
        sp = [spacing] * len(dims)
    for d in dims:
        if input._data.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = input if input._dtype.is_floating_point else input.to(_DEFAULT[0])
    outs = []
    for d, h in zip(dims, sp):
        if isinstance(h, Tensor):
            if h._data.ndim == 0:
                h = h.item()
            else:
                outs.append(_gradient_coords(f, d, h, edge_order))
                continue
        L = f._data.shape[d]
        a = f.narrow(d, 0, L - 2)
        b = f.narrow(d, 2, L - 2)
        mid = _div_scalar(b - a, 2.0 * h)
        if edge_order == 1:
            first = _div_scalar(f.narrow(d, 1, 1) - f.narrow(d, 0, 1), h)
            last = _div_scalar(f.narrow(d, L - 1, 1) - f.narrow(d, L - 2, 1), h)
        else:
            first = _div_scalar(_mul_scalar(f.narrow(d, 0, 1), -1.5)
                                + _mul_scalar(f.narrow(d, 1, 1), 2.0)
                                - _mul_scalar(f.narrow(d, 2, 1), 0.5), h)
            last = _div_scalar(_mul_scalar(f.narrow(d, L - 3, 1), 0.5)
                               - _mul_scalar(f.narrow(d, L - 2, 1), 2.0)
                               + _mul_scalar(f.narrow(d, L - 1, 1), 1.5), h)
        outs.append(T.cat([first, mid, last], d))
    return tuple(outs)


def _gradient_coords(f, d, x, edge_order):
    """Second-order accurate differences on the coordinates ``x`` (1-D, one per sample)."""
    T = _torch()
    nd = f._data.ndim
    L = f._data.shape[d]
    x = x.to(f.dtype)
    shp = [1] * nd
    shp[d] = -1
    hx = (x[1:] - x[:-1])
    h0, h1 = hx[:-1].reshape(shp), hx[1:].reshape(shp)
    a = f.narrow(d, 0, L - 2)
    b = f.narrow(d, 1, L - 2)
    c = f.narrow(d, 2, L - 2)
    mid = (-h1 / (h0 * (h0 + h1))) * a + ((h1 - h0) / (h0 * h1)) * b + (h0 / (h1 * (h0 + h1))) * c
    if edge_order == 1:
        first = (f.narrow(d, 1, 1) - f.narrow(d, 0, 1)) / hx[0]
        last = (f.narrow(d, L - 1, 1) - f.narrow(d, L - 2, 1)) / hx[-1]
    else:
        g0, g1 = hx[0], hx[1]
        # torch's sums of three products a*f0 + b*f1 + c*f2 (ReduceOps.cpp)
        first = (-(2 * g0 + g1) / (g0 * (g0 + g1)) * f.narrow(d, 0, 1)
                 + (g0 + g1) / (g0 * g1) * f.narrow(d, 1, 1)
                 + (-g0 / (g1 * (g0 + g1))) * f.narrow(d, 2, 1))
        e0, e1 = hx[-2], hx[-1]
        last = (e1 / (e0 * (e0 + e1)) * f.narrow(d, L - 3, 1)
                + (-(e1 + e0) / (e0 * e1)) * f.narrow(d, L - 2, 1)
                + (2 * e1 + e0) / (e1 * (e0 + e1)) * f.narrow(d, L - 1, 1))
    return T.cat([first, mid, last], d)


def renorm(input, p, dim, maxnorm):
    T = _torch()
    nd = input._data.ndim
    if nd < 2:
        raise RuntimeError("renorm: input needs at least 2 dimensions, got %d dimensions" % nd)
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError("renorm: expected maxnorm to be >= 0 but got %s" % maxnorm)
    d = dim % nd
    others = [i for i in range(nd) if i != d]
    x = tap(input, 0)
    norms = T.linalg.vector_norm(x, p, dim=others, keepdim=True)
    big = norms > maxnorm
    factor = T.where(big, maxnorm / (norms + 1e-7), T.ones_like(norms))
    out = x * factor
    if out.requires_grad:
        _hide_below(out, input)
        named(out, "RenormBackward0", arity=1)
    return out


def sum_to_size(self, *size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)) or (
            len(size) == 1 and type(size[0]).__name__ == "Size"):
        size = tuple(size[0])
    size = tuple(int(s) for s in size)
    shape = self._data.shape
    lead = len(shape) - len(size)
    ok = lead >= 0 and builtins.all(s == 1 or s == shape[lead + i] for i, s in enumerate(size))
    if not ok:
        raise RuntimeError("size {%s} is not expandable to size {%s}."
                           % (list(size), list(shape)))
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size)
                                if s == 1 and shape[lead + i] != 1]
    out = self
    if dims:
        out = out.sum(dims, keepdim=True)
    if lead > 0:
        out = out.view(size)
    return out


def frexp(input):
    T = _torch()
    if not input._dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(np.asarray(input._data))
    e_t = _wrap(np.asarray(e, np.int32), T.int32)
    if STATE.enabled and input._rg:
        _guard_sel(input, "exponent")
        # d mantissa = dx / 2^exponent
        mant = tap(input, 0) * _wrap(np.asarray(np.ldexp(1.0, -e), input._dtype.np),
                                     input._dtype)
        _hide_below(mant, input)
        exact(named(mant, "FrexpBackward0", arity=1), m)
    else:
        mant = _wrap(np.asarray(m, input._dtype.np), input._dtype)
    return return_types.frexp(mant, e_t)


def histogram(input, bins, *, range=None, weight=None, density=False):
    a = np.asarray(input._data, np.float64).reshape(-1)
    w = None if weight is None else np.asarray(weight._data, np.float64).reshape(-1)
    if isinstance(bins, Tensor):
        edges = np.asarray(bins._data, np.float64)
        h, e = np.histogram(a, edges, weights=w, density=density)
    else:
        lo, hi = (float(a.min()), float(a.max())) if range is None and a.size else (
            range if range is not None else (0.0, 1.0))
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5     # torch's widening of an empty range
        # float32 bin edges as torch computes them (linspace in the input's dtype)
        e = np.linspace(lo, hi, int(bins) + 1).astype(input._dtype.np).astype(np.float64)
        h, e = np.histogram(a, e, weights=w, density=density)
    rdt = input._dtype
    # torch: no derivative, both results NotImplemented nodes over the tensors given
    ins = [t for t in (input, bins, weight) if isinstance(t, Tensor)]
    return return_types.histogram(
        not_differentiable(_wrap(np.asarray(h, rdt.np), rdt), "histogram", *ins),
        not_differentiable(_wrap(np.asarray(e, rdt.np), rdt), "histogram", *ins))


def _install_composed(Tensor):
    inplace_of = _inplace_of
    Tn = Tensor
    Tn.renorm = renorm
    Tn.renorm_ = inplace_of(renorm)
    Tn.sum_to_size = sum_to_size
    Tn.frexp = frexp
    Tn.histogram = histogram
