"""Reductions and scans against torch and finite differences."""
import numpy as np
import pytest

import tapegrad as tg
from oracle import check_fd, check_forward, check_leaf_inplace, check_program, data, fdcheck, leaf, same
from oracle import square as _mat, tensor_of as _t

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


# ----------------------------------------------------------------------------- precision
# float32 added one element after the other stops growing once the total dwarfs an element
# (numpy adds along an outer dimension row by row); torch's cascade sums do not. These compare
# with float64 numpy: no torch needed.

def _offset_rows(n, k, seed=0):
    return (np.random.default_rng(seed).standard_normal((n, k)) + 1e4).astype(np.float32)


def test_sum_and_mean_over_outer_dims_accumulate_in_float64():
    a = _offset_rows(100_000, 4)
    ref = a.astype(np.float64).sum(0)
    x = tg.from_numpy(a)
    np.testing.assert_allclose(x.sum(0).numpy(), ref, rtol=2e-7)
    np.testing.assert_allclose(x.mean(0).numpy(), ref / a.shape[0], rtol=2e-7)
    np.testing.assert_allclose(x.t().sum(1).numpy(), ref, rtol=2e-7)            # a strided view
    b = a.reshape(1000, 100, 4)
    np.testing.assert_allclose(tg.from_numpy(b).sum((0, 2)).numpy(),
                               b.astype(np.float64).sum((0, 2)), rtol=2e-7)
    big = tg.ones(1 << 24 | 4096, 2).sum(0)          # 2^24 + 1 == 2^24 in float32
    assert big.tolist() == [float((1 << 24) | 4096)] * 2


def test_var_is_two_pass_in_float64():
    a = _offset_rows(100_000, 4, seed=1)
    ref = a.astype(np.float64).var(0, ddof=1)
    x = tg.from_numpy(a)
    np.testing.assert_allclose(x.var(0).numpy(), ref, rtol=1e-5)
    np.testing.assert_allclose(x.std(0, unbiased=False).numpy(),
                               np.sqrt(a.astype(np.float64).var(0)), rtol=1e-5)
    np.testing.assert_allclose(float(x.var()), a.astype(np.float64).var(ddof=1), rtol=1e-5)


def test_cumsum_accumulates_in_float64():
    a = _offset_rows(50_000, 3, seed=2)
    for dim in (0, 1):
        ref = np.cumsum(a.astype(np.float64), axis=dim)
        np.testing.assert_allclose(tg.from_numpy(a).cumsum(dim).numpy(), ref, rtol=2e-7)
    p = np.random.default_rng(3).uniform(0.999, 1.001, 20_000).astype(np.float32)
    np.testing.assert_allclose(tg.from_numpy(p).cumprod(0).numpy(),
                               np.cumprod(p.astype(np.float64)), rtol=2e-7)


def test_unbroadcasting_gradient_accumulates_in_float64():
    """The VJP of an expand (a broadcast operand's gradient) below the numpy threshold runs
    in the compiled kernel: it must add the rows up in float64 too."""
    a = _offset_rows(4000, 4, seed=4)
    ref = a.astype(np.float64).sum(0)
    b = tg.zeros(4, requires_grad=True)
    (tg.from_numpy(a) * b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), ref, rtol=2e-7)
    c = tg.zeros(4, 1, requires_grad=True)
    (tg.from_numpy(a).t() * c).sum().backward()
    np.testing.assert_allclose(c.grad.numpy().ravel(), ref, rtol=2e-7)


def test_replayed_sums_accumulate_in_float64():
    import tapegrad.func as tf

    def f(x, b):
        return x.sum(0).sum() + (x * b).sum() + x.mean(0).sum()
    gv = tf.grad_and_value(f, argnums=(0, 1))
    for seed in (5, 6):                                # record, then replay
        a = _offset_rows(6000, 2, seed=seed)
        (gx, gb), v = gv(tg.from_numpy(a), tg.zeros(2))
        a64 = a.astype(np.float64)
        np.testing.assert_allclose(float(v), a64.sum() + a64.mean(0).sum(), rtol=2e-7)
        np.testing.assert_allclose(gb.numpy(), a64.sum(0), rtol=2e-7)


