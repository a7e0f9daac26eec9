"""torch.linalg: norms, cross, and the matrix functions (det, slogdet, inv, solve,
solve_triangular, cholesky, eigh, qr, svd, pinv, lstsq, matrix_power, multi_dot, cond).

The matrix functions are custom autograd Functions: numpy (LAPACK) computes the forward, and the
backward is written with tapegrad operations on the saved inputs (torch's formulas), so
``create_graph=True`` differentiates through it (higher order). Decompositions (eigh, qr, svd)
recompute themselves inside a recorded backward so the factors there are functions of the
input; an unrecorded backward reuses the forward's factors.
"""
import numpy as np

from ._reduce import vector_norm as _vector_norm, return_types, _rt
from ._matrix import matrix_exp
from ._shape import tril as _tril, triu as _triu
from .autograd.function import Function as _Function

# torch.linalg's names (tapegrad/__init__.py takes torch's top-level names from here by
# name: det, logdet, cholesky_solve ...)
__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "eigh", "eigvalsh",
           "inv", "inv_ex", "lstsq", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex",
           "solve_triangular", "svd", "svdvals", "vecdot", "vector_norm"]



class LinAlgError(RuntimeError):
    """Error from a linear algebra function (singular matrix, not positive-definite ...)."""


LinAlgError.__module__ = "torch._C"
LinAlgError.__qualname__ = LinAlgError.__name__ = "_LinAlgError"

for _n, _f in (("linalg_slogdet", ("sign", "logabsdet")), ("slogdet", ("sign", "logabsdet")),
               ("linalg_eigh", ("eigenvalues", "eigenvectors")), ("linalg_qr", ("Q", "R")),
               ("linalg_svd", ("U", "S", "Vh")),
               ("linalg_lstsq", ("solution", "residuals", "rank", "singular_values")),
               ("linalg_inv_ex", ("inverse", "info")), ("linalg_solve_ex", ("result", "info")),
               ("linalg_cholesky_ex", ("L", "info"))):
    setattr(return_types, _n, _rt(_n, _f))


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """linalg.vector_norm; dim=() reduces over every dimension, as torch."""
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' must be Number, not str")
    if dim is not None and not isinstance(dim, int) and len(dim) == 0:
        dim = None
    return _vector_norm(x, ord, dim, keepdim, dtype=dtype)


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


def cross(input, other, *, dim=-1):
    from ._matrix import linalg_cross
    if input._data.ndim != other._data.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    return linalg_cross(input, other, dim)


# ----------------------------------------------------------------------------- helpers
def _T(x):
    return x.transpose(-1, -2)


def _np_T(a):
    return np.swapaxes(a, -1, -2)


def _w(a, dt):
    """A tensor (no history) of numpy array ``a`` in dtype ``dt``."""
    from .tensor import _wrap
    a = np.asarray(a, dt.np)
    return _wrap(a if a.ndim else a[()], dt)


def _name(t, name):
    from ._record import named
    return named(t, name)


def _hide(*ts):
    from ._record import hide
    hide(*ts)


def _sum_to(t, shape):
    """``t`` summed over its broadcast dimensions down to ``shape`` (a broadcast's VJP)."""
    shape = tuple(shape)
    if tuple(t.shape) == shape:
        return t
    lead = t._data.ndim - len(shape)
    if lead:
        t = t.sum(tuple(range(lead)))
    dims = tuple(i for i, (a, b) in enumerate(zip(t.shape, shape)) if b == 1 and a != 1)
    if dims:
        t = t.sum(dims, keepdim=True)
    return t


def _eye_like(n, dt):
    return _w(np.eye(n), dt)


def _diag_embed(d):
    """Matrices with diagonal ``d`` (..., n): d[..., None] * I (differentiable)."""
    n = d.shape[-1]
    return d.unsqueeze(-1) * _eye_like(n, d._dtype)


def _square(A, fname):
    s = A._data.shape
    if A._data.ndim < 2:
        raise RuntimeError("linalg.%s: The input tensor A must have at least 2 dimensions." % fname)
    if s[-1] != s[-2]:
        raise RuntimeError("linalg.%s: A must be batches of square matrices, but they are %d by %d "
                           "matrices" % (fname, s[-2], s[-1]))
    _floating(A, fname)


def _floating(A, fname):
    if not A._dtype.is_floating_point:
        raise RuntimeError("linalg.%s: Expected a floating point or complex tensor as input. Got %s"
                           % (fname, A._dtype._tname))


def _matrix(A, fname):
    if A._data.ndim < 2:
        raise RuntimeError("linalg.%s: The input tensor A must have at least 2 dimensions." % fname)
    _floating(A, fname)


def _same_dtype(A, B, fname):
    if A._dtype is not B._dtype:
        raise RuntimeError("linalg.%s: Expected A and B to have the same dtype, but found A of "
                           "type %s and B of type %s instead" % (fname, A._dtype._tname,
                                                                 B._dtype._tname))


def _lu_zero_pivot(a):
    """1-based index of the first exactly zero pivot of LU with partial pivoting (LAPACK getrf's
    info), 0 when there is none."""
    a = np.array(a, dtype=a.dtype, copy=True)
    n = a.shape[0]
    info = 0
    for k in range(n):
        p = k + int(np.argmax(np.abs(a[k:, k])))
        if a[p, k] == 0:
            if not info:
                info = k + 1
            continue
        if p != k:
            a[[k, p]] = a[[p, k]]
        a[k + 1:, k] /= a[k, k]
        a[k + 1:, k + 1:] -= np.outer(a[k + 1:, k], a[k, k + 1:])
    return info


