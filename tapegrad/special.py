"""torch.special: expit, logit, erf, erfc, gammaln, digamma, polygamma, multigammaln, xlogy,
and re-exports (softmax, log_softmax, logsumexp, exp2, expm1, log1p)."""
import math

import numpy as np

from .autograd.graph import ONE_INPUT
from .autograd.grad_mode import STATE
from .tensor import Tensor, _wrap, sigmoid as expit  # noqa: F401
from ._math import (_floatify, clamp, erf, exact, exp2, expm1, hide, log1p, named, unary,  # noqa: F401
                    where)
from ._reduce import logsumexp  # noqa: F401
from .nn.functional import log_softmax, softmax  # noqa: F401

ONE_INPUT.update({"ErfcBackward0", "MvlgammaBackward0", "XlogyBackward0"})


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
    if np.any(np.asarray(x._data) <= (p - 1) / 2.0):
        raise RuntimeError("All elements must be greater than (p-1)/2")
    c = p * (p - 1) / 4.0 * math.log(math.pi)
    from .creation import arange
    shifts = arange(p, dtype=x._dtype) / 2.0
    z = x.unsqueeze(-1) - shifts
    lg = gammaln(z)
    s = lg.sum(-1)
    out = s + c
    hide(z, lg, s)
    return named(out, "MvlgammaBackward0")


mvlgamma = multigammaln


def logit(input, eps=None):
    x = _floatify(input)
    if eps is not None:
        x = clamp(x, eps, 1.0 - eps)
        hide(x if x is not input else None)
    with np.errstate(all="ignore"):
        d = np.asarray(x._data)
        y = np.log(d / (1 - d))
    if not (x._rg and STATE.enabled):
        return _wrap(y if y.ndim else y[()], x._dtype)
    a = x.log()
    b = log1p(-x)
    out = a - b
    hide(a, b)
    hide(*[t for t in (b,) if t is not None])
    return exact(named(out, "LogitBackward0"), y)


def erfc(input):
    x = _floatify(input)
    y = _vec(math.erfc, x)
    if not (x._rg and STATE.enabled):
        return _wrap(y if y.ndim else y[()], x._dtype)
    e = erf(x)
    out = 1 - e
    hide(e)
    return exact(named(out, "ErfcBackward0"), y)


def xlogy(input, other):
    lo = other.log() if isinstance(other, Tensor) else math.log(other)
    prod = input * lo
    zero = (input == 0) if isinstance(input, Tensor) else None
    if zero is None:
        return prod
    out = where(zero, 0.0, prod)
    if isinstance(lo, Tensor):
        hide(lo)
    hide(prod)
    return named(out, "XlogyBackward0")


def sinc(input):
    x = _floatify(input)
    pix = x * math.pi
    y = pix.sin() / pix
    return where(x == 0, 1.0, y)


def ndtr(input):
    return (1 + erf(input * (1 / math.sqrt(2)))) * 0.5


def log_ndtr(input):
    return ndtr(input).log()


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


def _special_funcs():
    from .autograd.function import Function

    class Erfinv(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            y = _erfinv_np(x._data)
            ctx.y = y
            return _wrap(np.asarray(y, x._dtype.np) if y.ndim else x._dtype.np.type(y), x._dtype)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            y = erfinv(x) if STATE.enabled else _wrap(np.asarray(ctx.y, x._dtype.np), x._dtype)
            # d erfinv(x) = sqrt(pi) / 2 exp(erfinv(x)^2) dx
            return g * ((y * y).exp() * (math.sqrt(math.pi) / 2))
    return {"Erfinv": Erfinv}


_SF = {}


def _sf(name):
    if not _SF:
        _SF.update(_special_funcs())
    return _SF[name]


def erfinv(input):
    x = _floatify(input)
    return named(_sf("Erfinv").apply(x), "ErfinvBackward0")
