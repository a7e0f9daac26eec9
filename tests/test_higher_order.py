"""Higher-order gradients (create_graph=True), for every row of the op table.

The differentiable VJPs (``Op.vjp_t`` and the linear rows' transposes in autograd/higher.py)
must agree with the compiled first-order VJPs, their derivative must match finite differences
of the first-order gradient, and (when torch is installed) torch's double backward."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad import ops
from test_ops_table import FACADE, FROWS, FIDS, ROWS, IDS, _draw, _fd

rng = np.random.default_rng(99)


def _weighted(f, xs, w):
    return (f(*xs) * tg.tensor(w, dtype=tg.float64)).sum()


@pytest.mark.parametrize("op", FROWS, ids=FIDS)
def test_differentiable_vjp_agrees_with_compiled_vjp(op):
    f, shapes = FACADE[op.name]
    arrays = [_draw(op, s) for s in shapes]
    w = rng.standard_normal(f(*[tg.tensor(a, dtype=tg.float64) for a in arrays]).shape)
    xs = [tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in arrays]
    compiled = tg.autograd.grad(_weighted(f, xs, w), xs)
    recorded = tg.autograd.grad(_weighted(f, xs, w), xs, create_graph=True)
    for c, r in zip(compiled, recorded):
        np.testing.assert_allclose(r.detach().numpy(), c.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", FROWS, ids=FIDS)
def test_second_order_matches_finite_differences(op):
    """d/dx <v, grad_x <w, f(x)>> (a Hessian-vector product) vs central differences of the
    first-order gradient."""
    f, shapes = FACADE[op.name]
    arrays = [_draw(op, s) for s in shapes]
    w = rng.standard_normal(f(*[tg.tensor(a, dtype=tg.float64) for a in arrays]).shape)
    vs = [rng.standard_normal(np.shape(a)) for a in arrays]

    def first_order_dot_v(vals):
        xs = [tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in vals]
        gs = tg.autograd.grad(_weighted(f, xs, w), xs, allow_unused=True)
        return sum(float((g.numpy() * v).sum()) for g, v in zip(gs, vs) if g is not None)

    xs = [tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in arrays]
    gs = tg.autograd.grad(_weighted(f, xs, w), xs, create_graph=True)
    gv = sum((g * tg.tensor(v, dtype=tg.float64)).sum() for g, v in zip(gs, vs))
    if not gv.requires_grad:          # linear in its inputs: the second derivative is zero
        want = [_fd(lambda ai, i=i: first_order_dot_v(arrays[:i] + [ai] + arrays[i + 1:]),
                    np.array(a, dtype=np.float64, copy=True)) for i, a in enumerate(arrays)]
        for wnt in want:
            np.testing.assert_allclose(wnt, 0, atol=1e-6)
        return
    hv = tg.autograd.grad(gv, xs, allow_unused=True)
    for i, a in enumerate(arrays):
        want = _fd(lambda ai, i=i: first_order_dot_v(arrays[:i] + [ai] + arrays[i + 1:]),
                   np.array(a, dtype=np.float64, copy=True), eps=1e-5)
        got = np.zeros_like(want) if hv[i] is None else hv[i].numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=op.name)


def test_third_derivative_and_mixed_partials():
    x = tg.tensor(1.3, dtype=tg.float64, requires_grad=True)
    y = tg.tensor(0.7, dtype=tg.float64, requires_grad=True)
    f = x ** 4 * y.sin() + (x * y).exp()
    (fx,) = tg.autograd.grad(f, x, create_graph=True)
    (fxx,) = tg.autograd.grad(fx, x, create_graph=True)
    (fxy,) = tg.autograd.grad(fx, y, retain_graph=True)
    (fxxx,) = tg.autograd.grad(fxx, x)
    # as in torch: that last call freed the graph it went through, fx's included
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        tg.autograd.grad(fx, y)
    xv, yv = 1.3, 0.7
    assert fxxx.item() == pytest.approx(24 * xv * np.sin(yv) + yv ** 3 * np.exp(xv * yv), rel=1e-12)
    assert fxy.item() == pytest.approx(4 * xv ** 3 * np.cos(yv)
                                       + (1 + xv * yv) * np.exp(xv * yv), rel=1e-12)


def test_backward_create_graph_then_backward_of_grad():
    x = tg.tensor([0.5, 1.5, -0.3], dtype=tg.float64, requires_grad=True)
    (x.sin() * x.exp()).sum().backward(create_graph=True)
    g = x.grad
    assert g.grad_fn is not None
    x.grad = None
    g.sum().backward()
    xs = np.array([0.5, 1.5, -0.3])
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.cos(xs) * np.exp(xs), rtol=1e-12)


def test_gradient_of_a_linear_function_needs_no_graph():
    """As torch: with create_graph the gradient of a linear function is a constant."""
    x = tg.ones(2, dtype=tg.float64, requires_grad=True)
    (g,) = tg.autograd.grad((-x * tg.tensor([2.0, 3.0], dtype=tg.float64)).sum(), x,
                            create_graph=True)
    assert not g.requires_grad
    np.testing.assert_allclose(g.numpy(), [-2.0, -3.0])


def test_create_graph_accumulates_out_of_place():
    x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    first = x.grad
    (x * x * x).sum().backward(create_graph=True)
    assert x.grad is not first                       # torch: x.grad = x.grad + new
    np.testing.assert_allclose(first.detach().numpy(), [2.0, 4.0])
    np.testing.assert_allclose(x.grad.detach().numpy(), [2.0 + 3.0, 4.0 + 12.0])


def test_hessian_vector_product_of_a_matmul_graph():
    rng_ = np.random.default_rng(0)
    A = rng_.standard_normal((4, 3))
    xv = rng_.standard_normal(3)
    v = rng_.standard_normal(3)
    x = tg.tensor(xv, requires_grad=True, dtype=tg.float64)
    At = tg.tensor(A, dtype=tg.float64)
    f = ((At @ x).tanh() ** 2).sum()
    (g,) = tg.autograd.grad(f, x, create_graph=True)
    (hv,) = tg.autograd.grad((g * tg.tensor(v, dtype=tg.float64)).sum(), x)
    # analytic Hessian: f = sum tanh(u)^2, u = A x
    u = A @ xv
    t = np.tanh(u)
    d2 = 2 * (1 - t ** 2) ** 2 - 4 * t ** 2 * (1 - t ** 2)
    H = A.T @ (d2[:, None] * A)
    np.testing.assert_allclose(hv.numpy(), H @ v, rtol=1e-10, atol=1e-12)


def test_custom_function_under_create_graph():
    class Cube(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2
    x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    (g,) = tg.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (h,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    np.testing.assert_allclose(h.numpy(), [6.0, 12.0])


def test_against_torch_double_backward():
    torch = pytest.importorskip("torch")
    xv = np.array([0.3, -1.2, 0.8])
    wv = np.array([[0.5, -0.2, 1.0], [0.1, 0.4, -0.7]])

    def program(lib, x, W):
        h = (W @ x).tanh()
        y = (h * h.sigmoid()).sum() + (x ** 3).mean() + (x.exp() / (1 + x * x)).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (hv,) = lib.autograd.grad((g * g).sum(), x)
        return g.detach().numpy(), hv.numpy()

    ours = program(tg, tg.tensor(xv, requires_grad=True), tg.tensor(wv, dtype=tg.float64))
    ref = program(torch, torch.tensor(xv, requires_grad=True), torch.tensor(wv))
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_backward_gradient_argument_keeps_its_graph_under_create_graph():
    """backward(gradient=v, create_graph=True): x.grad = v * dy/dx depends on v, as in torch."""
    x = tg.tensor([0.5, 2.0], dtype=tg.float64, requires_grad=True)
    v = tg.tensor([3.0, -1.0], dtype=tg.float64, requires_grad=True)
    (x ** 3).backward(v, create_graph=True)
    np.testing.assert_allclose(x.grad.detach().numpy(), [3.0 * 0.75, -12.0])
    (gv,) = tg.autograd.grad(x.grad.sum(), v)
    np.testing.assert_allclose(gv.numpy(), 3 * np.array([0.5, 2.0]) ** 2)
