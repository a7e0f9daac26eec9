"""Shape operations: transpose, permute, squeeze, expand, repeat, cat, stack, split, flip ...

Every one is an index map over the primitive rows (``gather``: y = x[idx]; ``segsum``:
y[idx] += x; ``copy``: y = x) recorded under torch's grad_fn name. Forward values are numpy
views where torch returns views (transpose, permute, squeeze, expand, split), copies where
torch copies (flip, repeat, cat). Several-output ops (split, chunk) record one entry whose
output node is covered by one alias node per part, as ``unbind`` does, so the parts share one
grad_fn (``SplitBackward0``) with their output numbers. ``cat``/``stack`` join their inputs
pairwise in a balanced tree of hidden scatters and adds (O(n log k) work for k inputs); the
top entry carries torch's name.
"""
import numbers

import warnings

import numpy as np

from ._core import tape as _tp
from ._state import STATE
from ._core.names import multi_name_id, tap_name_id
from ._schema import F_HIDDEN
from .ops import OPCODE
from .tensor import Size, Tensor, _wrap, promote_types
from .tensor import _norm_dims, check_alloc
from ._record import (_nm, _out, _record_index, _record_offset, _src, _tape_for, _track_view,
                      _track_views, _view, _convert)
from .tensor import _grad_on, _ndarray, dtype
from ._record import _view_dtype
from ._compiled import _layout
from ._record import _reshape_view
from .tensor import _DEFAULT, int64
from ._record import _leaf_inplace_check, hide, named, saves_inputs, tap
import builtins
from ._record import _bump, _hide_below
from ._record import cached_map

# the names of torch's namespace this family defines (tapegrad/__init__.py imports them)
__all__ = ["adjoint", "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
           "broadcast_tensors", "broadcast_to", "cat", "chunk", "column_stack", "concat",
           "concatenate", "diagonal", "dsplit", "dstack", "expand_as", "flatten", "flip", "fliplr",
           "flipud", "gather", "hsplit", "hstack", "index_add", "index_copy", "index_fill",
           "index_put", "index_select", "kron", "masked_fill", "masked_scatter", "masked_select",
           "meshgrid", "moveaxis", "movedim", "narrow", "permute", "ravel", "repeat_interleave",
           "reshape", "roll", "rot90", "row_stack", "scatter", "scatter_add", "select", "split",
           "split_copy", "split_with_sizes", "split_with_sizes_copy", "squeeze", "stack",
           "swapaxes", "swapdims", "t", "take", "take_along_dim", "tensor_split", "tile",
           "transpose", "tril", "tril_indices", "triu", "triu_indices", "unbind", "unflatten",
           "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "unsqueeze", "vsplit",
           "vstack"]


def unbind(input, dim=0):
    d = input._arr()
    if d.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    dim = _norm_dims(dim, d.ndim)[0]
    k = d.shape[dim]
    if dim == 0 and d.ndim > 1:
        parts = [d[i] for i in range(k)]
    else:
        pre = (slice(None),) * dim
        parts = [d[pre + (i, Ellipsis)] for i in range(k)]
    outs = []
    if input._rg and STATE.enabled and k:
        if dim == 0:
            tp, e, n = _record_index(input, "copy", None, d, nm=_nm("UnbindBackward0"))
        else:
            idx = np.moveaxis(np.arange(d.size, dtype=np.int64).reshape(d.shape), dim, 0).ravel()
            tp, e, n = _record_index(input, "gather", idx, d, nm=_nm("UnbindBackward0"))
        N = _tp.view_i64(tp.N)
        base_off, dt = int(N[n * 5]), int(N[n * 5 + 2])
        del N
        chunk = d.size // k
        for i, p in enumerate(parts):
            if i == 0:
                node = n
                # the entry's output node covers all parts; part 0 gets its own alias node
            node = len(tp.N) // 5
            tp.N.extend((base_off + i * chunk, chunk, dt, e, i))
            outs.append(_out(p if p.ndim else p, input._dtype, tp, node))
    else:
        outs = [_wrap(p, input._dtype) for p in parts]
    _track_views(outs, input)
    return tuple(outs)


def _dim(d, ndim):
    return _norm_dims(int(d), ndim)[0]


def _dims_tuple(args):
    if len(args) == 1 and isinstance(args[0], (tuple, list, Size)):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def _pos(x):
    return np.arange(x._data.size, dtype=np.int64).reshape(x._data.shape)


def _identity_map(idx, size):
    # (idx[1] != 1 rules it out without a full compare)
    return idx.size == size and (idx.size < 2 or (idx[1] == 1 and
                                                  np.array_equal(idx, np.arange(idx.size))))


_IDENTITY = {}          # key -> whether the cached map of that key is the identity


def index_map(x, fn, name, view=True, key=None):
    """y = fn(x) for a numpy function that rearranges elements; recorded as a gather of x's
    flat positions (fn applied to an arange) named ``name``; ``view``: y is a view of x.
    ``key``: the map depends on x's shape and this key only (a permutation): it is cached
    (``_record.cached_map``)."""
    d = x._arr()
    y = fn(d)
    if type(y) is not np.ndarray:
        y = np.asarray(y)
    if x._rg and STATE.enabled:
        if x._dtype.slot < 0:
            raise RuntimeError("only floating point tensors can be differentiated")
        if key is None:
            idx = np.ascontiguousarray(fn(_pos(x))).reshape(-1)
            ident = _identity_map(idx, d.size)
        else:
            key = (key, d.shape)
            idx = cached_map(key, lambda: np.ascontiguousarray(fn(_pos(x))).reshape(-1))
            ident = _IDENTITY.get(key)
            if ident is None:
                ident = _IDENTITY[key] = _identity_map(idx, d.size)
                if len(_IDENTITY) > 4096:
                    _IDENTITY.clear()
        # an identity map records a copy
        if ident:
            tp, e, n = _record_index(x, "copy", None, y, nm=_nm(name))
        else:
            tp, e, n = _record_index(x, "gather", idx, y, nm=_nm(name), shared=key is not None)
        out = _out(y, x._dtype, tp, n)
    else:
        out = _wrap(y, x._dtype)
    if view and (y.size == 0 or _is_view_of(y, d)):
        _track_view(out, x, fn)
    return out


def _is_view_of(y, d):
    """Whether y (made from d by a view function) shares d's memory: a view of d's owner
    (numpy collapses ``base`` to the owning array) does; otherwise ask numpy."""
    owner = d if d.base is None else d.base
    return (y.base is not None and y.base is owner) or np.shares_memory(y, d)


def _swap2(a):
    return a.T


def _transpose2(x, name):
    """The transpose of a matrix: a numpy view, recorded as one ``transpose`` entry (the
    row count in P0, no index array: O(1) recording however large the matrix); a matrix
    with a dimension of 1 (the same flat order) goes through ``index_map`` (a copy entry)."""
    d = x._data
    if not (x._rg and STATE.enabled) or d.shape[0] <= 1 or d.shape[1] <= 1:
        return index_map(x, _swap2, name)
    if x._dtype.slot < 0:
        raise RuntimeError("only floating point tensors can be differentiated")
    d = x._arr()
    y = d.T
    out = _record_offset(x, _TRANSPOSE_OP, d.shape[0], d.size, y, _nm(name))
    _track_view(out, x, _swap2)
    return out


_TRANSPOSE_OP = OPCODE["transpose"]


# ----------------------------------------------------------------------------- views
def transpose(input, dim0, dim1):
    nd = input._data.ndim
    if nd == 0:
        _norm_dims(dim0, 0), _norm_dims(dim1, 0)
        return index_map(input, lambda a: a, "TransposeBackward0")
    d0, d1 = _dim(dim0, nd), _dim(dim1, nd)
    if nd == 2 and d0 != d1:
        return _transpose2(input, "TransposeBackward0")
    return index_map(input, lambda a: np.swapaxes(a, d0, d1), "TransposeBackward0")


swapaxes = swapdims = transpose


def permute(input, *dims):
    if not dims:
        raise TypeError("permute() missing 1 required positional arguments: \"dims\"")
    dims = _dims_tuple(dims)
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not "
                           "match the length of the desired ordering of dimensions i.e. input.dim() "
                           "= %d is not equal to len(dims) = %d" % (nd, len(dims)))
    nd_ = [_dim(d, nd) for d in dims] if nd else []
    if len(set(nd_)) != len(nd_):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    if nd_ == [1, 0]:
        return _transpose2(input, "PermuteBackward0")
    return index_map(input, lambda a: np.transpose(a, nd_), "PermuteBackward0",
                     key=("permute", tuple(nd_)))


def t(input):
    nd = input._data.ndim
    if nd > 2:
        raise RuntimeError("t() expects a tensor with <= 2 dimensions, but self is %dD" % nd)
    if nd == 2:
        return _transpose2(input, "TBackward0")
    return index_map(input, lambda a: a.T, "TBackward0")


def _T(self):
    if self._data.ndim == 2:
        return _transpose2(self, "PermuteBackward0")
    return index_map(self, lambda a: np.transpose(a), "PermuteBackward0")


def _mT(self):
    if self._data.ndim == 0:
        # torch: deprecated on 0-D tensors and the identity (the tensor itself)
        warnings.warn("Tensor.mT is deprecated on 0-D tensors. This function is the identity "
                      "in these cases.", UserWarning, stacklevel=2)
        return self
    if self._data.ndim < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           "Got %d-D tensor." % self._data.ndim)
    if self._data.ndim == 2:
        return _transpose2(self, "TransposeBackward0")
    return index_map(self, lambda a: np.swapaxes(a, -1, -2), "TransposeBackward0")


