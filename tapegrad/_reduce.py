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
import collections
import math
import numbers

import numpy as np

from . import _sums
from . import tape as _tp
from .autograd.grad_mode import STATE
from .autograd.graph import ONE_INPUT
from .kernels import F_HIDDEN
from .ops import OPCODE
from .tensor import (Tensor, _DEFAULT, _ND, _as_dtype, _convert, _nm, _norm_dims, _out, _src,
                     _tape_for, _wrap, bool_, int64)
from ._math import exact, hide, named, unary

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
    whose gradient is NaN on all their inputs (amax of a slice holding a NaN, as torch)."""
    if not _grads(x):
        return _wrap(_val(y, x._dtype), x._dtype)
    tp = _tape_for(x)
    node = _src(x, tp)
    dt = x._dtype.slot
    if nout == 1 and tied.size == 1 and nan_out is None:   # one extremum: one gather
        e, n = tp.entry(_GATHER, _nm(name), 1, dt, node, -1, p0=tp.index(tied), p1=1)
        return _out(_val(y, x._dtype), x._dtype, tp, n)
    counts = np.bincount(out_index, minlength=nout)
    if nan_out is None and np.all(counts == 1):
        order = np.argsort(out_index, kind="stable")
        e, n = tp.entry(OPCODE["gather"], _nm(name), nout, dt, node, -1,
                        p0=tp.index(tied[order]), p1=tied.size)
        return _out(_val(y, x._dtype), x._dtype, tp, n)
    e, g = tp.entry(OPCODE["gather"], _nm("IndexBackward0"), tied.size, dt, node, -1,
                    p0=tp.index(tied), p1=tied.size, fl=F_HIDDEN)
    if nout == 1:
        c = math.nan if nan_out is not None else 1.0 / tied.size
        e, n = tp.entry(OPCODE["sum"], _nm(name), 1, dt, g, -1, ci=tp.const(c))
        return _out(_val(y, x._dtype), x._dtype, tp, n)
    from ._shape import _scatter_entry
    s = _scatter_entry(tp, g, np.ascontiguousarray(out_index, np.int64), nout, dt,
                       _nm("SumBackward1"), F_HIDDEN)
    w = (1.0 / np.maximum(counts, 1)).astype(x._dtype.np)
    if nan_out is not None:
        w[nan_out] = np.nan
    cw = tp.save(w, dt)
    e, n = tp.entry(OPCODE["mul"], _nm(name), nout, dt, s, -1, sb=cw, p0=1, p1=1, fl=2)
    return _out(_val(y, x._dtype), x._dtype, tp, n)


# ----------------------------------------------------------------------------- max / min
def _extreme(input, dim, keepdim, other, largest, fname):
    if other is not None or isinstance(dim, Tensor):
        from ._math import maximum, minimum
        o = other if other is not None else dim
        return maximum(input, o) if largest else minimum(input, o)
    d = np.asarray(input._arr())
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


def max(input, dim=None, keepdim=False, *, other=None, out=None):
    return _extreme(input, dim, keepdim, other, True, "max")


def min(input, dim=None, keepdim=False, *, other=None, out=None):
    return _extreme(input, dim, keepdim, other, False, "min")


def _amax(input, dim, keepdim, largest, name=None, nan_grad=True):
    d = np.asarray(input._arr())
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
        return _final(input, np.shape(y), name)
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


def amax(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, True)


def amin(input, dim=(), keepdim=False):
    return _amax(input, dim, keepdim, False)


def aminmax(input, *, dim=None, keepdim=False):
    if input._data.size == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    d = () if dim is None else dim
    lo = _amax(input, d, keepdim, False, "AminmaxBackward0")
    hi = _amax(input, d, keepdim, True, "AminmaxBackward0")
    return return_types.aminmax(lo, hi)


def _arg(input, dim, keepdim, largest):
    d = np.asarray(input._data)
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


def argmax(input, dim=None, keepdim=False):
    return _arg(input, dim, keepdim, True)


def argmin(input, dim=None, keepdim=False):
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


def sort(input, dim=-1, descending=False, stable=None, *, out=None):
    # torch's sort(*, stable, ...) overload (any stable= given) is SortBackward1; its CPU sort
    # without stable=True may order ties differently (here: always stable)
    name = "SortBackward0" if stable is None else "SortBackward1"
    d = np.asarray(input._arr())
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


def argsort(input, dim=-1, descending=False, stable=False):
    return sort(input, dim, descending, stable).indices


def msort(input):
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    d = np.asarray(input._arr())
    ax = _one_dim(dim, d.ndim)
    n = d.shape[ax] if d.ndim else 1
    if k > n or k < 0:
        raise RuntimeError("selected index k out of range")
    if d.ndim == 0:
        dd = d.reshape(1)
        idx = _order(dd, 0, largest)[:k]
        v = dd[idx]
        return return_types.topk(_pick(input, idx, (k,), v, "TopkBackward0") if input._dtype._cat == 2
                                 else _wrap(v, input._dtype), _wrap(idx.astype(np.int64), int64))
    idx = np.take(_order(d, ax, largest), np.arange(k), axis=ax)
    vals = np.take_along_axis(d, idx, ax)
    pos = np.take_along_axis(np.arange(d.size, dtype=np.int64).reshape(d.shape), idx, ax)
    v = _pick(input, pos, vals.shape, vals, "TopkBackward0") if input._dtype._cat == 2 else \
        _wrap(vals, input._dtype)
    return return_types.topk(v, _wrap(idx.astype(np.int64), int64))


def kthvalue(input, k, dim=-1, keepdim=False):
    d = np.asarray(input._arr())
    ax = _one_dim(dim, d.ndim)
    idx = np.take(_order(d, ax, False), [k - 1], axis=ax)
    vals = np.take_along_axis(d, idx, ax)
    pos = np.take_along_axis(np.arange(d.size, dtype=np.int64).reshape(d.shape), idx, ax)
    if not keepdim:
        vals, idx, pos = (np.squeeze(a, ax) for a in (vals, idx, pos))
    v = _pick(input, pos, vals.shape, vals, "KthvalueBackward0") if input._dtype._cat == 2 else \
        _wrap(_val(vals, input._dtype), input._dtype)
    return return_types.kthvalue(v, _wrap(_val(idx, int64), int64))


def median(input, dim=None, keepdim=False):
    d = np.asarray(input._arr())
    if dim is None:
        flat = d.reshape(-1)
        if flat.size == 0:
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
    r = kthvalue(input, (n - 1) // 2 + 1, ax, keepdim)
    if r.values._tape is not None:
        _rename(r.values, "MedianBackward1")
    return return_types.median(r.values, r.indices)


def _rename(t, name):
    from .tensor import _rename_last
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


def any(input, dim=None, keepdim=False):
    return _bool_red(input, dim, keepdim, np.any)


def all(input, dim=None, keepdim=False):
    return _bool_red(input, dim, keepdim, np.all)


# ----------------------------------------------------------------------------- prod
def _tree_prod(x, ax):
    """Product along ``ax`` (keepdim) by a balanced tree of hidden multiplications."""
    from ._shape import cat, narrow
    from .creation import ones
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
    if axis is not _ND:
        dim = axis
    if keepdims is not _ND:
        keepdim = keepdims
    if dim is _ND:
        if keepdim is not _ND:
            raise TypeError("prod() received an invalid combination of arguments - got "
                            "(keepdim=bool, ), but expected one of:")
        return None, False
    if not isinstance(dim, numbers.Integral):
        raise TypeError("prod() received an invalid combination of arguments - got (Tensor, "
                        "dim=%s), but expected one of:" % type(dim).__name__)
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


def prod(input, dim=_ND, keepdim=_ND, dtype=None, *, axis=_ND, keepdims=_ND):
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
            return _final(x, (), "ProdBackward1")
        return _wrap(_val(y, x._dtype), x._dtype)
    if d.size == 0:
        return exact(named(x.sum(ax, keepdim=keepdim), "ProdBackward1"), y)
    if not np.isfinite(d).all() and not (d == 0).any():
        yk = y if keepdim else np.expand_dims(y, ax)
        return exact(_prod_linear(x, d, yk, ax, keepdim, "ProdBackward1"), y)
    p = _tree_prod(x, ax)
    return exact(_final(p, np.shape(y), "ProdBackward1"), y)


def _final(t, shape, name):
    """An identity entry named ``name`` giving ``t`` its final shape (the visible node)."""
    from ._shape import _reshape_view
    return _reshape_view(t, tuple(shape), name)


# ----------------------------------------------------------------------------- var / std
def _var_args(dim, unbiased, keepdim, correction, axis=_ND, keepdims=_ND):
    if isinstance(dim, bool):               # var(x, unbiased)
        unbiased, dim = dim, None
    if axis is not _ND:
        dim = axis
    if keepdims is not _ND:
        keepdim = keepdims
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
            v, _ = _sums.var_dims(d, dims, correction)
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
    if not _grads(x):
        return _wrap(_val(y, x._dtype), x._dtype)
    den = n - correction
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
    from ._shape import cat
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


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, keepdim, correction = _var_args(dim, unbiased, keepdim, correction)
    v = _var_core(input, dim, keepdim, correction, False, "VarBackward0")
    return _joint((v, _mean_of(input, dim, keepdim)), "VarMeanBackward0")


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, keepdim, correction = _var_args(dim, unbiased, keepdim, correction)
    s = _var_core(input, dim, keepdim, correction, True, "StdBackward0")
    return _joint((s, _mean_of(input, dim, keepdim)), "StdMeanBackward0")


# ----------------------------------------------------------------------------- norms
_NORM = "LinalgVectorNormBackward0"


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    if dtype is not None:
        x = x.to(_as_dtype(dtype))
    if x._dtype._cat < 2:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           "Got %s" % x._dtype._tname)
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
        z = scale(x.sum(sdims, keepdim=keepdim) if nd else x, 0.0, _NORM)
        return exact(z, y)
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


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
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
    if axis is not _ND:
        dim = axis
    if keepdims is not _ND:
        keepdim = keepdims
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
        return named(out, "LogsumexpBackward0")
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
    return out


# ----------------------------------------------------------------------------- scans
def _scan(d, ax, dt, prod):
    """cumsum / cumprod values: floats accumulated in float64 (torch's CPU scans), integers
    by numpy in their dtype."""
    if d.ndim == 0:
        return d.astype(dt.np)
    if d.dtype.kind == "f" and d.dtype.itemsize >= 4:
        return _sums.scan(d, ax, prod)
    return (np.cumprod if prod else np.cumsum)(d, axis=ax, dtype=dt.np)


def cumsum(input, dim, dtype=None, out=None):
    """Hillis-Steele scan: log2(k) steps of y += shift(y, s) (hidden gathers, scatters, adds)."""
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
        return _final(x, d.shape, "CumsumBackward0")
    from ._shape import _add_entry, _scatter_entry
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


def cumprod(input, dim, dtype=None, out=None):
    """cumprod: Hillis-Steele products; every step's operand values are saved for its VJP."""
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
        return _final(x, d.shape, "CumprodBackward0")
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
    # tensor-level Hillis-Steele (values tracked by the tensors themselves)
    from ._shape import narrow, cat
    from .creation import ones
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


def logcumsumexp(input, dim):
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
    return named(out, "LogcumsumexpBackward0")


# ----------------------------------------------------------------------------- Tensor methods
def _install():
    T = Tensor

    def _norm_m(self, p="fro", dim=None, keepdim=False, dtype=None):
        return norm(self, p, dim, keepdim, dtype=dtype)
    methods = dict(max=max, min=min, amax=amax, amin=amin, aminmax=aminmax, argmax=argmax,
                   argmin=argmin, sort=sort, argsort=argsort, msort=msort, topk=topk,
                   kthvalue=kthvalue, median=median, any=any, all=all, prod=prod, var=var, std=std,
                   norm=_norm_m, logsumexp=logsumexp, cumsum=cumsum, cumprod=cumprod,
                   logcumsumexp=logcumsumexp)
    for k, f in methods.items():
        setattr(T, k, f)

    def _cumsum_(self, dim, dtype=None):
        return self._inplace(None, lambda s, o: cumsum(s, dim))
    T.cumsum_ = _cumsum_


_install()
