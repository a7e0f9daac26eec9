"""Numba kernels: one ``fwd_<op>`` / ``vjp_<op>`` pair per primitive, side by side.

Only this module and ``_interp.py`` contain Numba code. Kernels see flat, C-contiguous
1-D arrays and plain ints/floats, never Python objects. Each kernel is specialised by Numba
per dtype (float32, float64) the first time the interpreter is compiled, and cached on disk.

Calling conventions (one per *kind*; ``ops.py`` names the kind of each row and
``_interp.py`` is generated from it):

Every array argument is a whole store (values, adjoints, saved values) followed by the offset
of the operand inside it: a kernel never receives a slice. (Creating slice views per entry
cost ~0.3 us each in the sweep; offsets cost nothing.)

=======  =====================================  ===========================================
kind     forward                                VJP (accumulates into ``GX``/``GA``/``GB``)
=======  =====================================  ===========================================
unary    ``fwd(n, X,xo, c, Y,yo)``              ``vjp(n, G,go, X,xo, Y,yo, c, GX,gxo)``
binary   ``fwd(n, A,ao,sa, B,bo,sb, Y,yo)``     ``vjp(n, G,go, A,ao,sa, B,bo,sb, Y,yo,
                                                GA,gao, GB,gbo, na, nb)``
sum      ``fwd(n, X,xo, c, Y,yo)``              ``vjp(n, G,go, c, GX,gxo)``
index    ``fwd(n, m, X,xo, I,io, c, Y,yo)``     ``vjp(n, m, G,go, I,io, c, GX,gxo)``
mm       ``fwd(m, k, n, A,ao, B,bo, Y,yo)``     ``vjp(m, k, n, G,go, A,ao, B,bo, GA,gao, GB,gbo,
                                                na, nb)``
=======  =====================================  ===========================================

``n`` is the element count (output size; input size for ``sum``; index length for ``index``,
``m`` the other side's size; for the offset rows ``slice``/``embed`` ``io`` is an element offset
and ``n`` the length of the contiguous range, for ``transpose`` ``io`` is the input matrix's
row count and ``n`` its size; ``I`` is not read by these), ``G`` the output cotangent, ``c`` a float constant,
``sa``/``sb`` element strides (1, or 0 for an operand broadcast from one element), ``na``/``nb``
whether an operand needs its gradient. Every VJP *adds* into its gradient buffers, so an
operand used several times accumulates.
"""
import math

import numpy as np
from numba import carray, njit, types
from numba.extending import intrinsic

from .._schema import NK, NOFF, NPROD
from . import _cache
from . import _native   # registers the native table's symbol before any kernel is compiled
from ._addr import INTERNAL, _u, _voidptr, saved_address  # noqa: F401

# Kernels and helpers: called from compiled code only (``_addr.INTERNAL``). The sweeps call
# each kernel with one signature per dtype (counts, offsets and strides int64) and, in the
# scalar-plan sweeps and the step functions, with a literal count of 1 and unit strides.
_jit = njit(fastmath=False, boundscheck=False, error_model="numpy", **INTERNAL)


# ---------------------------------------------------------------- tape layout
# (the columns and flags are defined in _schema.py)
_GEMM_MIN, _SGEMM, _DGEMM = _native.GEMM_MIN, _native.SGEMM, _native.DGEMM
_VM_MIN, _VM4, _VM8 = _native.VM_MIN, _native.VM4, _native.VM8
# the transcendental rows whose forward kernels call the native vector math (``_vm``), with
# the row codes ``_vmath`` numbers them by (written out: cached kernels hold them; a test
# checks they agree with ``_vmath.UNARY``)
VM_CODES = {"exp": 1, "log": 2, "sin": 3, "cos": 4, "tanh": 5, "sigmoid": 6, "tan": 10,
            "asin": 11, "acos": 12, "atan": 13, "sinh": 14, "cosh": 15, "erf": 16, "log1p": 17,
            "expm1": 18}


@intrinsic
def _native_fn(typingctx, slot):
    """The address in slot ``slot`` of the native table (``_native``; 0: not available), read
    at run time: cached code holds the table's name, never an address."""
    def codegen(context, builder, sig, args):
        from llvmlite import ir
        mod = builder.module
        g = mod.globals.get(_native.SYMBOL)
        if g is None:
            g = ir.GlobalVariable(mod, ir.ArrayType(ir.IntType(64), _native.SLOTS), _native.SYMBOL)
        return builder.load(builder.gep(g, [ir.Constant(ir.IntType(32), 0), args[0]]))
    return types.int64(slot), codegen


@intrinsic
def _gemm(typingctx, fp, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
    """Call the cblas_?gemm at address ``fp`` (64-bit integers) on row-major operands at
    addresses a, b, c: C = alpha op(A) op(B) + beta C, op transposing when ta / tb != 0.
    The float type of alpha (float32 or float64) picks the sgemm or dgemm prototype."""
    def codegen(context, builder, sig, args):
        from llvmlite import ir
        i32, i64 = ir.IntType(32), ir.IntType(64)
        ft = ir.FloatType() if sig.args[6] == types.float32 else ir.DoubleType()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, ft, i64, i64, i64,
                                               i64, ft, i64, i64])
        fn = builder.inttoptr(args[0], fnty.as_pointer())

        def trans(t):               # CblasTrans 112, CblasNoTrans 111
            return builder.select(builder.icmp_signed("!=", t, ir.Constant(i64, 0)),
                                  ir.Constant(i32, 112), ir.Constant(i32, 111))
        builder.call(fn, [ir.Constant(i32, 101), trans(args[1]), trans(args[2])]  # row-major
                     + list(args[3:]))
        return context.get_dummy_value()
    return types.void(fp, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), codegen


@_jit
def _blas_mm(ta, tb, m, n, k, A, ao, B, bo, C, co, beta):
    """C[co:] (m, n) = op(A[ao:]) op(B[bo:]) + beta C through the native BLAS, when the
    product has GEMM_MIN multiply-adds or more and BLAS is there; False: the caller loops."""
    if m * n * k < _GEMM_MIN:
        return False
    fp = _native_fn(_SGEMM if C.itemsize == 4 else _DGEMM)
    if fp == 0:
        return False
    w = C.itemsize
    _gemm(fp, ta, tb, m, n, k, C.dtype.type(1), A.ctypes.data + ao * w, m if ta else k,
          B.ctypes.data + bo * w, k if tb else n, C.dtype.type(beta), C.ctypes.data + co * w, n)
    return True


@intrinsic
def _vm_call(typingctx, fp, code, x, y, n):
    """Call the C function at address ``fp``: void f(int64 code, x*, y*, int64 n)."""
    def codegen(context, builder, sig, args):
        from llvmlite import ir
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(ir.VoidType(), [i64, i64, i64, i64])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), list(args[1:]))
        return context.get_dummy_value()
    return types.void(fp, code, x, y, n), codegen


@njit(inline="always", nogil=True)
def _vm(code, n, X, xo, Y, yo):
    """Y[yo:yo+n] = f(X[xo:xo+n]) for the transcendental row ``code`` on libmvec's SIMD
    functions, when ``_native.vmath()`` has filled the slot (a few ulp, as numpy's own SIMD
    loops; ~20x faster than the scalar libm loop for tanh); False: the caller loops."""
    if n < _VM_MIN:
        return False
    fp = _native_fn(_VM4 if Y.itemsize == 4 else _VM8)
    if fp == 0:
        return False
    w = Y.itemsize
    _vm_call(fp, code, X.ctypes.data + xo * w, Y.ctypes.data + yo * w, n)
    return True


_VJP_BLOCK = 512   # elements per libmvec call in _vm_vjp (a 2-4 KB buffer, in L1)


