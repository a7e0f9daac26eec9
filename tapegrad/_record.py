"""Layer 5: the recording API every op family uses.

Turning numpy results into tensors with tape entries: unary / binary / index / sum / matrix
entries (``_record_*``), casts and broadcasts as entries of their own, views and their
tracking, the in-place machinery (version counters, saved-value protection, rederived views),
shared argument checks. Nothing here is a torch function; the families (``_shape``, ``_index``,
``_math``, ``creation``, ``_reduce``, ``_matrix``, ...) build those from it.
"""
import builtins
import math
import numbers
import operator
import sys
import warnings
import weakref
from math import prod as _prod

import numpy as np
from ._schema import F_BIG, F_HIDDEN, F_SAVES, K, NDT, NK, NM, NPROD, P0, SY
from ._state import STATE
from ._compiled import _blas
from .ops import BY_NAME, OPCODE, OPS
from ._core.tape import _PACK_E, _PACK_N
from .tensor import (GUARD, Size, Tensor, _ND, _as_dtype, _grad_on, _guard_sel, _ndarray, _new,
                     _vcof, _wrap, int64)

from ._compiled import _layout, _native, _vmath
from . import _par
from ._core import tape as _tp
from ._core.names import NAMES as _NAMES, name_id as _name_id
from ._core.tape import address as _address
_wref = weakref.ref
from .tensor import _NO_HALF_GRAD, _norm_dims, _tyname
from ._schema import FL
from ._core.names import multi_name_id, tap_name_id
from ._core.tape import entry_name
from ._core.names import NAMES, TAPS
from ._core.tape import _operands
from ._core.names import name_id


def _vm_of(op):
    """(vector-math row name or None, element count from which the forward leaves numpy's
    single ufunc call): libmvec rows from ``_vmath.MIN``, arithmetic ones only where the
    kernels go parallel (on one core numpy's own loop is as fast and cheaper to call). The
    callers also check ``_vmath.OK`` (the compiled code in use) before calling a kernel."""
    if op.vm and _vmath.AVAILABLE:
        return op.name, (_vmath.MIN if op.name in _vmath.LIBM else _vmath.PAR)
    return None, _par.PAR_MIN


def _par_map(fwd_out, args, shape, npdt, vm=None):
    """An elementwise forward evaluated on all cores (large operands): row ``vm``'s vector
    math kernel (``_vmath``) when it has one, else numpy in chunks on threads.
    args: (a, b) for binary rows, (x, c) for unary ones; b or c may be a scalar or None."""
    y = np.empty(shape, npdt)
    yf = y.reshape(-1)
    a, b = args
    a = _layout.contiguous(a).reshape(-1)
    if vm is not None and a.dtype == npdt and _vmath.OK:
        if vm in _vmath.UNARY:
            _vmath.unary_fwd(vm, a, yf, 0.0 if b is None else b)
            return y
        bf = np.ascontiguousarray(b).reshape(-1)
        if bf.dtype == npdt and (bf.size == yf.size or bf.size == 1) and a.size == yf.size:
            _vmath.binary_fwd(vm, a, bf, yf)
            return y
    if isinstance(b, np.ndarray) and b.size > 1:
        b = np.ascontiguousarray(b).reshape(-1)
        _par.run(lambda i, j: fwd_out(a[i:j], b[i:j], yf[i:j]), yf.size)
    else:
        _par.run(lambda i, j: fwd_out(a[i:j], b, yf[i:j]), yf.size)
    return y


_NM = None


def _nm(name):
    global _NM
    if _NM is None:
        _NM = name_id
    return _NM(name)


def _nm_default(op):
    return _OPNM[op.opcode]


_OPNM = [_name_id(op.grad_fn) for op in OPS]


_ROT_E = _tp.ROTATE_AT * K


# binary rows: what to save for each (a needs grad, b needs grad), indexed by 2*ga + gb
_SAVES = [[op.saves_fn(bool(i & 2), bool(i & 1)) for i in range(4)] for op in OPS]


# unary rows: (save x, save y)
_USAVES = [("x" in op.saves, "y" in op.saves) for op in OPS]


# from this many elements an entry's VJP runs on numpy (ops.Op.np_vjp_from)
_NPVJP_FROM = [op.np_vjp_from if op.np_vjp_from > 0 else 1 << 62 for op in OPS]


# ... except rows whose compiled VJP calls libmvec (Op.native_vjp), once the native table holds
# it: ``_native.vmath()`` fills it on the first such entry (~70 ms once: loading two cached C
# callbacks) and answers from its cache after that
_NATIVE_VJP = [op.native_vjp for op in OPS]


_WATCH_FROM = _tp.WATCH_FROM


def _src(t, tp):
    """Node of a tensor that requires grad, on tape ``tp`` (leaves get a node there)."""
    if t._tape is None:
        return tp.leaf_node(t)
    return t._node


def _tape_for(*ts):
    """The tape an op on these tensors (those requiring grad) records to."""
    found = None
    many = None
    for t in ts:
        if t is not None and t._tape is not None:
            tp = t._tape
            if tp.into is not None:
                tp, _ = _tp.resolve(t)
            if found is None:
                found = tp
            elif tp is not found:
                many = [found, tp] if many is None else many + [tp]
    if many is not None:
        found = _tp.join(many)
        for t in ts:
            if t is not None and t._tape is not None:
                _tp.resolve(t)
    return found if found is not None else _tp.current_tape()


def _out(data, dt, tp, node):
    t = _wrap(data, dt)
    t._rg = True
    t._tape = tp
    t._node = node
    tp.live.append(_wref(t))
    if type(data) is _ndarray and data.size >= _WATCH_FROM:   # liveness (tape.watch)
        _tp.watch(t, tp, node)
    return t


# ----------------------------------------------------------------------------- recording
def _record_unary(x, op, y, c=None, nm=None):
    tp = x._tape
    if tp is None:                   # a leaf: the current tape (_tape_for / _src, inlined)
        tp = _tp.current_tape()
        a = tp.leaf_node(x)
    elif tp.into is not None:
        tp, a = _tp.resolve(x)
    else:
        a = x._node
    dt = x._dtype.slot
    if dt < 0:
        raise RuntimeError("only floating point tensors can be differentiated")
    sx = sy = -1
    opcode = op.opcode
    save_x, save_y = _USAVES[opcode]
    if save_x:
        sx = tp.save(x._data, dt, x._tape is None)
    if save_y:
        if type(y) is _ndarray:
            sy = tp.save(y, dt)
        else:                        # a numpy scalar (0-dim value): copied into V
            V = tp.V[dt]
            V.append(y)
            tp.nbytes += 8
            sy = len(V) - 1
    ci = -1
    if c is not None:
        C = tp.C
        C.append(c)
        ci = len(C) - 1
    # the entry and its output node (Tape.entry, inlined on this hot path)
    e = len(tp.E) // K
    n = len(tp.N) // NK
    size = y.size
    fl = 0
    if save_x or save_y:
        fl = F_SAVES
        tp.n_saving += 1
    slot = dt
    Nb = tp.N
    if size >= _tp.BIG:
        slot = dt + 2
        fl |= F_BIG
    elif Nb[a * NK + NDT] >= 2:       # a big operand
        fl |= F_BIG
    elif size >= _NPVJP_FROM[opcode]:  # a VJP numpy's SIMD ufuncs beat (Op.np_vjp_from) ...
        if not (_NATIVE_VJP[opcode] and _native.vmath()):
            fl |= F_BIG              # ... unless the compiled one runs on libmvec
    asz = tp.asz
    Nb.frombytes(_PACK_N(asz[slot], size, slot, e, 0))
    asz[slot] += size
    tp.E.frombytes(_PACK_E(opcode, nm if nm is not None else _OPNM[opcode], n, a, -1, sx, -1,
                           sy, 0, 0, ci, fl))
    out = object.__new__(Tensor)
    out._data = y
    out._dtype = x._dtype
    out._rg = True
    out._tape = tp
    out._node = n
    tp.live.append(_wref(out))
    if size >= _WATCH_FROM:          # liveness: its death may free saved values
        _tp.watch(out, tp, n)
    if save_x or save_y:             # version records (Tape.version_record, inlined)
        if tp.mark is None:
            tp.mark = _tp.INPLACE[0]
        if save_x:
            vc = x._vc
            if vc is None:
                vc = x._vc = [0]
            tp.sv.append((vc, vc[0], e, x._data.shape, "a"))
        if save_y:
            vc = out._vc = [0]
            tp.sv.append((vc, 0, e, y.shape, "y"))
    return out


