"""tapegrad.nn modules against torch.nn (the oracle) and, without torch, against numpy references
and finite differences.

Oracle tests (skipped when torch is absent): each case builds the same module in both
libraries, copies torch's state_dict into tapegrad's, and compares the printed module tree,
the state_dict keys and shapes, the forward output, the input gradients and every parameter's
gradient (float64, tight tolerances), and the buffers after the forward (BatchNorm's running
statistics). Other tests: the Module API (registration, iteration, hooks, modes, conversion,
load_state_dict messages), containers, error messages, default initialisation bounds.
"""
import copy
import math
import pickle
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn as tnn
import tapegrad.nn.functional as TF

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def _t(lib, a, rg=False):
    t = lib.tensor(np.asarray(a))
    if rg:
        t.requires_grad_(True)
    return t


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def build_pair(make, dtype="float64", seed=0):
    """(torch module, tapegrad module) of ``make(nn)``; tapegrad's gets torch's state."""
    torch.manual_seed(seed)
    tm = make(torch.nn)
    gm = make(tnn)
    if dtype == "float64":
        tm = tm.double()
        gm = gm.double()
    sd = OrderedDict((k, tg.tensor(v.detach().numpy().copy())) for k, v in tm.state_dict().items())
    gm.load_state_dict(sd)
    return tm, gm


def flat_out(o):
    if isinstance(o, (tuple, list)):
        r = []
        for v in o:
            r.extend(flat_out(v))
        return r
    if o is None:
        return []
    if hasattr(o, "data") and hasattr(o, "batch_sizes"):   # PackedSequence
        return [o.data]
    return [o]


def run_case(make, inputs, kwargs=None, train=True, dtype="float64", rtol=1e-9, atol=1e-10,
             grad_inputs=True, seed=0, check_grads=True):
    """Compare module ``make`` between torch and tapegrad on ``inputs`` (numpy arrays, or
    callables lib -> value)."""
    kwargs = kwargs or {}
    tm, gm = build_pair(make, dtype, seed)
    tm.train(train)
    gm.train(train)
    assert repr(gm) == repr(tm)
    tsd, gsd = tm.state_dict(), gm.state_dict()
    assert list(gsd.keys()) == list(tsd.keys())
    for k in tsd:
        assert tuple(gsd[k].shape) == tuple(tsd[k].shape), k
        assert str(gsd[k].dtype) == str(tsd[k].dtype), k
    assert [n for n, _ in gm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert [n for n, _ in gm.named_buffers()] == [n for n, _ in tm.named_buffers()]

    def mk(lib):
        args = []
        for a in inputs:
            if callable(a):
                args.append(a(lib))
            else:
                a = np.asarray(a)
                rg = grad_inputs and a.dtype.kind == "f"
                if a.dtype.kind == "f" and dtype == "float32":
                    a = a.astype(np.float32)
                args.append(_t(lib, a, rg))
        return args

    targs, gargs = mk(torch), mk(tg)
    tk = {k: (v(torch) if callable(v) else v) for k, v in kwargs.items()}
    gk = {k: (v(tg) if callable(v) else v) for k, v in kwargs.items()}
    tout, gout = flat_out(tm(*targs, **tk)), flat_out(gm(*gargs, **gk))
    assert len(tout) == len(gout)
    for a, b in zip(tout, gout):
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype) == str(b.dtype)
        np.testing.assert_allclose(_np(b), _np(a), rtol=rtol, atol=atol)
    for k, v in tm.state_dict().items():       # buffers after the forward (running stats)
        np.testing.assert_allclose(_np(gm.state_dict()[k]), _np(v), rtol=rtol, atol=atol,
                                   err_msg=k)
    if not check_grads:
        return tm, gm
    rng = np.random.default_rng(123)
    tl, gl = 0, 0
    for a, b in zip(tout, gout):
        if a.dtype.is_floating_point and a.requires_grad:
            w = rng.standard_normal(tuple(a.shape))
            tl = tl + (a * _t(torch, w.astype(_np(a).dtype))).sum()
            gl = gl + (b * _t(tg, w.astype(_np(b).dtype))).sum()
    if isinstance(tl, int):
        return tm, gm
    tl.backward()
    gl.backward()
    for x, y in zip(targs, gargs):
        if hasattr(x, "grad") and x.requires_grad:
            np.testing.assert_allclose(_np(y.grad), _np(x.grad), rtol=rtol * 10, atol=atol * 10)
    tp, gp = dict(tm.named_parameters()), dict(gm.named_parameters())
    for n in tp:
        if tp[n].grad is None:
            assert gp[n].grad is None or not np.any(_np(gp[n].grad)), n
            continue
        np.testing.assert_allclose(_np(gp[n].grad), _np(tp[n].grad), rtol=rtol * 10,
                                   atol=atol * 10, err_msg=n)
    return tm, gm


