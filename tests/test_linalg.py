"""nn.functional in-place activations and new functions, losses at their edges, linalg
(LinAlgError, solve broadcasting, det at singular matrices, the decompositions) and special
functions at their poles: against torch (``same``) and, for gradients, finite differences
(``fdcheck``) or numpy references that need no torch."""
import itertools
import math
import warnings

import numpy as np
import pytest

import tapegrad as tg
from oracle import data, fdcheck, leaf, same


def _grads(lib, y, *xs):
    w = lib.tensor(np.resize(np.array(data((64,), 0.5, 1.5, seed=3)), tuple(y.shape)).tolist(),
                   dtype=y.dtype)
    return lib.autograd.grad((y * w).sum(), xs, allow_unused=True)


# ----------------------------------------------------------------------------- activations
X = [-4.0, -3.0, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 3.0, 5.0]

INPLACE = {
    "relu": lambda F, h: F.relu(h, inplace=True),
    "relu_": lambda F, h: F.relu_(h),
    "leaky_relu": lambda F, h: F.leaky_relu(h, 0.1, inplace=True),
    "leaky_relu_": lambda F, h: F.leaky_relu_(h, 0.2),
    "elu": lambda F, h: F.elu(h, 0.7, inplace=True),
    "elu_": lambda F, h: F.elu_(h),
    "silu": lambda F, h: F.silu(h, inplace=True),
    "hardtanh": lambda F, h: F.hardtanh(h, -0.5, 1.0, inplace=True),
    "relu6": lambda F, h: F.relu6(h, inplace=True),
    "celu": lambda F, h: F.celu(h, 0.5, inplace=True),
    "selu": lambda F, h: F.selu(h, inplace=True),
    "threshold": lambda F, h: F.threshold(h, 0.25, 5.0, inplace=True),
    "hardsigmoid": lambda F, h: F.hardsigmoid(h, inplace=True),
    "hardswish": lambda F, h: F.hardswish(h, inplace=True),
    "mish": lambda F, h: F.mish(h, inplace=True),
}


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_activation_on_non_leaf_vs_torch(name):
    def prog(lib):
        x = leaf(lib, X)
        h = x * 1.5
        y = INPLACE[name](lib.nn.functional, h)
        return y is h, y, _grads(lib, y, x)
    same(prog)


OUT_OF_PLACE = {
    "hardtanh": lambda F, x: F.hardtanh(x, -0.5, 1.0),
    "relu6": lambda F, x: F.relu6(x * 2),
    "threshold": lambda F, x: F.threshold(x, 0.25, 5.0),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "hardswish": lambda F, x: F.hardswish(x),
    "softshrink": lambda F, x: F.softshrink(x),
    "hardshrink": lambda F, x: F.hardshrink(x, 1.0),
    "glu": lambda F, x: F.glu(x, 0),
    "celu": lambda F, x: F.celu(x, 0.5),
    "selu": lambda F, x: F.selu(x),
    "mish": lambda F, x: F.mish(x),
}


@pytest.mark.parametrize("name", sorted(OUT_OF_PLACE))
def test_activation_values_names_and_gradients_vs_torch(name):
    def prog(lib):
        x = leaf(lib, X)
        y = OUT_OF_PLACE[name](lib.nn.functional, x)
        nexts = [None if n is None else n.name() for n, _ in y.grad_fn.next_functions]
        return y, nexts, _grads(lib, y, x)
    same(prog)


@pytest.mark.parametrize("name", sorted(OUT_OF_PLACE))
def test_activation_finite_differences(name):
    xs = np.array([-4.3, -2.1, -0.8, -0.3, 0.2, 0.6, 1.3, 2.2, 3.4, 5.1])    # off the kinks
    fdcheck(lambda x: OUT_OF_PLACE[name](tg.nn.functional, x), [xs], rtol=1e-5, atol=1e-6)


def test_inplace_elu_gradient_without_torch():
    x = tg.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    h = x * 2
    y = tg.nn.functional.elu(h, inplace=True)
    assert y is h and y.grad_fn.name() == "EluBackward1"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2 * math.exp(-2.0), 2, 2], rtol=1e-6)


