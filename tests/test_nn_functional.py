"""torch.nn.functional against torch (values, gradients, grad_fn names) and finite differences."""
import numpy as np
import pytest

import tapegrad as tg
from oracle import data, fdcheck, leaf, same

X = data((4, 5), seed=21)
T = data((4, 5), seed=22)
P = data((4, 5), 0.05, 0.95, seed=23)
TGT = [0, 3, 4, 1]

ACT = {
    "relu": lambda F, lib, x: F.relu(x),
    "leaky_relu": lambda F, lib, x: F.leaky_relu(x),
    "leaky_relu_slope": lambda F, lib, x: F.leaky_relu(x, 0.2),
    "elu": lambda F, lib, x: F.elu(x),
    "elu_alpha": lambda F, lib, x: F.elu(x, alpha=0.5),
    "gelu": lambda F, lib, x: F.gelu(x),
    "gelu_tanh": lambda F, lib, x: F.gelu(x, approximate="tanh"),
    "silu": lambda F, lib, x: F.silu(x),
    "softplus": lambda F, lib, x: F.softplus(x),
    "softplus_beta": lambda F, lib, x: F.softplus(x * 10, beta=2.0),
    "sigmoid": lambda F, lib, x: F.sigmoid(x),
    "tanh": lambda F, lib, x: F.tanh(x),
    "logsigmoid": lambda F, lib, x: F.logsigmoid(x),
    "softmax": lambda F, lib, x: F.softmax(x, dim=1),
    "softmax0": lambda F, lib, x: F.softmax(x, 0),
    "softmax_method": lambda F, lib, x: x.softmax(-1),
    "torch_softmax": lambda F, lib, x: lib.softmax(x, 1),
    "log_softmax": lambda F, lib, x: F.log_softmax(x, dim=1),
    "log_softmax0": lambda F, lib, x: lib.log_softmax(x, 0),
    "linear": lambda F, lib, x: F.linear(x, x[:3] * 0.5),
    "linear_bias": lambda F, lib, x: F.linear(x, x[:3] * 0.5, x[0, :3]),
    "linear_1d": lambda F, lib, x: F.linear(x[0], x[:3] * 0.5, x[1, :3]),
    "linear_3d": lambda F, lib, x: F.linear(x.reshape(2, 2, 5), x[:3] * 0.5, x[1, :3]),
    "dropout_eval": lambda F, lib, x: F.dropout(x * 1, 0.5, training=False),
    "dropout_p0": lambda F, lib, x: F.dropout(x * 1, 0.0),
    "mse": lambda F, lib, x: F.mse_loss(x, x.detach() * 0 + lib.tensor(T, dtype=x.dtype)),
    "mse_sum": lambda F, lib, x: F.mse_loss(x, lib.tensor(T, dtype=x.dtype), reduction="sum"),
    "mse_none": lambda F, lib, x: F.mse_loss(x, lib.tensor(T, dtype=x.dtype), reduction="none"),
    "l1": lambda F, lib, x: F.l1_loss(x, lib.tensor(T, dtype=x.dtype)),
    "l1_none": lambda F, lib, x: F.l1_loss(x, lib.tensor(T, dtype=x.dtype), reduction="none"),
    "l1_sum": lambda F, lib, x: F.l1_loss(x, lib.tensor(T, dtype=x.dtype), reduction="sum"),
    "smooth_l1": lambda F, lib, x: F.smooth_l1_loss(x, lib.tensor(T, dtype=x.dtype)),
    "smooth_l1_beta": lambda F, lib, x: F.smooth_l1_loss(x, lib.tensor(T, dtype=x.dtype), beta=0.5,
                                                         reduction="none"),
    "huber": lambda F, lib, x: F.huber_loss(x, lib.tensor(T, dtype=x.dtype), delta=0.7),
    "cross_entropy": lambda F, lib, x: F.cross_entropy(x, lib.tensor(TGT)),
    "cross_entropy_sum": lambda F, lib, x: F.cross_entropy(x, lib.tensor(TGT), reduction="sum"),
    "cross_entropy_none": lambda F, lib, x: F.cross_entropy(x, lib.tensor(TGT), reduction="none"),
    "cross_entropy_w": lambda F, lib, x: F.cross_entropy(
        x, lib.tensor(TGT), weight=lib.tensor([1.0, 2.0, 0.5, 1.5, 3.0], dtype=x.dtype)),
    "cross_entropy_ignore": lambda F, lib, x: F.cross_entropy(x, lib.tensor([0, -100, 4, 1])),
    "cross_entropy_prob": lambda F, lib, x: F.cross_entropy(
        x, lib.softmax(lib.tensor(T, dtype=x.dtype), 1)),
    "cross_entropy_smooth": lambda F, lib, x: F.cross_entropy(x, lib.tensor(TGT), label_smoothing=0.1),
    "cross_entropy_1d": lambda F, lib, x: F.cross_entropy(x[0], lib.tensor(2)),
    "cross_entropy_3d": lambda F, lib, x: F.cross_entropy(x.reshape(2, 5, 2), lib.tensor([[0, 1], [4, 2]])),
    "nll": lambda F, lib, x: F.nll_loss(F.log_softmax(x, 1), lib.tensor(TGT)),
    "nll_raw": lambda F, lib, x: F.nll_loss(x, lib.tensor(TGT), reduction="none"),
    "nll_w_sum": lambda F, lib, x: F.nll_loss(x, lib.tensor(TGT), reduction="sum",
                                              weight=lib.tensor([1.0, 2.0, 0.5, 1.5, 3.0], dtype=x.dtype)),
    "bce": lambda F, lib, x: F.binary_cross_entropy(x.sigmoid(), lib.tensor(P, dtype=x.dtype)),
    "bce_none": lambda F, lib, x: F.binary_cross_entropy(x.sigmoid(), lib.tensor(P, dtype=x.dtype),
                                                         reduction="none"),
    "bce_w": lambda F, lib, x: F.binary_cross_entropy(x.sigmoid(), lib.tensor(P, dtype=x.dtype),
                                                      weight=lib.tensor(P, dtype=x.dtype), reduction="sum"),
    "bce_logits": lambda F, lib, x: F.binary_cross_entropy_with_logits(x, lib.tensor(P, dtype=x.dtype)),
    "bce_logits_none": lambda F, lib, x: F.binary_cross_entropy_with_logits(
        x, lib.tensor(P, dtype=x.dtype), reduction="none"),
    "bce_logits_pos": lambda F, lib, x: F.binary_cross_entropy_with_logits(
        x, lib.tensor(P, dtype=x.dtype), pos_weight=lib.tensor([1.0, 2.0, 3.0, 0.5, 1.0], dtype=x.dtype)),
    "normalize": lambda F, lib, x: F.normalize(x, dim=1),
    "one_hot_mul": lambda F, lib, x: x * F.one_hot(lib.tensor([0, 1, 4, 2]), 5),
    "pad": lambda F, lib, x: F.pad(x, (1, 2)),
    "cosine_similarity": lambda F, lib, x: F.cosine_similarity(x, x.flip(0)),
}
NO_NEXT = {"linear_bias", "mse", "mse_sum", "mse_none", "smooth_l1", "smooth_l1_beta", "huber",
           "bce", "bce_none", "bce_w", "bce_logits", "bce_logits_none", "bce_logits_pos",
           "cross_entropy_3d", "pad"}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(ACT))
