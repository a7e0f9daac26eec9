"""Breadth: torch functions and Tensor methods composed from existing primitives.

matrix_exp (a custom Function, its backward the exp of a 2n x 2n block matrix, so higher order
works), diagflat, cartesian_prod, combinations, vander, cumulative_trapezoid, gradient, i0/i1,
renorm, sum_to_size, the *_scatter family, put/put_, fill_diagonal_, index_reduce, ldexp, frexp,
gcd/lcm, rsub, torch.fill/detach/zero_, the in-place variants torch has (comparisons keep self's
dtype), aliases, and small introspection methods (nbytes, itemsize, output_nr ...).

Nothing here adds an op row: scatters go through ``_shape._merge`` (hidden gathers and
segment sums under one named entry), compositions are hidden under torch's grad_fn name with
``_math._hide_below``/``named``, and in-place variants through ``Tensor._inplace``.
"""
import builtins
import math
import warnings

import numpy as np

from ._state import STATE
from ._core.names import multi_name_id
from ._reduce import return_types, _rt
from .tensor import Tensor, _wrap, _DEFAULT, _result_dtype, _type_name
from .autograd.function import Function
from ._record import _bump, _positions, _set_name_id, entry_of, named, saves_inputs, tap
from ._matrix import diag_embed
from . import _math
from ._math import _floatify, _hide_below, exact, scale
from .special import _pointwise_fn
from ._shape import _dim, _flat, _kept, _merge, _multi, _put_flat, _diag_dims, index_map
from .nn._conv import scatter_reduce
from .tensor import _guard_sel
from ._core import tape as _tp
from ._schema import NK, NNR
from .creation import _gen
from . import _state as _an


return_types.frexp = _rt("frexp", ("mantissa", "exponent"))
return_types.histogram = _rt("histogram", ("hist", "bin_edges"))


def _T():
    import tapegrad
    return tapegrad


# ----------------------------------------------------------------------------- matrix_exp
def _expm_np(a):
    """exp of (a batch of) square matrices: scaling and squaring with a degree-18 Taylor
    polynomial on A / 2^s, ||A / 2^s||_1 <= 1/2 (remainder < 1e-22 relative), in float64."""
    a = np.asarray(a, np.float64)
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    nrm = np.abs(a).sum(-2).max(-1)               # 1-norm per matrix
    if nrm.ndim and not np.isfinite(nrm).all():   # (each matrix on its own: nan only there)
        out, ok = np.full(a.shape, np.nan), np.isfinite(nrm)
        if ok.any():
            out[ok] = _expm_np(a[ok])
        return out
    nrm = np.max(nrm) if nrm.ndim else nrm
    if not np.isfinite(nrm):
        return np.full(a.shape, np.nan)
    s = int(max(0, math.ceil(math.log2(nrm / 0.5)))) if nrm > 0.5 else 0
    b = a / (2.0 ** s)
    eye = np.broadcast_to(np.eye(n), a.shape)
    term = eye.copy()
    out = eye.copy()
    for k in range(1, 19):
        term = term @ b / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def _matrix_exp_check(A):
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 dimensions.")
    if A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices, but they are "
                           "%d by %d matrices" % A._data.shape[-2:])
    if not A._dtype.is_floating_point:
        raise RuntimeError("linalg.matrix_exp: Expected a floating point or complex tensor as "
                           "input. Got %s" % A._dtype._tname)


_FN = {}


def _matrix_exp_fn():
    f = _FN.get("mexp")
    if f is None:

        class LinalgMatrixExp(Function):
            @staticmethod
            def forward(ctx, A):
                ctx.save_for_backward(A)
                return _wrap(np.asarray(_expm_np(A._data), A._dtype.np), A._dtype)

            @staticmethod
            def backward(ctx, g):
                # d exp(A) adjoint: the top-right block of exp([[A^T, G], [0, A^T]])
                (A,) = ctx.saved_tensors
                T = _T()
                n = A._data.shape[-1]
                At = A.transpose(-2, -1)
                z = T.zeros_like(At)
                big = T.cat([T.cat([At, g], -1), T.cat([z, At], -1)], -2)
                return matrix_exp(big)[..., :n, n:]

        f = _FN["mexp"] = LinalgMatrixExp
    return f


def matrix_exp(A):
    if not isinstance(A, Tensor):
        raise TypeError("linalg_matrix_exp(): argument 'input' (position 1) must be Tensor, not %s"
                        % _type_name(A))
    _matrix_exp_check(A)
    return named(_matrix_exp_fn().apply(A), "LinalgMatrixExpBackward0")


# ----------------------------------------------------------------------------- construction
def diagflat(input, offset=0):
    return diag_embed(input.reshape(-1), offset)