# ----------------------------------------------------------------------------- edge values
NAN, INF = float("nan"), float("inf")
EDGE = {
    "std_constant": (lambda x: x.std(), [1.0, 1.0, 1.0]),
    "std_constant_column": (lambda x: x.std(0), [[1.0, 2.0], [1.0, 3.0]]),
    "var_dof_negative": (lambda x: x.var(correction=5), [1.0, 2.0, 3.0]),
    "var_dof_negative_ties": (lambda x: x.var(correction=5), [1.0, 2.0, 2.0]),
    "var_dof_zero": (lambda x: x.var(correction=3), [1.0, 2.0, 3.0]),
    "std_dof_negative": (lambda x: x.std(correction=5), [1.0, 2.0, 3.0]),
    "amax_nan_slice": (lambda x: x.amax(0), [[1.0, NAN], [2.0, 3.0]]),
    "amax_nan_all": (lambda x: x.amax(), [1.0, NAN, 2.0, NAN]),
    "amin_nan_slice": (lambda x: x.amin(1), [[1.0, NAN, 0.5], [2.0, 3.0, 2.0]]),
    "norm_nan_slice": (lambda x: x.norm(dim=0), [[1.0, NAN], [2.0, 3.0]]),
    "norm_nan_all": (lambda x: x.norm(), [1.0, NAN, 2.0]),
    "norm_p3_nan_slice": (lambda x: x.norm(3, dim=0), [[1.0, NAN], [2.0, 3.0]]),
    "norm_inf_nan": (lambda x: x.norm(INF, dim=0), [[1.0, NAN], [2.0, 3.0]]),
    "prod_nan": (lambda x: x.prod(0), [[1.0, NAN], [2.0, 3.0]]),
    "prod_inf": (lambda x: x.prod(0), [[1.0, INF], [2.0, -INF]]),
    "prod_all_inf": (lambda x: x.prod(), [1.0, INF, 2.0]),
    "prod_all_nan": (lambda x: x.prod(), [1.0, NAN, 2.0]),
    "prod_zero_and_inf": (lambda x: x.prod(0), [[3.0, 0.0], [2.0, INF]]),
    "max_nan_all": (lambda x: x.max(), [1.0, NAN, 2.0, NAN]),
    "median_ties": (lambda x: x.median(), [3.0, 1.0, 3.0, 1.0]),
    "median_ties_3": (lambda x: x.median(), [1.0, 2.0, 2.0, 2.0, 5.0]),
    "median_nan": (lambda x: x.median(), [4.0, NAN, 3.0]),
    "median_nans": (lambda x: x.median(), [NAN, 2.0, NAN]),
    "median_dim_nan": (lambda x: x.median(0).values, [4.0, NAN, 3.0]),
    "median_dim_nans": (lambda x: x.median(1).values, [[1.0, NAN, NAN, 2.0], [3.0, 1.0, 3.0, 1.0]]),
    "cumprod_nan": (lambda x: x.cumprod(0), [1.0, NAN, 3.0]),
    "cumprod_inf": (lambda x: x.cumprod(0), [1.0, INF, 3.0]),
}


@pytest.mark.parametrize("name", sorted(EDGE))
def test_edge_value_gradients_as_torch(name):
    f, v = EDGE[name]

    def prog(lib):
        x = lib.tensor(v, requires_grad=True)
        y = f(x)
        y.sum().backward()
        return y, x.grad
    same(prog)


def test_std_of_a_constant_slice_has_zero_gradient_without_torch():
    x = tg.tensor([[1.0, 2.0], [1.0, 3.0], [1.0, 7.0]], requires_grad=True)
    x.std(0).sum().backward()
    assert x.grad.numpy()[:, 0].tolist() == [0.0, 0.0, 0.0]
    d = np.array([2.0, 3.0, 7.0])
    np.testing.assert_allclose(x.grad.numpy()[:, 1], (d - d.mean()) / (2 * d.std(ddof=1)),
                               rtol=1e-6)


# ----------------------------------------------------------------------------- arguments
def _args_prog(L):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], requires_grad=True)
    return (x.sum(dim=None, keepdim=True), x.sum(dim=()), x.sum(()), x.sum([]), x.mean(dim=()),
            x.mean(dim=None), x.mean(None, True), x.sum(axis=1), x.sum(1, keepdims=True),
            x.mean(axis=0, keepdims=True), L.sum(x, axis=0), x.std(dim=()),
            x.var(dim=None, keepdim=True), x.std(axis=1), x.var(0, keepdims=True),
            x.nansum(axis=1), x.prod(axis=0), x.prod(0, True), x.logsumexp(axis=1), x.amax(()),
            x.amin(dim=()), x.any(dim=()), x.all(dim=(0, 1)), x.count_nonzero(dim=()),
            L.var_mean(x, dim=()), x.sum(dim=L.tensor(0)), x.sum(), L.sum(x), x.mean())


def _axis_prog(L):
    x = L.tensor([[3.0, 1.0, 2.0, 2.0], [0.5, 4.0, 1.0, 4.0], [2.0, 2.0, 5.0, 0.0]],
                 requires_grad=True)
    return (x.max(axis=1), L.max(x, axis=1, keepdims=True), x.min(axis=0), x.amax(axis=1, keepdims=True),
            x.amin(axis=0), x.argmax(axis=1), x.argmin(axis=1, keepdims=True), x.median(axis=0),
            x.nanmedian(axis=0), x.mode(axis=0), x.all(axis=0), x.any(axis=1, keepdims=True),
            x.sort(axis=0), x.argsort(axis=0), x.topk(1, axis=0), x.kthvalue(1, axis=0),
            x.cumsum(axis=1), x.cumprod(axis=1), x.logcumsumexp(axis=1), x.cummax(axis=1),
            x.cummin(axis=1), x.norm(dim=1, keepdim=True), x.quantile(0.5, axis=1), x.diff(axis=0),
            L.var_mean(x, axis=1, keepdims=True), L.std_mean(x, axis=1), x.aminmax(axis=1),
            x.logsumexp(axis=1, keepdims=True), x.nansum(axis=0, keepdims=True))


