"""The vector-math kernels (``tapegrad._vmath``: libmvec through Numba, on every core) against
the rows' numpy references and numpy VJPs, and the eager paths that use them against finite
differences; plus the allocator setting (``_alloc``) and the early release of consumed
cotangents in the backward."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg
from tapegrad import _alloc
from tapegrad._core import tape
from tapegrad._compiled import _vmath
from tapegrad.ops import BY_NAME, OPS

needs_vm = pytest.mark.skipif(not _vmath.OK, reason="no libmvec vector math on this machine")

UNARY = sorted(_vmath.UNARY)
N = _vmath.BLOCK + 1000 + 13        # a whole block, whole registers and a padded tail
RTOL = {np.float32: 4e-6, np.float64: 1e-13}


def test_table_and_kernels_agree():
    """A row says it has vector-math kernels (Op.vm) exactly when _vmath has its code."""
    assert sorted(o.name for o in OPS if o.vm) == sorted(list(_vmath.UNARY) + list(_vmath.BINARY))


def _domain(name):
    lo, hi = BY_NAME[name].domain
    return lo, hi


def _operands(name, dt, n=N, seed=0):
    lo, hi = _domain(name)
    rng = np.random.default_rng(seed)
    return rng.uniform(lo, hi, n).astype(dt), rng.standard_normal(n).astype(dt)


@needs_vm
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", UNARY)
def test_unary_forward_and_vjp_match_numpy(name, dt):
    op = BY_NAME[name]
    c = op.const if op.const is not None else 0.0
    x, g = _operands(name, dt)
    y = np.empty_like(x)
    _vmath.unary_fwd(name, x, y, c)
    ref = np.asarray(op.ref(x.astype(np.float64), c), np.float64)
    np.testing.assert_allclose(y, ref, rtol=RTOL[dt], atol=RTOL[dt] * 1e-3)
    for gg in (g, np.broadcast_to(g[:1], g.shape)):          # sum's VJP gives a broadcast g
        out = np.empty_like(x)
        assert _vmath.unary_vjp(name, gg, x, y, out, c)
        want = np.empty(x.size, np.float64)
        op.np_vjp(np.ascontiguousarray(gg, np.float64), x.astype(np.float64),
                  y.astype(np.float64), c, want)
        np.testing.assert_allclose(out, want, rtol=RTOL[dt] * 4, atol=RTOL[dt] * 1e-2)


@needs_vm
@pytest.mark.parametrize("c", [2.0, 1.0, 0.5, 3.0, -1.5, 0.0])
def test_pow_scalar_exponents(c):
    x, g = _operands("pow_scalar", np.float32)
    y = np.empty_like(x)
    _vmath.unary_fwd("pow_scalar", x, y, c)
    np.testing.assert_allclose(y, x.astype(np.float64) ** c, rtol=4e-6)
    out = np.empty_like(x)
    _vmath.unary_vjp("pow_scalar", g, x, y, out, c)
    want = np.zeros(x.size) if c == 0 else g * c * x.astype(np.float64) ** (c - 1)
    np.testing.assert_allclose(out, want, rtol=2e-5, atol=1e-6)
    inf = np.full_like(x, np.inf)
    if c == 0.0:                     # x ** 0: a zero gradient even for an infinite cotangent
        _vmath.unary_vjp("pow_scalar", inf, x, y, out, c)
        assert (out == 0).all()


@needs_vm
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(_vmath.BINARY))
def test_binary_forward_and_vjp(name, dt):
    rng = np.random.default_rng(1)
    a = rng.uniform(0.5, 2.0, N).astype(dt)
    b = rng.uniform(0.5, 2.0, N).astype(dt)
    g = rng.standard_normal(N).astype(dt)
    f = BY_NAME[name].ref
    for aa, bb in ((a, b), (a[:1], b), (a, b[:1])):
        y = np.empty(N, dt)
        _vmath.binary_fwd(name, aa, bb, y)
        np.testing.assert_allclose(y, f(aa.astype(np.float64), bb.astype(np.float64)), rtol=RTOL[dt])
        if name not in ("mul", "div"):
            continue
        for gg in (g, np.broadcast_to(g[:1], g.shape)):
            ga, gb = np.empty(N, dt), np.empty(N, dt)
            assert _vmath.binary_vjp(name, gg, aa, bb, ga, gb, N)
            wa, wb = np.empty(N), np.empty(N)
            BY_NAME[name].np_vjp(np.ascontiguousarray(gg, np.float64),
                                 np.broadcast_to(aa, (N,)).astype(np.float64),
                                 np.broadcast_to(bb, (N,)).astype(np.float64), None, wa, wb)
            np.testing.assert_allclose(ga, wa, rtol=RTOL[dt] * 4)
            np.testing.assert_allclose(gb, wb, rtol=RTOL[dt] * 4)


def _fd_check(fn, x0, idx, eps=1e-6):
    """Gradient of sum(fn(x)) at float64 x0 against central differences at a few indices."""
    x = tg.tensor(x0, requires_grad=True)
    fn(x).sum().backward()
    g = x.grad.numpy()
    for i in idx:
        xp, xm = x0.copy(), x0.copy()
        xp[i] += eps
        xm[i] -= eps
        with tg.no_grad():
            fd = (fn(tg.tensor(xp)).sum().item() - fn(tg.tensor(xm)).sum().item()) / (2 * eps)
        assert abs(g[i] - fd) <= 1e-5 * max(1.0, abs(fd)), (i, g[i], fd)
    return g


@pytest.mark.parametrize("n", [_vmath.MIN + 5, 40_000])      # a small node and a big one
def test_eager_graph_on_kernels_matches_finite_differences(n):
    rng = np.random.default_rng(2)
    x0 = rng.uniform(0.2, 0.9, n)

    def fn(x):
        return tg.sin(x) * tg.exp(-x ** 2) + tg.tanh(x) / (1.5 + tg.cos(x)) - tg.sqrt(x) * 0.3

    _fd_check(fn, x0, [0, 1, n // 2, n - 1])


NATIVE_VJP = sorted(o.name for o in OPS if o.native_vjp)
_DERIV = {"sin": np.cos, "cos": lambda x: -np.sin(x), "sinh": np.cosh, "cosh": np.sinh,
          "erf": lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x)}


def test_native_vjp_rows_are_known():
    """Every row whose compiled VJP calls libmvec has an analytic derivative below."""
    assert NATIVE_VJP == sorted(_DERIV)


@needs_vm
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", NATIVE_VJP)
def test_native_vjp_runs_compiled_and_matches_the_derivative(name, dt):
    """Below tape.BIG, a row with Op.native_vjp keeps its VJP in the compiled sweep (no F_BIG
    entry) and evaluates the transcendental on libmvec; the gradient must be the derivative,
    over whole buffer blocks and a tail (5,013 = 9 x 512 + 405)."""
    from tapegrad._core import tape as T
    from tapegrad._schema import F_BIG, FL, K
    n = 5_013
    assert BY_NAME[name].np_vjp_from <= n < T.BIG
    rng = np.random.default_rng(7)
    x0 = rng.uniform(-1.5, 1.5, n).astype(dt)
    w0 = rng.standard_normal(n).astype(dt)
    x = tg.tensor(x0, requires_grad=True)
    y = getattr(tg, name)(x)
    tp, node = T.resolve(y)
    assert not tp.E[tp.N[node * T.NK + T.NPROD] * K + FL] & F_BIG
    (y * tg.tensor(w0)).sum().backward()
    want = w0.astype(np.float64) * _DERIV[name](x0.astype(np.float64))
    tol = 4e-6 if dt == np.float32 else 1e-13
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=tol * 4, atol=tol)


def test_eager_float32_matches_float64_reference():
    """The float32 eager path (kernels) against the same graph in float64 numpy."""
    rng = np.random.default_rng(3)
    x0 = rng.uniform(-2, 2, 100_000).astype(np.float32)
    x = tg.tensor(x0, requires_grad=True)
    y = (tg.sin(x) * tg.exp(-x ** 2) + tg.tanh(x)).sum()
    y.backward()
    d = x0.astype(np.float64)
    want = np.cos(d) * np.exp(-d * d) - 2 * d * np.sin(d) * np.exp(-d * d) + 1 - np.tanh(d) ** 2
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5, atol=1e-6)
    ref = np.sum(np.sin(d) * np.exp(-d * d) + np.tanh(d))
    assert abs(y.item() - ref) <= 1e-5 * abs(ref) + 1e-3


def test_big_intermediate_gradients_survive_the_early_release():
    """The backward drops a big node's cotangent once its producer has used it, except where
    a caller reads it afterwards: retain_grad and autograd.grad of an intermediate."""
    x0 = np.random.default_rng(4).uniform(0.1, 1.0, 40_000)
    x = tg.tensor(x0, requires_grad=True)
    h = tg.sin(x)
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), 2 * np.sin(x0), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.sin(x0) * np.cos(x0), rtol=1e-12)
    x = tg.tensor(x0, requires_grad=True)
    h = tg.exp(x)
    gh, gx = tg.autograd.grad((h * h).sum(), [h, x])
    np.testing.assert_allclose(gh.numpy(), 2 * np.exp(x0), rtol=1e-12)
    np.testing.assert_allclose(gx.numpy(), 2 * np.exp(2 * x0), rtol=1e-12)


def _run(code, **env):
    e = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_environment_switches_fall_back_to_numpy():
    out = _run("import tapegrad, numpy as np; from tapegrad._compiled import _vmath; from tapegrad import _alloc;"
               "x = tapegrad.tensor(np.linspace(0, 1, 50000), requires_grad=True);"
               "tapegrad.sin(x).sum().backward();"
               "print(_vmath.OK, _alloc.applied, abs(x.grad.numpy() - np.cos(np.linspace(0, 1, 50000))).max() < 1e-12)",
               TAPEGRAD_VMATH="0", TAPEGRAD_MALLOPT="0")
    assert out == "False False True"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_allocator_setting_keeps_big_blocks():
    """With the mallopt setting, freeing and reallocating 4-MB arrays touches no fresh pages."""
    if not _alloc.applied:
        pytest.skip("mallopt not available (not glibc)")
    out = _run(
        "import resource, numpy as np, tapegrad\n"
        "def flt(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
        "for _ in range(3):\n"
        "    xs = [np.ones(10**6, np.float32) for _ in range(6)]; del xs\n"
        "f0 = flt()\n"
        "for _ in range(20):\n"
        "    xs = [np.ones(10**6, np.float32) for _ in range(6)]; del xs\n"
        "print(flt() - f0)\n")
    assert int(out) < 500            # without it: ~1,000 faults per 4-MB array


@needs_vm
def test_parallel_kernels_equal_the_serial_ones():
    """From PAR elements the kernels run on every core (twin functions): same blocks, same
    results, bit for bit; padded tails and broadcast operands included."""
    n = _vmath.PAR + 77
    rng = np.random.default_rng(5)
    x = rng.uniform(0.1, 0.9, n).astype(np.float32)
    g = rng.standard_normal(n).astype(np.float32)
    L = _vmath._LANES[x.dtype]
    for name in ("sin", "tanh", "sigmoid"):
        code = _vmath.UNARY[name]
        y, ys = np.empty_like(x), np.empty_like(x)
        _vmath.unary_fwd(name, x, y)
        _vmath._ufwd_s(code, x, ys, 0.0, L)
        assert np.array_equal(y, ys)
        for gg, ig in ((g, 1), (g[:1], 0)):
            o, os_ = np.empty_like(x), np.empty_like(x)
            _vmath._uvjp_p(code, gg, ig, x, y, o, 0.0, L)
            _vmath._uvjp_s(code, gg, ig, x, y, os_, 0.0, L)
            assert np.array_equal(o, os_)
    a, b = x, x[::-1].copy()
    for name in ("mul", "div"):
        code = _vmath.BINARY[name]
        y, ys = np.empty_like(x), np.empty_like(x)
        _vmath.binary_fwd(name, a, b[:1], y)
        _vmath._bfwd_s(code, a, b[:1], ys)
        assert np.array_equal(y, ys)
        ga, gb, ga2, gb2 = (np.empty_like(x) for _ in range(4))
        _vmath._bvjp_p(code, g, 1, a, b, ga, gb, True, True, n)
        _vmath._bvjp_s(code, g, 1, a, b, ga2, gb2, True, True, n)
        assert np.array_equal(ga, ga2) and np.array_equal(gb, gb2)


@needs_vm
def test_big_cotangent_sums_on_every_core():
    """Contributions to a cotangent of PAR elements or more are summed by the parallel add:
    into an owned array, and into a shared one (add passes sum's broadcast cotangent on)."""
    n = _vmath.PAR + 3
    x0 = np.random.default_rng(6).uniform(-1, 1, n)
    x = tg.tensor(x0, requires_grad=True)
    (x + tg.sin(x) + x * x + tg.exp(x)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1 + np.cos(x0) + 2 * x0 + np.exp(x0), rtol=1e-12,
                               atol=1e-12)


@needs_vm
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_big_cotangents_from_broadcasts_and_single_element_operands(dt):
    """sum's VJP passes a broadcast (stride 0) cotangent on: added to another broadcast it
    stays one, added to an array (or an array to it) the kernel reads its single element.
    A single-element operand of a big mul / div gets a dot product for its gradient.
    Oracles: the gradients by hand (exact where they are sums of small integers)."""
    n = _vmath.PAR + 5
    x0 = np.random.default_rng(9).uniform(0.5, 1.5, n).astype(dt)
    x = tg.tensor(x0, requires_grad=True)
    y = x * 1.0
    (y.sum() * 2 + y.sum() * 3).backward()                  # broadcast + broadcast
    np.testing.assert_array_equal(x.grad.numpy(), np.full(n, 5, dt))
    x.grad = None
    y = x * 1.0
    (y.sum() * 2 + y[7] + y.sum() * 3).backward()           # broadcast, array, broadcast
    want = np.full(n, 5, dt)
    want[7] = 6
    np.testing.assert_array_equal(x.grad.numpy(), want)
    x.grad = None
    w = tg.tensor(np.array(1.5, dt), requires_grad=True)
    s = x.sum()
    (x / s * 2 + x * w).sin().sum().backward()
    xd, sd = x0.astype(np.float64), float(np.sum(x0.astype(np.float64)))
    c = np.cos(2 * xd / sd + 1.5 * xd)
    want_x = c * (2 / sd + 1.5) - 2 * np.sum(c * xd) / sd ** 2
    tol = 1e-4 if dt == np.float32 else 1e-10
    np.testing.assert_allclose(x.grad.numpy(), want_x, rtol=tol, atol=tol * np.abs(want_x).max())
    np.testing.assert_allclose(w.grad.item(), np.sum(c * xd), rtol=tol)

@needs_vm
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("n", [_vmath.MIN, 10007, _vmath.PAR - 1, _vmath.PAR * 2 + 5])
def test_sum_accumulates_in_float64(n, dt):
    """x.sum() of MIN elements or more (one core below PAR, every core from it): the float64
    total rounded once to x's dtype (numpy's float32 pairwise sum is within a few ulp of
    it); mean() the same total over n."""
    x0 = np.random.default_rng(7).standard_normal(n).astype(dt)
    ref = np.sum(x0.astype(np.float64))
    assert abs(_vmath.total(x0) - ref) <= 1e-12 * np.sum(np.abs(x0))
    x = tg.tensor(x0, requires_grad=True)
    y = x.sum()
    assert y.dtype == (tg.float32 if dt == np.float32 else tg.float64)
    m = tg.tensor(x0).mean()
    if dt == np.float32:             # the float64 total, rounded once
        assert y.item() == np.float32(ref)
        assert m.item() == np.float32(ref / n)
    else:
        assert abs(y.item() - ref) <= 1e-12 * np.sum(np.abs(x0))
        assert abs(m.item() - ref / n) <= 1e-12 * np.sum(np.abs(x0)) / n
    y.backward()
    assert (x.grad.numpy() == 1).all()


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_big_product_with_a_transposed_operand(dt):
    """x * x.t() at kernel sizes: the transposed operand is copied once, for the forward and
    the saved value; the gradient of sum(x * x^T) is exactly 2 x^T."""
    k = 300                                            # 90,000 elements: the parallel kernels
    x0 = np.random.default_rng(4).uniform(-1, 1, (k, k))
    x = tg.tensor(x0, dtype=dt, requires_grad=True)
    y = x * x.t()
    np.testing.assert_allclose(y.detach().numpy(), x0 * x0.T, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.detach().numpy().T, rtol=1e-6)


@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_big_extremum_gradient_added_in_place(dt):
    """amax / amin of a big tensor send their gradient to the extremum (split over ties) by
    adding into the input's cotangent in place; that cotangent may already hold a read-only
    broadcast from ``sum`` (copied first) or nothing yet. Oracle: the gradient by hand."""
    n = 3 * tape.BIG + 11
    x0 = np.random.default_rng(6).uniform(-1, 1, n)
    x0[[17, n - 5]] = 2.0                     # a tie for the maximum
    x0[4] = -3.0
    x = tg.tensor(x0, dtype=dt, requires_grad=True)
    (x.amax() * 3 + x.sum() - 2 * x.amin()).backward()
    want = np.ones(n)
    want[[17, n - 5]] += 1.5
    want[4] += -2.0
    np.testing.assert_array_equal(x.grad.numpy(), want.astype(x.grad.numpy().dtype))
    x.grad = None
    x.amax().backward()                       # nothing else reaches x
    want = np.zeros(n)
    want[[17, n - 5]] = 0.5
    np.testing.assert_array_equal(x.grad.numpy(), want.astype(x.grad.numpy().dtype))


@needs_vm
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_big_mean_and_negation_run_on_the_kernels(dt):
    """x.mean() of PAR elements or more sums on every core in float64 (as x.sum()), and -x
    runs on the negation kernel: -x is exact, the mean is the float64 mean rounded once,
    grad_fn names as torch's, and the gradients are exactly -1 and 1/n."""
    n = _vmath.PAR * 2 + 7
    x0 = np.random.default_rng(8).standard_normal(n).astype(dt)
    x = tg.tensor(x0, requires_grad=True)
    y = -x
    assert type(y.grad_fn).__name__ == "NegBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), -x0)
    m = y.mean()
    assert type(m.grad_fn).__name__ == "MeanBackward0"
    ref = -np.sum(x0.astype(np.float64)) / n
    if dt == np.float32:
        assert m.item() == np.float32(ref)
    else:
        assert abs(m.item() - ref) <= 1e-15 * np.sum(np.abs(x0))
    m.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(n, -1.0 / n, dt))
    xt = tg.tensor(x0[::2])                       # a strided view: numpy's negation
    np.testing.assert_array_equal((-xt).numpy(), -x0[::2])
    assert tg.tensor(x0[1:].reshape(2, -1)).mean((0, 1), keepdim=True).shape == (1, 1)


