"""Tensor constructors and the random generator (torch.tensor, ones, rand, arange ...).

Constructors follow torch's argument rules (a size as ints, a tuple or ``size=``; a dtype must be
a torch dtype; torch's errors for bad arguments) and torch's values: ``arange`` and ``linspace``
reproduce torch's CPU kernels bit for bit (see ``_fma``), ``tensor(data)`` infers the dtype as
torch (Python floats the default dtype, numpy scalars and arrays and tensors their own, promoted
together) and checks integer overflow. Random numbers come from numpy's PCG64 (a
``Generator`` each), not torch's Mersenne Twister: seeded streams differ from torch's.
"""
import math
import numbers
import pickle
import random as _pyrandom

import numpy as np

from .tensor import (GUARD, Size, Tensor, _BY_NP, _DEFAULT, _as_dtype, _check_device,
                     _checked_scalar, _result_dtype, _wrap, bool_, float16, float32, float64,
                     int64, promote_types)
from .tensor import _ALL
from ._record import _bump, _leaf_inplace_check
import builtins
from .tensor import LEGACY
from .tensor import device as _device
from ._record import _check_shapes, _record_binary, hide, named
from ._state import STATE
from .ops import BY_NAME
from ._info import get_num_threads

# the names of torch's namespace this family defines (tapegrad/__init__.py imports them)
__all__ = ["Generator", "arange", "as_tensor", "bernoulli", "default_generator", "empty",
           "empty_like", "eye", "from_numpy", "full", "full_like", "get_rng_state",
           "initial_seed", "linspace", "logspace", "manual_seed", "multinomial", "normal",
           "ones", "ones_like", "rand", "rand_like", "randint", "randint_like", "randn",
           "randn_like", "randperm", "scalar_tensor", "seed", "set_rng_state", "tensor", "zeros",
           "zeros_like"]


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
        return np.asarray(tensor(args[0], dtype=dt)._data), dt
    raise TypeError("new(): data must be a sequence (got %s)" % builtins.type(args[0]).__name__)


# ----------------------------------------------------------------------------- generators
class Generator:
    """torch.Generator: a random stream (numpy's PCG64) with torch's seeding API. Pass it as
    ``generator=`` to rand, randn, randint, normal, randperm, multinomial, bernoulli and the
    in-place initialisers."""

    def __init__(self, device="cpu"):
        _check_device(device)
        self.device = _device("cpu")
        self.manual_seed(_pyrandom.SystemRandom().getrandbits(63))

    def manual_seed(self, seed):
        seed = int(seed)
        if not -2 ** 63 <= seed < 2 ** 64:
            raise RuntimeError("Overflow when unpacking long long")
        self._seed = seed % 2 ** 64
        self.rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        s = _pyrandom.SystemRandom().getrandbits(63)
        self.manual_seed(s)
        return s

    def get_state(self):
        """The stream's state as a uint8 tensor (as torch: a ByteTensor)."""
        b = pickle.dumps((self._seed, self.rng.bit_generator.state))
        return _wrap(np.frombuffer(b, np.uint8).copy(), LEGACY["ByteTensor"].dtype)

    def set_state(self, state):
        if not isinstance(state, Tensor):
            raise TypeError("expected a torch.ByteTensor, but got %s" % type(state).__name__)
        self._seed, st = pickle.loads(np.asarray(state._data, np.uint8).tobytes())
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = st
        return self


default_generator = Generator()
# the default stream's numpy generator (others read ``_rng[0]``; manual_seed replaces it)
_rng = [default_generator.rng]


def _gen(generator):
    """The numpy generator to draw from: ``generator``'s, or the default one. (While
    tapegrad.func records, a draw makes the recording one that never replays: random numbers
    are not constants of the function.)"""
    if GUARD[0] is not None:
        GUARD[0]("random", None)
    if generator is None:
        return _rng[0]
    if not isinstance(generator, Generator):
        raise TypeError("expected a torch.Generator, got %s" % type(generator).__name__)
    return generator.rng


def manual_seed(seed):
    default_generator.manual_seed(seed)
    _rng[0] = default_generator.rng
    return default_generator


def seed():
    s = default_generator.seed()
    _rng[0] = default_generator.rng
    return s


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)
    _rng[0] = default_generator.rng


