"""Matrix products beyond 2-D: batched matmul/bmm, outer, einsum, trace, diag, cross.

``mm`` is the one product row. A batched product (bmm, batched matmul, einsum's contractions)
is one entry eagerly, ``_Bmm`` (an internal custom Function: numpy's batched products forward
and backward, torch's BmmBackward0); inside ``tapegrad.func`` recordings it is one ``mm``
entry per batch element on hidden selections, joined by a hidden stack (replays and vmap's
batched plans see primitive rows only). A product of an N-D tensor with a matrix folds the
batch into rows (one ``mm``), as torch does.
"""
import numpy as np

from ._state import STATE
from .tensor import Tensor, _wrap
from ._record import _mm_core
from ._math import exact
from ._record import hide, named, tap_entry
from ._shape import _concat, expand, index_map, permute
from ._record import as_result
from ._compiled import _blas
from .tensor import _ndarray
from .tensor import int64
from ._shape import _scatter_entry, roll
from ._record import _nm, _out, _src, _tape_for, tap
from ._math import _add_scaled
import builtins
import math
import warnings
from .autograd.function import Function
from .tensor import _type_name
from .tensor import GUARD
from ._core.names import name_id
from ._record import _hide_below
from ._info import _warn_once
from ._math import _owned
from ._reduce import _rt, return_types

# the names of torch's namespace this family defines (tapegrad/__init__.py imports them)
__all__ = ["addmm", "bmm", "cross", "diag", "diag_embed", "diagflat", "dot", "eig", "einsum",
           "frobenius_norm", "ger", "get_float32_matmul_precision", "lstsq", "matmul", "matrix_exp",
           "matrix_rank", "mm", "mv", "nuclear_norm", "outer", "qr", "set_float32_matmul_precision",
           "solve", "svd", "symeig", "tensordot", "trace", "triangular_solve"]


def _matmul_dtype_error(a, b):
    """torch's error for a product of two dtypes: the message names the kernel matmul
    dispatches to (dot, addmv, mm/addmm, bmm)."""
    na, nb = a._data.ndim, b._data.ndim
    ta, tb = a._dtype._tname, b._dtype._tname
    if na == 1 and nb == 1:
        return RuntimeError("dot : expected both vectors to have same dtype, but found %s and %s"
                            % (ta, tb))
    if nb == 1 and na >= 2:
        return RuntimeError("addmv input tensors must have the same dtype, but got %s, %s, and %s"
                            % (tb, ta, tb))
    if nb >= 3:
        return RuntimeError("expected scalar type %s but found %s" % (ta, tb))
    return RuntimeError("expected m1 and m2 to have the same dtype, but got: %s != %s"
                        % (a._dtype._cname, b._dtype._cname))


def _mm_fits(da, db):
    """Whether a 1-D/2-D product's inner sizes agree."""
    return (da.shape[-1] if da.ndim == 2 else da.shape[0]) == db.shape[0]


def _matmul2(input, other):
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        raise TypeError("matmul(): argument 'other' (position 2) must be Tensor")
    a, b = input, other
    da, db = a._data, b._data
    if da.ndim == 0 or db.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are %dD "
                           "and %dD" % (da.ndim, db.ndim))
    if da.ndim > 2 or db.ndim > 2:
        raise NotImplementedError("matmul of tensors with more than 2 dimensions is not supported yet")
    # torch: dot checks the dtypes first, mv / mm the shapes
    if a._dtype is not b._dtype and (da.ndim == 1 and db.ndim == 1 or _mm_fits(da, db)):
        raise _matmul_dtype_error(a, b)
    if da.ndim == 1 and db.ndim == 1:
        if da.shape[0] != db.shape[0]:
            raise RuntimeError("inconsistent tensor size, expected tensor [%d] and src [%d] to "
                               "have the same number of elements, but got %d and %d elements "
                               "respectively" % (da.shape[0], db.shape[0], da.shape[0], db.shape[0]))
        m, k, n, name = 1, da.shape[0], 1, "DotBackward0"
    elif da.ndim == 2 and db.ndim == 1:
        if da.shape[1] != db.shape[0]:
            raise RuntimeError("size mismatch, got input (%d), mat (%dx%d), vec (%d)"
                               % (da.shape[0], da.shape[0], da.shape[1], db.shape[0]))
        m, k, n, name = da.shape[0], da.shape[1], 1, "MvBackward0"
    else:
        a2 = da.shape if da.ndim == 2 else (1, da.shape[0])
        if a2[1] != db.shape[0]:
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                               % (a2[0], a2[1], db.shape[0], db.shape[1]))
        m, k, n = a2[0], a2[1], db.shape[1]
        name = "MmBackward0" if da.ndim == 2 else "SqueezeBackward4"
    if m * k * n >= _blas.MIN and da.ndim == 2 and db.ndim == 2 and a._dtype.slot >= 0 and _blas.OK:
        y = _blas.mm(da, db)                    # (one thread pool: see _blas)
    elif m * k * n >= _blas.ONE_FROM and _blas.AVAILABLE:
        y = _blas.matmul1(da, db)               # (OpenBLAS on one thread: see _blas)
    else:
        y = np.matmul(da, db)
    if type(y) is not _ndarray:
        y = np.asarray(y)[()]
    return _mm_core(a, b, m, k, n, y, name)


