"""tapegrad.optim against torch.optim (the oracle), and against the tensor-operation reference
implementations (tapegrad/optim/_reference.py, the differentiable=True path) without torch.

Each oracle case builds the same parameters in both libraries, feeds the same gradients
(computed in numpy from the current parameter values, so the optimizers are compared and
nothing else), runs N steps, and compares every parameter, every state tensor and the
state_dict structure: float64 to ~1e-12, float32 to a few ulps.
"""
import copy
import math
import pickle

import numpy as np
import pytest

import tapegrad as tg

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

SHAPES = [(3, 4), (5,), (), (2, 3, 2)]


def init_arrays(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in SHAPES]


def grad_of(a, k):
    """A deterministic, parameter-dependent gradient (numpy float64)."""
    return 0.7 * a + np.cos(3.0 * a + k) + 0.1 * (k % 3) - 0.05


def run(lib, name, kwargs, dtype="float32", steps=8, groups=None, skip=None, seed=0,
        reference=False):
    """Run ``name`` for ``steps`` steps; return (params as float64 arrays, optimizer).
    reference: take tapegrad's tensor-operation path (differentiable groups) under no_grad."""
    arrs = init_arrays(seed)
    ps = [lib.nn.Parameter(lib.tensor(a.astype(dtype))) for a in arrs]
    if groups is None:
        opt = getattr(lib.optim, name)(ps, **kwargs)
    else:
        opt = getattr(lib.optim, name)([dict(params=[ps[i] for i in idx], **kw)
                                        for idx, kw in groups], **kwargs)
    if reference:
        for g in opt.param_groups:
            g["differentiable"] = True
    for k in range(steps):
        opt.zero_grad()
        for i, p in enumerate(ps):
            if skip is not None and i in skip(k):
                continue
            a = p.detach().numpy().astype(np.float64)
            p.grad = lib.tensor(grad_of(a, k).astype(dtype))
        opt.step()
    return [p.detach().numpy().astype(np.float64) for p in ps], opt


TOL = {"float64": dict(rtol=1e-11, atol=1e-12), "float32": dict(rtol=3e-5, atol=3e-6)}

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.02, maximize=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, foreach=True)),
    ("SGD", dict(lr=0.05, momentum=0.9, fused=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.05)),
    ("Adam", dict(lr=0.02, amsgrad=True, maximize=True)),
    ("Adam", dict(lr=0.02, weight_decay=0.1, decoupled_weight_decay=True, amsgrad=True)),
    ("Adam", dict(lr=0.01, foreach=True)),
    ("Adam", dict(lr=0.01, fused=True)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.03, weight_decay=0.2, amsgrad=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.01)),
    ("RMSprop", dict(lr=0.01, momentum=0.3, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, weight_decay=0.02, initial_accumulator_value=0.1)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, weight_decay=0.01, maximize=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.02, betas=(0.7, 0.95), weight_decay=0.01)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.05, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.5), weight_decay=0.05)),
    ("ASGD", dict(lr=0.05)),
    ("ASGD", dict(lr=0.05, t0=3, lambd=0.01, weight_decay=0.01)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
]


def _ids():
    return ["%s-%s" % (n, "-".join("%s=%s" % kv for kv in sorted(k.items())) or "default")
            for n, k in CASES]


def _state_arrays(opt):
    sd = opt.state_dict()
    out = {}
    for idx, st in sd["state"].items():
        for k, v in st.items():
            out[(idx, k)] = np.asarray(v.detach().numpy() if hasattr(v, "detach") else v,
                                       np.float64)
    return sd, out


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=_ids())
def test_optimizer_matches_torch(case, dtype):
    name, kwargs = CASES[case]
    steps = 12
    tp, topt = run(torch, name, kwargs, dtype, steps)
    gp, gopt = run(tg, name, kwargs, dtype, steps)
    for a, b in zip(tp, gp):
        np.testing.assert_allclose(b, a, **TOL[dtype])
    tsd, tst = _state_arrays(topt)
    gsd, gst = _state_arrays(gopt)
    assert list(gsd["param_groups"][0].keys()) == list(tsd["param_groups"][0].keys())
    assert gsd["param_groups"] == tsd["param_groups"]
    assert sorted(gst) == sorted(tst)
    for k in tst:
        np.testing.assert_allclose(gst[k], tst[k], err_msg=str(k), **TOL[dtype])
    for idx in tsd["state"]:
        for k, v in tsd["state"][idx].items():
            if hasattr(v, "dtype"):
                assert str(gsd["state"][idx][k].dtype) == str(v.dtype), (idx, k)
    assert repr(gopt) == repr(topt)


