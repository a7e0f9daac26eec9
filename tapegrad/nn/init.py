"""torch.nn.init: in-place parameter initialisers.

Every initialiser writes its tensor in place under ``no_grad`` (so a leaf that requires grad
can be initialised; its version counter is bumped like any in-place write) and returns it.
Random initialisers draw from tapegrad's generator (``torch.manual_seed`` / a ``Generator``),
torch's CPU stream: the same calls in the same order as torch/nn/init.py, so a seeded
initialisation gives torch's values (see docs/training.md, "Random streams"). Fans, gains and
their errors follow torch/nn/init.py.
"""
import math
import warnings

import numpy as np

from .._state import no_grad
from ..creation import _gen, eye

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_", "uniform", "normal", "constant",
           "xavier_uniform", "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal",
           "sparse"]

_LINEAR_FNS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d")


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (leaky_relu: sqrt(2 / (1 + slope^2)))."""
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    """(size(1) * receptive field, size(0) * receptive field), the receptive field being the
    product of the dims after the first two."""
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.size(1) * receptive, tensor.size(0) * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """N(mean, std^2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std^2) restricted to [a, b], by torch's rejection sampling and in its draw
    order: a window holding more than 30% of the mass redraws normal_(mean, std) over the whole
    tensor until every element lies in [a, b]; a narrower one draws uniform_(a, b) candidates
    accepted when log(uniform_()) <= the log density ratio to the mode."""

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    g = _gen(generator)
    npdt = tensor._dtype.np
    n = tensor.numel()
    p = norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std)

    def sample(shp):
        if p > 0.3:
            lo, hi = npdt.type(a), npdt.type(b)
            res = g._normal(n, npdt, mean, std)
            while True:
                mask = (res < lo) | (res > hi)
                if not mask.any():
                    return res
                res = np.where(mask, g._normal(n, npdt, mean, std), res)
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2

        def log_ratio(c):       # torch's in-place chain, in the tensor's dtype
            c = ((c - npdt.type(mean)) / npdt.type(std)) ** 2
            return c * npdt.type(-0.5) - npdt.type(log_peak)

        def rejected(c):
            with np.errstate(divide="ignore"):
                return np.log(g._uniform(n, npdt)) > log_ratio(c)

        res = g._uniform(n, npdt, a, b)
        pending = rejected(res)
        while pending.any():
            cand = g._uniform(n, npdt, a, b)
            res = np.where(pending, cand, res)
            pending = np.where(pending, rejected(cand), pending)
        return res

    with no_grad():
        return tensor._draw_(sample, "normal_kernel_cpu")


def constant_(tensor, val):
    """Every element ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    with no_grad():
        return tensor.fill_(1.0)


def zeros_(tensor):
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """The identity in a 2-D tensor (ones on the main diagonal of a rectangle)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor, groups=1):
    """The Dirac delta of a 3/4/5-D convolution weight: identity over the channels kept by
    each group, the one at the kernel's centre."""
    dimensions = tensor.ndimension()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.size()
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per = sizes[0] // groups
    min_dim = min(per, sizes[1])
    centre = tuple(s // 2 for s in sizes[2:])

    def sample(shp):
        w = np.zeros(shp)
        for g in range(groups):
            for d in range(min_dim):
                w[(g * per + d, d) + centre] = 1
        return w

    with no_grad():
        return tensor._init_(sample)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """U(-a, a), a = gain sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    with no_grad():
        return tensor.uniform_(-a, a, generator=generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """N(0, std^2), std = gain sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    with no_grad():
        return tensor.normal_(0.0, std, generator=generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """U(-bound, bound), bound = gain(nonlinearity, a) sqrt(3 / fan_mode)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    with no_grad():
        return tensor.uniform_(-bound, bound, generator=generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """N(0, std^2), std = gain(nonlinearity, a) / sqrt(fan_mode)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    with no_grad():
        return tensor.normal_(0, std, generator=generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix (the tensor flattened to size(0) rows) times ``gain``: Q of
    the QR factorization of a Gaussian matrix (drawn as torch draws it, rows x cols), its
    columns' signs fixed by R's diagonal. (The QR's rounding is numpy's LAPACK call.)"""
    if tensor.ndimension() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    g = _gen(generator)
    flat = g._normal(rows * cols, tensor._dtype.np).reshape(rows, cols)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    with no_grad():
        return tensor._init_(lambda shp: (q * gain).reshape(shp), "normal_kernel_cpu")


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std^2) with ceil(sparsity * rows) zeros in each column of a 2-D tensor (the zeros'
    rows from ``randperm(rows)`` on the default generator, as torch)."""
    if tensor.ndimension() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        d = tensor._arr()
        for c in range(cols):
            d[_gen(None)._randperm(rows)[:num_zeros], c] = 0
        return tensor


def _deprecated(meth):
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                      FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