def _batch_prefix(A, i):
    return "(Batch element %d): " % i if A.ndim > 2 else ""


def _singular_info(a):
    """(flat batch index, pivot) of the first singular matrix of ``a`` (..., n, n), or None."""
    flat = a.reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(flat):
        piv = _lu_zero_pivot(m)
        if piv:
            return i, piv
    return None


def _inv_np(a, fname="linalg.inv"):
    bad = _singular_info(a) if a.size else None
    if bad is None:
        try:
            with np.errstate(all="ignore"):
                return np.linalg.inv(a)
        except np.linalg.LinAlgError:
            bad = _singular_info(a) or (0, 1)
    i, piv = bad
    raise LinAlgError("%s: %sThe diagonal element %d is zero, the inversion could not be "
                      "completed because the input matrix is singular."
                      % (fname, _batch_prefix(a, i), piv))


def _recorded():
    from ._state import STATE
    return STATE.enabled


def _cholesky_np(a, upper=False, fname="linalg.cholesky"):
    try:
        L = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        flat = a.reshape((-1,) + a.shape[-2:])
        for i, m in enumerate(flat):
            for k in range(1, m.shape[-1] + 1):
                try:
                    np.linalg.cholesky(m[:k, :k])
                except np.linalg.LinAlgError:
                    raise LinAlgError("%s: %sThe factorization could not be completed because the "
                                      "input is not positive-definite (the leading minor of order "
                                      "%d is not positive-definite)." % (fname, _batch_prefix(a, i), k))
        raise LinAlgError("%s: The factorization could not be completed because the input is not "
                          "positive-definite." % fname)
    return _np_T(L).copy() if upper else L


def _subst(t, b, upper):
    """X with t X = b for triangular t (batched), by substitution."""
    shape = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    x = np.array(np.broadcast_to(b, shape + b.shape[-2:]), dtype=np.result_type(t, b))
    t = np.broadcast_to(t, shape + t.shape[-2:])
    n = t.shape[-1]
    for k in (range(n - 1, -1, -1) if upper else range(n)):
        bk = x[..., k, :]
        nz = bk != 0
        xk = np.where(nz, bk / t[..., k, k, None], bk)
        x[..., k, :] = xk
        rows = slice(0, k) if upper else slice(k + 1, n)
        x[..., rows, :] -= np.where(nz[..., None, :], t[..., rows, k, None] * xk[..., None, :], 0)
    return x


def _tri_solve_np(a, b, upper, left, unit):
    """Solve with the upper / lower triangle of ``a`` (unit diagonal if ``unit``)."""
    n = a.shape[-1]
    t = np.triu(a) if upper else np.tril(a)
    if unit:
        t = np.where(np.eye(n, dtype=bool), np.ones((), a.dtype), t)
    with np.errstate(all="ignore"):
        if not (np.isfinite(t).all() and np.isfinite(b).all()):
            # substitution as BLAS trsm (a zero x_k updates nothing): nan / inf stay in the
            # columns and rows they reach, where an LU solve spreads them
            if left:
                return _subst(t, b, upper)
            return _np_T(_subst(_np_T(t), _np_T(b), not upper))
        if left:
            return np.linalg.solve(np.broadcast_to(t, np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
                                                   + t.shape[-2:]), b)
        x = np.linalg.solve(np.broadcast_to(_np_T(t), np.broadcast_shapes(t.shape[:-2],
                                                                          b.shape[:-2]) + t.shape[-2:]),
                            _np_T(b))
        return _np_T(x)


# ----------------------------------------------------------------------------- Functions
class LinalgInv(_Function):
    @staticmethod
    def forward(ctx, A):
        Y = _w(_inv_np(A._data), A._dtype)
        ctx.save_for_backward(Y)            # torch saves the inverse only
        return Y

    @staticmethod
    def backward(ctx, g):
        (Y,) = ctx.saved_tensors            # (under create_graph: bound to the output)
        Ait = _T(Y)
        return -(Ait @ g @ Ait)


class LinalgDet(_Function):
    @staticmethod
    def forward(ctx, A):
        ctx.save_for_backward(A)
        d = np.linalg.det(A._data)
        ctx.d = d
        D = _w(d, A._dtype)
        ctx.save_for_backward(A, D)         # torch saves A and the result
        return D

    @staticmethod
    def backward(ctx, g):
        A, _ = ctx.saved_tensors
        return (g.unsqueeze(-1).unsqueeze(-1) if A._data.ndim > 2 or g._data.ndim else g) \
            * _cofactor(A, ctx.d)


class LinalgSlogdet(_Function):
    @staticmethod
    def forward(ctx, A):
        sign, lad = np.linalg.slogdet(A._data)
        sign = _w(sign, A._dtype)
        ctx.save_for_backward(A, sign)      # torch saves A and the sign
        return sign, _w(lad, A._dtype)

    @staticmethod
    def backward(ctx, gsign, glad):
        A, _ = ctx.saved_tensors
        return glad.unsqueeze(-1).unsqueeze(-1) * _T(inv(A))


