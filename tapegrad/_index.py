"""How torch reads an index key: ``x[key]`` and ``x[key] = v``.

torch does not follow numpy's rules. It applies the key's parts one after another
(``applySlicing``): an int *selects* (the dimension goes away at once), a slice slices, None
and a Python/0-dim bool unsqueeze; index tensors, lists and masks are only collected, with
their position in the tensor left by those basic steps, and ``at::index`` then gathers with
them (numpy's rule *among the index tensors only*: adjacent ones put their broadcast shape in
place, separated ones in front). So ``x[0, :, idx]`` on (3, 4, 5) is (4, 2) in torch, (2, 4)
in numpy. ``parse`` reads a key the torch way and turns it into one numpy key with the same
result (numpy's own key when numpy agrees, an explicit open mesh of index arrays otherwise),
and gives the flat positions of the selected elements (for the gather entry recording it).

Other torch rules kept here: a non-tuple sequence (a list) holding a tensor, sequence, slice,
``...`` or None is read as a tuple (numpy's legacy rule, lists shorter than 32); lists become
long index tensors (floats truncated) or masks (bools); uint8 tensors are masks (deprecated,
with a warning); 0-dim integer tensors select; index tensors of other dtypes, Python floats and
numpy bools are refused; full slices inside a tuple cost nothing (a key of only those is an
alias); a negative step is refused.
"""
import numbers
import operator
import warnings

import numpy as np

from ._core.names import chain_name_id as _chain_name_id, name_id as _name_id
from .tensor import Tensor, bool_, uint8, int32, int64
from ._state import STATE
from .tensor import _BY_NP, _ndarray, _wrap
from ._record import _leaf_inplace_check
from ._record import (_NUMBER_TYPES, _SLICE_NM, _SLICE_OP, _block_offset, _bump,
                      _check_internal_overlap, _check_overlap, _expand_check, _leaf_error, _nm,
                      _out, _record_index, _record_offset, _record_slice, _shape_str, _track_view,
                      _view, _view_checks, _write)
import builtins
from ._shape import expand
from ._record import _positions
from ._shape import _diag_dims, _dim, _flat, _kept, _merge, _put_flat, index_map


def _setitem_shape_error(d, key, nk, vd):
    """Raise torch's error for a setitem value that does not fit the indexed region."""
    target = np.shape(d[nk])
    vshape = np.shape(vd)
    if parse(key, d.shape).adv:
        try:
            np.broadcast_shapes(vshape, target)
        except ValueError:
            raise RuntimeError("shape mismatch: value tensor of shape %s cannot be broadcast to "
                               "indexing result of shape %s" % (_shape_str(vshape),
                                                                _shape_str(target)))
        return
    tname = _wrap(np.zeros(0, d.dtype), _BY_NP[d.dtype]).type()
    _expand_check(target, vshape, tname)


def _whole_key(key, shape):
    """The key selects all of a tensor as itself (only full slices and Ellipsis): torch then
    writes the tensor, not a view of it."""
    ks = key if type(key) is tuple else (key,)
    nd = len(shape)
    i = 0
    for k in ks:
        if k is Ellipsis:
            i += nd - builtins.sum(1 for q in ks if q is not Ellipsis)
            continue
        if type(k) is not slice or i >= nd or k.indices(shape[i]) != (0, shape[i], 1):
            return False
        i += 1
    return True


def _setitem_grad(t, key, nk, value):
    """``t[key] = value`` with gradients (t or the value requires grad), as torch: the tensor
    itself for a whole key (copy_: CopyBackwards, a 0-dim value: FillBackward3), a view for a
    basic key (CopySlices), index_put_ for an advanced one (IndexPutBackward0; CopySlices
    through a view)."""
    d = t._data
    vt = value if isinstance(value, Tensor) else None
    vshape = vt._data.shape if vt is not None else ()
    k = parse(key, d.shape)
    sub, advanced = k.name, k.adv
    whole = not advanced and _whole_key(key, d.shape)
    if t._rg and t._tape is None:          # a leaf: torch names a view of it unless whole
        if t._base is None and not whole and not advanced:
            raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        _leaf_error(t)
    if t._base is not None:
        _view_checks(t, None if whole or advanced else sub)
    own = np.arange(d.size, dtype=np.int64).reshape(d.shape)[nk]
    target = own.shape
    if vshape != target:
        if advanced:
            _setitem_shape_error(d, key, nk, np.broadcast_to(0, vshape))
        else:
            _expand_check(target, vshape, t.type())
    if not advanced:
        tv = d[nk]
        if t._base is not None and 0 in tv.strides:
            _check_internal_overlap(tv)
        if vt is not None and vt._vc is t._vc and vt is not t and t._vc is not None:
            _check_overlap(tv, vt._data)
    if whole and t._base is None:          # torch's copy_to: fill_ from a 0-dim value
        name = "FillBackward3" if vshape != target and not vshape else "CopyBackwards"
        own = None
    else:
        # torch: index_put_ on the tensor itself; a key with basic steps (an int, a partial
        # slice, None) indexes a view first, so the write is a CopySlices
        name = "IndexPutBackward0" if advanced and t._base is None and not k.names else "CopySlices"
        own = own.reshape(-1) if own.ndim else own.reshape(1)
    if vt is not None and vt._rg and vshape != target and vt._data.ndim and not advanced:
        # torch views the value without its leading 1s and expands it (both visible)
        k = 0
        while k < len(vshape) and vshape[k] == 1:
            k += 1
        value = expand(_view(vt, (vshape[k:],), "view"), target)
    _write(t, own, value, name, target)


