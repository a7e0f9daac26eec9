"""Transposed copies of 2-D float arrays, in SIMD registers and on every core.

``x.t()`` is a view; it is copied when an elementwise kernel or the tape needs its values
contiguous (``x * x.t()`` saves and multiplies a contiguous copy), by ``.contiguous()``, and
in the transpose's VJP (the cotangent of ``x.t()`` transposed back onto x's). numpy copies a
transposed array one element at a time down the columns of the source: 316 x 316 float32
took 34 us, 1000 x 1000 ~720 us (torch's ``.contiguous()``: 71 and 956 us).

Here ``_block`` moves an L x L block (L = 8 float32 or 4 float64, one 256-bit register per
row) with L loads, a network of vector shuffles (three stages of L, LLVM's
``shufflevector``: unpack pairs of rows, then pairs of pairs, then halves) and L stores, and
prefetches each destination row's next cache line for writing: without that, the stores'
misses queue up one after the other and a copy took twice as long as the same transpose
added into an array already in cache. Blocks are walked in tiles of ``TILE`` destination
rows by ``TILE_IN`` columns (the tile's source rows stay in L1/L2), tiles split over Numba's
threads (the elementwise kernels' pool, ``_vmath.start_threads``) from ``_vmath.PAR``
elements. Edges narrower than a block go element by element.

Measured (float32, median): 316 x 316 copy 10-11 us, 1000 x 1000 copy ~150-170 us and the
same transpose added into an existing array ~150-165 us (float64: ~18 / ~365 us). The VJP
adds the transposed cotangent straight into the one it accumulates into
(``transpose(x, out, add=True)``), with no intermediate array.

From ``MIN`` elements, both sides at least ``2 L``: below, numpy's copy costs about the
same as a kernel call. float32 and float64 only; other dtypes, and arrays that are not a
transposed C-contiguous matrix, are copied by numpy.
"""
import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic

from . import _cache, _vmath

MIN = 1 << 12
TILE = 64             # destination rows per tile (a prange iteration's strip)
TILE_IN = 256         # destination columns per tile
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

# shuffle masks of the L x L transpose (two source vectors' lanes numbered 0..2L-1)
_MASKS = {
    8: (([0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15]),    # unpack lo / hi
        ([0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15]),    # pairs of pairs
        ([0, 1, 2, 3, 8, 9, 10, 11], [4, 5, 6, 7, 12, 13, 14, 15])),   # 128-bit halves
    4: (([0, 4, 2, 6], [1, 5, 3, 7]),
        ([0, 1, 4, 5], [2, 3, 6, 7])),
}
_PREFETCH = 16        # elements ahead in a destination row (the next cache line or two)


def _transpose_regs(builder, rows):
    """The L columns of the L x L block whose rows are the L vectors ``rows``."""
    L = len(rows)
    masks = _MASKS[L]

    def shuf(a, b, m):
        return builder.shuffle_vector(a, b, ir.Constant(ir.VectorType(ir.IntType(32), L), m))
    lo, hi = masks[0]
    t = []
    for r in range(0, L, 2):
        t += [shuf(rows[r], rows[r + 1], lo), shuf(rows[r], rows[r + 1], hi)]
    lo, hi = masks[1]
    if L == 4:          # t: r0r1 lo, r0r1 hi, r2r3 lo, r2r3 hi
        return [shuf(t[0], t[2], lo), shuf(t[1], t[3], lo), shuf(t[0], t[2], hi),
                shuf(t[1], t[3], hi)]
    s = []
    for q in (0, 4):    # rows 0-3, rows 4-7
        s += [shuf(t[q], t[q + 2], lo), shuf(t[q], t[q + 2], hi),
              shuf(t[q + 1], t[q + 3], lo), shuf(t[q + 1], t[q + 3], hi)]
    lo, hi = masks[2]   # s[c] (c < 4): column c of rows 0-3 (low half) and c + 4 (high)
    return ([shuf(s[c], s[c + 4], lo) for c in range(4)] +
            [shuf(s[c], s[c + 4], hi) for c in range(4)])


