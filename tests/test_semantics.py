"""PyTorch autograd semantics, checked without torch.

Every expectation here is an analytic value, a finite difference in float64, or a fact of
PyTorch's documented behaviour (names, types, error phrases). None of them is "it didn't
crash". The file runs against real PyTorch too (``TAPEGRAD_TEST_LIB=torch``, see
conftest.py), which is how a failing expectation is told apart from a tapegrad bug.
"""
import math
import threading

import numpy as np
import pytest

from conftest import semantics_lib

tg = semantics_lib()
IS_TORCH = tg.__name__ == "torch"
Function = tg.autograd.Function

RNG = np.random.default_rng(1234)


# ----------------------------------------------------------------------------- helpers
def npy(t):
    """numpy copy of a tensor's value."""
    return np.array(t.detach().tolist(), dtype=np.float64)


def leaf64(a):
    return tg.tensor(np.asarray(a, dtype=np.float64), dtype=tg.float64, requires_grad=True)


def fd_grads(fn, arrays, weight, eps=1e-6):
    """Central differences of sum(fn(*arrays) * weight) w.r.t. each array (float64)."""
    def f(arrs):
        with tg.no_grad():
            out = fn(*[tg.tensor(a, dtype=tg.float64) for a in arrs])
        return float(np.sum(npy(out) * weight))
    grads = []
    for k, a in enumerate(arrays):
        g = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            ap = [b.copy() for b in arrays]
            am = [b.copy() for b in arrays]
            ap[k][idx] += eps
            am[k][idx] -= eps
            g[idx] = (f(ap) - f(am)) / (2 * eps)
        grads.append(g)
    return grads


def check_grads(fn, *arrays, rtol=1e-6, atol=1e-8):
    """Autograd gradients of fn at float64 ``arrays`` against finite differences,
    seeding backward with a random cotangent of the output's shape."""
    arrays = [np.asarray(a, dtype=np.float64) for a in arrays]
    leaves = [leaf64(a) for a in arrays]
    out = fn(*leaves)
    assert out.dtype == tg.float64
    weight = RNG.uniform(0.5, 1.5, size=tuple(out.shape))
    out.backward(tg.tensor(weight, dtype=tg.float64))
    expected = fd_grads(fn, arrays, weight)
    for leaf, e in zip(leaves, expected):
        assert leaf.grad is not None
        assert leaf.grad.dtype == tg.float64
        assert tuple(leaf.grad.shape) == e.shape
        np.testing.assert_allclose(npy(leaf.grad), e, rtol=rtol, atol=atol)
    return leaves


# ============================================================================= constructors
class TestConstructors:
    def test_tensor_float_default_dtype(self):
        t = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        assert t.dtype == tg.float32
        assert tuple(t.shape) == (2, 2)
        assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
        assert not t.requires_grad and t.is_leaf and t.grad_fn is None

    def test_tensor_int_and_bool_data(self):
        assert tg.tensor([1, 2, 3]).dtype == tg.int64
        assert tg.tensor(5).dtype == tg.int64
        assert tg.tensor([True, False]).dtype == tg.bool

    def test_tensor_mixed_int_float_is_float32(self):
        t = tg.tensor([1, 2.5])
        assert t.dtype == tg.float32
        assert t.tolist() == [1.0, 2.5]

    def test_tensor_float64_when_asked(self):
        t = tg.tensor([1.0, 2.0], dtype=tg.float64)
        assert t.dtype == tg.float64
        assert tg.tensor([1, 2], dtype=tg.float64).dtype == tg.float64
        assert tg.float64 is tg.double and tg.float32 is tg.float

    def test_tensor_scalar_is_0d(self):
        t = tg.tensor(3.5)
        assert tuple(t.shape) == ()
        assert t.dim() == 0
        assert t.item() == 3.5

    @pytest.mark.parametrize("name,fill", [("ones", 1.0), ("zeros", 0.0)])
    def test_ones_zeros(self, name, fill):
        f = getattr(tg, name)
        for t in (f(2, 3), f((2, 3)), f([2, 3])):
            assert tuple(t.shape) == (2, 3)
            assert t.dtype == tg.float32
            assert npy(t).tolist() == [[fill] * 3] * 2
        t = f(4, dtype=tg.float64, requires_grad=True)
        assert t.dtype == tg.float64 and t.requires_grad and t.is_leaf
        assert tuple(f(0).shape) == (0,)
        assert tuple(f(()).shape) == ()

    def test_full(self):
        t = tg.full((2, 3), 7.5)
        assert t.dtype == tg.float32 and tuple(t.shape) == (2, 3)
        assert np.all(npy(t) == 7.5)
        assert tg.full((2,), 7).dtype == tg.int64
        assert tg.full((2,), 7, dtype=tg.float64).dtype == tg.float64

    def test_rand_randn(self):
        tg.manual_seed(0)
        r = tg.rand(200, 50)
        assert r.dtype == tg.float32 and tuple(r.shape) == (200, 50)
        v = npy(r)
        assert v.min() >= 0.0 and v.max() < 1.0
        assert abs(v.mean() - 0.5) < 0.02
        n = npy(tg.randn(200, 50))
        assert abs(n.mean()) < 0.05 and abs(n.std() - 1.0) < 0.05
        assert tg.rand(3, dtype=tg.float64).dtype == tg.float64
        assert tg.randn((2, 2), dtype=tg.float64).dtype == tg.float64
        assert tg.randn(3, requires_grad=True).requires_grad

    def test_manual_seed_reproducible(self):
        tg.manual_seed(42)
        a = npy(tg.randn(5))
        tg.manual_seed(42)
        b = npy(tg.randn(5))
        assert np.array_equal(a, b)

    @pytest.mark.parametrize("name", ["ones_like", "zeros_like", "rand_like", "randn_like"])
    def test_like(self, name):
        f = getattr(tg, name)
        base = tg.zeros(3, 2, dtype=tg.float64)
        t = f(base)
        assert tuple(t.shape) == (3, 2) and t.dtype == tg.float64
        assert not t.requires_grad
        t = f(tg.zeros(4), dtype=tg.float64, requires_grad=True)
        assert t.dtype == tg.float64 and t.requires_grad
        if name == "ones_like":
            assert np.all(npy(f(base)) == 1.0)
        if name == "zeros_like":
            assert np.all(npy(f(tg.ones(3))) == 0.0)

    def test_full_like(self):
        t = tg.full_like(tg.zeros(2, 2, dtype=tg.float64), 3.0)
        assert t.dtype == tg.float64 and np.all(npy(t) == 3.0)

    def test_arange(self):
        t = tg.arange(5)
        assert t.dtype == tg.int64 and t.tolist() == [0, 1, 2, 3, 4]
        t = tg.arange(1, 7, 2)
        assert t.dtype == tg.int64 and t.tolist() == [1, 3, 5]
        t = tg.arange(0, 1, 0.25)
        assert t.dtype == tg.float32 and t.tolist() == [0.0, 0.25, 0.5, 0.75]
        assert tg.arange(5.0).dtype == tg.float32
        assert tg.arange(3, dtype=tg.float64).dtype == tg.float64

    def test_linspace(self):
        t = tg.linspace(0, 1, 5)
        assert t.dtype == tg.float32 and tuple(t.shape) == (5,)
        np.testing.assert_allclose(npy(t), [0, 0.25, 0.5, 0.75, 1.0])
        assert tg.linspace(-1, 1, 3, dtype=tg.float64).dtype == tg.float64

    def test_eye(self):
        t = tg.eye(3)
        assert t.dtype == tg.float32
        assert np.array_equal(npy(t), np.eye(3))
        assert np.array_equal(npy(tg.eye(2, 3)), np.eye(2, 3))
        assert tg.eye(2, dtype=tg.float64).dtype == tg.float64

    def test_tensor_copies_its_data(self):
        a = np.array([1.0, 2.0])
        t = tg.tensor(a)
        a[0] = 99.0
        assert t.tolist() == [1.0, 2.0]
        assert t.dtype == tg.float64       # numpy float64 data keeps its dtype