def squeeze(input, dim=None):
    d = input._data
    if dim is None:
        name = "SqueezeBackward0"
        axes = tuple(i for i, s in enumerate(d.shape) if s == 1)
    else:
        if isinstance(dim, (tuple, list)):
            name = "SqueezeBackward2"
            dims = [_dim(k, d.ndim) for k in dim] if d.ndim else []
        else:
            name = "SqueezeBackward1"
            dims = [_dim(dim, d.ndim)] if d.ndim else []
        axes = tuple(k for k in dims if d.shape[k] == 1)
    shape = tuple(s for i, s in enumerate(d.shape) if i not in axes)
    return _reshape_view(input, shape, name)


def unsqueeze(input, dim):
    nd = input._data.ndim
    if not -nd - 1 <= dim <= nd:
        raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (-nd - 1, nd, dim))
    dim = dim % (nd + 1)
    shape = input._data.shape[:dim] + (1,) + input._data.shape[dim:]
    return _reshape_view(input, shape, "UnsqueezeBackward0")


def flatten(input, start_dim=0, end_dim=-1):
    shp = input._data.shape
    nd = len(shp)
    if nd == 0:
        return _view(input, ((1,),), "reshape")
    s, e = _dim(start_dim, nd), _dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    new = shp[:s] + (int(np.prod(shp[s:e + 1], dtype=np.int64)),) + shp[e + 1:]
    return _view(input, (new,), "reshape")


def unflatten(input, dim, sizes):
    shp = input._data.shape
    dim = _dim(dim, len(shp))
    sizes = [int(s) for s in sizes]
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be inferred")
    given = list(sizes)
    known = int(np.prod([s for s in sizes if s != -1], dtype=np.int64))
    if -1 in sizes:
        sizes[sizes.index(-1)] = shp[dim] // known if known else 0
    if int(np.prod(sizes, dtype=np.int64)) != shp[dim]:
        raise RuntimeError("unflatten: Provided sizes %s don't multiply up to the size of dim %d "
                           "(%d) in the input tensor" % (given, dim, shp[dim]))
    return _view(input, (shp[:dim] + tuple(sizes) + shp[dim + 1:],), "view")


def _expand_shape(shp, sizes):
    sizes = _dims_tuple(sizes)
    if len(sizes) < len(shp):
        raise RuntimeError("expand(torch.FloatTensor{[%s]}, size=[%s]): the number of sizes "
                           "provided (%d) must be greater or equal to the number of dimensions in "
                           "the tensor (%d)" % (", ".join(map(str, shp)), ", ".join(map(str, sizes)),
                                                len(sizes), len(shp)))
    lead = len(sizes) - len(shp)
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError("The expanded size of the tensor (%d) isn't allowed in a leading, "
                                   "non-existing dimension %d" % (s, i))
            out.append(s)
            continue
        have = shp[i - lead]
        if s == -1:
            out.append(have)
        elif have == s or have == 1:
            out.append(s)
        else:
            raise RuntimeError("The expanded size of the tensor (%d) must match the existing size "
                               "(%d) at non-singleton dimension %d.  Target sizes: [%s].  Tensor "
                               "sizes: [%s]" % (s, have, i, ", ".join(map(str, sizes)),
                                                ", ".join(map(str, shp))))
    return tuple(out)


def expand(input, *sizes):
    shape = _expand_shape(input._data.shape, sizes)
    return index_map(input, lambda a: _expanded(a, shape), "ExpandBackward0")


def _expanded(a, shape):
    """a broadcast to ``shape`` as a writable view (torch lets fill_ write an expanded
    tensor; other in-place ops refuse it: tensor._check_internal_overlap)."""
    b = np.broadcast_to(a, shape)
    return np.lib.stride_tricks.as_strided(a, b.shape, b.strides)


def expand_as(input, other):
    return expand(input, other._data.shape)


def broadcast_to(input, size):
    return expand(input, size)


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = np.broadcast_shapes(*[t._data.shape for t in tensors])
    # a tensor already of the broadcast shape is returned itself, as torch's
    return tuple(t if t._data.shape == shape else expand(t, shape) for t in tensors)


def repeat(input, *sizes):
    sizes = _dims_tuple(sizes)
    nd = input._data.ndim
    if len(sizes) < nd:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of "
                           "dimensions of tensor")
    shape = (1,) * (len(sizes) - nd) + input._data.shape
    check_alloc(tuple(a * b for a, b in zip(shape, sizes)), input._data.dtype)

    def fn(a):
        a = a.reshape((1,) * (len(sizes) - a.ndim) + a.shape)
        return np.tile(a, sizes)
    return index_map(input, fn, "RepeatBackward0", view=False)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """torch.repeat_interleave: a Python int repeats by unsqueeze -> expand -> clone -> view
    (torch's graph); a tensor of repeats selects with index_select (IndexSelectBackward0);
    ``repeat_interleave(repeats)`` alone gives the repeated indices."""
    if repeats is None:
        return _repeat_indices(input)
    if dim is None:
        x = flatten(input)
        axis = 0
    else:
        x = input
        axis = _dim(dim, input._data.ndim)
    n = x._data.shape[axis]
    if isinstance(repeats, Tensor):
        rv = _repeats_array(repeats)
        if rv.size == 1:
            rv = np.full(n, rv[0], np.int64)
        if rv.size != n:
            raise RuntimeError("repeats must have the same size as input along dim, but got "
                               "repeats.size(0) = %d and input.size(%d) = %d" % (rv.size, axis, n))
        idx = np.repeat(np.arange(n, dtype=np.int64), rv)
        if output_size is not None and int(output_size) != idx.size:
            raise RuntimeError("allocated size does not match required size")
        return index_select(x, axis, _wrap(idx, _int64()))
    r = int(repeats)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    shp = x._data.shape
    u = unsqueeze(x, axis + 1)
    e = expand(u, shp[:axis + 1] + (r,) + shp[axis + 1:])
    c = e.clone()
    return _reshape_view(c, shp[:axis] + (shp[axis] * r,) + shp[axis + 1:], "ViewBackward0")


def _int64():
    return int64


def _repeats_array(repeats):
    if repeats._dtype._cat != 1:
        raise NotImplementedError("\"repeat_interleave_cpu\" not implemented for '%s'"
                                  % repeats._dtype._tname)
    if repeats._data.ndim > 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    rv = np.asarray(repeats._data, np.int64).reshape(-1)
    if np.any(rv < 0):
        raise RuntimeError("repeats can not be negative")
    return rv


def _repeat_indices(repeats):
    if not isinstance(repeats, Tensor):
        raise TypeError("repeat_interleave(): argument 'repeats' must be Tensor, not %s"
                        % type(repeats).__name__)
    if repeats._data.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    rv = _repeats_array(repeats)
    return _wrap(np.repeat(np.arange(rv.size, dtype=np.int64), rv), _int64())


def flip(input, *dims):
    dims = _dims_tuple(dims)
    nd = input._data.ndim
    axes = tuple(_dim(d, nd) for d in dims) if nd else ()
    for i, a in enumerate(axes):
        if a in axes[:i]:
            raise RuntimeError("dim %d appears multiple times in the list of dims" % a)
    return index_map(input, lambda a: np.flip(a, axes).copy() if axes else a.copy(),
                     "FlipBackward0", view=False)


def fliplr(input):
    if input._data.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(input, 1)


def flipud(input):
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(input, 0)


def roll(input, shifts, dims=None):
    sh = [int(shifts)] if isinstance(shifts, numbers.Integral) else [int(v) for v in shifts]
    if not sh:
        raise RuntimeError("`shifts` required")
    nd = input._data.ndim
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError("shifts and dimensions must align. shifts: %d, dims:0" % len(sh))
        # torch rolls the flattened tensor (one RollBackward0 node; numpy's roll does the same)
        return index_map(input, lambda a: np.roll(a, sh[0]), "RollBackward0", view=False)
    ds = [dims] if isinstance(dims, numbers.Integral) else list(dims)
    if len(ds) != len(sh):
        raise RuntimeError("shifts and dimensions must align. shifts: %d, dims:%d"
                           % (len(sh), len(ds)))
    ds = [_dim(d, nd) for d in ds]
    return index_map(input, lambda a: np.roll(a, sh, ds), "RollBackward0", view=False)


def narrow(input, dim, start, length):
    dim = _dim(dim, input._data.ndim)
    start, length = int(start), int(length)
    size = input._data.shape[dim]
    if not -size <= start <= size:
        raise IndexError("start out of range (expected to be in range of [%d, %d], but got %d)"
                         % (-size, size, start))
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start + length > size:
        raise RuntimeError("start (%d) + length (%d) exceeds dimension size (%d)."
                           % (start, length, size))
    key = (slice(None),) * dim + (slice(start, start + int(length)),)
    return index_map(input, lambda a: a[key], "SliceBackward0")


def select(input, dim, index):
    dim = _dim(dim, input._data.ndim)
    key = (slice(None),) * dim + (int(index), Ellipsis)     # a 0-dim result is a view too
    size = input._data.shape[dim]
    if not -size <= int(index) < size:
        raise IndexError("select(): index %d out of range for tensor of size %s at dimension %d"
                         % (int(index), list(input._data.shape), dim))
    return index_map(input, lambda a: a[key], "SelectBackward0")


def movedim(input, source, destination):
    nd = input._data.ndim
    src = [source] if isinstance(source, numbers.Integral) else list(source)
    dst = [destination] if isinstance(destination, numbers.Integral) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError("movedim: Invalid source or destination dims: source (%s dims) should "
                           "contain the same number of dims as destination (%s dims)"
                           % (list(src), list(dst)))
    src = [_dim(s, nd) for s in src]
    dst = [_dim(s, nd) for s in dst]
    for what, ds in (("source", src), ("destination", dst)):
        if len(set(ds)) != len(ds):
            raise RuntimeError("movedim: repeated dim in `%s` (%s)" % (what, ds))
    if nd == 0:                 # dims 0 / -1 of a 0-dim tensor: torch's alias (a view)
        return index_map(input, lambda a: a[...], "AliasBackward0")
    return index_map(input, lambda a: np.moveaxis(a, src, dst), "PermuteBackward0")