def test_functional_vs_torch(name, dtype):
    f = ACT[name]

    def prog(lib):
        F = lib.nn.functional
        x = leaf(lib, X, dtype)
        y = f(F, lib, x)
        w = lib.tensor(np.resize(np.array(data((20,), 0.5, 1.5, seed=3)), tuple(y.shape)).tolist(),
                       dtype=getattr(lib, dtype))
        (y * w).sum().backward()
        nexts = [None if n is None else type(n).__name__ for n, _ in y.grad_fn.next_functions]
        return y, x.grad, (nexts[:1] if name not in NO_NEXT else None)
    same(prog)


@pytest.mark.parametrize("name", sorted(ACT))
def test_functional_finite_differences(name):
    f = ACT[name]
    fdcheck(lambda x: f(tg.nn.functional, tg, x), [np.array(X)], rtol=1e-5, atol=1e-6)


def test_dropout_training_statistics_and_gradient():
    tg.manual_seed(0)
    x = tg.ones(200, 50, requires_grad=True)
    y = tg.nn.functional.dropout(x, 0.3)
    kept = y.detach().numpy() != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(y.detach().numpy()[kept], 1 / 0.7, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.7, rtol=1e-6)
    assert y.grad_fn.name() == "MulBackward0"
    z = tg.nn.functional.dropout(x, 1.0)
    assert float(z.abs().sum()) == 0.0
    assert tg.nn.functional.dropout(x, 0.5, training=False) is x