def _np_key(key, shape):
    """The numpy key selecting what torch's ``t[key]`` selects in a tensor of ``shape``
    (torch's reading of the key: ``_index.parse``; raises torch's errors)."""
    if type(key) is int and shape and -shape[0] <= key < shape[0]:
        return key
    return parse(key, shape).np


def _getitem(x, key):
    tk = type(key)
    if tk is slice and x._rg and key.step is None:   # x[a:b]: rows a..b, a block in C order
        d = x._data
        if type(d) is _ndarray and d.ndim and STATE.enabled:
            n0 = d.shape[0]
            start, stop, step = key.indices(n0)
            y = d[key]
            out = _record_offset(x, _SLICE_OP, start * (d.size // n0) if y.size else 0,
                                 y.size, y, _SLICE_NM)
            _track_view(out, x, lambda p: p[key])
            return out
    d = x._arr()
    k = None
    if tk is int and d.ndim and -d.shape[0] <= key < d.shape[0]:     # x[i]
        nk, name, advanced = key, "SelectBackward0", False
        y = d[key] if d.ndim > 1 else d[key, ...]      # (an element: a 0-dim view)
    else:
        k = parse(key, d.shape)       # torch's reading of the key (errors included)
        nk, name, advanced = k.np, k.name, k.adv
        tk = tuple
        y = d[nk]
    view = type(y) is _ndarray
    if not view:                          # all ints: a 0-dim view of the element (as torch's)
        y = d[nk + (Ellipsis,)] if type(nk) is tuple else d[nk, ...]
        view = True
    elif advanced:
        if not y.flags.c_contiguous:
            y = np.ascontiguousarray(y)   # torch's advanced-indexing result is contiguous
        if y.shape != k._out:             # (an empty selection of a 0-dim tensor)
            y = y.reshape(k._out)
    if x._rg and STATE.enabled:
        off = -1 if advanced else _block_offset(d, y, nk, tk, view)
        nm = _nm(name) if k is None else k.name_id()
        if off >= 0:                      # a contiguous block: an offset entry, no index map
            out = _record_slice(x, off, y, nm)
        else:
            if k is None:
                k = parse(key, d.shape)
            tp, e, n = _record_index(x, "gather", k.positions().reshape(-1), y, nm=nm)
            out = _out(y, x._dtype, tp, n)
            if advanced:    # torch's IndexBackward0 saves its integer index tensors
                for t in (key if type(key) is tuple else (key,)):
                    if isinstance(t, Tensor) and t._dtype._cat == 1:
                        tp.version_record(e, t, "x")
    else:
        out = _wrap(y, x._dtype)
    if not advanced:
        _track_view(out, x, lambda p: p[nk])
    return out


__all__ = ["parse", "Key"]

_INVALID = ("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
            "valid indices (got %s)")
_BAD_DTYPE = "tensors used as indices must be long, int, byte or bool tensors"
_ZERO_DIM = ("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")


class Key:
    """A key read the torch way for a tensor of a given shape.

    np: the numpy key giving torch's result in one subscript (basic: a view).
    adv: whether it gathers (IndexBackward0, a copy) rather than views.
    names: the grad_fn names of torch's basic steps in order (select/slice/unsqueeze).
    name: the grad_fn of the result.
    """
    __slots__ = ("np", "adv", "names", "name", "_cur", "_fixed", "_arrays", "_shape", "_out",
                 "_bpos", "_bshape", "_key")

    def name_id(self):
        """The recorded name: torch's outermost node, carrying the chain of nodes torch has
        below it (one per basic step; autograd.graph.CHAIN) when there are several."""
        names = self.names
        if self.adv:
            if not names:
                return _name_id("IndexBackward0")
            return _chain_name_id(("IndexBackward0",) + tuple(reversed(names)))
        if len(names) <= 1:
            return _name_id(self.name)
        return _chain_name_id(tuple(reversed(names)))

    def positions(self):
        """Flat (C-order) positions in the indexed tensor of the result's elements, an int64
        array of the result's shape (O(result size), independent of the tensor's size)."""
        if self._cur is None:                     # a fast-path key: read it in full
            full = _parse(self._key, self._shape)
            self._cur, self._fixed, self._arrays, self._bpos, self._bshape = (
                full._cur, full._fixed, full._arrays, full._bpos, full._bshape)
        shape = self._shape
        cst = [1] * len(shape)
        for j in range(len(shape) - 2, -1, -1):
            cst[j] = cst[j + 1] * shape[j + 1]
        off = 0
        for j, v in self._fixed.items():
            off += v * cst[j]
        arrays = self._arrays
        block = None                              # the index arrays' part, broadcast shape
        if arrays:
            cur = self._cur
            for p, a in arrays:
                e = cur[p]
                if e[0] >= 0:
                    t = (e[1] + a * e[2]) * cst[e[0]]
                    block = t if block is None else block + t
            if block is None or block.shape != self._bshape:
                block = np.broadcast_to(np.int64(0) if block is None else block, self._bshape)
        total = np.int64(off)
        axis = 0
        idx_at = {p for p, _ in arrays}
        for k, e in enumerate(self._cur):
            if k in idx_at:
                continue
            if block is not None and axis == self._bpos:
                total = np.add.outer(total, block)
                block = None
            step = e[2] * cst[e[0]] if e[0] >= 0 else 0
            start = e[1] * cst[e[0]] if e[0] >= 0 else 0
            total = np.add.outer(total, np.arange(start, start + e[3] * step, step, dtype=np.int64)
                                 if step else np.zeros(e[3], np.int64))
            axis += 1
        if block is not None:
            total = np.add.outer(total, block)
        return np.asarray(total, np.int64).reshape(self._out)

    def _coords(self):
        """(position in the intermediate, coordinate array in the result's layout) of each
        dimension left by the basic steps."""
        cur, out, arrays = self._cur, self._out, self._arrays
        r = len(out)
        idx_at = {p: a for p, a in arrays}
        nb = r - (len(cur) - len(arrays)) if arrays else 0   # the broadcast index shape's rank
        bpos = self._bpos
        res = []
        axis = 0
        for k, e in enumerate(cur):
            a = idx_at.get(k)
            if a is not None:
                shp = (1,) * bpos + (1,) * (nb - a.ndim) + a.shape + (1,) * (r - bpos - nb)
                res.append((k, a.reshape(shp)))
                continue
            if arrays and axis == bpos:
                axis += nb                              # the index block's axes come here
            shp = [1] * r
            shp[axis] = e[3]
            res.append((k, np.arange(e[3], dtype=np.int64).reshape(shp)))
            axis += 1
        return res

    def mesh(self):
        """One index array (of the result's shape) per dimension of the indexed tensor."""
        out = self._out
        ms = [None] * len(self._shape)
        for j, v in self._fixed.items():
            ms[j] = np.broadcast_to(np.int64(v), out)
        for k, coord in self._coords():
            e = self._cur[k]
            if e[0] >= 0:
                ms[e[0]] = np.broadcast_to(e[1] + coord * e[2], out)
        return tuple(ms)


def _is_seq(o):
    """Python's PySequence_Check as torch uses it (numpy scalars and dicts are not)."""
    return (hasattr(type(o), "__getitem__") and not isinstance(o, (dict, np.generic))
            and not isinstance(o, type))


def _type_name(o):
    t = type(o)
    return ("numpy." + t.__name__) if t.__module__ == "numpy" else t.__name__


def _tupleize(key):
    """(parts, simple): the key's parts; simple for the single keys torch handles before
    reading a tuple (int, slice, None, ..., bool: no dimension count, no full-slice skip)."""
    if type(key) is tuple:
        return key, False
    if key is None or key is Ellipsis or key is True or key is False or type(key) is slice:
        return (key,), True
    if isinstance(key, numbers.Integral) and not isinstance(key, np.bool_):
        return (key,), True
    if isinstance(key, (Tensor, np.ndarray)) or not _is_seq(key):
        return (key,), False
    try:
        n = len(key)
    except TypeError:
        return (key,), False
    if n < 32:
        for i in range(n):
            o = key[i]
            if (isinstance(o, Tensor) or type(o) is slice or o is None or o is Ellipsis
                    or _is_seq(o)):
                return tuple(key[i] for i in range(n)), False
    return (key,), False


def _data_of(o):
    """A nested sequence's values as a numpy array (tensors inside read as their values)."""
    if isinstance(o, Tensor):
        return o._data
    if isinstance(o, str):
        raise TypeError("new(): invalid data type 'str'")
    if isinstance(o, (list, tuple, range)):
        return [_data_of(v) for v in o]
    return o


def _seq_index(o):
    """A list (or other sequence) as torch's indexing tensor: bools make a mask, anything
    else a long tensor (floats truncated)."""
    a = np.asarray(o) if isinstance(o, np.ndarray) else np.asarray(_data_of(o))
    if a.dtype.kind in "USO":
        raise TypeError("new(): invalid data type '%s'" % ("str" if a.dtype.kind in "US"
                                                           else "object"))
    if a.dtype == np.bool_:
        return a, True
    return a.astype(np.int64), False


def parse(key, shape):
    """Read ``key`` the torch way for a tensor of ``shape``; raises torch's errors."""
    tk = type(key)
    if tk is tuple:
        if len(key) <= len(shape):
            k = _int_slice_tuple(key, shape)
            if k is not None:
                return k
    elif tk is Tensor:
        dt = key._dtype
        if (dt is int64 or dt is int32) and key._data.ndim and shape:
            return _one_index(key, np.asarray(key._data, np.int64), shape)
    elif tk is list and shape and key and len(key) < 32:
        for v in key:
            if type(v) is not int:
                break
        else:
            return _one_index(key, np.array(key, np.int64), shape)
    return _parse(key, shape)


def _fast_key(key, shape, np_key, adv, names, out):
    k = Key()
    k._key, k._shape, k.np, k.adv, k.names, k._out = key, tuple(shape), np_key, adv, names, out
    k.name = "IndexBackward0" if adv else (names[-1] if names else "AliasBackward0")
    k._cur = None
    return k


def _int_slice_tuple(key, shape):
    """A tuple of ints and slices (x[i, j], x[1:, ::2]): numpy reads it as torch does once
    the ints are in range and the steps positive. None for any other tuple."""
    names = []
    out = []
    for j, c in enumerate(key):
        tc = type(c)
        n = shape[j]
        if tc is int:
            if not -n <= c < n:
                raise IndexError("index %d is out of bounds for dimension %d with size %d"
                                 % (c, j, n))
            names.append("SelectBackward0")
        elif tc is slice:
            step = c.step
            if step is not None and (type(step) is not int or step <= 0):
                return None
            start, stop, st = c.indices(n)
            if not (start == 0 and stop == n and st == 1):
                names.append("SliceBackward0")
            out.append(len(range(start, stop, st)))
        else:
            return None
    # all ints: numpy's element view (a 0-dim array sharing memory) takes a trailing ...
    np_key = key + (Ellipsis,) if len(key) == len(shape) and not out else key
    return _fast_key(key, shape, np_key, False, names, tuple(out) + tuple(shape[len(key):]))


def _one_index(key, a, shape):
    """x[idx] for one long/int index tensor or list of ints (int64 array ``a``): numpy's
    x[idx] once the bounds are checked."""
    n = shape[0]
    if a.size:
        lo, hi = a.min(), a.max()
        if lo < -n or hi >= n:
            _index_arrays([(0, a, False)], list(shape))       # raises torch's error
        if lo < 0:
            a = np.where(a < 0, a + n, a)
    k = _fast_key(key, shape, a, True, [], a.shape + tuple(shape[1:]))
    k._cur = [[j, 0, 1, shape[j]] for j in range(len(shape))]
    k._fixed, k._arrays, k._bpos, k._bshape = {}, [(0, a)], 0, a.shape
    return k


def _parse(key, shape):
    parts, simple = _tupleize(key)
    ndim = len(shape)
    spec = 0
    for c in parts:
        if isinstance(c, Tensor):
            spec += c._data.ndim if c._dtype is bool_ or c._dtype is uint8 else 1
        elif not (c is None or c is Ellipsis or c is True or c is False):
            spec += 1
    if spec > ndim and not simple:
        raise IndexError("too many indices for tensor of dimension %d" % ndim)
    cur = [[j, 0, 1, shape[j]] for j in range(ndim)]   # [x dim or -1, start, step, length]
    fixed = {}
    recs = []          # (position, array, is a mask)
    names = []
    dim = 0
    mesh = False       # numpy's own key would differ: build the open mesh
    for pos, c in enumerate(parts):
        if c is None:
            cur.insert(dim, [-1, 0, 1, 1])
            dim += 1
            names.append("UnsqueezeBackward0")
            continue
        if c is Ellipsis:
            dim += ndim - spec
            continue
        if c is True or c is False:
            cur.insert(dim, [-1, 0, 1, 1])
            recs.append((dim, np.zeros(1 if c else 0, np.int64), False))
            dim += 1
            names.append("UnsqueezeBackward0")
            mesh = True
            continue
        if type(c) is slice:
            if dim >= len(cur):
                if ndim == 0:
                    raise IndexError("slice() cannot be applied to a 0-dim tensor.")
                raise IndexError("too many indices for tensor of dimension %d" % ndim)
            step = 1 if c.step is None else operator.index(c.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step < 0:
                raise ValueError("step must be greater than zero")
            e = cur[dim]
            n = e[3]
            start, stop, _ = slice(c.start, c.stop, step).indices(n)
            if simple or not (start == 0 and stop == n and step == 1):
                e[1] += start * e[2]
                e[2] *= step
                e[3] = len(range(start, stop, step))
                names.append("SliceBackward0")
                if e[0] < 0 and e[3] == 0:
                    mesh = True                 # an unsqueezed dim sliced away
            dim += 1
            continue
        if isinstance(c, Tensor):
            dt = c._dtype
            if c._data.ndim == 0:
                if dt is bool_ or dt is uint8:
                    cur.insert(dim, [-1, 0, 1, 1])
                    recs.append((dim, np.zeros(1 if c._data else 0, np.int64), False))
                    dim += 1
                    names.append("UnsqueezeBackward0")
                    mesh = True
                    continue
                if dt._cat != 1:
                    raise IndexError(_BAD_DTYPE)
                c = int(c._data)                         # an integer: select (below)
            elif dt is int64 or dt is int32:
                recs.append((dim, np.asarray(c._data, np.int64), False))
                dim += 1
                continue
            elif dt is bool_ or dt is uint8:
                if dt is uint8:
                    warnings.warn("indexing with dtype torch.uint8 is now deprecated, please use a "
                                  "dtype torch.bool instead.", UserWarning, stacklevel=3)
                m = np.asarray(c._data, np.bool_)
                recs.append((dim, m, True))
                dim += m.ndim
                continue
            else:
                raise IndexError(_BAD_DTYPE)
        elif isinstance(c, np.bool_):
            raise IndexError(_INVALID % _type_name(c))
        elif isinstance(c, np.ndarray) and c.ndim == 0 and c.dtype.kind in "iu":
            c = int(c)
        elif isinstance(c, np.ndarray) or (_is_seq(c) and not isinstance(c, numbers.Integral)):
            a, is_mask = _seq_index(c)
            recs.append((dim, a, is_mask))
            dim += a.ndim if is_mask else 1
            continue
        elif isinstance(c, float):
            raise IndexError(_INVALID % "float")
        if not isinstance(c, numbers.Integral):
            try:
                c = operator.index(c)
            except TypeError:
                raise IndexError(_INVALID % _type_name(c)) from None
        # an integer: select
        i = int(c)
        if not -2 ** 63 <= i < 2 ** 63:
            raise ValueError("Overflow when unpacking long long")
        if dim >= len(cur):
            if simple and ndim == 0 and i == 0:
                raise IndexError(_ZERO_DIM)
            raise IndexError("index %d is out of bounds for dimension %d with size 0" % (i, pos))
        e = cur[dim]
        n = e[3]
        if not -n <= i < n:
            raise IndexError("index %d is out of bounds for dimension %d with size %d" % (i, pos, n))
        if i < 0:
            i += n
        if e[0] >= 0:
            fixed[e[0]] = e[1] + i * e[2]
        del cur[dim]
        names.append("SelectBackward0")

    k = Key()
    k._cur, k._fixed, k._shape, k._key, k._bshape = cur, fixed, tuple(shape), key, ()
    k.names = names
    inter = [e[3] for e in cur]
    arrays = _index_arrays(recs, inter) if recs else []
    k._arrays = arrays
    if arrays:
        mesh = mesh or bool(fixed)
        P = [p for p, _ in arrays]
        try:
            B = np.broadcast_shapes(*[a.shape for _, a in arrays])
        except ValueError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together "
                             "with shapes %s" % ", ".join(str(list(a.shape)) for _, a in arrays)) from None
        k._bshape = tuple(B)
        adjacent = P[-1] - P[0] + 1 == len(P)
        rest = [n for q, n in enumerate(inter) if q not in P]
        if adjacent:
            out = tuple(inter[:P[0]]) + tuple(B) + tuple(inter[P[-1] + 1:])
            k._bpos = P[0]
        else:
            out = tuple(B) + tuple(rest)
            k._bpos = 0
        k.adv, k.name = True, "IndexBackward0"
    else:
        out = tuple(inter)
        k._bpos = 0
        k.adv = False
        k.name = names[-1] if names else "AliasBackward0"
    k._out = out
    if ndim == 0 and mesh:
        # a 0-dim tensor under bools: the element (under new axes) or nothing (the caller
        # reshapes an empty result to ``out``)
        k.np = (None,) * len(out) if all(out) else (False,)
    elif mesh:
        k.np = k.mesh()
    else:
        k.np = _numpy_key(cur, fixed, shape, arrays)
    return k


def _index_arrays(recs, inter):
    """The index tensors as (position, int64 array) with masks expanded (nonzero), bounds
    checked with torch's messages and negative indices wrapped."""
    out = []
    for p, a, is_mask in recs:
        if is_mask:
            for j in range(a.ndim):
                if p + j >= len(inter):
                    raise IndexError("too many indices for tensor of dimension %d" % len(inter))
                if a.shape[j] != inter[p + j]:
                    raise IndexError("The shape of the mask %s at index %d does not match the shape "
                                     "of the indexed tensor %s at index %d"
                                     % (list(a.shape), j, list(inter), p + j))
            if a.ndim == 0:
                raise IndexError("too many indices for tensor of dimension %d" % len(inter))
            out.extend((p + j, nz.astype(np.int64, copy=False))
                       for j, nz in enumerate(np.nonzero(a)))
        else:
            if p >= len(inter):
                raise IndexError("too many indices for tensor of dimension %d" % len(inter))
            out.append((p, a))
    for ordinal, (p, a) in enumerate(out):
        n = inter[p]
        if a.size:
            lo, hi = a.min(), a.max()
            if lo < -n or hi >= n:
                bad = a.reshape(-1)[np.argmax(((a < -n) | (a >= n)).reshape(-1))]
                raise IndexError("index %d is out of bounds for dimension %d with size %d"
                                 % (bad, ordinal, n))
            if lo < 0:
                out[ordinal] = (p, np.where(a < 0, a + n, a))
    return out


def _numpy_key(cur, fixed, shape, arrays):
    """numpy's key for a torch key numpy reads the same way: ints and slices over the
    tensor's dims, None for new ones, index arrays where torch has them."""
    idx_at = dict(arrays)
    key = []
    nxt = 0
    for q, e in enumerate(cur):
        j = e[0]
        if j < 0:
            key.append(None)
            continue
        while nxt < j:
            key.append(fixed[nxt])
            nxt += 1
        a = idx_at.get(q)
        if a is not None:
            # an index array over a sliced dimension: compose (slice start + i * step)
            key.append(a if (e[1] == 0 and e[2] == 1) else e[1] + a * e[2])
        elif e[1] == 0 and e[2] == 1 and e[3] == shape[j]:
            key.append(slice(None))
        else:
            key.append(slice(e[1], e[1] + e[3] * e[2], e[2]))
        nxt = j + 1
    while nxt < len(shape):
        key.append(fixed[nxt])
        nxt += 1
    return tuple(key)


class TensorMethods:
    """Tensor methods of this module, attached by tapegrad/_methods.py."""

    def __setitem__(self, key, value):
        if key is False:                  # torch: x[False] = v does nothing, whatever v is
            return
        vt = value if isinstance(value, Tensor) else None
        if vt is None and not isinstance(value, _NUMBER_TYPES):
            raise TypeError("can't assign a %s to a %s" % (_type_name(value), self.type()))
        d = self._arr()
        try:
            nk = _np_key(key, d.shape)
        except (IndexError, TypeError, ValueError):
            _leaf_inplace_check(self)        # torch refuses the leaf before the index
            raise
        if STATE.enabled and (self._rg or (vt is not None and vt._rg)) and self._dtype.slot >= 0:
            _setitem_grad(self, key, nk, value)
            return
        vd = vt._data if vt is not None else value
        if self._base is not None and 0 in d.strides:
            _check_internal_overlap(d[nk])
        if vt is not None and vt._vc is self._vc and vt is not self and self._vc is not None:
            _check_overlap(d[nk], vd)
        try:
            d[nk] = vd
        except ValueError:
            # torch drops a value's leading size-1 dims beyond the target's (x[0] = t of
            # shape (1,)); numpy 2 refuses a sequence for one element
            v2 = np.asarray(vd)
            nt = np.ndim(d[nk])
            while v2.ndim > nt and v2.shape[0] == 1:
                v2 = v2[0]
            if v2.ndim == nt and v2.ndim < np.ndim(vd):
                try:
                    d[nk] = v2
                except ValueError:
                    pass
                else:
                    _bump(self)
                    return
            _setitem_shape_error(d, key, nk, vd)
            raise
        _bump(self)

    __getitem__ = _getitem


# ----------------------------------------------------------------------------- scatters (select/slice/diagonal/as_strided_scatter, put, fill_diagonal_), as_strided
def _torch():
    import tapegrad     # the torch namespace: the bodies below call T.<name> (KNOWN_UPWARD)
    return tapegrad


def _place(input, src, P, name):
    """``input`` with ``src`` written at the flat positions ``P`` (src's shape), recorded as
    one node ``name`` over (input, src)."""
    P = np.asarray(P, np.int64).reshape(-1)
    return _put_flat(input, P, src, _flat(P.size), False, name)


def _pos(shape):
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)