def _cast_node(tp, t, node, rdt):
    """Hidden dtype conversion of a grad-requiring operand to the result dtype."""
    e, n = tp.entry(OPCODE["cast"], _nm("ToCopyBackward0"), t._data.size, rdt.slot, node, -1,
                    fl=F_HIDDEN)
    return n


# Index maps that depend on shapes only (broadcasts, permutations), kept read-only across
# calls and tapes: an eager loop recording the same broadcast every call (GradBench's gmm:
# (n, 1, d) - (1, k, d), 2 MB maps) built and page-faulted a fresh map each time. Up to
# MAP_CACHE_BYTES in all (then emptied); tapes hold them through IndexMaps.append_shared.
MAP_CACHE = {}
MAP_CACHE_BYTES = 64 << 20
_MAP_HELD = [0]


def cached_map(key, make):
    """The int64 map ``make()`` for ``key`` (shapes only), read-only, shared."""
    idx = MAP_CACHE.get(key)
    if idx is None:
        idx = make()
        if idx.nbytes <= MAP_CACHE_BYTES >> 3:
            if _MAP_HELD[0] + idx.nbytes > MAP_CACHE_BYTES:
                MAP_CACHE.clear()
                _MAP_HELD[0] = 0
            if not idx.flags.owndata:
                idx = idx.copy()
            idx.flags.writeable = False
            MAP_CACHE[key] = idx
            _MAP_HELD[0] += idx.nbytes
    return idx


def _expand_map(src_shape, out_shape):
    return np.broadcast_to(np.arange(int(np.prod(src_shape, dtype=np.int64)), dtype=np.int64)
                           .reshape(src_shape), out_shape).reshape(-1)


def _expand_node(tp, node, src_shape, out_shape, dt):
    """Hidden broadcast of a node to ``out_shape`` (a gather whose VJP sums)."""
    idx = cached_map(("expand", src_shape, out_shape),
                     lambda: _expand_map(src_shape, out_shape))
    off = tp.I.append_shared(idx)                                       # kept, not copied
    e, n = tp.entry(OPCODE["gather"], _nm("ExpandBackward0"), idx.size, dt, node, -1,
                    p0=off, p1=idx.size, fl=F_HIDDEN)
    return n


def _operand(tp, t, g, val, rdt, shape, n, dt):
    """(node, stride, value) of one operand of a binary entry."""
    if type(t) is Tensor or isinstance(t, Tensor):
        d = t._data
        size, tshape = d.size, d.shape
    else:
        size, tshape = 1, ()
    node = -1
    if g:
        node = t._node if t._tape is not None else tp.leaf_node(t)
        if t._dtype is not rdt:
            node = _cast_node(tp, t, node, rdt)
    if size == 1 and n != 1:
        return node, 0, val
    if tshape != shape:
        if g:
            node = _expand_node(tp, node, tshape, shape, dt)
        val = np.broadcast_to(val, shape)
    return node, 1, val


def _record_binary(op, a, b, y, rdt, nm=None, hidden=False):
    """a, b: Tensors or Python numbers (at least one Tensor requiring grad); y: the value."""
    ta = type(a) is Tensor or isinstance(a, Tensor)
    tb = type(b) is Tensor or isinstance(b, Tensor)
    ga = ta and a._rg
    gb = tb and b._rg
    dt = rdt.slot
    if dt < 0:
        raise RuntimeError("only floating point tensors can be differentiated")
    tp = None
    if ga and a._tape is not None:
        tp = a._tape
        if tp.into is not None:
            tp = _tp.resolve(a)[0]
    if gb and b._tape is not None:
        tpb = b._tape
        if tpb.into is not None:
            tpb = _tp.resolve(b)[0]
        if tp is None:
            tp = tpb
        elif tpb is not tp:
            tp = _tp.join([tp, tpb])
            _tp.resolve(a)
            _tp.resolve(b)
    if tp is None:
        tp = _tp._tls.__dict__.get("tape")
        if (tp is None or tp.into is not None or tp.released or len(tp.E) >= _ROT_E
                or tp.nbytes >= _tp.ROTATE_BYTES):
            tp = _tp.current_tape()
    shape = y.shape
    n = y.size
    # common cases inline: an operand of the output's shape and dtype, or a Python number
    if ta and a._dtype is rdt and a._data.shape == shape:
        na = (a._node if a._tape is not None else tp.leaf_node(a)) if ga else -1
        sa, av = 1, a._data
    elif not ta:                                # a Python number (1 - x)
        na, sa, av = -1, (0 if n != 1 else 1), a
    else:
        na, sa, av = _operand(tp, a, ga, a._data if ta else a, rdt, shape, n, dt)
    if tb and b._dtype is rdt and b._data.shape == shape:
        nb = (b._node if b._tape is not None else tp.leaf_node(b)) if gb else -1
        sb, bv = 1, b._data
    elif not tb:
        nb, sb, bv = -1, (0 if n != 1 else 1), b
    else:
        nb, sb, bv = _operand(tp, b, gb, b._data if tb else b, rdt, shape, n, dt)
    save_a, save_b, save_y = _SAVES[op.opcode][(na >= 0) * 2 + (nb >= 0)]
    # constants are always kept (a replay needs them); tensors only when the VJP reads them
    save = tp.save
    if not ta:                                  # a Python number: one value in V
        V = tp.V[dt]
        V.append(av)
        ca = len(V) - 1
    else:
        ca = save(av, dt, a._tape is None) if (save_a or na < 0) else -1
    if nb < 0 and not tb:                       # a Python number: one float in V
        V = tp.V[dt]
        V.append(bv)
        cb = len(V) - 1
    elif b is a and ca != -1:                   # x * x: one saved value serves both
        cb = ca
    else:
        cb = save(bv, dt, tb and b._tape is None) if (save_b or nb < 0) else -1
    if tp.crefs is not None:                    # recording for a replay: tensor constants
        if na < 0 and ta:
            tp.crefs.append((dt, ca, a))
        if nb < 0 and tb:
            tp.crefs.append((dt, cb, b))
    cy = save(y, dt) if save_y else -1
    # the entry and its output node (Tape.entry, inlined on this hot path)
    e = len(tp.E) // K
    node = len(tp.N) // NK
    asz = tp.asz
    if save_a or save_b or save_y:
        tp.n_saving += 1
        fl = F_SAVES
    else:
        fl = 0
    slot = dt
    if n >= _tp.BIG:                 # big node: its own array, the entry runs on numpy
        slot = dt + 2
        fl |= F_BIG
    tp.N.frombytes(_PACK_N(asz[slot], n, slot, e, 0))
    asz[slot] += n
    if hidden:
        fl |= F_HIDDEN
    tp.E.frombytes(_PACK_E(op.opcode, nm if nm is not None else _OPNM[op.opcode], node, na, nb,
                           ca, cb, cy, sa, sb, -1, fl))
    out = object.__new__(Tensor)
    out._data = y
    out._dtype = rdt
    out._rg = True
    out._tape = tp
    out._node = node
    tp.live.append(_wref(out))
    if y.size >= _WATCH_FROM:        # liveness: its death may free saved values
        _tp.watch(out, tp, node)
    # version records (Tape.version_record, inlined on this hot path)
    if (save_a and ta) or (save_b and tb) or save_y:
        if tp.mark is None:
            tp.mark = _tp.INPLACE[0]
        sv = tp.sv
        if save_a and ta:
            vc = a._vc
            if vc is None:
                vc = a._vc = [0]
            sv.append((vc, vc[0], e, a._data.shape, "a"))
        if save_b and tb:
            vc = b._vc
            if vc is None:
                vc = b._vc = [0]
            sv.append((vc, vc[0], e, b._data.shape, "b"))
        if save_y:
            vc = out._vc = [0]
            sv.append((vc, 0, e, shape, "y"))
    return out


