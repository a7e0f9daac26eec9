"""tapegrad.func.vmap over functions that use the parts of a several-output view op (unbind,
iteration / tuple unpacking, split, chunk: one entry, one alias node per part lying inside
the entry's output region) together with a contiguous slice (``p[0]``, ``narrow``): the
batched plan packs the nodes again around the slices it aliases, and the parts once kept
their old offsets (vmap gave zeros or only ``p[0]``'s value). Values and vmap(grad) are
compared with per-point eager tapegrad and with torch.func.vmap; the batched interpreter
(not the point-by-point fallback) must serve every call."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad import func

torch = pytest.importorskip("torch")
TF = pytest.importorskip("torch.func")


@pytest.fixture
def batched_only(monkeypatch):
    """Fails the test if vmap falls back to the point-by-point loop."""
    calls = []
    real = func._vmap_loop

    def spy(*a, **k):
        calls.append(a[0])
        return real(*a, **k)
    monkeypatch.setattr(func, "_vmap_loop", spy)
    return calls


# --- the reported cases (one input, batched along dim 0) ------------------------------
ONE = {
    "x*p0": lambda M, p: (lambda x, y, z: x * p[0])(*(p * 3)),
    "x+p0": lambda M, p: (lambda x, y, z: x + p[0])(*(p * 3)),
    "x*psum": lambda M, p: (lambda x, y, z: x * p.sum())(*(p * 3)),
    "p0_first": lambda M, p: (lambda q: (lambda x, y, z: x * q)(*(p * 3)))(p[0]),
    "x*p0_no_unbind": lambda M, p: (p * 3)[0] * p[0],
    "x*p0_narrow": lambda M, p: (p * 3).narrow(0, 0, 1).sum() * p[0],
    "unbind_of_p": lambda M, p: (lambda x, y, z: x * p[1])(*p),
    "unbind_dim1": lambda M, p: (lambda x, y, z: x * p[2] + M.sin(z))(*(p * 3).unbind(1)),
    "rows_unbind": lambda M, p: (lambda a, b: a * p[1] - b * p[0])(*(p.reshape(3, 3) * 2)[1:]),
    "split_p1": lambda M, p: (lambda a, b: a.sum() * p[1] + b.sum())(*(p * 3).split([1, 2])),
    "chunk_p2": lambda M, p: (lambda a, b: (a * b[:1]).sum() + p[2])(*(p.exp()).chunk(2)),
}


def _eager_one(f, X):
    vals, grads = [], []
    for i in range(X.shape[0]):
        x = tg.tensor(X[i]).requires_grad_()
        y = f(tg, x)
        (g,) = tg.autograd.grad(y, [x])
        vals.append(y.detach().numpy())
        grads.append(g.numpy())
    return np.array(vals), np.array(grads)


@pytest.mark.parametrize("name", sorted(ONE))
@pytest.mark.parametrize("rows", [3, 9])
def test_reported_cases_match_eager_and_torch(name, rows, batched_only):
    f = ONE[name]
    shape = (rows,) + {"rows_unbind": (9,), "unbind_dim1": (3, 3)}.get(name, (3,))
    X = np.random.default_rng(len(name) + rows).normal(size=shape)
    got = func.vmap(lambda p: f(tg, p))(tg.tensor(X)).numpy()
    gg = func.vmap(func.grad(lambda p: f(tg, p).sum()))(tg.tensor(X)).numpy()
    assert not batched_only, "vmap fell back to the point-by-point loop"
    ev, eg = _eager_one(lambda M, p: f(M, p).sum(), X)
    ev_full = np.array([f(tg, tg.tensor(X[i])).numpy() for i in range(rows)])
    np.testing.assert_allclose(got, ev_full, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gg, eg, rtol=1e-12, atol=1e-12)
    tX = torch.from_numpy(X)
    tv = TF.vmap(lambda p: f(torch, p))(tX).numpy()
    tg_ = TF.vmap(TF.grad(lambda p: f(torch, p).sum()))(tX).numpy()
    np.testing.assert_allclose(got, tv, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gg, tg_, rtol=1e-12, atol=1e-12)


# --- two inputs, in_dims mixes (the GradBench ht rotation shape) ----------------------
def _g(M, aa, p):
    x, y, z = aa / aa.sum()
    return x * p[0] + y * p[1] + z * p[2]


def _h(M, aa, p):
    v = aa / aa.sum()
    return v[0] * p[0] + v[1] * p[1] + v[2] * p[2]


def _rot(M, theta, p):
    aa = theta[0:3]
    n = M.sqrt((aa ** 2).sum())
    x, y, z = aa / n
    s, c = M.sin(n), M.cos(n)
    R = M.stack([x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s,
                 x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s,
                 x * z * (1 - c) - y * s, z * y * (1 - c) + x * s,
                 z * z + (1 - z * z) * c]).reshape(3, 3)
    return (p @ R.T).sum()


TWO = {"unbind_g": (_g, 3), "index_h": (_h, 3), "rotation": (_rot, 5)}


@pytest.mark.parametrize("name", sorted(TWO))
@pytest.mark.parametrize("dims", [(None, 0), (0, None), (0, 0)])
def test_two_inputs_in_dims_mixes(name, dims, batched_only):
    f, na = TWO[name]
    rng = np.random.default_rng(7)
    P = 4
    A = rng.uniform(0.5, 2.0, size=(P, na) if dims[0] == 0 else (na,))
    B = rng.normal(size=(P, 3) if dims[1] == 0 else (3,))
    got = func.vmap(lambda a, b: f(tg, a, b), in_dims=dims)(tg.tensor(A), tg.tensor(B)).numpy()
    ga, gb = func.vmap(func.grad(lambda a, b: f(tg, a, b), argnums=(0, 1)),
                       in_dims=dims)(tg.tensor(A), tg.tensor(B))
    assert not batched_only, "vmap fell back to the point-by-point loop"
    for i in range(P):
        a = tg.tensor(A[i] if dims[0] == 0 else A).requires_grad_()
        b = tg.tensor(B[i] if dims[1] == 0 else B).requires_grad_()
        y = f(tg, a, b)
        ea, eb = tg.autograd.grad(y, [a, b])
        np.testing.assert_allclose(got[i], y.item(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ga.numpy()[i], ea.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gb.numpy()[i], eb.numpy(), rtol=1e-12, atol=1e-12)
    tA, tB = torch.from_numpy(A), torch.from_numpy(B)
    tv = TF.vmap(lambda a, b: f(torch, a, b), in_dims=dims)(tA, tB).numpy()
    ta, tb = TF.vmap(TF.grad(lambda a, b: f(torch, a, b), argnums=(0, 1)), in_dims=dims)(tA, tB)
    np.testing.assert_allclose(got, tv, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ga.numpy(), ta.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), tb.numpy(), rtol=1e-12, atol=1e-12)


# --- randomized programs: view-producing ops mixed with elementwise ops ---------------
def _views(t):
    """The view ops applicable to a tensor t of >= 1 dims: (name, fn(M, t))."""
    out = [("neg_pos", lambda M, t: t[0]), ("iter", lambda M, t: list(t)[-1]),
           ("unbind0_mid", lambda M, t: t.unbind(0)[t.shape[0] // 2]),
           ("narrow", lambda M, t: t.narrow(0, t.shape[0] - 1, 1)),
           ("split", lambda M, t: t.split(1)[0]), ("chunk", lambda M, t: t.chunk(2)[-1]),
           ("slice1", lambda M, t: t[1:]), ("select_last", lambda M, t: t.select(0, -1))]
    if t.dim() >= 2:
        out += [("unbind1", lambda M, t: t.unbind(1)[0]), ("diag", lambda M, t: t.diagonal()),
                ("transpose", lambda M, t: t.transpose(0, 1)), ("col", lambda M, t: t[:, 1]),
                ("split1", lambda M, t: t.split([1, t.shape[1] - 1], dim=1)[1]),
                ("T_unbind", lambda M, t: t.transpose(0, 1).unbind(0)[-1])]
    return [(n, f) for n, f in out if t.shape[0] >= 2 or n in ("neg_pos", "iter", "split",
                                                                "select_last", "narrow")]


_ELEM = [("mul", lambda M, x, y: x * y), ("add", lambda M, x, y: x + y),
         ("sinmul", lambda M, x, y: M.sin(x) * y), ("sub_exp", lambda M, x, y: x - M.exp(y * 0.3))]


def _program(seed):
    """A random straight-line program on (a: (3, 4), b: (4,)) as a list of steps."""
    rng = np.random.default_rng(seed)
    steps = []
    shapes = [(3, 4), (4,)]
    for _ in range(rng.integers(4, 9)):
        i = int(rng.integers(len(shapes)))
        probe = torch.zeros(shapes[i])
        cands = _views(probe) if probe.dim() else []
        if cands and rng.random() < 0.7:
            name, v = cands[int(rng.integers(len(cands)))]
            steps.append(("view", i, v, name))
            shapes.append(tuple(v(torch, probe).shape))
        else:
            j = int(rng.integers(len(shapes)))
            en, e = _ELEM[int(rng.integers(len(_ELEM)))]
            same = shapes[i] == shapes[j]
            steps.append(("elem", i, j, e, same))
            shapes.append(shapes[i])
    return steps


def _run(steps, M, a, b):
    pool = [a * 1.5, b + 0.25]
    for st in steps:
        if st[0] == "view":
            pool.append(st[2](M, pool[st[1]]))
        else:
            _, i, j, e, same = st
            y = pool[j] if same else pool[j].sum()
            pool.append(e(M, pool[i], y))
    w = [((k % 5) + 1) * 0.1 for k in range(len(pool))]
    # every part used (unbind parts beside slices, both read afterwards)
    return M.stack([t.sum() * wk for t, wk in zip(pool, w)])


@pytest.mark.parametrize("seed", range(40))
def test_random_view_programs_match_eager_and_torch(seed, batched_only):
    steps = _program(seed)
    rng = np.random.default_rng(1000 + seed)
    dims = [(0, 0), (None, 0), (0, None)][seed % 3]
    P = 3
    A = rng.normal(size=(P, 3, 4) if dims[0] == 0 else (3, 4))
    B = rng.normal(size=(P, 4) if dims[1] == 0 else (4,))
    f = lambda a, b: _run(steps, tg, a, b)                       # noqa: E731
    fs = lambda a, b: (_run(steps, tg, a, b) * tg.arange(1.0, 1.0 + len(steps) + 2,
                                                         dtype=tg.float64)).sum()  # noqa: E731
    got = func.vmap(f, in_dims=dims)(tg.tensor(A), tg.tensor(B)).numpy()
    ga, gb = func.vmap(func.grad(fs, argnums=(0, 1)), in_dims=dims)(tg.tensor(A), tg.tensor(B))
    for i in range(P):
        a = tg.tensor(A[i] if dims[0] == 0 else A).requires_grad_()
        b = tg.tensor(B[i] if dims[1] == 0 else B).requires_grad_()
        np.testing.assert_allclose(got[i], f(a, b).detach().numpy(), rtol=1e-12, atol=1e-12)
        ea, eb = tg.autograd.grad(fs(a, b), [a, b])
        np.testing.assert_allclose(ga.numpy()[i], ea.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gb.numpy()[i], eb.numpy(), rtol=1e-12, atol=1e-12)
    tA, tB = torch.from_numpy(A), torch.from_numpy(B)
    tf_ = lambda a, b: _run(steps, torch, a, b)                  # noqa: E731
    tfs = lambda a, b: (_run(steps, torch, a, b) * torch.arange(  # noqa: E731
        1.0, 1.0 + len(steps) + 2, dtype=torch.float64)).sum()
    np.testing.assert_allclose(got, TF.vmap(tf_, in_dims=dims)(tA, tB).numpy(),
                               rtol=1e-12, atol=1e-12)
    ta, tb = TF.vmap(TF.grad(tfs, argnums=(0, 1)), in_dims=dims)(tA, tB)
    np.testing.assert_allclose(ga.numpy(), ta.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gb.numpy(), tb.numpy(), rtol=1e-12, atol=1e-12)
    assert not batched_only, "vmap fell back to the point-by-point loop"