def _check_src(input, src, P, fname):
    if not isinstance(src, Tensor):
        raise TypeError("%s(): argument 'src' (position 2) must be Tensor, not %s"
                        % (fname, _type_name(src)))
    if tuple(src._data.shape) != tuple(P.shape):
        raise RuntimeError("expected src to have a size equal to the slice of self. src size = "
                           "%s, slice size = %s" % (list(src._data.shape), list(P.shape)))


def select_scatter(input, src, dim, index):
    nd = input._data.ndim
    d = dim % nd
    n = input._data.shape[d]
    if not -n <= index < n:
        raise IndexError("select(): index %d out of range for tensor of size %s at dimension %d"
                         % (index, list(input._data.shape), dim))
    P = np.take(_pos(input._data.shape), index % n, axis=d)
    _check_src(input, src, P, "select_scatter")
    return _place(input, src, P, "SelectScatterBackward0")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _dim(dim, nd)
    sl = [slice(None)] * nd
    sl[d] = slice(start, end, step)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    P = _pos(input._data.shape)[tuple(sl)]
    _check_src(input, src, P, "slice_scatter")
    return _place(input, src, P, "SliceScatterBackward0")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    dim1, dim2 = _diag_dims(dim1, dim2, input._data.ndim)
    P = np.diagonal(_pos(input._data.shape), offset, dim1, dim2)
    _check_src(input, src, P, "diagonal_scatter")
    return _place(input, src, P, "DiagonalScatterBackward0")


