"""Shape operations against torch (values, gradients, grad_fn names, errors) and finite
differences (without torch)."""
import warnings

import numpy as np
import pytest

import tapegrad as tg
from oracle import check_forward, check_program, data, fdcheck, graph, leaf, same
from oracle import next_names as _names

X34 = data((3, 4), seed=1)
X234 = data((2, 3, 4), seed=2)

# name -> (program on a (2, 3, 4) leaf x; returns a tensor)
SHAPE_OPS = {
    "transpose": lambda lib, x: x.transpose(0, 2),
    "transpose_neg": lambda lib, x: lib.transpose(x, -1, 1),
    "swapaxes": lambda lib, x: x.swapaxes(0, 1),
    "permute": lambda lib, x: x.permute(2, 0, 1),
    "permute_tuple": lambda lib, x: lib.permute(x, (1, 2, 0)),
    "t": lambda lib, x: x[0].t(),
    "T": lambda lib, x: x[0].T,
    "mT": lambda lib, x: x.mT,
    "squeeze": lambda lib, x: x[:, :1].squeeze(),
    "squeeze_dim": lambda lib, x: x[:, :1].squeeze(1),
    "squeeze_dim_noop": lambda lib, x: x.squeeze(0),
    "squeeze_tuple": lambda lib, x: x[:1, :1].squeeze((0, 1)),
    "unsqueeze": lambda lib, x: x.unsqueeze(1),
    "unsqueeze_neg": lambda lib, x: lib.unsqueeze(x, -1),
    "flatten": lambda lib, x: x.flatten(),
    "flatten_range": lambda lib, x: x.flatten(1),
    "flatten_noncontig": lambda lib, x: x.transpose(0, 1).flatten(),
    "flatten_fn": lambda lib, x: lib.flatten(x, 0, 1),
    "unflatten": lambda lib, x: x.unflatten(2, (2, 2)),
    "expand": lambda lib, x: x[:, :1].expand(2, 3, 4),
    "expand_new": lambda lib, x: x[0, 0].expand(5, -1),
    "expand_as": lambda lib, x: x[0, :, :1].expand_as(x),
    "broadcast_to": lambda lib, x: lib.broadcast_to(x[0], (2, 3, 4)),
    "repeat": lambda lib, x: x.repeat(1, 2, 1),
    "repeat_more": lambda lib, x: x[0].repeat(2, 1, 3),
    "repeat_interleave": lambda lib, x: x.repeat_interleave(2, dim=1),
    "repeat_interleave_flat": lambda lib, x: x[0].repeat_interleave(2),
    "flip": lambda lib, x: x.flip(0),
    "flip_many": lambda lib, x: lib.flip(x, (0, 2)),
    "fliplr": lambda lib, x: lib.fliplr(x[0]),
    "roll": lambda lib, x: lib.roll(x, 1, 2),
    "narrow": lambda lib, x: x.narrow(2, 1, 2),
    "select": lambda lib, x: x.select(1, 2),
    "movedim": lambda lib, x: lib.movedim(x, 0, 2),
    "tril": lambda lib, x: x.tril(),
    "tril_k": lambda lib, x: lib.tril(x, -1),
    "triu": lambda lib, x: x.triu(1),
    "diagonal": lambda lib, x: lib.diagonal(x[0]),
    "cat0": lambda lib, x: lib.cat([x, x * 2]),
    "cat1": lambda lib, x: lib.cat([x, x[:, :1] * 3, x.exp()], dim=1),
    "cat_last": lambda lib, x: lib.cat((x, x), -1),
    "cat_const": lambda lib, x: lib.cat([lib.ones(2, 1, 4), x, lib.zeros(2, 2, 4)], 1),
    "cat_many": lambda lib, x: lib.cat([x[:, i:i + 1] * (i + 1) for i in range(3)] + [x, x], 1),
    "stack": lambda lib, x: lib.stack([x, x * 2]),
    "stack1": lambda lib, x: lib.stack([x[0], x[1], x[0]], 1),
    "stack_last": lambda lib, x: lib.stack([x, x.sin()], -1),
    "hstack": lambda lib, x: lib.hstack([x[0], x[1]]),
    "vstack": lambda lib, x: lib.vstack([x[0], x[1, :1]]),
    "split0": lambda lib, x: x.split(1)[1],
    "split2": lambda lib, x: x.split(3, dim=2)[1],
    "split_sizes": lambda lib, x: x.split([1, 2], 1)[1],
    "chunk": lambda lib, x: x.chunk(2, 2)[0],
    "chunk_uneven": lambda lib, x: x.chunk(2, 1)[1],
    "unbind1": lambda lib, x: x.unbind(1)[2],
}


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_shape_op_vs_torch(name, dtype):
    op = SHAPE_OPS[name]
    w = data((2, 3, 4), seed=9)

    def f(lib):
        x = leaf(lib, X234, dtype)
        y = op(lib, x)
        wt = lib.tensor(np.resize(np.array(w), tuple(y.shape)).tolist(), dtype=getattr(lib, dtype))
        (y * wt).sum().backward()
        nexts = [type(n).__name__ if n is not None else None for n, _ in y.grad_fn.next_functions]
        # n-ary nodes (cat/stack of > 2 inputs) list two inputs in tapegrad: not compared
        return y, x.grad, y.is_contiguous(), nexts[:1] if "stack" not in name and "cat" not in name else []
    same(f)


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_shape_op_finite_differences(name):
    op = SHAPE_OPS[name]
    fdcheck(lambda x: op(tg, x), [X234])


@pytest.mark.parametrize("name", sorted(SHAPE_OPS))
def test_shape_op_without_grad(name):
    op = SHAPE_OPS[name]

    def f(lib):
        x = leaf(lib, X234, "float64", rg=False)
        return op(lib, x)
    same(f)


