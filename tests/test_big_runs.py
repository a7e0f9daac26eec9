"""Runs of big elementwise entries swept in one kernel call (tape._run_big, _vmath.run_vjp).

The run must give the gradients the entry-by-entry numpy sweep gives, bit for bit (it rounds
the same products and adds them in the same order), and those must match the closed form.
"""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad._compiled import _vmath
from tapegrad._core import tape

pytestmark = pytest.mark.skipif(not _vmath.OK, reason="no libmvec kernels: no runs")

# sizes: one core below _vmath.PAR, every core above it; neither a multiple of a register
SIZES = [tape.BIG + 1003, _vmath.PAR + 4099]

# (name, f(lib, x, w), closed-form gradient in x (numpy, float64), the same in w or None)
CASES = [
    ("bench", lambda L, x, w: L.sin(x) * L.exp(-x * x) + L.tanh(x),
     lambda x, w: np.cos(x) * np.exp(-x * x) - 2 * x * np.sin(x) * np.exp(-x * x)
     + 1 - np.tanh(x) ** 2, None),
    ("poly_numbers", lambda L, x, w: (x * x * x + 2.0 * x - x / 3.0 + L.sqrt(x * x + 1.0)) * w,
     lambda x, w: (3 * x * x + 2 - 1 / 3 + x / np.sqrt(x * x + 1)) * w,
     lambda x, w: x ** 3 + 2 * x - x / 3 + np.sqrt(x * x + 1)),
    ("quotients", lambda L, x, w: (3.0 - x) / (x * x + 1.0) + 2.0 / (w + 5.0) - x / w,
     lambda x, w: -1 / (x * x + 1) - (3 - x) * 2 * x / (x * x + 1) ** 2 - 1 / w,
     lambda x, w: -2 / (w + 5) ** 2 + x / (w * w)),
    ("activations", lambda L, x, w: L.sigmoid(x) * L.relu(w) + L.abs(x - w) + (x * w).pow(3),
     lambda x, w: (1 / (1 + np.exp(-x))) * (1 - 1 / (1 + np.exp(-x))) * np.maximum(w, 0)
     + np.sign(x - w) + 3 * (x * w) ** 2 * w,
     lambda x, w: (1 / (1 + np.exp(-x))) * (w > 0) - np.sign(x - w) + 3 * (x * w) ** 2 * x),
    ("transcendental", lambda L, x, w: L.cos(x) * L.log(w * w + 1.0) + L.atan(x) - L.erf(w)
     + L.sinh(x) * 0.5,
     lambda x, w: -np.sin(x) * np.log(w * w + 1) + 1 / (1 + x * x) + 0.5 * np.cosh(x),
     lambda x, w: np.cos(x) * 2 * w / (w * w + 1) - 2 / np.sqrt(np.pi) * np.exp(-w * w)),
    ("same_operand", lambda L, x, w: (x * x) * (x - x * 2.0) + (w + w) * x,
     lambda x, w: -3 * x * x + 2 * w, lambda x, w: 2 * x),
]


def _inputs(n, dtype, seed=0):
    rs = np.random.default_rng(seed)
    a = rs.uniform(-1.5, 1.5, n)
    b = rs.uniform(0.5, 2.0, n) * rs.choice([-1, 1], n)
    return a.astype(dtype), b.astype(dtype)


def _grads(f, a, b, dtype, seed_kind):
    x = tg.tensor(a, requires_grad=True)
    w = tg.tensor(b, requires_grad=True)
    y = f(tg, x, w)
    if seed_kind == "sum":
        y.sum().backward()
    else:                                  # a full cotangent (no broadcast at the top)
        y.backward(tg.tensor(np.linspace(-1, 1, a.size).astype(dtype)))
    return x.grad.numpy().copy(), (None if w.grad is None else w.grad.numpy().copy())


def _bitwise_as_without_runs(loss, a, b, monkeypatch):
    """x's and w's gradients of loss(x, w).backward(), checked bit for bit against the
    entry-by-entry sweep (runs off)."""
    def grads():
        x = tg.tensor(a, requires_grad=True)
        w = tg.tensor(b, requires_grad=True)
        loss(x, w).backward()
        return x.grad.numpy().copy(), w.grad.numpy().copy()

    gx, gw = grads()
    with monkeypatch.context() as m:
        m.setattr(tape, "RUN_MIN", 1 << 30)
        rx, rw = grads()
    np.testing.assert_array_equal(gx, rx)
    np.testing.assert_array_equal(gw, rw)
    return gx, gw


