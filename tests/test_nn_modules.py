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
    "EmbeddingBag_psw_padding_lastoffset": (
        lambda nn: nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True, padding_idx=2),
        [np.array([1, 2, 4, 5, 2, 3, 2, 9])],
        {"offsets": lambda lib: lib.tensor([0, 3, 3, 8]),
         "per_sample_weights": (lambda a: lambda lib: lib.tensor(a).requires_grad_())(
             R.uniform(0.5, 1.5, 8))}, {}),
    "EmbeddingBag_mean_padding": (lambda nn: nn.EmbeddingBag(10, 3, padding_idx=0),
                                  [np.array([[0, 1, 2], [0, 0, 0], [3, 0, 4]])], {}, {}),
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


# ----------------------------------------------------------------------------- Module API
def _capture(prog, lib):
    try:
        return prog(lib)
    except Exception as e:  # noqa: BLE001
        return ("raised", type(e).__name__, str(e).replace("tapegrad", "torch"))


def _net(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 2, 3, padding=1)
            self.bn = nn.BatchNorm2d(2)
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)] + [nn.ReLU()])
            self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Sequential(
                OrderedDict([("fc", nn.Linear(4, 1)), ("act", nn.Sigmoid())]))})
            self.scale = nn.Parameter(lib.ones(1))
            self.register_buffer("counter", lib.zeros(1))
            self.register_buffer("tmp", lib.zeros(2), persistent=False)
            self.plist = nn.ParameterList([nn.Parameter(lib.zeros(2)), lib.ones(3)])
            self.pdict = nn.ParameterDict({"w": nn.Parameter(lib.ones(2, 2))})

        def forward(self, x):
            return x

    return Net()


