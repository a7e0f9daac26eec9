"""Shared oracle harness of tests/test_torch_oracle.py and tests/test_*.py (not collected).

* ``same(f)`` runs a program ``f(lib)`` written against the torch API with ``lib=torch`` and
  ``lib=tapegrad`` and compares what it returns (values by dtype tolerance, dtypes, shapes,
  requires_grad, is_leaf, grad_fn names, Python values, exception types). Skips when torch is
  not installed.
* ``fdcheck(f, arrays)`` checks tapegrad's gradient of ``sum(w * f(*xs))`` against float64
  central differences, independent of torch.
"""
import builtins
import math
import warnings

import numpy as np
import pytest

import tapegrad as tg

try:  # torch is an optional oracle
    import torch
except ImportError:  # pragma: no cover - exercised on machines without torch
    torch = None

TOL = {"torch.float32": dict(rtol=2e-5, atol=1e-6), "torch.float64": dict(rtol=1e-10, atol=1e-12)}


class Raised:
    def __init__(self, exc):
        self.type = next(c for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c)
        self.msg = str(exc)

    def __repr__(self):
        return "Raised(%s: %s)" % (self.type.__name__, self.msg[:300])


class TensorInfo:
    def __init__(self, t):
        self.dtype = str(t.dtype)
        self.shape = tuple(t.shape)
        self.requires_grad = bool(t.requires_grad)
        self.is_leaf = bool(t.is_leaf)
        self.grad_fn = None if t.grad_fn is None else t.grad_fn.name()
        v = t.detach().tolist()
        self.value = np.array(v, dtype=np.float64 if t.dtype.is_floating_point else object)

    def __repr__(self):
        return "Tensor(%s, %s, rg=%s, grad_fn=%s, %s)" % (self.dtype, self.shape, self.requires_grad,
                                                          self.grad_fn, self.value.tolist())


def capture(f, lib):
    try:
        return convert(f(lib), lib)
    except Exception as exc:  # noqa: BLE001 - compared
        return Raised(exc)


def convert(r, lib):
    if isinstance(r, lib.Tensor):
        return TensorInfo(r)
    if isinstance(r, tuple) and hasattr(r, "_fields") or type(r).__name__ in (
            "max", "min", "sort", "topk", "return_types"):
        return tuple(convert(v, lib) for v in r)
    if isinstance(r, (list, tuple)):
        return type(r)(convert(v, lib) for v in r)
    if isinstance(r, dict):
        return {k: convert(v, lib) for k, v in r.items()}
    if isinstance(r, lib.dtype):
        return str(r)
    if isinstance(r, lib.Size):
        return tuple(r)
    if isinstance(r, BaseException):
        return Raised(r)
    return r


def compare(a, b, path="result", loose=False, tol=None):
    if isinstance(a, Raised) or isinstance(b, Raised):
        assert isinstance(a, Raised) and isinstance(b, Raised), \
            "%s: torch gave %r, tapegrad gave %r" % (path, a, b)
        assert a.type is b.type, "%s: torch raised %r, tapegrad raised %r" % (path, a, b)
        return
    if isinstance(a, TensorInfo):
        assert isinstance(b, TensorInfo), "%s: torch gave %r, tapegrad gave %r" % (path, a, b)
        for attr in ("dtype", "shape", "requires_grad", "is_leaf", "grad_fn"):
            assert getattr(a, attr) == getattr(b, attr), \
                "%s.%s: torch %r, tapegrad %r\n  torch %r\n  tapegrad %r" % (
                    path, attr, getattr(a, attr), getattr(b, attr), a, b)
        if a.value.dtype == object:
            assert a.value.tolist() == b.value.tolist(), "%s: torch %r, tapegrad %r" % (path, a, b)
        else:
            t = tol or (TOL["torch.float32" if loose else a.dtype] if a.dtype in TOL
                        else TOL["torch.float32"])
            np.testing.assert_allclose(b.value, a.value, equal_nan=True, err_msg=path, **t)
        return
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), \
            "%s: torch %r, tapegrad %r" % (path, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            compare(x, y, "%s[%d]" % (path, i), loose, tol)
        return
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), "%s: torch %r, tapegrad %r" % (path, a, b)
        for k in a:
            compare(a[k], b[k], "%s[%r]" % (path, k), loose, tol)
        return
    if isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=2e-5, abs_tol=1e-6) or (math.isnan(a) and math.isnan(b)), \
            "%s: torch %r, tapegrad %r" % (path, a, b)
        return
    assert type(a) is type(b) and a == b, "%s: torch %r, tapegrad %r" % (path, a, b)


