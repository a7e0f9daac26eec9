"""Native routines the compiled kernels call through a table of function pointers.

The kernels are compiled once and cached on disk, so they cannot hold an address (it changes
from process to process). Instead they read ``tapegrad_native``, a small table of int64 slots
that this module allocates and registers with LLVM under that symbol name before any kernel
is compiled or loaded. A slot holds a C function's address, or 0 when the routine is not
available; a kernel reads its slot on every call and falls back to its own loops on 0.

Slots:

``SGEMM``, ``DGEMM``
    ``cblas_sgemm`` / ``cblas_dgemm`` of the OpenBLAS that numpy's wheels bundle
    (``scipy_cblas_sgemm64_`` in ``numpy.libs/libscipy_openblas64_*.so``: 64-bit integers).
    ``fwd_mm`` / ``vjp_mm`` call it for products of ``GEMM_MIN`` multiply-adds or more, so a
    replayed tape runs its matrix products inside the compiled sweep instead of returning to
    Python for ``np.matmul`` at each one (``tapegrad.func``). Left at 0 when numpy was built
    against another BLAS (conda's MKL, macOS Accelerate), or with ``TAPEGRAD_BLAS=0`` in the
    environment; then the replay keeps numpy's BLAS through Python, as before.

``VM4``, ``VM8``
    ``void f(int64 code, x*, y*, int64 n)``: y = f(x) for a transcendental row on glibc's
    libmvec (``_vmath``; ``code`` numbers the row as ``_vmath.UNARY`` does), float32 / float64.
    The forward kernels of those rows call it from ``VM_MIN`` elements. Filled on first need
    by ``vmath()`` (a replayed or batched tape with such a row): the two C callbacks are
    compiled once and cached, but loading them costs Numba's ~0.4 s context set-up, which a
    plain ``import tapegrad`` + ``backward()`` should not pay.

``BFWD``, ``BREV``
    ``void f(int64 block)``: the batched sweeps ``bforward`` / ``breverse`` behind a C entry
    point (their arguments' addresses and sizes in an int64 block), which the batched driver
    ``_driver.run`` calls, so that compiling ``run`` (a parallel function) does not compile
    and optimise both sweeps again inside it. Filled by ``_driver.ready()``.
"""
import ctypes
import glob
import os

import numpy as np

SYMBOL = "tapegrad_native"
SLOTS = 8
SGEMM, DGEMM, VM4, VM8, BFWD, BREV = 0, 1, 2, 3, 4, 5
TABLE = (ctypes.c_int64 * SLOTS)()
# products of at least this many multiply-adds go to BLAS (below, the kernels' loops are as
# fast as a call, ~0.4 us; a 32 x 64 by 64 x 1 product takes 8 us in the loops, 0.5 in BLAS)
GEMM_MIN = 1024
VM_MIN = 32


def _register():
    import llvmlite.binding as ll
    ll.add_symbol(SYMBOL, ctypes.addressof(TABLE))


_LIB = []


def _numpy_openblas():
    """(sgemm, dgemm) addresses of numpy's bundled ILP64 OpenBLAS, or None."""
    if os.environ.get("TAPEGRAD_BLAS", "1") == "0":
        return None
    base = os.path.dirname(os.path.dirname(os.path.abspath(np.__file__)))
    for path in sorted(glob.glob(os.path.join(base, "numpy.libs", "libscipy_openblas64_*.so*"))):
        try:
            lib = ctypes.CDLL(path)         # already loaded by numpy: only a reference
            s, d = lib.scipy_cblas_sgemm64_, lib.scipy_cblas_dgemm64_
        except (OSError, AttributeError):
            continue
        _LIB.append(lib)
        return (ctypes.cast(s, ctypes.c_void_p).value, ctypes.cast(d, ctypes.c_void_p).value)
    return None


def openblas_threads():
    """(get, set) of that OpenBLAS's thread count (ctypes functions), or None."""
    if not _LIB:
        return None
    try:
        get, set_ = _LIB[0].scipy_openblas_get_num_threads64_, _LIB[0].scipy_openblas_set_num_threads64_
    except AttributeError:
        return None
    get.restype, get.argtypes = ctypes.c_int, ()
    set_.restype, set_.argtypes = None, (ctypes.c_int,)
    return get, set_


_register()
_blas = _numpy_openblas()
BLAS = _blas is not None
if BLAS:
    TABLE[SGEMM], TABLE[DGEMM] = _blas


_vm = []


def vmath():
    """Fill the vector-math slots on first call; True when they hold libmvec routines (False
    without libmvec, with ``TAPEGRAD_VMATH=0``, or once ``_vm`` says they were not filled: the
    kernels keep their scalar loops). False,
    filling nothing, while the compiled code is not in use (``_cache.ON``: the slots' C
    callbacks are compiled code)."""
    vm = _vmath_mod[0] if _vmath_mod else _import_vmath()
    if not vm.OK:
        return False
    if not _vm:
        TABLE[VM4], TABLE[VM8] = vm.native_fwd()
        _vm.append(True)
    return _vm[0]


_vmath_mod = []


def _import_vmath():
    from . import _vmath  # deferred: Numba machine code, loaded on first use
    _vmath_mod.append(_vmath)
    return _vmath
