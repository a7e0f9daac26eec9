"""In-place operations, writes through views and setitem, against torch (tests/oracle.py's
``same``) and, for gradients, against finite differences (``fdcheck``, no torch needed).

Each program ``f(lib, *xs)`` is run on leaves made from numpy arrays: the oracle compares its
result (value, dtype, grad_fn name, requires_grad) and the leaves' gradients with torch's;
fdcheck compares tapegrad's gradient with central differences of the same program.
"""
import numpy as np
import pytest

import tapegrad as tg
from oracle import fdcheck, same

A3 = np.array([0.4, -1.3, 2.1])
B3 = np.array([1.5, 2.0, -0.5])
P3 = np.array([0.7, 1.3, 2.1])            # positive: log_, sqrt_
M23 = np.array([[0.3, -1.2, 0.8], [1.1, 0.4, -0.6]])
M22 = np.array([[0.3, -1.2], [1.1, 0.4]])


def run(lib, f, arrays, dtype="float32"):
    """f's result and the leaves' gradients of sum(w * result)."""
    xs = [lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True) for a in arrays]
    out = f(lib, *xs)
    w = np.random.default_rng(3).standard_normal(tuple(out.shape))
    if out.requires_grad:
        (out * lib.tensor(w, dtype=out.dtype)).sum().backward()
    return out, [x.grad for x in xs]


def check(f, *arrays, fd=True):
    same(lambda lib: run(lib, f, arrays))
    if fd:
        fdcheck(lambda *xs: f(tg, *xs), arrays)


# ----------------------------------------------------------------- 1: the operand requires grad
GRAD_INTO_PLAIN = {
    "total += sum": lambda L, w: _iadd(L.tensor(0.0, dtype=w.dtype), (w * 2).sum()),
    "acc += x": lambda L, x: _iadd(L.zeros(3, dtype=x.dtype), x),
    "acc.add_ alpha": lambda L, x: L.ones(3, dtype=x.dtype).add_(x, alpha=2),
    "acc.sub_": lambda L, x: L.ones(3, dtype=x.dtype).sub_(x),
    "acc *= x": lambda L, x: _imul(L.ones(3, dtype=x.dtype) * 3, x),
    "acc /= x": lambda L, x: L.ones(3, dtype=x.dtype).div_(x),
    "acc -= x*x": lambda L, x: _isub(L.ones(3, dtype=x.dtype), x * x),
    "copy_": lambda L, x: L.ones(3, dtype=x.dtype).copy_(x),
    "out[0] += x": lambda L, x: _row_iadd(L.zeros(2, 3, dtype=x.dtype), x),
    "z[1:] += x[1:]": lambda L, x: _slice_iadd(L.zeros(3, dtype=x.dtype), x),
    "z[1] += x[0]*3": lambda L, x: _elem_iadd(L.zeros(3, dtype=x.dtype), x),
    "z[1].copy_(v)": lambda L, x: _copy_row(L.zeros(2, 3, dtype=x.dtype), x),
    "z[1:].copy_(v)": lambda L, x: _copy_tail(L.zeros(4, dtype=x.dtype), x),
    "row = z[1]; row.copy_": lambda L, x: _copy_alias(L.zeros(2, 3, dtype=x.dtype), x),
    "z[0].fill_(x[1])": lambda L, x: _fill_row(L.zeros(2, 3, dtype=x.dtype), x),
    "z.fill_(x[1])": lambda L, x: L.zeros(3, dtype=x.dtype).fill_(x[1]),
}


def _iadd(a, b):
    a += b
    return a


def _isub(a, b):
    a -= b
    return a


def _imul(a, b):
    a *= b
    return a


def _row_iadd(z, x):
    z[0] += x
    return z


def _slice_iadd(z, x):
    z[1:] += x[1:]
    return z


def _elem_iadd(z, x):
    z[1] += x[0] * 3
    return z


def _copy_row(z, x):
    z[1].copy_(x)
    return z