def _record_tn(opcode, nm, saves, a, c, y, rdt):
    """``_record_binary`` for a Tensor ``a`` requiring grad (op) a Python number ``c``, with
    ``rdt`` = a's floating dtype (the binary functions' fast path): the same entry, fewer
    branches. ``nm``, ``saves``: the row's grad_fn name id and ``_SAVES[opcode][2]``."""
    tp = a._tape
    if tp is None:                   # a leaf: the current tape, its node there
        tp = _tp._tls.__dict__.get("tape")
        if (tp is None or tp.into is not None or tp.released or len(tp.E) >= _ROT_E
                or tp.nbytes >= _tp.ROTATE_BYTES):
            tp = _tp.current_tape()
        lr = a._lref
        na = lr[1] if lr is not None and lr[0] is tp.wself else tp.leaf_node(a)
    elif tp.into is not None:
        tp, na = _tp.resolve(a)
    else:
        na = a._node
    dt = rdt.slot
    save_a, save_b, save_y = saves
    ca = tp.save(a._data, dt, a._tape is None) if save_a else -1
    V = tp.V[dt]                     # the number: one value in V
    V.append(c)
    cb = len(V) - 1
    cy = tp.save(y, dt) if save_y else -1
    e = len(tp.E) // K
    node = len(tp.N) // NK
    n = y.size
    fl = 0
    if save_a or save_b or save_y:
        tp.n_saving += 1
        fl = F_SAVES
    slot = dt
    if n >= _tp.BIG:
        slot = dt + 2
        fl |= F_BIG
    asz = tp.asz
    tp.N.frombytes(_PACK_N(asz[slot], n, slot, e, 0))
    asz[slot] += n
    tp.E.frombytes(_PACK_E(opcode, nm, node, na, -1, ca, cb, cy, 1, 0 if n != 1 else 1, -1,
                           fl))
    out = object.__new__(Tensor)
    out._data = y
    out._dtype = rdt
    out._rg = True
    out._tape = tp
    out._node = node
    tp.live.append(_wref(out))
    if n >= _WATCH_FROM:             # liveness: its death may free saved values
        _tp.watch(out, tp, node)
    if save_a or save_y:
        if tp.mark is None:
            tp.mark = _tp.INPLACE[0]
        if save_a:
            vc = a._vc
            if vc is None:
                vc = a._vc = [0]
            tp.sv.append((vc, vc[0], e, a._data.shape, "a"))
        if save_y:
            vc = out._vc = [0]
            tp.sv.append((vc, 0, e, y.shape, "y"))
    return out


def _record_tt(op, a, b, y, rdt, av=None, bv=None):
    """``_record_binary`` for two Tensors of dtype ``rdt`` (the binary functions' fast path);
    anything but operands of the output's shape on one tape goes to ``_record_binary``.
    av / bv: contiguous copies of a non-contiguous operand already made by the forward,
    saved instead of a second copy."""
    shape = y.shape
    if a._data.shape != shape or b._data.shape != shape or rdt.slot < 0:
        return _record_binary(op, a, b, y, rdt)
    ga = a._rg
    gb = b._rg
    tp = a._tape if ga else None
    tpb = b._tape if gb else None
    if tp is None:
        tp = tpb
        if tp is None:
            tp = _tp._tls.__dict__.get("tape")
            if (tp is None or tp.into is not None or tp.released or len(tp.E) >= _ROT_E
                    or tp.nbytes >= _tp.ROTATE_BYTES):
                tp = _tp.current_tape()
        elif tp.into is not None:
            return _record_binary(op, a, b, y, rdt)
    elif tp.into is not None or (tpb is not None and tpb is not tp):
        return _record_binary(op, a, b, y, rdt)
    if tp.crefs is not None and not (ga and gb):
        return _record_binary(op, a, b, y, rdt)     # a tensor constant in a recording
    if ga:
        if a._tape is not None:
            na = a._node
        else:
            lr = a._lref
            na = lr[1] if lr is not None and lr[0] is tp.wself else tp.leaf_node(a)
    else:
        na = -1
    if gb:
        if b._tape is not None:
            nb = b._node
        else:
            lr = b._lref
            nb = lr[1] if lr is not None and lr[0] is tp.wself else tp.leaf_node(b)
    else:
        nb = -1
    dt = rdt.slot
    opcode = op.opcode
    save_a, save_b, save_y = _SAVES[opcode][(na >= 0) * 2 + (nb >= 0)]
    ca = cb = cy = -1
    if save_a or na < 0:
        v = a._data if av is None else av
        if type(v) is _ndarray:
            ca = tp.save(v, dt, a._tape is None and av is None)
        else:                        # a numpy scalar (0-dim value): copied into V
            V = tp.V[dt]
            V.append(v)
            tp.nbytes += 8
            ca = len(V) - 1
    if b is a and ca != -1:          # x * x: one saved value serves both
        cb = ca
    elif save_b or nb < 0:
        v = b._data if bv is None else bv
        if type(v) is _ndarray:
            cb = tp.save(v, dt, b._tape is None and bv is None)
        else:
            V = tp.V[dt]
            V.append(v)
            tp.nbytes += 8
            cb = len(V) - 1
    if save_y:
        cy = tp.save(y, dt)
    e = len(tp.E) // K
    node = len(tp.N) // NK
    n = y.size
    fl = 0
    if save_a or save_b or save_y:
        tp.n_saving += 1
        fl = F_SAVES
    slot = dt
    if n >= _tp.BIG:
        slot = dt + 2
        fl |= F_BIG
    asz = tp.asz
    tp.N.frombytes(_PACK_N(asz[slot], n, slot, e, 0))
    asz[slot] += n
    tp.E.frombytes(_PACK_E(opcode, _OPNM[opcode], node, na, nb, ca, cb, cy, 1, 1, -1, fl))
    out = object.__new__(Tensor)
    out._data = y
    out._dtype = rdt
    out._rg = True
    out._tape = tp
    out._node = node
    tp.live.append(_wref(out))
    if n >= _WATCH_FROM:             # liveness: its death may free saved values
        _tp.watch(out, tp, node)
    if save_a or save_b or save_y:
        if tp.mark is None:
            tp.mark = _tp.INPLACE[0]
        sv = tp.sv
        if save_a:
            vc = a._vc
            if vc is None:
                vc = a._vc = [0]
            sv.append((vc, vc[0], e, shape, "a"))
        if save_b:
            vc = b._vc
            if vc is None:
                vc = b._vc = [0]
            sv.append((vc, vc[0], e, shape, "b"))
        if save_y:
            vc = out._vc = [0]
            sv.append((vc, 0, e, shape, "y"))
    return out


def _record_index(x, opname, idx, y, c=None, nm=None, aliases=None, shared=False):
    """gather / segsum / copy entries; ``aliases``: sizes of outputs sharing the node (unbind);
    ``shared``: idx is a read-only cached map (``cached_map``), kept rather than copied."""
    tp = _tape_for(x)
    a = _src(x, tp)
    dt = x._dtype.slot
    off = (tp.I.append_shared(idx) if shared else tp.index(idx)) if idx is not None else 0
    ci = tp.const(c) if c is not None else -1
    op = BY_NAME[opname]
    e, n = tp.entry(op.opcode, nm if nm is not None else _nm_default(op),
                    int(np.size(y)), dt, a, -1, p0=off, p1=0 if idx is None else idx.size, ci=ci)
    return tp, e, n


def _leaf_inplace_check(t):
    if t._rg and t._tape is None and _grad_on():
        _leaf_error(t)


def _bump(t, name=None):
    """Count an in-place write of ``t`` (its version counter, shared with its views); ``name``:
    the grad_fn it recorded, for the "modified by an inplace operation" message."""
    vc = t._vc
    if vc is None:
        vc = t._vc = [0]
    vc[0] += 1
    if name is not None:
        if len(vc) == 1:
            vc.append(name)
        else:
            vc[1] = name
    _tp.INPLACE[0] += 1
    return vc


_NUMBER_TYPES = (int, float, complex)


_VM_MULTI, _VM_MULTI_NOGRAD, _VM_NOGRAD, _VM_CUSTOM = 1, 2, 3, 4


_MULTI_TAIL = ("This view is the output of a function that returns multiple views. Such functions "
               "do not allow the output views to be modified inplace. You should replace the "
               "inplace operation by an out-of-place one.")


_NOGRAD_HEAD = ("A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. ")


_refcount = sys.getrefcount


def _leaf_error(t):
    """An in-place op with gradients on a tensor that requires grad but has no grad_fn."""
    if t._base is not None:                # a view made under no_grad
        _view_checks(t)
    raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def _view_checks(t, sub=None):
    """torch's refusals of an in-place write with gradients through the view ``t`` (``sub``:
    the grad_fn name of the view of t that a setitem writes, when it makes one)."""
    vm = t._vm
    if vm == _VM_CUSTOM:
        tp, node = _tp.resolve(t)
        raise RuntimeError(
            "Output %d of %s is a view and is being modified inplace. This view was created "
            "inside a custom Function (or because an input was returned as-is) and the autograd "
            "logic to handle view+inplace would override the custom backward associated with "
            "the custom Function, leading to incorrect gradients. This behavior is forbidden. "
            "You can fix this by cloning the output of the custom Function."
            % (tp.N[node * NK + 4], _tp._short(entry_name(tp, tp.N[node * NK + NPROD]))))
    if vm == _VM_MULTI:
        if sub is not None:
            nr, name = 0, sub
        else:
            tp, node = _tp.resolve(t)
            nr, name = tp.N[node * NK + 4], entry_name(tp, tp.N[node * NK + NPROD])
        raise RuntimeError("Output %d of %s is a view and is being modified inplace. %s" % (
            nr, _tp._short(name), _MULTI_TAIL))
    if vm == _VM_MULTI_NOGRAD:
        raise RuntimeError(_NOGRAD_HEAD + _MULTI_TAIL)
    if vm == _VM_NOGRAD:
        raise RuntimeError(_NOGRAD_HEAD + "Given that this use case is ambiguous and error-prone, "
                           "it is forbidden. You can clarify your code by moving both the view and "
                           "the inplace either both inside the no_grad block (if you don't want the "
                           "inplace to be tracked) or both outside (if you want the inplace to be "
                           "tracked).")
    root = t._base
    if root._rg and root._tape is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def _check_internal_overlap(d):
    """torch refuses to write a tensor of which several elements share one memory location."""
    if any(s == 0 and n > 1 for s, n in zip(d.strides, d.shape)):
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor "
                           "refers to a single memory location. Please clone() the tensor before "
                           "performing the operation.")


