"""dtypes, promotion, conversion, construction, in-place initialisers, numpy interop and repr,
against torch."""
import numpy as np
import pytest

import tapegrad as tg
from oracle import same, torch


def test_promotion_table():
    def prog(lib):
        f32 = lib.ones(2)
        f64 = lib.ones(2, dtype=lib.float64)
        i64 = lib.ones(2, dtype=lib.int64)
        i32 = lib.ones(2, dtype=lib.int32)
        b = lib.ones(2, dtype=lib.bool)
        s64 = lib.tensor(1.0, dtype=lib.float64)
        si = lib.tensor(3)
        out = []
        for a in (f32, f64, i64, i32, b):
            for c in (f32, f64, i64, i32, b, s64, si, 2, 2.5, True):
                out.append(str((a + c).dtype))
                out.append(str((a * c).dtype))
                out.append(str((a / c).dtype) if not (isinstance(c, bool) or (
                    isinstance(c, lib.Tensor) and c.dtype == lib.bool)) else None)
        out += [str((i64 ** 2).dtype), str((i64 ** 2.0).dtype), str((2 ** i64).dtype),
                str((2.0 ** i64).dtype), str((f32 ** s64).dtype), str((s64 * 2).dtype),
                str((si * 2.5).dtype), str((si + True).dtype), str(lib.promote_types(lib.int32, lib.float32))]
        return out
    same(prog)


def test_conversions():
    def prog(lib):
        x = lib.tensor([1.7, -2.2, 0.0], requires_grad=True)
        out = [x.double(), x.float(), x.long(), x.int(), x.bool(), x.to(lib.float64),
               x.to(dtype=lib.int32), x.type(lib.float64), x.type(), x.detach().half().dtype,
               x.to("cpu") is x, x.to(lib.float32) is x, x.cpu() is x, x.type_as(lib.ones(1, dtype=lib.int64)),
               x.double().grad_fn.name(), x.to(lib.ones(1, dtype=lib.float64)).dtype,
               lib.get_default_dtype(), x.dtype.is_floating_point, lib.int64.is_floating_point,
               x.is_floating_point(), repr(x.device), str(x.device), x.device.type,
               x.device == lib.device("cpu")]
        (x.double() * 2).sum().backward()
        out.append(x.grad)
        return out
    same(prog)


def test_default_dtype_switch():
    def prog(lib):
        old = lib.get_default_dtype()
        try:
            lib.set_default_dtype(lib.float64)
            a = lib.tensor([1.0, 2.0])
            b = lib.ones(2)
            c = lib.arange(3) * 1.5
            d = lib.tensor(1) / 2
            return a.dtype, b.dtype, c.dtype, d.dtype, lib.get_default_dtype(), lib.randn(2).dtype
        finally:
            lib.set_default_dtype(old)
    same(prog)


def test_construction_and_state():
    def prog(lib):
        lib.manual_seed(0)
        x = lib.rand(3, 4)
        out = [x.shape, x.dtype, lib.randn(2, 3, dtype=lib.float64).dtype,
               lib.randint(0, 5, (3,)).dtype, lib.randint(5, (2, 2)).shape,
               lib.normal(0.0, 1.0, size=(2, 3)).shape, lib.rand_like(x).shape,
               lib.randn_like(x, dtype=lib.float64).dtype, lib.empty(2, 3).shape,
               lib.empty_like(x).dtype, lib.full_like(x, 7), lib.zeros_like(x, dtype=lib.int64),
               lib.ones_like(x), lib.full((2,), 3), lib.full((2,), 3.0), lib.full((1,), True),
               x.dim(), x.ndim, x.numel(), x.size(), x.size(1), x.size(-1), x.shape[0],
               lib.numel(x), x.nelement(), x.element_size(), x.is_contiguous(),
               x.t().is_contiguous(), x.t().contiguous().is_contiguous(), lib.is_tensor(x),
               lib.zeros(2, 3).stride() if hasattr(lib.zeros(2, 3), "stride") else None,
               lib.arange(5), lib.arange(1, 4, 0.5), lib.linspace(0, 1, 5), lib.eye(2, 3),
               lib.tensor([[1, 2], [3, 4]]).shape, lib.as_tensor([1.0, 2.0]),
               lib.zeros((2, 3)).shape, lib.ones([2]).shape, lib.Size([2, 3]),
               lib.tensor([]).shape, lib.zeros(0, 3).shape]
        return out
    same(prog)