def same(f, phrases=(), loose=False, tol=None):
    """Run f(torch) and f(tapegrad) and assert they agree (skips without torch)."""
    if torch is None:
        pytest.skip("torch is not installed")
    rt = capture(f, torch)
    rg = capture(f, tg)
    compare(rt, rg, loose=loose, tol=tol)
    for p in phrases:
        assert isinstance(rt, Raised), "expected torch to raise for phrase %r" % p
        assert p in rt.msg, "phrase %r not in torch's message: %s" % (p, rt.msg)
        assert p in rg.msg, "phrase %r not in tapegrad's message: %s" % (p, rg.msg)
    return rt, rg


def data(shape, lo=-2.0, hi=2.0, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, size=shape).tolist()


def leaf(lib, values, dtype="float32", rg=True):
    return lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=rg)


def fd(fun, x, eps=1e-6):
    g = np.zeros_like(x)
    flat, gf = x.reshape(-1), g.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        fp = fun(x)
        flat[i] = old - eps
        fm = fun(x)
        flat[i] = old
        gf[i] = (fp - fm) / (2 * eps)
    return g


def fdcheck(f, arrays, rtol=1e-6, atol=1e-7, seed=5, eps=1e-6):
    """tapegrad's gradient of sum(w * f(*xs)) (float64) against central differences."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]
    xs = [tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in arrays]
    y = f(*xs)
    w = np.random.default_rng(seed).standard_normal(tuple(y.shape))
    (y * tg.tensor(w, dtype=tg.float64)).sum().backward()
    for i, a in enumerate(arrays):
        def scalar(ai, i=i):
            args = [tg.tensor(v, dtype=tg.float64) for v in arrays]
            args[i] = tg.tensor(ai, dtype=tg.float64)
            return float((f(*args).numpy() * w).sum())
        want = fd(scalar, a.copy(), eps)
        got = xs[i].grad.numpy() if xs[i].grad is not None else np.zeros_like(a)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg="input %d" % i)


def graph(fn, depth=8):
    """The backward graph below ``fn`` (a grad_fn) as nested text: names with their
    next_functions in order, ``None`` for inputs that need no grad, leaves as AccumulateGrad."""
    if fn is None:
        return "None"
    name = fn.name().replace("torch::autograd::", "")
    if depth == 0:
        return name + "..."
    kids = [graph(f, depth - 1) + ("" if k == 0 else "#%d" % k) for f, k in fn.next_functions]
    return name + ("(" + ", ".join(kids) + ")" if kids else "")


# ----------------------------------------------------------------------------- table drivers
# The tests of the functions composed from primitives (scatters, matrix_exp, in-place variants
# ...) keep programs in tables, one per test module; these run a table's entries.
TOLS = {"float32": dict(rtol=2e-4, atol=2e-5), "float64": dict(rtol=1e-9, atol=1e-11)}

# next_functions below the top differ for reasons outside the function tested: tapegrad's
# mvlgamma shows its internal UnsqueezeBackward0 (torch: the input's node)
OWN_NEXT = {"mvlgamma_"}


def next_names(t):
    return [None if n is None else n.name() for n, _ in t.grad_fn.next_functions]


def run_weighted(lib, f, shape, dtype="float64", lo=-1.0, hi=1.0, seed=0):
    x = leaf(lib, data(shape, lo, hi, seed), dtype)
    y = f(lib, x)
    ys = y if isinstance(y, tuple) else (y,)
    w = [lib.tensor(data(tuple(t.shape), 0.5, 1.5, seed=7), dtype=getattr(lib, dtype))
         for t in ys]
    sum((t * wi).sum() for t, wi in zip(ys, w)).backward()
    return y, x.grad


def square(n, seed, scale=1.0):
    """A random n x n float64 matrix, entries uniform in [-scale, scale]."""
    return np.random.default_rng(seed).uniform(-scale, scale, (n, n))


def tensor_of(lib, v, dt=None):
    return lib.tensor(v, dtype=None if dt is None else getattr(lib, dt))


def nograd(lib, f):
    with lib.no_grad():
        return f()


def check_program(table, name, dtype):
    """table[name] = (program on x, shape of x, domain): values, gradient and the
    next_functions of the outputs against torch."""
    f, shape, dom = table[name]

    def prog(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y, g = run_weighted(lib, f, shape, dtype, *dom, seed=sorted(table).index(name))
        ys = y if isinstance(y, tuple) else (y,)
        if name in OWN_NEXT:
            return y, g, [t.grad_fn.name() for t in ys]
        return y, g, [next_names(t) if t.grad_fn is not None else None for t in ys]
    same(prog, tol=TOLS[dtype])


def check_forward(table, name):
    def prog(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return table[name](lib)
    same(prog)


def check_fd(table, name):
    f, arrays = table[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fdcheck(f, arrays, rtol=1e-6, atol=1e-7)


def check_leaf_inplace(table, name):
    same(lambda lib: table[name](lib, leaf(lib, [0.1, 0.2, 0.3, 0.4])),
         phrases=("a leaf Variable that requires grad is being used in an in-place operation.",))
