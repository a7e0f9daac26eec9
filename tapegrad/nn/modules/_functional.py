"""Functional forms the nn modules need that ``tapegrad.nn.functional`` did not have.

Each is a composition of existing differentiable tapegrad operations (so gradients come from
the tape), with torch's signature, defaults, shape rules and error messages. ``tapegrad.nn``
attaches them to ``tapegrad.nn.functional`` under torch's names when that module lacks them.

* ``conv_transpose1d/2d``: per group ``W_g^T @ x_g`` (the columns), then ``fold`` (col2im)
  with the convolution's stride, padding and dilation, then the bias.
* ``multi_head_attention_forward``: torch's reference algorithm (packed or separate input
  projections, bias_k/bias_v, add_zero_attn, boolean or float masks, key padding masks,
  averaged or per-head weights).
* ``embedding_bag``, ``embedding_renorm_``, channel dropouts, ``alpha_dropout`` and
  ``feature_alpha_dropout``, ``rrelu``, ``local_response_norm``, ``lp_pool1d/2d``,
  ``max_unpool1d/2d``, ``pixel_shuffle``/``pixel_unshuffle``, ``channel_shuffle``,
  ``interpolate`` (nearest, nearest-exact, linear, bilinear, area), ``multilabel_margin_loss``.
"""
import math
import warnings

import numpy as np

import tapegrad as _tg
from ...autograd.grad_mode import no_grad
from .. import _fused

__all__ = ["conv_transpose1d", "conv_transpose2d", "multi_head_attention_forward",
           "embedding_bag", "embedding_renorm_", "dropout1d", "dropout2d", "dropout3d",
           "alpha_dropout", "feature_alpha_dropout", "rrelu", "rrelu_", "local_response_norm",
           "lp_pool1d", "lp_pool2d", "max_unpool1d", "max_unpool2d", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "interpolate", "upsample", "upsample_nearest",
           "upsample_bilinear", "multilabel_margin_loss", "ctc_loss"]


def _F():
    from .. import functional  # deferred: nn.functional calls into this module (alpha_dropout)
    return functional


from ..._record import hide as _hide, named as _named_entry, tap as _tap  # graph naming


def _named(t, name):
    """Give the last recorded entry of ``t`` torch's grad_fn name where tapegrad can."""
    if _named_entry is not None and t.requires_grad and not t.is_leaf:
        _named_entry(t, name)      # (before anything reads t.grad_fn: its view is cached)
    return t


class _Composite:
    """One torch node over a composition: its differentiable inputs go through ``tap`` (input
    slots of the node), the intermediate results are hidden, and the result is named
    ``name`` with ``arity`` inputs, so that ``grad_fn`` / ``next_functions`` read as torch's
    single node (ConvolutionBackward0, EmbeddingBagBackward0)."""

    def __init__(self, name, arity):
        self.name, self.arity, self.mid = name, arity, []

    def tap(self, t, slot):
        return t if t is None else _tap(t, slot)

    def __call__(self, t):
        self.mid.append(t)
        return t

    def finish(self, out):
        if _named_entry is None or not (isinstance(out, _tg.Tensor) and out.requires_grad
                                        and not out.is_leaf):
            return out
        _hide(*[m for m in self.mid if m is not out and isinstance(m, _tg.Tensor)])
        _named_entry(out, self.name, self.arity)
        return out


def _ntuple(v, n, name="value"):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return tuple(v) * n
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                               f"values to match the convolution dimensions, but got "
                               f"{name}={list(v)}")
        return tuple(int(a) for a in v)
    return (int(v),) * n


