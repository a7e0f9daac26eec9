"""Numba kernels: one ``fwd_<op>`` / ``vjp_<op>`` pair per primitive, side by side.

Only this module and ``_interp.py`` contain Numba code. Kernels see flat, C-contiguous
1-D arrays and plain ints/floats, never Python objects. Each kernel is specialised by Numba
per dtype (float32, float64) the first time the interpreter is compiled, and cached on disk.

Calling conventions (one per *kind*; ``ops.py`` names the kind of each row and
``_interp.py`` is generated from it):

=========  ==========================================  ==============================================
kind       forward                                     VJP (accumulates into ``gx``/``ga``/``gb``)
=========  ==========================================  ==============================================
unary      ``fwd(x, c, y)``                            ``vjp(g, x, y, c, gx)``
binary     ``fwd(a, b, sa, sb, y)``                    ``vjp(g, a, b, y, sa, sb, ga, gb, na, nb)``
sum        ``fwd(x, c, y)``                            ``vjp(g, c, gx)``
index      ``fwd(x, idx, c, y)``                       ``vjp(g, idx, c, gx)``
mm         ``fwd(a, b, m, k, n, y)``                   ``vjp(g, a, b, m, k, n, ga, gb, na, nb)``
=========  ==========================================  ==============================================

``g`` is the cotangent of the output, ``c`` a float constant of the entry, ``sa``/``sb`` are
the element strides (1, or 0 for an operand broadcast from a single element), ``na``/``nb``
say whether an operand needs its gradient. Every VJP *adds* into its gradient buffers, so an
operand used several times accumulates.
"""
import math

import numpy as np
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_jit = njit(cache=True, fastmath=False, boundscheck=False, nogil=True)

# ---------------------------------------------------------------- tape layout
# Entry columns (K int64 per entry) and node columns (NK int64 per node); tape.py writes them.
K = 12
OP, NM, OUT, IA, IB, SA, SB, SY, P0, P1, CI, FL = range(K)
NK = 5
NOFF, NSIZE, NDT, NPROD, NNR = range(NK)
F_FREED, F_SAVES, F_HIDDEN = 1, 2, 4


@intrinsic
def _voidptr(typingctx, addr):
    """int64 address -> void* (to view an array that the tape references without copying)."""
    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return types.voidptr(addr), codegen


@_jit
def nslice(A, N, node):
    """The slice of a node's values/adjoint in its dtype's store (empty for node -1)."""
    if node < 0:
        return A[0:0]
    o = N[node * NK + NOFF]
    return A[o:o + N[node * NK + NSIZE]]


@_jit
def saved(V, XA, s, m):
    """A saved value: s >= 0 is an offset into V (a copy), s <= -2 the external array
    number -2-s (referenced: XA holds its address and length), -1 means none."""
    if s >= 0:
        return V[s:s + m]
    if s == -1:
        return V[0:0]
    k = -2 - s
    return carray(_voidptr(XA[2 * k]), (XA[2 * k + 1],), V.dtype)


@_jit
def operand(live, Xv, V, XA, N, node, s, m):
    """An operand's value: the node's live value during a replay, else the saved one."""
    if live and node >= 0:
        return nslice(Xv, N, node)
    return saved(V, XA, s, m)


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
def fwd_neg(x, c, y):
    for i in range(y.size):
        y[i] = -x[i]


@_jit
def vjp_neg(g, x, y, c, gx):
    for i in range(g.size):
        gx[i] -= g[i]


# d exp(x) = exp(x) dx
@_jit
def fwd_exp(x, c, y):
    for i in range(y.size):
        y[i] = math.exp(x[i])


@_jit
def vjp_exp(g, x, y, c, gx):
    for i in range(g.size):
        gx[i] += g[i] * y[i]


# d log(x) = dx / x
@_jit
def fwd_log(x, c, y):
    for i in range(y.size):
        y[i] = math.log(x[i]) if x[i] > 0 else (-np.inf if x[i] == 0 else np.nan)


@_jit
def vjp_log(g, x, y, c, gx):
    for i in range(g.size):
        gx[i] += g[i] / x[i]