def test_split_outputs_share_one_node():
    def f(lib):
        x = leaf(lib, X234)
        parts = x.split([1, 3], dim=2)
        a, b = parts
        (a.sum() * 2 + (b * b).sum()).backward()
        return (a, b, x.grad, a.grad_fn is b.grad_fn, len(parts),
                [type(p.grad_fn).__name__ for p in x.chunk(3, 1)])
    same(f)


def test_cat_next_functions_and_mixed_dtypes():
    def f(lib):
        a = leaf(lib, X34, "float32")
        b = leaf(lib, X34, "float64")
        c = lib.cat([a, b, lib.tensor([[1, 2, 3, 4]])])
        c.sum().backward()
        return c, a.grad, b.grad, [type(n).__name__ for n, _ in lib.cat([a, a * 2]).grad_fn.next_functions]
    same(f)


def test_views_share_storage_and_versions():
    def f(lib):
        x = lib.zeros(3, 4)
        t = x.t()
        t[0, 1] = 5.0
        u = x.unsqueeze(0)
        u[0, 2, 3] = 7.0
        s = x.split(2)[1]
        s += 1
        e = x[0].expand(2, 4)
        return x, t, x._version, t._version, t.is_contiguous(), x.T.is_contiguous(), e
    same(f)


def test_view_of_non_contiguous_raises():
    def f(lib):
        x = lib.arange(12.0).reshape(3, 4)
        return x.t().view(12)
    same(f, phrases=("view size is not compatible with input tensor's size and stride",))

    def g(lib):
        x = lib.arange(12.0).reshape(3, 4)
        return x.t().reshape(12), x.t().contiguous().view(12), x.t().contiguous().is_contiguous()
    same(g)


@pytest.mark.parametrize("prog", [
    lambda lib: lib.ones(2, 3).expand(3, 3),
    lambda lib: lib.ones(2, 3).expand(3),
    lambda lib: lib.ones(2, 3).permute(0),
    lambda lib: lib.ones(2, 3).permute(0, 0),
    lambda lib: lib.ones(2, 3).transpose(0, 2),
    lambda lib: lib.ones(2, 3, 4).t(),
    lambda lib: lib.ones(2, 3).repeat(2),
    lambda lib: lib.cat([lib.ones(2, 3), lib.ones(3, 2)]),
    lambda lib: lib.cat([lib.ones(2, 3), lib.ones(3)]),
    lambda lib: lib.cat([lib.ones(()), lib.ones(())]),
    lambda lib: lib.cat(lib.ones(2)),
    lambda lib: lib.stack([lib.ones(2, 3), lib.ones(3, 2)]),
    lambda lib: lib.ones(2, 3).split([1, 1], 0),
    lambda lib: lib.ones(2, 3).unsqueeze(3),
    lambda lib: lib.ones(2, 3).squeeze(2),
    lambda lib: lib.ones(2, 3).flatten(1, 0),
    lambda lib: lib.ones(3).tril(),
])
def test_shape_errors(prog):
    same(prog)


def test_len_and_iteration():
    def f(lib):
        x = leaf(lib, X34)
        rows = [r * (i + 1) for i, r in enumerate(x)]
        s = sum(r.sum() for r in rows)
        s.backward()
        return len(x), len(rows), rows[1], x.grad, [type(r.grad_fn).__name__ for r in x]
    same(f)

    def g(lib):
        return len(lib.tensor(1.0))
    same(g)

    def h(lib):
        return list(lib.tensor(1.0))
    same(h)


def test_chunk_and_split_counts():
    def f(lib):
        x = lib.arange(10.0)
        return ([tuple(p.shape) for p in x.chunk(3)], [tuple(p.shape) for p in x.chunk(4)],
                [tuple(p.shape) for p in x.split(4)], [tuple(p.shape) for p in x.chunk(20)],
                [tuple(p.shape) for p in lib.tensor_split(x, 3)])
    same(f)


def test_big_cat_and_transpose_use_numpy_path(monkeypatch):
    """Entries of these ops on big nodes run through numpy; same gradients as compiled."""
    from tapegrad._core import tape as T
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((4, 5)), rng.standard_normal((4, 3))

    def run():
        x = tg.tensor(a, requires_grad=True)
        y = tg.tensor(b, requires_grad=True)
        z = tg.cat([x, y.exp()], 1).t().flip(0).repeat(2, 1)
        (z * z).sum().backward()
        return x.grad.numpy(), y.grad.numpy()
    want = run()
    monkeypatch.setattr(T, "BIG", 1)
    got = run()
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_replay_of_shape_ops():
    from tapegrad._core.tape import recording, replay
    rng = np.random.default_rng(4)
    x = tg.tensor(rng.standard_normal((2, 3, 4)), dtype=tg.float64, requires_grad=True)
    f = lambda x: tg.cat([x.transpose(0, 2).flatten(), x.split(2, 2)[1].sum(1).flatten(),  # noqa: E731
                          tg.stack([x[0].tril(), x[1]]).flip(1).flatten()])
    with recording() as tp:
        y = f(x)
    new = rng.standard_normal((2, 3, 4))
    w = rng.standard_normal(y.shape)
    (vals,), (g,) = replay(tp, [y], [x], [new], [w])
    xe = tg.tensor(new, dtype=tg.float64, requires_grad=True)
    ye = f(xe)
    (ye * tg.tensor(w, dtype=tg.float64)).sum().backward()
    np.testing.assert_allclose(vals, ye.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(g, xe.grad.numpy(), rtol=1e-12)


def test_second_order_through_shape_ops():
    x = tg.tensor(np.array(X34), dtype=tg.float64, requires_grad=True)
    y = (tg.cat([x.t().flatten(), x.flip(1).flatten()]) ** 3).sum()
    (g,) = tg.autograd.grad(y, x, create_graph=True)
    (h,) = tg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), 6 * np.array(X34) ** 2, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), 12 * np.array(X34), rtol=1e-12)


