"""Re-audit against torch 2.13: linalg gradients at repeated singular values / eigenvalues,
polygamma at -inf and huge negative inputs, sinc's gradient near 0, edge values of elementwise
functions (nan, +-inf, -0.0), argument validation; against torch (``same``) and checks that
need no torch (finite differences, closed forms)."""
import math
import subprocess
import sys

import numpy as np
import pytest

import tapegrad as tg
from oracle import fdcheck, leaf, same

INF, NAN = math.inf, math.nan


def _grad(lib, y, x):
    return lib.autograd.grad(y.sum(), x, allow_unused=True)[0]


# ----------------------------------------------------------------------------- polygamma
PG_X = [-INF, INF, -100.5, -70.25, -3.7, -0.5, 0.0, -0.0, 2.5]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_polygamma_infinities_and_large_negatives_vs_torch(k, dtype):
    def prog(lib):
        x = leaf(lib, PG_X, dtype)
        y = lib.digamma(x) if k == 0 else lib.polygamma(k, x)
        return y, _grad(lib, y, x)
    # torch computes float32 in float32, tapegrad in float64 (rounded once)
    same(prog, tol=dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else
         dict(rtol=1e-9, atol=1e-12))


def test_polygamma_huge_negative_float32_terminates():
    # used to loop forever (x += 1 does not move a float32 -3e38 / -inf)
    code = ("import tapegrad as t\n"
            "x = t.tensor([float('-inf'), -3e38, -1e20, -1e10], requires_grad=True)\n"
            "for k in (0, 1, 2):\n"
            "    y = t.digamma(x) if k == 0 else t.polygamma(k, x)\n"
            "    y.sum().backward()\n"
            "print(x.grad.tolist())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                       cwd=__import__("os").path.dirname(__import__("os").path.dirname(
                           __import__("os").path.abspath(__file__))))
    assert r.returncode == 0, r.stderr
    g = eval(r.stdout.strip().splitlines()[-1], {"nan": NAN, "inf": INF})
    # digamma' + trigamma' + polygamma(2)' at -inf: nan (trigamma(-inf) is nan, as torch)
    assert math.isnan(g[0])


def test_polygamma_identities_without_torch():
    # the reflection and the recurrence hold at large negative non-integers
    x = np.array([-100.5, -70.25, -1e6 - 0.25, -12345.375, -3.7])
    t = tg.tensor(x, dtype=tg.float64)
    p = [tg.polygamma(k, t).numpy() for k in range(4)]
    q1 = [tg.polygamma(k, tg.tensor(1 - x, dtype=tg.float64)).numpy() for k in range(4)]
    r = x - np.round(x)         # sin / cos (pi x) up to a common sign, exactly reduced
    s, c = np.sin(np.pi * r), np.cos(np.pi * r)
    np.testing.assert_allclose(q1[0] - p[0], np.pi * c / s, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(q1[1] + p[1], np.pi ** 2 / s ** 2, rtol=1e-12)
    np.testing.assert_allclose(q1[2] - p[2], 2 * np.pi ** 3 * c / s ** 3, rtol=1e-10, atol=1e-12)
    for k in range(1, 4):
        nxt = tg.polygamma(k, tg.tensor(x + 1, dtype=tg.float64)).numpy()
        np.testing.assert_allclose(nxt - p[k], (-1) ** k * math.factorial(k) / x ** (k + 1),
                                   rtol=1e-8, atol=1e-12)
    for dt in (tg.float32, tg.float64):
        v = tg.polygamma(1, tg.tensor([-INF, INF], dtype=dt)).tolist()
        assert math.isnan(v[0]) and v[1] == 0.0
        v = tg.polygamma(2, tg.tensor([-INF, INF, -1.0], dtype=dt)).tolist()
        assert v[0] == -INF and math.isnan(v[1]) and v[2] == -INF
