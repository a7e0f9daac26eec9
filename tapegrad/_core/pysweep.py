"""The sweeps without compiled code: numpy twins of the compiled interpreter's entry points.

``reverse``, ``forward``, ``pforward``, ``preverse`` (``_compiled/_interp.py``) and ``run``
(``_compiled/_driver.py``) with the same arguments, return values and effects, computed with
numpy one tape entry at a time. A process uses them while the compiled code is not in the
cache yet (a fresh installation: ``_compiled/_cache.py``); the compiled code takes over by
itself once the background compile has filled the cache (``engine``), and a caller that kept
a twin is forwarded to the compiled function from then on.

Every entry is evaluated as the kernels evaluate it (``_compiled/kernels.py``): the row's
numpy reference forward (``Op.ref``, the eager forward) and numpy VJP (``Op.np_vjp``, the one
the sweep already uses for big nodes); sums, index maps and broadcast operands' gradients
accumulated in float64 where the kernels do. Results agree with the compiled sweeps to
rounding: bit for bit on the arithmetic and index rows, within a few ulp where a
transcendental function or a summation order differs (numpy's SIMD ``sin`` against libm's,
a pairwise sum against a sequential one); ``tests/test_pysweep.py`` checks every row.

One data layout serves all of them: a node's values or cotangents are a (rows, B) view of a
flat store (element i of the node at offset o in lanes ``(o + i) * B``), B = 1 for the
single-point sweeps, the batch's lane count for ``run``. Entries cost ~5-20 us each here
(against ~50 ns compiled): fine for the first results of a fresh installation, which is
what they are for.
"""
import ctypes

import numpy as np

from .._compiled import _cache
from .._schema import (CI, F_ALIAS, F_BIG, F_FREED, F_NOGA, F_NOGB, F_NPFWD, F_SAVES, FL, IA,
                       IB, K, NDT, NK, NOFF, NPROD, NSIZE, OP, OUT, P0, P1, SA, SB, SY)
from ..ops import (BINARY, CAST, INDEX, MM, OPCODE, OPS, P_0, P_1, P_A, P_B, P_KIND, P_M, P_OP,
                   P_Y, PK, PYFUNC, SUM, UNARY, KIND_CODES)

_DT = (np.dtype(np.float32), np.dtype(np.float64))
_CT = {_DT[0]: ctypes.c_float, _DT[1]: ctypes.c_double, np.dtype(np.int64): ctypes.c_int64}
_TWO = [op.kind in (BINARY, MM) for op in OPS]    # rows whose VJP reaches operand b too
_CODE_KIND = {v: k for k, v in KIND_CODES.items()}
_CAST = OPCODE["cast"]
_PYFUNC = OPCODE["pyfunc"]
_F64 = np.float64


def _compiled():
    from .._compiled import _interp   # deferred: Numba dispatchers (a forwarded caller only)
    return _interp


def _at(addr, m, dt):
    """m elements of dtype dt at address ``addr`` (a view of memory the caller keeps alive)."""
    if m <= 0:
        return np.empty(0, dt)
    return np.frombuffer((_CT[dt] * m).from_address(addr), dt)


def _operand(live, X, V, XA, N, node, s, m):
    """An operand's m values as the compiled ``kernels.operand`` finds them: the node's live
    value during a replay, else the saved value (s >= 0 in V, s <= -2 a referenced array;
    None when nothing was saved, s == -1: the VJP does not read it). A (m, 1) view."""
    if live and node >= 0:
        o = N[node * NK + NOFF]
        return X[o:o + m].reshape(m, 1)
    if s == -1:
        return None
    if s <= -2:
        return _at(int(XA[2 * (-2 - s)]), m, V.dtype).reshape(m, 1)
    return V[s:s + m].reshape(m, 1)


def _lanes(S, o, n, B):
    """The (n, B) lanes of a node at offset o of store S."""
    return S[o * B:(o + n) * B].reshape(n, B)


