"""torch.nn.functional: activations and losses.

Activations with their own op-table rows (leaky_relu, elu, gelu, silu, softplus, logsigmoid)
record one entry; softmax/log_softmax and the losses are compositions of primitives whose
intermediate entries are hidden and whose last entry carries torch's grad_fn name
(``SoftmaxBackward0``, ``NllLossBackward0``, ``MseLossBackward0`` ...).
"""
import sys as _sys
import math
import numbers
import warnings

import numpy as np

from .. import _math
from .._state import STATE, no_grad as _no_grad
from ..tensor import Tensor, _as_dtype, _wrap, bool_, int64
from ..tensor import _norm_dims
from .._record import _record_unary, _record_unary_sum, _nm
from .._math import sigmoid, tanh
from .._math import relu as _relu
from ..tensor import _guard_sel
from .._record import hide, named, tap, tap_entry
from .._record import saves_result as _saves_result, saves_inputs as _saves_inputs
from .._record import private_result as _private_result
from .._math import exact, unary
from .._compiled import _vmath
from ..ops import BY_NAME as _ROWS
from .._core.names import ONE_INPUT, multi_name_id
from .._core import tape as _tp
from . import _fused

ONE_INPUT.update({"MishBackward0", "GluBackward0", "HardswishBackward0", "CeluBackward0",
                  "CeluBackward1", "HardtanhBackward0", "ThresholdBackward0", "ThresholdBackward1",
                  "HardsigmoidBackward0", "SoftshrinkBackward0", "HardshrinkBackward0"})

_SOFTMAX_ROW, _LOG_SOFTMAX_ROW = _ROWS["softmax"], _ROWS["log_softmax"]

__all__ = ["relu", "relu_", "leaky_relu", "elu", "gelu", "silu", "softplus", "logsigmoid",
           "sigmoid", "tanh", "softmax", "log_softmax", "linear", "dropout", "mse_loss",
           "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "one_hot", "normalize",
           "softsign", "hardtanh", "relu6", "softmin", "mish", "tanhshrink", "selu", "celu",
           "leaky_relu_", "elu_", "celu_", "selu_", "hardtanh_", "threshold", "threshold_",
           "hardsigmoid", "hardswish", "softshrink", "hardshrink", "glu", "layer_norm",
           "batch_norm", "embedding", "kl_div", "scaled_dot_product_attention",
           "pairwise_distance", "gaussian_nll_loss", "poisson_nll_loss", "cosine_similarity"]


# ----------------------------------------------------------------------------- activations
# In-place forms (``inplace=True``, ``relu_``, ``elu_`` ...) return the input object, written
# through ``Tensor._inplace`` (the result's node re-pointed at the input, views re-derived).
# An entry that reads the input value before the write reads a snapshot (``_snapshot``), as
# torch's in-place nodes use the saved original or the output (LeakyReluBackward1 ...).
def _snapshot(x):
    """``x``'s node carrying a private copy of its value: entries recorded on it keep the value
    ``x`` has now when ``x`` is written in place afterwards."""
    d = x._data
    if type(d) is not np.ndarray:
        return x
    s = _wrap(d.copy(), x._dtype)
    s._rg, s._tape, s._node = x._rg, x._tape, x._node
    if s._tape is not None:
        _tp.register(s, s._tape)
    return s


def _act(input, inplace, f, name=None, iname=None, result=False):
    """``f(input)`` (its last entry named ``name``), or the same written into ``input`` (named
    ``iname``; ``f`` then sees a snapshot of the input). ``result``: torch's in-place node
    saves the result (elu_, celu_, selu_, leaky_relu_: writing it again makes backward raise)."""
    if not inplace:
        out = f(input)
        return named(out, name) if name else out

    def g(s, o):
        out = f(_snapshot(s) if s._rg and STATE.enabled else s)
        out = named(out, iname or name) if (iname or name) else out
        return _saves_result(out) if result else out
    return input._inplace(None, g)


def _float_only(input, kernel):
    if input._dtype._cat < 2:
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (kernel, input._dtype._tname))


def relu(input, inplace=False):
    if inplace:
        return relu_(input)
    return _relu(input)             # integers stay integers, bool raises (tensor.relu)


def relu_(input):
    return input._inplace(None, lambda s, o: relu(s))


def _masked_linear(input, mask, scale, shift, other, name):
    """``where(mask, input * scale + shift, other)``: a piecewise-linear activation whose
    gradient is ``scale`` where ``mask`` holds, 0 elsewhere (torch's masks, strict at the
    kinks); ``shift``: a number or an array, ``other``: an array of the constant values."""
    x = input
    dt = x._dtype.np
    plain = np.ndim(shift) == 0 and shift == 0.0
    if not (x._rg and STATE.enabled):
        d = x._data
        m = d * dt.type(scale) if scale != 1.0 else d
        y = np.where(mask, m if plain else m + np.asarray(shift, dt), other).astype(dt)
        return _wrap(y if y.ndim else y[()], x._dtype)
    sc = x if scale == 1.0 else _math.scale(x, scale)
    mid = sc if plain else sc + (float(shift) if np.ndim(shift) == 0 else
                                 _wrap(np.asarray(shift, dt), x._dtype))
    out = _math.where(_wrap(np.asarray(mask), bool_), mid, _wrap(np.asarray(other, dt), x._dtype))
    hide(*[t for t in (sc, mid) if t is not x])
    return named(out, name)


def threshold(input, threshold, value, inplace=False):
    """y = x where x > threshold, value elsewhere (ThresholdBackward0: the gradient passes
    where x > threshold)."""
    def f(x):
        d = x._data
        with np.errstate(invalid="ignore"):     # (torch: x <= threshold ? value : x; nan stays)
            m = np.asarray(~(d <= threshold))
        _guard_sel(x, "cuts", float(threshold))      # (tapegrad.func: the mask)
        return _masked_linear(x, m, 1.0, 0.0, np.full(np.shape(d), value, x._dtype.np),
                              "ThresholdBackward0")
    return _act(input, inplace, f, iname="ThresholdBackward1")


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, inplace=True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    _float_only(input, "leaky_relu_cpu")
    if isinstance(negative_slope, bool) or not isinstance(negative_slope, numbers.Number):
        raise TypeError("leaky_relu(): argument 'negative_slope' (position 2) must be Number, "
                        "not %s" % type(negative_slope).__name__)
    c = float(negative_slope)
    if inplace and c < 0 and input._rg and STATE.enabled:
        raise RuntimeError("In-place leakyReLu backward calculation is triggered with a negative "
                           "slope which is not supported. This is caused by calling in-place "
                           "forward function with a negative slope, please call out-of-place "
                           "version instead. File an issue at https://github.com/pytorch/pytorch "
                           "if you do require supporting in-place leakRelu backward calculation "
                           "with negative slope")
    return _act(input, inplace, lambda x: unary(x, "leaky_relu", c=c), iname="LeakyReluBackward1",
                result=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, True)


def _nan_passes(x, f, coef, name):
    """``f(x)``, with torch's elu-family gradient ``coef`` at nan inputs (its backward's
    ``x <= 0`` test fails there): nan entries are routed around ``f``. Called when recording
    and the input's sum is nan (a nan entry, or inf - inf)."""
    _guard_sel(x, "mask", "isnan")          # (tapegrad.func: the mask below)
    m = _wrap(np.asarray(np.isnan(x._data)), bool_)
    xs = _math.where(m, 0.0, x)
    e = f(xs)
    p = _math.scale(x, coef)
    out = _math.where(m, p, e)
    hide(xs, e, p)
    return named(out, name)


def _nan_sum(x):
    _guard_sel(x, "mask", "isnan")          # (tapegrad.func: which way the recording goes)
    return x._rg and STATE.enabled and math.isnan(np.add.reduce(x._data, None))


def elu(input, alpha=1.0, inplace=False):
    _float_only(input, "elu_cpu")
    c = float(alpha)

    def f(x):
        if _nan_sum(x):
            return _nan_passes(x, lambda v: unary(v, "elu", c=c), 1.0, "EluBackward0")
        out = unary(x, "elu", c=c)
        # torch's EluBackward0 saves the input: a write to the result changes nothing
        return out if inplace else _private_result(out)
    return _act(input, inplace, f, iname="EluBackward1", result=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, True)


def celu(input, alpha=1.0, inplace=False):
    """alpha elu(x / alpha) (CeluBackward0)."""
    _float_only(input, "elu_cpu")
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")

    def f(x):
        if alpha < 0:       # x > 0 ? x : alpha (exp(x / alpha) - 1); x / alpha flips the sign
            p = _math.clamp_min(x, 0)       # (torch's gradient at 0: 1, second order 0)
            m = _math.sub(x, p)
            s = _math.scale(m, 1.0 / alpha)
            e = unary(s, "expm1")
            a = _math.scale(e, alpha)
            hide(p, m, s, e, a)
            return _math.add(p, a)
        if not (x._rg and STATE.enabled):
            return _math.scale(unary(_math.scale(x, 1.0 / alpha), "elu", c=1.0), alpha)
        a = _math.scale(x, 1.0 / alpha)
        b = unary(a, "elu", c=1.0)
        hide(a, b)
        return _math.scale(b, alpha)
    return _act(input, inplace, lambda x: _nan_passes(x, f, 1.0, "CeluBackward0") if _nan_sum(x)
                else f(x), "CeluBackward0", "CeluBackward1", result=True)


def celu_(input, alpha=1.0):
    return celu(input, alpha, True)


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def selu(input, inplace=False):
    """scale elu(x, alpha) (torch's node: EluBackward0)."""
    _float_only(input, "elu_cpu")

    def f(x):
        b = unary(x, "elu", c=_SELU_ALPHA)
        hide(b)
        return _math.scale(b, _SELU_SCALE)
    return _act(input, inplace, lambda x: _nan_passes(x, f, _SELU_SCALE, "EluBackward0")
                if _nan_sum(x) else f(x), "EluBackward0", "EluBackward1", result=True)


def selu_(input):
    return selu(input, True)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    _float_only(input, "GeluKernelImpl")
    return unary(input, "gelu", c=0.0 if approximate == "none" else 1.0)


def silu(input, inplace=False):
    _float_only(input, "silu_cpu")
    return _act(input, inplace, lambda x: unary(x, "silu"))


