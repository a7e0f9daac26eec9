"""GENERATED from tapegrad/ops.py by `python -m tapegrad.ops` -- do not edit by hand.

The interpreter's dispatch: one branch per row of the op table. `reverse` sweeps a tape
backwards accumulating adjoints; `forward` replays it on new node values. Each is one
compiled function (its body emitted once per dtype store, float32 and float64), cached on
disk; no tape ever triggers a compilation.

Every kernel is called with two signatures per dtype: counts, offsets and strides int64 (`Z`,
`ONE`: literal numbers would be compiled as separate specialisations), and a literal count of
1 with unit strides (the scalar-plan sweeps and the step functions: straight-line code).
"""
import numpy as np
from numba import njit

from .._schema import (K, NK, OP, OUT, IA, IB, SA, SB, SY, P0, P1, CI, FL, NOFF, NSIZE, NDT,
                       F_FREED, F_SAVES, F_BIG, F_NPFWD, F_ALIAS, F_NOGA, F_NOGB)
from ._addr import INTERNAL
from .kernels import *  # noqa: F401,F403  (kernel pairs and tape accessors)
from .kernels import noff, operand, mark, raw

# the entry points Python calls (cached on disk); the batched sweeps, which only the batched
# driver's C callbacks call (``_driver.py``), are internal (``_addr.INTERNAL``)
_jit = njit(cache=True, nogil=True, error_model="numpy", no_cfunc_wrapper=True)
_jit_internal = njit(error_model="numpy", **INTERNAL)
_jit_inline = njit(nogil=True, error_model="numpy", inline="always")
Z = np.int64(0)       # an offset of 0 and a stride of 1, typed int64 (not Literal[int]: see
ONE = np.int64(1)     # the docstring)

KERNELS_SHA = 'c78bd50cdd13a576'  # sha256 of kernels.py, _addr.py, _schema.py: regenerate when they change
# kind code of each opcode (see ops.KIND_CODES)
KIND = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3, 4, 5, 6,)
OPNAMES = ('neg', 'exp', 'log', 'sin', 'cos', 'tanh', 'sigmoid', 'relu', 'sqrt', 'abs', 'pow_scalar', 'tan', 'asin', 'acos', 'atan', 'sinh', 'cosh', 'erf', 'log1p', 'expm1', 'scale', 'step', 'clamp_min', 'clamp_max', 'leaky_relu', 'elu', 'gelu', 'silu', 'softplus', 'log_sigmoid', 'smooth_l1', 'hardsigmoid', 'lgamma', 'polygamma', 'softmax', 'log_softmax', 'add_scalar', 'rsub_scalar', 'add', 'sub', 'mul', 'div', 'pow', 'maximum', 'minimum', 'atan2', 'hypot', 'remainder', 'sum', 'gather', 'segsum', 'copy', 'slice', 'embed', 'transpose', 'mm', 'cast', 'pyfunc',)
CAST_OP = 56
PYFUNC_OP = 57


@_jit_inline
def step_fwd_binary(op, A_, B_, Y, yo):
    if op == 38:  # add
        fwd_add(1, A_, Z, 1, B_, Z, 1, Y, yo)
    elif op == 39:  # sub
        fwd_sub(1, A_, Z, 1, B_, Z, 1, Y, yo)
    elif op == 40:  # mul
        fwd_mul(1, A_, Z, 1, B_, Z, 1, Y, yo)
    elif op == 41:  # div
        fwd_div(1, A_, Z, 1, B_, Z, 1, Y, yo)
    elif op == 42:  # pow
        fwd_pow(1, A_, Z, 1, B_, Z, 1, Y, yo)
    elif op == 43:  # maximum
        fwd_maximum(1, A_, Z, 1, B_, Z, 1, Y, yo)
    elif op == 44:  # minimum
        fwd_minimum(1, A_, Z, 1, B_, Z, 1, Y, yo)
    elif op == 45:  # atan2
        fwd_atan2(1, A_, Z, 1, B_, Z, 1, Y, yo)
    elif op == 46:  # hypot
        fwd_hypot(1, A_, Z, 1, B_, Z, 1, Y, yo)
    elif op == 47:  # remainder
        fwd_remainder(1, A_, Z, 1, B_, Z, 1, Y, yo)


@_jit_inline
def step_fwd_index(op, m, X, xo, I, io, c, Y, yo):
    if op == 49:  # gather
        fwd_gather(1, m, X, xo, I, io, c, Y, yo)
    elif op == 50:  # segsum
        fwd_segsum(1, m, X, xo, I, io, c, Y, yo)
    elif op == 51:  # copy
        fwd_copy(1, m, X, xo, I, io, c, Y, yo)
    elif op == 52:  # slice
        fwd_slice(1, m, X, xo, I, io, c, Y, yo)
    elif op == 53:  # embed
        fwd_embed(1, m, X, xo, I, io, c, Y, yo)
    elif op == 54:  # transpose
        fwd_transpose(1, m, X, xo, I, io, c, Y, yo)


@_jit_inline
def step_rev_binary(op, G, go, A_, B_, Y_, GA, gao, GB, gbo, na, nb):
    if op == 38:  # add
        vjp_add(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)
    elif op == 39:  # sub
        vjp_sub(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)
    elif op == 40:  # mul
        vjp_mul(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)
    elif op == 41:  # div
        vjp_div(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)
    elif op == 42:  # pow
        vjp_pow(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)
    elif op == 43:  # maximum
        vjp_maximum(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)
    elif op == 44:  # minimum
        vjp_minimum(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)
    elif op == 45:  # atan2
        vjp_atan2(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)
    elif op == 46:  # hypot
        vjp_hypot(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)
    elif op == 47:  # remainder
        vjp_remainder(1, G, go, A_, Z, 1, B_, Z, 1, Y_, Z, GA, gao, GB, gbo, na, nb)


@_jit_inline
def step_rev_index(op, m, G, go, I, io, c, GX, gxo):
    if op == 49:  # gather
        vjp_gather(1, m, G, go, I, io, c, GX, gxo)
    elif op == 50:  # segsum
        vjp_segsum(1, m, G, go, I, io, c, GX, gxo)
    elif op == 51:  # copy
        vjp_copy(1, m, G, go, I, io, c, GX, gxo)
    elif op == 52:  # slice
        vjp_slice(1, m, G, go, I, io, c, GX, gxo)
    elif op == 53:  # embed
        vjp_embed(1, m, G, go, I, io, c, GX, gxo)
    elif op == 54:  # transpose
        vjp_transpose(1, m, G, go, I, io, c, GX, gxo)


