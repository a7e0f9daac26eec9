"""create_graph=True: a reverse sweep whose own operations are recorded.

The compiled sweep computes adjoints as numbers. For higher-order derivatives the backward pass
must itself be a graph, so this sweep walks the reached entries in reverse in Python and calls
each row's differentiable VJP (``Op.vjp_t``, tensor operations) on *node tensors*: tensors
bound to the recorded nodes and carrying their saved values. Every operation of the VJP is
recorded on the same tape, so a gradient of the result flows back through both the backward
and the original forward entries. Linear rows (index maps, sum, mm, cast) are differentiated
here by their transposes (gather <-> segsum, mm with transposed operands).

It is Python per entry (the price of a recorded backward); first-order backward stays one call
into compiled code. tests/test_higher_order.py checks every row against the compiled VJP,
finite differences of the first derivative, and torch's double backward.
"""
import numpy as np

from .. import tape as _tp
from ..kernels import (CI, F_FREED, F_SAVES, FL, IA, IB, K, NDT, NK, NOFF, NPROD, NSIZE,
                       OP, OUT, P0, P1, SA, SB, SY)
from ..ops import BINARY, BY_NAME, CAST, INDEX, MM, OPS, PYFUNC, SUM, UNARY
from .grad_mode import enable_grad


def _T():
    import sys
    from ..tensor import _wrap  # noqa: F401  (imports the module)
    return sys.modules[__name__.rsplit(".", 2)[0] + ".tensor"]


def _dtype_of(T, vdt):
    return T.float32 if vdt == 0 else T.float64


def _index_t(T, t, opname, idx, m, c):
    """Record gather/segsum/copy on a flat tensor (m: output size)."""
    op = BY_NAME[opname]
    y = np.ascontiguousarray(op.ref(t._data, idx, c, m) if idx is not None else t._data.ravel().copy())
    if t._rg:
        tp, e, n = T._record_index(t, opname, idx, y, c=c)
        return T._out(y, t._dtype, tp, n)
    return T._wrap(y, t._dtype)


def _transpose_flat(T, t, r, c):
    """The flat (c, r) transpose of a flat (r, c) tensor (a gather)."""
    idx = np.arange(r * c, dtype=np.int64).reshape(r, c).T.ravel()
    return _index_t(T, t, "gather", idx, r * c, 0.0)


def _mm_flat(T, a, b, m, k, n):
    y = (a._data.reshape(m, k) @ b._data.reshape(k, n)).ravel()
    return T._mm_core(a, b, m, k, n, y, "MmBackward0")


