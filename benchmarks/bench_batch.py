"""Record once, replay compiled (issue 6): tapegrad vs its peers, measured in the same run.

    python benchmarks/bench_batch.py [--quick] [--points N] [--threads T]

Workloads (ratio = peer time / tapegrad time, > 1: tapegrad faster; medians of repeats):

1. scalar MLP 2-16-16-1 (tanh), one sample per call, value and gradient:
   tapegrad.func.grad_and_value (replayed) vs torch eager forward+backward and
   jax.jit(jax.value_and_grad(f)). Targets: 300x torch, 5x jax.
2. Rosenbrock, 10 variables, value and gradient at N = 100,000 points:
   tapegrad.func.vmap(grad_and_value(f)) vs jax.jit(jax.vmap(jax.value_and_grad(f))) and a
   hand-written numba.njit(parallel=True) analytic gradient. Targets: no slower than jax,
   within 2x of numba.
3. MLP 64-64-64-1 (tanh, MSE) on a batch of 32, gradient w.r.t. all weights by replay vs
   torch eager and a hand-written numpy forward+backward. Target: faster than both.

For each workload the reverse/forward ratio of tapegrad's sweeps is printed: the time of a
forward+reverse replay minus a forward-only replay, over the forward-only replay (target <= 3).
Every result is checked against a peer before it is timed. Peers that are not installed
(torch, jax) are skipped. Results: benchmarks/results/bench_batch.json (``--json PATH``
elsewhere, ``--json ''`` not at all; schema in benchmarks/README.md).
"""
import argparse
import os
import random
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

import tapegrad as tg  # noqa: E402
import tapegrad.func as tf  # noqa: E402
from _results import Results, default_path  # noqa: E402

try:
    import torch
    torch.set_num_threads(2)
except ImportError:
    torch = None
try:
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = None


def timeit(fn, calls, repeats):
    """Median seconds per call over `repeats` groups of `calls` calls."""
    fn()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        ts.append((time.perf_counter() - t) / calls)
    return statistics.median(ts)


def row(name, t, ref=None):
    extra = "" if ref is None else "   ratio %.2fx" % (t / ref)
    print("  %-44s %12.2f us%s" % (name, t * 1e6, extra))


# ----------------------------------------------------------------------------- 1. scalar MLP
SIZES = [2, 16, 16, 1]


def mlp_scalar(w, x, tanh):
    p = 0
    act = [x[0], x[1]]
    for li, (a, b) in enumerate(zip(SIZES[:-1], SIZES[1:])):
        nxt = []
        for _ in range(b):
            s = w[p + a]
            for i in range(a):
                s = s + w[p + i] * act[i]
            p += a + 1
            nxt.append(tanh(s) if li < len(SIZES) - 2 else s)
        act = nxt
    return act[0]


CASE_MLP, CASE_ROSEN, CASE_BATCH = ("scalar MLP 2-16-16-1", "Rosenbrock 10 variables",
                                     "MLP 64-64-64-1 batch 32")


def bench_scalar_mlp(q, results):
    print("\n1. scalar MLP 2-16-16-1 (tanh), one sample per call, value and gradient (float32)")
    random.seed(0)
    nparams = sum((a + 1) * b for a, b in zip(SIZES[:-1], SIZES[1:]))
    w0 = np.array([random.uniform(-1, 1) for _ in range(nparams)], dtype=np.float32)
    x0 = np.array([0.5, -0.3], dtype=np.float32)
    gv = tf.grad_and_value(lambda w, x: mlp_scalar(w, x, lambda s: s.tanh()))
    w, x = tg.tensor(w0), tg.tensor(x0)
    g, v = gv(w, x)
    ct = gv._cache.tapes[next(iter(gv._cache.tapes))][0]
    calls, reps = (50, 5) if q else (300, 9)
    t_tg = timeit(lambda: gv(w, x), calls, reps)
    X = ct.forward([w0, x0])
    t_fwd = timeit(lambda: ct.forward([w0, x0]), calls, reps)
    t_rev = timeit(lambda: ct.reverse(X, [np.ones((), np.float32)]), calls, reps)
    print("  tape: %d entries; compiled forward %.1f us, reverse %.1f us: reverse/forward %.2f"
          % (len(ct), t_fwd * 1e6, t_rev * 1e6, t_rev / t_fwd))
    row("tapegrad replayed grad_and_value", t_tg)
    results.add(CASE_MLP, "tapegrad", t_tg, reps, size=nparams,
                reverse_over_forward=t_rev / t_fwd)
    if torch is not None:
        wt, xt = torch.tensor(w0, requires_grad=True), torch.tensor(x0)
        mlp_scalar(wt, xt, torch.tanh).backward()
        assert np.abs(wt.grad.numpy() - g.numpy()).max() < 1e-4

        def step():
            wt.grad = None
            mlp_scalar(wt, xt, torch.tanh).backward()
        t = timeit(step, 3 if q else 10, reps)
        row("torch eager forward+backward (target 300x)", t, t_tg)
        results.add(CASE_MLP, "torch", t, reps, size=nparams, note="eager forward+backward")
    if jax is not None:
        jf = jax.jit(jax.value_and_grad(lambda w, x: mlp_scalar(w, x, jnp.tanh)))
        wj, xj = jnp.asarray(w0), jnp.asarray(x0)
        vj, gj = jf(wj, xj)
        assert np.abs(np.asarray(gj) - g.numpy()).max() < 1e-4

        def jstep():
            jax.block_until_ready(jf(wj, xj))
        t = timeit(jstep, calls, reps)
        row("jax.jit(value_and_grad) per call (target 5x)", t, t_tg)
        results.add(CASE_MLP, "jax", t, reps, size=nparams, note="jax.jit(value_and_grad)")


