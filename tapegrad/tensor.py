"""The Tensor facade: PyTorch's semantics over numpy values and the tape.

A Tensor owns a numpy value (an ndarray, or a numpy scalar for 0-dim results until someone
needs it as an array), a dtype, ``requires_grad``, a version counter shared with its views,
and, when it is the output of a recorded op, its tape and node. Forward values are computed
by the op table's numpy references; recording appends one entry (``_record_*``). Composite
operations (mean, sigmoid via the table, reshape, unbind, indexing, matmul shapes) are built
here from the primitive core of ``ops.py``.
"""
import builtins
import math
import numbers
import operator
import sys
from math import prod as _prod
import warnings
import weakref

import numpy as np

from ._compiled import _layout, _native, _vmath
from . import _par
from ._core import tape as _tp
from ._state import STATE
from ._schema import F_BIG, F_HIDDEN, F_SAVES, FL, IA, K, NDT, NK, NM, NPROD
from ._core.tape import _PACK_E, _PACK_N, address as _address
from .ops import BY_NAME, OPCODE, OPS

_ndarray = np.ndarray
_new = object.__new__
_generic = np.generic

# torch computes inf/nan silently; numpy warns. Silence numpy's floating-point warnings raised
# from tapegrad's own modules only (a user's own numpy calls still warn).
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"tapegrad(\.|$)")


# ----------------------------------------------------------------------------- dtypes
_MSG_NAMES = {"float16": ("Half", "c10::Half"), "float32": ("Float", "float"),
              "float64": ("Double", "double"), "int8": ("Char", "signed char"),
              "int16": ("Short", "short int"), "int32": ("Int", "int"), "int64": ("Long", "long int"),
              "uint8": ("Byte", "unsigned char"), "bool": ("Bool", "bool")}


class dtype:
    """A tensor element type (``torch.float32`` ...)."""
    __slots__ = ("name", "np", "slot", "is_floating_point", "is_complex", "is_signed", "itemsize",
                 "_cat", "_tname", "_cname")

    def __init__(self, name, npdt, cat):
        self.name, self.np = name, np.dtype(npdt)
        self.slot = {"float32": 0, "float64": 1}.get(name, -1)
        self.is_floating_point = cat == 2
        self.is_complex = False
        self.is_signed = name not in ("uint8", "bool")
        self.itemsize = self.np.itemsize
        self._cat = cat
        # torch's names in messages: ScalarType ("Float", "Long") and the C++ type ("float")
        self._tname, self._cname = _MSG_NAMES[name]

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))

    def to_real(self):
        return self


def _dtype_by_name(name):
    return _BY_NAME[name]


class _LegacyType(type):
    """The metaclass of torch's legacy tensor types (torch.FloatTensor ...): calling one makes a
    tensor of its dtype (``FloatTensor(2, 3)`` a shape, ``FloatTensor([1, 2])`` data), and
    ``isinstance(t, torch.FloatTensor)`` holds for float32 tensors."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj._dtype is cls.dtype

    def __call__(cls, *args, **kwargs):
        data, dt = _legacy_data(cls.dtype, args, kwargs, False)
        return _wrap(data, dt)


def _legacy_data(dt, args, kwargs, alias_any):
    """(value, dtype) of a legacy constructor call ``torch.Tensor(*args)`` with dtype ``dt``:
    no arguments an empty tensor, ints (or a torch.Size) a shape, one sequence or array the
    data. A tensor is shared (``alias_any``: whatever its dtype, as torch.Tensor(t))."""
    _check_device(kwargs.pop("device", None))
    if kwargs:
        raise TypeError("new() got an unexpected keyword argument '%s'" % next(iter(kwargs)))
    if not args:
        return np.zeros(0, dt.np), dt
    if len(args) == 1 and isinstance(args[0], Tensor):
        t = args[0]
        if t._dtype is not dt and not alias_any:
            raise TypeError("expected TensorOptions(dtype=%s, device=cpu, layout=Strided, "
                            "requires_grad=false (default), pinned_memory=false (default), "
                            "memory_format=(nullopt)) (got TensorOptions(dtype=%s, ...))"
                            % (dt._cname, t._dtype._cname))
        return t._arr(), t._dtype
    if len(args) == 1 and isinstance(args[0], Size) or all(
            isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
        shape = tuple(args[0]) if isinstance(args[0], Size) else tuple(int(a) for a in args)
        if builtins.any(n < 0 for n in shape):
            raise RuntimeError("Trying to create tensor with negative dimension %d: %s"
                               % (builtins.min(shape), list(shape)))
        return np.zeros(shape, dt.np), dt          # (torch leaves it uninitialised)
    if len(args) == 1 and not isinstance(args[0], (numbers.Number, str)):
        from .creation import tensor
        return np.asarray(tensor(args[0], dtype=dt)._data), dt
    raise TypeError("new(): data must be a sequence (got %s)" % builtins.type(args[0]).__name__)


float16 = dtype("float16", np.float16, 2)
float32 = dtype("float32", np.float32, 2)
float64 = dtype("float64", np.float64, 2)
int8 = dtype("int8", np.int8, 1)
int16 = dtype("int16", np.int16, 1)
int32 = dtype("int32", np.int32, 1)
int64 = dtype("int64", np.int64, 1)
uint8 = dtype("uint8", np.uint8, 1)
bool_ = dtype("bool", np.bool_, 0)
_ALL = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_)
# torch's legacy tensor types, by their ScalarType names (FloatTensor, LongTensor ...)
LEGACY = {d._tname + "Tensor": _LegacyType(d._tname + "Tensor", (), {"dtype": d, "__module__": "torch"})
          for d in _ALL}
_BY_NAME = {d.name: d for d in _ALL}
_BY_NP = {d.np: d for d in _ALL}
_DEFAULT = [float32]


def get_default_dtype():
    return _DEFAULT[0]


def set_default_dtype(d):
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    _DEFAULT[0] = d


def _as_dtype(d, fname=None):
    """A torch dtype argument: a tapegrad dtype, or Python's float / int / bool (as torch).
    Anything else (a numpy dtype, a string) raises TypeError as torch's argument parser."""
    if d is None or isinstance(d, dtype):
        return d
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    t = type(d)
    raise TypeError("%sargument 'dtype' must be torch.dtype, not %s"
                    % (fname + "(): " if fname else "", t.__name__ if t.__module__ == "builtins"
                       else "%s.%s" % (t.__module__, t.__name__)))


def promote_types(a, b):
    if a is b:
        return a
    if a._cat != b._cat:                  # torch: int32 with float32 -> float32
        return a if a._cat > b._cat else b
    return _BY_NP[np.promote_types(a.np, b.np)]


def _scalar_dtype(v):
    if isinstance(v, bool):
        return bool_
    if isinstance(v, numbers.Integral):
        return int64
    return _DEFAULT[0]


_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t", "float16": "c10::Half", "float32": "float", "float64": "double",
            "bool": "bool"}


def _checked_scalar(v, dt, tname=None):
    """The number ``v`` converted to dtype ``dt`` as torch's checked conversion (fill values,
    clamp bounds, ``tensor(data, dtype=...)``): out-of-range values raise RuntimeError ("value
    cannot be converted to type uint8_t without overflow"); unsigned types take negative values
    down to -max (two's complement); floats truncate toward zero into integer types."""
    npdt = dt.np
    bad = False
    if npdt.kind in "iu":
        info = np.iinfo(npdt)
        lo = -int(info.max) if npdt.kind == "u" else int(info.min)
        if isinstance(v, (float, np.floating)):
            bad = not (math.isfinite(v) and lo <= math.trunc(v) <= info.max)
        else:
            bad = not lo <= int(v) <= info.max
        if not bad:
            return _np_scalar(math.trunc(v) if isinstance(v, (float, np.floating)) else int(v),
                              npdt)
    elif npdt.kind == "f" and tname is None:
        fv = float(v)
        bad = math.isfinite(fv) and builtins.abs(fv) > float(np.finfo(npdt).max)
    if bad:
        raise RuntimeError("value cannot be converted to type %s without overflow"
                           % (tname or _C_NAMES[dt.name]))
    return npdt.type(v)


