"""tapegrad/_index.py's scatters (select/slice/diagonal/as_strided_scatter, put,
fill_diagonal_), as_strided and unravel_index, against torch and finite differences."""
import numpy as np
import pytest

import tapegrad as tg
from oracle import check_fd, check_forward, check_leaf_inplace, check_program, data, leaf, same
from oracle import nograd as _nograd, square as _mat, tensor_of as _t


# name -> (program on x, input shape, domain)
COMPOSED = {
    "select_scatter": (lambda lib, x: lib.select_scatter(x, x[0] * 2, 0, -1), (3, 4), (-1, 1)),
    "slice_scatter": (lambda lib, x: lib.slice_scatter(x, x[:, :2].exp(), 1, 1, 4, 2), (3, 4), (-1, 1)),
    "slice_scatter_default": (lambda lib, x: x.slice_scatter(x[:1] * 3), (3, 4), (-1, 1)),
    "diagonal_scatter": (lambda lib, x: lib.diagonal_scatter(x, x[0, :3].sin(), 1), (3, 4), (-1, 1)),
    "put": (lambda lib, x: x.put(lib.tensor([0, -1, 5]), x[0, :3] * 2), (3, 4), (-1, 1)),
    "put_acc": (lambda lib, x: lib.put(x, lib.tensor([0, 0, 5]), x[1, :3] * 2, accumulate=True),
                (3, 4), (-1, 1)),
    "put_": (lambda lib, x: (x * 1).put_(lib.tensor([1, 2]), x[0, :2] * 2), (3, 4), (-1, 1)),
    "fill_diagonal_": (lambda lib, x: (x * 1).fill_diagonal_(2.0), (3, 4), (-1, 1)),
    "fill_diagonal_wrap": (lambda lib, x: (x * 1).fill_diagonal_(-1.0, wrap=True), (7, 3), (-1, 1)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_vs_torch(name, dtype):
    check_program(COMPOSED, name, dtype)


COMPOSED_FORWARD = {
    "select_scatter_int": lambda lib: lib.select_scatter(lib.zeros(2, 3, dtype=lib.int64),
                                                         lib.arange(2), 1, 2),
    "select_scatter_badshape": lambda lib: lib.select_scatter(lib.zeros(2, 3), lib.ones(3), 1, 0),
    "slice_scatter_neg": lambda lib: lib.slice_scatter(lib.zeros(5), lib.ones(2), 0, -2),
    "diagonal_scatter_off": lambda lib: lib.diagonal_scatter(lib.zeros(3, 3), lib.ones(2), -1),
    "diagonal_scatter_3d": lambda lib: lib.diagonal_scatter(lib.zeros(2, 3, 3), lib.ones(2, 3), 0, 1, 2),
    "put_int": lambda lib: lib.arange(6).reshape(2, 3).put(_t(lib, [5, 0]), _t(lib, [10, 20])),
    "put_oob": lambda lib: lib.zeros(3).put(_t(lib, [3]), _t(lib, [1.0])),
    "put_badindex": lambda lib: lib.zeros(3).put(_t(lib, [1.0]), _t(lib, [1.0])),
    "put_acc_dup": lambda lib: lib.zeros(4).put_(_t(lib, [1, 1, -1]), _t(lib, [1.0, 2.0, 3.0]), True),
    "fill_diagonal_3d": lambda lib: lib.zeros(2, 2, 2).fill_diagonal_(5.0),
    "fill_diagonal_tall": lambda lib: lib.zeros(5, 2).fill_diagonal_(1.0),
    "fill_diagonal_wrap": lambda lib: lib.zeros(7, 3).fill_diagonal_(1.0, wrap=True),
    "fill_diagonal_wide": lambda lib: lib.zeros(2, 5).fill_diagonal_(1.0, wrap=True),
    "fill_diagonal_bad3d": lambda lib: lib.zeros(2, 3, 2).fill_diagonal_(1.0),
    "fill_diagonal_1d": lambda lib: lib.zeros(3).fill_diagonal_(1.0),
    "fill_diagonal_int": lambda lib: lib.zeros(3, 3, dtype=lib.int32).fill_diagonal_(7),
    "unravel_index": lambda lib: lib.unravel_index(_t(lib, [4, 5, -1]), (2, 3)),
    "unravel_int": lambda lib: lib.unravel_index(_t(lib, 7), (2, 4)),
    "unravel_oob": lambda lib: lib.unravel_index(_t(lib, [6, -7, 13]), (2, 3)),
    "unravel_0": lambda lib: lib.unravel_index(_t(lib, [[1, 2]]), (3, 0)),
    "unravel_float": lambda lib: lib.unravel_index(_t(lib, [1.0]), (2, 3)),
    "put_nograd_leaf": lambda lib: _nograd(lib, lambda: leaf(lib, [0.5, 1.0]).put_(
        _t(lib, [1]), _t(lib, [3.0]))),
    "fill_diagonal_rg_value": lambda lib: (leaf(lib, [[1.0, 2.0], [3.0, 4.0]]) * 1).fill_diagonal_(0.5),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_FORWARD))
def test_composed_forward_vs_torch(name):
    check_forward(COMPOSED_FORWARD, name)


COMPOSED_INPLACE = {
    "leaf_put_": lambda lib, x: x.put_(lib.tensor([0]), lib.tensor([1.0], dtype=x.dtype)),
    "leaf_fill_diagonal_": lambda lib, x: x.view(2, 2).fill_diagonal_(0.0),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_INPLACE))