def _dense(d):
    """Non-overlapping and dense (a permutation of a contiguous layout), as torch asks."""
    dims = sorted((builtins.abs(s), n) for s, n in zip(d.strides, d.shape) if n > 1)
    step = d.itemsize
    for s, n in dims:
        if s != step:
            return False
        step *= n
    return True


def _check_overlap(d, v):
    """torch's partial-overlap refusal between the written-to tensor ``d`` and an input ``v``
    of the same storage (identical layouts are fine: ``x.add_(x)``)."""
    if type(d) is not _ndarray or type(v) is not _ndarray or not d.size or not v.size:
        return
    if not (_dense(d) and _dense(v)):
        return                               # torch: too hard to tell, allowed
    a0 = d.__array_interface__["data"][0] + builtins.sum(
        s * (n - 1) for s, n in zip(d.strides, d.shape) if s < 0)
    b0 = v.__array_interface__["data"][0] + builtins.sum(
        s * (n - 1) for s, n in zip(v.strides, v.shape) if s < 0)
    a1, b1 = a0 + d.nbytes, b0 + v.nbytes
    if (a0 == b0 and a1 == b1 and d.strides == v.strides) or not (a0 < b1 and b0 < a1):
        return
    raise RuntimeError("unsupported operation: some elements of the input tensor and the "
                       "written-to tensor refer to a single memory location. Please clone() the "
                       "tensor before performing the operation.")


def _shape_str(shape):
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _inplace_shape_check(t, other):
    """torch's errors for an in-place op (or copy_) whose operand does not broadcast to the
    written-to tensor's shape."""
    _check_shapes(t, other)
    shape = np.broadcast_shapes(t._data.shape, other._data.shape)
    if shape != t._data.shape:
        raise RuntimeError("output with shape %s doesn't match the broadcast shape %s"
                           % (_shape_str(t._data.shape), _shape_str(shape)))


def _expand_check(target, vshape, tname):
    """torch's setitem check: the value (leading 1s dropped) expands to the target's shape."""
    vs = tuple(vshape)
    while vs and vs[0] == 1:
        vs = vs[1:]
    if len(vs) > len(target):
        raise RuntimeError("expand(%s{%s}, size=%s): the number of sizes provided (%d) must be "
                           "greater or equal to the number of dimensions in the tensor (%d)"
                           % (tname, _shape_str(vshape), _shape_str(target), len(target),
                              len(vshape)))
    for i in range(1, len(vs) + 1):
        if vs[-i] != 1 and vs[-i] != target[-i]:
            raise RuntimeError("The expanded size of the tensor (%d) must match the existing size "
                               "(%d) at non-singleton dimension %d.  Target sizes: %s.  Tensor "
                               "sizes: %s" % (target[-i], vs[-i], len(target) - i,
                                              _shape_str(target), _shape_str(vs)))


def _proxy(t):
    """``t`` as the operand of an in-place op's out-of-place computation: its value and node,
    with a version counter of its own, so the values that computation saves of it can be told
    apart (``_own_saves``)."""
    p = _new(Tensor)
    p._data = t._data
    p._dtype = t._dtype
    if t._rg:
        p._rg = True
        if t._tape is not None and t._tape.into is not None:
            _tp.resolve(t)
        p._tape = t._tape
        p._node = t._node
        if p._tape is not None:
            _tp.register(p, p._tape)
    else:
        rt = _tp._tls.__dict__.get("tape")
        if rt is not None and rt.crefs is not None:
            # recording for replays (tapegrad.func): t is a constant of the op, which a
            # replay reads; the write must not change it
            p._data = t._data.copy()
    p._vc = [0]
    return p


def _own_saves(res, vc, n, mem):
    """The ``n`` values an in-place op's computation saved of its target (version records on
    counter ``vc``) become copies when they share the target's memory ``mem``, which the write
    is about to change: torch saves the original self for such ops (mul_, clamp_, pow_ ...).
    Ops whose derivative does not read self (add_, exp_ ...) save nothing and copy nothing."""
    tp = _tp.resolve(res)[0]
    sv, E, N = tp.sv, tp.E, tp.N
    i = len(sv)
    while n > 0 and i > 0:
        i -= 1
        rec = sv[i]
        if rec[0] is not vc:
            continue
        n -= 1
        e = rec[2]
        if type(rec[4]) is tuple:          # a custom Function's saved tensor: a copy in ctx
            _own_saved_tensor(tp, e, rec[4][-1], mem)
            continue
        code = E[e * K + (5 if rec[4] == "a" else 6 if rec[4] == "b" else 7)]
        if code <= -2:
            dt = N[E[e * K + 2] * NK + NDT] & 1
            j = -code - 2
            arr = tp.XO[dt][j]
            if np.may_share_memory(arr, mem):
                c = arr.copy()
                tp.XO[dt][j] = c
                tp.XA[dt][2 * j] = _address(c)
                tp.nbytes += c.nbytes


def _own_saved_tensor(tp, e, j, mem):
    """Tensor ``j`` that the custom Function of entry ``e`` saved becomes a copy when it
    shares the memory ``mem`` an in-place write is about to change (``_own_saves``)."""
    ctx = tp.pyfuncs[tp.E[e * K + P0]].ctx
    t = ctx._saved[j]
    if type(t._data) is _ndarray and np.may_share_memory(t._data, mem):
        c = _wrap(t._data.copy(), t._dtype)
        c._vc, c._rg = t._vc, t._rg
        ctx._saved = ctx._saved[:j] + (c,) + ctx._saved[j + 1:]


def _inplace_record(self, res, vc, n):
    """Store the recorded result ``res`` of an in-place op into ``self``; ``vc``/``n``: the
    version counter of self's stand-in and how many saved values it got (``_own_saves``)."""
    d = self._data
    sdt, rdt = self._dtype, res._dtype
    if rdt is not sdt and rdt._cat > sdt._cat:
        raise RuntimeError("result type %s can't be cast to the desired output type %s"
                           % (rdt._tname, sdt._tname))
    if res._data.shape != d.shape:
        raise RuntimeError("output with shape %s doesn't match the broadcast shape %s"
                           % (_shape_str(d.shape), _shape_str(res._data.shape)))
    if self._base is not None:
        _view_checks(self)
        if 0 in d.strides:
            _check_internal_overlap(d)
        if n > 0:
            _own_saves(res, vc, n, d)
        _write(self, None, res, "CopySlices")
        return self
    if sdt.slot < 0:                       # an integer target: values only (torch: no grad)
        return _store(self, res)
    if n > 0:
        _own_saves(res, vc, n, d)
    yvc = res._vc
    if rdt is not sdt:                     # same category, less precision: a hidden cast
        tp, node = _tp.resolve(res)
        res = _out(res._data.astype(sdt.np), sdt, tp, _cast_node(tp, res, node, sdt))
        yvc = None
    rd = res._data
    if type(d) is _ndarray:
        d[...] = rd
    else:                                  # a 0-dim value of its own: no alias of another's
        self._data = rd[()] if type(rd) is _ndarray else rd
    tp, node = res._tape, res._node          # (a fresh result: its tape is current)
    self._rg, self._tape, self._node = True, tp, node
    _tp.register(self, tp)
    ver = _bump(self, _NAMES[tp.E[tp.N[node * NK + NPROD] * K + NM]])
    if yvc is not None:                    # the result it saved is self now (torch's message
        sv = tp.sv                         # when self is modified again)
        for i in range(len(sv) - 1, -1, -1):
            rec = sv[i]
            if rec[0] is yvc:
                sv[i] = (ver, ver[0], rec[2], rec[3], rec[4])
                break
    if self._views:
        _rederive_views(self)
    return self