def _result_dtype(a, b):
    """torch's type promotion for a Tensor ``a`` and a Tensor or Python number ``b``:
    dimensioned tensors outrank 0-dim tensors, which outrank Python numbers, unless a
    lower-ranked operand is of a higher category (bool < integer < floating)."""
    ad = a._dtype
    if isinstance(b, Tensor):
        bd = b._dtype
        if ad is bd:
            return ad
        ra, rb = a._data.ndim > 0, b._data.ndim > 0
        if ra == rb:
            if ad._cat != bd._cat:        # float32 (op) int64 -> float32
                return ad if ad._cat > bd._cat else bd
            return promote_types(ad, bd)
        hi, lo = (ad, bd) if ra else (bd, ad)
        return lo if lo._cat > hi._cat else hi
    sd = _scalar_dtype(b)
    return sd if sd._cat > ad._cat else ad


# ----------------------------------------------------------------------------- Size
_new_size = tuple.__new__       # a Size from a shape known to hold ints (no checks)


class Size(tuple):
    """torch.Size: a tuple of ints; slicing, concatenating and repeating one gives a Size."""
    __slots__ = ()

    def __new__(cls, sizes=()):
        out = []
        for i, v in enumerate(sizes):
            try:
                out.append(operator.index(v))
            except TypeError:
                raise TypeError("torch.Size() takes an iterable of 'int' (item %d is '%s')"
                                % (i, type(v).__name__)) from None
        return tuple.__new__(cls, out)

    def __repr__(self):
        return "torch.Size([%s])" % ", ".join(str(int(s)) for s in self)

    def numel(self):
        return int(np.prod(self, dtype=np.int64))

    def __getitem__(self, key):
        r = tuple.__getitem__(self, key)
        return tuple.__new__(Size, r) if type(key) is slice else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError("can only concatenate tuple (not \"%s\") to torch.Size"
                            % type(other).__name__)
        return tuple.__new__(Size, tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return tuple.__new__(Size, tuple.__add__(other, self))

    def __mul__(self, n):
        return tuple.__new__(Size, tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __reduce__(self):
        return (Size, (tuple(self),))


_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                 "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")


class device:
    """torch.device: a device type and optional index. Any of torch's device types can be named
    (``torch.device('cuda')`` constructs); tensors live on the CPU only (``_check_device``)."""
    __slots__ = ("type", "index")

    def __init__(self, type="cpu", index=None):
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, numbers.Integral) and not isinstance(type, bool):
            raise RuntimeError("Cannot access accelerator device when none is available.")
        elif not isinstance(type, str):
            raise TypeError("device(): argument 'type' (position 1) must be str, not %s"
                            % builtins.type(type).__name__)
        else:
            name, sep, idx = type.partition(":")
            if name not in _DEVICE_TYPES:
                raise RuntimeError("Expected one of %s device type at start of device string: %s"
                                   % (", ".join(_DEVICE_TYPES), type))
            if sep:
                if not idx.isdigit():
                    raise RuntimeError("Invalid device string: '%s'" % type)
                if index is not None:
                    raise RuntimeError("type (string) must not include an index because index was "
                                       "passed explicitly: %s" % type)
                index = int(idx)
            type = name
        if index is not None:
            if not isinstance(index, numbers.Integral):
                raise TypeError("device(): argument 'index' (position 2) must be int, not %s"
                                % builtins.type(index).__name__)
            if index < 0:
                raise RuntimeError("Device index must not be negative")
            index = int(index)
        self.type, self.index = type, index

    def __repr__(self):
        if self.index is None:
            return "device(type='%s')" % self.type
        return "device(type='%s', index=%d)" % (self.type, self.index)

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)

    def __eq__(self, other):          # (a string is not a device: torch compares False)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))


def _check_device(d):
    """Raise torch's error for a device tensors cannot be put on (all but the CPU)."""
    if d is None:
        return
    dv = d if isinstance(d, device) else device(d)
    if dv.type == "cpu":
        return
    if dv.type == "cuda":
        raise AssertionError("Torch not compiled with CUDA enabled")
    if dv.type == "mps":
        raise RuntimeError("PyTorch is not linked with support for mps devices")
    raise RuntimeError("tapegrad runs on the CPU only; cannot use device '%s'" % dv)


_CPU = device("cpu")


# Set by tapegrad.func while it records a function: called when a comparison is made or a
# value leaves the tape (item/bool/float), so replays can check the same decisions.
GUARD = [None]


def _guard_sel(x, fname, *params):
    """While tapegrad.func records: an op took positions or masks from the values of ``x``
    (see tapegrad/_sel.py for the signatures ``fname``); a replay whose values give another
    signature records the function again instead of reusing the recorded positions."""
    g = GUARD[0]
    if g is not None and isinstance(x, Tensor) and x._dtype._cat == 2:
        g("sel", x, fname, params)


def _guard_order(x, dim=None):
    """``_guard_sel`` for a choice made from the order of ``x``'s values along ``dim`` (None
    or a tuple: over all of them)."""
    if GUARD[0] is not None and isinstance(x, Tensor):
        nd = x._data.ndim
        if isinstance(dim, int) and not isinstance(dim, bool) and nd and -nd <= dim < nd:
            _guard_sel(x, "order", dim % nd, 0)
        else:
            _guard_sel(x, "order", None, 0)


def _grad_on():
    return STATE.enabled


# ----------------------------------------------------------------------------- creation helpers
def _wrap(data, dt):
    t = object.__new__(Tensor)
    t._data = data
    t._dtype = dt
    return t


def _vcof(t):
    """A tensor's version counter (a one-element list shared with its views), made on demand."""
    vc = t._vc
    if vc is None:
        vc = t._vc = [0]
    return vc


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


def _np_of(v, dt=None):
    """numpy value of a Tensor or Python number/array-like."""
    if isinstance(v, Tensor):
        return v._data
    return np.asarray(v)


_NM = None


def _nm(name):
    global _NM
    if _NM is None:
        from ._core.names import name_id
        _NM = name_id
    return _NM(name)


class _NoArg:
    """The default of an argument torch tells apart from None (``sum(dim=None)`` is
    ``SumBackward1``, ``sum()`` ``SumBackward0``)."""
    __slots__ = ()

    def __repr__(self):
        return "None"


_ND = _NoArg()


def _nm_default(op):
    return _OPNM[op.opcode]


from ._core.names import NAMES as _NAMES, name_id as _name_id  # noqa: E402

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


def _expand_node(tp, node, src_shape, out_shape, dt):
    """Hidden broadcast of a node to ``out_shape`` (a gather whose VJP sums)."""
    idx = np.broadcast_to(np.arange(int(np.prod(src_shape, dtype=np.int64)), dtype=np.int64)
                          .reshape(src_shape), out_shape).ravel()
    off = tp.index(idx)
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


def _record_index(x, opname, idx, y, c=None, nm=None, aliases=None):
    """gather / segsum / copy entries; ``aliases``: sizes of outputs sharing the node (unbind)."""
    tp = _tape_for(x)
    a = _src(x, tp)
    dt = x._dtype.slot
    off = tp.index(idx) if idx is not None else 0
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


_ENGINE = None


def _engine():
    global _ENGINE
    from .autograd import engine
    engine._tensor_mod()
    _ENGINE = engine
    return engine


def _type_arg(t):
    """The dtype named by a ``Tensor.type`` argument."""
    if isinstance(t, dtype):
        return t
    if isinstance(t, _LegacyType):
        return t.dtype
    if isinstance(t, str):
        name = t[6:] if t.startswith("torch.") else t
        if name.startswith("cuda."):
            raise RuntimeError("Cannot initialize CUDA without ATen_cuda library: tapegrad runs on "
                               "the CPU only")
        if name in LEGACY:
            return LEGACY[name].dtype
        raise ValueError("invalid type: '%s'" % t)
    if isinstance(t, builtins.type):             # float, numpy.float64 ...
        raise ValueError("invalid type: '%s'" % (t.__name__ if t.__module__ == "builtins"
                                                  else "%s.%s" % (t.__module__, t.__name__)))
    raise ValueError("invalid type: '%s'" % _tyname(t))


_NUMPY_RG = ("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
             "instead.")


_TRUE = object()     # div without rounding_mode (an explicit rounding_mode=None is torch's
                     # other overload, named DivBackward2)


