"""tapegrad.func is never silently wrong (issue 31): one test per finding of the issue, every
nested composition against torch.func and finite differences, replays from many threads, input
sizes across every internal buffer or chunk boundary, bounded caches, and the default-deny rule
(a recording that cannot be trusted is served by eager recording, never replayed wrong)."""
import gc
import sys
import threading

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.func as tf
import tapegrad.nn.functional as F
from tapegrad import _sel


def _eager(f, arrays, dtype=tg.float64):
    """Value and gradients of f by eager tapegrad (independent of tapegrad.func)."""
    xs = [tg.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    y = f(*xs)
    gs = tg.autograd.grad(y, xs, allow_unused=True)
    return (y.detach().numpy(),
            [np.zeros(np.shape(a)) if g is None else g.numpy() for a, g in zip(arrays, gs)])


def _variants(fn):
    return [ct for vs in fn._cache.tapes.values() for ct in vs]


def _same(a, b, tol=1e-7):
    """Equal values (nan and inf included), up to the rounding of different formulas."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(1.0, float(np.abs(b[np.isfinite(b)]).max(initial=0)))
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol * scale, equal_nan=True)


def _adversarial(base, rng, k):
    """New inputs crossing decision boundaries: noise, negation, permutations (the argmax
    moves), rounding (ties), zeros at kinks, nan / inf, clamp bounds, the +-3 kinks."""
    x = np.array(base, np.float64)
    flat = x.reshape(-1)
    kind = k % 12
    if kind == 0:
        x = x + 0.1 * rng.standard_normal(x.shape)
    elif kind == 1:
        x = -x
    elif kind == 2:
        x = rng.permutation(flat).reshape(x.shape)
    elif kind == 3:
        x = np.round(x)
    elif kind == 4:
        x = np.round(x, 1)
    elif kind == 5:
        flat[0] = 0.0
    elif kind == 6:
        flat[-1] = np.nan
    elif kind == 7:
        flat[0] = np.inf
    elif kind == 8:
        flat[-1] = -np.inf
    elif kind == 9:
        x = np.clip(x, -0.5, 0.5)
    elif kind == 10:
        flat[0] = 3.0
        flat[-1] = -3.0
    else:
        flat[:] = flat[0]
    return x


# ----------------------------------------------------------------------------- finding 1
FINDING1 = {
    "copysign": (lambda x, y: tg.copysign(x, y).sum(), 2),
    "fmod": (lambda x, y: tg.fmod(x, y).sum(), 2),
    "nan_to_num(log)": (lambda x: tg.nan_to_num(x.log()).sum(), 1),
    "hardsigmoid": (lambda x: F.hardsigmoid(x).sum(), 1),
    "pow(abs)": (lambda x, y: (x ** y.abs()).sum(), 2),
    "topk": (lambda x: (x.topk(2).values ** 2).sum(), 1),
    "kthvalue": (lambda x: (3 * x.kthvalue(2).values).sum(), 1),
    "relu(nan)": (lambda x: (x.relu() * x).sum(), 1),
    "no_grad constant": (lambda x: (x * _no_grad_double(x)).sum(), 1),
    "logsumexp": (lambda x: x.logsumexp(0), 1),
    "prod": (lambda x: x.prod(), 1),
    "elu(nan)": (lambda x: F.elu(x).sum(), 1),
}


def _no_grad_double(x):
    with tg.no_grad():
        return x * 2


@pytest.mark.parametrize("name", sorted(FINDING1))
def test_finding1_value_decisions_replay_right_on_inputs_crossing_them(name):
    """copysign, fmod, nan_to_num(x.log()), hardsigmoid, x ** y.abs(), topk, kthvalue... were
    replayed with the decisions of their recording: every replay now equals eager tapegrad."""
    f, n = FINDING1[name]
    rng = np.random.default_rng(3)
    gv = tf.grad_and_value(f, argnums=tuple(range(n)))
    base = [rng.standard_normal(5) for _ in range(n)]
    for k in range(24):
        arrays = [_adversarial(b, rng, k + 5 * j) for j, b in enumerate(base)]
        g, v = gv(*[tg.tensor(a) for a in arrays])
        ve, ge = _eager(f, arrays)
        _same(v.numpy(), ve)
        for a, b in zip(g, ge):
            _same(a.numpy(), b)


def test_finding1_copysign_example_of_the_issue():
    g = tf.grad(lambda x, y: tg.copysign(x, y).sum())
    np.testing.assert_array_equal(g(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0])).numpy(), [1, 1])
    np.testing.assert_array_equal(g(tg.tensor([1.0, 2.0]), tg.tensor([-1.0, 1.0])).numpy(),
                                  [-1, 1])


def test_finding1_against_torch():
    torch = pytest.importorskip("torch")
    TF = pytest.importorskip("torch.func")
    rng = np.random.default_rng(4)
    cases = [(lambda L, x, y: L.copysign(x, y).sum()), (lambda L, x, y: L.fmod(x, y).sum()),
             (lambda L, x, y: (x ** y.abs()).sum())]
    for f in cases:
        ours = tf.grad_and_value(lambda x, y: f(tg, x, y), argnums=(0, 1))
        theirs = TF.grad_and_value(lambda x, y: f(torch, x, y), argnums=(0, 1))
        for k in range(8):
            a = rng.standard_normal(4) + 0.1
            b = rng.standard_normal(4) * (1 if k % 2 else -1)
            (ga, gb), v = ours(tg.tensor(a), tg.tensor(b))
            (ta, tb), tv = theirs(torch.tensor(a), torch.tensor(b))
            _same(v.numpy(), tv.numpy(), 1e-12)
            _same(ga.numpy(), ta.numpy(), 1e-12)
            _same(gb.numpy(), tb.numpy(), 1e-12)


# ----------------------------------------------------------------------------- finding 2
_BOUNDARY_F = staticmethod(lambda x: (x.sin() * (-x ** 2).exp() + x.tanh()).sum())


@pytest.mark.parametrize("n,dtype", [(2 ** 15 - 1, "float64"), (2 ** 15, "float64"),
                                     (2 ** 15 + 1, "float32"), (2 ** 16, "float32"),
                                     (2 ** 18 - 1, "float64"), (2 ** 18, "float64"),
                                     (2 ** 18 + 1, "float64"), (2 ** 18, "float32"),
                                     (2 ** 19, "float64"), (2 ** 20, "float32"),
                                     (2 ** 20 + 1, "float32"), (2 ** 20, "float64"),
                                     (2 ** 23, "float32")])
def test_finding2_any_input_size_replays_right(n, dtype):
    """Big inputs gave value 0 and zero gradients: the recording tape rotated for size in the
    middle of the function, so the input got a second node that the frozen tape read
    unproduced. Sizes straddle the big-node bound (2^15), the tape's 4 MB rotation (2^18-2^20)
    and the vector-math blocks."""
    f = _BOUNDARY_F.__func__
    dt = getattr(tg, dtype)
    gv = tf.grad_and_value(f)
    for lo, hi in ((-2.0, 3.0), (-3.0, 1.5)):         # the recording, then a replay
        x = np.linspace(lo, hi, n)
        g, v = gv(tg.tensor(x, dtype=dt))
        ve, (ge,) = _eager(f, [x], dt)
        tol = 1e-4 if dtype == "float32" else 1e-9
        np.testing.assert_allclose(float(v), float(ve), rtol=tol)
        np.testing.assert_allclose(g.numpy(), ge, rtol=tol, atol=tol)
        assert np.abs(g.numpy()).max() > 0.5
    assert gv._cache.recordings == 1 and _variants(gv)[0].eager is None


def test_finding2_a_recording_longer_than_the_tape_rotation_keeps_one_node_per_input():
    """A loop of leaf-only ops past 1,024 entries (the current tape's rotation) used to give
    the input a second node as well."""
    def f(x):
        s = x * 0.0
        for i in range(1100):
            s = s + x * (1.0 + 1e-3 * i)
        return s.sum()
    gv = tf.grad_and_value(f)
    for x in (np.array([1.0, 2.0]), np.array([-3.0, 0.5])):
        g, v = gv(tg.tensor(x))
        ve, (ge,) = _eager(f, [x])
        _same(v.numpy(), ve, 1e-9)
        _same(g.numpy(), ge, 1e-9)
    assert _variants(gv)[0].eager is None


@pytest.mark.parametrize("P", [1, 7, 8, 9, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1023, 1024,
                               1025, 4097])
def test_finding2_batched_chunk_boundaries(P):
    """vmap's batched interpreter cuts points into chunks of 64..1024 lanes over the threads:
    batches around every chunk and tile size equal the point-by-point eager values."""
    def rosen(x):
        a, b = x[:-1], x[1:]
        return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()
    X = np.random.default_rng(P).standard_normal((P, 6))
    g, v = tf.vmap(tf.grad_and_value(rosen))(tg.tensor(X))
    for p in sorted({0, P // 2, P - 1}):
        ve, (ge,) = _eager(rosen, [X[p]])
        _same(v.numpy()[p], ve, 1e-9)
        _same(g.numpy()[p], ge, 1e-9)


# ----------------------------------------------------------------------------- finding 3
def _fd_grad(fn, x, eps=1e-6):
    """Central finite differences of a scalar function of a float64 array."""
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e.reshape(-1)[i] = eps
        g.reshape(-1)[i] = (fn(x + e) - fn(x - e)) / (2 * eps)
    return g


def _f3(x):
    return (x.sin() * x.exp()).sum() + (x * x * x).sum() + (x[:-1] * x[1:]).tanh().sum()


def _fsel(x):
    """Scalar indexing (select): its double backward records SelectBackwardBackward0."""
    return (x[0] * x[1]).sin() + x[2] ** 3 + x[3] * x[0]


def _sinroll(x):
    return x.sin() * x.roll(1)


NESTED = {
    "grad(grad(sin))": (lambda L: L.grad(L.grad(lambda x: x.sin())), "scalar"),
    "grad(sum grad)": (lambda L: L.grad(lambda x: L.grad(_f3)(x).sum()), "vec"),
    "grad(sum grad) indexed": (lambda L: L.grad(lambda x: L.grad(_fsel)(x).sum()), "vec"),
    "jacrev(grad)": (lambda L: L.jacrev(L.grad(_f3)), "vec"),
    "jacfwd(jacrev)": (lambda L: L.jacfwd(L.jacrev(_f3)), "vec"),
    "hessian": (lambda L: L.hessian(_f3), "vec"),
    "jvp(grad)": (lambda L: (lambda x, v: L.jvp(L.grad(_f3), (x,), (v,))), "vec2"),
    "jvp": (lambda L: (lambda x, v: L.jvp(_sinroll, (x,), (v,))), "vec2"),
    "vjp(grad)": (lambda L: (lambda x, v: L.vjp(L.grad(_f3), x)[1](v)), "vec2"),
    "vmap(grad)": (lambda L: L.vmap(L.grad(_f3)), "batch"),
    "vmap(hessian)": (lambda L: L.vmap(L.hessian(_f3)), "batch"),
}


def _recording_of(name, ours):
    """The _Cache whose recording serves the outermost transform of case ``name``."""
    if name == "jvp(grad)":
        return tf._FCACHES[tf._tkey(tf.grad(_f3), ("jvp", 1, False))]
    if name == "jvp":
        return tf._FCACHES[tf._tkey(_sinroll, ("jvp", 1, False))]
    if name == "vjp(grad)":
        return tf._FCACHES[tf._tkey(tf.grad(_f3), "vjp")]
    if name == "vmap(grad)":                        # (the batch runs grad's recording)
        return ours._tg_transform[1]._cache
    return ours._cache


def _args(kind, lib, x, v, X):
    if kind == "scalar":
        return (lib.tensor(float(x[0]), dtype=lib.float64),)
    if kind == "vec":
        return (lib.tensor(x, dtype=lib.float64),)
    if kind == "vec2":
        return (lib.tensor(x, dtype=lib.float64), lib.tensor(v, dtype=lib.float64))
    return (lib.tensor(X, dtype=lib.float64),)


def _flat(res):
    if isinstance(res, (tuple, list)):
        return [a for r in res for a in _flat(r)]
    return [np.asarray(res.detach().numpy() if hasattr(res, "detach") else res)]


@pytest.mark.parametrize("name", sorted(NESTED))
def test_finding3_nested_transforms_compose_as_torch_func_and_replay(name):
    """grad(grad(sin)) gave 0, vjp(grad(f)) zeros, jvp(grad(f)) raised, hessian and jvp ran
    eagerly. Each composition now equals torch.func on new inputs, and its outermost
    recording replays compiled (one recording, not served eagerly)."""
    torch = pytest.importorskip("torch")
    TF = pytest.importorskip("torch.func")
    make, kind = NESTED[name]
    ours, theirs = make(tf), make(TF)
    rng = np.random.default_rng(5)
    for k in range(4):
        x, v, X = rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal((3, 4))
        got = _flat(ours(*_args(kind, tg, x, v, X)))
        want = _flat(theirs(*_args(kind, torch, x, v, X)))
        assert len(got) == len(want)
        for a, b in zip(got, want):
            _same(a, b, 1e-9)
    c = _recording_of(name, ours)
    assert c.recordings == 1
    assert [ct.eager for vs in c.tapes.values() for ct in vs] == [None]


def test_finding3_nested_results_against_finite_differences():
    rng = np.random.default_rng(6)
    x, v = rng.standard_normal(4), rng.standard_normal(4)

    def f_np(a):
        return float(_f3(tg.tensor(a)))

    def g_np(a):
        return tf.grad(_f3)(tg.tensor(a)).numpy()
    g = tf.grad(_f3)(tg.tensor(x)).numpy()
    np.testing.assert_allclose(g, _fd_grad(f_np, x), rtol=1e-6, atol=1e-6)
    H = tf.hessian(_f3)(tg.tensor(x)).numpy()
    Hfd = np.stack([_fd_grad(lambda a: g_np(a)[i], x) for i in range(4)])
    np.testing.assert_allclose(H, Hfd, rtol=1e-5, atol=1e-5)
    _, hv = tf.jvp(tf.grad(_f3), (tg.tensor(x),), (tg.tensor(v),))
    np.testing.assert_allclose(hv.numpy(), Hfd @ v, rtol=1e-5, atol=1e-5)
    gg = tf.grad(lambda a: tf.grad(_f3)(a).sum())(tg.tensor(x)).numpy()
    np.testing.assert_allclose(gg, Hfd.sum(0), rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- finding 4
def _branchy(x):
    if x.sum() > 0:
        return (x * x).sum()
    return x.exp().sum()


def _branchy_ref(x):
    if x.sum() > 0:
        return 2 * x, (x * x).sum()
    return np.exp(x), np.exp(x).sum()


@pytest.mark.parametrize("interval", [1e-6, 1e-4])
def test_finding4_one_compiled_function_from_four_threads(interval):
    """The issue's test: one grad_and_value object (f branches on its input) called 2,000
    times from 4 threads at once (same and different signatures, both branches) with
    ``sys.setswitchinterval(1e-6)``: every result is its own call's (838 of 2,000 used to
    return the other branch's value and gradient; at 1e-4, AttributeError)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    try:
        gv = tf.grad_and_value(_branchy)
        bad, errs, done = [], [], []
        barrier = threading.Barrier(4)

        def work(k):
            rng = np.random.default_rng(k)
            barrier.wait()
            for i in range(500):
                n = 4 if k < 2 else 3 + (i % 3)
                x = rng.standard_normal(n) + (2.0 if (i + k) % 2 else -2.0)
                try:
                    g, v = gv(tg.tensor(x))
                except Exception as e:          # noqa: BLE001 (reported below)
                    errs.append(repr(e))
                    continue
                done.append(1)
                rg, rv = _branchy_ref(x)
                if not (np.allclose(g.numpy(), rg) and np.allclose(float(v), rv)):
                    bad.append((k, i))
        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert errs == [] and bad == [] and len(done) == 2000
    finally:
        sys.setswitchinterval(old)


def test_finding4_vjp_jacrev_vmap_jvp_from_threads():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    errs = []

    def f(x):
        return (x.tanh() * x).sum()
    jr = tf.jacrev(lambda x: x.sin() * x)
    vm = tf.vmap(tf.grad(f))

    def jf(a):
        return a.sin() * a

    def work(k):
        rng = np.random.default_rng(k)
        for i in range(40):
            x = rng.standard_normal(3)
            try:
                out, fn = tf.vjp(lambda a: a.sin() * a, tg.tensor(x))
                (g,) = fn(tg.ones(3, dtype=tg.float64))
                _same(g.numpy(), np.cos(x) * x + np.sin(x))
                _same(jr(tg.tensor(x)).numpy(), np.diag(np.cos(x) * x + np.sin(x)))
                X = rng.standard_normal((5, 3))
                _same(vm(tg.tensor(X)).numpy(), (1 - np.tanh(X) ** 2) * X + np.tanh(X))
                v = rng.standard_normal(3)
                _, t = tf.jvp(jf, (tg.tensor(x),), (tg.tensor(v),))    # (its fast call)
                _same(t.numpy(), (np.cos(x) * x + np.sin(x)) * v)
            except Exception as e:              # noqa: BLE001
                errs.append(repr(e))
    try:
        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert errs == []


# ----------------------------------------------------------------------------- finding 5
class _Cube(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


FUNCTIONS = {
    "det": lambda A: tg.linalg.det(A @ A.mT + tg.eye(3, dtype=A.dtype)),
    "inv": lambda A: tg.linalg.inv(A @ A.mT + tg.eye(3, dtype=A.dtype)).sum(),
    "solve": lambda A: tg.linalg.solve(A @ A.mT + tg.eye(3, dtype=A.dtype), A[:, 0]).sum(),
    "slogdet": lambda A: tg.linalg.slogdet(A @ A.mT + tg.eye(3, dtype=A.dtype))[1],
    "cholesky": lambda A: tg.linalg.cholesky(A @ A.mT + tg.eye(3, dtype=A.dtype)).sum(),
    "xlogy": lambda A: tg.xlogy(A, A * A + 1).sum(),
    "erfinv": lambda A: tg.erfinv(0.5 * A.tanh()).sum(),
    "erfc": lambda A: tg.special.erfc(A).sum(),
    "user Function": lambda A: _Cube.apply(A).sum(),
}


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_finding5_ops_built_as_custom_functions_record_and_replay(name):
    """A function calling an op built as a custom Function (or the user's own) could not be
    recorded (NotImplementedError): it now replays, calling the Function's forward and
    backward again on the new values."""
    f = FUNCTIONS[name]
    rng = np.random.default_rng(7)
    gv = tf.grad_and_value(f)
    for k in range(5):
        A = rng.standard_normal((3, 3))
        g, v = gv(tg.tensor(A))
        ve, (ge,) = _eager(f, [A])
        _same(v.numpy(), ve, 1e-9)
        _same(g.numpy(), ge, 1e-9)
    assert gv._cache.recordings == 1
    if name in SERVED_EAGERLY:
        assert _variants(gv)[0].eager is not None
    else:
        assert _variants(gv)[0].eager is None


# erfc is recorded as 1 - erf(x), which loses the tail its eager value keeps (erfc(20) replayed
# 0): its recordings are served eagerly (_sel.EAGER), right and recordable but not replayed
SERVED_EAGERLY = {"erfc"}


def test_finding5_custom_functions_against_torch():
    torch = pytest.importorskip("torch")
    TF = pytest.importorskip("torch.func")
    rng = np.random.default_rng(8)
    for name in ("det", "inv", "solve", "slogdet", "cholesky"):
        f = FUNCTIONS[name]
        ours = tf.grad(f)
        theirs = TF.grad(lambda A, f=f: _torch_version(name, A))
        for k in range(3):
            A = rng.standard_normal((3, 3))
            _same(ours(tg.tensor(A)).numpy(), theirs(torch.tensor(A)).numpy(), 1e-9)


def _torch_version(name, A):
    import torch
    S = A @ A.mT + torch.eye(3, dtype=A.dtype)
    return {"det": lambda: torch.linalg.det(S), "inv": lambda: torch.linalg.inv(S).sum(),
            "solve": lambda: torch.linalg.solve(S, A[:, 0]).sum(),
            "slogdet": lambda: torch.linalg.slogdet(S)[1],
            "cholesky": lambda: torch.linalg.cholesky(S).sum()}[name]()


# ----------------------------------------------------------------------------- default-deny
def test_every_recorded_op_declares_how_it_replays():
    """A recording whose entries include an op with no line in _sel.REPLAY is served by eager
    recording (logged), never replayed on trust."""
    gv = tf.grad_and_value(lambda x: x.logsumexp(0))
    for x in ([1.0, 2.0], [900.0, -900.0]):
        g, v = gv(tg.tensor(x))
        ve, (ge,) = _eager(lambda t: t.logsumexp(0), [np.array(x)])
        _same(v.numpy(), ve)
        _same(g.numpy(), ge)
    (ct,) = _variants(gv)
    assert ct.eager is not None and "LogsumexpBackward0" in ct.eager
    assert "LogsumexpBackward0" in _sel.EAGER and "LogsumexpBackward0" not in _sel.REPLAY


def test_a_tensor_made_from_recorded_values_without_a_guard_is_served_eagerly(caplog):
    import logging

    def f(x):
        with tg.no_grad():
            c = x.abs() + 1                      # values of x, no gradient, no guard
        return (x * c).sum()
    gv = tf.grad_and_value(f)
    with caplog.at_level(logging.DEBUG, logger="tapegrad.func"):
        for x in ([1.0, -2.0], [3.0, 0.5]):
            g, v = gv(tg.tensor(x))
            ve, (ge,) = _eager(f, [np.array(x)])
            _same(v.numpy(), ve)
            _same(g.numpy(), ge)
    assert "served by eager recording" in caplog.text
    (ct,) = _variants(gv)
    assert "made a tensor from recorded values" in ct.eager


def test_guarded_and_static_tensors_made_in_a_recording_still_replay():
    """Comparisons (guarded), creation from shapes, and this module's own constants do not
    make a recording eager."""
    def f(x):
        m = (x > 0).to(x.dtype)
        z = tg.zeros_like(x) + tg.arange(3, dtype=x.dtype)
        return (x * m + z * x).sum() + x.max()
    gv = tf.grad_and_value(f)
    for x in ([1.0, -2.0, 0.5], [2.0, -1.0, 0.25]):
        g, v = gv(tg.tensor(x))
        ve, (ge,) = _eager(f, [np.array(x)])
        _same(v.numpy(), ve)
        _same(g.numpy(), ge)
    assert all(ct.eager is None for ct in _variants(gv))


def test_random_draws_are_served_eagerly_and_drawn_anew():
    gv = tf.grad_and_value(lambda x: (x * tg.rand(3, dtype=x.dtype)).sum())
    values = {float(gv(tg.ones(3, dtype=tg.float64))[1]) for _ in range(5)}
    assert len(values) == 5
    assert _variants(gv)[0].eager.startswith("it draws random numbers")


def test_replayable_variants_keep_replaying_next_to_an_eager_one():
    """A branch whose recording cannot replay is served eagerly; the other branch still
    replays (the eager variant is tried last)."""
    def f(x):
        if x.sum() > 0:
            return (x * x).sum()
        return x.logsumexp(0)
    gv = tf.grad_and_value(f)
    gv(tg.tensor([1.0, 2.0]))
    gv(tg.tensor([-1.0, -2.0]))
    vs = next(iter(gv._cache.tapes.values()))
    assert [ct.eager is None for ct in vs] == [True, False]
    rec = gv._cache.recordings
    g, v = gv(tg.tensor([3.0, 1.0]))
    _same(g.numpy(), [6.0, 2.0])
    g, v = gv(tg.tensor([-3.0, -1.0]))
    _same(g.numpy(), np.exp([-3.0, -1.0]) / np.exp([-3.0, -1.0]).sum())
    assert gv._cache.recordings == rec


def test_replay_at_the_recording_point_checks_itself():
    """A recording whose frozen replay does not reproduce its own outputs is not replayed."""
    def f(x):
        y = x * 2.0
        y._data = y._data + 1.0                 # a value the recorded entries do not compute
        return y.sum()
    gv = tf.grad_and_value(f)
    g, v = gv(tg.tensor([1.0, 2.0]))
    assert float(v) == 8.0
    assert "differs" in _variants(gv)[0].eager


# ----------------------------------------------------------------------------- memory
def test_signatures_are_kept_in_a_bounded_lru():
    gv = tf.grad_and_value(lambda x: (x * x).sum())
    n = tf._Cache.MAX_SIGNATURES
    for k in range(n + 20):
        gv(tg.ones(k + 1, dtype=tg.float64))
    assert len(gv._cache.tapes) == n
    assert (1,) not in [key[1][0] for key in gv._cache.tapes]    # the oldest went first
    gv(tg.ones(n + 20, dtype=tg.float64))                        # the newest stays
    assert gv._cache.recordings == n + 20


def test_memory_stays_flat_over_many_signatures():
    import tracemalloc
    gv = tf.grad_and_value(lambda x: (x.sin() * x).sum())

    def burst(start):
        for k in range(start, start + 150):
            gv(tg.ones(1 + k % 300, dtype=tg.float64))
    burst(0)
    gc.collect()
    tracemalloc.start()
    burst(150)
    gc.collect()
    a = tracemalloc.get_traced_memory()[0]
    burst(300)
    burst(450)
    gc.collect()
    b = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert b - a < 2 << 20, (a, b)


# ----------------------------------------------------------------------------- jvp's fast call
def test_jvp_repeated_calls_take_the_fast_call_and_stay_right():
    """A repeated jvp call (same function, same signature) replays forward only through its
    fast call: new values, a captured tensor changed in place or rebound, another signature
    in between, has_aux and a branch on the values all give torch.func's answer."""
    torch = pytest.importorskip("torch")
    TF = pytest.importorskip("torch.func")
    rng = np.random.default_rng(11)
    W = tg.tensor(rng.standard_normal((4, 4)))

    def f(x):
        return (W @ x).sin() * x

    def f_t(x, W):
        return (W @ x).sin() * x

    def g(x):
        if x.sum() > 0:
            return x.tanh() * x, x.sum()
        return x.exp(), x.sum()

    for k in range(12):
        n = 4
        x, v = rng.standard_normal(n), rng.standard_normal(n)
        if k == 5:
            W._data[...] *= 2.0                     # in place: the recording reads it again
        if k == 8:
            W = tg.tensor(rng.standard_normal((4, 4)))            # rebound
        Wn = W.numpy().copy()
        out, t = tf.jvp(f, (tg.tensor(x),), (tg.tensor(v),))
        to, tt = TF.jvp(lambda a: f_t(a, torch.tensor(Wn)), (torch.tensor(x),), (torch.tensor(v),))
        _same(out.numpy(), to.numpy(), 1e-12)
        _same(t.numpy(), tt.numpy(), 1e-12)
        # another signature in between
        y, u = rng.standard_normal(3), rng.standard_normal(3)
        _, t2 = tf.jvp(lambda a: a.sin() * a, (tg.tensor(y),), (tg.tensor(u),))
        _same(t2.numpy(), (np.cos(y) * y + np.sin(y)) * u, 1e-12)
        # has_aux, and a branch on the values
        z = rng.standard_normal(3) + (1.5 if k % 2 else -1.5)
        o, t3, aux = tf.jvp(g, (tg.tensor(z),), (tg.tensor(u),), has_aux=True)
        to, tt, taux = TF.jvp(lambda a: (a.tanh() * a, a.sum()) if float(a.sum()) > 0
                              else (a.exp(), a.sum()), (torch.tensor(z),), (torch.tensor(u),),
                              has_aux=True)
        _same(o.numpy(), to.numpy(), 1e-12)
        _same(t3.numpy(), tt.numpy(), 1e-12)
        _same(aux.numpy(), taux.numpy(), 1e-12)
    assert any(fn is f for fn, _ in tf._JVP_FAST.values())


def test_jvp_of_grad_hvp_is_replayed_with_its_fast_call():
    """jvp(grad(f)) (the forward-over-reverse Hessian-vector product): one recording, replayed
    on later calls, equal to the analytic Hessian of Rosenbrock times v."""
    def rosen(x):
        a, b = x[:-1], x[1:]
        return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()

    def exact(x, v):
        n = x.size
        H = np.zeros((n, n))
        for i in range(n - 1):
            H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
            H[i + 1, i + 1] += 200
            H[i, i + 1] -= 400 * x[i]
            H[i + 1, i] -= 400 * x[i]
        return H @ v
    gr = tf.grad(rosen)
    rng = np.random.default_rng(12)
    for k in range(6):
        x, v = rng.standard_normal(10), rng.standard_normal(10)
        _, hv = tf.jvp(gr, (tg.tensor(x),), (tg.tensor(v),))
        _same(hv.numpy(), exact(x, v), 1e-12)
    c = tf._FCACHES[tf._tkey(gr, ("jvp", 1, False))]
    assert c.recordings == 1 and [ct.eager for vs in c.tapes.values() for ct in vs] == [None]
    assert tf._JVP_FAST[(id(gr), 1, False)][0] is gr


# ----------------------------------------------------------------------------- captured tensors
_CAPTURED = {
    "W @ x": lambda W, x: (W @ x).sin().sum(),
    "W.T @ x": lambda W, x: (W.T @ x[:3]).sin().sum(),
    "x @ W.T": lambda W, x: (x @ W.T).sin().sum(),
    "(W * 2) @ x": lambda W, x: ((W * 2) @ x).sin().sum(),
    "W.exp() * x": lambda W, x: (W[0].exp() * x).sin().sum(),
    "F.linear": lambda W, x: F.linear(x, W).tanh().sum(),
    "float(W.max())": lambda W, x: (x * float(W.max())).sin().sum(),
    "W.numpy()": lambda W, x: (x * tg.tensor(W.numpy()[0] * 2)).sin().sum(),
}


@pytest.mark.parametrize("name", sorted(_CAPTURED))
@pytest.mark.parametrize("how", ["in place", ".data", "mul_"])
def test_a_captured_tensor_changed_between_calls_is_read_again(name, how):
    """A tensor f captures is read at each call, also when f made a constant from its values
    (``W * 2``, ``W.T`` copied, ``float(W.max())``): those replayed the values of the first
    call after an in-place change (silently wrong); a replay now checks them and records
    again when they changed."""
    rng = np.random.default_rng(13)
    W = tg.tensor(rng.standard_normal((3, 4)))
    fn = _CAPTURED[name]

    def f(x):
        return fn(W, x)
    gv = tf.grad_and_value(f)
    for k in range(6):
        x = rng.standard_normal(4)
        if k in (2, 4):
            new = rng.standard_normal((3, 4))
            if how == "in place":
                W._data[...] = new
            elif how == ".data":
                W.data = tg.tensor(new)
            else:
                with tg.no_grad():
                    W.mul_(tg.tensor(new))
        g, v = gv(tg.tensor(x))
        ve, (ge,) = _eager(f, [x])
        _same(v.numpy(), ve, 1e-12)
        _same(g.numpy(), ge, 1e-12)


@pytest.mark.parametrize("name", ["hessian", "jvp", "jvp(grad)", "vmap(grad)", "jacrev"])
def test_nested_transforms_read_a_changed_captured_tensor_again(name):
    """The backward passes a nested transform records transpose and copy the captured
    matrices (constants of the recording): after an in-place change they are read again."""
    torch = pytest.importorskip("torch")
    TF = pytest.importorskip("torch.func")
    rng = np.random.default_rng(14)
    Wn = rng.standard_normal((4, 4))
    W = tg.tensor(Wn)

    def make(L, W):
        def f(x):
            return ((W @ x).tanh() * x).sum()

        def h(x):
            return (W @ x).sin() * x
        return {"hessian": lambda x, v: L.hessian(f)(x),
                "jvp": lambda x, v: L.jvp(h, (x,), (v,))[1],
                "jvp(grad)": lambda x, v: L.jvp(L.grad(f), (x,), (v,))[1],
                "vmap(grad)": lambda x, v: L.vmap(L.grad(f))(x.reshape(1, -1) + v.reshape(1, -1)),
                "jacrev": lambda x, v: L.jacrev(h)(x)}[name]
    ours = make(tf, W)
    for k in range(5):
        if k in (2, 4):
            W._data[...] = rng.standard_normal((4, 4))
        x, v = rng.standard_normal(4), rng.standard_normal(4)
        theirs = make(TF, torch.tensor(W.numpy().copy()))
        _same(ours(tg.tensor(x), tg.tensor(v)).numpy(),
              theirs(torch.tensor(x), torch.tensor(v)).numpy(), 1e-10)


def test_vmap_batches_read_a_changed_captured_tensor_again():
    """vmap's batched interpreter checks the captured tensors a recording read values from
    (``(W * 2) @ x``) as the single-point replay does."""
    rng = np.random.default_rng(15)
    W = tg.tensor(rng.standard_normal((3, 4)))

    def f(x):
        return ((W * 2) @ x).sin().sum()
    vg = tf.vmap(tf.grad_and_value(f))
    for k in range(4):
        if k in (1, 3):
            W._data[...] = rng.standard_normal((3, 4))
        X = rng.standard_normal((70, 4))
        g, v = vg(tg.tensor(X))
        for p in (0, 33, 69):
            ve, (ge,) = _eager(f, [X[p]])
            _same(v.numpy()[p], ve, 1e-12)
            _same(g.numpy()[p], ge, 1e-12)


_PIECEWISE = {
    "hardswish": lambda L, x: L.nn.functional.hardswish(x),
    "hardsigmoid": lambda L, x: L.nn.functional.hardsigmoid(x),
    "relu6": lambda L, x: L.nn.functional.relu6(x),
    "hardtanh": lambda L, x: L.nn.functional.hardtanh(x),
    "softshrink": lambda L, x: L.nn.functional.softshrink(x),
    "hardshrink": lambda L, x: L.nn.functional.hardshrink(x),
    "elu": lambda L, x: L.nn.functional.elu(x),
    "clamp": lambda L, x: x.clamp(-1.0, 2.0),
    "relu": lambda L, x: x.relu(),
    "abs": lambda L, x: x.abs(),
}


@pytest.mark.parametrize("name", sorted(_PIECEWISE))
def test_piecewise_functions_replay_right_at_infinities_beyond_their_cuts(name):
    """Recorded at finite points on each side of every cut, then called at +-inf and nan
    (same side of the cuts as the recording): value and gradient as eager and torch.
    hardswish's recording at x >= 3 replayed a nan gradient at +inf (found by the long
    random run: its 'x holds an inf' branch was a value decision no guard saw)."""
    torch = pytest.importorskip("torch")
    f = _PIECEWISE[name]
    gv = tf.grad_and_value(lambda x: f(tg, x * 1.0 + 2.0).sum())
    for rec in ([5.0, -7.0, 0.25], [2.5, 9.0, -0.25]):
        for x in (rec, [np.inf, -np.inf, 0.25], [np.nan, -np.inf, -0.25],
                  [np.inf, np.inf, np.inf], [-np.inf, np.nan, 1e300]):
            a = np.array(x)
            g, v = gv(tg.tensor(a))
            ve, (ge,) = _eager(lambda t: f(tg, t * 1.0 + 2.0).sum(), [a])
            X = torch.tensor(a, requires_grad=True)
            V = f(torch, X * 1.0 + 2.0).sum()
            V.backward()
            np.testing.assert_array_equal(g.numpy(), ge, err_msg="%s at %s" % (name, x))
            np.testing.assert_array_equal(v.numpy(), ve, err_msg="%s at %s" % (name, x))
            np.testing.assert_allclose(g.numpy(), X.grad.numpy(), rtol=1e-12,
                                       err_msg="torch, %s at %s" % (name, x))


# ----------------------------------------------------------------------------- long-run findings
def _signs(y):
    """The values with the sign of each zero made visible: atan2(y, y) is -pi at -0.0, 0 at
    +0.0 (and +-3pi/4, +-pi/4 elsewhere), weighted by position."""
    L = tg if isinstance(y, tg.Tensor) else __import__("torch")
    w = L.tensor([1.0, 10.0, 100.0, 1000.0][:y.numel()], dtype=y.dtype).reshape(y.shape)
    return (L.atan2(y, y) * w).sum()


_AT_THE_CUT = {
    "relu6": lambda L, x: L.nn.functional.relu6(x),
    "hardtanh": lambda L, x: L.nn.functional.hardtanh(x),
    "hardtanh(0, 1)": lambda L, x: L.nn.functional.hardtanh(x, 0.0, 1.0),
    "hardtanh(-1, 0)": lambda L, x: L.nn.functional.hardtanh(x, -1.0, 0.0),
    "relu6_": lambda L, x: L.nn.functional.relu6(x * 1.0, inplace=True),
}


@pytest.mark.parametrize("name", sorted(_AT_THE_CUT))
def test_clamp_like_activations_replay_the_sign_of_zero_of_eager_and_torch(name):
    """The long run's seed 5002: relu6(-0.0) replayed +0.0 (the value outside the middle was a
    recorded constant, even at the cut where eager's value is x itself), then atan2(v, v)
    turned the sign into +-pi (-5.78 against eager's 0.5). Recorded at points on each side of
    the cuts and at both zeros, called at both zeros, at the bounds and inside: value (the
    sign of every zero) and gradient as eager tapegrad and torch."""
    torch = pytest.importorskip("torch")
    f = _AT_THE_CUT[name]
    calls = ([-0.0, 0.0, 0.5, -0.0], [0.0, -0.0, -0.0, 0.5], [-1.0, 1.0, 6.0, -0.0],
             [0.25, -0.25, -0.0, 0.0], [7.0, -7.0, np.nan, -0.0], [-0.0, -0.0, -0.0, -0.0],
             [0.0, 0.0, 0.0, 0.0], [-0.0, 0.0, -0.0, 0.0])
    for rec in ([-1.0, 0.5, 7.0, -0.5], [-0.0, -0.0, -0.0, -0.0], [0.0, 0.0, 0.0, 0.0],
                [0.5, 0.25, -0.25, 0.75], [-0.0, 0.0, 1.0, 6.0]):
        gv = tf.grad_and_value(lambda x: _signs(f(tg, x)) + f(tg, x).sum() * 0.5)
        gv(tg.tensor(np.array(rec)))
        for x in calls:
            a = np.array(x)
            g, v = gv(tg.tensor(a))
            ve, (ge,) = _eager(lambda t: _signs(f(tg, t)) + f(tg, t).sum() * 0.5, [a])
            X = torch.tensor(a, requires_grad=True)
            V = _signs(f(torch, X)) + f(torch, X).sum() * 0.5
            V.backward()
            msg = "%s recorded at %s, called at %s" % (name, rec, x)
            # (a zero of the other sign moves the total by pi times its weight)
            for a_, b_ in ((v.numpy(), ve), (v.numpy(), V.detach().numpy()), (g.numpy(), ge),
                           (g.numpy(), X.grad.numpy())):
                np.testing.assert_allclose(a_, b_, rtol=1e-13, atol=1e-13, err_msg=msg)


def test_seed_5002_relu6_hardsigmoid_atan2_program():
    """The long run's program itself, recorded at x0 = -1 and at both zeros, called at -0.0."""
    torch = pytest.importorskip("torch")

    def prog(L, x0):
        F_ = L.nn.functional
        v0 = F_.relu6(x0)
        v1 = F_.hardsigmoid(v0)
        v2 = -v0
        v3 = L.atan2(v2, v2)
        return v3.sum() + 2.0 * v1.sum()
    for rec in (-1.0, -0.0, 0.0, 1.0):
        gv = tf.grad_and_value(lambda x: prog(tg, x))
        gv(tg.tensor(np.array([rec])))
        g, v = gv(tg.tensor(np.array([-0.0])))
        ve, (ge,) = _eager(lambda t: prog(tg, t), [np.array([-0.0])])
        X = torch.tensor([-0.0], dtype=torch.float64, requires_grad=True)
        V = prog(torch, X)
        V.backward()
        # (relu6(-0.0) is -0.0, its negation +0.0: atan2 gives 0, not -pi; 2 hardsigmoid = 1)
        assert float(v) == ve == float(V.detach()) == 1.0, (rec, float(v))
        np.testing.assert_array_equal(g.numpy(), ge)
        np.testing.assert_array_equal(g.numpy(), X.grad.numpy())


def test_order_signature_sees_ties_of_infinities():
    """The order type behind amax / median / sort guards compared neighbours by subtracting
    them: inf - inf is nan, so [inf, inf] looked like [1, 2] (no tie)."""
    assert not np.array_equal(_sel.order(np.array([np.inf, np.inf])),
                              _sel.order(np.array([1.0, 2.0])))
    assert not np.array_equal(_sel.order(np.array([[-np.inf, -np.inf], [0.0, 1.0]]), 1),
                              _sel.order(np.array([[0.0, 1.0], [0.0, 1.0]]), 1))
    assert np.array_equal(_sel.order(np.array([-0.0, 0.0])), _sel.order(np.array([2.0, 2.0])))


def test_seed_5009_amax_then_median_ties_at_infinity():
    """The long run's seed 5009: amax, then median, of [[-0.0], [inf]]; the median's operand
    is [inf, inf] (a tie: torch and eager split the gradient), but a recording made where it
    had no tie replayed its single position: gradient [-1.5, -1.625] against [-1.25, -1.875]."""
    torch = pytest.importorskip("torch")

    def prog(L, x1):
        v0 = -x1
        v1 = v0 + L.amax(v0).sum() * 0.25
        v3 = -(-v1)
        v4 = v3 + L.median(v3).sum() * 0.25
        return v4.sum()
    new = np.array([[0.0], [-np.inf]])
    for rec in ([[1.0], [-1.0]], [[0.0], [-1.0]], [[np.inf], [0.0]], [[0.0], [0.0]]):
        gv = tf.grad_and_value(lambda x: prog(tg, x))
        gv(tg.tensor(np.array(rec)))
        g, v = gv(tg.tensor(new))
        ve, (ge,) = _eager(lambda t: prog(tg, t), [new])
        X = torch.tensor(new, requires_grad=True)
        prog(torch, X).backward()
        np.testing.assert_array_equal(g.numpy(), ge, err_msg=str(rec))
        np.testing.assert_array_equal(g.numpy(), X.grad.numpy(), err_msg=str(rec))
        np.testing.assert_array_equal(g.numpy().ravel(), [-1.25, -1.875])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_hardsigmoid_replays_the_exact_value_and_torchs_gradient(dtype):
    """hardsigmoid's recording computed its value with the gradient's constant (torch's float
    1/6): in float64 up to 1.5e-8 from eager's and torch's exact (x + 3) / 6. Now one table row:
    the replayed value is eager's and torch's bit for bit, the gradient torch's (its float 1/6
    for double too), at the kinks, at +-inf and nan included."""
    torch = pytest.importorskip("torch")
    dt, tdt = getattr(tg, dtype), getattr(torch, dtype)
    rng = np.random.default_rng(5)
    base = rng.uniform(-4, 4, 9)
    gv = tf.grad_and_value(lambda x: (F.hardsigmoid(x) * tg.arange(1, 10, dtype=dt)).sum())
    for k in range(14):
        a = _adversarial(base, rng, k).astype(dtype)
        g, v = gv(tg.tensor(a, dtype=dt))
        X = torch.tensor(a, dtype=tdt, requires_grad=True)
        y = torch.nn.functional.hardsigmoid(X)
        (y * torch.arange(1, 10, dtype=tdt)).sum().backward()
        ye = F.hardsigmoid(tg.tensor(a, dtype=dt)).numpy()
        np.testing.assert_array_equal(ye, y.detach().numpy())
        ve, (ge,) = _eager(lambda t: (F.hardsigmoid(t) * tg.arange(1, 10, dtype=dt)).sum(), [a],
                           dt)
        if dtype == "float64":      # (the total: up to its summation order; 1e-8 before)
            np.testing.assert_allclose(v.numpy(), ve, rtol=1e-14)
            np.testing.assert_array_equal(g.numpy(), ge)
            np.testing.assert_array_equal(g.numpy(), X.grad.numpy())
        else:           # (the float32 kernel rounds (x + 3) / 6 once, from double)
            np.testing.assert_allclose(v.numpy(), ve, rtol=1e-6)
            np.testing.assert_allclose(g.numpy(), X.grad.numpy(), rtol=1e-6)


_TIES = {
    "relu": lambda L, x: x.relu(),
    "relu_": lambda L, x: (x * 1.0).relu_(),
    "clamp(0, 1)": lambda L, x: x.clamp(0.0, 1.0),
    "clamp(-1, 0)": lambda L, x: x.clamp(-1.0, 0.0),
    "clamp_min(0)": lambda L, x: L.clamp_min(x, 0.0),
    "clamp_max(0)": lambda L, x: L.clamp_max(x, 0.0),
    "elu": lambda L, x: L.nn.functional.elu(x),
    "selu": lambda L, x: L.nn.functional.selu(x),
    "celu": lambda L, x: L.nn.functional.celu(x),
}


@pytest.mark.parametrize("n", [4, 100, 5000, 70000])
@pytest.mark.parametrize("name", sorted(_TIES))
def test_ties_at_zero_keep_torchs_sign_eager_and_replayed(name, n):
    """relu, clamp, clamp_min / clamp_max and elu at a tie of -0.0 with +0.0: torch returns x
    itself, so relu(-0.0) is -0.0. numpy's maximum returns the second operand: the rows'
    references and numpy forms, and relu's kernels, gave +0.0: eager tapegrad differed from
    torch, and a replay from one or the other. (maximum / minimum / clamp by tensors have no
    torch sign to follow: its vectorized kernel returns the second operand's zero, as numpy
    and tapegrad do, and its scalar loop, below 8 elements and in a tensor's tail, the first's.) Every size path (numpy below 65 elements, the kernels, the
    vector-math and numpy forms of big nodes) against torch, eager and replayed."""
    torch = pytest.importorskip("torch")
    f = _TIES[name]
    a = np.tile([-0.0, 0.0, 0.5, -0.5], n // 4)
    b = -a
    X = torch.tensor(a, requires_grad=True)
    yt = f(torch, X).detach().numpy()
    ye = f(tg, tg.tensor(a, requires_grad=True)).detach().numpy()
    np.testing.assert_array_equal(np.signbit(ye), np.signbit(yt), err_msg="eager")
    np.testing.assert_array_equal(ye, yt)
    w = np.linspace(0.5, 1.5, a.size)

    def h(L, x):
        y = f(L, x)
        return (L.atan2(y, y) * L.tensor(w, dtype=y.dtype)).sum() + (y * y).sum()
    gv = tf.grad_and_value(lambda x: h(tg, x))
    gv(tg.tensor(np.tile([0.25, -0.25, 0.5, -0.5], n // 4)))
    for x in (a, b):
        g, v = gv(tg.tensor(x))
        ve, (ge,) = _eager(lambda t: h(tg, t), [x])
        Xt = torch.tensor(x, requires_grad=True)
        Vt = h(torch, Xt)
        Vt.backward()
        np.testing.assert_allclose(v.numpy(), ve, rtol=1e-12)
        np.testing.assert_allclose(v.numpy(), Vt.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(g.numpy(), ge, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(g.numpy(), Xt.grad.numpy(), rtol=1e-12, atol=1e-12)
