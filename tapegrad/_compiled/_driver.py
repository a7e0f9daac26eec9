"""The batched driver: one compiled call evaluates a recorded tape on P points.

Points are cut into chunks of B; each chunk is laid out slot-major (element i of the node at
offset o: ``X[(o + i) * B + lane]``) so that the generated ``bforward`` / ``breverse`` sweeps
(``_interp.py``) interpret each tape entry once per chunk with the inner loop over the chunk's
lanes. Chunks are shared among threads with ``prange`` (one group of chunks per thread, each
group with its own value and adjoint stores sized to stay in cache). Compiled once, cached on
disk: no tape or batch size triggers a compilation.

Inputs, outputs, cotangents and gradients are passed as tables of int64 rows
``(address, node, n, point stride, dtype slot)`` describing C-contiguous arrays of shape
(P, n) (point stride n) or (n,) broadcast to every point (point stride 0), so one compiled
signature serves any number of arguments of either dtype.

``run`` calls the two sweeps through C entry points (``_bforward_c`` / ``_breverse_c``, whose
addresses ``ready()`` puts in the native table: ``_native.BFWD`` / ``BREV``), each taking one
int64 block of its arguments' addresses and sizes. Linked into ``run`` instead, the sweeps'
code was optimised a second time inside the parallel function: ~75 s of the ~2.5 min the
first batched ``vmap`` compiled on a quiet machine (issue 26).

Numba keys a cached function on its own source file only, and the C entry points compile the
generated sweeps into themselves: ``INTERP_SHA`` below (the digest of ``_interp.py``,
rewritten by ``python -m tapegrad.ops``; a test checks it) makes every regeneration of the
interpreter change this file too, so no stale compiled sweep survives a change of the op table.
"""
import numpy as np
from numba import carray, njit, prange, types
from numba.extending import intrinsic

from .._schema import NDT, NK, NOFF, NPROD, NSIZE
from . import _native
from ._addr import INTERNAL, _u, _voidptr
from ._interp import bforward, breverse
from .kernels import _native_fn

INTERP_SHA = '5c53697c73fc4efe'  # sha256 of _interp.py, written by `python -m tapegrad.ops`

_jit = njit(error_model="numpy", **INTERNAL)
_pjit = njit(cache=True, nogil=True, parallel=True, error_model="numpy", no_cfunc_wrapper=True)
ADDR, NODE, NEL, PSTR, SLOT = range(5)
_TILE = 8                           # points per tile when loading point-major rows


@_jit
def _load(X, R, B, p0, nb, N):
    """Input rows -> lanes of the chunk starting at point p0 (nb valid lanes)."""
    src = carray(_voidptr(R[ADDR]), (1 << 40,), X.dtype)
    o = N[R[NODE] * NK + NOFF] * B
    n, ps = R[NEL], R[PSTR]
    if ps == 0:                     # the same row for every point (a constant): a fill
        for i in range(n):
            v = src[i]
            for j in range(nb):
                X[_u(o + i * B + j)] = v
        return
    jn = nb - nb % _TILE
    for t0 in range(0, jn, _TILE):  # a tile of points at a time (unsigned indices, fixed
        s0 = (p0 + t0) * ps         # tile: LLVM unrolls the tile's gather)
        for i in range(n):
            d = o + i * B + t0
            for j in range(_TILE):
                X[_u(d + j)] = src[_u(s0 + j * ps + i)]
    for j in range(jn, nb):
        s0 = (p0 + j) * ps
        for i in range(n):
            X[_u(o + i * B + j)] = src[_u(s0 + i)]


@_jit
def _store(X, R, B, p0, nb, N):
    """Lanes of a node -> rows p0..p0+nb of a (P, n) output array, written in address order
    (one point's row at a time, gathering its elements from the chunk's cache-resident lanes):
    Rosenbrock's (P, 10) gradients 7-8% faster overall than tiled as ``_load``, whose
    scattered writes to the output's cache lines cost more than scattered reads of lanes."""
    dst = carray(_voidptr(R[ADDR]), (1 << 40,), X.dtype)
    o = N[R[NODE] * NK + NOFF] * B
    n = R[NEL]
    for j in range(nb):
        d0 = (p0 + j) * n
        for i in range(n):
            dst[_u(d0 + i)] = X[_u(o + i * B + j)]