def differentiable_sweep(tp, seeds):
    """seeds: [(node, flat Tensor cotangent)]. Returns {node: flat Tensor cotangent} for every
    node reached, computed with recorded tensor operations."""
    T = _T()
    E = _tp.view_i64(tp.E).reshape(-1, K).copy()       # snapshot: the sweep appends entries
    N = _tp.view_i64(tp.N).reshape(-1, NK).copy()
    ne = E.shape[0]
    cot = {}
    start = -1
    for node, g in seeds:
        cot[node] = g if node not in cot else cot[node] + g
        start = max(start, int(N[node, NPROD]))
    bad = _tp.version_mask(tp, ne)
    V = [np.frombuffer(tp.V[d], _tp.NP_DT[d]).copy() if len(tp.V[d]) else np.zeros(0, _tp.NP_DT[d])
         for d in (0, 1)]

    def value(s, m, vdt):
        if s <= -2:
            return tp.XO[vdt][-2 - s].reshape(-1)[:m]
        return V[vdt][s:s + m]

    def node_t(node, s, m, vdt):
        """The operand as a flat tensor: bound to its node (so it is differentiable), or a
        constant when it needs no gradient; None when the VJP did not save it."""
        if s == -1:
            return None
        v = value(s, m, vdt)
        if node < 0:
            return T._wrap(v, _dtype_of(T, vdt))
        return T._out(v, _dtype_of(T, vdt), tp, node)

    def add(node, contrib):
        if node < 0 or contrib is None:
            return
        size = int(N[node, NSIZE])
        if contrib._data.size != size:                 # single-element operand broadcast
            contrib = contrib.sum().reshape(size)
        if int(N[node, NDT]) & 1 != (0 if contrib._dtype is T.float32 else 1):
            contrib = contrib.to(_dtype_of(T, int(N[node, NDT]) & 1))
        cur = cot.get(node)
        cot[node] = contrib if cur is None else cur + contrib

    with enable_grad():
        for e in range(start, -1, -1):
            out = int(E[e, OUT])
            table = tp.hooks.get(("t", out))
            if table and out in cot:                    # tensor hooks (recorded too)
                for fn, (shape, dt) in list(table.values()):
                    r = fn(cot[out].reshape(shape))
                    if r is not None:
                        cot[out] = r.reshape(-1)
            g = cot.get(out)
            op = OPS[int(E[e, OP])]
            if g is None and op.kind == INDEX:
                g = _assemble_parts(T, tp, N, e, out, cot)
            if g is None and op.kind == PYFUNC:
                rec = tp.pyfuncs[int(E[e, P0])]
                if any(n in cot for n in rec.out_nodes):
                    g = True
            if g is None:
                continue
            if bad[e]:
                raise _tp._version_error(tp, e)
            if E[e, FL] & F_FREED and E[e, FL] & F_SAVES:
                raise RuntimeError(_tp.MSG_FREED)
            a, b = int(E[e, IA]), int(E[e, IB])
            ci = int(E[e, CI])
            c = tp.C[ci] if ci >= 0 else 0.0
            n = int(N[out, NSIZE])
            vdt = int(N[out, NDT]) & 1
            kind = op.kind
            if kind == UNARY:
                x = node_t(a, int(E[e, SA]), n, vdt)
                y = node_t(out, int(E[e, SY]), n, vdt)
                add(a, op.vjp_t(T, g, x, y, c))
            elif kind == BINARY:
                la = n if E[e, P0] else 1
                lb = n if E[e, P1] else 1
                av = node_t(a, int(E[e, SA]), la, vdt)
                bv = node_t(b, int(E[e, SB]), lb, vdt)
                y = node_t(out, int(E[e, SY]), n, vdt)
                ga, gb = op.vjp_t(T, g, av, bv, y)
                add(a, ga)
                add(b, gb)
            elif kind == SUM:
                nin = int(N[a, NSIZE])
                add(a, _index_t(T, g, "gather", np.zeros(nin, np.int64), nin, 0.0) * c)
            elif kind == INDEX:
                nin = int(N[a, NSIZE])
                idx = np.frombuffer(tp.I, np.int64)[int(E[e, P0]):int(E[e, P0]) + int(E[e, P1])].copy()
                if op.name == "gather":
                    add(a, _index_t(T, g, "segsum", idx, nin, 1.0))
                elif op.name == "segsum":
                    add(a, _index_t(T, g, "gather", idx, nin, 0.0) * c)
                else:
                    add(a, g)
            elif kind == MM:
                m, k = int(E[e, P0]), int(E[e, P1])
                nn = n // m
                av = node_t(a, int(E[e, SA]), m * k, vdt)
                bv = node_t(b, int(E[e, SB]), k * nn, vdt)
                if a >= 0:
                    add(a, _mm_flat(T, g, _transpose_flat(T, bv, k, nn), m, nn, k))
                if b >= 0:
                    add(b, _mm_flat(T, _transpose_flat(T, av, m, k), g, k, m, nn))
            elif kind == CAST:
                add(a, g.to(_dtype_of(T, int(N[a, NDT]) & 1)))
            elif kind == PYFUNC:
                _pyfunc(T, tp, N, E, e, cot, add)
    return cot


def _assemble_parts(T, tp, N, e, out, cot):
    """unbind: the entry's output is covered by alias nodes (one per part); build its
    cotangent from theirs (parts nobody used contribute zeros)."""
    parts = []
    k = out + 1
    while k < N.shape[0] and int(N[k, NPROD]) == e:
        parts.append(k)
        k += 1
    if not any(p in cot for p in parts):
        return None
    size = int(N[out, NSIZE])
    base = int(N[out, NOFF])
    vdt = int(N[out, NDT]) & 1
    total = None
    for p in parts:
        g = cot.get(p)
        if g is None:
            continue
        off = int(N[p, NOFF]) - base
        idx = np.arange(off, off + int(N[p, NSIZE]), dtype=np.int64)
        piece = _index_t(T, g, "segsum", idx, size, 1.0)
        total = piece if total is None else total + piece
    if total._dtype is not _dtype_of(T, vdt):
        total = total.to(_dtype_of(T, vdt))
    return total


def _pyfunc(T, tp, N, E, e, cot, add):
    """A custom Function's backward, run with grad mode on so its operations are recorded."""
    rec = tp.pyfuncs[int(E[e, P0])]
    grads = []
    for node, (shape, dt) in zip(rec.out_nodes, rec.out_meta):
        g = cot.get(node)
        if g is None and rec.ctx.materialize_grads:
            g = T._wrap(np.zeros(int(np.prod(shape, dtype=np.int64)), dt.np), dt)
        grads.append(None if g is None else g.reshape(shape))
    res = rec.cls.backward(rec.ctx, *grads)
    if not isinstance(res, tuple):
        res = (res,)
    for node, r in zip(rec.in_nodes, res):
        if node >= 0 and r is not None:
            add(node, r.reshape(-1))
