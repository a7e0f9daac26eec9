"""Elementwise math beyond the foundation: the op table's further elementwise rows (tan ... erf,
clamp, maximum, atan2, remainder ...) and compositions with torch's node names (exp2, log2,
log10, rsqrt, square, frac, lerp, where ...), comparisons and logical operations.

Compositions record their intermediate entries ``HIDDEN`` (``next_functions`` skips them) and
the last one under torch's name, so a graph reads as torch's. Where a composition's value can
differ from torch's by rounding (log2 = log / ln 2), the result carries numpy's exact value.
"""
import math

import numpy as np

from ._compiled import kernels as _K
from ._core import tape as _tp
from ._core.tape import _wref
from ._state import STATE
from ._core.names import ONE_INPUT, _CPP_NAMES, multi_name_id, tap_name_id
from ._core.tape import entry_name
from .autograd.function import Function
from ._schema import F_HIDDEN, FL, K, NK, NM, NPROD
from .ops import BY_NAME
from .tensor import (GUARD, Tensor, _DEFAULT, _guard_sel, _checked_scalar, _result_dtype, _wrap,
                     bool_, int64)
from ._record import (_check_broadcast, _check_shapes, _convert, _is_number, _nm, _par_map, _vm_of, _record_binary,
                      _record_unary, _rename_last)
from .tensor import _np_scalar, _tyname
from ._schema import F_BIG, F_SAVES
from ._core.tape import _PACK_E, _PACK_N
from .tensor import _as_dtype, _check_device, _new, _np_of, _type_name, device, dtype
from ._record import (_OPNM, _SAVES, _bump, _check_number, _check_overlap, _inplace_shape_check,
                      _leaf_error, _record_tn, _record_tt, _view_checks, _write)
import numbers
from ._compiled import _layout, _vmath
from ._core.names import name_id as _name_id
from .ops import _u as _ops_u
from .ops import _remainder_ref as _ops_remainder
from ._record import _hide_below, entry_of, hide, named, saves_inputs, saves_result, tap, tap_entry
from ._state import no_grad
from ._shape import _add_entry, _scatter_entry, stack
from .ops import KERNEL_FWD, OPCODE
from ._record import _mm_core, _out, _src, _tape_for
from .tensor import _norm_dims, float64, promote_types
from ._core.names import NAMES, TAPS, name_id
from ._core.tape import _operands
import builtins

# the names of torch's namespace this family defines (tapegrad/__init__.py imports them)
__all__ = ["abs", "acos", "acosh", "add", "addbmm", "addcdiv", "addcmul", "addmv", "addr",
           "allclose", "angle", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2",
           "arctanh", "argwhere", "asin", "asinh", "atan", "atan2", "atanh", "baddbmm",
           "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift",
           "bitwise_xor", "ceil", "chain_matmul", "clamp", "clamp_max", "clamp_min", "clip",
           "clone", "conj_physical_", "copysign", "cos", "cosh", "count_nonzero", "deg2rad",
           "detach", "div", "divide", "eq", "equal", "erf", "exp", "exp2", "expm1", "fill", "fix",
           "float_power", "floor", "floor_divide", "fmax", "fmin", "fmod", "frac", "gcd", "ge",
           "greater", "greater_equal", "gt", "heaviside", "hypot", "inner", "isclose", "isfinite",
           "isin", "isinf", "isnan", "isneginf", "isposinf", "isreal", "lcm", "ldexp", "le", "lerp",
           "less", "less_equal", "log", "log10", "log1p", "log2", "logaddexp", "logaddexp2",
           "logical_and", "logical_not", "logical_or", "logical_xor", "lt", "maximum", "minimum",
           "mul", "multiply", "nan_to_num", "ne", "neg", "negative", "nextafter", "nonzero",
           "nonzero_static", "not_equal", "positive", "pow", "rad2deg", "reciprocal", "remainder",
           "round", "rsqrt", "rsub", "sgn", "sigmoid", "sign", "signbit", "sin", "sinh", "sqrt",
           "square", "sub", "subtract", "tan", "tanh", "true_divide", "trunc", "vdot", "where"]


_TRUE = object()     # div without rounding_mode (an explicit rounding_mode=None is torch's


# ----------------------------------------------------------------------------- functions
def _not_tensor(fname, obj, arg="input", pos=1):
    """torch's TypeError for a non-tensor where a tensor argument is expected."""
    return TypeError("%s(): argument '%s' (position %d) must be Tensor, not %s"
                     % (fname, arg, pos, type(obj).__name__))


def _unary_row_fn(opname, on_int=None):
    """The eager function of unary row ``opname``; integer and bool inputs are converted to the
    default float dtype, or handed to ``on_int`` (ops that keep integer dtypes: abs, relu)."""
    op = BY_NAME[opname]
    ref = op.ref
    cell = ref.__closure__[0].cell_contents if ref.__closure__ else None
    if type(cell) is np.ufunc and ref.__code__ is _ops_u(None).__code__:
        ref = cell                     # ops._u(np.exp): call the ufunc itself (a frame less)

    fwd_out = op.fwd_out
    vm, big = _vm_of(op)
    # below PAR elements a vector-math row's one-core kernel is called straight from here
    # (a flat contiguous float input): _par_map's and unary_fwd's layers cost ~1.7 us a call
    vcode = _vmath.UNARY[vm] if vm is not None else -1
    par = _vmath.PAR if vm is not None else 0
    serial = _vmath._ufwd_s if vm is not None else None
    lanes = _vmath._LANES

    def f(input):
        try:
            d = input._data
        except AttributeError:
            raise _not_tensor(opname, input) from None
        if input._dtype._cat < 2:
            if on_int is not None:
                return on_int(input)
            d = d.astype(_DEFAULT[0].np)
            input = _wrap(d, _DEFAULT[0])
        n = d.size
        if (big <= n < par and d.ndim == 1 and d.dtype in lanes and d.flags.c_contiguous
                and _vmath.OK):
            y = np.empty(n, d.dtype)
            serial(vcode, d, y, 0.0, lanes[d.dtype])
        elif n >= big and fwd_out is not None:
            y = _par_map(fwd_out, (d, None), d.shape, d.dtype, vm)
        else:
            y = ref(d)
        if input._rg and STATE.enabled:
            return _record_unary(input, op, y)
        return _wrap(y, input._dtype)
    f.__name__ = opname
    f.__doc__ = "Elementwise %s (grad_fn %s)." % (opname, op.grad_fn)
    return f


exp = _unary_row_fn("exp")


log = _unary_row_fn("log")


sin = _unary_row_fn("sin")


cos = _unary_row_fn("cos")


tanh = _unary_row_fn("tanh")


sigmoid = _unary_row_fn("sigmoid")


sqrt = _unary_row_fn("sqrt")


def _relu_int(input):
    if input._dtype is bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return _wrap(np.maximum(input._data, input._dtype.np.type(0)), input._dtype)


def _abs_int(input):
    if input._dtype is bool_:
        raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")
    return _wrap(np.abs(input._data), input._dtype)


relu = _unary_row_fn("relu", _relu_int)       # integer tensors stay integer, as in torch


abs = _unary_row_fn("abs", _abs_int)


def positive(input):
    if input._dtype is bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def reciprocal(input):
    """1 / x (grad_fn ReciprocalBackward0)."""
    if input._dtype._cat < 2:
        input = _convert(input, _DEFAULT[0])
    y = np.reciprocal(input._data)
    if input._rg and STATE.enabled:
        return saves_result(_record_unary(input, BY_NAME["pow_scalar"], y, c=-1.0,
                                          nm=_nm("ReciprocalBackward0")))
    return _wrap(y, input._dtype)


def neg(input):
    d = input._data
    if d.size >= _NEG_BIG and d.dtype.kind == "f" and d.flags.c_contiguous and _vmath.OK:
        y = _par_map(None, (d, None), d.shape, d.dtype, "neg")     # on every core
    else:
        try:
            y = np.negative(d)
        except TypeError:                  # numpy refuses bool negation too
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.") from None
    if input._rg and STATE.enabled:
        return _record_unary(input, _NEG, y)
    return _wrap(y, input._dtype)


_NEG = BY_NAME["neg"]


_NEG_BIG = _vm_of(_NEG)[1] if _vm_of(_NEG)[0] else 1 << 62


negative = neg


def _bool_sub_check(a, b, rdt):
    ba = a._dtype is bool_ if isinstance(a, Tensor) else isinstance(a, (bool, np.bool_))
    bb = b._dtype is bool_ if isinstance(b, Tensor) else isinstance(b, (bool, np.bool_))
    if ba and bb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if ba or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _bool_pow_check(a, b, rdt):
    if rdt is bool_:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")


_CHECKS = {"sub": _bool_sub_check, "pow": _bool_pow_check}