def test_composed_inplace_leaf_error(name):
    check_leaf_inplace(COMPOSED_INPLACE, name)


COMPOSED_FD = {
    "select_scatter": (lambda x, s: tg.select_scatter(x, s, 1, 2), [_mat(3, 11), [1.0, 2.0, 3.0]]),
    "slice_scatter": (lambda x, s: tg.slice_scatter(x, s, 0, 0, 3, 2), [_mat(3, 12), _mat(3, 13)[:2]]),
    "diagonal_scatter": (lambda x, s: tg.diagonal_scatter(x, s, -1), [_mat(3, 14), [1.0, 2.0]]),
    "put_acc": (lambda x, s: x.put(tg.tensor([0, 0, 8]), s, accumulate=True), [_mat(3, 15), [1.0, 2.0, 3.0]]),
    "fill_diagonal_": (lambda x: (x * 1).fill_diagonal_(3.0) * x, [_mat(3, 21)]),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_FD))
def test_composed_fdcheck(name):
    check_fd(COMPOSED_FD, name)


def test_scatter_family_without_torch():
    a = np.arange(12.0).reshape(3, 4)
    src = np.array([-1.0, -2.0, -3.0])
    want = a.copy()
    want[:, 2] = src
    got = tg.select_scatter(tg.tensor(a), tg.tensor(src), 1, 2).numpy()
    np.testing.assert_array_equal(got, want)
    want = a.copy()
    np.fill_diagonal(want[:, 1:], [7.0, 8.0, 9.0])
    got = tg.diagonal_scatter(tg.tensor(a), tg.tensor([7.0, 8.0, 9.0]), 1).numpy()
    np.testing.assert_array_equal(got, want)
    want = a.copy()
    want.reshape(-1)[[0, 5, 11]] = [1.0, 2.0, 3.0]
    got = tg.tensor(a).put(tg.tensor([0, 5, -1]), tg.tensor([1.0, 2.0, 3.0], dtype=tg.float64)).numpy()
    np.testing.assert_array_equal(got, want)
    w = np.zeros((7, 3))
    np.fill_diagonal(w, 1.0, wrap=True)
    np.testing.assert_array_equal(tg.zeros(7, 3).fill_diagonal_(1.0, wrap=True).numpy(), w)


STRIDED = {
    "windows": lambda lib, x: x.as_strided((3, 4), (2, 1)),
    "offset": lambda lib, x: lib.as_strided(x, (2, 2), (3, 1), 5),
    "overlap_sum": lambda lib, x: x.as_strided((4, 3), (1, 1)) * 2,
    "broadcast": lambda lib, x: x.as_strided((3, 2), (0, 1), 1),
    "of_view": lambda lib, x: (x * 1)[2:].as_strided((2, 3), (3, 1)),
    "scatter": lambda lib, x: lib.as_strided_scatter(x * 1, x[:4].exp(), (2, 2), (1, 3), 1),
}


@pytest.mark.parametrize("name", sorted(STRIDED))
def test_as_strided_vs_torch(name):
    def prog(lib):
        x = leaf(lib, data((12,), seed=11), "float64")
        y = STRIDED[name](lib, x)
        w = lib.tensor(data(tuple(y.shape), 0.5, 1.5, seed=2), dtype=lib.float64)
        (y * w).sum().backward()
        return y, x.grad, y.grad_fn.name()
    same(prog)


def test_as_strided_view_and_errors_vs_torch():
    def prog(lib):
        x = lib.arange(6.0)
        v = x.as_strided((2, 2), (1, 2))
        v.mul_(10)                      # a view: x sees the write
        return [v, x, v.stride(), v.storage_offset(), x.as_strided((2,), (2,), 1)]
    same(prog)
    same(lambda lib: lib.arange(6.0).as_strided((3, 3), (2, 1)), phrases=("out of bounds",))
    same(lambda lib: lib.arange(6.0).as_strided((3, 3), (2,)))
