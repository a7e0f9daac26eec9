"""Hessian-vector products: tapegrad vs PyTorch, measured in the same run.

    python benchmarks/bench_hvp.py [--quick]

Workloads: the Rosenbrock function of n = 1,000 and n = 10 variables (float64),
H(x) v computed (1) with autograd.functional.hvp and (2) by double backward
(grad with create_graph=True, then grad of <g, v>). Results are checked against each other
and against the analytic Hessian before timing. ratio = torch / tapegrad (> 1: tapegrad
faster). Target (issue 5): no slower than torch.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tapegrad as tg  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def rosen(x):
    a, b = x[:-1], x[1:]
    return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()


def rosen_hvp_exact(x, v):
    n = x.size
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i + 1, i + 1] += 200
        H[i, i + 1] += -400 * x[i]
        H[i + 1, i] += -400 * x[i]
    return H @ v


def double_backward(lib, x, v):
    x = x.detach().requires_grad_(True)
    (g,) = lib.autograd.grad(rosen(x), x, create_graph=True)
    (hv,) = lib.autograd.grad((g * v).sum(), x)
    return hv


def functional(lib, x, v):
    return lib.autograd.functional.hvp(rosen, x, v)[1]


def median_time(fn, repeats, inner):
    fn()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        ts.append((time.perf_counter() - t) / inner)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    repeats = 5 if args.quick else 15
    rng = np.random.default_rng(0)
    print("%-34s | %12s | %12s | %6s" % ("workload", "tapegrad", "torch", "ratio"))
    print("-" * 74)
    for n in (1000, 10):
        xv, vv = rng.uniform(-1, 1, n), rng.standard_normal(n)
        exact = rosen_hvp_exact(xv, vv)
        xt, vt = tg.tensor(xv), tg.tensor(vv)
        for name, fn in (("functional.hvp", functional), ("double backward", double_backward)):
            ours = fn(tg, xt, vt).numpy()
            err = np.abs(ours - exact).max() / max(1.0, np.abs(exact).max())
            assert err < 1e-10, (name, n, err)
            inner = 20 if n == 10 else 5
            t_tg = median_time(lambda: fn(tg, xt, vt), repeats, inner)
            if torch is not None:
                xp, vp = torch.tensor(xv), torch.tensor(vv)
                ref = fn(torch, xp, vp).numpy()
                assert np.abs(ref - ours).max() < 1e-8
                t_pt = median_time(lambda: fn(torch, xp, vp), repeats, inner)
                print("%-34s | %9.1f us | %9.1f us | %5.2fx"
                      % ("HVP n=%d (%s)" % (n, name), t_tg * 1e6, t_pt * 1e6, t_pt / t_tg))
            else:
                print("%-34s | %9.1f us | %12s | %6s" % ("HVP n=%d (%s)" % (n, name), t_tg * 1e6,
                                                      "(no torch)", "-"))
    print("\nratio = torch / tapegrad (> 1 means tapegrad is faster); results checked against "
          "the analytic Hessian (rel. error < 1e-10) and against torch.")


if __name__ == "__main__":
    main()