def _add(dst, v):
    """dst += v, computed in the wider dtype and rounded into dst (a kernel's ``+=``)."""
    np.add(dst, v, out=dst, casting="unsafe")


# ------------------------------------------------------------------ one entry, lane by lane
def _by_row(f, x, c, B):
    """A row-wise unary function (softmax: rows of int(c) elements) of lanes x (n, B): each
    lane's rows in a row of their own."""
    n = x.shape[0]
    return np.asarray(f(np.ascontiguousarray(x.T).reshape(-1))).reshape(B, n).T


def fwd_unary(op, x, c, y):
    if op.rows:
        y[...] = _by_row(lambda v: op.ref(v, c), x, c, y.shape[1])
    else:
        y.reshape(-1)[...] = op.ref(x.reshape(-1), c)


def vjp_unary(op, g, x, y, c, gx):
    """gx += the row's VJP of cotangent g (x, y: the saved input / output, or None)."""
    n, B = g.shape
    out = np.empty(n * B, gx.dtype)
    if op.rows:
        def flat(v):
            return None if v is None else np.ascontiguousarray(v.T).reshape(-1)
        op.np_vjp(flat(g), flat(x), flat(y), c, out)
        _add(gx, out.reshape(B, n).T)
        return
    op.np_vjp(g.reshape(-1), None if x is None else x.reshape(-1),
              None if y is None else y.reshape(-1), c, out)
    _add(gx, out.reshape(n, B))


def fwd_binary(op, a, b, y):
    y[...] = op.ref(a, b)


def _into(dst, v):
    """dst += v, v summed over its rows in float64 first when dst is a broadcast operand's
    single row (the kernels' ``_gsum`` / ``_gdot``)."""
    if dst.shape[0] != v.shape[0]:
        v = v.sum(axis=0, dtype=_F64, keepdims=True)
    _add(dst, v)


def vjp_binary(op, g, a, b, y, ga, gb):
    """The wanted gradients (ga / gb: the operands' cotangent lanes, None when not wanted)."""
    if op.vjp_sign is not None:            # add / sub: +-g
        for dst, sign in ((ga, op.vjp_sign[0]), (gb, op.vjp_sign[1])):
            if dst is not None:
                _into(dst, g if sign > 0 else -g)
        return
    ta = None if ga is None else np.empty(g.shape, g.dtype)
    tb = None if gb is None else np.empty(g.shape, g.dtype)
    op.np_vjp(g, a, b, y, ta, tb)
    if ga is not None:
        _into(ga, ta)
    if gb is not None:
        _into(gb, tb)


def fwd_sum(x, c, y):
    y[...] = x.sum(axis=0, dtype=_F64, keepdims=True) * c


def vjp_sum(g, c, gx):
    _add(gx, g * _F64(c))


def fwd_index(name, n, m, x, I, io, c, y):
    """The index row ``name``'s forward (n, m, io as the kernels take them: see kernels.py)
    from operand lanes x into output lanes y."""
    if name == "gather":
        y[:n] = x[I[io:io + n]]
    elif name == "segsum":
        acc = np.zeros((m, x.shape[1]), _F64)
        np.add.at(acc, I[io:io + n], x[:n])
        y[:m] = acc * c
    elif name == "copy":
        y[:m] = x[:m]
    elif name == "slice":
        y[:n] = x[io:io + n]
    elif name == "embed":
        y[:m] = 0
        y[io:io + n] = x[:n]
    elif name == "transpose":
        r = io
        cc = n // r if r > 0 else 0
        y[:r * cc] = x[:r * cc].reshape(r, cc, -1).transpose(1, 0, 2).reshape(r * cc, -1)
    else:
        raise AssertionError("no index row %r" % name)


