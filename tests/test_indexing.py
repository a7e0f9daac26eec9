"""Index keys read the torch way (tapegrad/_index.py): x[key] and x[key] = v against torch
(values, gradients, grad_fn names, exception types and messages), and torch-free checks of
torch's layout (an int selects before index tensors gather) through sequential indexing and
finite differences."""
import warnings

import numpy as np
import pytest

import tapegrad as tg
from oracle import data, fdcheck, same

S2, S3, S4 = (3, 4), (3, 4, 5), (2, 3, 4, 5)


def T(L, v, dt=None):
    return L.tensor(v, dtype=getattr(L, dt)) if dt else L.tensor(v)


def M(L, v):
    return L.tensor(v, dtype=L.bool)


MASK34 = [[True, False, True, False], [False] * 4, [True] * 4]

# (shape, key program)
GET = {
    "int": (S2, lambda L: 1), "neg_int": (S2, lambda L: -1), "int_int": (S2, lambda L: (1, 2)),
    "slice": (S2, lambda L: slice(1, None)), "step": (S2, lambda L: slice(None, None, 2)),
    "full_slice": (S2, lambda L: slice(None)), "full_slice_tuple": (S2, lambda L: (slice(None), slice(None))),
    "ellipsis_slice": (S2, lambda L: (..., slice(None))), "slice_ellipsis": (S2, lambda L: (slice(None), ...)),
    "explicit_full": (S2, lambda L: (slice(None), slice(0, 4))), "single_full_range": (S2, lambda L: slice(0, 100)),
    "ellipsis": (S2, lambda L: ...), "ellipsis_int": (S2, lambda L: (..., 0)), "none": (S2, lambda L: None),
    "empty_tuple": (S2, lambda L: ()), "two_ellipses": (S2, lambda L: (..., ...)),
    "true": (S2, lambda L: True), "false": (S2, lambda L: False), "list": (S2, lambda L: [0, 2]),
    "nested_list": (S2, lambda L: [[0, 1]]), "list_of_0d": (S2, lambda L: [T(L, 0), T(L, 2)]),
    "list_of_1d": (S2, lambda L: [T(L, [0, 1]), T(L, [1, 2])]), "list_slice": (S2, lambda L: [0, slice(None)]),
    "list_none": (S2, lambda L: [None, 0]), "list_ellipsis": (S2, lambda L: [..., 0]),
    "list_2d": (S2, lambda L: [[0, 1], [1, 2]]), "float_list": (S2, lambda L: [0.0, 1.7]),
    "int_bool_list": (S2, lambda L: [0, True]), "bool_list": (S2, lambda L: [True, False, True]),
    "empty_list": (S2, lambda L: []), "np_array": (S2, lambda L: np.array([0, 2])),
    "np_2d_array": (S2, lambda L: np.array([[0, 1], [1, 2]])), "np_int": (S2, lambda L: np.int64(1)),
    "uint8_mask": (S2, lambda L: T(L, [1, 0, 1], "uint8")), "int32": (S2, lambda L: T(L, [1, 0], "int32")),
    "bool_0d": (S2, lambda L: M(L, True)), "uint8_0d": (S2, lambda L: T(L, 1, "uint8")),
    "int8_0d": (S2, lambda L: T(L, 1, "int8")), "idx_2d": (S2, lambda L: T(L, [[0, 1], [2, 0]])),
    "neg_idx": (S2, lambda L: T(L, [-1, -3])), "idx_slice": (S2, lambda L: (T(L, [2, 0]), slice(1, None))),
    "slice_idx": (S2, lambda L: (slice(1, None), T(L, [2, 0]))), "idx_idx": (S2, lambda L: (T(L, [2, 0]), T(L, [1, 3]))),
    "int_idx": (S2, lambda L: (0, T(L, [1, 3]))), "idx_int": (S2, lambda L: (T(L, [1, 2]), 0)),
    "mask2d": (S2, lambda L: M(L, MASK34)), "mask_none": (S2, lambda L: (M(L, [True, False, True]), None)),
    "none_idx": (S2, lambda L: (None, T(L, [1, 2]))), "tensor_slice_bounds": (S2, lambda L: slice(T(L, 0), T(L, 2))),
    # an int and an index tensor separated by a slice, ..., None: the int selects first
    "int_slice_idx": (S3, lambda L: (0, slice(None), T(L, [0, 2]))),
    "int_ellipsis_idx": (S3, lambda L: (0, ..., T(L, [1, 3]))),
    "int_slice_mask": (S3, lambda L: (0, slice(None), M(L, [True, False, True, False, True]))),
    "int0d_slice_idx": (S3, lambda L: (T(L, 0), slice(None), T(L, [1, 3]))),
    "int_none_idx": (S3, lambda L: (0, None, T(L, [1, 3]))),
    "idx_none_idx": (S3, lambda L: (T(L, [0, 2]), None, T(L, [1, 3]))),
    "idx_slice_idx": (S3, lambda L: (T(L, [0, 2]), slice(1, 3), T(L, [1, 3]))),
    "idx_slice_int": (S3, lambda L: (T(L, [1, 2]), slice(None), 0)),
    "idx_int_idx": (S3, lambda L: (T(L, [1, 2]), 0, T(L, [1, 3]))),
    "slice_idx_step": (S3, lambda L: (slice(1, None), T(L, [3, 0]), slice(None, None, 2))),
    "true_int": (S3, lambda L: (True, 0)), "idx_true": (S3, lambda L: ([0, 2], True)),
    "idx_slice_true": (S3, lambda L: ([0, 2], slice(None), True)), "int_true_idx": (S3, lambda L: (0, True, [1, 2])),
    "none_idx_none_idx": (S3, lambda L: (None, [0, 1], None, [1, 2])), "mask2d_int": (S3, lambda L: (M(L, MASK34), 1)),
    "int_mask_idx": (S3, lambda L: (0, M(L, [True, False, True, False]), [1, 2])),
    "mask2d_idx": (S3, lambda L: (M(L, MASK34), [1, 2, 3, 4, 0, 1])),
    "idx2d_slice_idx2d": (S3, lambda L: (T(L, [[0, 1]]), slice(None), [[1], [2]])),
    "ellipsis_int_ellipsis": (S3, lambda L: (..., 0, ...)), "ellipsis_none_ellipsis": (S3, lambda L: (..., None, ...)),
    "none_sliced_away": (S3, lambda L: (None, slice(1, None))), "none_sliced_away_idx": (S3, lambda L: (None, slice(1, None), [0])),
    "mixed": (S3, lambda L: (slice(1, 3), [2, 0], None, slice(1, None, 2))),
    "idx_int_step": (S3, lambda L: ([2, 0], 1, slice(1, None, 2))),
    "4d_slice_idx_slice_int": (S4, lambda L: (slice(None), T(L, [1, 2]), slice(None), 0)),
    "4d_slice_int_slice_idx": (S4, lambda L: (slice(None), 0, slice(None), T(L, [1, 3]))),
    "4d_idx_slice_idx_int": (S4, lambda L: ([1, 0], slice(None), [2, 3], 0)),
    "4d_int_idx_slice_idx": (S4, lambda L: (0, [1, 0], slice(None), [2, 3])),
    "4d_none_ellipsis_none": (S4, lambda L: (None, ..., None)),
    "0d_none": ((), lambda L: None), "0d_ellipsis": ((), lambda L: ...), "0d_true": ((), lambda L: True),
    "0d_false": ((), lambda L: False), "0d_none_true": ((), lambda L: (None, True)), "0d_bool_t": ((), lambda L: M(L, True)),
}

