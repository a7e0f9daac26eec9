"""Raw addresses in compiled code: a void pointer from an int64, and where a tape's saved
value lives. The lowest compiled module (the kernels and the vector math both read it)."""
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_jit = njit(cache=True, fastmath=False, boundscheck=False, nogil=True, error_model="numpy")


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
