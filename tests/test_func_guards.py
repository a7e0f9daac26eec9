"""tapegrad.func replays never reuse a decision the recording took from tensor values: the
positions an op chose by the order of the values (max, sort, topk, median, pooling...), the
masks of piecewise-linear activations, frexp's exponents, values that leave the recording
(detach, numpy, integer casts, predicates) and random draws become guards, so a
replay whose values decide otherwise records again (compared with eager gradients on new
values); and gradients reach the inputs through unbind's alias nodes."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.nn.functional as F
from tapegrad import func

W12 = np.linspace(0.5, 2.0, 12)


def _weighted(f):
    def h(x):
        y = f(x)
        if isinstance(y, tuple):
            y = y[0]
        y = y.reshape(-1)
        return (y * tg.tensor(W12[:y.numel()], dtype=y.dtype)).sum()
    return h


CASES = {
    "max_dim": lambda x: x.max(dim=1).values, "min_all": lambda x: x.min().reshape(1),
    "amax": lambda x: x.amax(dim=1), "amin_all": lambda x: x.amin().reshape(1),
    "argmax_index": lambda x: x[0, x[1].argmax()].reshape(1),
    "sort": lambda x: x.sort(dim=1).values, "argsort_gather": lambda x: x.gather(1, x.argsort(1)),
    "topk": lambda x: x.topk(2, dim=1).values, "kthvalue": lambda x: x.kthvalue(2, dim=1).values,
    "median": lambda x: x.median(dim=1).values, "nanmedian": lambda x: x.nanmedian().reshape(1),
    "mode": lambda x: x.round().mode(dim=1).values, "cummax": lambda x: x.cummax(dim=1).values,
    "quantile": lambda x: x.quantile(0.3, dim=1), "msort": lambda x: tg.msort(x),
    "norm_inf": lambda x: tg.linalg.vector_norm(x, float("inf"), dim=1),
    "cdist_inf": lambda x: tg.cdist(x, x.flip(0), p=float("inf")).reshape(-1),
    "max_pool": lambda x: F.max_pool1d(x.unsqueeze(0), 2),
    "adaptive_max_pool": lambda x: F.adaptive_max_pool1d(x.unsqueeze(0), 3),
    "hardtanh": lambda x: F.hardtanh(x), "relu6": lambda x: F.relu6(x * 3),
    "hardshrink": lambda x: F.hardshrink(x), "softshrink": lambda x: F.softshrink(x),
    "threshold": lambda x: F.threshold(x, 0.1, -2.0), "hardsigmoid": lambda x: F.hardsigmoid(x * 3),
    "hardswish": lambda x: F.hardswish(x * 3), "frexp": lambda x: tg.frexp(x * 4).mantissa,
    "scatter_amax": lambda x: tg.zeros(3, dtype=x.dtype).scatter_reduce(
        0, tg.tensor([0, 1, 1, 2]), x[0], "amax", include_self=False),
    "scatter_prod": lambda x: tg.ones(3, dtype=x.dtype).scatter_reduce(
        0, tg.tensor([0, 1, 1, 2]), x[0], "prod"),
    "unbind": lambda x: x.unbind()[1], "chunk": lambda x: x.chunk(2, 1)[1],
    "std_mean": lambda x: tg.std_mean(x, 1)[0], "glu": lambda x: F.glu(x),
    # values leaving the recording: casts to integers, detach / numpy / tolist constants,
    # predicate masks, searchsorted positions, clamp's tensor bounds
    "long_index": lambda x: x[0][(x[1].abs() * 1.5).long().clamp(0, 3)],
    "detach": lambda x: x * x.detach(), "numpy": lambda x: x * tg.from_numpy(x.detach().numpy()),
    "tolist": lambda x: x * tg.tensor(x.detach().tolist(), dtype=x.dtype),
    "isnan": lambda x: tg.where(tg.isnan(x.log()), tg.zeros_like(x), x),
    "bucketize": lambda x: x[0][tg.bucketize(x[1], tg.tensor([-1.0, 0.0, 1.0],
                                                             dtype=x.dtype)).clamp(0, 3)],
    "clamp_tensor": lambda x: x.clamp(min=x.flip(1)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_replay_on_new_values_matches_eager(name):
    h = _weighted(CASES[name])
    g = func.grad(h)
    rng = np.random.default_rng(0)
    for i in range(6):
        xn = rng.normal(size=(3, 4)) * 2
        got = g(tg.tensor(xn))
        x = tg.tensor(xn, requires_grad=True)
        h(x).backward()
        np.testing.assert_allclose(got.numpy(), x.grad.numpy(), rtol=1e-9, atol=1e-12,
                                   err_msg="%s, call %d" % (name, i))


def test_replay_reuses_the_recording_while_the_order_holds():
    # a guard that holds replays (no new recording); one that fails records again
    calls = []

    def f(x):
        calls.append(1)
        return (x.sort().values * tg.arange(4.0, dtype=x.dtype)).sum()
    g = func.grad(f)
    g(tg.tensor([3.0, 1.0, 2.0, 0.0], dtype=tg.float64))
    g(tg.tensor([3.5, 1.5, 2.5, 0.5], dtype=tg.float64))        # same order: replayed
    assert len(calls) == 1
    r = g(tg.tensor([0.0, 1.0, 2.0, 3.0], dtype=tg.float64))    # another order: recorded
    assert len(calls) == 2
    np.testing.assert_array_equal(r.numpy(), [0.0, 1.0, 2.0, 3.0])


def test_vmap_of_grad_checks_the_order_per_point():
    h = lambda x: (x.sort().values * tg.arange(4.0, dtype=x.dtype)).sum()   # noqa: E731
    X = tg.tensor(np.random.default_rng(1).normal(size=(6, 4)))
    got = func.vmap(func.grad(h))(X)
    for i in range(6):
        x = X[i].clone().requires_grad_()
        h(x).backward()
        np.testing.assert_allclose(got[i].numpy(), x.grad.numpy())
    h2 = lambda x: x.unbind()[1].sum() * 2     # noqa: E731
    got = func.vmap(func.grad(h2))(tg.tensor(np.ones((5, 3, 2))))
    np.testing.assert_array_equal(got.numpy(), np.broadcast_to([[0, 0], [2, 2], [0, 0]],
                                                                (5, 3, 2)))


def test_random_draws_are_not_replayed_as_constants():
    x = tg.tensor(np.ones(50))
    for f in (lambda x: F.dropout(x, 0.5).sum(),
              lambda x: (x * tg.randn(50, dtype=tg.float64)).sum(),
              lambda x: (x * tg.rand_like(x)).sum()):
        g = func.grad(f)
        a, b = g(x), g(x)
        assert not np.array_equal(a.numpy(), b.numpy())


def test_guards_survive_pickling():
    import pickle
    tape = func.make_tape(lambda x: x.sort().values.sum() + F.hardtanh(x).sum(),
                          tg.tensor([0.3, -2.0, 1.5]))
    kinds = sorted(g[1][0] for g in tape.guards if g[0] == "sel")
    assert kinds == ["cuts", "order"]
    t2 = pickle.loads(pickle.dumps(tape))
    X = t2.forward([np.array([0.3, -2.0, 1.5], np.float32)])
    assert t2.guards_hold(X)
    X = t2.forward([np.array([-2.0, 0.3, 1.5], np.float32)])
    assert not t2.guards_hold(X)