def cartesian_prod(*tensors):
    T = _T()
    for t in tensors:
        if t._data.ndim != 1:
            raise RuntimeError("Expect a 1D vector, but got shape %s" % list(t._data.shape))
    if len(tensors) == 1:
        return tensors[0]
    grids = T.meshgrid(*tensors, indexing="ij")
    return T.stack([g.flatten() for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    T = _T()
    if input._data.ndim != 1:
        raise RuntimeError("Expect a 1D vector, but got shape %s" % list(input._data.shape))
    if r < 0:
        raise RuntimeError("Expect a non-negative number, but got %d" % r)
    if r == 0:
        return T.empty(0, dtype=input.dtype)
    n = input._data.shape[0]
    # torch's composition: an r-fold ij meshgrid, each grid masked by i1 < i2 < ... (<=)
    grids = T.meshgrid(*([input] * r), indexing="ij")
    ix = np.indices((n,) * r)
    mask = np.ones((n,) * r, bool)
    for j in range(r - 1):
        mask &= (ix[j] <= ix[j + 1]) if with_replacement else (ix[j] < ix[j + 1])
    m = T.from_numpy(mask)
    return T.stack([g.masked_select(m) for g in grids], 1)


def vander(x, N=None, increasing=False):
    T = _T()
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x._data.shape[0]
    if N is None:
        N = n
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    rdt = x._dtype if x._dtype.is_floating_point else T.int64
    xc = x if x._dtype is rdt else x.to(rdt)
    ones = T.ones(n, 1, dtype=rdt)
    if N == 0:
        res = T.empty(n, 0, dtype=rdt)
    elif N == 1:
        res = ones
    else:
        pw = xc.unsqueeze(1).expand(n, N - 1).cumprod(1)
        res = T.cat([ones, pw], 1)
        if res.requires_grad:
            _hide_below(res, x)
            named(res, "CopySlices")
    if not increasing:
        res = res.flip(1)
    return res


# ----------------------------------------------------------------------------- calculus
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
    left = y.narrow(d, 0, max(L - 1, 0))
    right = y.narrow(d, min(1, L), max(L - 1, 0))
    if x is not None:
        if dx is not None:
            raise RuntimeError("cumulative_trapezoid: received both x and dx")
        if x._data.ndim == 1:
            if x._data.shape[0] != L:
                raise RuntimeError("cumulative_trapezoid: There must be one `x` value for each "
                                   "sample point")
            shp = [1] * nd
            shp[d] = max(L - 1, 0)
            dxs = (x[1:] - x[:-1]).reshape(shp)
        else:
            xd = x._data.ndim
            xdim = dim % xd
            Lx = x._data.shape[xdim]
            dxs = x.narrow(xdim, 1, Lx - 1) - x.narrow(xdim, 0, Lx - 1)
        return _div_scalar((dxs * (left + right)).cumsum(d), 2.0)
    h = 1.0 if dx is None else dx
    return _mul_scalar(left + right, h / 2.0).cumsum(d)


def _mul_scalar(t, c):
    """t * c as torch's C++ composites record it (the Scalar overload: MulBackward1)."""
    return scale(t, c, name="MulBackward1") if t.requires_grad else t * c


def _div_scalar(t, c):
    """t / c recorded as DivBackward1 (torch's Scalar overload)."""
    if not t.requires_grad:
        return t / c
    out = scale(t, 1.0 / c, name="DivBackward1")
    return exact(out, np.asarray(t._data) / np.asarray(c, t._dtype.np))


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    T = _T()
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
    T = _T()
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


# ----------------------------------------------------------------------------- Bessel i0 / i1
def _i1_np(x):
    """Modified Bessel I1 by its power series (all terms of one sign: no cancellation)."""
    x = np.asarray(x, np.float64)
    ax = np.abs(x)
    q = (ax / 2.0) ** 2
    term = ax / 2.0
    tot = term.copy()
    kmax = int(np.max(ax, initial=0.0)) + 60 if np.all(np.isfinite(ax)) else 800
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(1, builtins.min(kmax, 900)):
            term = term * q / (k * (k + 1))
            tot = tot + term
        tot = np.where(np.isinf(ax) | (ax > 713.0), np.inf, tot)
    return np.where(np.isnan(x), np.nan, np.sign(x) * tot)


def _i0_np(x):
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.i0(np.where(np.isfinite(x), x, 0.0))
    return np.where(np.isfinite(x), y, np.nan)      # (torch's i0(+-inf) is nan)


def _bessel_fns():
    if "i0" not in _FN:
        # d i0(x) = i1(x) dx;  d i1(x) = (i0(x) - i1(x) / x) dx  (1/2 at 0)
        _FN["i0"] = _pointwise_fn("I0", _i0_np, i0, lambda x, y: i1(x))
        _FN["i1"] = _pointwise_fn("SpecialI1", _i1_np, i1, _di1, saves="xy")
    return _FN


def _di1(x, y):
    T = _T()
    safe = T.where(x == 0, T.ones_like(x), x)
    return T.where(x == 0, T.full_like(x, 0.5), i0(x) - y / safe)


def _float_unary(input, name):
    if not isinstance(input, Tensor):
        raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s"
                        % (name, _type_name(input)))
    return _floatify(input)


def i0(input):
    x = _float_unary(input, "i0")
    return named(_bessel_fns()["i0"].apply(x), "I0Backward0")


def i1(input):
    x = _float_unary(input, "special_i1")
    return named(_bessel_fns()["i1"].apply(x), "SpecialI1Backward0")


# ----------------------------------------------------------------------------- reductions
def renorm(input, p, dim, maxnorm):
    T = _T()
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
    ok = lead >= 0 and all(s == 1 or s == shape[lead + i] for i, s in enumerate(size))
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


# ----------------------------------------------------------------------------- scatters
def _place(input, src, P, name):
    """``input`` with ``src`` written at the flat positions ``P`` (src's shape), recorded as
    one node ``name`` over (input, src)."""
    P = np.asarray(P, np.int64).reshape(-1)
    return _put_flat(input, P, src, _flat(P.size), False, name)


def _pos(shape):
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)


def _check_src(input, src, P, fname):
    if not isinstance(src, Tensor):
        raise TypeError("%s(): argument 'src' (position 2) must be Tensor, not %s"
                        % (fname, _type_name(src)))
    if tuple(src._data.shape) != tuple(P.shape):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           "%s, slice size = %s" % (list(src._data.shape), list(P.shape)))


def select_scatter(input, src, dim, index):
    nd = input._data.ndim
    d = dim % nd
    n = input._data.shape[d]
    if not -n <= index < n:
        raise IndexError("select(): index %d out of range for tensor of size %s at dimension %d"
                         % (index, list(input._data.shape), dim))
    P = np.take(_pos(input._data.shape), index % n, axis=d)
    _check_src(input, src, P, "select_scatter")
    return _place(input, src, P, "SelectScatterBackward0")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, nd)
    sl = [slice(None)] * nd
    sl[d] = slice(start, end, step)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    P = _pos(input._data.shape)[tuple(sl)]
    _check_src(input, src, P, "slice_scatter")
    return _place(input, src, P, "SliceScatterBackward0")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    dim1, dim2 = _diag_dims(dim1, dim2, input._data.ndim)
    P = np.diagonal(_pos(input._data.shape), offset, dim1, dim2)
    _check_src(input, src, P, "diagonal_scatter")
    return _place(input, src, P, "DiagonalScatterBackward0")


def _put_positions(input, index):
    if not isinstance(index, Tensor) or index._dtype.name != "int64":
        raise RuntimeError("put_(): Expected a long tensor for index, but got %s"
                           % (index._dtype._tname if isinstance(index, Tensor)
                              else type(index).__name__))
    n = input._data.size
    iv = np.asarray(index._data, np.int64).reshape(-1)
    bad = (iv < -n) | (iv >= n)
    if bad.any():
        raise IndexError("out of range: tried to access index %d on a tensor of %d elements."
                         % (iv[np.argmax(bad)], n))
    return np.where(iv < 0, iv + n, iv)


def put(input, index, source, accumulate=False):
    P = _put_positions(input, index)
    if not isinstance(source, Tensor):
        raise TypeError("put(): argument 'source' (position 2) must be Tensor, not %s"
                        % _type_name(source))
    if source._data.size != P.size:
        raise RuntimeError("put_(): Expected source and index to have the same number of elements, "
                           "but got source.numel() = %d, index.numel() = %d"
                           % (source._data.size, P.size))
    if source._dtype is not input._dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got "
                           "self.dtype = %s and source.dtype = %s"
                           % (input._dtype._tname, source._dtype._tname))
    return _put_flat(input, P, source, _flat(P.size), accumulate, "PutBackward0")


def _fill_diagonal_(self, fill_value, wrap=False):
    shape = self._data.shape
    nd = len(shape)
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    if nd == 2:
        h, w = shape
        step = w + 1
        P = np.arange(0, builtins.min(h, w) * w, step, dtype=np.int64)
        if wrap and h > w + 1:
            # torch fills the main diagonal, then the wrapped rest: two writes
            _fill_diagonal_(self, fill_value)
            P = np.arange(0, self._data.size, step, dtype=np.int64)[builtins.min(h, w):]
            if P.size == 0:
                return self
    else:
        step = sum(int(np.prod(shape[i + 1:])) for i in range(nd))
        P = np.arange(0, self._data.size, step, dtype=np.int64)[:shape[0]]

    def f(s, _o):
        y = np.array(s._data, copy=True)
        y.reshape(-1)[P] = fill_value
        kept = _kept(y.size, P)
        return _merge(y, s._dtype, "CopySlices", [(s, kept, kept, 1.0, 0)], 1)
    return self._inplace(None, f)


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
    T = _T()
    out = scatter_reduce(input, d, T.from_numpy(full), source, reduce, include_self=include_self)
    if out._tape is not None:
        from .autograd.graph import node_class
        _set_name_id(out, multi_name_id("IndexReduceBackward0", 2))
        tp, e = entry_of(out)
        v = tp.views.get(e)            # (prod's node view exists already: it holds a hook)
        if v is not None:
            v.__class__ = node_class("IndexReduceBackward0")
    return out


