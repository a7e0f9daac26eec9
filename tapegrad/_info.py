"""torch's top-level odds and ends: dtype facts (finfo, iinfo, result_type, can_cast), thread
settings, determinism flags, the default device, save/load.

``set_num_threads`` sets Numba's thread count (tapegrad's parallel kernels); the interop thread
count is reported and otherwise ignored. ``save``/``load`` pickle (tensors pickle by value;
``map_location`` and ``weights_only`` are accepted and ignored)."""
import os
import pickle

import numpy as np

from .tensor import Tensor, _DEFAULT, _result_dtype, _scalar_dtype, bool_, device, dtype


def _g(v):
    return "%g" % v


class finfo:
    """Machine limits of a floating dtype (default: the default dtype)."""

    def __init__(self, type=None):
        type = _DEFAULT[0] if type is None else type
        if not isinstance(type, dtype) or not type.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use torch.iinfo "
                            "to handle 'torch.finfo'")
        f = np.finfo(type.np)
        self.dtype = type.name
        self.bits = int(f.bits)
        self.eps = float(f.eps)
        self.max = float(f.max)
        self.min = float(f.min)
        self.tiny = self.smallest_normal = float(f.tiny)
        self.resolution = 10.0 ** -int(f.precision)

    def __repr__(self):
        return ("finfo(resolution=%s, min=%s, max=%s, eps=%s, smallest_normal=%s, tiny=%s, "
                "dtype=%s)" % (_g(self.resolution), _g(self.min), _g(self.max), _g(self.eps),
                               _g(self.smallest_normal), _g(self.tiny), self.dtype))


class iinfo:
    """Limits of an integer dtype."""

    def __init__(self, type):
        if isinstance(type, dtype) and type is bool_:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if not isinstance(type, dtype) or type._cat != 1:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        i = np.iinfo(type.np)
        self.dtype = type.name
        self.bits = int(i.bits)
        self.max = int(i.max)
        self.min = int(i.min)

    def __repr__(self):
        return "iinfo(min=%s, max=%s, dtype=%s)" % (_g(self.min), _g(self.max), self.dtype)


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
    from .tensor import _check_device
    _check_device(d)


def save(obj, f, pickle_module=pickle, pickle_protocol=2, **kwargs):
    """Pickle ``obj`` to a path or a binary file object."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            pickle_module.dump(obj, fh, protocol=pickle_protocol)
    else:
        pickle_module.dump(obj, f, protocol=pickle_protocol)


def load(f, map_location=None, pickle_module=pickle, *, weights_only=None, **kwargs):
    """Unpickle what ``save`` wrote (``map_location`` and ``weights_only`` are ignored)."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return pickle_module.load(fh)
    return pickle_module.load(f)


__all__ = ["finfo", "iinfo", "result_type", "can_cast", "set_num_threads", "get_num_threads",
           "get_num_interop_threads", "set_num_interop_threads", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_nonzero", "get_default_device",
           "set_default_device", "save", "load"]
