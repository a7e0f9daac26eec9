"""Replayed grad_and_value vs PyTorch eager: a micrograd-style scalar MLP (2-16-16-1, tanh),
one sample per call, parameters indexed as scalars out of one vector.

    python benchmarks/bench_replay.py

Gradients are checked against torch (when installed) before timing; ratio = torch / tapegrad.
Issue 6 targets 300x over torch eager (not met yet; see docs/func.md).
"""
import os
import random
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tapegrad as tg  # noqa: E402
import tapegrad.func as tf  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

SIZES = [2, 16, 16, 1]


def mlp(w, x):
    p = 0
    act = [x[0], x[1]]
    for li, (a, b) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        nxt = []
        for _ in range(b):
            s = w[p + a]
            for i in range(a):
                s = s + w[p + i] * act[i]
            p += a + 1
            nxt.append(s.tanh() if li < len(SIZES) - 2 else s)
        act = nxt
    return act[0]


def median_per_call(fn, calls):
    ts = []
    for _ in range(7):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        ts.append((time.perf_counter() - t) / calls)
    return statistics.median(ts)


def main():
    random.seed(0)
    nparams = sum((a + 1) * b for a, b in zip(SIZES[:-1], SIZES[1:]))
    w0 = np.array([random.uniform(-1, 1) for _ in range(nparams)], dtype=np.float32)
    x0 = np.array([0.5, -0.3], dtype=np.float32)
    gv = tf.grad_and_value(mlp)
    w, x = tg.tensor(w0), tg.tensor(x0)
    g, v = gv(w, x)
    ct = next(iter(gv._cache.tapes.values()))
    t_tg = median_per_call(lambda: gv(w, x), 200)
    print("tape: %d entries, %.1f KiB" % (len(ct), ct.nbytes / 1024))
    print("tapegrad replayed grad_and_value: %.1f us/call" % (t_tg * 1e6))
    if torch is None:
        print("torch not installed: no ratio")
        return
    wt = torch.tensor(w0, requires_grad=True)
    xt = torch.tensor(x0)
    mlp(wt, xt).backward()
    err = float(np.abs(g.numpy() - wt.grad.numpy()).max())
    assert err < 1e-4, err

    def step():
        wt.grad = None
        mlp(wt, xt).backward()
    t_pt = median_per_call(step, 5)
    print("torch eager forward+backward:     %.1f us/call" % (t_pt * 1e6))
    print("ratio torch/tapegrad: %.0fx (target 300x); max |grad diff| %.1e" % (t_pt / t_tg, err))


if __name__ == "__main__":
    main()
