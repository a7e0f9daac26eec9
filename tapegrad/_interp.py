"""GENERATED from tapegrad/ops.py by `python -m tapegrad.ops` -- do not edit by hand.

The interpreter's dispatch: one branch per row of the op table. `reverse` sweeps a tape
backwards accumulating adjoints; `forward` replays it on new node values. Both are compiled
once per dtype (Numba specialises `_rstep`/`_fstep` for float32 and float64) and cached on
disk; no tape ever triggers a compilation.
"""
from numba import njit

from .kernels import *  # noqa: F401,F403  (kernel pairs and tape accessors)
from .kernels import (K, NK, OP, OUT, IA, IB, SA, SB, SY, P0, P1, CI, FL, NOFF, NSIZE, NDT,
                      F_FREED, F_SAVES, nslice, saved, operand, mark)

_jit = njit(cache=True, nogil=True)

# kind code of each opcode (see ops.KIND_CODES)
KIND = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 3, 3, 3, 4, 5, 6,)
OPNAMES = ('neg', 'exp', 'log', 'sin', 'cos', 'tanh', 'sigmoid', 'relu', 'sqrt', 'abs', 'pow_scalar', 'add', 'sub', 'mul', 'div', 'pow', 'sum', 'gather', 'segsum', 'copy', 'mm', 'cast', 'pyfunc',)
CAST_OP = 21
PYFUNC_OP = 22


@_jit
def _rstep(op, b0, E, N, V, XA, I, C, A, Xv, live, nreach, ereach):
    """VJP of the entry starting at E[b0]: accumulate into A, mark the inputs reached."""
    kind = KIND[op]
    out = E[b0 + OUT]
    a = E[b0 + IA]
    b = E[b0 + IB]
    c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
    if kind == 0:  # unary
        n = N[out * NK + NSIZE]
        g = nslice(A, N, out)
        gx = nslice(A, N, a)
        x = operand(live, Xv, V, XA, N, a, E[b0 + SA], n)
        y = operand(live, Xv, V, XA, N, out, E[b0 + SY], n)
        if op == 0:  # neg
            vjp_neg(g, x, y, c, gx)
        elif op == 1:  # exp
            vjp_exp(g, x, y, c, gx)
        elif op == 2:  # log
            vjp_log(g, x, y, c, gx)
        elif op == 3:  # sin
            vjp_sin(g, x, y, c, gx)
        elif op == 4:  # cos
            vjp_cos(g, x, y, c, gx)
        elif op == 5:  # tanh
            vjp_tanh(g, x, y, c, gx)
        elif op == 6:  # sigmoid
            vjp_sigmoid(g, x, y, c, gx)
        elif op == 7:  # relu
            vjp_relu(g, x, y, c, gx)
        elif op == 8:  # sqrt
            vjp_sqrt(g, x, y, c, gx)
        elif op == 9:  # abs
            vjp_abs(g, x, y, c, gx)
        elif op == 10:  # pow_scalar
            vjp_pow_scalar(g, x, y, c, gx)
        mark(N, nreach, ereach, a)
        return
    if kind == 1:  # binary
        n = N[out * NK + NSIZE]
        sa = E[b0 + P0]
        sb = E[b0 + P1]
        la = (n - 1) * sa + 1
        lb = (n - 1) * sb + 1
        g = nslice(A, N, out)
        ga = nslice(A, N, a)
        gb = nslice(A, N, b)
        av = operand(live, Xv, V, XA, N, a, E[b0 + SA], la)
        bv = operand(live, Xv, V, XA, N, b, E[b0 + SB], lb)
        y = operand(live, Xv, V, XA, N, out, E[b0 + SY], n)
        if op == 11:  # add
            vjp_add(g, av, bv, y, sa, sb, ga, gb, a >= 0, b >= 0)
        elif op == 12:  # sub
            vjp_sub(g, av, bv, y, sa, sb, ga, gb, a >= 0, b >= 0)
        elif op == 13:  # mul
            vjp_mul(g, av, bv, y, sa, sb, ga, gb, a >= 0, b >= 0)
        elif op == 14:  # div
            vjp_div(g, av, bv, y, sa, sb, ga, gb, a >= 0, b >= 0)
        elif op == 15:  # pow
            vjp_pow(g, av, bv, y, sa, sb, ga, gb, a >= 0, b >= 0)
        mark(N, nreach, ereach, a)
        mark(N, nreach, ereach, b)
        return
    if kind == 2:  # sum
        g = nslice(A, N, out)
        gx = nslice(A, N, a)
        if op == 16:  # sum
            vjp_sum(g, c, gx)
        mark(N, nreach, ereach, a)
        return
    if kind == 3:  # index
        g = nslice(A, N, out)
        gx = nslice(A, N, a)
        idx = I[E[b0 + P0]:E[b0 + P0] + E[b0 + P1]]
        if op == 17:  # gather
            vjp_gather(g, idx, c, gx)
        elif op == 18:  # segsum
            vjp_segsum(g, idx, c, gx)
        elif op == 19:  # copy
            vjp_copy(g, idx, c, gx)
        mark(N, nreach, ereach, a)
        return
    if kind == 4:  # mm
        m = E[b0 + P0]
        k = E[b0 + P1]
        n = N[out * NK + NSIZE] // m
        g = nslice(A, N, out)
        ga = nslice(A, N, a)
        gb = nslice(A, N, b)
        av = operand(live, Xv, V, XA, N, a, E[b0 + SA], m * k)
        bv = operand(live, Xv, V, XA, N, b, E[b0 + SB], k * n)
        if op == 20:  # mm
            vjp_mm(g, av, bv, m, k, n, ga, gb, a >= 0, b >= 0)
        mark(N, nreach, ereach, a)
        mark(N, nreach, ereach, b)
        return


