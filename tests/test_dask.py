"""tapegrad.func.vmap over Dask arrays (tapegrad/_dask.py), on a real LocalCluster.

The cluster (2 worker processes, 1 thread each) is started once for the module; every compute
is bounded by a timeout. Results are compared bit for bit (float64) with the single-process
batched vmap, which itself is checked here against an analytic gradient or torch. The worker
killed in the last test is restarted by its nanny.
"""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

import tapegrad as tg  # noqa: E402
import tapegrad.func as tf  # noqa: E402
from tapegrad import _dask as td  # noqa: E402

TIMEOUT = 60                # seconds, any single compute on the cluster


def rosen(x):
    a, b = x[:-1], x[1:]
    return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()


def rosen_grad(X):
    """Rosenbrock's gradient, by hand (the independent oracle)."""
    a, b = X[:, :-1], X[:, 1:]
    g = np.zeros_like(X)
    g[:, :-1] += -400 * a * (b - a * a) - 2 * (1 - a)
    g[:, 1:] += 200 * (b - a * a)
    return g


def rosen_value(X):
    a, b = X[:, :-1], X[:, 1:]
    return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum(axis=1)


def mlp_loss(params, x, y):
    W1, b1, W2, b2 = params
    h = (x @ W1 + b1).tanh()
    return ((h @ W2 + b2 - y) ** 2).sum()


def _mlp(seed=1, P=1200, chunk=300):
    rs = np.random.default_rng(seed)
    params = (tg.tensor(rs.standard_normal((4, 8)) * 0.5), tg.tensor(rs.standard_normal(8) * 0.1),
              tg.tensor(rs.standard_normal((8, 1)) * 0.5), tg.tensor(rs.standard_normal(1) * 0.1))
    X = rs.standard_normal((P, 4))
    Y = rs.standard_normal((P, 1))
    return params, X, Y, da.from_array(X, chunks=(chunk, 4)), da.from_array(Y, chunks=(chunk, 1))


def _equal_trees(a, b):
    """The same tree with bit-identical leaves (Dask results computed, tensors as numpy)."""
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _equal_trees(x, y)
        return
    assert not isinstance(b, (tuple, list))
    a = np.asarray(a)
    b = b.numpy() if hasattr(b, "numpy") else np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)        # NaN equals NaN here; values bit for bit
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    import cloudpickle
    from distributed import Client, LocalCluster
    cloudpickle.register_pickle_by_value(sys.modules[__name__])    # workers need not import us
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=40)
    c = Client(cluster, timeout=TIMEOUT)
    try:
        c.wait_for_workers(2, timeout=TIMEOUT)
        here = tg.__file__
        assert set(c.run(lambda: __import__("tapegrad").__file__).values()) == {here}
        yield c
    finally:
        c.close()
        cluster.close()
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _compute(client, *xs):
    """The collections computed on the cluster (each bounded by TIMEOUT)."""
    return [f.result(timeout=TIMEOUT) for f in client.compute(list(xs))]


