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

Numba keys a cached function on its own source file only, and ``run`` compiles the generated
sweeps into itself: ``INTERP_SHA`` below (the digest of ``_interp.py``, rewritten by
``python -m tapegrad.ops``; a test checks it) makes every regeneration of the interpreter
change this file too, so no stale compiled driver survives a change of the op table.
"""
import numpy as np
from numba import carray, njit, prange

from .._schema import NDT, NK, NOFF, NPROD, NSIZE
from ._addr import _voidptr
from ._interp import bforward, breverse
from .kernels import _u, raw

INTERP_SHA = '12b0ac3e8d3b6103'  # sha256 of _interp.py, written by `python -m tapegrad.ops`

_jit = njit(cache=True, nogil=True, error_model="numpy")
_pjit = njit(cache=True, nogil=True, parallel=True, error_model="numpy")
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


@_pjit
def run(E, N, V4, V8, XA4, XA8, I, C, n4, n8, ne, B, P, G, INS, OUTS, CTS, GRADS, rev_start, nreal):
    """Evaluate the tape on P points in chunks of B lanes, G groups of chunks in parallel:
    forward (inputs INS -> outputs OUTS), then, when rev_start >= 0, the reverse sweep from
    entry rev_start seeded by the cotangents CTS, writing the adjoints of GRADS. Nodes from
    nreal on are the recorded constants' lanes."""
    nn = len(N) // NK
    nchunks = (P + B - 1) // B
    for g in prange(G):
        X4 = np.zeros(max(n4, 1) * B, np.float32)
        X8 = np.zeros(max(n8, 1) * B, np.float64)
        A4 = np.zeros(max(n4, 1) * B if rev_start >= 0 else 1, np.float32)
        A8 = np.zeros(max(n8, 1) * B if rev_start >= 0 else 1, np.float64)
        nreach = np.zeros(nn + 1, np.uint8)
        ereach = np.zeros(ne + 1, np.uint8)
        r4, r8 = raw(X4), raw(X8)
        for ch in range(g, nchunks, G):
            p0 = ch * B
            nb = min(B, P - p0)
            for r in range(INS.shape[0]):
                if INS[r, SLOT] == 0:
                    _load(r4, INS[r], B, p0, nb, N)
                else:
                    _load(r8, INS[r], B, p0, nb, N)
            bforward(E, N, V4, V8, XA4, XA8, I, C, X4, X8, B, 0, ne)
            for r in range(OUTS.shape[0]):
                if OUTS[r, SLOT] == 0:
                    _store(r4, OUTS[r], B, p0, nb, N)
                else:
                    _store(r8, OUTS[r], B, p0, nb, N)
            if rev_start < 0:
                continue
            nreach[:] = 0
            ereach[:] = 0
            for r in range(CTS.shape[0]):
                if CTS[r, SLOT] == 0:
                    _seed(A4, CTS[r], B, p0, nb, N, nreach, ereach)
                else:
                    _seed(A8, CTS[r], B, p0, nb, N, nreach, ereach)
            breverse(E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, B, nreach, ereach, rev_start, 0,
                     nreal)
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
