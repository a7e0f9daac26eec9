"""llsq: a linear least-squares objective, 1/2 sum_i (sign(t_i) - sum_j x_j t_i^j)^2 over n
points t_i evenly spaced in [-1, 1], and its gradient (GradBench's llsq eval)."""
import numpy as np
import tapegrad as tg

from ._common import primal_and_gradient


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


FUNCTIONS = primal_and_gradient(llsq, llsq, "n", float)