def mish(input, inplace=False):
    """x tanh(softplus(x)) (MishBackward0)."""
    _float_only(input, "mish_cpu")

    def f(x):
        sp = softplus(x)
        th = sp.tanh()
        out = x * th
        hide(sp, th)
        return out
    return _act(input, inplace, f, "MishBackward0")


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6: its op-table row (the exact value clamp((x + 3) / 6, 0, 1), torch's
    gradient: the float 1/6 strictly inside (-3, 3), as HardsigmoidBackward0 for double too).
    One entry that recomputes from x: replays need no guard."""
    _float_only(input, "hardsigmoid_cpu")
    return _act(input, inplace, lambda x: unary(x, "hardsigmoid"))


def hardswish(input, inplace=False):
    """x relu6(x + 3) / 6 (HardswishBackward0: gradient x / 3 + 1/2 on -3 < x < 3, 1 above)."""
    _float_only(input, "hardswish_cpu")

    def f(x):
        d = x._data
        dt = x._dtype.np
        y = np.asarray(d * np.minimum(np.maximum(d + dt.type(3), 0), 6) / dt.type(6), dt)
        if not (x._rg and STATE.enabled):
            return _wrap(y if y.ndim else y[()], x._dtype)
        mid = np.asarray((d > -3) & (d < 3))
        _guard_sel(x, "cuts", -3.0, 3.0)
        # torch's backward: 0 for x <= -3, x / 3 + 1/2 below 3, else 1 (nan and +inf too)
        # x masked to the middle piece always: whether x holds an inf is a value decision
        # (the middle guard above does not see +inf vs a finite x >= 3, and a recording
        # without the mask replayed nan gradients at +inf: 0 * inf in x (x + 3)'s VJP)
        xm = _math.where(_wrap(mid, bool_), x, 0.0)
        p3 = xm + 3.0
        q = xm * p3
        m = _math.scale(q, 1.0 / 6.0)
        # below -3 the value is x * 0, as torch's x * relu6(x + 3) / 6: -0.0 for finite x, nan
        # at -inf (a constant 0 replayed 0 at -inf where eager and torch give nan)
        lo = _math.scale(x, 0.0)
        hi = _math.where(_wrap(np.asarray(~mid & ~(d <= -3)), bool_), x, lo)
        out = _math.where(_wrap(mid, bool_), m, hi)
        hide(*[t for t in (xm, p3, q, m, lo, hi) if t is not x])
        return exact(out, y)
    return _act(input, inplace, f, "HardswishBackward0")


def softshrink(input, lambd=0.5):
    """x - lambd where x > lambd, x + lambd where x < -lambd, 0 between."""
    _float_only(input, "softshrink_cpu")
    if lambd < 0:
        raise RuntimeError("lambda must be greater or equal to 0, but found to be %s." % lambd)
    d = input._data
    dt = input._dtype.np
    hi, lo = np.asarray(d > lambd), np.asarray(d < -lambd)
    _guard_sel(input, "cuts", -float(lambd), float(lambd))
    x = input
    shift = np.where(hi, -lambd, np.where(lo, lambd, 0.0)).astype(dt)
    with np.errstate(invalid="ignore"):     # torch: -l <= x <= l ? 0 : ... (nan: the gradient)
        m = ~((d >= -lambd) & (d <= lambd))
    return _masked_linear(x, m, 1.0, shift, (d * dt.type(0)).astype(dt), "SoftshrinkBackward0")


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, 0 elsewhere."""
    _float_only(input, "hardshrink_cpu")
    d = input._data
    _guard_sel(input, "cuts", -float(lambd), float(lambd))
    with np.errstate(invalid="ignore"):     # torch: -l <= x <= l ? 0 : x (nan stays nan)
        m = np.asarray(~((d >= -lambd) & (d <= lambd)))
    return _masked_linear(input, m, 1.0, 0.0,
                          np.zeros(np.shape(d), input._dtype.np), "HardshrinkBackward0")


def glu(input, dim=-1):
    """a sigmoid(b), a and b the halves of ``input`` along ``dim`` (GluBackward0)."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = _norm_dims(dim, nd)[0]
    n = input._data.shape[d]
    if n % 2:
        raise RuntimeError("Halving dimension must be even, but dimension %d is size %d" % (d, n))
    _float_only(input, "glu_cpu")
    a, b = input.split(n // 2, d)
    s = b.sigmoid()
    out = a * s
    hide(a, b, s)
    return named(out, "GluBackward0")


def softplus(input, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, x where beta x > threshold. The row's kernel switches at
    torch's default threshold 20; another threshold is composed: where(beta x > threshold, x,
    -log_sigmoid(-beta x) / beta), whose gradient sigmoid(beta x) is torch's."""
    _float_only(input, "softplus_cpu")
    beta, threshold = float(beta), float(threshold)
    if threshold == 20.0:
        return unary(input, "softplus", c=beta)
    x = _math._floatify(input)
    d = x._data
    dt = x._dtype.np
    with np.errstate(over="ignore"):
        z = d * dt.type(beta)
        y = np.where(z > dt.type(threshold), d, np.log1p(np.exp(z)) / dt.type(beta)).astype(dt)
    y = y if y.ndim else y[()]
    if not (x._rg and STATE.enabled):
        return _wrap(y, x._dtype)
    nz = tap_entry(_math.scale(x, -beta), 0)
    ls = unary(nz, "log_sigmoid")
    sp = _math.scale(ls, -1.0 / beta)
    mask = _wrap(np.asarray(z > dt.type(threshold)), bool_)
    out = _math.where(mask, x, sp)
    hide(ls, sp)
    return exact(named(out, "SoftplusBackward0", 1), y)


def logsigmoid(input):
    _float_only(input, "log_sigmoid_cpu")
    return unary(input, "log_sigmoid")


def softsign(input):
    return input / (1 + input.abs())


def tanhshrink(input):
    return input - input.tanh()


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val) (HardtanhBackward0: the gradient passes strictly inside)."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")

    def f(x):
        d = x._data
        if x._dtype._cat < 2:
            return _wrap(np.asarray(np.clip(d, min_val, max_val), x._dtype.np)[()]
                         if np.ndim(d) == 0 else np.clip(d, min_val, max_val).astype(x._dtype.np),
                         x._dtype)
        y = np.clip(d, min_val, max_val).astype(x._dtype.np)    # (at a bound: x, as torch)
        if not (x._rg and STATE.enabled):
            return _wrap(y if y.ndim else y[()], x._dtype)
        with np.errstate(invalid="ignore"):     # (torch: x <= min || x >= max ? 0 : g; nan: g)
            m = np.asarray(~((d <= min_val) | (d >= max_val)))
        return _clip_strict(x, m, float(min_val), float(max_val), y, "HardtanhBackward0")
    return _act(input, inplace, f)


def _clip_strict(x, m, lo, hi, y, name):
    """clamp(x, lo, hi) whose gradient passes where ``m`` holds (strictly inside the bounds,
    and at nan): hardtanh, relu6. Guarded on the side of each value to each bound and to 0
    (tapegrad.func). No value at a bound and no nan: the clamp rows (their kernels return x
    itself inside, so a -0.0 stays -0.0 on replay, where a merge of pieces would return +0.0;
    their gradient, inclusive at the bounds, is then torch's). Otherwise the pieces merged by
    ``where`` (a bound's constant), replayed only when no value is +-0 (a merged piece's -0.0
    replays as +0.0, and at a bound of 0 eager's value is x itself, -0.0 included): else the
    recording is refused and its calls served eagerly."""
    d = x._data
    _guard_sel(x, "cuts", lo, hi, 0.0)
    if not np.any((d == lo) | (d == hi) | (d != d)):
        a = unary(x, "clamp_min", c=lo)
        out = unary(a, "clamp_max", c=hi)
        hide(a)
        return exact(named(out, name), y)
    if np.any(d == 0):
        _guard_sel(x, "never")
    return _masked_linear(x, m, 1.0, 0.0, y, name)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, True)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1


def _prep(input, dim, dtype, fname):
    if dtype is not None:
        input = input.to(_as_dtype(dtype))
    if dim is None:
        warnings.warn("Implicit dimension choice for %s has been deprecated. Change the call to "
                      "include dim=X as an argument." % fname, UserWarning, stacklevel=3)
        dim = _softmax_dim(input._data.ndim)
    nd = input._data.ndim
    dim = _norm_dims(dim, nd)[0] if nd else 0
    if input._dtype._cat < 2 and input._data.size:     # (an empty one: an empty result)
        raise NotImplementedError("\"%s%s_kernel_impl\" not implemented for '%s'"
                                  % (fname, "_lastdim" if dim >= nd - 1 else "",
                                     input._dtype._tname))
    return input, dim


def _torch_softmax(input, dim, dtype=None):
    """torch.softmax (dtype the third positional argument; F.softmax's is _stacklevel)."""
    return softmax(input, dim, dtype=dtype)


def _torch_log_softmax(input, dim, dtype=None):
    return log_softmax(input, dim, dtype=dtype)


_torch_softmax.__name__, _torch_log_softmax.__name__ = "softmax", "log_softmax"


def _shift(d, dim):
    """The maxima softmax subtracts along ``dim`` (as torch: a row holding +inf, or only -inf,
    then gives nan)."""
    if np.ndim(d) == 0:
        return np.asarray(d)
    return d.max(axis=dim, keepdims=True) if d.size else np.zeros(
        tuple(1 if i == dim else s for i, s in enumerate(d.shape)), d.dtype)


def _last_dim_rows(x, d, dim):
    """True when softmax / log_softmax of ``x`` over ``dim`` is one recorded row-wise entry
    (ops rows ``softmax`` / ``log_softmax``): the last dimension of a non-empty tensor that
    needs its gradient. Other dimensions are composed of exp, sum and division entries."""
    return d.ndim and dim == d.ndim - 1 and d.size and x._rg and STATE.enabled


