"""Native routines the kernels call through ``tapegrad._native``'s table: BLAS gemm inside the
matrix-product kernels, libmvec inside the transcendental forward kernels. Each kernel is
checked against numpy with the native routine present and with its slot emptied (the
kernel's own loops), and a replayed batch MLP (matrix products, tanh) against a hand-written
numpy forward and backward, with and without the native routines."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg
import tapegrad.func as tf
from tapegrad._compiled import _blas, _native, _vmath, kernels
from tapegrad._core import tape
from tapegrad._schema import F_BIG, F_NPFWD, FL, K, NK, NSIZE, OP, OUT, P1
from tapegrad.ops import OPCODE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
needs_blas = pytest.mark.skipif(not _native.BLAS, reason="numpy has no bundled ILP64 OpenBLAS")
needs_vm = pytest.mark.skipif(not _vmath.OK, reason="no libmvec vector math on this machine")
TOL = {np.float32: 2e-5, np.float64: 1e-12}


class _slot_emptied:
    """Empty some slots of the native table for a block (the kernels then loop)."""

    def __init__(self, *slots):
        self.slots = slots

    def __enter__(self):
        self.saved = [_native.TABLE[s] for s in self.slots]
        for s in self.slots:
            _native.TABLE[s] = 0

    def __exit__(self, *exc):
        for s, v in zip(self.slots, self.saved):
            _native.TABLE[s] = v


def _mm_case(dt, m, k, n, rs):
    """Operands at offsets inside larger stores, as the sweeps pass them."""
    A = rs.standard_normal(m * k + 3).astype(dt)
    B = rs.standard_normal(k * n + 2).astype(dt)
    G = rs.standard_normal(m * n + 1).astype(dt)
    return A, B, G


def _run_mm(dt, m, k, n, na, nb, rs):
    A, B, G = _mm_case(dt, m, k, n, rs)
    Y = np.full(m * n + 5, 7, dt)
    kernels.python_twin(kernels.fwd_mm)(m, k, n, A, 3, B, 2, Y, 5)
    GA = np.full(m * k + 4, 0.5, dt)
    GB = np.full(k * n + 6, 0.5, dt)
    kernels.python_twin(kernels.vjp_mm)(m, k, n, G, 1, A, 3, B, 2, GA, 4, GB, 6, na, nb)
    a, b, g = A[3:].reshape(m, k), B[2:].reshape(k, n), G[1:].reshape(m, n)
    return (Y, GA, GB), (a @ b, 0.5 + g @ b.T if na else np.full((m, k), 0.5, dt),
                         0.5 + a.T @ g if nb else np.full((k, n), 0.5, dt))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("mkn", [(32, 64, 64), (32, 64, 1), (7, 5, 3), (64, 1, 64), (40, 33, 17)])
@pytest.mark.parametrize("blas", [True, False])
def test_mm_kernels_match_numpy_with_and_without_blas(dt, mkn, blas):
    """fwd_mm writes exactly its output range; vjp_mm adds into exactly the requested
    gradients' ranges (GA += G B^T, GB += A^T G), through BLAS above GEMM_MIN and the loops
    below it or when the slot is empty."""
    if blas and not _native.BLAS:
        pytest.skip("no BLAS bound")
    m, k, n = mkn
    rs = np.random.default_rng(m * 100 + k * 10 + n)
    for na, nb in ((True, True), (True, False), (False, True)):
        if blas:
            (Y, GA, GB), (y, ga, gb) = _run_mm(dt, m, k, n, na, nb, rs)
        else:
            with _slot_emptied(_native.SGEMM, _native.DGEMM):
                (Y, GA, GB), (y, ga, gb) = _run_mm(dt, m, k, n, na, nb, rs)
        tol = TOL[dt] * k
        np.testing.assert_allclose(Y[5:], y.ravel(), rtol=tol, atol=tol)
        assert (Y[:5] == 7).all()
        np.testing.assert_allclose(GA[4:], ga.ravel(), rtol=tol, atol=tol)
        np.testing.assert_allclose(GB[6:], gb.ravel(), rtol=tol, atol=tol)
        assert (GA[:4] == 0.5).all() and (GB[:6] == 0.5).all()


def test_vm_codes_are_vmath_codes_of_the_numpy_forward_rows():
    """The codes written into the kernels are ``_vmath``'s, VM_CODES lists exactly the
    elementwise forward kernels that call ``_vm(code, ...)`` (read from the source; softmax's
    row-wise kernels call exp's), all of them vector-math rows; func's numpy-forward rows
    (F_NPFWD) are these."""
    import inspect
    import re
    from tapegrad.ops import BY_NAME, OPS
    assert kernels.VM_CODES == {name: _vmath.UNARY[name] for name in kernels.VM_CODES}
    calls, fn = {}, None
    for line in inspect.getsource(kernels).splitlines():
        m = re.match(r"def (\w+)\(", line)
        fn = m.group(1) if m else fn
        m = re.search(r"\b_vm\((\d+), ", line)
        if m and fn.startswith("fwd_") and not BY_NAME[fn[4:]].rows:
            calls[fn[4:]] = int(m.group(1))
    assert calls == kernels.VM_CODES
    assert all(BY_NAME[name].vm for name in kernels.VM_CODES)
    assert sorted(kernels.VM_CODES) == sorted(OPS[o].name for o in tf._numpy_fwd_ops())


@needs_vm
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(kernels.VM_CODES))
def test_vm_forward_kernels_match_numpy_with_and_without_libmvec(dt, name):
    """Each transcendental forward kernel, on libmvec from VM_MIN elements (whole registers
    and a padded tail) and on its scalar loop below VM_MIN or with the slot empty, equals
    the row's numpy reference within a few ulp, writing exactly its range."""
    from tapegrad.ops import BY_NAME
    assert _native.vmath()
    op = BY_NAME[name]
    lo, hi = op.domain
    fwd = kernels.python_twin(getattr(kernels, "fwd_" + name))
    rs = np.random.default_rng(len(name))
    for n in (_native.VM_MIN - 1, _native.VM_MIN, 1000 + 13):
        for empty in (False, True):
            x = rs.uniform(lo, hi, n + 2).astype(dt)
            y = np.full(n + 3, 9, dt)
            if empty:
                with _slot_emptied(_native.VM4, _native.VM8):
                    fwd(n, x, 2, 0.0, y, 3)
            else:
                fwd(n, x, 2, 0.0, y, 3)
            ref = np.asarray(op.ref(x[2:].astype(np.float64), 0.0), np.float64)
            np.testing.assert_allclose(y[3:], ref, rtol=4e-6 if dt == np.float32 else 1e-13,
                                       atol=1e-6 if dt == np.float32 else 1e-14)
            assert (y[:3] == 9).all()


# ---------------------------------------------------------------- a replayed batch MLP
def _mlp(params, x, y):
    h = x
    for i, (W, b) in enumerate(params):
        h = h @ W + b
        if i < len(params) - 1:
            h = h.tanh()
    return ((h - y) ** 2).mean()


def _numpy_mlp(P, x, y):
    """The same network's loss and weight gradients by hand, in float64."""
    P = [(W.astype(np.float64), b.astype(np.float64)) for W, b in P]
    x, y = x.astype(np.float64), y.astype(np.float64)
    hs, h = [x], x
    for i, (W, b) in enumerate(P):
        h = h @ W + b
        if i < len(P) - 1:
            h = np.tanh(h)
        hs.append(h)
    d = 2 * (h - y) / h.size
    loss = ((h - y) ** 2).mean()
    grads = []
    for i in range(len(P) - 1, -1, -1):
        W, _ = P[i]
        grads.append((hs[i].T @ d, d.sum(0)))
        d = (d @ W.T) * (1 - hs[i] ** 2) if i > 0 else d @ W.T
    return loss, grads[::-1], d


def _check_mlp(dtype, rs):
    npdt = np.float32 if dtype == tg.float32 else np.float64
    dims = [64, 64, 64, 1]
    gv = tf.grad_and_value(_mlp, argnums=(0, 1))
    tol = 1e-4 if dtype == tg.float32 else 1e-10
    for trial in range(3):
        P = [((rs.standard_normal((a, b)) / np.sqrt(a)).astype(npdt),
              (rs.standard_normal(b) * 0.1).astype(npdt)) for a, b in zip(dims[:-1], dims[1:])]
        x = rs.standard_normal((32, 64)).astype(npdt)
        y = rs.standard_normal((32, 1)).astype(npdt)
        (gp, gx), v = gv([(tg.tensor(W), tg.tensor(b)) for W, b in P], tg.tensor(x), tg.tensor(y))
        loss, ref, dx = _numpy_mlp(P, x, y)
        assert v.dtype == dtype and float(v) == pytest.approx(loss, rel=tol)
        for (gW, gb), (rW, rb) in zip(gp, ref):
            assert gW.dtype == dtype
            np.testing.assert_allclose(gW.numpy(), rW, rtol=tol, atol=tol * np.abs(rW).max())
            np.testing.assert_allclose(gb.numpy(), rb, rtol=tol, atol=tol * np.abs(rb).max())
        np.testing.assert_allclose(gx.numpy(), dx, rtol=tol, atol=tol * np.abs(dx).max())
    (ct,) = [v[0] for v in gv._cache.tapes.values()]
    return ct


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_replayed_mlp_runs_in_one_compiled_sweep_with_native_routines(dtype):
    """With BLAS and libmvec bound, no entry of the replayed MLP leaves the compiled sweeps
    (the products and tanh run inside them), and values and gradients (weights, biases and
    the input) equal a hand-written numpy forward and backward on new values at each call."""
    ct = _check_mlp(dtype, np.random.default_rng(5))
    E = ct._plan()[0][0].reshape(-1, K)
    recorded = ct.E.reshape(-1, K)
    # the recording marks products F_BIG (numpy's side) from _blas.MIN multiply-adds with
    # BLAS bound (below, the compiled sweep calls gemm), from tape.BIG without
    big = _blas.MIN if _native.BLAS else tape.BIG
    mm = recorded[:, OP] == OPCODE["mm"]
    sizes = recorded[mm, P1] * ct.N.reshape(-1, NK)[recorded[mm, OUT], NSIZE]   # k * (m n)
    assert sizes.size and ((recorded[mm, FL] & F_BIG) != 0).tolist() == (sizes >= big).tolist()
    if _native.BLAS:
        assert not (E[:, FL] & F_BIG).any() and ct._plan()[3]
    if _vmath.OK:
        assert (recorded[:, FL] & F_NPFWD).any() and not (E[:, FL] & F_NPFWD).any()
        assert "(numpy" not in str(ct) or not _native.BLAS


@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_replayed_mlp_without_native_routines_uses_numpy_steps(dtype, monkeypatch):
    """Without BLAS and libmvec (as on a numpy built against another BLAS, or without glibc's
    libmvec) the replay runs the products and tanh on numpy between compiled sweeps, with the
    same results."""
    monkeypatch.setattr(_native, "BLAS", False)
    monkeypatch.setattr(_native, "_vm", [False])
    ct = _check_mlp(dtype, np.random.default_rng(6))
    E = ct._plan()[0][0].reshape(-1, K)
    assert (E[:, FL] & F_BIG).any() and (E[:, FL] & F_NPFWD).any() and not ct._plan()[3]
    assert "(numpy)" in str(ct) and "(numpy forward)" in str(ct)


def test_blas_can_be_switched_off_by_environment():
    """TAPEGRAD_BLAS=0 leaves the gemm slots empty, and a replay is still right."""
    code = ("import numpy as np, tapegrad as tg, tapegrad.func as tf\n"
            "from tapegrad._compiled import _native\n"
            "assert not _native.BLAS and _native.TABLE[0] == 0 and _native.TABLE[1] == 0\n"
            "rs = np.random.default_rng(0)\n"
            "W, x = rs.standard_normal((64, 64)), rs.standard_normal((32, 64))\n"
            "g, v = tf.grad_and_value(lambda W, x: (x @ W).tanh().sum())(tg.tensor(W), tg.tensor(x))\n"
            "t = np.tanh(x @ W)\n"
            "assert abs(float(v) - t.sum()) < 1e-3 * abs(t.sum()) + 1e-3\n"
            "ref = x.T @ (1 - t ** 2)\n"
            "assert np.abs(g.numpy() - ref).max() < 1e-4 * np.abs(ref).max()\n"
            "print('ok')\n")
    env = dict(os.environ, TAPEGRAD_BLAS="0")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