@needs_vm
@pytest.mark.parametrize("dt", [tg.float32, tg.float64])
def test_one_core_forwards_called_from_the_facade(dt):
    """From _vmath.MIN to PAR elements the facade calls the one-core kernels itself (flat
    contiguous float operands): the values are the rows' references (within libmvec's ulps;
    the arithmetic exactly, a division by zero giving inf as torch does, without numpy's
    warning), a 2-D or strided operand takes the general path with the same values, and
    the graph's gradients match finite differences."""
    import warnings
    n = _vmath.MIN + 1001
    rs = np.random.default_rng(11)
    a = rs.uniform(0.2, 1.4, n).astype(dt.np)
    b = rs.uniform(-1.5, 1.5, n).astype(dt.np)
    b[7] = 0
    x, y = tg.tensor(a), tg.tensor(b)
    rtol = RTOL[np.dtype(dt.np).type]
    for name in sorted(_vmath.LIBM & {"exp", "sin", "cos", "tanh", "log", "sigmoid", "atan"}):
        got = getattr(tg, name)(x).numpy()
        np.testing.assert_allclose(got, BY_NAME[name].ref(a.astype(np.float64)), rtol=rtol,
                                   atol=rtol, err_msg=name)
        two = getattr(tg, name)(tg.tensor(a.reshape(-1, 1))).numpy().reshape(-1)
        np.testing.assert_allclose(two, got, rtol=rtol, atol=rtol, err_msg=name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for op, ref in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                        ("div", np.divide)):
            got = getattr(tg, op)(x, y).numpy()
            with np.errstate(divide="ignore"):
                np.testing.assert_array_equal(got, ref(a, b), err_msg=op)
            strided = getattr(tg, op)(tg.tensor(np.repeat(a, 2)[::2]), y).numpy()
            np.testing.assert_array_equal(strided, got, err_msg=op)
    assert np.isinf((x / y).numpy()[7])
    w = tg.tensor(a, requires_grad=True)
    loss = (tg.sin(w) * tg.exp(w) / (w + 1.0) - tg.tanh(w) * w).sum()
    loss.backward()
    want = (np.cos(a) * np.exp(a) + np.sin(a) * np.exp(a)) / (a + 1) \
        - np.sin(a) * np.exp(a) / (a + 1) ** 2 - (1 - np.tanh(a) ** 2) * a - np.tanh(a)
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=100 * rtol, atol=100 * rtol)
