"""The GradBench tool (benchmarks/gradbench): its protocol handling, and each eval's outputs on
small inputs against independent numpy implementations of the eval's definition and
finite differences (or a hand-written gradient). Needs neither GradBench nor jax."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL_DIR = os.path.join(ROOT, "benchmarks", "gradbench")
sys.path.insert(0, TOOL_DIR)

import tapegrad_tool as T  # noqa: E402
from tapegrad_tool import ba, gmm, hello, ht, kmeans, llsq, lse, lstm, ode  # noqa: E402,F401


def runs(d, n=2):
    return dict(d, min_runs=n, min_seconds=0)


def evaluate(mod, function, inp, n=2):
    r = T.respond({"id": 7, "kind": "evaluate", "module": mod, "function": function,
                   "input": runs(inp, n)})
    assert r["id"] == 7 and r["success"], r.get("error")
    assert [t["name"] for t in r["timings"]] == ["evaluate"] * n
    assert all(isinstance(t["nanoseconds"], int) and t["nanoseconds"] > 0 for t in r["timings"])
    json.dumps(r)                                   # the response is JSON
    return r["output"]


def fd_grad(f, x, h=1e-6):
    """Central differences of the scalar f at the array x."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        a, b = x.copy(), x.copy()
        a[i] += h
        b[i] -= h
        g[i] = (f(a) - f(b)) / (2 * h)
    return g


def fd_jac(f, x, h=1e-6):
    """Central-difference Jacobian (outputs x inputs) of the vector f at the 1-d array x."""
    x = np.array(x, dtype=np.float64)
    cols = []
    for i in range(x.size):
        a, b = x.copy(), x.copy()
        a[i] += h
        b[i] -= h
        cols.append((np.asarray(f(a)) - np.asarray(f(b))) / (2 * h))
    return np.stack(cols, axis=-1)


# ----------------------------------------------------------------------------- protocol
def test_start_define_and_other_kinds():
    r = T.respond({"id": 0, "kind": "start", "eval": "hello"})
    assert r["id"] == 0 and r["tool"] == "tapegrad" and "config" in r
    for name in T.EVALS:
        assert T.respond({"id": 1, "kind": "define", "module": name}) == {"id": 1, "success": True}
    r = T.respond({"id": 2, "kind": "define", "module": "particle"})
    assert r["id"] == 2 and r["success"] is False and "particle" in r["error"]
    assert T.respond({"id": 3, "kind": "analysis", "of": 1, "valid": True}) == {"id": 3}
    assert T.respond({"id": 4, "kind": "end"}) == {"id": 4}


def test_evaluate_errors_are_responses():
    r = T.respond({"id": 5, "kind": "evaluate", "module": "lse", "function": "hessian",
                   "input": runs({"x": [1.0]})})
    assert r["id"] == 5 and r["success"] is False and "hessian" in r["error"]
    r = T.respond({"id": 6, "kind": "evaluate", "module": "lse", "function": "primal",
                   "input": {"x": [1.0]}})                # no min_runs: a malformed input
    assert r["success"] is False and "min_runs" in r["error"]


def test_runs_until_min_runs_and_min_seconds():
    calls = []
    fn = T.Function(lambda x: calls.append(x) or x + 1, prepare=lambda i: i["v"],
                    output=lambda y: [y])
    now = [0]

    def clock():                                  # every run takes 0.125 s of this clock
        now[0] += 125_000_000
        return now[0]
    r = fn.evaluate({"v": 1, "min_runs": 2, "min_seconds": 1.0}, clock=clock)
    assert r["output"] == [2] and len(r["timings"]) == 8 == len(calls)
    assert all(t == {"name": "evaluate", "nanoseconds": 125_000_000} for t in r["timings"])
    r = fn.evaluate({"v": 1, "min_runs": 3, "min_seconds": 0.0}, clock=clock)
    assert len(r["timings"]) == 3
    once = T.Function(lambda x: x * 2, runs=False)            # hello's bare-number inputs
    assert once.evaluate(2.5, clock=clock)["output"] == 5.0