def _exp_rows(z):
    """exp of a fresh array in place (on the vector-math kernels when big)."""
    if z.size >= _vmath.MIN and _vmath.OK and z.flags.c_contiguous:
        _vmath.unary_fwd("exp", z.reshape(-1), z.reshape(-1))
    else:
        np.exp(z, out=z)
    return z


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    x, dim = _prep(input, dim, dtype, "softmax")
    d = np.asarray(x._data)
    if x._dtype._cat < 2:                       # empty (_prep): an empty result
        return _wrap(d.copy(), x._dtype)
    m = _shift(d, dim)
    if _last_dim_rows(x, d, dim):
        if _vmath.one_row(d):
            return _record_unary(x, _SOFTMAX_ROW, _vmath.softmax_row(d, m, False),
                                 c=float(d.size))
        e = _exp_rows(d - m)
        s = e.sum() if d.ndim == 1 else np.sum(e, axis=dim, keepdims=True)
        np.divide(e, s, out=e)
        return _record_unary(x, _SOFTMAX_ROW, e, c=float(d.shape[-1]))
    if not (x._rg and STATE.enabled):
        e = np.exp(d - m)
        y = e / (np.sum(e, axis=dim, keepdims=True) if d.ndim else e)
        return _wrap(y if y.ndim else y[()], x._dtype)
    # the same arithmetic recorded (the values are numpy's: no separate evaluation)
    # one shift value (1-D input): a number (x's dtype holds it exactly: same rounding)
    # the shift is a constant of the recording: made as a tensor of the values, a recording
    # for tapegrad.func is not replayed (a replay on other values could overflow); a 0-dim
    # input is its own shift (x - x: recorded, replayable)
    z = x - (_wrap(m, x._dtype) if d.ndim else x)
    ez = z.exp()
    # one dimension: the plain sum (a 0-dim divisor broadcasts as the kept (1,) one would)
    s = (ez.sum() if d.ndim == 1 else ez.sum(dim, keepdim=True)) if d.ndim else ez
    out = ez / s
    hide(z, ez, s)
    return _saves_result(named(out, "SoftmaxBackward0"))


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    x, dim = _prep(input, dim, dtype, "log_softmax")
    d = np.asarray(x._data)
    if x._dtype._cat < 2:                       # empty (_prep): an empty result
        return _wrap(d.copy(), x._dtype)
    m = _shift(d, dim)
    if _last_dim_rows(x, d, dim) and _vmath.one_row(d):
        return _record_unary(x, _LOG_SOFTMAX_ROW, _vmath.softmax_row(d, m, True), c=float(d.size))
    zd = d - m
    lse = np.log(np.sum(np.exp(zd), axis=dim, keepdims=True)) if d.ndim else np.log(np.exp(zd))
    y = zd - lse
    if _last_dim_rows(x, d, dim):
        return _record_unary(x, _LOG_SOFTMAX_ROW, y, c=float(d.shape[-1]))
    if not (x._rg and STATE.enabled):
        return _wrap(y if y.ndim else y[()], x._dtype)
    z = x - (_wrap(m, x._dtype) if d.ndim else x)     # (the shift: see softmax)
    ez = z.exp()
    s = (ez.sum() if d.ndim == 1 else ez.sum(dim, keepdim=True)) if d.ndim else ez
    ls = s.log()
    out = z - ls
    hide(z, ez, s, ls)
    return _saves_result(exact(named(out, "LogSoftmaxBackward0"), y))


# ----------------------------------------------------------------------------- linear, dropout
def linear(input, weight, bias=None):
    from .._shape import t as _t
    x = input
    nd = x._data.ndim
    wd = weight._data.ndim
    if nd == 0 or wd == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are %dD and "
                           "%dD" % (nd, wd))
    if wd != 2:
        _linear_weight_check(x, weight, bias)
        y = x @ weight
        return y + bias if bias is not None else y
    if nd == 2:
        if x._data.shape[1] != weight._data.shape[1]:
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                               % (x._data.shape[0], x._data.shape[1], weight._data.shape[1],
                                  weight._data.shape[0]))
        if bias is not None:
            out = _fused.addmm(bias, x, weight)
            if out is not None:
                return out
        y = x.mm(_t(weight))
        if bias is None:
            return y
        out = y + bias
        hide(y)
        return named(out, "AddmmBackward0")
    lead = x._data.shape[:-1]
    if x._data.shape[-1] != weight._data.shape[1]:
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                           % (int(np.prod(lead, dtype=np.int64)), x._data.shape[-1],
                              weight._data.shape[1], weight._data.shape[0]))
    x2 = x.reshape(-1, x._data.shape[-1])
    y2 = linear(x2, weight, bias)
    out = y2.view(lead + (weight._data.shape[0],))
    if bias is None:        # torch: mm then squeeze (1-D input) / _unsafe_view
        named(out, "SqueezeBackward4" if nd == 1 else "UnsafeViewBackward0")
    return out


def _linear_weight_check(x, weight, bias):
    """torch's linear with a weight that is not a matrix: t() refuses > 2 dims; a 1-D weight
    with a bias goes through addmm (2-D input, or a 1-D-like bias and a contiguous input),
    which wants a matrix."""
    wd = weight._data.ndim
    if wd > 2:
        raise RuntimeError("t() expects a tensor with <= 2 dimensions, but self is %dD" % wd)
    if bias is None:
        return
    fusable = bias._data.ndim == 1 or sum(1 for n in bias._data.shape if n != 1) == 1
    if x._data.ndim == 2 or (fusable and x.is_contiguous()):
        raise RuntimeError("mat2 must be a matrix, got 1-D tensor")


def bilinear(input1, input2, weight, bias=None):
    from .._matrix import einsum
    y = einsum("bi,oij,bj->bo", input1, weight, input2)
    return y + bias if bias is not None else y


def dropout(input, p=0.5, training=True, inplace=False):
    if p < 0.0 or p > 1.0:
        raise ValueError("dropout probability has to be between 0 and 1, but got %s" % p)
    if not training or p == 0.0:
        return input
    from ..creation import _gen
    d = np.asarray(input._data)
    if d.size == 0:
        return input
    if p == 1.0:
        mask = np.zeros(d.shape, input._dtype.np)
    else:       # torch: noise = empty_like(input).bernoulli_(1 - p); noise.div_(1 - p)
        npdt = input._dtype.np
        keep = _gen(None)._bernoulli(d.size, 1.0 - p).astype(npdt)
        mask = (keep / np.asarray(1.0 - p, npdt)).reshape(d.shape)
    m = _wrap(mask if mask.ndim else mask[()], input._dtype)
    if inplace:
        return input.mul_(m)
    return input * m


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    if not training or p == 0:
        return input
    from .modules._functional import alpha_dropout as _alpha_dropout
    return _alpha_dropout(input, p, training, inplace)


# ----------------------------------------------------------------------------- losses
def _reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        return ("mean" if size_average else "sum") if reduce else "none"
    if reduction not in ("none", "mean", "sum"):
        raise ValueError("%s is not a valid value for reduction" % reduction)
    return reduction


def _reduce(t, reduction, name, hidden=(), arity=2):
    """Apply the reduction to the elementwise loss ``t``; the last entry gets ``name``, a node
    of ``arity`` inputs (input, target) marked by taps (``_math.tap``) in the composition."""
    if reduction == "none":
        hide(*hidden)
        return named(t, name, arity)
    hide(t, *hidden)
    n = max(t._data.size, 1)
    y = np.sum(t._data) if reduction == "sum" else np.mean(t._data) if t._data.size else np.float64(np.nan)
    y = t._dtype.np.type(y)
    if t._rg and STATE.enabled:
        return _record_unary_sum(t, y, 1.0 if reduction == "sum" else 1.0 / n,
                                 multi_name_id(name, arity))
    return _wrap(y, t._dtype)


def _sizes(input, target):
    """(target.size(), input.size()) as torch's Python losses read them: a non-tensor operand
    raises AttributeError (target first)."""
    for v in (target, input):
        if not isinstance(v, Tensor):
            raise AttributeError("'%s' object has no attribute 'size'" % type(v).__name__)
    return target._data.shape, input._data.shape


def _check_target_shape(input, target, fname):
    ts, xs = _sizes(input, target)
    if xs != ts:
        warnings.warn("Using a target size (%s) that is different to the input size (%s). This will "
                      "likely lead to incorrect results due to broadcasting. Please ensure they have "
                      "the same size." % (_size(ts), _size(xs)), UserWarning, stacklevel=3)


def _np(t):
    return t._data if isinstance(t, Tensor) else np.asarray(t)


