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


# ----------------------------------------------------------------------------- liveness
# Issue 24 finding 3: ``c = x * 2`` kept alive, results computed from it dropped: torch frees
# each with its last tensor (+1.1 MB for 300 dropped ``c.exp()`` of 10^5 floats); the tape
# must not keep their saved values until another graph's backward (it held +115 MB).
def _liveness_run(keep_list):
    x = tg.ones(100_000, requires_grad=True)
    c = x * 2
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        refs = []
        if keep_list:                      # 300 alive at once, then dropped together
            ys = [c.exp() for _ in range(300)]
            refs = [weakref.ref(y._data) for y in ys]
            del ys
        else:                              # each dropped at once
            for _ in range(300):
                y = c.exp()
                refs.append(weakref.ref(y._data))
                del y
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    alive = sum(r() is not None for r in refs)
    return grown, alive, x, c


@pytest.mark.parametrize("keep_list", [True, False], ids=["dropped-together", "dropped-each"])
def test_dropped_results_are_freed(keep_list):
    grown, alive, x, c = _liveness_run(keep_list)
    # a collection runs when the dead results reach a quarter of the tape's saved bytes
    # (tape.COLLECT_MIN at least): a few stay until the next one
    assert alive <= tape.COLLECT_MIN // 400_000 + 1, "%d of 300 dropped results alive" % alive
    assert grown < 5 * MB, "%.1f MB still held" % (grown / MB)
    # the graph still works: c's gradient through a new result
    c.exp().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2.0), rtol=1e-6)


def _grad_kept_vs_numpy(make_pair):
    """Results kept (directly or through a consumer) among hundreds of dropped ones, on one
    tape or two joined: backward still gives the right gradient after the collections."""
    x = tg.tensor(np.linspace(-1, 1, 40_000), dtype=tg.float64, requires_grad=True)
    w = tg.tensor(np.linspace(0.5, 1.5, 40_000), dtype=tg.float64, requires_grad=True)
    c, d = make_pair(x, w)
    k = c.exp()                              # kept: its saved value is needed
    z = (d.sin() * c).sum()                  # kept through a consumer: sin's and mul's saves
    for i in range(120):                     # dropped: ~40 MB of saved values
        (c.exp() if i % 2 else d.cos() * c).neg()
    gc.collect()
    tp = tape.resolve(c)[0]
    freed = sum(a is tape._EMPTY_SAVED[1] for a in tp.XO[1])
    assert freed >= 60, "only %d saved values freed" % freed
    (k.sum() + z).backward(retain_graph=True)
    xv, wv = np.linspace(-1, 1, 40_000), np.linspace(0.5, 1.5, 40_000)
    return x, w, xv, wv, k, z


def test_kept_results_still_differentiate():
    x, w, xv, wv, k, z = _grad_kept_vs_numpy(lambda x, w: (x * 3, x * w))
    # k = exp(3x), z = sum(sin(xw) 3x)
    gx = 3 * np.exp(3 * xv) + np.cos(xv * wv) * wv * 3 * xv + np.sin(xv * wv) * 3
    gw = np.cos(xv * wv) * xv * 3 * xv
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-10, atol=1e-14)
    # retain_graph: the second backward still has every saved value it needs
    x.grad = w.grad = None
    k.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp(3 * xv), rtol=1e-12)


def test_kept_results_across_joined_tapes():
    def pair(x, w):
        a = x * 3                            # two graphs on different tapes ...
        (x * 1).sum().backward()             # (retires the current tape)
        x.grad = None
        b = x * w
        assert tape.resolve(a)[0] is not tape.resolve(b)[0]
        return a, b                          # ... joined by the ops on both
    x, w, xv, wv, k, z = _grad_kept_vs_numpy(pair)
    gx = 3 * np.exp(3 * xv) + np.cos(xv * wv) * wv * 3 * xv + np.sin(xv * wv) * 3
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-10, atol=1e-14)


def test_dropped_result_whose_grad_fn_is_kept():
    """A grad_fn object held after its tensor is dropped keeps its entry (and what it reads)."""
    x = tg.ones(100_000, requires_grad=True)
    c = x * 2
    fn = c.exp().grad_fn
    for _ in range(40):
        c.exp()
    gc.collect()
    assert fn.name() == "ExpBackward0"
    assert fn.next_functions[0][0].name() == "MulBackward0"


def test_collection_frees_what_a_backward_consumed():
    """Entries a backward freed (retain_graph=False) while other results of the tape stay
    alive: their saved values are released by the next collection, not kept until the tape
    dies."""
    x = tg.ones(100_000, requires_grad=True)
    c = x * 2
    y = c.exp()
    y.sum().backward()                       # y's entry consumed; y alive
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for _ in range(100):
            c.exp()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 5 * MB
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


# ----------------------------------------------------------------------------- registry
# Collections find the live tensors of a tape in the registry the recording paths fill
# (tape.register), checked complete by reference counts; a heap scan (gc.get_referrers, tens
# of ms in a big process) only when a reference is unaccounted for.
def test_dropped_results_collect_without_heap_scan():
    before = tape.FALLBACKS[0]
    _grad_kept_vs_numpy(lambda x, w: (x * 3, x * w))
    grown, alive, x, c = _liveness_run(False)
    assert alive <= tape.COLLECT_MIN // 400_000 + 1
    assert tape.FALLBACKS[0] == before, "%d heap scans" % (tape.FALLBACKS[0] - before)


def test_joined_tapes_collect_without_heap_scan():
    before = tape.FALLBACKS[0]
    test_kept_results_across_joined_tapes()
    assert tape.FALLBACKS[0] == before


@pytest.mark.parametrize("holder", ["tensor", "other"])
def test_unregistered_holder_falls_back_to_the_scan(holder):
    """A tensor that names the tape without being registered (as a path that forgot
    tape.register would make): the reference count tells, the collection scans the heap,
    and that tensor's entries stay alive (its gradient is exact); any other unaccounted
    holder of the tape only costs the scan."""
    x = tg.tensor(np.linspace(-1, 1, 100_000), requires_grad=True)
    c = x * 2
    e = c.exp()
    u = tg.tensor(np.zeros(1))
    if holder == "tensor":               # u names exp's node; e (registered) is dropped
        u._data, u._dtype, u._rg, u._tape, u._node = e._data, e._dtype, True, e._tape, e._node
        kept = u
    else:
        kept = e
        u = [e._tape]
    del e
    before = tape.FALLBACKS[0]
    for _ in range(40):
        c.exp().neg()                    # dropped: collections run
    gc.collect()
    assert tape.FALLBACKS[0] > before
    kept.sum().backward()
    xv = np.linspace(-1, 1, 100_000)
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.exp(2 * xv), rtol=1e-12)