moveaxis = movedim


def _diag_dims(dim1, dim2, nd):
    """The two dims of a diagonal, normalised (torch's errors: out of range, identical)."""
    a1, a2 = _dim(dim1, nd), _dim(dim2, nd)
    if a1 == a2:
        raise RuntimeError("diagonal dimensions cannot be identical %d, %d" % (dim1, dim2))
    return a1, a2


def diagonal(input, offset=0, dim1=0, dim2=1):
    nd = input._data.ndim
    a1, a2 = _diag_dims(dim1, dim2, nd)
    return index_map(input, lambda a: _writable(np.diagonal(a, offset, a1, a2)),
                     "DiagonalBackward0")


def _writable(v):
    """numpy's diagonal is a read-only view; torch's can be written (A.diagonal().add_(1))."""
    if not v.flags.writeable:
        try:
            v.flags.writeable = True          # allowed when its base is writeable
        except ValueError:
            pass
    return v


# ----------------------------------------------------------------------------- tril / triu
def _keep_map(x, keep, name):
    """y = x where keep else 0 (keep: bool array of x's shape): a hidden gather of the kept
    elements and a scatter back named ``name`` (exact zeros, no 0 * inf)."""
    d = x._arr()
    y = np.where(keep, d, d.dtype.type(0))
    if x._rg and STATE.enabled:
        pos = np.flatnonzero(keep.reshape(-1)).astype(np.int64)
        tp = _tape_for(x)
        node = _src(x, tp)
        dt = x._dtype.slot
        e, n = tp.entry(OPCODE["gather"], _nm("IndexBackward0"), pos.size, dt, node, -1,
                        p0=tp.index(pos), p1=pos.size, fl=F_HIDDEN)
        e, n = tp.entry(OPCODE["segsum"], _nm(name), d.size, dt, n, -1,
                        p0=tp.index(pos), p1=pos.size, ci=tp.const(1.0))
        return _out(y, x._dtype, tp, n)
    return _wrap(y, x._dtype)


def tril(input, diagonal=0):
    d = input._data
    if d.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    keep = np.broadcast_to(np.tri(d.shape[-2], d.shape[-1], int(diagonal), dtype=bool), d.shape)
    return _keep_map(input, keep, "TrilBackward0")


def triu(input, diagonal=0):
    d = input._data
    if d.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    keep = ~np.broadcast_to(np.tri(d.shape[-2], d.shape[-1], int(diagonal) - 1, dtype=bool), d.shape)
    return _keep_map(input, keep, "TriuBackward0")


# ----------------------------------------------------------------------------- split
def _multi(input, dim, sizes, name, multi=True):
    """Parts of ``input`` along ``dim`` with the given sizes, sharing one entry (alias nodes)."""
    d = input._arr()
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    keys = [(slice(None),) * dim + (slice(int(bounds[i]), int(bounds[i + 1])),)
            for i in range(len(sizes))]
    parts = [d[k] for k in keys]
    if input._rg and STATE.enabled and len(parts):
        if input._dtype.slot < 0:
            raise RuntimeError("only floating point tensors can be differentiated")
        if int(np.prod(d.shape[:dim], dtype=np.int64)) <= 1:
            tp, e, n = _record_index(input, "copy", None, d, nm=_nm(name))
        else:
            pos = _pos(input)
            idx = np.concatenate([pos[k].reshape(-1) for k in keys])
            tp, e, n = _record_index(input, "gather", idx, d, nm=_nm(name))
        N = _tp.view_i64(tp.N)
        base_off, slot = int(N[n * 5]), int(N[n * 5 + 2])
        del N
        outs = []
        off = 0
        for i, p in enumerate(parts):
            node = len(tp.N) // 5
            tp.N.extend((base_off + off, p.size, slot, e, i))
            off += p.size
            outs.append(_out(p, input._dtype, tp, node))
    else:
        outs = [_wrap(p, input._dtype) for p in parts]
    if multi:
        _track_views(outs, input)
    else:
        for o in outs:
            _track_view(o, input)
    return tuple(outs)