# ----------------------------------------------------------------------------- conv_transpose
def _conv_transpose(nd, input, weight, bias, stride, padding, output_padding, groups, dilation,
                    fname):
    stride, padding = _ntuple(stride, nd, "stride"), _ntuple(padding, nd, "padding")
    output_padding = _ntuple(output_padding, nd, "output_padding")
    dilation = _ntuple(dilation, nd, "dilation")
    if weight.dim() != nd + 2:
        raise RuntimeError("weight should have at least three dimensions")
    batched = input.dim() == nd + 2
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{fname}, but got input of size: {list(input.shape)}")
    x = input if batched else input.unsqueeze(0)
    N, C = x.shape[0], x.shape[1]
    if weight.shape[0] != C:
        raise RuntimeError(
            f"Given transposed=1, weight of size {list(weight.shape)}, expected input"
            f"{list(x.shape)} to have {weight.shape[0]} channels, but got {C} channels instead")
    if C % groups:
        raise RuntimeError("non-empty 3D weight tensor expected" if False else
                           f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {list(weight.shape)} "
                           "instead")
    for op, s, d in zip(output_padding, stride, dilation):
        if not (op < s or op < d):
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got output_padding_height: {output_padding[0]} "
                               f"output_padding_width: {output_padding[-1]} stride_height: "
                               f"{stride[0]} stride_width: {stride[-1]} dilation_height: "
                               f"{dilation[0]} dilation_width: {dilation[-1]}")
    if x.dtype != weight.dtype:
        raise RuntimeError(f"Input type ({x.type()}) and weight type ({weight.type()}) should be "
                           "the same")
    ksize = tuple(weight.shape[2:])
    cout_g = weight.shape[1]
    spatial = tuple(x.shape[2:])
    out = tuple((L - 1) * s - 2 * p + d * (k - 1) + op + 1
                for L, s, p, d, k, op in zip(spatial, stride, padding, dilation, ksize,
                                             output_padding))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: {list(spatial)}. Calculated output "
                           f"size per channel: {list(out)}. Output size is too small")
    L = int(np.prod(spatial))
    kk = int(np.prod(ksize))
    cin_g = C // groups
    node = _Composite("ConvolutionBackward0", 3)
    xin = node.tap(x, 0)
    weight = node.tap(weight, 1)
    bias = node.tap(bias, 2)
    xf = node(xin.reshape(N, C, L))
    cols = []
    for g in range(groups):
        wg = node(node(weight[g * cin_g:(g + 1) * cin_g]).reshape(cin_g, cout_g * kk))
        xg = node(xf[:, g * cin_g:(g + 1) * cin_g]) if groups > 1 else xf
        cols.append(node(node(wg.t()).matmul(xg)))
    col = cols[0] if groups == 1 else node(_tg.cat(cols, 1))
    if nd == 1:
        y = node(node(_F().fold(col, (1, out[0]), (1, ksize[0]), dilation=(1, dilation[0]),
                                padding=(0, padding[0]), stride=(1, stride[0]))).squeeze(2))
    else:
        y = node(_F().fold(col, out, ksize, dilation=dilation, padding=padding, stride=stride))
    if bias is not None:
        y = node(y + node(bias.reshape((1, -1) + (1,) * nd)))
    y = node.finish(y)
    return y if batched else y.squeeze(0)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The transposed 1-d convolution (the gradient of conv1d with respect to its input)."""
    return _conv_transpose(1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The transposed 2-d convolution (the gradient of conv2d with respect to its input)."""
    return _conv_transpose(2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation, "conv_transpose2d")


