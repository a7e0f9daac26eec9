"""Big matrix products of the eager path, on the same threads as the elementwise kernels.

numpy's bundled OpenBLAS runs a product of 2^18 multiply-adds or more on its own pthreads,
which then spin-wait (``sched_yield``) for a while after the call. The elementwise kernels
(``_vmath``) run on Numba's OpenMP threads, whose workers also spin after each parallel
region. On a 2-core machine the two pools take turns at the cores: a parallel elementwise
op right after a product waited out a scheduler slice, which is why ``_vmath.PAR`` stayed at
2^19 elements for five sessions. When PyTorch is imported first, Numba's OpenMP calls even
bind to torch's libgomp (same symbols, loaded earlier), whose workers spin for the default
time whatever ``_vmath.start_threads`` asks: the 10^6-element matmul workload of
``benchmarks/bench_eager.py`` took 45 ms with torch imported and 32 ms without.

So the eager 2-D products of ``MIN`` multiply-adds or more (forward and VJP) go through
``mm``: OpenBLAS is set to one thread for the duration of the call, and the product is split
into one row block (or column block) per Numba thread, each a single-threaded ``cblas_?gemm``
called from a ``prange`` loop. One pool, no hand-off between pools; the 10^6 matmul workload
went from 45 to 28 ms (torch 24). OpenBLAS's thread count is restored after each call, so the
user's own numpy products keep their threads. Below ``MIN`` (2^21, 128^3) numpy is kept,
with OpenBLAS held to one thread from ``ONE_FROM`` (64^3, where OpenBLAS starts its own
threads: ``matmul1``): waking the second thread cost more than the split saved at 100^3, and
on a busy machine OpenBLAS's threads and Numba's spinning workers took turns at the cores. ``OK`` is False (numpy's ``matmul`` is kept) when the native
table has no BLAS (``_native.BLAS``) or OpenBLAS's thread-count functions are missing.

Start-up: the first product through ``mm`` loads the cached parallel kernel and starts the
threads, ~0.3 s once per process (a 200 x 200 ``(x @ x).sum().backward()`` first call: 0.42 s
against 0.13 s on numpy; with a ``tanh`` on the result, which loads the vector-math kernels
anyway, 0.44 s against 0.47). Compiling it cold takes ~0.6 s more, once per machine.
"""
import numpy as np
from numba import get_num_threads, njit, prange

from . import _cache, _native, _vmath
from .kernels import _gemm, _native_fn

MIN = 1 << 21          # multiply-adds (128^3) from which products go through mm
_SG, _DG = _native.SGEMM, _native.DGEMM
_threads = _native.openblas_threads()
AVAILABLE = _native.BLAS and _threads is not None
OK = AVAILABLE and _cache.ON          # (not while the compiled code is not in use: _cache)


@_cache.on_switch
def _switched():
    global OK
    OK = AVAILABLE and _cache.ON


def _block_src(ta, tb, m, n, k, A, B, C, add, p, parts, by_rows):
    """Block p of ``parts`` (rows of C when by_rows, else columns) of C (m, n) = op(A) op(B)
    (+= when add): one single-threaded gemm. A, B, C: C-contiguous 2-D arrays, op
    transposing when ta / tb."""
    fp = _native_fn(_SG if C.itemsize == 4 else _DG)
    w = C.itemsize
    lda = m if ta else k
    ldb = k if tb else n
    one = C.dtype.type(1)
    beta = C.dtype.type(1 if add else 0)
    if by_rows:
        r0 = m * p // parts
        r1 = m * (p + 1) // parts
        ao = r0 if ta else r0 * lda
        _gemm(fp, ta, tb, r1 - r0, n, k, one, A.ctypes.data + ao * w, lda,
              B.ctypes.data, ldb, beta, C.ctypes.data + r0 * n * w, n)
    else:
        c0 = n * p // parts
        c1 = n * (p + 1) // parts
        bo = c0 * ldb if tb else c0
        _gemm(fp, ta, tb, m, c1 - c0, k, one, A.ctypes.data, lda,
              B.ctypes.data + bo * w, ldb, beta, C.ctypes.data + c0 * w, n)


_block = njit(inline="always", nogil=True, cache=True, boundscheck=False)(_block_src)


def _blocks_src(ta, tb, m, n, k, A, B, C, parts, by_rows, add):
    """C (m, n) = op(A) op(B), or += when add, in ``parts`` row blocks (by_rows) or column
    blocks of C, one single-threaded gemm per block, the blocks over the threads."""
    for p in prange(parts):
        _block(ta, tb, m, n, k, A, B, C, add, p, parts, by_rows)