def split(tensor, split_size_or_sections, dim=0):
    d = tensor._data
    if d.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    dim = _dim(dim, d.ndim)
    k = d.shape[dim]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = [int(s) for s in split_size_or_sections]
        if builtins_sum(sizes) != k:
            raise RuntimeError("split_with_sizes expects split_sizes to sum exactly to %d (input "
                               "tensor's size at dimension %d), but got split_sizes=%s"
                               % (k, dim, list(sizes)))
        return _multi(tensor, dim, sizes, "SplitWithSizesBackward0")
    s = int(split_size_or_sections)
    if s <= 0 and k:
        raise RuntimeError("split_size can only be 0 if dimension size is 0, but got dimension "
                           "size of %d" % k)
    n = max(1, -(-k // s)) if s else 1
    sizes = [min(s, k - i * s) for i in range(n)]
    return _multi(tensor, dim, sizes, "SplitBackward0")


def builtins_sum(xs):
    total = 0
    for v in xs:
        total += v
    return total


def chunk(input, chunks, dim=0):
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: %d" % chunks)
    dim_ = _dim(dim, d.ndim)
    k = d.shape[dim_]
    s = -(-k // chunks)
    if s == 0:          # torch: split_with_sizes into ``chunks`` empty parts
        return _multi(input, dim_, [0] * chunks, "SplitWithSizesBackward0")
    return split(input, s, dim_)


def tensor_split(input, indices_or_sections, dim=0):
    """torch.tensor_split: each part its own slice (SliceBackward0), as torch's."""
    d = input._data
    if d.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    dim_ = _dim(dim, d.ndim)
    k = d.shape[dim_]
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        ios = int(ios._data) if ios._data.ndim == 0 else [int(v) for v in ios._data]
    if isinstance(ios, numbers.Integral):
        n = int(ios)
        if n <= 0:
            raise RuntimeError("number of sections must be larger than 0, got %d" % n)
        sizes = [k // n + (1 if i < k % n else 0) for i in range(n)]
        bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64).tolist()
    else:
        bounds = [0] + [min(max(int(i) + (k if int(i) < 0 else 0), 0), k) for i in ios] + [k]
    return tuple(_slice_part(input, dim_, bounds[i], max(bounds[i + 1], bounds[i]))
                 for i in range(len(bounds) - 1))


def _slice_part(input, dim, start, stop):
    """input's elements start:stop along dim, a view recorded as torch's slice (even a full
    one: SliceBackward0)."""
    key = (slice(None),) * dim + (slice(start, stop),)
    return index_map(input, lambda a: a[key], "SliceBackward0")


# ----------------------------------------------------------------------------- cat / stack
def _add_entry(tp, na, nb, bval, m, dt, nm, fl):
    """An add entry of node na and node nb, or of na and the constant array bval (nb < 0)."""
    cb = tp.save(np.ascontiguousarray(bval).reshape(-1), dt) if nb < 0 else -1
    return tp.entry(OPCODE["add"], nm, m, dt, na, nb, sb=cb, p0=1, p1=1, fl=fl)[1]


_EMBED_OP = OPCODE["embed"]


def _scatter_entry(tp, node, pos, m, dt, nm, fl):
    return tp.entry(OPCODE["segsum"], nm, m, dt, node, -1, p0=tp.index(pos), p1=pos.size,
                    ci=tp.const(1.0), fl=fl)[1]


def _concat(ts, shapes, dim, name, taps=True):
    """Concatenate tensors (already of one dtype) viewed with ``shapes`` along ``dim``."""
    rdt = ts[0]._dtype
    vals = [t._arr().reshape(s) for t, s in zip(ts, shapes)]
    y = np.concatenate(vals, axis=dim)
    if not (STATE.enabled and any(t._rg for t in ts)):
        return _wrap(y, rdt)
    if rdt.slot < 0:
        raise RuntimeError("only floating point tensors can be differentiated")
    tp = _tape_for(*[t for t in ts if t._rg])
    dt = rdt.slot
    # pieces: (node or -1, value when constant, size along dim, shape)
    # (node or -1, value when constant, size along dim, shape, input number or -1 when merged)
    items = [((_src(t, tp) if t._rg else -1), None if t._rg else v, v.shape[dim], v.shape, i)
             for i, (t, v) in enumerate(zip(ts, vals))]
    # torch's node lists every input ((None, 0) for constants): the top entry carries the
    # arity, each input's scatter is a tap naming its slot (autograd.graph.TAPS)
    nm_top, nm_hid = (multi_name_id(name, len(ts)) if taps and len(ts) > 1 else _nm(name)), _nm(name)

    def nm_in(k):
        return tap_name_id(name, (k,)) if taps and k >= 0 else nm_hid

    blocks = all(sz == 1 for sz in y.shape[:dim])

    def merge(A, B, top):
        na, va, ka, sa, ia = A
        nb, vb, kb, sb, ib = B
        shape = list(sa)
        shape[dim] = ka + kb
        shape = tuple(shape)
        m = int(np.prod(shape, dtype=np.int64))
        if na < 0 and nb < 0:
            return (-1, np.concatenate([va, vb], axis=dim), ka + kb, shape, -1)
        fl = 0 if top else F_HIDDEN
        if na >= 0 and nb >= 0 and blocks:
            # both pieces are contiguous blocks of the result (nothing before ``dim`` but
            # ones): two offset rows (embed at 0 and after a), no index maps
            sza = int(np.prod(sa, dtype=np.int64))         # a's elements (empty pieces too)
            xa = tp.entry(_EMBED_OP, nm_in(ia), m, dt, na, -1, p0=0, p1=sza, fl=F_HIDDEN)[1]
            xb = tp.entry(_EMBED_OP, nm_in(ib), m, dt, nb, -1, p0=sza, p1=m - sza,
                          fl=F_HIDDEN)[1]
            return (_add_entry(tp, xa, xb, None, m, dt, nm_top, fl), None, ka + kb, shape, -1)
        pos = np.arange(m, dtype=np.int64).reshape(shape)
        pa = pos[(slice(None),) * dim + (slice(0, ka),)].reshape(-1)
        pb = pos[(slice(None),) * dim + (slice(ka, ka + kb),)].reshape(-1)
        if na >= 0 and nb >= 0:
            xa = _scatter_entry(tp, na, pa, m, dt, nm_in(ia), F_HIDDEN)
            xb = _scatter_entry(tp, nb, pb, m, dt, nm_in(ib), F_HIDDEN)
            return (_add_entry(tp, xa, xb, None, m, dt, nm_top, fl), None, ka + kb, shape, -1)
        node, p, cval, cpos, k = (na, pa, vb, pb, ia) if na >= 0 else (nb, pb, va, pa, ib)
        const = np.zeros(m, y.dtype)
        const[cpos] = np.ascontiguousarray(cval).reshape(-1)
        xn = _scatter_entry(tp, node, p, m, dt, nm_in(k), F_HIDDEN)
        return (_add_entry(tp, xn, -1, const, m, dt, nm_top, fl), None, ka + kb, shape, -1)

    while len(items) > 1:
        nxt = []
        for i in range(0, len(items) - 1, 2):
            nxt.append(merge(items[i], items[i + 1], len(items) == 2))
        if len(items) % 2:
            nxt.append(items[-1])
        items = nxt
    node = items[0][0]
    if len(ts) == 1:
        # a single piece: an identity under the op's name
        e, node = tp.entry(OPCODE["copy"], nm_top, y.size, dt, node, -1)
    return _out(y, rdt, tp, node)


def _cat_dtype(ts):
    dt = ts[0]._dtype
    for t in ts[1:]:
        if t._dtype is not dt:
            if t._dtype._cat != dt._cat:
                dt = dt if dt._cat > t._dtype._cat else t._dtype
            else:
                dt = promote_types(dt, t._dtype)
    return dt


def _as_list(tensors, fname):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError("%s(): argument 'tensors' (position 1) must be tuple of Tensors, not %s"
                        % (fname, type(tensors).__name__))
    ts = list(tensors)
    if not ts:
        if fname == "cat":
            raise ValueError("torch.cat(): expected a non-empty list of Tensors")
        raise RuntimeError("%s expects a non-empty TensorList" % fname)
    for i, t in enumerate(ts):
        if not isinstance(t, Tensor):
            raise TypeError("expected Tensor as element %d in argument 0, but got %s"
                            % (i, type(t).__name__))
    return ts


def cat(tensors, dim=0, out=None):
    ts = _as_list(tensors, "cat")
    # torch skips legacy empty 1-D tensors
    keep = [i for i, t in enumerate(ts) if not (t._data.ndim == 1 and t._data.size == 0)] or [0]
    ts_ = [ts[i] for i in keep]
    ref = ts_[0]._data
    for i, t in enumerate(ts):
        if t._data.ndim == 0:
            raise RuntimeError("zero-dimensional tensor (at position %d) cannot be concatenated" % i)
    dim = _dim(dim, ref.ndim)
    for i, t in zip(keep, ts_):
        s = t._data.shape
        if len(s) != ref.ndim:
            raise RuntimeError("Tensors must have same number of dimensions: got %d and %d"
                               % (ref.ndim, len(s)))
        for j in range(ref.ndim):
            if j != dim and s[j] != ref.shape[j]:
                raise RuntimeError("Sizes of tensors must match except in dimension %d. Expected "
                                   "size %d but got size %d for tensor number %d in the list."
                                   % (dim, ref.shape[j], s[j], i))
    rdt = _cat_dtype(ts_)
    ts_ = [t if t._dtype is rdt else _hidden_convert(t, rdt) for t in ts_]
    return _concat(ts_, [t._data.shape for t in ts_], dim, "CatBackward0")


concat = concatenate = cat


def _hidden_convert(t, rdt):
    """t as rdt inside cat/stack: torch converts there without a node of its own."""
    c = _convert(t, rdt)
    hide(c)
    return c


def stack(tensors, dim=0, out=None):
    ts = _as_list(tensors, "stack")
    ref = ts[0]._data.shape
    for i, t in enumerate(ts):
        if t._data.shape != ref:
            raise RuntimeError("stack expects each tensor to be equal size, but got %s at entry 0 "
                               "and %s at entry %d" % (list(ref), list(t._data.shape), i))
    nd = len(ref) + 1
    if not -nd <= dim < nd:
        raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but got %d)"
                         % (-nd, nd - 1, dim))
    dim = dim % nd
    rdt = _cat_dtype(ts)
    ts = [t if t._dtype is rdt else _hidden_convert(t, rdt) for t in ts]
    shape = ref[:dim] + (1,) + ref[dim:]
    return _concat(ts, [shape] * len(ts), dim, "StackBackward0")


def hstack(tensors):
    ts = _as_list(tensors, "hstack")
    ts = [_atleast_1d(t) for t in ts]
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1)


def vstack(tensors):
    ts = [_atleast_2d(t) for t in _as_list(tensors, "vstack")]
    return cat(ts, 0)


def _atleast_1d(t):
    return t if t._data.ndim >= 1 else _reshape_view(t, (1,), "ViewBackward0")


def _atleast_2d(t):
    if t._data.ndim >= 2:
        return t
    if t._data.ndim == 0:
        return _reshape_view(t, (1, 1), "ViewBackward0")
    return _reshape_view(t, (1,) + t._data.shape, "UnsqueezeBackward0")


# ----------------------------------------------------------------------------- Tensor methods
def _install(Tensor):
    def _flip_m(self, *dims):
        return flip(self, *dims)

    def _permute_m(self, *dims):
        return permute(self, *dims)

    def _expand_m(self, *sizes):
        return expand(self, *sizes)

    def _repeat_m(self, *sizes):
        return repeat(self, *sizes)

    methods = dict(
        transpose=transpose, swapaxes=swapaxes, swapdims=swapdims, permute=_permute_m, t=t,
        squeeze=squeeze, unsqueeze=unsqueeze, flatten=flatten, unflatten=unflatten,
        expand=_expand_m, expand_as=expand_as, broadcast_to=broadcast_to, repeat=_repeat_m,
        repeat_interleave=repeat_interleave, flip=_flip_m, fliplr=fliplr, flipud=flipud,
        roll=roll, narrow=narrow, select=select, movedim=movedim, moveaxis=moveaxis,
        diagonal=diagonal, tril=tril, triu=triu, split=split, chunk=chunk,
        tensor_split=tensor_split,
    )
    for k, f in methods.items():
        setattr(Tensor, k, f)
    Tensor.T = property(_T)
    Tensor.mT = property(_mT)


    def _unsqueeze_(self, dim):
        if self._rg and self._tape is not None:
            raise NotImplementedError("in-place unsqueeze_ on a tensor with a grad_fn is not supported")
        self._data = self._arr().reshape(unsqueeze(_wrap(self._data, self._dtype), dim)._data.shape)
        return self

    def _squeeze_(self, dim=None):
        if self._rg and self._tape is not None:
            raise NotImplementedError("in-place squeeze_ on a tensor with a grad_fn is not supported")
        self._data = self._arr().reshape(squeeze(_wrap(self._data, self._dtype), dim)._data.shape)
        return self
    Tensor.unsqueeze_ = _unsqueeze_
    Tensor.squeeze_ = _squeeze_




# ----------------------------------------------------------------------------- gather & co
def gather(input, dim, index, *, sparse_grad=False):
    if not isinstance(index, Tensor) or index._dtype.name not in ("int64", "int32"):
        raise RuntimeError("gather(): Expected dtype int32/int64 for index")
    nd = input._data.ndim
    ax = _dim(dim, nd) if nd else 0
    idx = np.asarray(index._data)
    if idx.ndim != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    n = input._data.shape[ax] if nd else 1
    if idx.size and (idx.min() < -n or idx.max() >= n):
        raise RuntimeError("index %d is out of bounds for dimension %d with size %d"
                           % (int(idx.max() if idx.max() >= n else idx.min()), ax, n))
    idx = np.where(idx < 0, idx + n, idx)

    def fn(a):
        sl = tuple(slice(0, s) for s in idx.shape)
        sub = a[tuple(slice(None) if i == ax else sl[i] for i in range(a.ndim))]
        return np.take_along_axis(sub, idx, ax)
    return index_map(input, fn, "GatherBackward0", view=False)


def index_select(input, dim, index):
    if isinstance(index, Tensor) and index._dtype.name not in ("int64", "int32"):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    idx = np.asarray(index._data).reshape(-1).astype(np.int64)
    if input._data.ndim == 0:
        # torch: one index, 0 or -1, and a 0-dim result
        _dim(dim, 0)
        if idx.size != 1:
            raise RuntimeError("index_select(): Index to scalar can have only 1 value, got %d "
                               "value(s)" % idx.size)
        if idx[0] not in (0, -1):
            raise IndexError("index out of range in self")
        return index_map(input, lambda a: a.copy(), "IndexSelectBackward0", view=False)
    ax = _dim(dim, input._data.ndim)
    return index_map(input, lambda a: np.take(a, idx, axis=ax), "IndexSelectBackward0", view=False)


