"""THE op table: one row per primitive, and the generator of the interpreter's dispatch.

Each row declares, once: the opcode (its position in ``OPS``), the calling-convention *kind*,
the Numba kernel pair ``kernels.fwd_<name>`` / ``kernels.vjp_<name>``, the default grad_fn
name PyTorch shows for it, the numpy reference used for the eager forward and for tests, what
the VJP needs saved, and a test domain. ``_interp.py`` is generated from this table
(``python -m tapegrad.ops`` rewrites it; ``tests/test_interp_generated.py`` fails when the
checked-in file is stale).

Adding a primitive: write ``fwd_<name>``/``vjp_<name>`` in ``kernels.py``, add a row here,
regenerate ``_interp.py``, expose it in ``tensor.py``. The op tests pick the row up by
themselves (see docs/adding_an_op.md).
"""
import math
import operator
from dataclasses import dataclass, field
from typing import Callable, Optional, Tuple

import numpy as np

from ._schema import BINARY, CAST, INDEX, KIND_CODES, MM, PYFUNC, SUM, UNARY  # noqa: F401
from ._compiled import _vmath



def _never(na, nb):
    return (False, False, False)


@dataclass(frozen=True)
class Op:
    name: str            # kernels fwd_<name> / vjp_<name>; facade method name
    kind: str            # calling convention
    grad_fn: str         # default torch node name (the facade may pick a variant, e.g. MeanBackward0)
    ref: Optional[Callable] = None   # numpy reference forward (eager forward and tests)
    # unary: which of "x" (input) / "y" (output) the VJP reads.
    saves: str = ""
    # binary: (need_a, need_b) -> (save a, save b, save y)
    saves_fn: Callable = field(default=_never)
    # numpy VJP for entries touching big nodes (numpy's SIMD ufuncs / BLAS; chunks run on all
    # cores). unary: (g, x, y, c, out) writes gx into out; binary: (g, a, b, y, outa, outb)
    # writes the wanted gradients (an out is None when not wanted; unsaved operands are None);
    # sum: (g, c, n) -> gx (a read-only broadcast view: no fill pass); mm: (g, a, b, na, nb)
    # -> (ga, gb) as 2-D arrays.
    np_vjp: Optional[Callable] = None
    # binary rows whose gradients are +-g itself: (sign for a, sign for b) (add, sub)
    vjp_sign: Optional[Tuple[int, int]] = None
    # forward into a preallocated output, for chunked parallel evaluation:
    # unary (x, c, out); binary (a, b, out)
    fwd_out: Optional[Callable] = None
    # differentiable VJP with Tensor operations, for create_graph=True (T: tapegrad.tensor).
    # unary (T, g, x, y, c) -> gx; binary (T, g, a, b, y) -> (ga, gb); operands are flat
    # tensors bound to the recorded nodes (saved values), so the backward pass is recorded too.
    vjp_t: Optional[Callable] = None
    # entries of at least this many elements run their VJP on numpy (F_BIG) even below
    # tape.BIG: rows whose VJP kernel evaluates a transcendental per element (numba here has
    # no SVML, so math.cos & co. are scalar libm calls, ~15-20 ns each, against numpy's SIMD
    # ufuncs); 0: never (the kernel vectorises or is cheap)
    np_vjp_from: int = 0
    # the compiled VJP kernel evaluates its transcendental on libmvec when ``_native.vmath()``
    # has filled the native table (``kernels._vm_vjp``): then np_vjp_from does not apply below
    # tape.BIG (the entry stays in the compiled sweep instead of a trip through Python)
    native_vjp: bool = False
    # the row has vector-math kernels (``_vmath``: libmvec on every core) for its forward and
    # VJP on big contiguous float operands; numpy is the fallback where they are unavailable
    vm: bool = False
    # no Tensor call records the row: only the batched plans emit it (func's _fold_scalars);
    # the facade tests and tapegrad.testing's strategies leave it out, the kernel tests cover it
    plan_only: bool = False
    # a unary row over consecutive rows of c elements (softmax, log_softmax; c: the row
    # length, the output as big as the input): not elementwise, so the numpy sweep does not
    # split it into chunks and the batched sweeps call its own kernels (bfwd_/bvjp_<name>)
    rows: bool = False
    # eager forward through the compiled kernel above 64 elements (numpy's reference is slower
    # or rounds differently there): gelu, elu, softplus ... (``_math.unary``)
    kernel_fwd: bool = False
    domain: Tuple[float, float] = (-2.0, 2.0)   # test inputs drawn from here
    const: Optional[float] = None               # test constant for rows that take one (pow_scalar)
    doc: str = ""
    opcode: int = -1                            # its index in OPS (set below)


def _sigmoid(x, c=None):
    return np.where(x >= 0, 1.0 / (1.0 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x)))).astype(x.dtype)


def _relu(x, c=None):
    return np.maximum(np.zeros((), x.dtype), x)     # (numpy's tie: the second, x: -0.0 stays)


def _pow_scalar_vjp(g, x, y, c, out):
    if c == 0.0:
        out[...] = 0
    elif c == 2.0:
        np.add(x, x, out=out)
        out *= g
    else:
        np.power(x, x.dtype.type(c - 1), out=out)
        out *= x.dtype.type(c)
        out *= g


def _pow_scalar_fwd(x, c, out):
    if c == 2.0:
        np.square(x, out=out)
    else:
        np.power(x, x.dtype.type(c), out=out)


def _pow_vjp(g, a, b, y, outa, outb):
    if outa is not None:         # b a^(b-1), 0 where b == 0
        np.subtract(b, 1, out=outa)
        np.power(a, outa, out=outa)
        outa *= b
        outa *= g
        outa[np.broadcast_to(b == 0, outa.shape)] = 0
    if outb is not None:         # a^b log(a), 0 where a == 0 and b >= 0
        np.log(a, out=outb)
        outb *= y
        outb *= g
        outb[np.broadcast_to((a == 0) & (b >= 0), outb.shape)] = 0


def _div_vjp(g, a, b, y, outa, outb):
    if outa is not None:
        np.divide(g, b, out=outa)
    if outb is not None:         # -g a / b^2
        np.multiply(b, b, out=outb)
        np.divide(a, outb, out=outb)
        outb *= g
        np.negative(outb, out=outb)


def _mul_vjp(g, a, b, y, outa, outb):
    if outa is not None:
        np.multiply(g, b, out=outa)
    if outb is not None:
        np.multiply(g, a, out=outb)


def _chain(*steps):
    """An out-style unary VJP from steps f(g, x, y, c, out) applied in order."""
    def vjp(g, x, y, c, out):
        for step in steps:
            step(g, x, y, c, out)
    return vjp


def _vec(f, dtype_from_x=True):
    """A numpy reference from a scalar math function (float64 math, cast to x's dtype)."""
    vf = np.vectorize(f, otypes=[np.float64])

    def ref(x, c=None):
        return vf(x).astype(x.dtype) if np.ndim(x) else x.dtype.type(vf(x))
    return ref


def _lgamma(v):
    """math.lgamma with torch's inf at the poles (0 and the negative integers)."""
    try:
        return math.lgamma(v)
    except ValueError:
        return math.inf


def _np_sig(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _sign0(x):
    """sign with nan -> 0 (torch)."""
    return np.where(x > 0, 1, np.where(x < 0, -1, 0)).astype(x.dtype)


def _step_ref(x, c):
    return [np.floor, np.ceil, np.rint, np.trunc, _sign0][int(c)](x)


def _gelu_ref(x, c):
    xd = np.asarray(x, np.float64)
    if c == 0.0:
        y = 0.5 * xd * (1.0 + _vec(math.erf)(xd * 0.7071067811865476))
    else:
        y = 0.5 * xd * (1.0 + np.tanh(0.7978845608028654 * (xd + 0.044715 * xd ** 3)))
    return np.asarray(y).astype(x.dtype)


def _gelu_vjp(g, x, y, c, out):
    xd = np.asarray(x, np.float64)
    if c == 0.0:
        d = 0.5 * (1.0 + _vec(math.erf)(xd * 0.7071067811865476)) + \
            xd * 0.3989422804014327 * np.exp(-0.5 * xd * xd)
    else:
        t = np.tanh(0.7978845608028654 * (xd + 0.044715 * xd ** 3))
        d = 0.5 * (1 + t) + 0.5 * xd * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * xd * xd)
    np.multiply(g, d, out=out, casting="unsafe")


def _softplus_ref(x, c):
    z = x * x.dtype.type(c)
    y = (np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))) / x.dtype.type(c)
    return np.where(z > 20, x, y).astype(x.dtype)


def _masked(mask_fn, scale_fn=None):
    """out = g where mask else 0 (no g * 0 products: inf cotangents stay out of masked places)."""
    def vjp(g, x, y, c, out):
        out[...] = 0
        np.copyto(out, g if scale_fn is None else scale_fn(g, x, y, c), where=mask_fn(x, y, c))
    return vjp


