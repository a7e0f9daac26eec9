"""Memory stays flat when graphs are recorded and dropped, with or without backward.

Each loop runs warm-up iterations first (compilation, caches, first tape), then measures
Python-visible allocations (tracemalloc: numpy buffers, array.array tape storage, Python
objects) and the resident set size (/proc/self/statm: also catches allocations Numba makes
in compiled code) at checkpoints through the loop. The largest growth over the baseline at
any checkpoint must stay under the bound: "flat", not "comes back down eventually".
PyTorch frees a graph as soon as its last tensor goes away, so a dropped graph costs nothing.
"""
import gc
import os
import time
import tracemalloc
import weakref

import numpy as np
import pytest

import tapegrad as tg
from tapegrad._core import tape

MB = 1 << 20
BOUND = 1 * MB
N_ITERS = 10_000


def rss_bytes():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:          # not Linux: tracemalloc still applies
        return 0


def measure(step, n=N_ITERS, warmup=1_000, traced=2_000, checkpoints=10):
    """Run ``step(i)`` n times after warm-up; return the worst growth seen at checkpoints.

    The first ``n - traced`` iterations watch the resident set size; the last ``traced``
    ones run under tracemalloc (which slows every allocation down, hence not all of them).
    """
    for i in range(warmup):
        step(i)
    gc.collect()
    t0 = time.perf_counter()
    every = max(1, n // checkpoints)
    base_rss = rss_bytes()
    worst_py = worst_rss = 0
    for i in range(n - traced):
        step(i)
        if (i + 1) % every == 0:
            gc.collect()
            worst_rss = max(worst_rss, rss_bytes() - base_rss)
    gc.collect()
    tracemalloc.start()
    try:
        base_py = tracemalloc.get_traced_memory()[0]
        for i in range(n - traced, n):
            step(i)
            if (i + 1) % every == 0 or i == n - 1:
                gc.collect()
                worst_py = max(worst_py, tracemalloc.get_traced_memory()[0] - base_py)
    finally:
        tracemalloc.stop()
    return {"py": worst_py, "rss": worst_rss, "seconds": time.perf_counter() - t0}


def assert_flat(stats, bound=BOUND):
    assert stats["py"] < bound, "traced Python memory grew by %.2f MB (bound %.2f MB)" % (
        stats["py"] / MB, bound / MB)
    assert stats["rss"] < bound, "resident set grew by %.2f MB (bound %.2f MB)" % (
        stats["rss"] / MB, bound / MB)


# ----------------------------------------------------------------------------- loops
def test_record_and_backward_loop_is_flat():
    x = tg.tensor(np.linspace(-1, 1, 10), dtype=tg.float64, requires_grad=True)
    xv = np.linspace(-1, 1, 10)

    def step(i):
        x.grad = None
        y = ((x * 2 + 1).exp().sin() * x).sum()
        y.backward()

    stats = measure(step)
    u = np.exp(2 * xv + 1)
    expected = np.cos(u) * u * 2 * xv + np.sin(u)
    np.testing.assert_allclose(np.array(x.grad.tolist()), expected, rtol=1e-12)
    assert_flat(stats)


def test_fresh_leaves_every_iteration_is_flat():
    """The usual script: new input tensors every iteration."""
    vals = np.arange(10.0) / 10

    def step(i):
        x = tg.tensor(vals, requires_grad=True)
        w = tg.tensor(vals + 1, requires_grad=True)
        ((x * w).tanh() + x / w).mean().backward()
        assert x.grad is not None

    assert_flat(measure(step, n=5_000, warmup=500, traced=1_500))


def test_record_only_loop_is_flat():
    """Graphs recorded under grad mode and dropped without backward must be freed."""
    x = tg.tensor(np.linspace(-1, 1, 10), requires_grad=True)
    # a graph built before the loop must still backward correctly after it
    keep = (x * x).sum()

    def step(i):
        y = ((x * 2 + 1).exp().sin() * x).sum()
        del y

    stats = measure(step)
    keep.backward()
    np.testing.assert_allclose(np.array(x.grad.tolist()), 2 * np.linspace(-1, 1, 10), rtol=1e-6)
    assert_flat(stats)


def test_training_loop_is_flat_and_learns():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(32, 3))
    true_w = np.array([1.5, -2.0, 0.5])
    Y = X @ true_w + 0.25
    Xt, Yt = tg.tensor(X, dtype=tg.float64), tg.tensor(Y, dtype=tg.float64)
    w = tg.zeros(3, dtype=tg.float64, requires_grad=True)
    b = tg.zeros(1, dtype=tg.float64, requires_grad=True)
    losses = []

    def step(i):
        loss = ((Xt @ w + b - Yt) ** 2).mean()
        loss.backward()
        with tg.no_grad():
            w.sub_(0.1 * w.grad)
            b.sub_(0.1 * b.grad)
        w.grad.zero_()
        b.grad.zero_()
        if i % 500 == 0:
            losses.append(loss.item())

    stats = measure(step, n=5_000, warmup=500, traced=1_500)
    assert losses[-1] < 1e-16 < losses[0]
    np.testing.assert_allclose(np.array(w.tolist()), true_w, rtol=1e-7)
    np.testing.assert_allclose(b.item(), 0.25, rtol=1e-7)
    assert w.is_leaf and w.requires_grad
    assert_flat(stats)


def test_no_grad_loop_is_flat():
    x = tg.tensor(np.linspace(-1, 1, 10), requires_grad=True)

    def step(i):
        with tg.no_grad():
            y = ((x * 2 + 1).exp().sin() * x).sum()
        assert y.grad_fn is None

    assert_flat(measure(step, n=5_000, warmup=500, traced=1_500))


# ----------------------------------------------------------------------------- big buffers
@pytest.mark.parametrize("backward", [False, True])
def test_dropped_graphs_release_large_buffers(backward):
    """100k-element tensors: 200 recorded graphs hold ~160 MB if they are not freed. Dropped
    graphs on the current tape stay alive until it rotates, after ``tape.ROTATE_BYTES`` of
    saved values: the bound is that plus a few graphs."""
    x = tg.randn(100_000, requires_grad=True)

    def step(i):
        y = (x * x).exp()
        if backward:
            y.sum().backward()
            x.grad = None
        del y

    stats = measure(step, n=200, warmup=20, traced=100, checkpoints=10)
    assert_flat(stats, bound=tape.ROTATE_BYTES + 4 * MB)


# ----------------------------------------------------------------------------- lifetimes
def test_dropped_graph_frees_its_leaf():
    x = tg.randn(10, requires_grad=True)
    ref = weakref.ref(x)
    y = (x * 2).exp()
    del x, y
    gc.collect()
    assert ref() is None, "a leaf stays alive after every tensor of its graph was dropped"


def test_leaf_freed_after_backward():
    x = tg.randn(10, requires_grad=True)
    ref = weakref.ref(x)
    (x * 2).sum().backward()
    del x
    gc.collect()
    assert ref() is None


def test_graph_kept_alive_by_its_output():
    """The converse: a graph must live as long as its output, even across many other graphs."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x * x).sum()
    z = tg.tensor([3.0], requires_grad=True)
    for _ in range(2_000):
        (z * 2).sum().backward()
    y.backward()
    assert x.grad.tolist() == [3.0, 12.0]
    assert z.grad.tolist() == [4000.0]