def _pair_src(ta0, tb0, m0, n0, k0, A0, B0, C0, add0, rows0,
              ta1, tb1, m1, n1, k1, A1, B1, C1, add1, rows1, parts):
    """Two products at once (a product's VJP: g b^T and a^T g), each in ``parts`` blocks:
    the 2 parts blocks over the threads."""
    for q in prange(2 * parts):
        if q < parts:
            _block(ta0, tb0, m0, n0, k0, A0, B0, C0, add0, q, parts, rows0)
        else:
            _block(ta1, tb1, m1, n1, k1, A1, B1, C1, add1, q - parts, parts, rows1)


_opts = dict(parallel=True, nogil=True, cache=True, boundscheck=False,
             no_cfunc_wrapper=True)
_blocks = njit(**_opts)(_blocks_src)
_pair = njit(**_opts)(_pair_src)


def _operand(x):
    """(C-contiguous array, transposed flag) for a 2-D operand: a transposed view (x.t())
    is passed as its C-contiguous base with the flag set instead of being copied."""
    if x.flags.c_contiguous:
        return x, False
    if x.flags.f_contiguous:
        return x.T, True
    return np.ascontiguousarray(x), False


def _alone(kernel, *args):
    """Run a product kernel on Numba's threads with OpenBLAS held to one thread (restored
    after: the user's own numpy products keep theirs)."""
    _vmath.start_threads()
    get, set_ = _threads
    prev = get()
    set_(1)
    try:
        kernel(*args)
    finally:
        set_(prev)


def _prepare(a, b, ta, tb, out):
    """(a, b, ta, tb, m, n, k, c) of op(a) @ op(b) for the kernels: C-contiguous operands,
    the result array (``out`` or a new one)."""
    a, fa = _operand(a)
    b, fb = _operand(b)
    ta, tb = ta != fa, tb != fb
    m = a.shape[1] if ta else a.shape[0]
    k = a.shape[0] if ta else a.shape[1]
    n = b.shape[0] if tb else b.shape[1]
    c = np.empty((m, n), a.dtype) if out is None else out
    return a, b, ta, tb, m, n, k, c


ONE_FROM = 1 << 18     # multiply-adds from which OpenBLAS runs a product on its threads


def matmul1(a, b):
    """``np.matmul(a, b)`` with OpenBLAS held to one thread: products from ``ONE_FROM`` to
    ``MIN`` multiply-adds. OpenBLAS starts its threads from 64^3; on a busy machine, with
    Numba's workers spinning after an elementwise kernel, a 100 x 100 product took 31 ms
    against 0.2 ms on one thread (torch: 0.37 ms)."""
    get, set_ = _threads
    prev = get()
    if prev <= 1:
        return np.matmul(a, b)
    set_(1)
    try:
        return np.matmul(a, b)
    finally:
        set_(prev)


def mm(a, b, ta=False, tb=False, out=None):
    """op(a) @ op(b) of 2-D float arrays of one dtype (op transposes when ta / tb), on every
    core with OpenBLAS held to one thread (see the module docstring). ``out``: a C-contiguous
    (m, n) array of the dtype the product is added into (gemm's beta = 1); None is then
    returned."""
    a, b, ta, tb, m, n, k, c = _prepare(a, b, ta, tb, out)
    _alone(_blocks, ta, tb, m, n, k, a, b, c, min(get_num_threads(), m if m >= n else n),
           m >= n, out is not None)
    return c if out is None else None


def mm2(job0, job1):
    """Two products at once, each job (a, b, ta, tb, out) as ``mm``'s arguments; returns
    the two results (None for a job with ``out``). With two threads each product is one
    whole single-threaded gemm, one per core: a product split in two blocks costs ~5-10%
    more than two whole ones side by side (316^3: g b^T then a^T g split, 525 us; side by
    side, 463 us; 1000^3: 13.4 against 12.9 ms). Added into existing arrays (``out``), the
    gain is smaller (316^3: ~500 against ~490 us with x @ x's second product added into
    the first afterwards)."""
    a0, b0, ta0, tb0, m0, n0, k0, c0 = _prepare(*job0)
    a1, b1, ta1, tb1, m1, n1, k1, c1 = _prepare(*job1)
    _alone(_pair, ta0, tb0, m0, n0, k0, a0, b0, c0, job0[4] is not None, m0 >= n0,
           ta1, tb1, m1, n1, k1, a1, b1, c1, job1[4] is not None, m1 >= n1,
           max(1, get_num_threads() // 2))
    return (c0 if job0[4] is None else None), (c1 if job1[4] is None else None)
