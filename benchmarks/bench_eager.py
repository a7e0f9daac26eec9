"""The eager path across sizes: tapegrad against PyTorch eager, measured in the same run.

    python benchmarks/bench_eager.py            # full run (a few minutes)
    python benchmarks/bench_eager.py --quick    # fewer repeats (~1 min)

Each timed call builds the graph with ordinary tensor code and runs ``backward()`` on a leaf
of n elements (``x.grad = None`` first), for n = 10, 100, 1e3, 1e4, 1e5, 1e6:

  elementwise  (sin(x) * exp(-x * x) + tanh(x)).sum()
  reductions   (x - x.mean()).pow(2).mean() + x.logsumexp(0) + x.amax() + (x.softmax(0) * x).sum()
  matmul       A (k x k, k = round(sqrt(n))): tanh(A @ A).sum() + (A * A.t()).mean()

tapegrad and torch repeats are interleaved; every figure is a median over repeats, each repeat
lasting at least 100 ms (30 ms with --quick). ratio = torch / tapegrad: > 1 means tapegrad is
faster. The gradients are compared with torch's before timing. ``--torch-threads N`` sets torch's
thread count (default: torch's own, one per core). Results: benchmarks/results/bench_eager.json
(``--json PATH`` elsewhere, ``--json ''`` not at all; schema in benchmarks/README.md).
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import tapegrad  # noqa: E402
from bench_foundation import _fmt_time, bench_pair  # noqa: E402
from _results import Results, default_path  # noqa: E402

try:
    import torch
except ImportError:  # torch is an optional peer
    torch = None

SIZES = [10, 100, 1_000, 10_000, 100_000, 1_000_000]


def w_elementwise(lib, x):
    return (lib.sin(x) * lib.exp(-x * x) + lib.tanh(x)).sum()


def w_reductions(lib, x):
    return ((x - x.mean()).pow(2).mean() + x.logsumexp(0) + x.amax()
            + (x.softmax(0) * x).sum())


def w_matmul(lib, a):
    return lib.tanh(a @ a).sum() + (a * a.t()).mean()


WORKLOADS = {"elementwise": (w_elementwise, False), "reductions": (w_reductions, False),
             "matmul": (w_matmul, True)}


def make_input(n, square, seed=0):
    rng = np.random.default_rng(seed)
    if square:
        k = max(2, int(round(n ** 0.5)))
        return rng.uniform(-1.0, 1.0, (k, k)).astype(np.float32)
    return rng.uniform(-2.0, 2.0, n).astype(np.float32)


def make_call(lib, f, x):
    def call():
        x.grad = None
        f(lib, x).backward()
    return call


def check(f, arr):
    xt = torch.tensor(arr, requires_grad=True)
    f(torch, xt).backward()
    xg = tapegrad.tensor(arr, requires_grad=True)
    f(tapegrad, xg).backward()
    return float(np.max(np.abs(xt.grad.numpy() - xg.grad.numpy())) /
                 max(1.0, float(np.max(np.abs(xt.grad.numpy())))))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--torch-threads", type=int, default=None)
    ap.add_argument("--sizes", default=None, help="comma-separated sizes (default: 10..1e6)")
    ap.add_argument("--workloads", default=None, help="comma-separated subset of %s"
                    % ",".join(WORKLOADS))
    ap.add_argument("--json", default=default_path("bench_eager"),
                    help="results file (schema in benchmarks/README.md); '' for none")
    args = ap.parse_args()
    if torch is not None and args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    sizes = [int(float(s)) for s in args.sizes.split(",")] if args.sizes else SIZES
    names = args.workloads.split(",") if args.workloads else list(WORKLOADS)
    repeats, min_time = (5, 0.03) if args.quick else (11, 0.1)
    print("tapegrad eager vs torch %s (threads %s); medians of %d repeats"
          % (torch.__version__ if torch else "absent", torch.get_num_threads() if torch else "-",
             repeats))
    print("%-12s %9s %12s %12s %8s %8s" % ("workload", "n", "tapegrad", "torch", "ratio",
                                           "range"))
    rows = []
    res = Results("bench_eager", options=vars(args))
    for name in names:
        f, square = WORKLOADS[name]
        for n in sizes:
            arr = make_input(n, square)
            fns = {"tapegrad": make_call(tapegrad, f, tapegrad.tensor(arr, requires_grad=True))}
            err = None
            if torch is not None:
                fns["torch"] = make_call(torch, f, torch.tensor(arr, requires_grad=True))
                err = check(f, arr)
            timing = bench_pair(fns, warmup=2, repeats=repeats, min_time=min_time)
            res_tg = timing["tapegrad"]
            tg = res_tg["median"]
            th = timing["torch"]["median"] if torch is not None else None
            ratio = th / tg if th else None
            if th:
                per = sorted(a / b for a, b in zip(timing["torch"]["samples"],
                                                     res_tg["samples"]))
                rng = "%.2f-%.2f" % (per[0], per[-1])
            else:
                rng = "-"
            flag = "" if err is None or err < 1e-4 else "  <-- MISMATCH %.2g" % err
            print("%-12s %9d %12s %12s %8s %8s%s" % (
                name, arr.size, _fmt_time(tg), _fmt_time(th),
                "%.2fx" % ratio if ratio else "-", rng, flag), flush=True)
            rows.append({"workload": name, "n": int(arr.size), "ratio": ratio})
            res.add(name, "tapegrad", tg, repeats, size=int(arr.size),
                    samples=res_tg["samples"])
            if th:
                res.add(name, "torch", th, repeats, size=int(arr.size), range=rng,
                        grad_rel_err=err, samples=timing["torch"]["samples"])
    if torch is not None:
        rs = [r["ratio"] for r in rows]
        print("geometric mean ratio %.2fx; slowest %.2fx (%s, n=%d)" % (
            float(np.exp(np.mean(np.log(rs)))), min(rs),
            *[(r["workload"], r["n"]) for r in rows if r["ratio"] == min(rs)][0]))
    if args.json:
        res.write(args.json)
        print("results written to %s" % os.path.relpath(args.json))


if __name__ == "__main__":
    main()