# ----------------------------------------------------------------------------- Tensor
class Tensor:
    """A multi-dimensional array with PyTorch's autograd semantics."""
    # Defaults live on the class so that making a tensor sets only what differs (~2x cheaper
    # than __slots__ with every field assigned).
    _rg = False        # requires_grad
    _tape = None       # tape of the entry that produced it (None: a leaf)
    _node = -1         # its node on that tape
    _vc = None         # version counter, shared with views (made on demand: _vcof)
    _grad = None
    _acc = None        # AccumulateGrad node (leaves)
    _base = None       # for a view: its root (the tensor that owns the memory it shows)
    _views = None      # for a root: weakrefs of its views (re-derived after a recorded write)
    _vlim = 64         # ... pruned of dead ones when longer than this
    _vm = 0            # for a view: how it was made, when that forbids in-place writes with
                       # gradients (_VM_MULTI: unbind/split output, _VM_NOGRAD: under no_grad)
    _lref = None       # leaf: (tape.wself, node) of its node on the tape it was last used on
    _retain = False
    __array_priority__ = 1000

    def __init__(self, *args, **kwargs):
        # torch.Tensor(): empty; torch.Tensor(2, 3): a shape; torch.Tensor(data): the data as the
        # default dtype; torch.Tensor(t): shares t
        self._data, self._dtype = _legacy_data(_DEFAULT[0], args, kwargs, True)

    # ---- basic attributes
    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return _new_size(Size, self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return _new_size(Size, self._data.shape)
        try:
            return int(self._data.shape[dim])
        except IndexError:
            _norm_dims(dim, self._data.ndim)          # raises torch's "Dimension out of range"
            raise

    def dim(self):
        return self._data.ndim

    ndimension = dim

    @property
    def ndim(self):
        return self._data.ndim

    def numel(self):
        return int(self._data.size)

    nelement = numel

    @property
    def device(self):
        return _CPU

    @property
    def is_cuda(self):
        return False

    @property
    def is_cpu(self):
        return True

    def get_device(self):
        return -1

    def is_signed(self):
        return self._dtype.is_signed

    # tapegrad has no complex dtypes: on real tensors torch's conjugation and real part are the
    # tensor itself (``x.conj() is x``), its imaginary part an error
    def conj(self):
        return self

    conj_physical = resolve_conj = resolve_neg = conj

    def is_conj(self):
        return False

    is_neg = is_complex = is_conj

    @property
    def real(self):
        return self

    @property
    def imag(self):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")

    def is_floating_point(self):
        return self._dtype.is_floating_point

    def element_size(self):
        return self._dtype.itemsize

    @property
    def requires_grad(self):
        return self._rg

    @requires_grad.setter
    def requires_grad(self, flag):
        if self._tape is not None and not flag:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                               "want to use a computed variable in a subgraph that doesn't require "
                               "differentiation use var_no_grad = var.detach().")
        if flag and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if flag and self._dtype.slot < 0:
            raise NotImplementedError(_NO_HALF_GRAD)
        self._rg = bool(flag)

    def requires_grad_(self, requires_grad=True):
        if requires_grad and not self._dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    @property
    def is_leaf(self):
        return self._tape is None

    @property
    def grad_fn(self):
        if self._tape is None:
            return None
        from .autograd.graph import node_view
        tp, node = _tp.resolve(self)
        e = tp.N[node * NK + NPROD]
        if tp.E[e * K + FL] & F_HIDDEN and tp.E[e * K] == _CAST_OP:
            # an in-place op's result cast to its target's dtype (y += float64): torch's node
            # is the op's
            e = tp.N[tp.E[e * K + IA] * NK + NPROD]
        return node_view(tp, e, self._data.shape)

    @property
    def grad(self):
        if self._tape is not None and not getattr(self, "_retain", False):
            import warnings
            warnings.warn("The .grad attribute of a Tensor that is not a leaf Tensor is being "
                          "accessed. Its .grad attribute won't be populated during "
                          "autograd.backward(). If you indeed want the .grad field to be populated "
                          "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor.",
                          UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, g):
        if g is not None:
            if not isinstance(g, Tensor):
                raise TypeError("assigned grad expected to be a Tensor or None but got grad of "
                                "type %s" % type(g).__name__)
            if g._dtype is not self._dtype:
                raise RuntimeError(
                    "attempting to assign a gradient with dtype '%s' to a tensor with grad_dtype "
                    "'%s'. The gradient must match the tensor's grad_dtype (defaults to the "
                    "tensor's dtype). You can set the tensor's grad_dtype attribute with a "
                    "specific dtype, or None to allow any dtype. Set grad_dtype with caution. "
                    "Diverging the dtypes of a tensor and its gradient may break downstream "
                    "systems that assume they match." % (g._dtype._cname, self._dtype._tname))
            if g._data.shape != self._data.shape:
                raise RuntimeError(
                    "attempting to assign a gradient of size '%s' to a tensor of size '%s'. "
                    "Please ensure that the gradient and the tensor are the same size"
                    % (list(g._data.shape), list(self._data.shape)))
        self._grad = g

    @property
    def _version(self):
        vc = self._vc
        return vc[0] if vc is not None else 0

    @property
    def data(self):
        t = _wrap(self._arr(), self._dtype)   # shares storage, not the version counter
        return t

    @data.setter
    def data(self, other):
        if not isinstance(other, Tensor):
            raise TypeError("data must be a Tensor")
        if other._data.shape != self._data.shape or other._dtype is not self._dtype:
            self._lref = None            # its node on the current tape has the old size
        self._data = other._arr()
        self._dtype = other._dtype

    def _arr(self):
        """The value as an ndarray (materialising a 0-dim numpy scalar in place)."""
        d = self._data
        if type(d) is not _ndarray:
            d = self._data = np.array(d)
        return d

    # ---- conversion
    def item(self):
        if self._data.size != 1:
            raise RuntimeError("a Tensor with %d elements cannot be converted to Scalar" % self._data.size)
        v = self._data.item() if self._data.ndim == 0 else self._data.reshape(-1)[0].item()
        if GUARD[0] is not None:                  # a value escaping to Python while recording
            GUARD[0]("item", self, v)
        return v

    def tolist(self):
        _guard_sel(self, "vals")                 # (tapegrad.func: values leave the recording)
        return self._data.tolist()

    def numpy(self, force=False):
        """A new ndarray object viewing the tensor's memory (as torch: its shape or flags can
        be changed without touching the tensor). Raises for a tensor requiring grad while grad
        mode is on."""
        if self._rg and STATE.enabled and not force:
            raise RuntimeError(_NUMPY_RG)
        _guard_sel(self, "vals")
        return self._arr().view()

    def __array__(self, dtype=None, copy=None):
        # torch's __array__ is numpy(); ``np.array(t)`` (copy=True) copies, ``np.asarray(t)``
        # shares memory
        if self._rg and STATE.enabled:
            raise RuntimeError(_NUMPY_RG)
        _guard_sel(self, "vals")
        a = self._arr()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        return a.copy() if copy else a.view()

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # numpy ufuncs on tensors return tensors (``np.sin(t)``), bool results as uint8 (torch)
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        from .creation import from_numpy
        return from_numpy(array)

    def __float__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self.item())

    def __int__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    def __index__(self):
        if self._dtype._cat > 1 or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with %s is ambiguous"
                               % ("no values" if self._data.size == 0 else "more than one value"))
        return bool(self.item())

    def __complex__(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return complex(self.item())

    def __len__(self):
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __hash__(self):
        return id(self)

    def __repr__(self):
        from ._format import tensor_repr
        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec):
        if self._data.ndim == 0:
            return self._data.item().__format__(spec)
        return object.__format__(self, spec)   # "" -> str(t); a spec raises TypeError (torch)

    def __reduce_ex__(self, proto):
        return (_rebuild, (np.array(self._data), self._dtype.name, self._rg))

    def detach(self):
        if GUARD[0] is not None:                 # (tapegrad.func: a constant of these values)
            _guard_sel(self, "vals")
        return _share(self)

    def detach_(self):
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                "function in torch/optim/optimizer.py as the solution.")
        if self._tape is not None:
            self._tape = None
            self._node = -1
        self._rg = False
        return self

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

    def is_contiguous(self, memory_format=None):
        return type(self._data) is not _ndarray or bool(self._data.flags.c_contiguous)

    def to(self, *args, **kwargs):
        """A tensor of another dtype (device: the CPU only); ``self`` when nothing changes,
        unless ``copy=True``."""
        dt, dev = kwargs.pop("dtype", None), kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError("to() got an unexpected keyword argument '%s'" % next(iter(kwargs)))
        flags = []
        for a in args:
            if isinstance(a, dtype) or a is float or a is int or (a is bool and dt is None):
                if dt is not None:
                    raise TypeError("to() received an invalid combination of arguments - got "
                                    "two dtypes")
                dt = _as_dtype(a)
            elif isinstance(a, Tensor):
                dt = a._dtype
            elif isinstance(a, bool):
                flags.append(a)                  # non_blocking, copy
            elif isinstance(a, (str, device, numbers.Integral)):
                dev = a
            else:
                raise TypeError("to() received an invalid combination of arguments - got (%s)"
                                % _tyname(a))
        if len(flags) > 1:
            copy = flags[1]
        _check_device(dev)
        dt = _as_dtype(dt, "to")
        if dt is None or dt is self._dtype:
            return _convert(self, self._dtype) if copy else self
        return _convert(self, dt)

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        raise AssertionError("Torch not compiled with CUDA enabled")

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """``t.type()``: torch's legacy type name ('torch.FloatTensor'); ``t.type(T)``: ``t``
        converted to T, a dtype, a legacy type or its name."""
        if dtype is None:
            return "torch.%sTensor" % self._dtype._tname
        return self.to(_type_arg(dtype))
    def type_as(self, other):
        return self.to(other._dtype)

    def float(self):
        return self.to(float32)

    def double(self):
        return self.to(float64)

    def long(self):
        return self.to(int64)

    def int(self):
        return self.to(int32)

    def bool(self):
        return self.to(bool_)

    def half(self):
        return self.to(float16)

    def short(self):
        return self.to(int16)

    def byte(self):
        return self.to(uint8)

    def char(self):
        return self.to(int8)

    def stride(self, dim=None):
        d = self._arr()
        st = tuple(s // d.itemsize for s in d.strides) if d.size else tuple(
            int(np.prod(d.shape[i + 1:], dtype=np.int64)) for i in range(d.ndim))
        return st if dim is None else st[dim]

    def storage_offset(self):
        base = self._base
        if base is None or type(self._data) is not _ndarray or not self._data.size:
            return 0
        return (_address(self._data) - _address(base._arr())) // self._data.itemsize

    def data_ptr(self):
        return int(self._arr().__array_interface__["data"][0])

    # ---- in-place random initialisers (torch.nn.init uses them under no_grad)
    def _init_(self, sample, kernel=None):
        if kernel is not None and not self._dtype.is_floating_point:
            raise NotImplementedError("\"%s\" not implemented for '%s'"
                                      % (kernel, self._dtype._tname))
        _leaf_inplace_check(self)
        d = self._arr()
        d[...] = sample(d.shape).astype(d.dtype, copy=False)
        _bump(self)
        return self

    def uniform_(self, a=0.0, b=1.0, generator=None):
        from .creation import _gen
        return self._init_(lambda shp: _gen(generator).uniform(a, b, shp), "check_uniform_bounds")

    def normal_(self, mean=0.0, std=1.0, generator=None):
        from .creation import _gen
        return self._init_(lambda shp: _gen(generator).normal(mean, std, shp), "normal_kernel_cpu")

    def bernoulli_(self, p=0.5, generator=None):
        from .creation import _gen
        return self._init_(lambda shp: (_gen(generator).random(shp) < p))

    def exponential_(self, lambd=1.0, generator=None):
        from .creation import _gen
        return self._init_(lambda shp: _gen(generator).exponential(1.0 / lambd, shp),
                           "exponential_cpu")

    def random_(self, low=0, high=None, generator=None):
        from .creation import _gen
        if high is None:
            low, high = 0, low if low else 2 ** 24
        return self._init_(lambda shp: _gen(generator).integers(low, high, shp))

    def cpu(self, memory_format=None):
        return self

    # ---- backward
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        if (gradient is None and not create_graph and inputs is None and self._tape is not None
                and self._data.size == 1):
            # loss.backward(): the common case without the general argument handling
            (_ENGINE or _engine()).backward_one(self, bool(retain_graph))
            return
        (_ENGINE or _engine()).backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def retain_grad(self):
        if not self._rg:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._tape is not None and not self._retain:
            import weakref
            self._retain = True
            tp, _ = _tp.resolve(self)
            tp.retained.append(weakref.ref(self))

    @property
    def retains_grad(self):
        return self._tape is not None and getattr(self, "_retain", False)

    # ---- arithmetic. An operand the function rejects with TypeError (an ndarray, a list, a
    # string) gives NotImplemented, as in torch: Python then tries the other operand, so
    # ``t + ndarray`` is numpy's ufunc over ``t.__array__()`` wrapped back (float64 Tensor).
    # (__add__, __radd__, __sub__, __mul__, __rmul__, __pow__: the op functions' operator forms,
    # assigned after them at the end of the module)
    def __rsub__(self, other):
        to = type(other)
        if (to is float or to is int) and self._dtype._cat == 2:    # number - floating tensor
            y = np.subtract(other, self._data)
            if self._rg and STATE.enabled:
                return _record_binary(_SUB_OP, other, self, y, self._dtype, nm=_RSUB_NM)
            return _wrap(y, self._dtype)
        try:
            out = _sub(other, self)
        except TypeError:
            return NotImplemented
        if out._tape is not None:
            _rename_last(out, "RsubBackward1")
        return out

    def __truediv__(self, other):
        try:
            if type(other) is float or (type(other) is Tensor and self._dtype._cat == 2):
                return _div(self, other)
            return div(self, other)
        except TypeError:
            return NotImplemented

    def __rtruediv__(self, other):
        # torch: other / x = x.reciprocal() * other (an ndarray ``other``: numpy's multiply)
        r = reciprocal(self)
        to = type(other)
        return mul(r, other) if to is float or to is int or _is_number(other) else r * other

    def __rpow__(self, other):
        try:
            return pow(other, self)
        except TypeError:
            return NotImplemented

    def __neg__(self):
        return neg(self)

    def __pos__(self):
        return positive(self)

    def __matmul__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return matmul(self, other)

    def __rmatmul__(self, other):
        if not isinstance(other, Tensor):
            return NotImplemented
        return matmul(other, self)

    def __abs__(self):
        return abs(self)

    def add(self, other, alpha=1):
        return add(self, other, alpha=alpha)

    def sub(self, other, alpha=1):
        return sub(self, other, alpha=alpha)

    def mul(self, other):
        return mul(self, other)

    def div(self, other, *, rounding_mode=_TRUE):
        return div(self, other, rounding_mode=rounding_mode)

    divide = div

    def true_divide(self, other):
        return div(self, other)

    def pow(self, other):
        return pow(self, other)

    def neg(self):
        return neg(self)

    def reciprocal(self):
        return reciprocal(self)

    negative = neg

    def matmul(self, other):
        return matmul(self, other)

    def mm(self, other):
        return mm(self, other)

    def dot(self, other):
        return dot(self, other)

    def mv(self, other):
        return mv(self, other)

    # comparisons (no gradient)
    def _cmp(self, other, f):
        r = _wrap(f(self._data, _np_of(other)), bool_)
        if GUARD[0] is not None:                  # tapegrad.func is recording: a branch?
            GUARD[0]("cmp", self, other, f, r)
        return r

    def __eq__(self, other):
        return self._cmp(other, np.equal)

    def __ne__(self, other):
        return self._cmp(other, np.not_equal)

    def __lt__(self, other):
        return self._cmp(other, np.less)

    def __le__(self, other):
        return self._cmp(other, np.less_equal)

    def __gt__(self, other):
        return self._cmp(other, np.greater)

    def __ge__(self, other):
        return self._cmp(other, np.greater_equal)

    eq, ne, lt, le, gt, ge = __eq__, __ne__, __lt__, __le__, __gt__, __ge__

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

    def add_(self, other, alpha=1):
        return self._inplace(other, lambda s, o: add(s, o, alpha=alpha), True)

    def sub_(self, other, alpha=1):
        return self._inplace(other, lambda s, o: sub(s, o, alpha=alpha), True)

    def mul_(self, other):
        return self._inplace(other, mul, True)

    def div_(self, other):
        return self._inplace(other, div, True)

    def pow_(self, other):
        return self._inplace(other, pow, True)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ipow__(self, other):
        return self._inplace(other, pow, True)

    def __iand__(self, other):
        return self._inplace(other, lambda s, o: s & o, True)

    def __ior__(self, other):
        return self._inplace(other, lambda s, o: s | o, True)

    def __ixor__(self, other):
        return self._inplace(other, lambda s, o: s ^ o, True)

    def zero_(self):
        return self.fill_(0, zero=True)

    def fill_(self, value, zero=False):
        vt = value if isinstance(value, Tensor) else None
        if vt is not None and vt._data.ndim:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor with "
                               "%d dimensions." % vt._data.ndim)
        if STATE.enabled and (self._rg or (vt is not None and vt._rg)):
            if self._rg and self._tape is None:
                _leaf_error(self)
            if self._dtype.slot >= 0:
                if self._base is not None:
                    _view_checks(self)
                    _write(self, None, value, "CopySlices")
                elif vt is not None:
                    _write(self, None, value, "FillBackward3")
                else:
                    # the result no longer depends on the old value: a mul-by-zero entry
                    name = "ZeroBackward0" if zero else "FillBackward2"
                    y = np.full(self._data.shape, value, self._dtype.np)
                    self._inplace(0.0, lambda s, o: _record_binary(
                        BY_NAME["mul"], s, 0.0, y if y.ndim else y[()], s._dtype, nm=_nm(name)))
                return self
        d = self._arr()
        d[...] = vt._data if vt is not None else value
        _bump(self)
        return self

    def copy_(self, src, non_blocking=False):
        if not isinstance(src, Tensor):
            raise TypeError("copy_(): argument 'other' (position 1) must be Tensor, not %s"
                            % _type_name(src))
        d, sd = self._data, src._data
        if sd.shape != d.shape:
            _inplace_shape_check(self, src)
        if src._vc is self._vc and src is not self and self._vc is not None:
            _check_overlap(d, sd)
        if STATE.enabled and (self._rg or src._rg):
            if self._rg and self._tape is None:
                _leaf_error(self)
            if self._dtype.slot >= 0:
                if self._base is not None:
                    _view_checks(self)
                _write(self, None, src, "CopySlices" if self._base is not None else "CopyBackwards")
                return self
        self._arr()[...] = sd
        _bump(self)
        return self

    # ---- unary math
    def exp(self):
        return exp(self)

    def log(self):
        return log(self)

    def sin(self):
        return sin(self)

    def cos(self):
        return cos(self)

    def tanh(self):
        return tanh(self)

    def sigmoid(self):
        return sigmoid(self)

    def relu(self):
        return relu(self)

    def sqrt(self):
        return sqrt(self)

    def abs(self):
        return abs(self)

    # ---- reductions
    # sum, mean: the module functions themselves (set at the end of the module)

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

    def __getitem__(self, key):
        return _getitem(self, key)

    def __setitem__(self, key, value):
        if key is False:                  # torch: x[False] = v does nothing, whatever v is
            return
        vt = value if isinstance(value, Tensor) else None
        if vt is None and not isinstance(value, _NUMBER_TYPES):
            raise TypeError("can't assign a %s to a %s" % (_type_name(value), self.type()))
        d = self._arr()
        nk = _np_key(key, d.shape)
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
            _setitem_shape_error(d, key, nk, vd)
            raise
        _bump(self)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return allclose(self, other, rtol, atol, equal_nan)