@_jit
def _fstep(op, b0, E, N, V, XA, I, C, Xv):
    """Forward of the entry starting at E[b0]: read inputs from Xv (nodes) or V (constants)."""
    kind = KIND[op]
    out = E[b0 + OUT]
    a = E[b0 + IA]
    b = E[b0 + IB]
    c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
    if kind == 0:  # unary
        n = N[out * NK + NSIZE]
        y = nslice(Xv, N, out)
        x = operand(True, Xv, V, XA, N, a, E[b0 + SA], n)
        if op == 0:  # neg
            fwd_neg(x, c, y)
        elif op == 1:  # exp
            fwd_exp(x, c, y)
        elif op == 2:  # log
            fwd_log(x, c, y)
        elif op == 3:  # sin
            fwd_sin(x, c, y)
        elif op == 4:  # cos
            fwd_cos(x, c, y)
        elif op == 5:  # tanh
            fwd_tanh(x, c, y)
        elif op == 6:  # sigmoid
            fwd_sigmoid(x, c, y)
        elif op == 7:  # relu
            fwd_relu(x, c, y)
        elif op == 8:  # sqrt
            fwd_sqrt(x, c, y)
        elif op == 9:  # abs
            fwd_abs(x, c, y)
        elif op == 10:  # pow_scalar
            fwd_pow_scalar(x, c, y)
        return
    if kind == 1:  # binary
        n = N[out * NK + NSIZE]
        sa = E[b0 + P0]
        sb = E[b0 + P1]
        y = nslice(Xv, N, out)
        av = operand(True, Xv, V, XA, N, a, E[b0 + SA], (n - 1) * sa + 1)
        bv = operand(True, Xv, V, XA, N, b, E[b0 + SB], (n - 1) * sb + 1)
        if op == 11:  # add
            fwd_add(av, bv, sa, sb, y)
        elif op == 12:  # sub
            fwd_sub(av, bv, sa, sb, y)
        elif op == 13:  # mul
            fwd_mul(av, bv, sa, sb, y)
        elif op == 14:  # div
            fwd_div(av, bv, sa, sb, y)
        elif op == 15:  # pow
            fwd_pow(av, bv, sa, sb, y)
        return
    if kind == 2:  # sum
        y = nslice(Xv, N, out)
        x = nslice(Xv, N, a)
        if op == 16:  # sum
            fwd_sum(x, c, y)
        return
    if kind == 3:  # index
        y = nslice(Xv, N, out)
        x = nslice(Xv, N, a)
        idx = I[E[b0 + P0]:E[b0 + P0] + E[b0 + P1]]
        if op == 17:  # gather
            fwd_gather(x, idx, c, y)
        elif op == 18:  # segsum
            fwd_segsum(x, idx, c, y)
        elif op == 19:  # copy
            fwd_copy(x, idx, c, y)
        return
    if kind == 4:  # mm
        m = E[b0 + P0]
        k = E[b0 + P1]
        n = N[out * NK + NSIZE] // m
        y = nslice(Xv, N, out)
        av = operand(True, Xv, V, XA, N, a, E[b0 + SA], m * k)
        bv = operand(True, Xv, V, XA, N, b, E[b0 + SB], k * n)
        if op == 20:  # mm
            fwd_mm(av, bv, m, k, n, y)
        return


