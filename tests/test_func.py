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
from test_ops_table import FACADE, ROWS, IDS, _draw

rng = np.random.default_rng(7)


@pytest.mark.parametrize("op", ROWS, ids=IDS)
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