GATHER_OPS = {
    "gather": lambda lib, x: x.gather(1, lib.tensor([[0, 0], [3, 1], [2, 2]])),
    "gather_fn": lambda lib, x: lib.gather(x, 0, lib.tensor([[2, 1, 0, 0]])),
    "index_select": lambda lib, x: x.index_select(1, lib.tensor([3, 0, 3])),
    "index_select_fn": lambda lib, x: lib.index_select(x, 0, lib.tensor([1])),
    "masked_select": lambda lib, x: x.masked_select(x > 0),
    "masked_fill": lambda lib, x: x.masked_fill(x > 0.5, -1.0),
    "masked_fill_bcast": lambda lib, x: lib.masked_fill(x, lib.tensor([True, False, False, True]), 0.0),
    "masked_fill_inf_softmax": lambda lib, x: x.masked_fill(
        lib.tensor([[False, True, False, False]] * 3), float("-inf")).softmax(1),
    "addmm": lambda lib, x: lib.addmm(x[0, :2], x[:, :3].t(), x[:, :2]),
    "exp_inplace": lambda lib, x: (x * 1).exp_(),
    "sigmoid_inplace": lambda lib, x: (x + 0).sigmoid_(),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(GATHER_OPS))
def test_gather_family_vs_torch(name, dtype):
    op = GATHER_OPS[name]

    def f(lib):
        x = leaf(lib, X34, dtype)
        y = op(lib, x)
        (y * y).sum().backward()
        return y, x.grad, y.grad_fn.name()
    same(f)


@pytest.mark.parametrize("name", sorted(GATHER_OPS))
def test_gather_family_finite_differences(name):
    fdcheck(lambda x: GATHER_OPS[name](tg, x), [X34])


def test_new_constructors():
    def f(lib):
        x = lib.ones(2, dtype=lib.float64)
        return (x.new_zeros(3), x.new_ones((2, 2)), x.new_full((2,), 7), x.new_tensor([1, 2]),
                x.new_empty(2).shape, x.new_zeros(2, dtype=lib.int64))
    same(f)


# ----------------------------------------------------------------------------- n-input nodes
CAT_GRAPHS = {
    "cat3": lambda lib, x, y, c: lib.cat([x, y, x]),
    "cat5_consts": lambda lib, x, y, c: lib.cat([c, x, c, c, y]),
    "cat_trailing_const": lambda lib, x, y, c: lib.cat([x, y.exp(), c], 1),
    "cat_one": lambda lib, x, y, c: lib.cat([x]),
    "cat_two_const_first": lambda lib, x, y, c: lib.cat([c, y]),
    "stack3": lambda lib, x, y, c: lib.stack([x, c, y]),
    "stack5": lambda lib, x, y, c: lib.stack([x.sin(), x, x.exp(), y, c], 1),
    "stack_many": lambda lib, x, y, c: lib.stack([x * i if i % 3 else c for i in range(11)]),
    "hstack": lambda lib, x, y, c: lib.hstack([x, c, y]),
    "vstack": lambda lib, x, y, c: lib.vstack([x, c, y, y]),
}


@pytest.mark.parametrize("name", sorted(CAT_GRAPHS))
def test_cat_stack_list_every_input(name):
    """torch's CatBackward0/StackBackward0 have one next_function per input ((None, 0) for
    inputs that need no grad)."""
    from oracle import graph
    f = CAT_GRAPHS[name]

    def prog(lib):
        x = leaf(lib, data((2, 3), seed=1))
        y = leaf(lib, data((2, 3), seed=2))
        c = leaf(lib, data((2, 3), seed=3), rg=False)
        out = f(lib, x, y, c)
        w = lib.tensor(np.resize(np.array(data((7,), seed=4)), tuple(out.shape)).tolist())
        (out * w).sum().backward()
        return graph(out.grad_fn), len(out.grad_fn.next_functions), out, x.grad, y.grad
    same(prog)


# ----------------------------------------------------------------------------- repeat_interleave
REPEAT_INTERLEAVE = {
    "int_flat": lambda lib, x: lib.repeat_interleave(x, 2),
    "int_dim": lambda lib, x: x.repeat_interleave(2, dim=-1),
    "tensor_dim0": lambda lib, x: x.repeat_interleave(lib.tensor([1, 2]), dim=0),
    "tensor_dim1_zero": lambda lib, x: x.repeat_interleave(lib.tensor([1, 0, 3]), dim=1),
    "tensor_0dim": lambda lib, x: x.repeat_interleave(lib.tensor(2), dim=1),
    "tensor_one": lambda lib, x: x.repeat_interleave(lib.tensor([2]), dim=1),
    "tensor_flat": lambda lib, x: lib.repeat_interleave(x, lib.tensor([1, 2, 1, 1, 0, 3])),
    "output_size": lambda lib, x: x.repeat_interleave(lib.tensor([1, 2]), dim=0, output_size=3),
    "indices": lambda lib, x: lib.repeat_interleave(lib.tensor([1, 2, 0, 3])),
    "bad_size": lambda lib, x: x.repeat_interleave(lib.tensor([1, 2, 3]), dim=0),
    "bad_size_dim1": lambda lib, x: x.repeat_interleave(lib.tensor([1, 2]), dim=1),
    "bad_2d_repeats": lambda lib, x: lib.repeat_interleave(lib.tensor([[1, 2]])),
    "bad_negative": lambda lib, x: x.repeat_interleave(lib.tensor([1, -1]), dim=0),
    "bad_negative_int": lambda lib, x: x.repeat_interleave(-1, dim=1),
    "bad_float_repeats": lambda lib, x: x.repeat_interleave(lib.tensor([1., 2.]), dim=0),
    "bad_output_size": lambda lib, x: x.repeat_interleave(lib.tensor([1, 2]), dim=0, output_size=4),
}