def _outcomes(fs):
    """Each call's result, or the name of the exception it raised (compared with torch)."""
    out = []
    for f in fs:
        try:
            out.append(f())
        except Exception as e:  # noqa: BLE001 - compared
            out.append(type(e).__name__)
    return out


def test_activation_errors_and_integer_inputs():
    def prog(lib):
        F = lib.nn.functional
        i = lib.tensor([-1, 2])
        return _outcomes((
            lambda: F.relu(i), lambda: lib.relu(i), lambda: F.hardtanh(i),
            lambda: F.relu6(i), lambda: F.leaky_relu(i), lambda: F.elu(i),
            lambda: F.silu(i), lambda: F.gelu(i), lambda: F.softplus(i),
            lambda: F.leaky_relu(leaf(lib, [1.0]) * 1, -0.1, inplace=True).sum().backward(),
            lambda: F.relu(leaf(lib, [1.0]), inplace=True)))
    same(prog)


def test_linear_without_bias_node_names():
    def prog(lib):
        F = lib.nn.functional
        w = leaf(lib, data((5, 3)))
        return [F.linear(leaf(lib, data(s, seed=1)), w).grad_fn.name() for s in ((3,), (2, 4, 3))]
    same(prog)


# ----------------------------------------------------------------------------- losses
def test_bce_gradient_finite_at_saturation():
    def prog(lib):
        F = lib.nn.functional
        z = leaf(lib, [20.0, -120.0])
        l1 = F.binary_cross_entropy(lib.sigmoid(z), lib.tensor([1.0, 0.0]))
        g1 = lib.autograd.grad(l1, z)
        p = leaf(lib, [0.0, 1.0, 0.0, 1.0, 0.3])
        t = leaf(lib, [0.0, 1.0, 1.0, 0.0, 0.6])
        l2 = F.binary_cross_entropy(p, t, reduction="sum")
        return l1, g1, l2, lib.autograd.grad(l2, (p, t)), len(l2.grad_fn.next_functions)
    same(prog)


def test_bce_gradient_formula_without_torch():
    p = tg.tensor([0.0, 1.0, 0.0, 1.0, 0.3], dtype=tg.float64, requires_grad=True)
    t = tg.tensor([0.0, 1.0, 1.0, 0.0, 0.6], dtype=tg.float64)
    tg.nn.functional.binary_cross_entropy(p, t, reduction="sum").backward()
    pd, td = p.detach().numpy(), t.numpy()
    want = (pd - td) / np.maximum(pd * (1 - pd), 1e-12)
    np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-12)
    fdcheck(lambda a, b: tg.nn.functional.binary_cross_entropy(a, b, reduction="none"),
            [np.array([0.2, 0.5, 0.9]), np.array([0.1, 0.7, 0.4])])


def test_cross_entropy_zero_total_weight_as_torch():
    def prog(lib):
        F = lib.nn.functional
        out = []
        for kw, tgt in ((dict(), [-100, -100, -100]), (dict(label_smoothing=0.2), [-100] * 3),
                        (dict(weight=lib.tensor([0.0, 0.0, 1.0, 1.0])), [0, 1, 0]),
                        (dict(weight=lib.tensor([0.0, 0.0, 1.0, 1.0]), label_smoothing=0.1),
                         [0, 1, -100])):
            x = leaf(lib, data((3, 4)))
            y = F.cross_entropy(x, lib.tensor(tgt), **kw)
            out += [y, lib.autograd.grad(y, x)]
        x = leaf(lib, data((3, 4)))
        y = F.nll_loss(x, lib.tensor([-100] * 3))
        return out + [y, lib.autograd.grad(y, x)]
    same(prog)


def test_nll_zero_total_weight_without_torch():
    x = tg.tensor(data((2, 3)), requires_grad=True)
    y = tg.nn.functional.nll_loss(x, tg.tensor([-100, -100]))
    assert math.isnan(float(y))
    y.backward()
    assert np.all(x.grad.numpy() == 0)