# ============================================================================= leaves, grad_fn
class TestGraphIntrospection:
    def test_leaf_flags(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        c = tg.tensor([1.0, 2.0])
        assert x.is_leaf and x.requires_grad and x.grad_fn is None and x.grad is None
        assert c.is_leaf and not c.requires_grad
        y = x * 2
        assert not y.is_leaf and y.requires_grad and y.grad_fn is not None
        z = c * 2                       # no input requires grad: a new leaf
        assert z.is_leaf and not z.requires_grad and z.grad_fn is None

    @pytest.mark.parametrize("expr,name", [
        ("x * y", "MulBackward0"),
        ("x * 2", "MulBackward0"),
        ("x + y", "AddBackward0"),
        ("x + 2", "AddBackward0"),
        ("x - y", "SubBackward0"),
        ("x - 2", "SubBackward0"),
        ("2 - x", "RsubBackward1"),
        ("x / y", "DivBackward0"),
        ("x / 2", "DivBackward0"),
        ("2 / x", "MulBackward0"),
        ("-x", "NegBackward0"),
        ("x.sum()", "SumBackward0"),
        ("x.sum(0)", "SumBackward1"),
        ("x.mean()", "MeanBackward0"),
        ("x.mean(0)", "MeanBackward1"),
        ("x ** 2", "PowBackward0"),
        ("x.pow(2.0)", "PowBackward0"),
        ("x ** y", "PowBackward1"),
        ("2 ** x", "PowBackward2"),
        ("x.view(3, 1)", "ViewBackward0"),
        ("x.reshape(3, 1)", "ViewBackward0"),
        ("x.unbind()[0]", "UnbindBackward0"),
        ("x.exp()", "ExpBackward0"),
        ("x.log()", "LogBackward0"),
        ("x.sin()", "SinBackward0"),
        ("x.cos()", "CosBackward0"),
        ("x.tanh()", "TanhBackward0"),
        ("x.sigmoid()", "SigmoidBackward0"),
        ("x.relu()", "ReluBackward0"),
        ("x.sqrt()", "SqrtBackward0"),
        ("x.abs()", "AbsBackward0"),
        ("x @ y", "DotBackward0"),
        ("x.clone()", "CloneBackward0"),
        ("x.double()", "ToCopyBackward0"),
    ])
    def test_grad_fn_names(self, expr, name):
        x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = tg.tensor([0.5, 1.5, 2.5], requires_grad=True)
        out = eval(expr)
        assert out.grad_fn.name() == name
        assert type(out.grad_fn).__name__ == name

    def test_matmul_grad_fn_names(self):
        a = tg.ones(2, 3, requires_grad=True)
        assert (a @ tg.ones(3, 4)).grad_fn.name() == "MmBackward0"
        assert (a @ tg.ones(3)).grad_fn.name() == "MvBackward0"

    def test_next_functions_accumulate_grad_and_none(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        nf = y.grad_fn.next_functions
        assert isinstance(nf, tuple) and len(nf) == 2
        acc, nr = nf[0]
        assert nr == 0
        assert type(acc).__name__ == "AccumulateGrad"
        assert acc.variable is x
        assert nf[1] == (None, 0)

    def test_next_functions_none_for_constant_tensor(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        c = tg.tensor([3.0, 4.0])
        nf = (c * x).grad_fn.next_functions
        assert nf[0] == (None, 0)
        assert nf[1][0].variable is x

    def test_grad_fn_chain(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        w = tg.tensor([3.0, 4.0], requires_grad=True)
        s = (x * w + x).sum()
        assert s.grad_fn.name() == "SumBackward0"
        (add, _), = s.grad_fn.next_functions
        assert add.name() == "AddBackward0"
        (mul, _), (acc, _) = add.next_functions
        assert mul.name() == "MulBackward0"
        assert acc.variable is x
        (ax, _), (aw, _) = mul.next_functions
        assert ax.variable is x and aw.variable is w

    def test_grad_fn_identity_is_stable(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        y = x.exp()
        assert y.grad_fn is y.grad_fn
        z = y * 3
        assert z.grad_fn.next_functions[0][0] is y.grad_fn

    def test_accumulate_grad_shared_between_uses(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        a, b = x * 2, x * 3
        acc_a = a.grad_fn.next_functions[0][0]
        acc_b = b.grad_fn.next_functions[0][0]
        assert acc_a is acc_b
        assert acc_a.variable is x

    def test_unbind_outputs_share_grad_fn(self):
        x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        p, q = x.unbind(0)
        assert p.grad_fn is q.grad_fn
        assert p.grad_fn.name() == "UnbindBackward0"
        assert p.grad_fn.next_functions[0][0].variable is x


# ============================================================================= backward
class TestBackward:
    def test_readme_example(self):
        a = tg.tensor(2.0, requires_grad=True)
        b = tg.tensor(3.0, requires_grad=True)
        c = a * b
        c.backward()
        assert a.grad.item() == 3.0 and b.grad.item() == 2.0
        assert tuple(a.grad.shape) == ()
        assert a.grad.dtype == tg.float32

    def test_backward_with_gradient_argument(self):
        x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x
        y.backward(tg.tensor([1.0, 10.0, 100.0]))
        assert x.grad.tolist() == [2.0, 40.0, 600.0]

    def test_backward_gradient_none_on_scalar(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        (x * 3).sum().backward(gradient=None)
        assert x.grad.tolist() == [3.0, 3.0]

    def test_backward_on_one_element_non_0d_output(self):
        x = tg.tensor([2.0], requires_grad=True)
        (x * x).backward()               # numel 1 is enough for an implicit gradient
        assert x.grad.tolist() == [4.0]

    def test_accumulation_same_grad_object(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        g = x.grad
        assert g.tolist() == [2.0, 4.0]
        (x * 3).sum().backward()
        assert x.grad is g                       # updated in place
        assert g.tolist() == [5.0, 7.0]
        assert not g.requires_grad

    def test_grad_zero_(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        g = x.grad
        r = x.grad.zero_()
        assert r is g and x.grad is g
        assert g.tolist() == [0.0, 0.0]
        (x * x).sum().backward()
        assert x.grad is g and g.tolist() == [2.0, 4.0]

    def test_grad_set_to_none_then_fresh(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        (x * x).sum().backward()
        old = x.grad
        x.grad = None
        (x * 3).sum().backward()
        assert x.grad is not old and x.grad.tolist() == [3.0, 3.0]
        assert old.tolist() == [2.0, 4.0]

    def test_retain_graph_second_backward_accumulates(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        s = (x.exp() * x).sum()
        s.backward(retain_graph=True)
        first = npy(x.grad)
        np.testing.assert_allclose(first, np.exp([1.0, 2.0]) * (1 + np.array([1.0, 2.0])), rtol=1e-6)
        s.backward()
        np.testing.assert_allclose(npy(x.grad), 2 * first, rtol=1e-6)

    def test_second_backward_without_saved_tensors_is_allowed(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        w = tg.tensor([3.0, 4.0], requires_grad=True)
        s = (x + w).sum()               # AddBackward0/SumBackward0 save no tensors
        s.backward()
        s.backward()
        assert x.grad.tolist() == [2.0, 2.0] and w.grad.tolist() == [2.0, 2.0]

    def test_backward_through_shared_subexpression(self):
        x = tg.tensor([0.5, -1.0], requires_grad=True)
        y = x * x
        s = (y + y * y).sum()            # d/dx (x^2 + x^4) = 2x + 4x^3
        s.backward()
        xv = np.array([0.5, -1.0])
        np.testing.assert_allclose(npy(x.grad), 2 * xv + 4 * xv ** 3, rtol=1e-6)

    def test_only_reached_leaves_get_grad(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        unused = tg.tensor([1.0, 2.0], requires_grad=True)
        _ = unused * 5                   # recorded but not part of the loss
        (x * 2).sum().backward()
        assert unused.grad is None
        assert x.grad.tolist() == [2.0, 2.0]

    def test_graph_from_pieces(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        y = tg.tensor([3.0, 4.0], requires_grad=True)
        a = x * 2
        b = y * 3
        c = a + b
        c.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]
        assert y.grad.tolist() == [3.0, 3.0]

    def test_interleaved_independent_graphs(self):
        x1 = leaf64([1.0, 2.0])
        x2 = leaf64([3.0, 5.0])
        a1 = x1 * x1                 # graph 1 piece
        a2 = x2.exp()                # graph 2 piece
        b1 = a1 * 3                  # graph 1
        b2 = a2 * x2                 # graph 2
        s2 = b2.sum()
        s1 = b1.sum()
        s2.backward()                # backward 2 first
        assert x1.grad is None
        s1.backward()
        np.testing.assert_allclose(npy(x1.grad), 6 * np.array([1.0, 2.0]))
        v = np.array([3.0, 5.0])
        np.testing.assert_allclose(npy(x2.grad), np.exp(v) * (1 + v), rtol=1e-12)

    def test_interleaved_graphs_many_rounds(self):
        xs = [leaf64(RNG.normal(size=4)) for _ in range(3)]
        outs = []
        for k, x in enumerate(xs):
            outs.append((x.sin() * (k + 1)).sum())
        for k in (2, 0, 1):
            outs[k].backward()
        for k, x in enumerate(xs):
            np.testing.assert_allclose(npy(x.grad), (k + 1) * np.cos(npy(x)), rtol=1e-12)

    def test_two_graphs_sharing_a_leaf(self):
        x = leaf64([1.0, 2.0])
        s1 = (x * x).sum()
        s2 = (x * 10).sum()
        s1.backward()
        s2.backward()
        np.testing.assert_allclose(npy(x.grad), [12.0, 14.0])

    def test_joining_two_graphs_after_building(self):
        x = leaf64([1.0, 2.0])
        y = leaf64([3.0, 4.0])
        a = x.exp()                  # built separately ...
        b = y.sin()
        s = (a * b).sum()            # ... then joined
        s.backward()
        xv, yv = np.array([1.0, 2.0]), np.array([3.0, 4.0])
        np.testing.assert_allclose(npy(x.grad), np.exp(xv) * np.sin(yv), rtol=1e-12)
        np.testing.assert_allclose(npy(y.grad), np.exp(xv) * np.cos(yv), rtol=1e-12)

    def test_backward_on_leaf_itself(self):
        x = tg.tensor(3.0, requires_grad=True)
        x.backward()
        assert x.grad.item() == 1.0

    def test_retain_grad_on_non_leaf(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        (y * y).sum().backward()
        assert y.grad is not None
        assert y.grad.tolist() == [4.0, 8.0]


# ============================================================================= tape lifetimes
def in_fresh_thread(fn):
    """Run fn in a new thread (its own grad mode and, in tapegrad, its own current tape, so a
    corrupted per-thread state cannot leak into other tests); return or re-raise."""
    box = {}

    def run():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    th = threading.Thread(target=run)
    th.start()
    th.join(60)
    if "error" in box:
        raise box["error"]
    return box["result"]


class TestGraphLifetimes:
    def test_graph_survives_unrelated_backward(self):
        def prog():
            x = leaf64([1.0, 2.0])
            y = x * 2                      # recorded before an unrelated backward
            (x * 3).sum().backward()
            y.exp().sum().backward()       # ... and continued after it
            return npy(x.grad)
        xv = np.array([1.0, 2.0])
        np.testing.assert_allclose(in_fresh_thread(prog), 3 + 2 * np.exp(2 * xv), rtol=1e-12)

    def test_join_after_unrelated_backward(self):
        def prog():
            x, y, z = leaf64([1.0, 2.0]), leaf64([3.0, 4.0]), leaf64([1.0])
            a = x * 2 + 1
            (z * 2).sum().backward()
            b = y.exp() * x                 # recorded after the backward, joined with a below
            (a * b).sum().backward()
            return npy(x.grad), npy(y.grad), npy(z.grad)
        gx, gy, gz = in_fresh_thread(prog)
        xv, yv = np.array([1.0, 2.0]), np.array([3.0, 4.0])
        np.testing.assert_allclose(gx, 2 * np.exp(yv) * xv + (2 * xv + 1) * np.exp(yv), rtol=1e-12)
        np.testing.assert_allclose(gy, (2 * xv + 1) * np.exp(yv) * xv, rtol=1e-12)
        np.testing.assert_allclose(gz, [2.0])

    def test_recording_still_works_after_a_join(self):
        def prog():
            x, y, z = leaf64([1.0, 2.0]), leaf64([3.0, 4.0]), leaf64([1.0])
            a = x * 2 + 1
            (z * 2).sum().backward()
            b = y.exp() * x
            (a * b).sum().backward()
            w = leaf64([5.0])                # a new graph from fresh leaves, same thread
            (w * w).sum().backward()
            return npy(w.grad)
        np.testing.assert_allclose(in_fresh_thread(prog), [10.0])

    def test_reuse_non_saving_intermediate_after_backward(self):
        def prog():
            x, z = leaf64([1.0, 2.0]), leaf64([1.0])
            a = x + 1
            (z + 1).sum().backward()       # consumes the shared recording, saves nothing
            (a * a).sum().backward()
            return npy(x.grad)
        np.testing.assert_allclose(in_fresh_thread(prog), [4.0, 6.0])

    def test_long_chain(self):
        x = leaf64(2.0)
        y = x
        for _ in range(500):
            y = y * 1.01 + 0.001
        y.backward()
        np.testing.assert_allclose(x.grad.item(), 1.01 ** 500, rtol=1e-12)

    def test_many_graphs_then_old_one(self):
        x = leaf64([1.0, 2.0])
        keep = (x ** 3).sum()
        for k in range(300):
            t = leaf64([float(k)])
            (t * t).sum().backward()
            assert t.grad.tolist() == [2.0 * k]
        keep.backward()
        np.testing.assert_allclose(npy(x.grad), [3.0, 12.0])


# ============================================================================= autograd.grad
class TestAutogradGrad:
    def test_returns_tuple_and_leaves_grad_alone(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        y = tg.tensor([3.0, 4.0], requires_grad=True)
        s = (x * y).sum()
        gx, gy = tg.autograd.grad(s, (x, y))
        assert gx.tolist() == [3.0, 4.0] and gy.tolist() == [1.0, 2.0]
        assert x.grad is None and y.grad is None
        r = tg.autograd.grad((x * x).sum(), x)
        assert isinstance(r, tuple) and len(r) == 1
        assert r[0].tolist() == [2.0, 4.0]
        assert not r[0].requires_grad

    def test_grad_wrt_intermediate(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        h = x * 3
        s = (h * h).sum()
        (gh,) = tg.autograd.grad(s, h)
        assert gh.tolist() == [6.0, 12.0]
        assert x.grad is None

    def test_allow_unused(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        z = tg.tensor([1.0], requires_grad=True)
        gx, gz = tg.autograd.grad((x * 2).sum(), (x, z), allow_unused=True)
        assert gx.tolist() == [2.0, 2.0] and gz is None
        with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
            tg.autograd.grad((x * 2).sum(), (x, z))

    def test_grad_outputs_and_retain_graph(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        (g,) = tg.autograd.grad(y, x, grad_outputs=tg.tensor([1.0, 0.5]), retain_graph=True)
        assert g.tolist() == [2.0, 2.0]
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 4.0]

    def test_grad_frees_graph(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        s = (x * x).sum()
        tg.autograd.grad(s, x)
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            s.backward()

    def test_autograd_backward_function(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        y = tg.tensor([3.0], requires_grad=True)
        tg.autograd.backward([(x * 2).sum(), (y * y).sum()])
        assert x.grad.tolist() == [2.0, 2.0] and y.grad.tolist() == [6.0]


# ============================================================================= grad modes
class TestGradMode:
    def test_no_grad_context(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        with tg.no_grad():
            assert not tg.is_grad_enabled()
            y = x * 2
        assert tg.is_grad_enabled()
        assert not y.requires_grad and y.grad_fn is None and y.is_leaf
        assert y.tolist() == [2.0, 4.0]

    def test_enable_grad_inside_no_grad(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        with tg.no_grad():
            with tg.enable_grad():
                assert tg.is_grad_enabled()
                y = x * 2
            assert not tg.is_grad_enabled()
        assert y.requires_grad and y.grad_fn.name() == "MulBackward0"

    def test_set_grad_enabled_context_and_call(self):
        with tg.set_grad_enabled(False):
            assert not tg.is_grad_enabled()
            with tg.set_grad_enabled(True):
                assert tg.is_grad_enabled()
            assert not tg.is_grad_enabled()
        assert tg.is_grad_enabled()
        tg.set_grad_enabled(False)
        try:
            assert not tg.is_grad_enabled()
        finally:
            tg.set_grad_enabled(True)
        assert tg.is_grad_enabled()

    def test_decorators(self):
        x = tg.tensor([1.0], requires_grad=True)

        @tg.no_grad()
        def f1():
            return tg.is_grad_enabled(), x * 2

        @tg.no_grad
        def f2():
            return tg.is_grad_enabled()

        @tg.enable_grad()
        def f3():
            return tg.is_grad_enabled(), x * 2

        @tg.set_grad_enabled(False)
        def f4():
            return tg.is_grad_enabled()

        assert tg.is_grad_enabled()     # defining f4 must not switch grad mode off for good
        en, y = f1()
        assert en is False and not y.requires_grad
        assert f2() is False
        with tg.no_grad():
            en, y = f3()
            assert not tg.is_grad_enabled()
        assert en is True and y.requires_grad
        assert f4() is False
        assert tg.is_grad_enabled()
        assert f1.__name__ == "f1"

    def test_restored_after_exception(self):
        with pytest.raises(ValueError):
            with tg.no_grad():
                raise ValueError("boom")
        assert tg.is_grad_enabled()

        @tg.no_grad()
        def bad():
            raise KeyError("boom")

        with pytest.raises(KeyError):
            bad()
        assert tg.is_grad_enabled()

        with tg.no_grad():
            with pytest.raises(ValueError):
                with tg.enable_grad():
                    raise ValueError
            assert not tg.is_grad_enabled()
        with pytest.raises(ValueError):
            with tg.set_grad_enabled(False):
                raise ValueError
        assert tg.is_grad_enabled()

    def test_thread_local(self):
        entered, release = threading.Event(), threading.Event()
        seen = {}

        def worker():
            with tg.no_grad():
                entered.set()
                release.wait(10)
                seen["worker"] = tg.is_grad_enabled()
                xw = tg.ones(2, requires_grad=True)
                seen["worker_rg"] = (xw * 2).requires_grad

        th = threading.Thread(target=worker)
        th.start()
        try:
            assert entered.wait(10)
            assert tg.is_grad_enabled()           # the worker's no_grad is not ours
            x = tg.ones(2, requires_grad=True)
            y = x * 2
            assert y.requires_grad and y.grad_fn is not None
        finally:
            release.set()
            th.join(10)
        assert seen == {"worker": False, "worker_rg": False}
        assert tg.is_grad_enabled()

    def test_new_thread_starts_with_grad_enabled(self):
        seen = {}
        with tg.no_grad():
            th = threading.Thread(target=lambda: seen.setdefault("en", tg.is_grad_enabled()))
            th.start()
            th.join(10)
        assert seen == {"en": True}

    def test_backward_inside_no_grad_still_works(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        s = (x * x).sum()
        with tg.no_grad():
            s.backward()
        assert x.grad.tolist() == [2.0, 4.0]

    def test_graph_usable_in_threads(self):
        results = {}

        def worker(k):
            x = leaf64(np.arange(3.0) + k)
            (x * x * k).sum().backward()
            results[k] = npy(x.grad)

        ths = [threading.Thread(target=worker, args=(k,)) for k in range(1, 5)]
        for t in ths:
            t.start()
        for t in ths:
            t.join(30)
        for k in range(1, 5):
            np.testing.assert_allclose(results[k], 2 * k * (np.arange(3.0) + k))


# ============================================================================= detach / data
class TestDetachData:
    def test_detach(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        d = y.detach()
        assert not d.requires_grad and d.is_leaf and d.grad_fn is None
        d2 = x.detach()
        d2[0] = 10.0                      # shares storage
        assert x.tolist()[0] == 10.0
        assert x._version == 1            # and the version counter

    def test_data(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        d = x.data
        assert not d.requires_grad and d.is_leaf
        d.mul_(3)                          # shares storage ...
        assert x.tolist() == [3.0, 6.0]
        assert x._version == 0             # ... but not the version counter

    @pytest.mark.parametrize("n", [2, 1000])
    def test_change_through_data_does_not_break_backward(self, n):
        x = tg.ones(n, requires_grad=True)
        w = tg.full((n,), 3.0, requires_grad=True)
        y = (x * w).sum()
        w.data.add_(1.0)                  # invisible to the version check ...
        y.backward()
        assert w._version == 0
        assert x.grad.tolist() == [4.0] * n   # ... and the saved w *is* w: backward sees 4

    def test_data_setter(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        x.data = tg.tensor([5.0, 6.0])
        assert x.requires_grad and x.is_leaf
        (x * x).sum().backward()
        assert x.grad.tolist() == [10.0, 12.0]

    def test_requires_grad_(self):
        x = tg.tensor([1.0, 2.0])
        r = x.requires_grad_()
        assert r is x and x.requires_grad and x.is_leaf
        x.requires_grad_(False)
        assert not x.requires_grad
        x.requires_grad = True
        assert x.requires_grad
        y = x * 2
        with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
            y.requires_grad_(False)


# ============================================================================= versions
class TestVersionCounter:
    @pytest.mark.parametrize("op", [
        lambda t: t.add_(1), lambda t: t.sub_(1), lambda t: t.mul_(2), lambda t: t.div_(2),
        lambda t: t.zero_(), lambda t: t.fill_(3.0), lambda t: t.copy_(tg.ones(3)),
        lambda t: t.__setitem__(0, 5.0), lambda t: t.__setitem__(slice(0, 2), tg.zeros(2)),
    ], ids=["add_", "sub_", "mul_", "div_", "zero_", "fill_", "copy_", "setitem", "setitem_slice"])
    def test_inplace_bumps_version(self, op):
        t = tg.tensor([1.0, 2.0, 3.0])
        assert t._version == 0
        op(t)
        assert t._version == 1
        op(t)
        assert t._version == 2

    def test_augmented_assignment(self):
        t = tg.tensor([1.0, 2.0, 3.0])
        ident = id(t)
        t += 1
        assert t._version == 1
        t -= 1
        assert t._version == 2
        t *= 2
        assert t._version == 3
        t /= 2
        assert t._version == 4
        assert id(t) == ident
        assert t.tolist() == [1.0, 2.0, 3.0]

    def test_out_of_place_does_not_bump(self):
        t = tg.tensor([1.0, 2.0, 3.0])
        _ = t + 1
        _ = t * 2
        _ = t.exp()
        assert t._version == 0

    def test_views_share_counter(self):
        t = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        v = t.view(4)
        r = t[0]
        v.add_(1)
        assert t._version == 1 and v._version == 1 and r._version == 1
        r.mul_(2)
        assert t._version == 2 and v._version == 2
        assert t.tolist() == [[4.0, 6.0], [4.0, 5.0]]
        d = t.detach()
        d.zero_()
        assert t._version == 3 and v._version == 3

    def test_unbind_outputs_share_counter(self):
        t = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
        a, b = t.unbind(0)
        a.add_(1)
        assert t._version == 1 and b._version == 1
        assert t.tolist() == [[2.0, 3.0], [3.0, 4.0]]


# ============================================================================= arithmetic
class TestArithmetic:
    def test_broadcast_add_shapes_and_grads(self):
        a = tg.tensor([[1.0], [2.0], [3.0]], requires_grad=True)      # (3, 1)
        b = tg.tensor([10.0, 20.0, 30.0, 40.0], requires_grad=True)   # (4,)
        c = a + b
        assert tuple(c.shape) == (3, 4)
        assert npy(c).tolist() == (np.array([[1.0], [2.0], [3.0]]) + np.array([10.0, 20, 30, 40])).tolist()
        c.sum().backward()
        assert tuple(a.grad.shape) == (3, 1) and a.grad.tolist() == [[4.0], [4.0], [4.0]]
        assert tuple(b.grad.shape) == (4,) and b.grad.tolist() == [3.0, 3.0, 3.0, 3.0]

    def test_broadcast_mul_grads(self):
        av = RNG.normal(size=(3, 1))
        bv = RNG.normal(size=(4,))
        a, b = leaf64(av), leaf64(bv)
        (a * b).sum().backward()
        np.testing.assert_allclose(npy(a.grad), np.full((3, 1), bv.sum()), rtol=1e-12)
        np.testing.assert_allclose(npy(b.grad), np.full(4, av.sum()), rtol=1e-12)

    @pytest.mark.parametrize("sa,sb", [((3, 1), (4,)), ((2, 3), (3,)), ((2, 1, 3), (4, 1)),
                                       ((), (3,)), ((1,), (2, 2)), ((2, 3), (2, 3))])
    @pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
    def test_broadcast_binary_fd(self, sa, sb, op):
        av = RNG.uniform(0.5, 2.0, size=sa)
        bv = RNG.uniform(0.5, 2.0, size=sb)
        f = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
             "mul": lambda a, b: a * b, "div": lambda a, b: a / b}[op]
        check_grads(f, av, bv)

    def test_broadcast_mismatch(self):
        a = tg.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="must match the size"):
            a + tg.ones(2)
        with pytest.raises(RuntimeError, match="must match the size"):
            tg.ones(2, 3) * tg.ones(4, 3)

    @pytest.mark.parametrize("expr,value,grad", [
        ("x + 2", lambda v: v + 2, lambda v: np.ones_like(v)),
        ("2 + x", lambda v: v + 2, lambda v: np.ones_like(v)),
        ("x - 2", lambda v: v - 2, lambda v: np.ones_like(v)),
        ("2 - x", lambda v: 2 - v, lambda v: -np.ones_like(v)),
        ("x * 3", lambda v: 3 * v, lambda v: np.full_like(v, 3)),
        ("3 * x", lambda v: 3 * v, lambda v: np.full_like(v, 3)),
        ("x / 4", lambda v: v / 4, lambda v: np.full_like(v, 0.25)),
        ("2 / x", lambda v: 2 / v, lambda v: -2 / v ** 2),
        ("x ** 3", lambda v: v ** 3, lambda v: 3 * v ** 2),
        ("2 ** x", lambda v: 2.0 ** v, lambda v: 2.0 ** v * math.log(2)),
        ("x ** 0.5", lambda v: np.sqrt(v), lambda v: 0.5 / np.sqrt(v)),
        ("x ** -1", lambda v: 1 / v, lambda v: -1 / v ** 2),
        ("x ** 0", lambda v: np.ones_like(v), lambda v: np.zeros_like(v)),
        ("-x", lambda v: -v, lambda v: -np.ones_like(v)),
        ("x.neg()", lambda v: -v, lambda v: -np.ones_like(v)),
    ])
    def test_python_scalars(self, expr, value, grad):
        v = np.array([0.5, 1.5, 3.0])
        x = leaf64(v)
        y = eval(expr)
        assert y.dtype == tg.float64 and tuple(y.shape) == (3,)
        np.testing.assert_allclose(npy(y), value(v), rtol=1e-12)
        y.sum().backward()
        np.testing.assert_allclose(npy(x.grad), grad(v), rtol=1e-12, atol=1e-15)

    def test_python_scalars_keep_float32(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        for y in (x + 2, 2 - x, x * 2.5, 2 / x, x ** 2, 2 ** x):
            assert y.dtype == tg.float32

    def test_same_tensor_both_operands(self):
        x = leaf64([1.5, -2.0])
        (x * x + x / x - x).sum().backward()
        np.testing.assert_allclose(npy(x.grad), 2 * np.array([1.5, -2.0]) - 1, rtol=1e-12)

    def test_functional_forms(self):
        x = leaf64([1.0, 2.0])
        y = leaf64([3.0, 4.0])
        s = tg.add(x, y, alpha=2) + tg.sub(x, y) + tg.mul(x, y) + tg.div(x, y)
        s.sum().backward()
        xv, yv = np.array([1.0, 2.0]), np.array([3.0, 4.0])
        np.testing.assert_allclose(npy(x.grad), 1 + 1 + yv + 1 / yv, rtol=1e-12)
        np.testing.assert_allclose(npy(y.grad), 2 - 1 + xv - xv / yv ** 2, rtol=1e-12)


# ============================================================================= reductions
class TestReductions:
    def test_sum_all(self):
        x = leaf64(RNG.normal(size=(2, 3)))
        s = x.sum()
        assert tuple(s.shape) == ()
        s.backward()
        assert np.all(npy(x.grad) == 1.0)

    def test_mean_all(self):
        x = leaf64(RNG.normal(size=(2, 3)))
        m = x.mean()
        np.testing.assert_allclose(m.item(), npy(x).mean(), rtol=1e-12)
        m.backward()
        np.testing.assert_allclose(npy(x.grad), np.full((2, 3), 1 / 6), rtol=1e-12)

    @pytest.mark.parametrize("dim", [0, 1, 2, -1, (0, 2), (1, -1)])
    @pytest.mark.parametrize("keepdim", [False, True])
    @pytest.mark.parametrize("red", ["sum", "mean"])
    def test_dim_keepdim(self, dim, keepdim, red):
        xv = RNG.normal(size=(2, 3, 4))
        x = leaf64(xv)
        out = getattr(x, red)(dim, keepdim=keepdim)
        ref = getattr(np, red)(xv, axis=dim, keepdims=keepdim)
        assert tuple(out.shape) == ref.shape
        np.testing.assert_allclose(npy(out), ref, rtol=1e-12)
        w = RNG.uniform(0.5, 1.5, size=ref.shape)
        out.backward(tg.tensor(w, dtype=tg.float64))
        wk = w if keepdim else np.expand_dims(w, dim)
        n = xv.size // ref.size if red == "mean" else 1
        np.testing.assert_allclose(npy(x.grad), np.broadcast_to(wk, xv.shape) / n, rtol=1e-12)

    def test_sum_keyword_dim(self):
        x = leaf64([[1.0, 2.0], [3.0, 4.0]])
        s = x.sum(dim=1, keepdim=True)
        assert tuple(s.shape) == (2, 1) and npy(s).tolist() == [[3.0], [7.0]]
        m = tg.mean(x, dim=0)
        assert npy(m).tolist() == [2.0, 3.0]
        (s.sum() + m.sum()).backward()
        np.testing.assert_allclose(npy(x.grad), np.full((2, 2), 1.5))

    def test_reductions_chain_fd(self):
        check_grads(lambda x: (x.sum(1, keepdim=True) * x).mean(0), RNG.normal(size=(3, 4)))

    def test_sum_of_int_tensor_is_int64(self):
        t = tg.tensor([1, 2, 3])
        assert t.sum().dtype == tg.int64 and t.sum().item() == 6


# ============================================================================= pow, unary
class TestPowUnary:
    def test_pow_scalar_exponent(self):
        xv = np.array([0.5, 1.0, 2.0])
        for p in (2, 3.5, -1.5, 0.5):
            x = leaf64(xv)
            y = x ** p
            assert y.grad_fn.name() == "PowBackward0"
            np.testing.assert_allclose(npy(y), xv ** p, rtol=1e-12)
            y.sum().backward()
            np.testing.assert_allclose(npy(x.grad), p * xv ** (p - 1), rtol=1e-12)

    def test_pow_tensor_exponent(self):
        xv, pv = np.array([0.5, 1.5, 2.0]), np.array([2.0, -1.0, 0.5])
        x, p = leaf64(xv), leaf64(pv)
        y = x ** p
        assert y.grad_fn.name() == "PowBackward1"
        y.sum().backward()
        np.testing.assert_allclose(npy(x.grad), pv * xv ** (pv - 1), rtol=1e-12)
        np.testing.assert_allclose(npy(p.grad), xv ** pv * np.log(xv), rtol=1e-12)
        check_grads(lambda a, b: tg.pow(a, b), xv, pv)

    def test_scalar_base_tensor_exponent(self):
        xv = np.array([0.0, 1.0, -2.0])
        x = leaf64(xv)
        y = 3.0 ** x
        np.testing.assert_allclose(npy(y), 3.0 ** xv, rtol=1e-12)
        y.sum().backward()
        np.testing.assert_allclose(npy(x.grad), 3.0 ** xv * math.log(3.0), rtol=1e-12)

    UNARY = {
        "exp": (np.exp, lambda v: np.exp(v), (-2, 2)),
        "log": (np.log, lambda v: 1 / v, (0.2, 3)),
        "sin": (np.sin, np.cos, (-2, 2)),
        "cos": (np.cos, lambda v: -np.sin(v), (-2, 2)),
        "tanh": (np.tanh, lambda v: 1 - np.tanh(v) ** 2, (-2, 2)),
        "sigmoid": (lambda v: 1 / (1 + np.exp(-v)),
                    lambda v: np.exp(-v) / (1 + np.exp(-v)) ** 2, (-3, 3)),
        "relu": (lambda v: np.maximum(v, 0), lambda v: (v > 0).astype(float), (-2, 2)),
        "sqrt": (np.sqrt, lambda v: 0.5 / np.sqrt(v), (0.2, 3)),
        "abs": (np.abs, np.sign, (-2, 2)),
    }

    @pytest.mark.parametrize("name", sorted(UNARY))
    def test_unary_value_and_grad(self, name):
        f, df, (lo, hi) = self.UNARY[name]
        xv = RNG.uniform(lo, hi, size=(2, 5))
        xv[np.abs(xv) < 0.05] = 0.3           # stay off kinks
        x = leaf64(xv)
        y = getattr(x, name)()
        assert y.grad_fn.name() == name.capitalize() + "Backward0"
        np.testing.assert_allclose(npy(y), f(xv), rtol=1e-12)
        y.sum().backward()
        np.testing.assert_allclose(npy(x.grad), df(xv), rtol=1e-10)
        check_grads(getattr(tg, name), xv)

    def test_unary_float32(self):
        xv = np.array([0.3, 1.2, 2.0], dtype=np.float32)
        for name in sorted(self.UNARY):
            x = tg.tensor(xv, requires_grad=True)
            y = getattr(tg, name)(x)
            assert y.dtype == tg.float32
            y.sum().backward()
            assert x.grad.dtype == tg.float32
            np.testing.assert_allclose(npy(x.grad), self.UNARY[name][1](xv.astype(np.float64)),
                                       rtol=1e-5)

    def test_relu_grad_at_zero_is_zero(self):
        x = tg.tensor([-1.0, 0.0, 1.0], requires_grad=True)
        x.relu().sum().backward()
        assert x.grad.tolist() == [0.0, 0.0, 1.0]

    def test_abs_grad_at_zero_is_zero(self):
        x = tg.tensor([-1.0, 0.0, 1.0], requires_grad=True)
        x.abs().sum().backward()
        assert x.grad.tolist() == [-1.0, 0.0, 1.0]

    def test_composite_fd(self):
        check_grads(lambda x, y: (x.sin() * y.exp() + (x * y).tanh()).sigmoid() / (1 + y * y),
                    RNG.normal(size=(3,)), RNG.normal(size=(3,)))


# ============================================================================= view / unbind
class TestShapes:
    def test_view_reshape(self):
        xv = np.arange(6.0)
        x = leaf64(xv)
        v = x.view(2, 3)
        r = x.reshape((3, 2))
        assert tuple(v.shape) == (2, 3) and tuple(r.shape) == (3, 2)
        assert npy(v).tolist() == xv.reshape(2, 3).tolist()
        w = np.arange(6.0).reshape(2, 3) + 1
        (v * tg.tensor(w, dtype=tg.float64)).sum().backward()
        assert tuple(x.grad.shape) == (6,)
        np.testing.assert_allclose(npy(x.grad), w.reshape(6))
        x.grad = None
        (x.view(-1, 2).sum(0) * tg.tensor([1.0, 10.0], dtype=tg.float64)).sum().backward()
        np.testing.assert_allclose(npy(x.grad), [1, 10, 1, 10, 1, 10])

    def test_view_shares_storage(self):
        t = tg.zeros(2, 3)
        v = t.view(6)
        v[4] = 7.0
        assert t.tolist()[1][1] == 7.0

    def test_view_invalid_shape(self):
        with pytest.raises(RuntimeError, match="invalid for input of size"):
            tg.zeros(6).view(4, 2)

    def test_unbind(self):
        xv = np.arange(6.0).reshape(3, 2)
        x = leaf64(xv)
        parts = x.unbind(0)
        assert isinstance(parts, tuple) and len(parts) == 3
        assert [tuple(p.shape) for p in parts] == [(2,)] * 3
        a, b, c = parts
        (a * 1 + b * 2 + c * 3).sum().backward()
        np.testing.assert_allclose(npy(x.grad), [[1, 1], [2, 2], [3, 3]])

    def test_unbind_unused_parts_get_zero(self):
        x = leaf64(np.ones((3, 2)))
        a, b, c = tg.unbind(x)
        (b * 5).sum().backward()
        np.testing.assert_allclose(npy(x.grad), [[0, 0], [5, 5], [0, 0]])

    def test_unbind_dim1(self):
        xv = RNG.normal(size=(2, 3))
        x = leaf64(xv)
        cols = x.unbind(1)
        assert len(cols) == 3 and tuple(cols[0].shape) == (2,)
        np.testing.assert_allclose(npy(cols[2]), xv[:, 2])
        (cols[0] * cols[2]).sum().backward()
        g = np.zeros_like(xv)
        g[:, 0], g[:, 2] = xv[:, 2], xv[:, 0]
        np.testing.assert_allclose(npy(x.grad), g, rtol=1e-12)

    def test_iteration_unpacking(self):
        xv = np.array([[1.0, 2.0], [3.0, 4.0]])
        x = leaf64(xv)
        r0, r1 = x                          # tuple-unpacking iterates along dim 0
        assert r0.grad_fn.name() == "UnbindBackward0"
        rows = [r for r in x]
        assert len(rows) == 2
        (r0 * r1).sum().backward()
        np.testing.assert_allclose(npy(x.grad), [[3.0, 4.0], [1.0, 2.0]])

    def test_iterate_1d_to_scalars(self):
        x = leaf64([2.0, 3.0, 4.0])
        a, b, c = x
        assert tuple(a.shape) == ()
        (a * b * c).backward()
        np.testing.assert_allclose(npy(x.grad), [12.0, 8.0, 6.0])


# ============================================================================= matmul
class TestMatmul:
    def test_dot_1d_1d(self):
        av, bv = RNG.normal(size=4), RNG.normal(size=4)
        a, b = leaf64(av), leaf64(bv)
        y = a @ b
        assert tuple(y.shape) == ()
        np.testing.assert_allclose(y.item(), av @ bv, rtol=1e-12)
        y.backward()
        np.testing.assert_allclose(npy(a.grad), bv, rtol=1e-12)
        np.testing.assert_allclose(npy(b.grad), av, rtol=1e-12)

    def test_mv_2d_1d(self):
        Av, bv = RNG.normal(size=(3, 4)), RNG.normal(size=4)
        A, b = leaf64(Av), leaf64(bv)
        y = A @ b
        assert tuple(y.shape) == (3,)
        np.testing.assert_allclose(npy(y), Av @ bv, rtol=1e-12)
        g = RNG.normal(size=3)
        y.backward(tg.tensor(g, dtype=tg.float64))
        np.testing.assert_allclose(npy(A.grad), np.outer(g, bv), rtol=1e-12)
        np.testing.assert_allclose(npy(b.grad), Av.T @ g, rtol=1e-12)

    def test_mm_2d_2d(self):
        Av, Bv = RNG.normal(size=(3, 4)), RNG.normal(size=(4, 2))
        A, B = leaf64(Av), leaf64(Bv)
        y = A @ B
        assert tuple(y.shape) == (3, 2)
        np.testing.assert_allclose(npy(y), Av @ Bv, rtol=1e-12)
        G = RNG.normal(size=(3, 2))
        y.backward(tg.tensor(G, dtype=tg.float64))
        np.testing.assert_allclose(npy(A.grad), G @ Bv.T, rtol=1e-12)
        np.testing.assert_allclose(npy(B.grad), Av.T @ G, rtol=1e-12)

    @pytest.mark.parametrize("sa,sb", [((4,), (4,)), ((3, 4), (4,)), ((3, 4), (4, 2)),
                                       ((4,), (4, 2)), ((1, 1), (1, 1))])
    def test_matmul_fd(self, sa, sb):
        check_grads(lambda a, b: a @ b, RNG.normal(size=sa), RNG.normal(size=sb))

    def test_matmul_functions(self):
        A, B = leaf64(np.eye(2) * 2), leaf64([[1.0, 2.0], [3.0, 4.0]])
        v = leaf64([1.0, -1.0])
        out = tg.mm(A, B).sum() + tg.mv(B, v).sum() + tg.dot(v, v) + tg.matmul(A, v).sum()
        out.backward()
        np.testing.assert_allclose(npy(A.grad), [[3, 7], [3, 7]] + np.array([[1, -1], [1, -1]]))

    def test_matmul_only_one_side_requires_grad(self):
        A = leaf64([[1.0, 2.0], [3.0, 4.0]])
        B = tg.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=tg.float64)
        (A @ B).sum().backward()
        np.testing.assert_allclose(npy(A.grad), [[1.0, 2.0], [1.0, 2.0]])
        assert B.grad is None

    @pytest.mark.parametrize("sa,sb", [((3,), (2,)), ((2, 3), (2,)), ((2, 3), (2, 3)), ((3,), (2, 3))])
    def test_matmul_shape_mismatch(self, sa, sb):
        with pytest.raises(RuntimeError):
            tg.ones(*sa, requires_grad=True) @ tg.ones(*sb)


# ============================================================================= conversion
class TestConversion:
    def test_item(self):
        x = tg.tensor([2.5], requires_grad=True)
        v = x.item()
        assert type(v) is float and v == 2.5
        assert type(tg.tensor(3).item()) is int
        assert (x * 2).sum().item() == 5.0
        with pytest.raises(RuntimeError):
            tg.ones(2).item()

    def test_tolist(self):
        assert tg.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
        assert tg.tensor(1.5).tolist() == 1.5
        assert tg.tensor([1.0, 2.0], requires_grad=True).tolist() == [1.0, 2.0]

    def test_numpy(self):
        t = tg.tensor([1.0, 2.0], dtype=tg.float64)
        a = t.numpy()
        assert isinstance(a, np.ndarray) and a.dtype == np.float64
        a[0] = 9.0                          # shares memory
        assert t.tolist() == [9.0, 2.0]
        assert tg.ones(2).numpy().dtype == np.float32
        x = tg.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="requires grad"):
            x.numpy()
        assert x.detach().numpy().tolist() == [1.0, 1.0]

    def test_float_int_bool(self):
        assert float(tg.tensor(2.5)) == 2.5
        assert int(tg.tensor(3)) == 3
        assert bool(tg.tensor(1.0)) is True
        with pytest.raises(RuntimeError):
            bool(tg.ones(2))


# ============================================================================= custom Function
class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g


class ScaleBy(Function):
    """Non-tensor argument k: its gradient slot is None."""
    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None


class MulAdd(Function):
    """Two tensor inputs, two outputs."""
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b, a + b

    @staticmethod
    def backward(ctx, g1, g2):
        a, b = ctx.saved_tensors
        return g1 * b + g2, g1 * a + g2


class TestCustomFunction:
    def test_importable_from_function_module(self):
        if IS_TORCH:
            pytest.skip("tapegrad module path")
        from tapegrad.autograd.function import Function as F
        assert F is tg.autograd.Function

    def test_square(self):
        xv = np.array([1.0, -2.0, 3.0])
        x = leaf64(xv)
        y = Square.apply(x)
        assert y.grad_fn.name() == "SquareBackward"
        assert type(y.grad_fn).__name__ == "SquareBackward"
        assert y.grad_fn.next_functions[0][0].variable is x
        np.testing.assert_allclose(npy(y), xv ** 2)
        (y * 3).sum().backward()
        np.testing.assert_allclose(npy(x.grad), 6 * xv)
        assert x.grad.dtype == tg.float64

    def test_non_tensor_argument(self):
        x = leaf64([1.0, 2.0])
        y = ScaleBy.apply(x, 2.5)
        assert y.grad_fn.name() == "ScaleByBackward"
        y.sum().backward()
        np.testing.assert_allclose(npy(x.grad), [2.5, 2.5])

    def test_two_inputs_two_outputs(self):
        av, bv = np.array([1.0, 2.0]), np.array([3.0, 5.0])
        a, b = leaf64(av), leaf64(bv)
        p, s = MulAdd.apply(a, b)
        assert p.grad_fn is s.grad_fn
        (p * 2 + s * 3).sum().backward()
        np.testing.assert_allclose(npy(a.grad), 2 * bv + 3)
        np.testing.assert_allclose(npy(b.grad), 2 * av + 3)

    def test_only_one_output_used(self):
        a, b = leaf64([1.0, 2.0]), leaf64([3.0, 5.0])
        p, s = MulAdd.apply(a, b)
        p.sum().backward()
        np.testing.assert_allclose(npy(a.grad), [3.0, 5.0])
        np.testing.assert_allclose(npy(b.grad), [1.0, 2.0])

    def test_input_not_requiring_grad(self):
        a = leaf64([1.0, 2.0])
        b = tg.tensor([3.0, 5.0], dtype=tg.float64)
        p, s = MulAdd.apply(a, b)
        p.sum().backward()
        np.testing.assert_allclose(npy(a.grad), [3.0, 5.0])
        assert b.grad is None

    def test_needs_input_grad(self):
        seen = {}

        class Probe(Function):
            @staticmethod
            def forward(ctx, x, k, y):
                seen["needs"] = tuple(ctx.needs_input_grad)
                return x * y

            @staticmethod
            def backward(ctx, g):
                return g, None, None

        Probe.apply(leaf64([1.0]), 3, tg.tensor([2.0], dtype=tg.float64))
        assert seen["needs"] == (True, False, False)

    def test_forward_runs_without_grad(self):
        seen = {}

        class Probe(Function):
            @staticmethod
            def forward(ctx, x):
                seen["en"] = tg.is_grad_enabled()
                y = x * 2
                seen["rg"] = y.requires_grad
                return y

            @staticmethod
            def backward(ctx, g):
                return g * 2

        out = Probe.apply(leaf64([1.0]))
        assert seen == {"en": False, "rg": False}
        assert out.requires_grad

    def test_in_chain_fd(self):
        check_grads(lambda x: Square.apply(x.sin()).exp() * x, RNG.normal(size=4) * 0.5)

    def test_no_grad_apply(self):
        x = leaf64([1.0, 2.0])
        with tg.no_grad():
            y = Square.apply(x)
        assert not y.requires_grad and y.grad_fn is None

    def test_saved_tensor_modified_in_place(self):
        x = leaf64([1.0, 2.0])
        h = x * 1
        y = Square.apply(h)
        h.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()

    def test_retain_graph_twice(self):
        x = leaf64([1.0, 2.0])
        y = Square.apply(x).sum()
        y.backward(retain_graph=True)
        y.backward()
        np.testing.assert_allclose(npy(x.grad), [4.0, 8.0])


# ============================================================================= dtypes
class TestDtypes:
    def test_float64_end_to_end(self):
        x = leaf64([0.3, 0.7])
        y = ((x * 2).exp().log() + x ** 2).sum()
        assert y.dtype == tg.float64
        y.backward()
        assert x.grad.dtype == tg.float64
        np.testing.assert_allclose(npy(x.grad), 2 + 2 * np.array([0.3, 0.7]), rtol=1e-14)

    def test_float64_grad_precision(self):
        # 1 + 1e-10 is representable in float64 but not float32
        x = leaf64([1.0])
        (x * (1 + 1e-10)).sum().backward()
        assert x.grad.tolist() == [1 + 1e-10]

    def test_mixed_promotion(self):
        a = tg.tensor([1.0, 2.0], requires_grad=True)                       # float32
        b = tg.tensor([3.0, 4.0], dtype=tg.float64, requires_grad=True)     # float64
        y = a * b
        assert y.dtype == tg.float64
        assert (a + b).dtype == tg.float64 and (b - a).dtype == tg.float64
        y.sum().backward()
        assert a.grad.dtype == tg.float32 and b.grad.dtype == tg.float64
        assert a.grad.tolist() == [3.0, 4.0] and b.grad.tolist() == [1.0, 2.0]

    def test_mixed_promotion_broadcast(self):
        a = tg.tensor([[1.0], [2.0]], requires_grad=True)                   # float32 (2,1)
        b = tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64, requires_grad=True)
        (a * b).sum().backward()
        assert a.grad.dtype == tg.float32 and tuple(a.grad.shape) == (2, 1)
        assert a.grad.tolist() == [[6.0], [6.0]]
        assert b.grad.dtype == tg.float64 and b.grad.tolist() == [3.0, 3.0, 3.0]

    def test_zero_dim_does_not_promote_dimensioned(self):
        a = tg.tensor([1.0, 2.0], requires_grad=True)
        s = tg.tensor(2.0, dtype=tg.float64, requires_grad=True)
        y = a * s
        assert y.dtype == tg.float32
        y.sum().backward()
        assert s.grad.dtype == tg.float64 and s.grad.item() == 3.0

    def test_int_tensor_with_float_scalar(self):
        t = tg.tensor([1, 2])
        assert (t * 1.5).dtype == tg.float32
        assert (t + 1).dtype == tg.int64
        assert (t / 2).dtype == tg.float32
        assert (t * tg.tensor([1.0, 2.0], dtype=tg.float64)).dtype == tg.float64

    def test_to_double_grad(self):
        a = tg.tensor([1.0, 2.0], requires_grad=True)
        y = a.double() * 3
        assert y.dtype == tg.float64
        y.sum().backward()
        assert a.grad.dtype == tg.float32 and a.grad.tolist() == [3.0, 3.0]


# ============================================================================= errors
class TestErrors:
    def test_non_scalar_without_gradient(self):
        x = tg.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
            (x * 2).backward()
        assert x.grad is None

    def test_backward_twice(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        w = tg.tensor([3.0, 4.0], requires_grad=True)
        s = (x * w).sum()
        s.backward()
        g = x.grad
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            s.backward()
        assert x.grad is g and g.tolist() == [3.0, 4.0] and w.grad.tolist() == [1.0, 2.0]

    @pytest.mark.parametrize("make", [
        lambda x: x.exp(), lambda x: x.sin(), lambda x: x.tanh(), lambda x: x ** 2,
        lambda x: x.sqrt(), lambda x: x.sigmoid(), lambda x: x.log(),
    ], ids=["exp", "sin", "tanh", "pow", "sqrt", "sigmoid", "log"])
    def test_backward_twice_unary(self, make):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        s = make(x).sum()
        s.backward()
        before = x.grad.tolist()
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            s.backward()
        assert x.grad.tolist() == before

    def test_saved_leaf_modified_in_place(self):
        x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = tg.tensor([1.0, 1.0, 1.0], requires_grad=True)
        y = x * w
        with tg.no_grad():
            w.add_(1)
        with pytest.raises(RuntimeError) as ei:
            y.sum().backward()
        msg = str(ei.value)
        assert "modified by an inplace operation" in msg
        assert "is at version 1; expected version 0 instead" in msg
        assert x.grad is None and w.grad is None

    def test_saved_output_modified_in_place(self):
        x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.exp()
        y.add_(1)
        with pytest.raises(RuntimeError) as ei:
            y.sum().backward()
        msg = str(ei.value)
        assert "modified by an inplace operation" in msg
        assert "is at version 1; expected version 0 instead" in msg
        assert x.grad is None

    def test_saved_input_modified_through_view(self):
        x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        h = x * 1
        y = h.sin()
        h.detach().mul_(2)          # bumps the shared counter
        with pytest.raises(RuntimeError, match="is at version 1; expected version 0 instead"):
            y.sum().backward()
        assert x.grad is None

    def test_failed_backward_keeps_existing_grad(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        (x * 2).sum().backward()
        g = x.grad
        y = x.exp()
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        assert x.grad is g and g.tolist() == [2.0, 2.0]
        with pytest.raises(RuntimeError):
            (x * 2).backward(tg.ones(3))
        assert x.grad is g and g.tolist() == [2.0, 2.0]

    def test_inplace_on_non_saved_tensor_is_fine(self):
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        y = h + 1                 # AddBackward0 does not save h
        h.add_(5)
        y.sum().backward()
        assert x.grad.tolist() == [2.0, 2.0]

    def test_no_grad_fn(self):
        t = tg.ones(2)
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
            t.sum().backward()
        x = tg.ones(2, requires_grad=True)
        with tg.no_grad():
            y = (x * 2).sum()
        with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
            y.backward()
        assert x.grad is None

    def test_leaf_inplace(self):
        x = tg.ones(2, requires_grad=True)
        for op in (lambda: x.add_(1), lambda: x.mul_(2), lambda: x.zero_(), lambda: x.fill_(1.0)):
            with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
                op()
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            x += 1
        assert x._version == 0 and x.tolist() == [1.0, 1.0]
        with tg.no_grad():
            x.add_(1)                  # allowed under no_grad
        assert x.tolist() == [2.0, 2.0] and x._version == 1

    def test_int_requires_grad(self):
        with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
            tg.tensor([1, 2], requires_grad=True)
        with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
            tg.tensor([1, 2]).requires_grad_()
        with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
            tg.arange(3, requires_grad=True)

    def test_gradient_shape_mismatch(self):
        x = tg.ones(3, requires_grad=True)
        with pytest.raises(RuntimeError, match="Mismatch in shape"):
            (x * 2).backward(tg.ones(2))
        with pytest.raises(RuntimeError):
            (x * 2).backward(tg.ones(3, 1))
        assert x.grad is None

    def test_matmul_mismatch(self):
        with pytest.raises(RuntimeError, match="cannot be multiplied"):
            tg.ones(2, 3, requires_grad=True) @ tg.ones(2, 3)

    def test_broadcast_mismatch(self):
        with pytest.raises(RuntimeError, match="must match the size"):
            tg.ones(3, requires_grad=True) + tg.ones(2)

    def test_grad_on_input_not_requiring_grad(self):
        x = tg.ones(2, requires_grad=True)
        c = tg.ones(2)
        with pytest.raises(RuntimeError, match="does not require grad"):
            tg.autograd.grad((x * c).sum(), c)