API_PROGS = {
    "repr_tree": lambda lib: repr(_net(lib)),
    "state_dict_keys": lambda lib: list(_net(lib).state_dict().keys()),
    "metadata": lambda lib: dict(_net(lib).state_dict()._metadata),
    "named_parameters": lambda lib: [(n, tuple(p.shape)) for n, p in _net(lib).named_parameters()],
    "named_buffers": lambda lib: [n for n, _ in _net(lib).named_buffers()],
    "named_modules": lambda lib: [(n, type(m).__name__) for n, m in _net(lib).named_modules()],
    "children": lambda lib: [type(m).__name__ for m in _net(lib).children()],
    "n_params": lambda lib: sum(p.numel() for p in _net(lib).parameters()),
    "train_eval": lambda lib: [m.training for m in _net(lib).eval().modules()]
    + [m.training for m in _net(lib).train().modules()],
    "train_nonbool": lambda lib: _net(lib).train("yes"),
    "double": lambda lib: sorted({str(p.dtype) for p in _net(lib).double().parameters()}
                                 | {str(b.dtype) for b in _net(lib).double().buffers()}),
    "to_dtype": lambda lib: str(_net(lib).to(lib.float64).bn.running_mean.dtype),
    "to_int_error": lambda lib: _net(lib).to(lib.int64),
    "double_keeps_param_objects": lambda lib: (lambda m: (lambda p: m.double().scale is p)(
        m.scale))(_net(lib)),
    "missing_unexpected": lambda lib: _net(lib).load_state_dict(
        {**{k: v for k, v in _net(lib).state_dict().items() if "conv" not in k},
         "extra.weight": lib.zeros(1)}),
    "missing_unexpected_nonstrict": lambda lib: tuple(map(sorted, _net(lib).load_state_dict(
        {**{k: v for k, v in _net(lib).state_dict().items() if "bn" not in k},
         "zzz": lib.zeros(1)}, strict=False))),
    "size_mismatch": lambda lib: _net(lib).load_state_dict(
        {**_net(lib).state_dict(), "scale": lib.zeros(2)}),
    "not_a_tensor": lambda lib: _net(lib).load_state_dict({**_net(lib).state_dict(), "scale": 3}),
    "not_a_mapping": lambda lib: _net(lib).load_state_dict([1]),
    "all_keys_matched": lambda lib: str(_net(lib).load_state_dict(_net(lib).state_dict())),
    "assign_param_type_error": lambda lib: setattr(_net(lib), "scale", lib.ones(1)),
    "assign_module_type_error": lambda lib: setattr(_net(lib), "conv", 3),
    "register_bad_name": lambda lib: _net(lib).register_buffer("a.b", lib.zeros(1)),
    "register_exists": lambda lib: _net(lib).register_parameter("bn", None),
    "add_module_not_module": lambda lib: _net(lib).add_module("x", 3),
    "getattr_missing": lambda lib: _net(lib).nope,
    "nonleaf_param": lambda lib: lib.nn.Linear(2, 2).register_parameter(
        "w", lib.nn.Parameter(lib.ones(2)) * 2),
    "sequential_slice": lambda lib: repr(lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh(),
                                                           lib.nn.Sigmoid())[1:]),
    "sequential_neg_index": lambda lib: repr(lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh())[-1]),
    "sequential_index_error": lambda lib: lib.nn.Sequential(lib.nn.ReLU())[3],
    "sequential_del": lambda lib: (lambda s: (s.__delitem__(0), repr(s))[1])(
        lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh(), lib.nn.GELU())),
    "sequential_add_mul": lambda lib: repr((lib.nn.Sequential(lib.nn.ReLU())
                                           + lib.nn.Sequential(lib.nn.Tanh())) * 2),
    "sequential_insert_append": lambda lib: repr(lib.nn.Sequential(lib.nn.ReLU()).append(
        lib.nn.Tanh()).insert(0, lib.nn.GELU())),
    "modulelist_repr_compress": lambda lib: repr(lib.nn.ModuleList(
        [lib.nn.Linear(2, 2) for _ in range(3)] + [lib.nn.ReLU()] * 2)),
    "modulelist_ops": lambda lib: (lambda ml: (ml.extend([lib.nn.Tanh()]), ml.insert(1,
                                   lib.nn.GELU()), len(ml), repr(ml[1:]), repr(ml.pop(0)))[2:])(
        lib.nn.ModuleList([lib.nn.ReLU()])),
    "moduledict_ops": lambda lib: (lambda md: (list(md.keys()), "a" in md, repr(md.pop("a")),
                                              len(md)))(
        lib.nn.ModuleDict([("a", lib.nn.ReLU()), ("b", lib.nn.Tanh())])),
    "paramlist_repr": lambda lib: repr(lib.nn.ParameterList([lib.nn.Parameter(lib.zeros(2, 3)),
                                                             lib.zeros(1)])),
    "paramdict_repr": lambda lib: repr(lib.nn.ParameterDict({"b": lib.zeros(2),
                                                             "a": lib.nn.Parameter(
                                                                 lib.ones(1, dtype=lib.float64))})),
    "paramlist_call": lambda lib: lib.nn.ParameterList()(1),
    "forward_missing": lambda lib: lib.nn.Module()(1),
    "zero_grad": lambda lib: (lambda m: ((m(lib.ones(1, 2)).sum().backward(),
                                          m.zero_grad(set_to_none=False),
                                          [p.grad.tolist() for p in m.parameters()],
                                          m.zero_grad(), [p.grad for p in m.parameters()]))[2:])(
        lib.nn.Linear(2, 1)),
    "requires_grad_": lambda lib: [p.requires_grad for p in
                                   lib.nn.Linear(2, 2).requires_grad_(False).parameters()],
    "apply": lambda lib: (lambda seen: (lib.nn.Sequential(lib.nn.Linear(1, 1), lib.nn.ReLU()).apply(
        lambda m: seen.append(type(m).__name__)), seen)[1])([]),
    "get_submodule": lambda lib: (lambda n: (repr(n.get_submodule("heads.b.fc")),
                                             tuple(n.get_parameter("heads.a.bias").shape),
                                             tuple(n.get_buffer("counter").shape)))(_net(lib)),
    "get_submodule_error": lambda lib: _net(lib).get_submodule("heads.zz"),
    "delattr": lambda lib: (lambda n: (delattr(n, "scale"), delattr(n, "counter"),
                                       list(n.state_dict().keys())[:3]))(_net(lib))[2],
    "buffer_assign": lambda lib: (lambda n: (setattr(n, "counter", lib.ones(3)),
                                             n.state_dict()["counter"].tolist()))(_net(lib))[1],
    "buffer_assign_bad": lambda lib: setattr(_net(lib), "counter", 5),
    "nn_Buffer": lambda lib: (lambda m: (setattr(m, "b", lib.nn.Buffer(lib.ones(2),
                                                                       persistent=False)),
                                         list(m.state_dict()), [n for n, _ in m.named_buffers()]))(
        lib.nn.Linear(1, 1))[1:],
    "shared_params_once": lambda lib: (lambda l: len(list(lib.nn.Sequential(l, l).parameters())))(
        lib.nn.Linear(2, 2)),
    "state_dict_keep_vars": lambda lib: [type(v).__name__ for v in
                                         lib.nn.Linear(1, 1).state_dict(keep_vars=True).values()],
    "incompatible_repr": lambda lib: repr(lib.nn.Linear(1, 1).load_state_dict(
        {"weight": lib.zeros(1, 1)}, strict=False)),
    "dir_has_params": lambda lib: "weight" in dir(lib.nn.Linear(1, 1)),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(API_PROGS))