def _weighted_loss(elementwise, weight, input, red, by_weight):
    """torch's weighted losses (torch.nn.functional, Python): the elementwise loss times
    ``weight`` (the input's size), summed, or for "mean" divided by the weights' sum
    (``by_weight``: mse_loss, l1_loss) or averaged (huber_loss)."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    wl = elementwise * weight
    if red == "none":
        return wl
    if red == "sum":
        return wl.sum()
    return wl.sum() / weight.sum() if by_weight else wl.mean()


def _expanded_diff(input, target):
    from .._shape import broadcast_tensors
    a, b = broadcast_tensors(input, target)
    return a - b


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    red = _reduction(size_average, reduce, reduction)
    _check_target_shape(input, target, "mse_loss")
    if weight is not None:
        return _weighted_loss(_expanded_diff(input, target).pow(2), weight, input, red, True)
    d = tap_entry(input - target, 0, 1)
    sq = d ** 2
    return _saves_inputs(_reduce(sq, red, "MseLossBackward0", hidden=(d,)), input, target)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    red = _reduction(size_average, reduce, reduction)
    _check_target_shape(input, target, "l1_loss")
    if weight is not None:
        return _weighted_loss(_expanded_diff(input, target).abs(), weight, input, red, True)
    a = (input - target).abs()
    if red == "none":
        return a
    return a.mean() if red == "mean" else a.sum()


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    red = _reduction(size_average, reduce, reduction)
    _check_target_shape(input, target, "smooth_l1_loss")
    if beta == 0.0:
        return l1_loss(input, target, reduction=red)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = tap_entry(input - target, 0, 1)
    e = unary(d, "smooth_l1", c=float(beta))
    return _saves_inputs(_reduce(e, red, "SmoothL1LossBackward0", hidden=(d,)), input, target)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    red = _reduction(None, None, reduction)
    _check_target_shape(input, target, "huber_loss")
    if weight is not None:
        from .._shape import broadcast_tensors
        a, b = broadcast_tensors(input, target)
        return _weighted_loss(huber_loss(a, b, "none", delta), weight, input, red, False)
    d = tap_entry(input - target, 0, 1)
    e = unary(d, "smooth_l1", c=float(delta))
    h = _math.scale(e, float(delta))
    return _saves_inputs(_reduce(h, red, "HuberLossBackward0", hidden=(d, e)), input, target)


def _class_positions(input, target, ignore_index):
    """(flat positions in input of the picked log-probabilities for valid targets, the flat
    positions of those targets in the output, the target classes, output shape)."""
    x = input._data
    t = np.asarray(target._data)
    if x.ndim == 1:
        C = x.shape[0]
        if t.ndim != 0:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        tt = t.reshape(1)
        xs = x.reshape(1, C)
        out_shape = ()
    else:
        C = x.shape[1]
        expect = (x.shape[0],) + x.shape[2:]
        if t.shape != expect:
            if x.ndim == 2 and t.ndim != 1:
                raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
            raise RuntimeError("Expected target size %s, got %s" % (list(expect), list(t.shape)))
        tt = t
        xs = x
        out_shape = t.shape
    valid = tt != ignore_index
    bad = valid & ((tt < 0) | (tt >= C))
    if np.any(bad):
        raise IndexError("Target %d is out of bounds." % int(tt[bad].reshape(-1)[0]))
    # position of x[n, t[n, ...], ...] in x's flat layout
    N = xs.shape[0]
    rest = xs.shape[2:]
    inner = int(np.prod(rest, dtype=np.int64))
    n_idx = np.arange(N, dtype=np.int64).reshape((N,) + (1,) * len(rest))
    r_idx = np.arange(inner, dtype=np.int64).reshape((1,) + rest) if rest else np.zeros((1,), np.int64)
    tcl = np.where(valid, tt, 0).astype(np.int64)
    pos = n_idx * (C * inner) + tcl * inner + r_idx
    vmask = valid.reshape(-1)
    return pos.reshape(-1)[vmask], np.flatnonzero(vmask).astype(np.int64), tcl.reshape(-1)[vmask], \
        out_shape, vmask.size


def _check_nll_args(input, target, weight):
    _not_differentiable_arg("nll_loss_forward", "weight", weight)
    if not isinstance(target, Tensor):
        raise TypeError("nll_loss(): argument 'target' must be Tensor, not %s"
                        % type(target).__name__)
    x = input._data
    if x.ndim == 2 and target._data.ndim > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target._dtype.name not in ("int64", "uint8"):
        raise RuntimeError("expected target dtype to be Long or Byte, but got %s"
                           % target._dtype._tname)
    if weight is not None:
        C = x.shape[0] if x.ndim == 1 else x.shape[1] if x.ndim else 1
        if weight._data.ndim != 1 or weight._data.shape[0] != C:
            raise RuntimeError("weight tensor should be defined either for all %d classes or no "
                               "classes but got weight tensor of shape: %s"
                               % (C, list(weight._data.shape)))
        if weight._dtype is not input._dtype:
            raise RuntimeError("expected scalar type %s but found %s"
                               % (input._dtype._tname, weight._dtype._tname))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    red = _reduction(size_average, reduce, reduction)
    if input._data.ndim == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    _check_nll_args(input, target, weight)
    if input._data.ndim >= 2 and input._data.shape[0] != np.shape(target._data)[0]:
        raise ValueError("Expected input batch_size (%d) to match target batch_size (%d)."
                         % (input._data.shape[0], np.shape(target._data)[0]))
    nd = input._data.ndim
    if (nd == 3 or nd > 4) and input._rg and STATE.enabled:
        # torch: the 4-D kernel (NllLoss2DBackward0) on a view, its 'none' result viewed back
        s = input._data.shape
        if np.shape(target._data) != (s[0],) + s[2:]:
            raise RuntimeError("Expected target size %s, got %s"
                               % (list((s[0],) + s[2:]), list(np.shape(target._data))))
        rest = int(np.prod(s[2:], dtype=np.int64))
        y = nll_loss(input.reshape(s[0], s[1], rest, 1), target.reshape(s[0], rest, 1), weight,
                     ignore_index=ignore_index, reduction=red)
        return y.view((s[0],) + s[2:]) if red == "none" else y
    pos, opos, cls, out_shape, nout = _class_positions(input, target, ignore_index)
    x = input._data
    dtn = input._dtype.np
    w = np.ones(pos.size, dtn) if weight is None else np.asarray(weight._data, dtn)[cls]
    picked = np.asarray(x).reshape(-1)[pos]
    vals = -(w * picked)
    if red == "none":
        full = np.zeros(nout, dtn)
        full[opos] = vals
        y = full.reshape(out_shape)
    else:
        tot = np.sum(vals, dtype=dtn)
        with np.errstate(invalid="ignore", divide="ignore"):   # no weight: nan, as torch
            y = tot if red == "sum" else (tot / np.sum(w, dtype=dtn))
        y = np.asarray(y, dtn)
    if not (input._rg and STATE.enabled):
        return _wrap(y if y.ndim else y[()], input._dtype)
    from .._record import _out, _tape_for, _src
    from ..ops import OPCODE
    from .._schema import F_HIDDEN
    tp = _tape_for(input)
    node = _src(input, tp)
    dt = input._dtype.slot
    e, g = tp.entry(OPCODE["gather"], _nm("IndexBackward0"), pos.size, dt, node, -1,
                    p0=tp.index(pos), p1=pos.size, fl=F_HIDDEN)
    if weight is not None:
        cw = tp.save(np.ascontiguousarray(w), dt)
        e, g = tp.entry(OPCODE["mul"], _nm("MulBackward0"), pos.size, dt, g, -1, sb=cw, p0=1, p1=1,
                        fl=F_HIDDEN | 2)
    name = _nm("NllLoss2DBackward0" if input._data.ndim >= 3 else "NllLossBackward0")
    if red == "none":
        e, g = tp.entry(OPCODE["scale"], _nm("MulBackward0"), pos.size, dt, g, -1,
                        ci=tp.const(-1.0), fl=F_HIDDEN)
        e, n = tp.entry(OPCODE["segsum"], name, nout, dt, g, -1, p0=tp.index(opos), p1=opos.size,
                        ci=tp.const(1.0))
    else:
        tw = float(np.sum(w, dtype=np.float64))
        # a zero total weight: torch's backward divides by it (nan where a target counts)
        c = -1.0 if red == "sum" else (-1.0 / tw if tw else float("nan"))
        e, n = tp.entry(OPCODE["sum"], name, 1, dt, g, -1, ci=tp.const(c))
    return _saves_inputs(_out(y if y.ndim else y[()], input._dtype, tp, n), input)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    red = _reduction(size_average, reduce, reduction)
    if label_smoothing > 1.0:
        raise RuntimeError("label_smoothing must be between 0.0 and 1.0. Got: %s" % label_smoothing)
    cdim = 0 if input._data.ndim == 1 else 1
    probs = (isinstance(target, Tensor) and target._dtype._cat == 2
             and target._data.shape == input._data.shape)
    if not probs:
        _check_nll_args(input, target, weight)
    lsm = log_softmax(input, cdim)
    if probs:
        # class probabilities
        if target._data.shape != input._data.shape:
            raise RuntimeError("Expected target size %s, got %s"
                               % (list(input._data.shape), list(target._data.shape)))
        tgt = target
        if label_smoothing > 0:
            C = input._data.shape[cdim]
            tgt = tgt * (1 - label_smoothing) + label_smoothing / C
        p = lsm * tgt
        if weight is not None:
            shape = [1] * input._data.ndim
            shape[cdim] = -1
            p = p * weight.reshape(shape)
        if red == "none":
            return -(p.sum(cdim))
        if red == "sum":
            return -(p.sum())
        n = input._data.shape[0] if input._data.ndim > 1 else 1
        n = n * int(np.prod(input._data.shape[2:], dtype=np.int64)) if input._data.ndim > 2 else n
        return named(-(p.sum()) / float(n), "DivBackward1")
    nll = nll_loss(lsm, target, weight, ignore_index=ignore_index, reduction=red)
    if label_smoothing <= 0:
        return nll
    C = input._data.shape[cdim]
    valid = (np.asarray(target._data) != ignore_index)
    wv = None if weight is None else weight.reshape([-1 if i == cdim else 1
                                                     for i in range(input._data.ndim)])
    sm = -((lsm * wv).sum(cdim) if wv is not None else lsm.sum(cdim))
    sm = sm.masked_fill(_wrap(~valid, bool_), 0.0)
    if red == "mean":
        if weight is not None:
            denom = float(np.sum(np.asarray(weight._data)[np.asarray(target._data)[valid]]))
        else:
            denom = float(np.count_nonzero(valid))
        # by a tensor, as torch (a zero total weight: nan, not ZeroDivisionError)
        sm = sm.sum() / _wrap(np.asarray(denom, input._dtype.np)[()], input._dtype)
    elif red == "sum":
        sm = sm.sum()
    return named(nll * (1 - label_smoothing), "MulBackward1") + named(sm * (label_smoothing / C),
                                                                     "MulBackward1")


def _not_differentiable_arg(fname, arg, t):
    if isinstance(t, Tensor) and t._rg and STATE.enabled:
        raise RuntimeError("The function '%s' is not differentiable with respect to argument '%s'. "
                           "This input cannot have requires_grad True." % (fname, arg))


def _size(shape):
    from ..tensor import Size
    return Size(tuple(shape))


def _bce_funcs():
    from ..autograd.function import Function

    class BinaryCrossEntropy(Function):
        """torch's binary_cross_entropy: the log terms clamped at -100; the input gradient
        (p - t) / max(p (1 - p), 1e-12) stays finite at p = 0 or 1; the target gradient
        log(1 - p) - log(p). The backward is written with tapegrad operations (higher order)."""
        @staticmethod
        def forward(ctx, input, target, wt, w, red):
            weight = wt[0]      # in a tuple: not an input of the node (torch's has 2 edges)
            p = np.asarray(input._data)
            t = np.asarray(target._data, p.dtype)
            dt = p.dtype
            with np.errstate(divide="ignore", invalid="ignore"):
                lp = np.maximum(np.log(p), dt.type(-100))
                lq = np.maximum(np.log1p(-p), dt.type(-100))
            loss = (t - 1) * lq - t * lp
            if w is not None:
                loss = loss * w
            loss = np.asarray(loss, dt)
            if red == "sum":
                loss = np.asarray(loss.sum(dtype=dt), dt)
            elif red == "mean":
                loss = np.asarray(loss.mean(dtype=dt) if loss.size else np.nan, dt)
            ctx.save_for_backward(input, target, weight)   # as torch (weight version-checked)
            ctx.red, ctx.n = red, p.size
            return _wrap(loss if loss.ndim else loss[()], input._dtype)

        @staticmethod
        def backward(ctx, g):
            p, t, weight = ctx.saved_tensors
            if ctx.red != "none":
                g = g.expand(p.shape)
                if ctx.red == "mean":
                    g = g / ctx.n
            w = None if weight is None else _wrap(np.asarray(_np(weight), p._dtype.np),
                                                  p._dtype)
            gi = gt = None
            if ctx.needs_input_grad[0]:
                gi = g * (p - t) / _math.clamp(p * (1 - p), min=1e-12)
                gi = gi if w is None else gi * w
            if ctx.needs_input_grad[1]:
                gt = g * (_math.log1p(-p) - p.log())
                gt = gt if w is None else gt * w
            return gi, gt, None, None, None
    return BinaryCrossEntropy


_BCE = []


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    red = _reduction(size_average, reduce, reduction)
    ts, xs = _sizes(input, target)
    if xs != ts:
        raise ValueError("Using a target size (%s) that is different to the input size (%s) is "
                         "deprecated. Please ensure they have the same size."
                         % (_size(ts), _size(xs)))
    _not_differentiable_arg("binary_cross_entropy", "weight", weight)
    if not input._dtype.is_floating_point:
        raise NotImplementedError("\"binary_cross_entropy\" not implemented for '%s'"
                                  % input._dtype._tname)
    if target._dtype is not input._dtype:
        raise RuntimeError("Found dtype %s but expected %s" % (target._dtype._tname,
                                                               input._dtype._tname))
    d = np.asarray(input._data)
    if not np.all((d >= 0) & (d <= 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    td = np.asarray(_np(target))
    if not np.all((td >= 0) & (td <= 1)):
        raise RuntimeError("all elements of target should be between 0 and 1")
    w = None
    if weight is not None:
        w = np.asarray(_np(weight), d.dtype)
        try:
            np.broadcast_to(w, d.shape)
        except ValueError:
            raise RuntimeError("Attempting to broadcast a dimension of length %d at -1! Mismatching "
                               "argument at index 1 had %s; but expected shape should be "
                               "broadcastable to %s" % (w.shape[-1] if w.ndim else 1,
                                                        _size(w.shape), list(d.shape)))
    if not _BCE:
        _BCE.append(_bce_funcs())
    out = _BCE[0].apply(input, target, (weight,), w, red)
    return named(out, "BinaryCrossEntropyBackward0")


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    red = _reduction(size_average, reduce, reduction)
    ts, xs = _sizes(input, target)
    if xs != ts:
        raise ValueError("Target size (%s) must be the same as input size (%s)"
                         % (_size(ts), _size(xs)))
    _not_differentiable_arg("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable_arg("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    # torch: log_sigmoid(input), then (1 - target).mul_(input): a target dtype the result can't
    # be written into raises; a floating target's dtype is the loss's
    if not input._dtype.is_floating_point:
        raise NotImplementedError("\"log_sigmoid_cpu\" not implemented for '%s'"
                                  % input._dtype._tname)
    tdt = target._dtype
    if not tdt.is_floating_point:
        if tdt.name == "bool":
            raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                               "supported. Use the `^` or `logical_xor()` operator instead.")
        from ..tensor import _result_dtype
        raise RuntimeError("result type %s can't be cast to the desired output type %s"
                           % (_result_dtype(input, target)._tname, tdt._tname))
    # (1 - y) x - w_p log sigmoid(x),  w_p = 1 + (pos_weight - 1) y
    input, target = tap(input, 0), tap(target, 1)
    tc = 1 - target
    a = input * tc
    ls = unary(input, "log_sigmoid")
    hidden = [tc, a, ls]
    if pos_weight is not None:
        pw = (pos_weight - 1) * target
        wp = pw + 1
        ls2 = ls * wp
        hidden += [pw, wp, ls2]
        ls = ls2
    loss = a - ls
    if weight is not None:
        hidden.append(loss)
        loss = loss * weight
    if loss._dtype is not tdt:          # float64 input, float32 target: a float32 loss
        hidden.append(loss)
        loss = loss.to(tdt)
    return _saves_inputs(_reduce(loss, red, "BinaryCrossEntropyWithLogitsBackward0",
                                 hidden=hidden), input, target)


def one_hot(tensor, num_classes=-1):
    t = np.asarray(tensor._data)
    if tensor._dtype is not int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(t.max()) + 1 if t.size else 0
    if t.size and (t.min() < 0 or t.max() >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (t[..., None] == np.arange(num_classes)).astype(np.int64)
    return _wrap(out, int64)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    from .. import _reduce as R
    n = R.norm(input, p, dim, keepdim=True)
    return input / _math.clamp(n, min=eps).expand_as(input)


_PAD_NAMES = {"reflect": "ReflectionPad%dDBackward0", "replicate": "ReplicationPad%dDBackward0",
              "circular": "CopySlices"}


def _pad_index(n, lo, hi, mode):
    """Source positions along one dim of size n padded by (lo, hi) (negative: cropped)."""
    j = np.arange(-lo, n + hi)
    if mode == "replicate":
        return np.clip(j, 0, n - 1)
    if mode == "reflect":
        j = np.abs(j)
        return np.where(j > n - 1, 2 * (n - 1) - j, j)
    # circular, as torch: crop the negative pads first, then wrap around the cropped part
    base = np.arange(max(-lo, 0), n - max(-hi, 0))
    j = np.arange(-max(lo, 0), base.size + max(hi, 0))
    return base[j % base.size] if base.size else base


def _pad_nonconstant(input, pad, mode, value):
    """reflect / replicate / circular padding of the last 1-3 dims (as torch's _pad_enum): one
    gather of the input's positions."""
    nd, npad = input._data.ndim, len(pad)
    if value is not None and value != 0:
        raise RuntimeError('Padding mode "%s" doesn\'t take in value argument' % mode)
    k = npad // 2
    if not (k in (1, 2, 3) and nd in (k + 1, k + 2)):
        raise NotImplementedError(
            "Padding size %d is not supported for %dD input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)" % (npad, nd))
    shape = tuple(input._data.shape)
    sizes = ", ".join(str(n) for n in shape)
    idxs, out_shape = [], list(shape)
    for i in range(k):
        dim = nd - 1 - i
        n, lo, hi = shape[dim], int(pad[2 * i]), int(pad[2 * i + 1])
        if mode == "reflect" and not (lo < n and hi < n):
            raise RuntimeError("Argument #%d: Padding size should be less than the corresponding "
                               "input dimension, but got: padding (%d, %d) at dimension %d of "
                               "input [%s]" % (4 + 2 * i, lo, hi, dim, sizes))
        if mode == "circular" and not (lo <= n and hi <= n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        m = n + lo + hi
        if mode == "circular" and m < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
        if k == 1 and m < 1 and mode != "circular":
            raise RuntimeError("input (W: %d) is too small. Calculated output W: %d" % (n, m))
        out_shape[dim] = m
        idxs.append((dim, _pad_index(n, lo, hi, mode)))
    if min(out_shape) < 0:
        raise RuntimeError("Trying to create tensor with negative dimension %d: [%s]"
                           % (min(out_shape), ", ".join(str(n) for n in out_shape)))

    def fn(a):
        for dim, ix in idxs:
            a = np.take(a, ix, axis=dim)
        return a
    from .._shape import index_map
    name = _PAD_NAMES[mode]
    return index_map(input, fn, name % k if "%" in name else name, view=False)


def pad(input, pad, mode="constant", value=None):
    if mode != "constant":
        if mode not in _PAD_NAMES:
            raise NotImplementedError("Unrecognised padding mode %s" % mode)
        if len(pad) % 2:
            raise RuntimeError("Padding length must be divisible by 2")
        if len(pad) // 2 > input._data.ndim:
            raise RuntimeError("Padding length should be less than or equal to two times the "
                               "input dimension but got padding length %d and input of dimension "
                               "%d" % (len(pad), input._data.ndim))
        return _pad_nonconstant(input, pad, mode, value)
    x = input
    v = 0.0 if value is None else value
    nd = x._data.ndim
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > nd:
        raise RuntimeError("Padding length should be less than or equal to two times the input "
                           "dimension but got padding length %d and input of dimension %d"
                           % (len(pad), nd))
    y = _pad_block(x, pad, v)
    if y is not None:
        return y
    # one scatter of the input's kept block into a tensor of the value (negative pads crop)
    shape = tuple(x._data.shape)
    out_shape, src_sl, dst_sl = list(shape), [slice(None)] * nd, [slice(None)] * nd
    for i in range(len(pad) // 2):
        dim = nd - 1 - i
        n, lo, hi = shape[dim], int(pad[2 * i]), int(pad[2 * i + 1])
        if n + min(lo, 0) < 0 or n + min(lo, 0) + min(hi, 0) < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        out_shape[dim] = n + lo + hi
        src_sl[dim] = slice(max(-lo, 0), n - max(-hi, 0))
        dst_sl[dim] = slice(max(lo, 0), max(lo, 0) + n - max(-lo, 0) - max(-hi, 0))
    from ..creation import full
    y = np.array(full(tuple(out_shape), v, dtype=x._dtype)._data)
    src_sl, dst_sl = tuple(src_sl), tuple(dst_sl)
    y[dst_sl] = np.asarray(x._data)[src_sl]
    if not (x._rg and STATE.enabled):
        return _wrap(y if y.ndim else y[()], x._dtype)
    from .._shape import _merge
    src = np.arange(x._data.size, dtype=np.int64).reshape(shape)[src_sl].reshape(-1)
    dst = np.arange(y.size, dtype=np.int64).reshape(y.shape)[dst_sl].reshape(-1)
    return _merge(y, x._dtype, "ConstantPadNdBackward0", [(x, src, dst, 1.0, 0)], 1)


def _normalized(input, normalized_shape):
    """(normalized_shape as a tuple, input's shape), checked as torch's layer/rms norm do."""
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    shp = tuple(input.shape)
    if len(ns) == 0 or shp[len(shp) - len(ns):] != ns:
        raise RuntimeError("Given normalized_shape=%s, expected input with shape [*, %s], but got "
                           "input of size%s" % (list(ns), ", ".join(str(n) for n in ns),
                                                list(shp)))
    return ns, shp


def _affine(y, weight, bias, bshape, hidden):
    """``y * weight + bias`` of a normalization, weight and bias reshaped to ``bshape`` and
    tapped as the node's inputs 1 and 2; the intermediates go to ``hidden``."""
    if weight is not None:
        wv = tap(weight, 1).reshape(bshape)
        hidden += [y, wv]
        y = y * wv
    if bias is not None:
        bv = tap(bias, 2).reshape(bshape)
        hidden += [y, bv]
        y = y + bv
    return y


def _pad_block(x, pad, v):
    """Zero padding of one dim that keeps x a contiguous block of the result (1-D tensors,
    the first dim, dims after size-1 ones): one ``embed`` entry. None otherwise."""
    d = x._data
    nd = d.ndim
    pairs = [(i, int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(pad) // 2)]
    nz = [(i, lo, hi) for i, lo, hi in pairs if lo or hi]
    if (len(nz) != 1 or nd == 0 or type(d) is not np.ndarray or not d.flags.c_contiguous
            or not isinstance(v, (int, float)) or v != 0 or np.signbit(v)):
        return None
    i, lo, hi = nz[0]
    p = nd - 1 - i
    if p < 0 or lo < 0 or hi < 0 or int(np.prod(d.shape[:p], dtype=np.int64)) != 1:
        return None
    shape = d.shape[:p] + (d.shape[p] + lo + hi,) + d.shape[p + 1:]
    off = lo * int(np.prod(d.shape[p + 1:], dtype=np.int64))
    y = np.zeros(shape, d.dtype)
    y.reshape(-1)[off:off + d.size] = d.reshape(-1)
    if x._rg and STATE.enabled:
        from ..ops import OPCODE
        from .._record import _record_offset
        return _record_offset(x, OPCODE["embed"], off, d.size, y, _nm("ConstantPadNdBackward0"))
    return _wrap(y, x._dtype)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    from .. import _reduce as R
    n1 = _math.clamp(R.norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = _math.clamp(R.norm(x2, 2, dim, keepdim=True), min=eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _install(Tensor):
    Tensor.softmax = lambda self, dim=None, dtype=None: softmax(self, dim, dtype=dtype)
    Tensor.log_softmax = lambda self, dim=None, dtype=None: log_softmax(self, dim, dtype=dtype)
    Tensor.relu_ = relu_




def _torch_dropout(input, p, train):
    """torch.dropout(input, p, train)."""
    return dropout(input, p, train)


def _torch_dropout_(input, p, train):
    return dropout(input, p, train, inplace=True)


# ----------------------------------------------------------------------------- normalization,
# embedding, attention, kl_div (compositions; the last entry carries torch's node name)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims
    (biased variance), NativeLayerNormBackward0."""
    ns, shp = _normalized(input, normalized_shape)
    for nm, v in (("weight", weight), ("bias", bias)):
        if v is not None and tuple(v.shape) != ns:
            raise RuntimeError("Expected %s to be of same shape as normalized_shape, but got %s of "
                               "shape %s and normalized_shape = %s"
                               % (nm, nm, list(v.shape), list(ns)))
    y = _fused.layer_norm(input, ns, weight, bias, eps)
    if y is not None:
        return y
    return _layer_norm_composed(input, ns, weight, bias, eps)


def _layer_norm_composed(input, ns, weight, bias, eps):
    """layer_norm as a composition of recorded entries (tapegrad.func recordings, second
    derivatives of the fused entry: ``_fused``)."""
    shp = tuple(input.shape)
    dims = tuple(range(len(shp) - len(ns), len(shp)))
    # taps: the node lists (input, weight, bias) as torch's does, None for an absent one
    x = tap(input, 0)
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(dims, keepdim=True)
    rs = (var + eps).rsqrt()
    y = xc * rs
    hidden = [x, mu, xc, var, rs]
    if weight is not None:
        hidden.append(y)
        y = y * tap(weight, 1)
    if bias is not None:
        hidden.append(y)
        y = y + tap(bias, 2)
    hide(*[h for h in hidden if isinstance(h, Tensor) and h._tape is not None])
    return named(y, "NativeLayerNormBackward0", 3) if y._tape is not None else y


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Batch normalization over every dim but 1. training: the batch statistics (biased
    variance) normalize, and the running statistics are updated in place (unbiased variance,
    ``momentum``); otherwise the running statistics normalize. NativeBatchNormBackward0."""
    shp = tuple(input.shape)
    if len(shp) < 2:
        raise ValueError("Expected 2D or 3D input (got %dD input)" % len(shp))
    C = shp[1]
    dims = (0,) + tuple(range(2, len(shp)))
    n = int(np.prod([shp[d] for d in dims], dtype=np.int64))
    if training and n <= 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size "
                         "%s" % (_size(shp),))
    bshape = (1, C) + (1,) * (len(shp) - 2)
    input = tap(input, 0)       # the node lists (input, weight, bias), as torch's
    if training:
        mu = input.mean(dims, keepdim=True)
        xc = input - mu
        var = (xc * xc).mean(dims, keepdim=True)
        if running_mean is not None or running_var is not None:
            from .._state import no_grad
            with no_grad():
                m = float(momentum) if momentum is not None else 0.1
                if running_mean is not None:
                    running_mean.mul_(1 - m).add_(mu.detach().reshape(C) * m)
                if running_var is not None:
                    running_var.mul_(1 - m).add_(var.detach().reshape(C) * (m * n / (n - 1)))
        hidden = [input, mu, xc, var]
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        xc = input - running_mean.reshape(bshape)
        var = running_var.reshape(bshape)
        hidden = [input, xc]
    rs = (var + eps).rsqrt()
    y = xc * rs
    hidden.append(rs)
    y = _affine(y, weight, bias, bshape, hidden)
    hide(*[h for h in hidden if isinstance(h, Tensor) and h._tape is not None])
    return named(y, "NativeBatchNormBackward0", 3) if y._tape is not None else y


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """weight's rows at the indices (EmbeddingBackward0); rows at padding_idx get no gradient."""
    if max_norm is not None:   # rows used are renormalised in place first (torch's renorm_)
        from .modules._functional import embedding_renorm_
        embedding_renorm_(weight, input, max_norm, norm_type)
    idx = np.asarray(input._data if isinstance(input, Tensor) else input)
    if idx.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following "
                           "scalar types: Long, Int; but got %s instead"
                           % (input._dtype._tname if isinstance(input, Tensor) else idx.dtype))
    V = weight.shape[0]
    if padding_idx is not None:
        if padding_idx < 0:
            padding_idx += V
        if not 0 <= padding_idx < V:
            raise AssertionError("Padding_idx must be within num_embeddings")
    if idx.size and (idx.min() < -V or idx.max() >= V):
        raise IndexError("index out of range in self")
    from ..creation import tensor as _tensor
    flat = _tensor(idx.reshape(-1).astype(np.int64) % max(V, 1))
    rows = tap(weight, 0).index_select(0, flat)     # the node lists the weight only
    out = rows.reshape(tuple(idx.shape) + tuple(weight.shape[1:]))
    if padding_idx is not None and out._tape is not None and np.any(idx == padding_idx):
        mask = _wrap(np.broadcast_to((idx == padding_idx)[(...,) + (None,) * (weight._data.ndim - 1)],
                                     out.shape).copy(), bool_)
        const = _wrap(np.asarray(out._data).copy(), weight._dtype)
        res = _math.where(mask, const, out)
        hide(rows, out)
        out = res
    if out._tape is not None:
        hide(rows)
        named(out, "EmbeddingBackward0", 1)
        if scale_grad_by_freq:         # gradients of each row divided by its count
            from .modules._functional import scale_grad_by_freq as _by_freq
            out = named(_by_freq(out, idx), "EmbeddingBackward0", 1)
    return out


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target (log target - input) pointwise (xlogy(t, t) - t input; exp(t) (t - input) with
    log_target), reduced ('batchmean': the sum over the batch size)."""
    if reduction == "mean" and size_average is None and reduce is None:
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with the "
                      "KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    red = reduction if reduction == "batchmean" else _reduction(size_average, reduce, reduction)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        from ..special import xlogy
        loss = xlogy(target, target) - target * input
    if red == "none":
        return loss
    if red == "batchmean":
        return loss.sum() / input.shape[0] if input._data.ndim else loss.sum()
    return loss.mean() if red == "mean" else loss.sum()


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(q k^T * scale + mask) v (torch's math reference: a boolean mask keeps True
    entries, a float mask is added; is_causal: the lower triangle)."""
    sc = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    out = _fused.attention(query, key, value, attn_mask, dropout_p, is_causal, sc)
    if out is not None:
        return out
    return _sdpa_composed(query, key, value, attn_mask, is_causal, sc, dropout_p)


def _sdpa_composed(query, key, value, attn_mask, is_causal, sc, dropout_p=0.0):
    """scaled_dot_product_attention as a composition of recorded entries (torch's math
    path)."""
    L, S = query.shape[-2], key.shape[-2]
    attn = (query @ key.transpose(-2, -1)) * sc
    if is_causal:
        keep = np.tril(np.ones((L, S), bool))
        attn = attn.masked_fill(_wrap(~keep, bool_), float("-inf"))
    if attn_mask is not None:
        if attn_mask._dtype is bool_:
            attn = attn.masked_fill(_wrap(~np.asarray(attn_mask._data), bool_), float("-inf"))
        else:
            attn = attn + attn_mask
    attn = softmax(attn, -1)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, True)
    return attn @ value


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    from .. import linalg
    d = named(x1 - x2 + eps, "AddBackward1")        # aten: add(Tensor, Scalar)
    return named(linalg.vector_norm(d, p, -1, keepdim), "NormBackward1")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log 2 pi)."""
    if isinstance(var, (int, float)):
        var = _wrap(np.full(np.shape(input._data), var, input._dtype.np), input._dtype)
    elif var.shape != input.shape and var._data.ndim == input._data.ndim - 1:
        var = var.unsqueeze(-1)
    if np.any(np.asarray(var._data) < 0):
        raise ValueError("var has negative entry/entries")
    v = _math.clamp(var, min=eps)
    loss = 0.5 * (v.log() + (input - target) ** 2 / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    if reduction == "none":
        return loss
    return loss.mean() if reduction == "mean" else loss.sum()


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    red = _reduction(size_average, reduce, reduction)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * named(input + eps, "AddBackward1").log()
    if full and isinstance(target, Tensor) and target._rg and STATE.enabled:
        # torch's Python formula, differentiable in the target
        st = (target * target.log() - target + 0.5 * (target * (2 * math.pi)).log()) \
            .masked_fill(target <= 1, 0)
        loss = loss + st
    elif full:
        t = np.asarray(target._data if isinstance(target, Tensor) else target, np.float64)
        with np.errstate(all="ignore"):
            st = np.where(t > 1, t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t), 0)
        loss = loss + _wrap(st.astype(loss._dtype.np), loss._dtype)
    if red == "none":
        return loss
    return loss.mean() if red == "mean" else loss.sum()


# ----------------------------------------------------------------------------- conv / pooling
from ._conv import (avg_pool1d, avg_pool2d, conv1d, conv2d, max_pool1d,  # noqa: E402,F401
                    max_pool2d, unfold, fold, adaptive_avg_pool1d, adaptive_avg_pool2d,
                    adaptive_max_pool1d, adaptive_max_pool2d)

__all__ += ["conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "unfold",
            "fold", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
            "adaptive_max_pool2d"]

# ----------------------------------------------------------------------------- more losses,
# distances and normalizations, composed from differentiable ops: the margin and embedding
# losses, triplet losses, pdist, group/instance/rms norm, prelu, gumbel_softmax, and the
# torch-namespace forms (``torch.layer_norm`` ... with aten's signatures)
# aten's Tensor-Scalar overloads (x + 1e-12, x - margin inside a C++ composition): one input
ONE_INPUT.update({"AddBackward1", "SubBackward1"})

_RED = {0: "none", 1: "mean", 2: "sum"}


def _adds(t, c):
    """t + c as aten's add(Tensor, Scalar): AddBackward1."""
    return named(t + c, "AddBackward1")


def _subs(t, c):
    """t - c as aten's sub(Tensor, Scalar): SubBackward1."""
    return named(t - c, "SubBackward1")


def _rsub(c, t):
    """c - t as C++'s Scalar - Tensor (the scalar wrapped in a tensor): SubBackward0(None, t)."""
    return _wrap(np.asarray(c, t._dtype.np), t._dtype) - t


def _F():
    return _sys.modules[__name__]      # (these functions came from nn/_losses2.py)


def _apply_reduction(loss, red):
    if red == "none":
        return loss
    return loss.mean() if red == "mean" else loss.sum()


def _red(size_average, reduce, reduction):
    return _F()._reduction(size_average, reduce, reduction)


def _zeros_like(t):
    return _wrap(np.zeros(np.shape(t._data), t._dtype.np), t._dtype)


def _mask(cond):
    return _wrap(np.asarray(cond, bool), bool_)


# ----------------------------------------------------------------------------- margin losses
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target (input1 - input2) + margin)."""
    red = _red(size_average, reduce, reduction)
    if not (input1.dim() == input2.dim() == target.dim()):
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension but "
                           "got sizes: input1: %s, input2: %s, target: %s "
                           % (_F()._size(input1.shape), _F()._size(input2.shape),
                              _F()._size(target.shape)))
    out = _adds(-target * (input1 - input2), margin).clamp_min(0)
    return _apply_reduction(out, red)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """input where target == 1, max(0, margin - input) where target == -1 (aten's where form:
    the two terms are added, so other target values add both)."""
    red = _red(size_average, reduce, reduction)
    t = np.asarray(target._data)
    zeros = _zeros_like(input)
    margin_clamp = _rsub(margin, input).clamp_min(0)
    out_margin = _math.where(_mask(t != 1), margin_clamp, zeros)
    out_self = _math.where(_mask(t != -1), input, zeros)
    return _apply_reduction(out_margin + out_self, red)


_EPS = 1e-12


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1."""
    red = _red(size_average, reduce, reduction)
    td = target.dim()
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with sizes "
                           "%s and %s." % (list(input1.shape), list(input2.shape)))
    if td == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with sizes "
                           "%s and %s." % (list(input1.shape), list(input2.shape)))
    prod_sum = (input1 * input2).sum(td)
    m1 = _adds((input1 * input1).sum(td), _EPS)
    m2 = _adds((input2 * input2).sum(td), _EPS)
    cos = prod_sum / (m1 * m2).sqrt()
    zeros = _zeros_like(cos)
    t = np.asarray(target._data)
    pos = _rsub(1, cos)
    neg = _subs(cos, margin).clamp_min(0)
    out = _math.where(_mask(t == 1), pos, zeros) + _math.where(_mask(t == -1), neg, zeros)
    return _apply_reduction(out, red)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target input)), SoftMarginLossBackward0."""
    red = _red(size_average, reduce, reduction)
    F = _F()
    F._check_target_shape(input, target, "soft_margin_loss")
    F._not_differentiable_arg("soft_margin_loss", "target", target)
    # torch's node lists the input only (the target is not differentiable in aten)
    z = -target * tap(input, 0)
    out = F.softplus(z)          # log(1 + exp(z)), stable
    hidden = [z]
    if red != "none":
        hidden.append(out)
        out = out.mean() if red == "mean" else out.sum()
    if out._tape is None:
        return out
    hide(*[h for h in hidden if h._tape is not None])
    return _saves_inputs(named(out, "SoftMarginLossBackward0", 1), input, target)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)) averaged over the classes (last dim)."""
    red = _red(size_average, reduce, reduction)
    F = _F()
    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    C = input.size(class_dim)
    loss = loss.sum(dim=class_dim) / C
    return _apply_reduction(loss, red)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])^p / C (times weight[y]),
    MultiMarginLossBackward0."""
    red = _red(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if weight is not None and weight._dtype is not input._dtype:
        raise RuntimeError("expected scalar type %s but found %s"
                           % (input._dtype._tname, weight._dtype._tname))
    nd = input.dim()
    shp = tuple(input.shape)
    C = shp[-1] if nd else 1
    N = shp[0] if nd == 2 else 1
    if nd > 2 or (nd == 2 and shp[1] == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but "
                           "got: %s" % (list(shp),))
    if target._dtype is not int64:
        raise RuntimeError("expected scalar type Long but found %s" % target._dtype._tname)
    t = np.asarray(target._data).reshape(-1)
    if t.size != N or (nd == 2 and target.dim() > 1) or (nd < 2 and target.dim() > 1):
        raise RuntimeError("inconsistent target size, expected %d but got %s"
                           % (N, list(target.shape)))
    if t.size and (t.min() < 0 or t.max() >= C):
        raise RuntimeError("target out of range")
    x = tap(input, 0).reshape(N, C)
    from ..creation import tensor as _tensor
    idx = _tensor(t.astype(np.int64).reshape(N, 1))
    xy = x.gather(1, idx)                                  # (N, 1)
    m = margin - xy
    z0 = m + x
    z = z0.clamp_min(0)
    h = z if p == 1 else z * z
    hidden = [x, xy, m, z0, z]
    if weight is not None:
        w = _wrap(np.asarray(weight._data)[t].reshape(N, 1).astype(input._dtype.np), input._dtype)
        hidden.append(h)
        h = h * w
    keep = np.ones((N, C), bool)
    keep[np.arange(N), t] = False
    hidden.append(h)
    h = h * _wrap(keep.astype(input._dtype.np), input._dtype)     # the i != y terms
    hidden.append(h)
    s1 = h.sum(1)
    hidden.append(s1)
    per = s1 / C
    if red == "none":
        out = per if nd == 2 else per.reshape(())
    else:
        hidden.append(per)
        out = per.mean() if red == "mean" else per.sum()
    if out._tape is None:
        return out
    if red == "none" and nd != 2:
        hidden.append(per)
    hide(*[v for v in hidden if isinstance(v, Tensor) and v._tape is not None])
    return _saves_inputs(named(out, "MultiMarginLossBackward0", 1), input)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)), d the p-norm pairwise distance (swap: d(a, n)
    replaced by min(d(a, n), d(p, n)))."""
    red = _red(size_average, reduce, reduction)
    a, pd, nd = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pd == nd):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same "
                           "number of dimensions, but got: anchor %dD, positive %dD, and negative "
                           "%dD inputs" % (a, pd, nd))
    F = _F()
    dist_pos = F.pairwise_distance(anchor, positive, p, eps)
    dist_neg = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = _math.minimum(dist_neg, F.pairwise_distance(positive, negative, p, eps))
    out = (_adds(dist_pos, margin) - dist_neg).clamp_min(0)
    return _apply_reduction(out, red)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with a user distance (default pairwise_distance)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError("%s is not a valid value for reduction" % reduction)
    if margin <= 0:
        raise ValueError("triplet_margin_with_distance_loss: expected margin to be greater than 0, "
                         "got %s instead" % margin)
    a, pd, nd = anchor.ndim, positive.ndim, negative.ndim
    if not (a == pd and pd == nd):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same "
                           "number of dimensions, but got: anchor %dD, positive %dD, and negative "
                           "%dD inputs" % (a, pd, nd))
    dist = distance_function if distance_function is not None else _F().pairwise_distance
    dist_pos = dist(anchor, positive)
    dist_neg = dist(anchor, negative)
    if swap:
        dist_neg = _math.minimum(dist_neg, dist(positive, negative))
    loss = _math.clamp_min(margin + dist_pos - dist_neg, 0)
    return _apply_reduction(loss, reduction)