@njit(inline="always", nogil=True)
def _vm_vjp(code, mode, n, G, go, X, xo, GX, gxo):
    """GX[gxo:gxo+n] += G[go:go+n] * f(X[xo:xo+n]) for the transcendental row ``code`` on
    libmvec, a block at a time through a small buffer, when ``_native.vmath()`` has filled the
    slot; False: the caller loops (scalar libm). ``mode`` 1: -= instead; 2: the erf factor,
    += G * 2/sqrt(pi) * f(-x^2)."""
    if n < _VM_MIN:
        return False
    fp = _native_fn(_VM4 if GX.itemsize == 4 else _VM8)
    if fp == 0:
        return False
    t = np.empty(min(n, _VJP_BLOCK), GX.dtype)
    tp = t.ctypes.data
    w = X.itemsize
    for i0 in range(0, n, _VJP_BLOCK):
        m = min(_VJP_BLOCK, n - i0)
        if mode == 2:
            for i in range(m):
                v = X[_u(xo + i0 + i)]
                t[i] = -v * v
            _vm_call(fp, code, tp, tp, m)
            for i in range(m):
                GX[_u(gxo + i0 + i)] += G[_u(go + i0 + i)] * 1.1283791670955126 * t[i]
        else:
            _vm_call(fp, code, X.ctypes.data + (xo + i0) * w, tp, m)
            if mode == 1:
                for i in range(m):
                    GX[_u(gxo + i0 + i)] -= G[_u(go + i0 + i)] * t[i]
            else:
                for i in range(m):
                    GX[_u(gxo + i0 + i)] += G[_u(go + i0 + i)] * t[i]
    return True


@_jit
def raw(a):
    """The same memory as ``a`` without a reference-counted owner. The sweeps rebind every
    store through this once, so passing stores to kernels and accessors costs no atomic
    refcount traffic per entry (the caller keeps the arrays alive for the call)."""
    return carray(_voidptr(a.ctypes.data), a.shape, a.dtype)


@_jit
def noff(N, node):
    """Offset of a node in its dtype's store (0 for node -1: never read then)."""
    return N[node * NK + NOFF] if node >= 0 else 0


@_jit
def operand(live, Xv, V, XA, N, node, s, m):
    """An operand's values as an array of m elements viewing memory the tape keeps alive: the
    node's live value during a replay, else the saved value -- s >= 0 an offset into V (a
    copy), s <= -2 the referenced external array number -2-s (XA: address/length pairs).
    Built from a raw address: no refcounted view is created per entry."""
    if live and node >= 0:
        addr = Xv.ctypes.data + N[node * NK + NOFF] * Xv.itemsize
    else:
        addr = saved_address(V, XA, s)
    return carray(_voidptr(addr), (m,), V.dtype)


@_jit
def mark(N, nreach, ereach, node):
    """Record that a node received a cotangent (and so must its producing entry run)."""
    if node >= 0:
        nreach[node] = 1
        p = N[node * NK + NPROD]
        if p >= 0:
            ereach[p] = 1


# ---------------------------------------------------------------- unary elementwise
# d(-x) = -dx
@_jit
def fwd_neg(n, X, xo, c, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = -X[_u(xo + i)]


@_jit
def vjp_neg(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] -= G[_u(go + i)]


# d exp(x) = exp(x) dx
@_jit
def fwd_exp(n, X, xo, c, Y, yo):
    if _vm(1, n, X, xo, Y, yo):     # VM_CODES['exp']: libmvec (_native)
        return
    for i in range(n):
        Y[_u(yo + i)] = math.exp(X[_u(xo + i)])


@_jit
def vjp_exp(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] * Y[_u(yo + i)]


# d log(x) = dx / x
@_jit
def fwd_log(n, X, xo, c, Y, yo):
    if _vm(2, n, X, xo, Y, yo):     # VM_CODES['log']: libmvec (_native)
        return
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = math.log(v) if v > 0 else (-np.inf if v == 0 else np.nan)


@_jit
def vjp_log(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] / X[_u(xo + i)]


# d sin(x) = cos(x) dx
@_jit
def fwd_sin(n, X, xo, c, Y, yo):
    if _vm(3, n, X, xo, Y, yo):     # VM_CODES['sin']: libmvec (_native)
        return
    for i in range(n):
        Y[_u(yo + i)] = math.sin(X[_u(xo + i)])


@_jit
def vjp_sin(n, G, go, X, xo, Y, yo, c, GX, gxo):
    if _vm_vjp(4, 0, n, G, go, X, xo, GX, gxo):     # cos on libmvec (_native)
        return
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] * math.cos(X[_u(xo + i)])


# d cos(x) = -sin(x) dx
@_jit
def fwd_cos(n, X, xo, c, Y, yo):
    if _vm(4, n, X, xo, Y, yo):     # VM_CODES['cos']: libmvec (_native)
        return
    for i in range(n):
        Y[_u(yo + i)] = math.cos(X[_u(xo + i)])


@_jit
def vjp_cos(n, G, go, X, xo, Y, yo, c, GX, gxo):
    if _vm_vjp(3, 1, n, G, go, X, xo, GX, gxo):     # -sin on libmvec (_native)
        return
    for i in range(n):
        GX[_u(gxo + i)] -= G[_u(go + i)] * math.sin(X[_u(xo + i)])


# d tanh(x) = (1 - tanh(x)^2) dx
@_jit
def fwd_tanh(n, X, xo, c, Y, yo):
    if _vm(5, n, X, xo, Y, yo):     # VM_CODES['tanh']: libmvec (_native)
        return
    for i in range(n):
        Y[_u(yo + i)] = math.tanh(X[_u(xo + i)])


