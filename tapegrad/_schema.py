"""Layer 0: the tape's schema. Entry and node columns, entry flags and the kinds (calling
conventions) of the op table's rows. Imports nothing; every layer above reads it.

Compiled code (``_compiled/``) holds these numbers as compile-time constants in its on-disk
Numba cache, and Numba keys a cached function on its own source file only: after changing a
number here, regenerate ``_interp.py`` (``python -m tapegrad.ops``: its digest line covers
this file) and clear the ``__pycache__`` folders under ``tapegrad/_compiled``.
"""

# Entry columns (K int64 per entry) and node columns (NK int64 per node); tape.py writes them.
K = 12
OP, NM, OUT, IA, IB, SA, SB, SY, P0, P1, CI, FL = range(K)
NK = 5
NOFF, NSIZE, NDT, NPROD, NNR = range(NK)
F_FREED, F_SAVES, F_HIDDEN, F_BIG = 1, 2, 4, 8   # F_BIG: runs on numpy (see tape.BIG)
F_HOOK = 16    # hooks watch this entry: it also runs in Python (with F_BIG set)
F_NPFWD = 32   # a replayed forward runs this entry on numpy (SIMD ufuncs); its VJP stays here
F_ALIAS = 64   # batched plan only: a contiguous slice whose output node shares its operand's
               # lanes (no copy): the batched sweeps skip it (the reverse only marks the operand)
# replay plans only (tapegrad.func, a gradient of some inputs): operand a / b needs no adjoint
# (no wanted input is upstream of it); an entry with both set is skipped by the reverse sweep
F_NOGA, F_NOGB = 128, 256

# Kinds (calling conventions of the kernel pair, see _compiled/kernels.py).
UNARY, BINARY, SUM, INDEX, MM, CAST, PYFUNC = "unary", "binary", "sum", "index", "mm", "cast", "pyfunc"
KIND_CODES = {UNARY: 0, BINARY: 1, SUM: 2, INDEX: 3, MM: 4, CAST: 5, PYFUNC: 6}