def masked_select(input, mask):
    m = np.asarray(mask._data if isinstance(mask, Tensor) else mask)
    try:
        shape = np.broadcast_shapes(input._data.shape, m.shape)
    except ValueError:
        a, b = m.shape, input._data.shape          # torch names the mask first (a)
        dim = next(i for i in range(-1, -1 - min(len(a), len(b)), -1)
                   if a[i] != b[i] and 1 not in (a[i], b[i]))
        raise RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d) at "
                           "non-singleton dimension %d" % (a[dim], b[dim], max(len(a), len(b)) + dim)
                           ) from None
    mb = np.broadcast_to(m, shape)
    return index_map(input, lambda a: np.broadcast_to(a, shape)[mb], "MaskedSelectBackward0",
                     view=False)


def masked_fill(input, mask, value):
    from ._math import where
    m = mask if isinstance(mask, Tensor) else _wrap(np.asarray(mask), None)
    if np.asarray(m._data).dtype != np.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype %s"
                           % m._dtype.name)
    v = value
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got "
                               "tensor with %d dimension(s)." % value._data.ndim)
        if value._dtype is not input._dtype:
            v = _wrap(np.asarray(value._data, input._dtype.np)[()], input._dtype) \
                if not value._rg else value.to(input._dtype)
    else:
        v = _wrap(np.asarray(v, input._dtype.np)[()], input._dtype)
    if isinstance(value, Tensor):
        # masked_fill.Tensor: torch's MaskedFillBackward1 lists (input, value)
        out = where(m, tap(v, 1), tap(input, 0))
        name, arity = "MaskedFillBackward1", 2
    else:
        out = where(m, v, input)
        name, arity = "MaskedFillBackward0", None
    if out._data.shape != input._data.shape:
        raise RuntimeError("masked_fill: the mask must broadcast to the input's shape")
    return named(out, name, arity)


def _install_gather(Tensor):
    Tensor.gather = gather
    Tensor.index_select = index_select
    Tensor.masked_select = masked_select
    Tensor.masked_fill = masked_fill

    def masked_fill_(self, mask, value):
        return self._inplace(None, lambda s, o: masked_fill(s, mask, value))
    Tensor.masked_fill_ = masked_fill_

    def _new(maker):
        def f(self, *size, dtype=None, device=None, requires_grad=False, **kw):
            from . import creation
            return getattr(creation, maker)(*size, dtype=dtype or self._dtype,
                                            requires_grad=requires_grad)
        return f
    Tensor.new_zeros = _new("zeros")
    Tensor.new_ones = _new("ones")
    Tensor.new_empty = _new("empty")

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        from .creation import full
        return full(size, fill_value, dtype=dtype or self._dtype, requires_grad=requires_grad)
    Tensor.new_full = new_full

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        from .creation import tensor
        return tensor(data, dtype=dtype or self._dtype, requires_grad=requires_grad)
    Tensor.new_tensor = new_tensor




# ----------------------------------------------------------------------------- index family
def _merge(y, rdt, name, parts, arity=None):
    """Record ``y`` (its value computed by the caller, of dtype ``rdt``) as the sum over
    ``parts`` of scatter(c * gather(t at src) to dst): a part is (tensor or number, src flat
    positions in t, dst flat positions in y, c, input slot). Parts whose tensor needs no grad
    add nothing to the graph (their values are in y). Hidden gathers and scatters; the top
    entry is named ``name``, its node listing ``arity`` inputs (taps) when given."""
    live = [p for p in parts if isinstance(p[0], Tensor) and p[0]._rg] if STATE.enabled else []
    y = np.asarray(y, rdt.np)          # (not ascontiguousarray: it makes a 0-d array 1-d)
    if not y.flags.c_contiguous:
        y = y.copy()
    if not live:
        return _wrap(y if y.ndim else y[()], rdt)
    if rdt.slot < 0:
        raise RuntimeError("only floating point tensors can be differentiated")
    tp = _tape_for(*[p[0] for p in live])
    dt, m = rdt.slot, y.size
    top, hid = (multi_name_id(name, arity) if arity else _nm(name)), _nm(name)
    acc = -1
    for i, (t, src, dst, c, slot) in enumerate(live):
        if t._dtype is not rdt:
            t = _convert(t, rdt)
        last = i == len(live) - 1
        g = tp.entry(OPCODE["gather"], tap_name_id(name, (slot,)) if arity else hid, src.size, dt,
                     _src(t, tp), -1, p0=tp.index(src), p1=src.size, fl=F_HIDDEN)[1]
        alone = last and acc < 0
        sc = tp.entry(OPCODE["segsum"], top if alone else hid, m, dt, g, -1, p0=tp.index(dst),
                      p1=dst.size, ci=tp.const(float(c)), fl=0 if alone else F_HIDDEN)[1]
        acc = sc if acc < 0 else _add_entry(tp, acc, sc, None, m, dt, top if last else hid,
                                            0 if last else F_HIDDEN)
    return _out(y if y.ndim else y[()], rdt, tp, acc)


def _flat(n):
    return np.arange(n, dtype=np.int64)


def _kept(n, dst):
    """Positions 0..n-1 not in dst (what an overwrite keeps of the input)."""
    keep = np.ones(n, bool)
    keep[dst] = False
    return np.flatnonzero(keep).astype(np.int64)


def _along(shape, dim, idx):
    """Flat positions in a tensor of ``shape`` of x.index_select(dim, idx), of that shape."""
    outer = int(np.prod(shape[:dim], dtype=np.int64))
    n = shape[dim]
    inner = int(np.prod(shape[dim + 1:], dtype=np.int64))
    p = (np.arange(outer, dtype=np.int64)[:, None, None] * (n * inner)
         + idx[None, :, None] * inner + np.arange(inner, dtype=np.int64)[None, None, :])
    return p.reshape(tuple(shape[:dim]) + (idx.size,) + tuple(shape[dim + 1:]))


def _index_vector(index, fname, n, dim, exc=RuntimeError):
    """An index_* op's index: a 0-dim or 1-dim int32/int64 tensor, in range (wrapped)."""
    if not isinstance(index, Tensor) or index._dtype._cat != 1 or index._dtype.name not in (
            "int32", "int64"):
        got = index._dtype._tname if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError("%s(): Expected dtype int32/int64 for index but got: %s" % (fname, got))
    if index._data.ndim > 1:
        raise IndexError("%s(): Index is supposed to be a vector, but got dim: %d with type: %s and "
                         "size: %s" % (fname, index._data.ndim, index._dtype._tname,
                                       list(index._data.shape)))
    idx = np.asarray(index._data, np.int64).reshape(-1)
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise exc("index %d is out of bounds for dimension %d with size %d"
                  % (idx[np.argmax(bad)], dim, n))
    return np.where(idx < 0, idx + n, idx)


def _index_op_setup(input, dim, index, source, fname):
    """(dim, index array, positions P of the indexed slices) of index_add/index_copy, with
    torch's checks of the source's shape and dtype."""
    shp = input._data.shape
    nd = len(shp)
    d = _dim(dim, nd) if nd else 0
    n = shp[d] if nd else 1
    if isinstance(index, Tensor) and index._dtype.name in ("int32", "int64") and \
            index._data.ndim <= 1:          # torch: no wrapping of negative indices here
        raw = np.asarray(index._data, np.int64).reshape(-1)
        bad = (raw < 0) | (raw >= n)
        if bad.any():
            i = raw[np.argmax(bad)]
            if fname == "index_add_" and nd <= 1:
                raise IndexError("index out of range in self")
            if fname == "index_add_":   # (torch: RuntimeError above one dimension)
                raise RuntimeError("index %d is out of bounds for dimension %d with size %d"
                                   % (i, d, n))
            raise IndexError("%s(): index %d is out of bounds for dimension %d with size %d"
                             % (fname, i, d, n))
    idx = _index_vector(index, fname, n, d)
    if source._dtype is not input._dtype:
        raise RuntimeError("%s(): self (%s) and source (%s) must have the same scalar type"
                           % (fname, input._dtype._tname, source._dtype._tname))
    sshape = source._data.shape
    if nd and d >= len(sshape) and len(sshape) < nd:
        raise RuntimeError("%s(): Indexing dim %d is out of bounds of the source tensor with dim %d"
                           % (fname, d, len(sshape)))
    want = (tuple(shp[:d]) + (idx.size,) + tuple(shp[d + 1:])) if nd else (idx.size,)
    if int(np.prod(sshape, dtype=np.int64)) != int(np.prod(want, dtype=np.int64)) or (
            len(sshape) == len(want) and tuple(sshape) != want):
        if len(sshape) > d and sshape[d] != idx.size:
            raise RuntimeError("%s(): Number of indices (%d) should be equal to source.size(dim): "
                               "(%d), for dim: %d" % (fname, idx.size, sshape[d], d))
        raise RuntimeError("%s(): Source/destination tensor must have same slice shapes. "
                           "Destination slice shape: %s and source slice shape: %s"
                           % (fname, list(want), list(sshape)))
    P = _along(shp if nd else (1,), d, idx).reshape(-1)
    return d, idx, P


def index_add(input, dim, index, source, *, alpha=1):
    d, idx, P = _index_op_setup(input, dim, index, source, "index_add_")
    y = np.array(input._data, copy=True)
    if y.dtype.kind in "iub" and not isinstance(alpha, bool):
        alpha = int(alpha)          # torch converts alpha to the integer dtype (toward zero)
    np.add.at(y.reshape(-1), P, (np.asarray(source._data) * alpha).astype(y.dtype).reshape(-1))
    n = y.size
    out = _merge(y, input._dtype, "IndexAddBackward0",
                 [(input, _flat(n), _flat(n), 1.0, 0), (source, _flat(P.size), P, alpha, 1)], 2)
    return saves_inputs(out, index)     # (torch's node saves the index)


