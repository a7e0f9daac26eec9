"""Large elementwise numpy work on every core.

numpy releases the GIL inside ufunc loops, so one array split into chunks runs in parallel
Python threads. Used for nodes of >= ``PAR_MIN`` elements, in the eager forward and in the
numpy VJPs of big entries. (Numba's own parallel loops would be slower here: without SVML its
sin/exp/tanh do not vectorise, while numpy's ufuncs are SIMD.)
"""
import os
from concurrent.futures import ThreadPoolExecutor

PAR_MIN = 1 << 17
THREADS = max(1, min(os.cpu_count() or 1, int(os.environ.get("TAPEGRAD_THREADS", "64"))))
_pool = []


def run(fn, n):
    """Call ``fn(i, j)`` on chunks covering range(n), in parallel when n is large."""
    if THREADS < 2 or n < PAR_MIN:
        fn(0, n)
        return
    if not _pool:
        _pool.append(ThreadPoolExecutor(THREADS - 1, thread_name_prefix="tapegrad"))
    k = THREADS
    bounds = [n * i // k for i in range(k + 1)]
    futs = [_pool[0].submit(fn, bounds[i], bounds[i + 1]) for i in range(1, k)]
    try:
        fn(bounds[0], bounds[1])
    finally:
        for f in futs:
            f.result()


def part(v, i, j):
    """Chunk i:j of an operand (operands of one element broadcast, None stays None)."""
    return v if v is None or v.size == 1 else v[i:j]
