"""The eager path's big matrix products (``tapegrad._blas``: row or column blocks of
single-threaded gemm calls on the elementwise kernels' threads) against numpy, and the eager
matmul gradients that use them against finite differences."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad._compiled import _blas

needs_blas = pytest.mark.skipif(not _blas.OK, reason="no OpenBLAS with thread control here")


@needs_blas
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(97, 64, 130), (130, 64, 97), (1, 512, 700), (700, 512, 1),
                                   (3, 5, 2)])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
def test_products_match_numpy(shape, ta, tb, dt):
    """Row blocks (m >= n) and column blocks (m < n), every transpose combination, a block
    count above the rows available (m or n of 1)."""
    m, k, n = shape
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dt)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dt)
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    got = _blas.mm(a, b, ta, tb)
    assert got.shape == (m, n) and got.dtype == dt
    np.testing.assert_allclose(got, want, rtol=1e-4 if dt == np.float32 else 1e-12,
                               atol=1e-3 if dt == np.float32 else 1e-10)


@needs_blas
def test_transposed_and_strided_views():
    """A transposed view is passed as its base with the flag flipped (no copy); a strided
    view is copied; both give numpy's product."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal((80, 120))
    for a in (base.T, base[::2, ::3], base[:, :80]):
        b = rng.standard_normal((a.shape[1], 50))
        np.testing.assert_allclose(_blas.mm(a, b), a @ b, rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(_blas.mm(b.T, a.T), (a @ b).T, rtol=1e-12, atol=1e-10)


@needs_blas
def test_openblas_thread_count_is_restored():
    """The user's own numpy products keep their threads: mm sets OpenBLAS to one thread only
    for its own call."""
    get, set_ = _blas._threads
    before = get()
    a = np.ones((300, 300), np.float32)
    _blas.mm(a, a)
    assert get() == before
    set_(1)
    try:
        _blas.mm(a, a)
        assert get() == 1
    finally:
        set_(before)


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_big_eager_matmul_gradients_match_finite_differences(dt):
    """Products above ``_blas.MIN`` multiply-adds in the forward and both VJPs (a transposed
    operand included) against central differences of the float64 function."""
    rng = np.random.default_rng(2)
    k = 130                                           # 130^3 > MIN multiply-adds
    assert k ** 3 >= _blas.MIN
    a0 = rng.uniform(-1, 1, (k, k))
    b0 = rng.uniform(-1, 1, (k, k))

    def f(a, b):
        return (tg.tanh(a @ b.t()) * (a @ b)).sum()

    a = tg.tensor(a0, dtype=dt, requires_grad=True)
    b = tg.tensor(b0, dtype=dt, requires_grad=True)
    f(a, b).backward()
    eps = 1e-6
    tol = 2e-3 if dt is tg.float32 else 1e-6
    for (i, j) in ((0, 0), (13, 41), (129, 5)):
        for which, arr in (("a", a0), ("b", b0)):
            p, m = arr.copy(), arr.copy()
            p[i, j] += eps
            m[i, j] -= eps
            with tg.no_grad():
                if which == "a":
                    fd = (f(tg.tensor(p), tg.tensor(b0)) - f(tg.tensor(m), tg.tensor(b0))).item()
                else:
                    fd = (f(tg.tensor(a0), tg.tensor(p)) - f(tg.tensor(a0), tg.tensor(m))).item()
            fd /= 2 * eps
            got = (a if which == "a" else b).grad.numpy()[i, j]
            assert abs(got - fd) <= tol * max(1.0, abs(fd)), (which, i, j, got, fd)


def test_big_integer_products_stay_on_numpy():
    """Only float32/float64 products take the gemm split; an int64 product of the same size
    gives numpy's exact integers."""
    rng = np.random.default_rng(3)
    a0 = rng.integers(-5, 5, (130, 140))
    b0 = rng.integers(-5, 5, (140, 150))
    got = tg.tensor(a0) @ tg.tensor(b0)
    assert got.dtype == tg.int64
    np.testing.assert_array_equal(got.numpy(), a0 @ b0)


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
@pytest.mark.parametrize("mkn", [(32, 32, 32), (40, 50, 60), (100, 100, 100), (128, 128, 128)])
def test_mid_size_product_vjps_run_compiled_and_match_the_closed_form(mkn, dt):
    """Products below _blas.MIN multiply-adds whose nodes are small stay in the compiled sweep
    (no F_BIG; kernels.vjp_mm calls gemm when BLAS is bound); from MIN on, numpy's side runs
    them. Both give G B^T and A^T G for a random cotangent G (oracle: numpy in float64)."""
    from tapegrad._compiled import _native
    from tapegrad._core import tape
    from tapegrad._schema import F_BIG, FL, K
    m, k, n = mkn
    rs = np.random.default_rng(m + k + n)
    a0, b0, g0 = rs.uniform(-1, 1, (m, k)), rs.uniform(-1, 1, (k, n)), rs.uniform(-1, 1, (m, n))
    a = tg.tensor(a0, dtype=dt, requires_grad=True)
    b = tg.tensor(b0, dtype=dt, requires_grad=True)
    y = a @ b
    big = m * k * n >= (_blas.MIN if _native.BLAS else tape.BIG)
    assert bool(y._tape.E[-K + FL] & F_BIG) == big
    y.backward(tg.tensor(g0, dtype=dt))
    tol = 1e-4 if dt == tg.float32 else 1e-12
    A, B, G = (v.astype(dt.np).astype(np.float64) for v in (a0, b0, g0))
    np.testing.assert_allclose(a.grad.numpy(), G @ B.T, rtol=tol, atol=tol * k)
    np.testing.assert_allclose(b.grad.numpy(), A.T @ G, rtol=tol, atol=tol * m)


@needs_blas
def test_mid_size_products_run_on_one_openblas_thread():
    """Products from ONE_FROM to MIN multiply-adds (100^3) go through matmul1: OpenBLAS held
    to one thread during the call, its count restored after; the value is numpy's."""
    get, set_ = _blas._threads
    seen = []

    def spy(a, b):
        seen.append(get())
        return np.matmul(a, b)
    before = get()
    set_(2)
    orig = _blas.np.matmul
    try:
        rng = np.random.default_rng(0)
        a, b = rng.standard_normal((100, 100)), rng.standard_normal((100, 100))
        x = tg.tensor(a, requires_grad=True)
        _blas.np = type("np_spy", (), {"matmul": staticmethod(spy)})
        try:
            y = x @ tg.tensor(b)
        finally:
            _blas.np = np
        assert seen == [1] and get() == 2
        np.testing.assert_array_equal(y.detach().numpy(), orig(a, b))
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), np.ones((100, 100)) @ b.T, rtol=1e-12)
    finally:
        set_(before)