def _copy_tail(z, x):
    z[1:].copy_(x)
    return z


def _copy_alias(z, x):
    row = z[1]
    row.copy_(x * 2)
    return z


def _fill_row(z, x):
    z[0].fill_(x[1])
    return z


@pytest.mark.parametrize("name", sorted(GRAD_INTO_PLAIN))
def test_grad_operand_into_plain_tensor(name):
    check(GRAD_INTO_PLAIN[name], A3)


# ----------------------------------------------------------------- 2: chained setitem, views
def _chain_elem(L, a):
    z = L.zeros(2, 2, dtype=a.dtype)
    z[0][1] = a[0, 1] * 2
    z[1][0] = a[1, 1]
    return z


def _row_alias_set(L, a):
    z = L.zeros(2, 3, dtype=a.dtype)
    row = z[1]
    row[:] = a[0]
    return z


def _chain_row_set(L, a):
    z = L.zeros(2, 3, dtype=a.dtype)
    z[1][:] = a[1]
    return z


def _col_elem_set(L, a):
    z = L.zeros(2, 3, dtype=a.dtype)
    z[:, 1][0] = a[0, 2]
    return z


def _t_row_set(L, a):
    z = L.zeros(2, 3, dtype=a.dtype)
    z.t()[1] = a[:, 0]
    return z


def _view_read_after(L, a):
    z = L.zeros(2, 3, dtype=a.dtype)
    row = z[1]                         # made before z gets a graph
    z[1, 1:] = a[0, :2]
    return row * 2


def _view_of_grad_base(L, a):
    y = a * 1
    r = y[1]
    r[0] = a[0, 0] * 3
    return y


@pytest.mark.parametrize("f", [_chain_elem, _row_alias_set, _chain_row_set, _col_elem_set,
                               _t_row_set, _view_read_after, _view_of_grad_base])
def test_setitem_through_views(f):
    arr = M22 if f is _chain_elem else M23
    check(f, arr)


# ----------------------------------------------------------------- 3: int indexing is a view
def test_element_writes_reach_the_tensor():
    def f(L):
        z = L.zeros(3)
        z[1].add_(5)
        z[0].fill_(9)
        e = z[2]
        z[2] = 4
        m = L.zeros(2, 3)
        m[0, 1].add_(2)
        m.select(0, 1).add_(1)
        m[1].select(0, 2).mul_(3)
        x = L.zeros(4)
        for v in x:
            v.add_(1)
        x.unbind()[2].add_(5)
        x[3].numpy()[...] = 7
        return z, e, m, x, z[1].data_ptr() == z.data_ptr() + 4

    same(f)


def test_element_write_with_grad():
    def f(L, x):
        y = x * 1
        y[1] -= 5
        y[2] *= x[0]
        return y
    check(f, A3)


def test_no_grad_element_write_on_parameter():
    def f(L):
        w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with L.no_grad():
            w[1].mul_(5)
            w[0] += 1
            w[2:].zero_()
        return w
    same(f)


# ----------------------------------------------------------------- 4: ops needing old self
def _inplace_method(name, *args, view=None):
    def f(L, x, b):
        y = x * 2
        t = y if view is None else view(y)
        getattr(t, name)(*[b if a == "b" else a for a in args])
        return y
    return f


