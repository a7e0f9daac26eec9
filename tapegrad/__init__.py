"""tapegrad: reverse-mode automatic differentiation on a flat tape, replayed by Numba.

``import tapegrad as torch`` gives PyTorch's autograd API: Tensors record one tape entry per
differentiable op, and ``backward()`` sweeps the tape in one call into compiled code.
"""
from . import _alloc
_alloc.apply()          # large freed arrays stay in the process (see _alloc.py)
from . import autograd  # noqa: F401,E402
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
from ._shape import (atleast_1d, atleast_2d, broadcast_tensors, broadcast_to, cat,  # noqa: F401
                     chunk, concat, concatenate, diagonal, expand_as, flatten, flip, fliplr,
                     flipud, hstack, movedim, moveaxis, narrow, permute, repeat_interleave, roll,
                     select, split, squeeze, stack, swapaxes, swapdims, t, tensor_split, transpose,
                     tril, triu, unflatten, unsqueeze, vstack, gather, index_select, masked_select,
                     masked_fill)
from ._math import (acos, arccos, arcsin, arctan, arctan2, argwhere, asin, atan, atan2,  # noqa: F401
                    bitwise_and, bitwise_not, bitwise_or, bitwise_xor, ceil, clamp, clamp_max,
                    clamp_min, clip, cosh, count_nonzero, eq, equal, erf, exp2, expm1, fix, floor,
                    floor_divide, fmax, fmin, frac, ge, greater, greater_equal, gt, hypot, isclose,
                    isfinite, isinf, isnan, isneginf, isposinf, isreal, le, lerp, less, less_equal,
                    log10, log1p, log2, logical_and, logical_not, logical_or, logical_xor, lt,
                    maximum, minimum, ne, nonzero, not_equal, remainder, fmod, round, rsqrt, sgn, sign,
                    signbit, sinh, square, tan, trunc, where)
from ._reduce import (all, amax, amin, aminmax, any, argmax, argmin, argsort, cumprod,  # noqa: F401
                      cumsum, kthvalue, logcumsumexp, logsumexp, max, median, min, msort, norm,
                      prod, return_types, sort, std, std_mean, topk, var, var_mean,
                      bincount, bucketize, cdist, corrcoef, cov, cummax, cummin, diff, dist,
                      histc, mode, nanmean, nanmedian, nanquantile, nansum, quantile,
                      searchsorted, unique, unique_consecutive)
from ._matrix import (bmm, cross, diag, diag_embed, einsum, ger, matmul, outer,  # noqa: F401,F811
                      tensordot, trace, addmm)
from .creation import (bernoulli, get_rng_state, initial_seed, multinomial, normal,  # noqa: F401
                       randperm, scalar_tensor, set_rng_state)
from ._format import set_printoptions  # noqa: F401
from . import nn  # noqa: F401
from .nn.functional import log_softmax, softmax  # noqa: F401,E402
from . import linalg  # noqa: F401,E402
from . import special  # noqa: F401,E402
from .special import digamma, erfc, lgamma, logit, mvlgamma, polygamma, xlogy  # noqa: F401,E402
from .autograd import hooks as _hooks  # noqa: F401,E402  (attaches Tensor.register_hook etc.)
from . import func  # noqa: F401,E402
from .func import compile  # noqa: F401,E402
from . import _interp, _fastload  # noqa: E402
_fastload.install(_interp)  # cached interpreter loads without Numba's full refresh (start-up)

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