@_jit
def _seed(A, R, B, p0, nb, N, nreach, ereach):
    """Add a cotangent row into the adjoint lanes of its node and mark it reached."""
    src = carray(_voidptr(R[ADDR]), (1 << 40,), A.dtype)
    node = R[NODE]
    o = N[node * NK + NOFF] * B
    n, ps = R[NEL], R[PSTR]
    for i in range(n):
        d = A[o + i * B:]
        s = src[p0 * ps + i:]
        for j in range(nb):
            d[j] += s[j * ps]
    nreach[node] = 1
    p = N[node * NK + NPROD]
    if p >= 0:
        ereach[p] = 1


# ---------------------------------------------------------------- the sweeps' C entry points
# argument blocks: (address, size) per array, then the integers
_FWD_ARRAYS = 10      # E, N, V4, V8, XA4, XA8, I, C, X4, X8; then B, start, stop
_REV_ARRAYS = 14      # E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, nreach, ereach;
_FWD_BLOCK = 2 * _FWD_ARRAYS + 3    # then B, start, stop, nreal
_REV_BLOCK = 2 * _REV_ARRAYS + 4


@njit(inline="always")
def _arr(a, i, dt):
    return carray(_voidptr(a[2 * i]), (a[2 * i + 1],), dt)


def _bforward_c(blk):
    a = carray(_voidptr(blk), (_FWD_BLOCK,), np.int64)
    i64, f32, f64 = np.int64, np.float32, np.float64
    k = 2 * _FWD_ARRAYS
    bforward(_arr(a, 0, i64), _arr(a, 1, i64), _arr(a, 2, f32), _arr(a, 3, f64), _arr(a, 4, i64),
             _arr(a, 5, i64), _arr(a, 6, i64), _arr(a, 7, f64), _arr(a, 8, f32), _arr(a, 9, f64),
             a[k], a[k + 1], a[k + 2])


def _breverse_c(blk):
    a = carray(_voidptr(blk), (_REV_BLOCK,), np.int64)
    i64, f32, f64, u8 = np.int64, np.float32, np.float64, np.uint8
    k = 2 * _REV_ARRAYS
    breverse(_arr(a, 0, i64), _arr(a, 1, i64), _arr(a, 2, f32), _arr(a, 3, f64), _arr(a, 4, i64),
             _arr(a, 5, i64), _arr(a, 6, i64), _arr(a, 7, f64), _arr(a, 8, f32), _arr(a, 9, f64),
             _arr(a, 10, f32), _arr(a, 11, f64), a[k], _arr(a, 12, u8), _arr(a, 13, u8),
             a[k + 1], a[k + 2], a[k + 3])


_READY = []


def ready():
    """Put the sweeps' C entry points in the native table (compiled, or loaded from the disk
    cache, on first call)."""
    if not _READY:
        from . import _fastload  # deferred: Numba machine code, loaded on first use
        sig = types.void(types.int64)
        f = _fastload.cfunc(_bforward_c, sig, {"error_model": "numpy"})
        r = _fastload.cfunc(_breverse_c, sig, {"error_model": "numpy"})
        _native.TABLE[_native.BFWD], _native.TABLE[_native.BREV] = f.address, r.address
        _READY.extend((f, r))
    return True


@intrinsic
def _call_block(typingctx, fp, blk):
    """Call the C function at address ``fp``: void f(int64 block)."""
    def codegen(context, builder, sig, args):
        from llvmlite import ir
        i64 = ir.IntType(64)
        fnty = ir.FunctionType(ir.VoidType(), [i64])
        builder.call(builder.inttoptr(args[0], fnty.as_pointer()), [args[1]])
        return context.get_dummy_value()
    return types.void(fp, blk), codegen


@_jit
def _put(blk, i, arr):
    blk[2 * i] = arr.ctypes.data
    blk[2 * i + 1] = arr.size