@needs_torch
@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)),
                                         ("Adam", dict(lr=0.05)),
                                         ("RMSprop", dict(lr=0.01, centered=True))])
def test_param_groups_and_missing_grads_match_torch(name, kwargs):
    groups = [([0, 2], dict(lr=0.02, weight_decay=0.1)), ([1, 3], dict())]

    def skip(k):                         # parameter 1 gets no gradient on even steps
        return {1} if k % 2 == 0 else set()

    tp, topt = run(torch, name, kwargs, "float64", 9, groups, skip)
    gp, gopt = run(tg, name, kwargs, "float64", 9, groups, skip)
    for a, b in zip(tp, gp):
        np.testing.assert_allclose(b, a, **TOL["float64"])
    assert gopt.state_dict()["param_groups"] == topt.state_dict()["param_groups"]
    assert repr(gopt) == repr(topt)


# ----------------------------------------------------------------------------- LBFGS
def _rosen(lib, x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2 + (x[2] - x[1]) ** 2


def _smooth(lib, x):
    return ((x - 0.3) ** 2 * lib.tensor([1.0, 3.0, 0.5]).to(x.dtype)).sum() + 0.1 * x[0] ** 4 \
        + 0.2 * (x[1] * x[2]) ** 2


def lbfgs_run(lib, dtype, line_search, steps=4, history=10):
    # (Rosenbrock needs the line search, and float32 rounding differences grow along its
    # valley: float32 runs take the smooth function)
    f = _rosen if line_search and dtype == "float64" else _smooth
    x = lib.tensor(np.array([-1.2, 1.0, 0.5]).astype(dtype), requires_grad=True)
    opt = lib.optim.LBFGS([x], lr=1, max_iter=10, history_size=history,
                          line_search_fn=line_search)
    losses = []

    def closure():
        opt.zero_grad()
        loss = f(lib, x)
        loss.backward()
        return loss

    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
    st = opt.state[x]
    return x.detach().numpy().astype(np.float64), losses, st["func_evals"], st["n_iter"]


@needs_torch
@pytest.mark.parametrize("line_search", [None, "strong_wolfe"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_lbfgs_matches_torch(line_search, dtype):
    tx, tl, tfe, tni = lbfgs_run(torch, dtype, line_search)
    gx, gl, gfe, gni = lbfgs_run(tg, dtype, line_search)
    tol = dict(rtol=1e-8, atol=1e-10) if dtype == "float64" else dict(rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(gl, tl, **tol)
    np.testing.assert_allclose(gx, tx, **tol)
    if dtype == "float64":
        assert (gfe, gni) == (tfe, tni)


def test_lbfgs_strong_wolfe_minimizes_rosenbrock():
    x, losses, _, _ = lbfgs_run(tg, "float64", "strong_wolfe", steps=10, history=20)
    np.testing.assert_allclose(x, [1.0, 1.0, 1.0], atol=1e-5)
    assert losses[0] > losses[-1]


# ----------------------------------------------------------------------------- no torch
@pytest.mark.parametrize("case", range(len(CASES)), ids=_ids())
def test_kernel_matches_tensor_reference(case):
    """The compiled kernel against the recorded-tensor-ops path (differentiable=True)."""
    name, kwargs = CASES[case]
    kwargs = {k: v for k, v in kwargs.items() if k not in ("fused", "foreach")}
    a, _ = run(tg, name, kwargs, "float64", 10)
    b, _ = run(tg, name, kwargs, "float64", 10, reference=True)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-13)


def _np_adam(a, k_steps, lr=0.01, b1=0.9, b2=0.999, eps=1e-8):
    m = np.zeros_like(a)
    v = np.zeros_like(a)
    for k in range(k_steps):
        g = grad_of(a, k)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        t = k + 1
        a = a - lr / (1 - b1 ** t) * m / (np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps)
    return a


def test_adam_matches_numpy_formula():
    got, _ = run(tg, "Adam", dict(lr=0.01), "float64", 15)
    for a0, g in zip(init_arrays(), got):
        np.testing.assert_allclose(g, _np_adam(a0, 15), rtol=1e-12, atol=1e-13)


def test_sgd_momentum_matches_numpy_formula():
    got, _ = run(tg, "SGD", dict(lr=0.05, momentum=0.9, dampening=0.1, nesterov=False),
                 "float64", 7)
    for a, g in zip(init_arrays(), got):
        buf = None
        for k in range(7):
            d = grad_of(a, k)
            buf = d if buf is None else 0.9 * buf + 0.9 * d
            a = a - 0.05 * buf
        np.testing.assert_allclose(g, a, rtol=1e-12, atol=1e-13)


def test_step_with_closure_returns_loss_and_runs_with_grad():
    w = tg.nn.Parameter(tg.tensor([1.0, -2.0]))
    opt = tg.optim.SGD([w], lr=0.1)
    seen = []

    def closure():
        seen.append(tg.is_grad_enabled())
        opt.zero_grad()
        loss = (w ** 2).sum()
        loss.backward()
        return loss

    with tg.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and float(loss) == 5.0
    np.testing.assert_allclose(w.detach().numpy(), [0.8, -1.6], rtol=1e-6)


def test_step_bumps_version_and_refuses_stale_graph():
    w = tg.nn.Parameter(tg.tensor([1.0, 2.0]))
    opt = tg.optim.SGD([w], lr=0.1)
    y = (w * w).sum()            # saves w
    (w.sum()).backward()
    v = w._version
    opt.step()
    assert w._version > v
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_state_dict_round_trip_and_continue():
    a, opt = run(tg, "Adam", dict(lr=0.01, amsgrad=True), "float32", 5)
    sd = copy.deepcopy(opt.state_dict())
    ps = [tg.nn.Parameter(tg.tensor(x.astype(np.float32))) for x in a]
    opt2 = tg.optim.Adam(ps, lr=0.5, amsgrad=True)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    assert float(opt2.state[ps[0]]["step"]) == 5.0
    for p, q in zip(opt.param_groups[0]["params"], ps):
        np.testing.assert_array_equal(opt.state[p]["exp_avg"].numpy(),
                                      opt2.state[q]["exp_avg"].numpy())


def test_load_state_dict_errors():
    p = tg.nn.Parameter(tg.zeros(2))
    opt = tg.optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict({"state": {}, "param_groups": [{"params": [0, 1], "lr": 0.1}]})


@needs_torch
@pytest.mark.parametrize("make", [
    lambda lib, p: lib.optim.SGD(p, lr=-1),
    lambda lib, p: lib.optim.SGD(p, lr=0.1, nesterov=True),
    lambda lib, p: lib.optim.Adam(p, betas=(1.0, 0.9)),
    lambda lib, p: lib.optim.Adam(p, eps=-1),
    lambda lib, p: lib.optim.Adam(p, fused=True, foreach=True),
    lambda lib, p: lib.optim.Adam(p, fused=True, differentiable=True),
    lambda lib, p: lib.optim.RMSprop(p, alpha=-0.1),
    lambda lib, p: lib.optim.Adagrad(p, lr_decay=-1),
    lambda lib, p: lib.optim.Rprop(p, etas=(1.5, 1.2)),
    lambda lib, p: lib.optim.SGD([], lr=0.1),
    lambda lib, p: lib.optim.SGD(p[0], lr=0.1),
    lambda lib, p: lib.optim.SGD([{"params": {p[0]}}], lr=0.1),
    lambda lib, p: lib.optim.SGD([p[0], 3], lr=0.1),
    lambda lib, p: lib.optim.SGD([{"params": p}, {"params": p}], lr=0.1),
    lambda lib, p: lib.optim.SGD([p[0] * 2], lr=0.1),
    lambda lib, p: lib.optim.LBFGS([{"params": p[:1]}, {"params": p[1:]}]),
    lambda lib, p: lib.optim.Optimizer(p, {"lr": __import__(
        lib.__name__ + ".optim.optimizer", fromlist=["required"]).required}),
])
def test_constructor_errors_match_torch(make):
    def capture(lib):
        p = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))]
        try:
            make(lib, p)
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e).replace("tapegrad", "torch")
        return None
    t, g = capture(torch), capture(tg)
    assert t is not None and g == t