def _binary_fn(opname):
    op = BY_NAME[opname]
    check = _CHECKS.get(opname)
    int_ref = _int_pow if opname == "pow" else None
    ref = op.ref
    fwd_out = op.fwd_out
    vm, big = _vm_of(op)
    opcode = op.opcode
    nm = _OPNM[opcode]
    tn_saves = _SAVES[opcode][2]     # Tensor (op) number: a needs grad, the number not
    tn_sa, tn_sb, tn_sy = tn_saves
    tn_any = tn_sa or tn_sb or tn_sy
    # from _vmath.MIN to PAR elements, two flat contiguous operands of one float dtype: the
    # one-core kernel called straight from here (numpy's call with its output allocation
    # costs ~1 us more at 10^4)
    bcode = _vmath.BINARY[vm] if vm is not None else -1
    lo, hi = (_vmath.MIN, _vmath.PAR) if vm is not None else (0, 0)
    serial = _vmath._bfwd_s if vm is not None else None
    lanes = _vmath._LANES

    def general(input, other):
        if isinstance(input, Tensor):
            a = input
            if not isinstance(other, Tensor):
                _check_number(other, opname, "other", 2)
        else:
            if not isinstance(other, Tensor):
                raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s"
                                % (opname, _tyname(input)))
            _check_number(input, opname, "input", 1)
            a = other
        _check_shapes(input, other)
        rdt = _result_dtype(a, other if a is input else input)
        if check is not None:
            check(input, other, rdt)
        av = input._data if isinstance(input, Tensor) else input
        bv = other._data if isinstance(other, Tensor) else other
        npdt = rdt.np
        if isinstance(input, Tensor):
            if input._dtype is not rdt:
                av = av.astype(npdt)
        else:
            av = _np_scalar(av, npdt)
        if isinstance(other, Tensor):
            if other._dtype is not rdt:
                bv = bv.astype(npdt)
        else:
            bv = _np_scalar(bv, npdt)
        y = ref(av, bv) if int_ref is None or rdt._cat == 2 else int_ref(av, bv)
        if y.dtype != npdt:
            y = y.astype(npdt)
        if STATE.enabled and ((isinstance(input, Tensor) and input._rg) or
                              (isinstance(other, Tensor) and other._rg)):
            return _record_binary(op, input, other, y, rdt)
        return _wrap(y, rdt)

    def general_op(input, other):
        # the operator form (Tensor.__add__ ...): an operand the function rejects gives
        # NotImplemented, so Python tries the other operand (numpy's ufunc for an ndarray)
        try:
            return general(input, other)
        except TypeError:
            return NotImplemented

    def make(general):
        def f(input, other):
            # fast path: Tensor (op) same-dtype Tensor, or floating Tensor (op) Python float
            if type(input) is Tensor:
                rdt = input._dtype
                to = type(other)
                if to is Tensor:
                    if other._dtype is not rdt:
                        return general(input, other)
                    ad, bd = input._data, other._data
                    av = bv = None
                    n = ad.size
                    if (lo <= n < hi and ad.ndim == 1 and bd.ndim == 1 and n == bd.size
                            and ad.dtype in lanes and ad.flags.c_contiguous and bd.flags.c_contiguous
                            and _vmath.OK):
                        y = np.empty(n, ad.dtype)
                        serial(bcode, ad, bd, y)
                    elif n >= big and fwd_out is not None and ad.shape == bd.shape:
                        # a non-contiguous operand (x * x.t()) is copied once, for the kernel
                        # and the saved value both; a transposed matrix in the same pass as
                        # the op (_layout.binary)
                        r = None
                        if bcode >= 0 and (not ad.flags.c_contiguous or not bd.flags.c_contiguous):
                            r = _layout.binary(bcode, ad, bd)
                        if r is not None:
                            y = r[0]
                            if ad.flags.c_contiguous:
                                bv = r[1]
                            else:
                                av = r[1]
                        else:
                            if not ad.flags.c_contiguous:
                                ad = av = _layout.contiguous(ad)
                            if not bd.flags.c_contiguous:
                                bd = bv = _layout.contiguous(bd)
                            y = _par_map(fwd_out, (ad, bd), ad.shape, rdt.np, vm)
                    else:
                        try:
                            y = ref(ad, bd)
                        except (ValueError, TypeError):     # shapes; bool subtraction
                            return general(input, other)
                    if STATE.enabled and (input._rg or other._rg):
                        return _record_tt(op, input, other, y, rdt, av, bv)
                    return _wrap(y, rdt)
                if (to is float or to is int) and rdt._cat == 2:
                    ad = input._data
                    if ad.size >= big and fwd_out is not None:
                        y = _par_map(fwd_out, (ad, np.full(1, other, rdt.np)), ad.shape, rdt.np, vm)
                    else:
                        y = ref(ad, other)
                    if input._rg and STATE.enabled:
                        tp = input._tape
                        dt = rdt.slot
                        if tp is None or tp.into is not None or dt < 0:
                            if dt < 0:
                                return _record_binary(op, input, other, y, rdt)
                            return _record_tn(opcode, nm, tn_saves, input, other, y, rdt)
                        # _record_tn for a non-leaf input, inlined (the chain of small ops)
                        ca = tp.save(ad, dt) if tn_sa else -1
                        V = tp.V[dt]             # the number: one value in V
                        V.append(other)
                        cb = len(V) - 1
                        cy = tp.save(y, dt) if tn_sy else -1
                        e = len(tp.E) // K
                        node = len(tp.N) // NK
                        n = y.size
                        fl = 0
                        if tn_any:
                            tp.n_saving += 1
                            fl = F_SAVES
                        slot = dt
                        if n >= _tp.BIG:
                            slot = dt + 2
                            fl |= F_BIG
                        asz = tp.asz
                        tp.N.frombytes(_PACK_N(asz[slot], n, slot, e, 0))
                        asz[slot] += n
                        tp.E.frombytes(_PACK_E(opcode, nm, node, input._node, -1, ca, cb, cy, 1,
                                               0 if n != 1 else 1, -1, fl))
                        out = _new(Tensor)
                        out._data = y
                        out._dtype = rdt
                        out._rg = True
                        out._tape = tp
                        out._node = node
                        tp.live.append(_wref(out))
                        if tn_sa or tn_sy:
                            if tp.mark is None:
                                tp.mark = _tp.INPLACE[0]
                            if tn_sa:
                                vc = input._vc
                                if vc is None:
                                    vc = input._vc = [0]
                                tp.sv.append((vc, vc[0], e, ad.shape, "a"))
                            if tn_sy:
                                vc = out._vc = [0]
                                tp.sv.append((vc, 0, e, y.shape, "y"))
                        return out
                    return _wrap(y, rdt)
            return general(input, other)
        f.__name__ = opname
        return f

    f = make(general)
    f.op = make(general_op)
    return f


def _int_pow(a, b):
    """Integer power with torch's negative exponents: 1 and -1 keep their powers, any other
    base gives 0 (numpy raises)."""
    a, b = np.asarray(a), np.asarray(b)
    neg = b < 0
    if not neg.any():
        return np.power(a, b)
    y = np.power(a, np.where(neg, 0, b).astype(b.dtype))
    odd = (b % 2) != 0
    return np.where(neg, np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)), y)


_SUB_OP = BY_NAME["sub"]


_RSUB_NM = _name_id("RsubBackward1")


_add = _binary_fn("add")


_sub = _binary_fn("sub")


mul = _binary_fn("mul")


_div = _binary_fn("div")


_pow_tt = _binary_fn("pow")


multiply = mul


def _alpha_rdt(input, other, alpha):
    """The result dtype of add / sub with an ``alpha``, checked as torch's alpha_check."""
    a = input if isinstance(input, Tensor) else other
    if not isinstance(a, Tensor):
        return None
    rdt = _result_dtype(a, other if a is input else input)
    if isinstance(alpha, bool) and rdt is not bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if rdt._cat < 2 and isinstance(alpha, float):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    return rdt


def add(input, other, alpha=1):
    if alpha != 1 or alpha is True:
        if _alpha_rdt(input, other, alpha) is bool_:
            # torch computes a + alpha * b in bool: alpha is bool(alpha), + is or
            return logical_or(input, other) if alpha else logical_or(input, False)
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return _add(input, other)


def sub(input, other, alpha=1):
    if alpha != 1 or alpha is True:
        _alpha_rdt(input, other, alpha)
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return _sub(input, other)


subtract = sub


