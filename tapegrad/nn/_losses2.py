"""More of torch.nn.functional, composed from differentiable tapegrad ops: the margin and
embedding losses (margin_ranking, hinge_embedding, cosine_embedding, soft_margin,
multilabel_soft_margin, multi_margin, triplet_margin[_with_distance]), pdist, group_norm,
instance_norm, rms_norm, prelu, gumbel_softmax, and the torch-namespace forms of several
functional ops (``torch.layer_norm`` ... with aten's signatures).

Where torch's loss is itself a composition (ATen or Python), the same composition is used, so
the last node has torch's name (ClampMinBackward0, AddBackward0, MeanBackward0 ...); where
torch has one kernel (SoftMarginLossBackward0, MultiMarginLossBackward0, PdistBackward0,
NativeGroupNormBackward0, PreluKernelBackward0) the intermediate entries are hidden and the
last one carries its name.
"""
import warnings

import numpy as np

from .. import _math
from .._math import hide, named, tap
from .._state import no_grad
from ..tensor import Tensor, _wrap, bool_, int64
from .._core.names import ONE_INPUT

# aten's Tensor-Scalar overloads (x + 1e-12, x - margin inside a C++ composition): one input
ONE_INPUT.update({"AddBackward1", "SubBackward1"})

_RED = {0: "none", 1: "mean", 2: "sum"}


def _adds(t, c):
    """t + c as aten's add(Tensor, Scalar): AddBackward1."""
    return named(t + c, "AddBackward1")


def _subs(t, c):
    """t - c as aten's sub(Tensor, Scalar): SubBackward1."""
    return named(t - c, "SubBackward1")


def _rsub(c, t):
    """c - t as C++'s Scalar - Tensor (the scalar wrapped in a tensor): SubBackward0(None, t)."""
    return _wrap(np.asarray(c, t._dtype.np), t._dtype) - t


def _F():
    from . import functional
    return functional


def _apply_reduction(loss, red):
    if red == "none":
        return loss
    return loss.mean() if red == "mean" else loss.sum()


def _red(size_average, reduce, reduction):
    return _F()._reduction(size_average, reduce, reduction)


def _zeros_like(t):
    return _wrap(np.zeros(np.shape(t._data), t._dtype.np), t._dtype)


def _mask(cond):
    return _wrap(np.asarray(cond, bool), bool_)