# ----------------------------------------------------------------------------- embeddings
def embedding_renorm_(weight, input, max_norm, norm_type):
    """Rescale in place (no gradient) the rows of ``weight`` indexed by ``input`` whose
    ``norm_type``-norm exceeds ``max_norm`` to norm ``max_norm`` (scale max_norm / (norm +
    1e-7)), as torch's ``embedding_renorm_``."""
    idx = np.unique(np.asarray(input.detach().numpy() if isinstance(input, _tg.Tensor)
                               else input).reshape(-1))
    if idx.size == 0:
        return weight
    with no_grad():
        rows = _tg.tensor(idx.astype(np.int64))
        w = weight.index_select(0, rows)
        norms = _tg.linalg.vector_norm(w, float(norm_type), dim=1)
        scale = _tg.where(norms > max_norm, max_norm / (norms + 1e-7), _tg.ones_like(norms))
        weight.index_copy_(0, rows, w * scale.unsqueeze(1))
    return weight


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False,
                  mode="mean", sparse=False, per_sample_weights=None, include_last_offset=False,
                  padding_idx=None):
    """Sums, means or maxima of bags of embeddings: a 2-D ``input`` holds one bag per row; a
    1-D ``input`` with ``offsets`` holds bags starting at the offsets."""
    if weight.dtype == _tg.int64 and input.is_floating_point():
        warnings.warn("Argument order of nn.functional.embedding_bag was changed. Usage "
                      "`embedding_bag(weight, input, ...)` is deprecated, and should now be "
                      "`embedding_bag(input, weight, ...)`.", stacklevel=2)
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         "not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.dim() != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.dim()}")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        B, n = input.shape
        offs = np.arange(0, B * n, n, dtype=np.int64)
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        offs = np.asarray(offsets.numpy(), dtype=np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. "
                                  "per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on GitHub.")
    if max_norm is not None:
        embedding_renorm_(weight, input, max_norm, norm_type)
    idx = np.asarray(input.numpy(), dtype=np.int64)
    n_idx = idx.size
    if include_last_offset:
        starts, ends = offs[:-1], np.minimum(offs[1:], n_idx)
    else:
        starts, ends = offs, np.append(offs[1:], n_idx)
    nb = starts.size
    bag = np.repeat(np.arange(nb, dtype=np.int64), np.maximum(ends - starts, 0))
    pos = np.concatenate([np.arange(s, e, dtype=np.int64) for s, e in zip(starts, ends)]) \
        if nb else np.zeros(0, np.int64)
    keep = np.ones(pos.size, bool)
    if padding_idx is not None:
        V = weight.shape[0]
        pi = padding_idx + V if padding_idx < 0 else padding_idx
        keep = idx[pos] != pi
    pos, bag = pos[keep], bag[keep]
    D = weight.shape[1]
    npdt = np.float64 if weight.dtype == _tg.float64 else np.float32
    node = _Composite("EmbeddingBagBackward0", 2)
    w = node.tap(weight, 0)
    if mode == "max":
        # each output element is one weight element: the (first) maximum of its bag
        wv = np.asarray(weight.detach().numpy())
        arg = np.zeros((nb, D), np.int64)
        has = np.zeros(nb, bool)
        for b in range(nb):
            members = idx[pos[bag == b]]
            if members.size:
                has[b] = True
                arg[b] = members[np.argmax(wv[members], axis=0)]
        out = node(w.gather(0, _tg.tensor(arg)))
        if not has.all():
            out = node(out * _tg.tensor(has[:, None].astype(npdt)))
        return node.finish(out)
    rows = node(w.index_select(0, _tg.tensor(idx[pos])))
    coef = np.zeros((nb, pos.size), npdt)
    coef[bag, np.arange(pos.size)] = 1.0
    if mode == "mean":
        counts = np.maximum(np.bincount(bag, minlength=nb), 1).astype(npdt)
        coef /= counts[:, None]
    mat = _tg.tensor(coef)
    if per_sample_weights is not None:
        psw = node.tap(per_sample_weights, 1)
        mat = node(mat * node(node(psw.index_select(0, _tg.tensor(pos))).unsqueeze(0)))
    return node.finish(mat.matmul(rows))


# ----------------------------------------------------------------------------- dropouts
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_noise(x, p, alpha):
    shape = tuple(x.shape[:2]) + (1,) * (x.dim() - 2)
    return _noise(x, shape, p, alpha)


def _noise(x, shape, p, alpha):
    keep = _tg.empty(shape, dtype=x.dtype).bernoulli_(1 - p)
    if not alpha:
        return x * (keep / (1 - p) if p < 1 else keep)
    a_const = 1.7580993408473766
    if p == 1:
        return x * 0.0
    a = 1.0 / math.sqrt((a_const * a_const * p + 1) * (1 - p))
    b = (keep - 1) * (a_const * a) + a_const * a * p
    return x * (keep * a) + b


