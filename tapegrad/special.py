"""torch.special: expit, logit, erf, erfc, gammaln, digamma, polygamma, multigammaln, xlogy,
and re-exports (softmax, log_softmax, logsumexp, exp2, expm1, log1p)."""
import math

import numpy as np

from ._core.names import ONE_INPUT
from ._state import STATE
from .tensor import Tensor, _wrap  # noqa: F401
from ._math import sigmoid as expit
from ._math import _floatify, clamp, erf, exact, exp2, expm1, log1p, unary, where  # noqa: F401
from ._record import _check_broadcast, hide, named
from ._reduce import logsumexp  # noqa: F401
from .nn.functional import log_softmax as _log_softmax, softmax as _softmax
import builtins
from .autograd.function import Function
from .linalg import _sum_to
from .tensor import _result_dtype, _type_name
from ._math import _inplace_of, _owned
from .creation import _i0_np, _i1_np

# torch.special's names (tapegrad/__init__.py takes torch's top-level names from here by
# name: digamma, erfc, lgamma ...)
__all__ = ["digamma", "entr", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammainc",
           "gammaincc", "gammaln", "i0", "i1", "log1p", "log_ndtr", "log_softmax", "logit",
           "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "sinc", "softmax",
           "xlog1py", "xlogy"]

ONE_INPUT.update({"ErfcBackward0", "MvlgammaBackward0", "SincBackward0"})


def softmax(input, dim, *, dtype=None):
    """special.softmax: ``dim`` is required (torch raises TypeError without it)."""
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _log_softmax(input, dim, dtype=dtype)


def _vec(f, x):
    return np.vectorize(f, otypes=[np.float64])(np.asarray(x._data, np.float64)).astype(x._dtype.np)


def gammaln(input):
    return unary(input, "lgamma")


lgamma = gammaln


def digamma(input):
    return unary(input, "polygamma", c=0.0, name="DigammaBackward0")


psi = digamma


def polygamma(n, input):
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return unary(input, "polygamma", c=float(n),
                 name="DigammaBackward0" if n == 0 else "PolygammaBackward0")


def multigammaln(input, p):
    x = _floatify(input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    c = p * (p - 1) / 4.0 * math.log(math.pi)
    from .creation import arange
    # torch: x + arange(-(p - 1) / 2, 1/2, 1/2) (so -0.0 + 0.0 = +0.0: digamma(+0) at -0.0)
    offs = (arange(p, dtype=x._dtype) - (p - 1)) / 2.0
    z = x.unsqueeze(-1) + offs
    lg = gammaln(z)
    s = lg.sum(-1)
    out = s + c
    hide(z, lg, s)
    return named(out, "MvlgammaBackward0")


mvlgamma = multigammaln


def erfc(input):
    x = _floatify(input)
    y = _vec(math.erfc, x)
    if not (x._rg and STATE.enabled):
        return _wrap(y if y.ndim else y[()], x._dtype)
    e = erf(x)
    out = 1 - e
    hide(e)
    return exact(named(out, "ErfcBackward0"), y)


def _erfinv_np(x):
    """erfinv in float64: Giles' single-precision approximation refined by two Newton steps
    on math.erf (exact to a few ulp); +-1 -> +-inf, |x| > 1 -> nan."""
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        w = -np.log((1.0 - x) * (1.0 + x))
        small = w < 5.0
        ws = w - 2.5
        p1 = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                  -0.00417768164, 0.246640727, 1.50140941):
            p1 = c + p1 * ws
        wl = np.sqrt(w) - 3.0
        p2 = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                  0.00943887047, 1.00167406, 2.83297682):
            p2 = c + p2 * wl
        y = np.where(small, p1, p2) * x
        erf_v = np.vectorize(math.erf, otypes=[np.float64])
        for _ in range(2):
            fin = np.isfinite(y)
            err = erf_v(np.where(fin, y, 0.0)) - x
            y = np.where(fin, y - err / (2.0 / math.sqrt(math.pi) * np.exp(-y * y)), y)
        y = np.where(x == 1.0, np.inf, np.where(x == -1.0, -np.inf, y))
        y = np.where(np.abs(x) > 1.0, np.nan, y)
    return y


