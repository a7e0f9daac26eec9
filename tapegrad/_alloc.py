"""Keep large freed blocks in the process (glibc only).

Every big node value and cotangent is a fresh numpy array of megabytes. With glibc's default
settings a freed block of that size goes back to the system (``munmap``, or trimming the top of
the heap once 2 x the dynamic mmap threshold is free there), so the next array of that size is
fresh memory again and pays a page fault for every 4 KiB it touches: about 1,000 faults, some
1.3 ms on these VMs, per 4-MB array. ``sum(sin(x)*exp(-x**2)+tanh(x))``'s backward on 10^6
elements took 12.6 ms that way and 7.0 ms without the faults.

So on import tapegrad sets two ``mallopt`` parameters for the process, the way one would link
jemalloc or tcmalloc: blocks up to ``MMAP_MAX`` come from the heap (glibc's own ceiling for
its dynamic threshold on 64-bit systems, so nothing that glibc would have kept in the heap
moves to mmap), and up to ``TRIM`` bytes free at the top of the heap are kept for reuse instead
of being given back. The cost is that much resident memory that a process may keep after it
frees big arrays. ``TAPEGRAD_MALLOPT=0`` in the environment leaves the allocator alone.
"""
import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_MAX = 32 << 20
TRIM = 256 << 20

applied = False


def apply():
    """Set the two parameters (once; a no-op off glibc or with TAPEGRAD_MALLOPT=0)."""
    global applied
    if applied or os.environ.get("TAPEGRAD_MALLOPT", "1") == "0" or not sys.platform.startswith("linux"):
        return applied
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):      # musl and other C libraries: no mallopt
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_MAX)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM))
    return applied