ARGS = {
    "dims": _args_prog,
    "axis_keepdims": _axis_prog,
    "float16": lambda L: (lambda x: (x.var(0), x.std(), x.cumsum(1), x.sum(0), x.mean(1),
                                     L.nansum(x, 0), x.prod(0), x.cumprod(0)))(
        L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 7.0]], dtype=L.float16)),
    "quantile_float16": lambda L: L.quantile(L.ones(3, dtype=L.float16), 0.5),
    "cumsum_without_dim": lambda L: L.ones(3).cumsum(),
    "cummax_without_dim": lambda L: L.ones(3).cummax(),
    "sum_keepdim_without_dim": lambda L: L.ones(2, 2).sum(keepdim=True),
    "mean_keepdim_without_dim": lambda L: L.mean(L.ones(2, 2), keepdim=True),
    "sum_repeated_dim": lambda L: L.ones(2, 2).sum((0, 0)),
    "mean_repeated_dim": lambda L: L.ones(2, 2).mean((1, -1)),
    "amax_repeated_dim": lambda L: L.ones(2, 2).amax((0, 0)),
    "std_repeated_dim": lambda L: L.ones(2, 2).std((0, 0)),
    "prod_tuple_dim": lambda L: L.prod(L.ones(2, 2), (0, 1)),
    "prod_dim_none": lambda L: L.prod(L.ones(2, 2), dim=None),
    "prod_keepdim_without_dim": lambda L: L.ones(2, 2).prod(keepdim=True),
    "logsumexp_empty_tuple": lambda L: L.ones(2, 2).logsumexp(()),
    "logsumexp_empty_tuple_keepdim": lambda L: (L.ones(2, 2).logsumexp((), keepdim=True),
                                                L.tensor(2.0).logsumexp(())),
    "logsumexp_empty_dim": lambda L: (lambda x: (L.logsumexp(x, 1), L.logsumexp(x, 1).sum().backward(),
                                                 x.grad))(L.zeros(3, 0, requires_grad=True)),
    "amax_empty": lambda L: L.zeros(0).amax(),
    "amin_empty_tuple": lambda L: L.zeros(0, 3).amin(dim=()),
    "amax_empty_rows": lambda L: L.zeros(0, 3, requires_grad=True).amax(1),
    "argmax_empty": lambda L: L.zeros(0).argmax(),
    "argmin_empty_dim": lambda L: L.zeros(0, 3).argmin(0),
    "argmax_bool": lambda L: L.tensor([True]).argmax(),
    "any_all_uint8": lambda L: (L.tensor([1, 2], dtype=L.uint8).any(),
                                L.tensor([1, 0], dtype=L.uint8).all(0), L.tensor([1, 2]).any()),
    "count_nonzero_0d": lambda L: (L.tensor(3.0).count_nonzero(0), L.tensor(0.0).count_nonzero(0)),
    "aminmax_names": lambda L: L.aminmax(L.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 0.0]],
                                                  requires_grad=True), dim=1),
    "aminmax_empty": lambda L: L.zeros(0).aminmax(),
    "sort_stable_names": lambda L: (lambda x: (x.sort(stable=True)[0], L.sort(x, stable=True)[0],
                                               x.sort(stable=False)[0], x.sort(0, True)[0],
                                               x.msort()))(L.tensor([3.0, 1.0, 2.0], requires_grad=True)),
    "prod_empty": lambda L: (lambda x: (x.prod(), x.prod().backward(), x.grad))(
        L.zeros(0, requires_grad=True)),
    "prod_empty_dim": lambda L: (lambda x: (x.prod(0), x.prod(1), x.prod(0).sum().backward(),
                                            x.grad))(L.zeros(0, 3, requires_grad=True)),
    "logcumsumexp_int": lambda L: L.tensor([1, 2]).logcumsumexp(0),
    "median_empty_dim": lambda L: L.zeros(0, 2).median(0),
    "norm_ord_tuple": lambda L: L.norm(L.ones(2, 2), (0, 1)),
}


@pytest.mark.parametrize("name", sorted(ARGS))
def test_reduction_arguments_as_torch(name):
    same(ARGS[name])