class LinalgSolve(_Function):
    @staticmethod
    def forward(ctx, A, B, vec):
        a, b = A._data, B._data
        bm = b[..., None] if vec else b
        shape = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
        ab = np.broadcast_to(a, shape + a.shape[-2:])
        bb = np.broadcast_to(bm, shape + bm.shape[-2:])
        bad = _singular_info(ab) if ab.size else None
        if bad is not None:
            raise LinAlgError("torch.linalg.solve: %sThe solver failed because the input "
                              "matrix is singular." % _batch_prefix(ab, bad[0]))
        x = np.linalg.solve(ab, bb)
        X = _w(x[..., 0] if vec else x, A._dtype)
        ctx.save_for_backward(A, X)         # torch saves A (its LU) and the result
        ctx.vec = vec
        ctx.bshape = B.shape
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors            # (under create_graph: X bound to the output)
        vec = ctx.vec
        gm = g.unsqueeze(-1) if vec else g
        gB = _solve(_T(A), gm, False)
        gA = gB_ = None
        if ctx.needs_input_grad[0]:
            gA = _sum_to(-(gB @ _T(X.unsqueeze(-1) if vec else X)), A.shape)
        if ctx.needs_input_grad[1]:
            gB_ = _sum_to(gB, ctx.bshape + ((1,) if vec else ()))
            if vec:
                gB_ = gB_.squeeze(-1)
        return gA, gB_, None


class LinalgSolveTriangular(_Function):
    @staticmethod
    def forward(ctx, A, B, upper, left, unit):
        X = _w(_tri_solve_np(A._data, B._data, upper, left, unit), A._dtype)
        ctx.save_for_backward(A, X)         # torch saves A and the result
        ctx.args = (upper, left, unit)
        ctx.bshape = B.shape
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        upper, left, unit = ctx.args
        # X = A^-1 B: gB = A^-T g, gA = -gB X^T (left); X = B A^-1: gB = g A^-T, gA = -X^T gB
        gB = solve_triangular(_T(A), g, upper=not upper, left=left, unitriangular=unit)
        gA = gB_ = None
        if ctx.needs_input_grad[0]:
            gA = -(gB @ _T(X)) if left else -(_T(X) @ gB)
            k = (1 if upper else -1) if unit else 0
            gA = _sum_to(_triu(gA, k) if upper else _tril(gA, k), A.shape)
        if ctx.needs_input_grad[1]:
            gB_ = _sum_to(gB, ctx.bshape)
        return gA, gB_, None, None, None


class LinalgCholesky(_Function):
    @staticmethod
    def forward(ctx, A, upper):
        L = _w(_cholesky_np(A._data, upper), A._dtype)
        ctx.save_for_backward(L)            # torch saves the factor only
        ctx.upper = upper
        return L

    @staticmethod
    def backward(ctx, gL):
        (L,) = ctx.saved_tensors
        upper = ctx.upper
        if upper:
            L, gL = _T(L), _T(gL)
        # torch's cholesky_backward: Phi(L^H gL) symmetrised, L^-H (.) L^-1
        gA = _tril(_T(L) @ gL)
        gA = 0.5 * (gA + _T(_tril(gA, -1)))
        gA = solve_triangular(_T(L), gA, upper=True, left=True)
        return solve_triangular(L, gA, upper=False, left=False), None


class LinalgEigh(_Function):
    @staticmethod
    def forward(ctx, A, uplo):
        a = A._data
        lam, V = np.linalg.eigh(a, UPLO=uplo)
        lam, V = _w(lam, A._dtype), _w(V, A._dtype)
        ctx.save_for_backward(lam, V)       # torch saves the results only
        ctx.set_materialize_grads(False)    # no eigenvector gradient: no 1 / (l_j - l_i)
        return lam, V

    @staticmethod
    def backward(ctx, gL, gV):
        lam, V = ctx.saved_tensors
        # torch: gA = V (skew(V^H gV) / E + diag(gL)) V^H, E_ij = lam_j - lam_i (1 on the
        # diagonal)
        n = V.shape[-1]
        eye = _eye_like(n, V._dtype)
        inner = None
        if gV is not None:
            VhgV = _T(V) @ gV
            skew = 0.5 * (VhgV - _T(VhgV))
            E = lam.unsqueeze(-2) - lam.unsqueeze(-1) + eye
            inner = (skew / E) * (1 - eye)
        if gL is not None:
            d = _diag_embed(gL)
            inner = d if inner is None else inner + d
        if inner is None:
            return None, None
        return V @ inner @ _T(V), None


class LinalgQr(_Function):
    @staticmethod
    def forward(ctx, A):
        Q, R = np.linalg.qr(A._data, mode="reduced")
        Q, R = _w(Q, A._dtype), _w(R, A._dtype)
        ctx.save_for_backward(Q, R)         # torch saves the results only
        return Q, R

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        m, n = Q.shape[-2], R.shape[-1]
        if m < n:
            raise NotImplementedError("The derivative of linalg.qr is not implemented when "
                                      "mode='reduced' and nrows < ncols yet")
        # M = R gR^T - gQ^T Q; gA = (gQ + Q copyltu(M)) R^-T
        M = R @ _T(gR) - _T(gQ) @ Q
        M = _tril(M) + _T(_tril(M, -1))
        X = gQ + Q @ M
        return _T(solve_triangular(R, _T(X), upper=True, left=True))


class LinalgSvd(_Function):
    @staticmethod
    def forward(ctx, A):
        u, sv, vh = np.linalg.svd(A._data, full_matrices=False)
        U, S, Vh = _w(u, A._dtype), _w(sv, A._dtype), _w(vh, A._dtype)
        ctx.save_for_backward(U, S, Vh)     # torch saves the results only
        ctx.set_materialize_grads(False)    # S alone: U diag(gS) Vh, no 1 / (s_j^2 - s_i^2)
        return U, S, Vh

    @staticmethod
    def backward(ctx, gU, gS, gVh):
        U, S, Vh = ctx.saved_tensors
        return _svd_backward(U, S, Vh, gU, gS, gVh)