# ----------------------------------------------------------------------------- in-place writes
# A view shares its root's memory and version counter; the root keeps weak references to its
# views. An in-place op is computed out of place (``Tensor._inplace``) and stored into the
# target's memory; with gradients, a non-view target takes the result's node, and a write
# through a view is recorded on the root (``_write``: torch's CopySlices) after which every view
# of the root reads from the root's new node (``_rederive_views``, lazily through tape.STALE).

_NUMBER_TYPES = (int, float, complex)
_VM_MULTI, _VM_MULTI_NOGRAD, _VM_NOGRAD = 1, 2, 3
_MULTI_TAIL = ("This view is the output of a function that returns multiple views. Such functions "
               "do not allow the output views to be modified inplace. You should replace the "
               "inplace operation by an out-of-place one.")
_NOGRAD_HEAD = ("A view was created in no_grad mode and is being modified inplace with grad mode "
                "enabled. ")
_refcount = sys.getrefcount


def _type_name(v):
    """A value's type as torch names it in messages (numpy.ndarray, list)."""
    tv = type(v)
    return tv.__name__ if tv.__module__ == "builtins" else tv.__module__ + "." + tv.__name__


def _leaf_error(t):
    """An in-place op with gradients on a tensor that requires grad but has no grad_fn."""
    if t._base is not None:                # a view made under no_grad
        _view_checks(t)
    raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")


