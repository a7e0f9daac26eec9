"""tapegrad.func: record once, replay compiled. Replays must equal eager recording on new
inputs for every row of the op table (values and gradients, float32 and float64); recorded
branch decisions are checked on replay and re-recorded when they change; tapes pickle and
replay in another process; compile() keeps autograd semantics."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.func as tf
from tapegrad import ops
from test_ops_table import FACADE, FROWS, FIDS, ROWS, IDS, _draw

rng = np.random.default_rng(7)


@pytest.mark.parametrize("op", FROWS, ids=FIDS)
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_replayed_grad_and_value_equals_eager(op, dtype):
    f, shapes = FACADE[op.name]
    w = rng.standard_normal(f(*[tg.tensor(_draw(op, s)) for s in shapes]).shape)
    wt = tg.tensor(w, dtype=dtype)

    def loss(*xs):
        return (f(*xs) * wt).sum()
    gv = tf.grad_and_value(loss, argnums=tuple(range(len(shapes))))
    tol = 1e-5 if dtype == tg.float32 else 1e-12
    for trial in range(3):                          # the first call records, then replays
        arrays = [_draw(op, s) for s in shapes]
        grads, value = gv(*[tg.tensor(a, dtype=dtype) for a in arrays])
        xs = [tg.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
        y = loss(*xs)
        y.backward()
        assert value.dtype == dtype
        np.testing.assert_allclose(value.numpy(), y.detach().numpy(), rtol=tol, atol=tol)
        for g, x in zip(grads, xs):
            assert g.dtype == dtype and g.shape == x.shape
            np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=10 * tol, atol=10 * tol)
    assert gv._cache.recordings == 1


def test_branch_flip_records_again_and_is_right():
    def f(x):
        if x.sum() > 0:
            return (x * x).sum()
        return x.exp().sum()
    g = tf.grad(f)
    np.testing.assert_allclose(g(tg.tensor([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_allclose(g(tg.tensor([3.0, 1.0])).numpy(), [6.0, 2.0])
    assert g._cache.recordings == 1
    np.testing.assert_allclose(g(tg.tensor([-1.0, -2.0])).numpy(), np.exp([-1.0, -2.0]), rtol=1e-6)
    assert g._cache.recordings == 2


def test_value_escaping_to_python_is_guarded():
    def f(x):
        k = int(x[0].item() > 1)                # an item() decision
        return (x * (k + 1)).sum()
    g = tf.grad(f)
    np.testing.assert_allclose(g(tg.tensor([2.0, 0.0])).numpy(), [2.0, 2.0])
    np.testing.assert_allclose(g(tg.tensor([0.5, 0.0])).numpy(), [1.0, 1.0])


def test_new_shape_is_a_new_signature():
    g = tf.grad(lambda x: (x * x).sum())
    g(tg.ones(3))
    g(tg.ones(4))
    g(tg.ones(3))
    assert g._cache.recordings == 2


def test_nested_arguments_and_aux():
    def f(params, x):
        return ((params["w"] * x).sum() + params["b"]).tanh(), x * 2
    p = {"w": tg.tensor([0.5, -0.5]), "b": tg.tensor(0.1)}
    x = tg.tensor([1.0, 2.0])
    g, (val, aux) = tf.grad_and_value(f, has_aux=True)(p, x)
    w = p["w"].detach().requires_grad_()
    b = p["b"].detach().requires_grad_()
    ((w * x).sum() + b).tanh().backward()
    np.testing.assert_allclose(g["w"].numpy(), w.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g["b"].numpy(), b.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(aux.numpy(), [2.0, 4.0])


def test_vjp_and_jacrev():
    A = rng.standard_normal((3, 4))

    def f(x):
        return (tg.tensor(A) @ x).sin()
    xv = rng.standard_normal(4)
    out, fn = tf.vjp(f, tg.tensor(xv))
    (gx,) = fn(tg.tensor(np.ones(3)))
    J = np.cos(A @ xv)[:, None] * A
    np.testing.assert_allclose(gx.numpy(), np.ones(3) @ J, rtol=1e-10)
    np.testing.assert_allclose(tf.jacrev(f)(tg.tensor(xv)).numpy(), J, rtol=1e-10)


def test_vmap_of_grad_and_value_equals_looping():
    def rosen(x):
        return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()
    X = rng.uniform(-1, 1, (6, 5))
    grads, vals = tf.vmap(tf.grad_and_value(rosen))(tg.tensor(X))
    for i in range(6):
        x = tg.tensor(X[i], requires_grad=True)
        y = rosen(x)
        y.backward()
        np.testing.assert_allclose(grads.numpy()[i], x.grad.numpy(), rtol=1e-12)
        assert vals.numpy()[i] == pytest.approx(y.item(), rel=1e-12)


def test_make_tape_listing_length_memory():
    t = tf.make_tape(lambda x, w: (x * w).tanh().sum(), tg.ones(3), tg.ones(3))
    text = str(t)
    assert len(t) == 3 and t.nbytes > 0
    assert "tanh" in text and "in0" in text and "TanhBackward0" in text
    np.testing.assert_allclose(t(tg.tensor([1.0, 2.0, 3.0]), tg.tensor([0.5, 0.5, 0.5])).numpy(),
                               np.tanh([0.5, 1.0, 1.5]).sum(), rtol=1e-6)


def test_pickled_tape_replays_in_a_subprocess(tmp_path):
    t = tf.make_tape(lambda x: (x.sin() * x).sum(), tg.ones(4, dtype=tg.float64))
    path = tmp_path / "tape.pkl"
    path.write_bytes(pickle.dumps(t))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import pickle, numpy as np, tapegrad as tg\n"
            "t = pickle.loads(open(%r, 'rb').read())\n"
            "xv = np.array([0.1, 0.2, 0.3, 0.4])\n"
            "X = t.forward([xv])\n"
            "(g,) = t.reverse(X, [np.array(1.0)])\n"
            "print(repr(t.outputs(X, [xv])[0].item()), list(g))\n" % str(path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=root), timeout=300)
    assert out.returncode == 0, out.stderr
    xv = np.array([0.1, 0.2, 0.3, 0.4])
    val, grad = out.stdout.split(" ", 1)
    assert float(val) == pytest.approx(np.sum(np.sin(xv) * xv), rel=1e-12)
    np.testing.assert_allclose(eval(grad), np.cos(xv) * xv + np.sin(xv), rtol=1e-12)


def test_compile_inside_an_eager_training_loop():
    def model(x, w, b):
        return ((x @ w + b).tanh() ** 2).mean()
    cm = tg.compile(model)
    X = tg.tensor(rng.standard_normal((8, 3)))
    w1 = tg.tensor(rng.standard_normal(3), requires_grad=True)
    w2 = tg.tensor(w1.detach().numpy().copy(), requires_grad=True)
    b1 = tg.tensor(0.1, requires_grad=True)
    b2 = tg.tensor(0.1, requires_grad=True)
    for _ in range(5):
        l1 = cm(X, w1, b1)
        l2 = model(X, w2, b2)
        assert l1.item() == pytest.approx(l2.item(), rel=1e-5)
        l1.backward()
        l2.backward()
        with tg.no_grad():
            for p in (w1, b1, w2, b2):
                p -= 0.1 * p.grad
                p.grad = None
    np.testing.assert_allclose(w1.detach().numpy(), w2.detach().numpy(), rtol=1e-5)
    assert cm._cache.recordings == 1


def test_replays_from_several_threads_do_not_mix():
    import threading
    g = tf.grad(lambda x: (x.sin() * x).sum())
    g(tg.ones(3, dtype=tg.float64))
    errors = []

    def work(k):
        for _ in range(100):
            xv = np.full(3, 0.1 * (k + 1))
            got = g(tg.tensor(xv)).numpy()
            want = np.cos(xv) * xv + np.sin(xv)
            if not np.allclose(got, want, rtol=1e-12):
                errors.append((k, got, want))
    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:2]
    assert g._cache.recordings == 1


# ----------------------------------------------------------------------------- batched vmap
def _eager_grad_and_value(loss, arrays, dtype):
    xs = [tg.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    y = loss(*xs)
    gs = tg.autograd.grad(y, xs, allow_unused=True)
    return [np.zeros(a.shape) if g is None else g.numpy() for g, a in zip(gs, arrays)], y.item()


@pytest.mark.parametrize("op", FROWS, ids=FIDS)
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_batched_vmap_equals_looped_eager(op, dtype):
    """vmap(grad_and_value(f)) runs in the batched interpreter (no fallback) and equals a
    loop of eager recordings, point by point, for every row of the op table."""
    f, shapes = FACADE[op.name]
    w = rng.standard_normal(f(*[tg.tensor(_draw(op, s)) for s in shapes]).shape)
    wt = tg.tensor(w, dtype=dtype)

    def loss(*xs):
        return (f(*xs) * wt).sum()
    P = 37                                           # not a multiple of the chunk size
    batches = [np.stack([_draw(op, s) for _ in range(P)]) for s in shapes]
    gv = tf.grad_and_value(loss, argnums=tuple(range(len(shapes))))
    grads, vals = tf.vmap(gv)(*[tg.tensor(b, dtype=dtype) for b in batches])
    ct = gv._cache.tapes[next(iter(gv._cache.tapes))][0]
    assert ct.batch_blocker() is None
    assert vals.shape == (P,) and vals.dtype == dtype
    tol = 2e-5 if dtype == tg.float32 else 1e-12
    for p in range(P):
        ref_g, ref_v = _eager_grad_and_value(loss, [b[p] for b in batches], dtype)
        np.testing.assert_allclose(vals.numpy()[p], ref_v, rtol=tol, atol=tol)
        for g, r in zip(grads, ref_g):
            assert g.dtype == dtype and g.shape == (P,) + r.shape
            np.testing.assert_allclose(g.numpy()[p], r, rtol=10 * tol, atol=10 * tol)
    assert gv._cache.recordings == 1


def test_batched_vmap_forward_in_dims_and_out_dims():
    w = tg.tensor([0.5, -1.0, 2.0])

    def f(x, y):
        return (x * w).tanh() + y.sum(), x.exp()
    X = rng.standard_normal((3, 50))                   # batch on dim 1
    Y = rng.standard_normal(4)                         # not batched
    a, b = tf.vmap(f, in_dims=(1, None), out_dims=(0, 1))(tg.tensor(X, dtype=tg.float32), tg.tensor(Y, dtype=tg.float32))
    assert a.shape == (50, 3) and b.shape == (3, 50) and a.dtype == tg.float32
    for p in range(50):
        ra, rb = f(tg.tensor(X[:, p], dtype=tg.float32), tg.tensor(Y, dtype=tg.float32))
        # float32: the compiled tanh and numpy's may differ by an ulp of the O(1) terms
        np.testing.assert_allclose(a.numpy()[p], ra.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(b.numpy()[:, p], rb.numpy(), rtol=1e-6)


def test_batched_vmap_branches_per_point():
    """Points on either side of a recorded branch each get the right answer (the batch is
    split among the recorded variants), in both orders of first point."""
    def f(x):
        if x.sum() > 0:
            return (x * x).sum()
        return x.exp().sum()
    for sign in (1, -1):
        X = rng.standard_normal((200, 3))
        X[0] = sign * np.abs(X[0])
        gv = tf.grad_and_value(f)
        g, v = tf.vmap(gv)(tg.tensor(X, dtype=tg.float64))
        pos = X.sum(1) > 0
        np.testing.assert_allclose(v.numpy(), np.where(pos, (X * X).sum(1), np.exp(X).sum(1)), rtol=1e-12)
        np.testing.assert_allclose(g.numpy(), np.where(pos[:, None], 2 * X, np.exp(X)), rtol=1e-12)
        assert gv._cache.recordings == 2
        tf.vmap(gv)(tg.tensor(X, dtype=tg.float64))  # both variants cached: no new recording
        assert gv._cache.recordings == 2


def test_batched_vmap_item_guard_and_captured_parameters():
    scale = tg.tensor([2.0], requires_grad=True)

    def f(x):
        k = 2.0 if x[0].item() > 0 else 3.0
        return (x * scale * k).sum()
    X = rng.standard_normal((64, 2))
    g = tf.vmap(tf.grad(f))
    out = g(tg.tensor(X)).numpy()
    k = np.where(X[:, 0] > 0, 2.0, 3.0)[:, None]
    np.testing.assert_allclose(out, np.broadcast_to(k * 2.0, X.shape), rtol=1e-6)
    with tg.no_grad():
        scale.mul_(0.5)                                 # captured tensors are read per call
    np.testing.assert_allclose(g(tg.tensor(X)).numpy(), np.broadcast_to(k, X.shape), rtol=1e-6)


def test_batched_vmap_matches_explicit_loop_on_an_mlp():
    rs = np.random.default_rng(3)
    W1, W2 = tg.tensor(rs.standard_normal((2, 16))), tg.tensor(rs.standard_normal((16, 1)))

    def f(x):
        return ((x @ W1).tanh() @ W2).tanh().sum()
    X = rs.standard_normal((300, 2))
    gb, vb = tf.vmap(tf.grad_and_value(f))(tg.tensor(X))
    loop = [tf.grad_and_value(f)(tg.tensor(X[p])) for p in range(300)]
    np.testing.assert_allclose(gb.numpy(), np.stack([r[0].numpy() for r in loop]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(vb.numpy(), [r[1].item() for r in loop], rtol=1e-5, atol=1e-6)


def test_vmap_falls_back_point_by_point_for_custom_functions():
    class Sq(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * g * x
    X = rng.standard_normal((5, 3))
    out = tf.vmap(lambda x: Sq.apply(x).sum())(tg.tensor(X))
    np.testing.assert_allclose(out.numpy(), (X * X).sum(1), rtol=1e-6)


def test_vmap_bad_sizes_raise_value_error():
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        tf.vmap(lambda a, b: a + b)(tg.ones(3, 2), tg.ones(4, 2))


def test_integer_arguments_are_part_of_the_signature():
    g = tf.grad(lambda x, i: x[i].sum())
    x = tg.tensor([1.0, 2.0, 3.0])
    np.testing.assert_allclose(g(x, tg.tensor([0, 0])).numpy(), [2.0, 0.0, 0.0])
    np.testing.assert_allclose(g(x, tg.tensor([2])).numpy(), [0.0, 0.0, 1.0])


@pytest.mark.parametrize("c", [0.0, 1.0, 2.0, 3.0, 0.5, -1.0, 2.5])
def test_pow_scalar_special_exponents_match_numpy(c):
    x = rng.uniform(0.5, 2.0, 40)
    ct = tf.make_tape(lambda t: (t ** c).sum(), tg.tensor(x, dtype=tg.float64))
    (o,), (g,), ok = ct.batch([x[None]], [True], 1, [(np.ones(1), False)])
    assert o[0] == pytest.approx(np.sum(x ** c), rel=1e-14)
    np.testing.assert_allclose(g[0], c * x ** (c - 1) if c != 0 else 0 * x, rtol=1e-14)


def test_batched_vmap_nested_arguments_argnums_and_aux():
    """Nested (dict) arguments, several argnums, has_aux, a negative in_dim: batched result
    equals the transform applied point by point."""
    def f(p, x):
        y = (p["w"] * x).sum() + p["b"]
        return y.tanh(), x * 2
    rs = np.random.default_rng(5)
    W, Bv, X = rs.standard_normal((20, 3)), rs.standard_normal(20), rs.standard_normal((3, 20))
    gv = tf.grad_and_value(f, argnums=(0, 1), has_aux=True)
    (gp, gx), (val, aux) = tf.vmap(gv, in_dims=(0, -1))(
        {"w": tg.tensor(W), "b": tg.tensor(Bv)}, tg.tensor(X))
    assert gp["w"].shape == (20, 3) and gx.shape == (20, 3) and aux.shape == (20, 3)
    for p in range(20):
        (rp, rx), (rv, ra) = tf.grad_and_value(f, argnums=(0, 1), has_aux=True)(
            {"w": tg.tensor(W[p]), "b": tg.tensor(Bv[p])}, tg.tensor(X[:, p]))
        np.testing.assert_allclose(gp["w"].numpy()[p], rp["w"].numpy(), rtol=1e-12)
        np.testing.assert_allclose(gp["b"].numpy()[p], rp["b"].numpy(), rtol=1e-12)
        np.testing.assert_allclose(gx.numpy()[p], rx.numpy(), rtol=1e-12)
        assert val.numpy()[p] == pytest.approx(rv.item(), rel=1e-12)
        np.testing.assert_allclose(aux.numpy()[p], ra.numpy(), rtol=1e-12)


def test_batched_vmap_of_unused_input_gives_zeros_and_float32_lanes():
    def f(x, y):
        return (x * x).sum()
    X = np.random.default_rng(6).standard_normal((70, 4)).astype(np.float32)
    g = tf.vmap(tf.grad(f, argnums=(0, 1)))(tg.tensor(X), tg.tensor(X))
    np.testing.assert_allclose(g[0].numpy(), 2 * X, rtol=1e-6)
    assert g[1].dtype == tg.float32 and not g[1].numpy().any()


def test_batched_vmap_non_scalar_output_of_grad_raises_like_torch():
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar"):
        tf.vmap(tf.grad(lambda x: x * 2))(tg.ones(5, 3))


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_replay_of_large_transcendental_entries_runs_their_forward_on_vector_math(dtype):
    """tanh/exp over >= 1024 elements replay their forward on libmvec inside the compiled
    sweep when _native has it (else with numpy's ufuncs, listed as "numpy forward") and their
    VJP compiled; sin over >= 2048 runs its VJP compiled too where libmvec computes the cos
    (ops.Op.native_vjp), else forward and VJP on numpy (ops.Op.np_vjp_from); values and
    gradients equal eager recording."""
    from tapegrad._compiled import _vmath
    def f(x):
        return (x.tanh() * x.exp() + x.sin()).sum()
    gv = tf.grad_and_value(f)
    for trial in range(3):
        a = rng.standard_normal(3000)
        g, v = gv(tg.tensor(a, dtype=dtype))
        x = tg.tensor(a, dtype=dtype, requires_grad=True)
        y = f(x)
        y.backward()
        tol = 1e-5 if dtype == tg.float32 else 1e-12
        assert v.item() == pytest.approx(y.item(), rel=tol)
        np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=tol, atol=tol)
    ct = gv._cache.tapes[next(iter(gv._cache.tapes))][0]
    listing = str(ct)
    assert listing.count("(numpy forward)") == (0 if _vmath.OK else 2)
    assert listing.count("(numpy)") == (0 if _vmath.OK else 1)
    if not _vmath.OK:
        assert "sin " in [ln for ln in listing.splitlines() if ln.endswith("(numpy)")][0]


def test_scalar_plan_covers_gather_sum_and_reads_referenced_constants_at_each_call():
    """Scalar graphs (one-element entries: indexing a vector, sums into one element, binary
    entries with constants) replay through the scalar plan; a captured constant array is
    read at every call (an in-place change is seen), as by the general replay; a graph with
    a vector entry does not use the scalar plan and agrees too."""
    c = tg.tensor([2.0], dtype=tg.float64)

    def f(w, c=c):
        s = w.sum() * 0.5 + w[1:2].sum(dim=0)
        for i in range(3):
            s = s + (w[i:i + 1] * c).sum() * w[i + 1]
        return s.tanh()

    def eager(w, cv):
        x = tg.tensor(w, requires_grad=True)
        y = f(x, tg.tensor([cv], dtype=tg.float64))
        y.backward()
        return float(y), x.grad.numpy()

    gv = tf.grad_and_value(f)
    rs = np.random.default_rng(5)
    w0 = rs.uniform(-1, 1, 4)
    gv(tg.tensor(w0))
    (ct,) = [v[0] for v in gv._cache.tapes.values()]
    assert ct._sp is not None
    for cv in (2.0, 3.5):
        with tg.no_grad():
            c.fill_(cv)
        w = rs.uniform(-1, 1, 4)
        g, v = gv(tg.tensor(w))
        v_ref, g_ref = eager(w, cv)
        np.testing.assert_allclose(float(v), v_ref, rtol=1e-13)
        np.testing.assert_allclose(g.numpy(), g_ref, rtol=1e-12, atol=1e-14)
        cc = tg.tensor([cv], dtype=tg.float64)
        fd = np.array([(float(f(tg.tensor(w + e), cc)) - float(f(tg.tensor(w - e), cc))) / 2e-6
                       for e in np.eye(4) * 1e-6])
        np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6, atol=1e-8)
    # a vector entry: the general sweeps
    gv2 = tf.grad_and_value(lambda w: (w * w).sum())
    g2, _ = gv2(tg.tensor(w0))
    (ct2,) = [v[0] for v in gv2._cache.tapes.values()]
    assert ct2._sp is None
    np.testing.assert_allclose(g2.numpy(), 2 * w0)


def _captured_cases():
    """(name, make(const_holder) -> f, new constant value) for captured constant tensors."""
    return [
        ("0-dim", lambda c: (lambda x: (x * c[0] + c[0]).tanh().sum()), 3.5),
        ("vector", lambda c: (lambda x: ((x * c[0]) ** 2).sum()), 3.5),
        ("promoted", lambda c: (lambda x: (x * c[0]).sin().sum()), 3.5),
        ("matrix", lambda c: (lambda x: (c[0] @ x).tanh().sum()), 3.5),
    ]


@pytest.mark.parametrize("case", range(4), ids=["0-dim", "vector", "promoted", "matrix"])
@pytest.mark.parametrize("change", ["inplace", "rebind_data"])
def test_captured_constant_tensors_are_read_at_every_call(case, change):
    """A tensor f captures (no grad) is read at each replay, as torch.func reads it at each
    call: after fill_ or a new .data, grad, vmap(grad) and compile replays match an eager
    evaluation with the new value (float64 reference, then central differences)."""
    name, make, newv = _captured_cases()[case]
    if name == "0-dim":
        c = tg.tensor(2.0, dtype=tg.float64)
        x0 = np.array(0.3)
    elif name == "vector":
        c = tg.tensor([2.0, -1.0, 0.5], dtype=tg.float64)
        x0 = np.array([0.3, 0.1, -0.2])
    elif name == "promoted":
        c = tg.tensor([2.0, -1.0, 0.5], dtype=tg.float32)   # float64 function: converted copy
        x0 = np.array([0.3, 0.1, -0.2])
    else:
        c = tg.tensor(np.arange(6.0).reshape(2, 3) / 5, dtype=tg.float64)
        x0 = np.array([0.3, 0.1, -0.2])
    holder = [c]
    f = make(holder)
    g = tf.grad(f)
    vg = tf.vmap(tf.grad(f))
    X0 = np.stack([x0, x0 * 2])
    g(tg.tensor(x0))
    vg(tg.tensor(X0))
    if change == "inplace":
        with tg.no_grad():
            c.mul_(newv)
    else:
        c.data = c.data * newv

    def eager(x):
        t = tg.tensor(x, requires_grad=True)
        f(t).backward()
        return t.grad.numpy()
    x1 = x0 + 0.05
    np.testing.assert_allclose(g(tg.tensor(x1)).numpy(), eager(x1), rtol=1e-12, atol=1e-14)
    X1 = X0 + 0.05
    np.testing.assert_allclose(vg(tg.tensor(X1)).numpy(), np.stack([eager(r) for r in X1]),
                               rtol=1e-12, atol=1e-14)
    fd = np.array([(float(f(tg.tensor(x1 + e))) - float(f(tg.tensor(x1 - e)))) / 2e-6
                   for e in np.eye(x1.size).reshape((x1.size,) + x1.shape) * 1e-6]).reshape(x1.shape)
    np.testing.assert_allclose(g(tg.tensor(x1)).numpy(), fd, rtol=1e-6, atol=1e-8)
    # the signature's fast call is made again on the tape's new plan and reads the new value
    g(tg.tensor(x1))
    got = g._cache.fast((tg.tensor(x1),))
    assert got is not None
    np.testing.assert_allclose(got[0].numpy(), eager(x1), rtol=1e-12, atol=1e-14)


def test_a_guard_on_a_captured_tensor_sees_its_new_value():
    """A branch decided by comparing with a captured tensor is re-decided when the tensor
    changes (the guard reads the tensor at each call)."""
    thr = tg.tensor(0.0, dtype=tg.float64)

    def f(x):
        return x * 2 if bool(x.sum() > thr) else x * 3

    g = tf.grad(lambda x: f(x).sum())
    x = tg.tensor([0.5, 0.25], dtype=tg.float64)
    np.testing.assert_allclose(g(x).numpy(), [2.0, 2.0])
    with tg.no_grad():
        thr.fill_(5.0)
    np.testing.assert_allclose(g(x).numpy(), [3.0, 3.0])


def test_a_leaf_the_function_creates_keeps_its_value_on_replay():
    """A tensor requiring grad that f creates itself is a leaf of the tape that is gone after
    the recording: replays use its value (they used zeros before), also after pickling."""
    import pickle

    def f(x):
        w = tg.tensor([1.0, -2.0, 0.5], dtype=tg.float64, requires_grad=True)
        return (x * w).sin().sum()

    gv = tf.grad_and_value(f)
    for x in ([0.1, 0.2, 0.3], [0.4, -0.1, 1.0]):
        g, v = gv(tg.tensor(x, dtype=tg.float64))
        w = np.array([1.0, -2.0, 0.5])
        np.testing.assert_allclose(float(v), np.sin(np.array(x) * w).sum(), rtol=1e-14)
        np.testing.assert_allclose(g.numpy(), w * np.cos(np.array(x) * w), rtol=1e-14)
    ct = tf.make_tape(f, tg.tensor([0.1, 0.2, 0.3], dtype=tg.float64))
    ct2 = pickle.loads(pickle.dumps(ct))
    x = np.array([0.3, 0.2, 0.1])
    X = ct2.forward([x])
    (out,) = ct2.outputs(X, [x])
    np.testing.assert_allclose(float(out), np.sin(x * np.array([1.0, -2.0, 0.5])).sum(), rtol=1e-14)


W_GLOBAL = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)


def _uses_global(x):
    return (x * W_GLOBAL).tanh().sum()


def test_rebinding_a_name_the_function_uses_records_it_again():
    """Replays hold the tensors f named when it was recorded; rebinding such a global or
    closure variable to another tensor (the functional SGD step `w = w - lr * g`) makes the
    next call record f again instead of replaying with the old tensor."""
    global W_GLOBAL
    g = tf.grad(_uses_global)
    x = tg.tensor([0.3, -0.4], dtype=tg.float64)

    def expect(w):
        return w * (1 - np.tanh(x.numpy() * w) ** 2)
    np.testing.assert_allclose(g(x).numpy(), expect(np.array([1.0, 2.0])), rtol=1e-14)
    old = W_GLOBAL
    W_GLOBAL = tg.tensor([3.0, -1.0], dtype=tg.float64, requires_grad=True)
    try:
        np.testing.assert_allclose(g(x).numpy(), expect(np.array([3.0, -1.0])), rtol=1e-14)
        np.testing.assert_allclose(tf.vmap(g)(tg.stack([x, x])).numpy()[1],
                                   expect(np.array([3.0, -1.0])), rtol=1e-14)
    finally:
        W_GLOBAL = old

    w = tg.tensor([0.5, 0.25], dtype=tg.float64, requires_grad=True)

    def loss(x):
        return ((x * w) ** 2).sum()
    gl = tf.grad(loss)
    np.testing.assert_allclose(gl(x).numpy(), 2 * x.numpy() * w.detach().numpy() ** 2, rtol=1e-14)
    for _ in range(3):                    # functional SGD on w, rebinding the closure variable
        with tg.no_grad():
            w = w - 0.1 * tg.ones(2, dtype=tg.float64)
        w.requires_grad_(True)
        np.testing.assert_allclose(gl(x).numpy(), 2 * x.numpy() * w.detach().numpy() ** 2,
                                   rtol=1e-14)


def _fd_grad(f, w, h=1e-6):
    return np.array([(float(f(tg.tensor(w + e))) - float(f(tg.tensor(w - e)))) / (2 * h)
                     for e in np.eye(w.size).reshape((w.size,) + w.shape) * h]).reshape(w.shape)


def test_scalar_plan_aliases_one_element_slices_except_outputs_and_guarded_nodes():
    """In the scalar plan a one-element slice (w[i]) gets no row of its own: its node reads
    the operand's element. Slices of slices, a slice that is itself an output (its value and
    the cotangent seeded into it) and a slice a branch guard reads must still be right."""
    def f(w):
        a = w[3:4][0]                     # a slice of a slice (element 3)
        s = w[0] * a + w[1] * w[1]
        if w[4] > 0:                      # a guard reads the slice w[4]
            s = s + w[4].tanh()
        else:
            s = s - w[5] * 3.0
        return s, w[5]                    # w[5]: an output that is a slice

    gv = tf.grad_and_value(lambda w: f(w)[0] + 2.0 * f(w)[1])
    j = tf.vjp
    rs = np.random.default_rng(11)
    for trial in range(6):
        w = rs.uniform(-1, 1, 7)
        w[4] = (-1) ** trial * abs(w[4])         # both branches, flipping
        g, v = gv(tg.tensor(w))
        ref = lambda t: f(t)[0] + 2.0 * f(t)[1]  # noqa: E731
        x = tg.tensor(w, requires_grad=True)
        y = ref(x)
        y.backward()
        np.testing.assert_allclose(float(v), float(y), rtol=1e-13)
        np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(g.numpy(), _fd_grad(ref, w), rtol=1e-6, atol=1e-8)
    cts = [c for vs in gv._cache.tapes.values() for c in vs]
    assert cts and all(c._sp is not None for c in cts)
    assert any((c._sp[5] < 0).any() for c in cts)      # some slices were aliased
    # an output that is a slice: its value and its own cotangent
    (out, w5), fn = j(f, tg.tensor(np.arange(7.0) / 10))
    (gw,) = fn((tg.tensor(0.0, dtype=tg.float64), tg.tensor(1.0, dtype=tg.float64)))
    np.testing.assert_allclose(float(w5), 0.5)
    np.testing.assert_allclose(gw.numpy(), np.eye(7)[5])


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_batched_plan_aliases_contiguous_slices(dtype):
    """The batched plan gives contiguous slices no lanes (F_ALIAS): Rosenbrock-style
    shifted slices, a slice of a slice, a row of a matrix, a slice returned as an output
    and a slice read twice, against the eager loop and finite differences."""
    def f(x):                             # x: (3, 5)
        a, b = x[0, :-1], x[0, 1:]
        r = x[1]
        m = r[1:4][1:]                    # slice of a slice
        s = (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum() + (m * m * r[0]).sum()
        return s + (x[2, 2:] * x[2, :3]).sum(), x[2, 1:3]

    tol = 2e-4 if dtype == tg.float32 else 1e-11
    rs = np.random.default_rng(3)
    X = rs.uniform(-1, 1, (40, 3, 5))
    vg = tf.vmap(tf.grad_and_value(lambda x: f(x)[0]))
    fw = tf.vmap(f)
    g, v = vg(tg.tensor(X, dtype=dtype))
    (o0, o1) = fw(tg.tensor(X, dtype=dtype))
    assert g.dtype == dtype and g.shape == (40, 3, 5)
    for p in range(0, 40, 7):
        x = tg.tensor(X[p], dtype=tg.float64, requires_grad=True)
        s, sl = f(x)
        s.backward()
        np.testing.assert_allclose(float(v[p]), float(s), rtol=tol, atol=tol)
        np.testing.assert_allclose(float(o0[p]), float(s), rtol=tol, atol=tol)
        np.testing.assert_allclose(o1[p].numpy(), sl.detach().numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(g[p].numpy(), x.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(g[0].numpy().astype(np.float64),
                               _fd_grad(lambda t: f(t)[0], X[0]), rtol=max(tol, 1e-6), atol=1e-6)
    # the plan really aliased the slices
    rec = tf.make_tape(lambda x: f(x)[0], tg.tensor(X[0], dtype=dtype))
    Eb = rec._batch_plan()[0].reshape(-1, tf.K)
    from tapegrad._schema import F_ALIAS
    assert np.count_nonzero(Eb[:, tf.FL] & F_ALIAS) >= 6


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_batched_plan_folds_scalar_constants(dtype):
    """The batched plan rewrites x * x to pow_scalar and mul / add / sub with a scalar
    constant (either side) to scale / add_scalar / rsub_scalar: the batch must equal eager
    recording point by point (values exactly, gradients within a rounding), in both dtypes.
    A captured 0-dim tensor stays an operand: changing it changes the batched result (its
    ``.data`` replaced before the first call too: the refresh once made such a value 1-dim
    with np.ascontiguousarray and refused it as a changed shape)."""
    rs = np.random.default_rng(5)
    X = rs.uniform(-2, 2, (37, 6))
    k = tg.tensor(0.5, dtype=dtype)                 # captured, refreshed on every call

    def f(x):
        a, b = x[:-1], x[1:]
        t = 100 * (b - a * a) ** 2 + (1 - a) ** 2
        u = (a + 2.5) * (0.5 + b) - (a - 3.0) * 2 + b * 0.25 - (b / 4.0)
        return (t + u * k).sum()
    vg = tf.vmap(tf.grad_and_value(f))
    tol = 1e-12 if dtype == tg.float64 else 1e-5
    for kv in (0.5, -1.25):
        k.data = tg.tensor(kv, dtype=dtype)
        g, v = vg(tg.tensor(X, dtype=dtype))
        assert g.dtype == dtype and g.shape == X.shape
        for p in range(37):
            x = tg.tensor(X[p], dtype=dtype, requires_grad=True)
            y = f(x)
            y.backward()
            np.testing.assert_allclose(float(v[p]), float(y), rtol=tol, atol=tol)
            np.testing.assert_allclose(g[p].numpy(), x.grad.numpy(), rtol=tol, atol=tol)
    rec = tf.make_tape(f, tg.tensor(X[0], dtype=dtype))
    E = rec.E.reshape(-1, tf.K)
    Eb = rec._batch_plan()[0].reshape(-1, tf.K)
    names = [ops.OPS[int(o)].name for o in Eb[:, tf.OP]]
    before = [ops.OPS[int(o)].name for o in E[:, tf.OP]]
    assert names.count("add_scalar") == 3 and names.count("rsub_scalar") == 1
    assert names.count("scale") == before.count("scale") + 3      # 100 *, * 2, * 0.25
    assert names.count("pow_scalar") == before.count("pow_scalar") + 1   # a * a
    assert names.count("div") == 1                                  # b / 4.0 is kept
    # u * k: k is refreshed per call, so that product stays a binary entry with a const lane
    assert "mul" in names


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_replay_with_blas_products_reuses_numpy_steps_on_new_values(dtype, monkeypatch):
    """Products recorded with F_BIG (>= _blas.MIN multiply-adds; forced here for small ones)
    run on BLAS in a replay, forward and VJP through numpy steps whose views are made once per thread: repeated calls on new values (and a
    captured constant matrix changed in place between calls) must match eager backward, for
    both operands' gradients; a vjp closure (its own value store) agrees too. (sin's VJP
    over 2,048 elements is kept on numpy, as without libmvec: Op.native_vjp off.)"""
    import sys
    tt = sys.modules["tapegrad._record"]
    monkeypatch.setattr(tt, "_NATIVE_VJP", [False] * len(tt._NATIVE_VJP))
    # products this small run compiled in eager sweeps too; recorded as the big ones
    # (>= _blas.MIN multiply-adds: F_BIG), their replay takes the numpy steps
    from tapegrad._compiled import _blas
    monkeypatch.setattr(_blas, "MIN", 1 << 15)
    rs = np.random.default_rng(2)
    C = tg.tensor(rs.standard_normal((64, 64)) / 8, dtype=dtype)     # a captured constant

    def f(W1, b1, x, W2):
        h = (x @ W1 + b1).tanh()
        h = (h @ C).sin()                     # constant right operand
        return ((h @ W2) ** 2).mean()

    gv = tf.grad_and_value(f, argnums=(0, 1, 2, 3))
    tol = 2e-4 if dtype == tg.float32 else 1e-10
    for trial in range(4):
        if trial == 2:
            with tg.no_grad():
                C.mul_(1.5)
        arrays = [rs.standard_normal((64, 64)) / 8, rs.standard_normal(64) / 8,
                  rs.standard_normal((32, 64)), rs.standard_normal((64, 64)) / 8]
        grads, value = gv(*[tg.tensor(a, dtype=dtype) for a in arrays])
        xs = [tg.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
        y = f(*xs)
        y.backward()
        np.testing.assert_allclose(float(value), float(y), rtol=tol, atol=tol)
        for g, x in zip(grads, xs):
            scale = np.abs(x.grad.numpy()).max()
            np.testing.assert_allclose(g.numpy(), x.grad.numpy(), rtol=tol, atol=tol * scale)
    (ct,) = [v[0] for v in gv._cache.tapes.values()]
    assert not ct._plan()[3]                   # BLAS entries: not the single compiled sweep
    sc = ct._scratch()                         # (this thread's prepared numpy steps)
    assert any(fn is not None for fn in sc.steps.values())
    assert any(fn is not None for fn in sc.rsteps.values())
    out, fn = tf.vjp(f, *[tg.tensor(a, dtype=dtype) for a in arrays])
    g2 = fn(tg.tensor(1.0, dtype=dtype))
    np.testing.assert_allclose(float(out), float(value), rtol=tol)
    for a, b in zip(g2, grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol * np.abs(b.numpy()).max())


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_gradients_of_some_arguments_skip_the_others(dtype):
    """grad_and_value(f, argnums) computes only the requested arguments' gradients: the
    reverse plan flags the operands no requested input reaches (F_NOGA / F_NOGB) and skips
    entries that serve only the others (x.tanh() here), and the requested gradients equal
    eager backward with only those arguments requiring grad. ``CompiledTape.reverse`` with
    ``wanted`` gives None for the others; without it, every input's gradient."""
    from tapegrad._schema import F_NOGA, F_NOGB, FL, K

    def f(W, x, b):
        return ((x.tanh() @ W + b).sin() * x.sum()).sum()
    rs = np.random.default_rng(3)
    tol = 2e-4 if dtype == tg.float32 else 1e-10
    for argnums in (0, (0, 2), (1,), (0, 1, 2)):
        gv = tf.grad_and_value(f, argnums=argnums)
        nums = (argnums,) if isinstance(argnums, int) else argnums
        for trial in range(2):
            arrays = [rs.standard_normal((40, 30)) / 5, rs.standard_normal((20, 40)),
                      rs.standard_normal(30)]
            g, v = gv(*[tg.tensor(a, dtype=dtype) for a in arrays])
            xs = [tg.tensor(a, dtype=dtype, requires_grad=i in nums) for i, a in enumerate(arrays)]
            y = f(*xs)
            y.backward()
            assert float(v) == pytest.approx(float(y), rel=tol, abs=tol)
            for got, i in zip((g,) if isinstance(argnums, int) else g, nums):
                ref = xs[i].grad.numpy()
                np.testing.assert_allclose(got.numpy(), ref, rtol=tol, atol=tol * np.abs(ref).max())
        (ct,) = [v[0] for v in gv._cache.tapes.values()]
        wanted = frozenset(nums)
        E = ct._wanted_args(ct._plan()[0], wanted)[0].reshape(-1, K)
        skipped = int(((E[:, FL] & F_NOGA) != 0).__and__((E[:, FL] & F_NOGB) != 0).sum())
        # skipped: x.tanh() and x.sum() unless x is wanted, b's broadcast unless b is
        assert skipped == (0 if 1 in wanted else 2) + (0 if 2 in wanted else 1)
        X = ct.forward([a.astype(dtype.np) for a in arrays])
        seed = [np.ones((), dtype.np)]
        some, every = ct.reverse(X, seed, wanted), ct.reverse(X, seed)
        assert all((s is None) == (i not in wanted) for i, s in enumerate(some))
        assert all(e is not None for e in every)
        for i in wanted:
            np.testing.assert_allclose(some[i], every[i], rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------- fast calls
def test_signature_matcher_accepts_exactly_the_recorded_signature():
    """The generated check of a repeated call's arguments (``_matcher``) returns the leaves in
    the signature walk's order for the same signature, and None for any difference the
    signature walk would see: structure, container type, dict keys, static values, shapes,
    dtypes; no matcher for integer tensors (their values are part of the signature)."""
    a = tg.ones(2, 3)
    b = tg.zeros(3, dtype=tg.float64)
    args = ([a, (b, 2)], {"k": tg.ones(1), "j": None}, "mode", 0.5)
    m = tf._matcher(args)
    leaves, toks = [], []
    tf._signature(args, leaves, toks, tg.Tensor)
    a2, b2, k2 = tg.zeros(2, 3), tg.ones(3, dtype=tg.float64), tg.zeros(1)
    got = m(([a2, (b2, 2)], {"j": None, "k": k2}, "mode", 0.5))
    assert got is not None and [t is u for t, u in zip(got, (a2, b2, k2))] == [True] * 3
    assert [t is u for t, u in zip(m(args), leaves)] == [True] * 3
    for other in (
            ([a, [b, 2]], {"k": tg.ones(1), "j": None}, "mode", 0.5),            # tuple -> list
            ([a, (b, 2), b], {"k": tg.ones(1), "j": None}, "mode", 0.5),         # length
            ([a, (b, 3)], {"k": tg.ones(1), "j": None}, "mode", 0.5),            # static int
            ([a, (b, 2.0)], {"k": tg.ones(1), "j": None}, "mode", 0.5),          # int -> float
            ([a, (b, True)], {"k": tg.ones(1), "j": None}, "mode", 0.5),         # int -> bool
            ([a, (b, 2)], {"k": tg.ones(1), "i": None}, "mode", 0.5),            # dict key
            ([a, (b, 2)], {"k": tg.ones(1), "j": 0}, "mode", 0.5),               # None -> 0
            ([a, (b, 2)], {"k": tg.ones(1), "j": None}, "mod", 0.5),             # str
            ([a, (b, 2)], {"k": tg.ones(1), "j": None}, "mode", -0.5),           # float
            ([a, (b, 2)], {"k": tg.ones(2), "j": None}, "mode", 0.5),            # shape
            ([a, (b.float(), 2)], {"k": tg.ones(1), "j": None}, "mode", 0.5),    # dtype
            ([a, (b, 2)], {"k": tg.ones(1), "j": None}, "mode"),                 # arity
            ([a.reshape(3, 2), (b, 2)], {"k": tg.ones(1), "j": None}, "mode", 0.5)):
        assert m(other) is None, other
        lv, tk = [], []
        tf._signature(other, lv, tk, tg.Tensor)
        assert tuple(tk) != tuple(toks)         # the walk sees the same differences
    assert tf._matcher((tg.ones(2), tg.tensor([1, 2]))) is None    # an integer tensor


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
@pytest.mark.parametrize("shape", ["batch", "scalar"])
def test_repeated_grad_and_value_calls_take_the_fast_call_and_equal_eager(dtype, shape):
    """From the second call of a signature, grad_and_value runs its fast call (matcher, one
    forward, one reverse, prebuilt result trees). Every call's gradient trees and value must
    equal eager autograd's on that call's values; results of earlier calls keep their values;
    a new signature (static value, shape) records once, and calls switching back to an old
    signature replay its tape (no new recording)."""
    def f(params, x, scale, aux):
        h = x
        for W, b in params["layers"]:
            h = (h @ W + b).tanh() if shape == "batch" else (h * W + b).tanh()
        loss = (h * h).sum() * scale
        return (loss, h) if aux else loss

    def eager(params, x, scale, aux, argnums):
        leaves = [[(W.detach().requires_grad_(), b.detach().requires_grad_())
                   for W, b in params["layers"]], x.detach().requires_grad_()]
        out = f({"layers": leaves[0]}, leaves[1], scale, aux)
        loss = out[0] if aux else out
        flat = [t for Wb in leaves[0] for t in Wb] + [leaves[1]]
        gs = tg.autograd.grad(loss, flat)
        return [g.numpy() for g in gs], out

    def draw(n, m):
        if shape == "batch":
            return ({"layers": [(tg.tensor(rng.standard_normal((m, m)) / m, dtype=dtype),
                                 tg.tensor(rng.standard_normal(m), dtype=dtype))
                                for _ in range(2)]},
                    tg.tensor(rng.standard_normal((n, m)), dtype=dtype))
        return ({"layers": [(tg.tensor(rng.standard_normal(()), dtype=dtype),
                             tg.tensor(rng.standard_normal(()), dtype=dtype)) for _ in range(2)]},
                tg.tensor(rng.standard_normal(()), dtype=dtype))

    tol = dict(rtol=2e-5, atol=1e-6) if dtype == tg.float32 else dict(rtol=1e-12, atol=1e-13)
    for argnums, aux in ((0, False), ((0, 1), True)):
        gv = tf.grad_and_value(f, argnums=argnums, has_aux=aux)
        kept = []
        for call in range(6):
            scale = 0.5 if call != 3 else 2.0           # call 3: another static value
            n = 4 if call != 4 else 3                   # call 4: another batch size
            params, x = draw(n, 5)
            g, v = gv(params, x, scale, aux)
            want, wout = eager(params, x, scale, aux, argnums)
            gp = g if argnums == 0 else g[0]
            got = [t.numpy() for Wb in gp["layers"] for t in Wb]
            if argnums != 0:
                got.append(g[1].numpy())
            else:
                want = want[:-1]
            for a, b in zip(got, want):
                assert a.dtype == b.dtype and a.shape == b.shape
                np.testing.assert_allclose(a, b, **tol)
            if aux:
                np.testing.assert_allclose(v[0].numpy(), wout[0].detach().numpy(), **tol)
                np.testing.assert_allclose(v[1].numpy(), wout[1].detach().numpy(), **tol)
                assert v[0].dtype == dtype and v[0].shape == ()
            else:
                np.testing.assert_allclose(v.numpy(), wout.detach().numpy(), **tol)
                assert v.dtype == dtype and v.shape == () and v.grad_fn is None
            kept.append((got[0].copy(), got[0]))
        assert all((a == b).all() for a, b in kept)     # no result was overwritten later
        assert gv._cache.recordings == (3 if shape == "batch" else 2)
        assert all(fp is not None for fp in gv._cache.fasts.values())
        g2, _ = gv._cache.fast((params, x, scale, aux))         # the fast call ran the last
        np.testing.assert_array_equal(                          # call: it gives its result
            (g2 if argnums == 0 else g2[0])["layers"][0][0].numpy(), got[0])


def _scaled_sq(x, scale=1.0, shift=None):
    y = x * x * scale
    if shift is not None:
        y = y + shift * x
    return y.sum()


@pytest.mark.parametrize("kw", [dict(scale=2.0), dict(scale=3.0), dict(scale=2.0, shift=0.5),
                                dict(scale="tensor"), dict(scale=2.0, shift="tensor")])
def test_keyword_arguments_pass_through_undifferentiated(kw):
    """torch.func.grad / grad_and_value / vmap pass keyword arguments to func (not
    differentiated, not batched); each new value is used, never a recorded one (GradBench's
    ``tf.grad(f)(x, scale=2.0)`` raised TypeError)."""
    def made(lib):
        return {k: (lib.tensor([0.5, -1.5]) if v == "tensor" else v) for k, v in kw.items()}

    x = np.array([1.0, -2.0])
    k = made(tg)
    s = k["scale"]._data if isinstance(k["scale"], tg.Tensor) else k["scale"]
    sh = k.get("shift")
    sh = 0.0 if sh is None else (sh._data if isinstance(sh, tg.Tensor) else sh)
    want_g = 2 * x * s + sh                              # d/dx sum(s x^2 + sh x)
    want_v = (x * x * s + sh * x).sum()
    for _ in range(2):                                   # the second call replays
        g = tf.grad(_scaled_sq)(tg.tensor(x), **k)
        g2, v = tf.grad_and_value(_scaled_sq)(tg.tensor(x), **k)
        np.testing.assert_allclose(g.numpy(), want_g)
        np.testing.assert_allclose(g2.numpy(), want_g)
        np.testing.assert_allclose(v.item(), want_v)
    X = np.array([[1.0, -2.0], [0.5, 3.0], [-1.0, 0.0]])
    gv = tf.vmap(tf.grad(_scaled_sq))(tg.tensor(X), **k)
    np.testing.assert_allclose(gv.numpy(), 2 * X * s + sh)
    vv = tf.vmap(_scaled_sq)(tg.tensor(X), **k)
    np.testing.assert_allclose(vv.numpy(), (X * X * s + sh * X).sum(1))
    torch = pytest.importorskip("torch")
    from torch import func as TF
    tk = made(torch)
    np.testing.assert_allclose(g.numpy(), TF.grad(_scaled_sq)(torch.tensor(x), **tk).numpy())
    np.testing.assert_allclose(gv.numpy(), TF.vmap(TF.grad(_scaled_sq))(torch.tensor(X), **tk).numpy())


def test_keyword_arguments_a_new_value_is_never_a_replayed_constant():
    G = tf.grad_and_value(_scaled_sq)
    x = tg.tensor([1.0, 2.0])
    for s in (2.0, 3.0, 2.0, -1.0):
        g, v = G(x, scale=s)
        np.testing.assert_allclose(g.numpy(), [2 * s, 4 * s])
        assert v.item() == 5 * s
    s = tg.tensor(5.0)
    assert G(x, scale=s)[1].item() == 25.0
    s.mul_(2)                                            # changed in place: read again
    assert G(x, scale=s)[1].item() == 50.0
    with pytest.raises(TypeError):
        tf.grad(_scaled_sq)(x, nope=1.0)
    with pytest.raises(RuntimeError):
        tf.grad(_scaled_sq, argnums=1)(x, scale=2.0)    # argnums counts positional arguments
