"""autograd.grad runs only what torch's engine runs: the entries on paths from the requested
inputs to the outputs. The graph below a non-leaf input and branches that do not lead to an
input are neither executed (hooks there do not fire, in-place changes there are not errors,
custom Functions there are not called) nor freed. Also the Hessian-vector product paths of
benchmarks/bench_hvp.py, against the analytic Hessian, finite differences and torch."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad._core import tape as _tape
from oracle import same

rng = np.random.default_rng(5)


def _x(lib, n=4, seed=0, rg=True):
    v = np.random.default_rng(seed).uniform(0.2, 1.5, n).tolist()
    return lib.tensor(v, dtype=lib.float64, requires_grad=rg)


@pytest.mark.parametrize("create_graph", [False, True])
def test_hook_below_a_non_leaf_input_does_not_fire(create_graph):
    def run(lib):
        x = _x(lib)
        fired = []
        a = x * 2
        a.register_hook(lambda g: fired.append(1))
        b = a.exp()
        c = (b.sin() * b).sum()
        (g,) = lib.autograd.grad(c, b, create_graph=create_graph)
        return g, len(fired)
    same(run)


@pytest.mark.parametrize("create_graph", [False, True])
def test_in_place_change_below_a_non_leaf_input_is_not_an_error(create_graph):
    def run(lib):
        x = _x(lib)
        a = x * 3
        b = a.sin()                       # saves a
        a.add_(1.0)                       # would fail a backward through sin
        c = (b * b).sum()
        (g,) = lib.autograd.grad(c, b, create_graph=create_graph)
        try:
            c2 = (b * b).sum()
            lib.autograd.grad(c2, x)      # through sin: the version error
            err = None
        except RuntimeError as exc:
            err = type(exc).__name__
        return g, err
    same(run)


def test_custom_function_below_a_non_leaf_input_is_not_called():
    def run(lib):
        calls = []

        class Cube(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x ** 3

            @staticmethod
            def backward(ctx, g):
                calls.append(1)
                (x,) = ctx.saved_tensors
                return 3 * x * x * g

        x = _x(lib)
        b = Cube.apply(x)
        h = b.tanh()
        (g1,) = lib.autograd.grad(h.sum(), b, retain_graph=True)
        n1 = len(calls)
        (g2,) = lib.autograd.grad(h.sum(), x)
        return g1, g2, n1, len(calls)
    same(run)


@pytest.mark.parametrize("create_graph", [False, True])
def test_branch_not_leading_to_the_inputs_is_neither_run_nor_freed(create_graph):
    def run(lib):
        x, w = _x(lib, seed=1), _x(lib, seed=2)
        fired = []
        p = w.cos()
        p.register_hook(lambda g: fired.append(1))
        y = (x.exp() * 2).sum() + (p * p).sum()
        (gx,) = lib.autograd.grad(y, x, create_graph=create_graph)
        n = len(fired)
        # w's branch was not freed: a second pass through it works without retain_graph
        (gw,) = lib.autograd.grad((p * p).sum(), w)
        return gx, gw, n, len(fired)
    same(run)


def test_grad_wrt_non_leaf_matches_finite_differences():
    """Independent of torch: d/db of sum(sin(b) * b) at b = exp(2x) is cos(b) b + sin(b)."""
    x = _x(tg, n=6, seed=3)
    b = (x * 2).exp()
    c = (b.sin() * b).sum()
    (g,) = tg.autograd.grad(c, b, create_graph=True)
    bv = b.detach().numpy()
    eps = 1e-6
    fd = ((np.sin(bv + eps) * (bv + eps)) - (np.sin(bv - eps) * (bv - eps))) / (2 * eps)
    np.testing.assert_allclose(g.detach().numpy(), fd, rtol=1e-7)
    # the recorded gradient is differentiable through b down to x
    (h,) = tg.autograd.grad(g.sum(), x)
    xv = x.detach().numpy()

    def gsum(xs):
        bb = np.exp(2 * xs)
        return np.sum(np.cos(bb) * bb + np.sin(bb))
    want = np.array([(gsum(xv + eps * e) - gsum(xv - eps * e)) / (2 * eps) for e in np.eye(xv.size)])
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-5)


def test_grad_wrt_two_inputs_one_below_the_other():
    """Both b and x requested, b = f(x): x gets the full chain, b its own adjoint."""
    def run(lib):
        x = _x(lib, seed=4)
        b = x.sin() * x
        c = (b.exp() + x * x).sum()
        return lib.autograd.grad(c, (b, x))
    same(run)


# ----------------------------------------------------------------- Hessian-vector products
def _rosen(x):
    a, b = x[:-1], x[1:]
    return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()


def _rosen_hvp_exact(x, v):
    n = x.size
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i + 1, i + 1] += 200
        H[i, i + 1] += -400 * x[i]
        H[i + 1, i] += -400 * x[i]
    return H @ v


@pytest.mark.parametrize("n", [2, 10, 1000])
def test_rosenbrock_hvp_matches_the_analytic_hessian(n):
    xv, vv = rng.uniform(-1, 1, n), rng.standard_normal(n)
    want = _rosen_hvp_exact(xv, vv)
    x = tg.tensor(xv, requires_grad=True)
    (g,) = tg.autograd.grad(_rosen(x), x, create_graph=True)
    (hv,) = tg.autograd.grad((g * tg.tensor(vv)).sum(), x)
    np.testing.assert_allclose(hv.numpy(), want, rtol=1e-12, atol=1e-9)
    _, hv2 = tg.autograd.functional.hvp(_rosen, tg.tensor(xv), tg.tensor(vv))
    np.testing.assert_allclose(hv2.numpy(), want, rtol=1e-12, atol=1e-9)


def test_hvp_of_squares_and_powers_against_torch():
    """x * x (one recorded product and one sum) and x ** 2 (c * x, then g times it), in
    float32 and float64, third order included."""
    def run(lib):
        out = []
        for dt in (lib.float32, lib.float64):
            x = lib.tensor([0.3, -1.2, 2.0], dtype=dt, requires_grad=True)
            v = lib.tensor([1.0, 0.5, -2.0], dtype=dt)

            def f(x):
                return (x * x * x.sin()).sum() + (x ** 2 * x.exp()).sum() + (x ** 2).sum()
            (g,) = lib.autograd.grad(f(x), x, create_graph=True)
            (hv,) = lib.autograd.grad((g * v).sum(), x, create_graph=True)
            (t3,) = lib.autograd.grad((hv * v).sum(), x)
            out += [g, hv, t3, lib.autograd.functional.hvp(f, x.detach(), v)[1]]
            # the first derivatives alone: values and grad_fn names (MulBackward0 for x ** 2,
            # AddBackward0 for x * x: torch accumulates its two products)
            out += [lib.autograd.grad((x ** 2).sum(), x, create_graph=True)[0],
                    lib.autograd.grad((x * x).sum(), x, create_graph=True)[0],
                    lib.autograd.grad((x ** 2 * 3.0).sum(), x, create_graph=True)[0]]
        return out
    same(run)


# ------------------------------------------------- create_graph across tapes (tapegrad detail)
def _own_tape(lib):
    """A fresh tape for what follows (tapegrad; a no-op context for torch)."""
    import contextlib
    return _tape.recording() if lib is tg else contextlib.nullcontext()


def _square_fn(lib):
    class Sq(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g
    return Sq


def _long_chain(lib, seed):
    w = _x(lib, n=3, seed=seed)
    z = w
    for _ in range(60):
        z = (z * 0.99).tanh() + 0.01
    return w, z


def test_create_graph_with_cotangents_recorded_on_a_bigger_tape():
    """grad_outputs with a graph on another, larger tape: the sweep's recorded operations
    join the tapes; the results (and their second derivatives) must be those of torch."""
    def run(lib):
        Sq = _square_fn(lib)
        with _own_tape(lib):
            x = _x(lib, n=3, seed=6)
            y = Sq.apply(x.sin()).exp()
        with _own_tape(lib):
            w, z = _long_chain(lib, 7)
        (g,) = lib.autograd.grad(y, x, grad_outputs=z, create_graph=True)
        return (g,) + lib.autograd.grad(g.sum(), (x, w))
    same(run)


def test_create_graph_through_a_custom_backward_that_joins_another_tape():
    """A custom backward multiplying by a tensor of a larger tape (not an input of the
    Function: captured) merges the swept tape into that one in the middle of the sweep; the
    Function's input and the entries below must still be differentiated."""
    def run(lib):
        with _own_tape(lib):
            w, k = _long_chain(lib, 8)

        class Scaled(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x * k.detach()

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g * k                     # k: captured, with its graph

        with _own_tape(lib):
            x = _x(lib, n=3, seed=9)
            y = Scaled.apply(x.sin() * 2.0).exp().sum()
        if lib is tg:
            assert _tape.resolve(y)[0] is not _tape.resolve(k)[0]
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        return (g,) + lib.autograd.grad(g.sum(), (x, w))
    same(run)


def test_grad_of_outputs_that_do_not_depend_on_the_inputs():
    """An input on the tape but not below the output, with allow_unused (None) and without
    (torch's error); the output's graph is not consumed by that call."""
    def run(lib):
        x, w = _x(lib, seed=10), _x(lib, seed=11)
        a = x.exp()
        y = (w.sin() * 2).sum()
        (g,) = lib.autograd.grad(y, a, allow_unused=True)
        try:
            lib.autograd.grad(y, a, retain_graph=True)
            err = None
        except RuntimeError as exc:
            err = type(exc).__name__
        return g, err, lib.autograd.grad(y, w)
    same(run)


@pytest.mark.parametrize("name", ["sin", "cos", "sinh", "cosh", "erf", "gelu"])
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_transcendental_vjps_of_mid_size_entries_run_on_numpy(name, dtype):
    """Rows whose VJP evaluates a transcendental (ops.Op.np_vjp_from) send entries of 2,048+
    elements (below tape.BIG) to numpy's ufuncs: the entry is flagged F_BIG, unless the row's
    compiled VJP runs on libmvec (ops.Op.native_vjp, where libmvec is available); either way
    its gradient (eager, and replayed by tapegrad.func) matches the closed form."""
    from tapegrad._compiled import _vmath
    from tapegrad import ops
    from tapegrad._schema import F_BIG, FL, K
    import math
    erf_v = np.vectorize(math.erf)
    deriv = {"sin": np.cos, "cos": lambda x: -np.sin(x), "sinh": np.cosh, "cosh": np.sinh,
             "erf": lambda x: 2 / np.sqrt(np.pi) * np.exp(-x * x),
             "gelu": lambda x: 0.5 * (1 + erf_v(x / np.sqrt(2))) + x * np.exp(-x * x / 2)
             / np.sqrt(2 * np.pi)}[name]
    fn = {"gelu": tg.nn.functional.gelu, "erf": tg.special.erf}.get(name) or getattr(tg, name)
    rs = np.random.default_rng(4)
    a = rs.uniform(-1.5, 1.5, 3000)
    tol = 1e-5 if dtype == tg.float32 else 1e-12
    x = tg.tensor(a, dtype=dtype, requires_grad=True)
    y = fn(x)
    last = y._tape.E[-K + FL]                 # the entry's flags (a copy of one item)
    row = ops.BY_NAME[name]
    assert row.np_vjp_from == 2048
    assert bool(last & F_BIG) == (not (row.native_vjp and _vmath.OK))
    (y * 1.5).sum().backward()
    want = 1.5 * deriv(a.astype(dtype.np).astype(np.float64))
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=tol * 10, atol=tol * 10)
    import tapegrad.func as tf
    gv = tf.grad_and_value(lambda t: (fn(t) * 1.5).sum())
    for trial in range(2):
        b = rs.uniform(-1.5, 1.5, 3000)
        g, _ = gv(tg.tensor(b, dtype=dtype))
        np.testing.assert_allclose(g.numpy(), 1.5 * deriv(b.astype(dtype.np).astype(np.float64)),
                                   rtol=tol * 10, atol=tol * 10)
    small = fn(tg.tensor(a[:100], dtype=dtype, requires_grad=True))
    assert not small._tape.E[-K + FL] & F_BIG