class LinalgPinv(_Function):
    @staticmethod
    def forward(ctx, A, rtol, hermitian):
        a = A._data
        with np.errstate(all="ignore"):
            x = np.linalg.pinv(a, rcond=rtol, hermitian=hermitian) if a.size else \
                np.zeros(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)
        X = _w(x, A._dtype)
        ctx.save_for_backward(A, X)         # torch saves A and the result
        return X

    @staticmethod
    def backward(ctx, g):
        A, X = ctx.saved_tensors
        # dX = -X dA X + X X^T dA^T (I - A X) + (I - X A) dA^T X^T X
        m, n = A.shape[-2], A.shape[-1]
        Im, In = _eye_like(m, A._dtype), _eye_like(n, A._dtype)
        Xt = _T(X)
        gt = _T(g)
        return (-(Xt @ g @ Xt) + (Im - A @ X) @ gt @ X @ Xt
                + Xt @ X @ gt @ (In - X @ A)), None, None


_F = {c.__name__: c for c in (LinalgInv, LinalgDet, LinalgSlogdet, LinalgSolve,
                             LinalgSolveTriangular, LinalgCholesky, LinalgEigh, LinalgQr,
                             LinalgSvd, LinalgPinv)}


def _fn(name):
    return _F[name]


def _cofactor(A, d):
    """The cofactor matrix of A (det's gradient): det(A) A^-T when A is invertible, else the
    signed minors' determinants (exact at singular matrices, and differentiable: the minors'
    det is this Function again)."""
    n = A.shape[-1]
    if n == 1:
        return _w(np.ones(A.shape), A._dtype)
    if np.all(np.asarray(d) != 0):
        try:
            _inv_np(A._data)
            return det(A).unsqueeze(-1).unsqueeze(-1) * _T(inv(A)) if _recorded() else \
                _w(np.asarray(d)[..., None, None] * _np_T(np.linalg.inv(A._data)), A._dtype)
        except LinAlgError:
            pass
    # minors: M[..., i, j] = A without row i and column j, as one gather of the flat matrix
    rows = [[r for r in range(n) if r != i] for i in range(n)]
    idx = np.array([[[[r * n + c for c in rows[j]] for r in rows[i]] for j in range(n)]
                    for i in range(n)], np.int64).reshape(-1)
    from .creation import tensor as _tensor
    flat = A.reshape(A.shape[:-2] + (n * n,))
    minors = flat.index_select(-1, _tensor(idx)).reshape(A.shape[:-2] + (n, n, n - 1, n - 1))
    sign = _w(np.array([[(-1.0) ** (i + j) for j in range(n)] for i in range(n)]), A._dtype)
    return det(minors) * sign


def _svd_backward(U, S, Vh, gU, gS, gVh):
    """torch's svd_backward (real, full_matrices=False)."""
    m, n = U.shape[-2], Vh.shape[-1]
    k = S.shape[-1]
    V = _T(Vh)
    gV = None if gVh is None else _T(gVh)
    if gU is None and gV is None:
        return (U * gS.unsqueeze(-2)) @ Vh if gS is not None else None
    eye = _eye_like(k, U._dtype)
    # E_jk = S_k^2 - S_j^2 (1 on the diagonal)
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye
    skew = lambda X: X - _T(X)  # noqa: E731
    ret = None
    if gU is not None:
        UhgU = _T(U) @ gU
        gA = (skew(UhgU) / E) * (1 - eye) * S.unsqueeze(-2)
        ret = gA
    if gV is not None:
        VhgV = Vh @ gV
        t = S.unsqueeze(-1) * ((skew(VhgV) / E) * (1 - eye))
        ret = t if ret is None else ret + t
    if gS is not None:
        ret = ret + _diag_embed(gS)
    gA = U @ ret @ Vh
    if gU is not None and m > k:
        gA = gA + ((gU - U @ (_T(U) @ gU)) / S.unsqueeze(-2)) @ Vh
    if gV is not None and n > k:
        gA = gA + (U / S.unsqueeze(-2)) @ _T(gV - V @ (Vh @ gV))
    return gA


# ----------------------------------------------------------------------------- public functions
def inv(A, *, out=None):
    _square(A, "inv")
    return _name(_fn("LinalgInv").apply(A), "LinalgInvExBackward0")


def inv_ex(A, *, check_errors=False, out=None):
    _square(A, "inv_ex")
    from .tensor import int32
    try:
        res = inv(A)
        info = np.zeros(A.shape[:-2], np.int32)
    except LinAlgError:
        if check_errors:
            raise
        with np.errstate(all="ignore"):
            res = _w(np.full(A.shape, np.nan), A._dtype)
        info = np.array([_lu_zero_pivot(m) for m in A._data.reshape((-1,) + A.shape[-2:])],
                        np.int32).reshape(A.shape[:-2])
    return return_types.linalg_inv_ex(res, _w(info, int32))


def det(A, *, out=None):
    _square(A, "det")
    return _name(_fn("LinalgDet").apply(A), "LinalgDetBackward0")


def slogdet(A, *, out=None):
    _square(A, "slogdet")
    sign, lad = _fn("LinalgSlogdet").apply(A)
    _name(lad, "LinalgSlogdetBackward0")
    return return_types.linalg_slogdet(sign, lad)