def test_loss_errors():
    def prog(lib):
        F = lib.nn.functional
        out = []
        for f in (lambda: F.cross_entropy(lib.ones(3, 4), lib.tensor([0, 5, 1])),
                  lambda: F.nll_loss(lib.ones(3, 4), lib.tensor([0, 1])),
                  lambda: F.binary_cross_entropy(lib.tensor([1.5]), lib.tensor([1.0])),
                  lambda: F.mse_loss(lib.ones(3), lib.ones(3), reduction="avg"),
                  lambda: F.binary_cross_entropy_with_logits(lib.ones(3), lib.ones(4)),
                  lambda: F.softmax(lib.tensor([1, 2]), 0)):
            try:
                f()
                out.append(None)
            except Exception as e:  # noqa: BLE001 - the types are compared
                out.append(type(e).__name__)
        return out
    same(prog)


def test_softmax_is_stable_and_sums_to_one():
    def prog(lib):
        x = lib.tensor([[1000.0, 0.0, -1000.0], [float("-inf"), 0.0, 1.0]], requires_grad=True)
        y = lib.nn.functional.softmax(x, 1)
        z = lib.nn.functional.log_softmax(x[:1], 1)
        (y[:, 1].sum() + z[0, 1]).backward()
        return y, z, x.grad
    same(prog)