def _feature_dropout(input, p, training, alpha=False):
    if not training or p == 0:
        return input
    return _feature_noise(input, p, alpha)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (N, C, L) with probability p; scale the rest by 1/(1-p)."""
    _check_p(p)
    d = input.dim()
    if d not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {d}D input. Note "
                           "that dropout1d exists to provide channel-wise dropout on inputs with "
                           "1 spatial dimension, a channel dimension, and an optional batch "
                           "dimension (i.e. 2D or 3D inputs).")
    x = input if d == 3 else input.unsqueeze(0)
    y = _feature_dropout(x, p, training)
    y = y if d == 3 else y.squeeze(0)
    return input.copy_(y) if inplace and y is not input else y


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (N, C, H, W) with probability p; scale the rest by 1/(1-p)."""
    _check_p(p)
    d = input.dim()
    if d not in (3, 4):
        warnings.warn(f"dropout2d: Received a {d}-D input to dropout2d, which is deprecated and "
                      "will result in an error in a future release. To retain the behavior and "
                      "silence this warning, please use dropout instead. Note that dropout2d "
                      "exists to provide channel-wise dropout on inputs with 2 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 3D "
                      "or 4D inputs).", stacklevel=2)
    if d == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape (C, "
                      "H, W). To maintain the 1D channel-wise dropout behavior, please switch to "
                      "using dropout1d instead.", stacklevel=2)
    y = _feature_dropout(input, p, training)
    return input.copy_(y) if inplace and y is not input else y


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (N, C, D, H, W) with probability p; scale the rest by 1/(1-p)."""
    _check_p(p)
    d = input.dim()
    if d not in (4, 5):
        warnings.warn(f"dropout3d: Received a {d}-D input to dropout3d, which is deprecated and "
                      "will result in an error in a future release. To retain the behavior and "
                      "silence this warning, please use dropout instead. Note that dropout3d "
                      "exists to provide channel-wise dropout on inputs with 3 spatial "
                      "dimensions, a channel dimension, and an optional batch dimension (i.e. 4D "
                      "or 5D inputs).", stacklevel=2)
    x = input if d == 5 else input.unsqueeze(0)
    y = _feature_dropout(x, p, training)
    y = y if d == 5 else y.squeeze(0)
    return input.copy_(y) if inplace and y is not input else y


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps a SELU network's mean and variance (torch's alpha dropout)."""
    _check_p(p)
    if not training or p == 0:
        return input
    y = _noise(input, tuple(input.shape), p, True)
    return input.copy_(y) if inplace else y


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels."""
    _check_p(p)
    if not training or p == 0:
        return input
    y = _feature_noise(input, p, True)
    return input.copy_(y) if inplace else y


# ----------------------------------------------------------------------------- activations
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: slopes drawn from U(lower, upper) per element in training, the
    mean slope (lower + upper) / 2 in evaluation."""
    if not training:
        return _F().leaky_relu(input, (lower + upper) / 2, inplace)
    slope = _tg.empty(tuple(input.shape), dtype=input.dtype).uniform_(lower, upper)
    slope = _tg.where(input >= 0, _tg.ones_like(slope), slope)
    y = input * slope
    return input.copy_(y) if inplace else y


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, True)


# ----------------------------------------------------------------------------- normalization
def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta."""
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          input "
                         f"(got {dim} dimensions)")
    if input.numel() == 0:
        return input
    F = _F()
    div = input.mul(input)
    if dim == 3:
        div = div.unsqueeze(1)
        div = F.pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.size()
        div = div.reshape(sizes[0], 1, sizes[1], -1)
        div = F.pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = F.avg_pool2d(div, (size, 1), stride=1).squeeze(1)
        div = div.reshape(sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


# ----------------------------------------------------------------------------- pooling
def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p)."""
    F = _F()
    kw, kh = kernel_size if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * 2
    if norm_type == float("inf"):
        return F.max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -F.max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = F.avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (_tg.sign(out) * F.relu(_tg.abs(out))).mul(kw * kh).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """(sum over each window of x^p)^(1/p)."""
    F = _F()
    if norm_type == float("inf"):
        return F.max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -F.max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = F.avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (_tg.sign(out) * F.relu(_tg.abs(out))).mul(kernel_size).pow(1.0 / norm_type)


def _unpool_size(input, indices, kernel_size, stride, padding, output_size, nd):
    kernel_size = _ntuple(kernel_size, nd)
    stride = kernel_size if stride is None else _ntuple(stride, nd)
    padding = _ntuple(padding, nd)
    spatial = tuple(input.shape[-nd:])
    default = tuple((spatial[i] - 1) * stride[i] + kernel_size[i] - 2 * padding[i]
                    for i in range(nd))
    if output_size is None:
        return default
    output_size = tuple(output_size)
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    elif len(output_size) == nd + 1:
        output_size = output_size[1:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for i in range(nd):
        lo = default[i] - stride[i]
        hi = default[i] + stride[i]
        if not (lo < output_size[i] < hi):
            raise ValueError(f'invalid output_size "{output_size}" (dim {i} must be between '
                             f'{lo} and {hi})')
    return output_size


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd):
    out_sp = _unpool_size(input, indices, kernel_size, stride, padding, output_size, nd)
    batched = input.dim() == nd + 2
    x = input if batched else input.unsqueeze(0)
    idx = indices if batched else indices.unsqueeze(0)
    N, C = x.shape[0], x.shape[1]
    n_out = int(np.prod(out_sp))
    flat = _tg.zeros(N, C, n_out, dtype=x.dtype)
    ii = idx.reshape(N, C, -1)
    iv = np.asarray(ii.numpy())
    if iv.size and (iv.min() < 0 or iv.max() >= n_out):
        raise RuntimeError(f"Found an invalid max index: {int(iv.max())} (output volumes are of "
                           f"size {'x'.join(str(s) for s in out_sp)}")
    y = flat.scatter(2, ii, x.reshape(N, C, -1)).reshape((N, C) + tuple(out_sp))
    return _named(y if batched else y.squeeze(0), "MaxUnpool2DBackward0")


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: maxima back at their positions, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: maxima back at their positions, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