# ----------------------------------------------------------------------------- elementwise
def ldexp(input, other):
    """input * 2^other (LdexpBackward0: d input = 2^other, d other = ln 2 * input * 2^other)."""
    T = _T()
    if not isinstance(other, Tensor):
        raise TypeError("ldexp(): argument 'other' (position 2) must be Tensor, not %s"
                        % _type_name(other))
    rdt = _result_dtype(input, other)
    if not rdt.is_floating_point:
        rdt = _DEFAULT[0]
    a = input if input._dtype is rdt else input.to(rdt)
    b = other if other._dtype is rdt else other.to(rdt)
    out = tap(a, 0) * T.exp2(tap(b, 1))
    if out.requires_grad:
        _hide_below(out, a, b)
        named(out, "LdexpBackward0", arity=2)
        if input._rg:
            saves_inputs(out, other)
    return out


def frexp(input):
    T = _T()
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


def _int_binary(npf, name):
    def f(input, other):
        T = _T()
        a = input if isinstance(input, Tensor) else T.tensor(input)
        b = other if isinstance(other, Tensor) else T.tensor(other)
        rdt = _result_dtype(a, b)
        if rdt.is_floating_point or rdt.name == "bool":
            raise NotImplementedError('"%s_cpu" not implemented for \'%s\'' % (name, rdt._tname))
        y = npf(np.asarray(a._data, rdt.np), np.asarray(b._data, rdt.np))
        return _wrap(np.asarray(y, rdt.np), rdt)
    f.__name__ = name
    return f


gcd = _int_binary(np.gcd, "gcd")
lcm = _int_binary(np.lcm, "lcm")


def rsub(input, other, *, alpha=1):
    if isinstance(other, Tensor):
        a = tap(input, 0)
        out = tap(other, 1) - (a if alpha == 1 else _mul_scalar(a, alpha))
        if out.requires_grad:
            _hide_below(out, input, other)
            named(out, "RsubBackward0", arity=2)
        return out
    return named(other - (input if alpha == 1 else input * alpha), "RsubBackward1")


def fill(input, value):
    T = _T()
    y = T.full_like(input, value.item() if isinstance(value, Tensor) else value)
    if isinstance(value, Tensor) and STATE.enabled and (input._rg or value._rg) and \
            input._dtype.is_floating_point:     # FillBackward1: the value gets sum(grad)
        v = value if value._dtype is input._dtype else value.to(input.dtype)
        out = tap(input, 0) * 0.0 + tap(v, 1)
        _hide_below(out, input, value)
        return exact(named(out, "FillBackward1", arity=2), y._data)
    if STATE.enabled and input._rg:
        out = input * 0.0 + y.detach()
        _hide_below(out, input)
        return named(out, "FillBackward0", arity=1)
    return y


def detach(input):
    return input.detach()


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
    return return_types.histogram(_wrap(np.asarray(h, rdt.np), rdt),
                                  _wrap(np.asarray(e, rdt.np), rdt))


def unravel_index(indices, shape):
    T = _T()
    if not isinstance(indices, Tensor):
        indices = T.tensor(indices)
    if indices._dtype.is_floating_point or indices._dtype.name == "bool":
        raise TypeError("expected 'indices' to be integer dtype, but got %s" % indices.dtype)
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got %s" % (shape,))
    if 0 in shape:
        raise RuntimeError("ZeroDivisionError")
    # torch's formula (indices // stride) % size: out-of-range indices wrap around
    iv = np.asarray(indices._data, np.int64)
    strides = [int(np.prod(shape[k + 1:])) for k in builtins.range(len(shape))]
    with np.errstate(divide="ignore"):
        parts = [np.floor_divide(iv, st) % sz if sz else np.zeros_like(iv)
                 for st, sz in zip(strides, shape)]
    return tuple(_wrap(np.asarray(p, np.int64) if np.ndim(p) else np.int64(p), T.int64)
                 for p in parts)


def typename(obj):
    if isinstance(obj, Tensor):
        return "torch." + obj._dtype._tname + "Tensor"
    t = type(obj)
    mod = t.__module__
    if mod in ("builtins", "__builtin__") or mod is None:
        return t.__qualname__
    return mod + "." + t.__qualname__


