"""tapegrad against PyTorch: the same small programs run in both libraries.

Each program is a function ``f(lib)`` written against the torch API; ``same(f)`` runs it with
``lib=torch`` and ``lib=tapegrad`` and compares everything it returns: tensor values (by
dtype tolerance), dtypes, shapes, requires_grad, is_leaf, grad_fn names, Python values, and,
when the program raises, the exception type (and, where a test asks, key phrases).
"""
import builtins
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import tapegrad as tg  # noqa: E402

LIBS = (("torch", torch), ("tapegrad", tg))


# ----------------------------------------------------------------------------- harness
from oracle import Raised, TensorInfo, capture, compare, convert, data, fdcheck, leaf, same  # noqa: E402,F401,E501


# ----------------------------------------------------------------------------- harness self-check
def test_harness_detects_differences():
    with pytest.raises(AssertionError):
        compare(Raised(RuntimeError("x")), Raised(ValueError("x")))
    with pytest.raises(AssertionError):       # a wrong gradient (x * x.detach()) is caught
        fdcheck(lambda x: x * x.detach(), [[1.0, 2.0]])


# ----------------------------------------------------------------------------- elementwise
UNARY = {
    "exp": (-2, 2), "log": (0.1, 3), "sin": (-3, 3), "cos": (-3, 3), "tanh": (-3, 3),
    "sigmoid": (-4, 4), "relu": (-2, 2), "sqrt": (0.1, 3), "abs": (-2, 2), "neg": (-2, 2),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("form", ["method", "function"])
def test_unary(name, dtype, form):
    vals = data((2, 3), *UNARY[name], seed=sorted(UNARY).index(name))

    def f(lib):
        x = leaf(lib, vals, dtype)
        y = getattr(x, name)() if form == "method" else getattr(lib, name)(x)
        w = lib.tensor(data((2, 3), 0.5, 1.5, seed=3), dtype=getattr(lib, dtype))
        y.backward(w)
        return y, x.grad, [type(n).__name__ for n, _ in y.grad_fn.next_functions]
    same(f)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_on_non_grad_and_int(name):
    def f(lib):
        out = [getattr(lib, name)(lib.tensor([1.0, 2.0]))]
        if name in ("abs", "neg"):
            out.append(getattr(lib, name)(lib.tensor([-1, 2])))
        return out
    same(f)


BINOPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "pow": lambda a, b: a ** b,
}
SHAPES = [((3,), (3,)), ((3, 1), (4,)), ((2, 3), (3,)), ((3,), (2, 3)), ((), (3,)), ((3,), ()),
          ((2, 1, 3), (4, 1)), ((1,), (2, 2)), ((1, 1), (1,)), ((), ())]


@pytest.mark.parametrize("sa,sb", SHAPES, ids=[str(s) for s in SHAPES])
@pytest.mark.parametrize("op", sorted(BINOPS))
def test_binary_broadcast(op, sa, sb):
    lo = 0.3 if op in ("div", "pow") else -2.0
    av, bv = data(sa, lo, 2.0), data(sb, lo, 2.0)

    def f(lib):
        a, b = leaf(lib, av, "float64"), leaf(lib, bv, "float64")
        y = BINOPS[op](a, b)
        y.sum().backward()
        return y, a.grad, b.grad
    same(f)


@pytest.mark.parametrize("da,db", [("float32", "float64"), ("float64", "float32"),
                                   ("float32", "float32")])
@pytest.mark.parametrize("op", sorted(BINOPS))
def test_binary_dtype_mix(op, da, db):
    av, bv = data((2, 3), 0.3, 2.0), data((3,), 0.3, 2.0)

    def f(lib):
        a, b = leaf(lib, av, da), leaf(lib, bv, db)
        y = BINOPS[op](a, b)
        y.sum().backward()
        return y, a.grad, b.grad
    same(f, loose=True)


@pytest.mark.parametrize("op", sorted(BINOPS))
def test_binary_zero_dim_vs_dimensioned_dtype(op):
    def f(lib):
        a = leaf(lib, [0.5, 1.5], "float32")
        s = leaf(lib, 1.25, "float64")            # 0-dim float64 does not promote
        y = BINOPS[op](a, s)
        z = BINOPS[op](s, a)
        (y.sum() + z.sum()).backward()
        return y, z, a.grad, s.grad
    same(f, loose=True)