# ----------------------------------------------------------------------------- 2. Rosenbrock
def rosen(x):
    a, b = x[:-1], x[1:]
    return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()


def _numba_rosen():
    import numba

    @numba.njit(parallel=True, cache=True)
    def rosen_vg(X, V, G):
        P, n = X.shape
        for p in numba.prange(P):
            v = 0.0
            for i in range(n):
                G[p, i] = 0.0
            for i in range(n - 1):
                a = X[p, i]
                b = X[p, i + 1]
                t = b - a * a
                v += 100.0 * t * t + (1.0 - a) * (1.0 - a)
                G[p, i] += -400.0 * t * a - 2.0 * (1.0 - a)
                G[p, i + 1] += 200.0 * t
            V[p] = v
    return rosen_vg


def bench_rosenbrock(q, P, results):
    print("\n2. Rosenbrock, 10 variables, value and gradient at %d points (float64)" % P)
    X = np.random.default_rng(0).uniform(-2, 2, (P, 10))
    Xt = tg.tensor(X)
    vg = tf.vmap(tf.grad_and_value(rosen))
    fwd = tf.vmap(rosen)
    g, v = vg(Xt)
    reps = 5 if q else 15
    t_tg = timeit(lambda: vg(Xt), 1, reps)
    t_f = timeit(lambda: fwd(Xt), 1, reps)
    print("  tapegrad forward only %.2f ms: reverse/forward %.2f" % (t_f * 1e3, (t_tg - t_f) / t_f))
    row("tapegrad vmap(grad_and_value)", t_tg)
    results.add(CASE_ROSEN, "tapegrad", t_tg, reps, size=P, reverse_over_forward=(t_tg - t_f) / t_f)
    rosen_vg = _numba_rosen()
    V, G = np.empty(P), np.empty((P, 10))
    rosen_vg(X, V, G)
    assert np.allclose(G, g.numpy(), rtol=1e-12, atol=1e-9) and np.allclose(V, v.numpy(), rtol=1e-12)
    t = timeit(lambda: rosen_vg(X, V, G), 1, reps)
    row("numba.njit(parallel) analytic (target: within 2x)", t, t_tg)
    results.add(CASE_ROSEN, "numba", t, reps, size=P, note="njit(parallel) analytic gradient")
    if jax is not None:
        jf = jax.jit(jax.vmap(jax.value_and_grad(rosen)))
        Xj = jnp.asarray(X)
        vj, gj = jf(Xj)
        assert np.allclose(np.asarray(gj), g.numpy(), rtol=1e-10, atol=1e-8)

        def jstep():
            jax.block_until_ready(jf(Xj))
        t = timeit(jstep, 1, reps)
        row("jax.jit(vmap(value_and_grad)) (target >= 1x)", t, t_tg)
        results.add(CASE_ROSEN, "jax", t, reps, size=P, note="jax.jit(vmap(value_and_grad))")


# ----------------------------------------------------------------------------- 3. batch MLP
def mlp_batch(params, x, y):
    h = x
    for i, (W, b) in enumerate(params):
        h = h @ W + b
        if i < len(params) - 1:
            h = h.tanh()
    return ((h - y) ** 2).mean()