def _range(start=0, end=None, step=1, *, dtype=None, requires_grad=False, **kw):
    T = _T()
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use torch.arange,"
                  " which produces values in [start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    dt = dtype or _DEFAULT[0]
    n = int(math.floor((end - start) / step)) + 1
    vals = start + np.arange(builtins.max(n, 0), dtype=np.float64) * step
    return T.tensor(vals, dtype=dt, requires_grad=requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    T = _T()
    if isinstance(obj, Tensor):
        out = obj
        if dtype is not None and dtype is not obj._dtype:
            out = obj.to(dtype)
        elif copy:
            out = obj.clone()
        if requires_grad and not out.requires_grad:
            out = out.detach().requires_grad_(True) if out is obj else out.requires_grad_(True)
        return out
    if isinstance(obj, np.ndarray) and not copy and (dtype is None or
                                                       obj.dtype == dtype.np):
        try:
            t = T.from_numpy(obj)
        except TypeError:
            t = T.tensor(obj, dtype=dtype)
        if requires_grad:
            t.requires_grad_(True)
        return t
    return T.tensor(obj, dtype=dtype, requires_grad=requires_grad)


def is_same_size(a, b):
    return tuple(a._data.shape) == tuple(b._data.shape)


def is_inference(t):
    return bool(getattr(t, "_inference", False))


# ----------------------------------------------------------------------------- in-place variants
def _cmp_inplace(fn, name):
    """self.eq_(other) ...: the comparison's 0/1 written in self's dtype; with gradients a node
    ``name`` whose gradient is zero, as torch's."""
    def f(self, other):

        def op(s, o):
            val = fn(s, o)
            if not (STATE.enabled and s._rg):
                return val
            if isinstance(o, Tensor):       # (the Tensor overload: a node over both)
                out = tap(s, 0) * 0.0 + tap(o, 1) * 0.0 + val.to(s.dtype).detach()
                _hide_below(out, s, o)
                return exact(named(out, name + "1", arity=2), val._data)   # (inf * 0: nan)
            out = tap(s, 0) * 0.0 + val.to(s.dtype).detach()
            _hide_below(out, s)
            return exact(named(out, name + "0", arity=1), val._data)
        return self._inplace(other, op)
    f.__name__ = name
    return f


def _owned(s):
    """The in-place target's stand-in (``tensor._proxy``) with a value of its own: custom
    Functions (erfinv, i0, ...) save their input Tensor itself, which the write would change."""
    if isinstance(s._data, np.ndarray):
        s._data = s._data.copy()
    return s


def _install(Tensor):
    T = _T()
    Tn = Tensor

    def inplace_of(fn):
        def g(self, *args, **kw):
            return self._inplace(args[0] if args else None,
                                 lambda s, o: fn(_owned(s), *args, **kw))
        return g

    # methods
    Tn.matrix_exp = matrix_exp
    Tn.diagflat = diagflat
    Tn.i0 = i0
    Tn.renorm = renorm
    Tn.renorm_ = inplace_of(renorm)
    Tn.sum_to_size = sum_to_size
    Tn.select_scatter = select_scatter
    Tn.slice_scatter = slice_scatter
    Tn.diagonal_scatter = diagonal_scatter
    Tn.split_with_sizes = lambda self, split_sizes, dim=0: T.split(self, list(split_sizes), dim)
    Tn.index_reduce = index_reduce
    Tn.index_reduce_ = lambda self, dim, index, source, reduce, *, include_self=True: \
        self._inplace(source, lambda s, o: index_reduce(s, dim, index, o, reduce,
                                                        include_self=include_self))
    Tn.fill_diagonal_ = _fill_diagonal_
    Tn.put = put
    Tn.put_ = lambda self, index, source, accumulate=False: self._inplace(
        source, lambda s, o: put(s, index, o, accumulate))
    Tn.ldexp = ldexp
    Tn.ldexp_ = inplace_of(ldexp)
    Tn.frexp = frexp
    Tn.gcd, Tn.lcm = gcd, lcm
    Tn.gcd_, Tn.lcm_ = inplace_of(gcd), inplace_of(lcm)
    Tn.histogram = histogram
    Tn.is_same_size = is_same_size
    Tn.is_nonzero = lambda self: T.is_nonzero(self)
    Tn.is_inference = is_inference
    Tn.isreal = lambda self: T.isreal(self)
    Tn.nbytes = property(lambda self: self._data.size * self._dtype.itemsize)
    Tn.itemsize = property(lambda self: self._dtype.itemsize)
    Tn.output_nr = property(_output_nr)
    Tn.adjoint = lambda self: self.transpose(-2, -1)
    # aliases
    Tn.multiply = lambda self, other: T.mul(self, other)
    Tn.multiply_ = lambda self, other: self.mul_(other)
    Tn.subtract = lambda self, other, *, alpha=1: T.sub(self, other, alpha=alpha)
    Tn.subtract_ = lambda self, other, *, alpha=1: self.sub_(other, alpha=alpha)
    Tn.absolute = lambda self: T.abs(self)
    Tn.absolute_ = lambda self: self.abs_()
    Tn.negative_ = lambda self: self.neg_()
    Tn.fix_ = lambda self: self.trunc_()
    Tn.positive = lambda self: T.positive(self)
    Tn.true_divide_ = lambda self, other: self.div_(other)
    Tn.divide_ = lambda self, other, *, rounding_mode=None: self._inplace(
        other, lambda s, o: T.div(s, o, rounding_mode=rounding_mode))
    Tn.arccos_, Tn.arcsin_, Tn.arctan_ = Tn.acos_, Tn.asin_, Tn.atan_
    Tn.arctan2_ = Tn.atan2_
    for nm, fn in (("eq", T.eq), ("ne", T.ne), ("lt", T.lt), ("le", T.le), ("gt", T.gt),
                   ("ge", T.ge)):
        setattr(Tn, nm + "_", _cmp_inplace(fn, nm.capitalize() + "Backward"))
    Tn.not_equal_, Tn.less_, Tn.less_equal_ = Tn.ne_, Tn.lt_, Tn.le_
    Tn.greater_, Tn.greater_equal_ = Tn.gt_, Tn.ge_
    for nm in ("logical_and", "logical_or", "logical_xor"):
        setattr(Tn, nm + "_", inplace_of(getattr(T, nm)))
    Tn.logical_not_ = lambda self: self._inplace(None, lambda s, o: T.logical_not(s))
    sp = T.special
    for nm, fn in (("lgamma", sp.lgamma), ("digamma", sp.digamma), ("erfc", sp.erfc),
                   ("erfinv", sp.erfinv), ("logit", sp.logit), ("sinc", sp.sinc),
                   ("xlogy", sp.xlogy), ("mvlgamma", sp.mvlgamma), ("i0", i0),
                   ("heaviside", _math.heaviside), ("nextafter", _math.nextafter)):
        setattr(Tn, nm + "_", inplace_of(fn))
    Tn.polygamma_ = lambda self, n: self._inplace(None, lambda s, o: _named1(
        sp.polygamma(n, _owned(s)), "PolygammaBackward1"))
    Tn.cumprod_ = lambda self, dim, *, dtype=None: self._inplace(
        None, lambda s, o: T.cumprod(s, dim, dtype=dtype))
    Tn.new = _legacy_new
    Tn.narrow_copy = _copies()["narrow_copy"]
    Tn.angle = angle
    Tn.dim_order = _dim_order
    Tn.is_set_to = _is_set_to
    Tn.const_data_ptr = Tn.data_ptr
    Tn.is_meta = property(lambda self: False)
    Tn.is_distributed = lambda self: False
    Tn.layout = property(lambda self: strided)
    Tn.conj_physical_ = lambda self: self._inplace(     # (real: a write of the same values)
        None, lambda s, o: named(s.clone(), "ConjPhysicalBackward1") if STATE.enabled and s._rg
        else s.clone())
    Tn.addmm_ = lambda self, mat1, mat2, *, beta=1, alpha=1: self._inplace(
        mat1, lambda s, o: T.addmm(_owned(s), mat1, mat2, beta=beta, alpha=alpha))
    Tn.new_empty_strided = lambda self, size, stride, *, dtype=None, device=None, \
        requires_grad=False, **kw: empty_strided(size, stride, dtype=dtype or self.dtype,
                                                 requires_grad=requires_grad)
    Tn.igamma, Tn.igammac = igamma, igammac
    Tn.igamma_, Tn.igammac_ = inplace_of(igamma), inplace_of(igammac)
    Tn.as_strided = as_strided
    Tn.as_strided_scatter = as_strided_scatter
    Tn.apply_, Tn.map_, Tn.map2_ = _apply_, _map_, _map2_
    Tn.cauchy_, Tn.log_normal_, Tn.geometric_ = _cauchy_, _log_normal_, _geometric_
    Tn.bernoulli = lambda self, p=None, *, generator=None: T.bernoulli(self, p, generator=generator) \
        if p is not None else T.bernoulli(self, generator=generator)
    Tn.multinomial = lambda self, num_samples, replacement=False, *, generator=None: \
        T.multinomial(self, num_samples, replacement, generator=generator)
    Tn.svd, Tn.qr = svd, qr
    Tn.triangular_solve = triangular_solve
    for nm, msg in _REMOVED.items():
        if nm != "matrix_rank":
            setattr(Tn, nm, _removed(nm, msg))
    Tn.resize_ = _resize_
    Tn.cholesky_inverse = lambda self, upper=False: T.cholesky_inverse(self, upper)
    Tn.unsafe_split, Tn.unsafe_chunk = unsafe_split, unsafe_chunk
    Tn.unsafe_split_with_sizes = unsafe_split_with_sizes
    Tn.nonzero_static = lambda self, *, size, fill_value=-1: nonzero_static(
        self, size=size, fill_value=fill_value)


def _named1(t, name):
    return named(t, name)


def _output_nr(self):
    """Which output of its grad_fn this tensor is (0 for leaves and single-output nodes)."""
    if self._tape is None:
        return 0
    tp, node = _tp.resolve(self)
    return int(tp.N[node * NK + NNR])


def _legacy_new(self, *args, **kw):
    T = _T()
    dev = kw.pop("device", None)  # noqa: F841 - cpu only
    if kw:
        raise TypeError("new() received an invalid combination of arguments")
    if not args:
        return T.empty(0, dtype=self.dtype)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0]
    if all(isinstance(a, int) for a in args):
        return T.empty(*args, dtype=self.dtype)
    if len(args) == 1 and type(args[0]).__name__ == "Size":
        return T.empty(tuple(args[0]), dtype=self.dtype)
    return T.tensor(args[0], dtype=self.dtype)