@pytest.mark.parametrize("op", sorted(BINOPS))
@pytest.mark.parametrize("scalar", [2, 2.5, -1.5, 0])
@pytest.mark.parametrize("side", ["left", "right"])
def test_binary_python_scalar(op, scalar, side):
    if op == "div" and side == "right" and scalar == 0:
        pytest.skip("division by zero")

    def f(lib):
        x = leaf(lib, [0.5, 1.0, 2.0])
        y = BINOPS[op](scalar, x) if side == "left" else BINOPS[op](x, scalar)
        y.sum().backward()
        return y, x.grad, [None if n is None else type(n).__name__ for n, _ in y.grad_fn.next_functions]
    same(f)


@pytest.mark.parametrize("op", sorted(BINOPS))
def test_binary_int_tensors(op):
    def f(lib):
        a = lib.tensor([1, 2, 3])
        b = lib.tensor([2, 2, 2])
        fl = leaf(lib, [0.5, 1.0, 1.5])
        out = [BINOPS[op](a, b) if op != "pow" else a ** 2, BINOPS[op](a, 2), BINOPS[op](a, 2.5)]
        y = BINOPS[op](fl, a)
        y.sum().backward()
        return out + [y, fl.grad]
    same(f)


def test_binary_one_side_constant_tensor():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        c = lib.tensor([3.0, 4.0])
        outs = [x * c, c * x, x / c, c / x, x - c, c - x, x ** c, c ** x]
        sum(o.sum() for o in outs).backward()
        return outs + [x.grad, [[None if n is None else type(n).__name__ for n, _ in o.grad_fn.next_functions]
                                for o in outs]]
    same(f)


@pytest.mark.parametrize("sa,sb", [((3,), (2,)), ((2, 3), (4, 3)), ((2, 3), (3, 2))])
@pytest.mark.parametrize("op", sorted(BINOPS))
@pytest.mark.parametrize("rg", [True, False])
def test_broadcast_mismatch(op, sa, sb, rg):
    same(lambda lib: BINOPS[op](lib.ones(*sa, requires_grad=rg), lib.ones(*sb)),
         phrases=("must match the size",))


# ----------------------------------------------------------------------------- reductions
DIMS = [None, 0, 1, 2, -1, -3, (0, 1), (0, 2), (2, 0), (-1, 0)]


@pytest.mark.parametrize("dim", DIMS, ids=[str(d) for d in DIMS])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("red", ["sum", "mean"])
def test_reductions(red, dim, keepdim):
    xv = data((2, 3, 4))

    def f(lib):
        x = leaf(lib, xv, "float64")
        y = getattr(x, red)() if dim is None else getattr(x, red)(dim, keepdim=keepdim)
        w = lib.tensor(np.arange(1.0, 1.0 + np.prod(y.shape)).reshape(tuple(y.shape)).tolist(),
                       dtype=lib.float64)
        y.backward(w)
        return y, x.grad
    same(f)


def test_reduction_functional_and_errors():
    def f(lib):
        x = leaf(lib, [[1.0, 2.0], [3.0, 4.0]])
        a = lib.sum(x, dim=0)
        b = lib.mean(x, 1, True)
        (a.sum() + b.sum()).backward()
        return a, b, x.grad, lib.tensor([1, 2, 3]).sum(), x.sum(dim=(0, 1))
    same(f)
    same(lambda lib: lib.ones(2, 3).sum(2))
    same(lambda lib: lib.tensor([1, 2]).mean())
    same(lambda lib: lib.ones(2, 3, requires_grad=True).mean(-3))


def test_reduction_of_0d():
    def f(lib):
        x = leaf(lib, 2.0)
        y = x.sum() * 3 + x.mean()
        y.backward()
        return y, x.grad, x.sum(0), x.sum(0, keepdim=True)
    same(f)


# ----------------------------------------------------------------------------- pow
@pytest.mark.parametrize("p", [2, 3, 0.5, -1, -2.5, 0, 1])
def test_pow_scalar(p):
    def f(lib):
        x = leaf(lib, [0.5, 1.0, 2.5])
        y = x ** p
        z = x.pow(p)
        (y.sum() + z.sum()).backward()
        return y, z, x.grad
    same(f)


