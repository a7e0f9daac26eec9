"""Matrix products, einsum, trace/diag/cross and torch.linalg against torch and finite
differences."""
import numpy as np
import pytest

import tapegrad as tg
from oracle import check_fd, check_forward, check_program, data, fdcheck, leaf, same
from oracle import next_names as _names, square as _mat, tensor_of as _t
import math
import warnings

SHAPES = {
    "dot": ((4,), (4,), lambda lib, a, b: lib.dot(a, b)),
    "mm": ((3, 4), (4, 2), lambda lib, a, b: lib.mm(a, b)),
    "mv": ((3, 4), (4,), lambda lib, a, b: lib.mv(a, b)),
    "vm": ((4,), (4, 3), lambda lib, a, b: a @ b),
    "bmm": ((2, 3, 4), (2, 4, 5), lambda lib, a, b: lib.bmm(a, b)),
    "bmm1": ((1, 3, 4), (1, 4, 2), lambda lib, a, b: a.bmm(b)),
    "matmul_3_2": ((2, 3, 4), (4, 5), lambda lib, a, b: a @ b),
    "matmul_3_1": ((2, 3, 4), (4,), lambda lib, a, b: lib.matmul(a, b)),
    "matmul_1_3": ((4,), (2, 4, 3), lambda lib, a, b: a @ b),
    "matmul_3_3": ((2, 3, 4), (2, 4, 2), lambda lib, a, b: a @ b),
    "matmul_bcast": ((2, 1, 3, 4), (3, 4, 2), lambda lib, a, b: a @ b),
    "matmul_2_3": ((3, 4), (2, 4, 2), lambda lib, a, b: a.matmul(b)),
    "outer": ((3,), (4,), lambda lib, a, b: lib.outer(a, b)),
    "einsum_mm": ((3, 4), (4, 2), lambda lib, a, b: lib.einsum("ij,jk->ik", a, b)),
    "einsum_bmm": ((2, 3, 4), (2, 4, 2), lambda lib, a, b: lib.einsum("bij,bjk->bik", a, b)),
    "einsum_dot": ((4,), (4,), lambda lib, a, b: lib.einsum("i,i->", a, b)),
    "einsum_outer": ((3,), (4,), lambda lib, a, b: lib.einsum("i,j->ij", a, b)),
    "einsum_t": ((3, 4), (4, 3), lambda lib, a, b: lib.einsum("ij,jk->ki", a, b)),
    "einsum_implicit": ((3, 4), (4, 2), lambda lib, a, b: lib.einsum("ij,jk", a, b)),
    "einsum_sum": ((3, 4), (3, 4), lambda lib, a, b: lib.einsum("ij,ij->i", a, b)),
    "einsum_trace": ((3, 3), (3,), lambda lib, a, b: lib.einsum("ii,i->i", a, b)),
    "einsum_list": ((3, 4), (4,), lambda lib, a, b: lib.einsum("ij,j->i", [a, b])),
    "tensordot": ((2, 3, 4), (3, 4, 2), lambda lib, a, b: lib.tensordot(a, b, 2)),
    "cross": ((4, 3), (4, 3), lambda lib, a, b: lib.cross(a, b, dim=1)),
    "linalg_cross": ((4, 3), (1, 3), lambda lib, a, b: lib.linalg.cross(a, b)),
    "trace": ((3, 3), (3,), lambda lib, a, b: a.trace() * b.sum()),
    "diag2": ((3, 4), (3,), lambda lib, a, b: a.diag() * b),
    "diag1": ((3,), (3, 3), lambda lib, a, b: lib.diag(a) * b),
    "diag_off": ((3, 4), (3,), lambda lib, a, b: a.diag(1) * b),
    "solve": ((3, 3), (3,), lambda lib, a, b: lib.linalg.solve(a + 3 * lib.eye(3, dtype=a.dtype), b)),
    "solve_mat": ((3, 3), (3, 2), lambda lib, a, b: lib.linalg.solve(a + 3 * lib.eye(3, dtype=a.dtype), b)),
    "inv": ((3, 3), (3, 3), lambda lib, a, b: lib.linalg.inv(a + 3 * lib.eye(3, dtype=a.dtype)) * b),
    "det": ((3, 3), (3,), lambda lib, a, b: lib.linalg.det(a) * b),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_products_vs_torch(name, dtype):
    sa, sb, f = SHAPES[name]
    av, bv = data(sa, seed=1), data(sb, seed=2)
    lin = name in ("solve", "solve_mat", "inv", "det")

    def prog(lib):
        a, b = leaf(lib, av, dtype), leaf(lib, bv, dtype)
        y = f(lib, a, b)
        w = lib.tensor(np.resize(np.array(data((8,), 0.5, 1.5, seed=3)), tuple(y.shape)).tolist(),
                       dtype=getattr(lib, dtype))
        (y * w).sum().backward()
        # tensordot's graph differs from torch's (torch reshapes and mm's): values only
        free = "tensordot" in name
        return (y.detach() if free else y), y.requires_grad, a.grad, b.grad
    same(prog, loose=lin)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_products_finite_differences(name):
    sa, sb, f = SHAPES[name]
    fdcheck(lambda a, b: f(tg, a, b), [np.array(data(sa, seed=1)), np.array(data(sb, seed=2))],
            rtol=1e-5, atol=1e-6)


def test_linalg_names():
    def prog(lib):
        A = lib.tensor([[2.0, 1.0], [0.5, 3.0]], requires_grad=True)
        b = lib.tensor([1.0, 2.0], requires_grad=True)
        return [lib.linalg.det(A).grad_fn.name(), lib.linalg.inv(A).grad_fn.name(),
                lib.linalg.solve(A, b).grad_fn.name(), lib.linalg.norm(A).grad_fn.name(),
                lib.linalg.vector_norm(b).grad_fn.name(), lib.linalg.cross(
                    lib.ones(3, requires_grad=True), lib.ones(3)).grad_fn.name()]
    same(prog)


def test_linalg_second_order():
    A = tg.tensor([[2.0, 1.0, 0.3], [0.5, 3.0, 0.1], [0.2, -0.4, 1.7]], dtype=tg.float64,
                  requires_grad=True)
    b = tg.tensor([1.0, 2.0, -1.0], dtype=tg.float64, requires_grad=True)
    f = lambda A, b: (tg.linalg.det(A) * tg.linalg.solve(A, b).sum() +  # noqa: E731
                      tg.linalg.inv(A).sum() ** 2)
    gA, gb = tg.autograd.grad(f(A, b), (A, b), create_graph=True)
    (h,) = tg.autograd.grad(gA.sum() + gb.sum(), A)

    def first(a):
        x = tg.tensor(a, dtype=tg.float64, requires_grad=True)
        y = tg.tensor(b.detach().numpy(), dtype=tg.float64, requires_grad=True)
        g1, g2 = tg.autograd.grad(f(x, y), (x, y))
        return float(g1.sum() + g2.sum())
    a0 = A.detach().numpy()
    want = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            e = np.zeros((3, 3))
            e[i, j] = 1e-6
            want[i, j] = (first(a0 + e) - first(a0 - e)) / 2e-6
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("prog", [
    lambda lib: lib.bmm(lib.ones(2, 3, 4), lib.ones(2, 5, 4)),
    lambda lib: lib.ones(2, 3, 4) @ lib.ones(5, 2),
    lambda lib: lib.ones(2, 3, 4) @ lib.ones(3, 4, 2),
    lambda lib: lib.ones(3) @ lib.ones(4),
    lambda lib: lib.ones(2, 3) @ lib.ones(2, 3),
    lambda lib: lib.ones(3, 4) @ lib.ones(5),
    lambda lib: lib.ones(3, dtype=lib.float64) @ lib.ones(3),
    lambda lib: lib.ones(3) @ 2.0,
    lambda lib: lib.bmm(lib.ones(3, 4), lib.ones(4, 3)),
    lambda lib: lib.linalg.inv(lib.ones(2, 3)),
    lambda lib: lib.linalg.det(lib.tensor([[1, 2], [3, 4]])),
    lambda lib: lib.trace(lib.ones(3)),
])
def test_matmul_errors(prog):
    same(prog)


def test_integer_products():
    def prog(lib):
        a = lib.tensor([[1, 2], [3, 4]])
        return a @ a, lib.trace(a), lib.diag(a), lib.outer(lib.tensor([1, 2]), lib.tensor([3, 4]))
    same(prog)


# ----------------------------------------------------------------------------- einsum forms
# name -> (equation, operand shapes)
EINSUM = {
    "ell_mm": ("...j,jk->...k", [(2, 3, 4), (4, 2)]),
    "ell_batch_mm": ("...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
    "ell_bcast": ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    "ell_front": ("i...,i->...", [(3, 4), (3,)]),
    "ell_mid": ("b...i,b...i->b...", [(2, 3, 4), (2, 3, 4)]),
    "ell_transpose": ("...ij->...ji", [(2, 4, 3)]),
    "ell_diag": ("...ii->...i", [(2, 3, 3)]),
    "ell_trace": ("...ii", [(2, 3, 3)]),
    "ell_sum_out": ("...i->i", [(2, 3, 4)]),
    "ell_elementwise": ("...,...->...", [(3, 4), (3, 4)]),
    "ell_scalar_bcast": ("...,...->...", [(3, 4), ()]),
    "ell_empty": ("...ij,jk->...ik", [(3, 4), (4, 2)]),
    "ell_implicit": ("...ij,j", [(2, 3, 4), (4,)]),
    "ell_outer_ell": ("i,...->...i", [(3,), (2, 4)]),
    "upper": ("Ab,bC->AC", [(3, 4), (4, 2)]),
    "implicit_sorted": ("ba,ca", [(3, 4), (2, 4)]),
    "sum_one_side": ("ij,k->k", [(3, 4), (5,)]),
    "sum_partial": ("ijk,jl->il", [(2, 3, 4), (3, 5)]),
    "diag_pair": ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
    "three": ("ij,jk,kl->il", [(3, 4), (4, 2), (2, 5)]),
    "three_ell": ("...ij,jk,k->...i", [(2, 3, 4), (4, 5), (5,)]),
    "four": ("ab,bc,cd,d->a", [(2, 3), (3, 4), (4, 5), (5,)]),
    "bilinear": ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    "batch_dot": ("bi,bi->b", [(6, 4), (6, 4)]),
    "one_op_total": ("ijk->", [(2, 3, 4)]),
    "size_one": ("ij,jk->ik", [(1, 4), (4, 1)]),
    "swap_lo_ro": ("ij,jk->ki", [(3, 4), (4, 2)]),
    "swap_lo_ro_batch": ("bij,bjk->bki", [(2, 3, 4), (2, 4, 5)]),
}


def _ein_args(lib, shapes, dtype, seed=10):
    return [leaf(lib, data(s, seed=seed + i) if s else 0.7, dtype) for i, s in enumerate(shapes)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(EINSUM))
def test_einsum_vs_torch(name, dtype):
    """Values, gradients and the whole backward graph (torch's nodes and next_functions:
    unsqueeze/diagonal/permute alignment, bmm contraction, views) as torch."""
    from oracle import graph
    eq, shapes = EINSUM[name]

    def prog(lib):
        ops = _ein_args(lib, shapes, dtype)
        y = lib.einsum(eq, *ops)
        w = lib.tensor(np.resize(np.array(data((7,), 0.5, 1.5, seed=3)), tuple(y.shape)).tolist(),
                       dtype=getattr(lib, dtype))
        (y * w).sum().backward()
        return graph(y.grad_fn, 30), y, [o.grad for o in ops]
    same(prog, loose=True)


@pytest.mark.parametrize("name", sorted(EINSUM))
def test_einsum_finite_differences(name):
    eq, shapes = EINSUM[name]
    fdcheck(lambda *ops: tg.einsum(eq, *ops),
            [np.array(data(s, seed=10 + i) if s else 0.7) for i, s in enumerate(shapes)],
            rtol=1e-5, atol=1e-6)


def test_einsum_matches_numpy():
    """Independent of torch: einsum's values against numpy.einsum."""
    for name, (eq, shapes) in EINSUM.items():
        arrs = [np.array(data(s, seed=10 + i) if s else 0.7) for i, s in enumerate(shapes)]
        got = tg.einsum(eq, *[tg.tensor(a, dtype=tg.float64) for a in arrs]).numpy()
        lhs, _, out = eq.partition("->")
        if "..." in lhs and _ and "..." not in out:
            # numpy cannot sum ellipsis dims away: keep them, then sum them
            full = np.einsum(lhs + "->..." + out, *arrs)
            want = full.sum(axis=tuple(range(full.ndim - len(out))))
        else:
            want = np.einsum(eq, *arrs)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=name)


def test_einsum_sublist_format():
    def prog(lib):
        a = leaf(lib, data((3, 4), seed=1))
        b = leaf(lib, data((4, 2), seed=2))
        y = lib.einsum(a, [0, 1], b, [1, 2], [0, 2])
        z = lib.einsum(a, [Ellipsis, 1], b, [1, 2])
        (y.sum() + z.sum()).backward()
        return y, z, a.grad, b.grad
    same(prog)


@pytest.mark.parametrize("eq, shapes", [
    ("ij,jk->ik", [(3, 4), (5, 2)]),
    ("ij,jk->iz", [(3, 4), (4, 2)]),
    ("ij,jk->ii", [(3, 4), (4, 2)]),
    ("ijk,jk->i", [(3, 4), (4, 2)]),
    ("ij,jk", [(3, 4)]),
    ("ij", [(3, 4), (4, 2)]),
    ("ii->i", [(3, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (3, 4, 2)]),
    ("i.j->i", [(3, 4)]),
    ("i1->i", [(3, 4)]),
])
def test_einsum_errors(eq, shapes):
    same(lambda lib: lib.einsum(eq, *_ein_args(lib, shapes, "float32")))


# ----------------------------------------------------------------------------- matrix norms
A43 = [[1.0, -2.0, 0.5], [0.3, 4.0, -1.0], [2.0, 0.1, 3.0], [-1.5, 0.7, 0.2]]
INF = float("inf")
NORMS = {
    "ord1": lambda lib, A: lib.linalg.norm(A, 1),
    "ord-1": lambda lib, A: lib.linalg.norm(A, -1),
    "ord_inf": lambda lib, A: lib.linalg.norm(A, INF),
    "ord-inf": lambda lib, A: lib.linalg.norm(A, -INF),
    "ord2": lambda lib, A: lib.linalg.norm(A, 2),
    "ord-2": lambda lib, A: lib.linalg.norm(A, -2),
    "fro": lambda lib, A: lib.linalg.norm(A, "fro"),
    "nuc": lambda lib, A: lib.linalg.norm(A, "nuc"),
    "matrix_norm_default": lambda lib, A: lib.linalg.matrix_norm(A),
    "matrix_norm_1_keepdim": lambda lib, A: lib.linalg.matrix_norm(A, 1, keepdim=True),
    "matrix_norm_2_keepdim": lambda lib, A: lib.linalg.matrix_norm(A, 2, keepdim=True),
    "matrix_norm_nuc_dims": lambda lib, A: lib.linalg.matrix_norm(A, "nuc", dim=(1, 0)),
    "matrix_norm_inf_dims": lambda lib, A: lib.linalg.matrix_norm(A, INF, dim=(1, 0)),
    "norm_dim_pair": lambda lib, A: lib.linalg.norm(A, 2, dim=(0, 1)),
    "batched_2": lambda lib, A: lib.linalg.matrix_norm(A.reshape(2, 2, 3), 2),
    "batched_-1": lambda lib, A: lib.linalg.matrix_norm(A.reshape(2, 2, 3), -1),
    "batched_inf_keepdim": lambda lib, A: lib.linalg.matrix_norm(A.reshape(2, 2, 3), INF, keepdim=True),
    "batched_nuc_mid": lambda lib, A: lib.linalg.matrix_norm(A.reshape(2, 3, 2), "nuc", dim=(0, 2)),
    "torch_norm_fro": lambda lib, A: lib.norm(A, "fro"),
    "torch_norm_nuc": lambda lib, A: lib.norm(A, "nuc"),
    "torch_norm_nuc_keepdim": lambda lib, A: lib.norm(A, p="nuc", dim=(0, 1), keepdim=True),
    "torch_norm_p2_vector": lambda lib, A: lib.norm(A, p=2),
    "svdvals": lambda lib, A: lib.linalg.svdvals(A),
    "vector_dim": lambda lib, A: lib.linalg.norm(A, 2, dim=1),
    "bad_ord": lambda lib, A: lib.linalg.matrix_norm(A, 3),
    "bad_ord_norm": lambda lib, A: lib.linalg.norm(A, 3),
    "bad_ord_str": lambda lib, A: lib.linalg.matrix_norm(A, "abc"),
    "bad_1d": lambda lib, A: lib.linalg.matrix_norm(A[0], 1),
    "bad_same_dims": lambda lib, A: lib.linalg.matrix_norm(A, 1, dim=(0, 0)),
    "bad_3d_ord": lambda lib, A: lib.linalg.norm(A.reshape(2, 2, 3), 1),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(NORMS))
def test_matrix_norms_vs_torch(name, dtype):
    from oracle import graph
    f = NORMS[name]

    def prog(lib):
        A = leaf(lib, A43, dtype)
        y = f(lib, A)
        w = lib.tensor(np.resize(np.array(data((5,), 0.5, 1.5, seed=3)), tuple(y.shape)).tolist(),
                       dtype=getattr(lib, dtype))
        (y * w).sum().backward()
        return graph(y.grad_fn), y, A.grad
    same(prog, loose=True)


@pytest.mark.parametrize("name", [n for n in sorted(NORMS) if not n.startswith("bad")])
def test_matrix_norms_finite_differences(name):
    f = NORMS[name]
    fdcheck(lambda A: f(tg, A), [np.array(A43)], rtol=1e-5, atol=1e-6)


def test_matrix_norms_match_numpy():
    """Independent of torch: values against numpy.linalg.norm."""
    a = np.array(A43)
    A = tg.tensor(a, dtype=tg.float64)
    for o in (1, -1, 2, -2, INF, -INF, "fro", "nuc"):
        np.testing.assert_allclose(tg.linalg.norm(A, o).item(), np.linalg.norm(a, o), rtol=1e-12)
    b = a.reshape(2, 2, 3)
    for o in (1, -1, 2, -2, INF, -INF, "fro", "nuc"):
        np.testing.assert_allclose(tg.linalg.matrix_norm(tg.tensor(b), o).numpy(),
                                   np.linalg.norm(b, o, axis=(-2, -1)), rtol=1e-5)


# ---------------------------------------------------------------- diag_embed (batched, offsets, dims)
_DIAG_EMBED = [((3,), {}), ((2, 3), {}), ((2, 3), dict(offset=1)),
               ((2, 3), dict(offset=-2, dim1=0, dim2=2)), ((2, 3, 4), dict(dim1=1, dim2=0)),
               ((4,), dict(offset=2, dim1=-1, dim2=0))]


@pytest.mark.parametrize("shape,kw", _DIAG_EMBED)
def test_diag_embed_as_torch(shape, kw):
    a = data(shape, seed=4)

    def f(lib):
        x = leaf(lib, a)
        y = lib.diag_embed(x, **kw)
        (y * lib.arange(float(y.numel())).reshape(y.shape)).sum().backward()
        return y, x.grad
    same(f)


@pytest.mark.parametrize("shape,kw", _DIAG_EMBED)
def test_diag_embed_fd(shape, kw):
    fdcheck(lambda x: tg.diag_embed(x, **kw), [data(shape, seed=4)])


def test_diag_embed_against_numpy():
    a = np.arange(6.0).reshape(2, 3)
    y = tg.diag_embed(tg.tensor(a), offset=1).numpy()
    want = np.zeros((2, 4, 4))
    for b in range(2):
        want[b] = np.diag(a[b], 1)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("kw", [dict(dim1=1, dim2=1), dict(dim1=3), dict(dim2=-4)])
def test_diag_embed_errors(kw):
    same(lambda lib: lib.diag_embed(lib.ones(2, 3), **kw))


def test_torch_cross_checks_ranks_and_warns_without_dim():
    same(lambda lib: lib.cross(lib.ones(2, 3), lib.ones(3), dim=-1),
         phrases=("inputs must have the same number of dimensions",))
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        y = tg.cross(tg.ones(2, 3), tg.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]))
    assert y.tolist() == [[-1.0, 0.0, 1.0], [1.0, -1.0, 0.0]]


