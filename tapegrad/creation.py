"""Tensor constructors and the random generator (torch.tensor, ones, rand, arange ...)."""
import numbers

import numpy as np

from .tensor import Size, Tensor, _DEFAULT, _as_dtype, _wrap, bool_, int64

_rng = [np.random.default_rng()]


def manual_seed(seed):
    _rng[0] = np.random.default_rng(int(seed))
    return _rng[0]


seed = manual_seed


def _finish(data, dt, requires_grad):
    if data.ndim == 0:
        data = data[()]
    t = _wrap(data, dt)
    if requires_grad:
        if not dt.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t._rg = True
    return t


def _infer(data):
    if isinstance(data, Tensor):
        return data._data, data._dtype
    if isinstance(data, np.ndarray):
        from .tensor import _BY_NP
        if data.dtype not in _BY_NP:
            raise TypeError("can't convert np.ndarray of type %s" % data.dtype)
        return data, _BY_NP[data.dtype]
    if isinstance(data, (list, tuple)):
        flat = _flatten(data)
        if any(isinstance(v, Tensor) for v in flat):
            data = _tensors_to_nested(data)
            flat = _flatten(data)
        if any(isinstance(v, np.generic) for v in flat):   # numpy scalars carry a dtype
            from .tensor import _BY_NP, promote_types
            dt = None
            for v in flat:
                if isinstance(v, np.generic):
                    d = _BY_NP.get(v.dtype)
                    if d is None:
                        raise TypeError("Could not infer dtype of numpy.%s" % type(v).__name__)
                else:
                    d = _infer(v)[1]
                dt = d if dt is None else promote_types(dt, d)
            return np.array(data, dtype=dt.np), dt
        if all(isinstance(v, (bool, np.bool_)) for v in flat) and flat:
            return np.array(data, dtype=np.bool_), bool_
        if all(isinstance(v, (numbers.Integral,)) for v in flat) and flat:
            return np.array(data, dtype=np.int64), int64
        return np.array(data, dtype=np.float64), _DEFAULT[0]
    if isinstance(data, np.generic):           # before float/int: np.float64 is a float
        return _infer(np.asarray(data))
    if isinstance(data, (bool, np.bool_)):
        return np.array(data, dtype=np.bool_), bool_
    if isinstance(data, numbers.Integral):
        return np.array(data, dtype=np.int64), int64
    if isinstance(data, numbers.Real):
        return np.array(data, dtype=np.float64), _DEFAULT[0]
    raise TypeError("Could not infer dtype of %s" % type(data).__name__)


def _flatten(x):
    out = []
    stack = [x]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        else:
            out.append(v)
    return out


def _tensors_to_nested(x):
    if isinstance(x, Tensor):
        return x._data.tolist()
    if isinstance(x, (list, tuple)):
        return [_tensors_to_nested(v) for v in x]
    return x


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """A new leaf tensor copying ``data`` (floats default to ``get_default_dtype()``)."""
    arr, dt = _infer(data)
    dt = _as_dtype(dtype) or dt
    arr = np.array(arr, dtype=dt.np, copy=True)
    return _finish(arr, dt, requires_grad)


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor) and (dtype is None or _as_dtype(dtype) is data._dtype):
        return data
    if isinstance(data, np.ndarray) and dtype is None:
        return from_numpy(data)
    return tensor(data, dtype=dtype)


def from_numpy(arr):
    """A tensor sharing memory with the numpy array ``arr``."""
    from .tensor import _BY_NP
    if not isinstance(arr, np.ndarray):
        raise TypeError("expected np.ndarray (got %s)" % type(arr).__name__)
    if arr.dtype not in _BY_NP:
        raise TypeError("can't convert np.ndarray of type numpy.%s. The only supported types are: "
                        "float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
                        % arr.dtype)
    return _wrap(arr, _BY_NP[arr.dtype])


def _size(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list, Size)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (numbers.Integral, Tensor)):
            raise TypeError("size must be a tuple of ints, but got %s" % type(s).__name__)
    out = tuple(int(s) for s in size)
    if any(s < 0 for s in out):
        raise RuntimeError("Trying to create tensor with negative dimension %d: %s"
                           % (min(out), list(out)))
    return out