# torch's hardsigmoid gradient constant: the float 1/6, for double too
_SIXTH_F32 = float(np.float32(1.0 / 6.0))


def _hardsigmoid_ref(x):
    """clamp((x + 3) / 6, 0, 1) in x's dtype, as torch computes it (nan stays nan)."""
    t = x.dtype.type
    return (np.minimum(np.maximum(x + t(3), t(0)), t(6)) / t(6)).astype(x.dtype)


def _leaky_vjp(g, x, y, c, out):
    np.multiply(g, np.where(x > 0, 1, x.dtype.type(c)), out=out)


def _elu_vjp(g, x, y, c, out):
    np.multiply(g, np.where(x > 0, 1, y + y.dtype.type(c)), out=out)


def _smooth_l1_vjp(g, x, y, c, out):
    np.multiply(g, np.clip(x / x.dtype.type(c), -1, 1), out=out)


def _max_vjp(cmp):
    def vjp(g, a, b, y, outa, outb):
        eq = a == b
        half = g * g.dtype.type(0.5)
        if outa is not None:        # (a nan operand: both get g, as torch)
            np.copyto(outa, np.where(eq, half, np.where(cmp(b, a), 0, g)))
        if outb is not None:
            np.copyto(outb, np.where(eq, half, np.where(cmp(a, b), 0, g)))
    return vjp


def _atan2_vjp(g, a, b, y, outa, outb):
    d = a * a + b * b
    with np.errstate(all="ignore"):
        r = np.where(d == 0, g * 0, g / d)       # (0, 0): 0, as torch
    if outa is not None:
        np.multiply(r, b, out=outa)
    if outb is not None:
        np.multiply(r, a, out=outb)
        np.negative(outb, out=outb)


def _hypot_vjp(g, a, b, y, outa, outb):
    r = g / y
    if outa is not None:
        np.multiply(r, a, out=outa)
    if outb is not None:
        np.multiply(r, b, out=outb)


def _remainder_vjp(g, a, b, y, outa, outb):
    if outa is not None:
        np.copyto(outa, np.broadcast_to(g, outa.shape))
    if outb is not None:
        with np.errstate(all="ignore"):     # torch's div(a, b, 'floor'): numpy's floor_divide
            np.multiply(g, np.floor_divide(a, b), out=outb)
        np.negative(outb, out=outb)


def _remainder_ref(a, b):
    """torch's remainder (its CPU kernel's, as fwd_remainder's): fmod, moved by b where the
    signs differ; a zero keeps the sign of a (numpy's remainder gives it b's)."""
    with np.errstate(all="ignore"):
        r = np.fmod(a, b)
        return np.where((r != 0) & ((r < 0) != (b < 0)), r + b, r).astype(r.dtype)


def _np_polygamma(k, x):
    """numpy polygamma (the kernels' algorithm through their scalar helper)."""
    from ._compiled import _cache, kernels  # deferred: Numba machine code, loaded on first use
    # the kernels' scalar helper, called from here through its Python-callable twin (or as
    # plain Python while the compiled code is not in use: _compiled/_cache.py)
    _polygamma = (kernels.python_twin(kernels._polygamma, cache=True) if _cache.ON
                  else kernels.pure_python(kernels._polygamma))
    xs = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):     # poles and overflow are values (inf), as torch's
        return np.vectorize(lambda v: _polygamma(int(k), float(v)), otypes=[np.float64])(xs)


def _log_sigmoid_ref(x, c=None):
    return (np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))).astype(x.dtype)


def _embed_ref(x, off, m):
    y = np.zeros(m, x.dtype)
    y[off:off + x.size] = x.ravel()
    return y


def _transpose_ref(x, r):
    x = x.ravel()
    return np.ascontiguousarray(x.reshape(r, -1).T).ravel() if r else x.copy()


_NPVJP = 2048   # see Op.np_vjp_from (at 10,000 float32: compiled sin VJP ~200 us, numpy ~25 us)


def _u(f):
    """Adapt a one-argument numpy function to the unary reference signature ref(x, c)."""
    return lambda x, c=None: f(x)


def _rows(v, c):
    return v.reshape(-1, int(c))


def _row_shifted(x, c):
    """x - its row maxima, rows of c elements."""
    z = _rows(x, c)
    return z - z.max(axis=1, keepdims=True)


def _softmax_ref(x, c):
    e = np.exp(_row_shifted(x, c))
    return (e / e.sum(axis=1, keepdims=True)).reshape(np.shape(x))


def _log_softmax_ref(x, c):
    z = _row_shifted(x, c)
    return (z - np.log(np.exp(z).sum(axis=1, keepdims=True))).reshape(np.shape(x))


def _softmax_vjp(g, x, y, c, out):
    if out.size == c and _vmath.one_row(y, g):      # one big row: on every core
        _vmath.softmax_row_vjp(g, y, out, False)
        return
    gy = _rows(g * y, c)
    np.multiply(y, (_rows(g, c) - gy.sum(axis=1, keepdims=True)).reshape(-1), out=out)


def _log_softmax_vjp(g, x, y, c, out):
    if out.size == c and _vmath.one_row(y, g):
        _vmath.softmax_row_vjp(g, y, out, True)
        return
    s = _rows(g, c).sum(axis=1, keepdims=True)
    np.subtract(g, (np.exp(_rows(y, c)) * s).reshape(-1), out=out)


def broadcast1(v, n):
    """A read-only view repeating the one element of array ``v`` n times (stride 0): what
    ``np.broadcast_to(v, (n,))`` gives, through one ndarray constructor call (2x cheaper)."""
    r = np.ndarray((n,), v.dtype, v, 0, (0,))
    r.flags.writeable = False
    return r


def _mm_vjp(g, a, b, na, nb, oa=None, ob=None):
    """(g b^T, a^T g) of ``mm`` for the numpy sweep (F_BIG entries): big products through
    ``_blas.mm`` (one thread pool with the elementwise kernels), the others through numpy.
    oa / ob: C-contiguous arrays of a's / b's shape the product is added into (None is then
    returned in its place) instead of being returned as a new array. Both wanted: the two
    products side by side (``_blas.mm2``)."""
    from ._compiled import _blas  # deferred: Numba machine code, loaded on first use
    if _blas.OK and g.size * (a.shape[1] if a is not None else b.shape[0]) >= _blas.MIN:
        if na and nb:                  # both: side by side, one per core
            return _blas.mm2((g, b, False, True, oa), (a, g, True, False, ob))
        return (_blas.mm(g, b, tb=True, out=oa) if na else None,
                _blas.mm(a, g, ta=True, out=ob) if nb else None)
    ga = gb = None
    if na:
        ga = g @ b.T
        if oa is not None:
            oa += ga
            ga = None
    if nb:
        gb = a.T @ g
        if ob is not None:
            ob += gb
            gb = None
    return ga, gb


