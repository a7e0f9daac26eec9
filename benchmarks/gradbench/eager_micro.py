"""Eager recording costs behind issue 28's GradBench cases: tapegrad against torch, one
thread, in the same process (calls interleaved), medians over repeats.

    PYTHONPATH=TREE python benchmarks/gradbench/eager_micro.py [--quick] [case ...]

PYTHONPATH picks the tapegrad tree (nothing is put on sys.path here): run it on two trees,
alternating, for before/after figures. ratio = torch / tapegrad (> 1: tapegrad faster).

Cases: ``drop-big`` (a result of 10^5 elements dropped every call: the tape's collections),
``bmm`` (gmm's batched products (25, 10, 10) @ (25, 10, 1000) with grad), ``einsum`` (gmm's
``ijk,mik->mij``), ``bcast`` (``(n, 1, d) - (1, k, d)`` with grad), ``mm100`` (100x100 @
100x100 with grad), ``ops`` (10 elementwise ops of 14 elements, lstm-sized).
"""
import argparse
import statistics
import sys
import time

import numpy as np


def cases(lib):
    rng = np.random.default_rng(0)
    t = lambda a, rg=True: lib.tensor(a, requires_grad=rg)  # noqa: E731
    big = t(np.ones(100_000))
    c = big * 2
    A = t(rng.standard_normal((25, 10, 10)))
    B = t(rng.standard_normal((25, 10, 1000)))
    X = t(rng.standard_normal((1000, 1, 10)))
    M = t(rng.standard_normal((1, 25, 10)))
    Q = t(rng.standard_normal((25, 10, 10)))
    D = t(rng.standard_normal((1000, 25, 10)))
    P = t(rng.standard_normal((100, 100)))
    R = t(rng.standard_normal((100, 100)))
    v = t(rng.standard_normal(14))
    w = t(rng.standard_normal(14))

    def drop_big():
        c.exp()

    def ops():
        h = v
        for _ in range(2):
            h = (h * w + v).sigmoid() * (h - w).tanh()
            h = h + w.exp() - v
        return h

    return {
        "drop-big": drop_big,
        "bmm": lambda: lib.bmm(A, B),
        "einsum": lambda: lib.einsum("ijk,mik->mij", Q, D),
        "bcast": lambda: X - M,
        "mm100": lambda: P @ R,
        "ops": ops,
    }


def timeit(f, budget):
    n, t0 = 0, time.perf_counter()
    while True:
        f()
        n += 1
        t = time.perf_counter() - t0
        if t >= budget:
            return t / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    import torch
    torch.set_num_threads(1)
    import tapegrad
    libs = {"tapegrad": cases(tapegrad), "torch": cases(torch)}
    names = a.names or list(libs["torch"])
    rounds, budget = (5, 0.03) if a.quick else (11, 0.1)
    print("tapegrad:", tapegrad.__file__)
    print("%-10s %12s %12s %8s" % ("case", "tapegrad us", "torch us", "ratio"))
    for name in names:
        fs = {k: v[name] for k, v in libs.items()}
        for f in fs.values():
            f(), f()
        ts = {k: [] for k in fs}
        for _ in range(rounds):
            for k, f in fs.items():
                ts[k].append(timeit(f, budget))
        tg, th = statistics.median(ts["tapegrad"]), statistics.median(ts["torch"])
        print("%-10s %12.1f %12.1f %7.2fx" % (name, tg * 1e6, th * 1e6, th / tg))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