@pytest.mark.parametrize("case", range(10))
def test_loss_validation_as_torch(case):
    def prog(lib):
        F = lib.nn.functional
        x = leaf(lib, data((4, 5)))
        t = lib.tensor([1, 2, 3, 4])
        return [
            lambda: F.cross_entropy(x, t.to(lib.int32)),
            lambda: F.cross_entropy(x, lib.tensor([1.0, 2.0, 3.0, 4.0])),
            lambda: F.cross_entropy(x, t, weight=lib.ones(5, dtype=lib.float64)),
            lambda: F.cross_entropy(x, t, weight=lib.ones(5, requires_grad=True)),
            lambda: F.cross_entropy(x, t, label_smoothing=1.5),
            lambda: F.nll_loss(x, t, weight=lib.ones(4)),
            lambda: F.binary_cross_entropy(lib.tensor([0.5, 0.5]), lib.tensor([2.0, 1.0])),
            lambda: F.binary_cross_entropy(lib.tensor([0.5, float("nan")]), lib.tensor([0.0, 1.0])),
            lambda: F.binary_cross_entropy_with_logits(leaf(lib, [0.5]), lib.tensor([1.0]),
                                                       pos_weight=leaf(lib, [2.0])),
            lambda: F.binary_cross_entropy(lib.tensor([0.5]), lib.tensor([0.5, 0.5])),
        ][case]()
    phrases = {0: ("expected target dtype to be Long or Byte, but got Int",),
               1: ("but got Float",), 2: ("expected scalar type Float but found Double",),
               3: ("is not differentiable with respect to argument 'weight'",),
               4: ("label_smoothing must be between 0.0 and 1.0",),
               5: ("weight tensor should be defined either for all 5 classes",),
               6: ("all elements of target should be between 0 and 1",),
               7: ("all elements of input should be between 0 and 1",),
               8: ("argument 'pos_weight'",), 9: ("torch.Size([2])",)}
    same(prog, phrases=phrases[case])


def test_nll_kdim_node_names():
    def prog(lib):
        F = lib.nn.functional
        out = []
        for shp in ((2, 3, 4), (2, 3, 4, 5)):
            x = leaf(lib, data(shp))
            t = lib.tensor(np.random.default_rng(0).integers(0, 3, (shp[0],) + shp[2:]).tolist())
            for red in ("none", "mean"):
                y = F.cross_entropy(x, t, reduction=red)
                out += [y, lib.autograd.grad(y.sum(), x)]
        return out
    same(prog)


# ----------------------------------------------------------------------------- linalg
A3 = [[1.2, 0.3, -0.4], [0.1, 1.5, 0.2], [-0.3, 0.4, 0.9]]


def _cofactor_np(a):
    n = a.shape[0]
    c = np.zeros_like(a)
    for i, j in itertools.product(range(n), range(n)):
        m = np.delete(np.delete(a, i, 0), j, 1)
        c[i, j] = (-1) ** (i + j) * np.linalg.det(m)
    return c