def div(input, other, *, rounding_mode=_TRUE):
    """input / other; ``rounding_mode`` 'floor' or 'trunc' rounds the quotient (zero gradient),
    as torch.div."""
    if rounding_mode is not _TRUE:
        return div_mode(input, other, rounding_mode)
    if not isinstance(input, Tensor):            # number / tensor
        if isinstance(other, Tensor) and other._dtype._cat < 2 and not isinstance(input, float):
            other = _convert(other, _DEFAULT[0])
        return _div(input, other)
    # true division promotes integers to the default float dtype
    if input._dtype._cat < 2 and not (
            isinstance(other, Tensor) and other._dtype._cat == 2) and not isinstance(other, float):
        input = _convert(input, _DEFAULT[0])
    return _div(input, other)


divide = div


def true_divide(input, other):
    return div(input, other)


def _bad_exponent(exponent):
    raise TypeError("pow(): argument 'exponent' must be Number or Tensor, not %s"
                    % _tyname(exponent))


def _make_pow(bad_exponent):
    def pow(input, exponent):
        if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
            te = type(exponent)
            if (te is float or te is int) and input._dtype._cat == 2:
                rdt = input._dtype                 # floating tensor ** Python number
            elif not _is_number(exponent):
                return bad_exponent(exponent)
            else:
                rdt = _result_dtype(input, exponent)
                if rdt._cat < 2:
                    if exponent < 0:
                        raise RuntimeError("Integers to negative integer powers are not allowed.")
                    d = input._data if input._dtype is rdt else input._data.astype(rdt.np)
                    y = np.asarray(np.power(d, _np_scalar(exponent, rdt.np)), rdt.np)
                    return _wrap(y if y.ndim else y[()], rdt)
            d = input._data if input._dtype is rdt else input._data.astype(rdt.np)
            if d.size >= _POW_BIG:
                y = _par_map(_POW_SCALAR.fwd_out, (d, float(exponent)), d.shape, rdt.np, _POW_VM)
            elif exponent == 2:
                y = np.square(d)                   # x * x, as torch and the compiled kernel
            else:
                y = np.power(d, rdt.np.type(exponent))
            if input._rg and STATE.enabled:
                return _record_unary(input, _POW_SCALAR, y, c=float(exponent))
            return _wrap(y, rdt)
        if not isinstance(input, Tensor):
            # scalar ** tensor: torch names this PowBackward2
            out = _pow_tt(input, exponent)
            if out._tape is not None:
                _rename_last(out, "PowBackward2")
            return out
        if input._dtype is bool_ and exponent._dtype is bool_:
            _bool_pow_check(input, exponent, bool_)
        return _pow_tt(input, exponent)
    return pow


pow = _make_pow(_bad_exponent)


_pow_op = _make_pow(lambda exponent: NotImplemented)   # Tensor.__pow__


_POW_SCALAR = BY_NAME["pow_scalar"]


_POW_VM, _POW_BIG = _vm_of(_POW_SCALAR)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(np.allclose(input._data, _np_of(other), rtol=rtol, atol=atol, equal_nan=equal_nan))


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
        if isinstance(ctx.opname, BaseException):
            raise ctx.opname
        raise RuntimeError("derivative for aten::%s is not implemented" % ctx.opname)


def not_differentiable(out, opname, *inputs, node="NotImplemented"):
    """``out`` (computed without grad) as a node over ``inputs`` whose backward raises:
    torch's NotImplemented node, or ``node`` (torch's name for such an op: NextafterBackward0).
    ``opname`` may be the exception to raise instead of torch's "derivative for aten::..."."""
    if not (STATE.enabled and any(isinstance(t, Tensor) and t._rg for t in inputs)) \
            or out._dtype._cat < 2:
        return out
    res = _NotDifferentiable.apply((out._data, out._dtype), opname, *inputs)
    return named(res, node)


def _no_inplace_derivative(name):
    """torch has no derivative for the in-place inverse hyperbolic functions: the write records
    ``<Name>Backward1``, whose backward raises NotImplementedError."""
    f = globals()[name]

    def g(s, *args, **kw):
        with _no_grad_ctx():
            out = f(s, *args, **kw)
        return not_differentiable(
            out, NotImplementedError("the derivative for 'inplace version of %s' is not "
                                     "implemented." % name), s,
            node=name.capitalize() + "Backward1")
    return g


def _no_grad_ctx():
    return no_grad()


_KERNEL_FWD = KERNEL_FWD          # (the rows flagged kernel_fwd)


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
    """Eager forward through the row's Numba kernel (rows without a numpy ufunc); the row's
    numpy reference while the compiled code is not in use (``_compiled/_cache``)."""
    k = _K.eager(getattr(_K, "fwd_" + opname))
    if k is None:
        return BY_NAME[opname].ref(d, c)
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
    if np.size(d) >= big and (op.fwd_out is not None or (vm and _vmath.OK)):
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
    if not (x._rg and STATE.enabled):
        return _wrap(np.asarray(np.exp2(x._data), x._dtype.np)[()] if x._data.ndim == 0 else
                     np.exp2(x._data).astype(x._dtype.np), x._dtype)
    t = scale(x, math.log(2.0))
    hide(t)
    return exact(named(exp(t), "Exp2Backward0"), np.exp2(x._data))


def _log_base(input, base, name, npf):
    x = _floatify(input)
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
    # (tapegrad.func: the recorded pow gives +inf at -0.0 where 1/sqrt gives -inf)
    _guard_sel(x, "mask", "signbit")
    with np.errstate(all="ignore"):
        yv = 1.0 / np.sqrt(x._data)
    if not (x._rg and STATE.enabled):
        return _wrap(_val0(yv, x._dtype), x._dtype)
    # 1 / sqrt(x): torch's gradient -y^3 / 2 at -inf (nan), -0.0 (+inf), +inf (-0.0), which
    # pow(x, -0.5)'s -x^-1.5 / 2 misses
    r = unary(x, "sqrt")
    y = reciprocal(r)
    hide(r)
    return saves_result(exact(named(y, "RsqrtBackward0"), yv))


def square(input):
    _pow = pow
    if input._dtype is bool_:
        input = _convert(input, int64)
    return _pow(input, 2)


_STEP_KERNELS = ("floor", "ceil", "round", "trunc")


def _step(input, k, name, npf):
    if input._dtype._cat < 2:
        if input._dtype is bool_:
            if k == 4:
                return _wrap(np.array(input._data, copy=True), input._dtype)
            raise NotImplementedError("\"%s_vml_cpu\" not implemented for 'Bool'"
                                      % _STEP_KERNELS[k])
        return _wrap(np.asarray(npf(input._data), input._dtype.np)[()], input._dtype)
    return unary(input, "step", c=float(k), name=name)


def floor(input):
    return _step(input, 0, "FloorBackward0", np.floor)


def ceil(input):
    return _step(input, 1, "CeilBackward0", np.ceil)


def round(input, decimals=None):
    if decimals is not None and input._dtype._cat < 2:   # torch's round.decimals overload
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (
            "round_cpu" if decimals or input._dtype is bool_ else "round_vml_cpu",
            input._dtype._tname))
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
    """sign, SgnBackward0, which saves its result (torch's sgn_backward reads it): writing the
    result in place makes backward raise."""
    return saves_result(named(sign(input), "SgnBackward0"))


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
        bounds = [v for v in (min, max) if v is not None]
        if not any(isinstance(v, (float, np.floating)) for v in bounds):
            return _clamp_int(x, min, max, bounds)
        x = _convert(x, _DEFAULT[0])
    d = x._data
    if min is not None and max is not None:
        # (numpy's tie gives the second operand: x's, -0.0 at a bound of 0 as torch)
        y = np.minimum(x._dtype.np.type(max), np.maximum(x._dtype.np.type(min), d))
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


def _clamp_int(x, lo, hi, bounds):
    """clamp of an integer or bool tensor by integer bounds: torch's result type (a bool
    tensor clamped by ints is int64) and checked bound conversion."""
    rdt = x._dtype
    for v in bounds:
        if not isinstance(v, (bool, np.bool_)) and rdt is bool_:
            rdt = int64
    if rdt is bool_:
        raise NotImplementedError("\"clamp%s_scalar_cpu\" not implemented for 'Bool'"
                                  % ("" if len(bounds) == 2 else "_min" if lo is not None
                                     else "_max"))
    d = np.asarray(x._data, rdt.np)
    if lo is not None:
        d = np.maximum(d, _checked_scalar(lo, rdt))
    if hi is not None:
        d = np.minimum(d, _checked_scalar(hi, rdt))
    return _wrap(_val0(d, rdt), rdt)


def clamp_min(input, min):
    if isinstance(min, Tensor):
        return named(clamp(input, min=min), "ClampMinBackward1")
    return named(clamp(input, min=min), "ClampMinBackward0")


def clamp_max(input, max):
    if isinstance(max, Tensor):
        return named(clamp(input, max=max), "ClampMaxBackward1")
    return named(clamp(input, max=max), "ClampMaxBackward0")