@pytest.fixture
def run_calls(monkeypatch):
    calls = []
    orig = _vmath.run_vjp

    def counted(prog, *rest):
        calls.append(prog.size // _vmath.RUN_W)
        return orig(prog, *rest)
    monkeypatch.setattr(_vmath, "run_vjp", counted)
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed_kind", ["sum", "full"])
def test_run_matches_the_entry_by_entry_sweep_and_the_closed_form(case, n, dtype, seed_kind,
                                                                   run_calls, monkeypatch):
    _, f, dx, dw = case
    a, b = _inputs(n, dtype)
    gx, gw = _grads(f, a, b, dtype, seed_kind)
    assert run_calls and max(run_calls) >= 3          # the expression went through runs
    monkeypatch.setattr(tape, "RUN_MIN", 1 << 30)    # no runs: np_entry per entry
    del run_calls[:]
    rx, rw = _grads(f, a, b, dtype, seed_kind)
    assert not run_calls
    np.testing.assert_array_equal(gx, rx)
    if dw is not None:
        np.testing.assert_array_equal(gw, rw)
    # and the closed form, in float64
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    s = np.ones(n) if seed_kind == "sum" else np.linspace(-1, 1, n).astype(dtype).astype(np.float64)
    tol = 2e-4 if dtype == np.float32 else 1e-10
    scale = 1 + np.abs(dx(a64, b64) * s)
    np.testing.assert_array_less(np.abs(gx - dx(a64, b64) * s) / scale, tol)
    if dw is not None:
        np.testing.assert_array_less(np.abs(gw - dw(a64, b64) * s) / (1 + np.abs(dw(a64, b64) * s)), tol)


def test_a_cotangent_from_before_the_run_is_added_to():
    """y's cotangent has a part from an entry the sweep ran before the run (a slice of y):
    the run adds to it rather than starting from zero."""
    n = tape.BIG + 1000
    a, _ = _inputs(n, np.float64, 1)
    x = tg.tensor(a, requires_grad=True)
    y = x.sin()
    z = (y * y).tanh() * 2.0
    loss = z.sum() + (y[:7] * 5.0).sum()
    loss.backward()
    t = np.tanh(np.sin(a) ** 2)
    want = 2 * (1 - t * t) * 2 * np.sin(a) * np.cos(a)
    want[:7] += 5 * np.cos(a[:7])
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("how", ["retain_grad", "autograd_grad"])
def test_cotangents_a_caller_reads_are_kept(how, run_calls):
    """retain_grad / autograd.grad on a node made inside a run: it is not a scratch row, and
    its full cotangent is what the caller gets."""
    n = _vmath.PAR + 17
    a, _ = _inputs(n, np.float64, 2)
    x = tg.tensor(a, requires_grad=True)
    y = x.exp()
    z = (y * x).sin()
    loss = (z * 3.0).sum()
    a64 = a.astype(np.float64)
    gz = 3 * np.cos(np.exp(a64) * a64)
    want_y = gz * a64
    want_x = gz * (np.exp(a64) + np.exp(a64) * a64)
    if how == "retain_grad":
        y.retain_grad()
        loss.backward()
        gy, gx = y.grad.numpy(), x.grad.numpy()
    else:
        gy, gx = (g.numpy() for g in tg.autograd.grad(loss, (y, x)))
    assert run_calls
    np.testing.assert_allclose(gy, want_y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx, want_x, rtol=1e-12, atol=1e-12)


def test_unbound_parts_and_a_second_backward_accumulate():
    """The run's top cotangent gathered from unbind's parts; a second backward adds to .grad."""
    n = 2 * (tape.BIG + 8)
    a, _ = _inputs(n, np.float64, 3)
    x = tg.tensor(a.reshape(2, -1), requires_grad=True)
    for _ in range(2):
        y = x.sin() * x.exp()
        p, q = y.unbind(0)
        ((p * 2.0).sum() + q.tanh().sum()).backward()
    y = np.sin(a) * np.exp(a)
    dy = (np.cos(a) + np.sin(a)) * np.exp(a)
    g = np.where(np.arange(n) < n // 2, 2.0, 1 - np.tanh(y) ** 2) * dy
    np.testing.assert_allclose(x.grad.numpy().reshape(-1), 2 * g, rtol=1e-12, atol=1e-12)


def test_anomaly_mode_checks_each_entry_of_a_would_be_run(run_calls):
    """Anomaly detection runs entry by entry (it names the entry whose gradient is nan)."""
    n = tape.BIG + 5
    x = tg.tensor(np.linspace(0.5, 1.5, n), requires_grad=True)
    with tg.autograd.detect_anomaly():
        y = (x * 0.0).sqrt()          # sqrt's VJP at 0: inf; the product's (inf * 0): nan
        with pytest.raises(RuntimeError, match="'MulBackward0' returned nan values"):
            (y * x).exp().sum().backward()
    assert not run_calls


@pytest.mark.parametrize("n", [1, 2, 3, 9, 17])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_runs_of_a_few_elements(n, dtype, run_calls, monkeypatch):
    """With tape.BIG lowered every node is big: runs of fewer elements than a register (the
    padded last block, a one-element operand that is a whole node) match the entry-by-entry
    sweep and the closed form. Not bit for bit: below _vmath.MIN elements the entries' own
    VJPs take numpy's transcendental functions, the run libmvec's (both within 4 ulp)."""
    monkeypatch.setattr(tape, "BIG", 1)
    a, b = _inputs(n, dtype, 4)
    for name, f, dx, dw in CASES:
        gx, gw = _grads(f, a, b, dtype, "sum")
        assert run_calls, name
        with monkeypatch.context() as m:
            m.setattr(tape, "RUN_MIN", 1 << 30)
            rx, rw = _grads(f, a, b, dtype, "sum")
        ulps = 2e-6 if dtype == np.float32 else 4e-15
        np.testing.assert_allclose(gx, rx, rtol=ulps, atol=ulps, err_msg=name)
        if dw is not None:
            np.testing.assert_allclose(gw, rw, rtol=ulps, atol=ulps, err_msg=name)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        tol = 2e-4 if dtype == np.float32 else 1e-10
        np.testing.assert_allclose(gx, dx(a64, b64), rtol=tol, atol=tol, err_msg=name)
        del run_calls[:]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_and_means_join_runs(dtype, run_calls, monkeypatch):
    """A whole-tensor sum or mean of a node of the run's size is a row of the run (its VJP
    broadcasts c g), at the top or in the middle (the mean of a square under an exp):
    bit-identical to the entry-by-entry sweep, and the closed form."""
    n = _vmath.PAR + 333
    a, b = _inputs(n, dtype, 6)

    def loss(x, w):
        m = ((x - 0.25).pow(2) * w).mean()
        t = (x.exp() * 0.5).sum()
        return m * 3.0 + t

    gx, gw = _bitwise_as_without_runs(loss, a, b, monkeypatch)
    # one run: t's sum, mul, exp, then m's mean, mul, pow, sub (m * 3.0 ran before, compiled)
    assert run_calls == [7]
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(gx, 6 * (a64 - 0.25) * b64 / n + 0.5 * np.exp(a64), rtol=tol, atol=tol)
    np.testing.assert_allclose(gw, 3 * (a64 - 0.25) ** 2 / n, rtol=tol, atol=tol)


def test_plan_counts_cotangents_in_the_adjoint_dictionary_as_existing():
    """``_runs.plan``: a node whose cotangent is in the adjoint dictionary (``gkeys``) but
    not marked reached is added to (BEFORE), not overwritten (NEW); the plan marks the
    nodes it makes reached, and refuses a run shorter than run_min without touching the
    flags."""
    from tapegrad._compiled import _runs
    from tapegrad._schema import NK, NPROD
    x = tg.tensor(np.linspace(0.1, 1.0, 40000, dtype=np.float32), requires_grad=True)
    u = x * 2.0
    y = tg.sin(u) * tg.exp(u)
    tp = y._tape
    E, N, V4, V8, XA4, XA8, I, C = tape.store_views(tp)
    ne, nn = len(E) // tape.K, len(N) // NK
    e = ne - 1                                   # the product
    bad = tape.version_mask(tp, ne)

    def run(gkeys, run_min=2):
        nreach = np.zeros(nn + 1, np.uint8)
        ereach = np.zeros(ne + 1, np.uint8)
        nreach[y._node] = 1
        ereach[e] = 1
        res = _runs.plan(E, N, ereach, nreach, np.array(gkeys, np.int64), bad,
                         tape._RUN_KIND, tape._RUN_CODES, C, np.zeros(1, np.float32),
                         np.zeros(1), e, True, run_min)
        return res, nreach, ereach

    (k, nscr, prog, cs, slots, left), nreach, ereach = run([])
    src = dict(zip(slots[0].tolist(), slots[1].tolist()))
    assert k == -1 and prog.shape == (4, _vmath.RUN_W)         # mul, exp, sin, u = x * 2
    assert prog[:, -1].tolist()[0] == y._node
    assert src[u._node] == _runs.NEW and nreach[u._node] == 1
    assert ereach[int(N[u._node * NK + NPROD])] == 1
    (k, nscr, prog, cs, slots, left), nreach, _ = run([u._node])
    src = dict(zip(slots[0].tolist(), slots[1].tolist()))
    assert src[u._node] == _runs.BEFORE and nreach[u._node] == 0
    (k, *_), nreach, ereach = run([], run_min=5)
    assert k == -2 and nreach.sum() == 1 and ereach.sum() == 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [_vmath.PAR + 333, 70001, 5])
def test_a_sums_constant_is_its_cotangent_times_c_rounded_in_the_dtype(n, dtype, run_calls,
                                                                       monkeypatch):
    """The constant of a sum's row is c g rounded in the dtype (as the sum's own VJP rounds
    it), with g the sum's cotangent: here 3.7 and 0.3, not 1. n = 5 with tape.BIG lowered:
    the sums' outputs are big nodes (their cotangents come from the adjoint dictionary).
    Arithmetic rows only, so bit for bit against the entry-by-entry sweep at every size."""
    if n < tape.BIG:
        monkeypatch.setattr(tape, "BIG", 1)
    a, b = _inputs(n, dtype, 7)

    def loss(x, w):
        m = ((x - 0.25) * (x - 0.25) * w).mean()
        t = (x * 0.5 * w).sum()
        return m * 3.7 + t * 0.3

    gx, gw = _bitwise_as_without_runs(loss, a, b, monkeypatch)
    assert run_calls
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    tol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(gx, 7.4 * (a64 - 0.25) * b64 / n + 0.15 * b64, rtol=tol, atol=tol)
    np.testing.assert_allclose(gw, 3.7 * (a64 - 0.25) ** 2 / n + 0.15 * a64, rtol=tol, atol=tol)