def mm(input, mat2):
    if input._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return _matmul2(input, mat2)


def dot(input, other):
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError("1D tensors expected, but got %dD and %dD tensors"
                           % (input._data.ndim, other._data.ndim))
    return _matmul2(input, other)


def mv(input, vec):
    if input._data.ndim != 2 or vec._data.ndim != 1:
        if input._data.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        raise RuntimeError("vector + matrix @ vector expected, got 1, %d, %d"
                           % (input._data.ndim, vec._data.ndim))
    return _matmul2(input, vec)


def _rv(t, shape, name):
    """The product's intermediate ``t`` reshaped as the result (no view: as_result)."""
    return as_result(t, tuple(shape), name)


def _check_dtypes(a, b):
    if a._dtype is not b._dtype:
        raise _matmul_dtype_error(a, b)


class _Bmm(Function):
    """(B, m, k) @ (B, k, n) as one entry (eager): numpy's batched product forward, the
    backward ``ga = g b^T``, ``gb = a^T g`` as two batched products (recorded tensor
    operations under create_graph, differentiable again); torch's BmmBackward0 over
    (a, b), both saved."""

    @staticmethod
    def _node_name_id():
        return _BMM_NAME[0]

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _wrap(np.matmul(a._data, b._data), a._dtype)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        need = ctx.needs_input_grad
        if STATE.enabled:                   # create_graph: recorded
            return (bmm(g, b.transpose(1, 2)) if need[0] else None,
                    bmm(a.transpose(1, 2), g) if need[1] else None)
        gd = g._data
        dt = g._dtype
        return (_wrap(np.matmul(gd, np.swapaxes(b._data, 1, 2)), dt) if need[0] else None,
                _wrap(np.matmul(np.swapaxes(a._data, 1, 2), gd), dt) if need[1] else None)


_BMM_NAME = [None]
FUSED_BMM = [True]      # False: the per-batch-element form everywhere (tests, comparisons)


def _bmm3(a, b, name):
    """(B, m, k) @ (B, k, n): one ``_Bmm`` entry eagerly; inside ``tapegrad.func``
    recordings (``GUARD``: replays and vmap's plans see primitive entries only) and on empty
    batches, one mm entry per batch element (hidden), stacked."""
    B, m, k = a._data.shape
    n = b._data.shape[2]
    if (STATE.enabled and (a._rg or b._rg) and B and FUSED_BMM[0] and GUARD[0] is None
            and a._dtype.slot >= 0 and a._dtype is b._dtype):
        if _BMM_NAME[0] is None:
            _BMM_NAME[0] = name_id("BmmBackward0")
        return _Bmm.apply(a, b)
    y = np.matmul(a._data, b._data)
    if not (STATE.enabled and (a._rg or b._rg)):
        return _wrap(y, a._dtype)
    if B == 0:
        # an empty batch: still a node of a and b (torch's BmmBackward0), whose gradients are
        # empty; recorded as sum(a, -1) * sum(b, -2), shape (0, m, n)
        sa_ = tap_entry(a.sum(-1, keepdim=True), 0)
        sb_ = tap_entry(b.sum(-2, keepdim=True), 1)
        out = sa_ * sb_
        hide(sa_, sb_)
        return exact(named(out, name, 2), y)
    outs = []
    for i in range(B):
        # the selections are taps: torch's node lists (a, b)
        ai = tap_entry(a[i], 0)
        bi = tap_entry(b[i], 1)
        yi = _mm_core(ai, bi, m, k, n, np.matmul(ai._data, bi._data), "MmBackward0")
        hide(yi)
        outs.append(yi)
    if B == 1:
        out = _rv(outs[0], (1, m, n), name)
    else:
        out = _concat(outs, [(1, m, n)] * B, 0, name, taps=False)
    return exact(named(out, name, 2), y)


def bmm(input, mat2):
    a, b = input, mat2
    if a._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if a._data.shape[0] != b._data.shape[0] or a._data.shape[2] != b._data.shape[1]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] "
                           "but got: [%d, %d]." % (a._data.shape[0], a._data.shape[2],
                                                   b._data.shape[0], b._data.shape[1]))
    _check_dtypes(a, b)
    return _bmm3(a, b, "BmmBackward0")