@pytest.mark.parametrize("name", sorted(REPEAT_INTERLEAVE))
def test_repeat_interleave_vs_torch(name):
    from oracle import graph
    f = REPEAT_INTERLEAVE[name]

    def prog(lib):
        x = leaf(lib, data((2, 3), seed=1))
        y = f(lib, x)
        if y.requires_grad:
            w = lib.tensor(np.resize(np.array(data((5,), seed=2)), tuple(y.shape)).tolist())
            (y * w).sum().backward()
        return graph(y.grad_fn), y, x.grad
    same(prog)


@pytest.mark.parametrize("name", ["int_flat", "int_dim", "tensor_dim0", "tensor_dim1_zero",
                                  "tensor_flat"])
def test_repeat_interleave_finite_differences(name):
    fdcheck(lambda x: REPEAT_INTERLEAVE[name](tg, x), [np.array(data((2, 3), seed=1))])
    x = np.array(data((2, 3), seed=1))
    reps = {"tensor_dim0": ([1, 2], 0), "tensor_dim1_zero": ([1, 0, 3], 1)}
    if name in reps:
        r, ax = reps[name]
        got = REPEAT_INTERLEAVE[name](tg, tg.tensor(x, dtype=tg.float64)).numpy()
        np.testing.assert_array_equal(got, np.repeat(x, r, axis=ax))


def test_matrix_transposes_record_one_transpose_entry_and_differentiate_twice():
    """t(), transpose(0, 1), .T, .mT and permute(1, 0) of a matrix record one ``transpose``
    row (no index array) under torch's names; gradients, a Hessian-vector product through
    create_graph (the recorded VJP is a transpose too), an in-place write to the base seen
    through the view, and two tapes joined after transposing, against finite differences."""
    from tapegrad import ops
    from tapegrad._schema import K
    rng = np.random.default_rng(8)
    a = rng.standard_normal((3, 5))
    names = {"t": "TBackward0", "transpose": "TransposeBackward0", "T": "PermuteBackward0",
             "mT": "TransposeBackward0", "permute": "PermuteBackward0"}
    fns = {"t": lambda w: w.t(), "transpose": lambda w: w.transpose(1, 0), "T": lambda w: w.T,
           "mT": lambda w: w.mT, "permute": lambda w: w.permute(1, 0)}
    code = ops.OPCODE["transpose"]
    for key, fn in fns.items():
        w = tg.tensor(a, dtype=tg.float64, requires_grad=True)
        y = fn(w)
        assert type(y.grad_fn).__name__ == names[key] and y.shape == (5, 3)
        last = y._tape.E[-K]                           # (a copy: no view pins the tape)
        assert last == code and len(y._tape.I) == 0
        np.testing.assert_array_equal(y.detach().numpy(), a.T)

    def f(w):                                      # float64 numpy reference of the loss
        return float(np.sum(np.tanh(w.T @ w) * w.T[:, :1].T.repeat(5, 0)[:5, :5]))

    def loss(w):
        m = w.t() @ w
        return (m.tanh() * w.T[:, :1].t().expand(5, 5)).sum()
    w = tg.tensor(a, dtype=tg.float64, requires_grad=True)
    (g,) = tg.autograd.grad(loss(w), w, create_graph=True)
    v = rng.standard_normal((3, 5))
    (hv,) = tg.autograd.grad((g * tg.tensor(v)).sum(), w)
    eps = 1e-6
    fd_g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        e = np.zeros_like(a)
        e[i] = eps
        fd_g[i] = (f(a + e) - f(a - e)) / (2 * eps)
    np.testing.assert_allclose(g.detach().numpy(), fd_g, rtol=1e-6, atol=1e-8)

    def grad_at(x):
        xt = tg.tensor(x, dtype=tg.float64, requires_grad=True)
        loss(xt).backward()
        return xt.grad.numpy()
    fd_hv = (grad_at(a + eps * v) - grad_at(a - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hv.numpy(), fd_hv, rtol=1e-5, atol=1e-7)
    # an in-place write into the base after taking the view: the view sees it, as in torch
    base = tg.tensor(a, dtype=tg.float64, requires_grad=True).clone()
    tv = base.t()
    base.mul_(2.0)
    np.testing.assert_allclose(tv.detach().numpy(), 2 * a.T)
    # transposes recorded on two tapes, then joined by one expression
    p = tg.tensor(a, dtype=tg.float64, requires_grad=True)
    q = tg.tensor(a[:, ::-1].copy(), dtype=tg.float64, requires_grad=True)
    pt, qt = p.t() * 1.0, q.t() * 1.0
    (pt * qt * pt).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), 2 * a * a[:, ::-1], rtol=1e-12)
    np.testing.assert_allclose(q.grad.numpy(), a * a, rtol=1e-12)