R = np.random.default_rng(0)


def rn(*shape):
    return R.standard_normal(shape)


def ri(hi, *shape):
    return R.integers(0, hi, shape)


# name -> (make, inputs, kwargs, options)
CASES = {
    "Linear": (lambda nn: nn.Linear(5, 3), [rn(4, 5)], {}, {}),
    "Linear_nobias_3d": (lambda nn: nn.Linear(5, 3, bias=False), [rn(2, 4, 5)], {}, {}),
    "Bilinear": (lambda nn: nn.Bilinear(3, 4, 2), [rn(5, 3), rn(5, 4)], {}, {}),
    "Identity": (lambda nn: nn.Identity(3, k=1), [rn(2, 3)], {}, {}),
    "Flatten": (lambda nn: nn.Flatten(), [rn(2, 3, 4)], {}, {}),
    "Unflatten": (lambda nn: nn.Unflatten(1, (2, 6)), [rn(3, 12)], {}, {}),
    "Conv1d": (lambda nn: nn.Conv1d(3, 4, 3, stride=2, padding=1), [rn(2, 3, 9)], {}, {}),
    "Conv1d_same_dil": (lambda nn: nn.Conv1d(2, 4, 3, padding="same", dilation=2, groups=2),
                        [rn(2, 2, 7)], {}, {}),
    "Conv2d": (lambda nn: nn.Conv2d(3, 5, 3), [rn(2, 3, 6, 6)], {}, {}),
    "Conv2d_reflect": (lambda nn: nn.Conv2d(2, 3, (3, 2), padding=(1, 2), padding_mode="reflect",
                                            bias=False), [rn(1, 2, 5, 6)], {}, {}),
    "Conv2d_circular": (lambda nn: nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular"),
                        [rn(1, 2, 4, 4)], {}, {}),
    "Conv2d_unbatched": (lambda nn: nn.Conv2d(2, 3, 2, stride=2), [rn(2, 6, 6)], {}, {}),
    "ConvTranspose1d": (lambda nn: nn.ConvTranspose1d(3, 2, 3, stride=2, padding=1,
                                                      output_padding=1), [rn(2, 3, 5)], {}, {}),
    "ConvTranspose2d": (lambda nn: nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, dilation=2),
                        [rn(2, 4, 3, 4)], {}, {}),
    "ConvTranspose2d_outsize": (lambda nn: nn.ConvTranspose2d(2, 3, 3, stride=2),
                                [rn(1, 2, 4, 4)], {"output_size": [10, 10]}, {}),
    "MaxPool1d": (lambda nn: nn.MaxPool1d(3, 2, padding=1), [rn(2, 3, 9)], {}, {}),
    "MaxPool2d": (lambda nn: nn.MaxPool2d(2), [rn(2, 3, 6, 6)], {}, {}),
    "MaxPool2d_ceil": (lambda nn: nn.MaxPool2d(3, stride=2, ceil_mode=True), [rn(1, 2, 7, 7)],
                       {}, {}),
    "AvgPool1d": (lambda nn: nn.AvgPool1d(3, 2, 1), [rn(2, 3, 9)], {}, {}),
    "AvgPool2d": (lambda nn: nn.AvgPool2d(3, 2, 1, count_include_pad=False), [rn(2, 2, 7, 7)],
                  {}, {}),
    "AdaptiveAvgPool2d": (lambda nn: nn.AdaptiveAvgPool2d((2, 3)), [rn(2, 3, 7, 8)], {}, {}),
    "AdaptiveAvgPool1d": (lambda nn: nn.AdaptiveAvgPool1d(3), [rn(2, 3, 7)], {}, {}),
    "AdaptiveMaxPool2d": (lambda nn: nn.AdaptiveMaxPool2d(2), [rn(2, 3, 6, 5)], {}, {}),
    "LPPool2d": (lambda nn: nn.LPPool2d(2, 2), [rn(1, 2, 4, 4)], {}, {}),
    "BatchNorm1d": (lambda nn: nn.BatchNorm1d(4), [rn(6, 4)], {}, {}),
    "BatchNorm1d_3d": (lambda nn: nn.BatchNorm1d(3, momentum=None), [rn(4, 3, 5)], {}, {}),
    "BatchNorm2d": (lambda nn: nn.BatchNorm2d(3), [rn(4, 3, 5, 5)], {}, {}),
    "BatchNorm2d_eval": (lambda nn: nn.BatchNorm2d(3), [rn(4, 3, 5, 5)], {}, {"train": False}),
    "BatchNorm1d_noaffine": (lambda nn: nn.BatchNorm1d(4, affine=False,
                                                       track_running_stats=False),
                             [rn(6, 4)], {}, {"train": False}),
    "InstanceNorm1d": (lambda nn: nn.InstanceNorm1d(3, affine=True), [rn(2, 3, 6)], {}, {}),
    "InstanceNorm2d": (lambda nn: nn.InstanceNorm2d(3), [rn(2, 3, 4, 4)], {}, {}),
    "LayerNorm": (lambda nn: nn.LayerNorm(6), [rn(3, 4, 6)], {}, {}),
    "LayerNorm2": (lambda nn: nn.LayerNorm([4, 6], elementwise_affine=False), [rn(3, 4, 6)],
                   {}, {}),
    "GroupNorm": (lambda nn: nn.GroupNorm(2, 4), [rn(3, 4, 5)], {}, {}),
    "RMSNorm": (lambda nn: nn.RMSNorm(5), [rn(3, 5)], {}, {}),
    "LocalResponseNorm": (lambda nn: nn.LocalResponseNorm(3), [rn(2, 5, 4, 4)], {}, {}),
    "Dropout_eval": (lambda nn: nn.Dropout(0.3), [rn(4, 5)], {}, {"train": False}),
    "Embedding": (lambda nn: nn.Embedding(10, 4, padding_idx=0), [ri(10, 3, 5)], {}, {}),
    "Embedding_maxnorm": (lambda nn: nn.Embedding(10, 4, max_norm=1.0), [ri(10, 7)], {}, {}),
    "EmbeddingBag_mean": (lambda nn: nn.EmbeddingBag(10, 3), [ri(10, 4, 3)], {}, {}),
    "EmbeddingBag_sum_offsets": (lambda nn: nn.EmbeddingBag(10, 3, mode="sum"),
                                 [np.array([1, 2, 4, 5, 4, 3, 2, 9])],
                                 {"offsets": lambda lib: lib.tensor([0, 4])}, {}),
    "EmbeddingBag_max": (lambda nn: nn.EmbeddingBag(10, 3, mode="max"), [ri(10, 4, 3)], {}, {}),
    "RNN": (lambda nn: nn.RNN(4, 5), [rn(6, 3, 4)], {}, {}),
    "RNN_relu_2layer_bi": (lambda nn: nn.RNN(4, 5, 2, nonlinearity="relu", bidirectional=True),
                           [rn(6, 3, 4)], {}, {}),
    "LSTM": (lambda nn: nn.LSTM(4, 5), [rn(6, 3, 4)], {}, {}),
    "LSTM_batch_first_2layer": (lambda nn: nn.LSTM(4, 5, num_layers=2, batch_first=True),
                                [rn(3, 6, 4)], {}, {}),
    "LSTM_bi_h0": (lambda nn: nn.LSTM(4, 5, bidirectional=True),
                   [rn(6, 3, 4), (lambda h, c: lambda lib: (lib.tensor(h), lib.tensor(c)))(
                       rn(2, 3, 5), rn(2, 3, 5))], {}, {}),
    "LSTM_proj": (lambda nn: nn.LSTM(4, 6, proj_size=3, num_layers=2), [rn(5, 2, 4)], {}, {}),
    "LSTM_unbatched": (lambda nn: nn.LSTM(4, 5), [rn(6, 4)], {}, {}),
    "GRU": (lambda nn: nn.GRU(4, 5, num_layers=2, bidirectional=True, batch_first=True),
            [rn(3, 6, 4)], {}, {}),
    "GRU_h0": (lambda nn: nn.GRU(4, 5), [rn(6, 3, 4), rn(1, 3, 5)], {}, {}),
    "RNNCell": (lambda nn: nn.RNNCell(4, 5), [rn(3, 4), rn(3, 5)], {}, {}),
    "LSTMCell": (lambda nn: nn.LSTMCell(4, 5), [rn(3, 4),
                                                (lambda h, c: lambda lib: (lib.tensor(h),
                                                                           lib.tensor(c)))(
                                                    rn(3, 5), rn(3, 5))], {}, {}),
    "GRUCell": (lambda nn: nn.GRUCell(4, 5), [rn(4)], {}, {}),
    "MultiheadAttention": (lambda nn: nn.MultiheadAttention(8, 2), [rn(5, 3, 8), rn(4, 3, 8),
                                                                   rn(4, 3, 8)], {}, {}),
    "MultiheadAttention_bf_kv": (lambda nn: nn.MultiheadAttention(8, 4, batch_first=True,
                                                                  kdim=6, vdim=5,
                                                                  add_bias_kv=True,
                                                                  add_zero_attn=True),
                                 [rn(2, 5, 8), rn(2, 4, 6), rn(2, 4, 5)],
                                 {"average_attn_weights": False}, {}),
    "MultiheadAttention_masks": (lambda nn: nn.MultiheadAttention(8, 2),
                                 [rn(4, 2, 8), rn(4, 2, 8), rn(4, 2, 8)],
                                 {"attn_mask": lambda lib: lib.tensor(np.triu(np.ones((4, 4),
                                                                                      bool), 1)),
                                  "key_padding_mask": lambda lib: lib.tensor(
                                      np.array([[0, 0, 0, 1], [0, 0, 0, 0]], bool))}, {}),
    "TransformerEncoderLayer": (lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0),
                                [rn(5, 3, 8)], {}, {}),
    "TransformerEncoderLayer_normfirst_gelu": (
        lambda nn: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu",
                                              norm_first=True, batch_first=True),
        [rn(3, 5, 8)], {"src_mask": lambda lib: lib.nn.Transformer.generate_square_subsequent_mask(5)},
        {}),
    "TransformerDecoderLayer": (lambda nn: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0),
                                [rn(4, 2, 8), rn(5, 2, 8)], {}, {}),
    "Transformer": (lambda nn: nn.Transformer(8, 2, 2, 2, 16, dropout=0.0),
                    [rn(5, 2, 8), rn(4, 2, 8)],
                    {"tgt_mask": lambda lib: lib.nn.Transformer.generate_square_subsequent_mask(4)},
                    {}),
    "TransformerEncoder": (lambda nn: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2,
        enable_nested_tensor=False), [rn(2, 5, 8)], {"is_causal": True,
                                                     "mask": lambda lib: lib.nn.Transformer.generate_square_subsequent_mask(5)},
        {}),
    "PReLU": (lambda nn: nn.PReLU(3), [rn(2, 3, 4)], {}, {}),
    "Softmax": (lambda nn: nn.Softmax(dim=1), [rn(3, 4)], {}, {}),
    "LogSoftmax": (lambda nn: nn.LogSoftmax(dim=-1), [rn(3, 4)], {}, {}),
    "Softmin": (lambda nn: nn.Softmin(0), [rn(3, 4)], {}, {}),
    "Softmax2d": (lambda nn: nn.Softmax2d(), [rn(2, 3, 2, 2)], {}, {}),
    "ZeroPad2d": (lambda nn: nn.ZeroPad2d((1, 2, 0, 1)), [rn(1, 2, 3, 3)], {}, {}),
    "ConstantPad1d": (lambda nn: nn.ConstantPad1d(2, 3.5), [rn(1, 2, 3)], {}, {}),
    "ReflectionPad2d": (lambda nn: nn.ReflectionPad2d(1), [rn(1, 2, 3, 3)], {}, {}),
    "ReplicationPad1d": (lambda nn: nn.ReplicationPad1d((1, 2)), [rn(1, 2, 3)], {}, {}),
    "CircularPad2d": (lambda nn: nn.CircularPad2d(1), [rn(1, 2, 3, 3)], {}, {}),
    "PixelShuffle": (lambda nn: nn.PixelShuffle(2), [rn(1, 8, 2, 3)], {}, {}),
    "PixelUnshuffle": (lambda nn: nn.PixelUnshuffle(2), [rn(1, 2, 4, 6)], {}, {}),
    "ChannelShuffle": (lambda nn: nn.ChannelShuffle(2), [rn(1, 4, 2, 2)], {}, {}),
    "Upsample_nearest": (lambda nn: nn.Upsample(scale_factor=2), [rn(1, 2, 3, 3)], {}, {}),
    "Upsample_nearest_size": (lambda nn: nn.Upsample(size=(5, 7)), [rn(1, 2, 3, 3)], {}, {}),
    "Upsample_bilinear": (lambda nn: nn.Upsample(scale_factor=2, mode="bilinear"),
                          [rn(1, 2, 3, 4)], {}, {}),
    "UpsamplingBilinear2d": (lambda nn: nn.UpsamplingBilinear2d(size=(5, 6)), [rn(1, 2, 3, 4)],
                             {}, {}),
    "Upsample_linear": (lambda nn: nn.Upsample(size=7, mode="linear"), [rn(1, 2, 4)], {}, {}),
    "Fold": (lambda nn: nn.Fold((4, 5), 2), [rn(2, 12, 12)], {}, {}),
    "Unfold": (lambda nn: nn.Unfold(2, padding=1), [rn(2, 3, 4, 4)], {}, {}),
    "PairwiseDistance": (lambda nn: nn.PairwiseDistance(), [rn(3, 4), rn(3, 4)], {}, {}),
    "CosineSimilarity": (lambda nn: nn.CosineSimilarity(), [rn(3, 4), rn(3, 4)], {}, {}),
    "MaxUnpool2d": (lambda nn: nn.MaxUnpool2d(2),
                    [rn(1, 2, 2, 2), lambda lib: lib.tensor(np.array(
                        [[[[0, 3], [9, 14]], [[5, 2], [8, 15]]]]))], {}, {}),
}