def _clamp_tensor(input, lo, hi):
    """clamp with tensor bounds: torch's ClampBackward0. The gradient goes to the input where
    lo <= x <= hi, to ``lo`` where x < lo < hi, to ``hi`` where x > hi or lo > hi, and nowhere
    where none holds (a nan input; x < lo == hi)."""
    x = input
    for t in (x, lo, hi):
        _guard_sel(t, "vals")                    # (tapegrad.func: the masks below)
    lo_t = lo if isinstance(lo, Tensor) or lo is None else _wrap(np.asarray(lo, x._dtype.np),
                                                                  x._dtype)
    hi_t = hi if isinstance(hi, Tensor) or hi is None else _wrap(np.asarray(hi, x._dtype.np),
                                                                  x._dtype)
    rdt = x._dtype
    for b in (lo_t, hi_t):
        if b is not None:
            _check_shapes(x, b)
            rdt = _result_dtype(_wrap(np.zeros(1, rdt.np), rdt), b)
    xd = np.asarray(x._data, rdt.np)
    lv = None if lo_t is None else np.asarray(lo_t._data, rdt.np)
    hv = None if hi_t is None else np.asarray(hi_t._data, rdt.np)
    y = xd
    if lv is not None:
        y = np.maximum(y, lv)
    if hv is not None:
        y = np.minimum(y, hv)
    y = np.asarray(y, rdt.np)
    if not (STATE.enabled and any(t is not None and t._rg for t in (x, lo_t, hi_t))):
        return _wrap(_val0(y, rdt), rdt)
    with np.errstate(invalid="ignore"):
        if lv is not None and hv is not None:
            m_x, m_lo, m_hi = (xd >= lv) & (xd <= hv), (xd < lv) & (lv < hv), (xd > hv) | (lv > hv)
        elif lv is not None:
            m_x, m_lo, m_hi = xd >= lv, xd < lv, False
        else:
            m_x, m_lo, m_hi = xd <= hv, False, xd > hv
    none = ~(m_x | m_lo | m_hi)
    t = x
    steps = []
    if np.any(none) and x._rg:           # neither the input nor a bound: a constant
        t = where(_wrap(np.broadcast_to(none, y.shape), bool_), _wrap(y, rdt), t)
        steps.append(t)
    if lo_t is not None:
        t = where(_wrap(np.asarray(m_lo), bool_), lo_t, t)
        steps.append(t)
    if hi_t is not None:
        t = where(_wrap(np.asarray(m_hi), bool_), hi_t, t)
        steps.append(t)
    hide(*steps[:-1])
    return saves_inputs(exact(named(t, "ClampBackward0"), y), x, lo_t, hi_t)


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
    return saves_inputs(exact(named(where(mask, a, b), name), y), a, b) \
        if STATE.enabled and (a._rg or b._rg) else \
        _wrap(_val0(y, _result_dtype(a, b)), _result_dtype(a, b))


def _tensor_other(opname, other):
    if not isinstance(other, Tensor):
        raise TypeError("%s(): argument 'other' (position 2) must be Tensor, not %s"
                        % (opname, _tyname(other)))


def atan2(input, other):
    _tensor_other("atan2", other)
    return _binary("atan2", input, other)


arctan2 = atan2


def hypot(input, other):
    _tensor_other("hypot", other)
    rdt = _result_dtype(input, other)
    if rdt._cat < 2:
        raise NotImplementedError("\"hypot_cpu\" not implemented for '%s'" % rdt._tname)
    return _binary("hypot", input, other)


def _int_operands(input, other, opname, kernel):
    """Checked operands of an integer-capable binary op: (result dtype, input and other as
    numpy values of it). Raises torch's errors: TypeError for a non-number operand,
    NotImplementedError for a bool result (``kernel``: torch's kernel name), ZeroDivisionError
    for an integer division by zero (``opname`` in _DIVIDING)."""
    for pos, v in ((1, input), (2, other)):
        if not isinstance(v, Tensor) and not _is_number(v):
            raise TypeError("%s(): argument '%s' (position %d) must be Tensor, not %s"
                            % (opname, ("input", "other")[pos - 1], pos, _tyname(v)))
    a_t = isinstance(input, Tensor)
    if not a_t and not isinstance(other, Tensor):
        raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s"
                        % (opname, _tyname(input)))
    if a_t and isinstance(other, Tensor):
        _check_shapes(input, other)
    rdt = _result_dtype(input, other) if a_t else _result_dtype(other, input)
    if rdt is bool_ and kernel:
        raise NotImplementedError("\"%s\" not implemented for 'Bool'" % kernel)
    av, bv = _npval(input, rdt), _npval(other, rdt)
    if rdt._cat < 2 and opname in _DIVIDING and np.any(bv == 0):
        raise RuntimeError("ZeroDivisionError")
    return rdt, av, bv


_DIVIDING = ("remainder", "floor_divide", "div")


def _npval(v, rdt):
    if isinstance(v, Tensor):
        d = v._data
        return d if v._dtype is rdt else np.asarray(d).astype(rdt.np)
    return _np_scalar(v, rdt.np)


def remainder(input, other):
    rdt, av, bv = _int_operands(input, other, "remainder", "remainder_cpu")
    if rdt._cat < 2:
        return _wrap(_val0(np.remainder(av, bv), rdt), rdt)
    if not isinstance(input, Tensor):
        # a number % tensor: torch has no derivative for it (a NotImplemented node)
        rdt = _result_dtype(other, input)
        with np.errstate(all="ignore"):
            y = _ops_remainder(np.asarray(input, rdt.np), np.asarray(other._data, rdt.np))
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
    return saves_inputs(exact(named(out, "FmodBackward1"), y), input, other)


def _val0(y, rdt):
    y = np.asarray(y, rdt.np)
    return y if y.ndim else y[()]


def _npv(v):
    return v._data if isinstance(v, Tensor) else v


def _rounded_div(input, other, mode):
    """(value, result dtype) of torch.div with rounding_mode ``mode`` ('floor' as Python's //,
    'trunc' toward zero)."""
    if mode not in ("floor", "trunc"):
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           "but found '%s'" % (mode,))
    rdt, av, bv = _int_operands(input, other, "div" if mode == "trunc" else "floor_divide",
                                "div_%s_cpu" % mode)
    with np.errstate(all="ignore"):
        if mode == "floor":
            y = np.floor_divide(av, bv)
        elif rdt._cat < 2:
            y = np.floor_divide(av, bv)          # toward zero: one up where the signs differ
            y = y + ((np.remainder(av, bv) != 0) & ((av < 0) != (bv < 0))).astype(y.dtype)
        else:
            y = np.trunc(np.divide(av, bv))
    return _val0(y, rdt), rdt


def floor_divide(input, other):
    y, rdt = _rounded_div(input, other, "floor")
    return not_differentiable(_wrap(y, rdt), "floor_divide", input, other)


def div_mode(input, other, rounding_mode):
    """torch.div with an explicit ``rounding_mode`` (None, 'floor', 'trunc'): torch's overload
    DivBackward2; the rounded quotient has zero gradient (a true division through the zero-
    derivative step row, carrying the exact rounded value)."""
    true_div = div
    if rounding_mode is None:
        return named(true_div(input, other), "DivBackward2")
    y, rdt = _rounded_div(input, other, rounding_mode)
    if not (STATE.enabled and any(isinstance(t, Tensor) and t._rg for t in (input, other))):
        return _wrap(y, rdt)
    q = _div(input, other)
    tap_entry(q, 0, 1)
    out = unary(q, "step", c=0.0 if rounding_mode == "floor" else 3.0)
    return exact(named(out, "DivBackward2", arity=2), y)


def lerp(input, end, weight):
    w_t = isinstance(weight, Tensor)
    for name, t in (("end", end), ("weight", weight if w_t else None)):
        if t is not None and t._dtype is not input._dtype:
            raise RuntimeError("expected dtype %s for `%s` but got dtype %s"
                               % (input._dtype._cname, name, t._dtype._cname))
    if input._dtype._cat < 2:
        raise NotImplementedError("\"lerp_kernel_%s\" not implemented for '%s'"
                                  % ("tensor" if w_t else "scalar", input._dtype._tname))
    _check_broadcast(input, end, weight)
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
    if w_t:         # (torch's LerpBackward1 saves self, end and weight)
        saves_inputs(out, input, end, weight)
    return exact(out, np.broadcast_to(val, out._data.shape))


