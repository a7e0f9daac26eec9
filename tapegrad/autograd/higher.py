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
import types

import numpy as np

from .._core import tape as _tp
from .._schema import (CI, F_FREED, F_SAVES, FL, IA, IB, K, NDT, NK, NM, NOFF, NPROD, NSIZE, OP,
                       OUT, P0, P1, SA, SB, SY)
from ..ops import BINARY, BY_NAME, CAST, INDEX, MM, OPS, PYFUNC, SUM, UNARY
from .._state import STATE
from .._core.names import name_id
from .._record import _mm_core, _nm, _out, _record_index, _record_offset
from ..tensor import _wrap
from .hooks import _entry_inputs, _hooked_outputs, call_hooks, node_shape
from .function import _sum_dims

_MUL = BY_NAME["mul"]
_SLICE, _EMBED = BY_NAME["slice"].opcode, BY_NAME["embed"].opcode
_TRANSPOSE = BY_NAME["transpose"].opcode
_SLICEB, _SELB, _SLICEBB, _SELBB, _PADB = (name_id(s) for s in (
    "SliceBackward0", "SelectBackward0", "SliceBackwardBackward0", "SelectBackwardBackward0",
    "ConstantPadNdBackward0"))
# torch's name for the recorded VJP of an embed entry, by the entry's own name
_EMBED_T = {_SELBB: _SELB, _PADB: _PADB}
_PYFUNC_OP = BY_NAME["pyfunc"].opcode
_KINDS = [op.kind for op in OPS]


_TM = []


def _T():
    """tapegrad.tensor (imported late: it imports the autograd package)."""
    if not _TM:
        import sys
        _TM.append(sys.modules[__name__.rsplit(".", 2)[0] + ".tensor"])
    return _TM[0]


def _vjp_namespace():
    """What the op table's differentiable VJPs (``Op.vjp_t``) call: tensor functions and the
    recording helpers they compose (passed to them as data: ops.py sits below the families)."""
    if not _VT:
        from .. import _math   # deferred: autograd is imported before the op families
        _VT.append(types.SimpleNamespace(
            cos=_math.cos, sin=_math.sin, log=_math.log, unary=_math.unary, hide=_math.hide,
            named=_math.named, tap_entry=_math.tap_entry,
            reshaped=lambda r, shape: reshaped(_T(), r, shape)))
    return _VT[0]


_VT = []


def reshaped(T, t, shape):
    """``t`` with shape ``shape`` (same element count), recording nothing: a non-leaf result is
    bound to ``t``'s own node, as tape nodes are flat. So the sweep's flat cotangents reach
    callers (gradients, hooks, custom backward) with the grad_fn of the op that computed them,
    as in torch, instead of a ViewBackward0 over it. A leaf is reshaped by a recorded view."""
    d = t._data
    if d.shape == shape:
        return t
    if t._tape is None:
        return t.reshape(shape) if t._rg else T._wrap(d.reshape(shape), t._dtype)
    tp, node = _tp.resolve(t)
    return _out(d.reshape(shape), t._dtype, tp, node)


def _dtype_of(T, vdt):
    return T.float32 if vdt == 0 else T.float64


def _index_t(T, t, opname, idx, m, c):
    """Record gather/segsum/copy on a flat tensor (m: output size)."""
    if opname == "segsum":            # the row's reference, without its extra passes
        d = t._data.reshape(-1)
        y = np.bincount(idx, d, minlength=m)
        if c != 1.0:
            y *= c
        if y.dtype != d.dtype:
            y = y.astype(d.dtype)
    else:
        op = BY_NAME[opname]
        y = np.ascontiguousarray(op.ref(t._data, idx, c, m) if idx is not None
                                 else t._data.ravel().copy())
    if t._rg:
        tp, e, n = _record_index(t, opname, idx, y, c=c)
        return _out(y, t._dtype, tp, n)
    return T._wrap(y, t._dtype)


def _offset_t(T, t, op, off, n, m, nm):
    """Record an offset row on a flat tensor: ``slice`` (y = t[off:off + n]) or ``embed``
    (y = zeros(m), y[off:off + n] = t)."""
    d = t._data.reshape(-1)
    if op == _SLICE:
        y = d[off:off + n].copy()
    else:
        y = np.zeros(m, d.dtype)
        y[off:off + n] = d
    if t._rg:
        return _record_offset(t, op, off, n, y, nm)
    return T._wrap(y, t._dtype)


