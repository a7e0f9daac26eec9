"""hello: ``square(x) = x * x`` and ``double(x) = d square / dx`` (GradBench's hello eval)."""
import tapegrad as tg
import tapegrad.func as tf

from . import Function


def square(x):
    return x * x


d_square = tf.grad(square)


def _tensor(x):
    return tg.tensor(float(x), dtype=tg.float64)


FUNCTIONS = {
    "square": Function(square, _tensor, lambda y: y.item(), runs=False),
    "double": Function(d_square, _tensor, lambda y: y.item(), runs=False),
}