# ----------------------------------------------------------------------------- distances
def pdist(input, p=2):
    """||x_i - x_j||_p for the rows i < j of a 2-D input (row-major over the pairs),
    PdistBackward0."""
    if input.dim() != 2:
        raise RuntimeError("pdist only supports 2D tensors, got: %dD" % input.dim())
    if not input._dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    from ..creation import tensor as _tensor
    from .. import linalg
    a = input.index_select(0, _tensor(i.astype(np.int64)))
    b = input.index_select(0, _tensor(j.astype(np.int64)))
    d = a - b
    out = linalg.vector_norm(d, p, 1)
    if out._tape is not None:
        hide(a, b, d)
        named(out, "PdistBackward0")
    return out


# ----------------------------------------------------------------------------- normalization
def _norm_stats(x, dims, eps):
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(dims, keepdim=True)
    rs = (var + eps).rsqrt()
    return mu, xc, var, rs


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over each group of channels (and the spatial dims), then
    the per-channel affine; NativeGroupNormBackward0."""
    if input.dim() < 2:
        raise RuntimeError("Expected at least 2 dimensions for input tensor but received %d"
                           % input.dim())
    shp = tuple(input.shape)
    N, C = shp[0], shp[1]
    _F()._float_only(input, "GroupNormKernelImpl")
    size = [N * C // num_groups, num_groups] + list(shp[2:])
    if int(np.prod(size[:1] + size[2:])) == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size %s"
                         % (size,))
    if C % num_groups != 0:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but "
                           "got input of shape %s and num_groups=%d" % (list(shp), num_groups))
    for name, v in (("weight", weight), ("bias", bias)):
        if v is not None and (v.dim() != 1 or v.numel() != C):
            raise RuntimeError("Expected %s to be a vector of size equal to the number of channels "
                               "in input, but got %s of shape %s and input of shape %s"
                               % (name, name, list(v.shape), list(shp)))
    x = tap(input, 0)
    g = x.reshape(N, num_groups, -1)
    mu, xc, var, rs = _norm_stats(g, (2,), eps)
    yn = xc * rs
    y = yn.reshape(shp)
    hidden = [g, mu, xc, var, rs, yn]
    bshape = (1, C) + (1,) * (len(shp) - 2)
    y = _F()._affine(y, weight, bias, bshape, hidden)
    if y._tape is None:
        return y
    hide(*[h for h in hidden if h._tape is not None])
    return named(y, "NativeGroupNormBackward0", 3)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Batch norm of each (sample, channel) over its spatial dims (input viewed as
    (1, N*C, ...)); running statistics get the batch average of the per-instance updates."""
    shp = tuple(input.shape)
    if use_input_stats:
        if int(np.prod(shp[2:], dtype=np.int64)) == 1 if len(shp) > 2 else True:
            raise ValueError("Expected more than 1 spatial element when training, got input size "
                             "%s" % (_F()._size(shp),))
    N, C = shp[0], shp[1]
    F = _F()
    x = input.reshape((1, N * C) + shp[2:])
    rep = lambda v: None if v is None else v.repeat(N)  # noqa: E731
    rm, rv = rep(running_mean), rep(running_var)
    if rm is not None:
        rm = rm.detach().clone()
    if rv is not None:
        rv = rv.detach().clone()
    y = F.batch_norm(x, rm, rv, rep(weight), rep(bias), use_input_stats, momentum, eps)
    if use_input_stats:
        with _no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.reshape(N, C).mean(0))
            if running_var is not None:
                running_var.copy_(rv.reshape(N, C).mean(0))
    return y.reshape(shp)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims (eps: the dtype's
    machine epsilon by default), times weight."""
    ns, shp = _F()._normalized(input, normalized_shape)
    _F()._float_only(input, "rms_norm")
    if eps is None:
        eps = float(np.finfo(input._dtype.np).eps)
    dims = tuple(range(len(shp) - len(ns), len(shp)))
    r = _adds(input.pow(2).mean(dims, keepdim=True), eps).rsqrt()
    y = input * r
    if weight is not None:
        y = y * weight
    return y


def prelu(input, weight):
    """max(0, x) + weight min(0, x), weight broadcast over dim 1 (one value: everywhere);
    PreluKernelBackward0."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("prelu(): argument 'weight' (position 2) must be Tensor, not %s"
                        % type(weight).__name__)
    if weight.dim() > 1:
        raise RuntimeError("prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = %d"
                           % weight.dim())
    n = weight.numel()
    shp = tuple(input.shape)
    if n != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        ch = shp[1] if input.dim() >= 2 else 1
        if ch != n:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter "
                               "numbers = %d and channel size = %d." % (n, ch))
    _F()._float_only(input, "prelu_cpu")
    if not _PRELU:
        _PRELU.extend(_prelu_funcs())
    if input.dim() >= 2:            # torch views the weight to broadcast over dim 1
        weight = weight.reshape((1, n) + (1,) * (input.dim() - 2))
    return _PRELU[0].apply(input, weight)


