"""tapegrad/nn/_fused.py: the one-entry layer_norm and scaled-dot-product attention against
torch (values, gradients, grad_fn graphs, double backward, errors) and finite differences."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.func as tf
from oracle import data, fdcheck, graph, leaf, same


def _grads(lib, y, *xs):
    w = lib.tensor(np.resize(np.array(data((97,), 0.5, 1.5, seed=3)), tuple(y.shape)).tolist(),
                   dtype=y.dtype)
    want = [x for x in xs if x.requires_grad]
    return lib.autograd.grad((y * w).sum(), want, allow_unused=True)


LN = {
    "affine": lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (4,), w, b),
    "no_affine": lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (4,)),
    "weight_only": lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (4,), weight=w),
    "bias_only": lambda lib, x, w, b: lib.nn.functional.layer_norm(x, (4,), bias=b, eps=1e-2),
    "two_dims": lambda lib, x, w, b: lib.nn.functional.layer_norm(
        x, (3, 4), w.reshape(1, 4).expand(3, 4) * 1.0, b.reshape(1, 4).expand(3, 4) * 1.0),
    "module": lambda lib, x, w, b: _ln_module(lib, w, b)(x),
    "one_row": lambda lib, x, w, b: lib.nn.functional.layer_norm(x[0, 0], (4,), w, b),
}


def _ln_module(lib, w, b):
    m = lib.nn.LayerNorm(4, dtype=w.dtype)
    with lib.no_grad():
        m.weight.copy_(w)
        m.bias.copy_(b)
    return m


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(LN))
def test_layer_norm_vs_torch(name, dtype):
    def prog(lib):
        x = leaf(lib, data((2, 3, 4)), dtype)
        w = leaf(lib, data((4,), 0.5, 1.5, seed=1), dtype)
        b = leaf(lib, data((4,), seed=2), dtype)
        y = LN[name](lib, x, w, b)
        return y, graph(y.grad_fn), _grads(lib, y, x, w, b)
    same(prog)


@pytest.mark.parametrize("name", sorted(set(LN) - {"module"}))   # (its parameters need grad)
def test_layer_norm_finite_differences(name):
    fdcheck(lambda x, w, b: LN[name](tg, x, w, b),
            [np.array(data((2, 3, 4))), np.array(data((4,), 0.5, 1.5, seed=1)),
             np.array(data((4,), seed=2))], rtol=1e-5, atol=1e-6)


def test_layer_norm_is_one_entry():
    x = tg.randn(5, 8, requires_grad=True)
    y = tg.nn.functional.layer_norm(x, (8,), tg.ones(8, requires_grad=True), tg.zeros(8))
    assert y.grad_fn.name() == "NativeLayerNormBackward0"
    # the node's inputs are the input, weight and bias (torch's), not intermediates
    assert graph(y.grad_fn) == "NativeLayerNormBackward0(AccumulateGrad, AccumulateGrad, None)"


def test_layer_norm_double_backward_vs_torch():
    def prog(lib):
        w = leaf(lib, data((3, 4), 0.5, 1.5), "float64")
        z = lib.nn.functional.layer_norm(w.exp(), (4,), w[0].cos(), w[1])
        g, = lib.autograd.grad((z ** 3).sum(), w, create_graph=True)
        h, = lib.autograd.grad((g ** 2).sum(), w)
        return g, h
    same(prog)


def test_layer_norm_inplace_after_use_raises_as_torch():
    def prog(lib):
        x = leaf(lib, data((2, 4)), "float64")
        h = x * 1.0
        y = lib.nn.functional.layer_norm(h, (4,))
        h.mul_(2.0)
        y.sum().backward()
        return x.grad
    same(prog)


def test_layer_norm_without_grad_and_in_func():
    x = np.array(data((3, 4)), np.float32)
    w = np.array(data((4,), 0.5, 1.5, seed=1), np.float32)
    plain = tg.nn.functional.layer_norm(tg.tensor(x), (4,), tg.tensor(w))
    xt = tg.tensor(x, requires_grad=True)
    fused = tg.nn.functional.layer_norm(xt, (4,), tg.tensor(w))
    np.testing.assert_allclose(plain.numpy(), fused.detach().numpy(), rtol=1e-6, atol=1e-6)
    fused.sum().backward()
    # tapegrad.func records the composition (replayable): same gradient
    g = tf.grad(lambda a: (tg.nn.functional.layer_norm(a, (4,), tg.tensor(w)) ** 2).sum())
    eager = tg.tensor(x, requires_grad=True)
    (tg.nn.functional.layer_norm(eager, (4,), tg.tensor(w)) ** 2).sum().backward()
    np.testing.assert_allclose(g(tg.tensor(x)).numpy(), eager.grad.numpy(), rtol=1e-5,
                               atol=1e-6)


def _mask(lib, kind, L, S):
    if kind == "bool":
        return lib.tensor(np.tril(np.ones((L, S), bool), 1))
    if kind == "float":
        return lib.tensor(np.array(data((L, S), -1.0, 1.0, seed=4)))
    if kind == "float4d":
        return lib.tensor(np.array(data((2, 1, L, S), -1.0, 1.0, seed=5)))
    return None


SDPA = {
    "plain": dict(),
    "causal": dict(is_causal=True),
    "bool_mask": dict(mask="bool"),
    "float_mask": dict(mask="float"),
    "float_mask_4d": dict(mask="float4d"),
    "scale": dict(scale=0.3),
    "longer_keys": dict(S=7),
}


def _sdpa(lib, q, k, v, case, dtype):
    L, S = q.shape[-2], k.shape[-2]
    m = _mask(lib, case.get("mask"), L, S)
    if m is not None and m.dtype != lib.bool:
        m = m.to(getattr(lib, dtype))
    return lib.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=m, is_causal=case.get("is_causal", False), scale=case.get("scale"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(SDPA))
def test_sdpa_vs_torch(name, dtype):
    case = SDPA[name]
    S = case.get("S", 5)

    def prog(lib):
        q = leaf(lib, data((2, 3, 5, 4)), dtype)
        k = leaf(lib, data((2, 3, S, 4), seed=1), dtype)
        v = leaf(lib, data((2, 3, S, 4), seed=2), dtype)
        y = _sdpa(lib, q, k, v, case, dtype)
        return y, graph(y.grad_fn), _grads(lib, y, q, k, v)
    same(prog)


@pytest.mark.parametrize("name", sorted(SDPA))
def test_sdpa_finite_differences(name):
    case = SDPA[name]
    S = case.get("S", 5)
    fdcheck(lambda q, k, v: _sdpa(tg, q, k, v, case, "float64"),
            [np.array(data((2, 3, 5, 4))), np.array(data((2, 3, S, 4), seed=1)),
             np.array(data((2, 3, S, 4), seed=2))], rtol=1e-5, atol=1e-6)


def test_sdpa_fallbacks_vs_torch():
    # shapes torch's flash kernel refuses: 3-D inputs, a broadcast head dim, other value
    # dims, a transposed (non-unit last stride) input, a mask that needs a gradient
    def prog(lib):
        x = leaf(lib, data((2, 3, 5, 4)), "float64")
        m = leaf(lib, data((5, 5), seed=3), "float64")
        F = lib.nn.functional
        outs = [F.scaled_dot_product_attention(x[0], x[0], x[0]),
                F.scaled_dot_product_attention(x[:, :1], x, x),
                F.scaled_dot_product_attention(x, x, x[..., :2]),
                F.scaled_dot_product_attention(x.transpose(-1, -2), x.transpose(-1, -2),
                                               x.transpose(-1, -2)),
                F.scaled_dot_product_attention(x, x, x, attn_mask=m)]
        return [(o, o.grad_fn.name(), _grads(lib, o, x, m)) for o in outs]
    same(prog)


def test_sdpa_double_backward_raises_as_torch():
    def prog(lib):
        x = leaf(lib, data((2, 3, 5, 4)), "float64")
        y = lib.nn.functional.scaled_dot_product_attention(x, x * 0.5, x.sin(), is_causal=True)
        g, = lib.autograd.grad((y ** 2).sum(), x, create_graph=True)
        h, = lib.autograd.grad((g ** 2).sum(), x)
        return h
    same(prog, phrases=("derivative for aten::_scaled_dot_product_flash_attention_for_cpu"
                        "_backward is not implemented",))


def test_sdpa_in_func_matches_eager():
    q = np.array(data((1, 2, 4, 3)), np.float64)

    def f(a):
        return (tg.nn.functional.scaled_dot_product_attention(a, a * 0.5, a, is_causal=True)
                ** 2).sum()
    eager = tg.tensor(q, requires_grad=True)
    f(eager).backward()
    np.testing.assert_allclose(tf.grad(f)(tg.tensor(q)).numpy(), eager.grad.numpy(),
                               rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("masks", ["causal", "attn_mask", "key_padding", "both"])
def test_mha_without_weights_vs_torch(masks):
    def prog(lib):
        lib.manual_seed(0)
        m = lib.nn.MultiheadAttention(8, 2, batch_first=True, dtype=lib.float64)
        with lib.no_grad():
            for i, p in enumerate(m.parameters()):
                p.copy_(lib.tensor(np.sin(np.arange(p.numel()) * (i + 1.3)).reshape(
                    tuple(p.shape))))
        x = leaf(lib, data((3, 5, 8)), "float64")
        causal = lib.nn.Transformer.generate_square_subsequent_mask(5, dtype=lib.float64)
        kpm = lib.tensor(np.array([[False] * 5, [False] * 4 + [True], [False] * 3 + [True] * 2]))
        kw = {"causal": dict(attn_mask=causal, is_causal=True),
              "attn_mask": dict(attn_mask=causal),
              "key_padding": dict(key_padding_mask=kpm),
              "both": dict(attn_mask=causal, key_padding_mask=kpm)}[masks]
        y = m(x, x, x, need_weights=False, **kw)[0]
        return y, _grads(lib, y, x, *m.parameters())
    same(prog)


def test_transformer_layer_step_vs_torch():
    def prog(lib):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True,
                                               dtype=lib.float64)
        with lib.no_grad():
            for i, p in enumerate(layer.parameters()):
                p.copy_(lib.tensor(np.cos(np.arange(p.numel()) * (i + 0.7)).reshape(
                    tuple(p.shape)) * 0.5))
        x = leaf(lib, data((2, 6, 8)), "float64")
        mask = lib.nn.Transformer.generate_square_subsequent_mask(6, dtype=lib.float64)
        y = layer(x, src_mask=mask, is_causal=True)
        return y, _grads(lib, y, x, *layer.parameters())
    same(prog)


CONV = {
    "plain": dict(),
    "padding": dict(padding=1),
    "stride": dict(stride=2),
    "mixed": dict(stride=(2, 1), padding=(1, 2), dilation=(2, 1)),
    "same": dict(padding="same"),
    "no_bias": dict(bias=False),
}


def _conv(lib, x, w, b, case):
    kw = dict(case)
    with_bias = kw.pop("bias", True)
    return lib.nn.functional.conv2d(x, w, b if with_bias else None, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CONV))
def test_conv2d_vs_torch(name, dtype):
    def prog(lib):
        import warnings
        x = leaf(lib, data((2, 3, 7, 6)), dtype)
        w = leaf(lib, data((4, 3, 3, 2), seed=1), dtype)
        b = leaf(lib, data((4,), seed=2), dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = _conv(lib, x, w, b, CONV[name])
        return y, graph(y.grad_fn), _grads(lib, y, x, w, b)
    same(prog)


@pytest.mark.parametrize("name", sorted(CONV))
def test_conv2d_finite_differences(name):
    fdcheck(lambda x, w, b: _conv(tg, x, w, b, CONV[name]),
            [np.array(data((1, 2, 5, 4))), np.array(data((3, 2, 3, 2), seed=1)),
             np.array(data((3,), seed=2))], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["plain", "mixed"])
def test_conv2d_double_backward_vs_torch(name):
    def prog(lib):
        x = leaf(lib, data((2, 3, 7, 6)), "float64")
        w = leaf(lib, data((4, 3, 3, 2), seed=1), "float64")
        b = leaf(lib, data((4,), seed=2), "float64")
        y = _conv(lib, x, w, b, CONV[name])
        gs = lib.autograd.grad((y * y.detach().cos()).sum(), [x, w, b], create_graph=True)
        # (the first gradients' own node names are not torch's ConvolutionBackwardBackward0:
        # their values and their derivatives are compared)
        h = lib.autograd.grad(sum((t ** 2).sum() for t in gs), [x, w])
        return [t.detach() for t in gs], h
    same(prog)


def test_unfused_compositions_agree():
    """TAPEGRAD_NN_FUSED=0 (ENABLED[0] False): the compositions give the same values and
    gradients as the fused entries."""
    from tapegrad.nn import _fused
    x = np.array(data((2, 4, 6)), np.float64)

    def run():
        t = tg.tensor(x, requires_grad=True)
        lin = tg.nn.functional.linear(t, tg.tensor(np.array(data((5, 6), seed=1))),
                                      tg.tensor(np.array(data((5,), seed=2))))
        ln = tg.nn.functional.layer_norm(lin, (5,))
        q = ln.reshape(2, 1, 4, 5)
        at = tg.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        c = tg.nn.functional.conv2d(at, tg.tensor(np.array(data((2, 1, 2, 2), seed=3))))
        c.pow(2).sum().backward()
        return c.detach().numpy(), t.grad.numpy()
    fused = run()
    _fused.ENABLED[0] = False
    try:
        plain = run()
    finally:
        _fused.ENABLED[0] = True
    for a, b in zip(fused, plain):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