def _view_checks(t, sub=None):
    """torch's refusals of an in-place write with gradients through the view ``t`` (``sub``:
    the grad_fn name of the view of t that a setitem writes, when it makes one)."""
    vm = t._vm
    if vm == _VM_MULTI:
        if sub is not None:
            nr, name = 0, sub
        else:
            tp, node = _tp.resolve(t)
            from ._core.tape import entry_name
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


def _setitem_shape_error(d, key, nk, vd):
    """Raise torch's error for a setitem value that does not fit the indexed region."""
    target = np.shape(d[nk])
    vshape = np.shape(vd)
    if _index.parse(key, d.shape).adv:
        try:
            np.broadcast_shapes(vshape, target)
        except ValueError:
            raise RuntimeError("shape mismatch: value tensor of shape %s cannot be broadcast to "
                               "indexing result of shape %s" % (_shape_str(vshape),
                                                                _shape_str(target)))
        return
    tname = _wrap(np.zeros(0, d.dtype), _BY_NP[d.dtype]).type()
    _expand_check(target, vshape, tname)


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
    k = _index.parse(key, d.shape)
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
        from ._shape import expand
        k = 0
        while k < len(vshape) and vshape[k] == 1:
            k += 1
        value = expand(_view(vt, (vshape[k:],), "view"), target)
    _write(t, own, value, name, target)


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
    return tp, n


_tp.REDERIVE[0] = _rederive


def _share(t):
    """A new leaf sharing ``t``'s storage and version counter (``detach``)."""
    s = _wrap(t._arr(), t._dtype)
    s._vc = _vcof(t)
    return s


def _rebuild(arr, dtname, rg):
    t = _wrap(arr if arr.ndim else arr[()], _BY_NAME[dtname])
    t._rg = rg
    return t


def _np_key(key, shape):
    """The numpy key selecting what torch's ``t[key]`` selects in a tensor of ``shape``
    (torch's reading of the key: ``_index.parse``; raises torch's errors)."""
    if type(key) is int and shape and -shape[0] <= key < shape[0]:
        return key
    return _index.parse(key, shape).np


# ----------------------------------------------------------------------------- functions
def _unary_fn(opname, on_int=None):
    """The eager function of unary row ``opname``; integer and bool inputs are converted to the
    default float dtype, or handed to ``on_int`` (ops that keep integer dtypes: abs, relu)."""
    op = BY_NAME[opname]
    ref = op.ref
    cell = ref.__closure__[0].cell_contents if ref.__closure__ else None
    if type(cell) is np.ufunc and ref.__code__ is _ops_u(None).__code__:
        ref = cell                     # ops._u(np.exp): call the ufunc itself (a frame less)

    fwd_out = op.fwd_out
    vm, big = _vm_of(op)
    # below PAR elements a vector-math row's one-core kernel is called straight from here
    # (a flat contiguous float input): _par_map's and unary_fwd's layers cost ~1.7 us a call
    vcode = _vmath.UNARY[vm] if vm is not None else -1
    par = _vmath.PAR if vm is not None else 0
    serial = _vmath._ufwd_s if vm is not None else None
    lanes = _vmath._LANES

    def f(input):
        d = input._data
        if input._dtype._cat < 2:
            if on_int is not None:
                return on_int(input)
            d = d.astype(_DEFAULT[0].np)
            input = _wrap(d, _DEFAULT[0])
        n = d.size
        if (big <= n < par and d.ndim == 1 and d.dtype in lanes and d.flags.c_contiguous
                and _vmath.OK):
            y = np.empty(n, d.dtype)
            serial(vcode, d, y, 0.0, lanes[d.dtype])
        elif n >= big and fwd_out is not None:
            y = _par_map(fwd_out, (d, None), d.shape, d.dtype, vm)
        else:
            y = ref(d)
        if input._rg and STATE.enabled:
            return _record_unary(input, op, y)
        return _wrap(y, input._dtype)
    f.__name__ = opname
    f.__doc__ = "Elementwise %s (grad_fn %s)." % (opname, op.grad_fn)
    return f