OPS = [
    # ---- unary elementwise: y = f(x; c)
    Op("neg", UNARY, "NegBackward0", _u(np.negative), doc="-x",
       np_vjp=lambda g, x, y, c, out: np.negative(g, out=out),
       fwd_out=lambda x, c, out: np.negative(x, out=out), vm=True),
    Op("exp", UNARY, "ExpBackward0", _u(np.exp), saves="y",
       np_vjp=lambda g, x, y, c, out: np.multiply(g, y, out=out),
       fwd_out=lambda x, c, out: np.exp(x, out=out), vm=True),
    Op("log", UNARY, "LogBackward0", _u(np.log), saves="x", domain=(0.1, 3.0),
       np_vjp=lambda g, x, y, c, out: np.divide(g, x, out=out),
       fwd_out=lambda x, c, out: np.log(x, out=out), vm=True),
    Op("sin", UNARY, "SinBackward0", _u(np.sin), saves="x",
       np_vjp=_chain(lambda g, x, y, c, out: np.cos(x, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out)),
       fwd_out=lambda x, c, out: np.sin(x, out=out), np_vjp_from=_NPVJP,
       native_vjp=True, vm=True),
    Op("cos", UNARY, "CosBackward0", _u(np.cos), saves="x",
       np_vjp=_chain(lambda g, x, y, c, out: np.sin(x, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out),
                     lambda g, x, y, c, out: np.negative(out, out=out)),
       fwd_out=lambda x, c, out: np.cos(x, out=out), np_vjp_from=_NPVJP,
       native_vjp=True, vm=True),
    Op("tanh", UNARY, "TanhBackward0", _u(np.tanh), saves="y",
       np_vjp=_chain(lambda g, x, y, c, out: np.multiply(y, y, out=out),
                     lambda g, x, y, c, out: np.subtract(1, out, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out)),
       fwd_out=lambda x, c, out: np.tanh(x, out=out), vm=True),
    Op("sigmoid", UNARY, "SigmoidBackward0", _sigmoid, saves="y",
       np_vjp=_chain(lambda g, x, y, c, out: np.subtract(1, y, out=out),
                     lambda g, x, y, c, out: np.multiply(out, y, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out)), vm=True),
    Op("relu", UNARY, "ReluBackward0", _relu, saves="y", domain=(0.05, 2.0),
       np_vjp=lambda g, x, y, c, out: np.multiply(g, ~(y <= 0), out=out),   # (torch: nan passes)
       fwd_out=lambda x, c, out: np.maximum(x.dtype.type(0), x, out=out), vm=True),
    Op("sqrt", UNARY, "SqrtBackward0", _u(np.sqrt), saves="y", domain=(0.1, 3.0),
       np_vjp=_chain(lambda g, x, y, c, out: np.add(y, y, out=out),
                     lambda g, x, y, c, out: np.divide(g, out, out=out)),
       fwd_out=lambda x, c, out: np.sqrt(x, out=out), vm=True),
    Op("abs", UNARY, "AbsBackward0", _u(np.abs), saves="x", domain=(0.05, 2.0),
       np_vjp=_chain(lambda g, x, y, c, out: np.sign(x, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out)),
       fwd_out=lambda x, c, out: np.abs(x, out=out), vm=True),
    Op("pow_scalar", UNARY, "PowBackward0", lambda x, c: np.power(x, x.dtype.type(c)), saves="x",
       domain=(0.1, 2.0), const=2.5, doc="x ** c for a Python number c",
       np_vjp=_pow_scalar_vjp, fwd_out=_pow_scalar_fwd, vm=True),
    # ---- further elementwise rows, unary
    Op("tan", UNARY, "TanBackward0", _u(np.tan), saves="y", domain=(-1.2, 1.2),
       np_vjp=_chain(lambda g, x, y, c, out: np.multiply(y, y, out=out),
                     lambda g, x, y, c, out: np.add(out, 1, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out)),
       fwd_out=lambda x, c, out: np.tan(x, out=out), vm=True),
    Op("asin", UNARY, "AsinBackward0", _u(np.arcsin), saves="x", domain=(-0.9, 0.9),
       np_vjp=lambda g, x, y, c, out: np.divide(g, np.sqrt(1 - x * x), out=out),
       fwd_out=lambda x, c, out: np.arcsin(x, out=out), vm=True),
    Op("acos", UNARY, "AcosBackward0", _u(np.arccos), saves="x", domain=(-0.9, 0.9),
       np_vjp=lambda g, x, y, c, out: np.divide(-g, np.sqrt(1 - x * x), out=out),
       fwd_out=lambda x, c, out: np.arccos(x, out=out), vm=True),
    Op("atan", UNARY, "AtanBackward0", _u(np.arctan), saves="x",
       np_vjp=lambda g, x, y, c, out: np.divide(g, 1 + x * x, out=out),
       fwd_out=lambda x, c, out: np.arctan(x, out=out), vm=True),
    Op("sinh", UNARY, "SinhBackward0", _u(np.sinh), saves="x",
       np_vjp=lambda g, x, y, c, out: np.multiply(g, np.cosh(x), out=out),
       fwd_out=lambda x, c, out: np.sinh(x, out=out), np_vjp_from=_NPVJP,
       native_vjp=True, vm=True),
    Op("cosh", UNARY, "CoshBackward0", _u(np.cosh), saves="x",
       np_vjp=lambda g, x, y, c, out: np.multiply(g, np.sinh(x), out=out),
       fwd_out=lambda x, c, out: np.cosh(x, out=out), np_vjp_from=_NPVJP,
       native_vjp=True, vm=True),
    Op("erf", UNARY, "ErfBackward0", _vec(math.erf), saves="x",
       np_vjp=lambda g, x, y, c, out: np.multiply(g, 1.1283791670955126 * np.exp(-x * x), out=out,
                                                  casting="unsafe"), np_vjp_from=_NPVJP,
       native_vjp=True, vm=True, kernel_fwd=True),
    Op("log1p", UNARY, "Log1PBackward0", _u(np.log1p), saves="x", domain=(-0.5, 2.0),
       np_vjp=lambda g, x, y, c, out: np.divide(g, 1 + x, out=out),
       fwd_out=lambda x, c, out: np.log1p(x, out=out), vm=True),
    Op("expm1", UNARY, "Expm1Backward0", _u(np.expm1), saves="y",
       np_vjp=lambda g, x, y, c, out: np.multiply(g, y + 1, out=out),
       fwd_out=lambda x, c, out: np.expm1(x, out=out), vm=True),
    Op("scale", UNARY, "MulBackward0", lambda x, c: x * x.dtype.type(c), const=1.7,
       doc="c * x for a constant c (log2, log10, exp2, var's 1/(n - correction) ...)",
       np_vjp=lambda g, x, y, c, out: np.multiply(g, g.dtype.type(c), out=out),
       fwd_out=lambda x, c, out: np.multiply(x, x.dtype.type(c), out=out), vm=True,
       kernel_fwd=True),
    Op("step", UNARY, "FloorBackward0", _step_ref, const=0.0, domain=(-2.7, 2.7),
       doc="piecewise constant, zero gradient: c = 0 floor, 1 ceil, 2 round, 3 trunc, 4 sign",
       np_vjp=lambda g, x, y, c, out: out.fill(0), kernel_fwd=True),
    Op("clamp_min", UNARY, "ClampBackward1", lambda x, c: np.maximum(x.dtype.type(c), x), saves="x",
       const=0.7, np_vjp=_masked(lambda x, y, c: x >= c),
       fwd_out=lambda x, c, out: np.maximum(x.dtype.type(c), x, out=out), kernel_fwd=True),
    Op("clamp_max", UNARY, "ClampBackward1", lambda x, c: np.minimum(x.dtype.type(c), x), saves="x",
       const=0.7, np_vjp=_masked(lambda x, y, c: x <= c),
       fwd_out=lambda x, c, out: np.minimum(x.dtype.type(c), x, out=out), kernel_fwd=True),
    Op("leaky_relu", UNARY, "LeakyReluBackward0",
       lambda x, c: np.where(x > 0, x, x * x.dtype.type(c)), saves="x", const=0.01,
       np_vjp=_leaky_vjp, kernel_fwd=True),
    Op("elu", UNARY, "EluBackward0",
       lambda x, c: np.where(x > 0, x, x.dtype.type(c) * np.expm1(np.minimum(0, x))), saves="xy",
       const=1.0, np_vjp=_elu_vjp, kernel_fwd=True),
    Op("gelu", UNARY, "GeluBackward0", _gelu_ref, saves="x", const=0.0,
       doc="c = 0: x Phi(x) (erf); c = 1: the tanh approximation", np_vjp=_gelu_vjp, np_vjp_from=_NPVJP,
       kernel_fwd=True),
    Op("silu", UNARY, "SiluBackward0", lambda x, c: (x * _np_sig(x)).astype(x.dtype), saves="x",
       np_vjp=lambda g, x, y, c, out: np.multiply(g, _np_sig(x) * (1 + x * (1 - _np_sig(x))),
                                                  out=out, casting="unsafe"), kernel_fwd=True),
    Op("softplus", UNARY, "SoftplusBackward0", _softplus_ref, saves="x", const=1.0,
       doc="log1p(exp(c x)) / c (beta c), x where c x > 20 (torch's threshold)",
       np_vjp=lambda g, x, y, c, out: np.multiply(
           g, np.where(x * c > 20, 1, _np_sig(x * x.dtype.type(c))), out=out, casting="unsafe"),
           kernel_fwd=True),
    Op("log_sigmoid", UNARY, "LogSigmoidBackward0", _log_sigmoid_ref, saves="x",
       np_vjp=lambda g, x, y, c, out: np.multiply(g, _np_sig(-x), out=out, casting="unsafe"),
       kernel_fwd=True),
    Op("smooth_l1", UNARY, "SmoothL1LossBackward0",
       lambda x, c: np.where(np.abs(x) < c, 0.5 * x * x / x.dtype.type(c),
                             np.abs(x) - x.dtype.type(0.5 * c)).astype(x.dtype),
       saves="x", const=1.0, doc="Huber-type elementwise loss with beta c > 0",
       np_vjp=_smooth_l1_vjp, kernel_fwd=True),
    Op("hardsigmoid", UNARY, "HardsigmoidBackward0", lambda x, c: _hardsigmoid_ref(x),
       saves="x", domain=(-4.0, 4.0),
       doc="clamp((x + 3) / 6, 0, 1); gradient torch's float 1/6 strictly inside (-3, 3)",
       np_vjp=_masked(lambda x, y, c: (x > -3) & (x < 3),
                      lambda g, x, y, c: g * g.dtype.type(_SIXTH_F32)),
       fwd_out=lambda x, c, out: np.copyto(out, _hardsigmoid_ref(x))),
    Op("lgamma", UNARY, "LgammaBackward0", _vec(_lgamma), saves="x", domain=(0.3, 4.0),
       np_vjp=lambda g, x, y, c, out: np.multiply(g, _np_polygamma(0, x), out=out, casting="unsafe")),
    Op("polygamma", UNARY, "PolygammaBackward0", lambda x, c: _np_polygamma(int(c), x).astype(x.dtype),
       saves="x", const=1.0, domain=(0.3, 4.0), doc="psi^(c)(x) (c = 0: digamma)",
       np_vjp=lambda g, x, y, c, out: np.multiply(g, _np_polygamma(int(c) + 1, x), out=out,
                                                  casting="unsafe")),
    # ---- row by row: y[r] = f(x[r]) for consecutive rows of c elements
    Op("softmax", UNARY, "SoftmaxBackward0", lambda x, c: _softmax_ref(x, c), saves="y",
       const=7.0, rows=True, doc="exp(x - max) / sum over rows of c elements (softmax along "
       "the last dimension)", np_vjp=_softmax_vjp),
    Op("log_softmax", UNARY, "LogSoftmaxBackward0", lambda x, c: _log_softmax_ref(x, c),
       saves="y", const=7.0, rows=True, doc="x - max - log(sum(exp(x - max))) over rows of c "
       "elements", np_vjp=_log_softmax_vjp),
    # ---- scalar-constant forms of add / sub: the batched plans (func.CompiledTape._bplan)
    # rewrite a binary entry whose other operand is a recorded scalar constant to these
    # (no numpy forms or vjp_t: those serve eager tapes, which never hold these rows)
    Op("add_scalar", UNARY, "AddBackward0", lambda x, c: x + x.dtype.type(c), const=1.7,
       doc="x + c for a recorded scalar constant c", plan_only=True,
       np_vjp=lambda g, x, y, c, out: np.copyto(out, g)),
    Op("rsub_scalar", UNARY, "RsubBackward1", lambda x, c: x.dtype.type(c) - x, const=1.7,
       doc="c - x for a recorded scalar constant c", plan_only=True,
       np_vjp=lambda g, x, y, c, out: np.negative(g, out=out)),
    # ---- binary elementwise with single-element broadcast: y = f(a, b)
    # (operator forms: numpy's scalar fast path for 0-dim values, ufuncs for arrays)
    Op("add", BINARY, "AddBackward0", operator.add, vjp_sign=(1, 1),
       fwd_out=lambda a, b, out: np.add(a, b, out=out), vm=True),
    Op("sub", BINARY, "SubBackward0", operator.sub, vjp_sign=(1, -1),
       fwd_out=lambda a, b, out: np.subtract(a, b, out=out), vm=True),
    Op("mul", BINARY, "MulBackward0", operator.mul, saves_fn=lambda na, nb: (nb, na, False),
       np_vjp=_mul_vjp, fwd_out=lambda a, b, out: np.multiply(a, b, out=out), vm=True),
    Op("div", BINARY, "DivBackward0", operator.truediv, saves_fn=lambda na, nb: (nb, na or nb, False),
       domain=(0.2, 2.0), np_vjp=_div_vjp, fwd_out=lambda a, b, out: np.divide(a, b, out=out), vm=True),
    Op("pow", BINARY, "PowBackward1", np.power, saves_fn=lambda na, nb: (True, True, nb),
       domain=(0.2, 2.0), np_vjp=_pow_vjp, fwd_out=lambda a, b, out: np.power(a, b, out=out)),
    # ---- further elementwise rows, binary
    # (a tie of -0.0 with +0.0 gives b's zero, as numpy and torch's vectorized kernel; torch's
    # scalar loop, below 8 elements and in a tensor's tail, gives a's: no one sign to follow)
    Op("maximum", BINARY, "MaximumBackward0", np.maximum, saves_fn=lambda na, nb: (True, True, False),
       np_vjp=_max_vjp(np.greater), fwd_out=lambda a, b, out: np.maximum(a, b, out=out)),
    Op("minimum", BINARY, "MinimumBackward0", np.minimum, saves_fn=lambda na, nb: (True, True, False),
       np_vjp=_max_vjp(np.less), fwd_out=lambda a, b, out: np.minimum(a, b, out=out)),
    Op("atan2", BINARY, "Atan2Backward0", np.arctan2, saves_fn=lambda na, nb: (True, True, False),
       domain=(0.2, 2.0), doc="branch cut at b < 0, a = 0: the test domain keeps away from it",
       np_vjp=_atan2_vjp, fwd_out=lambda a, b, out: np.arctan2(a, b, out=out)),
    Op("hypot", BINARY, "HypotBackward0", np.hypot, saves_fn=lambda na, nb: (na, nb, True),
       np_vjp=_hypot_vjp, fwd_out=lambda a, b, out: np.hypot(a, b, out=out)),
    Op("remainder", BINARY, "RemainderBackward1", _remainder_ref,
       saves_fn=lambda na, nb: (nb, nb, False), domain=(0.2, 2.0), np_vjp=_remainder_vjp,
       fwd_out=lambda a, b, out: np.copyto(out, _remainder_ref(a, b))),
    # ---- reductions
    Op("sum", SUM, "SumBackward0", lambda x, c: (np.sum(x) * x.dtype.type(c)).astype(x.dtype),
       doc="c * sum(x): sum (c=1) and mean (c=1/n)",
       np_vjp=lambda g, c, n: broadcast1(g[:1] * g.dtype.type(c), n)),
    # ---- index maps (forward is done by numpy views in the facade; idx drives the VJP)
    Op("gather", INDEX, "IndexBackward0", lambda x, idx, c, m: x.ravel()[idx],
       doc="y[i] = x[idx[i]]: expand, slicing, select, transpose, permute"),
    Op("segsum", INDEX, "SumBackward1",
       lambda x, idx, c, m: (np.bincount(idx, x.ravel(), minlength=m) * c).astype(x.dtype),
       doc="y[idx[i]] += c x[i]: sum/mean over dims, un-broadcast"),
    Op("copy", INDEX, "ViewBackward0", lambda x, idx, c, m: x.ravel().copy(),
       doc="identity: view, reshape, unbind, clone"),
    # offset rows: a contiguous range whose element offset is the entry's P0 (no index array;
    # their reference takes that offset where the others take idx); see OFFSET_OPS
    Op("slice", INDEX, "SliceBackward0", lambda x, off, c, m: x.ravel()[off:off + m].copy(),
       doc="y[i] = x[off + i]: basic slicing/select leaving a contiguous block (x[1:], x[2])"),
    Op("embed", INDEX, "SliceBackwardBackward0", lambda x, off, c, m: _embed_ref(x, off, m),
       doc="y = zeros(m); y[off:off + n] = x: slice's transpose (its recorded VJP)"),
    Op("transpose", INDEX, "TBackward0", lambda x, r, c, m: _transpose_ref(x, r),
       doc="y (c, r) = x (r, c)^T, r in P0 (no index array): t(), transpose, .T of a matrix"),
    # ---- matrix product
    Op("mm", MM, "MmBackward0", lambda a, b: a @ b, saves_fn=lambda na, nb: (nb, na, False),
       np_vjp=_mm_vjp,
       doc="(m,k)@(k,n); also dot and mv through flat storage"),
    # ---- structural rows handled by the interpreter itself
    Op("cast", CAST, "ToCopyBackward0", doc="dtype conversion between the float32/float64 stores"),
    Op("pyfunc", PYFUNC, "PyFunctionBackward", doc="custom autograd.Function: calls back into Python"),
]