# ----------------------------------------------------------------------------- where
def where(condition, input=None, other=None):
    if input is None and other is None:
        return nonzero(condition, as_tuple=True)
    cond = np.asarray(condition._data if isinstance(condition, Tensor) else condition)
    if cond.dtype == np.uint8:                   # (deprecated in torch, still accepted)
        import warnings
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                      "will be removed in a future version of PyTorch. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=2)
        cond = cond.astype(np.bool_)
    elif cond.dtype != np.bool_:
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
    d = np.asarray(input._data)
    # a 0-d tensor: dim 0 is itself; dim=() counts over all of them (as torch)
    axis = (_norm_dims(dim, d.ndim) or None) if d.ndim else None
    r = np.count_nonzero(d, axis=axis)
    return _wrap(np.asarray(r, np.int64)[()] if np.ndim(r) == 0 else np.asarray(r, np.int64), int64)


# ----------------------------------------------------------------------------- comparisons
def _cmp_fn(npf, name):
    def compute(input, other):
        if not isinstance(input, Tensor):
            input = _wrap(np.asarray(input), _DEFAULT[0] if isinstance(input, float) else int64)
        _check_shapes(input, other)
        r = npf(input._data, _npv(other))
        r = np.asarray(r, np.bool_)
        if GUARD[0] is not None:                  # tapegrad.func is recording: a branch?
            GUARD[0]("cmp", input, other, npf, r)     # (before the result exists: guarded)
        return _wrap(r if r.ndim else r[()], bool_)

    def f(input, other):
        for pos, v in ((1, input), (2, other)):
            if not isinstance(v, Tensor) and not _is_number(v):
                raise TypeError("%s(): argument '%s' (position %d) must be Tensor, not %s"
                                % (name, ("input", "other")[pos - 1], pos, _tyname(v)))
        return compute(input, other)

    # the operator (t == x): an ndarray compares elementwise for == and != only (torch);
    # other operands give NotImplemented (``t == "x"`` is then False, ``t < [1]`` a TypeError)
    eq_like = name in ("eq", "ne")

    def op(input, other):
        to = type(other)
        if to is Tensor or to is float or to is int or _is_number(other) or isinstance(
                other, Tensor) or (eq_like and isinstance(other, np.ndarray)):
            return compute(input, other)
        return NotImplemented
    f.__name__ = name
    f.op = op
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
        _guard_sel(input, "mask", name)          # (tapegrad.func: the mask)
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


def _bitwise(npf, name, kernel=None):
    def f(input, other):
        rdt, av, bv = _int_operands(input, other, name, kernel)   # (shifts: not for bool)
        if rdt._cat == 2:
            raise NotImplementedError("\"%s\" not implemented for '%s'"
                                      % (kernel or name + "_cpu", rdt._tname))
        r = np.asarray(npf(av, bv), rdt.np)
        return _wrap(r if r.ndim else r[()], rdt)
    f.__name__ = name
    return f


bitwise_and = _bitwise(np.bitwise_and, "bitwise_and")
bitwise_or = _bitwise(np.bitwise_or, "bitwise_or")
bitwise_xor = _bitwise(np.bitwise_xor, "bitwise_xor")


def _lshift(a, s):
    bits = 8 * a.dtype.itemsize
    out = (s < 0) | (s >= bits)
    return np.where(out, 0, np.left_shift(a, np.where(out, 0, s).astype(a.dtype)))


def _rshift(a, s):
    bits = 8 * a.dtype.itemsize
    out = (s < 0) | (s >= bits)
    return np.where(out, np.where(a < 0, -1, 0),
                    np.right_shift(a, np.where(out, 0, s).astype(a.dtype)))


bitwise_left_shift = _bitwise(_lshift, "bitwise_left_shift", "lshift_cpu")
bitwise_right_shift = _bitwise(_rshift, "bitwise_right_shift", "rshift_cpu")


def bitwise_not(input):
    if input._dtype._cat == 2:
        raise NotImplementedError("\"bitwise_not_cpu\" not implemented for '%s'"
                                  % input._dtype._tname)
    r = np.asarray(np.invert(input._data))
    return _wrap(r if r.ndim else r[()], input._dtype)


def _as_op(f, reflected=False):
    """Tensor operator form of binary function ``f``: NotImplemented for an operand ``f`` does
    not take (an ndarray goes to numpy's ufunc, others raise Python's TypeError), as in torch."""
    if reflected:
        def op(self, other):
            if isinstance(other, Tensor) or _is_number(other):
                return f(other, self)
            return NotImplemented
    else:
        def op(self, other):
            if isinstance(other, Tensor) or _is_number(other):
                return f(self, other)
            return NotImplemented
    return op


# ----------------------------------------------------------------------------- more math
# Compositions of rows with torch's node names; values carry numpy's exact result (``exact``),
# gradients follow from the composition (checked against torch and finite differences in
# tests/test_math.py).
def _grads(*ts):
    return STATE.enabled and any(isinstance(t, Tensor) and t._rg for t in ts)


def _float_operand(x, opname):
    if not isinstance(x, Tensor):
        raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s"
                        % (opname, _tyname(x)))
    return _floatify(x)


def clone(input, *, memory_format=None):
    return input.clone()


def _rdt3(a, b, c):
    """The result dtype of three tensors (a dimensioned operand first)."""
    dims = [t for t in (a, b, c) if t._data.ndim]
    rdt = None
    for group in (dims, [t for t in (a, b, c) if not t._data.ndim]):
        for t in group:
            if rdt is None:
                rdt = t._dtype
            elif group is dims or t._dtype._cat > rdt._cat:
                rdt = promote_types(rdt, t._dtype)
    return rdt


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 * tensor2 (AddcmulBackward0 over the three tensors)."""
    _check_broadcast(input, tensor1, tensor2)
    rdt = _rdt3(input, tensor1, tensor2)
    with np.errstate(all="ignore"):
        y = np.asarray(_npval(input, rdt) + rdt.np.type(value) * _npval(tensor1, rdt)
                       * _npval(tensor2, rdt), rdt.np)
    if not _grads(input, tensor1, tensor2):
        return _wrap(_val0(y, rdt), rdt)
    p = tap(tensor1, 1) * tap(tensor2, 2)
    q = p * value if value != 1 else p
    out = tap(input, 0) + q
    hide(p, q if q is not p else None)
    return exact(named(out, "AddcmulBackward0", arity=3), np.broadcast_to(y, out._data.shape))


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value * tensor1 / tensor2 (AddcdivBackward0 over the three tensors)."""
    if tensor1._dtype._cat < 2 and tensor2._dtype._cat < 2:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future "
                           "release addcdiv will perform a true division of tensor1 and tensor2. "
                           "The historic addcdiv behavior can be implemented as (input + value * "
                           "torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and "
                           "as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * "
                           "tensor1 / tensor2), for all dtypes.")
    _check_broadcast(input, tensor1, tensor2)
    rdt = _rdt3(input, tensor1, tensor2)
    with np.errstate(all="ignore"):
        y = np.asarray(_npval(input, rdt) + rdt.np.type(value) * _npval(tensor1, rdt)
                       / _npval(tensor2, rdt), rdt.np)
    if not _grads(input, tensor1, tensor2):
        return _wrap(_val0(y, rdt), rdt)
    p = tap(tensor1, 1) / tap(tensor2, 2)
    q = p * value if value != 1 else p
    out = tap(input, 0) + q
    hide(p, q if q is not p else None)
    return exact(named(out, "AddcdivBackward0", arity=3), np.broadcast_to(y, out._data.shape))