def logdet(A):
    """log det A: where(sign < 0, nan, logabsdet) as torch (WhereBackward0)."""
    _square(A, "logdet")
    sign, lad = _fn("LinalgSlogdet").apply(A)
    from ._math import where
    from .tensor import _wrap, bool_
    neg = _wrap(np.asarray(np.asarray(sign._data) < 0), bool_)
    out = where(neg, float("nan"), lad)
    _hide(lad)
    return out


def _solve_vec(A, B):
    """torch's rule: B is a batch of vectors when B.ndim == 1, or B.ndim == A.ndim - 1 and
    B.shape == A.shape[:-1]."""
    return B._data.ndim == 1 or (B._data.ndim == A._data.ndim - 1 and
                                 tuple(B.shape) == tuple(A.shape[:-1]))


def _solve(A, B, check=True):
    if check:
        _square(A, "solve")
        _same_dtype(A, B, "solve")
    vec = _solve_vec(A, B)
    n = A.shape[-1]
    rows = B.shape[-1] if vec else B.shape[-2] if B._data.ndim >= 2 else None
    if rows != n:
        raise RuntimeError("linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           "(%dx%d and %dx%d)" % (n, n, B.shape[-1] if vec else
                                                   (B.shape[-2] if B._data.ndim >= 2 else 1),
                                                   1 if vec else B.shape[-1]))
    try:
        np.broadcast_shapes(A.shape[:-2], B.shape[:-1 if vec else -2])
    except ValueError:
        raise RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d) at "
                           "non-singleton dimension 0" % (A.shape[0], B.shape[0]))
    return _fn("LinalgSolve").apply(A, B, vec)


def solve(A, B, *, left=True, out=None):
    if not left:
        _square(A, "solve")
        _same_dtype(A, B, "solve")
        # X A = B  <=>  A^T X^T = B^T
        At, Bt = _T(A), _T(B)
        x = _solve(At, Bt, False)
        out = _T(x)
        _hide(At, Bt, x)
        return _name(out, "LinalgSolveExBackward0")
    return _name(_solve(A, B), "LinalgSolveExBackward0")


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    from .tensor import int32
    try:
        res = solve(A, B, left=left)
        info = np.zeros(A.shape[:-2], np.int32)
    except LinAlgError:
        if check_errors:
            raise
        shape = np.broadcast_shapes(A.shape[:-2], B.shape[:-2]) + B.shape[-2:] \
            if not _solve_vec(A, B) else B.shape
        res = _w(np.full(shape, np.nan), A._dtype)
        info = np.array([_lu_zero_pivot(m) for m in A._data.reshape((-1,) + A.shape[-2:])],
                        np.int32).reshape(A.shape[:-2])
    return return_types.linalg_solve_ex(res, _w(info, int32))


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    _matrix(A, "solve_triangular")
    if B._data.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    _square(A, "solve_triangular")
    _same_dtype(A, B, "solve_triangular")
    n = A.shape[-1]
    k = B.shape[-2] if left else B.shape[-1]
    if k != n:
        raise RuntimeError("linalg.solve_triangular: Incompatible shapes of A and B for the "
                           "equation %s (%dx%d and %dx%d)" % ("AX = B" if left else "XA = B",
                                                              n, n, B.shape[-2], B.shape[-1]))
    return _name(_fn("LinalgSolveTriangular").apply(A, B, bool(upper), bool(left),
                                                    bool(unitriangular)),
                 "LinalgSolveTriangularBackward0")