def _store(self, res):
    """Store an in-place op's unrecorded result ``res`` into ``self``."""
    rd = res._data
    sdt = self._dtype
    if res._dtype is not sdt and res._dtype._cat > sdt._cat:
        raise RuntimeError("result type %s can't be cast to the desired output type %s"
                           % (res._dtype._tname, sdt._tname))
    d = self._data
    if rd.shape != d.shape:
        raise RuntimeError("output with shape %s doesn't match the broadcast shape %s"
                           % (_shape_str(d.shape), _shape_str(rd.shape)))
    if type(d) is _ndarray:
        if self._base is not None and 0 in d.strides:
            _check_internal_overlap(d)
        d[...] = rd
    else:
        self._data = sdt.np.type(rd)       # a numpy scalar of its own
    _bump(self)
    return self


def _write(t, own, value, name, region=None):
    """``t[own] = value`` recorded with gradients (``own``: flat positions within t, None: all
    of t; ``region``: the shape the value fills), as torch's ``name`` (CopySlices,
    IndexPutBackward0, CopyBackwards, FillBackward3): the write goes to t's root, whose new node
    is ``old * mask + scatter(value)`` (hidden entries under the named add; mask 0 where
    written); t and every other view of the root then read from that node."""
    root = t._base if t._base is not None else t
    rd = root._arr()
    dt = root._dtype
    if region is None:
        region = t._data.shape
    whole = own is None and t._base is None
    if whole:
        pos = None
    else:
        pos = _positions(t).reshape(-1)
        if own is not None:
            pos = pos[own]
    vt = value if isinstance(value, Tensor) else None
    va = np.asarray(vt._data if vt is not None else value)
    vshape = va.shape
    if len(vshape) > len(region):          # leading 1s (checked by the caller) dropped
        vshape = vshape[len(vshape) - len(region):]
        va = va.reshape(vshape)
    vb = np.broadcast_to(va.astype(dt.np, copy=False), region)
    old = _wrap(rd, dt)                    # the root before the write, as an operand
    if root._rg:
        old._rg, old._tape, old._node = True, root._tape, root._node
        _tp.register(old, old._tape)
        if whole:
            a = _record_binary(BY_NAME["mul"], old, 0.0, rd, dt, hidden=True)
        else:
            mask = np.ones(rd.size, dt.np)
            mask[pos] = 0
            a = _record_binary(BY_NAME["mul"], old, _wrap(mask.reshape(rd.shape), dt), rd, dt,
                               hidden=True)
    elif whole:
        a = _wrap(np.zeros(rd.shape, dt.np), dt)
    else:
        kept = np.array(rd, order="C")
        kept.reshape(-1)[pos] = 0
        a = _wrap(kept, dt)
    if vt is not None and vt._rg:
        tp = _tape_for(vt, a if a._rg else None)
        vnode = _src(vt, tp)
        if vt._dtype is not dt:
            vnode = _cast_node(tp, vt, vnode, dt)
        if vshape != region:
            vnode = _expand_node(tp, vnode, vshape, region, dt.slot)
        if not whole:
            e, vnode = tp.entry(OPCODE["segsum"], _nm("SumBackward1"), rd.size, dt.slot, vnode, -1,
                                p0=tp.index(pos), p1=pos.size, ci=tp.const(1.0), fl=F_HIDDEN)
        b = _out(rd, dt, tp, vnode)
    elif whole:
        b = _wrap(np.ascontiguousarray(vb), dt)
    else:
        scattered = np.zeros(rd.size, dt.np)
        scattered[pos] = vb.reshape(-1)
        b = _wrap(scattered.reshape(rd.shape), dt)
    new = _record_binary(BY_NAME["add"], a, b, rd, dt, nm=_nm(name))
    if whole:                              # the write itself (views of the root see it)
        rd[...] = vb
    elif rd.flags.c_contiguous:
        rd.reshape(-1)[pos] = vb.reshape(-1)
    else:
        rd.flat[pos] = vb.reshape(-1)
    root._rg, root._tape, root._node = True, new._tape, new._node
    _tp.register(root, new._tape)
    _bump(root, name)
    _rederive_views(root)


