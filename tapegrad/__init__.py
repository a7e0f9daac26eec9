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
from .tensor import (Size, Tensor, bool_, device, dtype, float16, float32, float64,  # noqa: F401
                     get_default_dtype, int8, int16, int32, int64, is_tensor, promote_types,
                     set_default_dtype, uint8)
from ._math import (abs, add, allclose, cos, div, divide, exp, log, mul, multiply, neg, negative,
                    pow, relu, sigmoid, sin, sqrt, sub, subtract, tanh, true_divide)
from ._matrix import dot, matmul, mm, mv
from ._reduce import mean, sum
from ._shape import unbind
from ._shape import (atleast_1d, atleast_2d, broadcast_tensors, broadcast_to, cat,  # noqa: F401
                     chunk, concat, concatenate, diagonal, expand_as, flatten, flip, fliplr,
                     flipud, hstack, movedim, moveaxis, narrow, permute, repeat_interleave, roll,
                     select, split, squeeze, stack, swapaxes, swapdims, t, tensor_split, transpose,
                     tril, triu, unflatten, unsqueeze, vstack, gather, index_select, masked_select,
                     masked_fill, atleast_3d, block_diag, broadcast_shapes, column_stack, dsplit,
                     dstack, hsplit, index_add, index_copy, index_fill, index_put, kron,
                     masked_scatter, meshgrid, ravel, reshape, rot90, row_stack, scatter,
                     scatter_add, take, take_along_dim, tile, tril_indices, triu_indices, vsplit)
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
                      searchsorted, trapezoid, trapz, unique, unique_consecutive)
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
from . import testing  # noqa: F401,E402  (tapegrad.testing: gradcheck and the test helpers)
from ._compiled import _driver, _fastload, _interp  # noqa: E402
_fastload.install(_interp)  # cached interpreter loads without Numba's full refresh (start-up)
_fastload.install(_driver)

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


# ---- nn / linalg / special helper (fix/nnlinalg): top-level names
from .nn.functional import relu, relu_, selu, selu_, celu, celu_, threshold, threshold_  # noqa: F401,E402,F811
from .nn.functional import _torch_dropout as dropout, _torch_dropout_ as dropout_  # noqa: E402
from .linalg import (det, logdet, cholesky_solve, cholesky_inverse, matrix_power,  # noqa: F401,E402
                     _torch_slogdet as slogdet, inv as inverse, _torch_cholesky as cholesky,
                     _torch_pinverse as pinverse)
from .special import sinc, erfinv, xlogy  # noqa: F401,E402,F811

# ---- mathdtype helper: math, dtypes, construction and top-level odds and ends
from . import backends, cuda  # noqa: F401,E402
from ._info import (are_deterministic_algorithms_enabled, can_cast, finfo,  # noqa: F401,E402
                    get_default_device, get_num_interop_threads, get_num_threads, iinfo,
                    is_nonzero, load, result_type, save, set_default_device,
                    set_num_interop_threads, set_num_threads, use_deterministic_algorithms)
from .tensor import LEGACY as _LEGACY  # noqa: F401,E402
from ._math import positive, reciprocal
from .creation import (Generator, default_generator, logspace, randint_like,  # noqa: F401,E402
                       set_rng_state)
from ._math import (acosh, addbmm, addcdiv, addcmul, addmv, addr, arccosh,  # noqa: F401,E402
                    arcsinh, arctanh, asinh, atanh, baddbmm, bitwise_left_shift,
                    bitwise_right_shift, chain_matmul, clone, copysign, deg2rad, float_power,
                    heaviside, inner, isin, logaddexp, logaddexp2, nan_to_num, nextafter,
                    rad2deg, vdot)
absolute = abs
globals().update(_LEGACY)             # FloatTensor, LongTensor ... (legacy constructors)
from math import e, inf, nan, pi  # noqa: F401,E402


# real tensors only: conjugation and the real part are the tensor itself (as torch's)
conj = conj_physical = resolve_conj = resolve_neg = real = Tensor.conj
is_conj = is_complex = Tensor.is_conj

# ---- convolution / scatter_reduce (feat/conv)
from .nn._conv import conv1d, conv2d, scatter_reduce  # noqa: F401,E402

# ---- breadth gaps (feat/gaps): torch functions, in-place variants and Tensor methods
from . import _extra  # noqa: E402
from . import _methods  # noqa: F401,E402  (the method table: attaches every family's Tensor methods once)
globals().update(_extra.namespace())
linalg.matrix_exp = _extra.matrix_exp
special.i0 = _extra.i0
special.i1 = _extra.i1
special.gammainc, special.gammaincc = _extra.igamma, _extra.igammac

# ---- torch-namespace forms of nn.functional ops (feat/nn2; aten's signatures)
from .nn.functional import (cosine_similarity, pairwise_distance, pdist, prelu,  # noqa: F401,E402
                            rms_norm)
from .nn.functional import (  # noqa: E402,F401
    _torch_batch_norm as batch_norm, _torch_binary_cross_entropy_with_logits as
    binary_cross_entropy_with_logits, _torch_cosine_embedding_loss as cosine_embedding_loss,
    _torch_embedding as embedding, _torch_group_norm as group_norm,
    _torch_hinge_embedding_loss as hinge_embedding_loss, _torch_instance_norm as instance_norm,
    _torch_kl_div as kl_div, _torch_layer_norm as layer_norm,
    _torch_margin_ranking_loss as margin_ranking_loss, _torch_poisson_nll_loss as poisson_nll_loss,
    _torch_triplet_margin_loss as triplet_margin_loss)

# ---- training stack (feat/nn): torch.optim, torch.utils.data, torch.save/load in torch's
# format (tapegrad/serialization.py), imported on first use (start-up time)
del save, load                    # (the pickle-based ones of _info: replaced below)
_LAZY = {"optim": "optim", "utils": "utils", "serialization": "serialization",
         "save": "serialization", "load": "serialization"}


def __getattr__(name):
    sub = _LAZY.get(name)
    if sub is None:
        raise AttributeError("module 'tapegrad' has no attribute '%s'" % name)
    import importlib
    mod = importlib.import_module("." + sub, __name__)
    return mod if name == sub else getattr(mod, name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