def _float_pair(a, b, opname):
    """Both operands as tensors of their floating result dtype (integers: the default float;
    torch's error for integer-only kernels)."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        bad = b if isinstance(a, Tensor) else a
        raise TypeError("%s(): argument '%s' (position %d) must be Tensor, not %s"
                        % (opname, "other" if isinstance(a, Tensor) else "input",
                           2 if isinstance(a, Tensor) else 1, _tyname(bad)))
    _check_shapes(a, b)
    rdt = _result_dtype(a, b)
    if rdt._cat < 2:
        raise NotImplementedError("\"%s_cpu\" not implemented for '%s'" % (opname, rdt._tname))
    return (a if a._dtype is rdt else _convert(a, rdt)), (b if b._dtype is rdt else
                                                          _convert(b, rdt)), rdt


def _logaddexp(a, b, opname, name, base2):
    a2, b2, rdt = _float_pair(a, b, opname)
    with np.errstate(all="ignore"):
        y = (np.logaddexp2 if base2 else np.logaddexp)(a2._data, b2._data).astype(rdt.np)
    if not _grads(a, b):
        return _wrap(_val0(y, rdt), rdt)
    # a - log_sigmoid(a - b) (base 2: a - log_sigmoid((a - b) ln 2) / ln 2): torch's
    # gradients sigmoid(a - b), sigmoid(b - a), smooth at ties (a max / |a - b| composition
    # lost the second derivative there); a nan operand gives both a nan gradient
    # (each element through the branch whose larger operand leads: no cancellation in
    # 1 - sigmoid, gradients exact to rounding)
    ta, tb = tap(a2, 0), tap(b2, 1)
    ln2 = math.log(2.0)

    def branch(p, q):
        d = p - q
        ls = unary(scale(d, ln2) if base2 else d, "log_sigmoid")
        return p + scale(ls, -1.0 / ln2 if base2 else -1.0)
    with np.errstate(invalid="ignore"):
        m = np.asarray(np.broadcast_to(a2._data >= b2._data, y.shape))
    out = where(_wrap(m, bool_), branch(ta, tb), branch(tb, ta))
    _hide_below(out, a, b)
    return exact(named(out, name, arity=2), y)


def abs_(x):
    _abs = abs
    return _abs(x)


def logaddexp(input, other):
    return _logaddexp(input, other, "logaddexp", "LogaddexpBackward0", False)


def logaddexp2(input, other):
    return _logaddexp(input, other, "logaddexp2", "Logaddexp2Backward0", True)


def _inverse_hyperbolic(input, name, npf, build):
    """numpy's value of ``npf``, the gradient through the composition ``build(x)`` (its
    entries hidden below the one named ``name``)."""
    x = _float_operand(input, name)
    with np.errstate(all="ignore"):
        y = npf(x._data)
    if not _grads(x):
        return _wrap(_val0(y, x._dtype), x._dtype)
    out, arity = build(x)
    _hide_below(out, x)
    return exact(named(out, name.capitalize() + "Backward0", arity=arity), y)


def _atanh_graph(x):
    # (log1p(x) - log1p(-x)) / 2
    return scale(unary(x, "log1p") - unary(-x, "log1p"), 0.5), None


def asinh(input):
    return _rsqrt_derivative(input, "asinh", np.arcsinh, 1.0)


def acosh(input):
    return _rsqrt_derivative(input, "acosh", np.arccosh, -1.0)


_RSQ = {}


def _rsqrt_derivative(input, name, npf, c):
    """numpy's value of ``npf``; the gradient torch's g * rsqrt(x^2 + c) written with tapegrad
    ops (higher order works): nan at nan, 0 at +-inf, real below 1 for acosh, as torch's."""
    x = _float_operand(input, name)
    if not _grads(x):
        with np.errstate(all="ignore"):
            y = npf(x._data)
        return _wrap(_val0(y, x._dtype), x._dtype)
    fn = _RSQ.get(name)
    if fn is None:
        from .special import _pointwise_fn
        fn = _RSQ[name] = _pointwise_fn(name.capitalize(), npf, globals()[name],
                                        lambda x, y: (x * x + c).rsqrt())
    return named(fn.apply(x), name.capitalize() + "Backward0")


def atanh(input):
    return _inverse_hyperbolic(input, "atanh", np.arctanh, _atanh_graph)


arcsinh, arccosh, arctanh = asinh, acosh, atanh


def float_power(input, exponent):
    """input ** exponent in float64 (PowBackward0/1 over ToCopyBackward0 casts)."""
    _pow = pow
    a = input if not isinstance(input, Tensor) or input._dtype is float64 else _convert(
        input, float64)
    if isinstance(exponent, Tensor):
        b = exponent if exponent._dtype is float64 else _convert(exponent, float64)
    else:
        b = float(exponent)
    if not isinstance(a, Tensor):
        a = float(a)
    return _pow(a, b)


def copysign(input, other):
    """|input| with the sign of ``other``: the gradient to input is +-1 (0 where input is 0), to
    other 0 (torch's CopysignBackward0/1)."""
    a = _float_operand(input, "copysign")
    ot = isinstance(other, Tensor)
    if ot:
        _check_shapes(a, other)
    rdt = _result_dtype(a, other)
    if rdt._cat < 2:
        rdt = _DEFAULT[0]
    av, bv = _npval(a, rdt), _npval(other, rdt)
    y = np.asarray(np.copysign(av, bv), rdt.np)
    if not _grads(a, other):
        return _wrap(_val0(y, rdt), rdt)
    a2 = a if a._dtype is rdt else _convert(a, rdt)
    with np.errstate(invalid="ignore"):
        flip = np.where(av != 0, np.broadcast_to(y, np.broadcast_shapes(np.shape(av), y.shape))
                        / np.where(av != 0, av, 1), 0).astype(rdt.np)
    p = tap(a2, 0) * _wrap(flip, rdt)
    if ot and other._rg:
        zero = tap(other, 1) * 0.0
        out = p + zero
        hide(p, zero)
    else:
        out = p
    if a2 is not a:
        hide(a2)
    out = saves_result(exact(named(out, "CopysignBackward0" if ot else "CopysignBackward1",
                                   arity=2 if ot else 1), y))
    return saves_inputs(out, a) if a._rg else out


def nextafter(input, other):
    """The next float after input toward other (no derivative: NextafterBackward0 raises)."""
    if not isinstance(other, Tensor):
        raise TypeError("nextafter(): argument 'other' (position 2) must be Tensor, not %s"
                        % _tyname(other))
    _check_shapes(input, other)
    rdt = _result_dtype(input, other)
    if rdt._cat < 2:
        raise NotImplementedError("\"nextafter_cpu\" not implemented for '%s'" % rdt._tname)
    av = _npval(input, rdt)
    y = np.asarray(np.nextafter(av, _npval(other, rdt)), rdt.np)
    if not _grads(input, other):
        return _wrap(_val0(y, rdt), rdt)
    # torch's derivative: 1 for input where input != other (0 where equal), 0 for other
    a = input if input._dtype is rdt else _convert(input, rdt)
    moved = np.asarray(np.broadcast_to(av != _npval(other, rdt), y.shape), rdt.np)
    with np.errstate(all="ignore"):
        rest = np.asarray(y - np.broadcast_to(av, y.shape) * moved, rdt.np)
    out = tap(a, 0) * _wrap(moved, rdt) + _wrap(rest, rdt)
    if other._rg:
        out = out + tap(other, 1) * 0.0
    _hide_below(out, input, other)
    out = exact(named(out, "NextafterBackward0", arity=2), y)
    return saves_inputs(out, input, other) if input._rg else out


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """nan, +inf and -inf replaced (defaults: 0 and the dtype's extremes); the gradient passes
    where the input is finite (NanToNumBackward0)."""
    if input._dtype._cat < 2:
        return _wrap(np.array(input._data, copy=True), input._dtype)
    d = input._data
    y = np.nan_to_num(d, nan=nan, posinf=posinf, neginf=neginf).astype(input._dtype.np)
    if not _grads(input):
        return _wrap(_val0(y, input._dtype), input._dtype)
    out = where(_wrap(np.asarray(np.isfinite(d)), bool_), tap(input, 0),
                _wrap(np.asarray(y), input._dtype))
    return named(out, "NanToNumBackward0", arity=1)


def deg2rad(input):
    return scale(_float_operand(input, "deg2rad"), math.pi / 180.0, "Deg2RadBackward0")


def rad2deg(input):
    return scale(_float_operand(input, "rad2deg"), 180.0 / math.pi, "Rad2DegBackward0")


def heaviside(input, values):
    """0 below zero, 1 above, ``values`` at zero (no derivative)."""
    if not isinstance(values, Tensor):
        raise TypeError("heaviside(): argument 'values' (position 2) must be Tensor, not %s"
                        % _tyname(values))
    if input._dtype is not values._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    _check_shapes(input, values)
    d = input._data
    y = np.asarray(np.where(d == 0, values._data, d > 0), input._dtype.np)
    return not_differentiable(_wrap(_val0(y, input._dtype), input._dtype), "heaviside", input,
                              values)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    e = _npv(elements)
    t = _npv(test_elements)
    r = np.isin(e, t, invert=invert)
    return _wrap(np.asarray(r) if np.ndim(r) else np.asarray(r)[()], bool_)


def vdot(input, other):
    """Dot product of 1-D tensors (VdotBackward0)."""
    from ._matrix import dot
    if input._dtype is not other._dtype:
        raise RuntimeError("expected both vectors to have same dtype, but found %s and %s"
                           % (input._dtype._tname, other._dtype._tname))
    return named(dot(input, other), "VdotBackward0")


def inner(input, other):
    """Sum over the last dimensions: input.shape[:-1] + other.shape[:-1]."""
    from ._matrix import _matmul2 as matmul, dot
    if input._data.ndim == 0 or other._data.ndim == 0:
        return input * other
    if input._data.shape[-1] != other._data.shape[-1]:
        raise RuntimeError("inner() the last dimension must match on both input tensors but got "
                           "shapes %s and %s" % (list(input._data.shape), list(other._data.shape)))
    if input._data.ndim == 1 and other._data.ndim == 1:
        return dot(input, other).reshape(())
    k = input._data.shape[-1]
    out = matmul(input.reshape(-1, k), other.reshape(-1, k).t())
    return out.reshape(tuple(input._data.shape[:-1]) + tuple(other._data.shape[:-1]))