def matmul(input, other):
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        raise TypeError("matmul(): argument 'other' (position 2) must be Tensor, not %s"
                        % type(other).__name__)
    a, b = input, other
    da, db = a._data.ndim, b._data.ndim
    if da <= 2 and db <= 2:
        return _matmul2(a, b)
    sa, sb = a._data.shape, b._data.shape
    if db <= 2 and da >= 3:
        # fold the batch into the rows: one mm
        k = sa[-1]
        kb = sb[0]
        if k != kb:
            rows = int(np.prod(sa[:-1]))
            if db == 1:
                raise RuntimeError("size mismatch, got input (%d), mat (%dx%d), vec (%d)"
                                   % (rows, rows, k, kb))
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                               % (rows, k, sb[0], sb[1]))
        _check_dtypes(a, b)                     # torch: shapes first, then dtypes
        a2 = a.reshape(-1, k)
        y2 = _matmul2(a2, b)
        hide(a2, y2)
        shape = sa[:-1] + ((sb[1],) if db == 2 else ())
        return _rv(y2, shape, "UnsafeViewBackward0")
    # batched: broadcast the batch dimensions
    a_ = a.unsqueeze(0) if da == 1 else a
    b_ = b.unsqueeze(1) if db == 1 else b
    if da == 1:
        hide(a_)
    if db == 1:
        hide(b_)
    sa_, sb_ = a_._data.shape, b_._data.shape
    m, k = sa_[-2], sa_[-1]
    k2, n = sb_[-2], sb_[-1]
    try:
        batch = np.broadcast_shapes(sa_[:-2], sb_[:-2])
    except ValueError:
        raise RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d) at "
                           "non-singleton dimension %d" % (sa_[0], sb_[0], 0))
    if k != k2:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] "
                           "but got: [%d, %d]." % (int(np.prod(batch)), k, int(np.prod(batch)), k2))
    _check_dtypes(a, b)
    B = int(np.prod(batch, dtype=np.int64))
    ae = expand(a_, batch + (m, k)) if sa_[:-2] != batch else a_
    be = expand(b_, batch + (k, n)) if sb_[:-2] != batch else b_
    a3 = ae.reshape(B, m, k)
    b3 = be.reshape(B, k, n)
    y3 = _bmm3(a3, b3, "BmmBackward0")
    hide(ae if ae is not a_ else None, be if be is not b_ else None, a3, b3, y3)
    shape = batch + ((m,) if da != 1 else ()) + ((n,) if db != 1 else ())
    # torch computes a matrix times a batch as a transposed product, copied back (a clone)
    return _rv(y3, shape, "CloneBackward0" if da == 2 else "UnsafeViewBackward0")


def outer(input, vec2):
    if input._data.ndim != 1 or vec2._data.ndim != 1:
        raise RuntimeError("outer: Expected 1-D argument self, but got %d-D" % input._data.ndim)
    a = input.reshape(-1, 1)
    return a * vec2


ger = outer


def trace(input):
    d = input._data
    if d.ndim != 2:
        raise RuntimeError("trace: expected a matrix, but got tensor with dim %d" % d.ndim)
    y = np.trace(d)
    if input._dtype._cat < 2:
        return _wrap(np.asarray(y, np.int64)[()], _int64())
    dg = index_map(input, lambda a: np.diagonal(a).copy(), "DiagonalBackward0", view=False)
    s = dg.sum()
    hide(dg)
    return exact(named(s, "TraceBackward0"), y)


def _int64():
    return int64


def diag(input, diagonal=0):
    d = input._data
    if d.ndim == 1:
        n = d.shape[0] + abs(diagonal)
        y = np.diag(d, diagonal)
        if not (STATE.enabled and input._rg):
            return _wrap(y, input._dtype)
        pos = np.flatnonzero(np.diag(np.ones(d.shape[0], bool), diagonal).reshape(-1))
        tp = _tape_for(input)
        node = _src(input, tp)
        nn = _scatter_entry(tp, node, pos.astype(np.int64), n * n, input._dtype.slot,
                            _nm("DiagEmbedBackward0"), 0)
        return _out(y, input._dtype, tp, nn)
    if d.ndim == 2:
        return index_map(input, lambda a: np.diagonal(a, diagonal).copy(), "DiagonalBackward0_copy",
                         view=False)
    raise RuntimeError("diag(): Supports 1D or 2D tensors. Got %dD" % d.ndim)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """torch.diag_embed: the last dimension of ``input`` becomes the ``offset`` diagonal of the
    matrices spanned by dims ``dim1``, ``dim2`` of the output (zeros elsewhere); recorded as a
    scatter of the input's elements (DiagEmbedBackward0)."""
    d = np.asarray(input._data)
    if d.ndim == 0:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -1)")
    nd = d.ndim + 1
    for dm in (dim1, dim2):
        if not -nd <= dm < nd:
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but "
                             "got %d)" % (-nd, nd - 1, dm))
    a1, a2 = dim1 % nd, dim2 % nd
    if a1 == a2:
        raise RuntimeError("diagonal dimensions cannot be identical %d, %d" % (dim1, dim2))
    m = d.shape[-1] + abs(int(offset))
    shape = list(d.shape[:-1])
    for ax in sorted((a1, a2)):
        shape.insert(ax, m)
    # the output positions of the input's elements: the chosen diagonal of an arange, whose
    # layout (batch dims in order, the diagonal last) is the input's
    pos = np.ascontiguousarray(np.diagonal(np.arange(int(np.prod(shape)), dtype=np.int64)
                                           .reshape(shape), int(offset), a1, a2)).reshape(-1)
    y = np.zeros(shape, d.dtype)
    y.reshape(-1)[pos] = d.reshape(-1)
    if not (STATE.enabled and input._rg):
        return _wrap(y, input._dtype)
    tp = _tape_for(input)
    nn = _scatter_entry(tp, _src(input, tp), pos, y.size, input._dtype.slot,
                        _nm("DiagEmbedBackward0"), 0)
    return _out(y, input._dtype, tp, nn)