def test_module_api_matches_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _capture(API_PROGS[name], torch)
        g = _capture(API_PROGS[name], tg)
    assert g == t


@needs_torch
def test_hooks_match_torch():
    def prog(lib):
        log = []
        m = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Tanh())
        lin = m[0]
        with torch.no_grad() if lib is torch else tg.no_grad():
            lin.weight.copy_(lib.tensor([[1.0, -0.5], [0.25, 2.0]]))
            lin.bias.zero_()
        h1 = lin.register_forward_pre_hook(lambda mod, args: log.append(("pre", len(args))))
        lin.register_forward_pre_hook(lambda mod, args, kw: ((args[0] * 2,), kw), with_kwargs=True)
        lin.register_forward_hook(lambda mod, args, out: out + 1)
        lin.register_forward_hook(lambda mod, args, kw, out: log.append(("fwd", kw)),
                                  with_kwargs=True, prepend=True)
        m[1].register_full_backward_hook(
            lambda mod, gi, go: log.append(("bwd", [round(v, 5) for v in gi[0].flatten().tolist()],
                                            [round(v, 5) for v in go[0].flatten().tolist()])))
        m[1].register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
        x = lib.tensor([[0.5, -1.0]], requires_grad=True)
        y = m(x)
        y.sum().backward()
        h1.remove()
        m(x)
        return log, [round(v, 5) for v in y.flatten().tolist()], \
            [round(v, 5) for v in x.grad.flatten().tolist()]
    assert prog(tg) == prog(torch)


@needs_torch
def test_state_dict_hooks_match_torch():
    def prog(lib):
        log = []
        m = lib.nn.Linear(1, 1)
        m.register_state_dict_pre_hook(lambda mod, prefix, keep: log.append(("pre", prefix)))
        m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: log.append(("post",
                                                                                   list(sd))))
        m.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *a: log.append(("lpre",
                                                                                     list(sd))))
        m.register_load_state_dict_post_hook(lambda mod, keys: log.append(("lpost", keys)))
        m.load_state_dict(m.state_dict())
        return [(a, b if a != "lpost" else (b.missing_keys, b.unexpected_keys)) for a, b in log]
    assert prog(tg) == prog(torch)


def test_deepcopy_and_pickle_keep_parameters():
    m = tnn.Sequential(tnn.Linear(3, 2), tnn.BatchNorm1d(2))
    m2 = copy.deepcopy(m)
    assert all(isinstance(p, tnn.Parameter) for p in m2.parameters())
    assert all(p is not q for p, q in zip(m.parameters(), m2.parameters()))
    m3 = pickle.loads(pickle.dumps(m))
    x = tg.randn(4, 3)
    np.testing.assert_array_equal(_np(m3(x)), _np(m(x)))


def test_default_init_bounds_without_torch():
    tg.manual_seed(0)
    lin = tnn.Linear(100, 50)
    b = 1 / math.sqrt(100)
    assert float(lin.weight.abs().max()) <= b and float(lin.bias.abs().max()) <= b
    conv = tnn.Conv2d(3, 4, 5)
    b = 1 / math.sqrt(3 * 25)
    assert float(conv.weight.abs().max()) <= b
    lstm = tnn.LSTM(10, 20)
    assert all(float(p.abs().max()) <= 1 / math.sqrt(20) for p in lstm.parameters())
    emb = tnn.Embedding(1000, 8, padding_idx=3)
    assert abs(float(emb.weight.std()) - 1) < 0.1 and emb.weight[3].abs().sum().item() == 0
    bn = tnn.BatchNorm1d(4)
    assert bn.weight.tolist() == [1.0] * 4 and bn.bias.tolist() == [0.0] * 4