# Differentiable VJPs (create_graph=True): the same derivative identities as the kernels,
# written with tensor operations. Index, sum, mm and cast rows are handled by the sweep in
# autograd/higher.py (they are linear: their VJP is another index map or product).
_VJP_T = {
    "neg": lambda T, g, x, y, c: -g,
    "exp": lambda T, g, x, y, c: g * y,
    "log": lambda T, g, x, y, c: g / x,
    "sin": lambda T, g, x, y, c: g * T.cos(x),
    "cos": lambda T, g, x, y, c: -(g * T.sin(x)),
    "tanh": lambda T, g, x, y, c: g * (1 - y * y),
    "sigmoid": lambda T, g, x, y, c: g * y * (1 - y),
    "relu": lambda T, g, x, y, c: g * (y <= 0).logical_not().to(g.dtype),
    "sqrt": lambda T, g, x, y, c: g / (2 * y),
    "abs": lambda T, g, x, y, c: g * ((x > 0).to(g.dtype) - (x < 0).to(g.dtype)),
    "pow_scalar": lambda T, g, x, y, c: (g * 0.0 if c == 0 else (g * 2.0) * x if c == 2
                                         else g * (c * x ** (c - 1))),
    "add": lambda T, g, a, b, y: (g, g),
    "sub": lambda T, g, a, b, y: (g, -g),
    "mul": lambda T, g, a, b, y: (None if b is None else g * b, None if a is None else g * a),
    "div": lambda T, g, a, b, y: (g / b, None if a is None else -(g * a) / (b * b)),
    "pow": lambda T, g, a, b, y: (g * b * a ** (b - 1), None if y is None else g * y * T.log(a)),
    # further elementwise rows
    "tan": lambda T, g, x, y, c: g * (1 + y * y),
    "asin": lambda T, g, x, y, c: g / (1 - x * x).sqrt(),
    "acos": lambda T, g, x, y, c: -(g / (1 - x * x).sqrt()),
    "atan": lambda T, g, x, y, c: g / (1 + x * x),
    "sinh": lambda T, g, x, y, c: g * x.cosh(),
    "cosh": lambda T, g, x, y, c: g * x.sinh(),
    "erf": lambda T, g, x, y, c: g * (1.1283791670955126 * (-(x * x)).exp()),
    "log1p": lambda T, g, x, y, c: g / (1 + x),
    "expm1": lambda T, g, x, y, c: g * (y + 1),
    "scale": lambda T, g, x, y, c: g * c,
    "step": lambda T, g, x, y, c: g * 0.0,
    "clamp_min": lambda T, g, x, y, c: g * (x >= c).to(g.dtype),
    "clamp_max": lambda T, g, x, y, c: g * (x <= c).to(g.dtype),
    "leaky_relu": lambda T, g, x, y, c: g * _mix(x > 0, 1.0, c, x.dtype),
    # torch's elu_double_backward masks with x < 0: the second derivative at 0 is 0
    "elu": lambda T, g, x, y, c: g * _where_t(x > 0, 1.0, _where_t(x < 0, y + c,
                                                                    (y + c).detach())),
    "gelu": lambda T, g, x, y, c: g * _gelu_d(x, c),
    "silu": lambda T, g, x, y, c: g * _silu_d(x),
    "softplus": lambda T, g, x, y, c: g * _where_t(x * c > 20, 1.0, (x * c).sigmoid()),
    "log_sigmoid": lambda T, g, x, y, c: g * (-x).sigmoid(),
    "smooth_l1": lambda T, g, x, y, c: g * (x / c).clamp(-1.0, 1.0),
    "hardsigmoid": lambda T, g, x, y, c: g * ((x > -3).to(g.dtype) * (x < 3).to(g.dtype)
                                              * _SIXTH_F32),
    "lgamma": lambda T, g, x, y, c: g * _pg(T, 0, x),
    "polygamma": lambda T, g, x, y, c: g * _pg(T, int(c) + 1, x),
    "maximum": lambda T, g, a, b, y: (g * _tie(a, b), g * _tie(b, a)),
    "minimum": lambda T, g, a, b, y: (g * _tie(b, a), g * _tie(a, b)),
    "atan2": lambda T, g, a, b, y: (g * b / (a * a + b * b), -(g * a) / (a * a + b * b)),
    "hypot": lambda T, g, a, b, y: (None if a is None else g * a / y, None if b is None else g * b / y),
    "remainder": lambda T, g, a, b, y: (g, None if a is None else
                                        -(g * a.div(b, rounding_mode="floor"))),
    "softmax": lambda T, g, x, y, c: _softmax_vjp_t(T, g, y, int(c), False),
    "log_softmax": lambda T, g, x, y, c: _softmax_vjp_t(T, g, y, int(c), True),
}