def test_pow_special_values():
    def f(lib):
        x = leaf(lib, [0.0, 1.0, 2.0], "float64")
        p = leaf(lib, [2.0, 0.0, 0.5], "float64")
        y = x ** p
        y.sum().backward()
        return y, x.grad, p.grad
    same(f)


def test_pow_negative_base_tensor_exponent():
    def f(lib):
        x = leaf(lib, [-2.0, -1.5], "float64")
        p = leaf(lib, [2.0, 3.0], "float64")
        y = x ** p
        y.sum().backward()
        return y, x.grad, p.grad
    same(f)


# ----------------------------------------------------------------------------- matmul
MM = [((4,), (4,)), ((3, 4), (4,)), ((4,), (4, 2)), ((3, 4), (4, 2)), ((1, 1), (1, 1)),
      ((1,), (1,)), ((5, 1), (1, 5))]


@pytest.mark.parametrize("sa,sb", MM, ids=[str(s) for s in MM])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("which", ["both", "a", "b"])
def test_matmul(sa, sb, dtype, which):
    av, bv = data(sa), data(sb)

    def f(lib):
        a = leaf(lib, av, dtype, rg=which in ("both", "a"))
        b = leaf(lib, bv, dtype, rg=which in ("both", "b"))
        y = a @ b
        w = lib.tensor(np.linspace(0.5, 1.5, max(1, int(np.prod(y.shape)))).reshape(tuple(y.shape)).tolist(),
                       dtype=getattr(lib, dtype))
        y.backward(w)
        return y, a.grad, b.grad
    same(f)


@pytest.mark.parametrize("sa,sb", [((3,), (2,)), ((2, 3), (2,)), ((2, 3), (2, 3)), ((3,), (2, 3)),
                                   ((1,), (3,))])
def test_matmul_mismatch(sa, sb):
    same(lambda lib: lib.ones(*sa, requires_grad=True) @ lib.ones(*sb))


def test_matmul_0d():
    same(lambda lib: lib.tensor(2.0, requires_grad=True) @ lib.ones(3))


def test_matmul_functions():
    Av, Bv, vv = data((2, 3)), data((3, 2)), data((3,))

    def f(lib):
        A = leaf(lib, Av)
        B = leaf(lib, Bv)
        v = leaf(lib, vv)
        outs = [lib.mm(A, B), lib.mv(A, v), lib.dot(v, v), lib.matmul(A, v), A.mm(B), A.matmul(B)]
        sum(o.sum() for o in outs).backward()
        return outs + [A.grad, B.grad, v.grad]
    same(f)


def test_matmul_dtype_mismatch():
    same(lambda lib: lib.ones(2, 2) @ lib.ones(2, 2, dtype=lib.float64))


# ----------------------------------------------------------------------------- shapes
def test_view_reshape_unbind_iter():
    xv = data((2, 3))

    def f(lib):
        x = leaf(lib, xv)
        v = x.view(3, 2)
        r = x.reshape(-1)
        a, b = x
        p, q, s = x.unbind(1)
        out = (v * 2).sum() + (r * r).sum() + (a * b).sum() + (p * s).sum() + q.sum()
        out.backward()
        return v, r, a, b, p, q, s, x.grad
    same(f)


def test_unbind_partial_use_and_names():
    xv = data((3, 2))

    def f(lib):
        x = leaf(lib, xv)
        parts = lib.unbind(x)
        (parts[1] * 4).sum().backward()
        return list(parts) + [x.grad, parts[0].grad_fn is parts[2].grad_fn]
    same(f)


def test_view_errors():
    same(lambda lib: lib.ones(6).view(4, 2))
    same(lambda lib: lib.ones(6, requires_grad=True).reshape(5))


def test_indexing_grads():
    xv = data((3, 4))

    def f(lib):
        x = leaf(lib, xv)
        outs = [x[0], x[1:], x[:, 2], x[-1, 1:3], x[1, 2]]
        sum((o * (k + 1)).sum() for k, o in enumerate(outs)).backward()
        return outs + [x.grad]
    same(f)


