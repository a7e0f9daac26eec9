"""Every row of the op table: forward kernel vs numpy reference, VJP kernel vs float64 finite
differences, the eager facade's gradient vs finite differences, and the compiled replay vs the
eager forward. Parametrized over ``ops.KERNEL_OPS``: a new row is tested without new code
(it only needs an entry in ``FACADE`` below, which a test checks)."""
import numpy as np
import pytest

import tapegrad as tg
from tapegrad._compiled import kernels
from tapegrad import ops
from tapegrad.ops import BINARY, INDEX, MM, SUM, UNARY

ROWS = ops.KERNEL_OPS
IDS = [op.name for op in ROWS]
rng = np.random.default_rng(1234)


def _draw(op, shape, dtype=np.float64):
    lo, hi = op.domain
    x = rng.uniform(lo, hi, size=shape)
    if lo < 0 < hi:                 # keep away from kinks at 0 (abs, relu)
        x = np.where(np.abs(x) < 0.05, 0.3, x)
    return x.astype(dtype)


def _fd(f, x, eps=1e-6):
    """Central differences of the scalar f at x (float64)."""
    g = np.zeros_like(x)
    flat = x.reshape(-1)
    gf = g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        fp = f(x)
        flat[i] = old - eps
        fm = f(x)
        flat[i] = old
        gf[i] = (fp - fm) / (2 * eps)
    return g


def _kernel_case(op, dtype=np.float64):
    """(forward(inputs) -> y, vjp(inputs, y, g) -> grads, inputs) for a row's kernels."""
    fwd = kernels.python_twin(getattr(kernels, "fwd_" + op.name))
    vjp = kernels.python_twin(getattr(kernels, "vjp_" + op.name))
    c = op.const if op.const is not None else (0.25 if op.kind == SUM else 0.0)
    if op.kind == UNARY:
        x = _draw(op, 7, dtype)

        def F(x):
            y = np.zeros_like(x)
            fwd(x.size, x, 0, c, y, 0)
            return y

        def V(ins, y, g):
            gx = np.zeros_like(ins[0])
            vjp(g.size, g, 0, ins[0], 0, y, 0, c, gx, 0)
            return [gx]
        return F, V, [x], lambda x: op.ref(x, c)
    if op.kind == BINARY:
        a, b = _draw(op, 6, dtype), _draw(op, 6, dtype)

        def F(a, b):
            y = np.zeros(6, dtype)
            fwd(6, a, 0, 1, b, 0, 1, y, 0)
            return y

        def V(ins, y, g):
            ga, gb = np.zeros_like(ins[0]), np.zeros_like(ins[1])
            vjp(6, g, 0, ins[0], 0, 1, ins[1], 0, 1, y, 0, ga, 0, gb, 0, True, True)
            return [ga, gb]
        return F, V, [a, b], op.ref
    if op.kind == SUM:
        x = _draw(op, 9, dtype)

        def F(x):
            y = np.zeros(1, dtype)
            fwd(x.size, x, 0, c, y, 0)
            return y

        def V(ins, y, g):
            gx = np.zeros_like(ins[0])
            vjp(gx.size, g, 0, c, gx, 0)
            return [gx]
        return F, V, [x], lambda x: np.atleast_1d(op.ref(x, c))
    if op.kind == INDEX:
        x = _draw(op, 8, dtype)
        io, I = 0, None                 # offset rows: io is the element offset, I unused
        if op.name == "gather":
            idx, m = np.array([3, 0, 7, 3, 3, 1], np.int64), 6
        elif op.name == "segsum":
            idx, m = np.array([0, 2, 1, 2, 0, 0, 1, 2], np.int64), 3
        elif op.name == "slice":        # y = x[2:7]
            io, ln, m, I = 2, 5, 5, np.zeros(0, np.int64)
        elif op.name == "embed":        # y = zeros(12), y[3:11] = x
            io, ln, m, I = 3, 8, 12, np.zeros(0, np.int64)
        elif op.name == "transpose":    # x (2, 4) -> y (4, 2)
            io, ln, m, I = 2, 8, 8, np.zeros(0, np.int64)
        else:
            idx, m = np.zeros(0, np.int64), 8
        # gather: n = len(idx) outputs from m = 8 inputs; segsum: n = 8 inputs into m outputs
        if I is None:
            ln, I = idx.size, idx
        assert (io > 0) == (op.opcode in ops.OFFSET_OPS)

        def F(x):
            y = np.zeros(m, dtype)
            fwd(ln, m, x, 0, I, io, c if op.name == "segsum" else 0.0, y, 0)
            return y

        def V(ins, y, g):
            gx = np.zeros_like(ins[0])
            vjp(ln, 8, g, 0, I, io, c if op.name == "segsum" else 0.0, gx, 0)
            return [gx]
        cc = c if op.name == "segsum" else 0.0
        return F, V, [x], lambda x: op.ref(x, io if io else I, cc if op.name == "segsum" else 1.0, m)
    if op.kind == MM:
        m, k, n = 3, 4, 2
        a, b = _draw(op, m * k, dtype), _draw(op, k * n, dtype)

        def F(a, b):
            y = np.zeros(m * n, dtype)
            fwd(m, k, n, a, 0, b, 0, y, 0)
            return y

        def V(ins, y, g):
            ga, gb = np.zeros_like(ins[0]), np.zeros_like(ins[1])
            vjp(m, k, n, g, 0, ins[0], 0, ins[1], 0, ga, 0, gb, 0, True, True)
            return [ga, gb]
        return F, V, [a, b], lambda a, b: op.ref(a.reshape(m, k), b.reshape(k, n)).ravel()
    raise AssertionError(op.kind)


