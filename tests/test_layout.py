"""Transposed copies (``tapegrad._layout``: SIMD blocks, tiles on every core) against numpy,
exactly, and the places that use them: ``x * x.t()``, ``.contiguous()``, the transpose's
VJP added in place, and matrix-product VJPs added into an existing cotangent (gemm's
beta = 1)."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad._compiled import _blas, _layout, _vmath

# below _vmath.PAR elements (the one-core kernel): the first five; above it: the others
SHAPES = [(16, 16), (64, 64), (63, 65), (100, 300), (257, 250), (17, 5000), (5000, 17),
          (100, 3000), (3000, 100), (316, 316), (520, 530)]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES)
def test_transpose_copy_and_add_match_numpy_exactly(shape, dt):
    """Both sides on and off the block size (8 / 4 lanes) and the tiles (64 x 256), on
    both sides of the parallel threshold."""
    rng = np.random.default_rng(shape[0] * 7 + shape[1])
    x = rng.standard_normal(shape).astype(dt)
    assert _layout.usable(x) == (x.size >= _layout.MIN)
    got = _layout.transpose(x)
    assert got.shape == shape[::-1] and got.dtype == dt and got.flags.c_contiguous
    np.testing.assert_array_equal(got, x.T)
    acc = rng.standard_normal(shape[::-1]).astype(dt)
    want = acc + x.T
    out = _layout.transpose(x, acc, add=True)
    assert out is acc
    np.testing.assert_array_equal(acc, want)
    np.testing.assert_array_equal(_layout.contiguous(x.T), x.T)


def test_parallel_and_serial_kernels_agree():
    """The same matrix through the one-core and the threaded kernel."""
    x = np.random.default_rng(0).standard_normal((300, 260)).astype(np.float32)
    a = np.empty((260, 300), np.float32)
    b = np.empty((260, 300), np.float32)
    _layout._serial(x, a, False, 8)
    _layout._parallel(x, b, False, 8)
    np.testing.assert_array_equal(a, x.T)
    np.testing.assert_array_equal(b, x.T)


@pytest.mark.parametrize("arr", [
    np.arange(60000, dtype=np.int64).reshape(200, 300).T,          # not a float
    np.ones((40, 50), np.float32).T,                                # below MIN
    np.ones((8, 9000), np.float32).T,                               # a side below 16
    np.arange(120000, dtype=np.float32).reshape(300, 400)[::2, ::3],   # strided, not a .T
    np.arange(24, dtype=np.float64).reshape(2, 3, 4).transpose(2, 0, 1),
])
def test_contiguous_falls_back_to_numpy(arr):
    got = _layout.contiguous(arr)
    assert got.flags.c_contiguous and got.dtype == arr.dtype
    np.testing.assert_array_equal(got, arr)
    c = np.ascontiguousarray(arr)
    assert _layout.contiguous(c) is c


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_x_times_x_t_forward_and_gradient_exact(dt):
    """y = x * x.t(), y.backward(G): x.grad = G * x^T + (G * x)^T, each product and the sum
    rounded once in the dtype, as numpy computes it."""
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal((300, 300)).astype(dt.np)
    g0 = rng.standard_normal((300, 300)).astype(dt.np)
    x = tg.tensor(x0, requires_grad=True)
    y = x * x.t()
    np.testing.assert_array_equal(y.detach().numpy(), x0 * x0.T)
    y.backward(tg.tensor(g0))
    np.testing.assert_array_equal(x.grad.numpy(), g0 * x0.T + (g0 * x0).T)


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_op_with_a_transposed_operand(monkeypatch, op, first, dt):
    """a op w.t() (w.t() op a when first): the copy of the transposed operand and the op in
    one pass (_layout.binary, spied); the value exactly numpy's, the gradients of both
    operands (the saved copy feeds them) against the float64 closed forms."""
    log = []
    _spy(monkeypatch, _layout, "binary", log)
    rng = np.random.default_rng(9)
    a0 = rng.uniform(0.5, 1.5, (260, 300))
    w0 = rng.uniform(0.5, 1.5, (300, 260))
    g0 = rng.uniform(-1, 1, (260, 300))
    a = tg.tensor(a0, dtype=dt, requires_grad=True)
    w = tg.tensor(w0, dtype=dt, requires_grad=True)
    f = {"add": lambda u, v: u + v, "sub": lambda u, v: u - v,
         "mul": lambda u, v: u * v, "div": lambda u, v: u / v}[op]
    y = f(w.t(), a) if first else f(a, w.t())
    assert len(log) == 1 and y.grad_fn.name() == op.capitalize() + "Backward0"
    A, W = a0.astype(dt.np), w0.astype(dt.np)
    np.testing.assert_array_equal(y.detach().numpy(), f(W.T, A) if first else f(A, W.T))
    y.backward(tg.tensor(g0, dtype=dt))
    A, Wt, G = A.astype(np.float64), W.T.astype(np.float64), g0
    u, v = (Wt, A) if first else (A, Wt)
    gu = {"add": G, "sub": G, "mul": G * v, "div": G / v}[op]
    gv = {"add": G, "sub": -G, "mul": G * u, "div": -G * u / v ** 2}[op]
    ga, gw = (gv, gu.T) if first else (gu, gv.T)
    tol = 1e-5 if dt is tg.float32 else 1e-12
    np.testing.assert_allclose(a.grad.numpy(), ga, rtol=tol, atol=tol)
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=tol, atol=tol)


def _spy(monkeypatch, mod, name, log):
    real = getattr(mod, name)

    def spy(*args, **kw):
        log.append((args, kw))
        return real(*args, **kw)
    monkeypatch.setattr(mod, name, spy)


@pytest.mark.parametrize("first", [True, False])
def test_transpose_vjp_new_and_added_in_place(monkeypatch, first):
    """x.t()'s cotangent transposed onto x: as x's first contribution (a new array), and
    added in place into the one already there (x * V recorded after the transpose)."""
    log = []
    _spy(monkeypatch, _layout, "transpose", log)
    rng = np.random.default_rng(2)
    x0, w0, v0 = (rng.standard_normal((260, 300)).astype(np.float32) for _ in range(3))
    x = tg.tensor(x0, requires_grad=True)
    w, v = tg.tensor(w0.T.copy()), tg.tensor(v0)
    loss = (x.t() * w).sum()             # (the forward copies x.t() for the product)
    if not first:
        loss = loss + (x * v).sum()
    del log[:]
    loss.backward()
    adds = [kw.get("add", False) or (len(a) > 2 and a[2]) for a, kw in log]
    assert adds == [not first]
    np.testing.assert_array_equal(x.grad.numpy(), w0 if first else v0 + w0)


def test_contiguous_of_a_transposed_tensor():
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((200, 330)).astype(np.float32)
    x = tg.tensor(x0, requires_grad=True)
    c = x.t().contiguous()
    assert c.is_contiguous() and c.grad_fn.name() == "CloneBackward0"
    np.testing.assert_array_equal(c.detach().numpy(), x0.T)
    g0 = rng.standard_normal((330, 200)).astype(np.float32)
    c.backward(tg.tensor(g0))
    np.testing.assert_array_equal(x.grad.numpy(), g0.T)


needs_blas = pytest.mark.skipif(not _blas.OK, reason="no OpenBLAS with thread control here")


@needs_blas
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("shape", [(97, 64, 130), (130, 64, 97)])
def test_blas_mm_adds_into_out(shape, ta, tb, dt):
    """out=: C += op(a) op(b) (beta = 1), row and column blocks, None returned."""
    m, k, n = shape
    rng = np.random.default_rng(4)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dt)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dt)
    c0 = rng.standard_normal((m, n)).astype(dt)
    c = c0.copy()
    assert _blas.mm(a, b, ta, tb, out=c) is None
    want = c0 + (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    np.testing.assert_allclose(c, want, rtol=1e-4 if dt == np.float32 else 1e-12,
                               atol=1e-3 if dt == np.float32 else 1e-10)


@needs_blas
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("outs", [(False, False), (True, False), (False, True), (True, True)])
def test_blas_mm2_two_products_at_once(outs, dt):
    """mm2: g b^T and a^T g side by side (a (97, 64), b (64, 130): one job split by rows,
    the other by columns), each new or added into an array (None returned for it)."""
    rng = np.random.default_rng(8)
    a = rng.standard_normal((97, 64)).astype(dt)
    b = rng.standard_normal((64, 130)).astype(dt)
    g = rng.standard_normal((97, 130)).astype(dt)
    o0 = rng.standard_normal((97, 64)).astype(dt) if outs[0] else None
    o1 = rng.standard_normal((64, 130)).astype(dt) if outs[1] else None
    w0 = (0 if o0 is None else o0.astype(np.float64)) + g.astype(np.float64) @ b.T
    w1 = (0 if o1 is None else o1.astype(np.float64)) + a.T.astype(np.float64) @ g
    r0, r1 = _blas.mm2((g, b, False, True, o0), (a, g, True, False, o1))
    tol = dict(rtol=1e-4, atol=1e-3) if dt == np.float32 else dict(rtol=1e-12, atol=1e-10)
    for r, o, w in ((r0, o0, w0), (r1, o1, w1)):
        assert (r is None) == (o is not None)
        np.testing.assert_allclose(o if r is None else r, w, **tol)


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_matmul_vjp_added_into_existing_cotangents(monkeypatch, dt):
    """The benchmark's tanh(x @ x).sum() + (x * x.t()).mean(): x @ x's VJP computes both
    products at once, the first added into x's cotangent already made by the later terms,
    the second into a new array added after; against the float64 closed form."""
    log = []
    _spy(monkeypatch, _blas, "mm2", log)
    rng = np.random.default_rng(5)
    k = 200
    x0 = rng.uniform(-1, 1, (k, k))
    x = tg.tensor(x0, dtype=dt, requires_grad=True)
    loss = tg.tanh(x @ x).sum() + (x * x.t()).mean()
    loss.backward()
    X = x0.astype(dt.np).astype(np.float64)
    G = 1 - np.tanh(X @ X) ** 2
    want = G @ X.T + X.T @ G + 2 * X.T / k ** 2
    tol = 1e-4 if dt is tg.float32 else 1e-12
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=tol, atol=tol)
    if _blas.OK:                   # both products at once, the first into x's cotangent
        jobs = [args for args, _ in log]
        assert len(jobs) == 1 and jobs[0][0][4] is not None and jobs[0][1][4] is None


@pytest.mark.parametrize("order", ["ab_first", "mm_first"])
def test_matmul_vjp_two_operands_with_and_without_cotangents(order):
    """a @ b with b's and a's cotangents made before the product's VJP (terms recorded after
    it) or not (the product's VJP first); x @ x alone: b's product added into a's."""
    rng = np.random.default_rng(6)
    a0, b0 = rng.uniform(-1, 1, (180, 150)), rng.uniform(-1, 1, (150, 170))
    a = tg.tensor(a0, dtype=tg.float64, requires_grad=True)
    b = tg.tensor(b0, dtype=tg.float64, requires_grad=True)
    if order == "ab_first":
        loss = (a @ b).sin().sum() + (a * a).sum() + b.exp().sum()
    else:
        loss = (a * a).sum() + b.exp().sum() + (a @ b).sin().sum()
    loss.backward()
    G = np.cos(a0 @ b0)
    np.testing.assert_allclose(a.grad.numpy(), G @ b0.T + 2 * a0, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), a0.T @ G + np.exp(b0), rtol=1e-12, atol=1e-12)
    x0 = rng.uniform(-1, 1, (160, 160))
    x = tg.tensor(x0, dtype=tg.float64, requires_grad=True)
    (x @ x).cos().sum().backward()
    G = -np.sin(x0 @ x0)
    np.testing.assert_allclose(x.grad.numpy(), G @ x0.T + x0.T @ G, rtol=1e-12, atol=1e-12)


def test_small_product_of_a_big_operand_adds_on_numpy():
    """A product under _blas.MIN multiply-adds whose output is big (an F_BIG entry, numpy's
    side): a (40000, 1) @ b (1, 1), a's cotangent already made by a * a."""
    rng = np.random.default_rng(7)
    a0, b0 = rng.uniform(-1, 1, (40000, 1)), np.array([[0.7]])
    a = tg.tensor(a0, dtype=tg.float64, requires_grad=True)
    b = tg.tensor(b0, dtype=tg.float64, requires_grad=True)
    loss = (a @ b).sin().sum() + (a * a).sum()
    loss.backward()
    G = np.cos(a0 @ b0)
    np.testing.assert_allclose(a.grad.numpy(), G @ b0.T + 2 * a0, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), a0.T @ G, rtol=1e-12, atol=1e-9)


def test_shapes_cover_both_kernels():
    sizes = [a * b for a, b in SHAPES]
    assert max(sizes[:5]) < _vmath.PAR <= min(sizes[5:])
    assert (300 * 260) >= _vmath.PAR
