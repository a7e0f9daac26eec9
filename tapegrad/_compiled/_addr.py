"""Raw addresses in compiled code: a void pointer from an int64, and where a tape's saved
value lives; the unsigned index. The lowest compiled module (the kernels and the vector math
both read it).

Compile options: functions only compiled code calls (kernels, helpers) are ``INTERNAL``:
no CPython or C-callback wrapper (a quarter of a small kernel's compile time) and no disk
cache of their own (the entry points Python calls are cached with the kernels compiled into
them; a kernel's own cache entry was only read to compile another entry point)."""
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

# functions compiled code calls, never Python (see the docstring)
INTERNAL = dict(cache=False, no_cpython_wrapper=True, no_cfunc_wrapper=True, nogil=True)
_jit = njit(fastmath=False, boundscheck=False, error_model="numpy", **INTERNAL)


@intrinsic
def _u(typingctx, k):
    """An element index as unsigned (the same bits): numba then emits no negative-index
    wraparound, and the elementwise loops vectorise (vjp_tanh on 10^4 float32: 3.0 -> 0.3
    ns/element). The offsets are never negative. An intrinsic, not an inlined function: the
    kernels index through it ~300 times, and each inlining of a function cost ~25 ms of
    compile time."""
    if not isinstance(k, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return args[0]
    return types.uint64(k), codegen


@intrinsic
def _voidptr(typingctx, addr):
    """int64 address -> void* (to view an array that the tape references without copying)."""
    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return types.voidptr(addr), codegen


@_jit
def saved_address(V, XA, s):
    """Address of saved value s: s <= -2 the referenced external array -2-s (XA: address /
    length pairs), else an offset into V (-1, nothing saved: V's start, never read)."""
    if s <= -2:
        return XA[2 * (-2 - s)]
    return V.ctypes.data + (s if s > 0 else 0) * V.itemsize