# baddbmm and addr scale the product by alpha = 0 (inf * 0 = nan stays)
_ALPHA0_KEEPS_NAN = ("BaddbmmBackward0", "AddrBackward0")


def _add_scaled(input, prod, beta, alpha, name, inputs):
    """beta * input + alpha * prod, the top named ``name`` over the three ``inputs`` (tapped in
    the composition; everything below the top hidden)."""
    p = prod if alpha == 1 else prod * alpha
    zero = beta == 0 and isinstance(input, Tensor) and input._rg and STATE.enabled
    if beta == 0 and not zero:
        b = None
    else:
        # (beta 0: torch's gradient for input is a zero tensor, and its values are ignored)
        b = tap(input, 0) if beta == 1 else tap(input, 0) * beta
    out = p if b is None else b + p
    _hide_below(out, *inputs)
    out = named(out, name, arity=3)
    if alpha == 0 and name not in _ALPHA0_KEEPS_NAN:
        # (addmm, addmv, addbmm: torch ignores the product's values, inf * 0)
        return exact(out, np.array(np.broadcast_to(np.zeros((), out._dtype.np) if beta == 0
                                                   else b._data, out._data.shape)))
    return exact(out, np.array(np.broadcast_to(p._data, out._data.shape))) if zero else out


def addmv(input, mat, vec, *, beta=1, alpha=1):
    from ._matrix import mv
    return _add_scaled(input, mv(tap(mat, 1), tap(vec, 2)), beta, alpha, "AddmvBackward0",
                       (input, mat, vec))


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    if vec1._data.ndim != 1 or vec2._data.ndim != 1:
        raise RuntimeError("addr: Expected 1-D argument vec1, but got %d-D" % vec1._data.ndim)
    prod = tap(vec1, 1).reshape(-1, 1) * tap(vec2, 2).reshape(1, -1)
    return _add_scaled(input, prod, beta, alpha, "AddrBackward0", (input, vec1, vec2))


def _bmm_tapped(b1, b2):
    """bmm(b1, b2) as one mm per batch element, the selections tapped as inputs 1 and 2."""
    from ._matrix import bmm
    if not _grads(b1, b2) or b1._data.ndim != 3 or b2._data.ndim != 3 or not b1._data.shape[0]:
        return bmm(b1, b2)
    bmm(b1.detach(), b2.detach())                        # (torch's shape and dtype checks)
    B, m, k = b1._data.shape
    n = b2._data.shape[2]
    outs = []
    for i in range(B):
        ai, bi = tap_entry(b1[i], 1), tap_entry(b2[i], 2)
        outs.append(_mm_core(ai, bi, m, k, n, np.matmul(ai._data, bi._data), "MmBackward0"))
    return stack(outs)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _add_scaled(input, _bmm_tapped(batch1, batch2), beta, alpha, "BaddbmmBackward0",
                       (input, batch1, batch2))


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    return _add_scaled(input, _bmm_tapped(batch1, batch2).sum(0), beta, alpha,
                       "AddbmmBackward0", (input, batch1, batch2))


def chain_matmul(*matrices):
    from ._matrix import mm
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:      # torch: a copy of the one matrix (CloneBackward0)
        return clone(matrices[0])
    out = matrices[0]
    for m in matrices[1:]:
        out = mm(out, m)
    return out


# ----------------------------------------------------------------------------- Tensor methods
def _install(Tensor):
    T = Tensor
    for nm_ in ("tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh", "erf",
                "log1p", "expm1", "exp2", "log2", "log10", "rsqrt", "square", "floor", "ceil",
                "round", "trunc", "fix", "sign", "sgn", "frac", "clamp", "clip", "clamp_min",
                "clamp_max", "maximum", "minimum", "fmax", "fmin", "atan2", "arctan2", "hypot",
                "remainder", "fmod", "floor_divide", "lerp", "nonzero", "argwhere", "count_nonzero",
                "eq", "ne", "lt", "le", "gt", "ge", "not_equal", "less", "less_equal",
                "greater", "greater_equal", "equal", "isclose", "isnan", "isinf", "isfinite",
                "isposinf", "isneginf", "signbit", "logical_and", "logical_or", "logical_xor",
                "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                "bitwise_left_shift", "bitwise_right_shift", "addcmul", "addcdiv", "logaddexp",
                "logaddexp2", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh",
                "float_power", "copysign", "nextafter", "nan_to_num", "deg2rad", "rad2deg",
                "heaviside", "isin", "vdot", "inner", "addmv", "addr", "baddbmm", "addbmm"):
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
    T.__floordiv__ = _as_op(floor_divide)
    T.__rfloordiv__ = _as_op(floor_divide, True)
    T.__mod__ = _as_op(remainder)
    T.__rmod__ = _as_op(remainder, True)
    T.__and__ = T.__rand__ = _as_op(bitwise_and)
    T.__or__ = T.__ror__ = _as_op(bitwise_or)
    T.__xor__ = T.__rxor__ = _as_op(bitwise_xor)
    T.__lshift__ = _as_op(bitwise_left_shift)
    T.__rlshift__ = _as_op(bitwise_left_shift, True)
    T.__rshift__ = _as_op(bitwise_right_shift)
    T.__rrshift__ = _as_op(bitwise_right_shift, True)

    def _invert(self):
        if self._dtype._cat == 2:
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                            "tensors")
        return bitwise_not(self)
    T.__invert__ = _invert
    T.__eq__, T.__ne__, T.__lt__, T.__le__, T.__gt__, T.__ge__ = (
        eq.op, ne.op, lt.op, le.op, gt.op, ge.op)
    T.__hash__ = lambda self: id(self)

    def _inplace_fn(f):
        def g(self, *args, **kw):
            return self._inplace(args[0] if args else None, lambda s, o: f(s, *args, **kw))
        return g
    for nm_ in ("clamp", "clip", "clamp_min", "clamp_max", "floor", "ceil", "round", "trunc",
                "sign", "frac", "tan", "sinh", "cosh", "erf", "log1p", "expm1", "exp2", "log2",
                "log10", "rsqrt", "square", "asin", "acos", "atan", "atan2", "hypot", "remainder", "fmod",
                "floor_divide", "lerp", "maximum", "minimum", "addcmul", "addcdiv",
                "copysign", "nan_to_num",
                "deg2rad", "rad2deg", "logaddexp", "logaddexp2", "sgn",
                "addmv", "addr", "baddbmm", "addbmm"):
        f = globals()[nm_]
        setattr(T, nm_ + "_", _inplace_fn(f))
    fp_ = _inplace_fn(float_power)

    def float_power_(self, exponent):
        # torch: the result is float64, which only a float64 base can hold
        if self._dtype is not float64:
            raise RuntimeError("the base given to float_power_ has dtype %s but the operation's "
                               "result requires dtype Double" % self._dtype._tname)
        return fp_(self, exponent)
    T.float_power_ = float_power_
    for nm_ in ("asinh", "acosh", "atanh"):
        setattr(T, nm_ + "_", _inplace_fn(_no_inplace_derivative(nm_)))
        setattr(T, "arc" + nm_[1:] + "_", getattr(T, nm_ + "_"))
    for nm_ in ("exp", "log", "sin", "cos", "tanh", "sigmoid", "sqrt", "abs", "neg", "reciprocal"):
        setattr(T, nm_ + "_", _inplace_fn(globals()[nm_]))
    for nm_ in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                "bitwise_right_shift", "bitwise_not"):
        setattr(T, nm_ + "_", _inplace_fn(globals()[nm_]))
    T.__imod__ = T.remainder_
    T.__ifloordiv__ = T.floor_divide_
    T.__iand__, T.__ior__, T.__ixor__ = T.bitwise_and_, T.bitwise_or_, T.bitwise_xor_
    T.__ilshift__, T.__irshift__ = T.bitwise_left_shift_, T.bitwise_right_shift_