# ----------------------------------------------------------------------------- helpers
def _finish(data, dt, requires_grad):
    if data.ndim == 0:
        data = data[()]
    t = _wrap(data, dt)
    if requires_grad:
        if not dt.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t.requires_grad = True          # (float16: tapegrad's NotImplementedError)
    return t


def _tyname(v):
    t = type(v)
    return t.__name__ if t.__module__ == "builtins" else "%s.%s" % (t.__module__, t.__name__)


def _size(size, fname, kw=None, required=False):
    """The shape from ``*size`` (ints, or one tuple / list / torch.Size) or ``size=``."""
    if kw is not None:
        if size:
            raise TypeError("%s() received an invalid combination of arguments - got both "
                            "positional sizes and size=" % fname)
        size = (kw,)
    if not size:
        if required:
            raise TypeError("%s() missing 1 required positional arguments: \"size\"" % fname)
        raise TypeError("%s() received an invalid combination of arguments - got (), but "
                        "expected one of: (tuple of ints size, ...)" % fname)
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    for s in size:
        if isinstance(s, bool) or not isinstance(s, (numbers.Integral, Tensor)) or (
                isinstance(s, Tensor) and s._dtype._cat != 1):
            raise TypeError("%s(): argument 'size' (position 1) must be tuple of ints, not %s"
                            % (fname, _tyname(s)))
    out = tuple(int(s) for s in size)
    if any(s < 0 for s in out):
        raise RuntimeError("Trying to create tensor with negative dimension %d: %s"
                           % (min(out), list(out)))
    return out


def _dt(dtype, fname):
    return _as_dtype(dtype, fname) or _DEFAULT[0]


def _float_only(dt, kernel):
    if not dt.is_floating_point:
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (kernel, dt._tname))


# ----------------------------------------------------------------------------- tensor(data)
def _leaf_dtype(v, top=False):
    """The dtype torch infers for ``tensor(v)`` of a number, array or tensor ``v`` (``top``:
    the data itself rather than an element of a sequence)."""
    if isinstance(v, bool):
        return bool_
    if isinstance(v, numbers.Integral) and not isinstance(v, np.generic):
        return int64
    if isinstance(v, float):
        return _DEFAULT[0] if not isinstance(v, np.generic) else float64
    if isinstance(v, (np.generic, np.ndarray)):
        d = _BY_NP.get(v.dtype)
        if d is None:
            raise TypeError("can't convert np.ndarray of type numpy.%s. The only supported types "
                            "are: float64, float32, float16, int64, int32, int16, int8, uint8, "
                            "and bool." % v.dtype)
        return d
    if isinstance(v, Tensor):
        return v._dtype
    if isinstance(v, str):
        raise TypeError("new(): invalid data type 'str'") if top else ValueError(
            "too many dimensions 'str'")
    if isinstance(v, numbers.Real):
        return _DEFAULT[0]
    raise RuntimeError("Could not infer dtype of %s" % type(v).__name__)


def _scan(data):
    """(nested Python/numpy value for np.array, inferred dtype) of a tensor() sequence; checks
    torch's rules: sequences of equal lengths, tensors inside of one element."""
    dt = None
    stack = [data]
    tensors = False
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple, range)):
            stack.extend(v)
            continue
        if isinstance(v, Tensor):
            if v._data.size != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            tensors = True
        d = _leaf_dtype(v)
        dt = d if dt is None else (dt if d is dt else promote_types(dt, d))
    if tensors:
        data = _untensor(data)
    return data, dt or _DEFAULT[0]


def _untensor(x):
    if isinstance(x, Tensor):
        return x._data.reshape(()) if isinstance(x._data, np.ndarray) else x._data
    if isinstance(x, (list, tuple, range)):
        return [_untensor(v) for v in x]
    return x


def _ragged(data, dim=0):
    """torch's message for the first sequence of the wrong length in nested ``data``."""
    items = list(data)
    subs = [v for v in items if isinstance(v, (list, tuple, range, np.ndarray))]
    if not subs:
        return None
    if len(subs) != len(items):
        return TypeError("not a sequence")
    n = len(subs[0])
    for v in subs:
        if len(v) != n:
            return ValueError("expected sequence of length %d at dim %d (got %d)"
                              % (n, dim + 1, len(v)))
    for v in subs:
        err = _ragged(v, dim + 1)
        if err is not None:
            return err
    return None


