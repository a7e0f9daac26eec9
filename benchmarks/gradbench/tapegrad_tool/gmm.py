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


def logsumexp(v, dim):
    """log-sum-exp along ``dim``, shifted by the maximum as a stop-gradient constant. Not
    ``tapegrad.logsumexp``: a recording keeps its shift as a constant of the tape, unguarded
    (replays far from the recorded values give inf/nan: see README.md). A detached value is
    guarded by tapegrad.func (a replay on other values records again)."""
    m = v.detach().amax(dim, keepdim=True)
    return (m + tg.log(tg.exp(v - m).sum(dim, keepdim=True))).squeeze(dim)


def gmm_objective(alpha, mu, q, l, x, d, k, n, m, gamma):
    rows, cols, diag = _index(d)
    Qdiags = tg.exp(q)
    sum_qs = q.sum(1)
    L = tg.zeros((k, d, d), dtype=tg.float64)
    L[:, rows, cols] = l
    L[:, diag, diag] = Qdiags
    # |L_i (x_m - mu_i)|^2 = x_m^T S_i x_m - 2 (S_i mu_i) . x_m + mu_i^T S_i mu_i, S_i = L_i^T L_i:
    # matrix products of the data (x and its outer products, (n, d*d)) with (k, d*d) and
    # (k, d) parameters, no (n, k, d) intermediate (ADBench's einsum("ijk,mik->mij")).
    S = L.transpose(1, 2) @ L                                   # (k, d, d)
    Smu = (S * mu[:, None, :]).sum(2)                           # (k, d)
    xx = (x[:, :, None] * x[:, None, :]).reshape(n, d * d)
    sqsum = xx @ S.reshape(k, d * d).T - 2 * (x @ Smu.T) + (Smu * mu).sum(1)    # (n, k)
    slse = logsumexp(alpha + sum_qs - 0.5 * sqsum, 1).sum()
    # the Wishart prior
    nn = d + m + 1
    wishart = (0.5 * gamma * gamma * ((Qdiags ** 2).sum(1) + (l ** 2).sum(1)) - m * sum_qs).sum()
    C = nn * d * math.log(gamma / math.sqrt(2))
    return (-n * d * 0.5 * math.log(2 * math.pi) + slse - n * logsumexp(alpha, 0)
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
