"""Numba kernels of the optimizer steps: one compiled call updates every parameter of a group
(of one dtype).

Each kernel receives, for the n parameters of the group, an (n, k) int64 array of data
addresses (column 0 the parameter, 1 its gradient, then the per-parameter state buffers), their
element counts, the addresses of the 0-dim state scalars (``step``, NAdam's ``mu_product``,
ASGD's ``eta``/``mu``), the hyper-parameters, and two one-element "tag" arrays whose dtypes
(the parameters' and the state scalars') select the compiled specialisation. Every buffer is
viewed in place through ``carray`` (no copies, no reference counting per array).

The arithmetic follows torch's single-tensor (for-loop) implementations operation by
operation, in the parameters' dtype: each torch op (``mul_``, ``addcmul_``, ``lerp_``,
``addcdiv_``, ``sqrt`` ...) rounds to the dtype, and its Python-float scalar is first cast to
the dtype, exactly as the CPU kernels do (``addcmul``: self + (value * t1) * t2; ``addcdiv``:
self + (value * t1) / t2; ``lerp``: torch's two-branch formula). Step counts, bias corrections
and other scalars are computed in float64 as torch computes them in Python.
"""
import numpy as np
from numba import carray, njit, types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _voidptr(typingctx, addr):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)
    return types.voidptr(addr), codegen


@njit(inline="always", error_model="numpy")
def _vec(addr, n, tag):
    return carray(_voidptr(addr), (n,), tag.dtype)


@njit(inline="always", error_model="numpy")
def _scalar(addr, tag):
    return carray(_voidptr(addr), (1,), tag.dtype)


@njit(inline="always", error_model="numpy")
def _lerp(a, b, w, one):
    # torch's lerp: a + w (b - a) for |w| < 0.5, else b - (b - a) (1 - w)
    if abs(w) < 0.5:
        return a + w * (b - a)
    return b - (b - a) * (one - w)


@njit(inline="always", error_model="numpy")
def _maximum(a, b):
    # torch.maximum: NaN if either is NaN
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


@njit(inline="always", error_model="numpy")
def _sign(x, zero, one):
    if x > zero:
        return one
    if x < zero:
        return -one
    return x            # 0 (signed) or NaN


# ----------------------------------------------------------------------------- SGD
@njit(cache=True, error_model="numpy")
def sgd(A, sizes, init, tag, lr, momentum, dampening, wd, nesterov, maximize):
    """A columns: param, grad, momentum buffer (0 when momentum == 0). init[i]: the buffer
    is new (torch: buf = grad.clone() on the first step)."""
    T = tag.dtype.type
    f_lr, f_mom, f_1md, f_wd = T(-lr), T(momentum), T(1.0 - dampening), T(wd)
    for i in range(A.shape[0]):
        n = sizes[i]
        p = _vec(A[i, 0], n, tag)
        g = _vec(A[i, 1], n, tag)
        buf = _vec(A[i, 2] if momentum != 0.0 else A[i, 0], n, tag)
        for j in range(np.uint64(n)):
            d = -g[j] if maximize else g[j]
            if wd != 0.0:
                d = d + f_wd * p[j]
            if momentum != 0.0:
                if init[i]:
                    b = d
                else:
                    b = buf[j] * f_mom
                    b = b + f_1md * d
                buf[j] = b
                if nesterov:
                    d = d + f_mom * b
                else:
                    d = b
            p[j] = p[j] + f_lr * d


# ----------------------------------------------------------------------------- Adam / AdamW
@njit(cache=True, error_model="numpy")
def adam(A, sizes, S, tag, stag, lr, beta1, beta2, eps, wd, amsgrad, maximize, decoupled):
    """A columns: param, grad, exp_avg, exp_avg_sq, (max_exp_avg_sq). S: step addresses."""
    T = tag.dtype.type
    one = T(1.0)
    f_w1, f_b2, f_1mb2, f_eps, f_wd = T(1.0 - beta1), T(beta2), T(1.0 - beta2), T(eps), T(wd)
    f_decay = T(1.0 - lr * wd)
    for i in range(A.shape[0]):
        n = sizes[i]
        p = _vec(A[i, 0], n, tag)
        g = _vec(A[i, 1], n, tag)
        m = _vec(A[i, 2], n, tag)
        v = _vec(A[i, 3], n, tag)
        st = _scalar(S[i], stag)
        st[0] = st[0] + stag.dtype.type(1.0)
        step = np.float64(st[0])
        bc1 = 1.0 - beta1 ** step
        bc2 = 1.0 - beta2 ** step
        f_nss = T(-(lr / bc1))
        f_bc2s = T(bc2 ** 0.5)
        vmax = _vec(A[i, 4] if amsgrad else A[i, 3], n, tag)
        for j in range(np.uint64(n)):
            d = -g[j] if maximize else g[j]
            if wd != 0.0:
                if decoupled:
                    p[j] = p[j] * f_decay
                else:
                    d = d + f_wd * p[j]
            mj = _lerp(m[j], d, f_w1, one)
            m[j] = mj
            vj = v[j] * f_b2
            vj = vj + (f_1mb2 * d) * d
            v[j] = vj
            if amsgrad:
                vm = _maximum(vmax[j], vj)
                vmax[j] = vm
                den = np.sqrt(vm) / f_bc2s + f_eps
            else:
                den = np.sqrt(vj) / f_bc2s + f_eps
            p[j] = p[j] + (f_nss * mj) / den