# ----------------------------------------------------------------------------- composed functions
# name -> (program on x, input shape, domain)
COMPOSED = {
    "matrix_exp": (lambda lib, x: lib.matrix_exp(x), (3, 3), (-1, 1)),
    "matrix_exp_big": (lambda lib, x: x.matrix_exp(), (3, 3), (-3, 3)),
    "matrix_exp_batch": (lambda lib, x: lib.linalg.matrix_exp(x), (2, 2, 2), (-1, 1)),
    "diagflat": (lambda lib, x: lib.diagflat(x), (3,), (-1, 1)),
    "diagflat_2d_off": (lambda lib, x: x.diagflat(-1), (2, 2), (-1, 1)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(COMPOSED))
def test_composed_vs_torch(name, dtype):
    check_program(COMPOSED, name, dtype)


COMPOSED_FORWARD = {
    "matrix_exp_int": lambda lib: lib.matrix_exp(_t(lib, [[1, 2], [3, 4]])),
    "matrix_exp_rect": lambda lib: lib.matrix_exp(_t(lib, [[1.0, 2.0, 3.0]])),
    "matrix_exp_1d": lambda lib: lib.linalg.matrix_exp(_t(lib, [1.0, 2.0])),
    "matrix_exp_zero": lambda lib: lib.matrix_exp(lib.zeros(2, 3, 3, dtype=lib.float64)),
    "matrix_exp_nilpotent": lambda lib: lib.matrix_exp(_t(lib, [[0.0, 1.0], [0.0, 0.0]], "float64")),
    "matrix_exp_large": lambda lib: lib.matrix_exp(_t(lib, [[1.0, 20.0], [-3.0, 2.0]], "float64")),
    "diagflat_int": lambda lib: lib.diagflat(_t(lib, [[1, 2], [3, 4]]), 1),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_FORWARD))