# keys torch refuses: (shape, key, phrase of torch's message)
GET_ERRORS = {
    "0d_int": ((), lambda L: 0, "invalid index of a 0-dim tensor. Use `tensor.item()`"),
    "0d_int1": ((), lambda L: 1, "index 1 is out of bounds for dimension 0 with size 0"),
    "0d_slice": ((), lambda L: slice(None), "slice() cannot be applied to a 0-dim tensor."),
    "0d_tuple": ((), lambda L: (0,), "too many indices for tensor of dimension 0"),
    "0d_idx": ((), lambda L: T(L, [0]), "too many indices for tensor of dimension 0"),
    "too_many": (S2, lambda L: (0, 1, 2), "too many indices for tensor of dimension 2"),
    "too_many_mask": (S3, lambda L: (0, M(L, [True] * 4), slice(None), None, [1]),
                      "too many indices for tensor of dimension 3"),
    "mask_shape": (S2, lambda L: M(L, [True, False]), "The shape of the mask [2] at index 0 does not "
                   "match the shape of the indexed tensor [3, 4] at index 0"),
    "mask_shape_2d": (S2, lambda L: M(L, [[True] * 3] * 3), "The shape of the mask [3, 3] at index 1 "
                      "does not match the shape of the indexed tensor [3, 4] at index 1"),
    "mask_after_int": (S3, lambda L: (0, M(L, [True] * 3)), "The shape of the mask [3] at index 0 does "
                       "not match the shape of the indexed tensor [4, 5] at index 0"),
    "int_oob": (S2, lambda L: 5, "index 5 is out of bounds for dimension 0 with size 3"),
    "int_oob_dim1": (S2, lambda L: (0, 4), "index 4 is out of bounds for dimension 1 with size 4"),
    "int_oob_after_none": (S3, lambda L: (None, 0, 6), "index 6 is out of bounds for dimension 2 with size 4"),
    "int_oob_after_ellipsis": (S3, lambda L: (..., 6), "index 6 is out of bounds for dimension 1 with size 5"),
    "idx_oob": (S2, lambda L: T(L, [0, 5]), "index 5 is out of bounds for dimension 0 with size 3"),
    "idx_oob_second": (S3, lambda L: (slice(None), [0, 1], [0, 9]), "index 9 is out of bounds for dimension 1 with size 5"),
    "idx_oob_after_slice": (S2, lambda L: (slice(None), T(L, [4])), "index 4 is out of bounds for dimension 0 with size 4"),
    "neg_idx_oob": (S3, lambda L: [-4], "index -4 is out of bounds for dimension 0 with size 3"),
    "broadcast": (S3, lambda L: ([0, 1], [0, 1, 2]), "shape mismatch: indexing tensors could not be broadcast "
                  "together with shapes [2], [3]"),
    "float_idx": (S2, lambda L: T(L, [1.0, 0.0]), "tensors used as indices must be long, int, byte or bool tensors"),
    "float_0d": (S2, lambda L: T(L, 1.0), "tensors used as indices must be long, int, byte or bool tensors"),
    "int8_idx": (S2, lambda L: T(L, [1, 0], "int8"), "tensors used as indices must be long, int, byte or bool tensors"),
    "int16_idx": (S2, lambda L: T(L, [1, 0], "int16"), "tensors used as indices must be long, int, byte or bool tensors"),
    "py_float": (S2, lambda L: 1.0, "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                 "Variables are valid indices (got float)"),
    "py_float_in_tuple": (S2, lambda L: (slice(None), 1.0), "valid indices (got float)"),
    "np_bool": (S2, lambda L: np.bool_(True), "valid indices (got numpy.bool)"),
    "negative_step": (S2, lambda L: slice(None, None, -1), "step must be greater than zero"),
    "zero_step": (S2, lambda L: slice(None, None, 0), "slice step cannot be zero"),
    "string": (S2, lambda L: "a", "new(): invalid data type 'str'"),
}


def _leaf(L, shape, dtype="float32"):
    n = int(np.prod(shape)) if shape else 1
    v = (np.arange(n) * 1.5 - 3).reshape(shape).tolist() if shape else 1.5
    return L.tensor(v, dtype=getattr(L, dtype), requires_grad=True)


def _get(L, shape, key):
    x = _leaf(L, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = x[key(L)]
    w = L.tensor(np.resize(np.arange(1.0, 40.0) / 7, tuple(y.shape)).tolist())
    (y * w).sum().backward()
    return y, x.grad, y.grad_fn.name() if y.grad_fn is not None else None


@pytest.mark.parametrize("name", sorted(GET))
def test_getitem_vs_torch(name):
    shape, key = GET[name]
    same(lambda L: _get(L, shape, key))


@pytest.mark.parametrize("name", sorted(GET_ERRORS))
def test_getitem_errors_vs_torch(name):
    shape, key, phrase = GET_ERRORS[name]
    same(lambda L: _get(L, shape, key), phrases=(phrase,))


@pytest.mark.parametrize("name", sorted(k for k in GET if GET[k][0] and k not in ("false", "empty_list")))
def test_getitem_finite_differences(name):
    shape, key = GET[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fdcheck(lambda x: x[key(tg)], [np.array(data(shape, seed=3))])


# torch's layout without torch: an int (or 0-dim int tensor) selects first, so the key equals
# indexing step by step; numpy's rule would move the index dims to the front
SEQUENTIAL = [
    (S3, lambda L: (0, slice(None), L.tensor([0, 2])), lambda L, x: x[0][:, L.tensor([0, 2])]),
    (S3, lambda L: (0, ..., L.tensor([1, 3])), lambda L, x: x[0][..., L.tensor([1, 3])]),
    (S3, lambda L: (L.tensor(1), slice(None), L.tensor([1, 3])), lambda L, x: x[1][:, L.tensor([1, 3])]),
    (S3, lambda L: (0, slice(None), L.tensor([True, False, True, False, True])),
     lambda L, x: x[0][:, L.tensor([0, 2, 4])]),
    (S3, lambda L: (0, None, L.tensor([1, 3])), lambda L, x: x[0].unsqueeze(0)[:, L.tensor([1, 3])]),
    (S4, lambda L: (slice(None), L.tensor([1, 2]), slice(None), 0), lambda L, x: x[..., 0][:, L.tensor([1, 2])]),
    (S4, lambda L: (slice(None), 0, slice(None), L.tensor([1, 3])), lambda L, x: x[:, 0][..., L.tensor([1, 3])]),
    (S2, lambda L: [L.tensor(0), L.tensor(2)], lambda L, x: x[0][2]),
    (S2, lambda L: [[0, 1]], lambda L, x: x[L.tensor([0, 1])]),
    (S2, lambda L: L.tensor([1, 0, 1], dtype=L.uint8), lambda L, x: x[L.tensor([0, 2])]),
]


@pytest.mark.parametrize("case", range(len(SEQUENTIAL)))
def test_int_selects_before_index_tensors_without_torch(case):
    shape, key, seq = SEQUENTIAL[case]
    x = np.array(data(shape, seed=4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = tg.tensor(x)[key(tg)].numpy()
        want = seq(tg, tg.tensor(x)).numpy()
        np.testing.assert_array_equal(got, want)
        fdcheck(lambda t: t[key(tg)], [x])
        # the gradient lands where the values came from
        xt = tg.tensor(x, requires_grad=True)
        xt[key(tg)].sum().backward()
        xs = tg.tensor(x, requires_grad=True)
        seq(tg, xs).sum().backward()
        np.testing.assert_array_equal(xt.grad.numpy(), xs.grad.numpy())


def test_uint8_mask_warns_and_masks():
    def f(L):
        x = L.arange(6.0).reshape(3, 2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = x[L.tensor([1, 0, 1], dtype=L.uint8)]
        return y, [str(m.message)[:40] for m in w], [m.category.__name__ for m in w]
    same(f)


SET = {
    "int_slice_idx": (S3, lambda L: (0, slice(None), L.tensor([0, 2]))),
    "int_ellipsis_idx": (S3, lambda L: (0, ..., L.tensor([1, 3]))),
    "int_slice_mask": (S3, lambda L: (0, slice(None), L.tensor([True, False, True, False, True]))),
    "idx_int_idx": (S3, lambda L: (L.tensor([1, 2]), 0, L.tensor([1, 3]))),
    "int_none_idx": (S3, lambda L: (0, None, L.tensor([1, 3]))),
    "uint8": (S3, lambda L: L.tensor([1, 0, 1], dtype=L.uint8)),
    "nested_list": (S3, lambda L: [[0, 1]]), "list_of_0d": (S3, lambda L: [L.tensor(0), L.tensor(2)]),
    "idx_slice": (S3, lambda L: (L.tensor([2, 0]), slice(1, None))),
    "int_step": (S3, lambda L: (1, slice(None, None, 2))), "none_int": (S3, lambda L: (None, 0)),
    "true": (S3, lambda L: True), "false": (S3, lambda L: False), "int_int_int": (S3, lambda L: (1, 2, 3)),
    "idx_oob": (S3, lambda L: (slice(None), [0, 1], [0, 9])), "int_oob": (S3, lambda L: 5),
    "float_idx": (S3, lambda L: L.tensor([0.0, 1.0])), "float_0d": (S3, lambda L: L.tensor(0.0)),
    "int8_idx": (S3, lambda L: L.tensor([1, 0], dtype=L.int8)), "negative_step": (S3, lambda L: slice(None, None, -1)),
}


def _set(L, shape, key, grad):
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tshape = tuple(torch.zeros(shape)[key(torch)].shape)
        x = L.tensor(np.arange(np.prod(shape), dtype=np.float64).reshape(shape).tolist(), requires_grad=grad)
        z = x * 1 if grad else x
        v = L.tensor((-np.arange(int(np.prod(tshape))) - 1.0).reshape(tshape).tolist(), requires_grad=grad)
        z[key(L)] = v
    if grad:
        (z * L.tensor(np.resize(np.arange(1.0, 70.0) / 9, shape).tolist())).sum().backward()
        return z.detach(), x.grad, v.grad     # (the node's name is the setitem semantics' matter)
    return z


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("name", sorted(SET))
def test_setitem_keys_vs_torch(name, grad):
    pytest.importorskip("torch")
    shape, key = SET[name]
    if name == "false" and grad:
        same(lambda L: _set(L, shape, key, False))    # (no write: v gets no grad in either)
        return
    same(lambda L: _set(L, shape, key, grad))


def test_setitem_int_then_index_without_torch():
    x = np.zeros(S3)
    z = tg.tensor(x)
    v = np.arange(8.0).reshape(4, 2)
    z[0, :, tg.tensor([0, 2])] = tg.tensor(v)
    want = x.copy()
    want[0][:, [0, 2]] = v
    np.testing.assert_array_equal(z.numpy(), want)
    a = tg.tensor(np.arange(60.0).reshape(S3), requires_grad=True)
    b = a * 1
    w = tg.tensor(np.arange(8.0).reshape(4, 2) + 1, requires_grad=True)
    b[1, :, tg.tensor([3, 1])] = w * 2
    (b * b).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), 8 * (np.arange(8.0).reshape(4, 2) + 1))
    ga = 2 * np.arange(60.0).reshape(S3)
    ga[1][:, [3, 1]] = 0
    np.testing.assert_array_equal(a.grad.numpy(), ga)


def test_element_is_a_view():
    def f(L):
        x = L.zeros(2, 3)
        x[0][1].fill_(5.0)
        x[1, 2].add_(7)
        e = x[1, 1]
        x[1, 1] = 3.0
        return x, e, x[1].storage_offset(), x[1, 2].storage_offset(), x.t()[1].storage_offset(), \
            x[:, 1].storage_offset(), x[[1]].storage_offset(), x.view(-1)[4:].storage_offset()
    same(f)


def test_size_ops_give_sizes():
    def f(L):
        s = L.ones(2, 3, 4).shape
        return [type(v).__name__ for v in (s[1:], s[::-1], s + (1,), (1,) + s, s * 2, 2 * s, s + s)], \
            repr(s[1:]), s[1:].numel(), s[0], s + (5,), s == (2, 3, 4)
    same(f)
    with pytest.raises(TypeError):
        tg.Size([1]) + [2]
    import pickle
    s = pickle.loads(pickle.dumps(tg.ones(2, 3).shape))
    assert type(s) is tg.Size and s == (2, 3)


@pytest.mark.parametrize("prog", [
    lambda L: L.ones(2, 3).size(2), lambda L: L.ones(2, 3).size(-3), lambda L: L.ones(2, 3).view(-1, -1),
    lambda L: L.ones(2, 3).reshape(-1, -1), lambda L: L.ones(2, 3).view(-2, 3), lambda L: L.ones(2, 3).reshape(2, -3),
])
def test_size_and_view_errors(prog):
    rt, rg = same(prog)
    assert rt.msg == rg.msg


def test_large_tensor_gathers():
    """x[:, j], x[idx], x[i, ::2], x[i, j] of a bigger tensor: gradients land in place."""
    x = tg.randn(400, 300, requires_grad=True)
    idx = tg.tensor([3, 7, 7])
    for y, n in ((x[:, 5], 400), (x[idx], 900), (x[5, ::2], 150), (x[7, 9], 1)):
        y.sum().backward()
        assert y.numel() == n
    g = x.grad.numpy()
    want = np.zeros((400, 300))
    want[:, 5] += 1
    want[3] += 1
    want[7] += 2
    want[5, ::2] += 1
    want[7, 9] += 1
    np.testing.assert_array_equal(g, want)


@pytest.mark.parametrize("name", sorted(GET))
def test_getitem_node_chain_vs_torch(name):
    """torch chains one node per basic step (SelectBackward0 under SelectBackward0 for x[1, 2],
    IndexBackward0 over them for index tensors); tapegrad's one entry shows the same chain."""
    from oracle import graph
    shape, key = GET[name]

    def f(L):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = _leaf(L, shape)
            y = x[key(L)]
        return graph(y.grad_fn), x.shape
    same(f)


def test_chain_nodes_are_stable_and_lead_to_the_input():
    x = tg.randn(3, 4, 5, requires_grad=True)
    y = x[1:, 0, None, ::2]
    inner = y.grad_fn.next_functions[0][0]
    assert inner is y.grad_fn.next_functions[0][0]
    assert [y.grad_fn.name(), inner.name(), inner.next_functions[0][0].name()] == \
        ["SliceBackward0", "UnsqueezeBackward0", "SelectBackward0"]
    last = inner.next_functions[0][0].next_functions[0][0]
    assert last.name() == "SliceBackward0"
    assert last.next_functions[0][0].variable is x
    z = y * 2                        # a consumer sees the top node
    assert z.grad_fn.next_functions[0][0] is y.grad_fn


@pytest.mark.parametrize("perm", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0)])
@pytest.mark.parametrize("key", [1, -1, slice(1, 3), slice(None, 2), slice(2, None), slice(0, 0)])
def test_rows_of_a_permuted_view_are_offset_rows(perm, key):
    """x.permute(...)[i] and [a:b] select a block of the view's elements in C order, whatever
    the memory layout: recorded as offset rows (no index map); values, gradients, grad_fn,
    double backward and replays as torch's."""
    torch = pytest.importorskip("torch")
    import tapegrad.func as tf
    X = np.random.default_rng(3).random((4, 3, 5))
    w = np.random.default_rng(4).random(torch.tensor(X).permute(*perm)[key].shape)
    a, A = tg.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    p, P = a.permute(*perm)[key], A.permute(*perm)[key]
    np.testing.assert_allclose(p.detach().numpy(), P.detach().numpy())
    assert type(p.grad_fn).__name__ == type(P.grad_fn).__name__
    (g,) = tg.autograd.grad(((p * tg.tensor(w)).sin()).sum(), a, create_graph=True)
    (G,) = torch.autograd.grad(((P * torch.tensor(w)).sin()).sum(), A, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), G.detach().numpy())
    (g * g).sum().backward()
    (G * G).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), A.grad.numpy())

    def f(lib):
        return lambda v: (v.permute(*perm)[key].sin() * 2).sum()
    for x in (X + 0.5, -X):                     # recorded, then replayed on a new input
        np.testing.assert_allclose(tf.grad(f(tg))(tg.tensor(x)).numpy(),
                                   torch.func.grad(f(torch))(torch.tensor(x)).numpy())
    xs = np.stack([X, 2 * X])
    np.testing.assert_allclose(tf.vmap(tf.grad(f(tg)))(tg.tensor(xs)).numpy(),
                               torch.func.vmap(torch.func.grad(f(torch)))(torch.tensor(xs)).numpy())