def cross(input, other, dim=None):
    if input._data.ndim != other._data.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if dim is None:
        import warnings
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                      "default value of dim will change to agree with that of linalg.cross in a "
                      "future release.", UserWarning, stacklevel=2)
        dims = [i for i, s in enumerate(np.broadcast_shapes(input._data.shape, other._data.shape))
                if s == 3]
        if not dims:
            raise RuntimeError("no dimension of size 3 in input")
        dim = dims[0]
    return linalg_cross(input, other, dim)


def linalg_cross(input, other, dim=-1):
    shape = np.broadcast_shapes(input._data.shape, other._data.shape)
    nd = len(shape)
    ax = dim % nd
    if shape[ax] != 3 or input._data.shape[ax if input._data.ndim == nd else ax] != 3:
        raise RuntimeError("linalg.cross: inputs dimension %d must have length 3. Got %d and %d"
                           % (dim, input._data.shape[dim], other._data.shape[dim]))
    a = expand(input, shape) if input._data.shape != shape else input
    b = expand(other, shape) if other._data.shape != shape else other
    y = np.cross(np.asarray(a._data), np.asarray(b._data), axis=ax)
    if not (STATE.enabled and (a._rg or b._rg)):
        return _wrap(y, a._dtype)
    a1, a2 = roll(a, -1, ax), roll(a, -2, ax)
    b1, b2 = roll(b, -1, ax), roll(b, -2, ax)
    p = a1 * b2
    q = b1 * a2
    out = p - q
    hide(a1, a2, b1, b2, p, q, a if a is not input else None, b if b is not other else None)
    return exact(named(out, "LinalgCrossBackward0"), y)


# ----------------------------------------------------------------------------- einsum
# torch's algorithm (aten einsum + sumproduct_pair), so the graph reads as torch's: every
# operand is aligned to (output dims, contraction dims) by unsqueeze/diagonal/permute, pairs are
# contracted by permute -> reshape -> bmm -> view -> permute (a product when nothing is summed),
# dims held by one operand only are summed first, and a last view drops the contraction dims.
# Three or more operands follow opt_einsum's path when it is installed (as torch does).
_ELL = -1


def _label(c):
    if "A" <= c <= "Z":
        return ord(c) - ord("A")
    if "a" <= c <= "z":
        return ord(c) - ord("a") + 26
    raise RuntimeError("einsum(): invalid subscript given at index %d in the equation string, "
                       "subscripts must be in [a-zA-Z]" % 0)


def _parse_labels(term, what):
    labels = []
    i = 0
    while i < len(term):
        c = term[i]
        if c == ".":
            if term[i:i + 3] != "..." or _ELL in labels:
                raise RuntimeError("einsum(): found '.' for %s that is not part of any ellipsis"
                                   % what)
            labels.append(_ELL)
            i += 3
            continue
        if c == " ":
            i += 1
            continue
        labels.append(_label(c))
        i += 1
    return labels


def _sublist_equation(args):
    """einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) as an equation string."""
    ops = list(args[0::2])
    subs = list(args[1::2])
    out = None
    if len(ops) > len(subs):          # the last element is the output sublist
        out = ops.pop()

    def term(sl):
        r = ""
        for v in sl:
            if v is Ellipsis:
                r += "..."
            elif isinstance(v, int) and 0 <= v < 52:
                r += chr(ord("A") + v) if v < 26 else chr(ord("a") + v - 26)
            else:
                raise RuntimeError("einsum(): expected subscript to be within the range [0, 52), "
                                   "but got %r" % (v,))
        return r
    eq = ",".join(term(sl) for sl in subs)
    if out is not None:
        eq += "->" + term(out)
    return eq, ops


def _torch_reshape(t, shape):
    """torch's reshape node: ViewBackward0 (contiguous), ReshapeAliasBackward0 (a view of a
    non-contiguous tensor), CloneBackward0 + UnsafeViewBackward0 (a copy)."""
    return t.reshape(tuple(int(v) for v in shape))