def test_composed_forward_vs_torch(name):
    check_forward(COMPOSED_FORWARD, name)


def test_matrix_exp_second_order_vs_torch():
    def prog(lib):
        a = leaf(lib, data((3, 3), -1, 1, seed=4), "float64")
        y = lib.matrix_exp(a)
        w = lib.tensor(data((3, 3), seed=5), dtype=lib.float64)
        (g,) = lib.autograd.grad((y * w).sum(), a, create_graph=True)
        (g * g).sum().backward()
        return g, a.grad, g.grad_fn is not None
    same(prog)


def _expm_series(a, terms=80):
    """exp(A) by the plain Taylor series in float64 (small ||A||: converges)."""
    out = np.eye(a.shape[0])
    term = np.eye(a.shape[0])
    for k in range(1, terms):
        term = term @ a / k
        out = out + term
    return out


def test_matrix_exp_values_without_torch():
    for seed, s in ((0, 0.5), (1, 1.5), (2, 3.0)):
        a = _mat(4, seed, s)
        got = tg.matrix_exp(tg.tensor(a, dtype=tg.float64)).numpy()
        np.testing.assert_allclose(got, _expm_series(a), rtol=1e-12, atol=1e-12)
    # exp of a diagonal matrix, exp(A) exp(-A) = I, a rotation generator
    d = np.diag([0.5, -1.0, 2.0])
    np.testing.assert_allclose(tg.matrix_exp(tg.tensor(d, dtype=tg.float64)).numpy(),
                               np.diag(np.exp([0.5, -1.0, 2.0])), rtol=1e-14)
    a = tg.tensor(_mat(5, 3, 4.0), dtype=tg.float64)
    np.testing.assert_allclose((tg.matrix_exp(a) @ tg.matrix_exp(-a)).numpy(), np.eye(5),
                               atol=1e-10)
    th = 0.7
    r = tg.matrix_exp(tg.tensor([[0.0, -th], [th, 0.0]], dtype=tg.float64)).numpy()
    np.testing.assert_allclose(r, [[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]],
                               rtol=1e-14, atol=1e-15)