def cholesky(A, *, upper=False, out=None):
    _square(A, "cholesky")
    return _name(_fn("LinalgCholesky").apply(A, bool(upper)), "LinalgCholeskyExBackward0")


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    from .tensor import int32
    try:
        L = cholesky(A, upper=upper)
        info = np.zeros(A.shape[:-2], np.int32)
    except LinAlgError as e:
        if check_errors:
            raise
        L = _w(np.zeros(A.shape), A._dtype)
        import re
        m = re.search(r"order (\d+)", str(e))
        info = np.full(A.shape[:-2], int(m.group(1)) if m else 1, np.int32)
    return return_types.linalg_cholesky_ex(L, _w(info, int32))


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B, A = L L^T (upper: U^T U), through two triangular solves
    (CholeskySolveBackward0)."""
    if L._data.ndim < 2 or B._data.ndim < 2:
        raise RuntimeError("b should have at least 2 dimensions, but has %d dimensions instead"
                           % B._data.ndim)
    _same_dtype(L, B, "cholesky_solve")
    from ._state import STATE
    if L._rg and STATE.enabled:
        return _chol_solve_full(B, L, upper)
    if upper:           # A = U^T U
        Y = solve_triangular(_T(L), B, upper=False)
        Lt = L
    else:               # A = L L^T
        Y = solve_triangular(L, B, upper=False)
        Lt = _T(L)
    X = solve_triangular(Lt, Y, upper=True)
    _hide(Y)
    return _name(X, "CholeskySolveBackward0")


def _chol_solve_full(B, L, upper):
    """cholesky_solve recorded as solve(A, B) with A = L L^T (upper: U^T U) of the *whole*
    ``L``: torch's gradient for L, -(G X^T + X G^T) L, reads L's other triangle too (the
    forward only its own). A's value is that of the triangle (a constant correction), X's
    that of the two triangular solves."""
    from ._math import exact
    from ._state import no_grad
    with no_grad():
        y = cholesky_solve(B, L.detach(), upper)._data
    tri = np.triu(L._data) if upper else np.tril(L._data)
    A = _T(L) @ L if upper else L @ _T(L)
    fix = _w((_np_T(tri) @ tri if upper else tri @ _np_T(tri)) - A._data, L._dtype)
    A2 = A + fix
    shape = np.broadcast_shapes(L.shape[:-2], B.shape[:-2]) + tuple(B.shape[-2:])
    B2 = B.expand(shape) if tuple(B.shape) != shape else B
    X = solve(A2, B2)
    _hide(A, A2, X, *((B2,) if B2 is not B else ()))
    return exact(_name(X, "CholeskySolveBackward0"), y)


def cholesky_inverse(L, upper=False, *, out=None):
    n = L.shape[-1]
    eye = _w(np.broadcast_to(np.eye(n), L.shape), L._dtype)
    y = _name(cholesky_solve(eye, L, upper), "CholeskyInverseBackward0")
    # torch (potri) computes one triangle and mirrors it: an exactly symmetric result
    from ._math import exact
    d = np.asarray(y._data)
    tri = np.triu if upper else np.tril
    return exact(y, tri(d) + np.swapaxes(tri(d, -1 if not upper else 1), -1, -2))


def eigh(A, UPLO="L", *, out=None):
    _square(A, "eigh")
    if UPLO not in ("L", "U"):
        raise RuntimeError("Expected UPLO argument to be 'L' or 'U', but got %s" % UPLO)
    lam, V = _fn("LinalgEigh").apply(A, UPLO)
    _name(lam, "LinalgEighBackward0")
    return return_types.linalg_eigh(lam, V)


def eigvalsh(A, UPLO="L", *, out=None):
    _square(A, "eigvalsh")
    return eigh(A, UPLO)[0]


def qr(A, mode="reduced", *, out=None):
    _matrix(A, "qr")
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError("qr received unrecognized mode '%s' but expected one of 'reduced' "
                           "(default), 'r', or 'complete'" % mode)
    if mode != "reduced":
        from .tensor import _wrap
        q, r = np.linalg.qr(A._data, mode="complete")
        if A._rg:
            raise NotImplementedError("linalg.qr: the derivative for mode=%r is not supported yet"
                                      % mode)
        Q = _wrap(q.astype(A._dtype.np), A._dtype) if mode == "complete" else \
            _w(np.zeros((0,)), A._dtype)
        return return_types.linalg_qr(Q, _wrap(r.astype(A._dtype.np), A._dtype))
    Q, R = _fn("LinalgQr").apply(A)
    _name(Q, "LinalgQrBackward0")
    return return_types.linalg_qr(Q, R)


def svd(A, full_matrices=True, *, driver=None, out=None):
    _matrix(A, "svd")
    if full_matrices and min(A.shape[-2:]) != max(A.shape[-2:]):
        from .tensor import _wrap
        from ._state import STATE
        if A._rg and STATE.enabled:
            raise NotImplementedError("linalg.svd: the derivative with full_matrices=True on a "
                                      "non-square input is not supported; use "
                                      "full_matrices=False")
        u, s, vh = np.linalg.svd(A._data, full_matrices=True)
        return return_types.linalg_svd(*(_wrap(v.astype(A._dtype.np), A._dtype)
                                         for v in (u, s, vh)))
    U, S, Vh = _fn("LinalgSvd").apply(A)
    _name(U, "LinalgSvdBackward0")
    return return_types.linalg_svd(U, S, Vh)


def svdvals(A, *, driver=None, out=None):
    """The singular values (descending) of the matrices in A (LinalgSvdBackward0)."""
    if A._data.ndim < 2:
        raise RuntimeError("linalg.svd: The input tensor A must have at least 2 dimensions.")
    _floating(A, "svd")
    return svd(A, full_matrices=False)[1]


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    _matrix(A, "pinv")
    if atol is not None:
        raise NotImplementedError("linalg.pinv(atol=) is not supported yet")
    if rtol is None:
        rtol = max(A.shape[-2:]) * float(np.finfo(A._dtype.np).eps) if A._data.size else 0.0
    # torch keeps s > max(atol, rtol * s_max), atol 0: a negative rtol keeps s > 0
    return _name(_fn("LinalgPinv").apply(A, max(float(rtol), 0.0), bool(hermitian)),
                 "LinalgPinvBackward0")


def lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of A X = B (torch's CPU default driver 'gelsy': residuals and
    singular_values empty, rank given); the solution's gradient is pinv(A) B's."""
    _matrix(A, "lstsq")
    _same_dtype(A, B, "lstsq")
    from .tensor import _wrap, int64
    vec = B._data.ndim == A._data.ndim - 1
    if B.shape[-2 if not vec else -1] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-%d)"
                           % (1 if vec else 2))
    driver = driver or "gelsy"
    a = A._data
    if rcond is not None and driver == "gelsy" and a.size:
        sv = np.linalg.svd(a, compute_uv=False)
        if np.any(np.sum(sv > rcond * sv[..., :1], -1) < min(a.shape[-2:])):
            raise NotImplementedError(
                "linalg.lstsq(driver='gelsy') with an rcond that makes A rank-deficient is not "
                "supported yet (gelsy's rank-revealing QR): use driver='gelsd'")
    rk = np.linalg.matrix_rank(a) if a.size else np.zeros(a.shape[:-2], np.int64)
    if rcond is not None and a.size:        # (the rank and gradient rcond truncates to)
        sv = np.linalg.svd(a, compute_uv=False)
        rk = np.sum(sv > max(rcond, 0.0) * sv[..., :1], -1)
    X = (pinv(A) if rcond is None else pinv(A, rtol=rcond)) @ (B.unsqueeze(-1) if vec else B)
    if vec:
        X = X.squeeze(-1)
    # the values: LAPACK's least squares (numpy), as torch's
    bm = B._data[..., None] if vec else B._data
    if a.ndim == 2 and bm.ndim == 2:
        sol = np.linalg.lstsq(a, bm, rcond=rcond)[0]
    else:
        shape = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
        ab = np.broadcast_to(a, shape + a.shape[-2:]).reshape((-1,) + a.shape[-2:])
        bb = np.broadcast_to(bm, shape + bm.shape[-2:]).reshape((-1,) + bm.shape[-2:])
        sol = np.stack([np.linalg.lstsq(x, y, rcond=rcond)[0] for x, y in zip(ab, bb)]) \
            .reshape(shape + (a.shape[-1], bm.shape[-1]))
    sol = sol[..., 0] if vec else sol
    from ._math import exact
    X = exact(_name(X, "LinalgLstsqBackward0"), sol) if X._tape is not None else \
        _w(sol, A._dtype)
    empty = _w(np.zeros((0,)), A._dtype)
    # torch's residuals are an output of its node (empty here): they require grad with X
    res = empty
    if X._tape is not None:
        r0 = X.reshape(-1)
        r1 = r0[:0]
        res = _name(r1 * 1.0, "LinalgLstsqBackward0")
        _hide(r0, r1)
    return return_types.linalg_lstsq(X, res, _wrap(np.asarray(rk, np.int64), int64), empty)