from .ops import _u as _ops_u  # noqa: E402

exp = _unary_fn("exp")
log = _unary_fn("log")
sin = _unary_fn("sin")
cos = _unary_fn("cos")
tanh = _unary_fn("tanh")
sigmoid = _unary_fn("sigmoid")
sqrt = _unary_fn("sqrt")


def _relu_int(input):
    if input._dtype is bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return _wrap(np.maximum(input._data, input._dtype.np.type(0)), input._dtype)


def _abs_int(input):
    if input._dtype is bool_:
        raise NotImplementedError("\"abs_cpu\" not implemented for 'Bool'")
    return _wrap(np.abs(input._data), input._dtype)


relu = _unary_fn("relu", _relu_int)       # integer tensors stay integer, as in torch
abs = _unary_fn("abs", _abs_int)


def positive(input):
    if input._dtype is bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def reciprocal(input):
    """1 / x (grad_fn ReciprocalBackward0)."""
    if input._dtype._cat < 2:
        input = _convert(input, _DEFAULT[0])
    y = np.reciprocal(input._data)
    if input._rg and STATE.enabled:
        return _record_unary(input, BY_NAME["pow_scalar"], y, c=-1.0, nm=_nm("ReciprocalBackward0"))
    return _wrap(y, input._dtype)


def neg(input):
    d = input._data
    if d.size >= _NEG_BIG and d.dtype.kind == "f" and d.flags.c_contiguous:
        y = _par_map(None, (d, None), d.shape, d.dtype, "neg")     # on every core
    else:
        try:
            y = np.negative(d)
        except TypeError:                  # numpy refuses bool negation too
            raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                               "If you are trying to invert a mask, use the `~` or "
                               "`logical_not()` operator instead.") from None
    if input._rg and STATE.enabled:
        return _record_unary(input, _NEG, y)
    return _wrap(y, input._dtype)


_NEG = BY_NAME["neg"]
_NEG_BIG = _vm_of(_NEG)[1] if _vm_of(_NEG)[0] else 1 << 62


negative = neg


def _tyname(v):
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else "%s.%s" % (t.__module__, t.__name__)


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


def _np_scalar(v, npdt):
    """The Python number ``v`` as a numpy scalar of dtype ``npdt``: integers out of the
    dtype's range wrap around as in torch (``uint8 + 300`` adds 44); beyond 64 bits they
    raise OverflowError."""
    try:
        return npdt.type(v)
    except OverflowError:
        if not -2 ** 63 <= v < 2 ** 64:
            raise OverflowError("int too big to convert")
        if npdt.kind not in "iu":
            return npdt.type(float(v))
        bits = 8 * npdt.itemsize
        w = int(v) % (1 << bits)
        if npdt.kind == "i" and w >= 1 << (bits - 1):
            w -= 1 << bits
        return npdt.type(w)


def _bool_sub_check(a, b, rdt):
    ba = a._dtype is bool_ if isinstance(a, Tensor) else isinstance(a, (bool, np.bool_))
    bb = b._dtype is bool_ if isinstance(b, Tensor) else isinstance(b, (bool, np.bool_))
    if ba and bb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if ba or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _bool_pow_check(a, b, rdt):
    if rdt is bool_:
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")


_CHECKS = {"sub": _bool_sub_check, "pow": _bool_pow_check}


def _binary_fn(opname):
    op = BY_NAME[opname]
    check = _CHECKS.get(opname)
    int_ref = _int_pow if opname == "pow" else None
    ref = op.ref
    fwd_out = op.fwd_out
    vm, big = _vm_of(op)
    opcode = op.opcode
    nm = _OPNM[opcode]
    tn_saves = _SAVES[opcode][2]     # Tensor (op) number: a needs grad, the number not
    tn_sa, tn_sb, tn_sy = tn_saves
    tn_any = tn_sa or tn_sb or tn_sy
    # from _vmath.MIN to PAR elements, two flat contiguous operands of one float dtype: the
    # one-core kernel called straight from here (numpy's call with its output allocation
    # costs ~1 us more at 10^4)
    bcode = _vmath.BINARY[vm] if vm is not None else -1
    lo, hi = (_vmath.MIN, _vmath.PAR) if vm is not None else (0, 0)
    serial = _vmath._bfwd_s if vm is not None else None
    lanes = _vmath._LANES

    def general(input, other):
        if isinstance(input, Tensor):
            a = input
            if not isinstance(other, Tensor):
                _check_number(other, opname, "other", 2)
        else:
            if not isinstance(other, Tensor):
                raise TypeError("%s(): argument 'input' (position 1) must be Tensor, not %s"
                                % (opname, _tyname(input)))
            _check_number(input, opname, "input", 1)
            a = other
        _check_shapes(input, other)
        rdt = _result_dtype(a, other if a is input else input)
        if check is not None:
            check(input, other, rdt)
        av = input._data if isinstance(input, Tensor) else input
        bv = other._data if isinstance(other, Tensor) else other
        npdt = rdt.np
        if isinstance(input, Tensor):
            if input._dtype is not rdt:
                av = av.astype(npdt)
        else:
            av = _np_scalar(av, npdt)
        if isinstance(other, Tensor):
            if other._dtype is not rdt:
                bv = bv.astype(npdt)
        else:
            bv = _np_scalar(bv, npdt)
        y = ref(av, bv) if int_ref is None or rdt._cat == 2 else int_ref(av, bv)
        if y.dtype != npdt:
            y = y.astype(npdt)
        if STATE.enabled and ((isinstance(input, Tensor) and input._rg) or
                              (isinstance(other, Tensor) and other._rg)):
            return _record_binary(op, input, other, y, rdt)
        return _wrap(y, rdt)

    def general_op(input, other):
        # the operator form (Tensor.__add__ ...): an operand the function rejects gives
        # NotImplemented, so Python tries the other operand (numpy's ufunc for an ndarray)
        try:
            return general(input, other)
        except TypeError:
            return NotImplemented

    def make(general):
        def f(input, other):
            # fast path: Tensor (op) same-dtype Tensor, or floating Tensor (op) Python float
            if type(input) is Tensor:
                rdt = input._dtype
                to = type(other)
                if to is Tensor:
                    if other._dtype is not rdt:
                        return general(input, other)
                    ad, bd = input._data, other._data
                    av = bv = None
                    n = ad.size
                    if (lo <= n < hi and ad.ndim == 1 and bd.ndim == 1 and n == bd.size
                            and ad.dtype in lanes and ad.flags.c_contiguous and bd.flags.c_contiguous
                            and _vmath.OK):
                        y = np.empty(n, ad.dtype)
                        serial(bcode, ad, bd, y)
                    elif n >= big and fwd_out is not None and ad.shape == bd.shape:
                        # a non-contiguous operand (x * x.t()) is copied once, for the kernel
                        # and the saved value both; a transposed matrix in the same pass as
                        # the op (_layout.binary)
                        r = None
                        if bcode >= 0 and (not ad.flags.c_contiguous or not bd.flags.c_contiguous):
                            r = _layout.binary(bcode, ad, bd)
                        if r is not None:
                            y = r[0]
                            if ad.flags.c_contiguous:
                                bv = r[1]
                            else:
                                av = r[1]
                        else:
                            if not ad.flags.c_contiguous:
                                ad = av = _layout.contiguous(ad)
                            if not bd.flags.c_contiguous:
                                bd = bv = _layout.contiguous(bd)
                            y = _par_map(fwd_out, (ad, bd), ad.shape, rdt.np, vm)
                    else:
                        try:
                            y = ref(ad, bd)
                        except (ValueError, TypeError):     # shapes; bool subtraction
                            return general(input, other)
                    if STATE.enabled and (input._rg or other._rg):
                        return _record_tt(op, input, other, y, rdt, av, bv)
                    return _wrap(y, rdt)
                if (to is float or to is int) and rdt._cat == 2:
                    ad = input._data
                    if ad.size >= big and fwd_out is not None:
                        y = _par_map(fwd_out, (ad, np.full(1, other, rdt.np)), ad.shape, rdt.np, vm)
                    else:
                        y = ref(ad, other)
                    if input._rg and STATE.enabled:
                        tp = input._tape
                        dt = rdt.slot
                        if tp is None or tp.into is not None or dt < 0:
                            if dt < 0:
                                return _record_binary(op, input, other, y, rdt)
                            return _record_tn(opcode, nm, tn_saves, input, other, y, rdt)
                        # _record_tn for a non-leaf input, inlined (the chain of small ops)
                        ca = tp.save(ad, dt) if tn_sa else -1
                        V = tp.V[dt]             # the number: one value in V
                        V.append(other)
                        cb = len(V) - 1
                        cy = tp.save(y, dt) if tn_sy else -1
                        e = len(tp.E) // K
                        node = len(tp.N) // NK
                        n = y.size
                        fl = 0
                        if tn_any:
                            tp.n_saving += 1
                            fl = F_SAVES
                        slot = dt
                        if n >= _tp.BIG:
                            slot = dt + 2
                            fl |= F_BIG
                        asz = tp.asz
                        tp.N.frombytes(_PACK_N(asz[slot], n, slot, e, 0))
                        asz[slot] += n
                        tp.E.frombytes(_PACK_E(opcode, nm, node, input._node, -1, ca, cb, cy, 1,
                                               0 if n != 1 else 1, -1, fl))
                        out = _new(Tensor)
                        out._data = y
                        out._dtype = rdt
                        out._rg = True
                        out._tape = tp
                        out._node = node
                        if tn_sa or tn_sy:
                            if tp.mark is None:
                                tp.mark = _tp.INPLACE[0]
                            if tn_sa:
                                vc = input._vc
                                if vc is None:
                                    vc = input._vc = [0]
                                tp.sv.append((vc, vc[0], e, ad.shape, "a"))
                            if tn_sy:
                                vc = out._vc = [0]
                                tp.sv.append((vc, 0, e, y.shape, "y"))
                        return out
                    return _wrap(y, rdt)
            return general(input, other)
        f.__name__ = opname
        return f

    f = make(general)
    f.op = make(general_op)
    return f