def _transpose_flat(T, t, r, c, nm=None):
    """The flat (c, r) transpose of a flat (r, c) tensor (a ``transpose`` entry, named
    ``nm`` or the row's TBackward0)."""
    y = np.ascontiguousarray(t._data.reshape(r, c).T).reshape(-1)
    if t._rg:
        return _record_offset(t, _TRANSPOSE, r, r * c, y,
                                nm if nm is not None else _nm("TBackward0"))
    return T._wrap(y, t._dtype)


def _mm_flat(T, a, b, m, k, n):
    y = (a._data.reshape(m, k) @ b._data.reshape(k, n)).ravel()
    return _mm_core(a, b, m, k, n, y, "MmBackward0")


def differentiable_sweep(tp, seeds, paths=None):
    """seeds: [(node, flat Tensor cotangent)]. Returns {node: flat Tensor cotangent} for every
    node reached, computed with recorded tensor operations. ``paths`` (autograd.grad:
    ``engine.Paths``): only the entries on paths from the requested inputs run, as in torch.

    The sweep appends entries to ``tp``, so it reads the tape through Python lists and
    references to its buffers taken at the start (no numpy views pin them while it grows)."""
    T = _T()
    VT = _vjp_namespace()
    ne = len(tp.E) // K
    Nb = tp.N
    cot = {}
    start = -1
    for node, g in seeds:
        cot[node] = g if node not in cot else cot[node] + g
        start = max(start, Nb[node * NK + NPROD])
    lo, needed = 0, None
    if paths is not None:
        lo, needed = paths.lo, paths.needed[paths.lo:start + 1].tolist()
    if start < lo:
        return cot
    # the entries lo..start and the nodes they touch (nlo .. the last entry's output nodes),
    # as lists: array slices are copies, so no numpy view pins the buffers while the tape grows
    fE = tp.E[lo * K:(start + 1) * K].tolist()
    rows = [fE[i:i + K] for i in range(0, len(fE), K)]
    nhi = tp.E[(start + 1) * K + OUT] if start + 1 < ne else len(Nb) // NK
    bad = None
    if tp.sv and tp.mark != _tp.INPLACE[0]:       # an in-place op since the first record
        bad = _tp.version_mask(tp, ne)
        bad = bad[:start + 1].tolist() if bad[lo:start + 1].any() else None
    nlo = 0                            # the lowest node the entries touch (0: from the start)
    if lo:
        nlo = min([rows[0][OUT]] + [v for v in fE[IA::K] + fE[IB::K] if v >= 0])
        if tp.pyfuncs:
            for row in rows:
                if row[OP] == _PYFUNC_OP:
                    nlo = min([nlo] + [n for n in tp.pyfuncs[row[P0]].in_nodes if n >= 0])
    fN = Nb[nlo * NK:nhi * NK].tolist()
    pad = [0] * nlo                    # columns indexed by node (a long tape: a pointer copy)
    nsize = pad + fN[NSIZE::NK]
    ndt = pad + [d & 1 for d in fN[NDT::NK]]
    cols = []                          # (nprod, noff): only unbind's parts read them

    def prod_off():
        if not cols:
            cols.append((pad + fN[NPROD::NK], pad + fN[NOFF::NK]))
        return cols[0]
    # references to the stores (an absorb during the sweep replaces the tape's, not these)
    V, XO, C, hooks, pyfuncs = tp.V, tp.XO, tp.C, tp.hooks, tp.pyfuncs
    Ibuf = tp.I
    dts = (T.float32, T.float64)
    wrap, bound = T._wrap, _out
    npdt = _tp.NP_DT

    def node_t(node, s, m, vdt):
        """The operand as a flat tensor: bound to its node (so it is differentiable), or a
        constant when it needs no gradient; None when the VJP did not save it."""
        if s == -1:
            return None
        if s <= -2:
            v = XO[vdt][-2 - s]
            if v.ndim != 1:
                v = v.reshape(-1)
            if v.size != m:
                v = v[:m]
        else:                               # numbers and 0-d values kept in V: a copy
            v = np.frombuffer(V[vdt][s:s + m], npdt[vdt])
        if node < 0:
            return wrap(v, dts[vdt])
        return bound(v, dts[vdt], tp, node)

    capture = [None]                   # an entry with post-hooks: its contributions

    def add(node, contrib):
        if node < 0 or contrib is None:
            return
        size = nsize[node]
        if contrib._data.size != size:                 # single-element operand broadcast
            contrib = reshaped(T, contrib.sum(), (size,))
        if contrib._dtype is not dts[ndt[node]]:
            contrib = contrib.to(dts[ndt[node]])
        into = cot if capture[0] is None else capture[0]
        cur = into.get(node)
        into[node] = contrib if cur is None else cur + contrib

    prev_mode = STATE.enabled          # (enable_grad, without its context object)
    STATE.enabled = True
    post = None                        # (entry, its post-hooks) waiting for its contributions
    try:
        for e in range(start, lo - 1, -1):
            if post is not None:
                _post_hooks(T, tp, post, capture, add)
                post = None
            if needed is not None and not needed[e - lo]:
                continue
            row = rows[e - lo]
            out = row[OUT]
            op = OPS[row[OP]]
            kind = _KINDS[row[OP]]
            if hooks:
                table = hooks.get(("t", out))
                if table and out in cot:                    # tensor hooks (recorded too)
                    for fn, (shape, dt) in list(table.values()):
                        r = fn(reshaped(T, cot[out], shape))
                        if r is not None:
                            cot[out] = reshaped(T, r, (r._data.size,))
                if ("pre", e) in hooks or ("post", e) in hooks:
                    post = _pre_hooks(T, tp, e, cot, capture)
            g = cot.get(out)
            if g is None:
                if kind == INDEX:
                    g = _assemble_parts(T, *prod_off(), nsize, ndt, e, out, cot)
                elif kind == PYFUNC:
                    d = _shift_of(tp)
                    if any(n - d in cot for n in pyfuncs[row[P0]].out_nodes):
                        g = True
                if g is None:
                    continue
            if bad is not None and bad[e]:
                raise _tp._version_error(tp, e)
            fl = row[FL]
            if fl & F_FREED and fl & F_SAVES:
                raise RuntimeError(_tp.MSG_FREED)
            a, b = row[IA], row[IB]
            n = nsize[out]
            vdt = ndt[out]
            if kind == UNARY:
                ci = row[CI]
                x = node_t(a, row[SA], n, vdt)
                y = node_t(out, row[SY], n, vdt)
                add(a, op.vjp_t(VT, g, x, y, C[ci] if ci >= 0 else 0.0))
            elif kind == BINARY:
                av = node_t(a, row[SA], n if row[P0] else 1, vdt)
                if a == b and a >= 0 and op is _MUL:
                    # x * x: g x + g x, recorded as one product and one sum (the sum is the
                    # result's grad_fn, AddBackward0, as torch's accumulation of the two)
                    t = g * av
                    add(a, t + t)
                    continue
                bv = node_t(b, row[SB], n if row[P1] else 1, vdt)
                y = node_t(out, row[SY], n, vdt)
                ga, gb = op.vjp_t(VT, g, av, bv, y)
                add(a, ga)
                add(b, gb)
            elif kind == SUM:
                ci = row[CI]
                c = C[ci] if ci >= 0 else 0.0
                nin = nsize[a]
                if g._rg:
                    gx = _index_t(T, g, "gather", np.zeros(nin, np.int64), nin, 0.0)
                    add(a, gx if c == 1.0 else gx * c)
                else:                           # a constant: broadcast without recording
                    gd = g._data.reshape(-1)
                    v = np.empty(nin, gd.dtype)         # (np.full, without its wrapper)
                    v.fill(gd[0] * gd.dtype.type(c))
                    add(a, wrap(v, g._dtype))
            elif kind == INDEX:
                nin = nsize[a]
                opc = row[OP]
                if opc == _SLICE:               # transpose: embed, torch's XBackwardBackward0
                    if n == nin:                # the whole input (x[None], x[...]): identity
                        add(a, g)
                    else:
                        add(a, _offset_t(T, g, _EMBED, row[P0], n, nin,
                                         _SELBB if row[NM] == _SELB else _SLICEBB))
                    continue
                if opc == _EMBED:               # transpose: slice (pad's: a negative pad)
                    add(a, _offset_t(T, g, _SLICE, row[P0], nin, nin,
                                     _EMBED_T.get(row[NM], _SLICEB)))
                    continue
                if opc == _TRANSPOSE:           # self-transposing: g^T, under the entry's name
                    r = row[P0]
                    add(a, _transpose_flat(T, g, n // r if r else 0, r, row[NM]))
                    continue
                if op.name != "copy":
                    idx = (Ibuf.get(row[P0], row[P1]).copy() if row[P1]
                           else np.zeros(0, np.int64))
                if op.name == "gather":
                    add(a, _index_t(T, g, "segsum", idx, nin, 1.0))
                elif op.name == "segsum":
                    ci = row[CI]
                    c = C[ci] if ci >= 0 else 0.0
                    gx = _index_t(T, g, "gather", idx, nin, 0.0)
                    add(a, gx if c == 1.0 else gx * c)
                else:
                    add(a, g)
            elif kind == MM:
                m, k = row[P0], row[P1]
                nn = n // m
                av = node_t(a, row[SA], m * k, vdt)
                bv = node_t(b, row[SB], k * nn, vdt)
                if a >= 0:
                    add(a, _mm_flat(T, g, _transpose_flat(T, bv, k, nn), m, nn, k))
                if b >= 0:
                    add(b, _mm_flat(T, _transpose_flat(T, av, m, k), g, k, m, nn))
            elif kind == CAST:
                add(a, g.to(dts[ndt[a]]))
            elif kind == PYFUNC:
                _pyfunc(T, pyfuncs[row[P0]], cot, add, tp)
        if post is not None:
            _post_hooks(T, tp, post, capture, add)
    finally:
        STATE.enabled = prev_mode
    return cot


def _pre_hooks(T, tp, e, cot, capture):
    """Node pre-hooks of entry e on its output cotangents (in their shapes; a hook may
    replace them); with post-hooks, starts capturing the entry's contributions and returns
    what ``_post_hooks`` needs."""
    N = tp.N
    outs = [n for n in _hooked_outputs(tp, e) if n in cot]
    if not outs:
        return None
    pre = tp.hooks.get(("pre", e))
    if pre:
        gouts = tuple(reshaped(T, cot[o], node_shape(tp, N, o)) for o in outs)
        for o, g in zip(outs, call_hooks(pre, gouts)):
            if g is not None:
                cot[o] = reshaped(T, g, (g._data.size,))
    post = tp.hooks.get(("post", e))
    if not post:
        return None
    capture[0] = {}
    return e, post, tuple(reshaped(T, cot[o], node_shape(tp, N, o)) for o in outs)


def _post_hooks(T, tp, pending, capture, add):
    """Post-hooks ``fn(grad_inputs, grad_outputs)`` of a captured entry; what they return (or
    the captured contributions) is then added to the inputs' cotangents."""
    e, post, gouts = pending
    got, capture[0] = capture[0], None
    ins = _entry_inputs(tp, e)
    known = tp.hooks.get(("shape", e))
    gin = tuple(reshaped(T, got[n], node_shape(tp, tp.N, n, e, known)) if n in got else None
                for n in ins)
    for n, g in zip(ins, call_hooks(post, gin, gouts)):
        if g is not None:
            add(n, reshaped(T, g, (g._data.size,)))


def _assemble_parts(T, nprod, noff, nsize, ndt, e, out, cot):
    """unbind: the entry's output is covered by alias nodes (one per part); build its
    cotangent from theirs (parts nobody used contribute zeros)."""
    parts = []
    k = out + 1
    while k < len(nprod) and nprod[k] == e:
        parts.append(k)
        k += 1
    if not any(p in cot for p in parts):
        return None
    size, base, vdt = nsize[out], noff[out], ndt[out]
    total = None
    for p in parts:
        g = cot.get(p)
        if g is None:
            continue
        off = noff[p] - base
        idx = np.arange(off, off + nsize[p], dtype=np.int64)
        piece = _index_t(T, g, "segsum", idx, size, 1.0)
        total = piece if total is None else total + piece
    if total._dtype is not _dtype_of(T, vdt):
        total = total.to(_dtype_of(T, vdt))
    return total


def _shift_of(tp):
    """How far ``tp``'s node numbers moved if it was merged into another tape meanwhile (a
    custom Function's record is renumbered then; the sweep keeps ``tp``'s numbering)."""
    d = 0
    while tp.into is not None:
        d += tp.dn
        tp = tp.into
    return d


def _pyfunc(T, rec, cot, add, tp):
    """A custom Function's backward, run with grad mode on so its operations are recorded.
    The record's node numbers are taken back to the sweep's (``tp``'s) numbering."""
    grads = []
    d = _shift_of(tp)
    for node, (shape, dt) in zip(rec.out_nodes, rec.out_meta):
        g = cot.get(node - d if node >= 0 else node)
        if g is None and rec.ctx.materialize_grads:
            g = T._wrap(np.zeros(int(np.prod(shape, dtype=np.int64)), dt.np), dt)
        grads.append(None if g is None else reshaped(T, g, shape))
    res = rec.checked(rec.cls.backward(rec.ctx, *grads))
    d = _shift_of(tp)                  # the backward may have merged the tape
    for i, r in res:
        shape = rec.in_meta[i][0]
        if r._data.shape != shape:     # expandable to the input's shape: summed back (sum_to)
            r = r.sum(_sum_dims(r._data.shape, shape), keepdim=True)
        add(rec.in_nodes[i] - d, reshaped(T, r, (r._data.size,)))
