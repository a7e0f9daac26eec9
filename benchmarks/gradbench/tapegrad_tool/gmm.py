"""gmm: log-likelihood of a Gaussian mixture with a Wishart prior, and its gradient w.r.t.
alpha, mu, q, l (GradBench's gmm eval, ADBench's formulation)."""
import functools
import math

import numpy as np
import tapegrad as tg
import tapegrad.func as tf

from . import Function
from ._common import f64, tolist

ARGS = ("alpha", "mu", "q", "l")


def multigammaln(a, p):
    """log of the multivariate gamma function (a constant: no tensor involved)."""
    return p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(a - j / 2) for j in range(p))


@functools.lru_cache(maxsize=None)
def _index(d):
    """Where l's entries and q's go in each component's lower-triangular factor L_i:
    l fills the strict lower triangle column by column (ADBench's order)."""
    cols = np.repeat(np.arange(d - 1), np.arange(d - 1, 0, -1))
    rows = np.concatenate([np.arange(c + 1, d) for c in range(d - 1)]) if d > 1 else cols
    return rows, cols, np.arange(d)


def gmm_objective(alpha, mu, q, l, x, d, k, n, m, gamma):
    rows, cols, diag = _index(d)
    Qdiags = tg.exp(q)
    sum_qs = q.sum(1)
    L = tg.zeros((k, d, d), dtype=tg.float64)
    L[:, rows, cols] = l
    L[:, diag, diag] = Qdiags
    # L_i (x_m - mu_i) for every point m and component i as one matrix product:
    # [x_m, 1] @ [[L_i^T], [-(L_i mu_i)^T]] for all i side by side, (n, d+1) @ (d+1, k*d).
    W = L.permute(2, 0, 1).reshape(d, k * d)                    # W[c, i*d + j] = L[i, j, c]
    b = -(L * mu[:, None, :]).sum(2).reshape(1, k * d)
    x1 = tg.cat([x, tg.ones((n, 1), dtype=tg.float64)], 1)
    Lx = x1 @ tg.cat([W, b])
    sqsum = (Lx ** 2).reshape(n, k, d).sum(2)                   # (n, k)
    slse = tg.logsumexp(alpha + sum_qs - 0.5 * sqsum, 1).sum()
    # the Wishart prior
    nn = d + m + 1
    wishart = (0.5 * gamma * gamma * ((Qdiags ** 2).sum(1) + (l ** 2).sum(1)) - m * sum_qs).sum()
    C = nn * d * math.log(gamma / math.sqrt(2))
    return (-n * d * 0.5 * math.log(2 * math.pi) + slse - n * tg.logsumexp(alpha, 0)
            - wishart + k * (C - multigammaln(0.5 * nn, d)))


gradient = tf.grad(gmm_objective, argnums=(0, 1, 2, 3))


@functools.lru_cache(maxsize=16)
def objective(d, k, n, m, gamma):
    """The objective alone, recorded once and replayed (``tapegrad.compile`` takes tensors
    only: the sizes are bound)."""
    return tg.compile(functools.partial(gmm_objective, d=d, k=k, n=n, m=m, gamma=gamma))


def prepare(inp):
    return ([f64(inp[a]) for a in ARGS] + [f64(inp["x"])],
            (int(inp["d"]), int(inp["k"]), int(inp["n"]), int(inp["m"]), float(inp["gamma"])))


def _objective(p):
    tensors, static = p
    return objective(*static)(*tensors)


def _jacobian(p):
    tensors, static = p
    return gradient(*tensors, *static)


FUNCTIONS = {
    "objective": Function(_objective, prepare, float),
    "jacobian": Function(_jacobian, prepare,
                         lambda g: {a: tolist(t) for a, t in zip(ARGS, g)}),
}
