"""torch.linalg: norms, cross, det, inv, solve."""
import numpy as np

from ._reduce import vector_norm  # noqa: F401


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """linalg.norm: vector norms (ord a number, or None: the 2-norm of the flattened input);
    matrix norms 'fro' and None on 2-D inputs."""
    if ord is None or ord == "fro":
        if ord == "fro" and dim is None and A._data.ndim != 2:
            raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be "
                               "1D or 2D. Got %dD." % A._data.ndim)
        return vector_norm(A, 2, dim, keepdim, dtype=dtype)
    if isinstance(ord, str):
        raise NotImplementedError("linalg.norm(ord=%r) is not supported yet" % ord)
    if A._data.ndim == 2 and dim is None:
        raise NotImplementedError("matrix norms with numeric ord are not supported yet")
    return vector_norm(A, ord, dim, keepdim, dtype=dtype)


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
    return LinalgInv, LinalgDet, LinalgSolve


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
                           % (fname, A._dtype.name.capitalize()))


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
                           "type %s and B of type %s instead" % (A._dtype.name.capitalize(),
                                                                 B._dtype.name.capitalize()))
    return _name(_fn(2).apply(A, B), "LinalgSolveExBackward0")


def matmul(input, other):
    from ._matrix import matmul as mm_
    return mm_(input, other)


def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)