# Basic indexing that leaves a contiguous block of a contiguous tensor records a ``slice``
# entry (an element offset, no index map); the rest stays a gather. Both must agree with torch.
BLOCK_KEYS = {
    "rows": lambda x: x[1:], "head": lambda x: x[:-1], "row": lambda x: x[1], "neg_row": lambda x: x[-1],
    "row_block": lambda x: x[2, 1:3], "element": lambda x: x[1, 2, 0], "unsqueeze": lambda x: x[None],
    "ellipsis": lambda x: x[...], "step_one_row": lambda x: x[1:2:3], "empty": lambda x: x[5:],
    "inner": lambda x: x[:, 1:], "strided": lambda x: x[::2], "index_0d": lambda x: x[x.new_tensor(2).long()],
    "transposed": lambda x: x.transpose(0, 1)[1:],
}


@pytest.mark.parametrize("key", sorted(BLOCK_KEYS))
def test_block_indexing_values_names_and_grads(key):
    xv = data((4, 3, 2), seed=5)

    def f(lib):
        x = leaf(lib, xv, "float64")
        y = BLOCK_KEYS[key](x)
        w = lib.tensor(np.random.default_rng(1).uniform(-1, 1, tuple(y.shape)).tolist(),
                       dtype=lib.float64)
        (y * y * w).sum().backward()
        return y, x.grad, y.is_contiguous()
    same(f)


def test_slices_under_double_backward():
    """The Rosenbrock Hessian-vector product (bench_hvp): the slices' recorded VJPs are
    SliceBackwardBackward0 / SelectBackwardBackward0 entries (embed rows), as in torch."""
    xv, vv = data((7,), seed=2), data((7,), seed=3)

    def f(lib):
        x = leaf(lib, xv, "float64")
        a, b = x[:-1], x[1:]
        y = (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum() + x[3] ** 3
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        names = graph_names(g, depth=2)
        (hv,) = lib.autograd.grad((g * lib.tensor(vv, dtype=lib.float64)).sum(), x)
        (g2,) = lib.autograd.grad((x[2] ** 3) * x[4], x, create_graph=True)
        return g, hv, names, g2, g2.grad_fn.name()
    same(f)


def test_inplace_through_nested_slice_views():
    """Views of views get their positions in the base only when an in-place write needs
    them: a write through x[1:][2:] and through a row block of a 2-D view."""
    xv = data((6,), seed=4)

    def f(lib):
        x = leaf(lib, xv, "float64")
        y = x * 2
        w = y[1:][2:]
        w.mul_(3)
        m = (y * 1).view(2, 3)
        v = m[1][1:]
        v.mul_(5)
        (y.sum() + (m * m).sum() + (w * v).sum()).backward()
        return y, w, m, v, x.grad, y._version, w._version, m._version
    same(f)


def test_views_of_a_base_written_in_place_are_re_derived():
    """After an in-place write through one view (or into the base itself), the base's other
    views read from the new base: their gradients and grad_fn names (AsStridedBackward0)
    match torch; central differences of the same computation agree."""
    xv = data((6,), seed=8)

    def body(lib, x):
        y = x * 2
        z = y[1:]
        w = z[2:]
        u = y[:3]
        w.mul_(3)                      # through a view of a view
        a = (z * 3).sum() + (u - y[:3] * 2).sum()      # nothing saved across the next write
        y.add_(1.5)                    # into the base: z and u again
        return a + (z * u[0]).sum() + (y * y).sum()

    def f(lib):
        x = leaf(lib, xv, "float64")
        out = body(lib, x)
        out.backward()
        y = x * 1
        v = y[2:]
        y.mul_(2)
        return out, x.grad, v.grad_fn.name(), v.requires_grad
    same(f)
    fdcheck(lambda x: body(tg, x), [xv])


def test_slice_entries_survive_a_tape_merge():
    """A graph with slice entries recorded on one tape, joined with a larger one whose index
    maps fill the tape's index array: the merge must not move the slices' offsets."""
    xv, wv = data((6,), seed=6), data((6,), seed=7)

    def f(lib):
        x, w, z = leaf(lib, xv, "float64"), leaf(lib, wv, "float64"), leaf(lib, [1.0], "float64")
        a = (w[lib.tensor([5, 0, 2, 1, 4, 3])] * 2).exp() + w.sin() * w
        a = a * a.cos() + a
        (z * 2).sum().backward()            # the graph of a is no longer the current tape
        b = x[1:] * x[:-1]                  # recorded on a new, smaller tape
        c = (a[1:] * b).sum() + x[2] * a[0]
        c.backward()
        return c, x.grad, w.grad, z.grad
    same(f)


@pytest.mark.parametrize("pad", [(2, 1), (0, 3), (0, 0, 1, 2)])
def test_zero_padding_of_the_first_dim(pad):
    xv = data((3,) if len(pad) == 2 else (2, 3), seed=8)

    def f(lib):
        x = leaf(lib, xv, "float64")
        y = lib.nn.functional.pad(x, pad)
        (g,) = lib.autograd.grad((y ** 3).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        return y, g, h, y.grad_fn.name()
    same(f)


# ----------------------------------------------------------------------------- graph structure
def graph_names(t, depth=4):
    def walk(node, d):
        if node is None:
            return None
        name = type(node).__name__
        if d == 0:
            return name
        return [name, [walk(n, d - 1) for n, _ in node.next_functions]]
    return walk(t.grad_fn, depth)


def test_next_functions_structure():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [3.0, 4.0])
        c = lib.tensor([5.0, 6.0])
        y = ((x * w + c).exp() / (2 - x)).sum() + (x ** 2).mean()
        accs = y.grad_fn.next_functions[1][0].next_functions[0][0].next_functions[0][0]
        return graph_names(y, 6), accs.variable is x
    same(f)


def test_custom_function_graph_structure():
    def f(lib):
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, k):
                return a * k

            @staticmethod
            def backward(ctx, g):
                return g * 2, None

        x = leaf(lib, [1.0, 2.0])
        y = Twice.apply(x * 3, 2).sum()
        return graph_names(y, 4)
    same(f)