def matrix_power(A, n, *, out=None):
    _matrix(A, "matrix_power")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_power: A must be batches of square matrices, but they "
                           "are %d by %d matrices" % (A.shape[-2], A.shape[-1]))
    n = int(n)
    if n == 0:      # the identity, a copy with a zero gradient (torch: CopyBackwards)
        from ._math import exact
        eye = np.broadcast_to(np.eye(A.shape[-1], dtype=A._dtype.np), A.shape).copy()
        if A._tape is None and not A._rg:
            return _w(eye, A._dtype)
        z = A * 0.0
        out = z + _w(eye, A._dtype)
        _hide(z)
        return exact(_name(out, "CopyBackwards"), eye)
    if n < 0:
        A = inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result.clone() if result is A else result


def _chain_order(dims):
    """torch's matrix_chain_order: split[i][j] of the cheapest product of matrices i..j,
    matrix i being dims[i] x dims[i + 1]."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for ln in range(1, n):
        for i in range(n - ln):
            j = i + ln
            cost[i][j] = None
            for k in range(i, j):
                q = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or q < cost[i][j]:
                    cost[i][j], split[i][j] = q, k
    return split


def multi_dot(tensors, *, out=None):
    """torch's multi_dot: a 1-D first (last) tensor as a row (column), the product in torch's
    order (the cheaper of the two for three matrices, the optimal chain order for more), then
    a view to the result's shape (ViewBackward0)."""
    from ._matrix import mm
    n = len(tensors)
    if n < 2:
        raise RuntimeError("multi_dot(): expected at least 2 tensors but got %d" % n)
    ts = list(tensors)
    shape = []
    nd0, nd1 = ts[0]._data.ndim, ts[-1]._data.ndim
    if nd0 == 1:
        ts[0] = ts[0].unsqueeze(0)
    elif nd0 == 2:
        shape.append(ts[0].shape[0])
    else:
        raise RuntimeError("multi_dot(): the first tensor must be 1D or 2D but got %dD" % nd0)
    if nd1 == 1:
        ts[-1] = ts[-1].unsqueeze(-1)
    elif nd1 == 2:
        shape.append(ts[-1].shape[1])
    else:
        raise RuntimeError("multi_dot(): the last tensor must be 1D or 2D but got %dD" % nd1)
    for i in range(1, n - 1):
        if ts[i]._data.ndim != 2:
            raise RuntimeError("multi_dot(): tensor %d must be 2D but got %dD"
                               % (i, ts[i]._data.ndim))
    for i in range(1, n):
        if ts[i]._dtype is not ts[0]._dtype:
            raise RuntimeError("multi_dot(): all tensors must have be the same dtype but tensor 0 "
                               "is %s and tensor %d %s" % (ts[0]._dtype._cname, i,
                                                           ts[i]._dtype._cname))
        if ts[i - 1].shape[-1] != ts[i].shape[0]:
            raise RuntimeError("multi_dot(): tensors %d and %d with shapes %s and %s cannot be "
                               "multiplied" % (i - 1, i, list(tensors[i - 1].shape),
                                               list(tensors[i].shape)))
    if n == 2:
        y = mm(ts[0], ts[1])
    elif n == 3:
        a, b = ts[0].shape[0], ts[1].shape[0]
        c, d = ts[2].shape[0], ts[2].shape[1]
        if (a * c) * (b + d) > (b * d) * (a + c):
            y = mm(ts[0], mm(ts[1], ts[2]))
        else:
            y = mm(mm(ts[0], ts[1]), ts[2])
    else:
        split = _chain_order([t.shape[0] for t in ts] + [ts[-1].shape[1]])

        def chain(i, j):
            if i == j:
                return ts[i]
            k = split[i][j]
            return mm(chain(i, k), chain(k + 1, j))
        y = chain(0, n - 1)
    return y.view(shape)


def _cond_ord_error(p):
    return RuntimeError("linalg.cond got an invalid norm type: %s"
                        % (p if isinstance(p, str) else _fmt_ord(float(p))))