_TORCH_NAMES = {"uint8": "uint8", "int8": "int8", "int16": "int16", "int32": "int32",
                "int64": "int64"}


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new leaf tensor copying ``data`` (floats default to ``get_default_dtype()``)."""
    _check_device(device)
    want = _as_dtype(dtype, "tensor")
    if isinstance(data, Tensor):
        arr, dt = np.asarray(data._data), data._dtype
    elif isinstance(data, np.ndarray):
        arr, dt = data, _leaf_dtype(data)
    elif isinstance(data, (list, tuple, range)):
        nested, dt = _scan(data)
        err = None
        try:
            arr = np.array(nested, dtype=np.float64 if dt.is_floating_point else None)
        except ValueError:
            err = _ragged(nested)
            if err is None:
                raise
        except OverflowError:
            raise ValueError("Overflow when unpacking long long")
        if err is not None:
            raise err
        if arr.dtype == object:
            vals = arr.reshape(-1).tolist()
            if not all(isinstance(v, (numbers.Number, np.generic)) for v in vals):
                raise TypeError("not a sequence")
            if any(isinstance(v, int) and not -2 ** 63 <= v < 2 ** 63 for v in vals):
                raise ValueError("Overflow when unpacking long long")
        elif dt._cat == 1 and (arr.dtype.kind == "f" or (arr.dtype.kind == "u" and
                                                          arr.dtype.itemsize == 8)):
            raise ValueError("Overflow when unpacking long long")   # (ints beyond int64)
    else:
        dt = _leaf_dtype(data, True)
        if isinstance(data, (np.generic, Tensor)):
            arr = np.asarray(data)
        elif isinstance(data, int) and not isinstance(data, bool):
            if not -2 ** 63 <= data < 2 ** 63:
                raise ValueError("Overflow when unpacking long long")
            arr = np.array(data, np.int64)
        else:
            arr = np.array(data, np.float64 if dt.is_floating_point else dt.np)
    if want is not None and want is not dt and want._cat == 1 and not isinstance(data, (
            np.ndarray, Tensor)):
        _check_int_range(arr, want)               # Python values: checked as torch
    dt = want or dt
    return _finish(np.array(arr, dtype=dt.np, copy=True), dt, requires_grad)


def _check_int_range(arr, dt):
    a = np.asarray(arr)
    if a.size == 0:
        return
    info = np.iinfo(dt.np)
    lo = -int(info.max) if dt.np.kind == "u" else int(info.min)
    if a.dtype == object:
        vals = [float(v) if isinstance(v, (float, np.floating)) else int(v)
                for v in a.reshape(-1).tolist()]
        bad = any(not (isinstance(v, int) or math.isfinite(v)) or not lo <= math.trunc(v) <= info.max
                  for v in vals)
    elif a.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            t = np.trunc(a)
            bad = bool(np.any(~np.isfinite(a)) or np.any(t < lo) or np.any(t > info.max))
    elif a.dtype.kind in "iu":
        bad = bool(np.any(a < lo) or np.any(a > info.max))
    else:
        bad = False
    if bad:
        raise RuntimeError("value cannot be converted to type %s without overflow"
                           % _TORCH_NAMES[dt.name])


def as_tensor(data, dtype=None, device=None):
    _check_device(device)
    want = _as_dtype(dtype, "as_tensor")
    if isinstance(data, Tensor):
        return data if want is None or want is data._dtype else data.to(want)
    if isinstance(data, np.ndarray) and (want is None or want.np == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=want)


def from_numpy(arr):
    """A tensor sharing memory with the numpy array ``arr``."""
    if not isinstance(arr, np.ndarray):
        raise TypeError("expected np.ndarray (got %s)" % _tyname(arr))
    if arr.dtype not in _BY_NP:
        raise TypeError("can't convert np.ndarray of type numpy.%s. The only supported types are: "
                        "float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
                        % arr.dtype.type.__name__)
    if any(s < 0 for s in arr.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    return _wrap(arr, _BY_NP[arr.dtype])


# ----------------------------------------------------------------------------- filled
def zeros(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=None, **kw):
    return _filled(np.zeros, "zeros", size, kw, dtype, device, requires_grad)


def ones(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
         pin_memory=False, memory_format=None, **kw):
    return _filled(np.ones, "ones", size, kw, dtype, device, requires_grad)


def empty(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
          pin_memory=False, memory_format=None, **kw):
    """(zero-filled: torch leaves the memory uninitialised)"""
    return _filled(np.zeros, "empty", size, kw, dtype, device, requires_grad)


def _filled(fn, fname, size, kw, dtype, device, requires_grad):
    shape = _size(size, fname, _kw_size(kw, fname), required=True)
    _check_device(device)
    dt = _dt(dtype, fname)
    return _finish(fn(shape, dt.np), dt, requires_grad)


def _kw_size(kw, fname):
    sz = kw.pop("size", None)
    if kw:
        raise TypeError("%s() got an unexpected keyword argument '%s'" % (fname, next(iter(kw))))
    return sz


def _fill_dtype(v):
    """torch.full's dtype for a fill value (numpy's bool_ is taken as a float, as torch)."""
    if isinstance(v, bool):
        return bool_
    if isinstance(v, numbers.Integral):
        return int64
    return _DEFAULT[0]


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False):
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError("full(): argument 'size' (position 1) must be tuple of ints, not %s"
                        % _tyname(size))
    if isinstance(fill_value, Tensor):
        if fill_value._data.ndim != 0:
            raise TypeError("full(): argument 'fill_value' (position 2) must be Number, not Tensor")
        fill_value = fill_value.item()
    elif not isinstance(fill_value, (numbers.Number, np.bool_)) or isinstance(fill_value, complex):
        raise TypeError("full(): argument 'fill_value' (position 2) must be Number, not %s"
                        % _tyname(fill_value))
    _check_device(device)
    dt = _as_dtype(dtype, "full") or _fill_dtype(fill_value)
    v = _checked_scalar(fill_value, dt)
    return _finish(np.full(_size((size,), "full"), v, dt.np), dt, requires_grad)


def _like(fn, t, dtype, requires_grad, fname, **kw):
    dt = _as_dtype(dtype, fname) or t._dtype
    return fn(t._data.shape, dtype=dt, requires_grad=requires_grad, **kw)


def zeros_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
    return _like(zeros, input, dtype, requires_grad, "zeros_like", device=device)


def ones_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
    return _like(ones, input, dtype, requires_grad, "ones_like", device=device)


def empty_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
    return _like(zeros, input, dtype, requires_grad, "empty_like", device=device)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False,
              memory_format=None, **kw):
    dt = _as_dtype(dtype, "full_like") or input._dtype
    return full(input._data.shape, fill_value, dtype=dt, device=device,
                requires_grad=requires_grad)


def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
        pin_memory=False):
    n = _scalar(n) if isinstance(n, Tensor) and n._dtype._cat == 1 else n
    m = _scalar(m) if isinstance(m, Tensor) and m._dtype._cat == 1 else m
    for name, v in (("n", n), ("m", m)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Integral)):
            raise TypeError("eye(): argument '%s' (position %d) must be int, not %s"
                            % (name, 1 if name == "n" else 2, _tyname(v)))
        if v is not None and v < 0:
            raise RuntimeError("%s must be greater or equal to 0, got %d" % (name, v))
    _check_device(device)
    dt = _dt(dtype, "eye")
    return _finish(np.eye(n, m, dtype=dt.np), dt, requires_grad)


def scalar_tensor(s, dtype=None, device=None, requires_grad=False, **kw):
    dt = _dt(dtype, "scalar_tensor")
    return _finish(np.array(s, dt.np), dt, requires_grad)


# ----------------------------------------------------------------------------- random
def _random(fname, kernel, sample, size, generator, dtype, device, requires_grad, kw):
    shape = _size(size, fname, _kw_size(kw, fname))
    _check_device(device)
    dt = _dt(dtype, fname)
    _float_only(dt, kernel)
    return _finish(sample(_gen(generator), shape).astype(dt.np), dt, requires_grad)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False, **kw):
    return _random("rand", "check_uniform_bounds", lambda g, s: g.random(s), size, generator,
                   dtype, device, requires_grad, kw)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False, **kw):
    return _random("randn", "normal_kernel_cpu", lambda g, s: g.standard_normal(s), size,
                   generator, dtype, device, requires_grad, kw)


def _int_arg(v, fname, name, pos):
    if isinstance(v, Tensor) and v._data.size == 1 and v._dtype._cat == 1:
        return int(v.item())
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError("%s(): argument '%s' (position %d) must be int, not %s"
                        % (fname, name, pos, _tyname(v)))
    return int(v)


def _randint_values(rng, low, high, shape, dt):
    if low >= high:
        raise RuntimeError("random_ expects 'from' to be less than 'to', but got from=%d >= to=%d"
                           % (low, high))
    if dt._cat < 2:
        info = np.iinfo(dt.np) if dt._cat == 1 else None
        hi_ok = 1 if info is None else info.max
        lo_ok = 0 if info is None else info.min
        if high - 1 > hi_ok:
            raise RuntimeError("to - 1 is out of bounds for %s" % dt._cname)
        if low < lo_ok:
            raise RuntimeError("from is out of bounds for %s" % dt._cname)
    return rng.integers(low, high, size=shape).astype(dt.np)


def randint(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False, low=None, high=None):
    """randint(high, size) / randint(low, high, size) (size a tuple), as torch."""
    a = list(args)
    if a and size is None and isinstance(a[-1], (tuple, list, Size)):
        size = a.pop()
    if len(a) == 2:
        low, high = a
    elif len(a) == 1:
        if high is None:
            high = a[0]
        else:
            low = a[0]
    elif a:
        raise TypeError("randint() received an invalid combination of arguments - got (%s), but "
                        "expected one of: (int high, tuple of ints size, ...), (int low, int high, "
                        "tuple of ints size, ...)" % ", ".join(_tyname(v) for v in args))
    if high is None or size is None:
        raise TypeError("randint() received an invalid combination of arguments - got (%s), but "
                        "expected one of: (int high, tuple of ints size, ...), (int low, int high, "
                        "tuple of ints size, ...)" % ", ".join(_tyname(v) for v in args))
    low = 0 if low is None else _int_arg(low, "randint", "low", 1)
    high = _int_arg(high, "randint", "high", 2 if args and len(args) > 2 else 1)
    _check_device(device)
    dt = _as_dtype(dtype, "randint") or int64
    shape = _size((size,), "randint")
    return _finish(_randint_values(_gen(generator), low, high, shape, dt), dt, requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False,
                 memory_format=None, generator=None):
    if high is None:
        low, high = 0, low
    dt = _as_dtype(dtype, "randint_like") or input._dtype
    low = _int_arg(low, "randint_like", "low", 2)
    high = _int_arg(high, "randint_like", "high", 3)
    return _finish(_randint_values(_gen(generator), low, high, input._data.shape, dt), dt,
                   requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
    return _like(rand, input, dtype, requires_grad, "rand_like", device=device)


def randn_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
    return _like(randn, input, dtype, requires_grad, "randn_like", device=device)


def normal(mean=None, std=None, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad=False, pin_memory=False):
    """torch.normal: (Tensor mean, Tensor/float std), (float mean, Tensor std), or (float mean,
    float std, size). The sample has zero gradient (torch's NormalBackward1/2/3)."""
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if mean is None:
        mean = 0.0
    if std is None:
        std = 1.0
    if not (mt or st):
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got "
                            "(float, float), but expected one of: (Tensor mean, Tensor std, ...), "
                            "(Tensor mean, float std, ...), (float mean, Tensor std, ...), "
                            "(float mean, float std, tuple of ints size, ...)")
        if std < 0:
            raise RuntimeError("normal expects std >= 0.0, but found std %s" % _num(std))
        dt = _dt(dtype, "normal")
        _float_only(dt, "normal_kernel_cpu")
        v = _gen(generator).normal(mean, std, _size((size,), "normal"))
        return _finish(np.asarray(v).astype(dt.np), dt, requires_grad)
    if size is not None:
        raise TypeError("normal() received an invalid combination of arguments - got a size "
                        "with a Tensor mean or std")
    dt = mean._dtype if mt else std._dtype
    _float_only(dt, "normal_kernel_cpu")
    if mt and st:
        _check_shapes(mean, std)
    sd = std._data if st else std
    if st:
        if np.any(np.asarray(sd) < 0):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif std < 0:
        raise RuntimeError("normal expects std >= 0.0, but found std %s" % _num(std))
    m = mean._data if mt else mean
    v = np.asarray(_gen(generator).normal(m, sd)).astype(dt.np)
    return _zero_grad(v, dt, [t for t in (mean, std) if isinstance(t, Tensor)],
                      "NormalBackward%d" % (3 if mt and st else 1 if mt else 2))