OLD_SELF = {
    "clamp_ min": _inplace_method("clamp_", 0.0),
    "clamp_ -1 1": _inplace_method("clamp_", -1.0, 1.0),
    "mul_ b": _inplace_method("mul_", "b"),
    "div_ b": _inplace_method("div_", "b"),
    "pow_ 2": _inplace_method("pow_", 2),
    "square_": _inplace_method("square_"),
    "abs_": _inplace_method("abs_"),
    "sin_": _inplace_method("sin_"),
    "reciprocal_": _inplace_method("reciprocal_"),
    "tanh_": _inplace_method("tanh_"),
    "exp_": _inplace_method("exp_"),
    "sigmoid_": _inplace_method("sigmoid_"),
    "y[0] *= b[0]": lambda L, x, b: _elem_imul(x * 2, b),
    "y[1:] *= b[1:]": lambda L, x, b: _slice_imul(x * 2, b),
    "y[0] /= b": lambda L, x, b: _elem_idiv(x * 2, b),
    "r = y[0]; r.mul_": lambda L, x, b: _row_mul(x * 2, b),
    "y *= x.sum()": lambda L, x, b: _imul(x * 2, x.sum()),
    "y *= b": lambda L, x, b: _imul(x * 2, b),
    "y /= b": lambda L, x, b: _idiv(x * 2, b),
    "y **= b": lambda L, x, b: _ipow(x * 2, b * b),
    "y.mul_(y)": lambda L, x, b: (x * 2).mul_(b * 1),
}


def _elem_imul(y, b):
    y[0] *= b[0]
    return y


def _row_mul(y, b):
    r = y[0]
    r.mul_(b[1])
    return y


def _slice_imul(y, b):
    y[1:] *= b[1:]
    return y


def _elem_idiv(y, b):
    y[0] /= b[2]
    return y


def _idiv(a, b):
    a /= b
    return a


def _ipow(a, b):
    a **= b
    return a


@pytest.mark.parametrize("name", sorted(OLD_SELF))
def test_inplace_op_saving_the_old_value(name):
    check(OLD_SELF[name], A3 if "pow" not in name else P3, B3)


def test_log_and_sqrt_in_place():
    check(lambda L, x: (x * 2).log_() + (x * 1).sqrt_(), P3)


def test_add_does_not_copy_self():
    # add_/exp_ save nothing of self: the stored result is the only array (no copy made)
    x = tg.tensor(A3, requires_grad=True)
    y = x * 2
    tp = y._tape
    n = len(tp.XO[1])
    y.add_(1.0)
    y.exp_()
    assert len(tp.XO[1]) == n + 1             # exp_'s saved output, nothing of y's old value


def test_saved_result_then_modified_again():
    # exp_ saves its result (self): a later add_ makes it stale, as in torch
    def f(L):
        x = L.tensor([0.5, -1.5, 2.0], requires_grad=True)
        y = x * 2
        y.exp_()
        y.add_(1)
        y.sum().backward()
    same(f, phrases=("output 0 of Exp, is at version 2; expected version 1",))


# ----------------------------------------------------------------- 5: dtypes
def test_lower_precision_result_is_cast():
    def f(L, x):
        y = x * 1
        y += L.ones(3, dtype=L.float64)
        y += L.tensor([1.0, 2.0, 3.0], dtype=L.float64, requires_grad=True) * 2
        return y
    same(lambda L: run(L, f, [A3]))

    def g(x):                                # float32 target, float64 operand with grad
        y = x.float() * 1
        y += x * x
        assert y.dtype is tg.float32
        return y
    fdcheck(g, [A3], rtol=1e-4, atol=1e-4, eps=1e-3)


def test_dtype_errors_and_casts():
    def f(L):
        z = L.zeros(3, dtype=L.int64)
        z += L.ones(3, dtype=L.int32)
        z[1] = L.tensor([1.5, 2.5, 3.5], requires_grad=True)[1]
        z.copy_(L.tensor([1.7, 2.0, 3.0], requires_grad=True))
        return z
    same(f)
    same(lambda L: L.zeros(3, dtype=L.int64).add_(L.ones(3)), phrases=(
        "result type Float can't be cast to the desired output type Long",))
    same(lambda L: L.zeros(3, dtype=L.int64).mul_(1.5))


