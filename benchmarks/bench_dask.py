"""Rosenbrock value and gradient at 10^7 points: a Dask LocalCluster against one process.

    python benchmarks/bench_dask.py [--points N] [--n 10] [--chunk C] [--workers 2] [--quick]

In one run, on the same points (n = 10 variables, float64):

1. tapegrad single process: ``tf.vmap(tf.grad_and_value(rosen))(X)`` with all the process's
   Numba threads, and with one thread (the reference of the scaling efficiency);
2. ``jax.jit(jax.vmap(jax.value_and_grad(rosen)))`` (skipped without jax);
3. tapegrad on a ``distributed.LocalCluster`` of ``--workers`` processes, one Dask thread and
   one Numba thread each (``NUMBA_NUM_THREADS=1``: the cores are the processes). The points
   are persisted on the workers first (generated there), so what is timed is the vmap's chunk
   tasks and their results kept on the workers (``client.persist`` + ``wait``), as a job at
   scale would leave them, not a gather of 1.6 GB to the client. Also ``reduce="sum"`` (the
   summed loss and gradient: a map-reduce, nothing per point leaves a worker).

Reported: medians of ``--repeats`` (3), every result checked (the cluster's against the
single process bit for bit on a sample of chunks, the sums against numpy); the chunk tasks'
compute times from the task stream; the overhead per chunk (wall x workers - compute time, per
chunk; and the slope between ``--chunk`` and ``--chunk / 10``); the scaling efficiency
(one-thread single-process time / (workers x cluster time)); the bytes shipped per worker (the
pickled program with its tape) and per chunk task.
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


def med(fn, repeats):
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), ts


def fmt(ts):
    return "[" + ", ".join("%.3f" % t for t in ts) + "]"


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
            out["r"] = gv(Xt)
        t, ts = med(run, repeats)
        g, v = out["r"]
        return t, ts, g.numpy(), v.numpy()
    finally:
        numba.set_num_threads(was)


def jax_time(X, repeats):
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
    v, g = f(Xj)
    jax.block_until_ready(g)
    out = {}

    def run():
        out["r"] = jax.block_until_ready(f(Xj))
    t, ts = med(run, repeats)
    v, g = out["r"]
    return t, ts, np.asarray(g), np.asarray(v)


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
    P, n, C = a.points, a.n, a.chunk
    import numba
    print("Rosenbrock n=%d, %d points (%.0f MB of inputs), float64; %d cores, numba %d threads"
          % (n, P, P * n * 8 / 1e6, os.cpu_count(), numba.get_num_threads()))
    X = np.random.default_rng(0).random((P, n)) * 2 - 0.5

    # 1. single process
    t_loc, ts, g_loc, v_loc = local(X, a.repeats, numba.get_num_threads())
    print("tapegrad single process, %d threads: %.3f s  %s" % (numba.get_num_threads(), t_loc, fmt(ts)))
    t_one, ts, g1, _ = local(X, a.repeats, 1)
    assert np.array_equal(g1, g_loc)
    print("tapegrad single process, 1 thread:  %.3f s  %s" % (t_one, fmt(ts)))
    # 2. jax
    jr = jax_time(X, a.repeats)
    if jr is None:
        print("jax: not installed")
    else:
        t_jax, ts, gj, vj = jr
        np.testing.assert_allclose(gj, g_loc, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(vj, v_loc, rtol=1e-12)
        print("jax.jit(vmap(value_and_grad)):       %.3f s  %s   (jax / tapegrad %.2fx)"
              % (t_jax, fmt(ts), t_jax / t_loc))
        del gj, vj
    del g1

    # 3. the cluster
    import dask.array as da
    from distributed import Client, LocalCluster, futures_of, get_task_stream, wait
    import tapegrad._dask as td
    td._reset_stats()
    t0 = time.perf_counter()
    os.environ["NUMBA_NUM_THREADS"] = "1"       # the workers' (spawned with this environment)
    try:
        cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=40)
    finally:
        del os.environ["NUMBA_NUM_THREADS"]
    client = Client(cluster)
    client.wait_for_workers(a.workers)
    assert set(client.run(lambda: __import__("numba").get_num_threads()).values()) == {1}
    print("\nLocalCluster: %d processes x 1 thread, started in %.1f s" % (a.workers, time.perf_counter() - t0))
    results = {}
    for chunk in (C, C // 10):
        Xd = client.persist(da.random.default_rng(0).random((P, n), chunks=(chunk, n)) * 2 - 0.5)
        wait(Xd)
        gav = tf.grad_and_value(rosen)
        gv = tf.vmap(gav)
        g, v = gv(Xd)
        # warm: every worker receives the program and loads the batched sweeps
        wait(client.persist(gv(Xd[:a.workers * 1000].rechunk(1000))))
        out = {}

        def run():
            if "r" in out:                  # forget the last results (same keys otherwise)
                keys = {f.key for f in futures_of(out["r"])}
                client.cancel(out.pop("r"))
                while keys & set(client.who_has()):
                    time.sleep(0.01)
            out["r"] = client.persist([g, v])
            wait(out["r"])
        with get_task_stream(client) as stream:
            t, ts = med(run, a.repeats)
        nch = len(g.chunks[0])
        comp = [sum(s["stop"] - s["start"] for s in r["startstops"] if s["action"] == "compute")
                for r in stream.data if "tapegrad-vmap" in str(r["key"]) and "-out" not in str(r["key"])]
        per_chunk = statistics.median(comp)
        over = (t * a.workers - sum(comp) / a.repeats) / nch
        results[chunk] = (t, nch, per_chunk, over)
        print("cluster, chunks of %d (%d chunks): %.3f s  %s   compute per chunk %.2f ms, "
              "overhead per chunk %.2f ms" % (chunk, nch, t, fmt(ts), per_chunk * 1e3, over * 1e3))
        # check: chunks 0 and the last against the single process, bit for bit
        gg, vv = out["r"]
        for i in (0, nch - 1):
            lo, hi = i * chunk, min(P, (i + 1) * chunk)
            Xi = Xd.blocks[i].compute()
            gl, vl = tf.vmap(tf.grad_and_value(rosen))(tg.from_numpy(Xi))
            assert np.array_equal(gg.blocks[i].compute(), gl.numpy())
            assert np.array_equal(vv.blocks[i].compute(), vl.numpy())
            assert hi - lo == Xi.shape[0]
        if chunk == C:
            layer = g.dask.layers[g.name.rsplit("-out", 1)[0]]
            prog = next(v.value for k, v in layer.items() if str(k).startswith("tapegrad-program-"))
            task = next(v for k, v in layer.items() if isinstance(k, tuple))
            tape = next(iter(gav._cache.tapes.values()))[0]
            arrivals = client.run(td.stats)
            print("bytes: tape %d B (pickled; %d entries), program %d B (the tape, the function, "
                  "the call's layout) once per worker; a chunk task %d B; programs received per "
                  "worker %s" % (len(pickle.dumps(tape)), len(tape), len(pickle.dumps(prog)),
                                 len(pickle.dumps(task)),
                                 sorted(s["arrivals"] for s in arrivals.values())))
            # reduce="sum": only the sums leave the workers
            gs, vs = tf.vmap(tf.grad_and_value(rosen), reduce="sum")(Xd)
            rr = {}

            def red():
                rr["r"] = client.compute([gs, vs], sync=True)
            tr, ts = med(red, a.repeats)
            Xall = Xd.compute()
            np.testing.assert_allclose(rr["r"][1], (lambda A, B: (100 * (B - A * A) ** 2 + (1 - A) ** 2).sum())(
                Xall[:, :-1], Xall[:, 1:]), rtol=1e-10)
            del Xall
            print("cluster, reduce='sum' (chunks of %d): %.3f s  %s" % (chunk, tr, fmt(ts)))
        out.clear()
        g = v = gg = vv = Xd = None          # (free the persisted arrays)
    client.close()
    cluster.close()
    t_c, nch, per_chunk, over = results[C]
    t_s, nch_s, _, _ = results[C // 10]
    slope = (t_s - t_c) * a.workers / (nch_s - nch)
    print("\nsummary (medians):")
    print("  single process %d threads %.3f s, 1 thread %.3f s; cluster of %d x 1 thread %.3f s"
          % (numba.get_num_threads(), t_loc, t_one, a.workers, t_c))
    if jr is not None:
        print("  jax %.3f s: cluster / jax %.2fx faster, single process / jax %.2fx"
              % (jr[0], jr[0] / t_c, jr[0] / t_loc))
    print("  scaling efficiency (1-thread time / (%d x cluster time)): %.0f%%"
          % (a.workers, 100 * t_one / (a.workers * t_c)))
    print("  against the single process on the same cores: %.2fx" % (t_loc / t_c))
    print("  per chunk of %d points: compute %.1f ms (%.1f ns/point), overhead %.2f ms "
          "(wall); slope between chunk sizes %.2f ms per extra chunk"
          % (C, per_chunk * 1e3, per_chunk / C * 1e9, over * 1e3, slope * 1e3))


if __name__ == "__main__":
    main()