def _num(v):
    return ("%d" % v) if float(v) == int(v) else repr(float(v))


def _zero_grad(value, dt, inputs, name):
    """``value`` as the output of a node ``name`` over ``inputs`` whose gradient is zero: a
    multiplication by zero (hidden) of each input requiring grad, carrying ``value``."""
    if not (STATE.enabled and any(t._rg for t in inputs)):
        return _wrap(value if value.ndim else value[()], dt)
    mul = BY_NAME["mul"]
    if len(inputs) == 1:
        return named(_record_binary(mul, inputs[0], 0.0, value, dt), name)
    parts = [_record_binary(mul, t, 0.0, np.zeros(np.shape(t._data), t._dtype.np), t._dtype)
             if t._rg else _wrap(np.zeros(np.shape(t._data), t._dtype.np), t._dtype)
             for t in inputs]
    hide(*parts)
    return named(_record_binary(BY_NAME["add"], parts[0], parts[1], value, dt), name)


def bernoulli(input, p=None, *, generator=None, out=None):
    _float_only(input._dtype, "bernoulli_tensor_cpu_p_")
    probs = np.asarray(input._data) if p is None else np.full(input._data.shape, p)
    if np.any((probs < 0) | (probs > 1)) or np.any(np.isnan(probs)):
        raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    return _finish((_gen(generator).random(np.shape(probs)) < probs).astype(input._dtype.np),
                   input._dtype, False)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    p = np.asarray(input._data, np.float64)
    rows = p.reshape(-1, p.shape[-1])
    if not replacement and num_samples > p.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    rng = _gen(generator)
    out = []
    for r in rows:
        if np.any(r < 0) or not np.all(np.isfinite(r)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if r.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        r = r / r.sum()
        out.append(rng.choice(r.size, size=num_samples, replace=replacement, p=r))
    res = np.array(out, np.int64).reshape(p.shape[:-1] + (num_samples,))
    return _finish(res, int64, False)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    n = _int_arg(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError("Trying to create tensor with negative dimension %d: [%d]" % (n, n))
    dt = _as_dtype(dtype, "randperm") or int64
    return _finish(_gen(generator).permutation(n).astype(dt.np), dt, requires_grad)


# ----------------------------------------------------------------------------- ranges
# torch's CPU kernels (aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp) evaluate
# ``start + step * i`` with a fused multiply-add; arange's accumulate type is double and its
# vectorised loop computes each 32-byte vector as ``base + lane * step`` from a base rounded to
# the output dtype. ``_fma`` is a correctly rounded float64 fma (Boldo & Melquiond's emulation
# with round-to-odd) so these values match torch's to the bit.
def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _split(x):
    c = 134217729.0 * x                   # 2^27 + 1 (Veltkamp)
    hi = c - (c - x)
    return hi, x - hi


def _two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _round_odd(s, t):
    """s + t (s the rounded sum, t its error) rounded to odd."""
    even = (s.view(np.int64) & 1) == 0
    return np.where((t != 0) & even, np.nextafter(s, np.where(t > 0, np.inf, -np.inf)), s)


def _fma(a, b, c):
    """a * b + c rounded once (float64 arrays)."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    with np.errstate(all="ignore"):
        ph, pl = _two_prod(a, b)
        uh, ul = _two_sum(c, ph)
        v = _round_odd(*_two_sum(ul, pl))
        r = uh + v
        r = np.where(np.isfinite(r), r, a * b + c)     # (infinities: the plain value)
    return r


def _fma32(a, b, c):
    """a * b + c rounded once to float32 (a, c float32, b integers below 2^29: the product is
    exact in float64, the sum is rounded to odd in float64 then to float32)."""
    p = np.asarray(a, np.float64) * np.asarray(b, np.float64)
    with np.errstate(all="ignore"):
        s, t = _two_sum(np.broadcast_to(np.asarray(c, np.float64), p.shape), p)
        r = _round_odd(s, t)
    return r.astype(np.float32)


def _scalar(v):
    if isinstance(v, Tensor):
        if v._data.size != 1:
            raise RuntimeError("only one element tensors can be converted to Python scalars")
        return v.item()
    return v


def _is_float(v):
    return isinstance(v, (float, np.floating)) or (isinstance(v, Tensor) and v._dtype._cat == 2)


def _g(v):
    return "%g" % v if isinstance(v, float) else str(v)


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False, pin_memory=False):
    """Values from ``start`` up to (not including) ``end`` by ``step``, as torch's arange."""
    if end is None:
        start, end = 0, start
    floaty = any(_is_float(v) for v in (start, end, step))
    start, end, step = _scalar(start), _scalar(end), _scalar(step)
    _check_device(device)
    dt = _as_dtype(dtype, "arange") or (_DEFAULT[0] if floaty else int64)
    if dt is bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    ds, de, dstep = float(start), float(end), float(step)
    if dstep == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(ds) and math.isfinite(de)):
        raise RuntimeError("unsupported range: %s -> %s" % (_g(ds), _g(de)))
    if not ((dstep > 0 and de >= ds) or (dstep < 0 and de <= ds)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if dt.is_floating_point:
        n = int(math.ceil((de - ds) / dstep))
        vals = _arange_float(ds, dstep, n, dt)
    else:
        xs, xe, xst = int(start), int(end), int(step)    # (toward zero, as torch)
        if dt is int64:
            if xst == 0:
                raise ValueError("step must be nonzero")
            num = xe - xs + xst - (1 if xst > 0 else -1)
            q = abs(num) // abs(xst)                     # C's division (toward zero)
            n = max(q if (num >= 0) == (xst > 0) else -q, 0)
        else:
            n = int(math.ceil((de - ds) / dstep))
        vals = (xs + xst * np.arange(n, dtype=np.int64)).astype(dt.np)
    return _finish(vals, dt, requires_grad)


def _arange_float(start, step, n, dt):
    """torch's float arange: in each thread's chunk (at::parallel_for: chunks from 32768
    elements, one per thread), blocks of two 32-byte vectors (base rounded to the dtype, lanes
    base + lane * step in double), then a scalar tail start + step * i."""
    npdt = dt.np if dt is not float16 else np.float32
    lanes = 32 // np.dtype(npdt).itemsize
    out = np.empty(n, npdt)
    tasks = min(get_num_threads(), -(-n // 32768)) if n > 32768 else 1
    chunk = -(-n // max(tasks, 1)) if n else 0
    lane = np.arange(lanes, dtype=np.float64)
    for p0 in range(0, n, max(chunk, 1)):
        m = min(chunk, n - p0)
        nv = (m // (2 * lanes)) * 2 * lanes
        if nv:
            base = _fma(step, np.arange(p0, p0 + nv, lanes, dtype=np.float64), start)
            base = base.astype(npdt).astype(np.float64)
            out[p0:p0 + nv] = _fma(lane[None, :], step, base[:, None]).astype(npdt).reshape(-1)
        out[p0 + nv:p0 + m] = _fma(step, np.arange(p0 + nv, p0 + m, dtype=np.float64),
                                   start).astype(npdt)
    return out.astype(dt.np)


def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """``steps`` values evenly from ``start`` to ``end``, as torch's linspace: the first half
    start + step * i, the second end - step * (steps - 1 - i), each one fused multiply-add."""
    dt = _space_args("linspace", steps, dtype, device)
    vals = _linspace_values(_scalar(start), _scalar(end), int(steps), dt)
    return _finish(vals, dt, requires_grad)


def _space_args(fname, steps, dtype, device):
    """linspace's and logspace's checks; their dtype."""
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError("%s() received an invalid combination of arguments - got steps of type "
                        "%s, but expected int" % (fname, _tyname(steps)))
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    _check_device(device)
    return _dt(dtype, fname)


def _linspace_values(start, end, steps, dt):
    if steps == 0:
        return np.zeros(0, dt.np)
    if steps == 1:
        return np.full(1, _checked_scalar(start, dt) if dt._cat < 2 else start, dt.np)
    half = steps // 2
    i = np.arange(steps, dtype=np.float64)
    k = steps - 1 - i
    if dt.is_floating_point and dt is not float64:
        npdt = np.float32
        s, e = npdt(start), npdt(end)
        step = npdt(npdt(e - s) / npdt(steps - 1))
        v = np.where(i < half, _fma32(step, i, s), _fma32(-step, k, e))
        return v.astype(dt.np)
    if dt.is_floating_point:
        s, e = float(start), float(end)
        step = (e - s) / (steps - 1)
        return np.where(i < half, _fma(step, i, s), _fma(-step, k, e))
    s, e = int(start), int(end)                 # integer dtypes: a double step, truncated
    step = (float(e) - float(s)) / (steps - 1)
    v = np.where(i < half, _fma(step, i, s), _fma(-step, k, e))
    return np.trunc(v).astype(np.int64).astype(dt.np)


def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    """base ** linspace(start, end, steps), as torch's logspace."""
    dt = _space_args("logspace", steps, dtype, device)
    start, end, steps, base = _scalar(start), _scalar(end), int(steps), float(base)
    if steps == 0:
        return _finish(np.zeros(0, dt.np), dt, requires_grad)
    if steps == 1:
        return _finish(np.full(1, base ** float(start)).astype(dt.np), dt, requires_grad)
    sdt = np.dtype(dt.np if dt._cat == 2 else np.int64)
    s, e = sdt.type(start), sdt.type(end)
    step = float(sdt.type(e - s)) / (steps - 1)      # (end - start in the dtype, as torch)
    i = np.arange(steps, dtype=np.float64)
    # (this loop of torch's is not fused; its pow is libm's, as math.pow: numpy's SIMD power
    # rounds differently)
    x = np.where(i < steps // 2, float(s) + step * i, float(e) - step * (steps - 1 - i))
    v = np.array([_pow(base, xi) for xi in x.tolist()])
    if dt._cat < 2:
        v = np.trunc(v)
    return _finish(v.astype(dt.np), dt, requires_grad)


def _pow(b, x):
    try:
        return math.pow(b, x)
    except OverflowError:
        return math.inf
    except ValueError:
        return math.nan


def zeros_like_(t):
    return zeros_like(t)


class TensorMethods:
    """Tensor methods of this module, attached by tapegrad/_methods.py."""

    def __init__(self, *args, **kwargs):
        # torch.Tensor(): empty; torch.Tensor(2, 3): a shape; torch.Tensor(data): the data as the
        # default dtype; torch.Tensor(t): shares t
        self._data, self._dtype = _legacy_data(_DEFAULT[0], args, kwargs, True)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # numpy ufuncs on tensors return tensors (``np.sin(t)``), bool results as uint8 (torch)
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return from_numpy(array)

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
        return self._init_(lambda shp: _gen(generator).uniform(a, b, shp), "check_uniform_bounds")

    def normal_(self, mean=0.0, std=1.0, generator=None):
        return self._init_(lambda shp: _gen(generator).normal(mean, std, shp), "normal_kernel_cpu")

    def bernoulli_(self, p=0.5, generator=None):
        return self._init_(lambda shp: (_gen(generator).random(shp) < p))

    def exponential_(self, lambd=1.0, generator=None):
        return self._init_(lambda shp: _gen(generator).exponential(1.0 / lambd, shp),
                           "exponential_cpu")

    def random_(self, low=0, high=None, generator=None):
        if high is None:
            low, high = 0, low if low else 2 ** 24
        return self._init_(lambda shp: _gen(generator).integers(low, high, shp))


class LegacyTypeMethods:
    """Methods of the legacy tensor types (torch.FloatTensor ...), attached by _methods.py."""

    def __call__(cls, *args, **kwargs):
        data, dt = _legacy_data(cls.dtype, args, kwargs, False)
        return _wrap(data, dt)