# ----------------------------------------------------------------------------- added functions
XQ = data((3, 5), seed=3)
XNAN = [[1.0, NAN, 3.0, 2.0], [NAN, 5.0, NAN, NAN], [4.0, 1.0, NAN, 1.0]]
NEW = {
    "nansum": lambda L, x: L.nansum(x), "nansum1": lambda L, x: x.nansum(1),
    "nansum_keep": lambda L, x: L.nansum(x, (0, 1), keepdim=True),
    "nanmean": lambda L, x: L.nanmean(x), "nanmean1": lambda L, x: x.nanmean(1, keepdim=True),
    "nanmedian": lambda L, x: x.nanmedian(), "nanmedian1": lambda L, x: L.nanmedian(x, 1),
    "cummax": lambda L, x: L.cummax(x, 1), "cummin0": lambda L, x: x.cummin(0),
    "mode": lambda L, x: x.mode(), "mode0": lambda L, x: L.mode(x, 0, True),
    "diff": lambda L, x: x.diff(), "diff2": lambda L, x: L.diff(x, n=2, dim=0),
    "diff_pre_app": lambda L, x: L.diff(x, prepend=x[:, :1] * 2, append=x[:, -2:]),
    "cov": lambda L, x: L.cov(x), "cov0": lambda L, x: x.cov(correction=0),
    "cov_weights": lambda L, x: L.cov(x, fweights=L.tensor([1, 2, 1, 3, 1]),
                                      aweights=L.tensor([0.5, 1.0, 2.0, 1.0, 0.3])),
    "corrcoef": lambda L, x: L.corrcoef(x), "corrcoef1": lambda L, x: L.corrcoef(x[0]),
    "quantile": lambda L, x: L.quantile(x, 0.3),
    "quantile_q": lambda L, x: L.quantile(x, L.tensor([0.1, 0.5, 0.9], dtype=x.dtype), dim=1,
                                          keepdim=True),
    "quantile_lower": lambda L, x: x.quantile(0.4, 0, interpolation="lower"),
    "quantile_higher": lambda L, x: x.quantile(0.4, 1, interpolation="higher"),
    "quantile_midpoint": lambda L, x: x.quantile(0.4, 1, interpolation="midpoint"),
    "quantile_nearest": lambda L, x: x.quantile(0.4, 1, interpolation="nearest"),
    "nanquantile": lambda L, x: L.nanquantile(x, 0.7, dim=1),
    "quantile_keep": lambda L, x: L.quantile(x, 0.25, keepdim=True),
    "cdist": lambda L, x: L.cdist(x, x[:2] * 0.5 + 0.1),
    "cdist_p1": lambda L, x: L.cdist(x, x[:2] + 0.3, p=1),
    "cdist_p3": lambda L, x: L.cdist(x[None], x[None, :2] + 0.3, p=3),
    "cdist_inf": lambda L, x: L.cdist(x, x[:2] + 0.3, p=float("inf")),
    "cdist_p0": lambda L, x: L.cdist(x, x[:2] + 0.3, p=0),
    "cdist_mm": lambda L, x: L.cdist(L.cat([x.reshape(-1, 1)] * 2, 1).repeat(2, 1), x[:2, :2].t() * 1.5),
    "dist": lambda L, x: L.dist(x, x.flip(0) * 0.5), "dist_p1": lambda L, x: x.dist(x[0], 1),
    "dist_inf": lambda L, x: L.dist(x, L.zeros(5), float("inf")),
}
NEW_NAN = ("nansum", "nansum1", "nanmean", "nanmean1", "nanmedian", "nanquantile", "cummax",
           "cummin0")
NEW_FD = sorted(set(NEW) - {"mode", "mode0", "cdist_p0", "cdist_inf", "dist_inf",
                            "quantile_lower", "quantile_higher", "quantile_nearest"})


def _first(y):
    return y[0] if isinstance(y, tuple) else y


def _new_prog(f, vals, dtype):
    def prog(lib):
        x = leaf(lib, vals, dtype)
        y = f(lib, x)
        v = _first(y)
        if v.requires_grad:
            w = lib.tensor(np.resize(np.arange(1, 40) * 0.37, tuple(v.shape)).tolist(),
                           dtype=getattr(lib, dtype))
            (v * w).sum().backward()
        return y, x.grad, None if v.grad_fn is None else [
            None if n is None else n.name() for n, _ in v.grad_fn.next_functions][:3]
    return prog


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(NEW))
def test_added_reductions_vs_torch(name, dtype):
    same(_new_prog(NEW[name], XQ, dtype))


@pytest.mark.parametrize("name", NEW_NAN)
def test_added_reductions_with_nans_vs_torch(name):
    same(_new_prog(NEW[name], XNAN, "float32"))


@pytest.mark.parametrize("name", NEW_FD)
def test_added_reductions_finite_differences(name):
    fdcheck(lambda x: _first(NEW[name](tg, x)), [np.array(XQ)])


