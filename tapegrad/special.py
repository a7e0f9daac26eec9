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
