"""The autograd API beyond first-order backward: hooks, autograd.functional, anomaly
detection, grad modes across threads, concurrent backward passes. Compared with analytic
results / finite differences, and with torch when it is installed."""
import threading

import numpy as np
import pytest

import tapegrad as tg
from tapegrad.autograd import functional as F


def _fd_jacobian(f, x, eps=1e-6):
    x = np.array(x, dtype=np.float64)
    y0 = np.asarray(f(x), dtype=np.float64)
    J = np.zeros(y0.shape + x.shape)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        J[(Ellipsis,) + idx] = (np.asarray(f(xp)) - np.asarray(f(xm))) / (2 * eps)
    return J


# ------------------------------------------------------------------------------------ hooks
def test_tensor_hook_on_leaf_observes_and_replaces():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    h = x.register_hook(lambda g: g * 2)
    (x * x).sum().backward()
    assert seen == [[2.0, 4.0, 6.0]]
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0, 12.0])
    h.remove()
    x.grad = None
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0, 6.0])


def test_hook_on_intermediate_replaces_gradient_upstream():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    # d/dx sum((3x)^2) = 18x, scaled by 10 at y
    np.testing.assert_allclose(x.grad.numpy(), [180.0, 360.0])


def test_hooks_chain_in_registration_order():
    x = tg.tensor([1.0], requires_grad=True)
    y = x * 1
    y.register_hook(lambda g: g + 1)
    y.register_hook(lambda g: g * 3)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0])     # (1 + 1) * 3


def test_hook_requires_grad():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tg.ones(2).register_hook(lambda g: g)


def test_node_prehook_and_posthook():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    z = x.exp()
    seen = {}
    def pre(go):
        seen["pre"] = go[0].tolist()           # observe only (returns None)
    z.grad_fn.register_prehook(pre)
    z.grad_fn.register_hook(lambda gi, go: (gi[0] * 2,))
    (z * 3).sum().backward()
    assert seen["pre"] == [3.0, 3.0]
    np.testing.assert_allclose(x.grad.numpy(), 6 * np.exp([1.0, 2.0]), rtol=1e-6)


def test_hooks_match_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        x = lib.tensor([0.5, -1.0, 2.0], requires_grad=True)
        a = x.sin()
        a.register_hook(lambda g: g * g)
        b = a * x
        b.register_hook(lambda g: g + 1)
        (b * b).sum().backward()
        return x.grad.detach().numpy()
    np.testing.assert_allclose(run(tg), run(torch), rtol=1e-5)


# ------------------------------------------------------------------------------- functional
def _f(x):
    return (x.sin() * x.exp()).sum() + (x ** 3).sum()


def test_vjp_jvp_jacobian_against_finite_differences():
    xv = np.array([0.3, -0.7, 1.1])

    def g(x):
        return x.tanh() * x.exp() + x * 2

    x = tg.tensor(xv, dtype=tg.float64)
    J = _fd_jacobian(lambda a: np.tanh(a) * np.exp(a) + 2 * a, xv)
    v = tg.tensor([1.0, -2.0, 0.5], dtype=tg.float64)
    out, vj = F.vjp(g, x, v)
    np.testing.assert_allclose(vj.numpy(), v.numpy() @ J, rtol=1e-6)
    out, jv = F.jvp(g, x, v)
    np.testing.assert_allclose(jv.numpy(), J @ v.numpy(), rtol=1e-6)
    np.testing.assert_allclose(F.jacobian(g, x).numpy(), J, rtol=1e-6, atol=1e-9)
    assert not out.requires_grad


def test_hessian_hvp_vhp():
    xv = np.array([0.3, -0.7, 1.1])
    x = tg.tensor(xv, dtype=tg.float64)
    grad_np = lambda a: np.exp(a) * (np.sin(a) + np.cos(a)) + 3 * a ** 2  # noqa: E731
    H = _fd_jacobian(grad_np, xv)
    np.testing.assert_allclose(F.hessian(_f, x).numpy(), H, rtol=1e-6, atol=1e-8)
    v = tg.tensor([0.2, 1.0, -1.0], dtype=tg.float64)
    val, hv = F.hvp(_f, x, v)
    np.testing.assert_allclose(hv.numpy(), H @ v.numpy(), rtol=1e-6)
    val2, vh = F.vhp(_f, x, v)
    np.testing.assert_allclose(vh.numpy(), v.numpy() @ H, rtol=1e-6)
    assert val.item() == pytest.approx(float(np.sum(np.sin(xv) * np.exp(xv)) + np.sum(xv ** 3)))


def test_functional_tuple_inputs_and_torch_agreement():
    torch = pytest.importorskip("torch")

    def f(lib):
        def fn(a, b):
            return (a * b.exp()).sum() + (a ** 2 * b).sum()
        return fn
    a, b = np.array([0.5, 1.5]), np.array([-0.2, 0.4])
    ours = tg.autograd.functional.hessian(f(tg), (tg.tensor(a), tg.tensor(b)))
    ref = torch.autograd.functional.hessian(f(torch), (torch.tensor(a), torch.tensor(b)))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(ours[i][j].numpy(), ref[i][j].numpy(), rtol=1e-10)
    oj = tg.autograd.functional.jacobian(lambda a, b: a * b, (tg.tensor(a), tg.tensor(b)))
    rj = torch.autograd.functional.jacobian(lambda a, b: a * b, (torch.tensor(a), torch.tensor(b)))
    for o, r in zip(oj, rj):
        np.testing.assert_allclose(o.numpy(), r.numpy())


