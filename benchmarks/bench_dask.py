"""Rosenbrock value and gradient at 10^7 points: a Dask LocalCluster against one process.

    python benchmarks/bench_dask.py [--points N] [--n 10] [--chunk C] [--workers 2] [--quick]

In one run, on the same points (n = 10 variables, float64):

1. tapegrad in one process: ``tf.vmap(tf.grad_and_value(rosen))(X)`` with all the process's
   Numba threads, and with one thread (the reference of the scaling efficiency);
2. ``jax.jit(jax.vmap(jax.value_and_grad(rosen)))`` (skipped without jax);
3. tapegrad on a ``distributed.LocalCluster`` of ``--workers`` processes, one Dask thread and
   one Numba thread each (``NUMBA_NUM_THREADS=1``: the cores are the processes). The points
   are generated and persisted on the workers first, so what is timed is the vmap's chunk
   tasks with their results kept on the workers (``client.persist`` + ``wait``), as a job at
   scale leaves them, not a gather to the client; then ``reduce="sum"`` (a map-reduce: only
   the sums leave the workers). Chunks of ``--chunk`` and of ``--chunk / 10`` points.

Each configuration is timed ``--repeats`` times (median, and the fastest repeat) in wall time
and in CPU time: the process's CPU for one process, the workers' processes' CPU for the
cluster (``client.run(time.process_time)``), of which the chunk tasks' local vmap calls
(``tapegrad._dask.stats()``: their thread's CPU, all of it with one Numba thread) and the rest
(Dask's per-task work, transfers, the event loops: the overhead). On a machine shared with
other jobs the wall times measure the contention as much as the work; the CPU times do not.

Reported: per point and per chunk, compute and overhead; the scaling efficiency, 1-thread
time / (workers x cluster time), in wall time and in CPU time; bytes shipped per worker (the
pickled program with its tape) and per chunk task. Every result is checked: the cluster's
against the single process bit for bit on two chunks, jax's and the sums against it.
"""
import argparse
import os
import pickle
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tapegrad as tg  # noqa: E402
import tapegrad.func as tf  # noqa: E402


def rosen(x):
    a, b = x[:-1], x[1:]
    return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()


def measure(fn, repeats, cpu):
    """fn() ``repeats`` times: (wall seconds, CPU seconds from ``cpu()``) of each."""
    out = []
    for _ in range(repeats):
        c, t = cpu(), time.perf_counter()
        fn()
        out.append((time.perf_counter() - t, cpu() - c))
    return out


def show(label, runs, extra=""):
    w = [r[0] for r in runs]
    c = [r[1] for r in runs]
    print("%-44s wall %7.3f s [%.3f]   cpu %7.3f s [%.3f]%s"
          % (label, statistics.median(w), min(w), statistics.median(c), min(c), extra))
    return statistics.median(w), min(w), statistics.median(c), min(c)


def local(X, repeats, threads):
    import numba
    was = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        gv = tf.vmap(tf.grad_and_value(rosen))
        Xt = tg.from_numpy(X)
        gv(tg.from_numpy(X[:1000]))                         # warm (records, loads the sweeps)
        out = {}

        def run():
            out.pop("r", None)
            out["r"] = gv(Xt)
        runs = measure(run, repeats, time.process_time)
        g, v = out["r"]
        return runs, g.numpy(), v.numpy()
    finally:
        numba.set_num_threads(was)


