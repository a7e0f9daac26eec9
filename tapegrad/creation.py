"""Tensor constructors and the random generator (torch.tensor, ones, rand, arange ...).

Constructors follow torch's argument rules (a size as ints, a tuple or ``size=``; a dtype must be
a torch dtype; torch's errors for bad arguments) and torch's values: ``arange`` and ``linspace``
reproduce torch's CPU kernels bit for bit (see ``_fma``), ``tensor(data)`` infers the dtype as
torch (Python floats the default dtype, numpy scalars and arrays and tensors their own, promoted
together) and checks integer overflow. Random numbers are torch's CPU stream: ``Generator`` is
torch's MT19937 and the factories apply torch's CPU transforms draw for draw, so
``manual_seed(s)`` followed by the same calls gives torch's numbers (docs/training.md, "Random
streams", says what matches).
"""
import math
import numbers
import pickle
import random as _pyrandom

import numpy as np

from .tensor import (GUARD, Size, Tensor, _BY_NP, _DEFAULT, _as_dtype, _check_device,
                     _checked_scalar, _result_dtype, _wrap, bool_, float16, float32, float64,
                     int64, promote_types)
from .tensor import _ALL, check_alloc
from ._record import _bump, _leaf_inplace_check
import builtins
from .tensor import LEGACY
from .tensor import device as _device
from ._record import _check_shapes, _record_binary, hide, named
from ._state import STATE
from .ops import BY_NAME
from ._info import get_num_threads
import warnings
from ._record import _hide_below

# the names of torch's namespace this family defines (tapegrad/__init__.py imports them)
__all__ = ["Generator", "arange", "as_tensor", "asarray", "bartlett_window", "bernoulli",
           "blackman_window", "cartesian_prod", "combinations", "default_generator", "empty",
           "empty_like", "empty_strided", "eye", "from_numpy", "full", "full_like", "get_rng_state",
           "hamming_window", "hann_window", "initial_seed", "kaiser_window", "linspace", "logspace",
           "manual_seed", "multinomial", "normal", "ones", "ones_like", "rand", "rand_like",
           "randint", "randint_like", "randn", "randn_like", "randperm", "scalar_tensor", "seed",
           "set_rng_state", "tensor", "vander", "zeros", "zeros_like"]


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
# torch's CPU generator (aten/src/ATen/CPUGeneratorImpl.cpp) is an MT19937 seeded with
# init_genrand (the low 32 bits of the seed), plus the cached second value of the scalar
# Box-Muller transform (one for double, one for float draws). The engine below is numpy's
# MT19937 bit generator, whose 624-word key is set to torch's state: ``random_raw`` returns the
# same 32-bit outputs, at C speed. The transforms (uniform, normal, integers, permutations,
# Bernoulli ...) follow torch's CPU kernels draw for draw (see docs/training.md, "Random
# streams").
_MT_N = 624
_DEFAULT_SEED = 67280421310721      # torch.Generator()'s seed (c10 default_rng_seed_val)
_STATE_BYTES = 5056                 # sizeof(CPUGeneratorImplState)
_LEGACY_BYTES = 5048                # sizeof(CPUGeneratorImplStateLegacy)


def _init_genrand(seed):
    key = np.empty(_MT_N, np.uint32)
    s = seed & 0xffffffff
    key[0] = s
    for j in range(1, _MT_N):
        s = (1812433253 * (s ^ (s >> 30)) + j) & 0xffffffff
        key[j] = s
    return key


def _seed_arg(seed):
    if isinstance(seed, Tensor):
        seed = seed.item()
    seed = int(seed)
    if not -2 ** 63 <= seed < 2 ** 64:
        raise RuntimeError("Overflow when unpacking long long")
    return seed % 2 ** 64


