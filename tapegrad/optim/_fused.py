"""Glue between the optimizers and their Numba kernels (``_kernels.py``).

``run(cache, kernel, params, buffers, scalars, extra, *hyper)`` groups the parameters by dtype
and, for each dtype, calls the kernel once with the addresses of every parameter, gradient and
state buffer (an (n, k) int64 array), their sizes, and the addresses of the 0-dim state scalars.
Buffers are updated in place; a non-contiguous one goes through a contiguous copy written back
after the call. Each updated parameter's version counter is bumped, as torch's in-place
optimizer ops do (a graph that saved a parameter before the step then refuses to backpropagate
through it).

The address table of a group is cached (``cache``, one dict per optimizer): from one step to
the next only the gradients' addresses are usually new, so a step re-reads those and checks
that every other array is still the same object.

The two accessors below are the only places that reach into tapegrad's Tensor internals.
"""
import ctypes

import numpy as np

import tapegrad as _tg

_from_buffer = ctypes.c_char.from_buffer
_addressof = ctypes.addressof
_TAGS = {}


def array(t):
    """The ndarray holding ``t``'s values (shared memory, writable)."""
    return t._arr()


from .._record import _bump as bump               # count an in-place write of a tensor


def _address(a):
    try:
        return _addressof(_from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.__array_interface__["data"][0]


def tag(dtype):
    t = _TAGS.get(dtype)
    if t is None:
        t = _TAGS[dtype] = np.zeros(1, dtype)
    return t


def _usable(a, npdt):
    return a.dtype == npdt and a.flags.c_contiguous and a.flags.writeable


class _Plan:
    """The address table of one dtype partition of a group, and the arrays it points at."""
    __slots__ = ("params", "arrays", "scalars", "A", "S", "sizes", "npdt", "stag")


def _build(kernel, params, buffers, scalars, npdt):
    n = len(params)
    k = 2 + len(buffers[0])
    nsc = len(scalars[0]) if scalars else 0
    plan = _Plan()
    plan.params, plan.npdt = params, npdt
    plan.A = np.zeros((n, k), np.int64)
    plan.S = np.zeros((nsc, n), np.int64)
    plan.sizes = np.empty(n, np.int64)
    plan.arrays, plan.scalars = [], []
    plan.stag = None
    for r, p in enumerate(params):
        row = [array(p)] + [None if t is None else array(t) for t in buffers[r]]
        for c, a in enumerate(row):
            if a is not None:
                if not _usable(a, npdt):
                    return None
                plan.A[r, 0 if c == 0 else c + 1] = _address(a)
        plan.arrays.append(row)
        plan.sizes[r] = row[0].size
        srow = []
        for s in range(nsc):
            sa = array(scalars[r][s])
            if plan.stag is None:
                plan.stag = tag(sa.dtype)
            if sa.dtype != plan.stag.dtype or not sa.flags.writeable:
                return None
            plan.S[s, r] = _address(sa)
            srow.append(sa)
        plan.scalars.append(srow)
    if plan.stag is None:
        plan.stag = tag(np.float32)
    return plan


def _valid(plan, params, buffers, scalars):
    if len(plan.params) != len(params):
        return False
    for r, p in enumerate(params):
        if plan.params[r] is not p:
            return False
        row = plan.arrays[r]
        if array(p) is not row[0]:
            return False
        for c, t in enumerate(buffers[r]):
            if (t is None) != (row[c + 1] is None) or (t is not None and array(t) is not row[c + 1]):
                return False
        if scalars:
            for s, t in enumerate(scalars[r]):
                if array(t) is not plan.scalars[r][s]:
                    return False
    return True


def run(cache, kernel, params, buffers, scalars, extra, *hyper):
    """Call ``kernel(A, sizes, [S...], [extra], tag, [stag], *hyper)`` once per dtype.

    params: the parameters (each with a gradient); buffers: per parameter, the list of state
    tensors (None for an unused slot); scalars: per parameter, the list of 0-dim state tensors
    (step ...); extra: per parameter an int passed as an int64 array (or None)."""
    by_dtype = {}
    for i, p in enumerate(params):
        by_dtype.setdefault(p.dtype, []).append(i)
    for dt, idx in by_dtype.items():
        npdt = np.dtype(dt.np) if hasattr(dt, "np") else array(params[idx[0]]).dtype
        if npdt not in (np.float32, np.float64):
            raise TypeError(f"{kernel.__name__}: tapegrad's optimizers update float32 and "
                            f"float64 parameters, got {dt}")
        ps = [params[i] for i in idx]
        bs = [buffers[i] for i in idx]
        sc = [scalars[i] for i in idx] if scalars else None
        key = (kernel.__name__, dt)
        plan = cache.get(key) if cache is not None else None
        if plan is None or not _valid(plan, ps, bs, sc):
            plan = _build(kernel, ps, bs, sc, npdt)
            if plan is None:                      # an unusual layout: copies around the call
                _run_copied(kernel, ps, bs, sc, None if extra is None else
                            [extra[i] for i in idx], npdt, hyper)
                continue
            if cache is not None:
                cache[key] = plan
        A = plan.A
        grads = []
        for r, p in enumerate(ps):
            g = array(p.grad)
            if not (g.dtype == npdt and g.flags.c_contiguous):
                g = np.ascontiguousarray(g, npdt)
            grads.append(g)
            A[r, 1] = _address(g)
        _call(kernel, plan, extra, idx, hyper)
        for p in ps:
            bump(p)


def _call(kernel, plan, extra, idx, hyper):
    nsc = plan.S.shape[0]
    args = [plan.A, plan.sizes] + [plan.S[s] for s in range(nsc)]
    if extra is not None:
        args.append(np.asarray([extra[i] for i in idx], np.int64))
    if nsc:
        kernel(*args, tag(plan.npdt), plan.stag, *hyper)
    else:
        kernel(*args, tag(plan.npdt), *hyper)


def _run_copied(kernel, ps, bs, sc, extra, npdt, hyper):
    """The kernel on contiguous copies of non-contiguous (or read-only) arrays, written back."""
    n = len(ps)
    k = 2 + len(bs[0])
    nsc = len(sc[0]) if sc else 0
    A = np.zeros((n, k), np.int64)
    S = np.zeros((nsc, n), np.int64)
    sizes = np.empty(n, np.int64)
    keep, writeback = [], []
    stag = None
    for r, p in enumerate(ps):
        cols = [p, p.grad] + list(bs[r])
        for c, t in enumerate(cols):
            if t is None:
                continue
            a = array(t)
            b = a if _usable(a, npdt) else np.array(a, npdt, copy=True, order="C")
            if b is not a and c != 1:
                writeback.append((a, b))
            keep.append(b)
            A[r, c] = _address(b)
        sizes[r] = array(p).size
        for s in range(nsc):
            sa = array(sc[r][s])
            if stag is None:
                stag = tag(sa.dtype)
            sb = sa if (sa.dtype == stag.dtype and sa.flags.writeable) else \
                np.array(sa, stag.dtype)
            if sb is not sa:
                writeback.append((sa, sb))
            keep.append(sb)
            S[s, r] = _address(sb)
    if stag is None:
        stag = tag(np.float32)
    args = [A, sizes] + [S[s] for s in range(nsc)]
    if extra is not None:
        args.append(np.asarray(extra, np.int64))
    if nsc:
        kernel(*args, tag(npdt), stag, *hyper)
    else:
        kernel(*args, tag(npdt), *hyper)
    for a, b in writeback:
        a[...] = b
    for p in ps:
        bump(p)
