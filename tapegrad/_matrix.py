"""Matrix products beyond 2-D: batched matmul/bmm, outer, einsum, trace, diag, cross.

``mm`` is the one product row; a batched product is one ``mm`` entry per batch element on
hidden selections, joined by a hidden stack (torch's BmmBackward0 / UnsafeViewBackward0 on
top). A product of an N-D tensor with a matrix folds the batch into rows (one ``mm``), as
torch does.
"""
import numpy as np

from .autograd.grad_mode import STATE
from .tensor import Tensor, _mm_core, _wrap, matmul as _matmul2
from ._math import exact, hide, named
from ._shape import _reshape_view, expand, index_map, permute, stack


def _rv(t, shape, name):
    return _reshape_view(t, tuple(shape), name)


def _check_dtypes(a, b):
    if a._dtype is not b._dtype:
        raise RuntimeError("expected m1 and m2 to have the same dtype, but got: %s != %s"
                           % (a._dtype.name, b._dtype.name))


def _bmm3(a, b, name):
    """(B, m, k) @ (B, k, n) by one mm entry per batch element (hidden), stacked."""
    B, m, k = a._data.shape
    n = b._data.shape[2]
    y = np.matmul(a._data, b._data)
    if not (STATE.enabled and (a._rg or b._rg)):
        return _wrap(y, a._dtype)
    if B == 0:
        return _wrap(y, a._dtype)
    outs = []
    for i in range(B):
        ai = a[i]
        bi = b[i]
        yi = _mm_core(ai, bi, m, k, n, np.matmul(ai._data, bi._data), "MmBackward0")
        hide(ai, bi, yi)
        outs.append(yi)
    if B == 1:
        out = _rv(outs[0], (1, m, n), name)
    else:
        out = stack(outs)
        named(out, name)
    return exact(out, y)


def bmm(input, mat2):
    a, b = input, mat2
    if a._data.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b._data.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _check_dtypes(a, b)
    if a._data.shape[0] != b._data.shape[0] or a._data.shape[2] != b._data.shape[1]:
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: [%d, %d] "
                           "but got: [%d, %d]." % (a._data.shape[0], a._data.shape[2],
                                                   b._data.shape[0], b._data.shape[1]))
    return _bmm3(a, b, "BmmBackward0")


def matmul(input, other):
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        raise TypeError("matmul(): argument 'other' (position 2) must be Tensor, not %s"
                        % type(other).__name__)
    a, b = input, other
    da, db = a._data.ndim, b._data.ndim
    if da <= 2 and db <= 2:
        return _matmul2(a, b)
    _check_dtypes(a, b)
    sa, sb = a._data.shape, b._data.shape
    if db <= 2 and da >= 3:
        # fold the batch into the rows: one mm
        k = sa[-1]
        kb = sb[0]
        if k != kb:
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %s)"
                               % (int(np.prod(sa[:-1])), k, "x".join(map(str, sb)) if db == 2
                                  else "%dx1" % sb[0]))
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
    from .tensor import int64
    return int64


def diag(input, diagonal=0):
    d = input._data
    if d.ndim == 1:
        n = d.shape[0] + abs(diagonal)
        y = np.diag(d, diagonal)
        if not (STATE.enabled and input._rg):
            return _wrap(y, input._dtype)
        pos = np.flatnonzero(np.diag(np.ones(d.shape[0], bool), diagonal).reshape(-1))
        from ._shape import _scatter_entry
        from .tensor import _out, _src, _tape_for, _nm
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
    if input._data.ndim == 1 and offset == 0:
        return named(diag(input), "DiagEmbedBackward0")
    raise NotImplementedError("diag_embed beyond 1-D input is not supported yet")


def cross(input, other, dim=None):
    if dim is None:
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
    from ._shape import roll
    a1, a2 = roll(a, -1, ax), roll(a, -2, ax)
    b1, b2 = roll(b, -1, ax), roll(b, -2, ax)
    p = a1 * b2
    q = b1 * a2
    out = p - q
    hide(a1, a2, b1, b2, p, q, a if a is not input else None, b if b is not other else None)
    return exact(named(out, "LinalgCrossBackward0"), y)