def vjp_index(name, n, m, g, I, io, c, gx, batched=False):
    """gx += the index row's VJP of g (n, m, io as the kernels take them)."""
    if name == "gather":
        idx = I[io:io + n]
        if n <= m:
            np.add.at(gx, idx, g[:n])
        elif m == 1 and not batched:
            _add(gx[:1], g[:n].sum(axis=0, dtype=_F64, keepdims=True))
        else:
            acc = np.zeros((m, g.shape[1]), _F64)
            np.add.at(acc, idx, g[:n])
            _add(gx[:m], acc)
    elif name == "segsum":
        _add(gx[:n], _F64(c) * g[I[io:io + n]])
    elif name == "copy":
        _add(gx[:m], g[:m])
    elif name == "slice":
        _add(gx[io:io + n], g[:n])
    elif name == "embed":
        _add(gx[:n], g[io:io + n])
    elif name == "transpose":
        r = io
        cc = n // r if r > 0 else 0
        _add(gx[:r * cc], g[:r * cc].reshape(cc, r, -1).transpose(1, 0, 2).reshape(r * cc, -1))
    else:
        raise AssertionError("no index row %r" % name)


def _mat(v, r, c):
    """Lanes (r * c, B) as B matrices (B, r, c)."""
    return v.reshape(r, c, -1).transpose(2, 0, 1)


def _unmat(v):
    """(B, r, c) matrices back to lanes (r * c, B)."""
    return v.transpose(1, 2, 0).reshape(-1, v.shape[0])


def fwd_mm(m, k, n, a, b, y):
    y[:m * n] = _unmat(np.matmul(_mat(a, m, k), _mat(b, k, n)))


def vjp_mm(m, k, n, g, a, b, ga, gb):
    G = _mat(g, m, n)
    if ga is not None:
        _add(ga[:m * k], _unmat(np.matmul(G, _mat(b, k, n).transpose(0, 2, 1))))
    if gb is not None:
        _add(gb[:k * n], _unmat(np.matmul(_mat(a, m, k).transpose(0, 2, 1), G)))


def _mark(N, nreach, ereach, node):
    if node >= 0:
        nreach[node] = 1
        p = N[node * NK + NPROD]
        if p >= 0:
            ereach[p] = 1


# ------------------------------------------------------------------ the single-point sweeps
def reverse(E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, live, nreach, ereach, bad, start,
            stop):
    """``_interp.reverse``, uncompiled (same arguments, effects and return value)."""
    if _cache.ON or _cache.poll():
        return _compiled().reverse(E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, live, nreach,
                                   ereach, bad, start, stop)
    stores = ((V4, XA4, A4, X4), (V8, XA8, A8, X8))
    with np.errstate(all="ignore"):
        for e in range(start, stop - 1, -1):
            if ereach[e] == 0:
                continue
            row = E[e * K:(e + 1) * K].tolist()
            op, fl = row[OP], row[FL]
            if bad[e] != 0:
                return 2, e
            if fl & F_FREED and fl & F_SAVES:
                return 3, e
            if op == _PYFUNC:
                return 1, e
            if fl & F_BIG:
                return 4, e
            if fl & F_NOGA and fl & F_NOGB:
                continue
            _rev_entry(row, N, stores, I, C, live)
            _mark(N, nreach, ereach, row[IA])
            if _TWO[op]:
                _mark(N, nreach, ereach, row[IB])
    return 0, -1