def _offsets(d):
    """Memory offsets (in elements) of d's elements from its data pointer, in C order."""
    o = np.zeros(d.shape, np.int64)
    isz = d.itemsize
    nd = d.ndim
    for k in range(nd):
        n = d.shape[k]
        if n > 1:
            o += (np.arange(n, dtype=np.int64) * (d.strides[k] // isz)).reshape(
                (n,) + (1,) * (nd - k - 1))
    return o


def _positions(t):
    """Flat (C-order) positions of t's elements in its root (t itself when it is no view),
    read off the memory layout: a view shows part of its root's buffer."""
    d = t._data
    root = t._base
    if root is None:
        return np.arange(d.size, dtype=np.int64).reshape(np.shape(d))
    rd = root._data
    if type(d) is not _ndarray or type(rd) is not _ndarray or d.dtype != rd.dtype:
        raise NotImplementedError("in-place modification with gradients of this kind of view is "
                                  "not supported")
    if not d.size:
        return np.zeros(d.shape, np.int64)
    off, r = divmod(d.__array_interface__["data"][0] - rd.__array_interface__["data"][0],
                    rd.itemsize)
    pos = _offsets(d) + off
    if not rd.flags.c_contiguous:          # memory offsets to the root's C-order positions
        ro = _offsets(rd).reshape(-1)
        lo = int(ro.min())
        lut = np.full(int(ro.max()) - lo + 1, -1, np.int64)
        lut[ro - lo] = np.arange(ro.size, dtype=np.int64)
        k = pos - lo
        if r or k.min() < 0 or k.max() >= lut.size:
            r = 1
        else:
            pos = lut[k]
    if r or pos.min() < 0 or pos.max() >= rd.size:
        raise NotImplementedError("in-place modification with gradients of a view whose memory "
                                  "is no longer its base's is not supported")
    return pos


def _track_view(out, x, pos_fn=None, pos=None):
    """Make ``out`` (whose value shares x's memory) a view of x's root: it shares the version
    counter and the root keeps a weak reference to it, for ``_rederive_views``. Its place in
    the root is read off the memory layout when a write needs it (``_positions``), so
    ``pos_fn``/``pos`` are not needed (kept for callers)."""
    vc = x._vc
    if vc is None:
        vc = x._vc = [0]
    out._vc = vc
    root = x._base
    if root is None:
        root = x
    out._base = root
    vm = x._vm
    if not STATE.enabled:
        if x._rg:                          # torch: requires grad, without a grad_fn
            out._rg = True
        if not vm:
            vm = _VM_NOGRAD
    if vm:
        out._vm = vm
    if root._dtype.slot < 0:               # never gets a graph: nothing to re-derive
        return
    vs = root._views
    if vs is None:
        root._views = [weakref.ref(out)]
    else:
        vs.append(weakref.ref(out))
        if len(vs) > root._vlim:
            vs[:] = [r for r in vs if r() is not None]
            root._vlim = max(64, 2 * len(vs))


def _track_views(outs, x):
    """``_track_view(o, x)`` for each of the outputs ``outs`` of one function returning
    several views (unbind, split), which torch does not let be written with gradients."""
    vc = x._vc
    if vc is None:
        vc = x._vc = [0]
    root = x._base
    if root is None:
        root = x
    vm = x._vm
    if not vm:
        vm = _VM_MULTI if x._rg and STATE.enabled else _VM_MULTI_NOGRAD
    rg = x._rg and not STATE.enabled
    refs = []
    for o in outs:
        o._vc = vc
        o._base = root
        o._vm = vm
        if rg:
            o._rg = True
        refs.append(weakref.ref(o))
    vs = root._views
    if vs is None:
        root._views = refs
    else:
        vs += refs
        if len(vs) > root._vlim:
            vs[:] = [r for r in vs if r() is not None]
            root._vlim = max(64, 2 * len(vs))


def _rederive_views(root):
    """After a recorded write changed ``root``'s node, every live view of it (the written one
    included) reads from the new node, as torch regenerates a view's grad_fn
    (AsStridedBackward0) when its base's version moved: marked ``tape.STALE`` here, recorded
    on first use (``_rederive``), so views that are not used again cost no entry."""
    vs = root._views
    if not vs:
        return
    live = []
    stale = _tp.STALE
    for r in vs:
        v = r()
        if v is not None:
            live.append(r)
            v._rg, v._tape, v._node = True, stale, -1
    root._views = live
    root._vlim = max(64, 2 * len(live))


def _rederive(t):
    """(tape, node) of a view marked stale: an AsStridedBackward0 entry from its root's node
    (a slice entry when the view is a contiguous block of a contiguous root)."""
    root = t._base
    if root._tape is None:                 # the root was detached in place meanwhile
        t._rg, t._tape, t._node = False, None, -1
        raise RuntimeError("the base of this view no longer has a graph (detach_())")
    tp, rn = _tp.resolve(root)
    pos = _positions(t).reshape(-1)
    nm = _nm("AsStridedBackward0")
    dt = root._dtype.slot
    if pos.size and pos[-1] - pos[0] == pos.size - 1 and (
            pos.size == 1 or (t._data.flags.c_contiguous and root._data.flags.c_contiguous)):
        e, n = tp.entry(_SLICE_OP, nm, pos.size, dt, rn, -1, p0=int(pos[0]), p1=pos.size)
    else:
        e, n = tp.entry(OPCODE["gather"], nm, pos.size, dt, rn, -1, p0=tp.index(pos), p1=pos.size)
    t._tape, t._node = tp, n
    _tp.register(t, tp)
    return tp, n


_tp.REDERIVE[0] = _rederive


def _is_number(v):
    """A Python or numpy scalar number (torch treats numpy scalars as Python numbers; an
    ndarray, even 0-dim, is an array)."""
    t = type(v)
    if t is float or t is int or t is bool:
        return True
    return isinstance(v, (numbers.Number, np.bool_)) and not isinstance(v, complex)


def _check_number(v, opname, argname, pos):
    if not _is_number(v):
        raise TypeError("%s(): argument '%s' (position %d) must be Tensor, not %s"
                        % (opname, argname, pos, _tyname(v)))


def _check_shapes(a, b):
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        sa, sb = a._data.shape, b._data.shape
        if sa != sb:
            try:
                np.broadcast_shapes(sa, sb)
            except ValueError:
                # torch: "The size of tensor a (3) must match the size of tensor b (2) at
                # non-singleton dimension 0"
                n = max(len(sa), len(sb))
                pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
                for i in range(n - 1, -1, -1):
                    if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
                        raise RuntimeError("The size of tensor a (%d) must match the size of "
                                           "tensor b (%d) at non-singleton dimension %d"
                                           % (pa[i], pb[i], i))


def _check_broadcast(*ts):
    """torch's broadcast error over several operands (numbers and None skipped), in order:
    each one's shape against the broadcast of those before it."""
    acc = None
    for t in ts:
        if not isinstance(t, Tensor):
            continue
        sh = t._data.shape
        if acc is None or acc == sh:
            acc = sh
            continue
        n = max(len(acc), len(sh))
        pa, pb = (1,) * (n - len(acc)) + acc, (1,) * (n - len(sh)) + sh
        for i in range(n - 1, -1, -1):
            if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
                raise RuntimeError("The size of tensor a (%d) must match the size of tensor b "
                                   "(%d) at non-singleton dimension %d" % (pa[i], pb[i], i))
        acc = tuple(max(x, y) if x != 1 and y != 1 else (y if x == 1 else x)
                    for x, y in zip(pa, pb))


def _rename_last(t, name):
    tp, node = _tp.resolve(t)
    tp.E[tp.N[node * NK + NPROD] * K + NM] = _nm(name)    # array.array items: no numpy views


def _convert(t, dt):
    if GUARD[0] is not None and not dt.is_floating_point:
        _guard_sel(t, "vals")                    # (tapegrad.func: integers leave the recording)
    y = t._data.astype(dt.np)
    if t._rg and STATE.enabled and dt.slot < 0 and dt.is_floating_point:
        raise NotImplementedError(_NO_HALF_GRAD)      # (never a silently detached result)
    if t._rg and STATE.enabled and dt.slot >= 0:
        tp = _tape_for(t)
        a = _src(t, tp)
        e, n = tp.entry(OPCODE["cast"], _nm("ToCopyBackward0"), y.size, dt.slot, a, -1)
        return _out(y, dt, tp, n)
    return _wrap(y, dt)


def _red_args(fname, dim, keepdim, axis, keepdims):
    """(dims, keepdim, named1) for sum/mean: numpy's ``axis``/``keepdims`` spellings (torch
    accepts them), keepdim only with a dim (torch's signatures), dims None for all of them
    (None, (), []), named1: a dim was given (torch's ``*Backward1`` overload)."""
    if axis is not _ND:
        if dim is not _ND:
            raise TypeError("%s() got multiple values for argument 'dim'" % fname)
        dim = axis
    if keepdims is not _ND:
        if keepdim is not _ND:
            raise TypeError("%s() got multiple values for argument 'keepdim'" % fname)
        keepdim = keepdims
    if dim is _ND:
        if keepdim is not _ND:
            raise TypeError("%s() received an invalid combination of arguments - got (keepdim=%s, "
                            "), but expected one of:" % (fname, type(keepdim).__name__))
        return None, False, False
    if keepdim is _ND:
        keepdim = False
    if type(dim) is not int and dim is not None and not isinstance(dim, numbers.Integral):
        if isinstance(dim, Tensor):
            dim = int(dim.item())
        elif isinstance(dim, (tuple, list, Size)):
            if len(dim) == 0:
                dim = None
        else:
            raise TypeError("%s() received an invalid combination of arguments - got (dim=%s, ), "
                            "but expected one of:" % (fname, type(dim).__name__))
    return dim, bool(keepdim), True


_add_reduce = np.add.reduce


_intp = np.intp


_SUMS_MIN = 1 << 10            # from this many elements _sums' kernels sum over dims


def _seg_index(tp, shape, dims, size):
    """The tape offset of the segsum index map reducing ``shape`` over ``dims``: output
    number of each input element (``cached_map``)."""
    def make():
        kshape = tuple(1 if i in dims else s for i, s in enumerate(shape))
        return np.ascontiguousarray(np.broadcast_to(
            np.arange(_prod(kshape), dtype=np.int64).reshape(kshape), shape)).reshape(-1)
    return tp.I.append_shared(cached_map(("segsum", shape, dims), make))


def _reduce(input, dim, keepdim, dtype, mean_, named1=True):
    d = input._data
    dt = input._dtype
    if dtype is not None:
        dt = _as_dtype(dtype)
        d = d.astype(dt.np)
    elif dt._cat < 2:
        if mean_:
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either "
                               "a floating point or complex dtype. Got: %s" % dt._tname)
        dt = int64
        d = d.astype(np.int64)
    dims = _norm_dims(dim, d.ndim)
    if dims is None or d.ndim == 0 or len(dims) == d.ndim:
        # a full reduction (keepdim: of shape (1,) * ndim, still one element): the sum row.
        # np.add.reduce skips np.sum's and ndarray.mean's Python layers; the mean is
        # ndarray.mean's own formula (same value)
        if d.size >= _vmath.MIN and _vmath.OK and d.dtype.kind == "f" and d.flags.c_contiguous:
            y = _vmath.total(d.reshape(-1))         # in float64 (as sum()), vectorised
            if mean_:
                y = y / d.size
        else:
            y = _add_reduce(d, axis=None)
            if mean_:
                y = y.dtype.type(y / _intp(d.size)) if d.size else d.mean()
        y = dt.np.type(y)
        if keepdim:
            y = np.reshape(y, (1,) * d.ndim)
        if input._rg and STATE.enabled:
            n = max(d.size, 1)
            c = 1.0 / n if mean_ else 1.0
            name = ("MeanBackward1" if mean_ else "SumBackward1") if named1 else \
                ("MeanBackward0" if mean_ else "SumBackward0")
            if dtype is not None and dt is not input._dtype:
                input = _convert(input, dt)
            return _record_unary_sum(input, y, c, _nm(name))
        return _wrap(y, dt)
    shape = d.shape
    red = 1
    for i in dims:
        red *= shape[i]
    if d.dtype.kind == "f":
        # accumulated in float64 (numpy adds along an outer dimension row by row in d's
        # dtype); from _SUMS_MIN elements by _sums' kernels
        if d.size < _SUMS_MIN:
            y = _add_reduce(d, axis=dims, dtype=np.float64, keepdims=keepdim)
        else:
            from ._compiled import _sums  # deferred: Numba machine code, loaded on first use
            y = _sums.sum_dims(d if d.dtype.itemsize >= 4 else d.astype(np.float32), dims)
            if not keepdim:
                y = y.reshape(tuple(s for i, s in enumerate(shape) if i not in dims))
        if mean_:
            if red:
                y *= 1.0 / red
            else:
                y.fill(np.nan)
        y = y.astype(dt.np, copy=False)
    else:
        y = (np.mean if mean_ else np.sum)(d, axis=dims, keepdims=keepdim, dtype=dt.np)
    if input._rg and STATE.enabled:
        c = 1.0 / red if (mean_ and red) else (float("nan") if mean_ else 1.0)
        if dtype is not None and dt is not input._dtype:
            input = _convert(input, dt)
        tp = _tape_for(input)
        a = _src(input, tp)
        off = _seg_index(tp, shape, dims, d.size)
        e, n = tp.entry(_SEGSUM_OPCODE, _nm("MeanBackward1" if mean_ else "SumBackward1"),
                        y.size, dt.slot, a, -1, p0=off, p1=d.size, ci=tp.const(c))
        return _out(y, dt, tp, n)
    return _wrap(y, dt)