def _softmax_vjp_t(T, g, y, L, log):
    """The recorded VJP of (log_)softmax rows of L elements, as torch's node over
    (grad_output, output): ``SoftmaxBackwardDataBackward0`` y (g - sum(g y)), or
    ``LogSoftmaxBackwardDataBackward0`` g - exp(y) sum(g) (intermediates hidden). T: the
    functions ``vjp_t`` is given (autograd.higher)."""
    hide, named, tap_entry = T.hide, T.named, T.tap_entry
    gr, yr = tap_entry(g.view(-1, L), 0), tap_entry(y.view(-1, L), 1)
    if log:
        e, s = yr.exp(), gr.sum(1, keepdim=True)
        p = e * s
        r = gr - p
        hide(e, s, p)
    else:
        gy = gr * yr
        s = gy.sum(1, keepdim=True)
        d = gr - s
        r = yr * d
        hide(gy, s, d)
    return named(T.reshaped(r, (r._data.size,)),
                 "LogSoftmaxBackwardDataBackward0" if log else "SoftmaxBackwardDataBackward0", 2)


def _mix(mask, hi, lo, dtype):
    """A float tensor: hi where mask, else lo (numbers)."""
    return mask.to(dtype) * (hi - lo) + lo


def _where_t(mask, hi, lo_t):
    m = mask.to(lo_t.dtype)
    return m * hi + (1 - m) * lo_t


def _pg(T, k, x):
    return T.unary(x, "polygamma", c=float(k), name="PolygammaBackward0")


def _tie(a, b):
    """d max(a, b) / da: 0 where b > a, 1/2 where a == b, else 1 (a nan operand: 1)."""
    return 1 - (b > a).to(a.dtype) - 0.5 * (a == b).to(a.dtype)


def _gelu_d(x, c):
    if c == 0.0:
        return 0.5 * (1 + (x * 0.7071067811865476).erf()) + x * (-0.5 * x * x).exp() * 0.3989422804014327
    t = (0.7978845608028654 * (x + 0.044715 * x * x * x)).tanh()
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x)


def _silu_d(x):
    s = x.sigmoid()
    return s * (1 + x * (1 - s))
for _name, _f in _VJP_T.items():
    object.__setattr__(next(o for o in OPS if o.name == _name), "vjp_t", _f)


OPCODE = {op.name: i for i, op in enumerate(OPS)}
for _i, _op in enumerate(OPS):
    object.__setattr__(_op, "opcode", _i)
BY_NAME = {op.name: op for op in OPS}
# INDEX rows whose P0 is an element offset, not an offset into the tape's index array I (tape
# merging must not relocate it; numpy paths pass it to the row's reference instead of idx)
OFFSET_OPS = frozenset(OPCODE[name] for name in ("slice", "embed", "transpose"))
# Rows the differentiable-op tests are parametrized over (structural rows are tested by the facade).
KERNEL_OPS = [op for op in OPS if op.kind not in (CAST, PYFUNC)]
PLAN_ONLY = frozenset(op.name for op in OPS if op.plan_only)
KERNEL_FWD = frozenset(op.name for op in OPS if op.kernel_fwd)


# ----------------------------------------------------------------------------- generator
_HEADER = '''"""GENERATED from tapegrad/ops.py by `python -m tapegrad.ops` -- do not edit by hand.

The interpreter's dispatch: one branch per row of the op table. `reverse` sweeps a tape
backwards accumulating adjoints; `forward` replays it on new node values. Each is one
compiled function (its body emitted once per dtype store, float32 and float64), cached on
disk; no tape ever triggers a compilation.

Every kernel is called with two signatures per dtype: counts, offsets and strides int64 (`Z`,
`ONE`: literal numbers would be compiled as separate specialisations), and a literal count of
1 with unit strides (the scalar-plan sweeps and the step functions: straight-line code).
"""
import numpy as np
from numba import njit

from .._schema import (K, NK, OP, OUT, IA, IB, SA, SB, SY, P0, P1, CI, FL, NOFF, NSIZE, NDT,
                       F_FREED, F_SAVES, F_BIG, F_NPFWD, F_ALIAS, F_NOGA, F_NOGB)
from ._addr import INTERNAL
from .kernels import *  # noqa: F401,F403  (kernel pairs and tape accessors)
from .kernels import noff, operand, mark, raw

# the entry points Python calls (cached on disk); the batched sweeps, which only the batched
# driver's C callbacks call (``_driver.py``), are internal (``_addr.INTERNAL``)
_jit = njit(cache=True, nogil=True, error_model="numpy", no_cfunc_wrapper=True)
_jit_internal = njit(error_model="numpy", **INTERNAL)
_jit_inline = njit(nogil=True, error_model="numpy", inline="always")
Z = np.int64(0)       # an offset of 0 and a stride of 1, typed int64 (not Literal[int]: see
ONE = np.int64(1)     # the docstring)
'''

# Per kind: (lines fetching operands, kernel call, lines after) for the reverse sweep.
_REV = {
    UNARY: (["X_ = operand(live, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], n)",
             "Y_ = operand(live, X{d}, V{d}, XA{d}, N, out, E[b0 + SY], n)"],
            "vjp_{name}(n, A{d}, go, X_, Z, Y_, Z, c, A{d}, noff(N, a))",
            ["mark(N, nreach, ereach, a)"]),
    BINARY: (["sa = E[b0 + P0]", "sb = E[b0 + P1]",
              "A_ = operand(live, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], (n - 1) * sa + 1)",
              "B_ = operand(live, X{d}, V{d}, XA{d}, N, b, E[b0 + SB], (n - 1) * sb + 1)",
              "Y_ = operand(live, X{d}, V{d}, XA{d}, N, out, E[b0 + SY], n)"],
             "vjp_{name}(n, A{d}, go, A_, Z, {sa}, B_, Z, {sb}, Y_, Z, "
             "A{d}, noff(N, a), A{d}, noff(N, b), na, nb)",
             ["mark(N, nreach, ereach, a)", "mark(N, nreach, ereach, b)"]),
    SUM: ([], "vjp_{name}(N[a * NK + NSIZE], A{d}, go, c, A{d}, noff(N, a))",
          ["mark(N, nreach, ereach, a)"]),
    INDEX: ([], "vjp_{name}(E[b0 + P1], N[a * NK + NSIZE], A{d}, go, I, E[b0 + P0], c, "
                "A{d}, noff(N, a))",
            ["mark(N, nreach, ereach, a)"]),
    MM: (["m = E[b0 + P0]", "k = E[b0 + P1]",
          "A_ = operand(live, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], m * k)",
          "B_ = operand(live, X{d}, V{d}, XA{d}, N, b, E[b0 + SB], k * (n // m))"],
         "vjp_{name}(m, k, n // m, A{d}, go, A_, Z, B_, Z, A{d}, noff(N, a), "
         "A{d}, noff(N, b), na, nb)",
         ["mark(N, nreach, ereach, a)", "mark(N, nreach, ereach, b)"]),
}