# ----------------------------------------------------------------------------- copies of views
def _copy_of(view_fn, name):
    """torch.<view>_copy: the view's values in memory of their own, one node ``name``
    (torch's ``<View>Backward0_copy``) over the input."""
    def f(input, *args, **kw):
        out = view_fn(input, *args, **kw).clone()
        if out.requires_grad:
            _hide_below(out, input)
            named(out, name, arity=1)
        return out
    return f


def _copies():
    T = _T()
    return {
        "diagonal_copy": _copy_of(T.diagonal, "DiagonalBackward0_copy"),
        "expand_copy": _copy_of(lambda x, size, *, implicit=False: x.expand(*size),
                                "ExpandBackward0_copy"),
        "permute_copy": _copy_of(T.permute, "PermuteBackward0_copy"),
        "select_copy": _copy_of(T.select, "SelectBackward0_copy"),
        "slice_copy": _copy_of(lambda x, dim=0, start=None, end=None, step=1:
                               x[(slice(None),) * (dim % x.dim()) + (slice(start, end, step),)],
                               "SliceBackward0_copy"),
        "squeeze_copy": _copy_of(T.squeeze, "SqueezeBackward0_copy"),
        "t_copy": _copy_of(T.t, "TBackward0_copy"),
        "transpose_copy": _copy_of(T.transpose, "TransposeBackward0_copy"),
        "unsqueeze_copy": _copy_of(T.unsqueeze, "UnsqueezeBackward0_copy"),
        "view_copy": _copy_of(lambda x, size: x.view(size) if not hasattr(size, "is_floating_point")
                              else x.view(size), "ViewBackward0_copy"),
        "alias_copy": _copy_of(lambda x: x, "AliasBackward0_copy"),
        "unfold_copy": _copy_of(lambda x, dimension, size, step: x.unfold(dimension, size, step),
                                "UnfoldBackward0_copy"),
        "narrow_copy": _copy_of(T.narrow, "NarrowCopyBackward0"),
    }


def _unsafe_parts(input, dim, sizes, name):
    """Parts of ``input`` along ``dim`` in memory of their own (no views), sharing one node
    ``name`` as torch's unsafe_split / split_copy / unbind_copy outputs do."""
    if input._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _dim(dim, input._data.ndim)
    outs = _multi(input, d, sizes, name)
    ids = {id(o) for o in outs}
    root = input if input._base is None else input._base
    if root._views is not None:            # no longer views: nothing to re-derive
        root._views[:] = [r for r in root._views if id(r()) not in ids]
    for o in outs:
        o._data = np.array(o._data, copy=True)
        o._base = None
        o._vc = [0]
        o._vm = Tensor._vm
    return outs


def _split_sizes(input, split_size, dim):
    n = input._data.shape[dim % builtins.max(input._data.ndim, 1)]
    if isinstance(split_size, (list, tuple)):
        if sum(split_size) != n:
            raise RuntimeError("split_with_sizes expects split_sizes to sum exactly to %d (input "
                               "tensor's size at dimension %d), but got split_sizes=%s"
                               % (n, dim, list(split_size)))
        return [int(s) for s in split_size]
    k = int(split_size)
    return [builtins.min(k, n - i) for i in builtins.range(0, n, k)] if n else [0]


def unsafe_split(input, split_size, dim=0):
    if isinstance(split_size, (list, tuple)):
        return unsafe_split_with_sizes(input, split_size, dim)
    return _unsafe_parts(input, dim, _split_sizes(input, split_size, dim), "UnsafeSplitBackward0")


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return _unsafe_parts(input, dim, _split_sizes(input, list(split_sizes), dim),
                         "UnsafeSplitWithSizesBackward0")


def unsafe_chunk(input, chunks, dim=0):
    n = input._data.shape[dim % builtins.max(input._data.ndim, 1)]
    k = -(-n // chunks) if n else 0
    return unsafe_split(input, builtins.max(k, 1), dim)


def split_copy(input, split_size, dim=0):
    return _unsafe_parts(input, dim, _split_sizes(input, split_size, dim), "SplitBackward0_copy")


def split_with_sizes_copy(input, split_sizes, dim=0):
    return _unsafe_parts(input, dim, _split_sizes(input, list(split_sizes), dim),
                         "SplitWithSizesBackward0_copy")


def angle(input):
    """The argument of a real number: 0 for x >= 0, pi for x < 0 (nan stays); zero gradient."""
    x = input if input._dtype.is_floating_point else input.to(_DEFAULT[0])
    d = np.asarray(x._data)
    val = np.where(d < 0, np.pi, np.where(np.isnan(d), np.nan, 0.0)).astype(x._dtype.np)
    c = _wrap(val if val.ndim else val[()], x._dtype)
    if STATE.enabled and input._rg:
        out = tap(x, 0) * 0.0 + c
        _hide_below(out, x)
        return named(out, "AngleBackward0", arity=1)
    return c


def nonzero_static(input, *, size, fill_value=-1):
    T = _T()
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer, but got size: "
                           "%d" % size)
    nz = np.argwhere(np.asarray(input._data))
    nd = builtins.max(np.ndim(input._data), 1) if np.ndim(input._data) else 0
    out = np.full((size, nd), fill_value, np.int64)
    k = builtins.min(size, nz.shape[0])
    if nd:
        out[:k] = nz[:k].reshape(-1, nd)
    return _wrap(out, T.int64)


# ----------------------------------------------------------------------------- old linalg names
return_types.svd = _rt("svd", ("U", "S", "V"))
return_types.qr = _rt("qr", ("Q", "R"))
_WARNED = set()


def _warn_once(key, msg):
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(msg, UserWarning, stacklevel=3)


