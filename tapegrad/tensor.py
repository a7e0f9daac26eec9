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
import warnings

import numpy as np

from ._core import tape as _tp
from ._state import STATE
from ._core.tape import address as _address

# the names of torch's namespace this module defines (tapegrad/__init__.py imports them)
__all__ = ["Size", "Tensor", "bool_", "device", "dtype", "float16", "float32", "float64",
           "get_default_dtype", "int16", "int32", "int64", "int8", "is_tensor", "promote_types",
           "set_default_dtype", "uint8"]

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


def _np_of(v, dt=None):
    """numpy value of a Tensor or Python number/array-like."""
    if isinstance(v, Tensor):
        return v._data
    return np.asarray(v)


class _NoArg:
    """The default of an argument torch tells apart from None (``sum(dim=None)`` is
    ``SumBackward1``, ``sum()`` ``SumBackward0``)."""
    __slots__ = ()

    def __repr__(self):
        return "None"


_ND = _NoArg()




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


                     # other overload, named DivBackward2)


# ----------------------------------------------------------------------------- Tensor


def _tyname(v):
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else "%s.%s" % (t.__module__, t.__name__)


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


_NO_HALF_GRAD = ("tapegrad does not differentiate float16 tensors (its tape holds float32 and "
                 "float64 values): use float32 or float64 for tensors that require grad")


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


    def is_contiguous(self, memory_format=None):
        return type(self._data) is not _ndarray or bool(self._data.flags.c_contiguous)


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


    def cpu(self, memory_format=None):
        return self


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


    # comparisons (no gradient)
    def _cmp(self, other, f):
        r = _wrap(f(self._data, _np_of(other)), bool_)
        if GUARD[0] is not None:                  # tapegrad.func is recording: a branch?
            GUARD[0]("cmp", self, other, f, r)
        return r


    # ---- reductions
    # sum, mean: the module functions themselves (set at the end of the module)


# ----------------------------------------------------------------------------- in-place writes
# A view shares its root's memory and version counter; the root keeps weak references to its
# views. An in-place op is computed out of place (``Tensor._inplace``) and stored into the
# target's memory; with gradients, a non-view target takes the result's node, and a write
# through a view is recorded on the root (``_write``: torch's CopySlices) after which every view
# of the root reads from the root's new node (``_rederive_views``, lazily through tape.STALE).


def _type_name(v):
    """A value's type as torch names it in messages (numpy.ndarray, list)."""
    tv = type(v)
    return tv.__name__ if tv.__module__ == "builtins" else tv.__module__ + "." + tv.__name__


def _share(t):
    """A new leaf sharing ``t``'s storage and version counter (``detach``)."""
    s = _wrap(t._arr(), t._dtype)
    s._vc = _vcof(t)
    return s


def _rebuild(arr, dtname, rg):
    t = _wrap(arr if arr.ndim else arr[()], _BY_NAME[dtname])
    t._rg = rg
    return t






def is_tensor(obj):
    return isinstance(obj, Tensor)