def test_every_row_has_a_kernel_pair_and_reference():
    for op in ROWS:
        assert callable(getattr(kernels, "fwd_" + op.name)), op.name
        assert callable(getattr(kernels, "vjp_" + op.name)), op.name
        assert op.ref is not None, op.name
        assert op.grad_fn.endswith(("Backward0", "Backward1", "Backward")), op.name


def test_generated_interpreter_is_current():
    import os
    path = os.path.join(os.path.dirname(ops.__file__), "_compiled", "_interp.py")
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert text == ops.generate_interp(), (
        "tapegrad/_compiled/_interp.py is stale: run `python -m tapegrad.ops`")
    with open(os.path.join(os.path.dirname(path), "_driver.py"), encoding="utf-8") as fh:
        assert fh.read() == ops.driver_source(text), (
            "the INTERP_SHA of tapegrad/_compiled/_driver.py is stale: run `python -m tapegrad.ops`")


def test_generated_dispatch_covers_every_row():
    src = ops.generate_interp()
    for op in ROWS:
        assert "vjp_%s(" % op.name in src and "fwd_%s(" % op.name in src, op.name


@pytest.mark.parametrize("op", ROWS, ids=IDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_kernel_matches_numpy_reference(op, dtype):
    F, V, ins, ref = _kernel_case(op, dtype)
    y = F(*ins)
    want = np.asarray(ref(*ins), dtype=np.float64).ravel()
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y.astype(np.float64), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ROWS, ids=IDS)
def test_vjp_kernel_matches_finite_differences(op):
    F, V, ins, _ = _kernel_case(op, np.float64)
    y = F(*ins)
    g = rng.standard_normal(y.shape)
    got = V(ins, y, g)
    for i in range(len(ins)):
        def scalar(xi, i=i):
            args = list(ins)
            args[i] = xi
            return float(np.dot(g, F(*args)))
        want = _fd(scalar, ins[i].copy())
        np.testing.assert_allclose(got[i], want, rtol=1e-6, atol=1e-7, err_msg=op.name)


@pytest.mark.parametrize("op", [o for o in ROWS if o.kind == BINARY],
                         ids=[o.name for o in ROWS if o.kind == BINARY])
def test_vjp_kernels_with_single_element_broadcast(op):
    """Binary rows: an operand broadcast from one element (stride 0) sums its gradient."""
    fwd = kernels.python_twin(getattr(kernels, "fwd_" + op.name))
    vjp = kernels.python_twin(getattr(kernels, "vjp_" + op.name))
    a, b = _draw(op, 5), _draw(op, 1)
    g = rng.standard_normal(5)

    def F(a, b):
        y = np.zeros(5)
        fwd(5, a, 0, 1, b, 0, 0, y, 0)
        return y
    y = F(a, b)
    ga, gb = np.zeros(5), np.zeros(1)
    vjp(5, g, 0, a, 0, 1, b, 0, 0, y, 0, ga, 0, gb, 0, True, True)
    np.testing.assert_allclose(ga, _fd(lambda a: g @ F(a, b), a.copy()), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb, _fd(lambda b: g @ F(a, b), b.copy()), rtol=1e-6, atol=1e-7)