def _big(seed, n=None):
    from tapegrad._core import tape
    n = n or tape.BIG + 1000
    return np.random.default_rng(seed).uniform(-1.2, 1.2, n)


def test_chain_of_big_entries_matches_the_closed_form_and_skips_unreached_ones():
    """A run of big (F_BIG) entries is swept from Python without a trip through the compiled
    interpreter between them (tape._sweep_from). Every reached entry still runs in order (the
    closed form of the gradient), an unreached big entry in the run is not (its hook does not
    fire), and a tensor hook in the middle of the run sees the cotangent and may replace it."""
    a = _big(1)
    x = tg.tensor(a, dtype=tg.float64, requires_grad=True)
    y = x.sin()
    u = x.exp()                                   # recorded between, leads nowhere
    fired = []
    u.grad_fn.register_hook(lambda gi, go: fired.append("u"))
    z = y * y
    z.register_hook(lambda g: g * 2)              # the cotangent of z, doubled
    w = z.tanh()
    loss = w.sum() + (x[:5] * 3).sum()
    loss.backward()
    t = np.tanh(np.sin(a) ** 2)
    want = 2 * (1 - t * t) * 2 * np.sin(a) * np.cos(a)
    want[:5] += 3
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-12)
    assert fired == []


def test_chain_of_big_entries_stops_at_a_modified_saved_value():
    """An entry in a run of big entries whose saved value was changed in place raises torch's
    error, after the entries above it ran."""
    x = tg.tensor(_big(2), dtype=tg.float64, requires_grad=True)
    z = x.sin().exp()                             # exp saves its output z
    w = (z * 2).tanh()
    z.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.sum().backward()