def _sumproduct_pair(left, right, sum_dims):
    """(left * right).sum(sum_dims, keepdim=True) as torch computes it (bmm)."""
    if not sum_dims:
        return left * right
    if left._dtype is not right._dtype and (left._data.size == 0 or right._data.size == 0):
        # torch: an empty pair of mixed dtypes is not refused (bmm is skipped), the result
        # has the right operand's dtype
        left = left.to(right._dtype)
    dim = left._data.ndim
    sl_ = left._data.shape
    sr_ = right._data.shape
    sdset = set(sum_dims)
    lro, lo, ro = [], [], []
    lro_size = lo_size = ro_size = sum_size = 1
    for i in range(dim):
        sl, sr = sl_[i] != 1, sr_[i] != 1
        if i in sdset:
            if sl and sr:
                if sl_[i] != sr_[i]:
                    raise RuntimeError("einsum(): operands do not broadcast with remapped shapes "
                                       "(original->remapped): %s and %s" % (list(sl_), list(sr_)))
                sum_size *= sl_[i]
            elif sl:
                left = left.sum(i, keepdim=True)
            elif sr:
                right = right.sum(i, keepdim=True)
        elif sl and sr:
            if sl_[i] != sr_[i]:
                raise RuntimeError("einsum(): operands do not broadcast with remapped shapes "
                                   "(original->remapped): %s and %s" % (list(sl_), list(sr_)))
            lro.append(i)
            lro_size *= sl_[i]
        elif sl:
            lo.append(i)
            lo_size *= sl_[i]
        else:
            ro.append(i)
            ro_size *= sr_[i]
    if lo and ro and ro[-1] < lo[0]:
        # torch swaps the operands so that bmm writes the output in its memory order
        left, right, lo, ro, lo_size, ro_size = right, left, ro, lo, ro_size, lo_size
        sl_, sr_ = sr_, sl_
    out_size = [sl_[d] for d in lro] + [sl_[d] for d in lo] + [1] * len(sum_dims) + \
        [sr_[d] for d in ro]
    lperm = lro + lo + list(sum_dims) + ro
    rperm = lro + list(sum_dims) + ro + lo
    operm = [-1] * len(out_size)
    for i, d in enumerate(lro + lo + list(sum_dims) + ro):
        operm[d] = i
    a3 = _torch_reshape(permute(left, lperm), (lro_size, lo_size, sum_size))
    b3 = _torch_reshape(permute(right, rperm), (lro_size, sum_size, ro_size))
    r = bmm(a3, b3)
    r = r.view(tuple(out_size))
    return permute(r, operm)


def _opt_path(equation, operands):
    try:
        import opt_einsum
    except ImportError:
        return None
    path = opt_einsum.contract_path(equation, *[np.empty(t._data.shape, np.float32)
                                                for t in operands], optimize="auto")[0]
    return [tuple(p) for p in path]


def einsum(*args):
    if args and isinstance(args[0], Tensor):
        equation, operands = _sublist_equation(args)
    else:
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    operands = list(operands)
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    for t in operands:
        if not isinstance(t, Tensor):
            raise TypeError("einsum(): argument 'operands' must be tuple of Tensors, not %s"
                            % type(t).__name__)
    eq = equation.replace(" ", "")
    arrow = eq.find("->")
    lhs = eq if arrow < 0 else eq[:arrow]
    terms = lhs.split(",")
    if len(terms) < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if len(terms) > len(operands):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    op_labels = [_parse_labels(tm, "operand %d" % i) for i, tm in enumerate(terms)]
    nops = len(operands)
    TOTAL = 52
    label_count = [0] * TOTAL
    ell_num_dim = 0
    for i, labels in enumerate(op_labels):
        ndims = operands[i]._data.ndim
        nlabels = len(labels) - (1 if _ELL in labels else 0)
        for lb in labels:
            if lb != _ELL:
                label_count[lb] += 1
        if _ELL in labels:
            if nlabels > ndims:
                raise RuntimeError("einsum(): the number of subscripts in the equation (%d) is more "
                                   "than the number of dimensions (%d) for operand %d"
                                   % (nlabels, ndims, i))
            ell_num_dim = max(ell_num_dim, ndims - nlabels)
        elif nlabels != ndims:
            raise RuntimeError("einsum(): the number of subscripts in the equation (%d) does not "
                               "match the number of dimensions (%d) for operand %d and no ellipsis "
                               "was given" % (nlabels, ndims, i))
    label_perm = [-1] * TOTAL
    perm_index = 0
    ell_index = 0
    has_ell = False
    if arrow < 0:
        perm_index = ell_num_dim
        has_ell = True
        for lb in range(TOTAL):
            if label_count[lb] == 1:
                label_perm[lb] = perm_index
                perm_index += 1
    else:
        for lb in _parse_labels(eq[arrow + 2:], "the output"):
            if lb == _ELL:
                ell_index = perm_index
                perm_index += ell_num_dim
                has_ell = True
                continue
            c = chr(ord("A") + lb) if lb < 26 else chr(ord("a") + lb - 26)
            if label_count[lb] == 0:
                raise RuntimeError("einsum(): output subscript %s does not appear in the equation "
                                   "for any input operand" % c)
            if label_perm[lb] != -1:
                raise RuntimeError("einsum(): output subscript %s appears more than once in the "
                                   "output" % c)
            label_perm[lb] = perm_index
            perm_index += 1
    out_num_dim = perm_index
    if not has_ell:
        ell_index = perm_index
        perm_index += ell_num_dim
    for lb in range(TOTAL):
        if label_count[lb] > 0 and label_perm[lb] == -1:
            label_perm[lb] = perm_index
            perm_index += 1
    # align every operand to the permuted shape (output dims, then contraction dims)
    ops = []
    for i, labels in enumerate(op_labels):
        perm_shape = [-1] * perm_index
        label_dim = [-1] * TOTAL
        t = operands[i]
        nd0 = t._data.ndim
        j = 0
        for lb in labels:
            if lb == _ELL:
                missing = ell_num_dim - (nd0 - len(labels) + 1)
                for _ in range(missing):
                    t = t.unsqueeze(j)
                for k in range(ell_num_dim):
                    perm_shape[ell_index + k] = j
                    j += 1
            elif label_dim[lb] != -1:
                d = label_dim[lb]
                if t._data.shape[j] != t._data.shape[d]:
                    c = chr(ord("A") + lb) if lb < 26 else chr(ord("a") + lb - 26)
                    raise RuntimeError("einsum(): subscript %s is repeated for operand %d but the "
                                       "sizes don't match, %d != %d"
                                       % (c, i, t._data.shape[j], t._data.shape[d]))
                t = t.diagonal(0, d, j).movedim(-1, d)
            else:
                label_dim[lb] = j
                perm_shape[label_perm[lb]] = j
                j += 1
        for k in range(perm_index):
            if perm_shape[k] == -1:
                t = t.unsqueeze(-1)
                perm_shape[k] = j
                j += 1
        ops.append(permute(t, perm_shape))
    if nops == 1:
        t = ops[0]
        if perm_index - out_num_dim > 0:
            t = t.sum(tuple(range(out_num_dim, perm_index)))
        return t
    # broadcast check of the aligned operands
    for k in range(perm_index):
        sizes = {o._data.shape[k] for o in ops} - {1}
        if len(sizes) > 1:
            raise RuntimeError("einsum(): operands do not broadcast with remapped shapes "
                               "(original->remapped): %s" % ", ".join(
                                   "%s->%s" % (list(a._data.shape), list(o._data.shape))
                                   for a, o in zip(operands, ops)))
    dim_counts = [0] * perm_index
    for k in range(out_num_dim, perm_index):
        for o in ops:
            if o._data.shape[k] != 1:
                dim_counts[k] += 1
    path = _opt_path(eq, operands) if nops >= 3 else None
    step = 0
    while len(ops) > 1:
        i, j = 0, 1
        if path is not None:
            i, j = sorted(path[step])
            step += 1
        a, b = ops[i], ops[j]
        del ops[j]
        del ops[i]
        sum_dims, a_sum, b_sum = [], [], []
        for k in range(out_num_dim, perm_index):
            if a._data.shape[k] != 1 and b._data.shape[k] != 1:
                dim_counts[k] -= 1
                if dim_counts[k] == 1:
                    sum_dims.append(k)
                    dim_counts[k] = 0
            elif dim_counts[k] == 1:
                if a._data.shape[k] != 1:
                    a_sum.append(k)
                    dim_counts[k] = 0
                elif b._data.shape[k] != 1:
                    b_sum.append(k)
                    dim_counts[k] = 0
        if a_sum:
            a = a.sum(tuple(a_sum), keepdim=True)
        if b_sum:
            b = b.sum(tuple(b_sum), keepdim=True)
        r = _sumproduct_pair(a, b, sum_dims)
        if path is not None:
            ops.append(r)
        else:
            ops.insert(0, r)
    t = ops[0]
    if perm_index - out_num_dim > 0:
        t = t.view(t._data.shape[:out_num_dim])
    return t