def _dt(dtype):
    return _as_dtype(dtype) or _DEFAULT[0]


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None):
    return _finish(np.zeros(_size(size), _dt(dtype).np), _dt(dtype), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None):
    return _finish(np.ones(_size(size), _dt(dtype).np), _dt(dtype), requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False, out=None):
    return _finish(np.zeros(_size(size), _dt(dtype).np), _dt(dtype), requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False):
    if dtype is None:
        dt = _infer(fill_value)[1]
    else:
        dt = _as_dtype(dtype)
    return _finish(np.full(_size((size,)), fill_value, dt.np), dt, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None):
    dt = _dt(dtype)
    return _finish(_rng[0].random(_size(size)).astype(dt.np), dt, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None):
    dt = _dt(dtype)
    return _finish(_rng[0].standard_normal(_size(size)).astype(dt.np), dt, requires_grad)


def randint(low, high=None, size=None, dtype=None, device=None, requires_grad=False,
            generator=None):
    if size is None and isinstance(high, (tuple, list, Size)):
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    dt = _as_dtype(dtype) or int64
    return _finish(_rng[0].integers(low, high, size=_size((size,))).astype(dt.np), dt, requires_grad)


def _like(fn, t, dtype, requires_grad, **kw):
    dt = _as_dtype(dtype) or t._dtype
    return fn(t._data.shape, dtype=dt, requires_grad=requires_grad, **kw)


def zeros_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(zeros, input, dtype, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(ones, input, dtype, requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(zeros, input, dtype, requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(rand, input, dtype, requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return _like(randn, input, dtype, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    dt = _as_dtype(dtype) or input._dtype
    return full(input._data.shape, fill_value, dtype=dt, requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False):
    if end is None:
        start, end = 0, start
    vals = [v._data.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        dt = int64 if all(isinstance(v, numbers.Integral) for v in vals) else _DEFAULT[0]
    else:
        dt = _as_dtype(dtype)
    return _finish(np.arange(*vals, dtype=np.float64 if dt.is_floating_point else np.int64)
                   .astype(dt.np), dt, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False):
    dt = _dt(dtype)
    return _finish(np.linspace(start, end, int(steps)).astype(dt.np), dt, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False):
    dt = _dt(dtype)
    return _finish(np.eye(n, m, dtype=dt.np), dt, requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, requires_grad=False):
    """torch.normal: numbers or tensors for mean/std (no gradient through the sample)."""
    m = mean._data if isinstance(mean, Tensor) else mean
    sd = std._data if isinstance(std, Tensor) else std
    if size is None:
        size = np.broadcast_shapes(np.shape(m), np.shape(sd))
    dt = (mean._dtype if isinstance(mean, Tensor) else std._dtype if isinstance(std, Tensor)
          else _dt(dtype))
    v = _rng[0].normal(m, sd, _size((size,)) if not isinstance(size, tuple) or size else size)
    return _finish(np.asarray(v).astype(dt.np), dt, requires_grad)


def bernoulli(input, p=None, *, generator=None):
    probs = input._data if p is None else np.full(input._data.shape, p)
    return _finish((_rng[0].random(np.shape(probs)) < probs).astype(input._dtype.np), input._dtype,
                   False)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    p = np.asarray(input._data, np.float64)
    rows = p.reshape(-1, p.shape[-1])
    out = []
    for r in rows:
        r = r / r.sum()
        out.append(_rng[0].choice(r.size, size=num_samples, replace=replacement, p=r))
    res = np.array(out, np.int64).reshape(p.shape[:-1] + (num_samples,))
    return _finish(res, int64, False)


def randperm(n, dtype=None, requires_grad=False, generator=None):
    dt = _as_dtype(dtype) or int64
    return _finish(_rng[0].permutation(int(n)).astype(dt.np), dt, requires_grad)


def zeros_like_(t):
    return zeros_like(t)


def scalar_tensor(s, dtype=None, requires_grad=False):
    dt = _dt(dtype)
    return _finish(np.array(s, dt.np), dt, requires_grad)


def get_rng_state():
    import copy
    return copy.deepcopy(_rng[0].bit_generator.state)


def set_rng_state(state):
    _rng[0].bit_generator.state = state


def initial_seed():
    return 0