def _record_unary_sum(x, y, c, nm):
    tp = x._tape
    if tp is None:                   # a leaf: the current tape (_tape_for / _src, inlined)
        tp = _tp.current_tape()
        a = tp.leaf_node(x)
    elif tp.into is not None:
        tp, a = _tp.resolve(x)
    else:
        a = x._node
    C = tp.C
    C.append(c)
    dt = x._dtype.slot
    # Tape.entry, inlined: one output element, no saved values
    e = len(tp.E) // K
    n = len(tp.N) // NK
    slot = dt
    fl = 0
    if _tp.BIG <= 1:                 # (tests lower BIG to run everything on numpy)
        slot, fl = dt + 2, F_BIG
    elif tp.N[a * NK + NDT] >= 2:    # the operand is a big node
        fl = F_BIG
    asz = tp.asz
    tp.N.frombytes(_PACK_N(asz[slot], 1, slot, e, 0))
    asz[slot] += 1
    tp.E.frombytes(_PACK_E(_SUM_OPCODE, nm, n, a, -1, -1, -1, -1, 0, 0, len(C) - 1, fl))
    out = object.__new__(Tensor)
    out._data = y
    out._dtype = x._dtype
    out._rg = True
    out._tape = tp
    out._node = n
    tp.live.append(_wref(out))
    return out


_SUM_OPCODE = OPCODE["sum"]


_SEGSUM_OPCODE = OPCODE["segsum"]


_SUM0_NM = _name_id("SumBackward0")


def _shape_arg(shape, fname="view"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, (numbers.Integral, Tensor)):
            raise TypeError("%s(): argument '%s' (position 1) must be tuple of ints, but found "
                            "element of type %s at pos 0" % (fname, "size" if fname == "view"
                                                             else "shape", type(s).__name__))
    return tuple(int(s) for s in shape)


