"""llsq: a linear least-squares objective, 1/2 sum_i (sign(t_i) - sum_j x_j t_i^j)^2 over n
points t_i evenly spaced in [-1, 1], and its gradient (GradBench's llsq eval)."""
import functools

import numpy as np
import tapegrad as tg
import tapegrad.func as tf

from . import Function
from ._common import f64, tolist


def powers(n, m):
    """t_i^j (n, m), by cumulative products as GradBench's reference does; a constant of the
    recording (it depends on the signature only, not on x)."""
    t = -1.0 + np.arange(n) * 2.0 / (n - 1.0)
    muls = np.repeat(t[:, None], m, axis=1)
    muls[:, 0] = 1.0
    return tg.from_numpy(np.cumprod(muls, axis=1)), tg.from_numpy(np.sign(t))


def llsq(x, n):
    T, s = powers(n, x.shape[0])
    return 0.5 * ((s - T @ x) ** 2).sum()


gradient = tf.grad(llsq)


@functools.lru_cache(maxsize=16)
def primal(n):
    return tg.compile(functools.partial(llsq, n=n))


def prepare(inp):
    return f64(inp["x"]), int(inp["n"])


FUNCTIONS = {
    "primal": Function(lambda p: primal(p[1])(p[0]), prepare, float),
    "gradient": Function(lambda p: gradient(*p), prepare, tolist),
}