# ----------------------------------------------------------------------------- RMSprop
@njit(cache=True, error_model="numpy")
def rmsprop(A, sizes, S, tag, stag, lr, alpha, eps, wd, momentum, centered, maximize):
    """A columns: param, grad, square_avg, grad_avg (centered, else 0), momentum_buffer
    (momentum > 0, else 0)."""
    T = tag.dtype.type
    one = T(1.0)
    f_a, f_1ma, f_eps, f_wd, f_mom, f_nlr = (T(alpha), T(1.0 - alpha), T(eps), T(wd),
                                             T(momentum), T(-lr))
    for i in range(A.shape[0]):
        n = sizes[i]
        p = _vec(A[i, 0], n, tag)
        g = _vec(A[i, 1], n, tag)
        sq = _vec(A[i, 2], n, tag)
        st = _scalar(S[i], stag)
        st[0] = st[0] + stag.dtype.type(1.0)
        ga = _vec(A[i, 3] if centered else A[i, 2], n, tag)
        buf = _vec(A[i, 4] if momentum > 0.0 else A[i, 2], n, tag)
        for j in range(np.uint64(n)):
            d = -g[j] if maximize else g[j]
            if wd != 0.0:
                d = d + f_wd * p[j]
            s = sq[j] * f_a
            s = s + (f_1ma * d) * d
            sq[j] = s
            if centered:
                gj = _lerp(ga[j], d, f_1ma, one)
                ga[j] = gj
                avg = np.sqrt(s + (-one * gj) * gj)
            else:
                avg = np.sqrt(s)
            avg = avg + f_eps
            if momentum > 0.0:
                b = buf[j] * f_mom
                b = b + (one * d) / avg
                buf[j] = b
                p[j] = p[j] + f_nlr * b
            else:
                p[j] = p[j] + (f_nlr * d) / avg


# ----------------------------------------------------------------------------- Adagrad
@njit(cache=True, error_model="numpy")
def adagrad(A, sizes, S, tag, stag, lr, lr_decay, eps, wd, maximize):
    """A columns: param, grad, sum."""
    T = tag.dtype.type
    one = T(1.0)
    f_eps, f_wd = T(eps), T(wd)
    for i in range(A.shape[0]):
        n = sizes[i]
        p = _vec(A[i, 0], n, tag)
        g = _vec(A[i, 1], n, tag)
        sm = _vec(A[i, 2], n, tag)
        st = _scalar(S[i], stag)
        st[0] = st[0] + stag.dtype.type(1.0)
        step = np.float64(st[0])
        f_nclr = T(-(lr / (1.0 + (step - 1.0) * lr_decay)))
        for j in range(np.uint64(n)):
            d = -g[j] if maximize else g[j]
            if wd != 0.0:
                d = d + f_wd * p[j]
            s = sm[j] + (one * d) * d
            sm[j] = s
            std = np.sqrt(s) + f_eps
            p[j] = p[j] + (f_nclr * d) / std


# ----------------------------------------------------------------------------- Adadelta
@njit(cache=True, error_model="numpy")
def adadelta(A, sizes, S, tag, stag, lr, rho, eps, wd, maximize):
    """A columns: param, grad, square_avg, acc_delta."""
    T = tag.dtype.type
    f_rho, f_1mr, f_eps, f_wd, f_nlr = T(rho), T(1.0 - rho), T(eps), T(wd), T(-lr)
    for i in range(A.shape[0]):
        n = sizes[i]
        p = _vec(A[i, 0], n, tag)
        g = _vec(A[i, 1], n, tag)
        sq = _vec(A[i, 2], n, tag)
        acc = _vec(A[i, 3], n, tag)
        st = _scalar(S[i], stag)
        st[0] = st[0] + stag.dtype.type(1.0)
        for j in range(np.uint64(n)):
            d = -g[j] if maximize else g[j]
            if wd != 0.0:
                d = d + f_wd * p[j]
            s = sq[j] * f_rho
            s = s + (f_1mr * d) * d
            sq[j] = s
            std = np.sqrt(s + f_eps)
            delta = np.sqrt(acc[j] + f_eps)
            delta = delta / std
            delta = delta * d
            a = acc[j] * f_rho
            a = a + (f_1mr * delta) * delta
            acc[j] = a
            p[j] = p[j] + f_nlr * delta