COMPOSED_FD = {
    "matrix_exp": (lambda x: tg.matrix_exp(x), [_mat(3, 1, 2.0)]),
    "matrix_exp_batch": (lambda x: tg.linalg.matrix_exp(x), [np.stack([_mat(2, 2), _mat(2, 3)])]),
}


@pytest.mark.parametrize("name", sorted(COMPOSED_FD))
def test_composed_fdcheck(name):
    check_fd(COMPOSED_FD, name)


OLD_LINALG = {
    "svd": lambda lib, a: lib.svd(a),
    "svd_full": lambda lib, a: a.svd(some=False),
    "qr": lambda lib, a: lib.qr(a),
}


@pytest.mark.parametrize("name", sorted(OLD_LINALG))
def test_old_linalg_vs_torch(name):
    def prog(lib):
        a = leaf(lib, data((4, 3), seed=8), "float64")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = OLD_LINALG[name](lib, a)
        # sign-invariant products: U diag(S) V^T = A; Q R = A
        if name.startswith("svd"):
            U, S, V = out
            k = S.shape[0]
            rec = U[:, :k] * S @ V[:, :k].t()
            loss = (S ** 2).sum() + (rec * rec).sum()
        else:
            Q, R = out
            rec = Q[:, :R.shape[0]] @ R
            loss = (rec ** 3).sum() + (R.abs()).sum()
        loss.backward()
        return ([tuple(t.shape) for t in out], [t.grad_fn.name() for t in out], rec, a.grad,
                type(out).__name__)
    same(prog)