def jax_runs(X, repeats):
    try:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
    except ImportError:
        return None

    def rj(x):
        a, b = x[:-1], x[1:]
        return jnp.sum(100 * (b - a * a) ** 2 + (1 - a) ** 2)
    f = jax.jit(jax.vmap(jax.value_and_grad(rj)))
    Xj = jnp.asarray(X)
    jax.block_until_ready(f(Xj))
    out = {}

    def run():
        out.pop("r", None)
        out["r"] = jax.block_until_ready(f(Xj))
    runs = measure(run, repeats, time.process_time)
    v, g = out["r"]
    return runs, np.asarray(g), np.asarray(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=10 ** 7)
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--chunk", type=int, default=10 ** 6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="10^6 points, chunks of 10^5")
    a = ap.parse_args()
    if a.quick:
        a.points, a.chunk = 10 ** 6, 10 ** 5
    P, n, C, W = a.points, a.n, a.chunk, a.workers
    import numba
    print("load average at the start: %.1f %.1f %.1f" % os.getloadavg())
    print("Rosenbrock n=%d, %d points (%.0f MB of inputs), float64; %d cores, numba %d threads; "
          "medians of %d [fastest]" % (n, P, P * n * 8 / 1e6, os.cpu_count(),
                                       numba.get_num_threads(), a.repeats))
    X = np.random.default_rng(0).random((P, n)) * 2 - 0.5

    # 1. one process
    runs, g_loc, v_loc = local(X, a.repeats, numba.get_num_threads())
    loc = show("tapegrad, one process, %d threads" % numba.get_num_threads(), runs)
    runs, g1, _ = local(X, a.repeats, 1)
    assert np.array_equal(g1, g_loc)
    one = show("tapegrad, one process, 1 thread", runs)
    del g1
    # 2. jax
    jr = jax_runs(X, a.repeats)
    if jr is None:
        print("jax: not installed")
    else:
        runs, gj, vj = jr
        np.testing.assert_allclose(gj, g_loc, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(vj, v_loc, rtol=1e-12)
        jx = show("jax.jit(vmap(value_and_grad))", runs)
        del gj, vj
    del X, g_loc, v_loc

    # 3. the cluster
    import dask.array as da
    from distributed import Client, LocalCluster, futures_of, wait
    import tapegrad._dask as td
    t0 = time.perf_counter()
    os.environ["NUMBA_NUM_THREADS"] = "1"       # the workers' (spawned with this environment)
    try:
        cluster = LocalCluster(n_workers=W, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=40)
    finally:
        del os.environ["NUMBA_NUM_THREADS"]
    client = Client(cluster)
    client.wait_for_workers(W)
    assert set(client.run(lambda: __import__("numba").get_num_threads()).values()) == {1}
    print("\nLocalCluster: %d processes x 1 thread, started in %.1f s"
          % (W, time.perf_counter() - t0))

    def stats():
        return client.run(td.stats)

    def worker_cpu():
        return sum(client.run(time.process_time).values())
    res = {}
    for chunk in (C, C // 10):
        Xd = client.persist(da.random.default_rng(0).random((P, n), chunks=(chunk, n)) * 2 - 0.5)
        wait(Xd)
        gav = tf.grad_and_value(rosen)
        gv = tf.vmap(gav)
        g, v = gv(Xd)
        wait(client.persist(gv(Xd[:W * 1000].rechunk(1000))))    # warm: program, sweeps
        nch = len(g.chunks[0])
        out = {}

        def run():
            if "r" in out:                  # forget the last results (same keys otherwise)
                keys = {f.key for f in futures_of(out["r"])}
                client.cancel(out.pop("r"))
                while keys & set(client.who_has()):
                    time.sleep(0.01)
            out["r"] = client.persist([g, v])
            wait(out["r"])
        s0 = stats()
        runs = measure(run, a.repeats, worker_cpu)
        s1 = stats()
        in_cpu = sum(s1[w]["cpu"] - s0[w]["cpu"] for w in s1) / a.repeats
        in_wall = sum(s1[w]["seconds"] - s0[w]["seconds"] for w in s1) / a.repeats
        assert sum(s1[w]["chunks"] - s0[w]["chunks"] for w in s1) == nch * a.repeats
        r = show("cluster, %d chunks of %d" % (nch, chunk), runs)
        cpu_med = r[2]
        res[chunk] = r + (nch, in_cpu, in_wall)
        print("    in the chunks' vmap calls: cpu %.3f s (%.1f ns/point), wall %.3f s; the rest "
              "(Dask, transfers, loops) cpu %.3f s = %.2f ms per chunk"
              % (in_cpu, in_cpu / P * 1e9, in_wall, cpu_med - in_cpu,
                 (cpu_med - in_cpu) / nch * 1e3))
        gg, vv = out["r"]
        for i in (0, nch - 1):                  # bit for bit against one process
            Xi = Xd.blocks[i].compute()
            gl, vl = gv(tg.from_numpy(Xi))
            assert np.array_equal(gg.blocks[i].compute(), gl.numpy())
            assert np.array_equal(vv.blocks[i].compute(), vl.numpy())
        if chunk == C:
            layer = g.dask.layers[g.name.rsplit("-out", 1)[0]]
            prog = next(x.value for k, x in layer.items() if str(k).startswith("tapegrad-program-"))
            task = next(x for k, x in layer.items() if isinstance(k, tuple))
            tape = next(iter(gav._cache.tapes.values()))[0]
            res["bytes"] = (len(pickle.dumps(tape)), len(tape), len(pickle.dumps(prog)),
                            len(pickle.dumps(task)))
            print("    bytes: tape %d B pickled (%d entries); the program (tape, function, call "
                  "layout) %d B, once per worker and compute; a chunk task %d B" % res["bytes"])
            gs, vs = tf.vmap(gav, reduce="sum")(Xd)
            rr = {}

            def red():
                rr["r"] = client.compute([gs, vs], sync=True)
            s0 = stats()
            runs = measure(red, a.repeats, worker_cpu)
            s1 = stats()
            Xall = Xd.compute()
            A, B = Xall[:, :-1], Xall[:, 1:]
            np.testing.assert_allclose(rr["r"][1], (100 * (B - A * A) ** 2 + (1 - A) ** 2).sum(),
                                       rtol=1e-10)
            del Xall, A, B
            r = show("cluster, reduce='sum', %d chunks" % nch, runs)
            red_in = sum(s1[w]["cpu"] - s0[w]["cpu"] for w in s1) / a.repeats
            res["reduce"] = r + (red_in,)
            print("    in the chunks' vmap calls: cpu %.3f s (%.1f ns/point)"
                  % (red_in, red_in / P * 1e9))
        out.clear()
        g = v = gg = vv = Xd = None             # (free the persisted arrays)
    client.close()
    cluster.close()

    wc, wc_best, cc, cc_best, nch, in_cpu, in_wall = res[C]
    ws, _, cs, _, nch_s, in_cpu_s, _ = res[C // 10]
    print("\nsummary (medians [fastest]):")
    print("  one process: %d threads %.3f s [%.3f], 1 thread %.3f s [%.3f] (cpu %.3f s, %.1f "
          "ns/point); cluster of %d x 1 thread %.3f s [%.3f]"
          % (numba.get_num_threads(), loc[0], loc[1], one[0], one[1], one[2], one[2] / P * 1e9,
             W, wc, wc_best))
    if jr is not None:
        print("  jax %.3f s [%.3f] (cpu %.3f s): jax / cluster %.2fx [%.2fx], jax / one process "
              "%.2fx [%.2fx], jax cpu / tapegrad 1-thread cpu %.2fx"
              % (jx[0], jx[1], jx[2], jx[0] / wc, jx[1] / wc_best, jx[0] / loc[0],
                 jx[1] / loc[1], jx[2] / one[2]))
    print("  scaling efficiency, 1-thread time / (%d x cluster time): wall %.0f%% [%.0f%%], "
          "cpu %.0f%%" % (W, 100 * one[0] / (W * wc), 100 * one[1] / (W * wc_best),
                          100 * one[2] / cc))
    print("  per chunk of %d points: compute %.1f ms cpu (%.1f ns/point), overhead %.2f ms cpu; "
          "chunks of %d: overhead %.2f ms cpu per chunk"
          % (C, in_cpu / nch * 1e3, in_cpu / P * 1e9, (cc - in_cpu) / nch * 1e3, C // 10,
             (cs - in_cpu_s) / nch_s * 1e3))
    print("  load average at the end: %.1f %.1f %.1f" % os.getloadavg())


if __name__ == "__main__":
    main()