def test_second_order_through_losses():
    rng = np.random.default_rng(2)
    v = rng.standard_normal((3, 4))
    F = tg.nn.functional
    for f in (lambda x: F.cross_entropy(x, tg.tensor([0, 3, 1])),
              lambda x: F.mse_loss(x.tanh(), tg.tensor(v, dtype=tg.float64) * 0.5),
              lambda x: F.binary_cross_entropy_with_logits(x, tg.tensor(np.abs(v) / 3)),
              lambda x: F.log_softmax(x, 1).sum() + F.softmax(x, 0)[0].sum()):
        x = tg.tensor(v, dtype=tg.float64, requires_grad=True)
        (g,) = tg.autograd.grad(f(x), x, create_graph=True)
        (h,) = tg.autograd.grad((g * g).sum(), x)

        def gg(a):
            xx = tg.tensor(a, dtype=tg.float64, requires_grad=True)
            (g1,) = tg.autograd.grad(f(xx), xx)
            return float((g1.numpy() ** 2).sum())
        want = np.zeros_like(v)
        for i in range(v.size):
            e = np.zeros(v.size)
            e[i] = 1e-6
            e = e.reshape(v.shape)
            want.reshape(-1)[i] = (gg(v + e) - gg(v - e)) / 2e-6
        np.testing.assert_allclose(h.numpy(), want, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- loss graphs
LOSS_GRAPHS = {
    "mse": lambda F, x, t, p, q, c: F.mse_loss(x, t),
    "mse_none": lambda F, x, t, p, q, c: F.mse_loss(x, t, reduction="none"),
    "mse_sum_both": lambda F, x, t, p, q, c: F.mse_loss(x, q, reduction="sum"),
    "mse_target_only": lambda F, x, t, p, q, c: F.mse_loss(t, q),
    "l1": lambda F, x, t, p, q, c: F.l1_loss(x, t),
    "l1_none_both": lambda F, x, t, p, q, c: F.l1_loss(x, q, reduction="none"),
    "smooth_l1": lambda F, x, t, p, q, c: F.smooth_l1_loss(x, t),
    "smooth_l1_both_beta": lambda F, x, t, p, q, c: F.smooth_l1_loss(x, q, beta=2.0),
    "smooth_l1_none": lambda F, x, t, p, q, c: F.smooth_l1_loss(x, t, reduction="none"),
    "huber": lambda F, x, t, p, q, c: F.huber_loss(x, t, delta=0.5),
    "cross_entropy": lambda F, x, t, p, q, c: F.cross_entropy(x, c),
    "cross_entropy_none": lambda F, x, t, p, q, c: F.cross_entropy(x, c, reduction="none"),
    "cross_entropy_probs": lambda F, x, t, p, q, c: F.cross_entropy(x, t.softmax(1)),
    "cross_entropy_smooth": lambda F, x, t, p, q, c: F.cross_entropy(x, c, label_smoothing=0.1),
    "nll": lambda F, x, t, p, q, c: F.nll_loss(x, c, reduction="sum"),
    "bce": lambda F, x, t, p, q, c: F.binary_cross_entropy(p, t.sigmoid()),
    "bce_none_weight": lambda F, x, t, p, q, c: F.binary_cross_entropy(p, t.sigmoid(), weight=t.abs(),
                                                                       reduction="none"),
    "bce_both": lambda F, x, t, p, q, c: F.binary_cross_entropy(p, q.sigmoid()),
    "bce_logits": lambda F, x, t, p, q, c: F.binary_cross_entropy_with_logits(x, t.sigmoid()),
    "bce_logits_none": lambda F, x, t, p, q, c: F.binary_cross_entropy_with_logits(
        x, t.sigmoid(), reduction="none"),
    "bce_logits_pos_weight": lambda F, x, t, p, q, c: F.binary_cross_entropy_with_logits(
        x, t.sigmoid(), pos_weight=t[0].abs()),
    "bce_logits_target_grad": lambda F, x, t, p, q, c: F.binary_cross_entropy_with_logits(
        x, p),
    "masked_fill_value_grad": lambda F, x, t, p, q, c: x.masked_fill(t > 0, q.sum()),
    "masked_fill_number": lambda F, x, t, p, q, c: x.masked_fill(t > 0, 2.0),
}


@pytest.mark.parametrize("name", sorted(LOSS_GRAPHS))
def test_loss_graph_vs_torch(name):
    """Node names and next_functions of the losses (input and target slots) as torch, and the
    gradients of both arguments."""
    from oracle import graph
    f = LOSS_GRAPHS[name]

    def prog(lib):
        x = leaf(lib, data((4, 3), seed=1))
        t = leaf(lib, data((4, 3), seed=2), rg=False)
        p = leaf(lib, data((4, 3), 0.05, 0.95, seed=3))
        q = leaf(lib, data((4, 3), seed=4))
        c = lib.tensor([0, 2, 1, 0])
        y = f(lib.nn.functional, x, t, p, q, c)
        y.sum().backward()
        return graph(y.grad_fn), y, x.grad, p.grad, q.grad
    same(prog)


# ----------------------------------------------------------------------------- softplus
SOFTPLUS_X = [-30., -3., -0.5, 0., 0.2, 0.5, 0.75, 1.0, 2.0, 11.0, 21.0, 24.0, 26.0, 40.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("beta, threshold", [(1.0, 20.0), (1.0, 1.0), (2.0, 0.5), (0.5, 30.0),
                                             (1.0, 25.0), (3.0, -1.0), (1.5, 5.0)])
def test_softplus_threshold_vs_torch(beta, threshold, dtype):
    from oracle import graph

    def prog(lib):
        x = leaf(lib, SOFTPLUS_X, dtype)
        y = lib.nn.functional.softplus(x, beta=beta, threshold=threshold)
        (y * lib.arange(1.0, 15.0, dtype=x.dtype)).sum().backward()
        return graph(y.grad_fn), y, x.grad
    same(prog)


@pytest.mark.parametrize("beta, threshold", [(1.0, 1.0), (2.0, 0.5), (0.5, 30.0), (1.5, 5.0)])
def test_softplus_threshold_finite_differences(beta, threshold):
    x = np.array([v for v in SOFTPLUS_X if abs(v * beta - threshold) > 1e-3])
    fdcheck(lambda t: tg.nn.functional.softplus(t, beta, threshold), [x])
    want = np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)
    got = tg.nn.functional.softplus(tg.tensor(x, dtype=tg.float64), beta, threshold).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-14)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_rows_one_entry_and_non_finite_rows_as_torch(name):
    """softmax / log_softmax over the last dimension record one row-wise entry (grad_fn
    SoftmaxBackward0 / LogSoftmaxBackward0 straight on the input). Rows holding +inf or nan,
    or only -inf, give nan as torch does (the shift is the row maximum); -inf next to finite
    values gives 0 / -inf there. Eager, a compiled replay and a batched vmap all agree with
    a numpy reference of torch's formula, values and gradients."""
    import warnings
    from tapegrad import func as tf
    from tapegrad._core.tape import recording, replay
    inf, nan = float("inf"), float("nan")
    a = np.array([[1.0, 2.0, 3.0], [inf, 1.0, 0.0], [-inf, -inf, -inf], [nan, 1.0, 2.0],
                  [-inf, 0.0, 1.0], [0.5, -0.25, 0.0]])
    g = np.arange(a.size, dtype=float).reshape(a.shape) / 7
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = a - a.max(axis=1, keepdims=True)
        e = np.exp(z)
        s = e.sum(axis=1, keepdims=True)
        if name == "softmax":
            want_y = e / s
            want_g = want_y * (g - (g * want_y).sum(axis=1, keepdims=True))
        else:
            want_y = z - np.log(s)
            want_g = g - np.exp(want_y) * g.sum(axis=1, keepdims=True)
        F = getattr(tg.nn.functional, name)
        x = tg.tensor(a, dtype=tg.float64, requires_grad=True)
        y = F(x, -1)
        assert type(y.grad_fn).__name__ == ("SoftmaxBackward0" if name == "softmax"
                                            else "LogSoftmaxBackward0")
        assert y.grad_fn.next_functions[0][0].variable is x
        y.backward(tg.tensor(g))
        close = dict(rtol=1e-12, atol=1e-12, equal_nan=True)
        np.testing.assert_allclose(y.detach().numpy(), want_y, **close)
        np.testing.assert_allclose(x.grad.numpy(), want_g, **close)
        x2 = tg.tensor(np.ones_like(a), dtype=tg.float64, requires_grad=True)
        with recording() as tp:
            y2 = F(x2, -1)
        (v,), (gr,) = replay(tp, [y2], [x2], [a], [g])
        np.testing.assert_allclose(v, want_y, **close)
        np.testing.assert_allclose(gr, want_g, **close)
        gw = tg.tensor(g)
        vg = tf.vmap(tf.grad(lambda t: (F(t, -1) * gw).sum()))
        batch = np.stack([a, a[::-1].copy(), np.ones_like(a)])
        got = vg(tg.tensor(batch, dtype=tg.float64)).numpy()
        for p in range(3):
            xp = tg.tensor(batch[p], dtype=tg.float64, requires_grad=True)
            (F(xp, -1) * gw).sum().backward()
            np.testing.assert_allclose(got[p], xp.grad.numpy(), **close)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_of_one_big_row_on_every_core(name, dtype):
    """One row of _vmath.PAR elements or more runs on the vector-math kernels (forward and
    VJP, _vmath.softmax_row): values and gradients match a float64 numpy reference of torch's
    formula, also for a row holding -inf (0 / -inf there) and one holding +inf (nan)."""
    from tapegrad._compiled import _vmath
    n = _vmath.PAR + 1001
    rs = np.random.default_rng(5)
    g = rs.uniform(-0.5, 1.5, n)                  # sum(g y) well away from 0
    for a in (rs.uniform(-4, 4, n), np.where(np.arange(n) % 7 == 0, -np.inf, rs.uniform(-4, 4, n)),
              np.where(np.arange(n) == 3, np.inf, rs.uniform(-4, 4, n))):
        x = tg.tensor(a.astype(dtype), requires_grad=True)
        y = getattr(tg.nn.functional, name)(x, 0)
        y.backward(tg.tensor(g.astype(dtype)))
        a64, g64 = a.astype(dtype).astype(np.float64), g.astype(dtype).astype(np.float64)
        with np.errstate(all="ignore"):
            z = a64 - a64.max()
            s = np.exp(z).sum()
            if name == "softmax":
                want_y = np.exp(z) / s
                want_g = want_y * (g64 - (g64 * want_y).sum())
            else:
                want_y = z - np.log(s)
                want_g = g64 - np.exp(want_y) * g64.sum()
        tol = dict(rtol=2e-5, atol=1e-10) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-16)
        np.testing.assert_allclose(y.detach().numpy(), want_y, equal_nan=True, **tol)
        if name == "log_softmax":      # g - exp(y) sum(g): terms of ~1 cancel
            tol["atol"] = 1e-5 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(x.grad.numpy(), want_g, equal_nan=True, **tol)
        assert np.isnan(want_y).any() == (np.isinf(a) & (a > 0)).any()