# Per kind: (operand lines, kernel call) for the forward replay: inputs are live node values
# or recorded constants; the output is the node's slot in X.
_FWD = {
    UNARY: (["X_ = operand(True, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], n)"],
            "fwd_{name}(n, X_, Z, c, X{d}, yo)"),
    BINARY: (["sa = E[b0 + P0]", "sb = E[b0 + P1]",
              "A_ = operand(True, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], (n - 1) * sa + 1)",
              "B_ = operand(True, X{d}, V{d}, XA{d}, N, b, E[b0 + SB], (n - 1) * sb + 1)"],
             "fwd_{name}(n, A_, Z, {sa}, B_, Z, {sb}, X{d}, yo)"),
    SUM: ([], "fwd_{name}(N[a * NK + NSIZE], X{d}, noff(N, a), c, X{d}, yo)"),
    INDEX: ([], "fwd_{name}(E[b0 + P1], n, X{d}, noff(N, a), I, E[b0 + P0], c, X{d}, yo)"),
    MM: (["A_ = operand(True, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], E[b0 + P0] * E[b0 + P1])",
          "B_ = operand(True, X{d}, V{d}, XA{d}, N, b, E[b0 + SB], E[b0 + P1] * (n // E[b0 + P0]))"],
         "fwd_{name}(E[b0 + P0], E[b0 + P1], n // E[b0 + P0], A_, Z, B_, Z, X{d}, yo)"),
}


# The batched sweeps (slot-major chunks of B points; see kernels.py "batched forms").
# Per kind: (lines before, loop header or None, kernel call, lines after). Offsets are in
# batch units: yo / go = the output node's offset * B.
_BSPLIT = ["sa = E[b0 + P0]", "sb = E[b0 + P1]",
           "ao = noff(N, a) * B", "bo = noff(N, b) * B",
           # every operand is a node here (tapegrad.func gives recorded constants lanes of
           # their own), so lanes are contiguous: one call over all n * B values when both
           # operands are read contiguously, else one call of B lanes per element
           "whole = (sa == 1 or n == 1) and (sb == 1 or n == 1)",
           "nl, w = (1, n * B) if whole else (n, B)"]
_BFWD = {
    UNARY: ([], None, "fwd_{name}(n * B, X{d}, noff(N, a) * B, c, X{d}, yo)", []),
    BINARY: (_BSPLIT, "for i in range(nl):",
             "fwd_{name}(w, X{d}, ao + i * sa * B, ONE, X{d}, bo + i * sb * B, ONE, "
             "X{d}, yo + i * B)", []),
    SUM: ([], None, "bfwd_{name}(N[a * NK + NSIZE], X{d}, noff(N, a) * B, c, X{d}, yo, B)", []),
    INDEX: ([], None, "bfwd_{name}(E[b0 + P1], n, X{d}, noff(N, a) * B, I, E[b0 + P0], c, X{d}, yo, B)", []),
    MM: (["m = E[b0 + P0]", "k = E[b0 + P1]"], None,
         "bfwd_{name}(m, k, n // m, X{d}, noff(N, a) * B, X{d}, noff(N, b) * B, X{d}, yo, B)", []),
}
_BREV = {
    UNARY: ([], None, "vjp_{name}(n * B, A{d}, go, X{d}, noff(N, a) * B, X{d}, go, c, "
                      "A{d}, noff(N, a) * B)",
            ["mark(N, nreach, ereach, a)"]),
    BINARY: (_BSPLIT, "for i in range(nl):",
             "vjp_{name}(w, A{d}, go + i * B, X{d}, ao + i * sa * B, ONE, X{d}, bo + i * sb * B, "
             "ONE, X{d}, go + i * B, A{d}, ao + i * sa * B, A{d}, bo + i * sb * B, a < nreal, "
             "b < nreal)",
             ["mark(N, nreach, ereach, a)", "mark(N, nreach, ereach, b)"]),
    SUM: ([], None, "bvjp_{name}(N[a * NK + NSIZE], A{d}, go, c, A{d}, noff(N, a) * B, B)",
          ["mark(N, nreach, ereach, a)"]),
    INDEX: ([], None, "bvjp_{name}(E[b0 + P1], N[a * NK + NSIZE], A{d}, go, I, E[b0 + P0], c, "
                      "A{d}, noff(N, a) * B, B)",
            ["mark(N, nreach, ereach, a)"]),
    MM: (["m = E[b0 + P0]", "k = E[b0 + P1]"], None,
         "bvjp_{name}(m, k, n // m, A{d}, go, X{d}, noff(N, a) * B, X{d}, noff(N, b) * B, "
         "A{d}, noff(N, a) * B, A{d}, noff(N, b) * B, B)",
         ["mark(N, nreach, ereach, a)", "mark(N, nreach, ereach, b)"]),
}


# Row-wise unary rows (Op.rows: softmax) in the batched sweeps: their own kernels, which
# know the lane count B (elementwise rows run over n * B values as one flat array).
_BROWS = {
    "fwd": "bfwd_{name}(n, X{d}, noff(N, a) * B, c, X{d}, yo, B)",
    "rev": "bvjp_{name}(n, A{d}, go, X{d}, noff(N, a) * B, X{d}, go, c, A{d}, noff(N, a) * B, B)",
}


def _bbody(by_kind, table, d, ind):
    """The per-kind dispatch of a batched sweep for one dtype store."""
    out = []
    first = True
    for kind in (UNARY, BINARY, SUM, INDEX, MM):
        rows = by_kind.get(kind)
        if not rows:
            continue
        out.append("%s%s kind == %d:  # %s" % (ind, "if" if first else "elif", KIND_CODES[kind], kind))
        first = False
        pre, loop, call, post = table[kind]
        for line in pre:
            out.append(ind + "    " + line.replace("{d}", d))
        inner = ind + "    "
        if loop:
            out.append(inner + loop)
            inner += "    "
        call = call.replace("{d}", d)
        if kind == UNARY:
            rowcall = _BROWS["fwd" if table is _BFWD else "rev"].replace("{d}", d)
            out += _chain(rows, call, inner, None, rowcall)
        else:
            out += _chain(rows, call, inner, None)
        for line in post:
            out.append(ind + "    " + line)
    return out


# Binary kernels take element strides (1, or 0 for an operand broadcast from one element).
# One chain with the strides as run-time values: LLVM versions the kernels' loops on the
# strides (a unit-stride copy of each loop, vectorised, checked on entry), so the unit-stride
# chain with literal strides that the sweeps had is not needed; it cost a second compiled
# specialisation of every binary kernel per dtype and per sweep (issue 26: 209 of the first
# backward's 224 compilations were kernel specialisations).
_STRIDES = [(None, "sa", "sb")]


def _chain(rows, call, ind, strides, rowcall=None):
    """The op-code dispatch chain of one kind (per stride variant for binary kernels);
    ``rowcall``: the call for row-wise rows (Op.rows), when it differs."""
    out = []
    variants = strides or [(None, None, None)]
    for v, (cond, sa, sb) in enumerate(variants):
        inner = ind
        if strides and len(variants) > 1:
            out.append("%s%s" % (ind, ("if %s:" if v == 0 else "elif %s:") % cond if cond else "else:"))
            inner = ind + "    "
        c = call if sa is None else call.replace("{sa}", sa).replace("{sb}", sb)
        for i, (code, op) in enumerate(rows):
            out.append("%s%s op == %d:  # %s" % (inner, "if" if i == 0 else "elif", code, op.name))
            cc = rowcall if (rowcall is not None and op.rows) else c
            out.append("%s    %s" % (inner, cc.replace("{name}", op.name)))
    return out