def tensordot(a, b, dims=2):
    if isinstance(dims, int):
        da = list(range(a._data.ndim - dims, a._data.ndim))
        db = list(range(dims))
    else:
        da, db = (list(d) if isinstance(d, (list, tuple)) else [d] for d in dims)
    letters = "abcdefghijklmnopqrstuvwxyz"
    la = list(letters[:a._data.ndim])
    lb = list(letters[a._data.ndim:a._data.ndim + b._data.ndim])
    for i, j in zip(da, db):
        lb[j] = la[i]
    out = [c for c in la if c not in lb] + [c for c in lb if c not in la]
    return einsum("%s,%s->%s" % ("".join(la), "".join(lb), "".join(out)), a, b)


def _install(Tensor):
    Tensor.bmm = bmm
    Tensor.matmul = matmul
    Tensor.__matmul__ = matmul
    Tensor.__rmatmul__ = lambda self, other: matmul(other, self)
    Tensor.outer = outer
    Tensor.ger = outer
    Tensor.trace = trace
    Tensor.diag = diag
    Tensor.diag_embed = diag_embed
    Tensor.cross = cross




def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta * input + alpha * mat1 @ mat2: one AddmmBackward0 node over (input, mat1, mat2)
    (a mat2 that needs no grad is a None slot, as torch's)."""
    return _add_scaled(input, tap(mat1, 1).mm(tap(mat2, 2)), beta, alpha, "AddmmBackward0",
                       (input, mat1, mat2))


def _install_extra(Tensor):
    Tensor.addmm = addmm




class TensorMethods:
    """Tensor methods of this module, attached by tapegrad/_methods.py."""

    def mm(self, other):
        return mm(self, other)

    def dot(self, other):
        return dot(self, other)

    def mv(self, other):
        return mv(self, other)


# ----------------------------------------------------------------------------- matrix_exp, diagflat, torch's old linalg names, matmul precision
def _torch():
    import tapegrad     # the torch namespace: the bodies below call T.<name> (KNOWN_UPWARD)
    return tapegrad


def _expm_np(a):
    """exp of (a batch of) square matrices: scaling and squaring with a degree-18 Taylor
    polynomial on A / 2^s, ||A / 2^s||_1 <= 1/2 (remainder < 1e-22 relative), in float64."""
    a = np.asarray(a, np.float64)
    n = a.shape[-1]
    if a.size == 0:
        return a.copy()
    nrm = np.abs(a).sum(-2).max(-1)               # 1-norm per matrix
    if nrm.ndim and not np.isfinite(nrm).all():   # (each matrix on its own: nan only there)
        out, ok = np.full(a.shape, np.nan), np.isfinite(nrm)
        if ok.any():
            out[ok] = _expm_np(a[ok])
        return out
    nrm = np.max(nrm) if nrm.ndim else nrm
    if not np.isfinite(nrm):
        return np.full(a.shape, np.nan)
    s = int(max(0, math.ceil(math.log2(nrm / 0.5)))) if nrm > 0.5 else 0
    b = a / (2.0 ** s)
    eye = np.broadcast_to(np.eye(n), a.shape)
    term = eye.copy()
    out = eye.copy()
    for k in range(1, 19):
        term = term @ b / k
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def _matrix_exp_check(A):
    if A._data.ndim < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 dimensions.")
    if A._data.shape[-1] != A._data.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices, but they are "
                           "%d by %d matrices" % A._data.shape[-2:])
    if not A._dtype.is_floating_point:
        raise RuntimeError("linalg.matrix_exp: Expected a floating point or complex tensor as "
                           "input. Got %s" % A._dtype._tname)