def test_serve_lines():
    import io
    out = io.StringIO()
    msgs = [{"id": 0, "kind": "start"}, {"id": 1, "kind": "define", "module": "hello"},
            {"id": 2, "kind": "evaluate", "module": "hello", "function": "square", "input": 3.0},
            {"id": 3, "kind": "analysis", "of": 2, "valid": True}]
    T.serve([json.dumps(m) + "\n" for m in msgs] + ["\n"], out)
    resp = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["id"] for r in resp] == [0, 1, 2, 3]
    assert resp[2]["output"] == 9.0 and resp[2]["success"]


def test_tool_process_speaks_the_protocol():
    """tool.py as GradBench's runner starts it: one JSON line per message on stdin."""
    msgs = [{"id": 0, "kind": "start", "eval": "hello"},
            {"id": 1, "kind": "define", "module": "hello"},
            {"id": 2, "kind": "evaluate", "module": "hello", "function": "square", "input": 1.5},
            {"id": 3, "kind": "evaluate", "module": "hello", "function": "double", "input": 2.25},
            {"id": 4, "kind": "define", "module": "nope"}]
    p = subprocess.run([sys.executable, os.path.join(TOOL_DIR, "tool.py")],
                       input="".join(json.dumps(m) + "\n" for m in msgs), text=True,
                       capture_output=True, timeout=900)
    assert p.returncode == 0, p.stderr
    resp = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["id"] for r in resp] == [0, 1, 2, 3, 4]
    assert resp[0]["tool"] == "tapegrad" and resp[0]["config"]["threads"]["NUMBA_NUM_THREADS"] == "1"
    assert resp[2]["output"] == 2.25 and resp[3]["output"] == 4.5
    assert resp[4]["success"] is False


# ----------------------------------------------------------------------------- hello, lse
def test_hello():
    assert T.respond({"id": 0, "kind": "evaluate", "module": "hello", "function": "square",
                      "input": -3.0})["output"] == 9.0
    assert T.respond({"id": 0, "kind": "evaluate", "module": "hello", "function": "double",
                      "input": -3.0})["output"] == -6.0


def test_lse():
    rng = np.random.default_rng(0)
    for x in (rng.normal(size=7) * 5, np.array([1000.0, 1001.0, 999.0]), np.array([-800.0])):
        want = x.max() + np.log(np.exp(x - x.max()).sum())
        assert evaluate("lse", "primal", {"x": x.tolist()}) == pytest.approx(want, rel=1e-14)
        g = evaluate("lse", "gradient", {"x": x.tolist()})
        np.testing.assert_allclose(g, np.exp(x - want), rtol=1e-12)     # the softmax


# ----------------------------------------------------------------------------- gmm
def _multigammaln(a, p):
    return p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(a + (1 - j) / 2)
                                                     for j in range(1, p + 1))


def gmm_naive(alpha, mu, q, l, x, m, gamma):
    """log of (likelihood x Wishart prior) from the densities themselves (GradBench's naive
    validator's formulation): Sigma_k^-1 = Q_k^T Q_k."""
    k, d = mu.shape
    Qs = []
    for i in range(k):
        Q = np.diag(np.exp(q[i]))
        t = 0
        for c in range(d):
            for r in range(c + 1, d):
                Q[r, c] = l[i][t]
                t += 1
        Qs.append(Q)
    log_phi = alpha - np.logaddexp.reduce(alpha)
    loglik = 0.0
    for xi in x:                           # in log space: far points do not underflow
        terms = []
        for i in range(k):
            P = Qs[i].T @ Qs[i]
            r = xi - mu[i]
            terms.append(log_phi[i] - 0.5 * r @ P @ r
                         - 0.5 * math.log((2 * math.pi) ** d / np.linalg.det(P)))
        loglik += np.logaddexp.reduce(terms)
    n_w = d + m + 1
    logprior = 0.0
    for i in range(k):
        P = Qs[i].T @ Qs[i]
        V = np.eye(d) / gamma ** 2
        logprior += ((n_w - d - 1) / 2 * math.log(np.linalg.det(P))
                     - np.trace(np.linalg.inv(V) @ P) / 2
                     - (d * n_w / 2) * math.log(2) - n_w / 2 * math.log(np.linalg.det(V))
                     - _multigammaln(n_w / 2, d))
    return loglik + logprior