def _int_pow(a, b):
    """Integer power with torch's negative exponents: 1 and -1 keep their powers, any other
    base gives 0 (numpy raises)."""
    a, b = np.asarray(a), np.asarray(b)
    neg = b < 0
    if not neg.any():
        return np.power(a, b)
    y = np.power(a, np.where(neg, 0, b).astype(b.dtype))
    odd = (b % 2) != 0
    return np.where(neg, np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)), y)


_SUB_OP = BY_NAME["sub"]
_RSUB_NM = _name_id("RsubBackward1")
_add = _binary_fn("add")
_sub = _binary_fn("sub")
mul = _binary_fn("mul")
_div = _binary_fn("div")
_pow_tt = _binary_fn("pow")
multiply = mul


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


def add(input, other, alpha=1):
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return _add(input, other)


def sub(input, other, alpha=1):
    if alpha != 1:
        other = mul(other, alpha) if isinstance(other, Tensor) else other * alpha
    return _sub(input, other)


subtract = sub


def div(input, other, *, rounding_mode=_TRUE):
    """input / other; ``rounding_mode`` 'floor' or 'trunc' rounds the quotient (zero gradient),
    as torch.div."""
    if rounding_mode is not _TRUE:
        from ._math import div_mode
        return div_mode(input, other, rounding_mode)
    if not isinstance(input, Tensor):            # number / tensor
        if isinstance(other, Tensor) and other._dtype._cat < 2 and not isinstance(input, float):
            other = _convert(other, _DEFAULT[0])
        return _div(input, other)
    # true division promotes integers to the default float dtype
    if input._dtype._cat < 2 and not (
            isinstance(other, Tensor) and other._dtype._cat == 2) and not isinstance(other, float):
        input = _convert(input, _DEFAULT[0])
    return _div(input, other)


divide = div


def true_divide(input, other):
    return div(input, other)


def _bad_exponent(exponent):
    raise TypeError("pow(): argument 'exponent' must be Number or Tensor, not %s"
                    % _tyname(exponent))


def _make_pow(bad_exponent):
    def pow(input, exponent):
        if isinstance(input, Tensor) and not isinstance(exponent, Tensor):
            te = type(exponent)
            if (te is float or te is int) and input._dtype._cat == 2:
                rdt = input._dtype                 # floating tensor ** Python number
            elif not _is_number(exponent):
                return bad_exponent(exponent)
            else:
                rdt = _result_dtype(input, exponent)
                if rdt._cat < 2:
                    if exponent < 0:
                        raise RuntimeError("Integers to negative integer powers are not allowed.")
                    d = input._data if input._dtype is rdt else input._data.astype(rdt.np)
                    y = np.asarray(np.power(d, _np_scalar(exponent, rdt.np)), rdt.np)
                    return _wrap(y if y.ndim else y[()], rdt)
            d = input._data if input._dtype is rdt else input._data.astype(rdt.np)
            if d.size >= _POW_BIG:
                y = _par_map(_POW_SCALAR.fwd_out, (d, float(exponent)), d.shape, rdt.np, _POW_VM)
            elif exponent == 2:
                y = np.square(d)                   # x * x, as torch and the compiled kernel
            else:
                y = np.power(d, rdt.np.type(exponent))
            if input._rg and STATE.enabled:
                return _record_unary(input, _POW_SCALAR, y, c=float(exponent))
            return _wrap(y, rdt)
        if not isinstance(input, Tensor):
            # scalar ** tensor: torch names this PowBackward2
            out = _pow_tt(input, exponent)
            if out._tape is not None:
                _rename_last(out, "PowBackward2")
            return out
        if input._dtype is bool_ and exponent._dtype is bool_:
            _bool_pow_check(input, exponent, bool_)
        return _pow_tt(input, exponent)
    return pow


pow = _make_pow(_bad_exponent)
_pow_op = _make_pow(lambda exponent: NotImplemented)   # Tensor.__pow__


_POW_SCALAR = BY_NAME["pow_scalar"]
_POW_VM, _POW_BIG = _vm_of(_POW_SCALAR)


def _rename_last(t, name):
    tp, node = _tp.resolve(t)
    tp.E[tp.N[node * NK + NPROD] * K + NM] = _nm(name)    # array.array items: no numpy views


_NO_HALF_GRAD = ("tapegrad does not differentiate float16 tensors (its tape holds float32 and "
                 "float64 values): use float32 or float64 for tensors that require grad")


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


def _norm_dims(dim, ndim):
    if dim is None:
        return None
    if type(dim) is int and -ndim <= dim < ndim:     # the common case: one valid int
        return (dim % ndim,)
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    out = []
    r = max(ndim, 1)
    for d in dims:
        if not isinstance(d, numbers.Integral):
            raise TypeError("dim must be an int or a tuple of ints, but got an element of type %s"
                            % type(d).__name__)
        d = int(d)
        if not -r <= d < r:
            raise IndexError("Dimension out of range (expected to be in range of [%d, %d], but "
                             "got %d)" % (-r, r - 1, d))
        d %= r
        if d in out:
            raise RuntimeError("dim %d appears multiple times in the list of dims" % d)
        out.append(d)
    return tuple(sorted(out))


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
_IDX = {}                     # (shape, dims) -> the segsum index map's bytes (small shapes)