def test_added_reductions_against_numpy():
    a = np.array(XQ)
    x = tg.tensor(a, dtype=tg.float64)
    np.testing.assert_allclose(tg.cov(x).numpy(), np.cov(a), rtol=1e-12)
    np.testing.assert_allclose(tg.corrcoef(x).numpy(), np.corrcoef(a), rtol=1e-12)
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        np.testing.assert_allclose(tg.quantile(x, 0.37, dim=1, interpolation=method).numpy(),
                                   np.quantile(a, 0.37, axis=1, method=method), rtol=1e-12)
    np.testing.assert_allclose(tg.diff(x, n=2).numpy(), np.diff(a, n=2), rtol=1e-12)
    n = np.array(XNAN)
    np.testing.assert_allclose(tg.nansum(tg.tensor(n), 1).numpy(), np.nansum(n, 1), rtol=1e-6)
    np.testing.assert_allclose(tg.nanquantile(tg.tensor(n, dtype=tg.float64), 0.5, 1).numpy(),
                               np.nanquantile(n, 0.5, 1), rtol=1e-12)
    c = tg.tensor([[0.0, 1.0], [2.0, 2.0]])
    ref = np.sqrt(((c.numpy()[:, None] - c.numpy()[None]) ** 2).sum(-1))
    np.testing.assert_allclose(tg.cdist(c, c).numpy(), ref, rtol=1e-6)
    v = tg.tensor([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    assert tg.cummax(v, 0).indices.tolist() == [0, 0, 2, 2, 4, 5, 5, 5]
    assert tg.searchsorted(tg.tensor([1, 3, 5, 7]), tg.tensor([3, 6, 9])).tolist() == [1, 3, 4]
    assert tg.bincount(tg.tensor([0, 1, 1, 3])).tolist() == [1, 2, 0, 1]
    assert tg.unique(tg.tensor([3, 1, 3])).tolist() == [1, 3]


COUNT = {
    "bincount": lambda L: (L.bincount(L.tensor([0, 1, 1, 3])),
                           L.bincount(L.tensor([0, 1, 1, 3]), minlength=6),
                           L.bincount(L.tensor([0, 1, 1, 3]), L.tensor([0.5, 1.0, 2.0, 3.0])),
                           L.bincount(L.tensor([0, 1, 1, 3]), L.tensor([1, 2, 3, 4])),
                           L.bincount(L.tensor([], dtype=L.int64)),
                           L.bincount(L.tensor([0, 2]), L.tensor([1.0, 2.0], dtype=L.float64))),
    "bincount_negative": lambda L: L.bincount(L.tensor([-1])),
    "bincount_2d": lambda L: L.bincount(L.tensor([[1]])),
    "bincount_float": lambda L: L.bincount(L.tensor([1.0])),
    "bincount_grad": lambda L: L.bincount(L.tensor([0, 1]), L.tensor([1.0, 2.0], requires_grad=True)),
    "unique": lambda L: (L.unique(L.tensor([3, 1, 2, 3, 1, 5])),
                         L.unique(L.tensor([3, 1, 2, 3, 1, 5]), return_inverse=True, return_counts=True),
                         L.tensor([[1, 2], [3, 4], [1, 2], [0, 9]]).unique(
                             dim=0, return_inverse=True, return_counts=True),
                         L.unique(L.tensor([[1, 2], [3, 4]]), return_inverse=True),
                         L.unique(L.tensor(3)), L.unique(L.tensor([True, False, True])),
                         L.unique(L.tensor([2.0, NAN, 1.0, NAN, 2.0]), return_counts=True),
                         L.unique(L.zeros(0, 3), dim=0),
                         L.unique(L.tensor([], dtype=L.int64), return_inverse=True,
                                  return_counts=True)),
    "unique_grad": lambda L: L.unique(L.tensor([2.0, 1.0, 2.0], requires_grad=True)),
    "unique_dim_grad": lambda L: L.unique(L.tensor([[2.0, 1.0], [2.0, 1.0]], requires_grad=True),
                                          dim=0),
    "unique_backward": lambda L: L.unique(L.tensor([2.0, 1.0], requires_grad=True)).sum().backward(),
    "unique_empty_kept_dim": lambda L: L.unique(L.zeros(0, 3), dim=1),
    "unique_consecutive": lambda L: (
        L.unique_consecutive(L.tensor([1, 1, 2, 2, 3, 1, 1])),
        L.unique_consecutive(L.tensor([1, 1, 2, 2, 3, 1, 1]), return_inverse=True, return_counts=True),
        L.unique_consecutive(L.tensor([[1, 2], [1, 2], [3, 4]]), dim=0, return_counts=True)),
    "histc": lambda L: (L.histc(L.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3),
                        L.histc(L.tensor([1.0, 2.0, 1.0]), bins=4),
                        L.tensor([1.0, 2.0, 4.0, 7.0]).histc(3),
                        L.histc(L.tensor([1.0, 2.0, 5.0], dtype=L.float64), bins=4, min=0, max=3),
                        L.histc(L.tensor([2.0, 2.0]), bins=4),
                        L.histc(L.tensor([0.0, 0.5, 1.0, 3.0]), bins=3, min=0, max=3),
                        L.histc(L.tensor([1.0, 2.0], requires_grad=True), bins=4)),
    "histc_int": lambda L: L.histc(L.tensor([1, 2]), bins=3),
    "histc_range": lambda L: L.histc(L.tensor([1.0, 2.0]), bins=4, min=3, max=0),
    "searchsorted": lambda L: (
        L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([3, 6, 9])),
        L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([3, 6, 9]), right=True),
        L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([3, 6, 9]), side="right"),
        L.searchsorted(L.tensor([[1, 3, 5], [2, 4, 6]]), L.tensor([[3], [5]])),
        L.searchsorted(L.tensor([1.0, 3.0]), 2.0),
        L.searchsorted(L.tensor([1, 3, 5, 7]), L.tensor([3, 6]), out_int32=True),
        L.searchsorted(L.tensor([5, 1, 3]), L.tensor([3]), sorter=L.tensor([1, 2, 0]))),
    "bucketize": lambda L: (L.bucketize(L.tensor([3, 6, 9]), L.tensor([1, 3, 5, 7])),
                            L.bucketize(L.tensor([[3, 6], [9, 0]]), L.tensor([1, 3, 5, 7]), right=True),
                            L.bucketize(2.5, L.tensor([1, 3, 5, 7])),
                            L.bucketize(L.tensor([3.0]), L.tensor([1.0, 3.0]), out_int32=True)),
    "cov_fweights": lambda L: L.cov(L.tensor([[1.0, 2.0, 4.0], [3.0, 1.0, 0.0]]),
                                    fweights=L.tensor([1, 2, 1])),
    "cov_aweights": lambda L: L.cov(L.tensor([[1.0, 2.0, 4.0], [3.0, 1.0, 0.0]]),
                                    aweights=L.tensor([1.0, 2.0, 1.0]), correction=0),
    "cov_1d": lambda L: (L.cov(L.tensor([1.0, 2.0, 4.0])), L.corrcoef(L.tensor([1.0, 2.0, 4.0]))),
    "cov_int": lambda L: L.cov(L.tensor([[1, 2, 4], [3, 1, 0]])),
    "cov_3d": lambda L: L.cov(L.zeros(2, 2, 2)),
    "cov_no_dof": lambda L: L.cov(L.tensor([[1.0, 2.0]]), correction=3),
    "cov_fweights_2d": lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([[1, 2, 1]])),
    "cov_fweights_float": lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1.0, 2.0, 1.0])),
    "cov_fweights_size": lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1, 2])),
    "cov_fweights_negative": lambda L: L.cov(L.ones(2, 3), fweights=L.tensor([1, -2, 1])),
    "cov_aweights_int": lambda L: L.cov(L.ones(2, 3), aweights=L.tensor([1, 2, 1])),
    "cov_aweights_negative": lambda L: L.cov(L.ones(2, 3), aweights=L.tensor([1.0, -2.0, 1.0])),
    "diff_types": lambda L: (L.diff(L.tensor([True, False, False])), L.diff(L.tensor([1, 3, 6])),
                             L.diff(L.tensor([1.0, 2.0, 4.0, 7.0]), n=5)),
    "diff_0d": lambda L: L.diff(L.tensor(1.0)),
    "mode_values": lambda L: (L.tensor([1, 1, 2, 2, 3]).mode(), L.tensor([3.0, 3.0, 1.0, 1.0]).mode(),
                              L.tensor([5.0, 1.0, 5.0, 1.0, 2.0]).mode(), L.tensor(3.0).mode(),
                              L.tensor([[1, 2, 2], [4, 4, 1]]).mode(0)),
    "cummax_values": lambda L: (L.tensor([1, 2, 3]).cummax(0), L.tensor([True, False, True]).cummax(0),
                                L.tensor([True, False, False]).cummin(0), L.tensor(2.0).cummax(0),
                                L.tensor([2.0, 0.0, 3.0, 0.0, 5.0]).cummin(0),
                                L.tensor([1.0, NAN, 2.0, NAN, 0.0]).cummax(0),
                                L.tensor([1.0, NAN, 2.0, NAN, 0.0]).cummin(0)),
    "nanmean_int": lambda L: L.nanmean(L.tensor([1, 2])),
    "nan_values": lambda L: (L.nansum(L.tensor([1, 2])), L.nansum(L.tensor([True, True])),
                             L.nanmean(L.tensor([NAN, NAN])), L.nansum(L.zeros(0)),
                             L.nanmean(L.zeros(3, 0), 1),
                             L.tensor([[1.0, NAN], [NAN, NAN]]).nansum(0, keepdim=True),
                             L.nanmedian(L.tensor([NAN, NAN])), L.nanmedian(L.zeros(0))),
    "quantile_q_range": lambda L: L.quantile(L.tensor([1.0, 2.0]), 1.5),
    "quantile_q_2d": lambda L: L.quantile(L.tensor([1.0, 2.0]), L.tensor([[0.3]])),
    "quantile_int": lambda L: L.quantile(L.tensor([1, 2]), 0.5),
    "quantile_method": lambda L: L.quantile(L.tensor([1.0, 2.0]), 0.5, interpolation="foo"),
    "quantile_empty": lambda L: L.quantile(L.zeros(0), 0.5),
    "quantile_q_dtype": lambda L: L.quantile(L.tensor([1.0, 2.0]), L.tensor([0.5], dtype=L.float64)),
    "quantile_shapes": lambda L: (L.quantile(L.tensor(3.0), 0.5),
                                  L.quantile(L.tensor(3.0), 0.5, dim=0, keepdim=True),
                                  L.quantile(L.tensor([[1.0, 2.0], [3.0, 4.0]]), L.tensor([0.5, 0.2]),
                                             keepdim=True),
                                  L.quantile(L.tensor([1.0, 2.0, 4.0, 7.0, 9.0]), 0.375,
                                             interpolation="nearest")),
    "cdist_columns": lambda L: L.cdist(L.zeros(3, 2), L.zeros(3, 1)),
    "cdist_negative_p": lambda L: L.cdist(L.zeros(3, 2), L.zeros(3, 2), p=-1),
    "cdist_1d": lambda L: L.cdist(L.zeros(3), L.zeros(3, 3)),
    "cdist_shapes": lambda L: (L.cdist(L.ones(2, 1, 3, 2), L.ones(5, 4, 2)).shape,
                               L.cdist(L.zeros(0, 2), L.zeros(3, 2)), L.cdist(L.zeros(2, 0), L.zeros(3, 0))),
    "cdist_zero_distance_grad": lambda L: (lambda a: (L.cdist(a, a.detach()).sum().backward(),
                                                      a.grad)[1])(L.tensor([[0.0, 1.0]], requires_grad=True)),
    "dist_values": lambda L: (L.dist(L.tensor([1.0, 2.0, 0.0], requires_grad=True), L.ones(3), INF),
                              L.dist(L.tensor([1.0, 2.0]), L.tensor([1.0, 2.0]))),
}