# ----------------------------------------------------------------------------- einsum
def _parse(eq, nops):
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->")
    else:
        lhs, out = eq, None
    ins = lhs.split(",")
    if len(ins) != nops:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation"
                           if nops > len(ins) else
                           "einsum(): fewer operands were provided than specified in the equation")
    if any("." in s for s in ins) or (out is not None and "." in out):
        raise NotImplementedError("einsum with '...' is not supported yet")
    if out is None:
        letters = "".join(ins)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return ins, out


def _diag_letters(t, lab):
    """Take diagonals for letters repeated within one operand ('ii' -> 'i')."""
    while len(set(lab)) != len(lab):
        for c in lab:
            if lab.count(c) > 1:
                i = lab.index(c)
                j = lab.index(c, i + 1)
                t = index_map(t, lambda a, i=i, j=j: np.moveaxis(np.diagonal(a, 0, i, j), -1, i),
                              "DiagonalBackward0", view=False)
                lab = lab[:j] + lab[j + 1:]
                break
    return t, lab


def _sum_letters(t, lab, keep):
    dims = [i for i, c in enumerate(lab) if c not in keep]
    if dims:
        t = t.sum(tuple(dims))
        lab = "".join(c for c in lab if c in keep)
    return t, lab


def _contract(a, la, b, lb, keep):
    """Contract two labelled operands over shared letters not in ``keep``."""
    batch = [c for c in la if c in lb and c in keep]
    contr = [c for c in la if c in lb and c not in keep]
    fa = [c for c in la if c not in lb]
    fb = [c for c in lb if c not in la]
    sizes = {}
    for t, lab in ((a, la), (b, lb)):
        for c, s in zip(lab, t._data.shape):
            sizes[c] = s
    pa = [la.index(c) for c in batch + fa + contr]
    pb = [lb.index(c) for c in batch + contr + fb]
    at = permute(a, pa) if pa != list(range(len(la))) else a
    bt = permute(b, pb) if pb != list(range(len(lb))) else b
    nb = int(np.prod([sizes[c] for c in batch], dtype=np.int64))
    nfa = int(np.prod([sizes[c] for c in fa], dtype=np.int64))
    nc = int(np.prod([sizes[c] for c in contr], dtype=np.int64))
    nfb = int(np.prod([sizes[c] for c in fb], dtype=np.int64))
    a3 = at.reshape(nb, nfa, nc)
    b3 = bt.reshape(nb, nc, nfb)
    if nb == 1:
        y = _matmul2(a3.reshape(nfa, nc), b3.reshape(nc, nfb))
    else:
        y = bmm(a3, b3)
    out = y.reshape(tuple(sizes[c] for c in batch + fa + fb))
    return out, "".join(batch + fa + fb)


def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ins, out = _parse(equation, len(operands))
    ts = []
    for t, lab in zip(operands, ins):
        if len(lab) != t._data.ndim:
            raise RuntimeError("einsum(): the number of subscripts in the equation (%d) does not "
                               "match the number of dimensions (%d) for operand %d"
                               % (len(lab), t._data.ndim, len(ts)))
        t, lab = _diag_letters(t, lab)
        ts.append((t, lab))
    # sum letters that appear in one operand only and not in the output
    for i, (t, lab) in enumerate(ts):
        others = out + "".join(l2 for j, (_, l2) in enumerate(ts) if j != i)
        ts[i] = _sum_letters(t, lab, others)
    t, lab = ts[0]
    for i in range(1, len(ts)):
        later = "".join(l2 for _, l2 in ts[i + 1:])
        t, lab = _contract(t, lab, ts[i][0], ts[i][1], out + later)
    t, lab = _sum_letters(t, lab, out)
    if lab != out:
        t = permute(t, [lab.index(c) for c in out])
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


def _install():
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


_install()


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    p = mat1.mm(mat2)
    if alpha != 1:
        hide(p)
        p = p * alpha
    b = input if beta == 1 else input * beta
    out = b + p if beta == 1 else p + b
    hide(p)
    return named(out, "AddmmBackward0")


def _install_extra():
    Tensor.addmm = addmm


_install_extra()