@pytest.mark.parametrize("d,k,m,far", [(2, 1, 0, 0), (3, 2, 0, 0), (4, 3, 2, 0), (3, 2, 1, 60)])
def test_gmm(d, k, m, far):
    """``far``: a point that far from every mean (its every term ~ -far^2 / 2 below the
    largest weight), where the tool must take each point's own shift."""
    rng = np.random.default_rng(d * 10 + k)
    n, gamma = 5, 1.3
    x = rng.normal(size=(n, d))
    x[0] += far
    inp = {"d": d, "k": k, "n": n, "m": m, "gamma": gamma, "x": x.tolist(),
           "alpha": rng.normal(size=k).tolist(),
           "mu": rng.uniform(size=(k, d)).tolist(), "q": (0.3 * rng.normal(size=(k, d))).tolist(),
           "l": (0.3 * rng.normal(size=(k, d * (d - 1) // 2))).tolist()}
    shapes = {"alpha": (k,), "mu": (k, d), "q": (k, d), "l": (k, d * (d - 1) // 2)}
    arr = {a: np.array(inp[a], dtype=np.float64).reshape(sh) for a, sh in shapes.items()}
    x = np.array(inp["x"])

    def f(**over):
        a = dict(arr, **over)
        return gmm_naive(a["alpha"], a["mu"], a["q"], a["l"], x, m, gamma)
    assert evaluate("gmm", "objective", inp) == pytest.approx(f(), rel=1e-10)
    g = evaluate("gmm", "jacobian", inp)
    assert set(g) == {"alpha", "mu", "q", "l"}
    for a in ("alpha", "mu", "q", "l"):
        want = fd_grad(lambda v: f(**{a: v}), arr[a], h=1e-5 if far else 1e-6)   # f ~ far^2
        np.testing.assert_allclose(np.array(g[a]).reshape(want.shape), want, rtol=1e-6, atol=1e-7)


# ----------------------------------------------------------------------------- kmeans
def test_kmeans():
    rng = np.random.default_rng(3)
    pts = rng.random((40, 3))
    cen = pts[-4:] + 0.01
    inp = {"points": pts.tolist(), "centroids": cen.tolist()}
    D = ((pts[None] - cen[:, None]) ** 2).sum(2)
    assert evaluate("kmeans", "cost", inp) == pytest.approx(D.min(0).sum(), rel=1e-12)
    a = D.argmin(0)
    g = np.zeros_like(cen)
    count = np.zeros(len(cen))
    for i, j in enumerate(a):
        g[j] += 2 * (cen[j] - pts[i])
        count[j] += 1
    # the cost is piecewise quadratic: Hessian times ones = 2 * cluster size
    np.testing.assert_allclose(evaluate("kmeans", "dir", inp), g / (2 * count[:, None]),
                               rtol=1e-12, atol=1e-14)


# ----------------------------------------------------------------------------- lstm
def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def lstm_numpy(main, extra, state, seq):
    L = main.shape[0] // 2
    b = seq.shape[1]
    s = state.copy()
    total = 0.0
    x_in = seq[0]
    for t in range(len(seq) - 1):
        x = x_in * extra[0]
        new = s.copy()
        for i in range(0, 2 * L, 2):
            gates = np.concatenate([x, s[i], x, s[i]]) * main[i] + main[i + 1]
            f, ig, og = _sigmoid(gates[:b]), _sigmoid(gates[b:2 * b]), _sigmoid(gates[2 * b:3 * b])
            c = s[i + 1] * f + ig * np.tanh(gates[3 * b:])
            new[i], new[i + 1] = og * np.tanh(c), c
            x = new[i]
        s = new
        ypred = x * extra[1] + extra[2]
        ynorm = ypred - np.log(np.exp(ypred).sum() + 2)
        total += (seq[t + 1] * ynorm).sum()
        x_in = seq[t + 1]
    return -total / ((len(seq) - 1) * b)


def test_lstm():
    rng = np.random.default_rng(5)
    layers, b, c = 2, 3, 6
    main, extra = rng.random((2 * layers, 4 * b)), rng.random((3, b))
    state, seq = rng.random((2 * layers, b)), rng.integers(0, 2, (c, b)).astype(np.float64)
    inp = {"main_params": main.tolist(), "extra_params": extra.tolist(),
           "state": state.tolist(), "sequence": seq.tolist()}
    assert evaluate("lstm", "objective", inp) == pytest.approx(
        lstm_numpy(main, extra, state, seq), rel=1e-12)
    g = np.array(evaluate("lstm", "jacobian", inp))
    want = np.concatenate([fd_grad(lambda v: lstm_numpy(v, extra, state, seq), main).ravel(),
                           fd_grad(lambda v: lstm_numpy(main, v, state, seq), extra).ravel()])
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-9)


# ----------------------------------------------------------------------------- ba
def ba_numpy(cam, X, w, feat):
    rot, Xc = cam[0:3], X - cam[3:6]
    th2 = rot @ rot
    if th2 != 0:
        th = math.sqrt(th2)
        k = rot / th
        Xr = Xc * math.cos(th) + np.cross(k, Xc) * math.sin(th) + k * (k @ Xc) * (1 - math.cos(th))
    else:
        Xr = Xc + np.cross(rot, Xc)
    p = Xr[:2] / Xr[2]
    rsq = p @ p
    p = p * (1 + cam[9] * rsq + cam[10] * rsq * rsq)
    return w * (p * cam[6] + cam[7:9] - feat)


def _ba_case(rng):
    cam = np.concatenate([0.3 * rng.normal(size=3), rng.normal(size=3), [1.5],
                          rng.normal(size=2), 0.1 * rng.normal(size=2)])
    return cam, rng.normal(size=3) + [0, 0, 5], rng.random() + 0.5, rng.normal(size=2)


def test_ba_per_observation_against_finite_differences():
    import tapegrad as tg
    rng = np.random.default_rng(7)
    cases = [_ba_case(rng) for _ in range(5)]
    cases[1][0][:3] = 0                       # the rotation-free branch (a variant per point)
    cams, X, w, feat = (np.array([c[i] for c in cases]) for i in range(4))
    t = [tg.from_numpy(a) for a in (cams, X, w, feat)]
    err = ba.reproj_errs(*t).numpy()
    for j, c in enumerate(cases):
        np.testing.assert_allclose(err[j], ba_numpy(*c), rtol=1e-13)
    for r, rows in enumerate(ba.reproj_rows):
        dcam, dX, dw = (a.numpy() for a in rows(*t))
        for j, (cam, x, wj, ft) in enumerate(cases):
            v = np.concatenate([cam, x, [wj]])
            J = fd_jac(lambda v: ba_numpy(v[:11], v[11:14], v[14], ft), v)
            np.testing.assert_allclose(np.concatenate([dcam[j], dX[j], [dw[j]]]), J[r],
                                       rtol=1e-6, atol=1e-8)


def test_ba_gradbench_layout():
    rng = np.random.default_rng(8)
    cam, X, w, feat = _ba_case(rng)
    n, m, p = 3, 4, 7
    inp = {"n": n, "m": m, "p": p, "cam": cam.tolist(), "x": X.tolist(), "w": w,
           "feat": feat.tolist()}
    out = evaluate("ba", "objective", inp)
    e = ba_numpy(cam, X, w, feat)
    assert out["reproj_error"]["repeated"] == p and out["w_err"]["repeated"] == p
    np.testing.assert_allclose(out["reproj_error"]["elements"], e, rtol=1e-13)
    assert out["w_err"]["element"] == pytest.approx(1 - w * w)
    jac = evaluate("ba", "jacobian", inp)
    J = fd_jac(lambda v: ba_numpy(v[:11], v[11:14], v[14], feat), np.concatenate([cam, X, [w]]))
    # ADBench's BASparseMat: row pointers, then per observation 2 rows of 15 (camera's 11
    # columns, the point's 3, the weight's 1), then p weight-error rows of one entry.
    rows = [15 * i for i in range(2 * p + 1)] + [30 * p + j for j in range(1, p + 1)]
    assert jac["rows"] == rows[:30] + rows[-1:]
    cols0 = list(range(11)) + [11 * n + i for i in range(3)] + [11 * n + 3 * m]
    assert jac["cols"] == cols0 + cols0 + [11 * n + 3 * m + p - 1]
    np.testing.assert_allclose(jac["vals"][:15], J[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jac["vals"][15:30], J[1], rtol=1e-6, atol=1e-8)
    assert jac["vals"][30] == pytest.approx(-2 * w)
    full = ba.jacobian(ba.Prepared(inp))                 # every observation, not only the 31
    assert full[1][2 * 15 + 3] == 11 * 1 + 3 and full[1][-1] == 11 * n + 3 * m + p - 1


# ----------------------------------------------------------------------------- ht
def _hand_model(rng, nverts=6):
    """A random model with the hand's bone tree (22 bones) and affine transforms."""
    parents = [-1, 0, 1, 2, 3, 0, 5, 6, 7, 0, 9, 10, 11, 0, 13, 14, 15, 0, 17, 18, 19, 0]

    def affine():
        A = np.eye(4)
        A[:3, :3] += 0.2 * rng.normal(size=(3, 3))
        A[:3, 3] = 0.5 * rng.normal(size=3)
        return A
    w = rng.random((nverts, 22)) * (rng.random((nverts, 22)) < 0.2)
    w[:, 0] += 0.1
    pos = np.hstack([rng.normal(size=(nverts, 3)), np.ones((nverts, 1))])
    return {"bone_count": 22, "bone_names": ["b%d" % i for i in range(22)], "parents": parents,
            "base_relatives": [affine().tolist() for _ in range(22)],
            "inverse_base_absolutes": [affine().tolist() for _ in range(22)],
            "base_positions": pos.tolist(), "weights": (w / w.sum(1, keepdims=True)).tolist(),
            "triangles": rng.integers(0, nverts, (5, 3)).tolist(), "is_mirrored": False}


def hand_numpy(theta, model, corr, points, us=None):
    """ADBench's hand objective, written directly from its definition (4x4 matrices)."""
    nb = model["bone_count"]
    pp = np.zeros((nb + 3, 3))
    pp[0], pp[1], pp[2] = theta[0:3], 1.0, theta[3:6]
    it, row = 6, 5
    for _ in range(5):
        for i in (1, 2, 3):
            pp[row, 0] = theta[it]
            it += 1
            if i == 1:
                pp[row, 1] = theta[it]
                it += 1
            row += 1
        row += 1

    def euler(xzy):
        tx, ty, tz = xzy[0], xzy[2], xzy[1]
        Rx, Ry, Rz = np.eye(3), np.eye(3), np.eye(3)
        Rx[1, 1], Rx[2, 1], Rx[1, 2], Rx[2, 2] = math.cos(tx), math.sin(tx), -math.sin(tx), math.cos(tx)
        Ry[0, 0], Ry[2, 0], Ry[0, 2], Ry[2, 2] = math.cos(ty), math.sin(ty), -math.sin(ty), math.cos(ty)
        Rz[0, 0], Rz[1, 0], Rz[0, 1], Rz[1, 1] = math.cos(tz), math.sin(tz), -math.sin(tz), math.cos(tz)
        return Rz @ Ry @ Rx
    rel = np.array(model["base_relatives"])
    inv = np.array(model["inverse_base_absolutes"])
    absolutes = []
    for b in range(nb):
        tr = np.eye(4)
        tr[:3, :3] = euler(pp[3 + b])
        r = rel[b] @ tr
        p = model["parents"][b]
        absolutes.append(r if p < 0 else absolutes[p] @ r)
    transforms = np.array([absolutes[b] @ inv[b] for b in range(nb)])
    base = np.array(model["base_positions"])
    W = np.array(model["weights"])
    local = np.einsum("vb,bij,vj->vi", W, transforms, base)[:, :3]
    aa = pp[0]
    n = math.sqrt(aa @ aa)
    if n < 1e-4:
        R = np.eye(3)
    else:
        x, y, z = aa / n
        s, c = math.sin(n), math.cos(n)
        R = np.array([[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                      [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                      [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]])
    verts = local @ (R * pp[1]).T + pp[2]
    if us is None:
        return (points - verts[corr]).ravel()
    tri = np.array(model["triangles"])[corr]
    hand = (us[:, :1] * verts[tri[:, 0]] + us[:, 1:] * verts[tri[:, 1]]
            + (1 - us[:, :1] - us[:, 1:]) * verts[tri[:, 2]])
    return (points - hand).ravel()


@pytest.mark.parametrize("complicated", [False, True])
def test_ht(complicated):
    rng = np.random.default_rng(11 + complicated)
    model = _hand_model(rng)
    P = 4
    corr = rng.integers(0, 5 if complicated else 6, P)
    points = rng.normal(size=(P, 3))
    theta = 0.4 * rng.normal(size=26)
    us = rng.random((P, 2)) * 0.5 if complicated else None
    inp = {"theta": theta.tolist(), "us": [] if us is None else us.tolist(),
           "data": {"model": model, "correspondences": corr.tolist(), "points": points.tolist()}}
    obj = evaluate("ht", "objective", inp)
    np.testing.assert_allclose(obj, hand_numpy(theta, model, corr, points, us), rtol=1e-11,
                               atol=1e-13)
    jac = np.array(evaluate("ht", "jacobian", inp))
    Jt = fd_jac(lambda t: hand_numpy(t, model, corr, points, us), theta)
    if not complicated:
        np.testing.assert_allclose(jac, Jt, rtol=1e-6, atol=1e-8)
        return
    assert jac.shape == (3 * P, 28)
    np.testing.assert_allclose(jac[:, 2:], Jt, rtol=1e-6, atol=1e-8)
    Ju = fd_jac(lambda u: hand_numpy(theta, model, corr, points, u.reshape(P, 2)), us.ravel())
    for i in range(P):                      # the us part: each row's own point's 2 columns
        np.testing.assert_allclose(jac[3 * i:3 * i + 3, :2], Ju[3 * i:3 * i + 3, 2 * i:2 * i + 2],
                                   rtol=1e-6, atol=1e-8)


# ----------------------------------------------------------------------------- llsq, ode
def test_llsq():
    rng = np.random.default_rng(13)
    x, n = rng.random(5), 9
    t = np.array([-1 + 2 * i / (n - 1) for i in range(n)])
    T_ = t[:, None] ** np.arange(5)
    r = np.sign(t) - T_ @ x
    assert evaluate("llsq", "primal", {"x": x.tolist(), "n": n}) == pytest.approx(0.5 * r @ r,
                                                                                rel=1e-12)
    np.testing.assert_allclose(evaluate("llsq", "gradient", {"x": x.tolist(), "n": n}),
                               -T_.T @ r, rtol=1e-11, atol=1e-14)


def ode_numpy(x, s):
    def f(y):
        return np.concatenate([x[:1], x[1:] * y[:-1]])
    h = 2.0 / s
    y = np.zeros_like(x)
    for _ in range(s):
        k1 = f(y)
        k2 = f(y + h / 2 * k1)
        k3 = f(y + h / 2 * k2)
        k4 = f(y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


@pytest.mark.parametrize("s", [1, 3])
def test_ode(s):
    x = np.random.default_rng(s).random(6)
    np.testing.assert_allclose(evaluate("ode", "primal", {"x": x.tolist(), "s": s}),
                               ode_numpy(x, s), rtol=1e-13)
    np.testing.assert_allclose(evaluate("ode", "gradient", {"x": x.tolist(), "s": s}),
                               fd_grad(lambda v: ode_numpy(v, s)[-1], x), rtol=1e-6, atol=1e-10)


# ----------------------------------------------------------------------------- run_eval, compare
class _FakeEval:
    """An eval process: the lines it writes, and what it read back (GradBench's eval writes
    one message, reads the response, writes the next)."""

    def __init__(self, messages):
        self.stdout = [json.dumps(m) + "\n" for m in messages]
        self.stdin = self
        self.read = []

    def write(self, line):
        self.read.append(json.loads(line))

    def flush(self):
        pass


class _InProcessTool:
    """The tool's process, answered in this process by tapegrad_tool.respond."""

    def __init__(self):
        self.stdin, self.stdout, self.replies = self, self, []

    def write(self, line):
        m = json.loads(line)
        if m["kind"] != "end":
            self.replies.append(json.dumps(T.respond(m)) + "\n")

    def flush(self):
        pass

    def readline(self):
        return self.replies.pop(0)


def test_run_eval_relays_as_gradbench_runner():
    import io
    import run_eval
    msgs = [{"id": 0, "kind": "start", "eval": "hello"},
            {"id": 1, "kind": "define", "module": "hello"},
            {"id": 2, "kind": "evaluate", "module": "hello", "function": "square", "input": 3.0},
            {"id": 3, "kind": "analysis", "of": 2, "valid": True},
            {"id": 4, "kind": "evaluate", "module": "hello", "function": "nope", "input": 3.0},
            {"id": 5, "kind": "end"}]
    ev, out, log = _FakeEval(msgs), io.StringIO(), io.StringIO()
    rows = run_eval.relay(ev, _InProcessTool(), log, out)
    assert [r["id"] for r in ev.read] == [0, 1, 2, 3, 4]        # every response, in order
    assert ev.read[2]["output"] == 9.0
    assert [(r["function"], r["success"], r["valid"]) for r in rows] == [
        ("square", True, True), ("nope", False, None)]
    assert [json.loads(x)["message"]["id"] for x in log.getvalue().splitlines()] == [0, 1, 2, 3, 4]
    assert "valid" in out.getvalue() and "failed" in out.getvalue()


def test_run_eval_with_gradbench():
    """GradBench's own hello eval (its validator) against tool.py: only where a GradBench
    checkout is named by GRADBENCH_DIR."""
    gb = os.environ.get("GRADBENCH_DIR")
    if not gb or not os.path.isdir(os.path.join(gb, "python", "gradbench")):
        pytest.skip("GRADBENCH_DIR does not name a GradBench checkout")
    pytest.importorskip("pydantic")
    p = subprocess.run([sys.executable, os.path.join(TOOL_DIR, "run_eval.py"), "--gradbench", gb,
                        "hello"], text=True, capture_output=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count(" valid ") == 8


def test_compare_agreement_and_results_rows():
    import compare
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import _results
    assert compare.agree({"a": [1.0, 2.0]}, {"a": [1.0, 2.0 + 1e-9]}) == []
    assert compare.agree([1000.0], [1000.0 * (1 + 1e-5)]) != []        # relative 1e-6
    assert compare.agree([0.0], [5e-7]) == [] and compare.agree([0.0], [2e-6]) != []
    assert compare.agree({"a": 1}, {"b": 1}) != [] and compare.agree([1, 2], [1]) != []
    ba1 = {"function": "objective", "description": "ba1_n49_m7776_p31843",
           "input": {"n": 49, "m": 7776, "p": 31843, "cam": [0.0], "min_runs": 1}}
    (small,) = compare.ba_reduced([ba1], (2000,))
    assert small["description"] == "ba1 p=2000" and small["input"]["p"] == 2000
    assert small["input"]["n"] == round(49 * 2000 / 31843) and small["input"]["m"] == 488
    assert ba1["input"]["p"] == 31843                        # the original is left alone
    results = [{"eval": "gmm", "function": "objective", "description": "2_5_1000", "tools": {
        "tapegrad": {"runs": [1e6, 3e6], "first": 5e7, "median": 2e6, "valid": True},
        "jax": {"runs": [4e6], "first": 1e9, "median": 4e6, "agree": []},
        "pytorch": {"runs": [], "first": None, "skip": "timeout (300 s)"}}}]
    rows = compare.result_rows(results, ["tapegrad", "jax", "pytorch"])
    doc = _results.check({"schema": _results.SCHEMA, "bench": "gradbench", "date": "", "commit": "",
                          "machine": {}, "results": rows})
    tg, jx, pt = doc["results"]
    assert (tg["tool"], tg["median_s"], tg["first_s"], tg["repeats"]) == ("tapegrad", 2e-3, 5e-2, 2)
    assert (jx["tool"], jx["median_s"], jx["agrees"]) == ("jax", 4e-3, True)
    assert (pt["tool"], pt["median_s"], pt["skip"]) == ("torch", None, "timeout (300 s)")
    _results._ratios(rows)
    assert jx["ratio"] == pytest.approx(2.0) and pt["ratio"] is None
    many = [dict(results[0], tools={"tapegrad": {"runs": [float(i) for i in range(1, 151)],
                                                 "first": 9.0, "median": 75.5}})]
    (row,) = compare.result_rows(many, ["tapegrad"])
    assert row["repeats"] == 150 and "samples" not in row
    assert row["p10_s"] == pytest.approx(15.1e-9) and row["p90_s"] == pytest.approx(135.9e-9)
    assert many[0]["tools"]["tapegrad"]["runs"][0] == 1.0        # the run's own lists untouched
