"""Graphs recorded on different tapes and met by one expression are merged (``Tape.absorb``).
A tape of a few entries is renumbered in Python, a larger one by the compiled ``shift``: both
must give the same merged tape, byte for byte, and the right gradients."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad._core import tape as T
from test_semantics import in_fresh_thread as _in_thread   # its own current tape


XV = np.array([0.3, -0.7, 1.1, 0.2, -0.4])
WV = np.array([0.5, -1.2, 0.9])
YV = np.array([1.5, -0.5, 0.25], np.float32)


def _program():
    """Three graphs on three tapes (an unrelated backward between them retires the current
    tape): gathers (index-store offsets), constants, saved values and references, float32 and
    float64 nodes; joined by ``a * b + c``."""
    x = tg.tensor(XV, dtype=tg.float64, requires_grad=True)
    w = tg.tensor(WV, dtype=tg.float64, requires_grad=True)
    y = tg.tensor(YV, requires_grad=True)
    z = tg.tensor([1.0], requires_grad=True)
    a = (x[[0, 2, 4]] * 1.5).exp() + x.mean()
    (z * 2).sum().backward()
    b = w[[2, 1, 0]].tanh() * w.sum() - 0.25
    (z * 3).sum().backward()
    c = (y * y * 2.0).double()
    out = (a * b + c).sum()
    tp, _ = T.resolve(out)
    state = (bytes(tp.E), bytes(tp.N), tp.I.array().tobytes(), bytes(tp.C), bytes(tp.V[0]), bytes(tp.V[1]),
             list(tp.asz), [n for n, _ in tp.leaf_pairs])
    out.backward()
    return state, x.grad.numpy().copy(), w.grad.numpy().copy(), y.grad.numpy().copy()


def _f(xv, wv, yv):
    a = np.exp(xv[[0, 2, 4]] * 1.5) + xv.mean()
    b = np.tanh(wv[[2, 1, 0]]) * wv.sum() - 0.25
    return float(np.sum(a * b + 2.0 * yv.astype(np.float64) ** 2))


def _fd(f, v, h=1e-6):
    g = np.zeros_like(v)
    for i in range(v.size):
        e = np.zeros_like(v)
        e[i] = h
        g[i] = (f(v + e) - f(v - e)) / (2 * h)
    return g


@pytest.fixture
def small_absorb():
    old = T._SMALL_ABSORB
    yield
    T._SMALL_ABSORB = old


def test_python_and_compiled_renumbering_agree(small_absorb):
    T._SMALL_ABSORB = 1 << 20          # every merge renumbered in Python
    st_py, gx_py, gw_py, gy_py = _in_thread(_program)
    T._SMALL_ABSORB = 0                # every merge through the compiled shift
    st_nb, gx_nb, gw_nb, gy_nb = _in_thread(_program)
    names = ("E", "N", "I", "C", "V4", "V8", "asz", "leaf nodes")
    for name, p, q in zip(names, st_py, st_nb):
        assert p == q, "merged tape differs in %s" % name
    np.testing.assert_array_equal(gx_py, gx_nb)
    np.testing.assert_array_equal(gw_py, gw_nb)
    np.testing.assert_array_equal(gy_py, gy_nb)


def test_merged_gradients_match_finite_differences(small_absorb):
    for thresh in (T._SMALL_ABSORB, 0):
        T._SMALL_ABSORB = thresh
        _, gx, gw, gy = _in_thread(_program)
        np.testing.assert_allclose(gx, _fd(lambda v: _f(v, WV, YV), XV), rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(gw, _fd(lambda v: _f(XV, v, YV), WV), rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(gy, 4.0 * YV, rtol=1e-6)


def test_absorbed_current_tape_resumes_the_graph():
    """Past ROTATE_AT entries the current tape rotates; when the fresh tape's leaf-only ops
    join the old graph (an RNN loop: ``x * w`` of a leaf, then with the state), the old tape
    is resumed with another budget instead of one fresh tape per leaf-only op (each absorbed
    at its next op). The gradient is the closed form's."""
    def run():
        w = tg.tensor([0.9], dtype=tg.float64, requires_grad=True)
        h = tg.tensor([1.0], dtype=tg.float64, requires_grad=True) * 1.0
        absorbs = [0]
        orig = T.Tape.absorb

        def counting(self, other):
            absorbs[0] += 1
            return orig(self, other)
        T.Tape.absorb = counting
        try:
            steps = 3 * T.ROTATE_AT
            for _ in range(steps):
                h = h * (w * 1.0)            # w * 1.0: a leaf-only op, on the current tape
        finally:
            T.Tape.absorb = orig
        h.sum().backward()
        return absorbs[0], w.grad.item(), steps
    absorbs, g, steps = _in_thread(run)
    assert absorbs <= 8, "%d absorbs" % absorbs
    np.testing.assert_allclose(g, steps * 0.9 ** (steps - 1), rtol=1e-9)
