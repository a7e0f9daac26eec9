"""Vector math for big elementwise nodes: glibc's libmvec called from Numba, on every core.

numpy's ufuncs are SIMD but run on one core; numba's own loops run on every core but, without
Intel's SVML (llvmlite on PyPI is built without it), call the scalar libm for ``sin``/``exp``/
``tanh``. glibc (2.35 and later) ships ``libmvec``: the same functions on whole SIMD registers
(``_ZGVeN16v_sinf`` computes 16 float32 sines at once, ``_ZGVdN4v_exp`` 4 float64
exponentials). The kernels here call those through a Numba intrinsic, a register's worth of
elements at a time, inside ``prange`` loops: on 10^6 float32 elements and 2 cores ``sin`` takes
~0.25 ms against numpy's ~0.56 ms, and a VJP such as ``g * cos(x)`` is one pass with no
temporary. libmvec's functions are within 4 ulp (numpy's own SIMD ones are within 1-4).

The kernels are keyed by op-table row name (``UNARY``, ``BINARY``); a row says it has one with
``Op.vm`` (tests check the two lists agree). ``OK`` is False, and callers keep numpy, when
the compiled code is not in use yet (``_cache``), when libmvec or the needed instruction set
is missing, when Numba is told to compile for another CPU
(``NUMBA_CPU_NAME``: the vector calling convention depends on the registers compiled for), or
with ``TAPEGRAD_VMATH=0``.
"""
import ctypes
import ctypes.util
import os
import types as _pytypes

import numpy as np

from . import _cache