# d sin(x) = cos(x) dx
@_jit
def fwd_sin(x, c, y):
    for i in range(y.size):
        y[i] = math.sin(x[i])


@_jit
def vjp_sin(g, x, y, c, gx):
    for i in range(g.size):
        gx[i] += g[i] * math.cos(x[i])


# d cos(x) = -sin(x) dx
@_jit
def fwd_cos(x, c, y):
    for i in range(y.size):
        y[i] = math.cos(x[i])


@_jit
def vjp_cos(g, x, y, c, gx):
    for i in range(g.size):
        gx[i] -= g[i] * math.sin(x[i])


# d tanh(x) = (1 - tanh(x)^2) dx
@_jit
def fwd_tanh(x, c, y):
    for i in range(y.size):
        y[i] = math.tanh(x[i])


@_jit
def vjp_tanh(g, x, y, c, gx):
    for i in range(g.size):
        gx[i] += g[i] * (1 - y[i] * y[i])


# d sigmoid(x) = s (1 - s) dx
@_jit
def fwd_sigmoid(x, c, y):
    for i in range(y.size):
        v = x[i]
        if v >= 0:
            y[i] = 1.0 / (1.0 + math.exp(-v))
        else:
            z = math.exp(v)
            y[i] = z / (1.0 + z)


@_jit
def vjp_sigmoid(g, x, y, c, gx):
    for i in range(g.size):
        gx[i] += g[i] * y[i] * (1 - y[i])


# d relu(x) = [y > 0] dx   (torch: the gradient at 0 is 0)
@_jit
def fwd_relu(x, c, y):
    for i in range(y.size):
        y[i] = x[i] if x[i] > 0 else 0.0


@_jit
def vjp_relu(g, x, y, c, gx):
    for i in range(g.size):
        if y[i] > 0:
            gx[i] += g[i]


# d sqrt(x) = dx / (2 sqrt(x))
@_jit
def fwd_sqrt(x, c, y):
    for i in range(y.size):
        y[i] = math.sqrt(x[i]) if x[i] >= 0 else np.nan


@_jit
def vjp_sqrt(g, x, y, c, gx):
    for i in range(g.size):
        gx[i] += g[i] / (2 * y[i])


# d |x| = sign(x) dx   (torch: sign(0) = 0)
@_jit
def fwd_abs(x, c, y):
    for i in range(y.size):
        y[i] = abs(x[i])


@_jit
def vjp_abs(g, x, y, c, gx):
    for i in range(g.size):
        if x[i] > 0:
            gx[i] += g[i]
        elif x[i] < 0:
            gx[i] -= g[i]


# d x^c = c x^(c-1) dx   (torch: 0 when c == 0)
@_jit
def fwd_pow_scalar(x, c, y):
    for i in range(y.size):
        y[i] = x[i] ** c


@_jit
def vjp_pow_scalar(g, x, y, c, gx):
    if c == 0.0:
        return
    for i in range(g.size):
        gx[i] += g[i] * c * x[i] ** (c - 1)


# ---------------------------------------------------------------- binary elementwise
# d(a + b) = da + db
@_jit
def fwd_add(a, b, sa, sb, y):
    for i in range(y.size):
        y[i] = a[i * sa] + b[i * sb]


@_jit
def vjp_add(g, a, b, y, sa, sb, ga, gb, na, nb):
    for i in range(g.size):
        if na:
            ga[i * sa] += g[i]
        if nb:
            gb[i * sb] += g[i]


# d(a - b) = da - db
@_jit
def fwd_sub(a, b, sa, sb, y):
    for i in range(y.size):
        y[i] = a[i * sa] - b[i * sb]


@_jit
def vjp_sub(g, a, b, y, sa, sb, ga, gb, na, nb):
    for i in range(g.size):
        if na:
            ga[i * sa] += g[i]
        if nb:
            gb[i * sb] -= g[i]


# d(a b) = b da + a db
@_jit
def fwd_mul(a, b, sa, sb, y):
    for i in range(y.size):
        y[i] = a[i * sa] * b[i * sb]