def test_inplace_initialisers():
    def prog(lib):
        w = lib.empty(200, 300)
        w.uniform_(-0.5, 0.5)
        u = w.detach().numpy() if hasattr(w, "numpy") else None
        n = lib.empty(300, 300).normal_(2.0, 3.0)
        f = lib.zeros(3).fill_(2.5)
        c = lib.zeros(2, 2).copy_(lib.tensor([[1.0, 2.0], [3.0, 4.0]]))
        z = lib.ones(3).zero_()
        p = lib.nn.Parameter(lib.zeros(3)) if hasattr(lib.nn, "Parameter") else None
        with lib.no_grad():
            q = lib.zeros(3, requires_grad=True)
            q.uniform_()
            q.normal_()
            q.fill_(1.0)
        return (bool(u.min() >= -0.5 and u.max() <= 0.5), round(float(w.mean()), 1),
                round(float(n.mean()), 1), round(float(n.std()), 1), f, c, z, q,
                w._version > 0, q.requires_grad, q.is_leaf, p is None or p.requires_grad)
    same(prog)


def test_inplace_initialiser_on_leaf_requiring_grad_raises():
    same(lambda lib: lib.zeros(3, requires_grad=True).uniform_(),
         phrases=("a leaf Variable that requires grad is being used in an in-place operation",))


def test_numpy_interop():
    def prog(lib):
        a = np.arange(6.0).reshape(2, 3)
        t = lib.from_numpy(a)
        a[0, 0] = 100.0
        t[1, 1] = -1.0
        n = t.numpy()
        n[0, 1] = 7.0
        out = [t, a.tolist(), np.shares_memory(n, a), str(t.dtype),
               lib.from_numpy(np.arange(3, dtype=np.int32)).dtype,
               lib.from_numpy(np.array([True, False])).dtype, np.asarray(t).dtype.name,
               float(lib.tensor([2.5])), int(lib.tensor(3.9)), int(lib.tensor([7])),
               bool(lib.tensor([0.0])), bool(lib.tensor(1)), [10, 20, 30][lib.tensor(1)],
               np.array(lib.tensor([1.0, 2.0])).tolist(), lib.tensor(2.0).item(),
               lib.tensor([[1, 2]]).tolist(), "%.2f" % lib.tensor(3.14159), f"{lib.tensor(2.5):.1f}",
               lib.tensor(5.0).__index__() if False else None]
        arr = np.zeros(3)
        arr[1] = lib.tensor(4.5)
        out.append(arr.tolist())
        x = lib.ones(2, requires_grad=True)
        try:
            x.numpy()
        except RuntimeError as e:
            out.append(str(e))
        out.append(x.detach().numpy().tolist())
        for bad in (lambda: bool(lib.ones(2)), lambda: int(lib.ones(2)), lambda: [1, 2][lib.tensor(1.0)],
                    lambda: float(lib.ones(3)), lambda: lib.ones(2).item()):
            try:
                bad()
                out.append(None)
            except Exception as e:  # noqa: BLE001
                out.append(type(e).__name__)
        return out
    same(prog)


def test_numpy_ufunc_and_array_conversion():
    def prog(lib):
        t = lib.tensor([1.0, 4.0])
        return np.sqrt(np.asarray(t)).tolist(), np.array(t, dtype=np.float64).dtype.name, \
            np.stack([lib.tensor(1.0), lib.tensor(2.0)]).tolist()
    same(prog)


@pytest.mark.parametrize("make", [
    lambda lib: lib.tensor([1.0, 2.0]),
    lambda lib: lib.tensor([1.0, 2.5], requires_grad=True),
    lambda lib: lib.tensor([1.0, 2.5], requires_grad=True) * 2,
    lambda lib: lib.tensor([1.0, 2.0], dtype=lib.float64),
    lambda lib: lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True).exp(),
    lambda lib: lib.tensor([[1.5, -2.25], [3.0, 4.125]]),
    lambda lib: lib.tensor([1, 2, 3]),
    lambda lib: lib.tensor([1, 2], dtype=lib.int32),
    lambda lib: lib.tensor([True, False]),
    lambda lib: lib.tensor(3.5),
    lambda lib: lib.tensor(3.5, requires_grad=True).sin(),
    lambda lib: lib.tensor([1e-5, 1.0]),
    lambda lib: lib.tensor([1e10, 1.0]),
    lambda lib: lib.tensor([0.1, 100.25, -3.5]),
    lambda lib: lib.tensor([float("nan"), float("inf"), 1.0]),
    lambda lib: lib.tensor([]),
    lambda lib: lib.zeros(2, 0),
    lambda lib: lib.arange(6.0).reshape(2, 3),
    lambda lib: lib.arange(24.0).reshape(2, 3, 4),
    lambda lib: lib.tensor([123456.0, 1.0]),
    lambda lib: lib.tensor([-0.0, 0.0]),
    lambda lib: lib.tensor(7),
])
def test_repr_matches_torch(make):
    if torch is None:
        pytest.skip("torch is not installed")
    assert repr(make(tg)) == repr(make(torch))
    assert str(make(tg)) == str(make(torch))