_FN = {}


def _matrix_exp_fn():
    f = _FN.get("mexp")
    if f is None:

        class LinalgMatrixExp(Function):
            @staticmethod
            def forward(ctx, A):
                ctx.save_for_backward(A)
                return _wrap(np.asarray(_expm_np(A._data), A._dtype.np), A._dtype)

            @staticmethod
            def backward(ctx, g):
                # d exp(A) adjoint: the top-right block of exp([[A^T, G], [0, A^T]])
                (A,) = ctx.saved_tensors
                T = _torch()
                n = A._data.shape[-1]
                At = A.transpose(-2, -1)
                z = T.zeros_like(At)
                big = T.cat([T.cat([At, g], -1), T.cat([z, At], -1)], -2)
                return matrix_exp(big)[..., :n, n:]

        f = _FN["mexp"] = LinalgMatrixExp
    return f


def matrix_exp(A):
    if not isinstance(A, Tensor):
        raise TypeError("linalg_matrix_exp(): argument 'input' (position 1) must be Tensor, not %s"
                        % _type_name(A))
    _matrix_exp_check(A)
    return named(_matrix_exp_fn().apply(A), "LinalgMatrixExpBackward0")


def diagflat(input, offset=0):
    return diag_embed(input.reshape(-1), offset)


return_types.svd = _rt("svd", ("U", "S", "V"))


return_types.qr = _rt("qr", ("Q", "R"))


def svd(input, some=True, compute_uv=True):
    """torch.svd: (U, S, V) with V (not V^H); ``some``: the reduced factors."""
    T = _torch()
    m, n = input._data.shape[-2:]
    b = input._data.shape[:-2]
    if not compute_uv:
        S = T.linalg.svdvals(input)
        return return_types.svd(T.zeros(*b, m, m, dtype=input.dtype), S,
                                T.zeros(*b, n, n, dtype=input.dtype))
    if some or m == n or not (STATE.enabled and input._rg):
        U, S, Vh = T.linalg.svd(input, full_matrices=not some)
        return return_types.svd(U, S, Vh.transpose(-2, -1))
    # some=False with gradients: the reduced factors carry them; the completing columns are
    # constants (torch ignores gradients on U[..., min(m, n):] and V[..., min(m, n):])
    U, S, Vh = T.linalg.svd(input, full_matrices=False)
    with T.no_grad():
        Uf, _, Vhf = T.linalg.svd(input.detach(), full_matrices=True)
    k = builtins.min(m, n)
    V = Vh.transpose(-2, -1)
    if m > n:
        U = T.cat([U, Uf[..., k:]], -1)
        _hide_below(U, input)
        named(U, "LinalgSvdBackward0")
    else:
        V = T.cat([V, Vhf.transpose(-2, -1)[..., k:]], -1)
        _hide_below(V, input)
        named(V, "TransposeBackward0")
    return return_types.svd(U, S, V)


def qr(input, some=True):
    T = _torch()
    _warn_once("qr", "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
               "future PyTorch release.\nThe boolean parameter 'some' has been replaced with a "
               "string parameter 'mode'.\nQ, R = torch.qr(A, some)\nshould be replaced with\n"
               "Q, R = torch.linalg.qr(A, 'reduced' if some else 'complete')")
    Q, R = T.linalg.qr(input, "reduced" if some else "complete")
    return return_types.qr(Q, R)


return_types.triangular_solve = _rt("triangular_solve", ("solution", "cloned_coefficient"))