def cond(A, p=None, *, out=None):
    """torch's linalg.cond: for p None / 2 / -2 the ratio of the extreme singular values
    (narrow, div, squeeze: SqueezeBackward1); 'nuc': sum(s) sum(1 / s); else
    norm(A) norm(A^-1), an exactly singular matrix's inverse taken as inf, nan_to_num(inf)
    (NanToNumBackward0). Empty matrices give 0."""
    nd = A._data.ndim
    tag = "linalg.cond(ord=%s)" % (p if isinstance(p, str) else _fmt_ord(float(p))) \
        if p is not None else "linalg.cond"
    if isinstance(p, str):
        if nd < 2:
            raise RuntimeError("%s: The input tensor A must have at least 2 dimensions." % tag)
        if A.shape[-1] != A.shape[-2]:
            raise RuntimeError("%s: A must be batches of square matrices, but they are %d by %d "
                               "matrices" % (tag, A.shape[-2], A.shape[-1]))
        if p not in ("fro", "nuc"):
            raise _cond_ord_error(p)
        two = False
    else:
        if nd < 2:
            raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
        o = 2.0 if p is None else float(p)
        if abs(o) not in (1.0, 2.0, float("inf")):
            raise _cond_ord_error(p)
        two = abs(o) == 2.0
        if not two and A.shape[-1] != A.shape[-2]:
            raise RuntimeError("%s: A must be batches of square matrices, but they are %d by %d "
                               "matrices" % (tag, A.shape[-2], A.shape[-1]))
    _floating(A, "svd" if two or p == "nuc" else "inv")
    if A._data.size == 0:
        return _w(np.zeros(A.shape[:-2]), A._dtype)
    if two:
        s = svdvals(A)
        hi, lo = s.narrow(-1, 0, 1), s.narrow(-1, -1, 1)
        return (lo / hi if o < 0 else hi / lo).squeeze(-1)
    if p == "nuc":
        s = svdvals(A)
        return s.sum(-1) * s.reciprocal().sum(-1)
    n = A.shape[-1]
    sing = np.array([_lu_zero_pivot(m) != 0 for m in A._data.reshape((-1, n, n))],
                    bool).reshape(A.shape[:-2] + (1, 1))
    if sing.any():          # torch: inv_ex's result masked to inf where info > 0
        from ._math import where
        from .tensor import _wrap, bool_
        m = _wrap(sing, bool_)
        safe = where(m, _eye_like(n, A._dtype), A)
        Ai = inv(safe)
        Ainv = Ai.masked_fill(m, float("inf"))
    else:
        Ainv = inv(A)
    r = matrix_norm(A, p) * matrix_norm(Ainv, p)
    from ._math import nan_to_num
    inf = float("inf")
    return nan_to_num(r, inf, inf, -inf)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The number of singular values > max(atol, rtol * s_max) (torch's rule: rtol defaults to
    eps * max(m, n), or to 0 where a given atol is > 0)."""
    from .tensor import _wrap, int64, Tensor
    a = A._data
    m, n = a.shape[-2:]
    if a.size == 0:
        return _wrap(np.asarray(np.zeros(a.shape[:-2], np.int64))[()], int64)

    def val(t):
        return None if t is None else np.asarray(t._data if isinstance(t, Tensor) else t,
                                                 np.float64)
    at, rt = val(atol), val(rtol)
    if rt is None:          # torch: where(atol > 0, 0, eps * max(m, n)) when atol is given
        rt = np.float64(max(m, n) * np.finfo(a.dtype).eps)
        if at is not None:
            rt = np.where(at > 0, 0.0, rt)
    at = np.float64(0.0) if at is None else at
    with np.errstate(all="ignore"):
        sv = np.abs(np.linalg.eigvalsh(a)) if hermitian else np.linalg.svd(a, compute_uv=False)
        smax = np.max(sv, -1) if sv.shape[-1] else np.zeros(sv.shape[:-1])
        tol = np.maximum(at, rt * smax)
        rk = np.sum(sv > np.asarray(tol)[..., None], -1)
    return _wrap(np.asarray(rk, np.int64)[()], int64)


def matmul(input, other):
    from ._matrix import matmul as mm_
    return mm_(input, other)


def vecdot(x, y, *, dim=-1):
    return (x * y).sum(dim)


def _install(Tensor):
    Tensor.det = lambda self: det(self)
    Tensor.logdet = lambda self: logdet(self)
    Tensor.slogdet = lambda self: _torch_slogdet(self)
    Tensor.inverse = lambda self: inv(self)
    Tensor.cholesky = lambda self, upper=False: cholesky(self, upper=upper)
    Tensor.cholesky_solve = lambda self, L, upper=False: cholesky_solve(self, L, upper)
    Tensor.matrix_power = lambda self, n: matrix_power(self, n)
    Tensor.pinverse = lambda self, rcond=1e-15: pinv(self, rtol=rcond)


def _torch_slogdet(A):
    r = slogdet(A)
    return return_types.slogdet(r.sign, r.logabsdet)




def _torch_cholesky(A, upper=False, *, out=None):
    """torch.cholesky (deprecated in torch, which warns once)."""
    import warnings
    warnings.warn("torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be "
                  "removed in a future PyTorch release.", UserWarning, stacklevel=2)
    return _name(cholesky(A, upper=upper), "CholeskyBackward0")


def _torch_pinverse(A, rcond=1e-15):
    return pinv(A, rtol=rcond)