def svd(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with V (not V^H); ``some``: the reduced factors."""
    T = _T()
    m, n = input._data.shape[-2:]
    b = input._data.shape[:-2]
    if not compute_uv:
        S = T.linalg.svdvals(input)
        return return_types.svd(T.zeros(*b, m, m, dtype=input.dtype), S,
                                T.zeros(*b, n, n, dtype=input.dtype))
    if some or m == n or not (STATE.enabled and input._rg):
        U, S, Vh = T.linalg.svd(input, full_matrices=not some)
        return return_types.svd(U, S, Vh.transpose(-2, -1))
    # some=False with gradients: the reduced factors carry them; the completing columns are
    # constants (torch ignores gradients on U[..., min(m, n):] and V[..., min(m, n):])
    U, S, Vh = T.linalg.svd(input, full_matrices=False)
    with T.no_grad():
        Uf, _, Vhf = T.linalg.svd(input.detach(), full_matrices=True)
    k = builtins.min(m, n)
    V = Vh.transpose(-2, -1)
    if m > n:
        U = T.cat([U, Uf[..., k:]], -1)
        _hide_below(U, input)
        named(U, "LinalgSvdBackward0")
    else:
        V = T.cat([V, Vhf.transpose(-2, -1)[..., k:]], -1)
        _hide_below(V, input)
        named(V, "TransposeBackward0")
    return return_types.svd(U, S, V)


def qr(input, some=True):
    T = _T()
    _warn_once("qr", "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
               "future PyTorch release.\nThe boolean parameter 'some' has been replaced with a "
               "string parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\n"
               "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    Q, R = T.linalg.qr(input, "reduced" if some else "complete")
    return return_types.qr(Q, R)


return_types.triangular_solve = _rt("triangular_solve", ("solution", "cloned_coefficient"))


def _tri_fn():
    f = _FN.get("tri")
    if f is None:

        def forward(ctx, b, A, upper, transpose, unitriangular):
            T = _T()
            with T.no_grad():
                At = A.transpose(-2, -1) if transpose else A
                X = T.linalg.solve_triangular(At, b, upper=upper != transpose,
                                              unitriangular=unitriangular)
            ctx.save_for_backward(A, X)
            ctx.flags = (upper, transpose, unitriangular)
            return X

        def backward(ctx, g):
            # op(A) X = B:  gB = op(A)^-T g;  g op(A) = -gB X^T, masked to A's triangle
            T = _T()
            A, X = ctx.saved_tensors
            upper, transpose, unit = ctx.flags
            At = A.transpose(-2, -1) if transpose else A
            gB = T.linalg.solve_triangular(At.transpose(-2, -1), g, upper=upper == transpose,
                                           unitriangular=unit)
            gA = None
            if ctx.needs_input_grad[1]:
                gop = -(gB @ X.transpose(-2, -1))
                gA = gop.transpose(-2, -1) if transpose else gop
                gA = gA.triu(1 if unit else 0) if upper else gA.tril(-1 if unit else 0)
            return gB, gA, None, None, None

        f = _FN["tri"] = type("TriangularSolve", (Function,),
                              {"forward": staticmethod(forward),
                               "backward": staticmethod(backward)})
    return f


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """torch.triangular_solve (deprecated): (solution of op(A) X = input, a copy of A)."""
    _warn_once("tri", "torch.triangular_solve is deprecated in favor of "
               "torch.linalg.solve_triangular and will be removed in a future PyTorch release.\n"
               "torch.linalg.solve_triangular has its arguments reversed and does not return a "
               "copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be "
               "replaced with\nX = torch.linalg.solve_triangular(A, B).")
    if input._data.ndim < 2 or A._data.ndim < 2:
        raise RuntimeError("torch.triangular_solve: The input tensor %s must have at least 2 "
                           "dimensions." % ("b" if input._data.ndim < 2 else "A"))
    X = named(_tri_fn().apply(input, A, upper, transpose, unitriangular),
              "TriangularSolveBackward0")
    # (torch's copy of A is output 1 of the same node; here a clone under that name)
    return return_types.triangular_solve(X, named(A.clone(), "TriangularSolveBackward0"))


def _removed(name, msg):
    def f(*args, **kw):
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                           + msg)
    f.__name__ = name
    return f


_REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` "
             "has its arguments reversed and does not return the LU factorization.",
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than "
           "real tensors mimicking complex tensors.",
    "symeig": "The default behavior has changed from using the upper triangular portion of the "
              "matrix by default to using the lower triangular portion.",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` "
             "has reversed arguments and does not return the QR decomposition in the returned "
             "tuple (although it returns other information about the problem).",
    "matrix_rank": "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
                   "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
}


# ----------------------------------------------------------------------------- windows
def _window(name, fn):
    def f(window_length, periodic=True, *args, dtype=None, layout=None, device=None,
          requires_grad=False, **kw):
        T = _T()
        dt = dtype or _DEFAULT[0]
        if not dt.is_floating_point:
            raise RuntimeError("%s expects floating point dtypes, got: %s"
                               % (name, "TensorOptions(dtype=%s)" % dt._tname))
        if window_length < 0:
            raise RuntimeError("%s requires non-negative window_length, got window_length=%d"
                               % (name, window_length))
        if window_length == 0:
            return T.empty(0, dtype=dt, requires_grad=requires_grad)
        if window_length == 1:
            return T.ones(1, dtype=dt, requires_grad=requires_grad)
        N = window_length + 1 if periodic else window_length
        n = np.arange(N, dtype=np.float64)
        w = fn(n, N, *args, **kw)[:window_length]
        return T.tensor(w, dtype=dt, requires_grad=requires_grad)
    f.__name__ = name
    return f


def _hann(n, N):
    return 0.5 - 0.5 * np.cos(2 * np.pi * n / (N - 1))


def _hamming(n, N, alpha=0.54, beta=0.46):
    return alpha - beta * np.cos(2 * np.pi * n / (N - 1))


def _blackman(n, N):
    x = 2 * np.pi * n / (N - 1)
    return 0.42 - 0.5 * np.cos(x) + 0.08 * np.cos(2 * x)


def _bartlett(n, N):
    return 1 - np.abs(2 * n / (N - 1) - 1)


def _kaiser(n, N, beta=12.0):
    r = (n - (N - 1) / 2) / ((N - 1) / 2)
    return _i0_np(beta * np.sqrt(np.clip(1 - r * r, 0, None))) / _i0_np(beta)


hann_window = _window("hann_window", _hann)
hamming_window = _window("hamming_window", _hamming)
blackman_window = _window("blackman_window", _blackman)
bartlett_window = _window("bartlett_window", _bartlett)
kaiser_window = _window("kaiser_window", _kaiser)


def _resize_(self, *sizes, memory_format=None):
    """Tensor.resize_: the first elements kept (row-major), new ones zero (torch leaves them
    uninitialized); refused on a tensor that requires grad, as torch."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) or (
            len(sizes) == 1 and type(sizes[0]).__name__ == "Size"):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    if self._rg:
        raise RuntimeError("cannot resize variables that require grad")
    if self._base is not None and int(np.prod(sizes)) > self._data.size:
        raise RuntimeError("Trying to resize storage that is not resizable")
    flat = np.asarray(self._data).reshape(-1)
    n = int(np.prod(sizes))
    new = np.zeros(n, self._dtype.np)
    new[:builtins.min(n, flat.size)] = flat[:n]
    if n <= flat.size and self._base is None and flat.base is None:
        self._data = flat[:n].reshape(sizes)
    else:
        self._data = new.reshape(sizes)
    _bump(self)
    return self