# ----------------------------------------------------------------------------- no cluster
def test_importing_tapegrad_imports_neither_dask_nor_tqdm():
    code = ("import sys, tapegrad, tapegrad.func as tf\n"
            "x = tapegrad.rand(300, 3, dtype=tapegrad.float64)\n"
            "tf.vmap(tf.grad(lambda v: (v * v).sum()))(x)\n"
            "bad = [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'tqdm')]\n"
            "assert not bad, bad\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(tg.__file__)))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)


def test_threaded_scheduler_equals_local_vmap_bit_for_bit():
    rs = np.random.default_rng(0)
    X = rs.standard_normal((2000, 10))
    Xd = da.from_array(X, chunks=(333, 10))                # uneven last chunk
    gv = tf.grad_and_value(rosen)
    g, v = tf.vmap(gv)(Xd)
    assert isinstance(g, da.Array) and g.chunks[0] == Xd.chunks[0] and g.shape == (2000, 10)
    with dask.config.set(scheduler="threads"):
        got = dask.compute(g, v)
    local = tf.vmap(gv)(tg.tensor(X))
    _equal_trees(got, local)
    np.testing.assert_allclose(got[0], rosen_grad(X), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(got[1], rosen_value(X), rtol=1e-12)


def test_in_dims_out_dims_and_mixed_arguments():
    rs = np.random.default_rng(2)
    X = rs.standard_normal((6, 500))                       # batch along dim 1
    S = rs.standard_normal(6)
    W = rs.standard_normal((500, 6))                       # batched tensor, dim 0

    def f(x, s, w):
        return ((x * s).tanh() * w).sum()
    vm = tf.vmap(tf.grad_and_value(f, argnums=(0, 2)), in_dims=(1, None, 0), out_dims=(1, 0))
    got = vm(da.from_array(X, chunks=(6, 128)), da.from_array(S, chunks=3), tg.tensor(W))
    with dask.config.set(scheduler="sync"):
        got = dask.compute(got)[0]
    _equal_trees(got, vm(tg.tensor(X), tg.tensor(S), tg.tensor(W)))
    (gx, gw), v = got                           # the oracle, by hand (points along dim 1)
    t = np.tanh(X * S[:, None])
    np.testing.assert_allclose(gx, S[:, None] * (1 - t * t) * W.T, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gw, t, rtol=1e-12)
    np.testing.assert_allclose(v, (t * W.T).sum(0), rtol=1e-12, atol=1e-14)


def vec(x):
    return (x * x).tanh() * x[0]


def test_vmap_of_jacrev_over_dask_equals_the_local_vmap():
    X = np.random.default_rng(2).standard_normal((40, 6))
    J = tf.vmap(tf.jacrev(vec))(da.from_array(X, chunks=(16, 6)))
    with dask.config.set(scheduler="sync"):
        J = J.compute()
    _equal_trees(J, tf.vmap(tf.jacrev(vec))(tg.tensor(X)))


@pytest.mark.xfail(strict=True, reason="issue 31 (nested transforms): the local vmap(jacrev(f)) "
                   "records jacrev's replay as constants and returns the first point's Jacobian "
                   "for every point; the Dask path runs the local vmap on each chunk")
def test_vmap_of_jacrev_over_dask_matches_the_oracle():
    X = np.random.default_rng(2).standard_normal((40, 6))
    J = tf.vmap(tf.jacrev(vec))(da.from_array(X, chunks=(16, 6)))
    with dask.config.set(scheduler="sync"):
        J = J.compute()
    t = np.tanh(X * X)                          # d tanh(x_i^2) x_0 / dx_j
    want = np.zeros((40, 6, 6))
    for i in range(6):
        want[:, i, i] += (1 - t[:, i] ** 2) * 2 * X[:, i] * X[:, 0]
        want[:, i, 0] += t[:, i]
    np.testing.assert_allclose(J, want, rtol=1e-12, atol=1e-12)


def test_reduce_sum_and_mean_map_reduce_over_chunks():
    params, X, Y, Xd, Yd = _mlp(P=900, chunk=200)
    vm = tf.vmap(tf.grad_and_value(mlp_loss), in_dims=(None, 0, 0), reduce="sum")
    (gs, vs) = vm(params, Xd, Yd)
    assert all(isinstance(g, da.Array) for g in gs) and gs[0].shape == (4, 8)
    with dask.config.set(scheduler="threads"):
        gs, vs = dask.compute(gs, vs)
    per_g, per_v = tf.vmap(tf.grad_and_value(mlp_loss), in_dims=(None, 0, 0))(params, tg.tensor(X),
                                                                              tg.tensor(Y))
    for a, b in zip(gs, per_g):
        np.testing.assert_allclose(a, b.numpy().sum(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(vs, per_v.numpy().sum(), rtol=1e-12)
    local = vm(params, tg.tensor(X), tg.tensor(Y))          # the local reduce= path (in pieces)
    for a, b in zip(gs, local[0]):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-12, atol=1e-12)
    torch = pytest.importorskip("torch")
    tp = [torch.tensor(p.numpy(), requires_grad=True) for p in params]
    h = torch.tanh(torch.tensor(X) @ tp[0] + tp[1])
    L = ((h @ tp[2] + tp[3] - torch.tensor(Y)) ** 2).sum()
    L.backward()
    for a, p in zip(gs, tp):
        np.testing.assert_allclose(a, p.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(vs, L.item(), rtol=1e-12)
    vmean = tf.vmap(tf.grad_and_value(mlp_loss), in_dims=(None, 0, 0), reduce="mean")
    gm, vmn = vmean(params, Xd, Yd)
    with dask.config.set(scheduler="sync"):
        np.testing.assert_allclose(vmn.compute(), L.item() / 900, rtol=1e-12)
        np.testing.assert_allclose(gm[0].compute(), tp[0].grad.numpy() / 900, rtol=1e-10)


def test_bad_arguments_raise_before_any_compute():
    Xd = da.from_array(np.ones((10, 3)), chunks=5)
    with pytest.raises(ValueError, match="same size in the mapped dimension"):
        tf.vmap(tf.grad(lambda a, b: (a * b).sum()))(Xd, da.ones((9, 3), chunks=5))
    with pytest.raises(ValueError, match="ProgressBar"):
        tf.vmap(tf.grad(rosen), progress=True)(Xd)
    with pytest.raises(ValueError, match="out_dims must be 0"):
        tf.vmap(tf.grad(rosen), out_dims=1, reduce="sum")
    with pytest.raises(ValueError, match="compute_chunk_sizes"):
        tf.vmap(tf.grad(rosen))(Xd[Xd[:, 0] > 0])
    with pytest.raises(TypeError, match="reduce='sum'"):      # grad of a sum over Dask points
        tf.grad(lambda w: tf.vmap(lambda w, x: (w * x).sum(), in_dims=(None, 0))(w, Xd).sum())(
            tg.ones(3, dtype=tg.float64))


def test_a_chunk_with_a_wrong_shape_or_a_failing_point_is_named():
    X = np.random.default_rng(5).random((40, 4))
    Xd = da.from_array(X, chunks=10)

    def lie(b, block_info=None):                # block 2 breaks the shape its metadata claims
        return b[:, :3] if block_info[0]["chunk-location"][0] == 2 else b
    bad = Xd.map_blocks(lie, dtype=X.dtype)
    with pytest.raises(ValueError, match=r"chunk 2 \(points 20 to 29\) of vmap\(grad\(rosen\)\): "
                                         r"argument 0 has a block of shape \(10, 3\), expected "
                                         r"\(10, 4\)"):
        with dask.config.set(scheduler="sync"):
            tf.vmap(tf.grad(rosen))(bad).compute()

    def picky(x):
        if x.sum() > 3.5:                       # a point taking the other branch raises there
            raise ArithmeticError("too big")
        return (x * x).sum()
    Xs = X.copy()
    Xs[27] = 1.0
    with pytest.raises(ArithmeticError, match=r"chunk 2 \(points 20 to 29\).*too big"):
        with dask.config.set(scheduler="sync"):
            tf.vmap(tf.grad(picky))(da.from_array(Xs, chunks=10)).compute()


def test_nan_points_are_data_not_errors():
    """Decision: a NaN input is a value (torch, JAX and numpy give NaN results for it, and
    so does the local vmap): its point's results are NaN, the other points are untouched."""
    X = np.random.default_rng(6).random((60, 5))
    X[[3, 31], 2] = np.nan
    g, v = tf.vmap(tf.grad_and_value(rosen))(da.from_array(X, chunks=16))
    with dask.config.set(scheduler="threads"):
        got = dask.compute(g, v)
    _equal_trees(got, tf.vmap(tf.grad_and_value(rosen))(tg.tensor(X)))
    assert np.isnan(got[1][[3, 31]]).all() and not np.isnan(np.delete(got[1], [3, 31])).any()
    ok = ~np.isnan(X).any(axis=1)
    np.testing.assert_allclose(got[0][ok], rosen_grad(X[ok]), rtol=1e-12, atol=1e-9)


# ----------------------------------------------------------------------------- on the cluster
def test_cluster_rosenbrock_and_mlp_equal_local_vmap_bit_for_bit(client):
    rs = np.random.default_rng(7)
    X = rs.standard_normal((6000, 10))
    Xd = da.from_array(X, chunks=(700, 10))
    gv = tf.grad_and_value(rosen)
    g, v = tf.vmap(gv)(Xd)
    fwd = tf.vmap(rosen)(Xd)
    got = _compute(client, g, v, fwd)
    local = tf.vmap(gv)(tg.tensor(X))
    _equal_trees(tuple(got[:2]), local)
    _equal_trees(got[2], tf.vmap(rosen)(tg.tensor(X)))
    np.testing.assert_allclose(got[0], rosen_grad(X), rtol=1e-12, atol=1e-8)

    params, X, Y, Xd, Yd = _mlp()
    vm = tf.vmap(tf.grad_and_value(mlp_loss), in_dims=(None, 0, 0))
    gs, vs = vm(params, Xd, Yd)
    got = _compute(client, *gs, vs)
    lg, lv = vm(params, tg.tensor(X), tg.tensor(Y))
    _equal_trees(tuple(got), tuple(lg) + (lv,))
    torch = pytest.importorskip("torch")
    for p in (0, 555, 1199):                    # a few points against torch
        tp = [torch.tensor(q.numpy(), requires_grad=True) for q in params]
        h = torch.tanh(torch.tensor(X[p]) @ tp[0] + tp[1])
        L = ((h @ tp[2] + tp[3] - torch.tensor(Y[p])) ** 2).sum()
        L.backward()
        for k in range(4):
            np.testing.assert_allclose(got[k][p], tp[k].grad.numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got[4][p], L.item(), rtol=1e-12)


def test_cluster_ships_the_program_once_per_worker(client):
    def rosen2(x):                              # a function of its own: a fresh program
        a, b = x[:-1], x[1:]
        return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum() * 0.5
    X = np.random.default_rng(8).random((4000, 10))
    Xd = da.from_array(X, chunks=(100, 10))     # 40 chunks
    g, v = tf.vmap(tf.grad_and_value(rosen2))(Xd)
    before = client.run(td.stats)
    got = _compute(client, g, v)
    after = client.run(td.stats)
    _equal_trees(tuple(got), tf.vmap(tf.grad_and_value(rosen2))(tg.tensor(X)))
    chunks = sum(after[w]["chunks"] - before[w]["chunks"] for w in after)
    assert chunks == 40
    for w in after:
        ran = after[w]["chunks"] - before[w]["chunks"]
        assert after[w]["arrivals"] - before[w]["arrivals"] == (1 if ran else 0), (before, after)
        assert after[w]["loads"] - before[w]["loads"] == (1 if ran else 0), (before, after)
    # what travels: the program once (its tape included), each chunk task only references
    prog = next(p for p in td._LOADED.values() if p._state and p._state["desc"].endswith("(rosen2))"))
    ship = len(pickle.dumps(prog))
    assert ship < 8192 and ship >= len(prog.blob)
    layer = g.dask.layers[g.name.rsplit("-out", 1)[0]]
    task = next(t for k, t in layer.items() if isinstance(k, tuple))
    assert len(pickle.dumps(task)) < 600, len(pickle.dumps(task))


def test_cluster_guard_failures_record_again_on_the_workers(client):
    def branchy(x):
        if x.sum() > 5:
            return (x * x).sum()
        return (x ** 3).sum() * 0.25
    X = np.random.default_rng(9).random((3000, 10)) * 1.2 - 0.1
    assert (X.sum(1) > 5).any() and (X.sum(1) <= 5).any()
    X[0] = 0.9                                   # recorded on the "> 5" branch
    before = client.run(td.stats)
    g = tf.vmap(tf.grad(branchy))(da.from_array(X, chunks=(250, 10)))
    (got,) = _compute(client, g)
    after = client.run(td.stats)
    _equal_trees(got, tf.vmap(tf.grad(branchy))(tg.tensor(X)))
    want = np.where(X.sum(1, keepdims=True) > 5, 2 * X, 0.75 * X * X)
    np.testing.assert_allclose(got, want, rtol=1e-14)
    assert sum(after[w]["recordings"] - before[w].get("recordings", 0) for w in after) >= 1


def test_cluster_reduce_sum_and_dask_progress(client, capsys):
    from distributed import progress, wait
    params, X, Y, Xd, Yd = _mlp(seed=3)
    gs, vs = tf.vmap(tf.grad_and_value(mlp_loss), in_dims=(None, 0, 0), reduce="sum")(params, Xd, Yd)
    got = _compute(client, *gs, vs)
    per = tf.vmap(tf.grad_and_value(mlp_loss), in_dims=(None, 0, 0))(params, tg.tensor(X), tg.tensor(Y))
    for a, b in zip(got, tuple(per[0]) + (per[1],)):
        np.testing.assert_allclose(a, b.numpy().sum(axis=0), rtol=1e-12, atol=1e-12)
    capsys.readouterr()
    fut = client.persist(vs)                    # not asked: nothing printed
    wait(fut, timeout=TIMEOUT)
    assert capsys.readouterr().out == ""
    fut = client.persist(tf.vmap(tf.grad(rosen))(da.from_array(X[:, :3].copy(), chunks=100)))
    progress(fut, notebook=False)               # asked: Dask's own report
    out = capsys.readouterr().out
    assert "100%" in out and "Completed" in out, out


def test_cluster_survives_a_killed_worker(client, tmp_path):
    """A worker process dies in the middle of the job (its first run of block 9 exits the
    process); Dask re-runs the lost tasks elsewhere and the nanny restarts the worker: the
    result is complete and right. Last in the module: the cluster is changed by it."""
    marker = str(tmp_path / "killed")
    X = np.random.default_rng(10).random((3000, 10))

    def killer(b, block_info=None):
        if block_info[0]["chunk-location"][0] == 9 and not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
        return b
    Xd = da.from_array(X, chunks=(200, 10)).map_blocks(killer, dtype=X.dtype)
    g, v = tf.vmap(tf.grad_and_value(rosen))(Xd)  # (recorded on point 0: no kill on the client)
    got = _compute(client, g, v)
    assert os.path.exists(marker)               # the worker did die
    _equal_trees(tuple(got), tf.vmap(tf.grad_and_value(rosen))(tg.tensor(X)))