def test_svd_compute_uv_false_and_windows_vs_torch():
    def prog(lib):
        a = lib.tensor(data((3, 2), seed=9), dtype=lib.float64)
        U, S, V = lib.svd(a, compute_uv=False)
        return [U, S, V, lib.hann_window(5), lib.hann_window(5, periodic=False),
                lib.hamming_window(6, dtype=lib.float64), lib.blackman_window(7),
                lib.bartlett_window(5), lib.bartlett_window(6, False),
                lib.kaiser_window(5), lib.kaiser_window(6, False, 5.0), lib.hann_window(1),
                lib.hann_window(0), lib.hann_window(3, requires_grad=True),
                lib.hamming_window(5, True, 0.5, 0.5), a.qr(some=False)]
    same(prog)


@pytest.mark.parametrize("flags", [(True, False, False), (False, False, False), (True, True, False),
                                   (False, True, True)])
def test_triangular_solve_vs_torch(flags):
    upper, transpose, unit = flags

    def prog(lib):
        m = lib.tensor(data((3, 3), seed=12), dtype=lib.float64) + 3 * lib.eye(3, dtype=lib.float64)
        A = (m.triu() if upper else m.tril()).requires_grad_()
        b = leaf(lib, data((3, 2), seed=13), "float64")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X, C = lib.triangular_solve(b, A, upper, transpose, unit)
        (X * X).sum().backward()
        return X, C, b.grad, A.grad, X.grad_fn.name(), _names(X), type(lib.triangular_solve(
            b, A)).__name__ if False else None
    same(prog)