def _tri_fn():
    f = _FN.get("tri")
    if f is None:

        def forward(ctx, b, A, upper, transpose, unitriangular):
            T = _torch()
            with T.no_grad():
                At = A.transpose(-2, -1) if transpose else A
                X = T.linalg.solve_triangular(At, b, upper=upper != transpose,
                                              unitriangular=unitriangular)
            ctx.save_for_backward(A, X)
            ctx.flags = (upper, transpose, unitriangular)
            return X

        def backward(ctx, g):
            # op(A) X = B:  gB = op(A)^-T g;  g op(A) = -gB X^T, masked to A's triangle
            T = _torch()
            A, X = ctx.saved_tensors
            upper, transpose, unit = ctx.flags
            At = A.transpose(-2, -1) if transpose else A
            gB = T.linalg.solve_triangular(At.transpose(-2, -1), g, upper=upper == transpose,
                                           unitriangular=unit)
            gA = None
            if ctx.needs_input_grad[1]:
                gop = -(gB @ X.transpose(-2, -1))
                gA = gop.transpose(-2, -1) if transpose else gop
                gA = gA.triu(1 if unit else 0) if upper else gA.tril(-1 if unit else 0)
            return gB, gA, None, None, None

        f = _FN["tri"] = type("TriangularSolve", (Function,),
                              {"forward": staticmethod(forward),
                               "backward": staticmethod(backward)})
    return f


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """torch.triangular_solve (deprecated): (solution of op(A) X = input, a copy of A)."""
    _warn_once("tri", "torch.triangular_solve is deprecated in favor of "
               "torch.linalg.solve_triangular and will be removed in a future PyTorch release.\n"
               "torch.linalg.solve_triangular has its arguments reversed and does not return a "
               "copy of one of the inputs.\nX = torch.triangular_solve(B, A).solution\nshould be "
               "replaced with\nX = torch.linalg.solve_triangular(A, B).")
    if input._data.ndim < 2 or A._data.ndim < 2:
        raise RuntimeError("torch.triangular_solve: The input tensor %s must have at least 2 "
                           "dimensions." % ("b" if input._data.ndim < 2 else "A"))
    X = named(_tri_fn().apply(input, A, upper, transpose, unitriangular),
              "TriangularSolveBackward0")
    # (torch's copy of A is output 1 of the same node; here a clone under that name. Its
    # gradient reaches A only: with only b requiring grad it still requires grad, and gives b
    # none)
    if A._rg or not (input._rg and STATE.enabled):
        M = A.clone()
    else:
        M = _CopyOfA.apply(input, A.detach())
    return return_types.triangular_solve(X, named(M, "TriangularSolveBackward0"))


class _CopyOfA(Function):
    """triangular_solve's cloned_coefficient when only b requires grad: a copy of A's values,
    a node over b that passes it no gradient."""

    @staticmethod
    def forward(ctx, b, a):
        return _wrap(np.array(a._data), a._dtype)

    @staticmethod
    def backward(ctx, g):
        return None, None


def _removed(name, msg):
    def f(*args, **kw):
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed. "
                           + msg)
    f.__name__ = name
    return f


_REMOVED = {
    "solve": "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` "
             "has its arguments reversed and does not return the LU factorization.",
    "eig": "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than "
           "real tensors mimicking complex tensors.",
    "symeig": "The default behavior has changed from using the upper triangular portion of the "
              "matrix by default to using the lower triangular portion.",
    "lstsq": "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` "
             "has reversed arguments and does not return the QR decomposition in the returned "
             "tuple (although it returns other information about the problem).",
    "matrix_rank": "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
                   "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
}


_MATMUL = ["highest"]


def frobenius_norm(input, dim=(-2, -1), keepdim=False):
    _warn_once("fro", "at::frobenius_norm is deprecated and it is just left for JIT "
               "compatibility. It will be removed in a future PyTorch release. Please use "
               "`linalg.vector_norm(A, 2., dim, keepdim)` instead")
    return _torch().linalg.vector_norm(input, 2, dim=dim, keepdim=keepdim)


def nuclear_norm(input, dim=(-2, -1), keepdim=False):
    _warn_once("nuc", "at::nuclear_norm is deprecated and it is just left for JIT "
               "compatibility. It will be removed in a future PyTorch release. Please use "
               "`linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead")
    return _torch().linalg.matrix_norm(input, "nuc", dim=dim, keepdim=keepdim)


def _set_matmul_precision(precision):
    if precision in ("highest", "high", "medium"):
        _MATMUL[0] = precision
    else:
        warnings.warn("%s is not one of 'highest', 'high', or 'medium'; the current"
                      "setFloat32MatmulPrecision call has no effect." % precision, UserWarning,
                      stacklevel=2)     # (float32 matmuls stay exact: numpy has one precision)


solve, eig, symeig, lstsq, matrix_rank = (
    _removed(nm, _REMOVED[nm]) for nm in ("solve", "eig", "symeig", "lstsq", "matrix_rank"))


def get_float32_matmul_precision():
    return _MATMUL[0]


set_float32_matmul_precision = _set_matmul_precision


def _install_composed(Tensor):
    T = _torch()
    Tn = Tensor
    Tn.matrix_exp = matrix_exp
    Tn.diagflat = diagflat
    Tn.addmm_ = lambda self, mat1, mat2, *, beta=1, alpha=1: self._inplace(
        mat1, lambda s, o: T.addmm(_owned(s), mat1, mat2, beta=beta, alpha=alpha))
    Tn.svd, Tn.qr = svd, qr
    Tn.triangular_solve = triangular_solve
    for nm, msg in _REMOVED.items():
        if nm != "matrix_rank":
            setattr(Tn, nm, _removed(nm, msg))
    Tn.cholesky_inverse = lambda self, upper=False: T.cholesky_inverse(self, upper)