# ----------------------------------------------------------------------------- igamma
def _gammainc_np(a, x, upper):
    """Regularized incomplete gamma P(a, x) (or Q = 1 - P when ``upper``) in float64: the series
    for x < a + 1, Lentz's continued fraction for Q otherwise; torch's edge values."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    a, x = a.copy(), x.copy()
    lg = np.vectorize(lambda v: math.lgamma(v) if v > 0 and math.isfinite(v) else 0.0,
                      otypes=[np.float64])
    ok = (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    with np.errstate(all="ignore"):
        pre = np.where(ok, -x + a * np.log(np.where(ok, x, 1.0)) - lg(np.where(ok, a, 1.0)), 0.0)
        ser = ok & (x < a + 1)
        P = np.zeros(a.shape)
        if ser.any():
            aa, xx = a[ser], x[ser]
            term = 1.0 / aa
            tot = term.copy()
            ap = aa.copy()
            for _ in builtins.range(5000):
                ap = ap + 1
                term = term * xx / ap
                tot = tot + term
                if np.all(np.abs(term) < np.abs(tot) * 1e-17):
                    break
            P[ser] = tot * np.exp(pre[ser])
        cf = ok & ~ser
        Q = np.zeros(a.shape)
        if cf.any():
            aa, xx = a[cf], x[cf]
            tiny = 1e-300
            b = xx + 1 - aa
            c = np.full(aa.shape, 1 / tiny)
            d = 1 / b
            h = d.copy()
            for i in builtins.range(1, 5000):
                an = -i * (i - aa)
                b = b + 2
                d = an * d + b
                d = np.where(np.abs(d) < tiny, tiny, d)
                c = b + an / c
                c = np.where(np.abs(c) < tiny, tiny, c)
                d = 1 / d
                delta = d * c
                h = h * delta
                if np.all(np.abs(delta - 1) < 1e-16):
                    break
            Q[cf] = np.exp(pre[cf]) * h
        res = np.where(ser, (1 - P) if upper else P, np.where(cf, Q if upper else 1 - Q, np.nan))
    # edges (Cephes / torch): x = 0, a = 0, infinities
    finite_a = np.isfinite(a)
    res = np.where((x == 0) & (a > 0), 1.0 if upper else 0.0, res)
    res = np.where((a == 0) & (x > 0), 0.0 if upper else 1.0, res)
    res = np.where(np.isposinf(x) & (a >= 0) & finite_a, 0.0 if upper else 1.0, res)
    res = np.where(np.isposinf(a) & (x >= 0) & np.isfinite(x), 1.0 if upper else 0.0, res)
    bad = (a < 0) | (x < 0) | np.isnan(a) | np.isnan(x) | ((a == 0) & (x == 0)) | (
        np.isposinf(a) & np.isposinf(x))
    return np.where(bad, np.nan, res)


def _igamma_fn(upper):
    key = "igammac" if upper else "igamma"
    f = _FN.get(key)
    if f is None:
        nm = "igammac" if upper else "igamma"

        def forward(ctx, a, x):
            ctx.save_for_backward(a, x)
            y = _gammainc_np(a._data, x._data, upper)
            return _wrap(np.asarray(y, a._dtype.np) if np.ndim(y) else a._dtype.np.type(y),
                         a._dtype)

        def backward(ctx, g):
            a, x = ctx.saved_tensors
            if ctx.needs_input_grad[0]:
                raise NotImplementedError("the derivative for '%s: input' is not implemented." % nm)
            T = _T()
            # d P(a, x) / dx = exp(-x) x^(a - 1) / Gamma(a);  Q = 1 - P
            lga = _wrap(np.asarray(np.vectorize(lambda v: math.lgamma(v) if v > 0 else math.inf,
                                                otypes=[np.float64])(np.asarray(a._data)),
                                   a._dtype.np), a._dtype)
            dens = (-x + (a.detach() - 1) * T.log(x) - lga).exp()
            return None, (-g * dens if upper else g * dens)

        f = _FN[key] = type("Igammac" if upper else "Igamma", (Function,),
                            {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    return f


def _igamma(upper):
    def fn(input, other):
        T = _T()
        if not isinstance(other, Tensor):
            raise TypeError("%s(): argument 'other' (position 2) must be Tensor, not %s"
                            % ("igammac" if upper else "igamma", _type_name(other)))
        rdt = _result_dtype(input, other)
        if not rdt.is_floating_point:
            raise NotImplementedError('"igamma%s_cpu" not implemented for \'%s\''
                                      % ("c" if upper else "", rdt._tname))
        a = input if input._dtype is rdt else input.to(rdt)
        x = other if other._dtype is rdt else other.to(rdt)
        if a.shape != x.shape:
            a, x = T.broadcast_tensors(a, x)
        return named(_igamma_fn(upper).apply(a, x),
                     "IgammacBackward0" if upper else "IgammaBackward0")
    fn.__name__ = "igammac" if upper else "igamma"
    return fn


igamma = _igamma(False)
igammac = _igamma(True)


# ----------------------------------------------------------------------------- as_strided
def _strided_positions(input, size, stride, storage_offset, fname):
    """Root storage positions (shape ``size``) that as_strided(size, stride, offset) reads."""
    size = tuple(int(v) for v in size)
    stride = tuple(int(v) for v in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(v < 0 for v in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           "strides: %s" % list(stride))
    root = input if input._base is None else input._base
    rd = root._arr()
    if not rd.flags.c_contiguous:
        raise NotImplementedError("as_strided of a tensor whose storage is not C-contiguous is "
                                  "not supported by tapegrad")
    off = input.storage_offset() if storage_offset is None else int(storage_offset)
    isz = rd.itemsize
    need = off + sum((n - 1) * st for n, st in zip(size, stride)) + 1 if all(size) else 0
    if need > rd.size:
        raise RuntimeError("setStorage: sizes %s, strides %s, storage offset %d, and itemsize %d "
                           "requiring a storage size of %d are out of bounds for storage of size "
                           "%d" % (list(size), list(stride), off, isz, need * isz, rd.size * isz))
    P = np.full(size, off, np.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        shp = [1] * len(size)
        shp[k] = n
        P = P + (np.arange(n, dtype=np.int64) * st).reshape(shp)
    return size, stride, off, rd, P


def as_strided(input, size, stride, storage_offset=None):
    """A view of the input's storage with the given geometry (AsStridedBackward0: a gather of
    the input's elements; positions outside a view input's own elements are refused)."""
    size, stride, off, rd, P = _strided_positions(input, size, stride, storage_offset,
                                                  "as_strided")
    d = input._arr()
    isz = rd.itemsize
    y = np.lib.stride_tricks.as_strided(rd.reshape(-1)[off:] if rd.size else rd.reshape(-1),
                                        size, tuple(st * isz for st in stride))
    if input._base is None:
        idx = P
    else:
        ip = _positions(input).reshape(-1)
        lut = np.full(rd.size, -1, np.int64)
        lut[ip] = np.arange(ip.size, dtype=np.int64)
        idx = lut[P] if P.size else P
        if P.size and (idx < 0).any():
            if input._rg and STATE.enabled:
                raise NotImplementedError("as_strided with gradients reading storage outside "
                                          "the (view) input is not supported by tapegrad")
            idx = np.zeros_like(P)

    def fn(a):
        return y if a is d else np.asarray(idx).reshape(size)
    return index_map(input, fn, "AsStridedBackward0", view=True)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    if input._base is not None:
        input = input.contiguous() if not input.is_contiguous() else input
    size, stride, off, rd, P = _strided_positions(input, size, stride, storage_offset,
                                                  "as_strided_scatter")
    if input._base is not None:
        P = P - input.storage_offset()
    _check_src(input, src, P, "as_strided_scatter")
    return _place(input, src, P, "AsStridedScatterBackward0")


# ----------------------------------------------------------------------------- python callables, sampling
def _apply_(self, callable):
    if self._rg:
        raise RuntimeError("Can't call apply_() on Variable that requires grad. Use "
                           "var.detach().apply_() instead.")
    return _map_values(self, (), callable)


def _map_(self, tensor, callable):
    if self._rg or tensor._rg:
        raise RuntimeError("Can't call map_() on Variable that requires grad. Use "
                           "var.detach().map_() instead.")
    return _map_values(self, (tensor,), callable)


def _map2_(self, x, y, callable):
    if self._rg or x._rg or y._rg:
        raise RuntimeError("Can't call map2_() on Variable that requires grad. Use "
                           "var.detach().map2_() instead.")
    return _map_values(self, (x, y), callable)


def _map_values(self, others, fn):
    """self[i] = fn(self[i], *others[i]) elementwise with Python numbers (others broadcast to
    self's shape); results converted to self's dtype as torch's (truncation for integers)."""
    d = self._arr()
    shp = d.shape
    cols = [np.broadcast_to(np.asarray(o._data), shp).reshape(-1).tolist() for o in others]
    flat = d.reshape(-1).tolist()
    py = float if self._dtype.is_floating_point else (bool if self._dtype.name == "bool" else int)
    out = [py(fn(v, *[c[i] for c in cols])) for i, v in enumerate(flat)]
    d[...] = np.asarray(out, dtype=d.dtype).reshape(shp)
    _bump(self)
    return self


def _cauchy_(self, median=0.0, sigma=1.0, generator=None):
    if not self._dtype.is_floating_point:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype "
                           "must be a floating point but you specified %s" % _CNAME.get(
                               self._dtype.name, self._dtype.name))
    if not sigma > 0:
        raise RuntimeError("cauchy_ expects sigma > 0.0, but found sigma=%s" % _num(sigma))
    g = _gen(generator)
    return self._draw_(lambda n: g._cauchy(n, median, sigma))