@pytest.mark.parametrize("name", ["solve", "eig", "symeig", "lstsq", "matrix_rank"])
def test_removed_functions_raise_as_torch(name):
    same(lambda lib: getattr(lib, name)(lib.eye(2), lib.eye(2)) if name in ("solve", "lstsq")
         else getattr(lib, name)(lib.eye(2)),
         phrases=("This function was deprecated since version 1.9 and is now removed.",))


def test_addmm_inplace_vs_torch():
    def prog(lib):
        x = leaf(lib, data((2, 2), seed=14), "float64")
        m1 = leaf(lib, data((2, 3), seed=15), "float64")
        m2 = lib.tensor(data((3, 2), seed=16), dtype=lib.float64)
        y = x * 1
        r = y.addmm_(m1, m2, beta=2, alpha=0.5)
        (r * r).sum().backward()
        return r is y, r, x.grad, m1.grad, r.grad_fn.name(), _names(r)
    same(prog)
    same(lambda lib: leaf(lib, [[1.0]]).addmm_(lib.ones(1, 1), lib.ones(1, 1)),
         phrases=("a leaf Variable that requires grad is being used in an in-place operation.",))


# ----------------------------------------------------------------------------- fused bmm
# Eagerly a batched product is one entry (_matrix._Bmm: numpy's batched products forward and
# backward); inside tapegrad.func recordings, one mm entry per batch element.
def _bmm_prog(lib, rg_a=True, rg_b=True):
    rng = np.random.default_rng(3)
    a = lib.tensor(rng.standard_normal((5, 3, 4)), requires_grad=rg_a)
    b = lib.tensor(rng.standard_normal((7, 5, 4)), requires_grad=rg_b)
    y = lib.einsum("ijk,mik->mij", a, b)          # gmm's product: a bmm inside
    z = lib.bmm(a, b[:4].permute(1, 2, 0))
    loss = (y * y).sum() + z.sin().sum()
    ins = [t for t in (a, b) if t.requires_grad]
    gs = lib.autograd.grad(loss, ins, create_graph=True)
    g2 = lib.autograd.grad(sum((g * g).sum() for g in gs), ins)
    return [loss.detach()] + [g.detach() for g in gs] + list(g2) + [z.grad_fn.name()]