# ----------------------------------------------------------------------------- custom Function
def make_functions(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    class Affine(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, b, scale):
            ctx.save_for_backward(x, w)
            ctx.scale = scale
            return (x * w + b) * scale

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w * ctx.scale, g * x * ctx.scale, g * ctx.scale, None

    class SplitSum(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum(), x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 + 2 * g2

    return Cube, Affine, SplitSum


def test_custom_function_values_and_grads():
    def f(lib):
        Cube, Affine, SplitSum = make_functions(lib)
        x = leaf(lib, [0.5, -1.0, 2.0], "float64")
        w = leaf(lib, [1.0, 2.0, 3.0], "float64")
        b = lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64)
        y = Cube.apply(x)
        z = Affine.apply(y, w, b, 0.5)
        s, d = SplitSum.apply(z)
        (s * 3 + (d * d).sum()).backward()
        return y, z, s, d, x.grad, w.grad, b.grad, [y.grad_fn.name(), z.grad_fn.name(), s.grad_fn.name()]
    same(f)


def test_custom_function_no_grad_inputs():
    def f(lib):
        Cube, _, _ = make_functions(lib)
        y = Cube.apply(lib.tensor([1.0, 2.0]))
        return y, y.requires_grad, y.grad_fn is None
    same(f)


def test_custom_function_saved_tensor_modified():
    def f(lib):
        Cube, _, _ = make_functions(lib)
        x = leaf(lib, [1.0, 2.0])
        h = x * 1
        y = Cube.apply(h)
        h.add_(1)
        y.sum().backward()
    same(f, phrases=("modified by an inplace operation",))


def test_custom_function_backward_twice():
    def f(lib):
        Cube, _, _ = make_functions(lib)
        x = leaf(lib, [1.0, 2.0])
        y = Cube.apply(x).sum()
        y.backward()
        y.backward()
    same(f, phrases=("Trying to backward through the graph a second time",))


def test_custom_function_retain_graph():
    def f(lib):
        Cube, _, _ = make_functions(lib)
        x = leaf(lib, [1.0, 2.0])
        y = Cube.apply(x).sum()
        y.backward(retain_graph=True)
        g1 = x.grad.clone()
        y.backward()
        return g1, x.grad
    same(f)


def test_custom_function_wrong_grad_count():
    def f(lib):
        _, Affine, _ = make_functions(lib)

        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                return g

        x = leaf(lib, [1.0])
        Bad.apply(x, leaf(lib, [2.0])).sum().backward()
    same(f)


# ----------------------------------------------------------------------------- in-place, versions
def test_inplace_on_non_leaf():
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        y = x * 2
        v0 = y._version
        y.add_(1)
        y.mul_(3)
        y += x
        y -= 1
        y *= 2
        y /= 4
        out = [y, y._version - v0, y.grad_fn.name()]
        y.sum().backward()
        return out + [x.grad]
    same(f)


def test_inplace_fill_zero_on_non_leaf():
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        y = x * 2
        y.fill_(1.5)
        z = x * 3
        z.zero_()
        ((y + z) * x).sum().backward()
        return y, z, x.grad, y.grad_fn.name(), z.grad_fn.name()
    same(f)


def test_inplace_setitem_on_non_leaf():
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        y = x * 2
        y[0] = 5.0
        y.sum().backward()
        return y, x.grad
    same(f)


def test_inplace_on_view_of_non_leaf():
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        y = x * 2
        y[1:].mul_(2)
        y.sum().backward()
        return y, x.grad
    same(f)


@pytest.mark.parametrize("op", ["add_", "sub_", "mul_", "div_", "zero_", "fill_", "copy_", "iadd",
                                "setitem"])
def test_version_counter(op):
    def f(lib):
        t = lib.tensor([1.0, 2.0, 3.0])
        v = t.view(3, 1)
        d = t.detach()
        data = t.data
        for _ in range(2):
            if op == "zero_":
                t.zero_()
            elif op == "fill_":
                t.fill_(2.0)
            elif op == "copy_":
                t.copy_(lib.ones(3))
            elif op == "iadd":
                t += 1
            elif op == "setitem":
                t[1] = 4.0
            else:
                getattr(t, op)(2.0)
        data.add_(1)
        return t, t._version, v._version, d._version, data._version
    same(f)


@pytest.mark.parametrize("op", ["add_", "mul_", "zero_", "fill_", "copy_", "iadd", "setitem"])
def test_leaf_inplace_error(op):
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        if op == "zero_":
            x.zero_()
        elif op == "fill_":
            x.fill_(1.0)
        elif op == "copy_":
            x.copy_(lib.ones(2))
        elif op == "iadd":
            x += 1
        elif op == "setitem":
            x[0] = 3.0
        else:
            getattr(x, op)(2.0)
    same(f, phrases=("a leaf Variable that requires grad is being used in an in-place operation",))


@pytest.mark.parametrize("make", ["mul_w", "div_w", "exp", "tanh", "sigmoid", "sqrt", "pow_t", "matmul",
                                  "sin", "log", "abs", "relu", "pow_s"])
def test_saved_tensor_version_error(make):
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        w = leaf(lib, [0.5, 1.5, 2.5])
        h = x * 1
        y = {"mul_w": lambda: h * w, "div_w": lambda: w / h, "exp": lambda: h.exp(),
             "tanh": lambda: h.tanh(), "sigmoid": lambda: h.sigmoid(), "sqrt": lambda: h.sqrt(),
             "pow_t": lambda: w ** h, "matmul": lambda: w @ h, "sin": lambda: h.sin(),
             "log": lambda: h.log(), "abs": lambda: h.abs(), "relu": lambda: h.relu(),
             "pow_s": lambda: h ** 3}[make]()
        out = y if make in ("exp", "tanh", "sigmoid", "sqrt", "relu") else h
        out.mul_(2)
        y.sum().backward()
    same(f, phrases=("modified by an inplace operation", "is at version 1; expected version 0 instead"))


def test_inplace_on_unsaved_tensor_is_fine():
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        h = x * 2
        y = (h + 1) - h.neg()
        h.add_(10)
        y.sum().backward()
        return y, x.grad
    same(f)


def test_version_error_leaf_exact_message():
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        w = leaf(lib, [1.0, 1.0, 1.0])
        y = x * w
        with lib.no_grad():
            w.add_(1)
        y.sum().backward()
    rt, rg = same(f)
    assert rg.msg == rt.msg


def test_version_error_output_exact_message():
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        y = x.exp()
        y.add_(1)
        y.sum().backward()
    rt, rg = same(f)
    assert rg.msg == rt.msg


# ----------------------------------------------------------------------------- backward API
def test_retain_graph():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        s = (x.exp() * x.sin()).sum()
        s.backward(retain_graph=True)
        g1 = x.grad.clone()
        s.backward(retain_graph=True)
        g2 = x.grad.clone()
        s.backward()
        return g1, g2, x.grad
    same(f)


def test_backward_twice_error():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        s = (x * x).sum()
        s.backward()
        s.backward()
    same(f, phrases=("Trying to backward through the graph a second time",))


def test_backward_twice_no_saved_tensors_ok():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        s = (x + 1).sum() - x.sum()
        s.backward()
        s.backward()
        return x.grad
    same(f)


def test_reuse_intermediate_after_backward():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        h = x + 1                # saves nothing: reusable after backward
        h.sum().backward()
        (h * 3).sum().backward()
        return x.grad
    same(f)

    def g(lib):
        x = leaf(lib, [1.0, 2.0])
        h = x.exp()              # ExpBackward0 saved its result, freed by the first backward
        h.sum().backward()
        (h * 3).sum().backward()
    same(g, phrases=("Trying to backward through the graph a second time",))


def test_errors_and_grad_untouched():
    def f(lib):
        x = leaf(lib, [1.0, 2.0, 3.0])
        res = []
        for prog in (lambda: (x * 2).backward(),
                     lambda: (x * 2).backward(lib.ones(2)),
                     lambda: lib.ones(2).sum().backward(),
                     lambda: lib.tensor([1, 2], requires_grad=True)):
            try:
                prog()
                res.append("no error")
            except Exception as e:  # noqa: BLE001
                res.append(e)
            res.append(x.grad)
        return res
    rt, rg = same(f)
    for phrase, i in (("grad can be implicitly created only for scalar outputs", 0),
                      ("Mismatch in shape", 2),
                      ("element 0 of tensors does not require grad and does not have a grad_fn", 4),
                      ("Only Tensors of floating point and complex dtype can require gradients", 6)):
        assert phrase in rt[i].msg
        assert phrase in rg[i].msg, "%r not in %r" % (phrase, rg[i].msg)


def test_accumulation_and_zero():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        (x * x).sum().backward()
        g = x.grad
        (x * 3).sum().backward()
        same_obj = x.grad is g
        g1 = x.grad.clone()
        x.grad.zero_()
        (x ** 3).sum().backward()
        return g1, x.grad, same_obj, x.grad is g
    same(f)


def test_multiple_roots_and_inputs():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [3.0, 4.0])
        y = (x * w).exp()
        lib.autograd.backward([y.sum(), (y * y).sum()])
        g = [x.grad.clone(), w.grad.clone()]
        x.grad = None
        w.grad = None
        (x * w).sum().backward(inputs=[x])
        return g + [x.grad, w.grad]
    same(f)