def index_copy(input, dim, index, source):
    if isinstance(index, Tensor) and index._dtype.name != "int64":
        raise RuntimeError("index_copy_(): Expected a long tensor for index, but got %s"
                           % index._dtype._tname)
    d, idx, P = _index_op_setup(input, dim, index, source, "index_copy_")
    y = np.array(input._data, copy=True)
    y.reshape(-1)[P] = np.asarray(source._data).reshape(-1)
    kept = _kept(y.size, P)
    out = _merge(y, input._dtype, "IndexCopyBackward0",
                 [(input, kept, kept, 1.0, 0), (source, _flat(P.size), P, 1.0, 1)], 2)
    return saves_inputs(out, index)     # (torch's node saves the index)


def index_fill(input, dim, index, value):
    shp = input._data.shape
    nd = len(shp)
    d = _dim(dim, nd) if nd else 0
    if isinstance(index, Tensor) and index._dtype.name != "int64":
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    idx = _index_vector(index, "index_fill_", shp[d] if nd else 1, d, IndexError)
    if isinstance(value, Tensor) and value._data.ndim != 0:
        raise RuntimeError("index_fill_ only supports a 0-dimensional value tensor, but got tensor "
                           "with %d dimension(s)." % value._data.ndim)
    P = _along(shp if nd else (1,), d, idx).reshape(-1)
    y = np.array(input._data, copy=True)
    y.reshape(-1)[P] = np.asarray(value._data if isinstance(value, Tensor) else value)
    kept = _kept(y.size, P)
    if isinstance(value, Tensor) and value._rg:
        return _merge(y, input._dtype, "IndexFillBackward1",
                      [(input, kept, kept, 1.0, 0), (value, np.zeros(P.size, np.int64), P, 1.0, 1)],
                      2)
    return _merge(y, input._dtype, "IndexFillBackward0", [(input, kept, kept, 1.0, 0)])


def index_put(input, indices, values, accumulate=False):
    from ._index import parse
    key = tuple(slice(None) if i is None else i for i in indices)
    k = parse(key, input._data.shape)
    P = k.positions()
    if not isinstance(values, Tensor):
        raise TypeError("index_put(): argument 'values' (position 3) must be Tensor, not %s"
                        % type(values).__name__)
    if (values._dtype is not input._dtype and values._data.ndim == 0 and len(key) == 1
            and isinstance(key[0], Tensor) and key[0]._dtype.name == "bool"):
        values = _convert(values, input._dtype)      # torch: a masked_fill_ (any scalar dtype)
    if values._dtype is not input._dtype:
        raise RuntimeError("Index put requires the source and destination dtypes match, got %s for "
                           "the destination and %s for the source."
                           % (input._dtype._tname, values._dtype._tname))
    vshape = values._data.shape
    try:
        src = np.broadcast_to(_flat(values._data.size).reshape(vshape), P.shape).reshape(-1)
    except ValueError:
        raise RuntimeError("shape mismatch: value tensor of shape %s cannot be broadcast to indexing "
                           "result of shape %s" % (list(vshape), list(P.shape))) from None
    return _put_flat(input, P.reshape(-1), values, src, accumulate, "IndexPutBackward0")


def _put_flat(input, P, values, src, accumulate, name):
    """A copy of ``input`` whose flat positions ``P`` get (or, accumulating, add) the elements
    ``src`` of ``values``: one node over (input, values) named ``name``."""
    vals = np.asarray(values._data).reshape(-1)[src]
    y = np.array(input._data, copy=True)
    if accumulate:
        np.add.at(y.reshape(-1), P, vals)
        kept = _flat(y.size)
    else:
        y.reshape(-1)[P] = vals
        kept = _kept(y.size, P)
    return _merge(y, input._dtype, name, [(input, kept, kept, 1.0, 0), (values, src, P, 1.0, 1)],
                  2)


def _scatter_setup(input, dim, index, src, fname):
    """(output positions, src positions) of the index's elements in scatter/scatter_add/gather
    layout, with torch's checks."""
    shp = input._data.shape
    nd = len(shp)
    if not isinstance(index, Tensor) or index._dtype.name not in ("int64", "int32"):
        # torch names scatter() for scatter_add too
        raise RuntimeError("%s(): Expected dtype int32/int64 for index"
                           % ("gather" if fname == "gather" else "scatter"))
    ish = index._data.shape
    if len(ish) != nd and not (nd == 0 and len(ish) <= 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    d = _dim(dim, nd) if nd else 0
    sshape = src._data.shape if isinstance(src, Tensor) else None
    if nd:
        over_self = any(ish[j] > shp[j] for j in range(nd) if j != d)
        over_src = sshape is not None and (len(sshape) != nd or any(ish[j] > sshape[j]
                                                                    for j in range(nd)))
        if over_self or over_src:
            msg = ("Expected index %s to be no larger than self %s apart from dimension %d"
                   % (list(ish), list(shp), d))
            if sshape is not None:
                msg += " and to be no larger size than src %s" % list(sshape)
            raise RuntimeError(msg)
    if isinstance(src, Tensor) and src._dtype is not input._dtype:
        raise RuntimeError("%s(): Expected self.dtype to be equal to src.dtype" % fname)
    iv = np.asarray(index._data, np.int64).reshape(ish if nd else (-1,))
    n = shp[d] if nd else 1
    bad = (iv < -n) | (iv >= n)
    if bad.any():
        raise RuntimeError("index %d is out of bounds for dimension %d with size %d"
                           % (iv.reshape(-1)[np.argmax(bad.reshape(-1))], d, n))
    iv = np.where(iv < 0, iv + n, iv)
    if not nd:
        return np.zeros(iv.size, np.int64), (np.zeros(iv.size, np.int64) if sshape is not None else None)
    coords = list(np.indices(ish, dtype=np.int64))
    spos = np.ravel_multi_index(coords, sshape).reshape(-1) if sshape is not None and iv.size else (
        np.zeros(0, np.int64) if sshape is not None else None)
    coords[d] = iv
    P = np.ravel_multi_index(coords, shp).reshape(-1) if iv.size else np.zeros(0, np.int64)
    return P.astype(np.int64), None if spos is None else spos.astype(np.int64)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    if reduce is not None:
        raise NotImplementedError("scatter(..., reduce=%r) is not supported by tapegrad yet (use "
                                  "scatter_add or index_add)" % (reduce,))
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    P, spos = _scatter_setup(input, dim, index, src, "scatter")
    y = np.array(input._data, copy=True)
    kept = _kept(y.size, P)
    if src is None:
        v = value.item() if isinstance(value, Tensor) else value
        y.reshape(-1)[P] = v
        return _merge(y, input._dtype, "ScatterBackward1", [(input, kept, kept, 1.0, 0)])
    y.reshape(-1)[P] = np.asarray(src._data).reshape(-1)[spos]
    return _merge(y, input._dtype, "ScatterBackward0",
                  [(input, kept, kept, 1.0, 0), (src, spos, P, 1.0, 1)], 2)


def scatter_add(input, dim, index, src):
    P, spos = _scatter_setup(input, dim, index, src, "scatter_add")
    y = np.array(input._data, copy=True)
    np.add.at(y.reshape(-1), P, np.asarray(src._data).reshape(-1)[spos])
    n = y.size
    return _merge(y, input._dtype, "ScatterAddBackward0",
                  [(input, _flat(n), _flat(n), 1.0, 0), (src, spos, P, 1.0, 1)], 2)


def masked_scatter(input, mask, source):
    if not isinstance(mask, Tensor) or mask._dtype.name != "bool":
        raise RuntimeError("masked_scatter_ only supports boolean masks, but got mask with dtype %s"
                           % (mask._dtype._tname if isinstance(mask, Tensor) else type(mask).__name__))
    if source._dtype is not input._dtype:
        raise RuntimeError("masked_scatter: expected self and source to have same dtypes but got"
                           "%s and %s" % (input._dtype._tname, source._dtype._tname))
    shape = np.broadcast_shapes(input._data.shape, mask._data.shape)
    if shape != input._data.shape:
        input = expand(input, shape)
    P = np.flatnonzero(np.broadcast_to(mask._data, shape)).astype(np.int64)
    if source._data.size < P.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    y = np.array(input._data, copy=True)
    y.reshape(-1)[P] = np.asarray(source._data).reshape(-1)[:P.size]
    kept = _kept(y.size, P)
    return _merge(y, input._dtype, "MaskedScatterBackward0",
                  [(input, kept, kept, 1.0, 0), (source, _flat(P.size), P, 1.0, 1)], 2)


def take(input, index):
    if not isinstance(index, Tensor) or index._dtype.name != "int64":
        raise RuntimeError("take(): Expected a long tensor for index, but got %s"
                           % (index._dtype._tname if isinstance(index, Tensor) else type(index).__name__))
    n = input._data.size
    iv = np.asarray(index._data, np.int64)
    bad = (iv < -n) | (iv >= n)
    if bad.any():
        raise IndexError("out of range: tried to access index %d on a tensor of %d elements."
                         % (iv.reshape(-1)[np.argmax(bad.reshape(-1))], n))
    iv = np.where(iv < 0, iv + n, iv)
    return index_map(input, lambda a: a.reshape(-1)[iv], "TakeBackward0", view=False)


def take_along_dim(input, indices, dim=None):
    if not isinstance(indices, Tensor) or indices._dtype.name != "int64":
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got %s"
                           % (indices._dtype._tname if isinstance(indices, Tensor) else
                              type(indices).__name__))
    if dim is None:
        return gather(input.reshape(-1), 0, indices.reshape(-1))
    nd = input._data.ndim
    if indices._data.ndim != nd:
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number of "
                           "dimensions, but got %d dimensions for input, and %d dimensions for "
                           "indices" % (nd, indices._data.ndim))
    d = _dim(dim, nd)
    a = list(input._data.shape)
    b = list(indices._data.shape)
    for j in range(nd - 1, -1, -1):
        if j != d and a[j] != b[j] and a[j] != 1 and b[j] != 1:
            raise RuntimeError("The size of tensor a (%d) must match the size of tensor b (%d) at "
                               "non-singleton dimension %d" % (a[j], b[j], j))
    common = [max(a[j], b[j]) if j != d else 0 for j in range(nd)]
    xs = tuple(common[j] if j != d else a[d] for j in range(nd))
    ish = tuple(common[j] if j != d else b[d] for j in range(nd))
    idx = _wrap(np.ascontiguousarray(np.broadcast_to(indices._data, ish)), indices._dtype)
    return gather(expand(input, xs), d, idx)