# ----------------------------------------------------------------------------- shuffles
def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got "
                           f"input with {input.dim()} dimension(s)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError("pixel_shuffle expects its input's 'channel' dimension to be divisible "
                           f"by the square of upscale_factor, but input.size(-3)={c} is not "
                           f"divisible by {r * r}")
    oc = c // (r * r)
    x = input.reshape(*lead, oc, r, r, h, w)
    n = len(lead)
    perm = list(range(n)) + [n, n + 3, n + 1, n + 4, n + 2]
    return x.permute(*perm).reshape(*lead, oc, h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.dim()} dimension(s)")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError("pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError("pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    perm = list(range(n)) + [n, n + 2, n + 4, n + 1, n + 3]
    return x.permute(*perm).reshape(*lead, c * r * r, h // r, w // r)


def channel_shuffle(input, groups):
    """(N, g * c, *) -> channels reordered as (c, g)."""
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


# ----------------------------------------------------------------------------- interpolate
def _interp_sizes(input, size, scale_factor, recompute_scale_factor):
    nd = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nd:
                raise ValueError("Input and output must have the same number of spatial "
                                 f"dimensions, but got input with spatial dimensions of "
                                 f"{list(input.shape[2:])} and output size of {size}. Please "
                                 "provide input tensor in (N, C, d1, d2, ...,dK) format and "
                                 "output size in (o1, o2, ...,oK) format.")
            out = [int(s) for s in size]
        else:
            out = [int(size)] * nd
        return out, [None] * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != nd:
            raise ValueError("Input and scale_factor must have the same number of spatial "
                             f"dimensions, but got input with spatial dimensions of "
                             f"{list(input.shape[2:])} and scale_factor of shape {scale_factor}. "
                             "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                             "scale_factor in (s1, s2, ...,sK) format.")
        scales = [float(s) for s in scale_factor]
    else:
        scales = [float(scale_factor)] * nd
    out = [int(math.floor(float(input.shape[i + 2]) * scales[i])) for i in range(nd)]
    if recompute_scale_factor:
        return out, [None] * nd
    return out, scales


def _nearest_index(n_in, n_out, scale, exact, dt):
    if scale is not None and scale > 0:
        s = dt(1.0 / scale)
    else:
        s = dt(n_in) / dt(n_out)
    j = np.arange(n_out, dtype=dt)
    if exact:
        src = np.floor((j + dt(0.5)) * s).astype(np.int64)
    else:
        src = np.floor(j * s).astype(np.int64)
    return np.minimum(src, n_in - 1)


def _linear_weights(n_in, n_out, scale, align_corners, dt):
    if align_corners:
        s = dt(n_in - 1) / dt(n_out - 1) if n_out > 1 else dt(0)
    elif scale is not None and scale > 0:
        s = dt(1.0 / scale)
    else:
        s = dt(n_in) / dt(n_out)
    j = np.arange(n_out, dtype=dt)
    if align_corners:
        src = s * j
    else:
        src = np.maximum(s * (j + dt(0.5)) - dt(0.5), dt(0))
    i0 = np.floor(src).astype(np.int64)
    i0 = np.minimum(i0, n_in - 1)
    i1 = np.where(i0 < n_in - 1, i0 + 1, i0)
    l1 = (src - i0.astype(dt)).astype(dt)
    l0 = (dt(1) - l1).astype(dt)
    return i0, i1, l0, l1


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims: ``nearest``, ``nearest-exact``, ``linear`` (3-D), ``bilinear``
    (4-D) or ``area`` (adaptive average pooling)."""
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("interpolate(antialias=True) is not supported by tapegrad")
    nd = input.dim() - 2
    out, scales = _interp_sizes(input, size, scale_factor, recompute_scale_factor)
    F = _F()
    if mode == "area":
        if nd == 1:
            return F.adaptive_avg_pool1d(input, out[0])
        if nd == 2:
            return F.adaptive_avg_pool2d(input, out)
        raise NotImplementedError("interpolate(mode='area') supports 3-D and 4-D input")
    dt = input.dtype.np if hasattr(input.dtype, "np") else np.float32
    dt = np.float64 if dt == np.float64 else np.float32
    dt = np.dtype(dt).type
    x = input
    if mode in ("nearest", "nearest-exact"):
        for i in range(nd):
            idx = _nearest_index(input.shape[i + 2], out[i], scales[i], mode == "nearest-exact",
                                 dt)
            x = x.index_select(i + 2, _tg.tensor(idx))
        return x
    if (mode == "linear" and nd != 1) or (mode == "bilinear" and nd != 2):
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                  f"{'3' if mode == 'linear' else '4'}D input")
    if mode not in ("linear", "bilinear"):
        raise NotImplementedError(f"interpolate(mode='{mode}') is not supported by tapegrad")
    for i in range(nd):
        i0, i1, l0, l1 = _linear_weights(input.shape[i + 2], out[i], scales[i], align_corners, dt)
        shape = [1] * x.dim()
        shape[i + 2] = out[i]
        a = x.index_select(i + 2, _tg.tensor(i0))
        b = x.index_select(i + 2, _tg.tensor(i1))
        x = a * _tg.tensor(l0.reshape(shape)) + b * _tg.tensor(l1.reshape(shape))
    return x


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ----------------------------------------------------------------------------- losses
def _reduction_arg(size_average, reduce, reduction):
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    warnings.warn("size_average and reduce args will be deprecated, please use reduction='"
                  + ("mean" if reduce and size_average else "sum" if reduce else "none")
                  + "' instead.", stacklevel=3)
    return "mean" if reduce and size_average else "sum" if reduce else "none"


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j (until the first -1) and non-target classes i of
    max(0, 1 - (x[j] - x[i])) / C."""
    reduction = _reduction_arg(size_average, reduce, reduction)
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = np.asarray(target.numpy(), np.int64).reshape(x.shape)
    N, C = x.shape
    valid = np.zeros((N, C), bool)
    for n in range(N):
        for c in range(C):
            if t[n, c] < 0:
                break
            valid[n, c] = True
    tgt_cls = np.where(valid, t, 0)
    is_target = np.zeros((N, C), bool)
    for n in range(N):
        is_target[n, tgt_cls[n][valid[n]]] = True
    xj = x.gather(1, _tg.tensor(tgt_cls))                       # (N, C): x at target slots
    margins = 1 - (xj.unsqueeze(2) - x.unsqueeze(1))            # (N, slot, class)
    mask = valid[:, :, None] & ~is_target[:, None, :]
    terms = _F().relu(margins) * _tg.tensor(mask.astype(input.dtype.np if hasattr(
        input.dtype, "np") else np.float32))
    loss = terms.sum((1, 2)) / C
    if input.dim() < 2:
        loss = loss.reshape(())
    if reduction == "none":
        return loss
    return loss.mean() if reduction == "mean" else loss.sum()


# ----------------------------------------------------------------------------- attention
def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    if mask is None:
        return None
    if mask.dtype != _tg.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      "same type for both instead.", stacklevel=3)
    if not mask.is_floating_point():
        mask = _tg.zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be 3-D"
                                 f" but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 2-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be `None`, "
                                 f"2-D or 3-D but found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to be "
                                 f"2-D but found {key.dim()}-D and {value.dim()}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be "
                                 f"`None` or 1-D but found {key_padding_mask.dim()}-D tensor "
                                 "instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.dim()}-D tensor "
                                     "instead")
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got "
                                         f"{attn_mask.shape}")
        return False
    raise AssertionError("query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.dim()}-D query tensor")