@intrinsic
def _block(typingctx, x, ox, sx, out, oo, so, add):
    """out[oo + c so + r] = x[ox + r sx + c] (+= when add) for r, c < L: one L x L block
    of flat arrays x / out (row strides sx / so elements), L = 8 float32 or 4 float64."""
    f32 = x.dtype == types.float32

    def codegen(context, builder, sig, args):
        xv, oxv, sxv, outv, oov, sov, addv = args
        L = 8 if f32 else 4
        vt = ir.VectorType(ir.FloatType() if f32 else ir.DoubleType(), L)
        align = 4 if f32 else 8
        xa = context.make_array(sig.args[0])(context, builder, xv)
        oa = context.make_array(sig.args[3])(context, builder, outv)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        pf = builder.module.declare_intrinsic(
            "llvm.prefetch", [i8p], ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]))
        rows = []
        for r in range(L):
            off = builder.add(oxv, builder.mul(sxv, ir.Constant(sxv.type, r)))
            rows.append(builder.load(builder.bitcast(builder.gep(xa.data, [off]),
                                                     vt.as_pointer()), align=align))
        cols = _transpose_regs(builder, rows)
        for c in range(L):
            off = builder.add(oov, builder.mul(sov, ir.Constant(sov.type, c)))
            ahead = builder.gep(oa.data, [builder.add(off, ir.Constant(off.type, _PREFETCH))])
            builder.call(pf, [builder.bitcast(ahead, i8p), ir.Constant(i32, 1),
                              ir.Constant(i32, 3), ir.Constant(i32, 1)])
            p = builder.bitcast(builder.gep(oa.data, [off]), vt.as_pointer())
            with builder.if_else(addv) as (then, other):
                with then:
                    builder.store(builder.fadd(builder.load(p, align=align), cols[c]), p,
                                  align=align)
                with other:
                    builder.store(cols[c], p, align=align)
        return context.get_dummy_value()
    return types.void(x, ox, sx, out, oo, so, add), codegen


def _strip(x, out, xf, of, add, j0, j1, L):
    """Destination rows j0..j1 (source columns) of out (n, m) = x (m, n)^T."""
    m, n = x.shape
    jv = j0 + (j1 - j0) // L * L
    for i0 in range(0, m, TILE_IN):
        i1 = min(m, i0 + TILE_IN)
        iv = i0 + (i1 - i0) // L * L
        for j in range(j0, jv, L):
            for i in range(i0, iv, L):
                _block(xf, i * n + j, n, of, j * m + i, m, add)
            for i in range(iv, i1):            # the tile's last rows of x: one by one
                for jj in range(j, j + L):
                    if add:
                        out[jj, i] += x[i, jj]
                    else:
                        out[jj, i] = x[i, jj]
        for j in range(jv, j1):                # the last columns of x
            for i in range(i0, i1):
                if add:
                    out[j, i] += x[i, j]
                else:
                    out[j, i] = x[i, j]


_opts = dict(nogil=True, cache=True, boundscheck=False, no_cfunc_wrapper=True)
_strip_j = njit(inline="always", **_opts)(_strip)