@pytest.mark.parametrize("name", sorted(COUNT))
def test_added_functions_as_torch(name):
    same(COUNT[name])


# ----------------------------------------------------------------------------- composed functions
# name -> (program on x, input shape, domain)
COMPOSED = {
    "cumtrap": (lambda lib, x: lib.cumulative_trapezoid(x), (3, 4), (-1, 1)),
    "cumtrap_dx": (lambda lib, x: lib.cumulative_trapezoid(x, dx=0.5, dim=0), (3, 4), (-1, 1)),
    "cumtrap_x": (lambda lib, x: lib.cumulative_trapezoid(
        x, lib.tensor([0.0, 0.5, 2.0, 2.5], dtype=x.dtype)), (3, 4), (-1, 1)),
    "gradient": (lambda lib, x: lib.gradient(x), (3, 4), (-1, 1)),
    "gradient_sp": (lambda lib, x: lib.gradient(x, spacing=[2.0, 0.5]), (3, 4), (-1, 1)),
    "gradient_e2": (lambda lib, x: lib.gradient(x, dim=1, edge_order=2), (3, 4), (-1, 1)),
    "gradient_coords": (lambda lib, x: lib.gradient(
        x, spacing=(lib.tensor([0.0, 1.0, 3.0, 3.5], dtype=x.dtype),), dim=1), (3, 4), (-1, 1)),
    "gradient_coords_e2": (lambda lib, x: lib.gradient(
        x, spacing=(lib.tensor([0.0, 1.0, 3.0, 3.5], dtype=x.dtype),), dim=1, edge_order=2),
        (3, 4), (-1, 1)),
    "renorm": (lambda lib, x: lib.renorm(x, 2, 0, 1.0), (3, 4), (-1, 1)),
    "renorm_p1_dim1": (lambda lib, x: x.renorm(1, 1, 1.2), (3, 4), (-1, 1)),
    "sum_to_size": (lambda lib, x: x.sum_to_size(1, 4), (3, 4), (-1, 1)),
    "sum_to_size_lead": (lambda lib, x: x.sum_to_size(4), (3, 4), (-1, 1)),
    "sum_to_size_11": (lambda lib, x: x.sum_to_size((3, 1)), (3, 4), (-1, 1)),
    "frexp": (lambda lib, x: lib.frexp(x * 10), (4,), (-1, 1)),
    "renorm_": (lambda lib, x: (x * 1).renorm_(2, 1, 0.5), (3, 4), (-1, 1)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_vs_torch(name, dtype):
    check_program(COMPOSED, name, dtype)


COMPOSED_FORWARD = {
    "cumtrap_int": lambda lib: lib.cumulative_trapezoid(_t(lib, [1, 2, 4])),
    "cumtrap_one": lambda lib: lib.cumulative_trapezoid(_t(lib, [3.0])),
    "gradient_int": lambda lib: lib.gradient(_t(lib, [1, 2, 4, 8])),
    "gradient_small": lambda lib: lib.gradient(_t(lib, [1.0, 2.0]), edge_order=2),
    "gradient_edge3": lambda lib: lib.gradient(_t(lib, [1.0, 2.0, 3.0]), edge_order=3),
    "gradient_badspacing": lambda lib: lib.gradient(_t(lib, [1.0, 2.0, 3.0]), spacing=[1.0, 2.0]),
    "gradient_dims": lambda lib: lib.gradient(lib.arange(12.0).reshape(3, 4) ** 2, dim=(1, 0),
                                              spacing=[0.5, 3.0]),
    "renorm_1d": lambda lib: lib.renorm(_t(lib, [1.0, 2.0]), 2, 0, 1.0),
    "renorm_p0": lambda lib: lib.renorm(_t(lib, [[1.0, 2.0]]), 0, 0, 1.0),
    "renorm_neg": lambda lib: lib.renorm(_t(lib, [[1.0, 2.0]]), 2, 0, -1.0),
    "renorm_inf": lambda lib: lib.renorm(_t(lib, [[1.0, -4.0], [0.1, 0.2]]), float("inf"), 0, 2.0),
    "sum_to_size_bad": lambda lib: lib.ones(3, 3).sum_to_size(1, 4),
    "sum_to_size_same": lambda lib: lib.ones(3, 3, requires_grad=True).sum_to_size(3, 3),
    "sum_to_size_int": lambda lib: lib.arange(6).reshape(2, 3).sum_to_size(1, 3),
    "frexp": lambda lib: lib.frexp(_t(lib, [0.0, 1.0, -3.5, 1e-3, 1024.0])),
    "frexp_f64": lambda lib: lib.frexp(_t(lib, [6.0], "float64")).exponent,
    "frexp_int": lambda lib: lib.frexp(_t(lib, [1, 2])),
    "frexp_method": lambda lib: _t(lib, [5.0]).frexp().mantissa,
    "histogram": lambda lib: lib.histogram(_t(lib, [1.0, 2.0, 1.0, 4.0, 2.5]), 4),
    "histogram_range": lambda lib: lib.histogram(_t(lib, [1.0, 2.0, 1.0, 4.0]), bins=3,
                                                 range=(0.0, 3.0)),
    "histogram_edges": lambda lib: lib.histogram(_t(lib, [1.0, 2.0, 1.0]),
                                                 _t(lib, [0.0, 1.0, 5.0]), density=True),
    "histogram_weight": lambda lib: _t(lib, [1.0, 2.0, 1.0], "float64").histogram(
        2, weight=_t(lib, [0.5, 1.0, 2.0], "float64")),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_FORWARD))
def test_composed_forward_vs_torch(name):
    check_forward(COMPOSED_FORWARD, name)


COMPOSED_INPLACE = {
    "leaf_renorm_": lambda lib, x: x.view(2, 2).renorm_(2, 0, 1.0),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_INPLACE))