def _pointwise_fn(name, np_fn, fn, deriv, saves="x"):
    """A custom Function for the elementwise ``fn``: the value from ``np_fn`` (numpy, float64
    inside), the gradient ``g * deriv(x, y)`` written with tapegrad ops of x and y = fn(x), so
    higher order works. ``saves``: what torch's node saves ("x", "y" or "xy"; a saved result
    written in place makes backward raise, as torch's). When y is not saved, the backward
    computes it again from x (``fn``: recorded, under create_graph); when x is not, deriv
    gets None for it."""
    def forward(ctx, x):
        y = np.asarray(np_fn(np.asarray(x._data)))
        out = _wrap(np.asarray(y, x._dtype.np) if y.ndim else x._dtype.np.type(y), x._dtype)
        ctx.save_for_backward(*((x,) if saves == "x" else (out,) if saves == "y" else (x, out)))
        return out

    def backward(ctx, g):
        saved = ctx.saved_tensors
        if saves == "x":
            x = saved[0]
            y = fn(x) if STATE.enabled else _wrap(np.asarray(np_fn(np.asarray(x._data)),
                                                             x._dtype.np), x._dtype)
        elif saves == "y":
            x, y = None, saved[0]
        else:
            x, y = saved
        return g * deriv(x, y)

    return type(name, (Function,), {"forward": staticmethod(forward),
                                     "backward": staticmethod(backward)})


def erfinv(input):
    x = _floatify(input)
    return named(_sf2("Erfinv").apply(x), "ErfinvBackward0")


def _ndtri_np(p):
    """The standard normal quantile in float64: Acklam's rational approximation refined by a
    Halley step on math.erfc (accurate in both tails)."""
    p = np.asarray(p, np.float64)
    a = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
         1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00)
    b = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
         6.680131188771972e+01, -1.328068155288572e+01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
         -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
         3.754408661907416e+00)

    def poly(cs, t):
        r = np.zeros_like(t)
        for k in cs:
            r = r * t + k
        return r
    with np.errstate(all="ignore"):
        lo = np.minimum(p, 1 - p)
        q = np.sqrt(-2 * np.log(lo))
        tail = poly(c, q) / (poly(d, q) * q + 1)
        tail = np.where(p < 0.5, tail, -tail)
        r = (p - 0.5) ** 2
        mid = (p - 0.5) * poly(a, r) / (poly(b, r) * r + 1)
        x = np.where(lo < 0.02425, tail, mid)
        erfc_v = np.vectorize(math.erfc, otypes=[np.float64])
        fin = np.isfinite(x)
        xs = np.where(fin, x, 0.0)
        # Halley: e = Phi(x) - p, computed from the smaller tail
        e = np.where(xs < 0, 0.5 * erfc_v(-xs / math.sqrt(2)) - p,
                     (1 - p) - 0.5 * erfc_v(xs / math.sqrt(2)))
        e = np.where(xs < 0, e, -e)
        u = e * math.sqrt(2 * math.pi) * np.exp(xs * xs / 2)
        x = np.where(fin, xs - u / (1 + xs * u / 2), x)
        x = np.where(p == 0, -np.inf, np.where(p == 1, np.inf, x))
        x = np.where((p < 0) | (p > 1) | np.isnan(p), np.nan, x)
    return x


def _log_ndtr_np(x):
    """log Phi(x) in float64: log1p(-Phi(-x)) above 0, log(erfc(-x / sqrt 2) / 2) down to -37,
    the asymptotic series below (no underflow)."""
    x = np.asarray(x, np.float64)
    erfc_v = np.vectorize(math.erfc, otypes=[np.float64])
    with np.errstate(all="ignore"):
        hi = np.log1p(-0.5 * erfc_v(np.where(x > 0, x, 0.0) / math.sqrt(2)))
        mid = np.log(0.5 * erfc_v(-np.clip(x, -37.0, 0.0) / math.sqrt(2)))
        xl = np.where(x < -37.0, x, -40.0)
        z = 1.0 / (xl * xl)
        ser, term = np.ones_like(xl), np.ones_like(xl)
        for k in range(1, 12):
            term = term * -(2 * k - 1) * z
            ser = ser + term
        low = -0.5 * xl * xl - np.log(-xl) - 0.5 * math.log(2 * math.pi) + np.log(ser)
    return np.where(x > 0, hi, np.where(x >= -37.0, mid, np.where(np.isnan(x), np.nan, low)))