@_jit
def reverse(E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, live, nreach, ereach, bad, start, stop):
    """Sweep entries start..stop (inclusive, downwards). Returns (status, entry):
    (0, -1) done; (1, e) a custom Function at e needs Python; (2, e) a saved value of e was
    modified in place; (3, e) e's saved values were freed by an earlier backward."""
    for e in range(start, stop - 1, -1):
        if ereach[e] == 0:
            continue
        b0 = e * K
        op = E[b0 + OP]
        fl = E[b0 + FL]
        if bad[e] != 0:
            return 2, e
        if (fl & F_FREED) != 0 and (fl & F_SAVES) != 0:
            return 3, e
        if op == PYFUNC_OP:
            return 1, e
        out = E[b0 + OUT]
        if op == CAST_OP:
            a = E[b0 + IA]
            n = N[out * NK + NSIZE]
            go, oo = N[out * NK + NDT], N[out * NK + NOFF]
            ga, oa = N[a * NK + NDT], N[a * NK + NOFF]
            for i in range(n):
                v = A4[oo + i] if go == 0 else A8[oo + i]
                if ga == 0:
                    A4[oa + i] += v
                else:
                    A8[oa + i] += v
            mark(N, nreach, ereach, a)
        elif N[out * NK + NDT] == 0:
            _rstep(op, b0, E, N, V4, XA4, I, C, A4, X4, live, nreach, ereach)
        else:
            _rstep(op, b0, E, N, V8, XA8, I, C, A8, X8, live, nreach, ereach)
    return 0, -1


@_jit
def forward(E, N, V4, V8, XA4, XA8, I, C, X4, X8, start, stop):
    """Replay entries start..stop-1 on the node values in X4/X8. Returns -1, or the index
    of an entry that cannot run compiled (a custom Function)."""
    for e in range(start, stop):
        b0 = e * K
        op = E[b0 + OP]
        if op == PYFUNC_OP:
            return e
        out = E[b0 + OUT]
        if op == CAST_OP:
            a = E[b0 + IA]
            n = N[out * NK + NSIZE]
            go, oo = N[out * NK + NDT], N[out * NK + NOFF]
            ga, oa = N[a * NK + NDT], N[a * NK + NOFF]
            for i in range(n):
                v = X4[oa + i] if ga == 0 else X8[oa + i]
                if go == 0:
                    X4[oo + i] = v
                else:
                    X8[oo + i] = v
        elif N[out * NK + NDT] == 0:
            _fstep(op, b0, E, N, V4, XA4, I, C, X4)
        else:
            _fstep(op, b0, E, N, V8, XA8, I, C, X8)
    return -1
