"""The uncompiled sweeps (``tapegrad/_core/pysweep.py``: what a fresh installation runs while
its compiled code is compiled in the background) against the compiled ones, row by row of the
op table, float32 and float64: the eager backward (``reverse``), a recorded replay (``forward``
and ``reverse`` on live values), the scalar-plan replay (``pforward`` / ``preverse``) and the
batched ``vmap`` (``run``). The same program runs twice in this process, compiled code on and
off (``_compiled._cache.set_on``), and must give the same values and gradients: exactly for
the arithmetic and index rows, within a few ulp where numpy's and libm's transcendental
functions (or a summation order) differ.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.func as tf
from tapegrad import ops
from tapegrad._compiled import _cache
from tapegrad._core import pysweep

from test_ops_table import FACADE, FROWS, _draw

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Rows compared bit for bit; the others within TOL: a transcendental function (numpy's SIMD
# loops against libm's scalar ones), another summation order (a product: BLAS against the
# kernel's loop; a broadcast operand's gradient), or a kernel computing in float64 what the
# row's numpy VJP computes in float32 (scale, leaky_relu, div: an ulp)
EXACT = {"neg", "relu", "abs", "add", "sub", "mul", "sum", "gather", "segsum", "copy",
         "slice", "embed", "transpose", "step", "clamp_min", "clamp_max", "maximum",
         "minimum", "remainder", "smooth_l1", "sqrt"}
TOL = {tg.float32: 4e-6, tg.float64: 1e-13}


def both(program):
    """program() with the compiled code on, then off; the two results."""
    assert _cache.ON, "the tests run with the compiled code on (TAPEGRAD_COMPILE=now)"
    on = program()
    _cache.set_on(False)
    try:
        off = program()
    finally:
        _cache.set_on(True)
    return on, off


def same(on, off, dtype, exact):
    assert len(on) == len(off)
    for a, b in zip(on, off):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        if exact:
            np.testing.assert_array_equal(b, a)
        else:                       # (relative to the largest value: sums that cancel)
            scale = max(1.0, float(np.nanmax(np.abs(a))) if a.size else 1.0)
            np.testing.assert_allclose(b, a, rtol=TOL[dtype], atol=TOL[dtype] * scale)


def _inputs(op, dtype, seed):
    r = np.random.default_rng(seed)
    f, shapes = FACADE[op.name]
    lo, hi = op.domain
    return f, [np.where(np.abs(v) < 0.05, 0.3, v).astype(np.float64)
               for v in (r.uniform(lo, hi, s) for s in shapes)]


@pytest.mark.parametrize("op", FROWS, ids=[o.name for o in FROWS])
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_backward_and_replay_agree(op, dtype):
    """Eager backward (the reverse sweep, saved values) and a recorded replay on new values
    (forward and reverse on live values)."""
    from tapegrad._core.tape import recording, replay
    f, arrays = _inputs(op, dtype, 1)
    _, new = _inputs(op, dtype, 2)
    w = np.random.default_rng(3).standard_normal(f(*[tg.tensor(a) for a in arrays]).shape)

    def program():
        xs = [tg.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
        with recording() as tp:
            y = f(*xs)
        (y * tg.tensor(w, dtype=dtype)).sum().backward(retain_graph=True)
        (vals,), grads = replay(tp, [y], xs, new, [w])
        return [x.grad.numpy() for x in xs] + [vals] + list(grads)
    same(*both(program), dtype, op.name in EXACT)


@pytest.mark.parametrize("op", [o for o in FROWS if o.kind in (ops.UNARY, ops.BINARY)],
                         ids=[o.name for o in FROWS if o.kind in (ops.UNARY, ops.BINARY)])
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_scalar_plan_and_batched_agree(op, dtype):
    """grad_and_value of a one-element graph (the scalar-plan sweeps) and vmap over 13 points
    of the same function (the batched driver), compiled and uncompiled."""
    f, shapes = FACADE[op.name]
    r = np.random.default_rng(4)
    lo, hi = op.domain
    pts = [np.where(np.abs(v) < 0.05, 0.3, v) for v in (r.uniform(lo, hi, 13) for _ in shapes)]

    def g(*xs):
        return 0.25 - f(*xs) * 1.5

    def program():
        gv = tf.grad_and_value(g, argnums=tuple(range(len(shapes))))
        out = []
        for i in range(3):
            grads, val = gv(*[tg.tensor(p[i], dtype=dtype) for p in pts])
            out += [val.numpy()] + [t.numpy() for t in grads]
        (ct,) = [v[0] for v in gv._cache.tapes.values()]
        assert ct._sp is not None
        bg = tf.vmap(tf.grad_and_value(g, argnums=tuple(range(len(shapes)))))
        grads, vals = bg(*[tg.tensor(p, dtype=dtype) for p in pts])
        return out + [vals.numpy()] + [t.numpy() for t in grads]
    same(*both(program), dtype, op.name in EXACT)


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_batched_structural_rows_agree(dtype):
    """vmap of a function with sums, index maps, products, softmax, a cast and broadcasts (the
    batched kernels of every kind)."""
    r = np.random.default_rng(5)
    X = r.uniform(-1, 1, (37, 12))
    W = tg.tensor(r.uniform(-1, 1, (4, 3)), dtype=dtype)

    def f(x):
        m = x.reshape(3, 4)
        h = (m.t() @ W.t()).tanh()                      # transpose, mm (a constant operand)
        s = h.softmax(-1).sum() + m[1:].sum(1).mean() + m[:, ::2].sum()
        return s * x.double().float().to(x.dtype).sum() + (x - x.mean()).pow(2).sum()

    def program():
        grads, vals = tf.vmap(tf.grad_and_value(f))(tg.tensor(X, dtype=dtype))
        return [grads.numpy(), vals.numpy()]
    same(*both(program), dtype, False)


EAGER_ROWS = sorted({o.name for o in FROWS if o.kind == ops.UNARY and (o.vm or o.fwd_out is None)}
                    - {"softmax", "log_softmax"})     # (rows of c elements: vmap tests above)


@pytest.mark.parametrize("n", [100, 5000, 70000])   # eager kernel, vector math, every core
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_eager_unary_forwards_agree(dtype, n):
    """The eager forwards and backwards of the unary rows that have no numpy ufunc or have a
    vector-math kernel, at sizes that take each eager path (the rows' kernels called from
    Python, libmvec serial and on every core): compiled and uncompiled agree."""
    from tapegrad import _math
    x0 = np.linspace(0.05, 0.95, n)
    w = np.cos(np.arange(n))

    def program():
        out = []
        for name in EAGER_ROWS:
            op = ops.BY_NAME[name]
            lo, hi = op.domain
            x = tg.tensor(lo + (hi - lo) * x0, dtype=dtype, requires_grad=True)
            y = _math.unary(x, name, op.const if op.const is not None else 0.5)
            (y * tg.tensor(w, dtype=dtype)).sum().backward()
            out += [y.detach().numpy(), x.grad.numpy()]
        return out
    same(*both(program), dtype, False)


def test_twins_forward_once_the_compiled_code_is_on(monkeypatch):
    """A caller that kept an uncompiled twin (a replay's fast path made before the switch)
    runs the compiled sweep once the compiled code is on."""
    from tapegrad._compiled import _interp
    from tapegrad._core import tape as T
    _cache.set_on(False)
    try:
        kept = pysweep.current().reverse
    finally:
        _cache.set_on(True)
    assert kept is pysweep.reverse
    calls = []
    real = _interp.reverse

    def spy(*a):
        calls.append(a[-2:])
        return real(*a)
    monkeypatch.setattr(_interp, "reverse", spy)
    x = tg.tensor([0.5, 1.5], requires_grad=True)
    y = (x.sin() * x).sum()
    tp, node = T.resolve(y)
    monkeypatch.setattr(T, "_SWEEP_MODS", (kept,) + T._sweep_mods()[1:])
    y.backward()
    assert calls, "the twin did not hand over to the compiled sweep"
    v = np.array([0.5, 1.5], np.float32)
    np.testing.assert_allclose(x.grad.numpy(), np.cos(v) * v + np.sin(v), rtol=1e-6)


def test_no_compilation_while_uncompiled():
    """With the compiled code off (TAPEGRAD_COMPILE=off), a backward, replays of both kinds, a
    batched vmap, big elementwise ops, sums over dims, products, convolution and pooling and a
    tape merge run without compiling anything (Numba's compile events), with right results."""
    code = textwrap.dedent("""
        import math, numpy as np
        from numba.core import event
        seen = []

        class L(event.Listener):
            def on_start(self, ev):
                seen.append(str(ev.data["dispatcher"]))

            def on_end(self, ev):
                pass
        event.register("numba:compile", L())
        import tapegrad as tg, tapegrad.func as tf
        import tapegrad.nn.functional as F
        from tapegrad.precompile import JOBS
        for name, _, job in JOBS:
            job()
        x = tg.tensor([0.3, 0.7], dtype=tg.float64, requires_grad=True)
        (x.sin() * x.exp()).sum().backward()
        want = np.cos([0.3, 0.7]) * np.exp([0.3, 0.7]) + np.sin([0.3, 0.7]) * np.exp([0.3, 0.7])
        assert np.allclose(x.grad.numpy(), want, rtol=1e-14), x.grad
        print("compiles", len(seen), seen[:5])
    """)
    env = dict(os.environ, TAPEGRAD_COMPILE="off", PYTHONPATH=ROOT)
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "compiles 0 []" in p.stdout, p.stdout + p.stderr[-2000:]