# Single-element entries (scalar graphs: the micrograd case) go to a separate "step" function
# per kind whose kernel calls have a literal count of 1 (and unit strides): Numba compiles that
# specialisation of the kernel, which LLVM inlines as straight-line code. Called with a
# run-time count, a kernel keeps its vectorised loop with overlap and trip-count checks, which
# costs several times the arithmetic on one element (measured on a 979-entry scalar MLP
# replay: 2.7 us forward with literal counts against 11.5 us; a 4-entry scalar loop 5.4 ns
# against ~117 ns). The scalar-plan sweeps below call the kernels with the same literals, so
# both share one such specialisation per kernel and dtype. (Kernels marked ``forceinline``,
# one signature inlined everywhere, were measured too: the first backward's compile went from
# 46 to 59 s of CPU, LLVM optimising the sweeps with every kernel inlined, and the batched
# sweeps' from ~50 to ~130 s.)
# Per (direction, kind): (condition, step parameters, kernel call in the step, call site).
_STEP = {
    ("fwd", BINARY): ("n == 1", "op, A_, B_, Y, yo", "fwd_{name}(1, A_, Z, 1, B_, Z, 1, Y, yo)",
                      "(op, A_, B_, X{d}, yo)"),
    ("fwd", INDEX): ("E[b0 + P1] == 1", "op, m, X, xo, I, io, c, Y, yo",
                     "fwd_{name}(1, m, X, xo, I, io, c, Y, yo)",
                     "(op, n, X{d}, noff(N, a), I, E[b0 + P0], c, X{d}, yo)"),
    ("rev", BINARY): ("n == 1", "op, G, go, A_, B_, Y_, GA, gao, GB, gbo, na, nb",
                      "vjp_{name}(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)",
                      "(op, A{d}, go, A_, B_, Y_, A{d}, noff(N, a), A{d}, noff(N, b), na, nb)"),
    ("rev", INDEX): ("E[b0 + P1] == 1", "op, m, G, go, I, io, c, GX, gxo",
                     "vjp_{name}(1, m, G, go, I, io, c, GX, gxo)",
                     "(op, N[a * NK + NSIZE], A{d}, go, I, E[b0 + P0], c, A{d}, noff(N, a))"),
}


def _step_name(direction, kind):
    return "step_%s_%s" % (direction, kind)


def _steps(by_kind):
    """The step functions (one per direction and kind; generic over the dtype)."""
    out = []
    for (direction, kind), (_, params, call, _) in _STEP.items():
        rows = by_kind.get(kind)
        if not rows:
            continue
        out += ["", "", "@_jit_inline", "def %s(%s):" % (_step_name(direction, kind), params)]
        out += _chain(rows, call, "    ", None)
    return out


# The scalar-plan sweeps replay a tape whose entries all produce one element (a scalar graph:
# the micrograd case) from a pre-decoded table built once per recorded tape (tapegrad.func):
# one row of PK int64 per entry holding the operands' offsets in ONE value store (recorded
# constants are nodes of their own there), so an entry costs a few loads and one inlined
# kernel call with a literal count of 1: no node-table lookups, no operand views, no dtype or
# flag branches. Generic over the store's dtype (Numba compiles the dtype a tape uses, on its
# first replay). Columns of a row:
PK = 9
P_OP, P_KIND, P_Y, P_A, P_B, P_N, P_0, P_1, P_M = range(PK)
# P_N the output size (1), P_0 / P_1 the entry's P0 / P1 (index rows: I offset, index count;
# binary rows: P_0 bit 1 / bit 2 = operand a / b needs its gradient), P_M the size of
# operand a (sum and index rows). Kernel calls per kind (the rows a scalar plan admits):
_PFWD = {
    UNARY: "fwd_{name}(1, X, ao, c, X, yo)",
    BINARY: "fwd_{name}(1, X, ao, 1, X, bo, 1, X, yo)",
    SUM: "fwd_{name}(D[b0 + P_M], X, ao, c, X, yo)",
    INDEX: "fwd_{name}(D[b0 + P_1], 1, X, ao, I, D[b0 + P_0], c, X, yo)",
}
_PREV = {
    UNARY: "vjp_{name}(1, A, yo, X, ao, X, yo, c, A, ao)",
    BINARY: "vjp_{name}(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, "
            "(D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)",
    SUM: "vjp_{name}(D[b0 + P_M], A, yo, c, A, ao)",
    INDEX: "vjp_{name}(D[b0 + P_1], D[b0 + P_M], A, yo, I, D[b0 + P_0], c, A, ao)",
}
# gather rows admitted by a scalar plan read one index (P_1 == 1): a literal count for them
_PLITERAL = {"gather": ("D[b0 + P_1]", "1")}

# the per-entry decoding both scalar-plan sweeps start with
_PDECODE = '''
        b0 = e * PK
        op = D[b0 + P_OP]
        kind = D[b0 + P_KIND]
        yo = D[b0 + P_Y]
        ao = D[b0 + P_A]
        bo = D[b0 + P_B]
        c = Dc[e]'''

_PFORWARD_HEAD = '''

@_jit
def pforward(D, Dc, I, X, start, stop):
    """Replay entries start..stop-1 of a scalar plan (see ops.PK) on the value store X."""
    D, Dc, I, X = raw(D), raw(Dc), raw(I), raw(X)
    for e in range(start, stop):''' + _PDECODE

_PREVERSE_HEAD = '''

@_jit
def preverse(D, Dc, I, X, A, R):
    """Reverse sweep of a scalar plan over the entries R (descending; the entries the seeded
    cotangents reach), accumulating into the adjoint store A (zeroed by the caller)."""
    D, Dc, I, X, A, R = raw(D), raw(Dc), raw(I), raw(X), raw(A), raw(R)
    for r in range(R.shape[0]):
        e = R[r]''' + _PDECODE