def tile(input, dims):
    dims = _dims_tuple((dims,) if isinstance(dims, numbers.Integral) else (dims,))
    nd = input._data.ndim
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    return repeat(input, dims)


def reshape(input, shape):
    return input.reshape(shape)


def ravel(input):
    return input.contiguous().view(-1)


def meshgrid(*tensors, indexing=None):
    import warnings
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError('torch.meshgrid: indexing must be one of "xy" or "ij", but received: %s'
                           % indexing)
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t._data.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but "
                               "got: %s" % (t,))
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError("torch.meshgrid: expects all tensors to have the same dtype")
    sizes = [t._data.size for t in tensors]
    axes = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(tensors)
    for t, ax in zip(tensors, axes):
        shape[ax] = t._data.size
    outs = []
    for t, ax, n in zip(tensors, axes, sizes):
        vs = [1] * len(tensors)
        vs[ax] = n
        outs.append(expand(t.view(vs), shape))
    return tuple(outs)


def _split_fn(name, dim, min_dims):
    def f(input, indices_or_sections):
        nd = input._data.ndim
        if nd < min_dims:
            raise RuntimeError("torch.%s requires a tensor with at least %d dimension, but got a "
                               "tensor with %d dimensions!" % (name, min_dims, nd))
        d = dim if dim is not None else (1 if nd >= 2 else 0)
        ios = indices_or_sections
        if isinstance(ios, numbers.Integral):
            k = input._data.shape[d]
            if ios == 0 or k % ios:
                raise RuntimeError("torch.%s attempted to split along dimension %d, but the size of "
                                   "the dimension %d is not divisible by the split_size %d!"
                                   % (name, d, k, ios))
        return tensor_split(input, ios, d)
    f.__name__ = name
    return f


hsplit = _split_fn("hsplit", None, 1)
vsplit = _split_fn("vsplit", 0, 2)
dsplit = _split_fn("dsplit", 2, 3)


def rot90(input, k=1, dims=(0, 1)):
    dims = list(dims)
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError("expected total rotation dims == 2, but got dims = %d" % len(dims))
    if nd < 2:
        raise RuntimeError("expected total dims >= 2, but got total dims = %d" % nd)
    d0, d1 = _dim(dims[0], nd), _dim(dims[1], nd)
    if d0 == d1:
        raise RuntimeError("expected rotation dims to be different, but got dim0 = %d and dim1 = %d"
                           % (d0, d1))
    return index_map(input, lambda a: np.rot90(a, int(k), axes=(d0, d1)).copy(), "Rot90Backward0",
                     view=False)


def dstack(tensors):
    return cat([_atleast_3d(t) for t in _as_list(tensors, "dstack")], 2)


def column_stack(tensors):
    ts = _as_list(tensors, "column_stack")
    ts = [t.reshape(t._data.size, 1) if t._data.ndim <= 1 else t for t in ts]
    return cat(ts, 1)


def row_stack(tensors):
    return cat([_atleast_2d(t) for t in _as_list(tensors, "row_stack")], 0)


def _many(f):
    """atleast_*d's calling convention: one tensor gives a tensor; several (or a list) a tuple."""
    def g(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], Tensor):
            return f(tensors[0])
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            tensors = tuple(tensors[0])
        return tuple(f(t) for t in tensors)
    g.__name__ = f.__name__
    return g


def _atleast_3d(t):
    nd = t._data.ndim
    if nd == 0:
        return _reshape_view(t, (1, 1, 1), "ViewBackward0")
    if nd == 1:
        return unsqueeze(unsqueeze(t, 0), -1)
    if nd == 2:
        return unsqueeze(t, -1)
    return t


atleast_1d = _many(_atleast_1d)
atleast_2d = _many(_atleast_2d)
atleast_3d = _many(_atleast_3d)


def _tri_indices(fn, row, col, offset, dtype):
    if row < 0:
        raise RuntimeError("row must be non-negative, got%d" % row)
    if col < 0:
        raise RuntimeError("col must be non-negative, got%d" % col)
    dt = dtype or int64
    r, c = fn(int(row), int(offset), int(col))
    return _wrap(np.stack([r, c]).astype(dt.np).reshape(2, -1), dt)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(np.tril_indices, row, col, offset, dtype)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    return _tri_indices(np.triu_indices, row, col, offset, dtype)


def broadcast_shapes(*shapes):
    shapes = [(s,) if isinstance(s, numbers.Integral) else tuple(s) for s in shapes]
    result = [1] * max([len(s) for s in shapes] + [0])
    for k, s in enumerate(shapes):
        for i in range(-1, -1 - len(s), -1):
            v = int(s[i])
            if v < 0:
                raise RuntimeError("Trying to create tensor with negative dimension %d: %s"
                                   % (v, list(s)))
            if v == 1 or v == result[i]:
                continue
            if result[i] != 1:
                raise RuntimeError("Attempting to broadcast a dimension of length %d at %d! "
                                   "Mismatching argument at index %d had %s; but expected shape "
                                   "should be broadcastable to %s" % (v, i, k, s, result))
            result[i] = v
    return Size(result)


def block_diag(*tensors):
    for i, t in enumerate(tensors):
        if t._data.ndim > 2:
            raise RuntimeError("torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               "Input %d has %d dimensions" % (i, t._data.ndim))
    if not tensors:
        return _wrap(np.zeros((1, 0), _DEFAULT[0].np), _DEFAULT[0])
    rdt = _cat_dtype(list(tensors))
    blocks = [t._data.reshape((1, 1) if t._data.ndim == 0 else (1, -1) if t._data.ndim == 1
                              else t._data.shape) for t in tensors]
    R = builtins_sum(b.shape[0] for b in blocks)
    C = builtins_sum(b.shape[1] for b in blocks)
    y = np.zeros((R, C), rdt.np)
    parts = []
    r0 = c0 = 0
    for i, (t, b) in enumerate(zip(tensors, blocks)):
        h, w = b.shape
        y[r0:r0 + h, c0:c0 + w] = b
        P = ((r0 + np.arange(h, dtype=np.int64))[:, None] * C + c0
             + np.arange(w, dtype=np.int64)[None, :]).reshape(-1)
        parts.append((t, _flat(P.size), P, 1.0, i))
        r0, c0 = r0 + h, c0 + w
    return _merge(y, rdt, "BlockDiagBackward0", parts, len(tensors))


def kron(input, other):
    nd = max(input._data.ndim, other._data.ndim)
    sa = (1,) * (nd - input._data.ndim) + input._data.shape
    sb = (1,) * (nd - other._data.ndim) + other._data.shape
    a = input.reshape(tuple(v for s in sa for v in (s, 1)))
    b = other.reshape(tuple(v for s in sb for v in (1, s)))
    return _reshape_view(a * b, tuple(x * y for x, y in zip(sa, sb)), "UnsafeViewBackward0")


def unfold(input, dimension, size, step):
    d = input._data
    nd = d.ndim
    dim = _dim(dimension, nd) if nd else 0
    n = d.shape[dim] if nd else 1
    size, step = int(size), int(step)
    if size > n:
        raise RuntimeError("maximum size for tensor at dimension %d is %d but size is %d"
                           % (dim, n, size))
    if step <= 0:
        raise RuntimeError("step is %d but must be > 0" % step)

    def fn(a):
        if a.ndim == 0:
            return a.reshape(size)
        st = a.strides
        shape = a.shape[:dim] + ((n - size) // step + 1,) + a.shape[dim + 1:] + (size,)
        return np.lib.stride_tricks.as_strided(
            a, shape, st[:dim] + (st[dim] * step,) + st[dim + 1:] + (st[dim],))
    return index_map(input, fn, "UnfoldBackward0")


def _install_index_family(Tensor):

    def inplace(op, other_of):
        def m(self, *args, **kwargs):
            other = other_of(args, kwargs)
            return self._inplace(other, lambda s, o: op(s, *args, **kwargs))
        return m

    src3 = lambda a, k: a[2] if len(a) > 2 else k.get("source", k.get("src"))  # noqa: E731
    for name, op, oth in (
            ("index_add", index_add, src3), ("index_copy", index_copy, src3),
            ("index_fill", index_fill, src3), ("scatter", scatter, src3),
            ("scatter_add", scatter_add, src3),
            ("index_put", index_put, lambda a, k: a[1] if len(a) > 1 else k.get("values")),
            ("masked_scatter", masked_scatter, lambda a, k: a[1] if len(a) > 1 else k.get("source"))):
        setattr(Tensor, name, op)
        setattr(Tensor, name + "_", inplace(op, oth))
    for name, f in (("take", take), ("take_along_dim", take_along_dim), ("tile", tile),
                    ("ravel", ravel), ("unfold", unfold), ("rot90", rot90), ("hsplit", hsplit),
                    ("vsplit", vsplit), ("dsplit", dsplit), ("kron", kron)):
        setattr(Tensor, name, f)

    def tril_(self, diagonal=0):
        return self._inplace(None, lambda s, o: tril(s, diagonal))

    def triu_(self, diagonal=0):
        return self._inplace(None, lambda s, o: triu(s, diagonal))
    Tensor.tril_ = tril_
    Tensor.triu_ = triu_

    def _meta_inplace(self, f, name):
        """self becomes the view f(self) (new shape/strides, same memory), as torch's t_()."""
        _leaf_inplace_check(self)
        if self._views and any(r() is not None for r in self._views):
            raise NotImplementedError("in-place %s of a tensor whose views are tracked for "
                                      "gradients is not supported yet" % name)
        r = f(self)
        if r._rg and r._tape is not None:
            named(r, name)
            self._rg, self._tape, self._node = True, r._tape, r._node
            _tp.register(self, r._tape)
        self._data = r._data
        self._vpos = None             # (a view's place in its base is no longer known)
        _bump(self, name if r._tape is not None else None)   # torch's t_() counts a write
        return self

    def transpose_(self, dim0, dim1):
        return _meta_inplace(self, lambda s: transpose(s, dim0, dim1), "TransposeBackward1")

    def t_(self):
        return _meta_inplace(self, t, "TBackward1")
    Tensor.transpose_ = transpose_
    Tensor.swapaxes_ = Tensor.swapdims_ = transpose_
    Tensor.t_ = t_

    def _H(self):
        nd = self._data.ndim
        if nd != 2:
            raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got %d-D "
                               "tensor.%s" % (nd, " For batches of matrices, consider using "
                                              "tensor.mH" if nd > 2 else ""))
        return _transpose2(self, "TransposeBackward0")

    def _mH(self):
        if self._data.ndim < 2:
            raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                               "Got %d-D tensor." % self._data.ndim)
        return _mT(self)
    Tensor.H = property(_H)
    Tensor.mH = property(_mH)