def _prelu_wshape(xd, wd):
    """The weight's values shaped to broadcast over dim 1 of the input (torch's view)."""
    nd = xd.ndim
    return wd.reshape((1, wd.size) + (1,) * (nd - 2)) if nd >= 2 else wd.reshape(())


def _prelu_wsum(t, w):
    """``t`` (the input's shape) summed to the weight's shape (over every dim but 1)."""
    if t.dim() >= 2 and w.numel() > 1:
        return t.sum([d for d in range(t.dim()) if d != 1]).reshape(w.shape)
    return t.sum().reshape(w.shape)


def _prelu_funcs():
    """prelu as torch's kernel: y = x > 0 ? x : w x; the backward (PreluKernelBackward0) is a
    node of its own whose derivatives are torch's (derivatives.yaml, _prelu_kernel_backward):
    they take x >= 0 as the positive side, so at x = 0 the second order differs from the
    derivative of the first-order formula (which takes x > 0), as torch's does."""
    from ..autograd.function import Function
    from .._core.names import name_id

    def mask(x, ge):
        d = np.asarray(x._data)
        return _wrap(np.asarray(d >= 0 if ge else d > 0), bool_)

    class PreluKernel(Function):
        _node_name_id = staticmethod(lambda: name_id("PreluKernelBackward0"))

        @staticmethod
        def forward(ctx, x, w):
            xd = np.asarray(x._data)
            wd = _prelu_wshape(xd, np.asarray(w._data))
            with np.errstate(all="ignore"):
                y = np.asarray(np.where(xd > 0, xd, wd * xd), x._dtype.np)
            ctx.save_for_backward(x, w)
            return _wrap(y if y.ndim else y[()], x._dtype)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return PreluKernelGrad.apply(g, x, w)

    class PreluKernelGrad(Function):
        _node_name_id = staticmethod(lambda: name_id("PreluKernelBackwardBackward0"))

        @staticmethod
        def forward(ctx, g, x, w):
            xd, gd = np.asarray(x._data), np.asarray(g._data)
            wd = _prelu_wshape(xd, np.asarray(w._data))
            dt = x._dtype.np
            with np.errstate(all="ignore"):
                gi = np.asarray(np.where(xd > 0, gd, wd * gd), dt)
                gw = np.where(xd > 0, 0, xd * gd).astype(dt)
            gw = (gw.sum(tuple(k for k in range(xd.ndim) if k != 1)) if xd.ndim >= 2 and
                  w.numel() > 1 else gw.sum()).astype(dt).reshape(w.shape)
            ctx.save_for_backward(g, x, w)
            return (_wrap(gi if gi.ndim else gi[()], x._dtype), _wrap(gw, w._dtype))

        @staticmethod
        def backward(ctx, ggi, ggw):
            g, x, w = ctx.saved_tensors
            ge = mask(x, True)
            wb = w.reshape(_prelu_wshape(np.asarray(x._data), np.asarray(w._data)).shape)
            zero = x.new_zeros(())
            ggi = zero if ggi is None else ggi
            gwb = zero if ggw is None else ggw.reshape(wb.shape)
            n = ctx.needs_input_grad
            dg = _math.where(ge, ggi, ggi * wb + gwb * x) if n[0] else None
            dx = _math.where(ge, zero, g * gwb) if n[1] else None
            dw = _prelu_wsum(_math.where(ge, zero, g * ggi).expand(x.shape), w) if n[2] else None
            return dg, dx, dw
    return [PreluKernel, PreluKernelGrad]


