"""Bad input gets torch's exception class and a clear message (issue 24).

A table of bad calls across the public API: wrong dtypes, shapes, dims out of range, bad
arguments, wrong types, impossible sizes, indices out of range, autograd misuse. Each row is
(id, code, torch's exception class, a phrase of torch's message or None). The code runs with
``torch`` bound to tapegrad (and, when torch is installed, to torch too: the table itself is
checked against the oracle). The expected class is in the table, so it runs without torch.

"Clear message": not empty, no numpy internals (``ndarray``, ``axis 0 is out of bounds for
array``, ``operands could not be broadcast``, ``object has no attribute``), and containing
the row's phrase when it has one. Rows tapegrad gets wrong today are ``XFAIL`` (strict, with
the finding they belong to in tests/differential_findings.md): they start failing when fixed,
and the fixer removes them from XFAIL.
"""
import copy
import re
import warnings

import pytest

import tapegrad

R, I, T, V, N, A = ("RuntimeError", "IndexError", "TypeError", "ValueError",
                    "NotImplementedError", "AssertionError")
L = "LinAlgError"

ERRORS = [
    # ---- wrong dtypes
    ("exp_str", "torch.exp('a')", T, "must be Tensor"),
    ("add_str", "torch.add(torch.ones(2), 'a')", T, None),
    ("sum_str", "torch.sum('a')", T, None),
    ("int_requires_grad", "torch.zeros(2, dtype=torch.int64).requires_grad_()", R,
     "floating point"),
    ("int_tensor_requires_grad", "torch.tensor([1, 2], requires_grad=True)", R,
     "floating point"),
    ("float_bitwise_and", "torch.ones(2) & torch.ones(2)", N, "not implemented for 'Float'"),
    ("float_invert", "~torch.ones(2)", T, None),
    ("mm_mixed", "torch.mm(torch.ones(2, 2), torch.ones(2, 2, dtype=torch.float64))", R,
     "dtype"),
    ("matmul_mixed", "torch.matmul(torch.ones(2, 2), torch.ones(2, dtype=torch.float64))", R,
     "dtype"),
    ("tensordot_mixed", "torch.tensordot(torch.zeros(2, 2), "
     "torch.zeros(2, 2, dtype=torch.float64), 1)", R, None),
    ("addmm_mixed", "torch.addmm(torch.zeros(2, 2), torch.zeros(2, 2, dtype=torch.float64), "
     "torch.zeros(2, 2))", R, "dtype"),
    ("linear_mixed", "F.linear(torch.zeros(2, 2), torch.zeros(2, 2, dtype=torch.float64))", R,
     "dtype"),
    ("bmm_mixed", "torch.bmm(torch.zeros(1, 2, 2), torch.zeros(1, 2, 2, dtype=torch.float64))",
     R, "scalar type"),
    ("index_select_float_index", "torch.index_select(torch.ones(3), 0, torch.tensor([0.]))", R,
     None),
    ("gather_float_index", "torch.gather(torch.ones(2), 0, torch.tensor([0.]))", R, None),
    ("index_float_tensor", "torch.ones(3)[torch.tensor([0.5])]", I, None),
    ("where_float_cond", "torch.where(torch.ones(2), torch.ones(2), torch.ones(2))", R, "bool"),
    ("masked_fill_float_mask", "torch.ones(2).masked_fill(torch.ones(2), 0.)", R, "bool"),
    ("cat_str", "torch.cat([torch.ones(2), 'a'])", T, None),
    ("lerp_int", "torch.lerp(torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64),"
     " 0.5)", N, None),
    ("inv_int", "torch.linalg.inv(torch.ones(2, 2, dtype=torch.int64))", R, None),
    ("float_power_inplace_float32", "torch.ones(2).float_power_(2)", R, None),
    ("shift_float", "torch.bitwise_left_shift(torch.ones(2), 1)", N, None),
    ("index_put_other_dtype", "torch.zeros(3).index_put_((torch.tensor([0]),), "
     "torch.tensor([1], dtype=torch.int64))", R, "dtype"),
    ("nll_float_target", "F.nll_loss(torch.ones(2, 3), torch.tensor([0., 1.]))", R, None),
    ("dtype_string", "torch.tensor([1.0], dtype='float')", T, None),
    # ---- shapes (issue 24 item 7: numpy's ValueError leaked from these)
    ("add_broadcast", "torch.ones(2) + torch.ones(3)", R, "must match the size"),
    ("lerp_broadcast", "torch.lerp(torch.zeros(3), torch.zeros(2), 0.5)", R,
     "must match the size"),
    ("addcmul_broadcast", "torch.addcmul(torch.zeros(3), torch.zeros(2), torch.zeros(3))", R,
     "must match the size"),
    ("addcdiv_broadcast", "torch.addcdiv(torch.zeros(3), torch.zeros(2), torch.ones(3))", R,
     "must match the size"),
    ("xlogy_broadcast", "torch.xlogy(torch.zeros(3), torch.zeros(2))", R, "must match the size"),
    ("mm_shapes", "torch.mm(torch.ones(2, 3), torch.ones(2, 3))", R, "cannot be multiplied"),
    ("matmul_1d", "torch.matmul(torch.ones(3), torch.ones(2))", R, None),
    ("bmm_2d", "torch.bmm(torch.ones(2, 2), torch.ones(2, 2))", R, None),
    ("cat_shapes", "torch.cat([torch.ones(2, 3), torch.ones(3, 2)])", R, None),
    ("stack_shapes", "torch.stack([torch.ones(2), torch.ones(3)])", R, None),
    ("view_size", "torch.ones(6).view(4, -1)", R, "invalid for input of size"),
    ("reshape_two_minus_one", "torch.ones(6).reshape(-1, -1)", R, "only one dimension"),
    ("view_noncontiguous", "torch.ones(2, 3).t().view(6)", R, "view size is not compatible"),
    ("expand_size", "torch.ones(2, 3).expand(3, 3)", R, None),
    ("solve_nonsquare", "torch.linalg.solve(torch.ones(2, 3), torch.ones(2))", R, None),
    ("det_nonsquare", "torch.linalg.det(torch.ones(2, 3))", R, None),
    ("dot_sizes", "torch.dot(torch.ones(2), torch.ones(3))", R, None),
    ("outer_2d", "torch.outer(torch.ones(2, 2), torch.ones(2))", R, None),
    ("cross_size", "torch.linalg.cross(torch.ones(2), torch.ones(2))", R, None),
    ("conv2d_channels", "F.conv2d(torch.ones(1, 1, 2, 2), torch.ones(1, 2, 1, 1))", R, None),
    ("conv2d_kernel_too_big", "F.conv2d(torch.ones(1, 1, 2, 2), torch.ones(1, 1, 3, 3))", R,
     None),
    ("linear_shapes", "F.linear(torch.ones(2, 3), torch.ones(4, 2))", R, None),
    ("cross_entropy_batch", "F.cross_entropy(torch.ones(2, 3), torch.tensor([0, 1, 2]))", V,
     "batch_size"),
    ("layer_norm_shape", "F.layer_norm(torch.ones(2, 3), (2,))", R, None),
    ("where_shapes", "torch.where(torch.tensor([True, False, True]), torch.ones(2), "
     "torch.ones(2))", R, None),
    ("masked_fill_shape", "torch.ones(2).masked_fill(torch.tensor([True, False, True]), 0.)",
     R, None),
    ("index_add_source", "torch.index_add(torch.ones(3), 0, torch.tensor([0]), torch.ones(2))",
     R, None),
    ("unflatten_sizes", "torch.ones(6).unflatten(0, (4, -1))", R, None),
    ("permute_short", "torch.ones(2, 3).permute(0)", R, None),
    ("permute_repeated", "torch.ones(2, 3).permute(0, 0)", R, None),
    ("permute_no_dims", "torch.ones(2, 3).permute()", T, None),
    ("broadcast_to_bad", "torch.broadcast_to(torch.ones(3), (2, 2))", R, None),
    ("einsum_mismatch", "torch.einsum('ij,jk->ik', torch.ones(2, 3), torch.ones(2, 3))", R,
     None),
    ("einsum_rank", "torch.einsum('ij', torch.ones(2))", R, None),
    ("pad_odd", "F.pad(torch.ones(2), (1,))", R, None),
    ("split_sizes_sum", "torch.split(torch.ones(4), [1, 2])", R, None),
    ("chunk_zero", "torch.chunk(torch.ones(4), 0)", R, None),
    ("unfold_too_big", "torch.ones(4).unfold(0, 5, 1)", R, None),
    ("narrow_past_end", "torch.narrow(torch.ones(4), 0, 3, 2)", R, "exceeds dimension size"),
    ("diagonal_1d", "torch.diagonal(torch.ones(3))", I, "Dimension out of range"),
    ("trace_1d", "torch.trace(torch.ones(3))", R, None),
    ("matrix_power_nonsquare", "torch.linalg.matrix_power(torch.ones(2, 3), 2)", R, None),
    ("mT_1d", "torch.ones(3).mT", R, None),
    ("repeat_too_few", "torch.ones(2, 2).repeat(2)", R, None),
    ("max_pool_too_big", "F.max_pool2d(torch.ones(1, 1, 2, 2), 3)", R, None),
    ("mse_shapes", "F.mse_loss(torch.ones(2), torch.ones(3))", R, None),
    # ---- linear algebra failures
    ("cholesky_not_pd", "torch.linalg.cholesky(-torch.eye(2))", L, None),
    ("inv_singular", "torch.linalg.inv(torch.zeros(2, 2))", L, None),
    ("solve_singular", "torch.linalg.solve(torch.zeros(2, 2), torch.ones(2))", L, None),
    # ---- dims out of range
    ("sum_dim", "torch.ones(2, 3).sum(2)", I, "Dimension out of range"),
    ("sum_dim_neg", "torch.ones(2, 3).sum(-3)", I, "Dimension out of range"),
    ("softmax_dim", "torch.softmax(torch.ones(2), 1)", I, "Dimension out of range"),
    ("cumsum_dim", "torch.cumsum(torch.ones(2), 1)", I, "Dimension out of range"),
    ("cat_dim", "torch.cat([torch.ones(2)], dim=1)", I, "Dimension out of range"),
    ("stack_dim", "torch.stack([torch.ones(2)], dim=3)", I, "Dimension out of range"),
    ("transpose_dim", "torch.ones(2).transpose(0, 2)", I, "Dimension out of range"),
    ("unsqueeze_dim", "torch.ones(2).unsqueeze(3)", I, "Dimension out of range"),
    ("squeeze_dim", "torch.ones(2).squeeze(1)", I, "Dimension out of range"),
    ("movedim_dim", "torch.movedim(torch.ones(2), 0, 1)", I, "Dimension out of range"),
    ("size_dim", "torch.ones(2).size(1)", I, "Dimension out of range"),
    ("argmax_dim", "torch.argmax(torch.ones(2), 1)", I, "Dimension out of range"),
    ("flip_dim", "torch.flip(torch.ones(2), (1,))", I, "Dimension out of range"),
    ("roll_dim", "torch.roll(torch.ones(2), 1, 1)", I, "Dimension out of range"),
    ("gather_dim", "torch.gather(torch.ones(2, 2), 2, torch.zeros(2, 2, dtype=torch.int64))",
     I, "Dimension out of range"),
    ("max_dim", "torch.max(torch.ones(2), 1)", I, "Dimension out of range"),
    ("median_dim", "torch.median(torch.ones(2), 1)", I, "Dimension out of range"),
    ("sum_dim_0d", "torch.ones(()).sum(1)", I, "Dimension out of range"),
    ("diff_dim", "torch.diff(torch.ones(2), dim=1)", I, "Dimension out of range"),
    ("movedim_0d_bad", "torch.movedim(torch.ones(()), 0, 1)", I, "Dimension out of range"),
    ("topk_k", "torch.topk(torch.ones(2), 3)", R, None),
    ("kthvalue_k", "torch.kthvalue(torch.ones(2), 3)", R, "out of range"),
    # ---- bad arguments
    ("zeros_negative", "torch.zeros(-1)", R, "negative"),
    ("arange_zero_step", "torch.arange(0, 1, 0)", R, "step must be nonzero"),
    ("arange_wrong_sign", "torch.arange(1, 0, 1)", R, None),
    ("linspace_negative", "torch.linspace(0, 1, -1)", R, None),
    ("full_str", "torch.full((2,), 'a')", T, None),
    ("eye_negative", "torch.eye(-1)", R, None),
    ("randint_empty_range", "torch.randint(5, 2, (2,))", R, None),
    ("multinomial_zero", "torch.multinomial(torch.tensor([0., 0.]), 1)", R, None),
    ("quantile_q", "torch.quantile(torch.ones(3), 1.5)", R, None),
    ("dropout_p", "F.dropout(torch.ones(2), p=1.5)", V, None),
    ("leaky_relu_str", "F.leaky_relu(torch.ones(2), 'a')", T, None),
    ("clamp_no_bounds", "torch.clamp(torch.ones(2))", R, None),
    ("div_rounding_mode", "torch.div(torch.ones(2), 2, rounding_mode='bad')", R, None),
    ("cross_entropy_class", "F.cross_entropy(torch.ones(2, 3), torch.tensor([0, 5]))", I,
     "out of bounds"),
    ("one_hot_classes", "F.one_hot(torch.tensor([3]), 2)", R, None),
    ("embedding_index", "F.embedding(torch.tensor([5]), torch.ones(3, 2))", I, None),
    ("bincount_negative", "torch.bincount(torch.tensor([-1]))", R, None),
    ("repeat_interleave_negative", "torch.repeat_interleave(torch.ones(2), "
     "torch.tensor([1, -1]))", R, None),
    ("tensor_ragged", "torch.tensor([[1, 2], [3]])", V, None),
    ("std_correction_str", "torch.std(torch.ones(2), correction='a')", T, None),
    ("to_cuda", "torch.ones(2).to('cuda')", A, "CUDA"),
    # ---- wrong types
    ("ones_str", "torch.ones('a')", T, None),
    ("zeros_tuple_str", "torch.zeros((2, 'a'))", T, None),
    ("view_str", "torch.ones(2).view('a')", T, None),
    ("add_op_str", "torch.ones(2) + 'a'", T, None),
    ("matmul_list", "torch.matmul(torch.ones(2), [1., 2.])", T, None),
    ("cat_tensor", "torch.cat(torch.ones(2))", T, None),
    ("stack_str", "torch.stack('ab')", T, None),
    # ---- impossible sizes (issue 24 item 7: MemoryError / numpy's ValueError)
    ("zeros_huge", "torch.zeros(2 ** 40, 2 ** 40)", R, None),
    ("ones_huge", "torch.ones(2 ** 62)", R, None),
    ("empty_overflow", "torch.empty(2 ** 63)", T, None),
    ("repeat_huge", "torch.ones(2).repeat(2 ** 40, 2 ** 40)", R, None),
    # ---- indexing
    ("index_past_end", "torch.ones(3)[3]", I, "out of bounds"),
    ("index_negative", "torch.ones(3)[-4]", I, "out of bounds"),
    ("index_2_63", "torch.ones(3)[2 ** 63]", V, None),
    ("index_tensor_past_end", "torch.ones(3)[torch.tensor([3])]", I, "out of bounds"),
    ("index_too_many", "torch.ones(3)[0, 0]", I, "too many indices"),
    ("index_0d", "torch.ones(())[0]", I, "invalid index of a 0-dim tensor"),
    ("index_mask_shape", "torch.ones(3)[torch.tensor([True, False])]", I, None),
    ("index_float", "torch.ones(3)[1.5]", I, None),
    ("index_negative_step", "torch.ones(3)[::-1]", V, "step must be greater than zero"),
    ("index_list_past_end", "torch.ones(3)[[0, 3]]", I, None),
    ("index_select_past_end", "torch.ones(3).index_select(0, torch.tensor([3]))", I, None),
    ("select_past_end", "torch.ones(3).select(0, 3)", I, None),
    ("index_select_0d", "torch.index_select(torch.ones(()), 0, torch.tensor([1]))", I, None),
    ("take_past_end", "torch.take(torch.ones(3), torch.tensor([3]))", I, None),
    ("scatter_past_end", "torch.ones(3).scatter(0, torch.tensor([3]), 1.)", R, None),
    ("index_put_past_end", "torch.zeros(3).index_put_((torch.tensor([3]),), torch.tensor(1.))",
     I, None),
    ("setitem_past_end", "x = torch.ones(3); x[3] = 1.", I, "out of bounds"),
    ("setitem_shape", "x = torch.ones(3); x[0] = torch.ones(2)", R, None),
    ("setitem_list", "x = torch.ones(3); x[:] = [1., 2., 3.]", T, None),
    # ---- autograd misuse
    ("grad_no_grad_fn", "torch.autograd.grad(torch.ones(2).sum(), torch.ones(2))", R,
     "does not require grad"),
    ("backward_nonscalar", "torch.ones(2, requires_grad=True).mul(2).backward()", R,
     "scalar outputs"),
    ("backward_twice", "x = torch.ones(2, requires_grad=True); y = x.exp().sum(); "
     "y.backward(); y.backward()", R, "second time"),
    ("inplace_leaf", "torch.ones(2, requires_grad=True).add_(1)", R, "leaf Variable"),
    ("numpy_requires_grad", "torch.ones(2, requires_grad=True).numpy()", R, "requires grad"),
    ("int_of_two", "int(torch.ones(2))", V, "only one element tensors"),
    ("bool_of_two", "bool(torch.ones(2))", R, "ambiguous"),
    ("item_of_two", "torch.ones(2).item()", R, None),
    ("grad_wrong_size", "x = torch.ones(2, requires_grad=True); x.grad = torch.ones(3)", R,
     None),
    ("deepcopy_nonleaf", "copy.deepcopy(torch.ones(2, requires_grad=True) * 2)", R,
     "graph leaves"),
    ("version_counter", "x = torch.ones(2, requires_grad=True); y = x.exp(); y.add_(1); "
     "y.sum().backward()", R, "modified by an inplace operation"),
    ("solve_output_inplace", "A = torch.tensor([[2., 1.], [1., 3.]], requires_grad=True); "
     "y = torch.linalg.solve(A, torch.ones(2)); y.mul_(2); y.sum().backward()", R,
     "modified by an inplace operation"),
]