def _put_positions(input, index):
    if not isinstance(index, Tensor) or index._dtype.name != "int64":
        raise RuntimeError("put_(): Expected a long tensor for index, but got %s"
                           % (index._dtype._tname if isinstance(index, Tensor)
                              else type(index).__name__))
    n = input._data.size
    iv = np.asarray(index._data, np.int64).reshape(-1)
    bad = (iv < -n) | (iv >= n)
    if bad.any():
        raise IndexError("out of range: tried to access index %d on a tensor of %d elements."
                         % (iv[np.argmax(bad)], n))
    return np.where(iv < 0, iv + n, iv)


def put(input, index, source, accumulate=False):
    P = _put_positions(input, index)
    if not isinstance(source, Tensor):
        raise TypeError("put(): argument 'source' (position 2) must be Tensor, not %s"
                        % _type_name(source))
    if source._data.size != P.size:
        raise RuntimeError("put_(): Expected source and index to have the same number of elements, "
                           "but got source.numel() = %d, index.numel() = %d"
                           % (source._data.size, P.size))
    if source._dtype is not input._dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got "
                           "self.dtype = %s and source.dtype = %s"
                           % (input._dtype._tname, source._dtype._tname))
    return _put_flat(input, P, source, _flat(P.size), accumulate, "PutBackward0")