def _rev_entry(row, N, stores, I, C, live):
    op, fl, out, a, b = row[OP], row[FL], row[OUT], row[IA], row[IB]
    c = float(C[row[CI]]) if row[CI] >= 0 else 0.0
    go, n, dt = (int(v) for v in N[out * NK:out * NK + 3])
    V, XA, A, X = stores[dt]
    g = A[go:go + n].reshape(n, 1)
    if op == _CAST:
        oa, da = int(N[a * NK + NOFF]), int(N[a * NK + NDT])
        _add(stores[da][2][oa:oa + n].reshape(n, 1), g)
        return
    row_op = OPS[op]
    kind = row_op.kind

    def grad(node, size, wanted):
        if not wanted or node < 0:
            return None
        o = int(N[node * NK + NOFF])
        return A[o:o + size].reshape(size, 1)
    if kind == UNARY:
        x = _operand(live, X, V, XA, N, a, row[SA], n)
        y = _operand(live, X, V, XA, N, out, row[SY], n)
        vjp_unary(row_op, g, x, y, c, grad(a, n, True))
    elif kind == BINARY:
        la, lb = (n - 1) * row[P0] + 1, (n - 1) * row[P1] + 1
        va = _operand(live, X, V, XA, N, a, row[SA], la)
        vb = _operand(live, X, V, XA, N, b, row[SB], lb)
        y = _operand(live, X, V, XA, N, out, row[SY], n)
        vjp_binary(row_op, g, va, vb, y, grad(a, la, not fl & F_NOGA),
                   grad(b, lb, not fl & F_NOGB))
    elif kind == SUM:
        m = int(N[a * NK + NSIZE])
        vjp_sum(g, c, grad(a, m, True))
    elif kind == INDEX:
        m = int(N[a * NK + NSIZE])
        vjp_index(row_op.name, row[P1], m, g, I, row[P0], c, grad(a, m, True))
    elif kind == MM:
        m, k = row[P0], row[P1]
        nn = n // m
        va = _operand(live, X, V, XA, N, a, row[SA], m * k)
        vb = _operand(live, X, V, XA, N, b, row[SB], k * nn)
        vjp_mm(m, k, nn, g, va, vb, grad(a, m * k, not fl & F_NOGA),
               grad(b, k * nn, not fl & F_NOGB))
    else:
        raise AssertionError("no compiled VJP for kind %s" % kind)


def forward(E, N, V4, V8, XA4, XA8, I, C, X4, X8, start, stop):
    """``_interp.forward``, uncompiled."""
    if _cache.ON or _cache.poll():
        return _compiled().forward(E, N, V4, V8, XA4, XA8, I, C, X4, X8, start, stop)
    stores = ((V4, XA4, X4), (V8, XA8, X8))
    with np.errstate(all="ignore"):
        for e in range(start, stop):
            row = E[e * K:(e + 1) * K].tolist()
            if row[OP] == _PYFUNC or row[FL] & (F_BIG | F_NPFWD):
                return e
            _fwd_entry(row, N, stores, I, C)
    return -1