STEP_ROWS = [o for o in ROWS if o.kind in (BINARY, INDEX)]


@pytest.mark.parametrize("op", STEP_ROWS, ids=[o.name for o in STEP_ROWS])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_single_element_step_functions_match_the_kernels(op, dtype):
    """The sweeps send one-element binary and index entries to generated step functions
    (kernel calls with a literal count of 1): each must run its own row's kernels, at the
    given offsets, against a numpy reference and finite differences."""
    from tapegrad._compiled import _interp
    code = ops.OPCODE[op.name]
    c = op.const if op.const is not None else 0.0
    fwd = kernels.python_twin(getattr(kernels, "fwd_" + op.name))
    vjp = kernels.python_twin(getattr(kernels, "vjp_" + op.name))
    sf = getattr(_interp, "step_fwd_" + op.kind)
    sr = getattr(_interp, "step_rev_" + op.kind)
    if op.kind == BINARY:
        A, B = _draw(op, 3, dtype), _draw(op, 3, dtype)
        Y = np.zeros(3, dtype)
        sf(code, A[1:], B[2:], Y, 2)                   # y[2] = f(a[1], b[2])
        np.testing.assert_allclose(Y[2], op.ref(A[1:2], B[2:3])[0], rtol=1e-6)
        assert Y[0] == Y[1] == 0
        G = np.array([2.5], dtype)
        GA, GB = np.zeros(2, dtype), np.zeros(4, dtype)
        sr(code, G, 0, A[1:], B[2:], Y[2:], GA, 1, GB, 3, True, True)
        wa, wb = np.zeros(1, dtype), np.zeros(1, dtype)
        vjp(1, G, 0, A[1:], 0, 1, B[2:], 0, 1, Y[2:], 0, wa, 0, wb, 0, True, True)
        assert GA[1] == wa[0] and GB[3] == wb[0] and GA[0] == 0 and not GB[:3].any()
        if dtype == np.float64:
            a, b = A[1:2].copy(), B[2:3].copy()
            np.testing.assert_allclose(
                GA[1], 2.5 * _fd(lambda x: op.ref(x, b)[0], a)[0], rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(
                GB[3], 2.5 * _fd(lambda x: op.ref(a, x)[0], b)[0], rtol=1e-5, atol=1e-7)
    else:                                              # an index of one element
        X = _draw(op, 5, dtype)
        I = np.array([9, 1], np.int64)                 # the entry's index is I[1] = 1
        cc = 0.5 if op.name == "segsum" else 0.0      # segsum's scale (1/n for a mean)
        m = 2                                          # outputs (segsum, copy) or unused
        Y, ref = np.zeros(4, dtype), np.zeros(4, dtype)
        sf(code, m, X, 1, I, 1, cc, Y, 1)
        fwd(1, m, X, 1, I, 1, cc, ref, 1)
        np.testing.assert_array_equal(Y, ref)
        assert Y[1:3].any() and Y[0] == 0
        G = np.array([0.0, 1.25, -0.5, 0.0], dtype)
        GX, want = np.zeros(6, dtype), np.zeros(6, dtype)
        sr(code, m, G, 1, I, 1, cc, GX, 1)
        vjp(1, m, G, 1, I, 1, cc, want, 1)
        np.testing.assert_array_equal(GX, want)
        assert GX.any() and GX[0] == 0


# ------------------------------------------------------------------ through the facade
# How each row is reached from the Tensor API: (callable on tapegrad tensors, input shapes)
FACADE = {
    "neg": (lambda x: -x, [(3, 2)]),
    "exp": (lambda x: x.exp(), [(3, 2)]),
    "log": (lambda x: tg.log(x), [(3, 2)]),
    "sin": (lambda x: x.sin(), [(3, 2)]),
    "cos": (lambda x: tg.cos(x), [(3, 2)]),
    "tanh": (lambda x: x.tanh(), [(3, 2)]),
    "sigmoid": (lambda x: x.sigmoid(), [(3, 2)]),
    "relu": (lambda x: x.relu(), [(3, 2)]),
    "sqrt": (lambda x: x.sqrt(), [(3, 2)]),
    "abs": (lambda x: x.abs(), [(3, 2)]),
    "pow_scalar": (lambda x: x ** 2.5, [(3, 2)]),
    "add": (lambda a, b: a + b, [(3, 2), (2,)]),
    "sub": (lambda a, b: a - b, [(3, 1), (3, 4)]),
    "mul": (lambda a, b: a * b, [(3, 2), (3, 2)]),
    "div": (lambda a, b: a / b, [(2, 3), ()]),
    "pow": (lambda a, b: a ** b, [(4,), (4,)]),
    "sum": (lambda x: x.mean(), [(3, 4)]),
    "gather": (lambda x: x[1:, ::2], [(3, 5)]),
    "segsum": (lambda x: x.sum(dim=1, keepdim=True), [(3, 4)]),
    "copy": (lambda x: x.view(6, 2), [(3, 4)]),
    "slice": (lambda x: x[1:], [(3, 4)]),
    # embed: zero padding of the first dim (also slice's recorded VJP under create_graph)
    "embed": (lambda x: tg.nn.functional.pad(x, (0, 0, 2, 1)), [(3, 4)]),
    "transpose": (lambda x: x.t(), [(3, 4)]),
    "mm": (lambda a, b: a @ b, [(3, 4), (4, 2)]),
    # further elementwise rows
    "tan": (lambda x: x.tan(), [(3, 2)]),
    "asin": (lambda x: tg.asin(x), [(3, 2)]),
    "acos": (lambda x: x.acos(), [(3, 2)]),
    "atan": (lambda x: tg.atan(x), [(3, 2)]),
    "sinh": (lambda x: x.sinh(), [(3, 2)]),
    "cosh": (lambda x: tg.cosh(x), [(3, 2)]),
    "erf": (lambda x: x.erf(), [(3, 2)]),
    "log1p": (lambda x: x.log1p(), [(3, 2)]),
    "expm1": (lambda x: tg.expm1(x), [(3, 2)]),
    "scale": (lambda x: tg.log2(x.exp()), [(3, 2)]),
    "step": (lambda x: x.floor(), [(3, 2)]),
    "clamp_min": (lambda x: x.clamp(min=0.7), [(3, 2)]),
    "clamp_max": (lambda x: tg.clamp(x, max=0.7), [(3, 2)]),
    "leaky_relu": (lambda x: tg.nn.functional.leaky_relu(x, 0.01), [(3, 2)]),
    "elu": (lambda x: tg.nn.functional.elu(x), [(3, 2)]),
    "gelu": (lambda x: tg.nn.functional.gelu(x), [(3, 2)]),
    "silu": (lambda x: tg.nn.functional.silu(x), [(3, 2)]),
    "softplus": (lambda x: tg.nn.functional.softplus(x), [(3, 2)]),
    "log_sigmoid": (lambda x: tg.nn.functional.logsigmoid(x), [(3, 2)]),
    "smooth_l1": (lambda x: tg.nn.functional.smooth_l1_loss(x, x * 0, reduction="none"), [(3, 2)]),
    "hardsigmoid": (lambda x: tg.nn.functional.hardsigmoid(x), [(3, 2)]),
    "maximum": (lambda a, b: tg.maximum(a, b), [(3, 2), (2,)]),
    "minimum": (lambda a, b: a.minimum(b), [(3, 2), (3, 2)]),
    "atan2": (lambda a, b: tg.atan2(a, b), [(3, 2), (3, 1)]),
    "hypot": (lambda a, b: tg.hypot(a, b), [(3, 2), ()]),
    "remainder": (lambda a, b: a % b, [(3, 2), (3, 2)]),
    "lgamma": (lambda x: tg.lgamma(x), [(3, 2)]),
    "polygamma": (lambda x: tg.polygamma(1, x), [(3, 2)]),
    "softmax": (lambda x: tg.softmax(x, -1), [(3, 4)]),
    "log_softmax": (lambda x: tg.nn.functional.log_softmax(x, dim=1), [(3, 4)]),
}


# rows that only the batched plans emit (func.CompiledTape._fold_scalars rewrites binary entries
# with a scalar constant to them): no Tensor call records them, so the facade tests skip them;
# the kernel tests above and tests/test_func.py's batched-plan tests cover them
PLAN_ONLY = ops.PLAN_ONLY
FROWS = [op for op in ROWS if op.name not in PLAN_ONLY]
FIDS = [op.name for op in FROWS]


def test_facade_table_covers_every_row():
    assert set(FACADE) == {op.name for op in ROWS} - PLAN_ONLY


@pytest.mark.parametrize("name", sorted(PLAN_ONLY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_plan_only_rows_kernels_are_exact(name, dtype):
    """The plan-only rows' kernels compute in float64 with a constant of the store's dtype
    (what a plan folds): the forward must equal the reference's arithmetic in the store's
    dtype bit for bit, and the VJP must be exactly +-g."""
    op = ops.BY_NAME[name]
    x = rng.standard_normal(7).astype(dtype)
    g = rng.standard_normal(7).astype(dtype)
    c = float(dtype(1.7))           # plans fold a recorded constant: a value of the store's dtype
    y = np.empty_like(x)
    kernels.python_twin(getattr(kernels, "fwd_" + name))(7, x, 0, c, y, 0)
    np.testing.assert_array_equal(y, op.ref(x, c))
    gx = np.zeros_like(x)
    kernels.python_twin(getattr(kernels, "vjp_" + name))(7, g, 0, x, 0, y, 0, c, gx, 0)
    np.testing.assert_array_equal(gx, g if name == "add_scalar" else -g)


def _grads_via_tape(f, arrays):
    xs = [tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in arrays]
    y = f(*xs)
    w = rng.standard_normal(y.shape)
    (y * tg.tensor(w)).sum().backward()
    return y, w, [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("op", FROWS, ids=FIDS)
def test_facade_gradient_matches_finite_differences(op):
    f, shapes = FACADE[op.name]
    arrays = [_draw(op, s) for s in shapes]
    y, w, grads = _grads_via_tape(f, arrays)
    assert y.dtype == tg.float64
    for i, a in enumerate(arrays):
        def scalar(ai, i=i):
            args = [tg.tensor(v, dtype=tg.float64) for v in arrays]
            args[i] = tg.tensor(ai, dtype=tg.float64)
            return float((f(*args).numpy() * w).sum())
        want = _fd(scalar, np.array(a, dtype=np.float64, copy=True))
        np.testing.assert_allclose(grads[i], want, rtol=1e-6, atol=1e-7, err_msg=op.name)


@pytest.mark.parametrize("op", FROWS, ids=FIDS)
def test_facade_float32_agrees_with_float64(op):
    f, shapes = FACADE[op.name]
    arrays = [_draw(op, s) for s in shapes]
    x64 = [tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in arrays]
    x32 = [tg.tensor(a, dtype=tg.float32, requires_grad=True) for a in arrays]
    y64, y32 = f(*x64), f(*x32)
    assert y32.dtype == tg.float32
    y64.sum().backward()
    y32.sum().backward()
    np.testing.assert_allclose(y32.detach().numpy(), y64.detach().numpy(), rtol=1e-5, atol=1e-5)
    for a, b in zip(x32, x64):
        assert a.grad.dtype == tg.float32
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", FROWS, ids=FIDS)
def test_grad_fn_name_matches_table(op):
    f, shapes = FACADE[op.name]
    xs = [tg.tensor(_draw(op, s), requires_grad=True) for s in shapes]
    y = f(*xs)
    assert type(y.grad_fn).__name__ == FACADE_NAME.get(op.name, op.grad_fn)


# rows whose FACADE call shows another torch name than the row's default
FACADE_NAME = {"sum": "MeanBackward0", "gather": "SliceBackward0", "mm": "MmBackward0",
               "scale": "Log2Backward0", "embed": "ConstantPadNdBackward0"}


@pytest.mark.parametrize("op", FROWS, ids=FIDS)
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
@pytest.mark.parametrize("big", [False, True], ids=["compiled", "numpy"])
def test_compiled_replay_matches_eager(op, dtype, big, monkeypatch):
    """Record once, replay forward and reverse on new leaf values: in compiled code, or (big
    nodes, forced with BIG=1) through the rows' numpy forward and VJP."""
    from tapegrad._core import tape as T
    from tapegrad._core.tape import recording, replay
    if big:
        monkeypatch.setattr(T, "BIG", 1)
    f, shapes = FACADE[op.name]
    xs = [tg.tensor(_draw(op, s), dtype=dtype, requires_grad=True) for s in shapes]
    with recording() as tp:
        y = f(*xs)
    for _ in range(3):
        new = [_draw(op, s) for s in shapes]
        w = rng.standard_normal(y.shape)
        (vals,), grads = replay(tp, [y], xs, new, [w])
        fresh = [tg.tensor(v, dtype=dtype, requires_grad=True) for v in new]
        ye = f(*fresh)
        (ye * tg.tensor(w, dtype=dtype)).sum().backward()
        tol = 1e-5 if dtype == tg.float32 else 1e-12
        np.testing.assert_allclose(vals, ye.detach().numpy(), rtol=tol, atol=tol)
        for g, x in zip(grads, fresh):
            np.testing.assert_allclose(g, x.grad.numpy(), rtol=tol * 10, atol=tol * 10)


NP_ROWS = [op for op in FROWS if op.kind in (UNARY, BINARY, SUM, MM)]   # rows of eager tapes


def test_rows_with_large_entries_have_a_numpy_vjp():
    for op in NP_ROWS:
        assert op.np_vjp is not None or op.vjp_sign is not None, op.name


@pytest.mark.parametrize("op", NP_ROWS, ids=[o.name for o in NP_ROWS])
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
@pytest.mark.parametrize("chunked", [False, True], ids=["one-chunk", "chunked"])
def test_numpy_vjp_path_matches_compiled_path(op, dtype, chunked, monkeypatch):
    """Large entries take the row's numpy VJP; forcing that path (BIG=1) must give the
    same gradients as the compiled kernels (and so as the finite differences above), also
    when the work is split into chunks on several threads (PAR_MIN=2, forward too)."""
    from tapegrad import _par
    from tapegrad._core import tape as T
    if chunked:
        monkeypatch.setattr(_par, "PAR_MIN", 2)
        monkeypatch.setattr(_par, "THREADS", 3)
    f, shapes = FACADE[op.name]
    arrays = [_draw(op, s) for s in shapes]
    w = rng.standard_normal(f(*[tg.tensor(a) for a in arrays]).shape)

    def grads():
        xs = [tg.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
        (f(*xs) * tg.tensor(w, dtype=dtype)).sum().backward()
        return [x.grad.numpy() for x in xs]
    compiled = grads()
    monkeypatch.setattr(T, "BIG", 1)
    via_numpy = grads()
    tol = 1e-5 if dtype == tg.float32 else 1e-12
    for c, v in zip(compiled, via_numpy):
        assert c.dtype == v.dtype
        np.testing.assert_allclose(v, c, rtol=tol, atol=tol)


def test_numpy_path_on_a_large_graph_matches_finite_differences():
    """A 10^5-element graph runs its big entries through numpy; check against an analytic
    gradient computed independently in float64."""
    xs = rng.uniform(-2, 2, 100_000)
    x = tg.tensor(xs, dtype=tg.float64, requires_grad=True)
    y = (tg.sin(x) * tg.exp(-x ** 2) + tg.tanh(x) / (1 + x * x)).sum()
    y.backward()
    s, ex, th = np.sin(xs), np.exp(-xs ** 2), np.tanh(xs)
    want = (np.cos(xs) * ex - 2 * xs * s * ex + (1 - th ** 2) / (1 + xs ** 2)
            - th * 2 * xs / (1 + xs ** 2) ** 2)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-12)


def test_big_graph_gradients_are_independent_writable_arrays():
    """On the big-node path cotangents are shared (add passes its cotangent through, sum's is
    a broadcast view): a leaf's .grad must still be its own writable array, and accumulating
    into one gradient must never change another."""
    n = 1 << 16
    xs = rng.uniform(-1, 1, n)
    x = tg.tensor(xs, dtype=tg.float32, requires_grad=True)
    w = tg.tensor(xs * 0 + 3, dtype=tg.float32, requires_grad=True)
    (x + w).sum().backward()
    for t in (x, w):
        assert t.grad._data.flags.writeable and t.grad._data.strides == (4,)
        np.testing.assert_array_equal(t.grad.numpy(), np.ones(n, np.float32))
    assert not np.shares_memory(x.grad.numpy(), w.grad.numpy())
    x.grad.zero_()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones(n, np.float32))
    (x + x + w * 2).sum().backward()           # accumulates into the existing .grad in place
    np.testing.assert_array_equal(x.grad.numpy(), np.full(n, 2, np.float32))
    np.testing.assert_array_equal(w.grad.numpy(), np.full(n, 3, np.float32))


# ------------------------------------------------------------------ scalar-plan replay
SCALAR_ROWS = [o for o in FROWS if o.kind in (UNARY, BINARY)]


@pytest.mark.parametrize("op", SCALAR_ROWS, ids=[o.name for o in SCALAR_ROWS])
@pytest.mark.parametrize("dtype", [tg.float32, tg.float64])
def test_scalar_plan_replay_matches_eager(op, dtype):
    """A recorded graph of one-element entries replays through the pre-decoded scalar-plan
    sweeps (tapegrad.func): values and gradients on new inputs equal the eager recording's,
    and (float64) central differences of the function."""
    import tapegrad.func as tf
    f, shapes = FACADE[op.name]

    def g(*xs):                      # entries with recorded constants on either side too
        return 0.25 - f(*xs) * 1.5
    argnums = tuple(range(len(shapes)))
    gv = tf.grad_and_value(g, argnums=argnums)
    gv(*[tg.tensor(_draw(op, ()), dtype=dtype) for _ in shapes])
    (ct,) = [v[0] for v in gv._cache.tapes.values()]
    assert ct._sp is not None, "a scalar graph must use the scalar plan"
    tol = 1e-5 if dtype == tg.float32 else 1e-12
    for _ in range(3):
        new = [_draw(op, ()) for _ in shapes]
        grads, val = gv(*[tg.tensor(v, dtype=dtype) for v in new])
        fresh = [tg.tensor(v, dtype=dtype, requires_grad=True) for v in new]
        ye = g(*fresh)
        ye.backward()
        assert val.dtype == ye.dtype and val.shape == ()
        np.testing.assert_allclose(val.numpy(), ye.detach().numpy(), rtol=tol, atol=tol)
        for gr, x in zip(grads, fresh):
            assert gr.dtype == dtype and gr.shape == ()
            np.testing.assert_allclose(gr.numpy(), x.grad.numpy(), rtol=tol * 10, atol=tol * 10)
        if dtype == tg.float64:
            for i, gr in enumerate(grads):
                def at(v, i=i):
                    args = [tg.tensor(w) for w in new]
                    args[i] = tg.tensor(v.reshape(()))
                    return float(g(*args))
                fd = _fd(at, np.array([float(new[i])]))[0]
                np.testing.assert_allclose(float(gr), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,k", [(1, 1), (5, 3), (32, 64)])
def test_mm_vjp_matrix_vector_form_matches_numpy(m, k, dtype):
    """vjp_mm's n == 1 branch (mv, dot, a last layer): accumulates G b^T into GA and A^T G
    into GB at the given offsets, like numpy's products, and only where asked."""
    A, b = rng.standard_normal(m * k).astype(dtype), rng.standard_normal(k).astype(dtype)
    G = rng.standard_normal(m).astype(dtype)
    GA, GB = np.full(m * k + 2, 0.5, dtype), np.full(k + 3, -1.0, dtype)
    kernels.python_twin(kernels.vjp_mm)(m, k, 1, G, 0, A, 0, b, 0, GA, 2, GB, 3, True, True)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(GA[2:], 0.5 + np.outer(G, b).ravel(), rtol=tol, atol=tol)
    np.testing.assert_allclose(GB[3:], -1.0 + A.reshape(m, k).T @ G, rtol=tol, atol=tol * k)
    assert (GA[:2] == 0.5).all() and (GB[:3] == -1.0).all()
    GA2 = np.zeros(m * k, dtype)
    kernels.python_twin(kernels.vjp_mm)(m, k, 1, G, 0, A, 0, b, 0, GA2, 0, GB, 3, False, False)
    assert not GA2.any()