class Generator:
    """torch.Generator: torch's CPU random stream (MT19937, seeded as torch seeds it), with
    torch's seeding and state API (``get_state`` returns torch's 5056-byte ByteTensor layout,
    so states move between tapegrad and torch). Pass it as ``generator=`` to rand, randn,
    randint, normal, randperm, multinomial, bernoulli and the in-place initialisers."""

    def __init__(self, device="cpu"):
        _check_device(device)
        self.device = _device("cpu")
        self._bg = np.random.MT19937()
        self.manual_seed(_DEFAULT_SEED)

    # ---- torch's API
    def manual_seed(self, seed):
        seed = _seed_arg(seed)
        self._seed = seed
        self._bg.state = {"bit_generator": "MT19937",
                          "state": {"key": _init_genrand(seed), "pos": _MT_N}}
        self._fresh = True              # torch's next_ is 0 until the first draw
        self._normal64 = None           # the cached sin-half of a scalar Box-Muller pair
        self._normal32 = None
        return self

    def initial_seed(self):
        return self._seed

    def seed(self):
        s = _pyrandom.SystemRandom().getrandbits(64)
        self.manual_seed(s)
        return s

    def get_state(self):
        """The state as torch's ByteTensor (CPUGeneratorImplState: initial seed, left, seeded,
        next, the 624 words as uint64, the cached double normal, the cached float normal)."""
        st = self._bg.state["state"]
        pos = int(st["pos"])
        buf = bytearray(_STATE_BYTES)
        np.frombuffer(buf, np.uint64, 1, 0)[0] = self._seed
        np.frombuffer(buf, np.int32, 2, 8)[:] = (_MT_N + 1 - pos, 1)
        np.frombuffer(buf, np.uint64, 1, 16)[0] = 0 if self._fresh else pos
        np.frombuffer(buf, np.uint64, _MT_N, 24)[:] = st["key"]
        if self._normal64 is not None:
            np.frombuffer(buf, np.float64, 1, 5024)[0] = self._normal64
            np.frombuffer(buf, np.int32, 1, 5040)[0] = 1
        if self._normal32 is not None:
            np.frombuffer(buf, np.float32, 1, 5048)[0] = self._normal32
            buf[5052] = 1
        return _wrap(np.frombuffer(bytes(buf), np.uint8).copy(), LEGACY["ByteTensor"].dtype)

    def set_state(self, new_state):
        if not isinstance(new_state, Tensor) or new_state._dtype.name != "uint8":
            raise RuntimeError("RNG state must be a torch.ByteTensor")
        b = np.ascontiguousarray(np.asarray(new_state._data, np.uint8)).reshape(-1).tobytes()
        if len(b) not in (_STATE_BYTES, _LEGACY_BYTES):
            raise RuntimeError("Expected either a CPUGeneratorImplStateLegacy of size %d or a "
                               "CPUGeneratorImplState of size %d but found the input RNG state "
                               "size to be %d" % (_LEGACY_BYTES, _STATE_BYTES, len(b)))
        seed = int(np.frombuffer(b, np.uint64, 1, 0)[0])
        left, seeded = (int(v) for v in np.frombuffer(b, np.int32, 2, 8))
        nxt = int(np.frombuffer(b, np.uint64, 1, 16)[0])
        words = np.frombuffer(b, np.uint64, _MT_N, 24)
        if not (seeded and 0 < left <= _MT_N and nxt <= _MT_N):
            raise RuntimeError("Invalid mt19937 state")
        normal64 = normal32 = None
        if np.frombuffer(b, np.int32, 1, 5040)[0]:
            if len(b) == _STATE_BYTES:
                normal64 = float(np.frombuffer(b, np.float64, 1, 5024)[0])
            else:   # the legacy layout stores (x, rho): the cached sample is rho sin(2 pi x)
                x, rho = np.frombuffer(b, np.float64, 3, 5016)[[0, 2]]
                normal64 = float(rho) * math.sin(2.0 * math.pi * float(x))
        if len(b) == _STATE_BYTES and b[5052]:
            normal32 = float(np.frombuffer(b, np.float32, 1, 5048)[0])
        self._seed = seed
        self._bg.state = {"bit_generator": "MT19937",
                          "state": {"key": (words & 0xffffffff).astype(np.uint32),
                                    "pos": _MT_N + 1 - left}}
        self._fresh = nxt == 0
        self._normal64, self._normal32 = normal64, normal32
        return self

    def __getstate__(self):
        return {"state": bytes(np.asarray(self.get_state()._data))}

    def __setstate__(self, d):
        self.device = _device("cpu")
        self._bg = np.random.MT19937()
        self.set_state(_wrap(np.frombuffer(d["state"], np.uint8).copy(),
                             LEGACY["ByteTensor"].dtype))

    # ---- raw draws: torch's random() and random64()
    def _u32(self, n):
        if n <= 0:
            return np.empty(0, np.uint64)
        self._fresh = False
        return self._bg.random_raw(n)                   # uint64 holding 32-bit words

    def _u64(self, n):
        r = self._u32(2 * n)
        return (r[0::2] << np.uint64(32)) | r[1::2]

    def _double(self, n):
        """n uniforms in [0, 1) from 53 bits of random64() (uniform_real_distribution<double>)."""
        return (self._u64(n) & np.uint64(2 ** 53 - 1)).astype(np.float64) * 2.0 ** -53

    def _float(self, n):
        """n float32 uniforms from 24 bits of random() (uniform_real_distribution<float>)."""
        return (self._u32(n) & np.uint64(2 ** 24 - 1)).astype(np.float32) * np.float32(2 ** -24)

    # ---- transforms (torch's CPU kernels, aten/src/ATen/native/cpu/DistributionTemplates.h)
    def _uniform(self, n, npdt, a=0.0, b=1.0):
        """uniform_(a, b): fma(x, to - from, from) in the dtype's accumulate type (torch's build
        contracts x (to - from) + from into a fused multiply-add), rounded to the dtype, a value
        equal to ``to`` replaced by ``from``; float16 draws a float."""
        wide = npdt == np.float64
        acc = np.float64 if wide else np.float32
        lo, hi = (acc(a), acc(b)) if wide or npdt == np.float32 else (
            acc(np.float16(a)), acc(np.float16(b)))
        if lo == 0 and hi == 1:                 # exact without the fma
            out = self._double(n) if wide else self._float(n)
        else:
            out = np.empty(n, acc)
            from . import _randk    # deferred: numba kernels, compiled on first use
            if wide:
                _randk.uniform_f64(self._u64(n), lo, hi, out)
            else:
                _randk.uniform_f32(self._u32(n), lo, hi, out)
        out = out.astype(npdt, copy=False)
        top = np.asarray(hi, npdt)
        if (out == top).any():                  # torch keeps [from, to): to becomes from
            out[out == top] = np.asarray(lo, npdt)
        return out

    def _normal_serial(self, n, mean, std, exp=False):
        """normal_distribution<double> element by element (tensors under 16 elements or not
        contiguous): a Box-Muller pair from two doubles gives r cos for this element and
        caches r sin for the next draw (even the next call's); then fma(v, std, mean) (and
        exp for log_normal_)."""
        from . import _randk    # deferred: numba kernels, compiled on first use
        out = np.empty(n, np.float64)
        k = 0
        if n and self._normal64 is not None:
            out[0] = self._normal64
            self._normal64 = None
            k = 1
        pairs = (n - k + 1) // 2
        raw = np.empty(2 * pairs, np.float64)
        _randk.normal_pairs(self._double(2 * pairs), raw)
        out[k:] = raw[:n - k]
        if (n - k) % 2:
            self._normal64 = float(raw[-1])
        _randk.affine64(out, float(std), float(mean), exp)
        return out

    def _normal(self, n, npdt, mean=0.0, std=1.0, contiguous=True):
        """normal_(mean, std): 16 elements or more (contiguous): uniforms for all, then
        Box-Muller on blocks of 16 (cos into the first 8, sin into the last 8), the last 16
        redrawn and transformed again when n is not a multiple of 16."""
        if n < 16 or not contiguous or npdt not in (np.float32, np.float64):
            return self._normal_serial(n, float(mean), float(std)).astype(npdt)
        data = self._float(n) if npdt == np.float32 else self._double(n)
        full = n // 16 * 16
        _box_muller16(data[:full], npdt, mean, std)
        if n != full:
            tail = self._float(16) if npdt == np.float32 else self._double(16)
            data[n - 16:] = _box_muller16(tail, npdt, mean, std)
        return data

    def _int_from_to(self, n, npdt, low, high):
        """random_(from, to): (random() % range) + from; random64() for ranges of 2^28 or
        more (torch 2.13's threshold, whatever the dtype)."""
        rng = high - low
        if rng >= 2 ** 28:
            v = self._u64(n) % np.uint64(rng)
        else:
            v = self._u32(n) % np.uint64(rng)
        v = (v + np.uint64(low % 2 ** 64)).view(np.int64)      # wraps as torch's uint64 sum
        return v.astype(npdt)

    def _bernoulli(self, n, p):
        """bernoulli_(p) with a Python float p: a 53-bit double uniform < p, per element."""
        return self._double(n) < p

    def _exponential(self, n, lambd):
        """exponential_distribution<double>: -1 / lambda * log1p(-u)."""
        return (-1.0 / lambd) * np.log1p(-self._double(n))

    def _geometric(self, n, p):
        """geometric_distribution<double>: ceil(log(u) / log1p(-p))."""
        with np.errstate(divide="ignore"):
            return np.ceil(np.log(self._double(n)) / math.log1p(-p))

    def _cauchy(self, n, median, sigma):
        """cauchy_distribution<double>: median + sigma tan(pi (u - 0.5))."""
        return median + sigma * np.tan(math.pi * (self._double(n) - 0.5))

    def _log_normal(self, n, mean, std):
        """lognormal_distribution<double>: exp of the scalar normal draws (the cached pair)."""
        return self._normal_serial(n, mean, std, exp=True)

    def _int_default(self, n, dt):
        """random_() with no range: uniform_int_distribution (bool: one bit; int64 and double
        from random64(), the rest from random(); modulo max + 1, floats 2^digits + 1)."""
        mod = _RANDOM_MOD[dt.name]
        if dt.name == "bool":
            return (self._u32(n) & np.uint64(1)).astype(np.bool_)
        v = self._u64(n) if dt.name in ("int64", "float64") else self._u32(n)
        return (v % np.uint64(mod)).astype(dt.np)

    def _randperm(self, n):
        """randperm_cpu: for i in 0 .. n-2 swap r[i] and r[i + random() % (n - i)] (n under
        2^32 / 20; beyond, the inside-out shuffle from random64())."""
        if n < 0xffffffff // 20:
            z = (self._u32(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).astype(np.int64)
            return _swap_shuffle(z + np.arange(n - 1 if n else 0, dtype=np.int64), n)
        r = np.empty(n, np.int64)
        z = self._u64(n)
        for i in range(n):
            j = int(z[i] % np.uint64(i + 1))
            r[i] = r[j]
            r[j] = i
        return r


_RANDOM_MOD = {"bool": 2, "uint8": 2 ** 8, "int8": 2 ** 7, "int16": 2 ** 15, "int32": 2 ** 31,
               "int64": 2 ** 63, "float16": 2 ** 11 + 1, "float32": 2 ** 24 + 1,
               "float64": 2 ** 53 + 1}


def _box_muller16(data, npdt, mean, std):
    """torch's normal_fill_16 over consecutive blocks of 16 uniforms, in place: u1 = 1 -
    data[j], u2 = data[j + 8], r = sqrt(-2 log u1), r cos(2 pi u2) std + mean into j and the
    sine into j + 8 (see tapegrad/_randk.py for each build's arithmetic)."""
    from . import _randk    # deferred: numba kernels, compiled on first use
    if npdt == np.float64:
        _randk.normal16_f64(data, float(mean), float(std))
    elif _torch_avx2():
        _randk.normal16_f32_avx2(data, np.float32(mean), np.float32(std))
    else:
        _randk.normal16_f32_scalar(data, np.float32(mean), np.float32(std))
    return data


_CAPABILITY = []


def _torch_avx2():
    """Whether torch's CPU kernels would run their AVX2 build here (ATEN_CPU_CAPABILITY, else
    AVX2 + FMA without AVX-512's VL/BW/DQ, as torch's dispatcher chooses)."""
    if not _CAPABILITY:
        import os
        cap = os.environ.get("ATEN_CPU_CAPABILITY", "").lower()
        if cap in ("default", "avx2", "avx512"):
            _CAPABILITY.append(cap == "avx2")
        else:
            try:
                f = np._core._multiarray_umath.__cpu_features__
            except AttributeError:
                f = {}
            avx512 = all(f.get(k) for k in ("AVX512VL", "AVX512BW", "AVX512DQ"))
            _CAPABILITY.append(bool(f.get("AVX2") and f.get("FMA3") and not avx512))
    return _CAPABILITY[0]


def _swap_shuffle(target, n):
    """r = arange(n); swap r[i] and r[target[i]] for i in order."""
    from . import _randk    # deferred: numba kernels, compiled on first use
    return _randk.swap_shuffle(target, n)


default_generator = Generator()
default_generator.seed()


def _gen(generator):
    """The generator to draw from: ``generator``, or the default one. (While tapegrad.func
    records, a draw makes the recording one that never replays: random numbers are not
    constants of the function.)"""
    if GUARD[0] is not None:
        GUARD[0]("random", None)
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError("expected a torch.Generator, got %s" % type(generator).__name__)
    return generator


def manual_seed(seed):
    return default_generator.manual_seed(seed)


def seed():
    return default_generator.seed()


def initial_seed():
    return default_generator.initial_seed()


def get_rng_state():
    return default_generator.get_state()


def set_rng_state(new_state):
    default_generator.set_state(new_state)


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
    for i, s in enumerate(out):
        if not -2 ** 63 <= s < 2 ** 63:
            raise TypeError("%s(): argument 'size' failed to unpack the object at pos %d with "
                            "error \"Overflow when unpacking long long\"" % (fname, i + 1))
    if any(s < 0 for s in out):
        raise RuntimeError("Trying to create tensor with negative dimension %d: %s"
                           % (min(out), list(out)))
    return out


def allocate(fn, shape, npdt):
    """``fn(shape, npdt)`` (np.zeros, np.ones, np.empty...) with torch's errors for sizes that
    cannot be allocated: the byte count overflowing int64, or more memory than there is."""
    n = check_alloc(shape, npdt)
    try:
        return fn(shape, npdt)
    except (MemoryError, ValueError) as e:
        if isinstance(e, ValueError) and "too big" not in str(e):
            raise
        raise RuntimeError("DefaultCPUAllocator: not enough memory: you tried to allocate %d "
                           "bytes." % (n * np.dtype(npdt).itemsize)) from None


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
    return _finish(allocate(fn, shape, dt.np), dt, requires_grad)


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
def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _memory_order(d):
    """A view of the writable array ``d`` whose C order is ``d``'s memory order (torch's
    TensorIterator fills a non-contiguous tensor in the order of its strides)."""
    if d.flags.c_contiguous or d.ndim < 2:
        return d
    order = sorted(range(d.ndim), key=lambda i: -abs(d.strides[i]))
    return d.transpose(order)


def _fill(d, flat):
    """Write the flat draws ``flat`` into ``d`` in torch's fill order."""
    v = _memory_order(d)
    v[...] = flat.reshape(v.shape)


def _random(fname, kernel, sample, size, generator, dtype, device, requires_grad, kw):
    shape = _size(size, fname, _kw_size(kw, fname))
    _check_device(device)
    dt = _dt(dtype, fname)
    _float_only(dt, kernel)
    g = _gen(generator)
    return _finish(sample(g, _numel(shape), dt.np).reshape(shape), dt, requires_grad)


def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False, **kw):
    return _random("rand", "check_uniform_bounds", lambda g, n, npdt: g._uniform(n, npdt), size,
                   generator, dtype, device, requires_grad, kw)