@_jit
def vjp_mul(g, a, b, y, sa, sb, ga, gb, na, nb):
    for i in range(g.size):
        if na:
            ga[i * sa] += g[i] * b[i * sb]
        if nb:
            gb[i * sb] += g[i] * a[i * sa]


# d(a / b) = da / b - a db / b^2
@_jit
def fwd_div(a, b, sa, sb, y):
    for i in range(y.size):
        y[i] = a[i * sa] / b[i * sb]


@_jit
def vjp_div(g, a, b, y, sa, sb, ga, gb, na, nb):
    for i in range(g.size):
        bi = b[i * sb]
        if na:
            ga[i * sa] += g[i] / bi
        if nb:
            gb[i * sb] -= g[i] * a[i * sa] / (bi * bi)


# d(a^b) = b a^(b-1) da + a^b log(a) db   (torch: the db term is 0 where a == 0 and b >= 0)
@_jit
def fwd_pow(a, b, sa, sb, y):
    for i in range(y.size):
        y[i] = a[i * sa] ** b[i * sb]


@_jit
def vjp_pow(g, a, b, y, sa, sb, ga, gb, na, nb):
    for i in range(g.size):
        ai = a[i * sa]
        bi = b[i * sb]
        if na:
            if bi != 0.0:
                ga[i * sa] += g[i] * bi * ai ** (bi - 1)
        if nb:
            if not (ai == 0.0 and bi >= 0.0):
                gb[i * sb] += g[i] * y[i] * math.log(ai)


# ---------------------------------------------------------------- reductions
# d(c sum x) = c dx  (c = 1 for sum, 1/n for mean)
@_jit
def fwd_sum(x, c, y):
    s = x.dtype.type(0)
    for i in range(x.size):
        s += x[i]
    y[0] = s * c


@_jit
def vjp_sum(g, c, gx):
    v = g[0] * c
    for i in range(gx.size):
        gx[i] += v


# ---------------------------------------------------------------- index maps
# gather: y[i] = x[idx[i]];  d: gx[idx[i]] += g[i]   (views, slices, expand, transpose)
@_jit
def fwd_gather(x, idx, c, y):
    for i in range(y.size):
        y[i] = x[idx[i]]


@_jit
def vjp_gather(g, idx, c, gx):
    for i in range(g.size):
        gx[idx[i]] += g[i]


# segment sum: y[idx[i]] += c x[i];  d: gx[i] += c g[idx[i]]   (sum/mean over dims)
@_jit
def fwd_segsum(x, idx, c, y):
    y[:] = 0
    for i in range(x.size):
        y[idx[i]] += x[i]
    for j in range(y.size):
        y[j] *= c


@_jit
def vjp_segsum(g, idx, c, gx):
    for i in range(gx.size):
        gx[i] += c * g[idx[i]]


# identity: y = x; d: gx += g   (view, reshape, unbind, clone)
@_jit
def fwd_copy(x, idx, c, y):
    for i in range(y.size):
        y[i] = x[i]


@_jit
def vjp_copy(g, idx, c, gx):
    for i in range(g.size):
        gx[i] += g[i]


# ---------------------------------------------------------------- matrix product
# Y (m,n) = A (m,k) B (k,n);  dA += G B^T, dB += A^T G   (dot / mv / mm share it)
@_jit
def fwd_mm(a, b, m, k, n, y):
    for i in range(m):
        for j in range(n):
            y[i * n + j] = 0
        for p in range(k):
            aip = a[i * k + p]
            for j in range(n):
                y[i * n + j] += aip * b[p * n + j]


@_jit
def vjp_mm(g, a, b, m, k, n, ga, gb, na, nb):
    if na:
        for i in range(m):
            for p in range(k):
                s = g.dtype.type(0)
                for j in range(n):
                    s += g[i * n + j] * b[p * n + j]
                ga[i * k + p] += s
    if nb:
        for i in range(m):
            for p in range(k):
                aip = a[i * k + p]
                for j in range(n):
                    gb[p * n + j] += aip * g[i * n + j]