def test_composed_inplace_leaf_error(name):
    check_leaf_inplace(COMPOSED_INPLACE, name)


COMPOSED_FD = {
    "renorm": (lambda x: x.renorm(2, 1, 0.8), [_mat(3, 4)]),
    "renorm_p3": (lambda x: tg.renorm(x, 3, 0, 0.5), [_mat(3, 5)]),
    "gradient": (lambda x: tg.stack(tg.gradient(x, spacing=0.3, edge_order=2)), [_mat(4, 8)]),
    "gradient_coords": (lambda x, c: tg.gradient(x, spacing=(c,), dim=0)[0],
                        [_mat(4, 9), [0.0, 0.5, 1.7, 2.0]]),
    "cumtrap_x": (lambda y, x: tg.cumulative_trapezoid(y, x, dim=0), [_mat(4, 10), [0.0, 0.3, 1.0, 1.1]]),
    "frexp": (lambda x: tg.frexp(x * 5)[0], [[0.3, -1.2, 2.0, 7.0]]),
    "sum_to_size": (lambda x: x.sum_to_size(3, 1), [_mat(3, 20)]),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_FD))
def test_composed_fdcheck(name):
    check_fd(COMPOSED_FD, name)


def test_gradient_exact_on_quadratics():
    # central differences are exact on quadratics; edge_order=2 is exact at the edges too
    x = np.linspace(0.0, 2.0, 5)
    y = tg.tensor(3 * x ** 2 - x, dtype=tg.float64)
    (g,) = tg.gradient(y, spacing=0.5, edge_order=2)
    np.testing.assert_allclose(g.numpy(), 6 * x - 1, rtol=1e-12, atol=1e-12)
    xs = np.array([0.0, 0.4, 1.0, 1.3, 2.0])
    (g,) = tg.gradient(tg.tensor(xs ** 2, dtype=tg.float64),
                       spacing=(tg.tensor(xs, dtype=tg.float64),), edge_order=2)
    np.testing.assert_allclose(g.numpy(), 2 * xs, rtol=1e-12, atol=1e-12)


def test_cumulative_trapezoid_integrates_linear_exactly():
    x = np.array([0.0, 0.5, 1.5, 2.0])
    y = 2 * x + 1
    got = tg.cumulative_trapezoid(tg.tensor(y, dtype=tg.float64), tg.tensor(x, dtype=tg.float64))
    np.testing.assert_allclose(got.numpy(), (x ** 2 + x)[1:], rtol=1e-14)