def _fill_diagonal_(self, fill_value, wrap=False):
    shape = self._data.shape
    nd = len(shape)
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    if nd == 2:
        h, w = shape
        step = w + 1
        P = np.arange(0, builtins.min(h, w) * w, step, dtype=np.int64)
        if wrap and h > w + 1:
            # torch fills the main diagonal, then the wrapped rest: two writes
            _fill_diagonal_(self, fill_value)
            P = np.arange(0, self._data.size, step, dtype=np.int64)[builtins.min(h, w):]
            if P.size == 0:
                return self
    else:
        step = sum(int(np.prod(shape[i + 1:])) for i in range(nd))
        P = np.arange(0, self._data.size, step, dtype=np.int64)[:shape[0]]

    def f(s, _o):
        y = np.array(s._data, copy=True)
        y.reshape(-1)[P] = fill_value
        kept = _kept(y.size, P)
        return _merge(y, s._dtype, "CopySlices", [(s, kept, kept, 1.0, 0)], 1)
    return self._inplace(None, f)


def unravel_index(indices, shape):
    T = _torch()
    if not isinstance(indices, Tensor):
        indices = T.tensor(indices)
    if indices._dtype.is_floating_point or indices._dtype.name == "bool":
        raise TypeError("expected 'indices' to be integer dtype, but got %s" % indices.dtype)
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got %s" % (shape,))
    if 0 in shape:
        raise RuntimeError("ZeroDivisionError")
    # torch's formula (indices // stride) % size: out-of-range indices wrap around
    iv = np.asarray(indices._data, np.int64)
    strides = [int(np.prod(shape[k + 1:])) for k in builtins.range(len(shape))]
    with np.errstate(divide="ignore"):
        parts = [np.floor_divide(iv, st) % sz if sz else np.zeros_like(iv)
                 for st, sz in zip(strides, shape)]
    return tuple(_wrap(np.asarray(p, np.int64) if np.ndim(p) else np.int64(p), T.int64)
                 for p in parts)