def _fwd_entry(row, N, stores, I, C):
    op, out, a, b = row[OP], row[OUT], row[IA], row[IB]
    c = float(C[row[CI]]) if row[CI] >= 0 else 0.0
    yo, n, dt = (int(v) for v in N[out * NK:out * NK + 3])
    V, XA, X = stores[dt]
    y = X[yo:yo + n].reshape(n, 1)
    if op == _CAST:
        oa, da = int(N[a * NK + NOFF]), int(N[a * NK + NDT])
        y[...] = stores[da][2][oa:oa + n].reshape(n, 1)
        return
    row_op = OPS[op]
    kind = row_op.kind
    if kind == UNARY:
        fwd_unary(row_op, _operand(True, X, V, XA, N, a, row[SA], n), c, y)
    elif kind == BINARY:
        la, lb = (n - 1) * row[P0] + 1, (n - 1) * row[P1] + 1
        fwd_binary(row_op, _operand(True, X, V, XA, N, a, row[SA], la),
                   _operand(True, X, V, XA, N, b, row[SB], lb), y)
    elif kind == SUM:
        oa, m = int(N[a * NK + NOFF]), int(N[a * NK + NSIZE])
        fwd_sum(X[oa:oa + m].reshape(m, 1), c, y)
    elif kind == INDEX:
        oa, m = int(N[a * NK + NOFF]), int(N[a * NK + NSIZE])
        fwd_index(row_op.name, row[P1], n, X[oa:oa + m].reshape(m, 1), I, row[P0], c, y)
    elif kind == MM:
        m, k = row[P0], row[P1]
        fwd_mm(m, k, n // m, _operand(True, X, V, XA, N, a, row[SA], m * k),
               _operand(True, X, V, XA, N, b, row[SB], k * (n // m)), y)
    else:
        raise AssertionError("no compiled forward for kind %s" % kind)


# ------------------------------------------------------------------ the scalar-plan sweeps
def pforward(D, Dc, I, X, start, stop):
    """``_interp.pforward``, uncompiled (a scalar plan: ``ops.PK`` int64 per entry)."""
    if _cache.ON or _cache.poll():
        return _compiled().pforward(D, Dc, I, X, start, stop)
    with np.errstate(all="ignore"):
        for e in range(start, stop):
            op, kind, yo, ao, bo, _, p0, p1, pm = D[e * PK:(e + 1) * PK].tolist()
            row_op, c = OPS[op], float(Dc[e])
            kind = _CODE_KIND[kind]
            y = X[yo:yo + 1].reshape(1, 1)
            if kind == UNARY:
                fwd_unary(row_op, X[ao:ao + 1].reshape(1, 1), c, y)
            elif kind == BINARY:
                fwd_binary(row_op, X[ao:ao + 1].reshape(1, 1), X[bo:bo + 1].reshape(1, 1), y)
            elif kind == SUM:
                fwd_sum(X[ao:ao + pm].reshape(pm, 1), c, y)
            else:
                fwd_index(row_op.name, p1, 1, X[ao:ao + pm].reshape(pm, 1), I, p0, c, y)


def preverse(D, Dc, I, X, A, R):
    """``_interp.preverse``, uncompiled."""
    if _cache.ON or _cache.poll():
        return _compiled().preverse(D, Dc, I, X, A, R)
    with np.errstate(all="ignore"):
        for e in R.tolist():
            op, kind, yo, ao, bo, _, p0, p1, pm = D[e * PK:(e + 1) * PK].tolist()
            row_op, c = OPS[op], float(Dc[e])
            kind = _CODE_KIND[kind]
            g = A[yo:yo + 1].reshape(1, 1)
            if kind == UNARY:
                vjp_unary(row_op, g, X[ao:ao + 1].reshape(1, 1), X[yo:yo + 1].reshape(1, 1), c,
                          A[ao:ao + 1].reshape(1, 1))
            elif kind == BINARY:
                vjp_binary(row_op, g, X[ao:ao + 1].reshape(1, 1), X[bo:bo + 1].reshape(1, 1),
                           X[yo:yo + 1].reshape(1, 1),
                           A[ao:ao + 1].reshape(1, 1) if p0 & 1 else None,
                           A[bo:bo + 1].reshape(1, 1) if p0 & 2 else None)
            elif kind == SUM:
                vjp_sum(g, c, A[ao:ao + pm].reshape(pm, 1))
            else:
                vjp_index(row_op.name, p1, pm, g, I, p0, c, A[ao:ao + pm].reshape(pm, 1))


# ------------------------------------------------------------------ the batched driver
_ADDR, _NODE, _NEL, _PSTR, _SLOT = range(5)
_LANE_CAP = 4096          # points per chunk (lanes) in ``run``


def run(E, N, V4, V8, XA4, XA8, I, C, n4, n8, ne, B, P, G, INS, OUTS, CTS, GRADS, rev_start,
        nreal):
    """``_driver.run``, uncompiled: the tape on P points, chunk by chunk (its own chunk size:
    B and G only shape the compiled driver's work), each entry once per chunk over the
    chunk's lanes with numpy."""
    if _cache.ON or _cache.poll():
        from .._compiled import _driver    # deferred: Numba dispatchers
        _driver.ready()
        return _driver.run(E, N, V4, V8, XA4, XA8, I, C, n4, n8, ne, B, P, G, INS, OUTS, CTS,
                           GRADS, rev_start, nreal)
    nn = len(N) // NK

    def rows(T, written=False):
        """(node, n, point stride, slot, (P, n) view or the (n,) row every point shares);
        the driver writes outputs and gradients as (P, n) arrays whatever their stride."""
        out = []
        for r in T.tolist():
            dt, n, ps = _DT[r[_SLOT]], r[_NEL], r[_PSTR]
            if written:
                ps = n
            src = _at(r[_ADDR], (P - 1) * ps + n if ps else n, dt)
            if ps:
                src = np.lib.stride_tricks.as_strided(src, (P, n), (ps * dt.itemsize,
                                                                    dt.itemsize))
            out.append((r[_NODE], n, ps, r[_SLOT], src))
        return out

    def point_rows(src, n, ps, p0, nb):         # (n, nb): element-major, lanes last
        if ps == 0:
            return np.broadcast_to(src[:n].reshape(n, 1), (n, nb))
        return src[p0:p0 + nb].T

    ins, outs, cts, grads = rows(INS), rows(OUTS, True), rows(CTS), rows(GRADS, True)
    with np.errstate(all="ignore"):
        for p0 in range(0, P, _LANE_CAP):
            nb = min(_LANE_CAP, P - p0)
            X = (np.zeros(max(n4, 1) * nb, np.float32), np.zeros(max(n8, 1) * nb, np.float64))
            for node, n, ps, slot, src in ins:
                _lanes(X[slot], int(N[node * NK + NOFF]), n, nb)[...] = point_rows(
                    src, n, ps, p0, nb)
            _bforward(E, N, I, C, X, nb, 0, ne)
            for node, n, ps, slot, dst in outs:
                dst[p0:p0 + nb] = _lanes(
                    X[slot], int(N[node * NK + NOFF]), n, nb).T
            if rev_start < 0:
                continue
            A = (np.zeros(max(n4, 1) * nb, np.float32), np.zeros(max(n8, 1) * nb, np.float64))
            nreach = np.zeros(nn + 1, np.uint8)
            ereach = np.zeros(ne + 1, np.uint8)
            for node, n, ps, slot, src in cts:
                _add(_lanes(A[slot], int(N[node * NK + NOFF]), n, nb),
                     point_rows(src, n, ps, p0, nb))
                _mark(N, nreach, ereach, node)
            _breverse(E, N, I, C, X, A, nb, nreach, ereach, rev_start, 0, nreal)
            for node, n, ps, slot, dst in grads:
                dst[p0:p0 + nb] = _lanes(
                    A[slot], int(N[node * NK + NOFF]), n, nb).T


def _bforward(E, N, I, C, X, B, start, stop):
    """``_interp.bforward`` on lanes (every operand a node; F_ALIAS slices share lanes)."""
    for e in range(start, stop):
        row = E[e * K:(e + 1) * K].tolist()
        if row[FL] & F_ALIAS:
            continue
        op, out, a, b = row[OP], row[OUT], row[IA], row[IB]
        c = float(C[row[CI]]) if row[CI] >= 0 else 0.0
        yo, n, dt = (int(v) for v in N[out * NK:out * NK + 3])
        y = _lanes(X[dt], yo, n, B)
        oa = int(N[a * NK + NOFF]) if a >= 0 else 0
        if op == _CAST:
            y[...] = _lanes(X[int(N[a * NK + NDT])], oa, n, B)
            continue
        row_op = OPS[op]
        kind = row_op.kind
        if kind == UNARY:
            fwd_unary(row_op, _lanes(X[dt], oa, n, B), c, y)
        elif kind == BINARY:
            la, lb = (n if row[P0] else 1), (n if row[P1] else 1)
            fwd_binary(row_op, _lanes(X[dt], oa, la, B),
                       _lanes(X[dt], int(N[b * NK + NOFF]), lb, B), y)
        elif kind == SUM:
            fwd_sum(_lanes(X[dt], oa, int(N[a * NK + NSIZE]), B), c, y)
        elif kind == INDEX:
            fwd_index(row_op.name, row[P1], n, _lanes(X[dt], oa, int(N[a * NK + NSIZE]), B), I,
                      row[P0], c, y)
        else:                                   # MM
            m, k = row[P0], row[P1]
            fwd_mm(m, k, n // m, _lanes(X[dt], oa, m * k, B),
                   _lanes(X[dt], int(N[b * NK + NOFF]), k * (n // m), B), y)


def _breverse(E, N, I, C, X, A, B, nreach, ereach, start, stop, nreal):
    """``_interp.breverse`` on lanes (constants' lanes, nodes from nreal on, get no
    gradient; a node's adjoint lanes are cleared once its producer's VJP has run)."""
    for e in range(start, stop - 1, -1):
        if ereach[e] == 0:
            continue
        row = E[e * K:(e + 1) * K].tolist()
        if row[FL] & F_ALIAS:
            _mark(N, nreach, ereach, row[IA])
            continue
        op, out, a, b = row[OP], row[OUT], row[IA], row[IB]
        c = float(C[row[CI]]) if row[CI] >= 0 else 0.0
        go, n, dt = (int(v) for v in N[out * NK:out * NK + 3])
        g = _lanes(A[dt], go, n, B)
        oa = int(N[a * NK + NOFF]) if a >= 0 else 0
        if op == _CAST:
            _add(_lanes(A[int(N[a * NK + NDT])], oa, n, B), g)
        else:
            row_op = OPS[op]
            kind = row_op.kind
            if kind == UNARY:
                vjp_unary(row_op, g, _lanes(X[dt], oa, n, B), _lanes(X[dt], go, n, B), c,
                          _lanes(A[dt], oa, n, B))
            elif kind == BINARY:
                la, lb = (n if row[P0] else 1), (n if row[P1] else 1)
                ob = int(N[b * NK + NOFF])
                vjp_binary(row_op, g, _lanes(X[dt], oa, la, B), _lanes(X[dt], ob, lb, B),
                           _lanes(X[dt], go, n, B),
                           _lanes(A[dt], oa, la, B) if a < nreal else None,
                           _lanes(A[dt], ob, lb, B) if b < nreal else None)
            elif kind == SUM:
                vjp_sum(g, c, _lanes(A[dt], oa, int(N[a * NK + NSIZE]), B))
            elif kind == INDEX:
                m = int(N[a * NK + NSIZE])
                vjp_index(row_op.name, row[P1], m, g, I, row[P0], c, _lanes(A[dt], oa, m, B),
                          batched=True)
            else:                               # MM
                m, k = row[P0], row[P1]
                ob = int(N[b * NK + NOFF])
                vjp_mm(m, k, n // m, g, _lanes(X[dt], oa, m * k, B),
                       _lanes(X[dt], ob, k * (n // m), B), _lanes(A[dt], oa, m * k, B),
                       _lanes(A[dt], ob, k * (n // m), B))
        _mark(N, nreach, ereach, a)
        if _TWO[op]:
            _mark(N, nreach, ereach, b)
        g[...] = 0


# ------------------------------------------------------------------ who runs
def current():
    """The module whose ``reverse`` / ``forward`` / ``pforward`` / ``preverse`` run now: the
    compiled interpreter when the compiled code is in use (``_compiled._cache.ON``), else
    this one. Callers that keep the functions refresh them on ``_cache.on_switch``."""
    if _cache.ON:
        from .._compiled import _interp   # deferred: Numba machine code, loaded on first sweep
        return _interp
    import sys
    return sys.modules[__name__]


def current_run():
    """The batched driver that runs now (compiled ``_driver.run``, or ``run`` above)."""
    if _cache.ON:
        from .._compiled import _driver       # deferred: Numba machine code
        _driver.ready()
        return _driver.run
    return run