def test_repr_of_grad_fn_and_params():
    if torch is None:
        pytest.skip("torch is not installed")
    for lib_make in (lambda lib: lib.ones(2, requires_grad=True).sum(),
                     lambda lib: lib.ones(2, 2, requires_grad=True).t(),
                     lambda lib: lib.ones(3, requires_grad=True).max(0)):
        a, b = lib_make(tg), lib_make(torch)
        if isinstance(b, tuple):
            assert repr(a).replace("tapegrad", "torch") == repr(b)
        else:
            assert repr(a) == repr(b)


def test_clone_contiguous_detach():
    def prog(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        c = x.clone()
        t = x.t()
        tc = t.contiguous()
        d = x.detach()
        d[0, 0] = 10.0
        (c * 2 + tc).sum().backward()
        return (c.grad_fn.name(), tc.grad_fn.name(), t.contiguous() is t, x.contiguous() is x,
                x, x.grad, d.requires_grad, x.detach().clone().requires_grad,
                tc.is_contiguous(), x.clone().is_contiguous())
    same(prog)


NUMPY_SCALAR_CASES = [
    (np.float64(0.5), "float64"), (np.float32(0.5), "float32"), (np.int32(3), "int32"),
    (np.int64(3), "int64"), (np.bool_(True), "bool"), ([np.float64(0.5), 1.0], "float64"),
    ([np.int32(1), 1.5], "float32"), ([np.int32(1), 2], "int64"),
    ([[np.float64(1.0)], [2.0]], "float64"), ([np.float64(0.5), np.float32(1)], "float64"),
]


@pytest.mark.parametrize("data,name", NUMPY_SCALAR_CASES, ids=[repr(c[0]) for c in NUMPY_SCALAR_CASES])
def test_tensor_of_numpy_scalars_keeps_their_dtype(data, name):
    """torch.tensor(np.float64(x)) is float64 (a numpy scalar carries its dtype), not the
    default float dtype a Python float gets; inside lists the element dtypes promote."""
    t = tg.tensor(data)
    assert str(t.dtype) == "torch." + name
    try:
        import torch
    except ImportError:
        return
    assert str(torch.tensor(data).dtype) == str(t.dtype)


# ---------------------------------------------------------------- real tensors: conj, real, imag
@pytest.mark.parametrize("name", ["conj", "conj_physical", "resolve_conj", "resolve_neg"])
def test_conjugation_of_a_real_tensor_is_the_tensor(name):
    def f(lib):
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        y = x * 3
        return (getattr(y, name)() is y, getattr(lib, name)(y) is y, y.is_conj(), y.is_neg(),
                y.is_complex(), lib.is_complex(y), y.real is y, lib.real(y) is y)
    same(f)


def test_imag_of_a_real_tensor_raises():
    same(lambda lib: lib.ones(2).imag, phrases=("imag is not implemented for tensors with "
                                                "non-complex dtypes",))


# ---------------------------------------------------------------- torch.Size construction
def test_size_takes_ints_only():
    same(lambda lib: lib.Size([2.0]), phrases=("torch.Size() takes an iterable of 'int'",))
    same(lambda lib: (lib.Size([2, 3]), [int(v) for v in lib.Size([np.int64(3), lib.tensor(4)])],
                      lib.Size(), repr(lib.Size([1]) + (2,))))


# ---------------------------------------------------------------- float16 and gradients
def test_float16_never_silently_detaches():
    # torch differentiates float16; tapegrad's tape holds float32/float64 values only, so asking
    # for a float16 tensor that requires grad raises instead of returning a detached result
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    for f in (lambda: x.half(), lambda: x.to(tg.float16), lambda: x.type(tg.float16),
              lambda: tg.tensor([1.0], dtype=tg.float16, requires_grad=True),
              lambda: tg.ones(2, dtype=tg.float16).requires_grad_()):
        with pytest.raises(NotImplementedError, match="float16"):
            f()
    with tg.no_grad():
        h = x.half()
    assert h.dtype is tg.float16 and not h.requires_grad
    assert x.detach().half().tolist() == [1.0, 2.0]
