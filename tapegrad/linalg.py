"""torch.linalg: norms, cross, det, inv, solve."""
import numpy as np

from ._reduce import vector_norm  # noqa: F401


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """linalg.norm as torch: a matrix norm (``matrix_norm``) when ord is given and dim has two
    entries or is None on a 2-D input, or ord is a string; a vector norm otherwise (ord None:
    the 2-norm of the flattened input)."""
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               "Got %s" % dims)
    elif ord is not None and A._data.ndim not in (1, 2):
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be 1D "
                           "or 2D. Got %dD." % A._data.ndim)
    if isinstance(ord, str):
        return matrix_norm(A, ord, (0, 1) if dim is None else dims, keepdim, dtype=dtype)
    if ord is not None and ((dim is not None and len(dims) == 2) or
                            (dim is None and A._data.ndim == 2)):
        return matrix_norm(A, ord, (0, 1) if dim is None else dims, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def _matrix_dims(A, dim):
    nd = A._data.ndim
    if nd < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    if len(dim) != 2:
        raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got %s"
                           % " ".join(str(d) for d in dim))
    d = []
    for v in dim:
        if not -nd <= v < nd:
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got "
                             "%d)" % (-nd, nd - 1, v))
        d.append(v % nd)
    if d[0] == d[1]:
        raise RuntimeError("linalg.matrix_norm: dims must be different. Got (%d, %d)"
                           % (dim[0], dim[1]))
    if not A._dtype.is_floating_point:
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as "
                           "input. Got %s" % A._dtype._tname)
    return d


def _backshift(d0, d1, nd):
    return [i for i in range(nd) if i not in (d0, d1)] + [d0, d1]


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, out=None, dtype=None):
    """torch's linalg.matrix_norm: 'fro' (a vector 2-norm over both dims), 'nuc' (the sum of the
    singular values), 2 / -2 (the largest / smallest singular value), 1 / -1 (max / min column
    sum of |A|), inf / -inf (max / min row sum), composed as torch does (vector_norm, amax/amin,
    svdvals), so the graph reads as torch's."""
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError("linalg.matrix_norm: Order %s not supported." % ord)
    else:
        o = float(ord)
        if abs(o) not in (1.0, 2.0, float("inf")):
            raise RuntimeError("linalg.matrix_norm: Order %s not supported." % _fmt_ord(ord))
    d = _matrix_dims(A, list(dim))
    if dtype is not None:
        A = A.to(dtype)
    nd = A._data.ndim
    if ord == "fro":
        return vector_norm(A, 2, tuple(d), keepdim)
    if ord == "nuc" or abs(o) == 2.0:
        from ._shape import permute
        perm = _backshift(d[0], d[1], nd)
        s = svdvals(permute(A, perm))
        if ord == "nuc":
            r = s.sum(-1, keepdim=keepdim)
        else:
            r = s.amax(-1, keepdim) if o > 0 else s.amin(-1, keepdim)
        if keepdim:
            inv = [perm.index(i) for i in range(nd)]
            r = permute(r.unsqueeze(-1), inv)
        return r
    # 1 / inf: vector 1-norms along one dim, then the max (min) over the other
    d0, d1 = (d[1], d[0]) if abs(o) == float("inf") else (d[0], d[1])
    if not keepdim and d0 < d1:
        d1 -= 1
    v = vector_norm(A, 1.0, d0, keepdim)
    return v.amax(d1, keepdim) if o > 0 else v.amin(d1, keepdim)


def _fmt_ord(o):
    return ("%g" % o) if isinstance(o, float) else str(o)


def svdvals(A, *, driver=None, out=None):
    """The singular values (descending) of the matrices in A; gradient U diag(g) V^H (torch's
    LinalgSvdBackward0; the singular vectors are constants of the backward, so second-order
    derivatives through svdvals are not exact)."""
    if A._data.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    if not A._dtype.is_floating_point:
        raise RuntimeError("linalg.svd: Expected a floating point or complex tensor as input. "
                           "Got %s" % A._dtype._tname)
    u, s_, vh = _fn(3).apply(A)
    return _name(s_, "LinalgSvdBackward0")


def cross(input, other, *, dim=-1):
    from ._matrix import linalg_cross
    return linalg_cross(input, other, dim)