def test_autograd_grad():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        w = leaf(lib, [3.0, 4.0])
        u = leaf(lib, [5.0])
        h = x * w
        s = (h * h).sum()
        gs = lib.autograd.grad(s, (x, w, h, u), allow_unused=True, retain_graph=True)
        gy = lib.autograd.grad(h, x, grad_outputs=lib.tensor([1.0, -1.0]))
        return list(gs) + list(gy) + [type(gs).__name__, x.grad, w.grad]
    same(f)


def test_autograd_grad_unused_error():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        u = leaf(lib, [5.0])
        lib.autograd.grad((x * 2).sum(), (x, u))
    same(f, phrases=("appears to not have been used in the graph",))


def test_retain_grad():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        h = x * 3
        h.retain_grad()
        (h * h).sum().backward()
        return h.grad, x.grad, h.retains_grad, x.retains_grad
    same(f)


# ----------------------------------------------------------------------------- grad modes
def test_no_grad_and_modes():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        with lib.no_grad():
            a = x * 2
            with lib.enable_grad():
                b = x * 2
            c = x.exp()
        with lib.set_grad_enabled(False):
            d = x + 1
        e = x * 2

        @lib.no_grad()
        def dec():
            return x * 5

        with lib.inference_mode():
            g = x * 2
        return a, b, c, d, e, dec(), g, lib.is_grad_enabled()
    same(f)