def _transpose_src(x, out, add, L):
    """out (n, m) = x (m, n)^T, or += when add; both C-contiguous. Strips of TILE
    destination rows, over the threads in the parallel twin."""
    n = x.shape[1]
    xf = x.ravel()
    of = out.ravel()
    for s in prange((n + TILE - 1) // TILE):
        _strip_j(x, out, xf, of, add, s * TILE, min(n, s * TILE + TILE), L)


def _op_rows(code, first, a, t, out, j0, j1):
    """out[j] = a[j] op t[j] for rows j0..j1 (t op a when ``first``: the transposed operand
    is the left one); op: _vmath.BINARY's add, sub, mul, div."""
    if code == 2:
        for j in range(j0, j1):
            for i in range(a.shape[1]):
                out[j, i] = a[j, i] * t[j, i]
    elif code == 0:
        for j in range(j0, j1):
            for i in range(a.shape[1]):
                out[j, i] = a[j, i] + t[j, i]
    elif first:
        if code == 1:
            for j in range(j0, j1):
                for i in range(a.shape[1]):
                    out[j, i] = t[j, i] - a[j, i]
        else:
            for j in range(j0, j1):
                for i in range(a.shape[1]):
                    out[j, i] = t[j, i] / a[j, i]
    elif code == 1:
        for j in range(j0, j1):
            for i in range(a.shape[1]):
                out[j, i] = a[j, i] - t[j, i]
    else:
        for j in range(j0, j1):
            for i in range(a.shape[1]):
                out[j, i] = a[j, i] / t[j, i]


_op_rows_j = njit(inline="always", error_model="numpy", **_opts)(_op_rows)


def _binary_src(code, first, a, x, t, out, L):
    """t = x^T and out = a op t (t op a when first), strip by strip: each strip of t is
    combined with a while it is still in cache. a, t, out (n, m); x (m, n); C-contiguous.
    The strips over the threads in the parallel twin."""
    n = x.shape[1]
    xf = x.ravel()
    tf = t.ravel()
    for s in prange((n + TILE - 1) // TILE):
        j0 = s * TILE
        j1 = min(n, j0 + TILE)
        _strip_j(x, t, xf, tf, False, j0, j1, L)
        _op_rows_j(code, first, a, t, out, j0, j1)


# one source each, compiled serial (prange runs as range) and parallel (a renamed twin)
_serial = njit(**_opts)(_transpose_src)
_parallel = njit(parallel=True, **_opts)(_vmath._twin(_transpose_src, "_par"))
_binary_serial = njit(error_model="numpy", **_opts)(_binary_src)
_binary_parallel = njit(parallel=True, error_model="numpy", **_opts)(
    _vmath._twin(_binary_src, "_par"))


def usable(x):
    """True when x (m, n) is a C-contiguous float matrix the kernel transposes (MIN
    elements or more, both sides 16 or more) and the compiled code is in use (``_cache``)."""
    return (_cache.ON and x.ndim == 2 and x.size >= MIN and x.shape[0] >= 16 and x.shape[1] >= 16
            and x.dtype in _FLOATS and x.flags.c_contiguous)


def transpose(x, out=None, add=False):
    """x^T as a new C-contiguous array (out None), or written / added (add) into ``out``
    (n, m), C-contiguous, of x's dtype. x: a C-contiguous 2-D float array (``usable``)."""
    if out is None:
        out = np.empty((x.shape[1], x.shape[0]), x.dtype)
    L = 8 if x.itemsize == 4 else 4
    if x.size >= _vmath.PAR:
        _vmath.start_threads()
        _parallel(x, out, add, L)
    else:
        _serial(x, out, add, L)
    return out


def binary(code, a, b):
    """(a op b, the contiguous copy of the transposed operand) when exactly one of a, b is a
    transposed matrix the kernel takes (``usable``) and the other a C-contiguous array of
    its shape and dtype; else None. code: _vmath.BINARY's (add, sub, mul, div). One pass:
    each strip of the copy is combined with the other operand while it is in cache (and
    one parallel region instead of two): 316 x 316 float32 ``x * x.t()``, 29.5 -> 22 us;
    1000 x 1000, 394 -> 304 us (the copy, then the vector-math product, before)."""
    if a.flags.c_contiguous and b.ndim == 2 and b.flags.f_contiguous:
        other, x, first = a, b.T, False
    elif b.flags.c_contiguous and a.ndim == 2 and a.flags.f_contiguous:
        other, x, first = b, a.T, True
    else:
        return None
    if not usable(x) or other.dtype != x.dtype or other.shape != (x.shape[1], x.shape[0]):
        return None
    t = np.empty(other.shape, x.dtype)
    out = np.empty(other.shape, x.dtype)
    L = 8 if x.itemsize == 4 else 4
    if x.size >= _vmath.PAR:
        _vmath.start_threads()
        _binary_parallel(code, first, other, x, t, out, L)
    else:
        _binary_serial(code, first, other, x, t, out, L)
    return out, t


def contiguous(x):
    """x as a C-contiguous array (x itself when it is one): a transposed float matrix
    (``usable``) through the kernel, anything else through numpy."""
    if type(x) is not np.ndarray:
        return np.ascontiguousarray(x)
    if x.flags.c_contiguous:
        return x
    if x.ndim == 2 and x.flags.f_contiguous and usable(x.T):
        return transpose(x.T)
    return np.ascontiguousarray(x)
