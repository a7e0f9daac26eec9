"""Progress reports and reductions of long local batches (tapegrad/_progress.py).

A batch run in parts (to report between them) must give the results of one call bit for bit;
the reports appear when asked (or on a terminal for long jobs) and never otherwise.
"""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.func as tf
from tapegrad import _progress as pr


def rosen(x):
    a, b = x[:-1], x[1:]
    return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()


def rosen_grad(X):
    a, b = X[:, :-1], X[:, 1:]
    g = np.zeros_like(X)
    g[:, :-1] += -400 * a * (b - a * a) - 2 * (1 - a)
    g[:, 1:] += 200 * (b - a * a)
    return g


def branchy(x):
    if x.sum() > 5:
        return (x * x).sum()
    return (x ** 3).sum() * 0.25


@pytest.fixture
def parts(monkeypatch):
    """Parts of a few chunks each (whatever the machine's speed); counts them."""
    seen = []
    shift = pr._shift

    def counting(args, p0, n):
        seen.append((p0, n))
        return shift(args, p0, n)
    monkeypatch.setattr(pr, "_shift", counting)
    monkeypatch.setattr(pr, "PART_SECONDS", 1e-9)
    return seen


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_progress_true_reports_and_parts_give_the_same_bits(capsys, parts):
    X = tg.tensor(np.random.default_rng(0).standard_normal((20_011, 10)))    # uneven tail
    g0, v0 = tf.vmap(tf.grad_and_value(rosen))(X)
    assert capsys.readouterr().err == "" and not parts
    g1, v1 = tf.vmap(tf.grad_and_value(rosen), progress=True)(X)
    err = capsys.readouterr().err
    assert len(parts) >= 3 and sum(n for _, n in parts) == 20_011
    assert [p for p, _ in parts] == sorted(p for p, _ in parts)
    _same(g0.numpy(), g1.numpy())
    _same(v0.numpy(), v1.numpy())
    np.testing.assert_allclose(g1.numpy(), rosen_grad(X.numpy()), rtol=1e-12, atol=1e-9)
    assert "vmap(grad_and_value(rosen))" in err and "100%" in err and "20.0k" in err, err


def test_progress_with_branch_variants_and_forward_only(capsys, parts):
    X = np.random.default_rng(1).random((9000, 10)) * 1.2 - 0.1
    X[0] = 0.9
    g = tf.vmap(tf.grad(branchy), progress=True)(tg.tensor(X))
    want = np.where(X.sum(1, keepdims=True) > 5, 2 * X, 0.75 * X * X)
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-14)
    v = tf.vmap(rosen, progress=True)(tg.tensor(X))
    _same(v.numpy(), tf.vmap(rosen)(tg.tensor(X)).numpy())
    err = capsys.readouterr().err
    assert err.count("100%") >= 2, err


def test_no_progress_unless_asked_or_long_on_a_terminal(capsys, monkeypatch, parts):
    X = tg.tensor(np.random.default_rng(2).random((5000, 10)))
    monkeypatch.setattr(pr, "AUTO_WORK", 0)             # every batch counts as long
    monkeypatch.setattr(pr, "AUTO_SECONDS", 0.0)
    tf.vmap(tf.grad(rosen))(X)                          # not a terminal: nothing
    tf.vmap(tf.grad(rosen), progress=False)(X)
    assert capsys.readouterr().err == "" and not parts
    monkeypatch.setattr(pr, "_interactive", lambda: True)
    tf.vmap(tf.grad(rosen), progress=False)(X)          # asked not to: nothing
    assert capsys.readouterr().err == "" and not parts
    g = tf.vmap(tf.grad(rosen))(X)                      # a terminal and a long job: a bar
    assert "100%" in capsys.readouterr().err and parts
    np.testing.assert_allclose(g.numpy(), rosen_grad(X.numpy()), rtol=1e-12, atol=1e-9)
    monkeypatch.setattr(pr, "AUTO_SECONDS", 1e9)        # projected short: parts, no bar
    tf.vmap(tf.grad(rosen))(X)
    assert capsys.readouterr().err == ""


def test_progress_without_tqdm_prints_a_plain_line(capsys, monkeypatch, parts):
    import sys
    monkeypatch.setitem(sys.modules, "tqdm", None)     # import tqdm raises ImportError
    X = tg.tensor(np.random.default_rng(3).random((3000, 10)))
    tf.vmap(tf.grad(rosen), progress=True)(X)
    err = capsys.readouterr().err
    assert "vmap(grad(rosen)): 100% 3000/3000 points" in err, err


def test_reduce_sum_and_mean_in_pieces(monkeypatch, capsys):
    X = np.random.default_rng(4).standard_normal((50_003, 10))
    monkeypatch.setattr(pr, "PIECE_BYTES", 8 * 11 * 4096)    # pieces of 4096 points
    seen = []
    take = pr._take_range

    def counting(x, d, i, j):
        seen.append((i, j))
        return take(x, d, i, j)
    monkeypatch.setattr(pr, "_take_range", counting)
    gs, vs = tf.vmap(tf.grad_and_value(rosen), reduce="sum", progress=True)(tg.tensor(X))
    assert len(seen) >= 12 and seen[0] == (0, 1024) and seen[-1][1] == 50_003
    a, b = X[:, :-1], X[:, 1:]
    np.testing.assert_allclose(gs.numpy(), rosen_grad(X).sum(0), rtol=1e-11)
    np.testing.assert_allclose(vs.item(), ((100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()), rtol=1e-12)
    assert gs.shape == (10,) and vs.shape == () and gs.dtype == tg.float64
    err = capsys.readouterr().err
    assert "100%" in err and "50.0k/50.0k" in err, err
    gm, vm = tf.vmap(tf.grad_and_value(rosen), reduce="mean")(tg.tensor(X))
    np.testing.assert_allclose(gm.numpy(), rosen_grad(X).mean(0), rtol=1e-11)
    # parameters unbatched: the gradient of the batch's summed loss
    W = tg.tensor(np.random.default_rng(5).standard_normal((10, 3)))

    def loss(w, x):
        return ((x @ w).tanh() ** 2).sum()
    gw, _ = tf.vmap(tf.grad_and_value(loss), in_dims=(None, 0), reduce="sum")(W, tg.tensor(X))
    t = np.tanh(X @ W.numpy())
    np.testing.assert_allclose(gw.numpy(), X.T @ (2 * t * (1 - t * t)), rtol=1e-10)


def test_bad_progress_and_reduce_arguments():
    with pytest.raises(TypeError, match="progress must be None, True or False"):
        tf.vmap(rosen, progress="yes")
    with pytest.raises(ValueError, match="reduce must be None, 'sum' or 'mean'"):
        tf.vmap(rosen, reduce="max")
    with pytest.raises(ValueError, match="out_dims must be 0"):
        tf.vmap(rosen, out_dims=1, reduce="sum")