# ----------------------------------------------------------------------------- Adamax
@njit(cache=True, error_model="numpy")
def adamax(A, sizes, S, tag, stag, lr, beta1, beta2, eps, wd, maximize):
    """A columns: param, grad, exp_avg, exp_inf."""
    T = tag.dtype.type
    one = T(1.0)
    f_w1, f_b2, f_eps, f_wd = T(1.0 - beta1), T(beta2), T(eps), T(wd)
    for i in range(A.shape[0]):
        n = sizes[i]
        p = _vec(A[i, 0], n, tag)
        g = _vec(A[i, 1], n, tag)
        m = _vec(A[i, 2], n, tag)
        u = _vec(A[i, 3], n, tag)
        st = _scalar(S[i], stag)
        st[0] = st[0] + stag.dtype.type(1.0)
        step = np.float64(st[0])
        f_nclr = T(-(lr / (1.0 - beta1 ** step)))
        for j in range(np.uint64(n)):
            d = -g[j] if maximize else g[j]
            if wd != 0.0:
                d = d + f_wd * p[j]
            mj = _lerp(m[j], d, f_w1, one)
            m[j] = mj
            uj = _maximum(u[j] * f_b2, abs(d) + f_eps)
            u[j] = uj
            p[j] = p[j] + (f_nclr * mj) / uj


# ----------------------------------------------------------------------------- NAdam
@njit(cache=True, error_model="numpy")
def nadam(A, sizes, S, M, tag, stag, lr, beta1, beta2, eps, wd, momentum_decay, maximize,
          decoupled):
    """A columns: param, grad, exp_avg, exp_avg_sq. S: steps, M: mu_products."""
    T = tag.dtype.type
    one = T(1.0)
    f_w1, f_b2, f_1mb2, f_eps, f_wd = T(1.0 - beta1), T(beta2), T(1.0 - beta2), T(eps), T(wd)
    f_decay = T(1.0 - lr * wd)
    ST = stag.dtype.type
    for i in range(A.shape[0]):
        n = sizes[i]
        p = _vec(A[i, 0], n, tag)
        g = _vec(A[i, 1], n, tag)
        m = _vec(A[i, 2], n, tag)
        v = _vec(A[i, 3], n, tag)
        st = _scalar(S[i], stag)
        st[0] = st[0] + ST(1.0)
        step = np.float64(st[0])
        f_bc2 = T(1.0 - beta2 ** step)
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1.0) * momentum_decay)))
        mp = _scalar(M[i], stag)
        mp[0] = mp[0] * ST(mu)
        mpv = np.float64(mp[0])
        mpn = mpv * mu_next
        f_c1 = T(-lr * (1.0 - mu) / (1.0 - mpv))
        f_c2 = T((-lr * mu_next) / (1.0 - mpn))
        for j in range(np.uint64(n)):
            d = -g[j] if maximize else g[j]
            if wd != 0.0:
                if decoupled:
                    p[j] = p[j] * f_decay
                else:
                    d = d + f_wd * p[j]
            mj = _lerp(m[j], d, f_w1, one)
            m[j] = mj
            vj = v[j] * f_b2
            vj = vj + (f_1mb2 * d) * d
            v[j] = vj
            den = np.sqrt(vj / f_bc2) + f_eps
            pj = p[j] + (f_c1 * d) / den
            p[j] = pj + (f_c2 * mj) / den