def randn(*size, generator=None, out=None, dtype=None, layout=None, device=None,
          requires_grad=False, pin_memory=False, **kw):
    return _random("randn", "normal_kernel_cpu", lambda g, n, npdt: g._normal(n, npdt), size,
                   generator, dtype, device, requires_grad, kw)


def _int_arg(v, fname, name, pos):
    if isinstance(v, Tensor) and v._data.size == 1 and v._dtype._cat == 1:
        return int(v.item())
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError("%s(): argument '%s' (position %d) must be int, not %s"
                        % (fname, name, pos, _tyname(v)))
    return int(v)


def _randint_values(g, low, high, n, dt):
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
    return g._int_from_to(n, dt.np, low, high)


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
    v = _randint_values(_gen(generator), low, high, _numel(shape), dt)
    return _finish(v.reshape(shape), dt, requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False,
                 memory_format=None, generator=None):
    if high is None:
        low, high = 0, low
    dt = _as_dtype(dtype, "randint_like") or input._dtype
    low = _int_arg(low, "randint_like", "low", 2)
    high = _int_arg(high, "randint_like", "high", 3)
    shape = input._data.shape
    v = _randint_values(_gen(generator), low, high, _numel(shape), dt)
    return _finish(v.reshape(shape), dt, requires_grad)