def test_linear_and_lstm_gradients_by_finite_differences():
    """Without torch: module gradients against central differences (float64)."""
    tg.manual_seed(0)
    for make, x in ((lambda: tnn.Linear(3, 2), np.random.default_rng(1).standard_normal((4, 3))),
                    (lambda: tnn.LSTM(3, 2), np.random.default_rng(2).standard_normal((5, 2, 3))),
                    (lambda: tnn.GRU(3, 2, bidirectional=True),
                     np.random.default_rng(3).standard_normal((4, 1, 3))),
                    (lambda: tnn.MultiheadAttention(4, 2),
                     np.random.default_rng(4).standard_normal((3, 2, 4)))):
        m = make().double()
        xs = tg.tensor(x)

        def f():
            o = m(xs, xs, xs) if isinstance(m, tnn.MultiheadAttention) else m(xs)
            o = o[0] if isinstance(o, tuple) else o
            return (o * o).sum()
        f().backward()
        for p in m.parameters():
            g = _np(p.grad).reshape(-1)
            flat = p.detach().numpy().reshape(-1)
            for k in range(min(flat.size, 4)):
                old = flat[k]
                with tg.no_grad():
                    flat[k] = old + 1e-6
                    up = float(f())
                    flat[k] = old - 1e-6
                    dn = float(f())
                    flat[k] = old
                assert abs((up - dn) / 2e-6 - g[k]) < 1e-5 * max(1, abs(g[k])), (type(m), k)


def test_batchnorm_running_stats_numpy():
    bn = tnn.BatchNorm1d(3, momentum=0.2)
    x = np.random.default_rng(0).standard_normal((8, 3))
    bn(tg.tensor(x.astype(np.float32)))
    np.testing.assert_allclose(_np(bn.running_mean), 0.2 * x.mean(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(bn.running_var), 0.8 + 0.2 * x.var(0, ddof=1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    y = bn(tg.tensor(x.astype(np.float32)))
    ref = (x - _np(bn.running_mean)) / np.sqrt(_np(bn.running_var) + 1e-5)
    np.testing.assert_allclose(_np(y), ref, rtol=1e-5, atol=1e-5)


def test_dropout_train_eval():
    d = tnn.Dropout(0.5)
    x = tg.ones(1000)
    y = d(x)
    vals = set(np.unique(_np(y)).tolist())
    assert vals <= {0.0, 2.0} and 300 < int((y == 0).sum()) < 700
    d.eval()
    assert d(x) is x


def test_recurrent_layers_fused_and_stepwise_paths_agree():
    """The fused layer Function (numpy BPTT) against the op-by-op path (taken for packed
    sequences): all lengths equal, so both compute the same thing."""
    from tapegrad.nn.utils.rnn import pack_padded_sequence
    tg.manual_seed(0)
    for make in (lambda: tnn.LSTM(3, 4, num_layers=2, bidirectional=True),
                 lambda: tnn.GRU(3, 4, bidirectional=True), lambda: tnn.RNN(3, 4)):
        m = make().double()
        x = tg.tensor(np.random.default_rng(5).standard_normal((6, 2, 3)), requires_grad=True)
        out, _ = m(x)
        (out * out).sum().backward()
        g1 = [_np(p.grad).copy() for p in m.parameters()] + [_np(x.grad).copy()]
        m.zero_grad()
        x.grad = None
        packed, _ = m(pack_padded_sequence(x, [6, 6]))
        (packed.data * packed.data).sum().backward()
        g2 = [_np(p.grad) for p in m.parameters()] + [_np(x.grad)]
        np.testing.assert_allclose(_np(packed.data).reshape(6, 2, -1), _np(out), rtol=1e-12)
        for a, b in zip(g1, g2):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_double_backward_through_recurrent_layer_raises():
    m = tnn.LSTM(2, 3)
    out, _ = m(tg.randn(4, 1, 2))
    g = tg.autograd.grad(out.sum(), m.weight_ih_l0, create_graph=True)[0]
    with pytest.raises(RuntimeError):
        g.sum().backward()