class TensorMethods:
    """Tensor methods of this module, attached by tapegrad/_methods.py."""

    def clone(self, memory_format=None):
        y = np.array(self._data, copy=True)
        if self._rg and _grad_on():
            tp, e, n = _record_index(self, "copy", None, y, nm=_nm("CloneBackward0"))
            return _out(y if y.ndim else y[()], self._dtype, tp, n)
        return _wrap(y if y.ndim else y[()], self._dtype)

    def contiguous(self, memory_format=None):
        if type(self._data) is not _ndarray or self._data.flags.c_contiguous:
            return self
        y = _layout.contiguous(self._data)
        if self._rg and _grad_on():
            tp, e, n = _record_index(self, "copy", None, y, nm=_nm("CloneBackward0"))
            return _out(y, self._dtype, tp, n)
        return _wrap(y, self._dtype)

    # ---- shape
    def view(self, *shape):
        try:
            return _view(self, shape, "view")
        except TypeError:
            if len(shape) == 1 and isinstance(shape[0], dtype):
                return _view_dtype(self, shape[0])
            raise

    def reshape(self, *shape):
        return _view(self, shape, "reshape")

    def view_as(self, other):
        return _view(self, (other.shape,), "view")

    def reshape_as(self, other):
        return _view(self, (other.shape,), "reshape")

    def unbind(self, dim=0):
        return unbind(self, dim)


# ----------------------------------------------------------------------------- copies of views, unsafe splits, resize_
def _torch():
    import tapegrad     # the torch namespace: the bodies below call T.<name> (KNOWN_UPWARD)
    return tapegrad


def _copy_of(view_fn, name):
    """torch.<view>_copy: the view's values in memory of their own, one node ``name``
    (torch's ``<View>Backward0_copy``) over the input."""
    def f(input, *args, **kw):
        out = view_fn(input, *args, **kw).clone()
        if out.requires_grad:
            _hide_below(out, input)
            named(out, name, arity=1)
        return out
    return f


def _copies():
    T = _torch()
    return {
        "diagonal_copy": _copy_of(T.diagonal, "DiagonalBackward0_copy"),
        "expand_copy": _copy_of(lambda x, size, *, implicit=False: x.expand(*size),
                                "ExpandBackward0_copy"),
        "permute_copy": _copy_of(T.permute, "PermuteBackward0_copy"),
        "select_copy": _copy_of(T.select, "SelectBackward0_copy"),
        "slice_copy": _copy_of(lambda x, dim=0, start=None, end=None, step=1:
                               x[(slice(None),) * (dim % x.dim()) + (slice(start, end, step),)],
                               "SliceBackward0_copy"),
        "squeeze_copy": _copy_of(T.squeeze, "SqueezeBackward0_copy"),
        "t_copy": _copy_of(T.t, "TBackward0_copy"),
        "transpose_copy": _copy_of(T.transpose, "TransposeBackward0_copy"),
        "unsqueeze_copy": _copy_of(T.unsqueeze, "UnsqueezeBackward0_copy"),
        "view_copy": _copy_of(lambda x, size: x.view(size) if not hasattr(size, "is_floating_point")
                              else x.view(size), "ViewBackward0_copy"),
        "alias_copy": _copy_of(lambda x: x, "AliasBackward0_copy"),
        "unfold_copy": _copy_of(lambda x, dimension, size, step: x.unfold(dimension, size, step),
                                "UnfoldBackward0_copy"),
        "narrow_copy": _copy_of(T.narrow, "NarrowCopyBackward0"),
    }


def _unsafe_parts(input, dim, sizes, name):
    """Parts of ``input`` along ``dim`` in memory of their own (no views), sharing one node
    ``name`` as torch's unsafe_split / split_copy / unbind_copy outputs do."""
    if input._data.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = _dim(dim, input._data.ndim)
    outs = _multi(input, d, sizes, name)
    ids = {id(o) for o in outs}
    root = input if input._base is None else input._base
    if root._views is not None:            # no longer views: nothing to re-derive
        root._views[:] = [r for r in root._views if id(r()) not in ids]
    for o in outs:
        o._data = np.array(o._data, copy=True)
        o._base = None
        o._vc = [0]
        o._vm = Tensor._vm
    return outs


def _split_sizes(input, split_size, dim):
    n = input._data.shape[dim % builtins.max(input._data.ndim, 1)]
    if isinstance(split_size, (list, tuple)):
        if sum(split_size) != n:
            raise RuntimeError("split_with_sizes expects split_sizes to sum exactly to %d (input "
                               "tensor's size at dimension %d), but got split_sizes=%s"
                               % (n, dim, list(split_size)))
        return [int(s) for s in split_size]
    k = int(split_size)
    return [builtins.min(k, n - i) for i in builtins.range(0, n, k)] if n else [0]


def unsafe_split(input, split_size, dim=0):
    if isinstance(split_size, (list, tuple)):
        return unsafe_split_with_sizes(input, split_size, dim)
    return _unsafe_parts(input, dim, _split_sizes(input, split_size, dim), "UnsafeSplitBackward0")


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return _unsafe_parts(input, dim, _split_sizes(input, list(split_sizes), dim),
                         "UnsafeSplitWithSizesBackward0")


def unsafe_chunk(input, chunks, dim=0):
    n = input._data.shape[dim % builtins.max(input._data.ndim, 1)]
    k = -(-n // chunks) if n else 0
    if n == 0 and chunks > 0:   # torch: unsafe_split_with_sizes into ``chunks`` empty parts
        return unsafe_split_with_sizes(input, [0] * chunks, dim)
    return unsafe_split(input, builtins.max(k, 1), dim)


def split_copy(input, split_size, dim=0):
    return _unsafe_parts(input, dim, _split_sizes(input, split_size, dim), "SplitBackward0_copy")


def split_with_sizes_copy(input, split_sizes, dim=0):
    return _unsafe_parts(input, dim, _split_sizes(input, list(split_sizes), dim),
                         "SplitWithSizesBackward0_copy")


def _resize_(self, *sizes, memory_format=None):
    """Tensor.resize_: the first elements kept (row-major), new ones zero (torch leaves them
    uninitialized); refused on a tensor that requires grad, as torch."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) or (
            len(sizes) == 1 and type(sizes[0]).__name__ == "Size"):
        sizes = tuple(sizes[0])
    sizes = tuple(int(s) for s in sizes)
    if self._rg:
        raise RuntimeError("cannot resize variables that require grad")
    if self._base is not None and int(np.prod(sizes)) > self._data.size:
        raise RuntimeError("Trying to resize storage that is not resizable")
    flat = np.asarray(self._data).reshape(-1)
    n = int(np.prod(sizes))
    new = np.zeros(n, self._dtype.np)
    new[:builtins.min(n, flat.size)] = flat[:n]
    if n <= flat.size and self._base is None and flat.base is None:
        self._data = flat[:n].reshape(sizes)
    else:
        self._data = new.reshape(sizes)
    _bump(self)
    return self


def split_with_sizes(input, split_sizes, dim=0):
    return split(input, list(split_sizes), dim)


def adjoint(input):
    return input.adjoint()


def _install_composed(Tensor):
    T = _torch()
    Tn = Tensor
    Tn.split_with_sizes = lambda self, split_sizes, dim=0: T.split(self, list(split_sizes), dim)
    Tn.adjoint = lambda self: self.transpose(-2, -1)
    Tn.narrow_copy = _copies()["narrow_copy"]
    Tn.resize_ = _resize_
    Tn.unsafe_split, Tn.unsafe_chunk = unsafe_split, unsafe_chunk
    Tn.unsafe_split_with_sizes = unsafe_split_with_sizes
