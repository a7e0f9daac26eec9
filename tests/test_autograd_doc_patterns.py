"""Patterns from PyTorch's own autograd documentation (tutorials, notes, docstrings) that
tapegrad got wrong: one test per fixed difference (see tests/scripts/ for the whole scripts)."""
import numpy as np

import tapegrad as tg
from oracle import same


def _sinh_function(lib):
    """The Sinh of the "Double Backward with Custom Functions" tutorial: intermediates
    returned as extra outputs so that the backward is differentiable."""
    class Sinh(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            expx = lib.exp(x)
            expnegx = lib.exp(-x)
            ctx.save_for_backward(expx, expnegx)
            return (expx - expnegx) / 2, expx, expnegx

        @staticmethod
        def backward(ctx, grad_out, _grad_out_exp, _grad_out_negexp):
            expx, expnegx = ctx.saved_tensors
            grad_input = grad_out * (expx + expnegx) / 2
            grad_input += _grad_out_exp * expx
            grad_input -= _grad_out_negexp * expnegx
            return grad_input
    return Sinh


def test_create_graph_grad_through_custom_function_backward_on_a_0dim_input():
    # the custom backward records on a tape that absorbs the graph's tape mid-sweep;
    # autograd.grad(create_graph=True) then read the absorbed tape's (freed) node table
    Sinh = _sinh_function(tg)
    x = tg.tensor(0.5, dtype=tg.float64, requires_grad=True)
    go = tg.tensor(2.0, dtype=tg.float64, requires_grad=True)
    out = Sinh.apply(x)[0]
    gx, = tg.autograd.grad(out, x, go, create_graph=True)
    np.testing.assert_allclose(gx.item(), 2 * np.cosh(0.5), rtol=1e-12)
    d2x, d2g = tg.autograd.grad(gx, (x, go))
    np.testing.assert_allclose(d2x.item(), 2 * np.sinh(0.5), rtol=1e-12)
    np.testing.assert_allclose(d2g.item(), np.cosh(0.5), rtol=1e-12)


def test_gradgradcheck_of_the_tutorial_sinh_on_a_0dim_input():
    Sinh = _sinh_function(tg)
    x = tg.tensor(0.5, dtype=tg.float64, requires_grad=True)
    assert tg.autograd.gradgradcheck(lambda t: Sinh.apply(t)[0], x)



def _saved_output_second_order(lib, warm):
    """Second derivative through a custom Function that saves its own output, after ``warm``
    first-order backwards (from the third tape on, the current tape takes the previous one's
    leaf rows and identity token: the saved output's binding followed that token to the old,
    dead tape, and the create_graph gradient silently had no graph)."""
    Sinh = _sinh_function(lib)
    x = lib.tensor([0.5, 1.0, -0.3], dtype=lib.float64, requires_grad=True)
    for _ in range(warm):
        o = Sinh.apply(x)[0]
        lib.autograd.grad([o], [x], [lib.ones(3, dtype=lib.float64)])
    o = Sinh.apply(x)[0]
    gx, = lib.autograd.grad(o.sum(), x, create_graph=True)
    name = None if gx.grad_fn is None else gx.grad_fn.name()
    ggx, = lib.autograd.grad(gx.sum(), x)
    return gx, name, ggx


def test_saved_outputs_keep_their_graph_after_earlier_backwards_vs_torch():
    for warm in (0, 1, 2, 5):
        same(lambda lib: _saved_output_second_order(lib, warm))


def test_saved_outputs_keep_their_graph_after_earlier_backwards_without_torch():
    xs = np.array([0.5, 1.0, -0.3])
    for warm in (0, 2, 5):
        gx, name, ggx = _saved_output_second_order(tg, warm)
        assert name == "SubBackward0", (warm, name)
        np.testing.assert_allclose(gx.detach().numpy(), np.cosh(xs), rtol=1e-12)
        np.testing.assert_allclose(ggx.numpy(), np.sinh(xs), rtol=1e-12)
    Sinh = _sinh_function(tg)
    x = tg.tensor(np.array([[0.5, 1.0, 0.2], [0.1, 0.3, 0.4], [1.0, 2.0, 3.0]]),
                  requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: Sinh.apply(t)[0], x)
    assert tg.autograd.gradgradcheck(lambda t: Sinh.apply(t)[0], x)


def test_dropped_leaf_still_shows_as_accumulate_grad_vs_torch():
    # the tape holds leaves weakly: a leaf nobody references any more used to show as None
    same(lambda lib: [graph_names(lib.tensor(1.0, requires_grad=True).clone()),
                      graph_names(lib.ones(2, requires_grad=True) * 2),
                      graph_names(lib.ones(2, requires_grad=True) * lib.ones(2))])


def graph_names(t):
    return [None if f is None else f.name() for f, _ in t.grad_fn.next_functions]


def test_dropped_leaf_accumulate_grad_without_torch():
    y = tg.ones(2, requires_grad=True) * 2
    (acc, k), (none, _) = y.grad_fn.next_functions
    assert acc.name() == "torch::autograd::AccumulateGrad" and k == 0 and none is None
    assert acc.variable is None          # (torch's keeps the leaf alive; see docs/api.md)
    x = tg.ones(2, requires_grad=True)
    z = x * 2
    assert z.grad_fn.next_functions[0][0].variable is x