def _log_normal_(self, mean=1.0, std=2.0, generator=None):
    if not self._dtype.is_floating_point:
        raise NotImplementedError("\"log_normal_cpu\" not implemented for '%s'" % self._dtype._tname)
    if not std > 0:
        raise RuntimeError("log_normal_ expects std > 0.0, but found std=%s" % _num(std))
    g = _gen(generator)
    return self._draw_(lambda n: g._log_normal(n, mean, std))


def _geometric_(self, p, generator=None):
    if not 0 < p < 1:
        raise RuntimeError("geometric_ expects p to be in (0, 1), but got p=%s" % _num(p))
    g = _gen(generator)
    return self._draw_(lambda n: g._geometric(n, p))


_CNAME = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
          "uint8": "unsigned char", "bool": "bool"}


def _num(v):
    return "%g" % v


# ----------------------------------------------------------------------------- layout odds and ends
class layout:
    """torch.layout: tapegrad tensors are always ``torch.strided``."""
    __module__ = "torch"

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


strided = layout("strided")


def _dim_order(self, *, ambiguity_check=False):
    """Dimensions from the outermost to the innermost in memory (stable for equal strides)."""
    st = self.stride()
    return tuple(sorted(builtins.range(len(st)), key=lambda i: -st[i]))


def _is_set_to(self, tensor):
    """Same storage, offset, sizes and strides."""
    a, b = self._arr(), tensor._arr()
    ra = self if self._base is None else self._base
    rb = tensor if tensor._base is None else tensor._base
    return (ra is rb and a.shape == b.shape and a.strides == b.strides and
            self.storage_offset() == tensor.storage_offset() and a.dtype == b.dtype)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialized (here: zero) tensor with the given strides."""
    T = _T()
    dt = dtype or _DEFAULT[0]
    size = tuple(int(v) for v in size)
    stride = tuple(int(v) for v in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    need = sum((n - 1) * st for n, st in zip(size, stride)) + 1 if all(size) else 0
    buf = np.zeros(builtins.max(need, 1), dt.np)
    arr = np.lib.stride_tricks.as_strided(buf, size, tuple(v * buf.itemsize for v in stride))
    t = T.from_numpy(arr) if need else T.zeros(size, dtype=dt)
    if requires_grad:
        t.requires_grad_(True)
    return t


# torch-namespace in-place functions: torch.exp_(t) is t.exp_() (the names torch has)
INPLACE_NAMES = (
    "abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
    "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
    "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_",
    "expm1_", "fix_", "floor_", "frac_", "gcd_", "i0_", "lcm_", "ldexp_", "log10_", "log1p_",
    "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_",
    "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_",
    "tanh_", "trunc_", "xlogy_", "zero_", "fill_", "index_put_", "detach_")


_MATMUL = ["highest"]


def frobenius_norm(input, dim=(-2, -1), keepdim=False):
    _warn_once("fro", "at::frobenius_norm is deprecated and it is just left for JIT "
               "compatibility. It will be removed in a future PyTorch release. Please use "
               "`linalg.vector_norm(A, 2., dim, keepdim)` instead")
    return _T().linalg.vector_norm(input, 2, dim=dim, keepdim=keepdim)


def nuclear_norm(input, dim=(-2, -1), keepdim=False):
    _warn_once("nuc", "at::nuclear_norm is deprecated and it is just left for JIT "
               "compatibility. It will be removed in a future PyTorch release. Please use "
               "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead")
    return _T().linalg.matrix_norm(input, "nuc", dim=dim, keepdim=keepdim)


def _set_matmul_precision(precision):
    if precision in ("highest", "high", "medium"):
        _MATMUL[0] = precision
    else:
        warnings.warn("%s is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect." % precision, UserWarning,
                      stacklevel=2)     # (float32 matmuls stay exact: numpy has one precision)


def namespace():
    """The torch-level names this module provides (merged into tapegrad's namespace)."""
    ns = {n: getattr(Tensor, n) for n in INPLACE_NAMES if hasattr(Tensor, n)}
    ns.update(matrix_exp=matrix_exp, diagflat=diagflat, cartesian_prod=cartesian_prod,
              combinations=combinations, vander=vander,
              cumulative_trapezoid=cumulative_trapezoid, gradient=gradient, i0=i0, renorm=renorm,
              select_scatter=select_scatter, slice_scatter=slice_scatter,
              diagonal_scatter=diagonal_scatter, index_reduce=index_reduce, put=put,
              ldexp=ldexp, frexp=frexp, gcd=gcd, lcm=lcm, rsub=rsub, fill=fill, detach=detach,
              histogram=histogram, unravel_index=unravel_index, typename=typename, range=_range,
              asarray=asarray, is_same_size=is_same_size, is_inference=is_inference,
              split_with_sizes=lambda input, split_sizes, dim=0: _T().split(
                  input, list(split_sizes), dim),
              is_signed=lambda input: input.is_signed(), adjoint=lambda input: input.adjoint())
    ns.update(_copies())
    ns.update({nm: _removed(nm, msg) for nm, msg in _REMOVED.items()})
    ns.update(svd=svd, qr=qr, triangular_solve=triangular_solve, hann_window=hann_window, hamming_window=hamming_window,
              blackman_window=blackman_window, bartlett_window=bartlett_window,
              kaiser_window=kaiser_window, is_anomaly_enabled=_an.is_anomaly_enabled,
              is_anomaly_check_nan_enabled=_an.is_anomaly_check_nan_enabled,
              is_inference_mode_enabled=lambda: False, get_device=lambda t: -1,
              get_float32_matmul_precision=lambda: _MATMUL[0],
              set_float32_matmul_precision=_set_matmul_precision,
              frobenius_norm=frobenius_norm, nuclear_norm=nuclear_norm)
    ns.update(strided=strided, layout=layout, empty_strided=empty_strided,
              is_neg=lambda input: False, is_distributed=lambda input: False,
              conj_physical_=lambda input: input.conj_physical_(),
              addmm_=None)
    del ns["addmm_"]
    ns.update(as_strided=as_strided, as_strided_scatter=as_strided_scatter, igamma=igamma,
              igammac=igammac)
    ns.update(angle=angle, nonzero_static=nonzero_static, unsafe_split=unsafe_split,
              unsafe_chunk=unsafe_chunk, unsafe_split_with_sizes=unsafe_split_with_sizes,
              split_copy=split_copy, split_with_sizes_copy=split_with_sizes_copy)
    return ns