# rows tapegrad gets wrong today (strict xfail: remove the row from here once it passes);
# none left after issue 24
XFAIL = {}

_NUMPY_LEAKS = ("ndarray", "out of bounds for array", "could not be broadcast",
                "object has no attribute", "AxisError")


def _run(lib, code):
    ns = {"torch": lib, "F": lib.nn.functional, "copy": copy}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(code, ns)                                            # noqa: S102 - the table


def _raised(lib, code):
    try:
        _run(lib, code)
    except Exception as e:                                        # noqa: BLE001
        return e
    return None


def _check(e, exc, phrase, lib_name):
    assert e is not None, "%s raised nothing (expected %s)" % (lib_name, exc)
    names = [c.__name__ for c in type(e).__mro__]
    if exc == L:            # torch.linalg.LinAlgError is torch._C._LinAlgError
        names = [n[1:] if n == "_LinAlgError" else n for n in names]
    assert exc in names, "%s raised %s: %s (expected %s)" % (lib_name, type(e).__name__, e, exc)
    msg = str(e)
    assert msg.strip(), "%s: empty message" % lib_name
    if lib_name == "tapegrad":
        leak = [m for m in _NUMPY_LEAKS if m in msg]
        assert not leak, "numpy's message leaks: %r" % msg
    if phrase is not None:
        assert re.search(re.escape(phrase), msg, re.I), "message %r lacks %r" % (msg, phrase)


def test_table_size():
    assert len(ERRORS) >= 100
    assert len({r[0] for r in ERRORS}) == len(ERRORS)
    assert set(XFAIL) <= {r[0] for r in ERRORS}


def _params():
    out = []
    for row in ERRORS:
        marks = [pytest.mark.xfail(strict=True, reason=XFAIL[row[0]])] if row[0] in XFAIL \
            else []
        out.append(pytest.param(*row, id=row[0], marks=marks))
    return out


@pytest.mark.parametrize("name, code, exc, phrase", _params())
def test_bad_call(name, code, exc, phrase):
    _check(_raised(tapegrad, code), exc, phrase, "tapegrad")


@pytest.mark.parametrize("name, code, exc, phrase", [pytest.param(*r, id=r[0]) for r in ERRORS])
def test_table_matches_torch(name, code, exc, phrase):
    """The table is torch's behaviour: the same class (exactly) and phrase."""
    torch = pytest.importorskip("torch")
    e = _raised(torch, code)
    _check(e, exc, phrase, "torch")
    assert type(e).__name__ == exc or (exc == L and type(e).__name__ == "_LinAlgError"), \
        type(e).__name__