# row name -> code. Unary: forward y = f(x) and VJP gx = g f'(x) (reading x or y, as the row
# saves). Binary: forward and VJP of the arithmetic rows.
UNARY = {name: i for i, name in enumerate((
    "neg", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt", "abs", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "erf", "log1p", "expm1", "scale", "pow_scalar"))}
BINARY = {name: i for i, name in enumerate(("add", "sub", "mul", "div"))}
# the rows whose forward calls libmvec (the others are arithmetic loops)
LIBM = frozenset(("exp", "log", "sin", "cos", "tanh", "sigmoid", "tan", "asin", "acos", "atan",
                  "sinh", "cosh", "erf", "log1p", "expm1"))

MIN = 1 << 12          # from this many elements a row with a kernel uses it (numpy below)
PAR = 1 << 16         # from this many elements the kernels run on every core (see start_threads)
# elements per kernel block (a prange iteration). A block call costs ~0.1 us of argument
# passing, so blocks of 1,024 made a 10^5-element negation 2x slower than one loop; 16,384
# (64 KB of float32, in L2 for a block's two passes) costs within 5% of one loop.
BLOCK = 1 << 14
# runs of elementwise VJPs (``run_vjp``): int64 per program row, and elements per block (a
# block's scratch rows stay in L1/L2 through all of the run's rows). A row: kind (0 unary,
# 1 binary), the UNARY / BINARY code, the slot of the entry's cotangent (-1: the row's
# constant, broadcast), operand a's slot and mode (0: its first contribution, 1: added),
# operand b's slot and mode (-1: none), whether a / b hold all n elements (0: one, a number),
# where the saved operands are (unary: x, y; binary: a, b; the tape's save codes), and the
# entry's output node (for the caller; the kernel does not read it)
RUN_W = 12
RUN_BLOCK = 1 << 12

OK = False
_ISA = None
_threads = []


def _twin(fn, suffix):
    """A copy of ``fn`` under another name: numba's cache index does not tell a serial
    compilation of a function from a parallel one, so each gets its own function."""
    code = fn.__code__.replace(co_name=fn.__name__ + suffix,
                               co_qualname=fn.__qualname__ + suffix)
    twin = _pytypes.FunctionType(code, fn.__globals__, fn.__name__ + suffix, fn.__defaults__)
    twin.__qualname__ = fn.__qualname__ + suffix
    return twin


def start_threads():
    """Start Numba's worker threads (once) with a short spin-wait. Left alone, GNU OpenMP
    workers spin ~300,000 times (milliseconds) after each parallel region, taking a core from
    OpenBLAS's threads and numpy's: a 100 x 100 matmul then waited out a scheduler time slice
    (13 ms instead of 0.7). 10,000 spins keep the workers warm through a run of eager ops.
    A user's own GOMP_SPINCOUNT or OMP_WAIT_POLICY wins; the variable is set only while the
    OpenMP runtime reads it, so libraries loaded later (torch's own libgomp) see no change."""
    if _threads:
        return
    _threads.append(True)
    from numba.np.ufunc import parallel
    if parallel._is_initialized:
        return
    mine = "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ
    if mine:
        os.environ["GOMP_SPINCOUNT"] = "10000"
    try:
        parallel._launch_threads()
    finally:
        if mine:
            del os.environ["GOMP_SPINCOUNT"]


def _pick_isa():
    """libmvec's ISA letter and lanes per float32 / float64 register for this CPU, or None."""
    if os.environ.get("TAPEGRAD_VMATH", "1") == "0":
        return None
    if os.environ.get("NUMBA_CPU_NAME") or os.environ.get("NUMBA_CPU_FEATURES"):
        return None
    try:
        import llvmlite.binding as ll
        feats = ll.get_host_cpu_features()
    except Exception:          # pragma: no cover - llvmlite without host feature queries
        return None
    if feats.get("avx512f"):
        return ("e", 16, 8)
    if feats.get("avx2") and feats.get("fma"):
        return ("d", 8, 4)
    return None


def _load():
    global OK, _ISA
    isa = _pick_isa()
    if isa is None:
        return
    # glibc's soname first: find_library runs a subprocess (~9 ms at import)
    path = "libmvec.so.1"
    try:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            path = ctypes.util.find_library("mvec")
            if path is None:
                return
            lib = ctypes.CDLL(path)
        # the newest functions used (glibc 2.35): their absence means an older libmvec
        for base in ("tanhf", "erff", "expm1f", "log1pf", "sinhf", "coshf", "tanf", "asinf",
                     "acosf", "atanf"):
            getattr(lib, "_ZGV%sN%dv_%s" % (isa[0], isa[1], base))
        import llvmlite.binding as ll
        ll.load_library_permanently(path)
    except (OSError, AttributeError, RuntimeError):
        return
    _ISA = isa
    OK = True


_load()

if OK:
    import math

    from llvmlite import ir
    from numba import carray, njit, prange, types
    from numba.extending import intrinsic

    from ._addr import INTERNAL, _voidptr, saved_address

    def _vcall(base):
        """An intrinsic f(src, dst, i): dst[i:i+L] = base(src[i:i+L]) on one SIMD register
        (L lanes of the arrays' dtype), through libmvec's vector variant of ``base``."""
        @intrinsic
        def call(typingctx, src, dst, i):
            f32 = src.dtype == types.float32
            letter, l32, l64 = _ISA
            lanes = l32 if f32 else l64
            name = "_ZGV%sN%dv_%s%s" % (letter, lanes, base, "f" if f32 else "")

            def codegen(context, builder, sig, args):
                s, d, idx = args
                vt = ir.VectorType(ir.FloatType() if f32 else ir.DoubleType(), lanes)
                mod = builder.module
                fn = mod.globals.get(name)
                if fn is None:
                    fn = ir.Function(mod, ir.FunctionType(vt, [vt]), name=name)
                sa = context.make_array(sig.args[0])(context, builder, s)
                da = context.make_array(sig.args[1])(context, builder, d)
                v = builder.load(builder.bitcast(builder.gep(sa.data, [idx]), vt.as_pointer()),
                                 align=4 if f32 else 8)
                builder.store(builder.call(fn, [v]),
                              builder.bitcast(builder.gep(da.data, [idx]), vt.as_pointer()),
                              align=4 if f32 else 8)
                return context.get_dummy_value()
            return types.void(src, dst, i), codegen
        return call

    _sin, _cos, _tan = _vcall("sin"), _vcall("cos"), _vcall("tan")
    _exp, _log, _tanh = _vcall("exp"), _vcall("log"), _vcall("tanh")
    _asin, _acos, _atan = _vcall("asin"), _vcall("acos"), _vcall("atan")
    _sinh, _cosh, _erf = _vcall("sinh"), _vcall("cosh"), _vcall("erf")
    _log1p, _expm1 = _vcall("log1p"), _vcall("expm1")

    _opts = dict(cache=True, nogil=True, error_model="numpy", boundscheck=False,
                 no_cfunc_wrapper=True)
    # helpers only the entry points below call (``_addr.INTERNAL``: no wrappers, no cache)
    _iopts = dict(error_model="numpy", boundscheck=False, **INTERNAL)

    @njit(**_iopts)
    def _vfn(code, x, y, L):
        """y = f(x) for a transcendental row ``code``, one SIMD register (L lanes) at a time
        (x.size a multiple of L)."""
        for i in range(0, x.size, L):
            if code == 1:
                _exp(x, y, i)
            elif code == 2:
                _log(x, y, i)
            elif code == 3:
                _sin(x, y, i)
            elif code == 4:
                _cos(x, y, i)
            elif code == 5:
                _tanh(x, y, i)
            elif code == 10:
                _tan(x, y, i)
            elif code == 11:
                _asin(x, y, i)
            elif code == 12:
                _acos(x, y, i)
            elif code == 13:
                _atan(x, y, i)
            elif code == 14:
                _sinh(x, y, i)
            elif code == 15:
                _cosh(x, y, i)
            elif code == 16:
                _erf(x, y, i)
            elif code == 17:
                _log1p(x, y, i)
            else:
                _expm1(x, y, i)

    @njit(**_iopts)
    def _ufwd_block(code, x, y, L, c):
        """y = row ``code``'s forward of x (one block; each branch is its own loop)."""
        one = x.dtype.type(1)
        zero = x.dtype.type(0)
        if code == 0:
            for k in range(x.size):
                y[k] = -x[k]
        elif code == 6:                      # 1 / (1 + exp(-x)), both signs without overflow
            for k in range(x.size):
                y[k] = -abs(x[k])
            _vfn(1, y, y, L)
            for k in range(x.size):
                e = y[k]
                y[k] = (one if x[k] >= zero else e) / (one + e)
        elif code == 7:
            for k in range(x.size):
                v = x[k]
                y[k] = zero if v < zero else v    # (nan passes, -0.0 stays: torch)
        elif code == 8:
            for k in range(x.size):
                y[k] = math.sqrt(x[k])
        elif code == 9:
            for k in range(x.size):
                y[k] = abs(x[k])
        elif code == 19:
            cc = x.dtype.type(c)
            for k in range(x.size):
                y[k] = x[k] * cc
        elif code == 20:                     # x ** c: the common exponents without pow
            if c == 2.0:
                for k in range(x.size):
                    y[k] = x[k] * x[k]
            elif c == 1.0:
                for k in range(x.size):
                    y[k] = x[k]
            elif c == 0.5:
                for k in range(x.size):
                    y[k] = math.sqrt(x[k])
            else:
                cc = x.dtype.type(c)
                for k in range(x.size):
                    y[k] = x[k] ** cc
        else:
            _vfn(code, x, y, L)

    @njit(**_iopts)
    def _ufactor(code, x, y, out, L, c):
        """out = f'(x) of row ``code`` (x, y: its saved input and output)."""
        one = out.dtype.type(1)
        zero = out.dtype.type(0)
        if code == 3:
            _vfn(4, x, out, L)
        elif code == 4:
            _vfn(3, x, out, L)
            for k in range(out.size):
                out[k] = -out[k]
        elif code == 14:
            _vfn(15, x, out, L)
        elif code == 15:
            _vfn(14, x, out, L)
        elif code == 16:                     # erf: 2/sqrt(pi) exp(-x^2)
            for k in range(out.size):
                out[k] = -(x[k] * x[k])
            _vfn(1, out, out, L)
            c2 = out.dtype.type(1.1283791670955126)
            for k in range(out.size):
                out[k] = out[k] * c2
        elif code == 1:
            for k in range(out.size):
                out[k] = y[k]
        elif code == 2:
            for k in range(out.size):
                out[k] = one / x[k]
        elif code == 5:
            for k in range(out.size):
                out[k] = one - y[k] * y[k]
        elif code == 6:
            for k in range(out.size):
                out[k] = y[k] * (one - y[k])
        elif code == 7:
            for k in range(out.size):
                out[k] = zero if y[k] <= zero else one       # (nan passes, as torch)
        elif code == 8:
            for k in range(out.size):
                out[k] = one / (y[k] + y[k])
        elif code == 9:
            for k in range(out.size):
                v = x[k]
                out[k] = one if v > zero else (-one if v < zero else zero)
        elif code == 10:
            for k in range(out.size):
                out[k] = one + y[k] * y[k]
        elif code == 11:
            for k in range(out.size):
                out[k] = one / math.sqrt(one - x[k] * x[k])
        elif code == 12:
            for k in range(out.size):
                out[k] = -one / math.sqrt(one - x[k] * x[k])
        elif code == 13:
            for k in range(out.size):
                out[k] = one / (one + x[k] * x[k])
        elif code == 17:
            for k in range(out.size):
                out[k] = one / (one + x[k])
        elif code == 18:
            for k in range(out.size):
                out[k] = y[k] + one
        elif code == 20:                     # c x^(c-1)
            if c == 2.0:
                for k in range(out.size):
                    out[k] = x[k] + x[k]
            elif c == 1.0:
                for k in range(out.size):
                    out[k] = one
            else:
                cc = out.dtype.type(c)
                cm = out.dtype.type(c - 1.0)
                for k in range(out.size):
                    out[k] = cc * x[k] ** cm

    @njit(**_iopts)
    def _uvjp_block(code, g, ig, x, y, out, L, c):
        """out = g f'(x) for one block (g[0] broadcast when ig == 0)."""
        if code == 20 and c == 0.0:          # x ** 0: zero, even where g is infinite
            for k in range(out.size):
                out[k] = 0
            return
        if code == 0 or code == 19:          # -g, c g: no factor pass
            s = out.dtype.type(-1.0 if code == 0 else c)
            if ig:
                for k in range(out.size):
                    out[k] = g[k] * s
            else:
                v = g[0] * s
                for k in range(out.size):
                    out[k] = v
            return
        _ufactor(code, x, y, out, L, c)
        if ig:
            for k in range(out.size):
                out[k] = out[k] * g[k]
        else:
            v = g[0]
            for k in range(out.size):
                out[k] = out[k] * v

    def _unary_fwd_src(code, x, y, c, L):
        n = x.size
        B = BLOCK                            # per prange iteration (see BLOCK)
        nb = n // B
        for b in prange(nb):
            _ufwd_block(code, x[b * B:b * B + B], y[b * B:b * B + B], L, c)
        r0 = nb * B
        r1 = n - (n - r0) % L               # the tail: whole registers in place ...
        if r0 < r1:
            _ufwd_block(code, x[r0:r1], y[r0:r1], L, c)
        if r1 < n:                           # ... and the last few elements padded
            m = n - r1
            tx = np.ones(L, x.dtype)
            ty = np.empty(L, x.dtype)
            tx[:m] = x[r1:]
            _ufwd_block(code, tx, ty, L, c)
            y[r1:] = ty[:m]

    def _unary_vjp_src(code, g, ig, x, y, out, c, L):
        n = out.size
        B = BLOCK
        nb = n // B
        for b in prange(nb):
            i0 = b * B
            _uvjp_block(code, g[i0:i0 + B] if ig else g, ig, x[i0:i0 + B] if x.size >= n else x,
                        y[i0:i0 + B] if y.size >= n else y, out[i0:i0 + B], L, c)
        r0 = nb * B
        r1 = n - (n - r0) % L               # the tail: whole registers in place ...
        if r0 < r1:
            _uvjp_block(code, g[r0:r1] if ig else g, ig, x[r0:r1] if x.size >= n else x,
                        y[r0:r1] if y.size >= n else y, out[r0:r1], L, c)
        if r1 < n:                           # ... and the last few elements padded
            m = n - r1
            tx = np.ones(L, out.dtype)
            ty = np.ones(L, out.dtype)
            to = np.empty(L, out.dtype)
            if x.size >= n:
                tx[:m] = x[r1:]
            if y.size >= n:
                ty[:m] = y[r1:]
            if ig:
                tg = np.zeros(L, out.dtype)
                tg[:m] = g[r1:]
                _uvjp_block(code, tg, 1, tx, ty, to, L, c)
            else:
                _uvjp_block(code, g, 0, tx, ty, to, L, c)
            out[r1:] = to[:m]

    def _bfwd_src(code, a, b, y):
        """y = a op b; a or b may hold one element (broadcast). Serial: the one-core kernel
        itself (no blocks: a block call cost ~0.3 us on 16,384 elements), and the parallel
        kernel's block."""
        n = y.size
        if a.size == n and b.size == n:
            if code == 0:
                for i in range(n):
                    y[i] = a[i] + b[i]
            elif code == 1:
                for i in range(n):
                    y[i] = a[i] - b[i]
            elif code == 2:
                for i in range(n):
                    y[i] = a[i] * b[i]
            else:
                for i in range(n):
                    y[i] = a[i] / b[i]
        elif b.size == n:
            s = a[0]
            if code == 0:
                for i in range(n):
                    y[i] = s + b[i]
            elif code == 1:
                for i in range(n):
                    y[i] = s - b[i]
            elif code == 2:
                for i in range(n):
                    y[i] = s * b[i]
            else:
                for i in range(n):
                    y[i] = s / b[i]
        else:
            s = b[0]
            if code == 0:
                for i in range(n):
                    y[i] = a[i] + s
            elif code == 1:
                for i in range(n):
                    y[i] = a[i] - s
            elif code == 2:
                for i in range(n):
                    y[i] = a[i] * s
            else:
                for i in range(n):
                    y[i] = a[i] / s

    _bfwd_block = njit(**_iopts)(_bfwd_src)

    @njit(parallel=True, **_opts)
    def _binary_fwd_src_par(code, a, b, y):
        """y = a op b on every core; a or b may hold one element (broadcast). One prange over
        blocks (as the unary kernels): a prange per branch made Numba build twelve parallel
        regions (5.4 s of compile per dtype against 2 s, plus ~1.2 s for the block kernel)."""
        n = y.size
        B = BLOCK
        nb = (n + B - 1) // B
        for blk in prange(nb):
            i0 = blk * B
            i1 = min(n, i0 + B)
            _bfwd_block(code, a[i0:i1] if a.size == n else a, b[i0:i1] if b.size == n else b,
                        y[i0:i1])

    @njit(**_iopts)
    def _bvjp_block(code, g, a, b, ga, gb, wa, wb, m):
        """The m-element gradients of a op b for one block (size-1 g/a/b broadcast: expanded
        into a temporary, the only allocation)."""
        gg = g
        if g.size != m:
            gg = np.empty(m, g.dtype)
            gg[:] = g[0]
        aa = a
        if a.size != m and wb:
            aa = np.empty(m, g.dtype)
            aa[:] = a[0]
        bb = b
        if b.size != m:
            bb = np.empty(m, g.dtype)
            bb[:] = b[0]
        if code == 2:
            if wa:
                for k in range(m):
                    ga[k] = gg[k] * bb[k]
            if wb:
                for k in range(m):
                    gb[k] = gg[k] * aa[k]
        else:
            if wa:
                for k in range(m):
                    ga[k] = gg[k] / bb[k]
            if wb:
                for k in range(m):
                    gb[k] = -(gg[k] * aa[k]) / (bb[k] * bb[k])

    def _binary_vjp_src(code, g, ig, a, b, ga, gb, wa, wb, n):
        """The n-element gradients of a op b (mul, div): ga (if wa) and gb (if wb);
        single-element operands (and g with ig = 0) broadcast (the caller sums such an
        operand's gradient)."""
        B = BLOCK
        nb = (n + B - 1) // B
        for blk in prange(nb):
            i0 = blk * B
            i1 = min(n, i0 + B)
            _bvjp_block(code, g[i0:i1] if ig else g, a[i0:i1] if a.size >= n else a,
                        b[i0:i1] if b.size >= n else b, ga[i0:i1] if wa else ga,
                        gb[i0:i1] if wb else gb, wa, wb, i1 - i0)

    @njit(**_iopts)
    def _rslot(sk, sa, scr, s, i0, m, V):
        """Block [i0, i0 + m) of a run's cotangent slot s: an external array (kind 0, sa: its
        address), one broadcast element (kind 1) or a scratch row (kind 2, sa: the row)."""
        k = sk[s]
        if k == 2:
            return scr[sa[s], :m]
        if k == 1:
            return carray(_voidptr(sa[s]), (1,), V.dtype)
        return carray(_voidptr(sa[s] + i0 * V.itemsize), (m,), V.dtype)

    @njit(**_iopts)
    def _rval(addr, full, i0, m, V):
        """Block [i0, i0 + m) of a saved operand (address 0: not saved, no elements; full 0:
        one element, broadcast)."""
        if addr == 0:
            return carray(_voidptr(addr), (0,), V.dtype)
        if full == 0:
            return carray(_voidptr(addr), (1,), V.dtype)
        return carray(_voidptr(addr + i0 * V.itemsize), (m,), V.dtype)

    @njit(**_iopts)
    def _rput(dst, mode, t):
        """dst = t (mode 0: the node's first contribution) or dst += t."""
        if mode == 0:
            for k in range(dst.size):
                dst[k] = t[k]
        else:
            for k in range(dst.size):
                dst[k] = dst[k] + t[k]

    @njit(**_iopts)
    def _rmul(dst, mode, u, v):
        """dst = u v or dst += u v (v: one element, broadcast, or as long as dst); the
        product is rounded before the sum, as a separate VJP and accumulation round it."""
        if v.size == dst.size:
            if mode == 0:
                for k in range(dst.size):
                    dst[k] = u[k] * v[k]
            else:
                for k in range(dst.size):
                    dst[k] = dst[k] + u[k] * v[k]
        else:
            w = v[0]
            if mode == 0:
                for k in range(dst.size):
                    dst[k] = u[k] * w
            else:
                for k in range(dst.size):
                    dst[k] = dst[k] + u[k] * w

    @njit(**_iopts)
    def _run_block(prog, cs, sk, sa, opa, V, scr, nscr, i0, m, L):
        """One block of a run (see ``_run_src``): every row in order on elements [i0, i0+m)."""
        R = prog.size // RUN_W
        mp = (m + L - 1) // L * L
        t = scr[nscr, :m]                    # a row's contribution
        for r in range(R):
            o = r * RUN_W
            code = prog[o + 1]
            c = cs[r]
            if prog[o + 2] < 0:              # no slot: the row's constant, broadcast (a sum)
                g = scr[nscr + 1, :m]
                v = V.dtype.type(c)
                for k in range(m):
                    g[k] = v
            else:
                g = _rslot(sk, sa, scr, prog[o + 2], i0, m, V)
                if g.size != m:              # a broadcast cotangent (sum's VJP) made a row
                    gf = scr[nscr + 1, :m]
                    v = g[0]
                    for k in range(m):
                        gf[k] = v
                    g = gf
            da, db = prog[o + 3], prog[o + 5]
            x = _rval(opa[2 * r], prog[o + 7], i0, m, V)
            y = _rval(opa[2 * r + 1], prog[o + 8], i0, m, V)
            if prog[o] == 0:                 # unary: g f'(x)
                dst = _rslot(sk, sa, scr, da, i0, m, V)
                if code == 20 and c == 0.0:
                    t[:] = 0
                    _rput(dst, prog[o + 4], t)
                elif code == 0 or code == 19:
                    t[:1] = -1.0 if code == 0 else c
                    _rmul(dst, prog[o + 4], g, t[:1])
                elif code == 1:              # exp: f' = y
                    _rmul(dst, prog[o + 4], g, y)
                else:
                    f = scr[nscr + 2, :mp]
                    if mp == m:
                        _ufactor(code, x, y, f, L, c)
                    else:                    # the last block: registers padded with ones
                        tx = scr[nscr + 3, :mp]
                        ty = scr[nscr + 4, :mp]
                        tx[:] = 1
                        ty[:] = 1
                        if x.size == m:
                            tx[:m] = x
                        if y.size == m:
                            ty[:m] = y
                        _ufactor(code, tx, ty, f, L, c)
                    _rmul(dst, prog[o + 4], f[:m], g)
                continue
            # binary (x, y: the operands a, b): add, sub, mul, div
            if da >= 0:
                dst = _rslot(sk, sa, scr, da, i0, m, V)
                if code <= 1:
                    _rput(dst, prog[o + 4], g)
                elif code == 2:
                    _rmul(dst, prog[o + 4], g, y)
                else:
                    if y.size == m:
                        for k in range(m):
                            t[k] = g[k] / y[k]
                    else:
                        v = y[0]
                        for k in range(m):
                            t[k] = g[k] / v
                    _rput(dst, prog[o + 4], t)
            if db >= 0:
                dst = _rslot(sk, sa, scr, db, i0, m, V)
                if code == 0:
                    _rput(dst, prog[o + 6], g)
                elif code == 2:
                    _rmul(dst, prog[o + 6], g, x)
                else:
                    if code == 1:
                        for k in range(m):
                            t[k] = -g[k]
                    elif x.size == m and y.size == m:
                        for k in range(m):
                            t[k] = -(g[k] * x[k]) / (y[k] * y[k])
                    elif x.size == m:
                        v = y[0] * y[0]
                        for k in range(m):
                            t[k] = -(g[k] * x[k]) / v
                    else:
                        v = x[0]
                        for k in range(m):
                            t[k] = -(g[k] * v) / (y[k] * y[k])
                    _rput(dst, prog[o + 6], t)

    def _run_src(prog, cs, sk, sa, V, XA, n, nscr, L):
        """The VJPs of a run of elementwise entries over n elements, block by block: each block
        goes through every row (``prog``, RUN_W int64 each, in sweep order), so the
        cotangents of the nodes made and used inside the run (scratch rows) never leave
        the cache. Saved operands are found as the interpreter finds them
        (``kernels.saved_address``)."""
        R = prog.size // RUN_W
        opa = np.zeros(2 * R, np.int64)
        for r in range(R):
            for j in range(2):
                s = prog[r * RUN_W + 9 + j]
                if s != -1:                  # -1: not saved (address 0, no elements)
                    opa[2 * r + j] = saved_address(V, XA, s)
        B = RUN_BLOCK
        nb = (n + B - 1) // B
        for blk in prange(nb):
            i0 = blk * B
            scr = np.empty((nscr + 5, B + 16), V.dtype)   # rows 16 elements off 4 KB strides
            _run_block(prog, cs, sk, sa, opa, V, scr, nscr, i0, min(n, i0 + B) - i0, L)

    @njit(parallel=True, fastmath={"reassoc", "contract"}, **_opts)
    def _total_par(x, B):
        """sum(x) in float64: blocks of B elements summed on every core (reassociation lets
        each block's loop vectorise), then the block sums in order."""
        n = x.size
        nb = (n + B - 1) // B
        part = np.empty(nb, np.float64)
        for b in prange(nb):
            xb = x[b * B:min(n, b * B + B)]
            s = 0.0
            for i in range(xb.size):         # from 0: no wraparound test, so it vectorises
                s += xb[i]
            part[b] = s
        t = 0.0
        for b in range(nb):
            t += part[b]
        return t

    @njit(fastmath={"reassoc", "contract"}, **_opts)
    def _total_s(x):
        """sum(x) in float64 on one core, vectorised (reassociated)."""
        s = 0.0
        for i in range(x.size):
            s += x[i]
        return s

    # below PAR elements one core (no thread hand-off), from PAR on every core
    _ufwd_s = njit(**_opts)(_unary_fwd_src)
    _uvjp_s = njit(**_opts)(_unary_vjp_src)
    _bfwd_s = njit(**_opts)(_bfwd_src)
    _bvjp_s = njit(**_opts)(_binary_vjp_src)
    _ufwd_p = njit(parallel=True, **_opts)(_twin(_unary_fwd_src, "_par"))
    _uvjp_p = njit(parallel=True, **_opts)(_twin(_unary_vjp_src, "_par"))
    _bfwd_p = _binary_fwd_src_par
    _bvjp_p = njit(parallel=True, **_opts)(_twin(_binary_vjp_src, "_par"))
    _run_s = njit(**_opts)(_run_src)
    _run_p = njit(parallel=True, **_opts)(_twin(_run_src, "_par"))

_EMPTY = {np.dtype(np.float32): np.ones(1, np.float32), np.dtype(np.float64): np.ones(1, np.float64)}
_LANES = {np.dtype(np.float32): _ISA[1], np.dtype(np.float64): _ISA[2]} if OK else {}
_L4, _L8 = (_ISA[1], _ISA[2]) if OK else (1, 1)
# ``OK`` also needs the compiled code in use (``_cache.ON``: not while a fresh installation
# compiles in the background, when callers keep numpy); ``AVAILABLE``: libmvec and the ISA
AVAILABLE = OK
OK = AVAILABLE and _cache.ON


@_cache.on_switch
def _switched():
    global OK
    OK = AVAILABLE and _cache.ON


def _c(v, dt):
    """An operand for the kernels: a contiguous array of the dtype (the intrinsics read
    registers' worths of consecutive elements), the 1-element dummy for None."""
    if v is None:
        return _EMPTY[dt]
    if v.dtype != dt or not v.flags.c_contiguous:
        return np.ascontiguousarray(v, dt)
    return v


def _pick(serial, parallel, n):
    """The one-core kernel below PAR elements, else its parallel twin (workers started)."""
    if n < PAR:
        return serial
    if not _threads:
        start_threads()
    return parallel


def unary_fwd(name, x, out, c=0.0):
    """out = row ``name``'s forward of x (flat, contiguous, same dtype)."""
    _pick(_ufwd_s, _ufwd_p, out.size)(UNARY[name], _c(x, out.dtype), out, float(c),
                                      _LANES[out.dtype])
    return out


def _flat_g(g, n):
    """(g, ig) for the kernels: a contiguous cotangent, or one value broadcast (stride 0),
    or None when g is neither (the caller then uses numpy)."""
    if g.flags.c_contiguous and g.size == n:
        return g, 1
    if g.ndim == 1 and g.strides[0] == 0:
        return g[:1], 0
    return None, 0


def unary_vjp(name, g, x, y, out, c=0.0):
    """out = row ``name``'s VJP for cotangent g (x, y: saved input/output or None); False
    when g's layout needs numpy."""
    n = out.size
    g, ig = _flat_g(g, n)
    if g is None:
        return False
    dt = out.dtype
    _pick(_uvjp_s, _uvjp_p, n)(UNARY[name], _c(g, dt), ig, _c(x, dt), _c(y, dt), out, float(c),
                               _LANES[dt])
    return True


def binary_fwd(name, a, b, out):
    """out = a op b (flat; a or b may hold one element)."""
    dt = out.dtype
    _pick(_bfwd_s, _bfwd_p, out.size)(BINARY[name], _c(a, dt), _c(b, dt), out)
    return out


def binary_vjp(name, g, a, b, ga, gb, n):
    """Fill the wanted n-element gradients (ga/gb not None) of ``a name b`` (mul, div: add
    and sub pass g on); False when g's layout needs numpy."""
    if name != "mul" and name != "div":
        return False
    g, ig = _flat_g(g, n)
    if g is None:
        return False
    dt = g.dtype
    _pick(_bvjp_s, _bvjp_p, n)(
        BINARY[name], _c(g, dt), ig, _c(a, dt), _c(b, dt), _c(ga, dt), _c(gb, dt),
        ga is not None, gb is not None, n)
    return True


def run_vjp(prog, cs, sk, sa, V, XA, n, nscr):
    """Run a program of elementwise VJPs over n elements (see ``tape._run_big``): prog, RUN_W
    int64 per row; cs, each row's constant; sk/sa, the cotangent slots' kinds and addresses
    or scratch rows (nscr of them); V/XA, the tape's value store and referenced arrays of
    the run's dtype (where the rows' saved operands are)."""
    _pick(_run_s, _run_p, n)(prog, cs, sk, sa, V, XA, n, nscr, _LANES[V.dtype])


def total(x):
    """sum of a flat contiguous float array of MIN elements or more, accumulated in float64,
    on every core from PAR elements (numpy's float32 ``add.reduce`` runs pairwise on one
    core: 0.27 ms on 10^6 elements against torch's 0.06; 3.3 us on 10^4 against ~1 us here);
    the caller casts to x's dtype."""
    if x.size < PAR:
        return _total_s(x)
    if not _threads:
        start_threads()
    return _total_par(x, 8192)


def one_row(x, g=None):
    """True when the one-row softmax helpers below take x (and cotangent g): flat, contiguous,
    float, PAR elements or more, the kernels available."""
    return (OK and x.ndim == 1 and x.size >= PAR and x.flags.c_contiguous
            and x.dtype in _LANES and (g is None or (g.flags.c_contiguous and g.size == x.size
                                                     and g.dtype == x.dtype)))


def softmax_row(x, m, log):
    """softmax (log: log_softmax) of one big row x shifted by its maximum m (a 1-element
    array): subtraction, exp, a float64 sum and the division on every core, where numpy
    makes four passes on one core (10^5 float32: ~75 -> ~30 us)."""
    y = binary_fwd("sub", x, m, np.empty(x.size, x.dtype))
    e = unary_fwd("exp", y, np.empty(x.size, x.dtype) if log else y)
    s = total(e)
    if log:
        return binary_fwd("sub", y, np.full(1, math.log(s), x.dtype), y)
    return binary_fwd("div", y, np.full(1, s, x.dtype), y)


def softmax_row_vjp(g, y, out, log):
    """The VJP of ``softmax_row`` from its output y: y (g - sum(g y)), or for log_softmax
    g - exp(y) sum(g); into out."""
    if log:
        s = total(g)
        unary_fwd("exp", y, out)
        binary_fwd("mul", out, np.full(1, s, y.dtype), out)
        return binary_fwd("sub", g, out, out)
    s = total(binary_fwd("mul", g, y, out))
    binary_fwd("sub", g, np.full(1, s, y.dtype), out)
    return binary_fwd("mul", y, out, out)


_native_keep = []


def _cfunc(fn, sig):
    from . import _fastload  # deferred: Numba machine code, loaded on first use
    return _fastload.cfunc(fn, sig)


def native_fwd():
    """Addresses of two C functions ``void f(int64 code, x*, y*, int64 n)``: y = f(x) for row
    ``code`` over n float32 / float64 elements, on one core (``_native`` puts them in the
    kernels' table). Compiled on first call and cached on disk."""
    if not _native_keep:
        from numba import carray
        sig = types.void(types.int64, types.voidptr, types.voidptr, types.int64)

        def vm4(code, x, y, n):
            _ufwd_s(code, carray(x, (n,), np.float32), carray(y, (n,), np.float32), 0.0, _L4)

        def vm8(code, x, y, n):
            _ufwd_s(code, carray(x, (n,), np.float64), carray(y, (n,), np.float64), 0.0, _L8)
        _native_keep.extend((_cfunc(vm4, sig), _cfunc(vm8, sig)))
    return _native_keep[0].address, _native_keep[1].address