def test_strict_mode_raises_for_independent_input():
    with pytest.raises(RuntimeError, match="independent of input"):
        F.vjp(lambda a, b: (a * 2).sum(), (tg.ones(2), tg.ones(2)), strict=True)


# ---------------------------------------------------------------------------------- anomaly
def test_detect_anomaly_names_the_op():
    x = tg.tensor([0.0, 1.0], requires_grad=True)
    with tg.autograd.detect_anomaly():
        y = (x.sqrt() * 0).sum()
        with pytest.raises(RuntimeError, match="Function 'SqrtBackward0' returned nan values"):
            y.backward()
    assert not tg.autograd.is_anomaly_enabled()
    x.grad = None
    (x.sqrt() * 0).sum().backward()            # without anomaly mode: nan, as torch
    assert np.isnan(x.grad.numpy()[0])


def test_division_by_zero_in_backward_gives_inf_not_an_error():
    x = tg.tensor([0.0, 4.0], requires_grad=True)
    x.sqrt().sum().backward()
    assert np.isinf(x.grad.numpy()[0]) and x.grad.numpy()[1] == pytest.approx(0.25)


# ---------------------------------------------------------------------------------- threads
def test_concurrent_backward_on_separate_graphs_is_correct_and_unmixed():
    errors, results = [], {}

    def work(k):
        try:
            for it in range(200):
                x = tg.tensor([float(k), float(k + 1)], requires_grad=True)
                y = (x * x * (k + 1)).sum() + (x.sin() * k).sum()
                y.backward()
                want = 2 * (k + 1) * np.array([k, k + 1.0]) + k * np.cos([k, k + 1.0])
                if not np.allclose(x.grad.numpy(), want, rtol=1e-5):
                    errors.append((k, it, x.grad.tolist(), want.tolist()))
            results[k] = True
        except Exception as exc:  # noqa: BLE001 - report any failure from the thread
            errors.append((k, repr(exc)))
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert len(results) == 4


def test_grad_mode_is_thread_local():
    seen = {}

    def other():
        seen["other"] = tg.is_grad_enabled()
    with tg.no_grad():
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert not tg.is_grad_enabled()
    assert seen["other"] is True


def test_tape_keeps_working_after_a_callback_raises():
    """A custom backward or a hook that raises must not leave the tape's buffers pinned by
    the traceback (the next op on the same tape would fail with BufferError)."""
    class Bad(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("boom")
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = Bad.apply(x) * x
    with pytest.raises(ValueError, match="boom"):
        y.sum().backward()
    z = y * 3                                   # records on the same tape
    assert type(z.grad_fn).__name__ == "MulBackward0"
    h = x.register_hook(lambda g: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        (x * x).sum().backward()
    h.remove()
    w = (x * 2).sum()
    w.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])


def test_custom_function_ctx_features_match_torch():
    """mark_dirty, mark_non_differentiable (also of an int output), set_materialize_grads,
    grad mode inside forward/backward, version-checked saved tensors: as torch."""
    torch = pytest.importorskip("torch")

    def run(lib):
        out = {}

        class Inplace(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.mul_(2)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a * 1
        c = Inplace.apply(b)
        out["dirty"] = (c is b, type(c.grad_fn).__name__, b._version)
        (c * c).sum().backward()
        out["dirty_grad"] = a.grad.tolist()

        class TwoOut(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                idx = (x > 0).to(lib.int64)
                ctx.mark_non_differentiable(idx)
                return x * 2, idx

            @staticmethod
            def backward(ctx, gs, gi):
                return gs * 2
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        s, idx = TwoOut.apply(x)
        out["nondiff"] = (s.requires_grad, idx.requires_grad)
        s.sum().backward()
        out["nondiff_grad"] = x.grad.tolist()

        class Mat(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                return x * 1, x * 2

            @staticmethod
            def backward(ctx, g1, g2):
                out["g2_is_none"] = g2 is None
                return g1
        y = lib.tensor([1.0], requires_grad=True)
        p, _ = Mat.apply(y)
        p.sum().backward()

        class Save(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                out["fwd_mode"] = lib.is_grad_enabled()
                return x * 3

            @staticmethod
            def backward(ctx, g):
                out["bwd_mode"] = lib.is_grad_enabled()
                (x,) = ctx.saved_tensors
                return g * x
        z = lib.tensor([2.0], requires_grad=True)
        w = z * 1
        r = Save.apply(w)
        w.add_(1)
        try:
            r.sum().backward()
            out["version_err"] = None
        except RuntimeError as e:
            out["version_err"] = "modified by an inplace operation" in str(e)
        return out
    assert run(tg) == run(torch)