def test_chain_of_big_entries_stops_at_a_freed_entry():
    """A second backward through a run of big entries: the entries without saved values run,
    the first one whose saved values were freed raises torch's error."""
    x = tg.tensor(_big(3), dtype=tg.float64, requires_grad=True)
    loss = (x.sin() + 1.0).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_gradient_of_an_operand_broadcast_from_one_element(dtype):
    """x - s, s - x, s * x, x * s, x / s, s + x with s one element and x 10^4 (small nodes: the
    compiled sweep). s's gradient is a sum over the output, taken in float64 (kernels._gsum /
    _gdot) instead of element by element in s's slot; checked against the float64 closed
    form, and x's gradient with it."""
    from tapegrad._core import tape
    from tapegrad._schema import F_BIG, FL, K
    n = 10000
    rs = np.random.default_rng(7)
    a, w = rs.uniform(0.5, 2.0, n), rs.uniform(-1.0, 1.0, n)
    x = tg.tensor(a, dtype=dtype, requires_grad=True)
    s = tg.tensor(1.7, dtype=dtype, requires_grad=True)
    W = tg.tensor(w, dtype=dtype)
    parts = [(x - s) * W, (s - x) * W * 2.0, s * x * W, x * s * W * 0.5, x / s * W,
             (s + x) * W * 3.0]
    loss = sum(p.sum() for p in parts)
    E = np.frombuffer(loss._tape.E, np.int64).reshape(-1, K)
    assert not (E[:, FL] & F_BIG).any() and n < tape.BIG
    del E
    loss.backward()
    a64, w64 = (v.astype(dtype.np).astype(np.float64) for v in (a, w))
    s64 = float(np.asarray(1.7, dtype.np))
    want_s = (-w64.sum() + 2 * w64.sum() + 1.5 * (a64 * w64).sum()
              - (a64 * w64).sum() / s64 ** 2 + 3 * w64.sum())
    want_x = w64 - 2 * w64 + 1.5 * s64 * w64 + w64 / s64 + 3 * w64
    tol = 1e-5 if dtype == tg.float32 else 1e-12
    np.testing.assert_allclose(float(s.grad), want_s, rtol=tol, atol=tol * np.abs(a64 * w64).sum())
    np.testing.assert_allclose(x.grad.numpy(), want_x, rtol=tol, atol=tol)