def test_set_grad_enabled_decorator():
    def f(lib):
        x = leaf(lib, [1.0])

        @lib.set_grad_enabled(False)
        def g():
            return x * 2

        after_def = lib.is_grad_enabled()
        r = g()
        return after_def, r, lib.is_grad_enabled()
    try:
        same(f)
    finally:
        torch.set_grad_enabled(True)
        tg.set_grad_enabled(True)


def test_training_loop_matches():
    X = data((8, 3), seed=11)
    Y = data((8,), seed=12)

    def f(lib):
        w = lib.zeros(3, requires_grad=True)
        b = lib.zeros(1, requires_grad=True)
        x = lib.tensor(X)
        y = lib.tensor(Y)
        losses = []
        for _ in range(20):
            pred = x @ w + b
            loss = ((pred - y) ** 2).mean()
            loss.backward()
            with lib.no_grad():
                w -= 0.1 * w.grad
                b -= 0.1 * b.grad
            w.grad.zero_()
            b.grad.zero_()
            losses.append(loss.item())
        return losses, w, b, w._version
    same(f)


# ----------------------------------------------------------------------------- constructors
def test_constructors():
    def f(lib):
        return [lib.tensor([1, 2]), lib.tensor([1.0, 2]), lib.tensor(3.0), lib.tensor(True),
                lib.tensor([[1.0]], dtype=lib.float64), lib.ones(2, 3), lib.zeros((2,)),
                lib.full((2, 2), 3), lib.full((2,), 1.5), lib.arange(4), lib.arange(1.0, 2.0, 0.5),
                lib.arange(0, 5, 2), lib.linspace(-1, 1, 5), lib.eye(3), lib.eye(2, 4),
                lib.ones_like(lib.ones(2, dtype=lib.float64)), lib.zeros_like(lib.tensor([1, 2])),
                lib.full_like(lib.ones(3), 7), lib.rand(2, 3).shape, lib.randn(4).dtype,
                lib.rand_like(lib.ones(2, dtype=lib.float64)).dtype, lib.randn_like(lib.ones(3)).shape,
                lib.ones(2, requires_grad=True), lib.get_default_dtype()]
    same(f)