def _view_dtype(x, dt):
    """x.view(dtype): the same memory read as another dtype (the last dimension rescaled when
    the element sizes differ); no gradient, as torch's."""
    d = x._arr()
    if dt.itemsize != d.itemsize and d.ndim and d.shape[-1] > 1 and d.strides[-1] != d.itemsize:
        raise RuntimeError("self.stride(-1) must be 1 to view %s as %s (different element sizes), "
                           "but got %d" % (x._dtype._tname, dt._tname, d.strides[-1] // d.itemsize))
    try:
        y = d.view(dt.np)
    except ValueError as exc:
        raise RuntimeError(str(exc)) from None
    s = _wrap(y, dt)
    s._vc = _vcof(x)
    s._base = x._base if x._base is not None else x
    return s


def _check_infer(shape):
    """torch's errors for a shape with negative sizes: one -1 at most, nothing below."""
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError("invalid shape dimension %d at index %d of shape %s"
                               % (s, i, list(shape)))


def _view(x, shape, kind):
    shape = _shape_arg(shape, kind)
    if shape and min(shape) < 0:
        _check_infer(shape)
    d = x._arr()
    try:
        if kind == "view" and d.ndim and not d.flags.c_contiguous and d.size > 1:
            # numpy would copy; torch refuses when strides are incompatible
            y = d.view()
            y.shape = shape
        else:
            y = d.reshape(shape)
    except AttributeError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    except ValueError:
        raise RuntimeError("shape '%s' is invalid for input of size %d"
                           % (list(shape), d.size)) from None
    if x._rg and STATE.enabled:
        if kind == "view" or np.shares_memory(y, d):
            # torch: reshape of a non-contiguous tensor that can be viewed is _reshape_alias
            tp, e, n = _record_index(x, "copy", None, y, nm=_nm(
                "ViewBackward0" if kind == "view" or d.flags.c_contiguous else "ReshapeAliasBackward0"))
        else:
            # torch copies (CloneBackward0), then views the copy (UnsafeViewBackward0)
            tp, e, n = _record_index(x, "copy", None, y, nm=_nm("CloneBackward0"))
            e, n = tp.entry(OPCODE["copy"], _nm("UnsafeViewBackward0"), y.size, x._dtype.slot, n, -1)
        out = _out(y, x._dtype, tp, n)
    else:
        out = _wrap(y, x._dtype)
    if np.shares_memory(y, d) if y.size else True:
        _track_view(out, x, lambda p: p.reshape(shape))
    return out


def _block_offset(d, y, nk, tk, view):
    """Element offset of ``y = d[nk]`` (basic indexing) in ``d`` when y is a contiguous block
    of ``d``'s elements in C order (so a ``slice`` entry can record it), else -1. Offsets are
    logical (a node's values are its elements in C order, whatever the numpy layout): ``x[i]``
    is row i's block in any layout; other keys are recognised by address, in a C-contiguous
    ``d`` only."""
    if d.ndim == 0:
        return -1
    if tk is int:                          # x[i]: one row (or element)
        n0 = d.shape[0]
        return (nk + n0 if nk < 0 else nk) * (d.size // n0)
    if not d.flags.c_contiguous:
        return -1
    if view and y.flags.c_contiguous and y.size:  # any other basic index leaving a block
        off, r = divmod(_address(y) - _address(d), d.itemsize)
        # inside d's buffer (a 0-d index array makes numpy copy: such a y is elsewhere)
        if r == 0 and 0 <= off and off + y.size <= d.size:
            return off
    return -1


def _record_slice(x, off, y, nm):
    """Record y = x.flat[off:off + y.size] (a ``slice`` entry)."""
    return _record_offset(x, _SLICE_OP, off, y.size, y, nm)


def _record_offset(x, opcode, off, n, y, nm):
    """Record an offset row (``ops.OFFSET_OPS``: slice, embed) producing ``y`` from ``x``:
    P0 = the element offset ``off``, P1 = the range's length ``n``."""
    tp = x._tape
    if tp is None:
        tp = _tp.current_tape()
        a = tp.leaf_node(x)
    elif tp.into is not None:
        tp, a = _tp.resolve(x)
    else:
        a = x._node
    e, node = tp.entry(opcode, nm, y.size, x._dtype.slot, a, -1, p0=off, p1=n)
    out = object.__new__(Tensor)
    out._data = y
    out._dtype = x._dtype
    out._rg = True
    out._tape = tp
    out._node = node
    tp.live.append(_wref(out))
    return out


_SLICE_OP = OPCODE["slice"]


_CAST_OP = OPCODE["cast"]


_SLICE_NM = _name_id("SliceBackward0")


def _mm_core(a, b, m, k, n, y, name):
    rdt = a._dtype
    ga, gb = a._rg, b._rg
    if not (STATE.enabled and (ga or gb)):
        return _wrap(y, rdt)
    if rdt.slot < 0:
        raise RuntimeError("only floating point tensors can be differentiated")
    tp = _tape_for(a if ga else None, b if gb else None)
    dt = rdt.slot
    na = _src(a, tp) if ga else -1
    nb = _src(b, tp) if gb else -1
    sa = tp.save(np.ascontiguousarray(a._data), dt) if (gb or not ga) else -1
    if b is a and sa != -1:                     # x @ x: one saved value serves both
        sb = sa
    else:
        sb = tp.save(np.ascontiguousarray(b._data), dt) if (ga or not gb) else -1
    if tp.crefs is not None:                    # recording for a replay: tensor constants
        if not ga:
            tp.crefs.append((dt, sa, a))
        if not gb:
            tp.crefs.append((dt, sb, b))
    # the VJP of a product of _blas.MIN multiply-adds or more runs on numpy's side (F_BIG:
    # _blas's split products); below, the compiled sweep calls gemm itself (kernels.vjp_mm)
    # when the native table has BLAS (a 32 x 32 x 32 product's VJP: ~22 us through numpy's
    # side, ~6 compiled). Entries touching big nodes are F_BIG anyway.
    e, node = tp.entry(_MM_OPCODE, _nm(name), y.size, dt, na, nb, sa, sb, -1, m, k, -1,
                       F_SAVES | (F_BIG if m * k * n >= (_blas.MIN if _native.BLAS else _tp.BIG)
                                  else 0))
    out = object.__new__(Tensor)
    out._data = y
    out._dtype = rdt
    out._rg = True
    out._tape = tp
    out._node = node
    tp.live.append(_wref(out))
    if y.size >= _WATCH_FROM:                   # liveness: its death may free saved values
        _tp.watch(out, tp, node)
    if tp.mark is None:                         # version records (inlined)
        tp.mark = _tp.INPLACE[0]
    if gb:
        vc = _vcof(a)
        tp.sv.append((vc, vc[0], e, a._data.shape, "a"))
    if ga:
        vc = _vcof(b)
        tp.sv.append((vc, vc[0], e, b._data.shape, "b"))
    return out


_MM_OPCODE = OPCODE["mm"]


# ----------------------------------------------------------------------------- helpers
def entry_of(t):
    tp, node = _tp.resolve(t)
    return tp, tp.N[node * NK + NPROD]       # (array.array items: no numpy view needed)


def saves_result(t):
    """torch saves this op's result ``t`` for its backward, so writing ``t`` in place makes
    that backward raise "modified by an inplace operation" (a composite whose own entries do
    not read it gets the version record torch's node would have: on the entry producing t,
    which the message names)."""
    if t._tape is not None:
        tp, e = entry_of(t)
        if e >= 0:
            if tp.mark is None:
                tp.mark = _tp.INPLACE[0]
            vc = t._vc
            if vc is None:
                vc = t._vc = [0]
            tp.sv.append((vc, vc[0], e, t._data.shape, "y"))
    return t


def saves_inputs(t, *ins):
    """torch's node for ``t`` saves the tensors ``ins`` (the op's inputs): writing one of them
    in place afterwards makes that backward raise "modified by an inplace operation" (for a
    composite whose own entries do not read them; the record goes on the entry producing t)."""
    if t._tape is not None:
        tp, e = entry_of(t)
        if e >= 0:
            for x in ins:
                if x is not None and hasattr(x, "_vc"):
                    tp.version_record(e, x, "x")
    return t


def private_result(t):
    """The entry producing ``t`` keeps its own copy of the result it saved (torch's node saves
    the input there, not the result: writing ``t`` in place must not affect the backward)."""
    if t._tape is None:
        return t
    tp, e = entry_of(t)
    code = tp.E[e * K + SY] if e >= 0 else -1
    if code <= -2:
        d = tp.N[tp.E[e * K + 2] * NK + NDT] & 1
        j = -2 - code
        c = np.array(tp.XO[d][j], copy=True)
        tp.XO[d][j] = c
        tp.XA[d][2 * j] = _tp.address(c)
        vc = t._vc
        tp.sv = [r for r in tp.sv if not (r[2] == e and r[4] == "y" and r[0] is vc)]
    return t


def hide(*ts):
    """Mark the entries producing these (intermediate) tensors HIDDEN."""
    for t in ts:
        if t is not None:
            tp = t._tape
            if tp is None:
                continue
            if tp.into is None:                  # (entry_of, inlined: composites hide a few)
                e = tp.N[t._node * NK + NPROD]
            else:
                tp, e = entry_of(t)
            if e >= 0:
                tp.E[e * K + FL] |= F_HIDDEN


def _hide_below(out, *inputs):
    """Hide every entry of a composition between ``inputs`` and ``out`` (not ``out``'s). Tap
    marks of composites used inside (stack's, bmm's) are removed unless their operands are
    ``inputs`` themselves: the taps ``out``'s node reads are the composition's own."""
    if out._tape is None:
        return
    tp, e = entry_of(out)
    stop = set()
    for t in inputs:
        if isinstance(t, Tensor) and t._tape is not None:
            stop.add(_tp.resolve(t)[1])
        elif isinstance(t, Tensor) and t._rg:
            lr = t._lref
            if lr is not None and lr[0] is tp.wself:
                stop.add(lr[1])
    E = _tp.view_i64(tp.E)
    N = _tp.view_i64(tp.N)
    E2 = E.reshape(-1, K)
    todo = list(_operands(E2, e))
    seen = set()
    while todo:
        n = todo.pop()
        if n < 0 or n in stop or n in seen:
            continue
        seen.add(n)
        p = int(N[n * NK + NPROD])
        if p < 0:
            continue
        E[p * K + FL] |= F_HIDDEN
        nm_ = int(E[p * K + NM])
        ops_ = _operands(E2, p)
        if nm_ in TAPS and not all(m in stop for m in ops_ if m >= 0):
            E[p * K + NM] = name_id(NAMES[nm_])        # an inner composite's tap
        todo.extend(ops_)
    del E, N, E2


def named(t, name, arity=None):
    """Give the entry producing ``t`` torch's name (when ``t`` was recorded); ``arity``: the
    node lists that many inputs, found through ``tap``/``tap_entry`` marks below it."""
    if t._tape is not None:
        if arity is None:
            _rename_last(t, name)
        else:
            _set_name_id(t, multi_name_id(name, arity))
    return t


def _set_name_id(t, nid):
    tp, e = entry_of(t)
    if e >= 0:
        tp.E[e * K + NM] = nid


def tap_entry(t, *slots):
    """Mark the (hidden) entry producing ``t``: its operands are inputs ``slots`` of the
    composite node named with an arity above it (see ``autograd.graph.TAPS``)."""
    if t is not None and t._tape is not None:
        tp, e = entry_of(t)
        if e >= 0:
            E = tp.E
            E[e * K + NM] = tap_name_id(entry_name(tp, e), slots)
            E[e * K + FL] |= F_HIDDEN
    return t


def _reshape_view(x, shape, name):
    """A view with the same elements in the same order under a new shape (a copy entry)."""
    d = x._arr()
    y = d.reshape(shape)
    if x._rg and STATE.enabled:
        tp, e, n = _record_index(x, "copy", None, y, nm=_nm(name))
        out = _out(y, x._dtype, tp, n)
    else:
        out = _wrap(y, x._dtype)
    _track_view(out, x, lambda p: p.reshape(shape))
    return out


def as_result(t, shape, name, copy=False):
    """The value of ``t`` in shape ``shape`` as an op's result named ``name`` (an identity
    entry). Not a view, as torch's result is new memory: ``t`` is an intermediate of a
    composite (its memory is reused and its version counter shared, so a write to the result
    is seen by whatever saved t), or, with ``copy``, a tensor the caller was given (an input,
    which must not change when the result is written: copied)."""
    d = t._arr()
    if t._base is not None:                # a view shows someone else's memory
        copy = True
    y = np.array(d).reshape(shape) if copy else d.reshape(shape)
    if t._rg and STATE.enabled:
        tp, e, n = _record_index(t, "copy", None, y, nm=_nm(name))
        out = _out(y, t._dtype, tp, n)
    else:
        out = _wrap(y, t._dtype)
    if not copy:
        vc = t._vc
        if vc is None:
            vc = t._vc = [0]
        out._vc = vc
    return out


def tap(t, slot):
    """``t`` through a hidden identity entry marked as input ``slot`` of a composite node (for
    inputs used by several entries); ``t`` itself when it records nothing."""
    if isinstance(t, Tensor) and t._rg and STATE.enabled:
        return tap_entry(_reshape_view(t, t._data.shape, "ViewBackward0"), slot)
    return t


class TensorMethods:
    """Tensor methods of this module, attached by tapegrad/_methods.py."""

    # ---- in place (the machinery: "in-place writes" below the class)
    def _inplace(self, other, f, simple=False):
        """``self = f(self, other)`` written into self's memory (add_, mul_, clamp_, ...): the
        op is computed out of place and its result stored, recorded when it requires grad
        (an operand may, even if self does not). ``simple``: f reads no tensor but self and
        other (the arithmetic operators), so when neither requires grad nothing records."""
        if isinstance(other, Tensor):
            if other._vc is self._vc and other is not self and self._vc is not None:
                _check_overlap(self._data, other._data)
            og = other._rg
        else:
            og = False
        if not STATE.enabled or (simple and not self._rg and not og):
            return _store(self, f(_wrap(self._data, self._dtype), other))
        if self._rg and self._tape is None:
            _leaf_error(self)
        p = _proxy(self)
        vc = p._vc
        n0 = _refcount(vc)
        res = f(p, other)
        if res._rg:
            n = _refcount(vc) - n0             # version records of p: one reference each
            return _inplace_record(self, res, vc, n)
        if self._rg:                       # (every op records a tensor requiring grad)
            raise NotImplementedError("this in-place operation has no derivative")
        return _store(self, res)