# ----------------------------------------------------------------------------- index family & co
# name -> program on a (3, 4) leaf x; returns a tensor or a tuple of tensors
INDEX_FAMILY = {
    "reshape": lambda L, x: L.reshape(x, (4, 3)), "ravel": lambda L, x: x.ravel(),
    "ravel_noncontig": lambda L, x: L.ravel(x.t()), "tile": lambda L, x: x.tile(2),
    "tile_more": lambda L, x: L.tile(x, (2, 1, 1)), "take": lambda L, x: x.take(L.tensor([0, 5, -1, 5])),
    "take_along_dim": lambda L, x: L.take_along_dim(x, L.tensor([[0], [1], [2]]), 1),
    "take_along_flat": lambda L, x: L.take_along_dim(x, L.tensor([0, 5])),
    "take_along_bcast": lambda L, x: L.take_along_dim(x, L.tensor([[0, 3]]), 1),
    "index_add": lambda L, x: x.index_add(1, L.tensor([0, 2, 0]), x[:, :3] * 2),
    "index_add_alpha": lambda L, x: L.index_add(x, 0, L.tensor([0, 0]), x[1:] ** 2, alpha=2),
    "index_copy": lambda L, x: x.index_copy(1, L.tensor([3, 1]), x[:, :2].exp()),
    "index_fill": lambda L, x: x.index_fill(1, L.tensor([0, 2]), -1.0),
    "index_fill_tensor": lambda L, x: x.index_fill(1, L.tensor([0, 2]), x[0, 0] * 3),
    "index_put": lambda L, x: x.index_put((L.tensor([0, 2]),), x[1:] * 2),
    "index_put_acc": lambda L, x: x.index_put((L.tensor([0, 0]), L.tensor([1, 1])), x[0, :2] * 2,
                                              accumulate=True),
    "index_put_mask": lambda L, x: x.index_put((x > 0,), L.tensor(5.0)),
    "scatter": lambda L, x: x.scatter(1, L.tensor([[0, 1], [2, 3], [1, 0]]), x[:, 2:] * 3),
    "scatter_value": lambda L, x: x.scatter(1, L.tensor([[0], [1], [2]]), 5.0),
    "scatter_dim0": lambda L, x: L.scatter(x, 0, L.tensor([[2, 1, 0, 0]]), x[1:2] ** 2),
    "scatter_add": lambda L, x: x.scatter_add(1, L.tensor([[0, 0], [2, 3], [1, 1]]), x[:, 1:3] * 2),
    "masked_scatter": lambda L, x: x.masked_scatter(x > 0, (x * 2).flip(0)),
    "masked_scatter_bcast": lambda L, x: x.masked_scatter(L.tensor([True, False, True, False]),
                                                          x.repeat(2, 1) * 3),
    "meshgrid_ij": lambda L, x: L.meshgrid(x[0], x[1, :2], indexing="ij"),
    "meshgrid_xy": lambda L, x: L.meshgrid(x[0], x[1, :2], x[2, :3], indexing="xy"),
    "hsplit": lambda L, x: L.hsplit(x, 2), "vsplit": lambda L, x: L.vsplit(x, [1]),
    "dsplit": lambda L, x: L.dsplit(x.reshape(3, 2, 2), 2), "tensor_split": lambda L, x: L.tensor_split(x, 3, 1),
    "rot90": lambda L, x: L.rot90(x), "rot90_2": lambda L, x: L.rot90(x, 2),
    "rot90_back": lambda L, x: x.rot90(-1, [1, 0]), "dstack": lambda L, x: L.dstack([x, x * 2]),
    "column_stack": lambda L, x: L.column_stack([x[0, :3], x[:, :2]]),
    "row_stack": lambda L, x: L.row_stack([x, x[0]]), "atleast_3d": lambda L, x: L.atleast_3d(x),
    "atleast_3d_1d": lambda L, x: L.atleast_3d(x[0]), "atleast_3d_0d": lambda L, x: L.atleast_3d(x[0, 0]),
    "atleast_2d_many": lambda L, x: L.atleast_2d(x[0], x[0, 0]),
    "atleast_1d_list": lambda L, x: L.atleast_1d([x[0, 0], x]),
    "block_diag": lambda L, x: L.block_diag(x, x[0, :2], x[1, 1]),
    "kron": lambda L, x: L.kron(x[:2, :2], x[1:, :3]), "kron_ranks": lambda L, x: L.kron(x[0], x[:2]),
    "unfold": lambda L, x: x.unfold(1, 2, 1), "unfold_step": lambda L, x: x.unfold(0, 2, 2),
    "unfold_last": lambda L, x: x.unfold(-1, 2, 3), "H": lambda L, x: x.H, "mH": lambda L, x: x.mH,
    "roll_flat": lambda L, x: x.roll(5), "t_": lambda L, x: (x * 1).t_(),
    "transpose_": lambda L, x: (x * 1).transpose_(0, 1), "tril_": lambda L, x: (x * 1).tril_(),
    "triu_": lambda L, x: (x * 1).triu_(1),
    "index_add_": lambda L, x: (x * 1).index_add_(1, L.tensor([0, 2]), x[:, :2] * 2),
    "scatter_": lambda L, x: (x * 1).scatter_(1, L.tensor([[0], [1], [2]]), 5.0),
    "index_fill_": lambda L, x: (x * 1).index_fill_(1, L.tensor([0, 2]), -1.0),
    "masked_scatter_": lambda L, x: (x * 1).masked_scatter_(x > 0, x * 2),
    "index_put_": lambda L, x: (x * 1).index_put_((L.tensor([0, 2]),), x[:2] * 2),
    "index_copy_": lambda L, x: (x * 1).index_copy_(1, L.tensor([0, 2]), x[:, :2] * 2),
    "scatter_add_": lambda L, x: (x * 1).scatter_add_(1, L.tensor([[0, 0], [2, 3], [1, 1]]), x[:, :2]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(INDEX_FAMILY))
def test_index_family_vs_torch(name, dtype):
    op = INDEX_FAMILY[name]

    def f(lib):
        x = leaf(lib, X34, dtype)
        y = op(lib, x)
        ys = list(y) if isinstance(y, tuple) else [y]
        total = 0
        for t in ys:
            w = lib.tensor(np.resize(np.arange(1.0, 50.0) / 7, tuple(t.shape)).tolist(),
                           dtype=getattr(lib, dtype))
            total = total + (t * w).sum()
        total.backward()
        nexts = [[None if n is None else n.name() for n, _ in t.grad_fn.next_functions]
                 for t in ys if t.grad_fn is not None]
        return ys, x.grad, [None if t.grad_fn is None else t.grad_fn.name() for t in ys], nexts
    same(f)


@pytest.mark.parametrize("name", sorted(INDEX_FAMILY))
def test_index_family_finite_differences(name):
    def f(x):
        y = INDEX_FAMILY[name](tg, x)
        return tg.cat([t.reshape(-1) for t in y]) if isinstance(y, tuple) else y
    fdcheck(f, [X34])


@pytest.mark.parametrize("name", sorted(INDEX_FAMILY))
def test_index_family_without_grad(name):
    same(lambda L: INDEX_FAMILY[name](L, leaf(L, X34, "float64", rg=False)))


def test_index_family_integer_tensors_and_indices():
    def f(lib):
        x = lib.arange(12).reshape(3, 4)
        return (x.index_add(0, lib.tensor([0, 0]), x[:2]), x.scatter(1, lib.tensor([[1], [0], [3]]), 7),
                lib.tril_indices(3, 4), lib.triu_indices(4, 3, -1), lib.tril_indices(3, 3, dtype=lib.int32),
                lib.triu_indices(0, 3), lib.broadcast_shapes((3, 1), (1, 4)), lib.broadcast_shapes(3, (2, 1)),
                lib.broadcast_shapes(), lib.block_diag(), lib.meshgrid(lib.tensor(1), lib.arange(3),
                                                                        indexing="xy"))
    same(f)


SHAPE_ERRORS = {
    "cat_empty": (lambda L, x: L.cat([]), "expected a non-empty list of Tensors"),
    "stack_empty": (lambda L, x: L.stack([]), "stack expects a non-empty TensorList"),
    "hstack_empty": (lambda L, x: L.hstack(()), "hstack expects a non-empty TensorList"),
    "cat_generator": (lambda L, x: L.cat(t for t in [x, x]), "must be tuple of Tensors, not generator"),
    "cat_non_tensor": (lambda L, x: L.cat([x, 1]), "expected Tensor as element 1 in argument 0"),
    "flip_repeat": (lambda L, x: x.flip(0, -2), "dim 0 appears multiple times in the list of dims"),
    "movedim_repeat": (lambda L, x: x.movedim((0, 0), (1, 0)), "movedim: repeated dim in `source`"),
    "movedim_lengths": (lambda L, x: x.movedim((0,), (1, 0)), "should contain the same number of dims"),
    "fliplr_1d": (lambda L, x: L.fliplr(x[0]), "Input must be >= 2-d."),
    "flipud_0d": (lambda L, x: L.flipud(x[0, 0]), "Input must be >= 1-d."),
    "narrow_past": (lambda L, x: x.narrow(1, 3, 2), "start (3) + length (2) exceeds dimension size (4)."),
    "narrow_start": (lambda L, x: x.narrow(0, 4, 0), "start out of range"),
    "narrow_negative": (lambda L, x: x.narrow(1, 1, -1), "length must be non-negative"),
    "roll_align": (lambda L, x: x.roll((1, 2), (0,)), "shifts and dimensions must align"),
    "roll_no_dims": (lambda L, x: x.roll((1, 2)), "shifts and dimensions must align"),
    "unflatten_sizes": (lambda L, x: x.unflatten(1, (3, -1)), "don't multiply up to the size of dim 1"),
    "unflatten_two": (lambda L, x: x.unflatten(1, (-1, -1)), "only one dimension can be inferred"),
    "take_oob": (lambda L, x: x.take(L.tensor([12])), "out of range: tried to access index 12"),
    "take_float": (lambda L, x: x.take(L.tensor([1.0])), "Expected a long tensor for index"),
    "scatter_oob": (lambda L, x: x.scatter(1, L.tensor([[0], [1], [5]]), 1.0), "index 5 is out of bounds"),
    "scatter_ndim": (lambda L, x: x.scatter(1, L.tensor([0, 1]), 1.0), "same number of dimensions"),
    "scatter_larger": (lambda L, x: x.scatter(1, L.zeros(4, 1, dtype=L.long), 1.0), "to be no larger than self"),
    "scatter_dtype": (lambda L, x: x.scatter(1, L.zeros(3, 1, dtype=L.long), L.ones(3, 1, dtype=L.float64)),
                      "Expected self.dtype to be equal to src.dtype"),
    "index_add_oob": (lambda L, x: x.index_add(1, L.tensor([0, 5]), L.ones(3, 2)), "index 5 is out of bounds"),
    "index_add_count": (lambda L, x: x.index_add(1, L.tensor([0, 1]), L.ones(3, 3)), "Number of indices (2)"),
    "index_add_vector": (lambda L, x: x.index_add(1, L.tensor([[0, 1]]), L.ones(3, 2)),
                         "Index is supposed to be a vector"),
    "index_add_float": (lambda L, x: x.index_add(1, L.tensor([0.0]), L.ones(3, 1)), "Expected dtype int32/int64"),
    "index_add_dtype": (lambda L, x: x.index_add(1, L.tensor([0]), L.ones(3, 1, dtype=L.float64)),
                        "must have the same scalar type"),
    "index_fill_oob": (lambda L, x: x.index_fill(1, L.tensor([9]), 1.0), "index 9 is out of bounds"),
    "index_fill_1d": (lambda L, x: x.index_fill(1, L.tensor([0]), L.ones(2)), "0-dimensional value tensor"),
    "index_put_dtype": (lambda L, x: x.index_put((L.tensor([0]),), L.ones(4, dtype=L.float64)),
                        "Index put requires the source and destination dtypes match"),
    "masked_scatter_few": (lambda L, x: x.masked_scatter(x > -9, L.ones(3)), "Number of elements of source"),
    "masked_scatter_float": (lambda L, x: x.masked_scatter((x > 0).float(), L.ones(12)),
                             "only supports boolean masks"),
    "meshgrid_2d": (lambda L, x: L.meshgrid(x[0], x, indexing="ij"), "Expected 0D or 1D tensor"),
    "meshgrid_indexing": (lambda L, x: L.meshgrid(x[0], indexing="ab"), "indexing must be one of"),
    "unfold_size": (lambda L, x: x.unfold(1, 5, 1), "maximum size for tensor at dimension 1 is 4"),
    "unfold_step": (lambda L, x: x.unfold(1, 2, 0), "step is 0 but must be > 0"),
    "rot90_dims": (lambda L, x: L.rot90(x, 1, [0]), "expected total rotation dims == 2"),
    "rot90_same": (lambda L, x: L.rot90(x, 1, [0, 0]), "expected rotation dims to be different"),
    "rot90_1d": (lambda L, x: L.rot90(x[0]), "expected total dims >= 2"),
    "hsplit_indivisible": (lambda L, x: L.hsplit(x, 3), "is not divisible by the split_size 3!"),
    "vsplit_1d": (lambda L, x: L.vsplit(x[0], 2), "torch.vsplit requires a tensor with at least 2"),
    "tril_indices_neg": (lambda L, x: L.tril_indices(-1, 3), "row must be non-negative"),
    "broadcast_shapes": (lambda L, x: L.broadcast_shapes((3,), (2,)), "Attempting to broadcast a dimension"),
    "block_diag_3d": (lambda L, x: L.block_diag(x[None]), "Input tensors must have 2 or fewer dimensions"),
    "take_along_shapes": (lambda L, x: L.take_along_dim(x, L.tensor([[0, 1]]), 0),
                          "The size of tensor a (4) must match the size of tensor b (2)"),
    "H_1d": (lambda L, x: x[0].H, "tensor.H is only supported on matrices (2-D tensors). Got 1-D"),
    "mH_1d": (lambda L, x: x[0].mH, "tensor.mH is only supported on matrices or batches"),
    "t_leaf": (lambda L, x: x.t_(), "in-place operation"),
}


@pytest.mark.parametrize("name", sorted(SHAPE_ERRORS))
def test_shape_errors_with_messages(name):
    prog, phrase = SHAPE_ERRORS[name]
    same(lambda L: prog(L, leaf(L, X34)), phrases=(phrase,))


def test_meshgrid_default_indexing_warns():
    def f(L):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a, b = L.meshgrid(L.arange(2.0), L.arange(3.0))
        return a, b, [str(m.message)[:60] for m in w]
    same(f)


def test_in_place_transpose_changes_the_tensor():
    def f(L):
        x = leaf(L, X34)
        z = x * 2
        r = z.t_()
        (z * L.arange(12.0).reshape(4, 3)).sum().backward()
        u = L.zeros(2, 3)
        u.t_()
        u[0, 1] = 4.0
        return r is z, z, z.is_contiguous(), x.grad, u, u.shape, u.stride()
    same(f)


def test_view_as_dtype():
    def f(L):
        x = leaf(L, X34)
        y = x.view(L.int32)
        d = L.arange(6.0, dtype=L.float64).reshape(2, 3)
        e = d.view(L.float32)
        e[0, 0] = 2.0
        return y, y.requires_grad, y.is_leaf, d.view(L.int32).shape, e, d
    same(f)
    same(lambda L: L.arange(6.0).reshape(2, 3).t().view(L.int16),
         phrases=("must be 1 to view Float as Short",))


def test_cat_of_mixed_dtypes_lists_the_inputs():
    def f(L):
        a = leaf(L, X34, "float32")
        b = leaf(L, X34, "float64")
        return [graph(L.cat([a, b]).grad_fn), graph(L.stack([b, a]).grad_fn)]
    same(f)


# ---------------------------------------------------------------- masked_fill with a value tensor
@pytest.mark.parametrize("value", ["t", "t_rg", "number", "t_int", "t_f64"])
def test_masked_fill_value_kinds_as_torch(value):
    def f(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        v = {"t": lambda: lib.tensor(9.0), "t_rg": lambda: lib.tensor(9.0, requires_grad=True),
             "number": lambda: 9.0, "t_int": lambda: lib.tensor(9),
             "t_f64": lambda: lib.tensor(9.0, dtype=lib.float64)}[value]()
        y = x.masked_fill(lib.tensor([True, False, True]), v)
        (y * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        return y, x.grad, [None if n is None else n.name() for n, _ in y.grad_fn.next_functions]
    same(f)


# ----------------------------------------------------------------------------- composed functions
# name -> (program on x, input shape, domain)
COMPOSED = {
    "split_with_sizes": (lambda lib, x: x.split_with_sizes([1, 3], 1), (3, 4), (-1, 1)),
    "adjoint": (lambda lib, x: x.adjoint(), (2, 3), (-1, 1)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_vs_torch(name, dtype):
    check_program(COMPOSED, name, dtype)


COMPOSED_FORWARD = {
    "split_with_sizes_bad": lambda lib: lib.ones(4).split_with_sizes([1, 2]),
    "split_with_sizes_fn": lambda lib: lib.split_with_sizes(lib.arange(5), [2, 3]),
    "adjoint": lambda lib: lib.arange(6.0).reshape(2, 3).adjoint(),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_FORWARD))
def test_composed_forward_vs_torch(name):
    check_forward(COMPOSED_FORWARD, name)


COPIES = {
    "diagonal_copy": lambda lib, x: lib.diagonal_copy(x, 1),
    "expand_copy": lambda lib, x: lib.expand_copy(x[0], (2, 4)),
    "permute_copy": lambda lib, x: lib.permute_copy(x, (1, 0)),
    "select_copy": lambda lib, x: lib.select_copy(x, 1, -1),
    "slice_copy": lambda lib, x: lib.slice_copy(x, 1, 1, 4, 2),
    "squeeze_copy": lambda lib, x: lib.squeeze_copy(x[None]),
    "t_copy": lambda lib, x: lib.t_copy(x),
    "transpose_copy": lambda lib, x: lib.transpose_copy(x, 0, 1),
    "unsqueeze_copy": lambda lib, x: lib.unsqueeze_copy(x, 1),
    "view_copy": lambda lib, x: lib.view_copy(x, (12,)),
    "alias_copy": lambda lib, x: lib.alias_copy(x),
    "unfold_copy": lambda lib, x: lib.unfold_copy(x, 1, 2, 1),
    "narrow_copy": lambda lib, x: x.narrow_copy(1, 1, 2),
    "narrow_copy_fn": lambda lib, x: lib.narrow_copy(x, 0, 1, 2),
    "angle": lambda lib, x: x.angle() + x,
}


@pytest.mark.parametrize("name", sorted(COPIES))
def test_copies_vs_torch(name):
    def prog(lib):
        x = leaf(lib, data((3, 4), seed=3), "float64")
        y = COPIES[name](lib, x)
        base_free = y._base is None
        y.mul_(2)                              # a copy: the input is not written
        (y * y).sum().backward()
        return y, x, x.grad, base_free, _names(y)
    same(prog)


SPLITS = {
    "unsafe_split": lambda lib, x: x.unsafe_split(3, 1),
    "unsafe_split_fn": lambda lib, x: lib.unsafe_split(x, 2),
    "unsafe_chunk": lambda lib, x: lib.unsafe_chunk(x, 2, 1),
    "unsafe_chunk_m": lambda lib, x: x.unsafe_chunk(3),
    "unsafe_split_with_sizes": lambda lib, x: x.unsafe_split_with_sizes([1, 3], 1),
    "split_copy": lambda lib, x: lib.split_copy(x, 2, 1),
    "split_with_sizes_copy": lambda lib, x: lib.split_with_sizes_copy(x, [2, 1]),
}


@pytest.mark.parametrize("name", sorted(SPLITS))
def test_unsafe_splits_vs_torch(name):
    def prog(lib):
        x = leaf(lib, data((3, 4), seed=6), "float64")
        parts = SPLITS[name](lib, x)
        info = [(p._base is None, p.output_nr, p.grad_fn.name()) for p in parts]
        if "copy" in name:                      # no view: x is not written (torch's
            parts[0].mul_(3)                    # unsafe_split parts share x's memory)
        sum((p * p).sum() for p in parts).backward()
        return parts, x, x.grad, info
    same(prog)


@pytest.mark.parametrize("shapes", [[(0, 3), (0, 3)], [(0, 3), (2, 3), (0, 3)], [(2, 0), (2, 0)],
                                    [(1, 3), (2, 3), (3, 3)]])
def test_cat_and_stack_of_blocks_with_empty_pieces_vs_torch(shapes):
    """cat/stack pieces that are contiguous blocks of the result are recorded as offset rows;
    empty pieces among them (a zero-size block) record as torch's gradients."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    vals = [rng.random(s) for s in shapes]
    for lib_cat in ("cat", "stack"):
        if lib_cat == "stack" and len({s for s in shapes}) > 1:
            continue
        ours = [tg.tensor(v, requires_grad=True) for v in vals]
        ref = [torch.tensor(v, requires_grad=True) for v in vals]
        y, Y = getattr(tg, lib_cat)(ours, 0), getattr(torch, lib_cat)(ref, 0)
        w = rng.random(tuple(Y.shape))
        (y * tg.tensor(w)).sum().backward()
        (Y * torch.tensor(w)).sum().backward()
        np.testing.assert_array_equal(y.detach().numpy(), Y.detach().numpy())
        for t, T in zip(ours, ref):
            np.testing.assert_allclose(t.grad.numpy(), T.grad.numpy())


def test_shape_only_maps_are_cached_read_only_and_exact():
    """Broadcast and permutation maps depend on shapes only: recorded again (another call,
    another tape) they are the same read-only array (_record.cached_map), and gradients
    through them stay exact."""
    from tapegrad import _record
    rng = np.random.default_rng(5)
    xv, mv = rng.standard_normal((40, 1, 3)), rng.standard_normal((1, 7, 3))
    maps = []
    for _ in range(2):
        x = tg.tensor(xv, requires_grad=True)
        m = tg.tensor(mv, requires_grad=True)
        d = (x - m).permute(2, 0, 1)
        (d * d).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), 2 * (xv - mv).sum(1, keepdims=True),
                                   rtol=1e-12)
        np.testing.assert_allclose(m.grad.numpy(), -2 * (xv - mv).sum(0, keepdims=True),
                                   rtol=1e-12)
        maps.append([_record.MAP_CACHE[k] for k in (("expand", (40, 1, 3), (40, 7, 3)),
                                                    (("permute", (2, 0, 1)), (40, 7, 3)))])
    for a, b in zip(*maps):
        assert a is b and not a.flags.writeable
