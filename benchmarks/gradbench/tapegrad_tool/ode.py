"""ode: s steps of fourth-order Runge-Kutta on y' = f(y), f(y)_0 = x_0, f(y)_i = x_i y_{i-1},
from y = 0 to t = 2, and the gradient of the last component of the result w.r.t. x
(GradBench's ode eval)."""
import functools

import tapegrad as tg
import tapegrad.func as tf

from . import Function
from ._common import f64, tolist


def ode(x, s):
    """The trajectory's end. ``x``'s two pieces are sliced once, not in every evaluation of
    the right-hand side (each slice is an entry of the tape: 36 against 21 ms at n = 10,000,
    s = 10, side by side on a loaded machine)."""
    h = 2.0 / s
    x0, x1 = x[:1], x[1:]

    def rhs(y):
        return tg.cat([x0, x1 * y[:-1]])
    y = tg.zeros_like(x)
    for _ in range(s):
        k1 = rhs(y)
        k2 = rhs(y + h / 2 * k1)
        k3 = rhs(y + h / 2 * k2)
        k4 = rhs(y + h * k3)
        y = y + h / 6 * (k1 + (2 * k2 + 2 * k3 + k4))
    return y


def _last(x, s):
    return ode(x, s)[-1]


gradient = tf.grad(_last)


@functools.lru_cache(maxsize=16)
def primal(s):
    """The trajectory alone, recorded once per step count and replayed."""
    return tg.compile(functools.partial(ode, s=s))


def prepare(inp):
    return f64(inp["x"]), int(inp["s"])


FUNCTIONS = {
    "primal": Function(lambda p: primal(p[1])(p[0]), prepare, tolist),
    "gradient": Function(lambda p: gradient(*p), prepare, tolist),
}