def _in_projection_packed(q, k, v, w, b=None):
    F = _F()
    E = q.size(-1)
    if k is v:
        if q is k:
            proj = F.linear(q, w, b)
            proj = _fused.transposed(proj.unflatten(-1, (3, E)).unsqueeze(0), 0, -2).squeeze(-2)
            proj = proj.contiguous()
            return proj[0], proj[1], proj[2]
        w_q, w_kv = w.split([E, E * 2])
        b_q, b_kv = (None, None) if b is None else b.split([E, E * 2])
        q_proj = F.linear(q, w_q, b_q)
        kv = F.linear(k, w_kv, b_kv)
        kv = kv.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
        return q_proj, kv[0], kv[1]
    w_q, w_k, w_v = w.chunk(3)
    b_q, b_k, b_v = (None,) * 3 if b is None else b.chunk(3)
    return F.linear(q, w_q, b_q), F.linear(k, w_k, b_k), F.linear(v, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight,
                                 in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p,
                                 out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """torch.nn.functional.multi_head_attention_forward: inputs (L, N, E) (or unbatched
    (L, E)); returns (attn_output, attn_weights or None)."""
    F = _F()
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       None if attn_mask is None else attn_mask.dtype,
                                       "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype,
                                    check_other=False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match "
                                 f"value's {value.shape[:2]}")
        b_q = b_k = b_v = None
        if in_proj_bias is not None:
            b_q, b_k, b_v = in_proj_bias.chunk(3)
        q = F.linear(query, q_proj_weight, b_q)
        k = F.linear(key, k_proj_weight, b_k)
        v = F.linear(value, v_proj_weight, b_v)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape "
                                 f"{value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = _tg.cat([k, bias_k.repeat(1, bsz, 1)])
        v = _tg.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    q = _fused.transposed(q.reshape(tgt_len, bsz * num_heads, head_dim), 0, 1)
    if static_k is None:
        k = _fused.transposed(k.reshape(k.shape[0], bsz * num_heads, head_dim), 0, 1)
    else:
        k = static_k
    if static_v is None:
        v = _fused.transposed(v.reshape(v.shape[0], bsz * num_heads, head_dim), 0, 1)
    else:
        v = static_v
    if add_zero_attn:
        zshape = (bsz * num_heads, 1, head_dim)
        k = _tg.cat([k, _tg.zeros(zshape, dtype=k.dtype)], dim=1)
        v = _tg.cat([v, _tg.zeros(zshape, dtype=v.dtype)], dim=1)
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    src_len = k.size(1)
    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got "
                                 f"{key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            -1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if not need_weights:
        # torch: scaled_dot_product_attention on (N, heads, L, E) views (its CPU flash kernel:
        # one fused entry here, see nn/_fused.py)
        if attn_mask is not None:
            if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
                attn_mask = attn_mask.unsqueeze(0)
            else:
                attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
        q = q.view(bsz, num_heads, tgt_len, head_dim)
        k = k.view(bsz, num_heads, src_len, head_dim)
        v = v.view(bsz, num_heads, src_len, head_dim)
        attn_output = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        perm = _fused.permuted(attn_output, (2, 0, 1, 3), "PermuteBackward0")
        attn_output = attn_output.permute(2, 0, 1, 3) if perm is None else perm
        attn_output = attn_output.contiguous().view(bsz * tgt_len, embed_dim)
        attn_output = F.linear(attn_output, out_proj_weight, out_proj_bias)
        attn_output = attn_output.view(tgt_len, bsz, attn_output.size(1))
        if not is_batched:
            attn_output = attn_output.squeeze(1)
        return attn_output, None
    E = q.shape[-1]
    q_scaled = q * math.sqrt(1.0 / float(E))
    if need_weights or attn_mask is not None or not is_causal:
        w = _tg.bmm(q_scaled, k.transpose(-2, -1))
        if attn_mask is not None:
            w = w + attn_mask
    else:                                    # is_causal without masks (need_weights=False)
        w = _tg.bmm(q_scaled, k.transpose(-2, -1))
        causal = np.triu(np.ones((tgt_len, src_len), bool), 1)
        w = w.masked_fill(_tg.tensor(causal), float("-inf"))
    w = F.softmax(w, dim=-1)
    if dropout_p > 0.0:
        w = F.dropout(w, p=dropout_p)
    attn_output = _tg.bmm(w, v)
    attn_output = attn_output.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    attn_output = F.linear(attn_output, out_proj_weight, out_proj_bias)
    attn_output = attn_output.reshape(tgt_len, bsz, attn_output.size(1))
    if not need_weights:
        if not is_batched:
            attn_output = attn_output.squeeze(1)
        return attn_output, None
    w = w.reshape(bsz, num_heads, tgt_len, src_len)
    if average_attn_weights:
        w = w.mean(dim=1)
    if not is_batched:
        attn_output = attn_output.squeeze(1)
        w = w.squeeze(0)
    return attn_output, w