def rand_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
    return _like(rand, input, dtype, requires_grad, "rand_like", device=device)


def randn_like(input, dtype=None, device=None, requires_grad=False, memory_format=None, **kw):
    return _like(randn, input, dtype, requires_grad, "randn_like", device=device)


def normal(mean=None, std=None, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, requires_grad=False, pin_memory=False):
    """torch.normal: (Tensor mean, Tensor/float std), (float mean, Tensor std), or (float mean,
    float std, size). The sample has zero gradient (torch's NormalBackward1/2/3). As torch's
    kernels: a float std draws normal_(0, std) then adds the mean tensor; a tensor std draws
    normal_(0, 1), multiplies by std and adds the mean."""
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
        shape = _size((size,), "normal")
        v = _gen(generator)._normal(_numel(shape), dt.np, mean, std)
        return _finish(v.reshape(shape), dt, requires_grad)
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
    shape = np.broadcast_shapes(np.shape(m), np.shape(sd))
    g = _gen(generator)
    npdt = dt.np
    if st:
        v = g._normal(_numel(shape), npdt).reshape(shape) * np.asarray(sd, npdt)
        v = v + np.asarray(m, npdt)
    else:
        v = g._normal(_numel(shape), npdt, 0.0, std).reshape(shape) + np.asarray(m, npdt)
    return _zero_grad(np.asarray(v, npdt), dt, [t for t in (mean, std) if isinstance(t, Tensor)],
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


def _bernoulli_tensor(g, probs):
    """bernoulli_(Tensor p), element by element: a double p against a 53-bit uniform, a float
    (or half) p against a 24-bit float uniform (torch's bernoulli_distribution<double/float>)."""
    p = np.asarray(probs)
    if p.dtype == np.float64:
        return g._double(p.size).reshape(p.shape) < p
    return g._float(p.size).reshape(p.shape) < p.astype(np.float32)


def bernoulli(input, p=None, *, generator=None, out=None):
    _float_only(input._dtype, "bernoulli_tensor_cpu_p_")
    g = _gen(generator)
    if p is None:
        probs = np.asarray(input._data)
        if np.any((probs < 0) | (probs > 1)) or np.any(np.isnan(probs)):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        v = _bernoulli_tensor(g, probs)
    else:
        if not 0 <= p <= 1:
            raise RuntimeError("bernoulli_ expects p to be in [0, 1], but got p=%s" % _num(p))
        shape = input._data.shape
        v = g._bernoulli(_numel(shape), float(p)).reshape(shape)
    out = _finish(v.astype(input._dtype.np), input._dtype, False)
    if not (input._rg and STATE.enabled):
        return out
    from ._math import exact, not_differentiable, tap     # deferred: _math imports creation
    if p is not None:           # torch: bernoulli.p has no derivative (a NotImplemented node)
        return not_differentiable(out, "bernoulli", input)
    # BernoulliBackward0: a zero gradient for the probabilities (they lie in [0, 1]: x * 0 = 0)
    r = tap(input, 0) * 0.0 + out
    _hide_below(r, input)
    return exact(named(r, "BernoulliBackward0", arity=1), out._data)


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """torch's CPU kernel: without replacement (or one sample) the top ``num_samples`` of
    p / q, q ~ Exp(1) drawn for every element; with replacement, per row a cumulative sum in
    the input's dtype and a binary search per 53-bit uniform."""
    p = np.asarray(input._data)
    rows = p.reshape(-1, p.shape[-1])
    if not replacement and num_samples > p.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    g = _gen(generator)
    for r in rows:
        if np.any(r < 0) or not np.all(np.isfinite(r)):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if r.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    npdt = p.dtype
    if not replacement or num_samples == 1:
        q = g._exponential(rows.size, 1.0).astype(npdt).reshape(rows.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            key = rows / q
        # topk's order: descending, the first index among equal keys
        res = np.argsort(-key, axis=-1, kind="stable")[:, :num_samples]
    else:
        res = np.empty((rows.shape[0], num_samples), np.int64)
        for i, r in enumerate(rows):
            cum = np.cumsum(r, dtype=npdt)
            cum = cum / cum[-1]
            cum[-1] = 1
            u = g._double(num_samples)
            res[i] = np.searchsorted(cum.astype(np.float64), u, side="left")
    res = res.astype(np.int64).reshape(p.shape[:-1] + (num_samples,))
    return _finish(res, int64, False)


def randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
    n = _int_arg(n, "randperm", "n", 1)
    if n < 0:
        raise RuntimeError("Trying to create tensor with negative dimension %d: [%d]" % (n, n))
    dt = _as_dtype(dtype, "randperm") or int64
    return _finish(_gen(generator)._randperm(n).astype(dt.np), dt, requires_grad)


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


_NO_TO = object()          # random_(to) versus random_(from, None)


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
        """Fill in place with ``sample(shape)`` (an array of that shape, or of the flat draws
        in torch's fill order when the tensor is not contiguous)."""
        if kernel is not None and not self._dtype.is_floating_point:
            raise NotImplementedError("\"%s\" not implemented for '%s'"
                                      % (kernel, self._dtype._tname))
        _leaf_inplace_check(self)
        d = self._arr()
        v = sample(d.shape)
        if d.flags.c_contiguous or v.ndim == 1 and d.ndim > 1:
            _fill(d, np.asarray(v).astype(d.dtype, copy=False).reshape(-1))
        else:
            d[...] = np.asarray(v).astype(d.dtype, copy=False)
        _bump(self)
        return self

    def _draw_(self, draw, kernel=None):
        """Fill in place with ``draw(numel)`` flat draws, in torch's fill order."""
        return self._init_(lambda shp: draw(_numel(shp)), kernel)

    def uniform_(self, a=0.0, b=1.0, generator=None):
        if self._dtype.is_floating_point and a > b:
            raise RuntimeError("uniform_ expects to return a [from, to) range, but found "
                               "from=%s > to=%s" % (_g(a), _g(b)))
        g = _gen(generator)
        npdt = self._dtype.np
        return self._draw_(lambda n: g._uniform(n, npdt, a, b), "check_uniform_bounds")

    def normal_(self, mean=0.0, std=1.0, generator=None):
        if std < 0:
            raise RuntimeError("normal expects std >= 0.0, but found std %s" % _num(std))
        g = _gen(generator)
        npdt = self._dtype.np
        contiguous = self.is_contiguous()
        return self._draw_(lambda n: g._normal(n, npdt, mean, std, contiguous),
                           "normal_kernel_cpu")

    def bernoulli_(self, p=0.5, generator=None):
        g = _gen(generator)
        if isinstance(p, Tensor):
            probs = np.broadcast_to(np.asarray(p._data), self._data.shape)
            if np.any((probs < 0) | (probs > 1)) or np.any(np.isnan(probs)):
                raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
            return self._init_(lambda shp: _bernoulli_tensor(g, _memory_order(probs)))
        if not 0 <= p <= 1:
            raise RuntimeError("bernoulli_ expects p to be in [0, 1], but got p=%s" % _num(p))
        return self._draw_(lambda n: g._bernoulli(n, float(p)))

    def exponential_(self, lambd=1.0, generator=None):
        if not self._dtype.is_floating_point:
            raise NotImplementedError("\"exponential_cpu\" not implemented for '%s'"
                                      % self._dtype._tname)
        if not lambd > 0:
            raise RuntimeError("exponential_ expects lambda > 0.0, but found lambda=%s"
                               % _num(lambd))
        g = _gen(generator)
        return self._draw_(lambda n: g._exponential(n, lambd))

    def random_(self, low=None, high=_NO_TO, generator=None, **kw):
        """random_(): the dtype's default range; random_(to); random_(from, to); random_(from,
        None): from .. the dtype's maximum."""
        if kw:
            low = kw.pop("from", low)
            high = kw.pop("to", high)
            if kw:
                raise TypeError("random_() got an unexpected keyword argument '%s'" % next(iter(kw)))
        g = _gen(generator)
        dt = self._dtype
        if low is None and high is _NO_TO:
            return self._draw_(lambda n: g._int_default(n, dt))
        if high is _NO_TO:
            low, high = 0, low
        low = int(low)
        if high is None:
            if low == -2 ** 63:     # the full 64-bit range
                return self._draw_(lambda n: g._u64(n).view(np.int64).astype(dt.np))
            top = 2 ** np.finfo(dt.np).nmant * 2 if dt.is_floating_point else (
                1 if dt.name == "bool" else int(np.iinfo(dt.np).max))
            return self._draw_(lambda n: _randint_values(g, low, top + 1, n, dt))
        return self._draw_(lambda n: _randint_values(g, int(low), int(high), n, dt))


class LegacyTypeMethods:
    """Methods of the legacy tensor types (torch.FloatTensor ...), attached by _methods.py."""

    def __call__(cls, *args, **kwargs):
        data, dt = _legacy_data(cls.dtype, args, kwargs, False)
        return _wrap(data, dt)


# ----------------------------------------------------------------------------- construction (cartesian_prod, combinations, vander, range, asarray, windows, empty_strided), legacy new, samplers
def _torch():
    import tapegrad     # the torch namespace: the bodies below call T.<name> (KNOWN_UPWARD)
    return tapegrad


def cartesian_prod(*tensors):
    T = _torch()
    for t in tensors:
        if t._data.ndim != 1:
            raise RuntimeError("Expect a 1D vector, but got shape %s" % list(t._data.shape))
    if len(tensors) == 1:
        return tensors[0]
    grids = T.meshgrid(*tensors, indexing="ij")
    return T.stack([g.flatten() for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    T = _torch()
    if input._data.ndim != 1:
        raise RuntimeError("Expect a 1D vector, but got shape %s" % list(input._data.shape))
    if r < 0:
        raise RuntimeError("Expect a non-negative number, but got %d" % r)
    if r == 0:
        return T.empty(0, dtype=input.dtype)
    n = input._data.shape[0]
    # torch's composition: an r-fold ij meshgrid, each grid masked by i1 < i2 < ... (<=)
    grids = T.meshgrid(*([input] * r), indexing="ij")
    ix = np.indices((n,) * r)
    mask = np.ones((n,) * r, bool)
    for j in range(r - 1):
        mask &= (ix[j] <= ix[j + 1]) if with_replacement else (ix[j] < ix[j + 1])
    m = T.from_numpy(mask)
    return T.stack([g.masked_select(m) for g in grids], 1)


def vander(x, N=None, increasing=False):
    T = _torch()
    if x._data.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x._data.shape[0]
    if N is None:
        N = n
    if N < 0:
        raise RuntimeError("N must be non-negative.")
    rdt = x._dtype if x._dtype.is_floating_point else T.int64
    xc = x if x._dtype is rdt else x.to(rdt)
    ones = T.ones(n, 1, dtype=rdt)
    if N == 0:
        res = T.empty(n, 0, dtype=rdt)
    elif N == 1:
        res = ones
    else:
        pw = xc.unsqueeze(1).expand(n, N - 1).cumprod(1)
        res = T.cat([ones, pw], 1)
        if res.requires_grad:
            _hide_below(res, x)
            named(res, "CopySlices")
    if not increasing:
        res = res.flip(1)
    return res


def _range(start=0, end=None, step=1, *, dtype=None, requires_grad=False, **kw):
    T = _torch()
    warnings.warn("torch.range is deprecated and will be removed in a future release because its "
                  "behavior is inconsistent with Python's range builtin. Instead, use torch.arange,"
                  " which produces values in [start, end).", UserWarning, stacklevel=2)
    if end is None:
        start, end = 0, start
    dt = dtype or _DEFAULT[0]
    n = int(math.floor((end - start) / step)) + 1
    vals = start + np.arange(builtins.max(n, 0), dtype=np.float64) * step
    return T.tensor(vals, dtype=dt, requires_grad=requires_grad)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    T = _torch()
    if isinstance(obj, Tensor):
        out = obj
        if dtype is not None and dtype is not obj._dtype:
            out = obj.to(dtype)
        elif copy:
            out = obj.clone()
        if requires_grad and not out.requires_grad:
            out = out.detach().requires_grad_(True) if out is obj else out.requires_grad_(True)
        return out
    if isinstance(obj, np.ndarray) and not copy and (dtype is None or
                                                       obj.dtype == dtype.np):
        try:
            t = T.from_numpy(obj)
        except TypeError:
            t = T.tensor(obj, dtype=dtype)
        if requires_grad:
            t.requires_grad_(True)
        return t
    return T.tensor(obj, dtype=dtype, requires_grad=requires_grad)


def _legacy_new(self, *args, **kw):
    T = _torch()
    dev = kw.pop("device", None)  # noqa: F841 - cpu only
    if kw:
        raise TypeError("new() received an invalid combination of arguments")
    if not args:
        return T.empty(0, dtype=self.dtype)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0]
    if all(isinstance(a, int) for a in args):
        return T.empty(*args, dtype=self.dtype)
    if len(args) == 1 and type(args[0]).__name__ == "Size":
        return T.empty(tuple(args[0]), dtype=self.dtype)
    return T.tensor(args[0], dtype=self.dtype)


def _i1_np(x):
    """Modified Bessel I1 by its power series (all terms of one sign: no cancellation)."""
    x = np.asarray(x, np.float64)
    ax = np.abs(x)
    q = (ax / 2.0) ** 2
    term = ax / 2.0
    tot = term.copy()
    kmax = int(np.max(ax, initial=0.0)) + 60 if np.all(np.isfinite(ax)) else 800
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(1, builtins.min(kmax, 900)):
            term = term * q / (k * (k + 1))
            tot = tot + term
        tot = np.where(np.isinf(ax) | (ax > 713.0), np.inf, tot)
    return np.where(np.isnan(x), np.nan, np.sign(x) * tot)


def _i0_np(x):
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.i0(np.where(np.isfinite(x), x, 0.0))
    return np.where(np.isfinite(x), y, np.nan)      # (torch's i0(+-inf) is nan)


def _window(name, fn):
    def f(window_length, periodic=True, *args, dtype=None, layout=None, device=None,
          requires_grad=False, **kw):
        T = _torch()
        dt = dtype or _DEFAULT[0]
        if not dt.is_floating_point:
            raise RuntimeError("%s expects floating point dtypes, got: %s"
                               % (name, "TensorOptions(dtype=%s)" % dt._tname))
        if window_length < 0:
            raise RuntimeError("%s requires non-negative window_length, got window_length=%d"
                               % (name, window_length))
        if window_length == 0:
            return T.empty(0, dtype=dt, requires_grad=requires_grad)
        if window_length == 1:
            return T.ones(1, dtype=dt, requires_grad=requires_grad)
        N = window_length + 1 if periodic else window_length
        n = np.arange(N, dtype=np.float64)
        w = fn(n, N, *args, **kw)[:window_length]
        return T.tensor(w, dtype=dt, requires_grad=requires_grad)
    f.__name__ = name
    return f


def _hann(n, N):
    return 0.5 - 0.5 * np.cos(2 * np.pi * n / (N - 1))


def _hamming(n, N, alpha=0.54, beta=0.46):
    return alpha - beta * np.cos(2 * np.pi * n / (N - 1))


def _blackman(n, N):
    x = 2 * np.pi * n / (N - 1)
    return 0.42 - 0.5 * np.cos(x) + 0.08 * np.cos(2 * x)


def _bartlett(n, N):
    return 1 - np.abs(2 * n / (N - 1) - 1)


def _kaiser(n, N, beta=12.0):
    r = (n - (N - 1) / 2) / ((N - 1) / 2)
    return _i0_np(beta * np.sqrt(np.clip(1 - r * r, 0, None))) / _i0_np(beta)


hann_window = _window("hann_window", _hann)


hamming_window = _window("hamming_window", _hamming)


blackman_window = _window("blackman_window", _blackman)


bartlett_window = _window("bartlett_window", _bartlett)


kaiser_window = _window("kaiser_window", _kaiser)


def _cauchy_(self, median=0.0, sigma=1.0, generator=None):
    if not self._dtype.is_floating_point:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype "
                           "must be a floating point but you specified %s" % _CNAME.get(
                               self._dtype.name, self._dtype.name))
    if not sigma > 0:
        raise RuntimeError("cauchy_ expects sigma > 0.0, but found sigma=%s" % _num_g(sigma))
    g = _gen(generator)
    return self._draw_(lambda n: g._cauchy(n, median, sigma))


def _log_normal_(self, mean=1.0, std=2.0, generator=None):
    if not self._dtype.is_floating_point:
        raise NotImplementedError("\"log_normal_cpu\" not implemented for '%s'" % self._dtype._tname)
    if not std > 0:
        raise RuntimeError("log_normal_ expects std > 0.0, but found std=%s" % _num_g(std))
    g = _gen(generator)
    return self._draw_(lambda n: g._log_normal(n, mean, std))


def _geometric_(self, p, generator=None):
    if not 0 < p < 1:
        raise RuntimeError("geometric_ expects p to be in (0, 1), but got p=%s" % _num_g(p))
    g = _gen(generator)
    return self._draw_(lambda n: g._geometric(n, p))


_CNAME = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
          "uint8": "unsigned char", "bool": "bool"}


def _num_g(v):
    return "%g" % v


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """An uninitialized (here: zero) tensor with the given strides."""
    T = _torch()
    dt = dtype or _DEFAULT[0]
    size = tuple(int(v) for v in size)
    stride = tuple(int(v) for v in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    need = sum((n - 1) * st for n, st in zip(size, stride)) + 1 if all(size) else 0
    buf = np.zeros(builtins.max(need, 1), dt.np)
    arr = np.lib.stride_tricks.as_strided(buf, size, tuple(v * buf.itemsize for v in stride))
    t = T.from_numpy(arr) if need else T.zeros(size, dtype=dt)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _install_composed(Tensor):
    T = _torch()
    Tn = Tensor
    Tn.new = _legacy_new
    Tn.new_empty_strided = lambda self, size, stride, *, dtype=None, device=None, \
        requires_grad=False, **kw: empty_strided(size, stride, dtype=dtype or self.dtype,
                                                 requires_grad=requires_grad)
    Tn.cauchy_, Tn.log_normal_, Tn.geometric_ = _cauchy_, _log_normal_, _geometric_
    Tn.bernoulli = lambda self, p=None, *, generator=None: T.bernoulli(self, p, generator=generator) \
        if p is not None else T.bernoulli(self, generator=generator)
    Tn.multinomial = lambda self, num_samples, replacement=False, *, generator=None: \
        T.multinomial(self, num_samples, replacement, generator=generator)