# ----------------------------------------------------------------------------- det / inv / solve
# Custom Functions whose backward is written with tapegrad operations on the saved inputs, so
# create_graph=True differentiates through it (higher order).
def _funcs():
    from .autograd.function import Function
    from .tensor import _wrap

    class LinalgInv(Function):
        @staticmethod
        def forward(ctx, A):
            ctx.save_for_backward(A)
            try:
                y = np.linalg.inv(A._data)
            except np.linalg.LinAlgError:
                raise RuntimeError("linalg.inv: The diagonal element 1 is zero, the inversion could "
                                   "not be completed because the input matrix is singular.")
            return _wrap(y.astype(A._dtype.np), A._dtype)

        @staticmethod
        def backward(ctx, g):
            (A,) = ctx.saved_tensors
            Ai = inv(A)
            Ait = Ai.transpose(-1, -2)
            return -(Ait @ g @ Ait)

    class LinalgDet(Function):
        @staticmethod
        def forward(ctx, A):
            ctx.save_for_backward(A)
            return _wrap(np.asarray(np.linalg.det(A._data), A._dtype.np)[()]
                         if A._data.ndim == 2 else np.linalg.det(A._data).astype(A._dtype.np),
                         A._dtype)

        @staticmethod
        def backward(ctx, g):
            (A,) = ctx.saved_tensors
            d = det(A)
            Ait = inv(A).transpose(-1, -2)
            return (g * d).unsqueeze(-1).unsqueeze(-1) * Ait

    class LinalgSolve(Function):
        @staticmethod
        def forward(ctx, A, B):
            ctx.save_for_backward(A, B)
            b = B._data
            vec = b.ndim == A._data.ndim - 1
            try:
                x = np.linalg.solve(A._data, b[..., None] if vec else b)
            except np.linalg.LinAlgError:
                raise RuntimeError("torch.linalg.solve: The solver failed because the input matrix "
                                   "is singular.")
            if vec:
                x = x[..., 0]
            return _wrap(x.astype(A._dtype.np), A._dtype)

        @staticmethod
        def backward(ctx, g):
            A, B = ctx.saved_tensors
            vec = B._data.ndim == A._data.ndim - 1
            At = A.transpose(-1, -2)
            gB = solve(At, g)
            X = solve(A, B)
            if vec:
                gA = -(gB.unsqueeze(-1) * X.unsqueeze(-2))
            else:
                gA = -(gB @ X.transpose(-1, -2))
            return gA, gB
    class LinalgSvd(Function):
        @staticmethod
        def forward(ctx, A):
            d = np.asarray(A._data)
            u, sv, vh = np.linalg.svd(d, full_matrices=False)
            ctx.uv = (u, vh)
            ctx.dt = A._dtype
            return (_wrap(u.astype(A._dtype.np), A._dtype), _wrap(sv.astype(A._dtype.np), A._dtype),
                    _wrap(vh.astype(A._dtype.np), A._dtype))

        @staticmethod
        def backward(ctx, gu, gs, gvh):
            for g in (gu, gvh):
                if g is not None and np.any(np.asarray(g._data) != 0):
                    raise NotImplementedError("the gradient through singular vectors is not "
                                              "supported yet (only svdvals / matrix norms)")
            u, vh = ctx.uv
            dt = ctx.dt
            U = _wrap(u.astype(dt.np), dt)
            Vh = _wrap(vh.astype(dt.np), dt)
            return (U * gs.unsqueeze(-2)) @ Vh
    return LinalgInv, LinalgDet, LinalgSolve, LinalgSvd


_F = []


def _fn(i):
    if not _F:
        _F.extend(_funcs())
    return _F[i]


def _square(A, fname):
    s = A._data.shape
    if A._data.ndim < 2:
        raise RuntimeError("linalg.%s: The input tensor A must have at least 2 dimensions." % fname)
    if s[-1] != s[-2]:
        raise RuntimeError("linalg.%s: A must be batches of square matrices, but they are %d by %d "
                           "matrices" % (fname, s[-2], s[-1]))
    if not A._dtype.is_floating_point:
        raise RuntimeError("linalg.%s: Expected a floating point or complex tensor as input. Got %s"
                           % (fname, A._dtype._tname))


def _name(t, name):
    from ._math import named
    return named(t, name)


def inv(A, *, out=None):
    _square(A, "inv")
    return _name(_fn(0).apply(A), "LinalgInvExBackward0")


def det(A, *, out=None):
    _square(A, "det")
    return _name(_fn(1).apply(A), "LinalgDetBackward0")


def solve(A, B, *, left=True, out=None):
    if not left:
        raise NotImplementedError("linalg.solve(left=False) is not supported yet")
    _square(A, "solve")
    if A._dtype is not B._dtype:
        raise RuntimeError("linalg.solve: Expected A and B to have the same dtype, but found A of "
                           "type %s and B of type %s instead" % (A._dtype._tname,
                                                                 B._dtype._tname))
    return _name(_fn(2).apply(A, B), "LinalgSolveExBackward0")


def matmul(input, other):
    from ._matrix import matmul as mm_
    return mm_(input, other)


def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)