@needs_torch
def test_zero_grad_and_add_param_group_match_torch():
    def prog(lib):
        a, b = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(3))
        opt = lib.optim.Adam([a], lr=0.1)
        opt.add_param_group({"params": b, "lr": 0.5})
        (a.sum() + 2 * b.sum()).backward()
        opt.zero_grad(set_to_none=False)
        r = [a.grad.tolist(), b.grad.tolist()]
        opt.zero_grad()
        r.append((a.grad, b.grad))
        r.append([sorted(g.keys()) for g in opt.param_groups])
        return r, repr(opt)
    assert prog(tg) == prog(torch)


@needs_torch
def test_named_params_groups_state_dict_match_torch():
    def prog(lib):
        m = lib.nn.Linear(2, 2)
        decay = [(n, p) for n, p in m.named_parameters() if n.endswith("weight")]
        no = [(n, p) for n, p in m.named_parameters() if n.endswith("bias")]
        opt = lib.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                               {"params": no, "weight_decay": 0.0}])
        return opt.state_dict()["param_groups"]
    assert prog(tg) == prog(torch)


def test_hooks_run_in_order():
    p = tg.nn.Parameter(tg.zeros(1))
    opt = tg.optim.SGD([p], lr=0.1)
    log = []
    h1 = opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: log.append("post"))
    p.grad = tg.ones(1)
    opt.step()
    h1.remove()
    opt.step()
    assert log == ["pre", "post", "post"]


