"""tapegrad: reverse-mode automatic differentiation on a flat tape, replayed by Numba.

``import tapegrad as torch`` gives PyTorch's autograd API: Tensors record one tape entry per
differentiable op, and ``backward()`` sweeps the tape in one call into compiled code.
"""
from . import autograd  # noqa: F401
from .autograd import (enable_grad, inference_mode, is_grad_enabled, no_grad,  # noqa: F401
                       set_grad_enabled)
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full,  # noqa: F401
                       full_like, linspace, manual_seed, ones, ones_like, rand, rand_like, randint,
                       randn, randn_like, seed, tensor, zeros, zeros_like)
from .tensor import (Size, Tensor, abs, add, allclose, bool_, cos, device, div, divide,  # noqa: F401
                     dot, dtype, exp, float16, float32, float64, get_default_dtype, int8, int16,
                     int32, int64, is_tensor, log, matmul, mean, mm, mul, multiply, mv, neg,
                     negative, pow, promote_types, relu, set_default_dtype, sigmoid, sin, sqrt,
                     sub, subtract, sum, tanh, true_divide, uint8, unbind)
from . import nn  # noqa: F401
from .autograd import hooks as _hooks  # noqa: F401,E402  (attaches Tensor.register_hook etc.)
from . import func  # noqa: F401,E402
from .func import compile  # noqa: F401,E402

float = float32
double = float64
half = float16
long = int64
int = int32
short = int16
bool = bool_

__version__ = "0.1.0"


def is_floating_point(t):
    return t._dtype.is_floating_point


def numel(t):
    return t.numel()


def get_num_threads():
    import numba
    return numba.get_num_threads()
