"""Numba kernels of the random transforms whose torch counterparts are sequential or rounded
operation by operation (imported by creation.py on the first draw that needs them; compiled
once per machine, ``cache=True``).

- ``fma32`` / ``fma64``: a * b + c rounded once (LLVM's fma intrinsic: the FMA instruction, or
  libm's correctly rounded fma). torch's CPU build contracts ``x * (to - from) + from`` and
  ``r cos(theta) std + mean`` into fused multiply-adds; these reproduce them.
- ``normal16_f64``: torch's normal_fill_16 in double (libm log, cos, sin: the calls torch
  makes).
- ``normal16_f32_avx2``: torch's AVX2 normal_fill_16_AVX2: avx_mathfun's log256_ps and
  sincos256_ps (Cephes logf / sinf / cosf polynomials) evaluated in float32 with the
  multiply-adds fused as GCC contracts them in torch's AVX2 build (checked against torch 2.13
  on 320,000 values: all equal).
- ``normal16_f32_scalar``: torch's scalar normal_fill_16<float> (logf, cosf, sinf from libm),
  the build torch runs without AVX2 (or with AVX-512).
- ``uniform_f32`` / ``uniform_f64``: uniform_real_distribution's x (to - from) + from.
- ``swap_shuffle``: randperm_cpu's swaps r[i] <-> r[target[i]], in order.
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic


@intrinsic
def _fma(typingctx, a, b, c):
    sig = a(a, b, c)

    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return sig, codegen


@intrinsic
def _bits32(typingctx, x):
    """A float32's bit pattern as an int32."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