def test_pickle_and_deepcopy_of_optimizer():
    a, opt = run(tg, "SGD", dict(lr=0.1, momentum=0.9), "float64", 3)
    opt2 = pickle.loads(pickle.dumps(opt))
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    opt3 = copy.deepcopy(opt)
    assert len(opt3.state) == len(opt.state)


def test_non_contiguous_and_mixed_dtype_groups_match_reference():
    """A Parameter over a transposed (non-contiguous) array and float32/float64 parameters in
    one group: the copy-around path and the per-dtype calls against the tensor reference."""
    def make():
        base = np.arange(12.0).reshape(3, 4) / 7.0
        p1 = tg.nn.Parameter(tg.tensor(base).t())                  # float64, non-contiguous
        p2 = tg.nn.Parameter(tg.tensor(base[0].astype(np.float32)))
        return [p1, p2]

    results = []
    for reference in (False, True):
        ps = make()
        opt = tg.optim.Adam(ps, lr=0.05, amsgrad=True, weight_decay=0.01)
        if reference:
            opt.param_groups[0]["differentiable"] = True
        for k in range(6):
            opt.zero_grad()
            for p in ps:
                p.grad = tg.tensor(grad_of(p.detach().numpy().astype(np.float64), k)
                                   .astype(p.detach().numpy().dtype))
            opt.step()
        results.append([p.detach().numpy().astype(np.float64) for p in ps])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert not make()[0].is_contiguous()