@_pjit
def run(E, N, V4, V8, XA4, XA8, I, C, n4, n8, ne, B, P, G, INS, OUTS, CTS, GRADS, rev_start, nreal):
    """Evaluate the tape on P points in chunks of B lanes, G groups of chunks in parallel:
    forward (inputs INS -> outputs OUTS), then, when rev_start >= 0, the reverse sweep from
    entry rev_start seeded by the cotangents CTS, writing the adjoints of GRADS. Nodes from
    nreal on are the recorded constants' lanes."""
    nn = len(N) // NK
    nchunks = (P + B - 1) // B
    fpf, fpr = _native_fn(_native.BFWD), _native_fn(_native.BREV)
    if fpf == 0 or fpr == 0:
        raise RuntimeError("_driver.ready() was not called")
    for g in prange(G):
        X4 = np.zeros(max(n4, 1) * B, np.float32)
        X8 = np.zeros(max(n8, 1) * B, np.float64)
        A4 = np.zeros(max(n4, 1) * B if rev_start >= 0 else 1, np.float32)
        A8 = np.zeros(max(n8, 1) * B if rev_start >= 0 else 1, np.float64)
        nreach = np.zeros(nn + 1, np.uint8)
        ereach = np.zeros(ne + 1, np.uint8)
        # The sweeps' argument blocks hold the stores' addresses: every store must stay alive
        # (referenced by name) through the chunk loop below. Numba frees an array after its
        # last use by name, so X4/X8 go to _load/_store themselves, not through raw() views:
        # freed after the blocks were filled, their memory was handed to the softmax kernels'
        # scratch arrays and the first batched softmax of a process read it back (issue 26).
        fb = np.empty(_FWD_BLOCK, np.int64)
        rb = np.empty(_REV_BLOCK, np.int64)
        for i, arr in enumerate((E, N)):
            _put(fb, i, arr)
            _put(rb, i, arr)
        _put(fb, 2, V4)
        _put(fb, 3, V8)
        _put(fb, 4, XA4)
        _put(fb, 5, XA8)
        _put(fb, 6, I)
        _put(fb, 7, C)
        _put(fb, 8, X4)
        _put(fb, 9, X8)
        for i in range(2, 8):
            rb[2 * i], rb[2 * i + 1] = fb[2 * i], fb[2 * i + 1]
        _put(rb, 8, A4)
        _put(rb, 9, A8)
        _put(rb, 10, X4)
        _put(rb, 11, X8)
        _put(rb, 12, nreach)
        _put(rb, 13, ereach)
        k = 2 * _FWD_ARRAYS
        fb[k], fb[k + 1], fb[k + 2] = B, 0, ne
        k = 2 * _REV_ARRAYS
        rb[k], rb[k + 1], rb[k + 2], rb[k + 3] = B, rev_start, 0, nreal
        for ch in range(g, nchunks, G):
            p0 = ch * B
            nb = min(B, P - p0)
            for r in range(INS.shape[0]):
                if INS[r, SLOT] == 0:
                    _load(X4, INS[r], B, p0, nb, N)
                else:
                    _load(X8, INS[r], B, p0, nb, N)
            _call_block(fpf, fb.ctypes.data)        # bforward(E, ..., X4, X8, B, 0, ne)
            for r in range(OUTS.shape[0]):
                if OUTS[r, SLOT] == 0:
                    _store(X4, OUTS[r], B, p0, nb, N)
                else:
                    _store(X8, OUTS[r], B, p0, nb, N)
            if rev_start < 0:
                continue
            nreach[:] = 0
            ereach[:] = 0
            for r in range(CTS.shape[0]):
                if CTS[r, SLOT] == 0:
                    _seed(A4, CTS[r], B, p0, nb, N, nreach, ereach)
                else:
                    _seed(A8, CTS[r], B, p0, nb, N, nreach, ereach)
            _call_block(fpr, rb.ctypes.data)        # breverse(E, ..., B, nreach, ereach,
            #                                          rev_start, 0, nreal)
            for r in range(GRADS.shape[0]):
                if GRADS[r, SLOT] == 0:
                    _store(A4, GRADS[r], B, p0, nb, N)
                else:
                    _store(A8, GRADS[r], B, p0, nb, N)
            for node in range(nn):              # leaves' adjoints: cleared for the next chunk
                if nreach[node] != 0 and N[node * NK + NPROD] < 0:
                    o, m = N[node * NK + NOFF] * B, N[node * NK + NSIZE] * B
                    if N[node * NK + NDT] == 0:
                        A4[o:o + m] = 0
                    else:
                        A8[o:o + m] = 0
