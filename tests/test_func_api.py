"""tapegrad.func over the whole public API (issue 31: never silently wrong): every public
function of the torch namespace and of ``nn.functional``, and every Tensor method (in-place
ones on a clone), that runs on a (2, 3) float64 tensor as ``f(x)``, ``f(x, dim)`` or
``f(x, y)`` — found by probing the API, not listed by hand — is recorded by
``grad_and_value`` at one input and replayed on 20 adversarial new inputs (noise, negation,
permutations, ties, zeros, nan, +-inf, clamp bounds, all-equal values...). Every replay equals
eager tapegrad on the same input (values and gradients, nan and inf included), or raises what
eager raises. The same vocabulary feeds the random programs of test_func_property.py."""
import numpy as np
import pytest

import tapegrad as tg
import tapegrad.func as tf

torch = pytest.importorskip("torch")     # the probe keeps what both libraries run alike

# names that draw random numbers, change global state or leave the tensor world
DENY_PREFIX = ("set_", "use_", "manual_seed", "seed", "initial_seed", "load", "save", "compile",
               "autocast", "no_grad", "enable_grad", "inference_mode", "get_", "is_", "rand",
               "normal", "bernoulli", "poisson", "multinomial", "dropout", "empty", "from_",
               "frombuffer", "as_tensor", "tensor", "asarray", "requires_grad", "register",
               "backward", "retain", "share", "pin", "record", "to_", "cuda", "cpu", "numpy",
               "tolist", "item", "storage", "untyped", "data_ptr", "detach", "clone", "copy_",
               "new_", "zero_", "fill_", "type", "apply_", "map_", "resize", "sym_", "align",
               "rename", "refine", "unflatten", "alpha_dropout", "feature_alpha", "rrelu",
               "gumbel", "fractional", "vmap", "func", "grad", "jit", "library", "cond")
X0 = np.linspace(-1.5, 1.7, 6).reshape(2, 3)


def _second(x):
    return x.roll(1) * 0.7 - 0.2


FORMS = {
    "1": lambda f, x: f(x),
    "dim-1": lambda f, x: f(x, -1),
    "dim0": lambda f, x: f(x, 0),
    "xy": lambda f, x: f(x, _second(x)),
}


def _caller(tag, name, form):
    call0 = FORMS[form]
    if tag == "T":
        if name.endswith("_"):
            return lambda L, x: call0(lambda *a: getattr(a[0].clone(), name)(*a[1:]), x)
        return lambda L, x: call0(lambda *a: getattr(a[0], name)(*a[1:]), x)
    if tag == "F":
        return lambda L, x: call0(getattr(L.nn.functional, name), x)
    return lambda L, x: call0(getattr(L, name), x)


def api_ops():
    """{"tag:name:form": call(L, x)} for every public callable both libraries run alike on
    X0 (deterministically, a tensor of the same shape in both), in its first form that runs."""
    out = {}
    for tag, ns, tns in (("tg", tg, torch), ("F", tg.nn.functional, torch.nn.functional),
                         ("T", tg.Tensor, torch.Tensor)):
        for name in sorted(set(dir(ns))):
            if name.startswith("_") or name.startswith(DENY_PREFIX) or not hasattr(tns, name):
                continue
            fn = getattr(ns, name, None)
            if not callable(fn) or isinstance(fn, type):
                continue
            for form in FORMS:
                call = _caller(tag, name, form)
                try:
                    y = call(tg, tg.tensor(X0, requires_grad=True))
                    y2 = call(tg, tg.tensor(X0, requires_grad=True))
                    if not isinstance(y, tg.Tensor) or y.shape != y2.shape or not np.array_equal(
                            y.detach().numpy(), y2.detach().numpy(), equal_nan=True):
                        continue
                    ty = call(torch, torch.tensor(X0, requires_grad=True))
                    if not isinstance(ty, torch.Tensor) or tuple(ty.shape) != tuple(y.shape):
                        continue
                except Exception:           # noqa: BLE001 (not this form)
                    continue
                out["%s:%s:%s" % (tag, name, form)] = call
                break
    return out


API = api_ops()


def loss(L, call, x):
    """A scalar of the op's result that depends on x also when the result is discrete."""
    y = call(L, x)
    z = y if y.dtype.is_floating_point else y.to(x.dtype)
    return (z * (1.3 + 0.05 * z)).sum() + x.sum() * z.sum() * 0.1