# ----------------------------------------------------------------------------- RAdam
@njit(cache=True, error_model="numpy")
def radam(A, sizes, S, tag, stag, lr, beta1, beta2, eps, wd, maximize, decoupled):
    """A columns: param, grad, exp_avg, exp_avg_sq."""
    T = tag.dtype.type
    one = T(1.0)
    f_w1, f_b2, f_1mb2, f_eps, f_wd, f_lr = (T(1.0 - beta1), T(beta2), T(1.0 - beta2), T(eps),
                                             T(wd), T(lr))
    f_decay = T(1.0 - lr * wd)
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    for i in range(A.shape[0]):
        n = sizes[i]
        p = _vec(A[i, 0], n, tag)
        g = _vec(A[i, 1], n, tag)
        m = _vec(A[i, 2], n, tag)
        v = _vec(A[i, 3], n, tag)
        st = _scalar(S[i], stag)
        st[0] = st[0] + stag.dtype.type(1.0)
        step = np.float64(st[0])
        bc1 = 1.0 - beta1 ** step
        bc2 = 1.0 - beta2 ** step
        f_bc1 = T(bc1)
        rho_t = rho_inf - 2.0 * step * (beta2 ** step) / bc2
        rect = rho_t > 5.0
        f_rect = T(0.0)
        f_bc2s = T(0.0)
        if rect:
            f_rect = T(((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                        / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)) ** 0.5)
            f_bc2s = T(bc2 ** 0.5)
        for j in range(np.uint64(n)):
            d = -g[j] if maximize else g[j]
            if wd != 0.0:
                if decoupled:
                    p[j] = p[j] * f_decay
                else:
                    d = d + f_wd * p[j]
            mj = _lerp(m[j], d, f_w1, one)
            m[j] = mj
            vj = v[j] * f_b2
            vj = vj + (f_1mb2 * d) * d
            v[j] = vj
            u = (mj / f_bc1) * f_lr
            if rect:
                u = u * (f_bc2s / (np.sqrt(vj) + f_eps))
                u = u * f_rect
            p[j] = p[j] + (-one) * u


# ----------------------------------------------------------------------------- ASGD
@njit(cache=True, error_model="numpy")
def asgd(A, sizes, S, E, MU, tag, stag, lr, lambd, alpha, t0, wd, maximize):
    """A columns: param, grad, ax. S: steps, E: etas, MU: mus (state scalars)."""
    T = tag.dtype.type
    ST = stag.dtype.type
    f_wd = T(wd)
    for i in range(A.shape[0]):
        n = sizes[i]
        p = _vec(A[i, 0], n, tag)
        g = _vec(A[i, 1], n, tag)
        ax = _vec(A[i, 2], n, tag)
        st = _scalar(S[i], stag)
        st[0] = st[0] + ST(1.0)
        eta = _scalar(E[i], stag)
        mu = _scalar(MU[i], stag)
        eta_v = np.float64(eta[0])
        mu_v = mu[0]
        f_dec = T(1.0 - lambd * eta_v)
        f_neta = T(-eta_v)
        f_mu = T(mu_v)
        for j in range(np.uint64(n)):
            d = -g[j] if maximize else g[j]
            if wd != 0.0:
                d = d + f_wd * p[j]
            pj = p[j] * f_dec
            pj = pj + f_neta * d
            p[j] = pj
            if mu_v != ST(1.0):
                ax[j] = ax[j] + (pj - ax[j]) * f_mu
            else:
                ax[j] = pj
        step = np.float64(st[0])
        eta[0] = ST(lr / ((1.0 + lambd * lr * step) ** alpha))
        mu[0] = ST(1.0 / max(1.0, step - t0))


# ----------------------------------------------------------------------------- Rprop
@njit(cache=True, error_model="numpy")
def rprop(A, sizes, S, tag, stag, etaminus, etaplus, step_min, step_max, maximize):
    """A columns: param, grad, prev, step_size."""
    T = tag.dtype.type
    zero, one = T(0.0), T(1.0)
    f_em, f_ep, f_min, f_max = T(etaminus), T(etaplus), T(step_min), T(step_max)
    for i in range(A.shape[0]):
        n = sizes[i]
        p = _vec(A[i, 0], n, tag)
        g = _vec(A[i, 1], n, tag)
        prev = _vec(A[i, 2], n, tag)
        ss = _vec(A[i, 3], n, tag)
        st = _scalar(S[i], stag)
        st[0] = st[0] + stag.dtype.type(1.0)
        for j in range(np.uint64(n)):
            d = -g[j] if maximize else g[j]
            s = _sign(d * prev[j], zero, one)
            if s > zero:
                s = f_ep
            elif s < zero:
                s = f_em
            elif s == zero:
                s = one
            sj = ss[j] * s
            # clamp_(min, max): NaN stays NaN
            if sj < f_min:
                sj = f_min
            if sj > f_max:
                sj = f_max
            ss[j] = sj
            if s == f_em:
                d = zero
            p[j] = p[j] + ((-one) * _sign(d, zero, one)) * sj
            prev[j] = d