def test_item_tolist_numpy():
    def f(lib):
        x = leaf(lib, [[1.5, 2.0]])
        return [x.sum().item(), x.tolist(), lib.tensor(7).item(), lib.tensor(2.5).tolist(),
                x.detach().numpy().tolist(), str(x.detach().numpy().dtype), len(x[0]),
                x.dim(), x.numel(), tuple(x.size()), x.size(1), x.shape[1]]
    same(f)
    same(lambda lib: leaf(lib, [1.0]).numpy())
    same(lambda lib: lib.ones(3).item())


# ----------------------------------------------------------------------------- graph lifetimes
def threaded(f):
    """f(lib) run in a fresh thread: per-thread recording state starts clean, and whatever a
    program breaks there stays there."""
    import threading

    def g(lib):
        box = {}

        def run():
            try:
                box["r"] = f(lib)
            except Exception as exc:  # noqa: BLE001
                box["r"] = exc
        th = threading.Thread(target=run)
        th.start()
        th.join(60)
        if isinstance(box.get("r"), Exception):
            raise box["r"]
        return box["r"]
    return g


def test_join_across_backward_with_custom_function():
    def f(lib):
        Cube, _, _ = make_functions(lib)
        x = leaf(lib, [1.0, 2.0])
        y = leaf(lib, [3.0, 4.0])
        z = leaf(lib, [1.0])
        a = Cube.apply(x) + 1
        ga = a.grad_fn
        (z * 2).sum().backward()
        b = Cube.apply(y) * x
        c = (a * b).sum()
        c.backward()
        w = leaf(lib, [5.0])
        (w * w).sum().backward()          # recording keeps working in this thread
        return x.grad, y.grad, z.grad, a.grad_fn is ga, graph_names(c, 5), w.grad
    same(threaded(f))


def test_interleaved_graphs_across_backwards():
    def f(lib):
        xs = [leaf(lib, [float(i) / 4]) for i in range(5)]
        outs = [(x * (i + 1)).exp() for i, x in enumerate(xs)]
        for i in (3, 1):
            outs[i].sum().backward()
        tot = sum(o.sum() for i, o in enumerate(outs) if i not in (3, 1))
        tot.backward()
        late = [(x * x).sum() for x in xs]
        for s in reversed(late):
            s.backward()
        return [x.grad for x in xs]
    same(threaded(f))


def test_intermediate_reused_after_unrelated_backward():
    def f(lib):
        x = leaf(lib, [1.0, 2.0])
        y = x * 2
        (x * 3).sum().backward()
        h = y.exp()
        h.sum().backward()
        return x.grad, h
    same(threaded(f))