def numpy_mlp_grad(params, x, y):
    hs, h = [x], x
    for i, (W, b) in enumerate(params):
        h = h @ W + b
        if i < len(params) - 1:
            h = np.tanh(h)
        hs.append(h)
    d = 2 * (h - y) / h.size
    loss = ((h - y) ** 2).mean()
    grads = []
    for i in range(len(params) - 1, -1, -1):
        W, _ = params[i]
        grads.append((hs[i].T @ d, d.sum(0)))
        if i > 0:
            d = (d @ W.T) * (1 - hs[i] ** 2)
    return loss, grads[::-1]


def bench_batch_mlp(q, results):
    print("\n3. MLP 64-64-64-1 (tanh, MSE), batch of 32, gradient w.r.t. all weights (float32)")
    rs = np.random.default_rng(1)
    dims = [64, 64, 64, 1]
    P = [((rs.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32),
          rs.standard_normal(b).astype(np.float32) * 0.1) for a, b in zip(dims[:-1], dims[1:])]
    x = rs.standard_normal((32, 64)).astype(np.float32)
    y = rs.standard_normal((32, 1)).astype(np.float32)
    params = [(tg.tensor(W), tg.tensor(b)) for W, b in P]
    xt, yt = tg.tensor(x), tg.tensor(y)
    gv = tf.grad_and_value(mlp_batch)
    g, v = gv(params, xt, yt)
    ct = gv._cache.tapes[next(iter(gv._cache.tapes))][0]
    calls, reps = (20, 5) if q else (200, 9)
    t_tg = timeit(lambda: gv(params, xt, yt), calls, reps)
    vals = [a for Wb in P for a in Wb] + [x, y]
    X = ct.forward(vals)
    t_fwd = timeit(lambda: ct.forward(vals), calls, reps)
    t_rev = timeit(lambda: ct.reverse(X, [np.ones((), np.float32)]), calls, reps)
    print("  tape: %d entries; compiled forward %.1f us, reverse %.1f us: reverse/forward %.2f"
          % (len(ct), t_fwd * 1e6, t_rev * 1e6, t_rev / t_fwd))
    row("tapegrad replayed grad_and_value", t_tg)
    results.add(CASE_BATCH, "tapegrad", t_tg, reps, size=32, reverse_over_forward=t_rev / t_fwd)
    loss, ng = numpy_mlp_grad(P, x, y)
    for (gW, gb), (nW, nb) in zip(g, ng):
        assert np.allclose(gW.numpy(), nW, rtol=1e-3, atol=1e-5), np.abs(gW.numpy() - nW).max()
        assert np.allclose(gb.numpy(), nb, rtol=1e-3, atol=1e-5)
    t = timeit(lambda: numpy_mlp_grad(P, x, y), calls, reps)
    row("numpy hand-written forward+backward", t, t_tg)
    results.add(CASE_BATCH, "numpy", t, reps, size=32, note="hand-written forward+backward")
    if torch is not None:
        pt = [(torch.tensor(W, requires_grad=True), torch.tensor(b, requires_grad=True)) for W, b in P]
        xq, yq = torch.tensor(x), torch.tensor(y)

        def step():
            for W, b in pt:
                W.grad = b.grad = None
            mlp_batch(pt, xq, yq).backward()
        step()
        assert np.allclose(pt[0][0].grad.numpy(), g[0][0].numpy(), rtol=1e-3, atol=1e-5)
        t = timeit(step, calls, reps)
        row("torch eager forward+backward", t, t_tg)
        results.add(CASE_BATCH, "torch", t, reps, size=32, note="eager forward+backward")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--points", type=int, default=100_000, help="Rosenbrock points")
    ap.add_argument("--threads", type=int, default=0, help="numba threads (0: all)")
    ap.add_argument("--only", default="123", help="workloads to run, e.g. 2")
    ap.add_argument("--json", default=default_path("bench_batch"),
                    help="results file (schema in benchmarks/README.md); '' for none")
    a = ap.parse_args()
    results = Results("bench_batch", options=vars(a))
    import numba
    if a.threads:
        numba.set_num_threads(a.threads)
    print("tapegrad %s, numba %s threads, torch %s, jax %s" % (
        tg.__version__, numba.get_num_threads(), torch.__version__ if torch else "-",
        jax.__version__ if jax else "-"))
    if "1" in a.only:
        bench_scalar_mlp(a.quick, results)
    if "2" in a.only:
        bench_rosenbrock(a.quick, a.points, results)
    if "3" in a.only:
        bench_batch_mlp(a.quick, results)
    if a.json:
        results.write(a.json)
        print("\nresults written to %s" % os.path.relpath(a.json))


if __name__ == "__main__":
    main()