class TensorMethods:
    """Tensor methods of this module, attached by tapegrad/_methods.py."""

    def to(self, *args, **kwargs):
        """A tensor of another dtype (device: the CPU only); ``self`` when nothing changes,
        unless ``copy=True``."""
        dt, dev = kwargs.pop("dtype", None), kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError("to() got an unexpected keyword argument '%s'" % next(iter(kwargs)))
        flags = []
        for k, a in enumerate(args):
            if k == 0 and isinstance(a, bool) and dt is None:
                dt = _as_dtype(bool)            # torch parses a bool first argument as the dtype
                continue
            if isinstance(a, dtype) or a is float or a is int or (a is bool and dt is None):
                if dt is not None:
                    raise TypeError("to() received an invalid combination of arguments - got "
                                    "two dtypes")
                dt = _as_dtype(a)
            elif isinstance(a, Tensor):
                dt = a._dtype
            elif isinstance(a, bool):
                flags.append(a)                  # non_blocking, copy
            elif isinstance(a, (str, device, numbers.Integral)):
                dev = a
            else:
                raise TypeError("to() received an invalid combination of arguments - got (%s)"
                                % _tyname(a))
        if len(flags) > 1:
            copy = flags[1]
        _check_device(dev)
        dt = _as_dtype(dt, "to")
        if dt is None or dt is self._dtype:
            return _convert(self, self._dtype) if copy else self
        return _convert(self, dt)

    # ---- arithmetic. An operand the function rejects with TypeError (an ndarray, a list, a
    # string) gives NotImplemented, as in torch: Python then tries the other operand, so
    # ``t + ndarray`` is numpy's ufunc over ``t.__array__()`` wrapped back (float64 Tensor).
    # (__add__, __radd__, __sub__, __mul__, __rmul__, __pow__: the op functions' operator forms,
    # assigned after them at the end of the module)
    def __rsub__(self, other):
        to = type(other)
        if (to is float or to is int) and self._dtype._cat == 2:    # number - floating tensor
            y = np.subtract(other, self._data)
            if self._rg and STATE.enabled:
                return _record_binary(_SUB_OP, other, self, y, self._dtype, nm=_RSUB_NM)
            return _wrap(y, self._dtype)
        try:
            out = _sub(other, self)
        except TypeError:
            return NotImplemented
        if out._tape is not None:
            _rename_last(out, "RsubBackward1")
        return out

    def __truediv__(self, other):
        try:
            if type(other) is float or (type(other) is Tensor and self._dtype._cat == 2):
                return _div(self, other)
            return div(self, other)
        except TypeError:
            return NotImplemented

    def __rtruediv__(self, other):
        # torch: other / x = x.reciprocal() * other (an ndarray ``other``: numpy's multiply)
        r = reciprocal(self)
        to = type(other)
        return mul(r, other) if to is float or to is int or _is_number(other) else r * other

    def __rpow__(self, other):
        try:
            return pow(other, self)
        except TypeError:
            return NotImplemented

    def __pos__(self):
        return positive(self)

    def __abs__(self):
        return abs(self)

    def add(self, other, alpha=1):
        return add(self, other, alpha=alpha)

    def sub(self, other, alpha=1):
        return sub(self, other, alpha=alpha)

    def mul(self, other):
        return mul(self, other)

    def div(self, other, *, rounding_mode=_TRUE):
        return div(self, other, rounding_mode=rounding_mode)

    def true_divide(self, other):
        return div(self, other)

    def pow(self, other):
        return pow(self, other)

    def neg(self):
        return neg(self)

    def reciprocal(self):
        return reciprocal(self)

    def add_(self, other, alpha=1):
        return self._inplace(other, lambda s, o: add(s, o, alpha=alpha), True)

    def sub_(self, other, alpha=1):
        return self._inplace(other, lambda s, o: sub(s, o, alpha=alpha), True)

    def mul_(self, other):
        return self._inplace(other, mul, True)

    def div_(self, other):
        return self._inplace(other, div, True)

    def pow_(self, other):
        return self._inplace(other, pow, True)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ipow__(self, other):
        return self._inplace(other, pow, True)

    def zero_(self):
        return self.fill_(0, zero=True)

    def fill_(self, value, zero=False):
        vt = value if isinstance(value, Tensor) else None
        if vt is not None and vt._data.ndim:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               "%d dimensions." % vt._data.ndim)
        if STATE.enabled and (self._rg or (vt is not None and vt._rg)):
            if self._rg and self._tape is None:
                _leaf_error(self)
            if self._dtype.slot >= 0:
                if self._base is not None:
                    _view_checks(self)
                    _write(self, None, value, "CopySlices")
                elif vt is not None:
                    _write(self, None, value, "FillBackward3")
                else:
                    # the result no longer depends on the old value: a mul-by-zero entry
                    name = "ZeroBackward0" if zero else "FillBackward2"
                    y = np.full(self._data.shape, value, self._dtype.np)
                    self._inplace(0.0, lambda s, o: _record_binary(
                        BY_NAME["mul"], s, 0.0, y if y.ndim else y[()], s._dtype, nm=_nm(name)))
                return self
        d = self._arr()
        d[...] = vt._data if vt is not None else value
        _bump(self)
        return self

    def copy_(self, src, non_blocking=False):
        if not isinstance(src, Tensor):
            raise TypeError("copy_(): argument 'other' (position 1) must be Tensor, not %s"
                            % _type_name(src))
        d, sd = self._data, src._data
        if sd.shape != d.shape:
            _inplace_shape_check(self, src)
        if src._vc is self._vc and src is not self and self._vc is not None:
            _check_overlap(d, sd)
        if STATE.enabled and (self._rg or src._rg):
            if self._rg and self._tape is None:
                _leaf_error(self)
            if self._dtype.slot >= 0:
                if self._base is not None:
                    _view_checks(self)
                _write(self, None, src, "CopySlices" if self._base is not None else "CopyBackwards")
                return self
        self._arr()[...] = sd
        _bump(self)
        return self

    def abs(self):
        return abs(self)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return allclose(self, other, rtol, atol, equal_nan)

    divide = div
    negative = neg


class TensorOperators:
    """Tensor methods that are this module's functions themselves, attached by _methods.py."""
    # The hottest operators call the op functions directly (one Python call level less per op);
    # their operator forms (``.op``) return NotImplemented for operands they reject.
    __add__ = _add.op
    __radd__ = _add.op             # torch: x.add(other), the tensor first
    __rmul__ = mul.op
    __pow__ = _pow_op
    __neg__ = neg
    __sub__ = _sub.op
    __mul__ = mul.op
    exp = exp
    log = log
    sin = sin
    cos = cos
    tanh = tanh
    sigmoid = sigmoid
    relu = relu
    sqrt = sqrt


# ----------------------------------------------------------------------------- composed elementwise functions, in-place variants, python callables
def _torch():
    import tapegrad     # the torch namespace: the bodies below call T.<name> (KNOWN_UPWARD)
    return tapegrad


def _mul_scalar(t, c):
    """t * c as torch's C++ composites record it (the Scalar overload: MulBackward1)."""
    return scale(t, c, name="MulBackward1") if t.requires_grad else t * c


def _div_scalar(t, c):
    """t / c recorded as DivBackward1 (torch's Scalar overload)."""
    if not t.requires_grad:
        return t / c
    out = scale(t, 1.0 / c, name="DivBackward1")
    return exact(out, np.asarray(t._data) / np.asarray(c, t._dtype.np))


def ldexp(input, other):
    """input * 2^other (LdexpBackward0: d input = 2^other, d other = ln 2 * input * 2^other)."""
    T = _torch()
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


def _int_binary(npf, name):
    def f(input, other):
        T = _torch()
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
    T = _torch()
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


def _cmp_inplace(fn, name):
    """self.eq_(other) ...: the comparison's 0/1 written in self's dtype; with gradients a node
    ``name`` whose gradient is zero, as torch's."""
    def f(self, other):

        def op(s, o):
            val = fn(s, o)
            if not (STATE.enabled and (s._rg or (isinstance(o, Tensor) and o._rg))):
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
    T = _torch()
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


def conj_physical_(input):
    return input.conj_physical_()


def _inplace_of(fn):
    def g(self, *args, **kw):
        return self._inplace(args[0] if args else None,
                             lambda s, o: fn(_owned(s), *args, **kw))
    return g


def _install_composed(Tensor):
    T = _torch()
    Tn = Tensor
    inplace_of = _inplace_of
    Tn.ldexp = ldexp
    Tn.ldexp_ = inplace_of(ldexp)
    Tn.gcd, Tn.lcm = gcd, lcm
    Tn.gcd_, Tn.lcm_ = inplace_of(gcd), inplace_of(lcm)
    Tn.is_nonzero = lambda self: T.is_nonzero(self)
    Tn.isreal = lambda self: T.isreal(self)
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
    for nm, fn in (("heaviside", heaviside), ("nextafter", nextafter)):
        setattr(Tn, nm + "_", inplace_of(fn))
    Tn.cumprod_ = lambda self, dim, *, dtype=None: self._inplace(
        None, lambda s, o: T.cumprod(s, dim, dtype=dtype))
    Tn.angle = angle
    Tn.conj_physical_ = lambda self: self._inplace(     # (real: a write of the same values)
        None, lambda s, o: named(s.clone(), "ConjPhysicalBackward1") if STATE.enabled and s._rg
        else s.clone())
    Tn.apply_, Tn.map_, Tn.map2_ = _apply_, _map_, _map2_
    Tn.nonzero_static = lambda self, *, size, fill_value=-1: nonzero_static(
        self, size=size, fill_value=fill_value)