def _psweep(by_kind, table):
    out = []
    first = True
    for kind in (BINARY, UNARY, INDEX, SUM):
        rows = by_kind.get(kind)
        if not rows:
            continue
        out.append("        %s kind == %d:  # %s" % ("if" if first else "elif", KIND_CODES[kind], kind))
        first = False
        for i, (code, op) in enumerate(rows):
            call = table[kind].replace("{name}", op.name)
            if op.name in _PLITERAL:
                call = call.replace(*_PLITERAL[op.name])
            out.append("            %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name))
            out.append("                " + call)
    return out


def _body(by_kind, table, d, ind, reverse):
    """The per-kind dispatch for one dtype store (d = "4" or "8")."""
    out = []
    first = True
    for kind in (UNARY, BINARY, SUM, INDEX, MM):
        rows = by_kind.get(kind)
        if not rows:
            continue
        out.append("%s%s kind == %d:  # %s" % (ind, "if" if first else "elif", KIND_CODES[kind], kind))
        first = False
        spec = table[kind]
        for line in spec[0]:
            out.append(ind + "    " + line.replace("{d}", d))
        call = spec[1].replace("{d}", d)
        chain = _chain(rows, call, ind + "    ", _STRIDES if kind == BINARY else None)
        step = _STEP.get(("rev" if reverse else "fwd", kind))
        if step:
            cond, _, _, site = step
            out.append("%s    if %s:" % (ind, cond))
            out.append("%s        %s%s" % (ind, _step_name("rev" if reverse else "fwd", kind),
                                          site.replace("{d}", d)))
            chain[0] = chain[0].replace("if ", "elif ", 1)
        out += chain
        if reverse:
            for line in spec[2]:
                out.append(ind + "    " + line)
    return out


_REVERSE_HEAD = '''

@_jit
def reverse(E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, live, nreach, ereach, bad, start, stop):
    """Sweep entries start..stop (inclusive, downwards), accumulating adjoints into A4/A8.
    Saved values come from V/XA, or from the node values X4/X8 when ``live`` (a replay).
    Returns (status, entry): (0, -1) done; (1, e) a custom Function at e needs Python;
    (2, e) a saved value of e was modified in place; (3, e) e's saved values were freed;
    (4, e) e touches a node of >= tape.BIG elements (F_BIG): numpy runs it (SIMD, BLAS)."""
    E, N, V4, V8, XA4, XA8, I, C = raw(E), raw(N), raw(V4), raw(V8), raw(XA4), raw(XA8), raw(I), raw(C)
    A4, A8, X4, X8, nreach, ereach, bad = raw(A4), raw(A8), raw(X4), raw(X8), raw(nreach), raw(ereach), raw(bad)
    for e in range(start, stop - 1, -1):
        if ereach[e] == 0:
            continue
        b0 = e * K
        op = E[b0 + OP]
        fl = E[b0 + FL]
        if bad[e] != 0:
            return 2, e
        if (fl & F_FREED) != 0 and (fl & F_SAVES) != 0:
            return 3, e
        if op == PYFUNC_OP:
            return 1, e
        if (fl & F_BIG) != 0:
            return 4, e
        if (fl & F_NOGA) != 0 and (fl & F_NOGB) != 0:  # no wanted gradient upstream
            continue
        out = E[b0 + OUT]
        a = E[b0 + IA]
        b = E[b0 + IB]
        na = a >= 0 and (fl & F_NOGA) == 0
        nb = b >= 0 and (fl & F_NOGB) == 0
        c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
        kind = KIND[op]
        go = N[out * NK + NOFF]
        n = N[out * NK + NSIZE]
        if op == CAST_OP:
            da, oa = N[a * NK + NDT], N[a * NK + NOFF]
            for i in range(n):
                v = A4[go + i] if N[out * NK + NDT] == 0 else A8[go + i]
                if da == 0:
                    A4[oa + i] += v
                else:
                    A8[oa + i] += v
            mark(N, nreach, ereach, a)
        elif N[out * NK + NDT] == 0:'''

_FORWARD_HEAD = '''

@_jit
def forward(E, N, V4, V8, XA4, XA8, I, C, X4, X8, start, stop):
    """Replay entries start..stop-1 on the node values in X4/X8 (inputs: live nodes, or the
    recorded constants). Returns -1, or the index of an entry that Python must run (a custom
    Function, or an F_BIG entry for numpy)."""
    E, N, V4, V8, XA4, XA8, I, C = raw(E), raw(N), raw(V4), raw(V8), raw(XA4), raw(XA8), raw(I), raw(C)
    X4, X8 = raw(X4), raw(X8)
    for e in range(start, stop):
        b0 = e * K
        op = E[b0 + OP]
        if op == PYFUNC_OP or (E[b0 + FL] & (F_BIG | F_NPFWD)) != 0:
            return e
        out = E[b0 + OUT]
        a = E[b0 + IA]
        b = E[b0 + IB]
        c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
        kind = KIND[op]
        yo = N[out * NK + NOFF]
        n = N[out * NK + NSIZE]
        if op == CAST_OP:
            da, oa = N[a * NK + NDT], N[a * NK + NOFF]
            for i in range(n):
                v = X4[oa + i] if da == 0 else X8[oa + i]
                if N[out * NK + NDT] == 0:
                    X4[yo + i] = v
                else:
                    X8[yo + i] = v
        elif N[out * NK + NDT] == 0:'''




_BREVERSE_TAIL = '''        # a node's adjoint is dead once its producer's VJP ran: clear its lanes now, while
        # they are in cache, so the next chunk starts from zeros without a pass over the store
        if N[out * NK + NDT] == 0:
            z4 = A4[go:go + n * B]
            z4[:] = 0
        else:
            z8 = A8[go:go + n * B]
            z8[:] = 0'''

_BFORWARD_HEAD = '''

@_jit_internal
def bforward(E, N, V4, V8, XA4, XA8, I, C, X4, X8, B, start, stop):
    \"\"\"Batched replay of entries start..stop-1 on a chunk of B points laid out slot-major
    (element i of the node at offset o: X[(o + i) * B + lane]). The caller has checked that
    the tape has no custom Function and no F_BIG entry (tapegrad.func).\"\"\"
    E, N, V4, V8, XA4, XA8, I, C = raw(E), raw(N), raw(V4), raw(V8), raw(XA4), raw(XA8), raw(I), raw(C)
    X4, X8 = raw(X4), raw(X8)
    for e in range(start, stop):
        b0 = e * K
        if (E[b0 + FL] & F_ALIAS) != 0:     # a slice sharing its operand's lanes: no copy
            continue
        op = E[b0 + OP]
        out = E[b0 + OUT]
        a = E[b0 + IA]
        b = E[b0 + IB]
        c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
        kind = KIND[op]
        yo = N[out * NK + NOFF] * B
        n = N[out * NK + NSIZE]
        if op == CAST_OP:
            da, oa = N[a * NK + NDT], N[a * NK + NOFF] * B
            for i in range(n * B):
                v = X4[oa + i] if da == 0 else X8[oa + i]
                if N[out * NK + NDT] == 0:
                    X4[yo + i] = v
                else:
                    X8[yo + i] = v
        elif N[out * NK + NDT] == 0:'''

_BREVERSE_HEAD = '''

@_jit_internal
def breverse(E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, B, nreach, ereach, start, stop, nreal):
    \"\"\"Batched reverse sweep of entries start..stop (downwards) over a chunk of B points
    (layout as bforward), accumulating adjoints into A4/A8; entries no cotangent reaches
    are skipped. Nodes from nreal on are recorded constants (no gradient computed).\"\"\"
    E, N, V4, V8, XA4, XA8, I, C = raw(E), raw(N), raw(V4), raw(V8), raw(XA4), raw(XA8), raw(I), raw(C)
    A4, A8, X4, X8, nreach, ereach = raw(A4), raw(A8), raw(X4), raw(X8), raw(nreach), raw(ereach)
    for e in range(start, stop - 1, -1):
        if ereach[e] == 0:
            continue
        b0 = e * K
        if (E[b0 + FL] & F_ALIAS) != 0:     # its consumers accumulated into the operand's
            mark(N, nreach, ereach, E[b0 + IA])     # lanes already; they stay live
            continue
        op = E[b0 + OP]
        out = E[b0 + OUT]
        a = E[b0 + IA]
        b = E[b0 + IB]
        c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
        kind = KIND[op]
        go = N[out * NK + NOFF] * B
        n = N[out * NK + NSIZE]
        if op == CAST_OP:
            da, oa = N[a * NK + NDT], N[a * NK + NOFF] * B
            for i in range(n * B):
                v = A4[go + i] if N[out * NK + NDT] == 0 else A8[go + i]
                if da == 0:
                    A4[oa + i] += v
                else:
                    A8[oa + i] += v
            mark(N, nreach, ereach, a)
        elif N[out * NK + NDT] == 0:'''




def generate_interp():
    """Source text of ``_interp.py``, derived from ``OPS``."""
    by_kind = {}
    for code, op in enumerate(OPS):
        by_kind.setdefault(op.kind, []).append((code, op))
    import hashlib
    h = hashlib.sha256()
    for part in _KERNEL_SOURCES:
        with open(_path(*part), "rb") as fh:
            h.update(fh.read())
    sha = h.hexdigest()[:16]
    # Numba's disk cache keys a function on its own file only: naming the kernels' digest
    # here makes any change to the kernels (or the schema and addresses they compile in)
    # change this file, so no stale compiled sweep survives.
    L = [_HEADER, "KERNELS_SHA = %r  # sha256 of kernels.py, _addr.py, _schema.py: regenerate "
         "when they change" % sha]
    L.append("# kind code of each opcode (see ops.KIND_CODES)")
    L.append("KIND = (%s,)" % ", ".join(str(KIND_CODES[op.kind]) for op in OPS))
    L.append("OPNAMES = (%s,)" % ", ".join(repr(op.name) for op in OPS))
    L.append("CAST_OP = %d" % OPCODE["cast"])
    L.append("PYFUNC_OP = %d" % OPCODE["pyfunc"])
    L += _steps(by_kind)
    L.append(_REVERSE_HEAD)
    L += _body(by_kind, _REV, "4", " " * 12, True)
    L.append("        else:")
    L += _body(by_kind, _REV, "8", " " * 12, True)
    L.append("    return 0, -1")
    L.append(_FORWARD_HEAD)
    L += _body(by_kind, _FWD, "4", " " * 12, False)
    L.append("        else:")
    L += _body(by_kind, _FWD, "8", " " * 12, False)
    L.append("    return -1")
    L.append("PK = %d" % PK)
    L.append("P_OP, P_KIND, P_Y, P_A, P_B, P_N, P_0, P_1, P_M = range(PK)")
    L.append(_PFORWARD_HEAD)
    L += _psweep(by_kind, _PFWD)
    L.append(_PREVERSE_HEAD)
    L += _psweep(by_kind, _PREV)
    L.append(_BFORWARD_HEAD)
    L += _bbody(by_kind, _BFWD, "4", " " * 12)
    L.append("        else:")
    L += _bbody(by_kind, _BFWD, "8", " " * 12)
    L.append(_BREVERSE_HEAD)
    L += _bbody(by_kind, _BREV, "4", " " * 12)
    L.append("        else:")
    L += _bbody(by_kind, _BREV, "8", " " * 12)
    L.append(_BREVERSE_TAIL)
    return "\n".join(L) + "\n"


# the sources the generated sweeps compile in (their digest is KERNELS_SHA)
_KERNEL_SOURCES = (("_compiled", "kernels.py"), ("_compiled", "_addr.py"), ("_schema.py",))


def _path(*parts):
    import os
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), *parts)


def driver_source(interp_text):
    """Source text of ``_compiled/_driver.py`` with its ``INTERP_SHA`` line naming the digest
    of ``interp_text`` (the driver compiles the generated sweeps into itself)."""
    import hashlib
    import re
    sha = hashlib.sha256(interp_text.encode("utf-8")).hexdigest()[:16]
    with open(_path("_compiled", "_driver.py"), encoding="utf-8") as fh:
        src = fh.read()
    return re.sub(r"^INTERP_SHA = '[0-9a-fx]*'", "INTERP_SHA = %r" % sha, src, count=1,
                  flags=re.M)


def write_interp(path=None):
    text = generate_interp()
    path = path or _path("_compiled", "_interp.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    drv = driver_source(text)
    with open(_path("_compiled", "_driver.py"), "w", encoding="utf-8") as fh:
        fh.write(drv)
    return path


if __name__ == "__main__":
    print("wrote", write_interp())