def _strided_positions(input, size, stride, storage_offset, fname):
    """Root storage positions (shape ``size``) that as_strided(size, stride, offset) reads."""
    size = tuple(int(v) for v in size)
    stride = tuple(int(v) for v in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(v < 0 for v in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got "
                           "strides: %s" % list(stride))
    root = input if input._base is None else input._base
    rd = root._arr()
    if not rd.flags.c_contiguous:
        raise NotImplementedError("as_strided of a tensor whose storage is not C-contiguous is "
                                  "not supported by tapegrad")
    off = input.storage_offset() if storage_offset is None else int(storage_offset)
    isz = rd.itemsize
    need = off + sum((n - 1) * st for n, st in zip(size, stride)) + 1 if all(size) else 0
    if need > rd.size:
        raise RuntimeError("setStorage: sizes %s, strides %s, storage offset %d, and itemsize %d "
                           "requiring a storage size of %d are out of bounds for storage of size "
                           "%d" % (list(size), list(stride), off, isz, need * isz, rd.size * isz))
    P = np.full(size, off, np.int64)
    for k, (n, st) in enumerate(zip(size, stride)):
        shp = [1] * len(size)
        shp[k] = n
        P = P + (np.arange(n, dtype=np.int64) * st).reshape(shp)
    return size, stride, off, rd, P


def as_strided(input, size, stride, storage_offset=None):
    """A view of the input's storage with the given geometry (AsStridedBackward0: a gather of
    the input's elements; positions outside a view input's own elements are refused)."""
    size, stride, off, rd, P = _strided_positions(input, size, stride, storage_offset,
                                                  "as_strided")
    d = input._arr()
    isz = rd.itemsize
    y = np.lib.stride_tricks.as_strided(rd.reshape(-1)[off:] if rd.size else rd.reshape(-1),
                                        size, tuple(st * isz for st in stride))
    if input._base is None:
        idx = P
    else:
        ip = _positions(input).reshape(-1)
        lut = np.full(rd.size, -1, np.int64)
        lut[ip] = np.arange(ip.size, dtype=np.int64)
        idx = lut[P] if P.size else P
        if P.size and (idx < 0).any():
            if input._rg and STATE.enabled:
                raise NotImplementedError("as_strided with gradients reading storage outside "
                                          "the (view) input is not supported by tapegrad")
            idx = np.zeros_like(P)

    def fn(a):
        return y if a is d else np.asarray(idx).reshape(size)
    return index_map(input, fn, "AsStridedBackward0", view=True)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    if input._base is not None:
        input = input.contiguous() if not input.is_contiguous() else input
    size, stride, off, rd, P = _strided_positions(input, size, stride, storage_offset,
                                                  "as_strided_scatter")
    if input._base is not None:
        P = P - input.storage_offset()
    _check_src(input, src, P, "as_strided_scatter")
    return _place(input, src, P, "AsStridedScatterBackward0")


def _install_composed(Tensor):
    Tn = Tensor
    Tn.select_scatter = select_scatter
    Tn.slice_scatter = slice_scatter
    Tn.diagonal_scatter = diagonal_scatter
    Tn.fill_diagonal_ = _fill_diagonal_
    Tn.put = put
    Tn.put_ = lambda self, index, source, accumulate=False: self._inplace(
        source, lambda s, o: put(s, index, o, accumulate))
    Tn.as_strided = as_strided
    Tn.as_strided_scatter = as_strided_scatter