def _seg_index(tp, shape, dims, size):
    """The tape offset of the segsum index map reducing ``shape`` over ``dims``: output
    number of each input element (cached for shapes of up to 2^12 elements: at most 128
    maps of 32 KB)."""
    key = (shape, dims)
    b = _IDX.get(key)
    if b is None:
        kshape = tuple(1 if i in dims else s for i, s in enumerate(shape))
        ysize = _prod(kshape)
        b = np.broadcast_to(np.arange(ysize, dtype=np.int64).reshape(kshape), shape).tobytes()
        if size <= 1 << 12:
            if len(_IDX) >= 128:
                _IDX.clear()
            _IDX[key] = b
    off = len(tp.I)
    tp.I.frombytes(b)
    return off


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
            from ._compiled import _sums        # (Numba kernels: imported on first use)
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
    return out


_SUM_OPCODE = OPCODE["sum"]
_SEGSUM_OPCODE = OPCODE["segsum"]
_SUM0_NM = _name_id("SumBackward0")


def sum(input, dim=_ND, keepdim=_ND, dtype=None, *, axis=_ND, keepdims=_ND, out=None):
    if dim is _ND and dtype is None and keepdim is _ND and axis is _ND and keepdims is _ND \
            and input._dtype._cat == 2:
        # x.sum() of a floating tensor (_reduce's first branch, without its dispatch)
        d = input._data
        if d.size >= _vmath.MIN and _vmath.OK and d.flags.c_contiguous:
            y = input._dtype.np.type(_vmath.total(d.reshape(-1)))
        else:
            y = input._dtype.np.type(_add_reduce(d, axis=None))
        if input._rg and STATE.enabled:
            return _record_unary_sum(input, y, 1.0, _SUM0_NM)
        return _wrap(y, input._dtype)
    dim, keepdim, named1 = _red_args("sum", dim, keepdim, axis, keepdims)
    return _reduce(input, dim, keepdim, dtype, False, named1)


def mean(input, dim=_ND, keepdim=_ND, dtype=None, *, axis=_ND, keepdims=_ND, out=None):
    dim, keepdim, named1 = _red_args("mean", dim, keepdim, axis, keepdims)
    return _reduce(input, dim, keepdim, dtype, True, named1)


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = tuple(shape[0])
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
    shape = _shape_arg(shape)
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


def _getitem(x, key):
    tk = type(key)
    if tk is slice and x._rg and key.step is None:   # x[a:b] of a contiguous tensor: common
        d = x._data
        if type(d) is _ndarray and d.ndim and d.flags.c_contiguous and STATE.enabled:
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
        k = _index.parse(key, d.shape)       # torch's reading of the key (errors included)
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
                k = _index.parse(key, d.shape)
            tp, e, n = _record_index(x, "gather", k.positions().reshape(-1), y, nm=nm)
            out = _out(y, x._dtype, tp, n)
    else:
        out = _wrap(y, x._dtype)
    if not advanced:
        _track_view(out, x, lambda p: p[nk])
    return out


def _block_offset(d, y, nk, tk, view):
    """Element offset of ``y = d[nk]`` (basic indexing) in ``d`` when y is a contiguous block
    of a C-contiguous ``d`` (so a ``slice`` entry can record it), else -1."""
    if not d.flags.c_contiguous or d.ndim == 0:
        return -1
    if tk is int:                          # x[i]: one row (or element)
        n0 = d.shape[0]
        return (nk + n0 if nk < 0 else nk) * (d.size // n0)
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
from ._compiled import _blas  # noqa: E402
from . import _index  # noqa: E402


def _matmul_dtype_error(a, b):
    """torch's error for a product of two dtypes: the message names the kernel matmul
    dispatches to (dot, addmv, mm/addmm, bmm)."""
    na, nb = a._data.ndim, b._data.ndim
    ta, tb = a._dtype._tname, b._dtype._tname
    if na == 1 and nb == 1:
        return RuntimeError("dot : expected both vectors to have same dtype, but found %s and %s"
                            % (ta, tb))
    if nb == 1 and na >= 2:
        return RuntimeError("addmv input tensors must have the same dtype, but got %s, %s, and %s"
                            % (tb, ta, tb))
    if nb >= 3:
        return RuntimeError("expected scalar type %s but found %s" % (ta, tb))
    return RuntimeError("expected m1 and m2 to have the same dtype, but got: %s != %s"
                        % (a._dtype._cname, b._dtype._cname))


def _mm_fits(da, db):
    """Whether a 1-D/2-D product's inner sizes agree."""
    return (da.shape[-1] if da.ndim == 2 else da.shape[0]) == db.shape[0]


def matmul(input, other):
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
        raise TypeError("matmul(): argument 'other' (position 2) must be Tensor")
    a, b = input, other
    da, db = a._data, b._data
    if da.ndim == 0 or db.ndim == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are %dD "
                           "and %dD" % (da.ndim, db.ndim))
    if da.ndim > 2 or db.ndim > 2:
        raise NotImplementedError("matmul of tensors with more than 2 dimensions is not supported yet")
    # torch: dot checks the dtypes first, mv / mm the shapes
    if a._dtype is not b._dtype and (da.ndim == 1 and db.ndim == 1 or _mm_fits(da, db)):
        raise _matmul_dtype_error(a, b)
    if da.ndim == 1 and db.ndim == 1:
        if da.shape[0] != db.shape[0]:
            raise RuntimeError("inconsistent tensor size, expected tensor [%d] and src [%d] to "
                               "have the same number of elements, but got %d and %d elements "
                               "respectively" % (da.shape[0], db.shape[0], da.shape[0], db.shape[0]))
        m, k, n, name = 1, da.shape[0], 1, "DotBackward0"
    elif da.ndim == 2 and db.ndim == 1:
        if da.shape[1] != db.shape[0]:
            raise RuntimeError("size mismatch, got input (%d), mat (%dx%d), vec (%d)"
                               % (da.shape[0], da.shape[0], da.shape[1], db.shape[0]))
        m, k, n, name = da.shape[0], da.shape[1], 1, "MvBackward0"
    else:
        a2 = da.shape if da.ndim == 2 else (1, da.shape[0])
        if a2[1] != db.shape[0]:
            raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)"
                               % (a2[0], a2[1], db.shape[0], db.shape[1]))
        m, k, n = a2[0], a2[1], db.shape[1]
        name = "MmBackward0" if da.ndim == 2 else "SqueezeBackward4"
    if m * k * n >= _blas.MIN and da.ndim == 2 and db.ndim == 2 and a._dtype.slot >= 0 and _blas.OK:
        y = _blas.mm(da, db)                    # (one thread pool: see _blas)
    else:
        y = np.matmul(da, db)
    if type(y) is not _ndarray:
        y = np.asarray(y)[()]
    return _mm_core(a, b, m, k, n, y, name)


def mm(input, mat2):
    if input._data.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2._data.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(input, mat2)


def dot(input, other):
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError("1D tensors expected, but got %dD and %dD tensors"
                           % (input._data.ndim, other._data.ndim))
    return matmul(input, other)


def mv(input, vec):
    if input._data.ndim != 2 or vec._data.ndim != 1:
        if input._data.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        raise RuntimeError("vector + matrix @ vector expected, got 1, %d, %d"
                           % (input._data.ndim, vec._data.ndim))
    return matmul(input, vec)


# The hottest operators call the op functions directly (one Python call level less per op);
# their operator forms (``.op``) return NotImplemented for operands they reject.
Tensor.__add__ = _add.op
Tensor.__radd__ = _add.op             # torch: x.add(other), the tensor first
Tensor.__rmul__ = mul.op
Tensor.__pow__ = _pow_op
Tensor.__neg__ = neg
Tensor.__getitem__ = _getitem
Tensor.sum = sum
Tensor.__sub__ = _sub.op
Tensor.__mul__ = mul.op
Tensor.exp = exp
Tensor.log = log
Tensor.sin = sin
Tensor.cos = cos
Tensor.tanh = tanh
Tensor.sigmoid = sigmoid
Tensor.relu = relu
Tensor.sqrt = sqrt
Tensor.mean = mean


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(np.allclose(input._data, _np_of(other), rtol=rtol, atol=atol, equal_nan=equal_nan))


def is_tensor(obj):
    return isinstance(obj, Tensor)