ACTIVATIONS = ["ReLU", "ReLU6", "Sigmoid", "Tanh", "SiLU", "Mish", "Hardswish", "Hardsigmoid",
               "ELU", "CELU", "SELU", "GELU", "LeakyReLU", "LogSigmoid", "Softplus",
               "Softshrink", "Hardshrink", "Softsign", "Tanhshrink", "Hardtanh", "GLU"]
for _a in ACTIVATIONS:
    CASES["act_" + _a] = ((lambda a: lambda nn: getattr(nn, a)())(_a), [rn(4, 6)], {}, {})
CASES["act_GELU_tanh"] = (lambda nn: nn.GELU("tanh"), [rn(4, 6)], {}, {})
CASES["act_LeakyReLU_slope"] = (lambda nn: nn.LeakyReLU(0.2), [rn(4, 6)], {}, {})
CASES["act_ELU_alpha"] = (lambda nn: nn.ELU(0.5), [rn(4, 6)], {}, {})
CASES["act_Threshold"] = (lambda nn: nn.Threshold(0.1, 20.0), [rn(4, 6)], {}, {})
CASES["act_Softplus_beta"] = (lambda nn: nn.Softplus(beta=2, threshold=5), [rn(4, 6)], {}, {})
CASES["act_RReLU_eval"] = (lambda nn: nn.RReLU(), [rn(4, 6)], {}, {"train": False})