def _tensor_pair(input, other, fname):
    """(x, y) tensors of the result dtype (floating) for a binary special function, and which
    operand was a Python number (torch's overload: 0 none, 1 self, 2 other)."""
    from .tensor import _result_dtype, _DEFAULT
    ti, to = isinstance(input, Tensor), isinstance(other, Tensor)
    if not (ti or to):
        raise TypeError("%s() received an invalid combination of arguments - got (%s, %s), but "
                        "expected one of:\n * (Tensor input, Tensor other, *, Tensor out = None)\n"
                        " * (Number self, Tensor other, *, Tensor out = None)\n"
                        " * (Tensor input, Number other, *, Tensor out = None)\n"
                        % (fname, type(input).__name__, type(other).__name__))
    rdt = _result_dtype(input, other) if ti else _result_dtype(other, input)
    if rdt._cat < 2:
        rdt = _DEFAULT[0]

    def conv(v):
        if isinstance(v, Tensor):
            return v if v._dtype is rdt else v.to(rdt)
        return _wrap(rdt.np.type(v), rdt)
    return conv(input), conv(other), (0 if ti and to else 1 if to else 2)


def _bool():
    from .tensor import bool_
    return bool_


def _vals(t):
    return np.asarray(t._data)


class XlogyFn(Function):
    """x log(y) (log1p for xlog1py), 0 where x == 0 and y is not nan."""
    @staticmethod
    def forward(ctx, x, y, log1p_):
        xd, yd = _vals(x), _vals(y)
        with np.errstate(all="ignore"):
            ly = np.log1p(yd) if log1p_ else np.log(yd)
            out = np.where((xd == 0) & ~np.isnan(yd), 0, xd * ly).astype(x._dtype.np)
        ctx.save_for_backward(x, y)
        ctx.log1p = log1p_
        return _wrap(out if out.ndim else out[()], x._dtype)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        l1p = ctx.log1p
        gx = gy = None
        xd, yd = _vals(x), _vals(y)
        if ctx.needs_input_grad[0]:
            # torch: xlogy(g, y) masked to 0 where x == 0 and y <= 0 (y <= -1: xlog1py)
            gx = _xlog(g, y, l1p)
            m = (xd == 0) & ((yd <= -1) if l1p else (yd <= 0))
            if np.any(m):
                gx = where(_wrap(np.broadcast_to(m, gx.shape).copy(), _bool()), 0.0, gx)
            gx = _sum_to(gx, x.shape)
        if ctx.needs_input_grad[1]:
            gy = _sum_to(g * x / (y + 1 if l1p else y), y.shape)
        return gx, gy, None