@pytest.mark.parametrize("rg", [(True, True), (True, False), (False, True)],
                         ids=["both", "a", "b"])
def test_fused_bmm_gradients_and_second_order_vs_torch(rg):
    same(lambda lib: _bmm_prog(lib, *rg))


def test_fused_bmm_is_one_entry_and_matches_the_per_element_form():
    from tapegrad import _matrix
    from tapegrad._core import tape
    a = tg.tensor(np.random.default_rng(0).standard_normal((6, 3, 4)), requires_grad=True)
    b = tg.tensor(np.random.default_rng(1).standard_normal((6, 4, 2)), requires_grad=True)
    grads = []
    for fused in (True, False):
        _matrix.FUSED_BMM[0] = fused
        try:
            y = tg.bmm(a, b)
            tp = tape.resolve(y)[0]
            n0 = len(tp)
            y2 = tg.bmm(a, b)
            assert (len(tp) - n0 == 1) == fused
            (y * y2.cos()).sum().backward()
            grads.append((a.grad.numpy().copy(), b.grad.numpy().copy()))
            a.grad = b.grad = None
        finally:
            _matrix.FUSED_BMM[0] = True
    for g1, g2 in zip(*grads):
        np.testing.assert_allclose(g1, g2, rtol=1e-12, atol=1e-14)


def test_fused_bmm_saved_operand_modified_in_place():
    def prog(lib):
        a0 = lib.ones(2, 3, 3, requires_grad=True)
        a = a0 * 1
        y = lib.bmm(a, lib.ones(2, 3, 3, requires_grad=True))
        a.mul_(2)
        y.sum().backward()
    same(prog, phrases=("modified by an inplace operation",))


def test_bmm_inside_func_replays_per_element():
    from tapegrad import func
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 2, 5))
    g = func.grad(lambda a, b: (tg.bmm(a, b) ** 2).sum())
    for s in (1.0, 0.5):
        ga = g(tg.tensor(a * s), tg.tensor(b)).numpy()
        np.testing.assert_allclose(ga, 2 * np.einsum("bij,bkj->bik", (a * s) @ b, b),
                                   rtol=1e-12)
