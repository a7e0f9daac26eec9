"""Reductions and scans against torch and finite differences."""
import numpy as np
import pytest

import tapegrad as tg
from oracle import data, fdcheck, leaf, same

X = data((3, 4), seed=11)
RED = {
    "sum_dims": lambda lib, x: x.sum((0, 1)),
    "mean_neg": lambda lib, x: x.mean(-1, keepdim=True),
    "prod": lambda lib, x: x.prod(),
    "prod1": lambda lib, x: x.prod(1),
    "prod0k": lambda lib, x: lib.prod(x, 0, keepdim=True),
    "var": lambda lib, x: x.var(),
    "var1": lambda lib, x: x.var(1),
    "var_biased": lambda lib, x: lib.var(x, 0, unbiased=False, keepdim=True),
    "var_corr": lambda lib, x: x.var(dim=1, correction=0),
    "var_tuple": lambda lib, x: x.var((0, 1)),
    "std": lambda lib, x: x.std(),
    "std1": lambda lib, x: lib.std(x, 1, keepdim=True),
    "norm": lambda lib, x: x.norm(),
    "norm_dim": lambda lib, x: x.norm(dim=1),
    "norm_p1": lambda lib, x: lib.norm(x, p=1),
    "norm_p3": lambda lib, x: x.norm(3, dim=0, keepdim=True),
    "norm_inf": lambda lib, x: x.norm(float("inf")),
    "vector_norm": lambda lib, x: lib.linalg.vector_norm(x, 2, dim=(0, 1)),
    "vector_norm_ninf": lambda lib, x: lib.linalg.vector_norm(x, float("-inf"), dim=1),
    "linalg_norm": lambda lib, x: lib.linalg.norm(x),
    "linalg_norm_vec": lambda lib, x: lib.linalg.norm(x[0]),
    "cumsum": lambda lib, x: x.cumsum(1),
    "cumsum0": lambda lib, x: lib.cumsum(x, 0),
    "cumsum_long": lambda lib, x: x.reshape(-1).cumsum(0),
    "cumprod": lambda lib, x: x.cumprod(1),
    "cumprod0": lambda lib, x: lib.cumprod(x, dim=0),
    "logsumexp": lambda lib, x: x.logsumexp(1),
    "logsumexp_k": lambda lib, x: lib.logsumexp(x, (0, 1), keepdim=True),
    "logcumsumexp": lambda lib, x: lib.logcumsumexp(x, 1),
    "max": lambda lib, x: x.max(),
    "min": lambda lib, x: lib.min(x),
    "max1": lambda lib, x: x.max(1)[0],
    "max1k": lambda lib, x: lib.max(x, 0, keepdim=True).values,
    "min1": lambda lib, x: x.min(dim=1).values,
    "amax": lambda lib, x: x.amax(1),
    "amax_all": lambda lib, x: lib.amax(x),
    "amin": lambda lib, x: lib.amin(x, (0, 1), keepdim=True),
    "sort": lambda lib, x: x.sort(1)[0],
    "sort_desc": lambda lib, x: lib.sort(x, 0, descending=True).values,
    "topk": lambda lib, x: x.topk(2)[0],
    "topk_small": lambda lib, x: lib.topk(x, 2, dim=0, largest=False).values,
    "median": lambda lib, x: x.median(),
    "median1": lambda lib, x: x.median(1).values,
    "kthvalue": lambda lib, x: x.kthvalue(2, 1).values,
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(RED))
def test_reduction_vs_torch(name, dtype):
    f = RED[name]

    def prog(lib):
        x = leaf(lib, X, dtype)
        y = f(lib, x)
        w = lib.tensor(np.resize(np.array(data((12,), 0.5, 1.5, seed=2)), tuple(y.shape)).tolist(),
                       dtype=getattr(lib, dtype))
        (y * w).sum().backward()
        return y, x.grad, [None if n is None else type(n).__name__
                           for n, _ in y.grad_fn.next_functions][:1]
    same(prog)


@pytest.mark.parametrize("name", sorted(RED))
def test_reduction_finite_differences(name):
    f = RED[name]
    fdcheck(lambda x: f(tg, x), [np.array(X)])