# ----------------------------------------------------------------------------- CTC
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """Connectionist temporal classification: -log of the total probability of the
    alignments of each target (the forward algorithm in log space, one vectorised step per
    time step; gradients through the tape). 'mean' divides each loss by its target length
    (at least 1) and averages over the batch."""
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)
    T, N, C = lp.shape
    il = np.asarray(input_lengths.numpy() if isinstance(input_lengths, _tg.Tensor)
                    else input_lengths, np.int64).reshape(-1)
    tl = np.asarray(target_lengths.numpy() if isinstance(target_lengths, _tg.Tensor)
                    else target_lengths, np.int64).reshape(-1)
    tg = np.asarray(targets.numpy(), np.int64)
    if not batched:
        tg = tg.reshape(1, -1) if tg.ndim == 1 and tg.size == tl.sum() and tl.size == 1 else tg
    if il.size != N or tl.size != N:
        raise RuntimeError("input_lengths must be of size batch_size" if il.size != N
                           else "target_lengths must be of size batch_size")
    if tg.ndim == 1:                                   # concatenated targets
        starts = np.concatenate([[0], np.cumsum(tl)[:-1]])
        seqs = [tg[s:s + n] for s, n in zip(starts, tl)]
    else:
        seqs = [tg[i, :tl[i]] for i in range(N)]
    for i in range(N):
        if il[i] > T:
            raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                               f"{il[i]} (while checking arguments for ctc_loss_cpu)")
    Smax = max((len(s) for s in seqs), default=0)
    S = 2 * Smax + 1
    ext = np.full((N, S), blank, np.int64)
    allow2 = np.zeros((N, S), bool)
    for i, seq in enumerate(seqs):
        ext[i, 1:2 * len(seq):2] = seq
        for s in range(3, 2 * len(seq) + 1, 2):
            allow2[i, s] = ext[i, s] != ext[i, s - 2]
    dt = lp.dtype
    neg = -1e30 if dt == _tg.float32 else -1e300
    idx = _tg.tensor(ext)
    lens = 2 * tl + 1
    valid = np.arange(S)[None, :] < lens[:, None]
    init = np.zeros((N, S), bool)
    init[:, 0] = True
    init[:, 1] = tl > 0
    init &= valid
    negs = _tg.full((N, S), neg, dtype=dt)
    a = _tg.where(_tg.tensor(init), lp[0].gather(1, idx), negs)
    pad1 = _tg.full((N, 1), neg, dtype=dt)
    pad2 = _tg.full((N, 2), neg, dtype=dt)
    a2mask = _tg.tensor(allow2)
    vmask = _tg.tensor(valid)
    for t in range(1, T):
        s1 = _tg.cat([pad1, a[:, :-1]], 1)
        s2 = _tg.where(a2mask, _tg.cat([pad2, a[:, :-2]], 1), negs)
        m = _tg.maximum(_tg.maximum(a, s1), s2).detach()
        new = m + _tg.log(_tg.exp(a - m) + _tg.exp(s1 - m) + _tg.exp(s2 - m)) \
            + lp[t].gather(1, idx)
        new = _tg.where(vmask, new, negs)
        active = _tg.tensor((t < il)[:, None])
        a = _tg.where(active, new, a)
    last = _tg.tensor(np.maximum(lens - 1, 0)[:, None])
    prev = _tg.tensor(np.maximum(lens - 2, 0)[:, None])
    e1 = a.gather(1, last).squeeze(1)
    e2 = _tg.where(_tg.tensor(tl > 0), a.gather(1, prev).squeeze(1), _tg.full((N,), neg,
                                                                              dtype=dt))
    m = _tg.maximum(e1, e2).detach()
    ll = m + _tg.log(_tg.exp(e1 - m) + _tg.exp(e2 - m))
    # torch's gradient with respect to log_probs is exp(log_probs) - occupancy (the gradient
    # of the logits when log_probs = log_softmax(logits)); the true gradient is -occupancy.
    # Add sum(exp(lp) * lp) over each sample's steps, with zero value, to give torch's.
    tmask = (np.arange(T)[:, None] < il[None, :]).astype(np.float64)[:, :, None]
    lpd = lp.detach()
    w = _tg.exp(lpd) * _tg.tensor(tmask).to(dt)
    term = (w * lp).sum((0, 2))
    loss = -ll + (term - term.detach())
    impossible = _tg.tensor(ll.detach().numpy() < neg / 2)
    if zero_infinity:
        loss = _tg.where(impossible, _tg.zeros_like(loss), loss)
    else:
        loss = _tg.where(impossible, _tg.full_like(loss, float("inf")), loss)
    loss = _named(loss, "CtcLossBackward0")
    if reduction == "none":
        return loss if batched else loss.squeeze(0)
    if reduction == "sum":
        return loss.sum()
    return (loss / _tg.tensor(np.maximum(tl, 1).astype(dt.np if hasattr(dt, "np")
                                                        else np.float32))).mean()


def scale_grad_by_freq(out, idx):
    """``out`` (the rows of an embedding at ``idx``) with the same value and its gradient
    divided by how often each index occurs in ``idx`` (F.embedding's scale_grad_by_freq)."""
    idx = np.asarray(idx).reshape(-1)
    _, inv, counts = np.unique(idx, return_inverse=True, return_counts=True)
    s = (1.0 / counts[inv]).reshape(tuple(out.shape[:-1]) + (1,))
    s = _tg.tensor(s.astype(np.float64)).to(out.dtype)
    scaled = out * s
    return out.detach() + (scaled - scaled.detach())