_PRELU = []


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1); hard: the one-hot of the argmax with
    the soft sample's gradient (y_hard - y_soft.detach() + y_soft)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    from ..creation import _gen
    shape, npdt = np.shape(logits._data), logits._dtype.np
    g = -np.log(_gen(None)._exponential(int(np.prod(shape)), 1.0).astype(npdt)).reshape(shape)
    gumbels = (logits + _wrap(g, logits._dtype)) / tau
    y_soft = _F().softmax(gumbels, dim)
    if not hard:
        return y_soft
    d = np.asarray(y_soft._data)
    idx = np.expand_dims(np.argmax(d, axis=dim), dim)
    hard_np = np.zeros_like(d)
    np.put_along_axis(hard_np, idx, 1.0, axis=dim)
    y_hard = _wrap(hard_np, logits._dtype)
    return y_hard - y_soft.detach() + y_soft


# ----------------------------------------------------------------------------- torch.* forms
def _red_int(reduction):
    """aten's integer reduction: 1 mean, 2 sum, any other value none (apply_loss_reduction)."""
    return _RED.get(int(reduction), "none")


def _torch_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def _torch_group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return group_norm(input, num_groups, weight, bias, eps)


def _torch_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                        eps, cudnn_enabled):
    return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                         momentum, eps)