@pytest.mark.parametrize("name", sorted(RED))
def test_reduction_second_order(name):
    """create_graph=True through every composition: matches finite differences of the
    first-order gradient."""
    f = RED[name]
    v = np.array(X)
    w = np.random.default_rng(1).standard_normal(v.shape)

    def first(a):
        x = tg.tensor(a, dtype=tg.float64, requires_grad=True)
        y = f(tg, x)
        (g,) = tg.autograd.grad((y * y).sum(), x)
        return float((g.numpy() * w).sum())
    x = tg.tensor(v, dtype=tg.float64, requires_grad=True)
    y = f(tg, x)
    (g,) = tg.autograd.grad((y * y).sum(), x, create_graph=True)
    (h,) = tg.autograd.grad((g * tg.tensor(w)).sum(), x)
    eps = 1e-6
    want = np.zeros_like(v)
    for i in range(v.size):
        e = np.zeros(v.size)
        e[i] = eps
        want.reshape(-1)[i] = (first(v + e.reshape(v.shape)) - first(v - e.reshape(v.shape))) / (2 * eps)
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-5, atol=1e-5)


def test_ties_split_as_torch():
    def prog(lib):
        x = lib.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
        outs = []
        for y in (x.max(), x.min(), x.amax(1), x.amin(0), x.max(1).values, x.min(1)[0],
                  lib.linalg.vector_norm(x, float("inf"), 1)):
            x.grad = None
            (y * 1.0).sum().backward()
            outs.append((y, x.grad))
        return outs, x.max(1).indices, x.min(dim=1).indices, x.argmax(), x.argmax(1), x.argmin(0, True)
    same(prog)


def test_return_types_and_indices():
    def prog(lib):
        x = lib.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
        m = lib.max(x, 1)
        s = x.sort(descending=True)
        t = x.topk(2, dim=1)
        return (m.values, m.indices, m[0], m[1], s.values, s.indices, t.values, t.indices,
                x.argsort(1), lib.argmax(x), x.argmin(1, keepdim=True), type(m).__name__,
                lib.max(x, lib.ones(3) * 3), x.median(0).indices)
    same(prog)


def test_reductions_on_integers_and_bools():
    def prog(lib):
        i = lib.tensor([[1, 2], [3, 4]])
        b = lib.tensor([True, False, True])
        return (i.prod(), i.prod(1), i.cumsum(0), i.cumprod(1), i.max(), i.max(0).values, i.amax(),
                i.sort(0, descending=True).values, b.any(), b.all(), i.any(1), (i > 2).all(),
                lib.argmax(i), i.norm() if False else None, i.sum(), b.sum(), i.min(1).indices)
    same(prog)


def test_zero_norm_and_zero_prod_gradients():
    def prog(lib):
        x = lib.zeros(3, requires_grad=True)
        x.norm().backward()
        y = lib.tensor([2.0, 0.0, 3.0, 0.0], requires_grad=True)
        y.prod().backward()
        z = lib.tensor([2.0, 0.0, 3.0], requires_grad=True)
        z.prod().backward()
        c = lib.tensor([2.0, 0.0, 3.0], requires_grad=True)
        c.cumprod(0).sum().backward()
        return x.grad, y.grad, z.grad, c.grad
    same(prog)


def test_var_std_edge_cases():
    def prog(lib):
        x = lib.tensor([1.0, 2.0, 4.0], requires_grad=True)
        out = [x.var(), x.std(unbiased=False), lib.var_mean(x), lib.std_mean(x, 0)]
        one = lib.tensor([3.0])
        out.append(one.var())
        out.append(lib.tensor([[1.0, 2.0], [3.0, 5.0]]).std(0))
        return out
    same(prog)


def test_softmax_family_values_on_large_inputs():
    def prog(lib):
        x = lib.tensor([[1000.0, 1001.0, 999.0], [-1000.0, -1002.0, -1e4]], requires_grad=True,
                       dtype=lib.float64)
        y = x.logsumexp(1)
        y.sum().backward()
        return y, x.grad, lib.logsumexp(lib.tensor([float("-inf"), float("-inf")]), 0)
    same(prog)
