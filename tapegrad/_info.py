"""torch's top-level odds and ends: dtype facts (finfo, iinfo, result_type, can_cast), thread
settings, determinism flags, the default device.

``set_num_threads`` sets Numba's thread count (tapegrad's parallel kernels); the interop thread
count is reported and otherwise ignored.
(``save``/``load``: tapegrad/serialization.py, torch's checkpoint format.)"""
import os

import numpy as np

from .tensor import Tensor, _DEFAULT, _result_dtype, _scalar_dtype, bool_, device, dtype
from .tensor import _check_device
import builtins
import warnings
from ._core import tape as _tp
from ._schema import NK, NNR
from ._state import is_anomaly_check_nan_enabled, is_anomaly_enabled


def _g(v):
    return "%g" % v


class _Info:
    """torch.finfo / torch.iinfo: numpy's limits of a dtype, under torch's names."""
    _cat, _np_info, _other = 2, np.finfo, "iinfo"
    _fields = ()

    def __init__(self, type):
        name = builtins_type(self).__name__
        if self._cat == 1 and type is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if not isinstance(type, dtype) or type._cat != self._cat:
            raise TypeError("torch.%s() requires %s input type. Use torch.%s to handle "
                            "'torch.%s'" % (name, "a floating point" if self._cat == 2 else
                                            "an integer", self._other, name))
        info = self._np_info(type.np)
        self.dtype = type.name
        self.bits = int(info.bits)
        conv = float if self._cat == 2 else int
        self.max, self.min = conv(info.max), conv(info.min)
        if self._cat == 2:
            self.eps = float(info.eps)
            self.tiny = self.smallest_normal = float(info.tiny)
            self.resolution = 10.0 ** -int(info.precision)

    def __repr__(self):
        return "%s(%s, dtype=%s)" % (builtins_type(self).__name__, ", ".join(
            "%s=%s" % (f, _g(getattr(self, f))) for f in self._fields), self.dtype)


class finfo(_Info):
    """Machine limits of a floating dtype (default: the default dtype)."""
    _fields = ("resolution", "min", "max", "eps", "smallest_normal", "tiny")

    def __init__(self, type=None):
        super().__init__(_DEFAULT[0] if type is None else type)


class iinfo(_Info):
    """Limits of an integer dtype."""
    _cat, _np_info, _other = 1, np.iinfo, "finfo"
    _fields = ("min", "max")


builtins_type = type


def result_type(tensor, other):
    """The dtype of an operation on ``tensor`` and ``other`` (tensors or numbers), by torch's
    promotion rules."""
    if isinstance(tensor, Tensor):
        return _result_dtype(tensor, other)
    if isinstance(other, Tensor):
        return _result_dtype(other, tensor)
    a, b = _scalar_dtype(tensor), _scalar_dtype(other)
    return a if a._cat > b._cat else b


def can_cast(from_, to):
    """torch's casting rule: no floating -> integer, no non-bool -> bool."""
    if from_._cat > to._cat:
        return False
    return True


def set_num_threads(n):
    """Threads of tapegrad's parallel kernels (Numba's thread count, at most its pool size)."""
    import numba
    if int(n) <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    numba.set_num_threads(min(int(n), numba.config.NUMBA_NUM_THREADS))


def get_num_threads():
    import numba
    return numba.get_num_threads()


def get_num_interop_threads():
    return os.cpu_count() or 1


def set_num_interop_threads(n):
    """Accepted and ignored (tapegrad has no inter-op pool)."""


_DETERMINISTIC = [False]


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Recorded only: tapegrad's kernels are deterministic."""
    _DETERMINISTIC[0] = bool(mode)


def are_deterministic_algorithms_enabled():
    return _DETERMINISTIC[0]


def is_nonzero(input):
    if input._data.size == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input._data.size > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


_CPU = device("cpu")


def get_default_device():
    return _CPU


def set_default_device(d):
    _check_device(d)


__all__ = ["are_deterministic_algorithms_enabled", "can_cast", "finfo", "get_default_device",
           "get_device", "get_num_interop_threads", "get_num_threads", "iinfo",
           "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "is_distributed", "is_inference",
           "is_inference_mode_enabled", "is_neg", "is_nonzero", "is_same_size", "is_signed",
           "layout", "result_type", "set_default_device", "set_num_interop_threads",
           "set_num_threads", "strided", "typename", "use_deterministic_algorithms"]


# ----------------------------------------------------------------------------- introspection
def typename(obj):
    if isinstance(obj, Tensor):
        return "torch." + obj._dtype._tname + "Tensor"
    t = type(obj)
    mod = t.__module__
    if mod in ("builtins", "__builtin__") or mod is None:
        return t.__qualname__
    return mod + "." + t.__qualname__


def is_same_size(a, b):
    return tuple(a._data.shape) == tuple(b._data.shape)


def is_inference(t):
    return bool(getattr(t, "_inference", False))


def _output_nr(self):
    """Which output of its grad_fn this tensor is (0 for leaves and single-output nodes)."""
    if self._tape is None:
        return 0
    tp, node = _tp.resolve(self)
    return int(tp.N[node * NK + NNR])


_WARNED = set()


def _warn_once(key, msg):
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(msg, UserWarning, stacklevel=3)


class layout:
    """torch.layout: tapegrad tensors are always ``torch.strided``."""
    __module__ = "torch"

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name


strided = layout("strided")


def _dim_order(self, *, ambiguity_check=False):
    """Dimensions from the outermost to the innermost in memory (stable for equal strides)."""
    st = self.stride()
    return tuple(sorted(builtins.range(len(st)), key=lambda i: -st[i]))


def _is_set_to(self, tensor):
    """Same storage, offset, sizes and strides."""
    a, b = self._arr(), tensor._arr()
    ra = self if self._base is None else self._base
    rb = tensor if tensor._base is None else tensor._base
    return (ra is rb and a.shape == b.shape and a.strides == b.strides and
            self.storage_offset() == tensor.storage_offset() and a.dtype == b.dtype)


def is_signed(input):
    return input.is_signed()


def is_neg(input):
    return False


def is_distributed(input):
    return False


def is_inference_mode_enabled():
    return False


def get_device(t):
    return -1


def _install_composed(Tensor):
    Tn = Tensor
    Tn.is_same_size = is_same_size
    Tn.is_inference = is_inference
    Tn.nbytes = property(lambda self: self._data.size * self._dtype.itemsize)
    Tn.itemsize = property(lambda self: self._dtype.itemsize)
    Tn.output_nr = property(_output_nr)
    Tn.dim_order = _dim_order
    Tn.is_set_to = _is_set_to
    Tn.const_data_ptr = Tn.data_ptr
    Tn.is_meta = property(lambda self: False)
    Tn.is_distributed = lambda self: False
    Tn.layout = property(lambda self: strided)