@_jit
def vjp_tanh(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        y = Y[_u(yo + i)]
        GX[_u(gxo + i)] += G[_u(go + i)] * (1 - y * y)


# d sigmoid(x) = s (1 - s) dx
@_jit
def fwd_sigmoid(n, X, xo, c, Y, yo):
    if _vm(6, n, X, xo, Y, yo):     # VM_CODES['sigmoid']: libmvec (_native)
        return
    for i in range(n):
        v = X[_u(xo + i)]
        if v >= 0:
            Y[_u(yo + i)] = 1.0 / (1.0 + math.exp(-v))
        else:
            z = math.exp(v)
            Y[_u(yo + i)] = z / (1.0 + z)


@_jit
def vjp_sigmoid(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        y = Y[_u(yo + i)]
        GX[_u(gxo + i)] += G[_u(go + i)] * y * (1 - y)


# d relu(x) = [y > 0] dx   (torch: the gradient at 0 is 0)
@_jit
def fwd_relu(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        # relu(nan) = nan, relu(-0.0) = -0.0 (torch: x itself unless x < 0)
        Y[_u(yo + i)] = 0.0 if v < 0 else v


@_jit
def vjp_relu(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        if not Y[_u(yo + i)] <= 0:                  # torch's threshold_backward (nan passes)
            GX[_u(gxo + i)] += G[_u(go + i)]


# d sqrt(x) = dx / (2 sqrt(x))
@_jit
def fwd_sqrt(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = math.sqrt(v) if v >= 0 else np.nan


@_jit
def vjp_sqrt(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] / (2 * Y[_u(yo + i)])


# d |x| = sign(x) dx   (torch: sign(0) = 0)
@_jit
def fwd_abs(n, X, xo, c, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = abs(X[_u(xo + i)])


@_jit
def vjp_abs(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        v = X[_u(xo + i)]
        if v > 0:
            GX[_u(gxo + i)] += G[_u(go + i)]
        elif v < 0:
            GX[_u(gxo + i)] -= G[_u(go + i)]


# d x^c = c x^(c-1) dx   (torch: 0 when c == 0)
@_jit
def fwd_pow_scalar(n, X, xo, c, Y, yo):
    if c == 2.0:                        # the common exponents without pow() (vectorises)
        for i in range(n):
            Y[_u(yo + i)] = X[_u(xo + i)] * X[_u(xo + i)]
    elif c == 3.0:
        for i in range(n):
            Y[_u(yo + i)] = X[_u(xo + i)] * X[_u(xo + i)] * X[_u(xo + i)]
    elif c == 1.0:
        for i in range(n):
            Y[_u(yo + i)] = X[_u(xo + i)]
    else:
        for i in range(n):
            Y[_u(yo + i)] = X[_u(xo + i)] ** c


@_jit
def vjp_pow_scalar(n, G, go, X, xo, Y, yo, c, GX, gxo):
    if c == 0.0:
        return
    if c == 2.0:
        for i in range(n):
            GX[_u(gxo + i)] += G[_u(go + i)] * 2 * X[_u(xo + i)]
    elif c == 3.0:
        for i in range(n):
            GX[_u(gxo + i)] += G[_u(go + i)] * 3 * (X[_u(xo + i)] * X[_u(xo + i)])
    elif c == 1.0:
        for i in range(n):
            GX[_u(gxo + i)] += G[_u(go + i)]
    else:
        for i in range(n):
            GX[_u(gxo + i)] += G[_u(go + i)] * c * X[_u(xo + i)] ** (c - 1)


# ---------------------------------------------------------------- unary, row by row
# softmax / log_softmax over consecutive rows of c elements (c: the row length; n a multiple
# of it). The shift is the row's maximum (nan if the row has one; as torch, a row with +inf
# or only -inf gives nan). d softmax: gx = y (g - sum(g y)); d log_softmax:
# gx = g - exp(y) sum(g), per row.
@njit(inline="always", nogil=True)
def _row_shift(X, o, L):
    m = X[_u(o)]
    for i in range(1, L):
        v = X[_u(o + i)]
        if v > m or v != v:
            m = v
    return m


@_jit
def fwd_softmax(n, X, xo, c, Y, yo):
    L = int(c)
    for r in range(0, n, L):
        m = _row_shift(X, xo + r, L)
        for i in range(L):
            Y[_u(yo + r + i)] = X[_u(xo + r + i)] - m
        if not _vm(1, L, Y, yo + r, Y, yo + r):      # VM_CODES['exp']
            for i in range(L):
                Y[_u(yo + r + i)] = math.exp(Y[_u(yo + r + i)])
        s = Y.dtype.type(0)
        for i in range(L):
            s += Y[_u(yo + r + i)]
        for i in range(L):
            Y[_u(yo + r + i)] = Y[_u(yo + r + i)] / s


@_jit
def vjp_softmax(n, G, go, X, xo, Y, yo, c, GX, gxo):
    L = int(c)
    for r in range(0, n, L):
        s = G.dtype.type(0)
        for i in range(L):
            s += G[_u(go + r + i)] * Y[_u(yo + r + i)]
        for i in range(L):
            GX[_u(gxo + r + i)] += Y[_u(yo + r + i)] * (G[_u(go + r + i)] - s)


@_jit
def fwd_log_softmax(n, X, xo, c, Y, yo):
    L = int(c)
    t = np.empty(L, Y.dtype)
    for r in range(0, n, L):
        m = _row_shift(X, xo + r, L)
        for i in range(L):
            Y[_u(yo + r + i)] = X[_u(xo + r + i)] - m
        if not _vm(1, L, Y, yo + r, t, 0):
            for i in range(L):
                t[i] = math.exp(Y[_u(yo + r + i)])
        s = Y.dtype.type(0)
        for i in range(L):
            s += t[i]
        ls = math.log(s)
        for i in range(L):
            Y[_u(yo + r + i)] = Y[_u(yo + r + i)] - ls


@_jit
def vjp_log_softmax(n, G, go, X, xo, Y, yo, c, GX, gxo):
    L = int(c)
    t = np.empty(L, GX.dtype)
    for r in range(0, n, L):
        s = G.dtype.type(0)
        for i in range(L):
            s += G[_u(go + r + i)]
        if not _vm(1, L, Y, yo + r, t, 0):
            for i in range(L):
                t[i] = math.exp(Y[_u(yo + r + i)])
        for i in range(L):
            GX[_u(gxo + r + i)] += G[_u(go + r + i)] - t[i] * s


# ---------------------------------------------------------------- binary elementwise
# d(a + b) = da + db
@_jit
def fwd_add(n, A, ao, sa, B, bo, sb, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = A[_u(ao + i * sa)] + B[_u(bo + i * sb)]


@_jit
def vjp_add(n, G, go, A, ao, sa, B, bo, sb, Y, yo, GA, gao, GB, gbo, na, nb):
    if sa == 0 or sb == 0:             # an operand broadcast from one element: its sum
        if na:
            _vjp_pass(n, G, go, GA, gao, sa, 1)
        if nb:
            _vjp_pass(n, G, go, GB, gbo, sb, 1)
        return
    for i in range(n):
        if na:
            GA[_u(gao + i * sa)] += G[_u(go + i)]
        if nb:
            GB[_u(gbo + i * sb)] += G[_u(go + i)]


# d(a - b) = da - db
@_jit
def fwd_sub(n, A, ao, sa, B, bo, sb, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = A[_u(ao + i * sa)] - B[_u(bo + i * sb)]


@_jit
def vjp_sub(n, G, go, A, ao, sa, B, bo, sb, Y, yo, GA, gao, GB, gbo, na, nb):
    if sa == 0 or sb == 0:             # an operand broadcast from one element: its sum
        if na:
            _vjp_pass(n, G, go, GA, gao, sa, 1)
        if nb:
            _vjp_pass(n, G, go, GB, gbo, sb, -1)
        return
    for i in range(n):
        if na:
            GA[_u(gao + i * sa)] += G[_u(go + i)]
        if nb:
            GB[_u(gbo + i * sb)] -= G[_u(go + i)]


# d(a b) = b da + a db
@_jit
def fwd_mul(n, A, ao, sa, B, bo, sb, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = A[_u(ao + i * sa)] * B[_u(bo + i * sb)]


@_jit
def vjp_mul(n, G, go, A, ao, sa, B, bo, sb, Y, yo, GA, gao, GB, gbo, na, nb):
    # one loop per operand: with GA and GB the same memory (x * x) the combined loop runs
    # scalar; split, 2.9x faster there (1,512 float64: 1.09 -> 0.38 ns/element), as fast
    # otherwise (0.54 -> 0.52). (Split add loops measured slower: they stay combined.)
    if na:
        if sa == 0:                    # a broadcast from one element: a dot product
            GA[gao] += _gdot(n, G, go, B, bo, sb)
        else:
            for i in range(n):
                GA[_u(gao + i * sa)] += G[_u(go + i)] * B[_u(bo + i * sb)]
    if nb:
        if sb == 0:
            GB[gbo] += _gdot(n, G, go, A, ao, sa)
        else:
            for i in range(n):
                GB[_u(gbo + i * sb)] += G[_u(go + i)] * A[_u(ao + i * sa)]


# d(a / b) = da / b - a db / b^2
@_jit
def fwd_div(n, A, ao, sa, B, bo, sb, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = A[_u(ao + i * sa)] / B[_u(bo + i * sb)]


@_jit
def vjp_div(n, G, go, A, ao, sa, B, bo, sb, Y, yo, GA, gao, GB, gbo, na, nb):
    if sb == 0 and sa == 1:            # x / s: s's gradient, -dot(g, x) / s^2 in one sum
        bi = B[bo]
        if na:
            for i in range(n):
                GA[_u(gao + i)] += G[_u(go + i)] / bi
        if nb:
            GB[gbo] -= _gdot(n, G, go, A, ao, sa) / (np.float64(bi) * bi)
        return
    for i in range(n):
        bi = B[_u(bo + i * sb)]
        if na:
            GA[_u(gao + i * sa)] += G[_u(go + i)] / bi
        if nb:
            GB[_u(gbo + i * sb)] -= G[_u(go + i)] * A[_u(ao + i * sa)] / (bi * bi)


# d(a^b) = b a^(b-1) da + a^b log(a) db   (torch: the db term is 0 where a == 0 and b >= 0)
@_jit
def fwd_pow(n, A, ao, sa, B, bo, sb, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = A[_u(ao + i * sa)] ** B[_u(bo + i * sb)]


@_jit
def vjp_pow(n, G, go, A, ao, sa, B, bo, sb, Y, yo, GA, gao, GB, gbo, na, nb):
    for i in range(n):
        ai = A[_u(ao + i * sa)]
        bi = B[_u(bo + i * sb)]
        if na and bi != 0.0:
            GA[_u(gao + i * sa)] += G[_u(go + i)] * bi * ai ** (bi - 1)
        if nb and not (ai == 0.0 and bi >= 0.0):
            GB[_u(gbo + i * sb)] += G[_u(go + i)] * Y[_u(yo + i)] * math.log(ai)


# ---------------------------------------------------------------- reductions
# The gradient of an operand broadcast from one element (x - x.mean(), w * x) is a sum over
# the output. Accumulated in its own slot of the adjoint store, element by element, it ran
# at the store's latency (~5 cycles an element: `(x - x.mean()).sum()`'s backward at 10^4
# float32, 45 against torch's 38 us); these sum in float64 with reassociation (vectorised).
_jit_sum = njit(fastmath={"reassoc"}, boundscheck=False, error_model="numpy", **INTERNAL)


@_jit_sum
def _gsum(n, G, go):
    s = 0.0
    for i in range(n):
        s += G[_u(go + i)]
    return s


@_jit
def _vjp_pass(n, G, go, GX, gxo, sx, sign):
    """GX += sign G for an operand of add / sub (sign +-1), when the other operand or this one
    is broadcast from one element (sx == 0: this one, its gradient the sum of G)."""
    if sx == 0:
        GX[gxo] += sign * _gsum(n, G, go)
    elif sign > 0:
        for i in range(n):
            GX[_u(gxo + i)] += G[_u(go + i)]
    else:
        for i in range(n):
            GX[_u(gxo + i)] -= G[_u(go + i)]


@_jit_sum
def _gdot(n, G, go, X, xo, sx):
    s = 0.0
    for i in range(n):
        s += np.float64(G[_u(go + i)]) * X[_u(xo + i * sx)]
    return s


# d(c sum x) = c dx  (c = 1 for sum, 1/n for mean). Summed in float64 (as the eager
# x.sum(): float32 added in float32 one after the other stops growing at 2^24)
@_jit
def fwd_sum(n, X, xo, c, Y, yo):
    Y[yo] = _gsum(n, X, xo) * c


@_jit
def vjp_sum(n, G, go, c, GX, gxo):
    v = G[go] * c
    for i in range(n):
        GX[_u(gxo + i)] += v


# ---------------------------------------------------------------- index maps
# gather: y[i] = x[idx[i]];  d: gx[idx[i]] += g[i]   (expand, slicing, select, transpose)
@_jit
def fwd_gather(n, m, X, xo, I, io, c, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = X[_u(xo + I[_u(io + i)])]


# More outputs than inputs (n > m: an expand, whose VJP is the un-broadcasting sum) adds
# the cotangents up in float64 first, as the segment sums below do
@_jit
def vjp_gather(n, m, G, go, I, io, c, GX, gxo):
    if n <= m:
        for i in range(n):
            GX[_u(gxo + I[_u(io + i)])] += G[_u(go + i)]
    elif m == 1:
        GX[gxo] += _gsum(n, G, go)
    else:
        acc = np.zeros(m, np.float64)
        for i in range(n):
            acc[_u(I[_u(io + i)])] += G[_u(go + i)]
        for j in range(m):
            GX[_u(gxo + j)] += acc[j]


# segment sum: y[idx[i]] += c x[i];  d: gx[i] += c g[idx[i]]   (sum/mean over dims).
# Accumulated in float64 (as the eager sums over dims, _sums.py)
@_jit
def fwd_segsum(n, m, X, xo, I, io, c, Y, yo):
    if m == 1:
        Y[yo] = _gsum(n, X, xo) * c
        return
    acc = np.zeros(m, np.float64)
    for i in range(n):
        acc[_u(I[_u(io + i)])] += X[_u(xo + i)]
    for j in range(m):
        Y[_u(yo + j)] = acc[j] * c


@_jit
def vjp_segsum(n, m, G, go, I, io, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += c * G[_u(go + I[_u(io + i)])]


# identity: y = x; d: gx += g   (view, reshape, unbind, clone; n = m = size)
@_jit
def fwd_copy(n, m, X, xo, I, io, c, Y, yo):
    for i in range(m):
        Y[_u(yo + i)] = X[_u(xo + i)]


@_jit
def vjp_copy(n, m, G, go, I, io, c, GX, gxo):
    for i in range(m):
        GX[_u(gxo + i)] += G[_u(go + i)]


# Offset rows: index maps over a contiguous range, which the entry's P0 gives as an element
# offset (``io``; no index array in I). n is the range's length (the smaller side).
# slice: y[i] = x[io + i] (i < n = y's size);  d: gx[io + i] += g[i]
#   (basic slicing/select that leaves a contiguous block of a contiguous tensor: x[1:], x[2])
@_jit
def fwd_slice(n, m, X, xo, I, io, c, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = X[xo + io + i]


@_jit
def vjp_slice(n, m, G, go, I, io, c, GX, gxo):
    for i in range(n):
        GX[gxo + io + i] += G[_u(go + i)]


# embed (slice's transpose): y = zeros(m); y[io + i] = x[i] (i < n = x's size);  d: gx[i] += g[io + i]
#   (the recorded VJP of slice under create_graph: torch's SliceBackwardBackward0)
@_jit
def fwd_embed(n, m, X, xo, I, io, c, Y, yo):
    for j in range(m):
        Y[yo + j] = 0
    for i in range(n):
        Y[yo + io + i] = X[_u(xo + i)]


@_jit
def vjp_embed(n, m, G, go, I, io, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += G[go + io + i]


# transpose: y (c, r) = x (r, c)^T for x flat of n = r * c elements, r = io (no index array);
#   d: gx[i * c + j] += g[j * r + i]   (t(), transpose(0, 1), .T, permute(1, 0) of a matrix;
#   self-transposing: its recorded VJP is a transpose with r = c)
@_jit
def fwd_transpose(n, m, X, xo, I, io, c, Y, yo):
    r = io
    cc = n // r if r > 0 else 0
    for i in range(r):
        for j in range(cc):
            Y[yo + j * r + i] = X[xo + i * cc + j]


@_jit
def vjp_transpose(n, m, G, go, I, io, c, GX, gxo):
    r = io
    cc = n // r if r > 0 else 0
    for i in range(r):
        for j in range(cc):
            GX[gxo + i * cc + j] += G[go + j * r + i]


# ---------------------------------------------------------------- matrix product
# Y (m,n) = A (m,k) B (k,n);  dA += G B^T, dB += A^T G   (dot / mv / mm share it)
@_jit
def fwd_mm(m, k, n, A, ao, B, bo, Y, yo):
    if _blas_mm(0, 0, m, n, k, A, ao, B, bo, Y, yo, 0.0):
        return
    for i in range(m):
        for j in range(n):
            Y[yo + i * n + j] = 0
        for p in range(k):
            aip = A[ao + i * k + p]
            for j in range(n):
                Y[yo + i * n + j] += aip * B[bo + p * n + j]


@_jit
def vjp_mm(m, k, n, G, go, A, ao, B, bo, GA, gao, GB, gbo, na, nb):
    if m * k * n >= _GEMM_MIN and _native_fn(_SGEMM if G.itemsize == 4 else _DGEMM) != 0:
        if na:                      # GA (m,k) += G (m,n) B^T, with B^T copied out first:
            T = np.empty(n * k, G.dtype)    # on 32x64x64 float32 OpenBLAS's transposed-
            for j in range(n):              # operand product took 5-7 us, the copy and a
                r = j * k                   # plain product ~4
                for p in range(k):
                    T[_u(r + p)] = B[_u(bo + p * n + j)]
            _blas_mm(0, 0, m, k, n, G, go, T, 0, GA, gao, 1.0)
        if nb:                      # GB (k,n) += A^T G
            _blas_mm(1, 0, k, n, m, A, ao, G, go, GB, gbo, 1.0)
        return
    if n == 1:                      # matrix-vector (mv, dot, a net's last layer): loops over
        if na:                      # k contiguous elements that vectorise (the general form's
            for i in range(m):      # inner loop would run once per (i, p))
                gi = G[_u(go + i)]
                r = gao + i * k
                for p in range(k):
                    GA[_u(r + p)] += gi * B[_u(bo + p)]
        if nb:
            for i in range(m):
                gi = G[_u(go + i)]
                r = ao + i * k
                for p in range(k):
                    GB[_u(gbo + p)] += A[_u(r + p)] * gi
        return
    if na:
        for i in range(m):
            for p in range(k):
                s = G.dtype.type(0)
                for j in range(n):
                    s += G[go + i * n + j] * B[bo + p * n + j]
                GA[gao + i * k + p] += s
    if nb:
        for i in range(m):
            for p in range(k):
                aip = A[ao + i * k + p]
                for j in range(n):
                    GB[gbo + p * n + j] += aip * G[go + i * n + j]


# ================================================================ breadth rows (issue 4)
# ---------------------------------------------------------------- unary elementwise
# d tan(x) = (1 + tan(x)^2) dx
@_jit
def fwd_tan(n, X, xo, c, Y, yo):
    if _vm(10, n, X, xo, Y, yo):     # VM_CODES['tan']: libmvec (_native)
        return
    for i in range(n):
        Y[_u(yo + i)] = math.tan(X[_u(xo + i)])


@_jit
def vjp_tan(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        y = Y[_u(yo + i)]
        GX[_u(gxo + i)] += G[_u(go + i)] * (1 + y * y)


# d asin(x) = dx / sqrt(1 - x^2)
@_jit
def fwd_asin(n, X, xo, c, Y, yo):
    if _vm(11, n, X, xo, Y, yo):     # VM_CODES['asin']: libmvec (_native)
        return
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = math.asin(v) if -1.0 <= v <= 1.0 else np.nan


@_jit
def vjp_asin(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        v = X[_u(xo + i)]
        GX[_u(gxo + i)] += G[_u(go + i)] / math.sqrt(1 - v * v) if v * v <= 1 else np.nan


# d acos(x) = -dx / sqrt(1 - x^2)
@_jit
def fwd_acos(n, X, xo, c, Y, yo):
    if _vm(12, n, X, xo, Y, yo):     # VM_CODES['acos']: libmvec (_native)
        return
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = math.acos(v) if -1.0 <= v <= 1.0 else np.nan


@_jit
def vjp_acos(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        v = X[_u(xo + i)]
        GX[_u(gxo + i)] -= G[_u(go + i)] / math.sqrt(1 - v * v) if v * v <= 1 else np.nan


# d atan(x) = dx / (1 + x^2)
@_jit
def fwd_atan(n, X, xo, c, Y, yo):
    if _vm(13, n, X, xo, Y, yo):     # VM_CODES['atan']: libmvec (_native)
        return
    for i in range(n):
        Y[_u(yo + i)] = math.atan(X[_u(xo + i)])


@_jit
def vjp_atan(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        v = X[_u(xo + i)]
        GX[_u(gxo + i)] += G[_u(go + i)] / (1 + v * v)


# d sinh(x) = cosh(x) dx
@_jit
def fwd_sinh(n, X, xo, c, Y, yo):
    if _vm(14, n, X, xo, Y, yo):     # VM_CODES['sinh']: libmvec (_native)
        return
    for i in range(n):
        Y[_u(yo + i)] = math.sinh(X[_u(xo + i)])


@_jit
def vjp_sinh(n, G, go, X, xo, Y, yo, c, GX, gxo):
    if _vm_vjp(15, 0, n, G, go, X, xo, GX, gxo):    # cosh on libmvec (_native)
        return
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] * math.cosh(X[_u(xo + i)])


# d cosh(x) = sinh(x) dx
@_jit
def fwd_cosh(n, X, xo, c, Y, yo):
    if _vm(15, n, X, xo, Y, yo):     # VM_CODES['cosh']: libmvec (_native)
        return
    for i in range(n):
        Y[_u(yo + i)] = math.cosh(X[_u(xo + i)])


@_jit
def vjp_cosh(n, G, go, X, xo, Y, yo, c, GX, gxo):
    if _vm_vjp(14, 0, n, G, go, X, xo, GX, gxo):    # sinh on libmvec (_native)
        return
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] * math.sinh(X[_u(xo + i)])


# d erf(x) = 2/sqrt(pi) exp(-x^2) dx
@_jit
def fwd_erf(n, X, xo, c, Y, yo):
    if _vm(16, n, X, xo, Y, yo):     # VM_CODES['erf']: libmvec (_native)
        return
    for i in range(n):
        Y[_u(yo + i)] = math.erf(X[_u(xo + i)])


@_jit
def vjp_erf(n, G, go, X, xo, Y, yo, c, GX, gxo):
    if _vm_vjp(1, 2, n, G, go, X, xo, GX, gxo):     # exp(-x^2) on libmvec (_native)
        return
    for i in range(n):
        v = X[_u(xo + i)]
        GX[_u(gxo + i)] += G[_u(go + i)] * 1.1283791670955126 * math.exp(-v * v)


# d log1p(x) = dx / (1 + x)
@_jit
def fwd_log1p(n, X, xo, c, Y, yo):
    if _vm(17, n, X, xo, Y, yo):     # VM_CODES['log1p']: libmvec (_native)
        return
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = math.log1p(v) if v > -1 else (-np.inf if v == -1 else np.nan)


@_jit
def vjp_log1p(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] / (1 + X[_u(xo + i)])


# d expm1(x) = (expm1(x) + 1) dx
@_jit
def fwd_expm1(n, X, xo, c, Y, yo):
    if _vm(18, n, X, xo, Y, yo):     # VM_CODES['expm1']: libmvec (_native)
        return
    for i in range(n):
        Y[_u(yo + i)] = math.expm1(X[_u(xo + i)])


@_jit
def vjp_expm1(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] * (Y[_u(yo + i)] + 1)


# d(c x) = c dx   (a constant factor: log2/log10/exp2 compositions, var's 1/(n-1) ...)
@_jit
def fwd_scale(n, X, xo, c, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = c * X[_u(xo + i)]


@_jit
def vjp_scale(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += c * G[_u(go + i)]


# piecewise constant: c = 0 floor, 1 ceil, 2 round (half to even), 3 trunc, 4 sign; d = 0
@_jit
def fwd_step(n, X, xo, c, Y, yo):
    k = int(c)
    for i in range(n):
        v = X[_u(xo + i)]
        if k == 0:
            Y[_u(yo + i)] = np.floor(v)
        elif k == 1:
            Y[_u(yo + i)] = np.ceil(v)
        elif k == 2:
            Y[_u(yo + i)] = np.rint(v)
        elif k == 3:
            Y[_u(yo + i)] = np.trunc(v)
        elif v > 0:                  # sign: nan and -0 give 0 (torch)
            Y[_u(yo + i)] = 1.0
        elif v < 0:
            Y[_u(yo + i)] = -1.0
        else:
            Y[_u(yo + i)] = 0.0


@_jit
def vjp_step(n, G, go, X, xo, Y, yo, c, GX, gxo):
    return


# clamp_min(x, c) = max(x, c); d = [x >= c] dx   (torch: the bound itself passes)
@_jit
def fwd_clamp_min(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = v if (v >= c or v != v) else c


@_jit
def vjp_clamp_min(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        if X[_u(xo + i)] >= c:
            GX[_u(gxo + i)] += G[_u(go + i)]


# clamp_max(x, c) = min(x, c); d = [x <= c] dx
@_jit
def fwd_clamp_max(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = v if (v <= c or v != v) else c


@_jit
def vjp_clamp_max(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        if X[_u(xo + i)] <= c:
            GX[_u(gxo + i)] += G[_u(go + i)]


# leaky_relu(x; slope c): d = (x > 0 ? 1 : c) dx
@_jit
def fwd_leaky_relu(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = v if v > 0 else v * c


@_jit
def vjp_leaky_relu(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        if X[_u(xo + i)] > 0:
            GX[_u(gxo + i)] += G[_u(go + i)]
        else:
            GX[_u(gxo + i)] += G[_u(go + i)] * c


# elu(x; alpha c) = x > 0 ? x : c (exp(x) - 1); d = (x > 0 ? 1 : y + c) dx
@_jit
def fwd_elu(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = v if v > 0 else c * math.expm1(v)


@_jit
def vjp_elu(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        if X[_u(xo + i)] > 0:
            GX[_u(gxo + i)] += G[_u(go + i)]
        else:
            GX[_u(gxo + i)] += G[_u(go + i)] * (Y[_u(yo + i)] + c)


# gelu: c = 0 exact x Phi(x); c = 1 tanh approximation
@_jit
def fwd_gelu(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        if c == 0.0:
            Y[_u(yo + i)] = 0.5 * v * (1.0 + math.erf(v * 0.7071067811865476))
        else:
            u = 0.7978845608028654 * (v + 0.044715 * v * v * v)
            Y[_u(yo + i)] = 0.5 * v * (1.0 + math.tanh(u))


@_jit
def vjp_gelu(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        v = X[_u(xo + i)]
        if c == 0.0:
            d = (0.5 * (1.0 + math.erf(v * 0.7071067811865476))
                 + v * 0.3989422804014327 * math.exp(-0.5 * v * v))
        else:
            u = 0.7978845608028654 * (v + 0.044715 * v * v * v)
            t = math.tanh(u)
            d = 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * 0.7978845608028654 * (
                1.0 + 3.0 * 0.044715 * v * v)
        GX[_u(gxo + i)] += G[_u(go + i)] * d


@_jit
def _sig(v):
    if v >= 0:
        return 1.0 / (1.0 + math.exp(-v))
    z = math.exp(v)
    return z / (1.0 + z)


# silu(x) = x sigmoid(x); d = s (1 + x (1 - s)) dx
@_jit
def fwd_silu(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = v * _sig(v)


@_jit
def vjp_silu(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        v = X[_u(xo + i)]
        s = _sig(v)
        GX[_u(gxo + i)] += G[_u(go + i)] * s * (1.0 + v * (1.0 - s))


# softplus(x; beta c, threshold 20) = log1p(exp(c x)) / c, x where c x > 20;
# d = sigmoid(c x) dx (1 above the threshold)
@_jit
def fwd_softplus(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        z = v * c
        if z > 20.0:
            Y[_u(yo + i)] = v
        else:
            Y[_u(yo + i)] = (max(z, 0.0) + math.log1p(math.exp(-abs(z)))) / c


@_jit
def vjp_softplus(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        z = X[_u(xo + i)] * c
        if z > 20.0:
            GX[_u(gxo + i)] += G[_u(go + i)]
        else:
            GX[_u(gxo + i)] += G[_u(go + i)] * _sig(z)


# log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)); d = sigmoid(-x) dx
@_jit
def fwd_log_sigmoid(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        Y[_u(yo + i)] = min(v, 0.0) - math.log1p(math.exp(-abs(v)))


@_jit
def vjp_log_sigmoid(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] * _sig(-X[_u(xo + i)])


# smooth_l1(x; beta c) = |x| < c ? x^2 / (2c) : |x| - c/2; d = clip(x / c, -1, 1) dx
@_jit
def fwd_smooth_l1(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        a = abs(v)
        Y[_u(yo + i)] = 0.5 * v * v / c if a < c else a - 0.5 * c


@_jit
def vjp_smooth_l1(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        v = X[_u(xo + i)]
        if v >= c:
            GX[_u(gxo + i)] += G[_u(go + i)]
        elif v <= -c:
            GX[_u(gxo + i)] -= G[_u(go + i)]
        else:
            GX[_u(gxo + i)] += G[_u(go + i)] * v / c


# hardsigmoid(x) = clamp((x + 3) / 6, 0, 1), torch's value (nan stays nan); d = dx / 6 strictly
# between -3 and 3 (0 elsewhere and at nan), with torch's gradient constant: the float 1/6, for
# double too. c is unused.
@_jit
def fwd_hardsigmoid(n, X, xo, c, Y, yo):
    for i in range(n):
        v = X[_u(xo + i)]
        if v <= -3.0:
            Y[_u(yo + i)] = 0.0
        elif v >= 3.0:
            Y[_u(yo + i)] = 1.0
        else:
            Y[_u(yo + i)] = (v + 3.0) / 6.0


@_jit
def vjp_hardsigmoid(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        v = X[_u(xo + i)]
        if v > -3.0 and v < 3.0:
            GX[_u(gxo + i)] += G[_u(go + i)] * 0.1666666716337204


# polygamma psi^(k)(x) for x > 0: recurrence up to x >= 15, then the asymptotic series
_BERN = (1.0 / 6, -1.0 / 30, 1.0 / 42, -1.0 / 30, 5.0 / 66, -691.0 / 2730, 7.0 / 6)


@_jit
def _psi_pos(k, x):
    """psi^(k)(x) for x > 0."""
    acc = 0.0
    fk = math.gamma(k + 1.0)
    sgn = 1.0 if k % 2 == 1 else -1.0   # (-1)^(k+1)
    while x < 15.0:
        if k == 0:
            acc -= 1.0 / x
        else:
            acc += sgn * fk / x ** (k + 1)
        x += 1.0
    if k == 0:
        r = math.log(x) - 0.5 / x
        x2 = 1.0 / (x * x)
        p = x2
        for j in range(7):
            r -= _BERN[j] / (2.0 * (j + 1)) * p
            p *= x2
        return acc + r
    r = math.gamma(k * 1.0) / x ** k + fk / (2.0 * x ** (k + 1))
    for j in range(7):
        m = 2 * (j + 1)
        r += _BERN[j] * math.gamma(m + k * 1.0) / (math.gamma(m + 1.0) * x ** (m + k))
    return acc + sgn * r


@_jit
def _cot_pi(x):
    """cot(pi x) for a non-integer x, through the exact offset r = x - round(x) in
    [-1/2, 1/2]: cos(pi r) / sin(pi r), cos(pi r) = sin(pi (1/2 - |r|)) (exact 0 at 1/2)."""
    r = x - np.floor(x + 0.5)        # (np.round would pull numba.np.arraymath into the cache)
    return math.sin(math.pi * (0.5 - abs(r))) / math.sin(math.pi * r)


@_jit
def _cot_deriv(k, c):
    """d^k/dy^k cot(y) at cot(y) = c: the polynomial P_k(c), P_0 = c,
    P_(j+1) = -(1 + c^2) P_j'(c)."""
    a = np.zeros(k + 2)
    a[1] = 1.0
    for j in range(k):
        b = np.zeros(k + 2)
        for d in range(1, j + 2):
            b[d - 1] -= d * a[d]
            b[d + 1] -= d * a[d]
        a = b
    r = 0.0
    for d in range(k + 1, -1, -1):
        r = r * c + a[d]
    return r


@_jit
def _polygamma(k, x):
    """psi^(k)(x) in float64. Poles (x <= 0 an integer, -inf included): digamma nan (-0 / +0:
    +inf / -inf), inf for odd k, -inf for even k >= 2, as torch; psi^(1)(-inf) and
    psi^(k >= 2)(+inf) nan, as torch. No loop depends on |x|."""
    x = np.float64(x)
    if x != x:
        return np.nan
    if x == math.inf:
        return np.nan if k >= 2 else _psi_pos(k, x)
    if x <= 0.0:
        if x == np.floor(x):                # poles (and -inf), as torch
            if k == 0:
                return -math.copysign(math.inf, x) if x == 0.0 else np.nan
            if k == 1 and x == -math.inf:
                return np.nan
            return math.inf if k % 2 == 1 else -math.inf
        if k == 0:      # reflection, torch's form (tan of the fractional part)
            return _psi_pos(0, 1.0 - x) - math.pi / math.tan(math.pi * (x - np.trunc(x)))
        # the reflection differentiated k times:
        # psi^(k)(x) = (-1)^k psi^(k)(1 - x) - pi^(k+1) cot^(k)(pi x)
        s = 1.0 if k % 2 == 0 else -1.0
        return s * _psi_pos(k, 1.0 - x) - math.pi ** (k + 1) * _cot_deriv(k, _cot_pi(x))
    return _psi_pos(k, x)


# d lgamma(x) = digamma(x) dx
@_jit
def fwd_lgamma(n, X, xo, c, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = math.lgamma(X[_u(xo + i)])


@_jit
def vjp_lgamma(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] * _polygamma(0, X[_u(xo + i)])


# polygamma(c, x) (c = 0: digamma); d = polygamma(c + 1, x) dx
@_jit
def fwd_polygamma(n, X, xo, c, Y, yo):
    k = int(c)
    for i in range(n):
        Y[_u(yo + i)] = _polygamma(k, X[_u(xo + i)])


@_jit
def vjp_polygamma(n, G, go, X, xo, Y, yo, c, GX, gxo):
    k = int(c) + 1
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)] * _polygamma(k, X[_u(xo + i)])


# x + c and c - x for a recorded scalar constant c: the batched plans rewrite binary entries
# with such a constant operand to these rows (no lanes of the constant, one pass per entry).
# A float32 store computes in float64 and rounds once, which equals float32 arithmetic on the
# float32 constant (double rounding is innocuous for + and - from 24 to 53 bits).
@_jit
def fwd_add_scalar(n, X, xo, c, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = X[_u(xo + i)] + c


@_jit
def vjp_add_scalar(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] += G[_u(go + i)]


@_jit
def fwd_rsub_scalar(n, X, xo, c, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = c - X[_u(xo + i)]


@_jit
def vjp_rsub_scalar(n, G, go, X, xo, Y, yo, c, GX, gxo):
    for i in range(n):
        GX[_u(gxo + i)] -= G[_u(go + i)]


# ---------------------------------------------------------------- binary elementwise
# maximum: d = [a > b] da + [b > a] db, ties split in half, nan: both (torch)
@_jit
def fwd_maximum(n, A, ao, sa, B, bo, sb, Y, yo):
    for i in range(n):
        a = A[_u(ao + i * sa)]
        b = B[_u(bo + i * sb)]
        Y[_u(yo + i)] = a if (a > b or a != a) else b


@_jit
def vjp_maximum(n, G, go, A, ao, sa, B, bo, sb, Y, yo, GA, gao, GB, gbo, na, nb):
    for i in range(n):
        a = A[_u(ao + i * sa)]
        b = B[_u(bo + i * sb)]
        g = G[_u(go + i)]
        if a == b:
            g = g * 0.5
            if na:
                GA[_u(gao + i * sa)] += g
            if nb:
                GB[_u(gbo + i * sb)] += g
        else:                        # a nan operand: both get g (torch)
            if na and not b > a:
                GA[_u(gao + i * sa)] += g
            if nb and not a > b:
                GB[_u(gbo + i * sb)] += g


# minimum: d = [a < b] da + [b < a] db, ties split in half, nan: both
@_jit
def fwd_minimum(n, A, ao, sa, B, bo, sb, Y, yo):
    for i in range(n):
        a = A[_u(ao + i * sa)]
        b = B[_u(bo + i * sb)]
        Y[_u(yo + i)] = a if (a < b or a != a) else b


@_jit
def vjp_minimum(n, G, go, A, ao, sa, B, bo, sb, Y, yo, GA, gao, GB, gbo, na, nb):
    for i in range(n):
        a = A[_u(ao + i * sa)]
        b = B[_u(bo + i * sb)]
        g = G[_u(go + i)]
        if a == b:
            g = g * 0.5
            if na:
                GA[_u(gao + i * sa)] += g
            if nb:
                GB[_u(gbo + i * sb)] += g
        else:                        # a nan operand: both get g (torch)
            if na and not b < a:
                GA[_u(gao + i * sa)] += g
            if nb and not a < b:
                GB[_u(gbo + i * sb)] += g


# atan2(a, b): d = (b da - a db) / (a^2 + b^2), 0 where a^2 + b^2 == 0 (torch)
@_jit
def fwd_atan2(n, A, ao, sa, B, bo, sb, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = math.atan2(A[_u(ao + i * sa)], B[_u(bo + i * sb)])


@_jit
def vjp_atan2(n, G, go, A, ao, sa, B, bo, sb, Y, yo, GA, gao, GB, gbo, na, nb):
    for i in range(n):
        a = A[_u(ao + i * sa)]
        b = B[_u(bo + i * sb)]
        d = a * a + b * b
        r = G[_u(go + i)] / d if d != 0 else G[_u(go + i)] * 0   # (0, 0): 0 (torch)
        if na:
            GA[_u(gao + i * sa)] += r * b
        if nb:
            GB[_u(gbo + i * sb)] -= r * a


# hypot(a, b) = sqrt(a^2 + b^2): d = (a da + b db) / y
@_jit
def fwd_hypot(n, A, ao, sa, B, bo, sb, Y, yo):
    for i in range(n):
        Y[_u(yo + i)] = math.hypot(A[_u(ao + i * sa)], B[_u(bo + i * sb)])


@_jit
def vjp_hypot(n, G, go, A, ao, sa, B, bo, sb, Y, yo, GA, gao, GB, gbo, na, nb):
    for i in range(n):
        r = G[_u(go + i)] / Y[_u(yo + i)]
        if na:
            GA[_u(gao + i * sa)] += r * A[_u(ao + i * sa)]
        if nb:
            GB[_u(gbo + i * sb)] += r * B[_u(bo + i * sb)]


# remainder(a, b) = a - floor(a / b) b (the sign of b): d = da - floor(a / b) db
@_jit
def fwd_remainder(n, A, ao, sa, B, bo, sb, Y, yo):
    for i in range(n):
        a = A[_u(ao + i * sa)]
        b = B[_u(bo + i * sb)]
        if b == 0 or a != a or b != b:
            Y[_u(yo + i)] = np.nan
        else:
            r = np.fmod(a, b)
            if r != 0 and ((r < 0) != (b < 0)):
                r += b
            Y[_u(yo + i)] = r


@_jit
def vjp_remainder(n, G, go, A, ao, sa, B, bo, sb, Y, yo, GA, gao, GB, gbo, na, nb):
    for i in range(n):
        g = G[_u(go + i)]
        if na:
            GA[_u(gao + i * sa)] += g
        if nb:
            # torch's div(a, b, 'floor'): (a - fmod(a, b)) / b rounded (Python's //), which
            # floor(a / b) is not when a / b rounds up to an integer (1.0 / 0.2)
            a = A[_u(ao + i * sa)]
            b = B[_u(bo + i * sb)]
            if b == 0:
                f = a / b
            else:
                m = np.fmod(a, b)
                q = (a - m) / b
                if m != 0 and ((b < 0) != (m < 0)):
                    q -= 1.0
                if q != 0:
                    f = np.floor(q)
                    if q - f > 0.5:
                        f += 1.0
                else:
                    f = np.copysign(0.0, a / b)
            GB[_u(gbo + i * sb)] -= g * f


# ================================================================ batched forms (issue 6)
# A batch of B points is laid out slot-major: element i of the node at offset o lives at
# X[(o + i) * B + lane], so one entry's work over the chunk is a contiguous, vectorisable run.
# Unary and binary rows reuse their own kernels above (over n * B contiguous elements, or per
# element over B lanes; tapegrad.func gives recorded constants lanes of their own); the kinds
# whose kernels address elements (sum, index, mm) have batched forms here, bfwd_/bvjp_<name>,
# taking the single-point arguments (offsets already scaled by B) plus B.
# Inside these kernels every lane loop indexes a view starting at its run (index j >= 0):
# LLVM then proves the accesses affine and vectorises them (with an absolute offset added,
# Numba's negative-index wraparound hides that, and the loops stay scalar: ~8x slower).
@njit(inline="always", nogil=True)
def _bexp(X, o, Y, yo, B):
    """Y[yo:yo+B] = exp(X[o:o+B]) (libmvec when bound)."""
    if not _vm(1, B, X, o, Y, yo):
        for j in range(B):
            Y[yo + j] = math.exp(X[o + j])


@njit(inline="always", nogil=True)
def _brow_expsum(X, o, Y, p, L, B, m, s, t, into_y):
    """One row of L elements in B lanes (starting at X[o], Y[p]): Y = X - the lane's row
    maximum (m), s = the lane's sum of exp(Y). The exponentials replace Y (``into_y``:
    softmax) or pass through t (log_softmax keeps the shifted values)."""
    for j in range(B):
        m[j] = X[o + j]
    for i in range(1, L):
        for j in range(B):
            v = X[o + i * B + j]
            if v > m[j] or v != v:
                m[j] = v
    s[:] = 0
    for i in range(L):
        q = p + i * B
        for j in range(B):
            Y[q + j] = X[o + i * B + j] - m[j]
        if into_y:
            _bexp(Y, q, Y, q, B)
            for j in range(B):
                s[j] += Y[q + j]
        else:
            _bexp(Y, q, t, 0, B)
            for j in range(B):
                s[j] += t[j]


@_jit
def bfwd_softmax(n, X, xo, c, Y, yo, B):
    L = int(c)
    m = np.empty(B, Y.dtype)
    s = np.empty(B, Y.dtype)
    for r in range(0, n, L):
        p = yo + r * B
        _brow_expsum(X, xo + r * B, Y, p, L, B, m, s, m, True)
        for i in range(L):
            for j in range(B):
                Y[p + i * B + j] = Y[p + i * B + j] / s[j]


@_jit
def bvjp_softmax(n, G, go, X, xo, Y, yo, c, GX, gxo, B):
    L = int(c)
    s = np.empty(B, GX.dtype)
    for r in range(0, n, L):
        q, p, t = go + r * B, yo + r * B, gxo + r * B
        s[:] = 0
        for i in range(L):
            for j in range(B):
                s[j] += G[q + i * B + j] * Y[p + i * B + j]
        for i in range(L):
            for j in range(B):
                GX[t + i * B + j] += Y[p + i * B + j] * (G[q + i * B + j] - s[j])


@_jit
def bfwd_log_softmax(n, X, xo, c, Y, yo, B):
    L = int(c)
    m = np.empty(B, Y.dtype)
    s = np.empty(B, Y.dtype)
    t = np.empty(B, Y.dtype)
    for r in range(0, n, L):
        p = yo + r * B
        _brow_expsum(X, xo + r * B, Y, p, L, B, m, s, t, False)
        for j in range(B):
            s[j] = math.log(s[j])
        for i in range(L):
            for j in range(B):
                Y[p + i * B + j] = Y[p + i * B + j] - s[j]


@_jit
def bvjp_log_softmax(n, G, go, X, xo, Y, yo, c, GX, gxo, B):
    L = int(c)
    s = np.empty(B, GX.dtype)
    t = np.empty(B, GX.dtype)
    for r in range(0, n, L):
        q, p, u = go + r * B, yo + r * B, gxo + r * B
        s[:] = 0
        for i in range(L):
            for j in range(B):
                s[j] += G[q + i * B + j]
        for i in range(L):
            _bexp(Y, p + i * B, t, 0, B)
            for j in range(B):
                GX[u + i * B + j] += G[q + i * B + j] - t[j] * s[j]


@_jit
def bfwd_sum(n, X, xo, c, Y, yo, B):
    y = Y[yo:yo + B]
    acc = np.zeros(B, np.float64)
    for i in range(n):
        x = X[xo + i * B:]
        for j in range(B):
            acc[j] += x[j]
    for j in range(B):
        y[j] = acc[j] * c


@_jit
def bvjp_sum(n, G, go, c, GX, gxo, B):
    g = G[go:go + B]
    for i in range(n):
        gx = GX[gxo + i * B:]
        for j in range(B):
            gx[j] += c * g[j]


@_jit
def bfwd_gather(n, m, X, xo, I, io, c, Y, yo, B):
    for i in range(n):
        x = X[xo + I[io + i] * B:]
        y = Y[yo + i * B:]
        for j in range(B):
            y[j] = x[j]


@_jit
def bvjp_gather(n, m, G, go, I, io, c, GX, gxo, B):
    if n <= m:
        for i in range(n):
            gx = GX[gxo + I[io + i] * B:]
            g = G[go + i * B:]
            for j in range(B):
                gx[j] += g[j]
        return
    acc = np.zeros(m * B, np.float64)
    for i in range(n):
        a = acc[I[io + i] * B:]
        g = G[go + i * B:]
        for j in range(B):
            a[j] += g[j]
    gx = GX[gxo:gxo + m * B]
    for t in range(m * B):
        gx[t] += acc[t]


@_jit
def bfwd_segsum(n, m, X, xo, I, io, c, Y, yo, B):
    y = Y[yo:yo + m * B]
    acc = np.zeros(m * B, np.float64)
    for i in range(n):
        a = acc[I[io + i] * B:]
        x = X[xo + i * B:]
        for j in range(B):
            a[j] += x[j]
    for t in range(m * B):
        y[t] = acc[t] * c


@_jit
def bvjp_segsum(n, m, G, go, I, io, c, GX, gxo, B):
    for i in range(n):
        gx = GX[gxo + i * B:]
        g = G[go + I[io + i] * B:]
        for j in range(B):
            gx[j] += c * g[j]


@_jit
def bfwd_copy(n, m, X, xo, I, io, c, Y, yo, B):
    x = X[xo:]
    y = Y[yo:]
    for t in range(m * B):
        y[t] = x[t]


@_jit
def bvjp_copy(n, m, G, go, I, io, c, GX, gxo, B):
    g = G[go:]
    gx = GX[gxo:]
    for t in range(m * B):
        gx[t] += g[t]


@_jit
def bfwd_slice(n, m, X, xo, I, io, c, Y, yo, B):
    x = X[xo + io * B:]
    y = Y[yo:]
    for t in range(n * B):
        y[t] = x[t]


@_jit
def bvjp_slice(n, m, G, go, I, io, c, GX, gxo, B):
    g = G[go:]
    gx = GX[gxo + io * B:]
    for t in range(n * B):
        gx[t] += g[t]


@_jit
def bfwd_embed(n, m, X, xo, I, io, c, Y, yo, B):
    y = Y[yo:yo + m * B]
    for t in range(m * B):
        y[t] = 0
    x = X[xo:]
    yi = Y[yo + io * B:]
    for t in range(n * B):
        yi[t] = x[t]


@_jit
def bvjp_embed(n, m, G, go, I, io, c, GX, gxo, B):
    g = G[go + io * B:]
    gx = GX[gxo:]
    for t in range(n * B):
        gx[t] += g[t]


@_jit
def bfwd_transpose(n, m, X, xo, I, io, c, Y, yo, B):
    r = io
    cc = n // r if r > 0 else 0
    for i in range(r):
        for j in range(cc):
            x = X[xo + (i * cc + j) * B:]
            y = Y[yo + (j * r + i) * B:]
            for t in range(B):
                y[t] = x[t]


@_jit
def bvjp_transpose(n, m, G, go, I, io, c, GX, gxo, B):
    r = io
    cc = n // r if r > 0 else 0
    for i in range(r):
        for j in range(cc):
            g = G[go + (j * r + i) * B:]
            gx = GX[gxo + (i * cc + j) * B:]
            for t in range(B):
                gx[t] += g[t]


@_jit
def _bmm_lanes(y, a, b, B):
    """y[j] += a[j] * b[j] over B lanes (views: vectorised)."""
    for j in range(B):
        y[j] += a[j] * b[j]


@_jit
def bfwd_mm(m, k, n, A, ao, Bm, bo, Y, yo, B):
    for i in range(m):
        for q in range(n):
            y = Y[yo + (i * n + q) * B:]
            for j in range(B):
                y[j] = 0
            for p in range(k):
                _bmm_lanes(y, A[ao + (i * k + p) * B:], Bm[bo + (p * n + q) * B:], B)


@_jit
def bvjp_mm(m, k, n, G, go, A, ao, Bm, bo, GA, gao, GB, gbo, B):
    for i in range(m):
        for p in range(k):
            d = GA[gao + (i * k + p) * B:]
            for q in range(n):
                _bmm_lanes(d, G[go + (i * n + q) * B:], Bm[bo + (p * n + q) * B:], B)
    for p in range(k):
        for q in range(n):
            d = GB[gbo + (p * n + q) * B:]
            for i in range(m):
                _bmm_lanes(d, A[ao + (i * k + p) * B:], G[go + (i * n + q) * B:], B)


def python_twin(kernel, cache=False):
    """A twin of a kernel that Python can call (the kernels themselves have no CPython
    wrapper: ``_addr.INTERNAL``): compiled on first call for the types it gets (cached on
    disk with ``cache``). For tests, and for the numpy reference that borrows a kernel's
    scalar algorithm (``ops._np_polygamma``)."""
    twin = _TWINS.get(kernel)
    if twin is None:
        twin = _TWINS[kernel] = njit(fastmath=False, boundscheck=False, nogil=True,
                                     error_model="numpy", cache=cache)(kernel.py_func)
    return twin


_TWINS = {}


def eager(kernel):
    """``kernel`` as Python calls it for an eager forward (``tapegrad._math.kernel_forward``):
    its twin (``python_twin``, cached on disk; ``python -m tapegrad.precompile`` compiles the
    eager rows' twins), or None while the compiled code is not in use (``_cache``): the caller
    computes with numpy then. The kernels themselves cannot be called from Python."""
    if not (_cache.ON or _cache.poll()):
        return None
    return python_twin(kernel, cache=True)


def pure_python(kernel):
    """``kernel`` as plain Python, the helpers it calls too (no compilation: for the numpy
    references while the compiled code is not in use, ``_cache``). Scalar helpers only: the
    intrinsics (raw addresses, native calls) have no Python form."""
    if not _PURE:
        from numba.core.dispatcher import Dispatcher
        import types as pytypes
        g = _PURE["globals"] = dict(globals())
        for name, v in list(g.items()):
            if isinstance(v, Dispatcher) and v.py_func.__module__ == __name__:
                f = v.py_func
                g[name] = pytypes.FunctionType(f.__code__, g, f.__name__, f.__defaults__)
    return _PURE["globals"][kernel.py_func.__name__]


_PURE = {}