# ----------------------------------------------------------------------------- margin losses
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target (input1 - input2) + margin)."""
    red = _red(size_average, reduce, reduction)
    if not (input1.dim() == input2.dim() == target.dim()):
        raise RuntimeError("margin_ranking_loss : All input tensors should have same dimension but "
                           "got sizes: input1: %s, input2: %s, target: %s "
                           % (_F()._size(input1.shape), _F()._size(input2.shape),
                              _F()._size(target.shape)))
    out = _adds(-target * (input1 - input2), margin).clamp_min(0)
    return _apply_reduction(out, red)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """input where target == 1, max(0, margin - input) where target == -1 (aten's where form:
    the two terms are added, so other target values add both)."""
    red = _red(size_average, reduce, reduction)
    t = np.asarray(target._data)
    zeros = _zeros_like(input)
    margin_clamp = _rsub(margin, input).clamp_min(0)
    out_margin = _math.where(_mask(t != 1), margin_clamp, zeros)
    out_self = _math.where(_mask(t != -1), input, zeros)
    return _apply_reduction(out_margin + out_self, red)


_EPS = 1e-12


def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1."""
    red = _red(size_average, reduce, reduction)
    td = target.dim()
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if td == 1 and not (input1.dim() == 2 and input2.dim() == 2):
        raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with sizes "
                           "%s and %s." % (list(input1.shape), list(input2.shape)))
    if td == 0 and not (input1.dim() == 1 and input2.dim() == 1):
        raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with sizes "
                           "%s and %s." % (list(input1.shape), list(input2.shape)))
    prod_sum = (input1 * input2).sum(td)
    m1 = _adds((input1 * input1).sum(td), _EPS)
    m2 = _adds((input2 * input2).sum(td), _EPS)
    cos = prod_sum / (m1 * m2).sqrt()
    zeros = _zeros_like(cos)
    t = np.asarray(target._data)
    pos = _rsub(1, cos)
    neg = _subs(cos, margin).clamp_min(0)
    out = _math.where(_mask(t == 1), pos, zeros) + _math.where(_mask(t == -1), neg, zeros)
    return _apply_reduction(out, red)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target input)), SoftMarginLossBackward0."""
    red = _red(size_average, reduce, reduction)
    F = _F()
    F._check_target_shape(input, target, "soft_margin_loss")
    F._not_differentiable_arg("soft_margin_loss", "target", target)
    # torch's node lists the input only (the target is not differentiable in aten)
    z = -target * tap(input, 0)
    out = F.softplus(z)          # log(1 + exp(z)), stable
    hidden = [z]
    if red != "none":
        hidden.append(out)
        out = out.mean() if red == "mean" else out.sum()
    if out._tape is None:
        return out
    hide(*[h for h in hidden if h._tape is not None])
    return named(out, "SoftMarginLossBackward0", 1)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(y log sigmoid(x) + (1 - y) log sigmoid(-x)) averaged over the classes (last dim)."""
    red = _red(size_average, reduce, reduction)
    F = _F()
    loss = -(target * F.logsigmoid(input) + (1 - target) * F.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    C = input.size(class_dim)
    loss = loss.sum(dim=class_dim) / C
    return _apply_reduction(loss, red)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])^p / C (times weight[y]),
    MultiMarginLossBackward0."""
    red = _red(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    if weight is not None and weight._dtype is not input._dtype:
        raise RuntimeError("expected scalar type %s but found %s"
                           % (input._dtype._tname, weight._dtype._tname))
    nd = input.dim()
    shp = tuple(input.shape)
    C = shp[-1] if nd else 1
    N = shp[0] if nd == 2 else 1
    if nd > 2 or (nd == 2 and shp[1] == 0):
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch size, but "
                           "got: %s" % (list(shp),))
    if target._dtype is not int64:
        raise RuntimeError("expected scalar type Long but found %s" % target._dtype._tname)
    t = np.asarray(target._data).reshape(-1)
    if t.size != N or (nd == 2 and target.dim() > 1) or (nd < 2 and target.dim() > 1):
        raise RuntimeError("inconsistent target size, expected %d but got %s"
                           % (N, list(target.shape)))
    if t.size and (t.min() < 0 or t.max() >= C):
        raise RuntimeError("target out of range")
    x = tap(input, 0).reshape(N, C)
    from ..creation import tensor as _tensor
    idx = _tensor(t.astype(np.int64).reshape(N, 1))
    xy = x.gather(1, idx)                                  # (N, 1)
    m = margin - xy
    z0 = m + x
    z = z0.clamp_min(0)
    h = z if p == 1 else z * z
    hidden = [x, xy, m, z0, z]
    if weight is not None:
        w = _wrap(np.asarray(weight._data)[t].reshape(N, 1).astype(input._dtype.np), input._dtype)
        hidden.append(h)
        h = h * w
    keep = np.ones((N, C), bool)
    keep[np.arange(N), t] = False
    hidden.append(h)
    h = h * _wrap(keep.astype(input._dtype.np), input._dtype)     # the i != y terms
    hidden.append(h)
    s1 = h.sum(1)
    hidden.append(s1)
    per = s1 / C
    if red == "none":
        out = per if nd == 2 else per.reshape(())
    else:
        hidden.append(per)
        out = per.mean() if red == "mean" else per.sum()
    if out._tape is None:
        return out
    if red == "none" and nd != 2:
        hidden.append(per)
    hide(*[v for v in hidden if isinstance(v, Tensor) and v._tape is not None])
    return named(out, "MultiMarginLossBackward0", 1)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(0, margin + d(a, p) - d(a, n)), d the p-norm pairwise distance (swap: d(a, n)
    replaced by min(d(a, n), d(p, n)))."""
    red = _red(size_average, reduce, reduction)
    a, pd, nd = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pd == nd):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same "
                           "number of dimensions, but got: anchor %dD, positive %dD, and negative "
                           "%dD inputs" % (a, pd, nd))
    F = _F()
    dist_pos = F.pairwise_distance(anchor, positive, p, eps)
    dist_neg = F.pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = _math.minimum(dist_neg, F.pairwise_distance(positive, negative, p, eps))
    out = (_adds(dist_pos, margin) - dist_neg).clamp_min(0)
    return _apply_reduction(out, red)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with a user distance (default pairwise_distance)."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError("%s is not a valid value for reduction" % reduction)
    if margin <= 0:
        raise ValueError("triplet_margin_with_distance_loss: expected margin to be greater than 0, "
                         "got %s instead" % margin)
    a, pd, nd = anchor.ndim, positive.ndim, negative.ndim
    if not (a == pd and pd == nd):
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have the same "
                           "number of dimensions, but got: anchor %dD, positive %dD, and negative "
                           "%dD inputs" % (a, pd, nd))
    dist = distance_function if distance_function is not None else _F().pairwise_distance
    dist_pos = dist(anchor, positive)
    dist_neg = dist(anchor, negative)
    if swap:
        dist_neg = _math.minimum(dist_neg, dist(positive, negative))
    loss = _math.clamp_min(margin + dist_pos - dist_neg, 0)
    return _apply_reduction(loss, reduction)


