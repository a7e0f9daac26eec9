"""Hessian-vector products: tapegrad vs PyTorch, measured in the same run.

    python benchmarks/bench_hvp.py [--quick]

Workloads: the Rosenbrock function of n = 1,000 and n = 10 variables (float64),
H(x) v computed (1) with autograd.functional.hvp and (2) by double backward
(grad with create_graph=True, then grad of <g, v>). Results are checked against each other
and against the analytic Hessian before timing. ratio = torch / tapegrad (> 1: tapegrad
faster). Target (issue 5): no slower than torch. Results: benchmarks/results/bench_hvp.json
(``--json PATH`` elsewhere, ``--json ''`` not at all; schema in benchmarks/README.md).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import tapegrad as tg  # noqa: E402
from _results import Results, default_path  # noqa: E402

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


def interleaved(fns, repeats, inner):
    """Time each callable of ``fns`` (name -> fn) ``repeats`` times, interleaving the repeats
    (tapegrad, torch, tapegrad, ...) so a burst of load hits both; each repeat runs the call
    ``inner`` times. Returns name -> [seconds per call, one per repeat]."""
    for fn in fns.values():
        fn()
    out = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            t = time.perf_counter()
            for _ in range(inner):
                fn()
            out[k].append((time.perf_counter() - t) / inner)
    return out


def split_double_backward(lib, x0, v, repeats):
    """Median forward / grad(create_graph=True) / <g, v> / second grad times (diagnostic)."""
    parts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        x = x0.detach().requires_grad_(True)
        y = rosen(x)
        t1 = time.perf_counter()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        t2 = time.perf_counter()
        d = (g * v).sum()
        t3 = time.perf_counter()
        lib.autograd.grad(d, x)
        t4 = time.perf_counter()
        parts.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3))
    return [statistics.median(p) for p in zip(*parts)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--split", action="store_true",
                    help="also print the double backward's stages (forward, create_graph grad, "
                         "<g, v>, second grad)")
    ap.add_argument("--json", default=default_path("bench_hvp"),
                    help="results file (schema in benchmarks/README.md); '' for none")
    args = ap.parse_args()
    results = Results("bench_hvp", options=vars(args))
    repeats = 7 if args.quick else 21
    rng = np.random.default_rng(0)
    print("%-30s | %11s | %11s | %6s | %s" % ("workload", "tapegrad", "torch", "ratio",
                                              "paired ratios (min-max)"))
    print("-" * 92)
    for n in (1000, 10):
        xv, vv = rng.uniform(-1, 1, n), rng.standard_normal(n)
        exact = rosen_hvp_exact(xv, vv)
        xt, vt = tg.tensor(xv), tg.tensor(vv)
        for name, fn in (("functional.hvp", functional), ("double backward", double_backward)):
            ours = fn(tg, xt, vt).numpy()
            err = np.abs(ours - exact).max() / max(1.0, np.abs(exact).max())
            assert err < 1e-10, (name, n, err)
            inner = 40 if n == 10 else 20
            label = "HVP n=%d (%s)" % (n, name)
            fns = {"tg": lambda: fn(tg, xt, vt)}
            if torch is not None:
                xp, vp = torch.tensor(xv), torch.tensor(vv)
                ref = fn(torch, xp, vp).numpy()
                assert np.abs(ref - ours).max() < 1e-8
                fns["torch"] = lambda: fn(torch, xp, vp)
            r = interleaved(fns, repeats, inner)
            t_tg = statistics.median(r["tg"])
            case = "HVP (%s)" % name
            results.add(case, "tapegrad", t_tg, repeats, size=n, samples=r["tg"])
            if torch is None:
                print("%-30s | %8.1f us | %11s | %6s |" % (label, t_tg * 1e6, "(no torch)", "-"))
                continue
            t_pt = statistics.median(r["torch"])
            paired = [b / a for a, b in zip(r["tg"], r["torch"])]
            results.add(case, "torch", t_pt, repeats, size=n, samples=r["torch"],
                        paired_ratio_median=statistics.median(paired))
            print("%-30s | %8.1f us | %8.1f us | %5.2fx | %.2f-%.2fx (median %.2fx)"
                  % (label, t_tg * 1e6, t_pt * 1e6, t_pt / t_tg, min(paired), max(paired),
                     statistics.median(paired)))
        if args.split:
            libs = [("tapegrad", tg, xt, vt)]
            if torch is not None:
                libs.append(("torch", torch, torch.tensor(xv), torch.tensor(vv)))
            for lname, lib, x0, v0 in libs:
                f, g1, d, g2 = split_double_backward(lib, x0, v0, 400)
                print("    n=%d %-8s forward %6.1f | grad(create_graph) %6.1f | <g,v> %5.1f | "
                      "grad %6.1f us" % (n, lname, f * 1e6, g1 * 1e6, d * 1e6, g2 * 1e6))
    print("\nratio = torch / tapegrad medians (> 1 means tapegrad is faster); repeats interleaved; "
          "paired ratios: per repeat. Results checked against the analytic Hessian (rel. error "
          "< 1e-10) and against torch.")
    if args.json:
        results.write(args.json)
        print("results written to %s" % os.path.relpath(args.json))


if __name__ == "__main__":
    main()
