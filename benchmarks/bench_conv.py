"""Convolution and pooling on the eager path: tapegrad against PyTorch eager, same run.

    python benchmarks/bench_conv.py            # full run (~1 min)
    python benchmarks/bench_conv.py --quick    # fewer repeats

Each timed call runs forward + ``.sum().backward()`` with every input requiring grad
(grads set to None first):

  conv2d small   x (8, 3, 32, 32),   w (16, 3, 3, 3),  b (16,), padding 1
  conv2d mid     x (32, 16, 16, 16), w (32, 16, 3, 3), b (32,), padding 1
  conv2d grouped x (8, 16, 16, 16),  w (16, 4, 3, 3),  b (16,), padding 1, groups 4
  pool small     max_pool2d(x, 2).sum() + avg_pool2d(x, 3, 2, 1).sum(), x (8, 3, 32, 32)
  pool mid       the same on x (32, 16, 16, 16)

tapegrad and torch repeats are interleaved; figures are medians over repeats (each at least
100 ms, 30 ms with --quick). ratio = tapegrad / torch: < 1 means tapegrad is faster. The
gradients are compared with torch's before timing (torch columns are skipped without torch).
Results: benchmarks/results/bench_conv.json (``--json PATH`` elsewhere, ``--json ''`` not at
all; schema in benchmarks/README.md, where ratio = torch / tapegrad as in the other scripts).
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


def conv_case(xs, ws, **kw):
    def f(lib, x, w, b):
        return lib.nn.functional.conv2d(x, w, b, **kw).sum()
    return f, [xs, ws, (ws[0],)]


def pool_case(xs):
    def f(lib, x):
        F = lib.nn.functional
        return F.max_pool2d(x, 2).sum() + F.avg_pool2d(x, 3, 2, 1).sum()
    return f, [xs]


CASES = {
    "conv2d small": conv_case((8, 3, 32, 32), (16, 3, 3, 3), padding=1),
    "conv2d mid": conv_case((32, 16, 16, 16), (32, 16, 3, 3), padding=1),
    "conv2d grouped": conv_case((8, 16, 16, 16), (16, 4, 3, 3), padding=1, groups=4),
    "pool small": pool_case((8, 3, 32, 32)),
    "pool mid": pool_case((32, 16, 16, 16)),
}


def make_call(lib, f, arrs):
    ts = [lib.tensor(a, requires_grad=True) for a in arrs]

    def call():
        for t in ts:
            t.grad = None
        f(lib, *ts).backward()
    return call, ts


def check(f, arrs):
    _, tt = make_call(torch, f, arrs)
    f(torch, *tt).backward()
    _, tg = make_call(tapegrad, f, arrs)
    f(tapegrad, *tg).backward()
    err = 0.0
    for a, b in zip(tt, tg):
        ga, gb = a.grad.numpy(), b.grad.numpy()
        err = max(err, float(np.max(np.abs(ga - gb)) / max(1.0, float(np.max(np.abs(ga))))))
    return err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--torch-threads", type=int, default=None)
    ap.add_argument("--cases", default=None, help="comma-separated subset of: %s"
                    % ", ".join(CASES))
    ap.add_argument("--json", default=default_path("bench_conv"),
                    help="results file (schema in benchmarks/README.md); '' for none")
    args = ap.parse_args()
    if torch is not None and args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    names = args.cases.split(",") if args.cases else list(CASES)
    repeats, min_time = (5, 0.03) if args.quick else (11, 0.1)
    print("tapegrad conv/pool vs torch %s (threads %s); medians of %d repeats"
          % (torch.__version__ if torch else "absent", torch.get_num_threads() if torch else "-",
             repeats))
    print("%-16s %12s %12s %8s" % ("case", "tapegrad", "torch", "ratio"))
    rng = np.random.default_rng(0)
    results = Results("bench_conv", options=vars(args))
    for name in names:
        f, shapes = CASES[name]
        arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        fns = {"tapegrad": make_call(tapegrad, f, arrs)[0]}
        err = None
        if torch is not None:
            fns["torch"] = make_call(torch, f, arrs)[0]
            err = check(f, arrs)
        res = bench_pair(fns, warmup=2, repeats=repeats, min_time=min_time)
        tg = res["tapegrad"]["median"]
        th = res["torch"]["median"] if torch is not None else None
        flag = "" if err is None or err < 1e-4 else "  <-- MISMATCH %.2g" % err
        print("%-16s %12s %12s %8s%s" % (name, _fmt_time(tg), _fmt_time(th),
                                         "%.2fx" % (tg / th) if th else "-", flag), flush=True)
        size = int(np.prod(shapes[0]))              # elements of the input x
        results.add(name, "tapegrad", tg, repeats, size=size, samples=res["tapegrad"]["samples"])
        if th:
            results.add(name, "torch", th, repeats, size=size, grad_rel_err=err,
                        samples=res["torch"]["samples"])
    if args.json:
        results.write(args.json)
        print("results written to %s" % os.path.relpath(args.json))


if __name__ == "__main__":
    main()