@pytest.mark.parametrize("m", [[[1.0, 2.0], [2.0, 4.0]], np.zeros((3, 3)).tolist(),
                               np.outer([1.0, 2, 3], [4.0, 5, 6]).tolist(),
                               [[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]])
def test_det_gradient_at_singular_matrices(m):
    a = tg.tensor(m, dtype=tg.float64, requires_grad=True)
    tg.linalg.det(a).backward()
    np.testing.assert_allclose(a.grad.numpy(), _cofactor_np(np.array(m)), atol=1e-12)
    # second order through the singular case: d/dA of sum(cofactor * W)
    w = np.arange(1.0, 1.0 + a.numel()).reshape(a.shape)

    def cof_dot_w(b):
        rg = b.requires_grad
        b.requires_grad_()
        g, = tg.autograd.grad(tg.linalg.det(b), b, create_graph=rg)
        return (g * tg.tensor(w)).sum().reshape(1)
    fdcheck(cof_dot_w, [np.array(m)], atol=1e-6)


def test_det_singular_vs_torch():
    # rank <= n - 2 (zero cofactor); at rank n - 1 torch 2.13 returns zeros where the
    # derivative (the cofactor matrix, checked above against numpy) is not zero
    def prog(lib):
        out = []
        for m in (np.zeros((3, 3)).tolist(),
                  np.outer([1.0, 2, 3], [4.0, 5, 6]).tolist()):
            a = leaf(lib, m, "float64")
            out.append(lib.autograd.grad(lib.linalg.det(a), a)[0].abs())
        return out
    same(prog, tol=dict(rtol=1e-6, atol=1e-9))


SOLVE_SHAPES = [((3, 3), (3, 2)), ((3, 3), (3,)), ((2, 3, 3), (3,)), ((2, 3, 3), (3, 2)),
                ((3, 3), (2, 3, 2)), ((2, 3, 3, 3), (3, 2)), ((2, 3, 3), (2, 3))]


@pytest.mark.parametrize("sa,sb", SOLVE_SHAPES)
def test_solve_broadcasting_vs_torch(sa, sb):
    def prog(lib):
        a = leaf(lib, (np.array(data(sa, seed=1)) + 3 * np.eye(sa[-1])).tolist(), "float64")
        b = leaf(lib, data(sb, seed=2), "float64")
        x = lib.linalg.solve(a, b)
        return x, _grads(lib, x, a, b)
    same(prog)


@pytest.mark.parametrize("sa,sb", SOLVE_SHAPES)
def test_solve_broadcasting_finite_differences(sa, sb):
    a = np.array(data(sa, seed=1)) + 3 * np.eye(sa[-1])
    fdcheck(lambda x, y: tg.linalg.solve(x, y), [a, np.array(data(sb, seed=2))])


def test_solve_left_false_and_errors():
    a = np.array(A3)
    fdcheck(lambda x, y: tg.linalg.solve(x, y, left=False), [a, np.array(data((2, 3)))])

    def prog(lib):
        out = []
        for f in (lambda: lib.linalg.solve(lib.eye(3), lib.ones(2)),
                  lambda: lib.linalg.solve(lib.eye(3), lib.ones(2, 3)),
                  lambda: lib.linalg.inv(lib.tensor([[1.0, 2.0], [2.0, 4.0]])),
                  lambda: lib.linalg.inv(lib.stack([lib.eye(2), lib.tensor([[1.0, 2.0], [2.0, 4.0]])])),
                  lambda: lib.linalg.solve(lib.stack([lib.eye(3), lib.zeros(3, 3)]), lib.ones(3)),
                  lambda: lib.linalg.cholesky(lib.tensor([[1.0, 2.0], [2.0, 1.0]]))):
            try:
                out.append(f())
            except lib.linalg.LinAlgError as e:
                out.append(("LinAlgError", str(e)))
            except RuntimeError as e:
                out.append(("RuntimeError", str(e)))
        return out
    same(prog)


def test_linalg_error_type_without_torch():
    assert issubclass(tg.linalg.LinAlgError, RuntimeError)
    with pytest.raises(tg.linalg.LinAlgError, match="The diagonal element 2 is zero"):
        tg.linalg.inv(tg.tensor([[1.0, 2.0], [2.0, 4.0]]))


def _spd(lib, a):
    return a @ a.mT + 3 * lib.eye(a.shape[-1], dtype=a.dtype)


LINALG = {
    "slogdet": lambda lib, a: lib.linalg.slogdet(a).logabsdet,
    "torch.slogdet": lambda lib, a: lib.slogdet(a)[1],
    "logdet": lambda lib, a: lib.logdet(_spd(lib, a)),
    "inverse": lambda lib, a: lib.inverse(a),
    "det_method": lambda lib, a: a.det(),
    "cholesky": lambda lib, a: lib.linalg.cholesky(_spd(lib, a)),
    "cholesky_upper": lambda lib, a: lib.linalg.cholesky(_spd(lib, a), upper=True),
    "cholesky_solve": lambda lib, a: lib.cholesky_solve(a[:, :2], lib.linalg.cholesky(_spd(lib, a))),
    "cholesky_solve_upper": lambda lib, a: lib.cholesky_solve(
        a[:, :2], lib.linalg.cholesky(_spd(lib, a), upper=True), upper=True),
    "solve_triangular": lambda lib, a: lib.linalg.solve_triangular(a + 2 * lib.eye(3, dtype=a.dtype),
                                                                   a[:, :2], upper=True),
    "solve_triangular_right": lambda lib, a: lib.linalg.solve_triangular(
        a + 2 * lib.eye(3, dtype=a.dtype), a[:2], upper=False, left=False),
    "solve_triangular_unit": lambda lib, a: lib.linalg.solve_triangular(
        a, a[:, 1:], upper=False, unitriangular=True),
    "eigvalsh": lambda lib, a: lib.linalg.eigvalsh(a + a.mT),
    "eigh_vectors": lambda lib, a: lib.linalg.eigh(a + a.mT).eigenvectors.abs(),
    "qr": lambda lib, a: lib.linalg.qr(a)[0] @ lib.diag(lib.linalg.qr(a)[1].diagonal()),
    "svd_vectors": lambda lib, a: (lambda r: r.U @ r.Vh)(lib.linalg.svd(a, full_matrices=False)),
    "svdvals": lambda lib, a: lib.linalg.svdvals(a),
    "pinv": lambda lib, a: lib.linalg.pinv(a[:, :2]),
    "lstsq": lambda lib, a: lib.linalg.lstsq(a[:, :2], a[:, 2:]).solution,
    "matrix_power": lambda lib, a: lib.linalg.matrix_power(a, 3),
    "matrix_power_neg": lambda lib, a: lib.linalg.matrix_power(a, -2),
    "multi_dot": lambda lib, a: lib.linalg.multi_dot([a, a.mT, a]),
    "cond": lambda lib, a: lib.linalg.cond(a),
}


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_functions_vs_torch(name):
    def prog(lib):
        a = leaf(lib, A3, "float64")
        y = LINALG[name](lib, a)
        return y, _grads(lib, y, a)
    same(prog)


@pytest.mark.parametrize("name", sorted(LINALG))
def test_linalg_functions_finite_differences(name):
    fdcheck(lambda a: LINALG[name](tg, a), [np.array(A3)], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["cholesky", "eigvalsh", "solve_triangular", "pinv", "qr"])
def test_linalg_second_order_finite_differences(name):
    def first(a):
        rg = a.requires_grad
        a.requires_grad_()
        y = LINALG[name](tg, a)
        g, = tg.autograd.grad((y * y).sum(), a, create_graph=rg)
        return g
    fdcheck(first, [np.array(A3)], rtol=1e-5, atol=1e-6)


def test_linalg_misc_as_torch():
    def prog(lib):
        return _outcomes((
            lambda: lib.linalg.cross(lib.ones(4, 3), lib.ones(3)),
            lambda: lib.linalg.vector_norm(lib.ones(2, 2), dim=()),
            lambda: lib.linalg.vector_norm(lib.ones(2, 2), ord="fro"),
            lambda: lib.linalg.inv_ex(lib.tensor([[1.0, 2.0], [2.0, 4.0]])).info,
            lambda: lib.linalg.eigh(lib.tensor([[2.0, 1.0], [1.0, 2.0]])).eigenvalues))
    same(prog)


# ----------------------------------------------------------------------------- special
POLES = [0.0, -1.0, -2.5, -0.5, -1.5, 0.5, 3.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", ["lgamma", "digamma", "polygamma1", "polygamma2"])
def test_gamma_family_at_poles_and_negatives(fn, dtype):
    def prog(lib):
        # (torch's digamma / trigamma gradient at -1 is a large finite number, not the pole)
        x = leaf(lib, POLES if fn in ("lgamma", "polygamma2") else POLES[:1] + POLES[2:], dtype)
        y = {"lgamma": lambda: lib.lgamma(x), "digamma": lambda: lib.digamma(x),
             "polygamma1": lambda: lib.polygamma(1, x),
             "polygamma2": lambda: lib.special.polygamma(2, x)}[fn]()
        return y, _grads(lib, y, x)
    same(prog, tol=dict(rtol=1e-8, atol=1e-10) if dtype == "float64" else None)  # kernel series


def test_polygamma_negative_reference_without_torch():
    # trigamma(-0.5) = pi^2 / 2 + 4, trigamma(-1.5) = pi^2 / 2 + 4 + 4 / 9
    y = tg.polygamma(1, tg.tensor([-0.5, -1.5], dtype=tg.float64))
    np.testing.assert_allclose(y.numpy(), [math.pi ** 2 / 2 + 4, math.pi ** 2 / 2 + 4 + 4 / 9],
                               rtol=1e-12)
    assert float(tg.lgamma(tg.tensor(0.0))) == math.inf
    fdcheck(lambda x: tg.digamma(x), [np.array([-0.5, -1.3, -2.7])], rtol=1e-5)


SPECIAL = {
    "sinc": lambda lib, x: lib.sinc(x),
    "special_sinc": lambda lib, x: lib.special.sinc(x * 2),
    "log_ndtr": lambda lib, x: lib.special.log_ndtr(x * 20),
    "ndtr": lambda lib, x: lib.special.ndtr(x),
    "ndtri": lambda lib, x: lib.special.ndtri(x.sigmoid()),
    "erfinv": lambda lib, x: lib.erfinv(x.tanh()),
    "erfinv_method": lambda lib, x: x.tanh().erfinv(),
    "entr": lambda lib, x: lib.special.entr(x.abs() + 0.1),
    "xlogy": lambda lib, x: lib.special.xlogy(x, x.abs() + 0.5),
    "xlogy_scalar_other": lambda lib, x: lib.xlogy(x, 3.0),
    "xlogy_scalar_self": lambda lib, x: lib.special.xlogy(2.0, x.abs() + 0.1),
    "xlog1py": lambda lib, x: lib.special.xlog1py(x, x.abs()),
    "logit": lambda lib, x: lib.logit(x.sigmoid()),
    "logit_eps": lambda lib, x: lib.special.logit(x.sigmoid(), eps=0.3),
    "multigammaln": lambda lib, x: lib.special.multigammaln(x.abs() + 2, 3),
}
SX = [-2.0, -0.6, -0.1, 0.0, 0.3, 0.9, 1.7]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_vs_torch(name, dtype):
    def prog(lib):
        x = leaf(lib, SX, dtype)
        y = SPECIAL[name](lib, x)
        return y, _grads(lib, y, x)
    same(prog, tol=dict(rtol=1e-8, atol=1e-10) if name == "ndtri" and dtype == "float64" else None)


@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_finite_differences(name):
    xs = np.array([-2.0, -0.6, -0.15, 0.3, 0.9, 1.7])      # off 0 (abs, sinc's branch)
    fdcheck(lambda x: SPECIAL[name](tg, x), [xs], rtol=1e-5, atol=1e-6)


def test_special_edges_as_torch():
    def prog(lib):
        S = lib.special
        x = leaf(lib, [0.0, 0.0, 1.0])
        y = leaf(lib, [0.0, 3.0, 0.0])
        z = S.xlogy(x, y)
        s = leaf(lib, [0.0, 0.5])
        out = [z, lib.autograd.grad(z.sum(), (x, y)), S.xlogy(lib.tensor([0.0]), float("nan")),
               S.log_ndtr(lib.tensor([-10.0, -40.0, 10.0])),
               lib.autograd.grad(lib.sinc(s).sum(), s)]
        lo = leaf(lib, [-0.5, 1.5])
        out.append(lib.autograd.grad(lib.logit(lo).sum(), lo))
        for f in (lambda: S.xlogy(2.0, 3.0), lambda: S.softmax(lib.ones(3))):
            try:
                out.append(f())
            except TypeError:
                out.append("TypeError")
        return out
    same(prog)


# ----------------------------------------------------------------------------- nn.functional
def _bn(lib, x, training):
    rm, rv = lib.zeros(3, dtype=x.dtype), lib.ones(3, dtype=x.dtype)
    w = lib.tensor([0.5, 1.0, 2.0], dtype=x.dtype)
    y = lib.nn.functional.batch_norm(x, rm, rv, w, -w, training=training, momentum=0.2)
    return y, rm, rv


NN = {
    "layer_norm": lambda lib, x: lib.nn.functional.layer_norm(x, (4,)),
    "layer_norm_wb": lambda lib, x: lib.nn.functional.layer_norm(
        x, (3, 4), lib.ones(3, 4, dtype=x.dtype) * 2, lib.ones(3, 4, dtype=x.dtype)),
    "batch_norm_train": lambda lib, x: _bn(lib, x, True)[0],
    "batch_norm_eval": lambda lib, x: _bn(lib, x, False)[0],
    "embedding": lambda lib, x: lib.nn.functional.embedding(lib.tensor([[0, 2], [1, 1]]),
                                                            x.reshape(6, 4)),
    "embedding_pad": lambda lib, x: lib.nn.functional.embedding(lib.tensor([[0, 2], [1, 1]]),
                                                                x.reshape(6, 4), padding_idx=1),
    "kl_div_batchmean": lambda lib, x: lib.nn.functional.kl_div(
        x.reshape(6, 4).log_softmax(-1), lib.tensor(data((6, 4), 0.1, 1.0), dtype=x.dtype),
        reduction="batchmean"),
    "kl_div_log_target": lambda lib, x: lib.nn.functional.kl_div(
        x.reshape(6, 4), lib.tensor(data((6, 4), -1.0, 0.0), dtype=x.dtype), reduction="sum",
        log_target=True),
    "sdpa": lambda lib, x: lib.nn.functional.scaled_dot_product_attention(x, x * 0.5, x[..., :2]),
    "sdpa_causal": lambda lib, x: lib.nn.functional.scaled_dot_product_attention(
        x, x.flip(-1), x, is_causal=True),
    "sdpa_mask": lambda lib, x: lib.nn.functional.scaled_dot_product_attention(
        x, x, x, attn_mask=lib.tensor([[True, False, True], [True, True, False],
                                       [False, True, True]])),
    "pairwise_distance": lambda lib, x: lib.nn.functional.pairwise_distance(x[0], x[1]),
    "gaussian_nll": lambda lib, x: lib.nn.functional.gaussian_nll_loss(x[0], x[1], x[0].abs() + 0.5),
    "poisson_nll": lambda lib, x: lib.nn.functional.poisson_nll_loss(
        x, lib.tensor(data((2, 3, 4), 0.0, 3.0), dtype=x.dtype)),
}


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_functions_vs_torch(name):
    def prog(lib):
        x = leaf(lib, data((2, 3, 4)))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = NN[name](lib, x)
        return y, _grads(lib, y, x)
    same(prog)


@pytest.mark.parametrize("name", sorted(set(NN) - {"embedding_pad"}))   # (pad rows: no grad)
def test_nn_functions_finite_differences(name):
    fdcheck(lambda x: NN[name](tg, x), [np.array(data((2, 3, 4)))], rtol=1e-5, atol=1e-6)


def test_batch_norm_running_stats():
    def prog(lib):
        x = lib.tensor(data((4, 3, 2)))
        y, rm, rv = _bn(lib, x, True)
        return rm, rv
    same(prog)
    x = np.array(data((4, 3, 2)))
    _, rm, rv = _bn(tg, tg.tensor(x, dtype=tg.float64), True)
    np.testing.assert_allclose(rm.numpy(), 0.2 * x.mean((0, 2)), rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.8 + 0.2 * x.var((0, 2), ddof=1), rtol=1e-12)