def adversarial(base, rng, k):
    x = np.array(base, np.float64)
    if x.ndim == 0:
        x = x.reshape(())
    flat = x.reshape(-1)
    kind = k % 14
    if kind == 0:
        x = x + 0.1 * rng.standard_normal(x.shape)
    elif kind == 1:
        x = -x
    elif kind == 2:
        x = rng.permutation(flat).reshape(x.shape)
    elif kind == 3:
        x = np.round(x)
    elif kind == 4:
        x = np.round(x, 1)
    elif kind == 5 and flat.size:
        flat[rng.integers(flat.size)] = 0.0
        flat[rng.integers(flat.size)] = -0.0
    elif kind == 6 and flat.size:
        flat[rng.integers(flat.size)] = np.nan
    elif kind == 7 and flat.size:
        flat[rng.integers(flat.size)] = np.inf
    elif kind == 8 and flat.size:
        flat[rng.integers(flat.size)] = -np.inf
    elif kind == 9:
        x = np.clip(x, -0.5, 0.5)
    elif kind == 10 and flat.size:
        flat[0] = 1.0
        flat[-1] = -1.0
    elif kind == 11 and flat.size:
        flat[:] = flat[0]
    elif kind == 12:
        x = x * 20.0
    else:
        x = 2.0 * rng.standard_normal(x.shape)
    return x


def _eager(call, a):
    x = tg.tensor(a, requires_grad=True)
    y = loss(tg, call, x)
    (g,) = tg.autograd.grad(y, x)
    return y.detach().numpy(), g.numpy()


def _float32(call):
    return call(tg, tg.tensor(X0)).dtype == tg.float32


def _same(a, b, tol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return False
    fa = np.isfinite(a)
    if not np.array_equal(fa, np.isfinite(b)) or not np.array_equal(a[np.isinf(a)], b[np.isinf(b)]):
        return False
    return np.allclose(a[fa], b[fa], rtol=tol, atol=tol * max(1.0, np.abs(a[fa]).max(initial=0)))


def test_the_probe_finds_the_api():
    """The probe reaches hundreds of forms across the three namespaces (a probe that broke
    would make the test below vacuous)."""
    tags = {}
    for k in API:
        tags[k.split(":")[0]] = tags.get(k.split(":")[0], 0) + 1
    assert len(API) > 400 and tags["tg"] > 150 and tags["T"] > 200 and tags["F"] > 25, tags


@pytest.mark.parametrize("key", sorted(API))
def test_every_public_op_replays_like_eager_on_adversarial_inputs(key):
    call = API[key]
    gv = tf.grad_and_value(lambda x: loss(tg, call, x))
    rng = np.random.default_rng(abs(hash(key)) % 2 ** 32)
    for k in range(21):
        a = X0 if k == 0 else adversarial(X0, rng, k)
        try:
            ve, ge = _eager(call, a)
        except Exception as e:                      # noqa: BLE001
            with pytest.raises(type(e)):
                gv(tg.tensor(a))
            continue
        g, v = gv(tg.tensor(a))
        # (a float32 result rounds differently in the compiled kernels; a decision taken
        # wrong is off by far more than either tolerance)
        tol = 1e-5 if _float32(call) else 1e-7
        assert _same(v.numpy(), ve, tol) and _same(g.numpy(), ge, tol), (
            "%s: the replay differs from eager tapegrad at %r:\nreplay %r %r\neager %r %r"
            % (key, a, v.numpy(), g.numpy(), ve, ge))


def _eager_hv(call, a):
    """d/dx sum(grad loss): the Hessian's row sums, by eager double backward."""
    x = tg.tensor(a, requires_grad=True)
    (g,) = tg.autograd.grad(loss(tg, call, x), x, create_graph=True)
    if not g._rg:
        return np.zeros_like(a)
    (h,) = tg.autograd.grad(g.sum(), x, allow_unused=True)
    return np.zeros_like(a) if h is None else h.numpy()


@pytest.mark.parametrize("key", sorted(API))
def test_every_public_op_replays_nested_like_eager(key):
    """grad(sum of grad) (the nested transforms run the inner backward on the recorded
    graph: the backward formulas' own decisions are recorded and guarded): every replay on
    adversarial inputs equals eager double backward, or raises what it raises."""
    call = API[key]
    inner = tf.grad(lambda x: loss(tg, call, x))
    outer = tf.grad(lambda x: inner(x).sum())
    rng = np.random.default_rng(abs(hash(key)) % 2 ** 32 + 1)
    for k in range(11):
        a = X0 if k == 0 else adversarial(X0, rng, 2 * k + 1)
        try:
            he = _eager_hv(call, a)
        except Exception as e:                      # noqa: BLE001
            with pytest.raises(type(e)):
                outer(tg.tensor(a))
            continue
        h = outer(tg.tensor(a))
        tol = 1e-5 if _float32(call) else 1e-7
        assert _same(h.numpy(), he, tol), (
            "%s: the nested replay differs from eager double backward at %r:\nreplay %r\n"
            "eager %r" % (key, a, h.numpy(), he))