class Entr(Function):
    @staticmethod
    def forward(ctx, x):
        xd = _vals(x)
        with np.errstate(all="ignore"):
            y = np.where(xd > 0, -xd * np.log(np.where(xd > 0, xd, 1)),
                         np.where(xd == 0, 0, np.where(np.isnan(xd), np.nan, -np.inf)))
        ctx.save_for_backward(x)
        y = np.asarray(y, x._dtype.np)
        return _wrap(y if y.ndim else y[()], x._dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * -(x.log() + 1)       # torch: inf at 0, nan below


class Logit(Function):
    @staticmethod
    def forward(ctx, x, eps):
        xd = _vals(x)
        dt = x._dtype.np
        z = np.clip(xd, dt.type(eps), dt.type(1 - eps)) if eps is not None else xd
        with np.errstate(all="ignore"):
            y = np.log(z / (1 - z)).astype(dt)
        ctx.save_for_backward(x)
        ctx.eps = eps
        return _wrap(y if y.ndim else y[()], x._dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        xd = _vals(x)
        eps = ctx.eps
        if eps is None and np.any(np.signbit(xd) & (xd == 0)):
            x = x + 0.0        # -0.0 -> +0.0: the gradient +inf at -0.0, as torch
        r = g / (x * (1 - x))
        # torch: nan outside [0, 1] (no eps); 0 outside [eps, 1 - eps]
        if eps is None:
            bad = (xd < 0) | (xd > 1)
            fill = float("nan")
        else:
            bad = (xd < eps) | (xd > 1 - eps)
            fill = 0.0
        if np.any(bad):
            r = where(_wrap(np.broadcast_to(bad, r.shape).copy(), _bool()), fill, r)
        return r, None


class Sinc(Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x)
        return _wrap(y if y.ndim else y[()], x._dtype)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return _sinc_backward(g, x), None


def _sf2(name):
    return _SF[name]


def _xlog(input, other, l1p):
    x, y, which = _tensor_pair(input, other, "special_xlog1py" if l1p else "xlogy")
    _check_broadcast(x, y)
    out = _sf2("XlogyFn").apply(x, y, l1p)
    return named(out, ("SpecialXlog1PyBackward%d" if l1p else "XlogyBackward%d") % which)


def xlogy(input, other):
    """x log(y), 0 where x == 0 (unless y is nan); XlogyBackward0/1/2 as torch's overloads."""
    return _xlog(input, other, False)


def xlog1py(input, other):
    return _xlog(input, other, True)


def logit(input, eps=None):
    x = _floatify(input)
    return named(_sf2("Logit").apply(x, None if eps is None else float(eps)), "LogitBackward0")


def log_ndtr(input):
    x = _floatify(input)
    return named(_sf2("LogNdtr").apply(x), "SpecialLogNdtrBackward0")


def ndtri(input):
    x = _floatify(input)
    return named(_sf2("Ndtri").apply(x), "SpecialNdtriBackward0")


def entr(input):
    x = _floatify(input)
    return named(_sf2("Entr").apply(x), "SpecialEntrBackward0")


def ndtr(input):
    """(1 + erf(x / sqrt 2)) / 2 (MulBackward1 over AddBackward1, as torch)."""
    x = _floatify(input)
    a = _math_scale(x, 1 / math.sqrt(2), "MulBackward1")
    b = erf(a) + 1
    return _math_scale(named(b, "AddBackward1"), 0.5, "MulBackward1")


# the elementwise Functions (their backward calls the function again: defined after it)
# d erfinv(x) = sqrt(pi) / 2 exp(erfinv(x)^2) dx
_Erfinv = _pointwise_fn("Erfinv", _erfinv_np, erfinv,
                        lambda x, y: (y * y).exp() * (math.sqrt(math.pi) / 2))
# d log Phi(x) = phi(x) / Phi(x) dx = exp(-x^2 / 2 - log Phi(x)) / sqrt(2 pi) dx
_LogNdtr = _pointwise_fn("LogNdtr", _log_ndtr_np, log_ndtr, lambda x, ly: (
    x * x * -0.5 - ly).exp() * (1 / math.sqrt(2 * math.pi)), saves="xy")
# d ndtri(p) = sqrt(2 pi) exp(ndtri(p)^2 / 2) dp
_Ndtri = _pointwise_fn("Ndtri", _ndtri_np, ndtri,
                       lambda p, y: (y * y * 0.5).exp() * math.sqrt(2 * math.pi), saves="y")
_SF = {c.__name__: c for c in (_Erfinv, XlogyFn, _LogNdtr, _Ndtri, Entr, Logit, Sinc)}


def _math_scale(x, c, name="MulBackward0"):
    from ._math import scale
    return scale(x, c, name)


def sinc(input):
    """sin(pi x) / (pi x), 1 at 0 (SincBackward0). The gradient is torch's formula in the input's
    dtype, (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 where pi x^2 is 0 (float32 cancels near 0
    as torch's does: exactly 0 for |x| below ~1e-4)."""
    x = _floatify(input)
    d = np.asarray(x._data)
    with np.errstate(all="ignore"):
        px = d * x._dtype.np.type(math.pi)
        y = np.where(d == 0, 1, np.sin(px) / px).astype(x._dtype.np)
    if not (x._rg and STATE.enabled):
        return _wrap(y if y.ndim else y[()], x._dtype)
    return named(_sf2("Sinc").apply(x, y), "SincBackward0")


def _sinc_backward(g, x):
    sp = x * math.pi
    ssp = x * x * math.pi
    out = g * (sp * sp.cos() - sp.sin()) / ssp
    zero = np.asarray(ssp._data) == 0
    if np.any(zero):
        out = where(_wrap(np.broadcast_to(zero, out.shape).copy(), _bool()), 0.0, out)
    return out


def _install(Tensor):
    for name, f in (("erfinv", erfinv), ("sinc", sinc), ("xlogy", xlogy), ("logit", logit),
                    ("lgamma", gammaln), ("digamma", digamma), ("erfc", erfc)):
        if not hasattr(Tensor, name):
            setattr(Tensor, name, f)
    if not hasattr(Tensor, "polygamma"):
        Tensor.polygamma = lambda self, n: polygamma(n, self)
    if not hasattr(Tensor, "mvlgamma"):
        Tensor.mvlgamma = lambda self, p: multigammaln(self, p)


# ----------------------------------------------------------------------------- Bessel i0 / i1, incomplete gamma
def _torch():
    import tapegrad     # the torch namespace: the bodies below call T.<name> (KNOWN_UPWARD)
    return tapegrad


_FN = {}


def _bessel_fns():
    if "i0" not in _FN:
        # d i0(x) = i1(x) dx;  d i1(x) = (i0(x) - i1(x) / x) dx  (1/2 at 0)
        _FN["i0"] = _pointwise_fn("I0", _i0_np, i0, lambda x, y: i1(x))
        _FN["i1"] = _pointwise_fn("SpecialI1", _i1_np, i1, _di1, saves="xy")
    return _FN


def _di1(x, y):
    T = _torch()
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


def _named1(t, name):
    return named(t, name)


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
    # edges, in the order of torch's calc_igamma / calc_igammac (a nan a or x meets the
    # tests that come first: igammac(nan, 0) = 1, igamma(inf, nan) = 0)
    lo, hi = (1.0, 0.0) if upper else (0.0, 1.0)
    conds = [(x < 0) | (a < 0), (a == 0) & (x > 0), a == 0, x == 0,
             np.isinf(a) & np.isinf(x), np.isinf(a), np.isinf(x)]
    return np.select(conds, [np.nan, hi, np.nan, lo, np.nan, lo, hi], res)


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
            T = _torch()
            # torch: exp((a - 1) log(x) - x - lgamma(a)), lgamma = log |Gamma(a)| (a < 0 too:
            # the density's magnitude), 0 at Gamma's poles; Q = 1 - P
            ad = a.detach()
            dens = ((ad - 1) * T.log(x) - x - T.lgamma(ad)).exp()
            return None, (-g * dens if upper else g * dens)

        f = _FN[key] = type("Igammac" if upper else "Igamma", (Function,),
                            {"forward": staticmethod(forward), "backward": staticmethod(backward)})
    return f


def _igamma(upper):
    def fn(input, other):
        T = _torch()
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


gammainc = _igamma(False)
gammaincc = _igamma(True)


def _install_composed(Tensor):
    inplace_of = _inplace_of
    T = _torch()
    Tn = Tensor
    Tn.i0 = i0
    sp = T.special
    for nm, fn in (("lgamma", sp.lgamma), ("digamma", sp.digamma), ("erfc", sp.erfc),
                   ("erfinv", sp.erfinv), ("logit", sp.logit), ("sinc", sp.sinc),
                   ("xlogy", sp.xlogy), ("mvlgamma", sp.mvlgamma), ("i0", i0)):
        setattr(Tn, nm + "_", inplace_of(fn))
    Tn.polygamma_ = lambda self, n: self._inplace(None, lambda s, o: _named1(
        sp.polygamma(n, _owned(s)), "PolygammaBackward1"))
    Tn.igamma, Tn.igammac = gammainc, gammaincc
    Tn.igamma_, Tn.igammac_ = inplace_of(gammainc), inplace_of(gammaincc)