def _torch_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
                     cudnn_enabled):
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def _torch_embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _F().embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq)


# torch's Python bindings of these aten losses default reduction to 0 ('none'; the schema
# says Mean, but torch.kl_div(x, y) is elementwise), an explicit 1 is 'mean'
def _torch_kl_div(input, target, reduction=0, *, log_target=False):
    with warnings.catch_warnings():         # (aten's kl_div does not warn about 'mean')
        warnings.simplefilter("ignore", UserWarning)
        return _F().kl_div(input, target, reduction=_red_int(reduction), log_target=log_target)


def _torch_binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                           reduction=0):
    return _F().binary_cross_entropy_with_logits(input, target, weight, reduction=_red_int(reduction),
                                                 pos_weight=pos_weight)


def _torch_margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    return margin_ranking_loss(input1, input2, target, margin, reduction=_red_int(reduction))


def _torch_hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    return hinge_embedding_loss(input, target, margin, reduction=_red_int(reduction))


def _torch_cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    return cosine_embedding_loss(input1, input2, target, margin, reduction=_red_int(reduction))


def _torch_triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                              reduction=0):
    return triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                               reduction=_red_int(reduction))


def _torch_poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_red_int(reduction))

__all__ += ["cosine_embedding_loss", "group_norm", "gumbel_softmax", "hinge_embedding_loss",
            "instance_norm", "margin_ranking_loss", "multi_margin_loss",
            "multilabel_soft_margin_loss", "pdist", "prelu", "rms_norm", "soft_margin_loss",
            "triplet_margin_loss", "triplet_margin_with_distance_loss", "alpha_dropout",
            "bilinear", "pad"]
