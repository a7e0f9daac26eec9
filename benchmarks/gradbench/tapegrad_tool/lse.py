"""lse: log-sum-exp of a vector and its gradient (GradBench's lse eval).

The shift by the maximum is computed outside the recorded function and passed in as a
constant (the log-sum-exp trick with a stop-gradient on the shift, as ``torch.logsumexp`` and
``jax.nn.logsumexp`` do): log-sum-exp and its gradient do not depend on the shift. Recording
``x.max()`` instead is correct too, but tapegrad.func guards a recorded max by the order of all
the values (a full sort on every replay: 95% of the replay at n = 40,000), and
``tapegrad.logsumexp`` records its shift as a constant of the tape (inf/nan on replays far from
the recorded values); both are in this tool's report (README.md).
"""
import tapegrad as tg
import tapegrad.func as tf

from . import Function
from ._common import f64, tolist


def logsumexp(x, shift):
    return shift + tg.log(tg.sum(tg.exp(x - shift)))


_grad = tf.grad(logsumexp)


def primal(x):
    return logsumexp(x, x.max())


def gradient(x):
    return _grad(x, x.max())


def _x(inp):
    return f64(inp["x"])


FUNCTIONS = {
    "primal": Function(primal, _x, float),
    "gradient": Function(gradient, _x, tolist),
}