# ----------------------------------------------------------------- 6: diagonal
def test_diagonal_writes():
    def f(L, x):
        A = L.zeros(3, 3, dtype=x.dtype)
        A.diagonal().add_(1.0)
        B = L.zeros(3, 3, dtype=x.dtype)
        B.diagonal().fill_(3)
        C = L.zeros(3, 3, dtype=x.dtype)
        C.diagonal()[:] = x
        D = x.outer(x) if hasattr(x, "outer") else x[:, None] * x[None, :]
        D.diagonal().mul_(x)
        return A + B + C + D
    check(f, A3)


# ----------------------------------------------------------------- 7: operators
def test_in_place_operators_modify_in_place():
    def f(L, x):
        y = x * 1
        alias = y.view(3)
        y **= 2
        return alias
    check(f, A3)

    def g(L):
        i = L.tensor([1, 2, 3])
        j = i
        i &= 2
        i |= 8
        i ^= 1
        b = L.tensor([True, False])
        c = b
        b &= L.tensor([True, True])
        b |= False
        b ^= True
        k = L.tensor([5, 7])
        k %= 3
        return j, c, k
    same(g)


# ----------------------------------------------------------------- 8: errors
ERRORS = {
    "in-place broadcast": (lambda L: (L.ones(3, requires_grad=True) * 1).add_(L.ones(2, 3)),
                           "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    "in-place broadcast no grad": (lambda L: L.ones(2, 1).mul_(L.ones(2, 3)),
                                   "output with shape [2, 1] doesn't match the broadcast shape"),
    "setitem shape": (lambda L: L.zeros(3).__setitem__(slice(None), L.ones(2)),
                      "The expanded size of the tensor (3) must match the existing size (2) at "
                      "non-singleton dimension 0.  Target sizes: [3].  Tensor sizes: [2]"),
    "setitem shape 2d": (lambda L: L.zeros(2, 3).__setitem__((slice(None), slice(1, None)),
                                                             L.ones(3, 1)),
                         "The expanded size of the tensor (2) must match the existing size (3) "
                         "at non-singleton dimension 0"),
    "setitem shape grad": (lambda L: (L.ones(3, requires_grad=True) * 1).__setitem__(
        slice(None), L.ones(2)), "The expanded size of the tensor (3)"),
    "setitem more dims": (lambda L: L.zeros(2, 3).__setitem__(0, L.ones(2, 3)),
                          "the number of sizes provided (1) must be greater or equal to the "
                          "number of dimensions in the tensor (2)"),
    "index_put shape": (lambda L: L.zeros(3).__setitem__([0, 1], L.ones(3)),
                        "shape mismatch: value tensor of shape [3] cannot be broadcast to "
                        "indexing result of shape [2]"),
    "expanded add_": (lambda L: L.zeros(3, 1).expand(3, 4).add_(1),
                      "more than one element of the written-to tensor refers to a single memory"),
    "expanded setitem": (lambda L: L.zeros(3, 1).expand(3, 4).__setitem__(0, 1.0),
                         "more than one element of the written-to tensor"),
    "overlapping setitem": (lambda L: _overlap_set(L.arange(5.0)),
                            "some elements of the input tensor and the written-to tensor refer to "
                            "a single memory location"),
    "overlapping add_": (lambda L: L.arange(6.0).view(2, 3).mul_(L.arange(6.0).view(2, 3)[0]),
                         None),
    "overlapping add_ same storage": (lambda L: _overlap_row(L.arange(6.0).view(2, 3)),
                                      "some elements of the input tensor"),
    "transposed add_": (lambda L: _overlap_t(L.arange(4.0).view(2, 2)),
                        "some elements of the input tensor"),
    "copy_ shape": (lambda L: L.zeros(2, 3).copy_(L.ones(3, 3)),
                    "The size of tensor a (2) must match the size of tensor b (3) at "
                    "non-singleton dimension 0"),
    "copy_ more dims": (lambda L: L.zeros(3).copy_(L.ones(2, 3)),
                        "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    "copy_ list": (lambda L: L.zeros(3).copy_([1.0, 2.0, 3.0]), "must be Tensor, not list"),
    "copy_ array": (lambda L: L.zeros(3).copy_(np.ones(3)), "must be Tensor, not numpy.ndarray"),
    "fill_ 1-d": (lambda L: L.zeros(3).fill_(L.tensor([1.0, 2.0])),
                  "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions."),
    "leaf setitem": (lambda L: L.ones(3, requires_grad=True).__setitem__(0, 1.0),
                     "a view of a leaf Variable that requires grad is being used in an in-place "
                     "operation."),
    "leaf whole setitem": (lambda L: L.ones(3, requires_grad=True).__setitem__(Ellipsis, 1.0),
                           "a leaf Variable that requires grad is being used in an in-place"),
    "leaf view mul_": (lambda L: L.ones(3, requires_grad=True)[0].mul_(2),
                       "a view of a leaf Variable that requires grad"),
    "leaf mul_": (lambda L: L.ones(3, requires_grad=True).mul_(2),
                  "a leaf Variable that requires grad is being used in an in-place operation."),
    "leaf copy_": (lambda L: L.ones(3, requires_grad=True).copy_(L.ones(3)),
                   "a leaf Variable that requires grad"),
    "list value": (lambda L: L.zeros(3).__setitem__(slice(None), [1.0, 2.0, 3.0]),
                   "can't assign a list to a torch.FloatTensor"),
    "numpy value": (lambda L: L.zeros(3).__setitem__(0, np.float32(2.0)),
                    "can't assign a numpy.float32 to a torch.FloatTensor"),
    "unbind output": (lambda L: (L.ones(3, requires_grad=True) * 1).unbind()[0].mul_(2),
                      "Output 0 of Unbind is a view and is being modified inplace. This view is "
                      "the output of a function that returns multiple views."),
    "unbind dim 1": (lambda L: (L.ones(2, 3, requires_grad=True) * 1).unbind(1)[2].mul_(2),
                     "Output 2 of Unbind is a view"),
    "split output": (lambda L: (L.ones(4, requires_grad=True) * 1).split(2)[1].mul_(2),
                     "Output 1 of Split is a view"),
    "view of unbind output": (lambda L: (L.ones(2, 3, requires_grad=True) * 1).unbind()[1]
                              .__setitem__(0, 2.0), "Output 0 of Select is a view"),
    "iterated with grad": (lambda L: [v.add_(L.ones((), requires_grad=True)) for v in L.zeros(3)],
                           "A view was created in no_grad mode and is being modified inplace "
                           "with grad mode enabled. This view is the output of a function that "
                           "returns multiple views."),
    "no-grad view": (lambda L: _nograd_view(L).mul_(2),
                     "A view was created in no_grad mode and is being modified inplace with grad "
                     "mode enabled. Given that this use case is ambiguous and error-prone"),
}


def _overlap_set(x):
    x[1:] = x[:-1]


def _overlap_row(x):
    x.add_(x[0])


def _overlap_t(x):
    x.add_(x.t())


def _nograd_view(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with L.no_grad():
        y = x[1:]
    return y


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors(name):
    f, phrase = ERRORS[name]
    same(f, phrases=(phrase,) if phrase else ())


def test_allowed_overlaps():
    def f(L):
        x = L.arange(5.0)
        x[:] = x
        x.add_(x)
        y = L.arange(6.0)
        y[:3].add_(y[3:])
        z = L.arange(6.0).view(2, 3)
        z.t().add_(z.t())
        e = L.zeros(3, 1).expand(3, 4)
        e.fill_(2)
        return x, y, z
    same(f)


# ----------------------------------------------------------------- 9: grad_fn names
def _names(L):
    v = L.tensor([[1.0], [2.0], [3.0]], requires_grad=True)
    s = L.tensor(2.0, requires_grad=True)
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    out = {}
    z = L.zeros(3, 4)
    z[...] = v * L.ones(3, 4)
    out["z[...] = same shape"] = z
    z = L.zeros(3, 4)
    z[:] = v
    out["z[:] = broadcast"] = z
    z = L.zeros(())
    z[()] = s
    out["0-dim z[()] = s"] = z
    z = L.zeros(3)
    z[...] = s
    out["z[...] = 0-dim"] = z
    w = y * 1
    w[:] = 2.0
    out["y[:] = number"] = w
    w = y * 1
    w[1:] = 2.0
    out["y[1:] = number"] = w
    w = y * 1
    w[w > 1.5] = 0
    out["y[mask] = 0"] = w
    w = y * 1
    w[[0, 2]] = s
    out["y[idx] = s"] = w
    w = y * 1
    w[w > 1.5] += 1
    out["y[mask] += 1"] = w
    w = y * 1
    w.fill_(2.0)
    out["fill_ number"] = w
    w = y * 1
    w.fill_(s)
    out["fill_ tensor"] = w
    w = y * 1
    w.zero_()
    out["zero_"] = w
    w = y * 1
    w.copy_(L.ones(3))
    out["copy_ constant"] = w
    r = (y * 1)[1:]
    r[[0]] = 5.0
    out["view index_put"] = r
    return {k: (t, _graph(t.grad_fn)) for k, t in out.items()}


def _graph(fn, depth=4):
    if fn is None:
        return "None"
    name = fn.name().replace("torch::autograd::", "")
    if depth == 0:
        return name
    return name + str(tuple(_graph(f, depth - 1) for f, _ in fn.next_functions))


def test_setitem_and_copy_grad_fn_names():
    same(_names)


def test_whole_and_index_put_gradients():
    def f(L, x, s):
        z = L.zeros(3, 3, dtype=x.dtype)
        z[...] = x[:, None] * s
        z[[0, 1, 2], [1, 2, 0]] = x * 2
        z[z > 100] = 0.0
        z[:, 2] = s
        return z
    check(f, A3, np.array(1.7))

    def g(L, x):
        z = L.zeros(3, 3, dtype=x.dtype)
        z[[0, 0, 2], [1, 1, 0]] = x * 2      # repeated positions: every value gets its grad
        return z
    check(g, A3, fd=False)                   # (torch's, which differences do not see)


# ----------------------------------------------------------------- 10, 11
def test_no_grad_view_requires_grad():
    def f(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        with L.no_grad():
            y = x[1:]
            c = x.clone()
        with L.no_grad():
            a = y.numpy()                # allowed under no_grad
        return y.requires_grad, y.grad_fn is None, y.is_leaf, c.requires_grad, a.tolist()
    same(f)


def test_version_error_names_the_last_writer():
    def f(L):
        a = L.tensor([1.0, 2.0], requires_grad=True)
        e = a.exp()
        g = (e ** 2).sum()
        e += 1
        g.backward()
    same(f, phrases=("which is output 0 of Add, is at version 1; expected version 0",))

    def g(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        w = (y * y).sum()
        y[1] = 5.0
        w.backward()
    same(g, phrases=("output 0 of torch::autograd::CopySlices, is at version 1",))

    def h(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        z = x * 1
        rows = [z[i] for i in range(3)]
        w = rows[1] * rows[1]
        z[1] = 5.0
        w.backward()
    same(h, phrases=("which is output 0 of AsStrided, is at version 1",))


# ----------------------------------------------------------------- views made before a write
def test_views_follow_recorded_writes():
    def f(L, x):
        y = x * 1
        a = y[1:]
        b = y.view(3, 1)
        y.mul_(x)                         # views re-read from y's new node
        y[0] = x[2] * 5
        return a * 2 + b[1:, 0]
    check(f, A3)


def test_many_live_views_cost_no_entries():
    x = tg.tensor(A3, requires_grad=True)
    y = x * 1
    rows = [y[i % 3] for i in range(300)]
    n = len(y._tape)
    for i in range(20):
        y[i % 3] = x[0] * i
    assert len(y._tape) - n < 200          # no entry per live view and write
    (rows[0] * rows[1]).backward()         # the views used are re-derived on use
    assert x.grad is not None


def test_recorded_in_place_writes_replay():
    # tapegrad.func replays the recorded tape on new values: the constant a write starts
    # from (a zeros buffer) must be recorded as it was, not as the write left it
    def f(x):
        acc = tg.zeros(3, dtype=x.dtype)
        acc += x * 2
        acc *= x
        z = tg.zeros(3, dtype=x.dtype)
        z[1] = x[0] * 3
        z[1:] += x[1:]
        return (acc + z).sum()

    g = tg.func.grad_and_value(f)
    for v in ([1.0, 2.0, 3.0], [0.5, -1.0, 4.0]):
        a = np.array(v)
        want_g = 4 * a + np.array([3.0, 1.0, 1.0])
        want_v = (2 * a * a).sum() + 3 * a[0] + a[1:].sum()
        grad, val = g(tg.tensor(a, dtype=tg.float64))
        np.testing.assert_allclose(grad.numpy(), want_g)
        assert abs(val.item() - want_v) < 1e-9


def test_write_into_a_transposed_root():
    # a tensor over non-contiguous memory (numpy's transpose) written through views
    def f(x):
        z = tg.from_numpy(np.zeros((3, 2)).T.copy().T)     # Fortran-ordered
        z[1] = x[:2] * 2
        r = z[:, 1]
        r[2] = x[2]
        return z * 1
    fdcheck(f, [A3])
    x = tg.tensor(A3, requires_grad=True)
    assert np.allclose(f(x).detach().numpy(), [[0, 0], [0.8, -2.6], [0, 2.1]])


def test_second_order_through_writes():
    def f(L):
        x = L.tensor([0.4, -1.3, 2.1], requires_grad=True)
        y = x * x
        y[0] = x[1] ** 3
        y.mul_(x)
        r = y[1:]
        r += x[:2] ** 2
        g, = L.autograd.grad(y.sum(), x, create_graph=True)
        (g * g).sum().backward()
        return g, x.grad
    same(f)


# ---------------------------------------------------------------- setitem node: index_put_ or CopySlices
# torch writes an advanced key straight into the tensor (index_put_: IndexPutBackward0) unless the
# key has a basic step (an int, a partial slice, None, a bool), which indexes a view first
# (CopySlices); full slices and ... are no step.
_MIXED_KEYS = {
    "idx": lambda L: (L.tensor([0, 2]),),
    "full,idx": lambda L: (slice(None), L.tensor([0, 2])),
    "idx,full": lambda L: (L.tensor([0, 2]), slice(None)),
    "idx,partial": lambda L: (L.tensor([0, 2]), slice(1, None)),
    "None,idx": lambda L: (None, L.tensor([0, 2])),
    "ellipsis,idx": lambda L: (Ellipsis, L.tensor([0, 2])),
    "mask,int": lambda L: (L.tensor([True, False, True]), 1),
    "True": lambda L: True,
    "int,idx": lambda L: (0, L.tensor([0, 2])),
    "idx,idx": lambda L: (L.tensor([0, 2]), L.tensor([1, 1])),
}


@pytest.mark.parametrize("key", sorted(_MIXED_KEYS))
def test_setitem_node_of_mixed_keys_as_torch(key):
    def f(lib):
        x = lib.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
        y = x * 1
        y[_MIXED_KEYS[key](lib)] = 0.5
        (y * lib.tensor(np.arange(9.0).reshape(3, 3))).sum().backward()
        return y, x.grad
    same(f)


def test_detach_in_place_of_a_view_raises():
    def f(lib):
        x = lib.ones(3, requires_grad=True)
        return (x * 2)[1:].detach_()
    same(f, phrases=("Can't detach views in-place. Use detach() instead",))


def test_detach_in_place_of_a_non_view():
    x = tg.ones(3, requires_grad=True)
    y = x * 2
    assert y.detach_() is y and not y.requires_grad and y.grad_fn is None