@_jit
def reverse(E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, live, nreach, ereach, bad, start, stop):
    """Sweep entries start..stop (inclusive, downwards), accumulating adjoints into A4/A8.
    Saved values come from V/XA, or from the node values X4/X8 when ``live`` (a replay).
    Returns (status, entry): (0, -1) done; (1, e) a custom Function at e needs Python;
    (2, e) a saved value of e was modified in place; (3, e) e's saved values were freed;
    (4, e) e touches a node of >= tape.BIG elements (F_BIG): numpy runs it (SIMD, BLAS)."""
    E, N, V4, V8, XA4, XA8, I, C = raw(E), raw(N), raw(V4), raw(V8), raw(XA4), raw(XA8), raw(I), raw(C)
    A4, A8, X4, X8, nreach, ereach, bad = raw(A4), raw(A8), raw(X4), raw(X8), raw(nreach), raw(ereach), raw(bad)
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
        if (fl & F_BIG) != 0:
            return 4, e
        if (fl & F_NOGA) != 0 and (fl & F_NOGB) != 0:  # no wanted gradient upstream
            continue
        out = E[b0 + OUT]
        a = E[b0 + IA]
        b = E[b0 + IB]
        na = a >= 0 and (fl & F_NOGA) == 0
        nb = b >= 0 and (fl & F_NOGB) == 0
        c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
        kind = KIND[op]
        go = N[out * NK + NOFF]
        n = N[out * NK + NSIZE]
        if op == CAST_OP:
            da, oa = N[a * NK + NDT], N[a * NK + NOFF]
            for i in range(n):
                v = A4[go + i] if N[out * NK + NDT] == 0 else A8[go + i]
                if da == 0:
                    A4[oa + i] += v
                else:
                    A8[oa + i] += v
            mark(N, nreach, ereach, a)
        elif N[out * NK + NDT] == 0:
            if kind == 0:  # unary
                X_ = operand(live, X4, V4, XA4, N, a, E[b0 + SA], n)
                Y_ = operand(live, X4, V4, XA4, N, out, E[b0 + SY], n)
                if op == 0:  # neg
                    vjp_neg(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 1:  # exp
                    vjp_exp(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 2:  # log
                    vjp_log(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 3:  # sin
                    vjp_sin(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 4:  # cos
                    vjp_cos(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 5:  # tanh
                    vjp_tanh(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 6:  # sigmoid
                    vjp_sigmoid(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 7:  # relu
                    vjp_relu(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 8:  # sqrt
                    vjp_sqrt(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 9:  # abs
                    vjp_abs(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 10:  # pow_scalar
                    vjp_pow_scalar(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 11:  # tan
                    vjp_tan(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 12:  # asin
                    vjp_asin(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 13:  # acos
                    vjp_acos(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 14:  # atan
                    vjp_atan(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 15:  # sinh
                    vjp_sinh(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 16:  # cosh
                    vjp_cosh(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 17:  # erf
                    vjp_erf(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 18:  # log1p
                    vjp_log1p(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 19:  # expm1
                    vjp_expm1(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 20:  # scale
                    vjp_scale(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 21:  # step
                    vjp_step(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 22:  # clamp_min
                    vjp_clamp_min(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 23:  # clamp_max
                    vjp_clamp_max(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 24:  # leaky_relu
                    vjp_leaky_relu(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 25:  # elu
                    vjp_elu(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 26:  # gelu
                    vjp_gelu(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 27:  # silu
                    vjp_silu(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 28:  # softplus
                    vjp_softplus(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 29:  # log_sigmoid
                    vjp_log_sigmoid(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 30:  # smooth_l1
                    vjp_smooth_l1(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 31:  # hardsigmoid
                    vjp_hardsigmoid(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 32:  # lgamma
                    vjp_lgamma(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 33:  # polygamma
                    vjp_polygamma(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 34:  # softmax
                    vjp_softmax(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 35:  # log_softmax
                    vjp_log_softmax(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 36:  # add_scalar
                    vjp_add_scalar(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                elif op == 37:  # rsub_scalar
                    vjp_rsub_scalar(n, A4, go, X_, Z, Y_, Z, c, A4, noff(N, a))
                mark(N, nreach, ereach, a)
            elif kind == 1:  # binary
                sa = E[b0 + P0]
                sb = E[b0 + P1]
                A_ = operand(live, X4, V4, XA4, N, a, E[b0 + SA], (n - 1) * sa + 1)
                B_ = operand(live, X4, V4, XA4, N, b, E[b0 + SB], (n - 1) * sb + 1)
                Y_ = operand(live, X4, V4, XA4, N, out, E[b0 + SY], n)
                if n == 1:
                    step_rev_binary(op, A4, go, A_, B_, Y_, A4, noff(N, a), A4, noff(N, b), na, nb)
                elif op == 38:  # add
                    vjp_add(n, A4, go, A_, Z, sa, B_, Z, sb, Y_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                elif op == 39:  # sub
                    vjp_sub(n, A4, go, A_, Z, sa, B_, Z, sb, Y_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                elif op == 40:  # mul
                    vjp_mul(n, A4, go, A_, Z, sa, B_, Z, sb, Y_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                elif op == 41:  # div
                    vjp_div(n, A4, go, A_, Z, sa, B_, Z, sb, Y_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                elif op == 42:  # pow
                    vjp_pow(n, A4, go, A_, Z, sa, B_, Z, sb, Y_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                elif op == 43:  # maximum
                    vjp_maximum(n, A4, go, A_, Z, sa, B_, Z, sb, Y_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                elif op == 44:  # minimum
                    vjp_minimum(n, A4, go, A_, Z, sa, B_, Z, sb, Y_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                elif op == 45:  # atan2
                    vjp_atan2(n, A4, go, A_, Z, sa, B_, Z, sb, Y_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                elif op == 46:  # hypot
                    vjp_hypot(n, A4, go, A_, Z, sa, B_, Z, sb, Y_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                elif op == 47:  # remainder
                    vjp_remainder(n, A4, go, A_, Z, sa, B_, Z, sb, Y_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                mark(N, nreach, ereach, a)
                mark(N, nreach, ereach, b)
            elif kind == 2:  # sum
                if op == 48:  # sum
                    vjp_sum(N[a * NK + NSIZE], A4, go, c, A4, noff(N, a))
                mark(N, nreach, ereach, a)
            elif kind == 3:  # index
                if E[b0 + P1] == 1:
                    step_rev_index(op, N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a))
                elif op == 49:  # gather
                    vjp_gather(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a))
                elif op == 50:  # segsum
                    vjp_segsum(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a))
                elif op == 51:  # copy
                    vjp_copy(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a))
                elif op == 52:  # slice
                    vjp_slice(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a))
                elif op == 53:  # embed
                    vjp_embed(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a))
                elif op == 54:  # transpose
                    vjp_transpose(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a))
                mark(N, nreach, ereach, a)
            elif kind == 4:  # mm
                m = E[b0 + P0]
                k = E[b0 + P1]
                A_ = operand(live, X4, V4, XA4, N, a, E[b0 + SA], m * k)
                B_ = operand(live, X4, V4, XA4, N, b, E[b0 + SB], k * (n // m))
                if op == 55:  # mm
                    vjp_mm(m, k, n // m, A4, go, A_, Z, B_, Z, A4, noff(N, a), A4, noff(N, b), na, nb)
                mark(N, nreach, ereach, a)
                mark(N, nreach, ereach, b)
        else:
            if kind == 0:  # unary
                X_ = operand(live, X8, V8, XA8, N, a, E[b0 + SA], n)
                Y_ = operand(live, X8, V8, XA8, N, out, E[b0 + SY], n)
                if op == 0:  # neg
                    vjp_neg(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 1:  # exp
                    vjp_exp(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 2:  # log
                    vjp_log(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 3:  # sin
                    vjp_sin(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 4:  # cos
                    vjp_cos(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 5:  # tanh
                    vjp_tanh(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 6:  # sigmoid
                    vjp_sigmoid(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 7:  # relu
                    vjp_relu(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 8:  # sqrt
                    vjp_sqrt(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 9:  # abs
                    vjp_abs(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 10:  # pow_scalar
                    vjp_pow_scalar(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 11:  # tan
                    vjp_tan(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 12:  # asin
                    vjp_asin(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 13:  # acos
                    vjp_acos(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 14:  # atan
                    vjp_atan(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 15:  # sinh
                    vjp_sinh(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 16:  # cosh
                    vjp_cosh(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 17:  # erf
                    vjp_erf(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 18:  # log1p
                    vjp_log1p(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 19:  # expm1
                    vjp_expm1(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 20:  # scale
                    vjp_scale(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 21:  # step
                    vjp_step(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 22:  # clamp_min
                    vjp_clamp_min(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 23:  # clamp_max
                    vjp_clamp_max(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 24:  # leaky_relu
                    vjp_leaky_relu(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 25:  # elu
                    vjp_elu(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 26:  # gelu
                    vjp_gelu(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 27:  # silu
                    vjp_silu(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 28:  # softplus
                    vjp_softplus(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 29:  # log_sigmoid
                    vjp_log_sigmoid(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 30:  # smooth_l1
                    vjp_smooth_l1(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 31:  # hardsigmoid
                    vjp_hardsigmoid(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 32:  # lgamma
                    vjp_lgamma(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 33:  # polygamma
                    vjp_polygamma(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 34:  # softmax
                    vjp_softmax(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 35:  # log_softmax
                    vjp_log_softmax(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 36:  # add_scalar
                    vjp_add_scalar(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                elif op == 37:  # rsub_scalar
                    vjp_rsub_scalar(n, A8, go, X_, Z, Y_, Z, c, A8, noff(N, a))
                mark(N, nreach, ereach, a)
            elif kind == 1:  # binary
                sa = E[b0 + P0]
                sb = E[b0 + P1]
                A_ = operand(live, X8, V8, XA8, N, a, E[b0 + SA], (n - 1) * sa + 1)
                B_ = operand(live, X8, V8, XA8, N, b, E[b0 + SB], (n - 1) * sb + 1)
                Y_ = operand(live, X8, V8, XA8, N, out, E[b0 + SY], n)
                if n == 1:
                    step_rev_binary(op, A8, go, A_, B_, Y_, A8, noff(N, a), A8, noff(N, b), na, nb)
                elif op == 38:  # add
                    vjp_add(n, A8, go, A_, Z, sa, B_, Z, sb, Y_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                elif op == 39:  # sub
                    vjp_sub(n, A8, go, A_, Z, sa, B_, Z, sb, Y_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                elif op == 40:  # mul
                    vjp_mul(n, A8, go, A_, Z, sa, B_, Z, sb, Y_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                elif op == 41:  # div
                    vjp_div(n, A8, go, A_, Z, sa, B_, Z, sb, Y_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                elif op == 42:  # pow
                    vjp_pow(n, A8, go, A_, Z, sa, B_, Z, sb, Y_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                elif op == 43:  # maximum
                    vjp_maximum(n, A8, go, A_, Z, sa, B_, Z, sb, Y_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                elif op == 44:  # minimum
                    vjp_minimum(n, A8, go, A_, Z, sa, B_, Z, sb, Y_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                elif op == 45:  # atan2
                    vjp_atan2(n, A8, go, A_, Z, sa, B_, Z, sb, Y_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                elif op == 46:  # hypot
                    vjp_hypot(n, A8, go, A_, Z, sa, B_, Z, sb, Y_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                elif op == 47:  # remainder
                    vjp_remainder(n, A8, go, A_, Z, sa, B_, Z, sb, Y_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                mark(N, nreach, ereach, a)
                mark(N, nreach, ereach, b)
            elif kind == 2:  # sum
                if op == 48:  # sum
                    vjp_sum(N[a * NK + NSIZE], A8, go, c, A8, noff(N, a))
                mark(N, nreach, ereach, a)
            elif kind == 3:  # index
                if E[b0 + P1] == 1:
                    step_rev_index(op, N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a))
                elif op == 49:  # gather
                    vjp_gather(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a))
                elif op == 50:  # segsum
                    vjp_segsum(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a))
                elif op == 51:  # copy
                    vjp_copy(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a))
                elif op == 52:  # slice
                    vjp_slice(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a))
                elif op == 53:  # embed
                    vjp_embed(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a))
                elif op == 54:  # transpose
                    vjp_transpose(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a))
                mark(N, nreach, ereach, a)
            elif kind == 4:  # mm
                m = E[b0 + P0]
                k = E[b0 + P1]
                A_ = operand(live, X8, V8, XA8, N, a, E[b0 + SA], m * k)
                B_ = operand(live, X8, V8, XA8, N, b, E[b0 + SB], k * (n // m))
                if op == 55:  # mm
                    vjp_mm(m, k, n // m, A8, go, A_, Z, B_, Z, A8, noff(N, a), A8, noff(N, b), na, nb)
                mark(N, nreach, ereach, a)
                mark(N, nreach, ereach, b)
    return 0, -1


@_jit
def forward(E, N, V4, V8, XA4, XA8, I, C, X4, X8, start, stop):
    """Replay entries start..stop-1 on the node values in X4/X8 (inputs: live nodes, or the
    recorded constants). Returns -1, or the index of an entry that Python must run (a custom
    Function, or an F_BIG entry for numpy)."""
    E, N, V4, V8, XA4, XA8, I, C = raw(E), raw(N), raw(V4), raw(V8), raw(XA4), raw(XA8), raw(I), raw(C)
    X4, X8 = raw(X4), raw(X8)
    for e in range(start, stop):
        b0 = e * K
        op = E[b0 + OP]
        if op == PYFUNC_OP or (E[b0 + FL] & (F_BIG | F_NPFWD)) != 0:
            return e
        out = E[b0 + OUT]
        a = E[b0 + IA]
        b = E[b0 + IB]
        c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
        kind = KIND[op]
        yo = N[out * NK + NOFF]
        n = N[out * NK + NSIZE]
        if op == CAST_OP:
            da, oa = N[a * NK + NDT], N[a * NK + NOFF]
            for i in range(n):
                v = X4[oa + i] if da == 0 else X8[oa + i]
                if N[out * NK + NDT] == 0:
                    X4[yo + i] = v
                else:
                    X8[yo + i] = v
        elif N[out * NK + NDT] == 0:
            if kind == 0:  # unary
                X_ = operand(True, X4, V4, XA4, N, a, E[b0 + SA], n)
                if op == 0:  # neg
                    fwd_neg(n, X_, Z, c, X4, yo)
                elif op == 1:  # exp
                    fwd_exp(n, X_, Z, c, X4, yo)
                elif op == 2:  # log
                    fwd_log(n, X_, Z, c, X4, yo)
                elif op == 3:  # sin
                    fwd_sin(n, X_, Z, c, X4, yo)
                elif op == 4:  # cos
                    fwd_cos(n, X_, Z, c, X4, yo)
                elif op == 5:  # tanh
                    fwd_tanh(n, X_, Z, c, X4, yo)
                elif op == 6:  # sigmoid
                    fwd_sigmoid(n, X_, Z, c, X4, yo)
                elif op == 7:  # relu
                    fwd_relu(n, X_, Z, c, X4, yo)
                elif op == 8:  # sqrt
                    fwd_sqrt(n, X_, Z, c, X4, yo)
                elif op == 9:  # abs
                    fwd_abs(n, X_, Z, c, X4, yo)
                elif op == 10:  # pow_scalar
                    fwd_pow_scalar(n, X_, Z, c, X4, yo)
                elif op == 11:  # tan
                    fwd_tan(n, X_, Z, c, X4, yo)
                elif op == 12:  # asin
                    fwd_asin(n, X_, Z, c, X4, yo)
                elif op == 13:  # acos
                    fwd_acos(n, X_, Z, c, X4, yo)
                elif op == 14:  # atan
                    fwd_atan(n, X_, Z, c, X4, yo)
                elif op == 15:  # sinh
                    fwd_sinh(n, X_, Z, c, X4, yo)
                elif op == 16:  # cosh
                    fwd_cosh(n, X_, Z, c, X4, yo)
                elif op == 17:  # erf
                    fwd_erf(n, X_, Z, c, X4, yo)
                elif op == 18:  # log1p
                    fwd_log1p(n, X_, Z, c, X4, yo)
                elif op == 19:  # expm1
                    fwd_expm1(n, X_, Z, c, X4, yo)
                elif op == 20:  # scale
                    fwd_scale(n, X_, Z, c, X4, yo)
                elif op == 21:  # step
                    fwd_step(n, X_, Z, c, X4, yo)
                elif op == 22:  # clamp_min
                    fwd_clamp_min(n, X_, Z, c, X4, yo)
                elif op == 23:  # clamp_max
                    fwd_clamp_max(n, X_, Z, c, X4, yo)
                elif op == 24:  # leaky_relu
                    fwd_leaky_relu(n, X_, Z, c, X4, yo)
                elif op == 25:  # elu
                    fwd_elu(n, X_, Z, c, X4, yo)
                elif op == 26:  # gelu
                    fwd_gelu(n, X_, Z, c, X4, yo)
                elif op == 27:  # silu
                    fwd_silu(n, X_, Z, c, X4, yo)
                elif op == 28:  # softplus
                    fwd_softplus(n, X_, Z, c, X4, yo)
                elif op == 29:  # log_sigmoid
                    fwd_log_sigmoid(n, X_, Z, c, X4, yo)
                elif op == 30:  # smooth_l1
                    fwd_smooth_l1(n, X_, Z, c, X4, yo)
                elif op == 31:  # hardsigmoid
                    fwd_hardsigmoid(n, X_, Z, c, X4, yo)
                elif op == 32:  # lgamma
                    fwd_lgamma(n, X_, Z, c, X4, yo)
                elif op == 33:  # polygamma
                    fwd_polygamma(n, X_, Z, c, X4, yo)
                elif op == 34:  # softmax
                    fwd_softmax(n, X_, Z, c, X4, yo)
                elif op == 35:  # log_softmax
                    fwd_log_softmax(n, X_, Z, c, X4, yo)
                elif op == 36:  # add_scalar
                    fwd_add_scalar(n, X_, Z, c, X4, yo)
                elif op == 37:  # rsub_scalar
                    fwd_rsub_scalar(n, X_, Z, c, X4, yo)
            elif kind == 1:  # binary
                sa = E[b0 + P0]
                sb = E[b0 + P1]
                A_ = operand(True, X4, V4, XA4, N, a, E[b0 + SA], (n - 1) * sa + 1)
                B_ = operand(True, X4, V4, XA4, N, b, E[b0 + SB], (n - 1) * sb + 1)
                if n == 1:
                    step_fwd_binary(op, A_, B_, X4, yo)
                elif op == 38:  # add
                    fwd_add(n, A_, Z, sa, B_, Z, sb, X4, yo)
                elif op == 39:  # sub
                    fwd_sub(n, A_, Z, sa, B_, Z, sb, X4, yo)
                elif op == 40:  # mul
                    fwd_mul(n, A_, Z, sa, B_, Z, sb, X4, yo)
                elif op == 41:  # div
                    fwd_div(n, A_, Z, sa, B_, Z, sb, X4, yo)
                elif op == 42:  # pow
                    fwd_pow(n, A_, Z, sa, B_, Z, sb, X4, yo)
                elif op == 43:  # maximum
                    fwd_maximum(n, A_, Z, sa, B_, Z, sb, X4, yo)
                elif op == 44:  # minimum
                    fwd_minimum(n, A_, Z, sa, B_, Z, sb, X4, yo)
                elif op == 45:  # atan2
                    fwd_atan2(n, A_, Z, sa, B_, Z, sb, X4, yo)
                elif op == 46:  # hypot
                    fwd_hypot(n, A_, Z, sa, B_, Z, sb, X4, yo)
                elif op == 47:  # remainder
                    fwd_remainder(n, A_, Z, sa, B_, Z, sb, X4, yo)
            elif kind == 2:  # sum
                if op == 48:  # sum
                    fwd_sum(N[a * NK + NSIZE], X4, noff(N, a), c, X4, yo)
            elif kind == 3:  # index
                if E[b0 + P1] == 1:
                    step_fwd_index(op, n, X4, noff(N, a), I, E[b0 + P0], c, X4, yo)
                elif op == 49:  # gather
                    fwd_gather(E[b0 + P1], n, X4, noff(N, a), I, E[b0 + P0], c, X4, yo)
                elif op == 50:  # segsum
                    fwd_segsum(E[b0 + P1], n, X4, noff(N, a), I, E[b0 + P0], c, X4, yo)
                elif op == 51:  # copy
                    fwd_copy(E[b0 + P1], n, X4, noff(N, a), I, E[b0 + P0], c, X4, yo)
                elif op == 52:  # slice
                    fwd_slice(E[b0 + P1], n, X4, noff(N, a), I, E[b0 + P0], c, X4, yo)
                elif op == 53:  # embed
                    fwd_embed(E[b0 + P1], n, X4, noff(N, a), I, E[b0 + P0], c, X4, yo)
                elif op == 54:  # transpose
                    fwd_transpose(E[b0 + P1], n, X4, noff(N, a), I, E[b0 + P0], c, X4, yo)
            elif kind == 4:  # mm
                A_ = operand(True, X4, V4, XA4, N, a, E[b0 + SA], E[b0 + P0] * E[b0 + P1])
                B_ = operand(True, X4, V4, XA4, N, b, E[b0 + SB], E[b0 + P1] * (n // E[b0 + P0]))
                if op == 55:  # mm
                    fwd_mm(E[b0 + P0], E[b0 + P1], n // E[b0 + P0], A_, Z, B_, Z, X4, yo)
        else:
            if kind == 0:  # unary
                X_ = operand(True, X8, V8, XA8, N, a, E[b0 + SA], n)
                if op == 0:  # neg
                    fwd_neg(n, X_, Z, c, X8, yo)
                elif op == 1:  # exp
                    fwd_exp(n, X_, Z, c, X8, yo)
                elif op == 2:  # log
                    fwd_log(n, X_, Z, c, X8, yo)
                elif op == 3:  # sin
                    fwd_sin(n, X_, Z, c, X8, yo)
                elif op == 4:  # cos
                    fwd_cos(n, X_, Z, c, X8, yo)
                elif op == 5:  # tanh
                    fwd_tanh(n, X_, Z, c, X8, yo)
                elif op == 6:  # sigmoid
                    fwd_sigmoid(n, X_, Z, c, X8, yo)
                elif op == 7:  # relu
                    fwd_relu(n, X_, Z, c, X8, yo)
                elif op == 8:  # sqrt
                    fwd_sqrt(n, X_, Z, c, X8, yo)
                elif op == 9:  # abs
                    fwd_abs(n, X_, Z, c, X8, yo)
                elif op == 10:  # pow_scalar
                    fwd_pow_scalar(n, X_, Z, c, X8, yo)
                elif op == 11:  # tan
                    fwd_tan(n, X_, Z, c, X8, yo)
                elif op == 12:  # asin
                    fwd_asin(n, X_, Z, c, X8, yo)
                elif op == 13:  # acos
                    fwd_acos(n, X_, Z, c, X8, yo)
                elif op == 14:  # atan
                    fwd_atan(n, X_, Z, c, X8, yo)
                elif op == 15:  # sinh
                    fwd_sinh(n, X_, Z, c, X8, yo)
                elif op == 16:  # cosh
                    fwd_cosh(n, X_, Z, c, X8, yo)
                elif op == 17:  # erf
                    fwd_erf(n, X_, Z, c, X8, yo)
                elif op == 18:  # log1p
                    fwd_log1p(n, X_, Z, c, X8, yo)
                elif op == 19:  # expm1
                    fwd_expm1(n, X_, Z, c, X8, yo)
                elif op == 20:  # scale
                    fwd_scale(n, X_, Z, c, X8, yo)
                elif op == 21:  # step
                    fwd_step(n, X_, Z, c, X8, yo)
                elif op == 22:  # clamp_min
                    fwd_clamp_min(n, X_, Z, c, X8, yo)
                elif op == 23:  # clamp_max
                    fwd_clamp_max(n, X_, Z, c, X8, yo)
                elif op == 24:  # leaky_relu
                    fwd_leaky_relu(n, X_, Z, c, X8, yo)
                elif op == 25:  # elu
                    fwd_elu(n, X_, Z, c, X8, yo)
                elif op == 26:  # gelu
                    fwd_gelu(n, X_, Z, c, X8, yo)
                elif op == 27:  # silu
                    fwd_silu(n, X_, Z, c, X8, yo)
                elif op == 28:  # softplus
                    fwd_softplus(n, X_, Z, c, X8, yo)
                elif op == 29:  # log_sigmoid
                    fwd_log_sigmoid(n, X_, Z, c, X8, yo)
                elif op == 30:  # smooth_l1
                    fwd_smooth_l1(n, X_, Z, c, X8, yo)
                elif op == 31:  # hardsigmoid
                    fwd_hardsigmoid(n, X_, Z, c, X8, yo)
                elif op == 32:  # lgamma
                    fwd_lgamma(n, X_, Z, c, X8, yo)
                elif op == 33:  # polygamma
                    fwd_polygamma(n, X_, Z, c, X8, yo)
                elif op == 34:  # softmax
                    fwd_softmax(n, X_, Z, c, X8, yo)
                elif op == 35:  # log_softmax
                    fwd_log_softmax(n, X_, Z, c, X8, yo)
                elif op == 36:  # add_scalar
                    fwd_add_scalar(n, X_, Z, c, X8, yo)
                elif op == 37:  # rsub_scalar
                    fwd_rsub_scalar(n, X_, Z, c, X8, yo)
            elif kind == 1:  # binary
                sa = E[b0 + P0]
                sb = E[b0 + P1]
                A_ = operand(True, X8, V8, XA8, N, a, E[b0 + SA], (n - 1) * sa + 1)
                B_ = operand(True, X8, V8, XA8, N, b, E[b0 + SB], (n - 1) * sb + 1)
                if n == 1:
                    step_fwd_binary(op, A_, B_, X8, yo)
                elif op == 38:  # add
                    fwd_add(n, A_, Z, sa, B_, Z, sb, X8, yo)
                elif op == 39:  # sub
                    fwd_sub(n, A_, Z, sa, B_, Z, sb, X8, yo)
                elif op == 40:  # mul
                    fwd_mul(n, A_, Z, sa, B_, Z, sb, X8, yo)
                elif op == 41:  # div
                    fwd_div(n, A_, Z, sa, B_, Z, sb, X8, yo)
                elif op == 42:  # pow
                    fwd_pow(n, A_, Z, sa, B_, Z, sb, X8, yo)
                elif op == 43:  # maximum
                    fwd_maximum(n, A_, Z, sa, B_, Z, sb, X8, yo)
                elif op == 44:  # minimum
                    fwd_minimum(n, A_, Z, sa, B_, Z, sb, X8, yo)
                elif op == 45:  # atan2
                    fwd_atan2(n, A_, Z, sa, B_, Z, sb, X8, yo)
                elif op == 46:  # hypot
                    fwd_hypot(n, A_, Z, sa, B_, Z, sb, X8, yo)
                elif op == 47:  # remainder
                    fwd_remainder(n, A_, Z, sa, B_, Z, sb, X8, yo)
            elif kind == 2:  # sum
                if op == 48:  # sum
                    fwd_sum(N[a * NK + NSIZE], X8, noff(N, a), c, X8, yo)
            elif kind == 3:  # index
                if E[b0 + P1] == 1:
                    step_fwd_index(op, n, X8, noff(N, a), I, E[b0 + P0], c, X8, yo)
                elif op == 49:  # gather
                    fwd_gather(E[b0 + P1], n, X8, noff(N, a), I, E[b0 + P0], c, X8, yo)
                elif op == 50:  # segsum
                    fwd_segsum(E[b0 + P1], n, X8, noff(N, a), I, E[b0 + P0], c, X8, yo)
                elif op == 51:  # copy
                    fwd_copy(E[b0 + P1], n, X8, noff(N, a), I, E[b0 + P0], c, X8, yo)
                elif op == 52:  # slice
                    fwd_slice(E[b0 + P1], n, X8, noff(N, a), I, E[b0 + P0], c, X8, yo)
                elif op == 53:  # embed
                    fwd_embed(E[b0 + P1], n, X8, noff(N, a), I, E[b0 + P0], c, X8, yo)
                elif op == 54:  # transpose
                    fwd_transpose(E[b0 + P1], n, X8, noff(N, a), I, E[b0 + P0], c, X8, yo)
            elif kind == 4:  # mm
                A_ = operand(True, X8, V8, XA8, N, a, E[b0 + SA], E[b0 + P0] * E[b0 + P1])
                B_ = operand(True, X8, V8, XA8, N, b, E[b0 + SB], E[b0 + P1] * (n // E[b0 + P0]))
                if op == 55:  # mm
                    fwd_mm(E[b0 + P0], E[b0 + P1], n // E[b0 + P0], A_, Z, B_, Z, X8, yo)
    return -1
PK = 9
P_OP, P_KIND, P_Y, P_A, P_B, P_N, P_0, P_1, P_M = range(PK)


@_jit
def pforward(D, Dc, I, X, start, stop):
    """Replay entries start..stop-1 of a scalar plan (see ops.PK) on the value store X."""
    D, Dc, I, X = raw(D), raw(Dc), raw(I), raw(X)
    for e in range(start, stop):
        b0 = e * PK
        op = D[b0 + P_OP]
        kind = D[b0 + P_KIND]
        yo = D[b0 + P_Y]
        ao = D[b0 + P_A]
        bo = D[b0 + P_B]
        c = Dc[e]
        if kind == 1:  # binary
            if op == 38:  # add
                fwd_add(1, X, ao, 1, X, bo, 1, X, yo)
            elif op == 39:  # sub
                fwd_sub(1, X, ao, 1, X, bo, 1, X, yo)
            elif op == 40:  # mul
                fwd_mul(1, X, ao, 1, X, bo, 1, X, yo)
            elif op == 41:  # div
                fwd_div(1, X, ao, 1, X, bo, 1, X, yo)
            elif op == 42:  # pow
                fwd_pow(1, X, ao, 1, X, bo, 1, X, yo)
            elif op == 43:  # maximum
                fwd_maximum(1, X, ao, 1, X, bo, 1, X, yo)
            elif op == 44:  # minimum
                fwd_minimum(1, X, ao, 1, X, bo, 1, X, yo)
            elif op == 45:  # atan2
                fwd_atan2(1, X, ao, 1, X, bo, 1, X, yo)
            elif op == 46:  # hypot
                fwd_hypot(1, X, ao, 1, X, bo, 1, X, yo)
            elif op == 47:  # remainder
                fwd_remainder(1, X, ao, 1, X, bo, 1, X, yo)
        elif kind == 0:  # unary
            if op == 0:  # neg
                fwd_neg(1, X, ao, c, X, yo)
            elif op == 1:  # exp
                fwd_exp(1, X, ao, c, X, yo)
            elif op == 2:  # log
                fwd_log(1, X, ao, c, X, yo)
            elif op == 3:  # sin
                fwd_sin(1, X, ao, c, X, yo)
            elif op == 4:  # cos
                fwd_cos(1, X, ao, c, X, yo)
            elif op == 5:  # tanh
                fwd_tanh(1, X, ao, c, X, yo)
            elif op == 6:  # sigmoid
                fwd_sigmoid(1, X, ao, c, X, yo)
            elif op == 7:  # relu
                fwd_relu(1, X, ao, c, X, yo)
            elif op == 8:  # sqrt
                fwd_sqrt(1, X, ao, c, X, yo)
            elif op == 9:  # abs
                fwd_abs(1, X, ao, c, X, yo)
            elif op == 10:  # pow_scalar
                fwd_pow_scalar(1, X, ao, c, X, yo)
            elif op == 11:  # tan
                fwd_tan(1, X, ao, c, X, yo)
            elif op == 12:  # asin
                fwd_asin(1, X, ao, c, X, yo)
            elif op == 13:  # acos
                fwd_acos(1, X, ao, c, X, yo)
            elif op == 14:  # atan
                fwd_atan(1, X, ao, c, X, yo)
            elif op == 15:  # sinh
                fwd_sinh(1, X, ao, c, X, yo)
            elif op == 16:  # cosh
                fwd_cosh(1, X, ao, c, X, yo)
            elif op == 17:  # erf
                fwd_erf(1, X, ao, c, X, yo)
            elif op == 18:  # log1p
                fwd_log1p(1, X, ao, c, X, yo)
            elif op == 19:  # expm1
                fwd_expm1(1, X, ao, c, X, yo)
            elif op == 20:  # scale
                fwd_scale(1, X, ao, c, X, yo)
            elif op == 21:  # step
                fwd_step(1, X, ao, c, X, yo)
            elif op == 22:  # clamp_min
                fwd_clamp_min(1, X, ao, c, X, yo)
            elif op == 23:  # clamp_max
                fwd_clamp_max(1, X, ao, c, X, yo)
            elif op == 24:  # leaky_relu
                fwd_leaky_relu(1, X, ao, c, X, yo)
            elif op == 25:  # elu
                fwd_elu(1, X, ao, c, X, yo)
            elif op == 26:  # gelu
                fwd_gelu(1, X, ao, c, X, yo)
            elif op == 27:  # silu
                fwd_silu(1, X, ao, c, X, yo)
            elif op == 28:  # softplus
                fwd_softplus(1, X, ao, c, X, yo)
            elif op == 29:  # log_sigmoid
                fwd_log_sigmoid(1, X, ao, c, X, yo)
            elif op == 30:  # smooth_l1
                fwd_smooth_l1(1, X, ao, c, X, yo)
            elif op == 31:  # hardsigmoid
                fwd_hardsigmoid(1, X, ao, c, X, yo)
            elif op == 32:  # lgamma
                fwd_lgamma(1, X, ao, c, X, yo)
            elif op == 33:  # polygamma
                fwd_polygamma(1, X, ao, c, X, yo)
            elif op == 34:  # softmax
                fwd_softmax(1, X, ao, c, X, yo)
            elif op == 35:  # log_softmax
                fwd_log_softmax(1, X, ao, c, X, yo)
            elif op == 36:  # add_scalar
                fwd_add_scalar(1, X, ao, c, X, yo)
            elif op == 37:  # rsub_scalar
                fwd_rsub_scalar(1, X, ao, c, X, yo)
        elif kind == 3:  # index
            if op == 49:  # gather
                fwd_gather(1, 1, X, ao, I, D[b0 + P_0], c, X, yo)
            elif op == 50:  # segsum
                fwd_segsum(D[b0 + P_1], 1, X, ao, I, D[b0 + P_0], c, X, yo)
            elif op == 51:  # copy
                fwd_copy(D[b0 + P_1], 1, X, ao, I, D[b0 + P_0], c, X, yo)
            elif op == 52:  # slice
                fwd_slice(D[b0 + P_1], 1, X, ao, I, D[b0 + P_0], c, X, yo)
            elif op == 53:  # embed
                fwd_embed(D[b0 + P_1], 1, X, ao, I, D[b0 + P_0], c, X, yo)
            elif op == 54:  # transpose
                fwd_transpose(D[b0 + P_1], 1, X, ao, I, D[b0 + P_0], c, X, yo)
        elif kind == 2:  # sum
            if op == 48:  # sum
                fwd_sum(D[b0 + P_M], X, ao, c, X, yo)


@_jit
def preverse(D, Dc, I, X, A, R):
    """Reverse sweep of a scalar plan over the entries R (descending; the entries the seeded
    cotangents reach), accumulating into the adjoint store A (zeroed by the caller)."""
    D, Dc, I, X, A, R = raw(D), raw(Dc), raw(I), raw(X), raw(A), raw(R)
    for r in range(R.shape[0]):
        e = R[r]
        b0 = e * PK
        op = D[b0 + P_OP]
        kind = D[b0 + P_KIND]
        yo = D[b0 + P_Y]
        ao = D[b0 + P_A]
        bo = D[b0 + P_B]
        c = Dc[e]
        if kind == 1:  # binary
            if op == 38:  # add
                vjp_add(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, (D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)
            elif op == 39:  # sub
                vjp_sub(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, (D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)
            elif op == 40:  # mul
                vjp_mul(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, (D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)
            elif op == 41:  # div
                vjp_div(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, (D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)
            elif op == 42:  # pow
                vjp_pow(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, (D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)
            elif op == 43:  # maximum
                vjp_maximum(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, (D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)
            elif op == 44:  # minimum
                vjp_minimum(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, (D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)
            elif op == 45:  # atan2
                vjp_atan2(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, (D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)
            elif op == 46:  # hypot
                vjp_hypot(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, (D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)
            elif op == 47:  # remainder
                vjp_remainder(1, A, yo, X, ao, 1, X, bo, 1, X, yo, A, ao, A, bo, (D[b0 + P_0] & 1) != 0, (D[b0 + P_0] & 2) != 0)
        elif kind == 0:  # unary
            if op == 0:  # neg
                vjp_neg(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 1:  # exp
                vjp_exp(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 2:  # log
                vjp_log(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 3:  # sin
                vjp_sin(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 4:  # cos
                vjp_cos(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 5:  # tanh
                vjp_tanh(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 6:  # sigmoid
                vjp_sigmoid(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 7:  # relu
                vjp_relu(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 8:  # sqrt
                vjp_sqrt(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 9:  # abs
                vjp_abs(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 10:  # pow_scalar
                vjp_pow_scalar(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 11:  # tan
                vjp_tan(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 12:  # asin
                vjp_asin(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 13:  # acos
                vjp_acos(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 14:  # atan
                vjp_atan(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 15:  # sinh
                vjp_sinh(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 16:  # cosh
                vjp_cosh(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 17:  # erf
                vjp_erf(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 18:  # log1p
                vjp_log1p(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 19:  # expm1
                vjp_expm1(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 20:  # scale
                vjp_scale(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 21:  # step
                vjp_step(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 22:  # clamp_min
                vjp_clamp_min(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 23:  # clamp_max
                vjp_clamp_max(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 24:  # leaky_relu
                vjp_leaky_relu(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 25:  # elu
                vjp_elu(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 26:  # gelu
                vjp_gelu(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 27:  # silu
                vjp_silu(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 28:  # softplus
                vjp_softplus(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 29:  # log_sigmoid
                vjp_log_sigmoid(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 30:  # smooth_l1
                vjp_smooth_l1(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 31:  # hardsigmoid
                vjp_hardsigmoid(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 32:  # lgamma
                vjp_lgamma(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 33:  # polygamma
                vjp_polygamma(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 34:  # softmax
                vjp_softmax(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 35:  # log_softmax
                vjp_log_softmax(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 36:  # add_scalar
                vjp_add_scalar(1, A, yo, X, ao, X, yo, c, A, ao)
            elif op == 37:  # rsub_scalar
                vjp_rsub_scalar(1, A, yo, X, ao, X, yo, c, A, ao)
        elif kind == 3:  # index
            if op == 49:  # gather
                vjp_gather(1, D[b0 + P_M], A, yo, I, D[b0 + P_0], c, A, ao)
            elif op == 50:  # segsum
                vjp_segsum(D[b0 + P_1], D[b0 + P_M], A, yo, I, D[b0 + P_0], c, A, ao)
            elif op == 51:  # copy
                vjp_copy(D[b0 + P_1], D[b0 + P_M], A, yo, I, D[b0 + P_0], c, A, ao)
            elif op == 52:  # slice
                vjp_slice(D[b0 + P_1], D[b0 + P_M], A, yo, I, D[b0 + P_0], c, A, ao)
            elif op == 53:  # embed
                vjp_embed(D[b0 + P_1], D[b0 + P_M], A, yo, I, D[b0 + P_0], c, A, ao)
            elif op == 54:  # transpose
                vjp_transpose(D[b0 + P_1], D[b0 + P_M], A, yo, I, D[b0 + P_0], c, A, ao)
        elif kind == 2:  # sum
            if op == 48:  # sum
                vjp_sum(D[b0 + P_M], A, yo, c, A, ao)


@_jit_internal
def bforward(E, N, V4, V8, XA4, XA8, I, C, X4, X8, B, start, stop):
    """Batched replay of entries start..stop-1 on a chunk of B points laid out slot-major
    (element i of the node at offset o: X[(o + i) * B + lane]). The caller has checked that
    the tape has no custom Function and no F_BIG entry (tapegrad.func)."""
    E, N, V4, V8, XA4, XA8, I, C = raw(E), raw(N), raw(V4), raw(V8), raw(XA4), raw(XA8), raw(I), raw(C)
    X4, X8 = raw(X4), raw(X8)
    for e in range(start, stop):
        b0 = e * K
        if (E[b0 + FL] & F_ALIAS) != 0:     # a slice sharing its operand's lanes: no copy
            continue
        op = E[b0 + OP]
        out = E[b0 + OUT]
        a = E[b0 + IA]
        b = E[b0 + IB]
        c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
        kind = KIND[op]
        yo = N[out * NK + NOFF] * B
        n = N[out * NK + NSIZE]
        if op == CAST_OP:
            da, oa = N[a * NK + NDT], N[a * NK + NOFF] * B
            for i in range(n * B):
                v = X4[oa + i] if da == 0 else X8[oa + i]
                if N[out * NK + NDT] == 0:
                    X4[yo + i] = v
                else:
                    X8[yo + i] = v
        elif N[out * NK + NDT] == 0:
            if kind == 0:  # unary
                if op == 0:  # neg
                    fwd_neg(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 1:  # exp
                    fwd_exp(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 2:  # log
                    fwd_log(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 3:  # sin
                    fwd_sin(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 4:  # cos
                    fwd_cos(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 5:  # tanh
                    fwd_tanh(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 6:  # sigmoid
                    fwd_sigmoid(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 7:  # relu
                    fwd_relu(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 8:  # sqrt
                    fwd_sqrt(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 9:  # abs
                    fwd_abs(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 10:  # pow_scalar
                    fwd_pow_scalar(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 11:  # tan
                    fwd_tan(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 12:  # asin
                    fwd_asin(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 13:  # acos
                    fwd_acos(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 14:  # atan
                    fwd_atan(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 15:  # sinh
                    fwd_sinh(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 16:  # cosh
                    fwd_cosh(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 17:  # erf
                    fwd_erf(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 18:  # log1p
                    fwd_log1p(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 19:  # expm1
                    fwd_expm1(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 20:  # scale
                    fwd_scale(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 21:  # step
                    fwd_step(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 22:  # clamp_min
                    fwd_clamp_min(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 23:  # clamp_max
                    fwd_clamp_max(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 24:  # leaky_relu
                    fwd_leaky_relu(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 25:  # elu
                    fwd_elu(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 26:  # gelu
                    fwd_gelu(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 27:  # silu
                    fwd_silu(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 28:  # softplus
                    fwd_softplus(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 29:  # log_sigmoid
                    fwd_log_sigmoid(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 30:  # smooth_l1
                    fwd_smooth_l1(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 31:  # hardsigmoid
                    fwd_hardsigmoid(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 32:  # lgamma
                    fwd_lgamma(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 33:  # polygamma
                    fwd_polygamma(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 34:  # softmax
                    bfwd_softmax(n, X4, noff(N, a) * B, c, X4, yo, B)
                elif op == 35:  # log_softmax
                    bfwd_log_softmax(n, X4, noff(N, a) * B, c, X4, yo, B)
                elif op == 36:  # add_scalar
                    fwd_add_scalar(n * B, X4, noff(N, a) * B, c, X4, yo)
                elif op == 37:  # rsub_scalar
                    fwd_rsub_scalar(n * B, X4, noff(N, a) * B, c, X4, yo)
            elif kind == 1:  # binary
                sa = E[b0 + P0]
                sb = E[b0 + P1]
                ao = noff(N, a) * B
                bo = noff(N, b) * B
                whole = (sa == 1 or n == 1) and (sb == 1 or n == 1)
                nl, w = (1, n * B) if whole else (n, B)
                for i in range(nl):
                    if op == 38:  # add
                        fwd_add(w, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, yo + i * B)
                    elif op == 39:  # sub
                        fwd_sub(w, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, yo + i * B)
                    elif op == 40:  # mul
                        fwd_mul(w, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, yo + i * B)
                    elif op == 41:  # div
                        fwd_div(w, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, yo + i * B)
                    elif op == 42:  # pow
                        fwd_pow(w, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, yo + i * B)
                    elif op == 43:  # maximum
                        fwd_maximum(w, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, yo + i * B)
                    elif op == 44:  # minimum
                        fwd_minimum(w, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, yo + i * B)
                    elif op == 45:  # atan2
                        fwd_atan2(w, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, yo + i * B)
                    elif op == 46:  # hypot
                        fwd_hypot(w, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, yo + i * B)
                    elif op == 47:  # remainder
                        fwd_remainder(w, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, yo + i * B)
            elif kind == 2:  # sum
                if op == 48:  # sum
                    bfwd_sum(N[a * NK + NSIZE], X4, noff(N, a) * B, c, X4, yo, B)
            elif kind == 3:  # index
                if op == 49:  # gather
                    bfwd_gather(E[b0 + P1], n, X4, noff(N, a) * B, I, E[b0 + P0], c, X4, yo, B)
                elif op == 50:  # segsum
                    bfwd_segsum(E[b0 + P1], n, X4, noff(N, a) * B, I, E[b0 + P0], c, X4, yo, B)
                elif op == 51:  # copy
                    bfwd_copy(E[b0 + P1], n, X4, noff(N, a) * B, I, E[b0 + P0], c, X4, yo, B)
                elif op == 52:  # slice
                    bfwd_slice(E[b0 + P1], n, X4, noff(N, a) * B, I, E[b0 + P0], c, X4, yo, B)
                elif op == 53:  # embed
                    bfwd_embed(E[b0 + P1], n, X4, noff(N, a) * B, I, E[b0 + P0], c, X4, yo, B)
                elif op == 54:  # transpose
                    bfwd_transpose(E[b0 + P1], n, X4, noff(N, a) * B, I, E[b0 + P0], c, X4, yo, B)
            elif kind == 4:  # mm
                m = E[b0 + P0]
                k = E[b0 + P1]
                if op == 55:  # mm
                    bfwd_mm(m, k, n // m, X4, noff(N, a) * B, X4, noff(N, b) * B, X4, yo, B)
        else:
            if kind == 0:  # unary
                if op == 0:  # neg
                    fwd_neg(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 1:  # exp
                    fwd_exp(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 2:  # log
                    fwd_log(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 3:  # sin
                    fwd_sin(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 4:  # cos
                    fwd_cos(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 5:  # tanh
                    fwd_tanh(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 6:  # sigmoid
                    fwd_sigmoid(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 7:  # relu
                    fwd_relu(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 8:  # sqrt
                    fwd_sqrt(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 9:  # abs
                    fwd_abs(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 10:  # pow_scalar
                    fwd_pow_scalar(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 11:  # tan
                    fwd_tan(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 12:  # asin
                    fwd_asin(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 13:  # acos
                    fwd_acos(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 14:  # atan
                    fwd_atan(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 15:  # sinh
                    fwd_sinh(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 16:  # cosh
                    fwd_cosh(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 17:  # erf
                    fwd_erf(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 18:  # log1p
                    fwd_log1p(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 19:  # expm1
                    fwd_expm1(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 20:  # scale
                    fwd_scale(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 21:  # step
                    fwd_step(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 22:  # clamp_min
                    fwd_clamp_min(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 23:  # clamp_max
                    fwd_clamp_max(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 24:  # leaky_relu
                    fwd_leaky_relu(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 25:  # elu
                    fwd_elu(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 26:  # gelu
                    fwd_gelu(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 27:  # silu
                    fwd_silu(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 28:  # softplus
                    fwd_softplus(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 29:  # log_sigmoid
                    fwd_log_sigmoid(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 30:  # smooth_l1
                    fwd_smooth_l1(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 31:  # hardsigmoid
                    fwd_hardsigmoid(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 32:  # lgamma
                    fwd_lgamma(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 33:  # polygamma
                    fwd_polygamma(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 34:  # softmax
                    bfwd_softmax(n, X8, noff(N, a) * B, c, X8, yo, B)
                elif op == 35:  # log_softmax
                    bfwd_log_softmax(n, X8, noff(N, a) * B, c, X8, yo, B)
                elif op == 36:  # add_scalar
                    fwd_add_scalar(n * B, X8, noff(N, a) * B, c, X8, yo)
                elif op == 37:  # rsub_scalar
                    fwd_rsub_scalar(n * B, X8, noff(N, a) * B, c, X8, yo)
            elif kind == 1:  # binary
                sa = E[b0 + P0]
                sb = E[b0 + P1]
                ao = noff(N, a) * B
                bo = noff(N, b) * B
                whole = (sa == 1 or n == 1) and (sb == 1 or n == 1)
                nl, w = (1, n * B) if whole else (n, B)
                for i in range(nl):
                    if op == 38:  # add
                        fwd_add(w, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, yo + i * B)
                    elif op == 39:  # sub
                        fwd_sub(w, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, yo + i * B)
                    elif op == 40:  # mul
                        fwd_mul(w, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, yo + i * B)
                    elif op == 41:  # div
                        fwd_div(w, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, yo + i * B)
                    elif op == 42:  # pow
                        fwd_pow(w, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, yo + i * B)
                    elif op == 43:  # maximum
                        fwd_maximum(w, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, yo + i * B)
                    elif op == 44:  # minimum
                        fwd_minimum(w, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, yo + i * B)
                    elif op == 45:  # atan2
                        fwd_atan2(w, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, yo + i * B)
                    elif op == 46:  # hypot
                        fwd_hypot(w, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, yo + i * B)
                    elif op == 47:  # remainder
                        fwd_remainder(w, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, yo + i * B)
            elif kind == 2:  # sum
                if op == 48:  # sum
                    bfwd_sum(N[a * NK + NSIZE], X8, noff(N, a) * B, c, X8, yo, B)
            elif kind == 3:  # index
                if op == 49:  # gather
                    bfwd_gather(E[b0 + P1], n, X8, noff(N, a) * B, I, E[b0 + P0], c, X8, yo, B)
                elif op == 50:  # segsum
                    bfwd_segsum(E[b0 + P1], n, X8, noff(N, a) * B, I, E[b0 + P0], c, X8, yo, B)
                elif op == 51:  # copy
                    bfwd_copy(E[b0 + P1], n, X8, noff(N, a) * B, I, E[b0 + P0], c, X8, yo, B)
                elif op == 52:  # slice
                    bfwd_slice(E[b0 + P1], n, X8, noff(N, a) * B, I, E[b0 + P0], c, X8, yo, B)
                elif op == 53:  # embed
                    bfwd_embed(E[b0 + P1], n, X8, noff(N, a) * B, I, E[b0 + P0], c, X8, yo, B)
                elif op == 54:  # transpose
                    bfwd_transpose(E[b0 + P1], n, X8, noff(N, a) * B, I, E[b0 + P0], c, X8, yo, B)
            elif kind == 4:  # mm
                m = E[b0 + P0]
                k = E[b0 + P1]
                if op == 55:  # mm
                    bfwd_mm(m, k, n // m, X8, noff(N, a) * B, X8, noff(N, b) * B, X8, yo, B)


@_jit_internal
def breverse(E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, B, nreach, ereach, start, stop, nreal):
    """Batched reverse sweep of entries start..stop (downwards) over a chunk of B points
    (layout as bforward), accumulating adjoints into A4/A8; entries no cotangent reaches
    are skipped. Nodes from nreal on are recorded constants (no gradient computed)."""
    E, N, V4, V8, XA4, XA8, I, C = raw(E), raw(N), raw(V4), raw(V8), raw(XA4), raw(XA8), raw(I), raw(C)
    A4, A8, X4, X8, nreach, ereach = raw(A4), raw(A8), raw(X4), raw(X8), raw(nreach), raw(ereach)
    for e in range(start, stop - 1, -1):
        if ereach[e] == 0:
            continue
        b0 = e * K
        if (E[b0 + FL] & F_ALIAS) != 0:     # its consumers accumulated into the operand's
            mark(N, nreach, ereach, E[b0 + IA])     # lanes already; they stay live
            continue
        op = E[b0 + OP]
        out = E[b0 + OUT]
        a = E[b0 + IA]
        b = E[b0 + IB]
        c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
        kind = KIND[op]
        go = N[out * NK + NOFF] * B
        n = N[out * NK + NSIZE]
        if op == CAST_OP:
            da, oa = N[a * NK + NDT], N[a * NK + NOFF] * B
            for i in range(n * B):
                v = A4[go + i] if N[out * NK + NDT] == 0 else A8[go + i]
                if da == 0:
                    A4[oa + i] += v
                else:
                    A8[oa + i] += v
            mark(N, nreach, ereach, a)
        elif N[out * NK + NDT] == 0:
            if kind == 0:  # unary
                if op == 0:  # neg
                    vjp_neg(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 1:  # exp
                    vjp_exp(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 2:  # log
                    vjp_log(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 3:  # sin
                    vjp_sin(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 4:  # cos
                    vjp_cos(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 5:  # tanh
                    vjp_tanh(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 6:  # sigmoid
                    vjp_sigmoid(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 7:  # relu
                    vjp_relu(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 8:  # sqrt
                    vjp_sqrt(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 9:  # abs
                    vjp_abs(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 10:  # pow_scalar
                    vjp_pow_scalar(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 11:  # tan
                    vjp_tan(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 12:  # asin
                    vjp_asin(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 13:  # acos
                    vjp_acos(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 14:  # atan
                    vjp_atan(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 15:  # sinh
                    vjp_sinh(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 16:  # cosh
                    vjp_cosh(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 17:  # erf
                    vjp_erf(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 18:  # log1p
                    vjp_log1p(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 19:  # expm1
                    vjp_expm1(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 20:  # scale
                    vjp_scale(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 21:  # step
                    vjp_step(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 22:  # clamp_min
                    vjp_clamp_min(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 23:  # clamp_max
                    vjp_clamp_max(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 24:  # leaky_relu
                    vjp_leaky_relu(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 25:  # elu
                    vjp_elu(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 26:  # gelu
                    vjp_gelu(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 27:  # silu
                    vjp_silu(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 28:  # softplus
                    vjp_softplus(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 29:  # log_sigmoid
                    vjp_log_sigmoid(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 30:  # smooth_l1
                    vjp_smooth_l1(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 31:  # hardsigmoid
                    vjp_hardsigmoid(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 32:  # lgamma
                    vjp_lgamma(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 33:  # polygamma
                    vjp_polygamma(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 34:  # softmax
                    bvjp_softmax(n, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B, B)
                elif op == 35:  # log_softmax
                    bvjp_log_softmax(n, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B, B)
                elif op == 36:  # add_scalar
                    vjp_add_scalar(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                elif op == 37:  # rsub_scalar
                    vjp_rsub_scalar(n * B, A4, go, X4, noff(N, a) * B, X4, go, c, A4, noff(N, a) * B)
                mark(N, nreach, ereach, a)
            elif kind == 1:  # binary
                sa = E[b0 + P0]
                sb = E[b0 + P1]
                ao = noff(N, a) * B
                bo = noff(N, b) * B
                whole = (sa == 1 or n == 1) and (sb == 1 or n == 1)
                nl, w = (1, n * B) if whole else (n, B)
                for i in range(nl):
                    if op == 38:  # add
                        vjp_add(w, A4, go + i * B, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, go + i * B, A4, ao + i * sa * B, A4, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 39:  # sub
                        vjp_sub(w, A4, go + i * B, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, go + i * B, A4, ao + i * sa * B, A4, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 40:  # mul
                        vjp_mul(w, A4, go + i * B, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, go + i * B, A4, ao + i * sa * B, A4, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 41:  # div
                        vjp_div(w, A4, go + i * B, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, go + i * B, A4, ao + i * sa * B, A4, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 42:  # pow
                        vjp_pow(w, A4, go + i * B, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, go + i * B, A4, ao + i * sa * B, A4, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 43:  # maximum
                        vjp_maximum(w, A4, go + i * B, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, go + i * B, A4, ao + i * sa * B, A4, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 44:  # minimum
                        vjp_minimum(w, A4, go + i * B, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, go + i * B, A4, ao + i * sa * B, A4, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 45:  # atan2
                        vjp_atan2(w, A4, go + i * B, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, go + i * B, A4, ao + i * sa * B, A4, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 46:  # hypot
                        vjp_hypot(w, A4, go + i * B, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, go + i * B, A4, ao + i * sa * B, A4, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 47:  # remainder
                        vjp_remainder(w, A4, go + i * B, X4, ao + i * sa * B, ONE, X4, bo + i * sb * B, ONE, X4, go + i * B, A4, ao + i * sa * B, A4, bo + i * sb * B, a < nreal, b < nreal)
                mark(N, nreach, ereach, a)
                mark(N, nreach, ereach, b)
            elif kind == 2:  # sum
                if op == 48:  # sum
                    bvjp_sum(N[a * NK + NSIZE], A4, go, c, A4, noff(N, a) * B, B)
                mark(N, nreach, ereach, a)
            elif kind == 3:  # index
                if op == 49:  # gather
                    bvjp_gather(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a) * B, B)
                elif op == 50:  # segsum
                    bvjp_segsum(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a) * B, B)
                elif op == 51:  # copy
                    bvjp_copy(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a) * B, B)
                elif op == 52:  # slice
                    bvjp_slice(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a) * B, B)
                elif op == 53:  # embed
                    bvjp_embed(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a) * B, B)
                elif op == 54:  # transpose
                    bvjp_transpose(E[b0 + P1], N[a * NK + NSIZE], A4, go, I, E[b0 + P0], c, A4, noff(N, a) * B, B)
                mark(N, nreach, ereach, a)
            elif kind == 4:  # mm
                m = E[b0 + P0]
                k = E[b0 + P1]
                if op == 55:  # mm
                    bvjp_mm(m, k, n // m, A4, go, X4, noff(N, a) * B, X4, noff(N, b) * B, A4, noff(N, a) * B, A4, noff(N, b) * B, B)
                mark(N, nreach, ereach, a)
                mark(N, nreach, ereach, b)
        else:
            if kind == 0:  # unary
                if op == 0:  # neg
                    vjp_neg(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 1:  # exp
                    vjp_exp(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 2:  # log
                    vjp_log(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 3:  # sin
                    vjp_sin(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 4:  # cos
                    vjp_cos(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 5:  # tanh
                    vjp_tanh(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 6:  # sigmoid
                    vjp_sigmoid(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 7:  # relu
                    vjp_relu(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 8:  # sqrt
                    vjp_sqrt(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 9:  # abs
                    vjp_abs(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 10:  # pow_scalar
                    vjp_pow_scalar(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 11:  # tan
                    vjp_tan(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 12:  # asin
                    vjp_asin(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 13:  # acos
                    vjp_acos(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 14:  # atan
                    vjp_atan(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 15:  # sinh
                    vjp_sinh(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 16:  # cosh
                    vjp_cosh(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 17:  # erf
                    vjp_erf(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 18:  # log1p
                    vjp_log1p(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 19:  # expm1
                    vjp_expm1(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 20:  # scale
                    vjp_scale(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 21:  # step
                    vjp_step(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 22:  # clamp_min
                    vjp_clamp_min(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 23:  # clamp_max
                    vjp_clamp_max(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 24:  # leaky_relu
                    vjp_leaky_relu(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 25:  # elu
                    vjp_elu(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 26:  # gelu
                    vjp_gelu(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 27:  # silu
                    vjp_silu(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 28:  # softplus
                    vjp_softplus(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 29:  # log_sigmoid
                    vjp_log_sigmoid(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 30:  # smooth_l1
                    vjp_smooth_l1(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 31:  # hardsigmoid
                    vjp_hardsigmoid(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 32:  # lgamma
                    vjp_lgamma(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 33:  # polygamma
                    vjp_polygamma(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 34:  # softmax
                    bvjp_softmax(n, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B, B)
                elif op == 35:  # log_softmax
                    bvjp_log_softmax(n, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B, B)
                elif op == 36:  # add_scalar
                    vjp_add_scalar(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                elif op == 37:  # rsub_scalar
                    vjp_rsub_scalar(n * B, A8, go, X8, noff(N, a) * B, X8, go, c, A8, noff(N, a) * B)
                mark(N, nreach, ereach, a)
            elif kind == 1:  # binary
                sa = E[b0 + P0]
                sb = E[b0 + P1]
                ao = noff(N, a) * B
                bo = noff(N, b) * B
                whole = (sa == 1 or n == 1) and (sb == 1 or n == 1)
                nl, w = (1, n * B) if whole else (n, B)
                for i in range(nl):
                    if op == 38:  # add
                        vjp_add(w, A8, go + i * B, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, go + i * B, A8, ao + i * sa * B, A8, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 39:  # sub
                        vjp_sub(w, A8, go + i * B, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, go + i * B, A8, ao + i * sa * B, A8, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 40:  # mul
                        vjp_mul(w, A8, go + i * B, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, go + i * B, A8, ao + i * sa * B, A8, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 41:  # div
                        vjp_div(w, A8, go + i * B, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, go + i * B, A8, ao + i * sa * B, A8, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 42:  # pow
                        vjp_pow(w, A8, go + i * B, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, go + i * B, A8, ao + i * sa * B, A8, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 43:  # maximum
                        vjp_maximum(w, A8, go + i * B, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, go + i * B, A8, ao + i * sa * B, A8, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 44:  # minimum
                        vjp_minimum(w, A8, go + i * B, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, go + i * B, A8, ao + i * sa * B, A8, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 45:  # atan2
                        vjp_atan2(w, A8, go + i * B, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, go + i * B, A8, ao + i * sa * B, A8, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 46:  # hypot
                        vjp_hypot(w, A8, go + i * B, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, go + i * B, A8, ao + i * sa * B, A8, bo + i * sb * B, a < nreal, b < nreal)
                    elif op == 47:  # remainder
                        vjp_remainder(w, A8, go + i * B, X8, ao + i * sa * B, ONE, X8, bo + i * sb * B, ONE, X8, go + i * B, A8, ao + i * sa * B, A8, bo + i * sb * B, a < nreal, b < nreal)
                mark(N, nreach, ereach, a)
                mark(N, nreach, ereach, b)
            elif kind == 2:  # sum
                if op == 48:  # sum
                    bvjp_sum(N[a * NK + NSIZE], A8, go, c, A8, noff(N, a) * B, B)
                mark(N, nreach, ereach, a)
            elif kind == 3:  # index
                if op == 49:  # gather
                    bvjp_gather(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a) * B, B)
                elif op == 50:  # segsum
                    bvjp_segsum(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a) * B, B)
                elif op == 51:  # copy
                    bvjp_copy(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a) * B, B)
                elif op == 52:  # slice
                    bvjp_slice(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a) * B, B)
                elif op == 53:  # embed
                    bvjp_embed(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a) * B, B)
                elif op == 54:  # transpose
                    bvjp_transpose(E[b0 + P1], N[a * NK + NSIZE], A8, go, I, E[b0 + P0], c, A8, noff(N, a) * B, B)
                mark(N, nreach, ereach, a)
            elif kind == 4:  # mm
                m = E[b0 + P0]
                k = E[b0 + P1]
                if op == 55:  # mm
                    bvjp_mm(m, k, n // m, A8, go, X8, noff(N, a) * B, X8, noff(N, b) * B, A8, noff(N, a) * B, A8, noff(N, b) * B, B)
                mark(N, nreach, ereach, a)
                mark(N, nreach, ereach, b)
        # a node's adjoint is dead once its producer's VJP ran: clear its lanes now, while
        # they are in cache, so the next chunk starts from zeros without a pass over the store
        if N[out * NK + NDT] == 0:
            z4 = A4[go:go + n * B]
            z4[:] = 0
        else:
            z8 = A8[go:go + n * B]
            z8[:] = 0