# ----------------------------------------------------------------------------- distances
def pdist(input, p=2):
    """||x_i - x_j||_p for the rows i < j of a 2-D input (row-major over the pairs),
    PdistBackward0."""
    if input.dim() != 2:
        raise RuntimeError("pdist only supports 2D tensors, got: %dD" % input.dim())
    if not input._dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    from ..creation import tensor as _tensor
    from .. import linalg
    a = input.index_select(0, _tensor(i.astype(np.int64)))
    b = input.index_select(0, _tensor(j.astype(np.int64)))
    d = a - b
    out = linalg.vector_norm(d, p, 1)
    if out._tape is not None:
        hide(a, b, d)
        named(out, "PdistBackward0")
    return out


# ----------------------------------------------------------------------------- normalization
def _norm_stats(x, dims, eps):
    mu = x.mean(dims, keepdim=True)
    xc = x - mu
    var = (xc * xc).mean(dims, keepdim=True)
    rs = (var + eps).rsqrt()
    return mu, xc, var, rs


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over each group of channels (and the spatial dims), then
    the per-channel affine; NativeGroupNormBackward0."""
    if input.dim() < 2:
        raise RuntimeError("Expected at least 2 dimensions for input tensor but received %d"
                           % input.dim())
    shp = tuple(input.shape)
    N, C = shp[0], shp[1]
    _F()._float_only(input, "GroupNormKernelImpl")
    size = [N * C // num_groups, num_groups] + list(shp[2:])
    if int(np.prod(size[:1] + size[2:])) == 1:
        raise ValueError("Expected more than 1 value per channel when training, got input size %s"
                         % (size,))
    if C % num_groups != 0:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but "
                           "got input of shape %s and num_groups=%d" % (list(shp), num_groups))
    for name, v in (("weight", weight), ("bias", bias)):
        if v is not None and (v.dim() != 1 or v.numel() != C):
            raise RuntimeError("Expected %s to be a vector of size equal to the number of channels "
                               "in input, but got %s of shape %s and input of shape %s"
                               % (name, name, list(v.shape), list(shp)))
    x = tap(input, 0)
    g = x.reshape(N, num_groups, -1)
    mu, xc, var, rs = _norm_stats(g, (2,), eps)
    yn = xc * rs
    y = yn.reshape(shp)
    hidden = [g, mu, xc, var, rs, yn]
    bshape = (1, C) + (1,) * (len(shp) - 2)
    y = _F()._affine(y, weight, bias, bshape, hidden)
    if y._tape is None:
        return y
    hide(*[h for h in hidden if h._tape is not None])
    return named(y, "NativeGroupNormBackward0", 3)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Batch norm of each (sample, channel) over its spatial dims (input viewed as
    (1, N*C, ...)); running statistics get the batch average of the per-instance updates."""
    shp = tuple(input.shape)
    if use_input_stats:
        if int(np.prod(shp[2:], dtype=np.int64)) == 1 if len(shp) > 2 else True:
            raise ValueError("Expected more than 1 spatial element when training, got input size "
                             "%s" % (_F()._size(shp),))
    N, C = shp[0], shp[1]
    F = _F()
    x = input.reshape((1, N * C) + shp[2:])
    rep = lambda v: None if v is None else v.repeat(N)  # noqa: E731
    rm, rv = rep(running_mean), rep(running_var)
    if rm is not None:
        rm = rm.detach().clone()
    if rv is not None:
        rv = rv.detach().clone()
    y = F.batch_norm(x, rm, rv, rep(weight), rep(bias), use_input_stats, momentum, eps)
    if use_input_stats:
        with no_grad():
            if running_mean is not None:
                running_mean.copy_(rm.reshape(N, C).mean(0))
            if running_var is not None:
                running_var.copy_(rv.reshape(N, C).mean(0))
    return y.reshape(shp)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the last len(normalized_shape) dims (eps: the dtype's
    machine epsilon by default), times weight."""
    ns, shp = _F()._normalized(input, normalized_shape)
    _F()._float_only(input, "rms_norm")
    if eps is None:
        eps = float(np.finfo(input._dtype.np).eps)
    dims = tuple(range(len(shp) - len(ns), len(shp)))
    r = _adds(input.pow(2).mean(dims, keepdim=True), eps).rsqrt()
    y = input * r
    if weight is not None:
        y = y * weight
    return y


def prelu(input, weight):
    """max(0, x) + weight min(0, x), weight broadcast over dim 1 (one value: everywhere);
    PreluKernelBackward0."""
    if not isinstance(input, Tensor) or not isinstance(weight, Tensor):
        raise TypeError("prelu(): argument 'weight' (position 2) must be Tensor, not %s"
                        % type(weight).__name__)
    if weight.dim() > 1:
        raise RuntimeError("prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = %d"
                           % weight.dim())
    n = weight.numel()
    shp = tuple(input.shape)
    if n != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        ch = shp[1] if input.dim() >= 2 else 1
        if ch != n:
            raise RuntimeError("Mismatch of parameter numbers and input channel size. Found parameter "
                               "numbers = %d and channel size = %d." % (n, ch))
    _F()._float_only(input, "prelu_cpu")
    # torch views the weight to broadcast over dim 1 of an input of 2 or more dims
    x = tap(input, 0)
    wb = tap(weight.reshape((1, n) + (1,) * (len(shp) - 2)) if input.dim() >= 2 else weight, 1)
    pos = _wrap((np.asarray(input._data) > 0).astype(input._dtype.np), input._dtype)
    # where(x > 0, x, w x) as x pos + w x (1 - pos): binary entries the node's taps are found through
    a, wx = x * pos, wb * x
    b = wx * (1 - pos)
    y = a + b
    hidden = [a, wx, b]
    if input.dim() == 0:            # a 0-d input keeps its shape (the weight has one element)
        hidden.append(y)
        y = y.sum(0)
    d, wd = np.asarray(input._data), np.asarray(weight._data).reshape(np.shape(wb._data))
    with np.errstate(all="ignore"):
        _math.exact(y, np.where(d > 0, d, wd * d).reshape(np.shape(y._data)))  # (inf*0: nan)
    if y._tape is None:
        return y
    hide(*[h for h in hidden if h._tape is not None])
    return named(y, "PreluKernelBackward0", 2)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1); hard: the one-hot of the argmax with
    the soft sample's gradient (y_hard - y_soft.detach() + y_soft)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    from ..creation import _gen
    g = -np.log(_gen(None).exponential(1.0, np.shape(logits._data)))
    gumbels = (logits + _wrap(g.astype(logits._dtype.np), logits._dtype)) / tau
    y_soft = _F().softmax(gumbels, dim)
    if not hard:
        return y_soft
    d = np.asarray(y_soft._data)
    idx = np.expand_dims(np.argmax(d, axis=dim), dim)
    hard_np = np.zeros_like(d)
    np.put_along_axis(hard_np, idx, 1.0, axis=dim)
    y_hard = _wrap(hard_np, logits._dtype)
    return y_hard - y_soft.detach() + y_soft


# ----------------------------------------------------------------------------- torch.* forms
def _red_int(reduction):
    """aten's integer reduction: 1 mean, 2 sum, any other value none (apply_loss_reduction)."""
    return _RED.get(int(reduction), "none")


def torch_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def torch_group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return group_norm(input, num_groups, weight, bias, eps)


def torch_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                        eps, cudnn_enabled):
    return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                         momentum, eps)


def torch_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
                     cudnn_enabled):
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def torch_embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _F().embedding(indices, weight, None if padding_idx == -1 else padding_idx)


def torch_kl_div(input, target, reduction=1, *, log_target=False):
    return _F().kl_div(input, target, reduction=_red_int(reduction), log_target=log_target)


def torch_binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                           reduction=1):
    return _F().binary_cross_entropy_with_logits(input, target, weight, reduction=_red_int(reduction),
                                                 pos_weight=pos_weight)


def torch_margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return margin_ranking_loss(input1, input2, target, margin, reduction=_red_int(reduction))


def torch_hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return hinge_embedding_loss(input, target, margin, reduction=_red_int(reduction))


def torch_cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return cosine_embedding_loss(input1, input2, target, margin, reduction=_red_int(reduction))


def torch_triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                              reduction=1):
    return triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                               reduction=_red_int(reduction))


def torch_poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_red_int(reduction))
