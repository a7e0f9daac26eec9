"""gmm: log-likelihood of a Gaussian mixture with a Wishart prior, and its gradient w.r.t.
alpha, mu, q, l (GradBench's gmm eval, ADBench's formulation)."""
import functools
import math

import numpy as np
import tapegrad as tg
import tapegrad.func as tf

from . import Function
from ._common import compiled, f64, tolist

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


def log_terms(alpha, mu, q, l, x):
    """alpha_i + sum(q_i) - |L_i (x_m - mu_i)|^2 / 2 for every point m and component i (n, k),
    the log-sum-exp's terms, and exp(q) (k, d).
    |L_i (x_m - mu_i)|^2 = x_m^T S_i x_m - 2 (S_i mu_i) . x_m + mu_i^T S_i mu_i with S_i = L_i^T L_i: matrix products of the data (x and its outer
    products, (n, d*d)) with (k, d*d) and (k, d) parameters, no (n, k, d) intermediate
    (ADBench's einsum("ijk,mik->mij"))."""
    k, d = mu.shape
    n = x.shape[0]
    rows, cols, diag = _index(d)
    Qdiags = tg.exp(q)
    L = tg.zeros((k, d, d), dtype=tg.float64)
    L[:, rows, cols] = l
    L[:, diag, diag] = Qdiags
    S = L.swapaxes(1, 2) @ L                                    # (k, d, d)
    Smu = (S * mu[:, None, :]).sum(2)                           # (k, d)
    xx = (x[:, :, None] * x[:, None, :]).reshape(n, d * d)
    sqsum = xx @ S.reshape(k, d * d).T - 2 * (x @ Smu.T) + (Smu * mu).sum(1)    # (n, k)
    return alpha + q.sum(1) - 0.5 * sqsum, Qdiags


# A row's log-sum-exp is accurate when its largest term is not far below the shift: exp of
# it then stays a normal number. Below this (log of the row's shifted sum), the tool
# evaluates again with each row shifted by its own largest term.
FAR = -600.0


def gmm_objective(alpha, mu, q, l, x, d, k, n, m, gamma, per_point=False):
    """(the objective, each point's shifted log-sum-exp (n,)).

    The log-sum-exp over the components is shifted by max_i(alpha_i + sum(q_i)), an upper
    bound of every term (|.|^2 >= 0), so exp never overflows; a ``max`` over k values, whose
    guard (the order of those k values) costs nothing. A point whose best term is far below
    that bound would underflow: the second output says so (``FAR``) and the caller evaluates
    again with ``per_point``: each point's own largest term as its shift (a max guarded by
    the order of all n x k terms: an argsort per replay, 60% of the small size's replay).
    Not ``tapegrad.logsumexp``: a recording keeps its shift as an unguarded constant (replays
    on other values give inf / nan); not a detached shift: ``detach()``'s value guard never
    holds after a matrix product (the replay's product differs in its last bits from the
    recording's: every call records again). See README.md."""
    terms, Qdiags = log_terms(alpha, mu, q, l, x)
    sum_qs = q.sum(1)
    shift = terms.amax(1, keepdim=True) if per_point else (alpha + sum_qs).amax()
    rows = tg.log(tg.exp(terms - shift).sum(1, keepdim=True))          # (n, 1)
    slse = (rows + shift).sum()
    a_shift = alpha.amax()
    lse_alpha = a_shift + tg.log(tg.exp(alpha - a_shift).sum())
    # the Wishart prior
    nn = d + m + 1
    wishart = (0.5 * gamma * gamma * ((Qdiags ** 2).sum(1) + (l ** 2).sum(1)) - m * sum_qs).sum()
    C = nn * d * math.log(gamma / math.sqrt(2))
    return (-n * d * 0.5 * math.log(2 * math.pi) + slse - n * lse_alpha
            - wishart + k * (C - multigammaln(0.5 * nn, d))), rows


gradient = tf.grad(gmm_objective, argnums=(0, 1, 2, 3), has_aux=True)


def objective(alpha, mu, q, l, x, d, k, n, m, gamma, per_point):
    """The objective alone, recorded once per sizes and replayed."""
    return compiled(gmm_objective, d=d, k=k, n=n, m=m, gamma=gamma,
                    per_point=per_point)(alpha, mu, q, l, x)


def _far(rows):
    return bool(rows.numpy().min() < FAR)


def prepare(inp):
    return ([f64(inp[a]) for a in ARGS] + [f64(inp["x"])],
            (int(inp["d"]), int(inp["k"]), int(inp["n"]), int(inp["m"]), float(inp["gamma"])))


def _objective(p):
    tensors, static = p
    value, rows = objective(*tensors, *static, False)
    if _far(rows):
        value, rows = objective(*tensors, *static, True)
    return value


def _jacobian(p):
    tensors, static = p
    grads, rows = gradient(*tensors, *static)
    if _far(rows):
        grads, rows = gradient(*tensors, *static, True)      # (no keywords: see README)
    return grads


FUNCTIONS = {
    "objective": Function(_objective, prepare, float),
    "jacobian": Function(_jacobian, prepare,
                         lambda g: {a: tolist(t) for a, t in zip(ARGS, g)}),
}