@intrinsic
def _float32(typingctx, x):
    """The float32 with the int32 bit pattern x."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


@njit(error_model="numpy")
def fma32(a, b, c):
    return _fma(np.float32(a), np.float32(b), np.float32(c))


@njit(error_model="numpy")
def fma64(a, b, c):
    return _fma(np.float64(a), np.float64(b), np.float64(c))


@njit(cache=True, error_model="numpy")
def uniform_f32(bits, lo, hi, out):
    """out[i] = fma(x, hi - lo, lo), x = (bits & (2^24 - 1)) 2^-24 in float32."""
    span = np.float32(hi - lo)
    scale = np.float32(1.0 / 16777216.0)
    for i in range(bits.size):
        x = np.float32(bits[i] & np.uint64(0xffffff)) * scale
        out[i] = fma32(x, span, lo)


@njit(cache=True, error_model="numpy")
def uniform_f64(bits, lo, hi, out):
    """out[i] = fma(x, hi - lo, lo), x = (bits & (2^53 - 1)) 2^-53."""
    span = hi - lo
    for i in range(bits.size):
        x = np.float64(bits[i] & np.uint64(0x1fffffffffffff)) * (1.0 / 9007199254740992.0)
        out[i] = fma64(x, span, lo)


@njit(cache=True, error_model="numpy")
def normal16_f64(data, mean, std):
    """In place over blocks of 16: u1 = 1 - data[j], u2 = data[j + 8] (j < 8)."""
    for b in range(0, data.size, 16):
        for j in range(8):
            u1 = 1.0 - data[b + j]
            u2 = data[b + j + 8]
            radius = math.sqrt(-2.0 * math.log(u1))
            theta = 2.0 * math.pi * u2
            data[b + j] = fma64(radius * math.cos(theta), std, mean)
            data[b + j + 8] = fma64(radius * math.sin(theta), std, mean)


@njit(cache=True, error_model="numpy")
def normal16_f32_scalar(data, mean, std):
    for b in range(0, data.size, 16):
        for j in range(8):
            u1 = np.float32(1.0) - data[b + j]
            u2 = data[b + j + 8]
            radius = math.sqrt(np.float32(-2.0) * math.log(u1))
            theta = np.float32(2.0 * math.pi * np.float64(u2))
            data[b + j] = fma32(radius * math.cos(theta), std, mean)
            data[b + j + 8] = fma32(radius * math.sin(theta), std, mean)


@njit(error_model="numpy")
def _log_avx(x):
    """log256_ps for one lane, x in (0, 1]: x = m 2^e, m in [sqrt(1/2), sqrt(2)), a degree-9
    polynomial in m - 1, e log 2 added in two parts."""
    f = np.float32
    bits = _bits32(max(x, f(1.17549435e-38)))
    m = _float32((bits & np.int32(-2139095041)) | np.int32(0x3f000000))    # in [0.5, 1)
    e = f(f((bits >> 23) - 127) + f(1.0))
    if m < f(0.707106781186547524):
        m = f(m - f(1.0)) + m
        e = e - f(1.0)
    else:
        m = m - f(1.0)
    z = m * m
    y = f(7.0376836292e-2)
    y = fma32(y, m, f(-1.1514610310e-1))
    y = fma32(y, m, f(1.1676998740e-1))
    y = fma32(y, m, f(-1.2420140846e-1))
    y = fma32(y, m, f(1.4249322787e-1))
    y = fma32(y, m, f(-1.6668057665e-1))
    y = fma32(y, m, f(2.0000714765e-1))
    y = fma32(y, m, f(-2.4999993993e-1))
    y = fma32(y, m, f(3.3333331174e-1))
    y = fma32(y * m, z, e * f(-2.12194440e-4))
    y = fma32(z, f(-0.5), y)
    return fma32(e, f(0.693359375), m + y)


@njit(error_model="numpy")
def _sincos_avx(x):
    """sincos256_ps for one lane, x >= 0: reduction by multiples of pi/4 in three parts, a
    polynomial per octant pair, signs by octant."""
    f = np.float32
    j = np.int32(x * f(1.27323954473516))
    j = (j + 1) & ~1
    y = f(j)
    x = fma32(y, f(-0.78515625), x)
    x = fma32(y, f(-2.4187564849853515625e-4), x)
    x = fma32(y, f(-3.77489497744594108e-8), x)
    z = x * x
    yc = fma32(f(2.443315711809948e-5), z, f(-1.388731625493765e-3))
    yc = fma32(yc, z, f(4.166664568298827e-2))
    yc = fma32(yc * z, z, -(z * f(0.5))) + f(1.0)
    ys = fma32(f(-1.9515295891e-4), z, f(8.3321608736e-3))
    ys = fma32(ys, z, f(-1.6666654611e-1))
    ys = fma32(ys * z, x, x)
    if (j & 2) == 0:
        s, c = ys, yc
    else:
        s, c = yc, ys
    if (j & 4) != 0:
        s = -s
    if ((j - 2) & 4) == 0:
        c = -c
    return s, c


@njit(cache=True, error_model="numpy")
def normal16_f32_avx2(data, mean, std):
    two_pi = np.float32(2.0 * math.pi)
    for b in range(0, data.size, 16):
        for j in range(8):
            u1 = np.float32(1.0) - data[b + j]
            u2 = data[b + j + 8]
            radius = np.float32(math.sqrt(np.float32(-2.0) * _log_avx(u1)))
            s, c = _sincos_avx(two_pi * u2)
            data[b + j] = fma32(radius * c, std, mean)
            data[b + j + 8] = fma32(radius * s, std, mean)


@njit(cache=True, error_model="numpy")
def swap_shuffle(target, n):
    r = np.arange(n)
    for i in range(target.size):
        j = target[i]
        t = r[i]
        r[i] = r[j]
        r[j] = t
    return r



@njit(cache=True, error_model="numpy")
def normal_pairs(u, out):
    """normal_distribution<double>'s Box-Muller pairs from the doubles u (u1, u2 alternate):
    r = sqrt(-2 log1p(-u2)), theta = 2 pi u1; out gets r cos(theta), r sin(theta) in turn."""
    for i in range(u.size // 2):
        radius = math.sqrt(-2.0 * math.log1p(-u[2 * i + 1]))
        theta = 2.0 * math.pi * u[2 * i]
        out[2 * i] = radius * math.cos(theta)
        out[2 * i + 1] = radius * math.sin(theta)


@njit(cache=True, error_model="numpy")
def affine64(x, std, mean, exp):
    """x std + mean fused (then exp when ``exp``: lognormal_distribution), in place."""
    for i in range(x.size):
        v = fma64(x[i], std, mean)
        x[i] = math.exp(v) if exp else v