def _softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _cls_target(n, c):
    return R.integers(0, c, n)


def const(a, rg=False):
    """An input made the same way in both libraries from one array (no gradient unless rg)."""
    a = np.asarray(a)
    return lambda lib: lib.tensor(a).requires_grad_(rg) if rg else lib.tensor(a)


LOSSES = {
    "MSELoss": (lambda nn: nn.MSELoss(), [rn(4, 3), rn(4, 3)]),
    "MSELoss_sum": (lambda nn: nn.MSELoss(reduction="sum"), [rn(4, 3), rn(4, 3)]),
    "L1Loss": (lambda nn: nn.L1Loss(reduction="none"), [rn(4, 3), rn(4, 3)]),
    "SmoothL1Loss": (lambda nn: nn.SmoothL1Loss(beta=0.5), [rn(4, 3), rn(4, 3)]),
    "HuberLoss": (lambda nn: nn.HuberLoss(delta=0.7), [rn(4, 3), rn(4, 3)]),
    "CrossEntropyLoss": (lambda nn: nn.CrossEntropyLoss(), [rn(5, 4), _cls_target(5, 4)]),
    "CrossEntropyLoss_opts": (lambda nn: nn.CrossEntropyLoss(
        weight=(tg if nn is tnn else torch).tensor([1.0, 2.0, 0.5, 1.5]), ignore_index=1,
        label_smoothing=0.1), [rn(6, 4), np.array([0, 1, 2, 3, 1, 2])]),
    "CrossEntropyLoss_probs": (lambda nn: nn.CrossEntropyLoss(),
                               [rn(3, 4), lambda lib: lib.tensor(
                                   np.full((3, 4), 0.25)).double() if lib is tg else
                                   lib.tensor(np.full((3, 4), 0.25))]),
    "CrossEntropyLoss_2d": (lambda nn: nn.CrossEntropyLoss(),
                            [rn(2, 3, 4, 4), R.integers(0, 3, (2, 4, 4))]),
    "NLLLoss": (lambda nn: nn.NLLLoss(), [rn(5, 4), _cls_target(5, 4)]),
    "BCELoss": (lambda nn: nn.BCELoss(), [R.uniform(0.05, 0.95, (4, 3)),
                                          R.uniform(0, 1, (4, 3))]),
    "BCEWithLogitsLoss": (lambda nn: nn.BCEWithLogitsLoss(), [rn(4, 3), R.uniform(0, 1, (4, 3))]),
    "KLDivLoss": (lambda nn: nn.KLDivLoss(reduction="batchmean"),
                  [rn(4, 3), R.uniform(0.1, 1, (4, 3))]),
    "KLDivLoss_logt": (lambda nn: nn.KLDivLoss(reduction="sum", log_target=True),
                       [rn(4, 3), rn(4, 3)]),
    "PoissonNLLLoss": (lambda nn: nn.PoissonNLLLoss(), [rn(4, 3), R.uniform(0, 3, (4, 3))]),
    "GaussianNLLLoss": (lambda nn: nn.GaussianNLLLoss(), [rn(4, 3), rn(4, 3),
                                                        R.uniform(0.5, 2, (4, 3))]),
    "HingeEmbeddingLoss": (lambda nn: nn.HingeEmbeddingLoss(),
                           [rn(4, 3), const(R.choice([-1.0, 1.0], (4, 3)))]),
    "SoftMarginLoss": (lambda nn: nn.SoftMarginLoss(), [rn(4, 3), const(R.choice([-1.0, 1.0], (4, 3)))]),
    "MultiLabelSoftMarginLoss": (lambda nn: nn.MultiLabelSoftMarginLoss(),
                                 [rn(4, 3), R.integers(0, 2, (4, 3))]),
    "MultiLabelMarginLoss": (lambda nn: nn.MultiLabelMarginLoss(),
                             [rn(2, 4), lambda lib: lib.tensor([[3, 0, -1, 1], [1, 2, 0, 3]])]),
    "MultiMarginLoss": (lambda nn: nn.MultiMarginLoss(p=2, margin=0.5), [rn(5, 4),
                                                                         _cls_target(5, 4)]),
    "CosineEmbeddingLoss": (lambda nn: nn.CosineEmbeddingLoss(0.2),
                            [rn(4, 3), rn(4, 3), lambda lib: lib.tensor([1, -1, 1, -1])]),
    "MarginRankingLoss": (lambda nn: nn.MarginRankingLoss(0.1),
                          [rn(4), rn(4), lambda lib: lib.tensor([1.0, -1.0, 1.0, -1.0]).double()
                           if lib is tg else lib.tensor([1.0, -1.0, 1.0, -1.0]).double()]),
    "TripletMarginLoss": (lambda nn: nn.TripletMarginLoss(), [rn(4, 3), rn(4, 3), rn(4, 3)]),
    "TripletMarginWithDistanceLoss": (lambda nn: nn.TripletMarginWithDistanceLoss(),
                                      [rn(4, 3), rn(4, 3), rn(4, 3)]),
    "CTCLoss": (lambda nn: nn.CTCLoss(),
                [np.log(_softmax(R.standard_normal((7, 2, 5)))),
                 lambda lib: lib.tensor([[1, 2, 2], [3, 1, 0]]),
                 lambda lib: lib.tensor([7, 6]), lambda lib: lib.tensor([3, 2])]),
}


for _n, (_m, _i) in LOSSES.items():
    CASES["loss_" + _n] = (_m, _i, {}, {})


@needs_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_module_matches_torch(name):
    make, inputs, kwargs, opts = CASES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_case(make, inputs, kwargs, **opts)


@needs_torch
@pytest.mark.parametrize("name", ["Linear", "Conv2d", "LSTM", "GRU", "BatchNorm2d",
                                  "MultiheadAttention", "TransformerEncoderLayer",
                                  "loss_CrossEntropyLoss", "Embedding"])
def test_module_matches_torch_float32(name):
    make, inputs, kwargs, opts = CASES[name]
    run_case(make, inputs, kwargs, dtype="float32", rtol=2e-5, atol=2e-6, **opts)
