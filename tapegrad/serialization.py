"""torch.save / torch.load in PyTorch's own checkpoint format, without torch.

Format (torch >= 1.6, "zip" serialization): an uncompressed zip archive whose entries live
under one directory (the file's base name, or ``archive`` for a buffer):

* ``data.pkl``: the object, pickled with protocol 2. A tensor is the reduction
  ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad,
  OrderedDict())`` and a Parameter ``torch._utils._rebuild_parameter(tensor, requires_grad,
  OrderedDict())``; a storage is the persistent id ``('storage', torch.<T>Storage, key,
  'cpu', numel)``; dtypes, ``torch.Size`` and ``torch.device`` are the globals of those names.
* ``data/<key>``: the raw little-endian bytes of each storage (tensors that are views of one
  array share its storage, as torch's views do), each aligned to 64 bytes in the file;
* ``byteorder`` (``little``), ``version`` (``3``), ``.format_version``,
  ``.storage_alignment``, ``.data/serialization_id``.

The pickler writes those references as GLOBAL opcodes naming torch's functions (the pure-Python
pickler, so that no torch import is needed); real PyTorch loads the files with
``weights_only=True``. ``load`` reads files written by PyTorch (zip format, and the legacy
pre-1.6 format) and by tapegrad.

``load`` defaults to ``weights_only=True`` as torch 2.6+: the unpickler only constructs an
allowlist of types (containers, numbers, strings, tensors, Parameters, dtypes, Size, device,
OrderedDict, Counter, set, bytearray, complex) plus what ``add_safe_globals`` /
``safe_globals`` allow, and refuses anything else with torch's ``UnpicklingError`` message.
"""
import collections
import io
import os
import pickle
import struct
import sys
import warnings
import zipfile
from collections import OrderedDict

import numpy as np

import tapegrad as _tg

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL",
           "StorageType"]

DEFAULT_PROTOCOL = 2
_ALIGN = 64

# storage class names <-> numpy dtypes (tapegrad dtype names)
_STORAGE = {"float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
            "int64": "LongStorage", "int32": "IntStorage", "int16": "ShortStorage",
            "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage"}
_STORAGE_DTYPE = {v: k for k, v in _STORAGE.items()}
_STORAGE_DTYPE["BFloat16Storage"] = "bfloat16"
# torch dtype names (torch.<name>) of tapegrad's dtypes
_TORCH_DTYPE_NAMES = {"float32": "float32", "float64": "float64", "float16": "float16",
                      "int64": "int64", "int32": "int32", "int16": "int16", "int8": "int8",
                      "uint8": "uint8", "bool": "bool"}
_DTYPE_ALIASES = {"float": "float32", "double": "float64", "half": "float16",
                  "long": "int64", "int": "int32", "short": "int16", "cfloat": None,
                  "bfloat16": None}

UNSAFE_MESSAGE = (
    "In PyTorch 2.6, we changed the default value of the `weights_only` argument in `torch.load` "
    "from `False` to `True`. Re-running `torch.load` with `weights_only` set to `False` will "
    "likely succeed, but it can result in arbitrary code execution. Do it only if you got the "
    "file from a trusted source.")
_DOCS_MESSAGE = ("\n\nCheck the documentation of torch.load to learn more about types accepted by "
                 "default with weights_only https://pytorch.org/docs/stable/generated/"
                 "torch.load.html.")


# ----------------------------------------------------------------------------- safe globals
_marked_safe_globals = set()


def add_safe_globals(safe_globals):
    """Allow these classes/functions (or (object, "module.name") pairs) in weights_only
    loads."""
    global _marked_safe_globals
    _marked_safe_globals = _marked_safe_globals.union(set(safe_globals))


def get_safe_globals():
    return list(_marked_safe_globals)


def clear_safe_globals():
    global _marked_safe_globals
    _marked_safe_globals = set()


class safe_globals:
    """Context manager: ``add_safe_globals`` for the duration of a ``with`` block."""

    def __init__(self, safe_globals):
        self.safe_globals = safe_globals

    def __enter__(self):
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc):
        global _marked_safe_globals
        _marked_safe_globals = _marked_safe_globals - set(self.safe_globals)


def _user_allowed():
    rc = {}
    for f in _marked_safe_globals:
        if isinstance(f, tuple):
            if len(f) != 2:
                raise ValueError("Expected tuple of length 2 (global, str of callable full path), "
                                 f"but got tuple of length: {len(f)}")
            if type(f[1]) is not str:
                raise TypeError("Expected second item in tuple to be str of callable full path, "
                                f"but got: {type(f[1])}")
            rc[f[1]] = f[0]
        else:
            rc[f"{f.__module__}.{f.__qualname__}"] = f
    return rc


class StorageType:
    """A legacy storage class named in a checkpoint (``torch.FloatStorage`` ...)."""

    def __init__(self, name):
        self._name = name
        self._dtype = _STORAGE_DTYPE.get(name)

    def __repr__(self):
        return f"StorageType(dtype={self._dtype})"

    def __str__(self):
        return f"StorageType(dtype={self._dtype})"


# ----------------------------------------------------------------------------- save
class _Global:
    """A reference written as the GLOBAL opcode ``module name`` (torch's own names)."""
    __slots__ = ("module", "name")

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):            # (pickle requires reductions' functions callable)
        raise TypeError(f"{self.module}.{self.name} is a name written into a checkpoint")


_REBUILD_TENSOR = _Global("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAM = _Global("torch._utils", "_rebuild_parameter")
_ORDERED_DICT = collections.OrderedDict
_SIZE = _Global("torch", "Size")
_DEVICE = _Global("torch", "device")


class _StorageRef:
    """Stands for a storage in the pickle (persistent id)."""
    __slots__ = ("key", "cls", "numel")

    def __init__(self, key, cls, numel):
        self.key, self.cls, self.numel = key, cls, numel


def _root(a):
    """(root ndarray owning the memory, element offset, element strides) for ``a``, or None
    when ``a`` cannot be expressed as a strided view of a C-contiguous root of its dtype."""
    r = a
    while isinstance(r.base, np.ndarray):
        r = r.base
    if r is a:
        return (a, 0, None) if a.flags.c_contiguous else None
    if r.dtype != a.dtype or not r.flags.c_contiguous:
        return None
    isz = a.itemsize
    off = a.__array_interface__["data"][0] - r.__array_interface__["data"][0]
    if off % isz or any(s % isz or s < 0 for s in a.strides):
        return None
    off //= isz
    strides = tuple(s // isz for s in a.strides)
    last = off + sum((n - 1) * s for n, s in zip(a.shape, strides)) if a.size else off
    if off < 0 or last >= max(r.size, 1):
        return None
    return r, off, strides


def _c_strides(shape):
    st, acc = [], 1
    for n in reversed(shape):
        st.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(st))


class _TorchPickler(pickle._Pickler):
    """Pure-Python pickler that writes tensors, Parameters, dtypes, Size and device as torch
    does and collects the storages."""

    dispatch = pickle._Pickler.dispatch.copy()

    def __init__(self, file, protocol):
        super().__init__(file, protocol)
        self.storages = OrderedDict()     # id(root array) -> (key, root array)
        self._keys = {}

    def save_global_ref(self, obj, name=None):
        memo = self.memo
        if id(obj) in memo:
            self.write(self.get(memo[id(obj)][0]))
            return
        self.write(pickle.GLOBAL + bytes(obj.module + "\n" + obj.name + "\n", "utf-8"))
        self.memoize(obj)

    dispatch[_Global] = save_global_ref

    def persistent_id(self, obj):
        if isinstance(obj, _StorageRef):
            return ("storage", obj.cls, obj.key, "cpu", obj.numel)
        return None

    def _storage(self, root, dt_name):
        ent = self.storages.get(id(root))
        if ent is None:
            key = str(len(self.storages))
            cls = self._keys.get(dt_name)
            if cls is None:
                cls = self._keys[dt_name] = _Global("torch", _STORAGE[dt_name])
            ent = self.storages[id(root)] = (_StorageRef(key, cls, int(root.size)), root)
        return ent[0]

    def _tensor_args(self, t):
        dt = t.dtype
        name = dt.name if hasattr(dt, "name") else str(dt).replace("torch.", "")
        if name not in _STORAGE:
            raise TypeError(f"torch.save: tensors of dtype {dt} cannot be saved")
        a = np.asarray(t.detach().numpy())
        info = _root(a)
        if info is not None and getattr(t, "_base", None) is None and info[0].size != a.size:
            info = None          # memory shared only inside tapegrad: save just this tensor
        if info is None:
            arr = np.ascontiguousarray(a)
            root, off, strides = arr, 0, _c_strides(arr.shape)
        else:
            root, off, strides = info
            if strides is None:
                strides = _c_strides(a.shape)
        ref = self._storage(root, name)
        return (ref, int(off), tuple(int(n) for n in a.shape), tuple(int(s) for s in strides),
                bool(t.requires_grad), OrderedDict())

    def save(self, obj, save_persistent_id=True):
        Param = _tg.nn.Parameter
        if isinstance(obj, _tg.Tensor) and not isinstance(obj, _StorageRef):
            if id(obj) in self.memo:
                self.write(self.get(self.memo[id(obj)][0]))
                return
            if isinstance(obj, Param):
                data = obj.detach()
                self.save_reduce(_REBUILD_PARAM, (data, bool(obj.requires_grad), OrderedDict()),
                                 obj=obj)
            else:
                self.save_reduce(_REBUILD_TENSOR, self._tensor_args(obj), obj=obj)
            return
        if isinstance(obj, _tg.dtype):
            name = _TORCH_DTYPE_NAMES.get(obj.name, obj.name)
            self.save_global_ref(_Global("torch", name))
            return
        if isinstance(obj, _tg.Size) and not isinstance(obj, _TorchSize):
            obj = _TorchSize(obj)
        if isinstance(obj, _TorchSize):
            self.save_reduce(_SIZE, (tuple(int(v) for v in obj),), obj=obj)
            return
        if isinstance(obj, _tg.device):
            self.save_reduce(_DEVICE, (str(obj),), obj=obj)
            return
        super().save(obj, save_persistent_id)


class _TorchSize(tuple):
    """A shape pickled as torch.Size."""


def _is_path(f):
    return isinstance(f, (str, os.PathLike))


def _archive_name(f):
    if _is_path(f):
        base = os.path.basename(os.fspath(f))
        stem = os.path.splitext(base)[0]
        return stem or "archive"
    return "archive"


def _write_entry(zf, name, data):
    """Write ``data`` as a stored zip entry whose bytes start at a multiple of 64 in the
    file (torch's layout: a padding extra field 'FB')."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o600 << 16
    start = zf.fp.tell() if zf._seekable else zf.start_dir
    header = 30 + len(name.encode("utf-8"))
    pad = (-(start + header + 4)) % _ALIGN
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    zf.writestr(info, data)


def save(obj, f, pickle_module=pickle, pickle_protocol=DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False):
    """Save ``obj`` (tensors, state_dicts, optimizer states, any picklable object) to the path
    or binary file ``f`` in PyTorch's zip checkpoint format."""
    if not _use_new_zipfile_serialization:
        raise NotImplementedError("tapegrad.save writes PyTorch's zip format only "
                                  "(_use_new_zipfile_serialization=True)")
    if pickle_module is not pickle:
        warnings.warn("tapegrad.save pickles with its own torch-compatible pickler; "
                      "pickle_module is ignored", stacklevel=2)
    buf = io.BytesIO()
    pickler = _TorchPickler(buf, pickle_protocol)
    pickler.dump(obj)
    data_pkl = buf.getvalue()
    name = _archive_name(f)
    fh = open(os.fspath(f), "wb") if _is_path(f) else f
    try:
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
            _write_entry(zf, f"{name}/data.pkl", data_pkl)
            _write_entry(zf, f"{name}/.format_version", b"1")
            _write_entry(zf, f"{name}/.storage_alignment", b"64")
            if not _disable_byteorder_record:
                _write_entry(zf, f"{name}/byteorder", sys.byteorder.encode())
            for ref, root in pickler.storages.values():
                arr = np.ascontiguousarray(root)
                if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and
                                                  sys.byteorder == "big"):
                    arr = arr.astype(arr.dtype.newbyteorder("<"))
                _write_entry(zf, f"{name}/data/{ref.key}", arr.tobytes())
            _write_entry(zf, f"{name}/version", b"3\n")
            sid = "".join(str(v) for v in np.random.default_rng().integers(0, 10, 40))
            _write_entry(zf, f"{name}/.data/serialization_id", sid.encode())
    finally:
        if _is_path(f):
            fh.close()


# ----------------------------------------------------------------------------- load
def _np_dtype(name):
    if name == "bfloat16":
        return None
    return np.dtype("bool" if name == "bool" else name)


class _StorageData:
    """A loaded storage: a flat numpy array of its dtype (None until read, in the legacy
    format, where tensors waiting for it are listed in ``pending``)."""
    __slots__ = ("array", "dtype_name", "pending")

    def __init__(self, array, dtype_name):
        self.array, self.dtype_name, self.pending = array, dtype_name, []


def _strided_copy(arr, offset, shape, stride):
    if not shape or all(n for n in shape):
        isz = arr.itemsize
        view = np.lib.stride_tricks.as_strided(arr[offset:], shape,
                                               tuple(int(s) * isz for s in stride))
        return np.array(view, copy=True)
    return np.zeros(shape, arr.dtype)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    shape = tuple(int(s) for s in size)
    if storage.array is None:                    # legacy format: filled once read
        out = np.zeros(shape, _np_dtype(storage.dtype_name))
        storage.pending.append((out, int(storage_offset), shape, tuple(stride)))
    else:
        out = _strided_copy(storage.array, int(storage_offset), shape, tuple(stride))
    t = _tg.from_numpy(out)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_tensor(storage, storage_offset, size, stride):
    return _rebuild_tensor_v2(storage, storage_offset, size, stride)


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    return _tg.nn.Parameter(data, requires_grad)


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    p = _tg.nn.Parameter(data, requires_grad)
    if state:
        for k, v in (state.items() if isinstance(state, dict) else []):
            setattr(p, k, v)
    return p


def _rebuild_from_type_v2(func, new_type, args, state):
    ret = func(*args)
    if state:
        for k, v in (state.items() if isinstance(state, dict) else []):
            setattr(ret, k, v)
    return ret


def _torch_size(t=()):
    return _tg.Size(t)


def _torch_device(*args):
    return _tg.device(*args)


def _encode(*args):
    import codecs
    return codecs.encode(*args)


def _get_layout(name):
    if name == "torch.strided":
        return "torch.strided"
    raise pickle.UnpicklingError(f"tapegrad has only strided tensors, got layout {name}")


def _allowed_globals():
    rc = {"collections.OrderedDict": OrderedDict, "collections.Counter": collections.Counter,
          "torch.nn.parameter.Parameter": _tg.nn.Parameter,
          "torch.serialization._get_layout": _get_layout,
          "torch.Size": _torch_size, "torch.Tensor": _tg.Tensor, "torch.device": _torch_device,
          "_codecs.encode": _encode, "builtins.bytearray": bytearray, "builtins.set": set,
          "builtins.complex": complex,
          "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
          "torch._utils._rebuild_tensor": _rebuild_tensor,
          "torch._utils._rebuild_parameter": _rebuild_parameter,
          "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
          "torch._tensor._rebuild_from_type_v2": _rebuild_from_type_v2}
    for tname in _TORCH_DTYPE_NAMES:
        rc["torch." + tname] = getattr(_tg, tname if tname != "bool" else "bool")
    for alias, target in _DTYPE_ALIASES.items():
        if target is not None:
            rc["torch." + alias] = getattr(_tg, target)
    for sname in list(_STORAGE.values()) + ["BFloat16Storage"]:
        rc["torch." + sname] = StorageType(sname)
    rc["torch.UntypedStorage"] = StorageType("UntypedStorage")
    return rc


_ALLOWED = None


def _allowed():
    global _ALLOWED
    if _ALLOWED is None:
        _ALLOWED = _allowed_globals()
    return _ALLOWED


def _full_globals():
    """For weights_only=False: the same torch names, then anything importable."""
    return _allowed()


def _device_of(location, map_location):
    if map_location is None:
        loc = location
    elif isinstance(map_location, dict):
        loc = map_location.get(location, location)
    elif isinstance(map_location, (str, bytes)):
        loc = map_location.decode() if isinstance(map_location, bytes) else map_location
    elif isinstance(map_location, _tg.device):
        loc = str(map_location)
    else:
        loc = location
    loc = str(loc)
    if loc.startswith("cuda") and map_location is None:
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
            "False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU.")
    if not (loc == "cpu" or loc.startswith("cuda") or loc.startswith("mps")):
        raise RuntimeError(f"don't know how to restore data location of {location} "
                           f"(tagged with {loc})")
    return loc


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, records, map_location, weights_only, **kwargs):
        super().__init__(file, **kwargs)
        self.fix_imports = kwargs.get("fix_imports", True)
        self.records = records
        self.map_location = map_location
        self.weights_only = weights_only
        self.loaded = {}

    def find_class(self, module, name):
        if self.fix_imports:          # protocols <= 2 write Python 2's names
            import _compat_pickle
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        allowed = _allowed()
        if full in allowed:
            return allowed[full]
        user = _user_allowed()
        if full in user:
            return user[full]
        if self.weights_only:
            shown = full
            if full.startswith("builtins"):
                shown = full[len("builtins"):]
                shown = shown[1:] if shown and shown[0] == "." else "builtins" + shown
            raise pickle.UnpicklingError(
                f"Unsupported global: GLOBAL {shown} was not an allowed global by default. "
                f"Please use `torch.serialization.add_safe_globals([{shown}])` or the "
                f"`torch.serialization.safe_globals([{shown}])` context manager to allowlist "
                "this global if you trust this class/function.")
        if module == "torch" or module.startswith("torch."):
            mod = module.replace("torch", "tapegrad", 1)
            try:
                return super().find_class(mod, name)
            except (ImportError, AttributeError):
                pass
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or not pid or pid[0] != "storage":
            raise pickle.UnpicklingError("unsupported persistent id encountered")
        _, stype, key, location, numel = pid[:5]
        key = str(key)
        if key in self.loaded:
            return self.loaded[key]
        _device_of(location, self.map_location)
        dname = stype._dtype if isinstance(stype, StorageType) else None
        if dname is None:
            raise pickle.UnpicklingError(f"tapegrad cannot load storages of type {stype}")
        raw = self.records(key)
        if dname == "bfloat16":
            u16 = np.frombuffer(raw, "<u2")
            arr = (u16.astype(np.uint32) << 16).view(np.float32)
            warnings.warn("tapegrad has no bfloat16: bfloat16 tensors are loaded as float32 "
                          "(exactly)", stacklevel=4)
        else:
            arr = np.frombuffer(raw, _np_dtype(dname).newbyteorder("<")).astype(
                _np_dtype(dname), copy=True)
        st = _StorageData(arr, dname)
        self.loaded[key] = st
        return st


def _wo_message(message):
    if "was not an allowed global by default." in message:
        updated = ("Weights only load failed. This file can still be loaded, to do so you have "
                   "two options, \033[1mdo those steps only if you trust the source of the "
                   f"checkpoint\033[0m. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, to load "
                   "with `weights_only=True` please check the recommended steps in the following "
                   "error message.\n\tWeightsUnpickler error: " + message)
    else:
        updated = (f"Weights only load failed. {UNSAFE_MESSAGE}\nPlease file an issue with the "
                   "following so that we can make `weights_only=True` compatible with your use "
                   "case: WeightsUnpickler error: \n\n" + message)
    return updated + _DOCS_MESSAGE


def _load_zip(zf, map_location, weights_only, pickle_kwargs):
    names = zf.namelist()
    pkl = [n for n in names if n.endswith("data.pkl")]
    if not pkl:
        raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not found")
    prefix = pkl[0][:-len("data.pkl")]
    byteorder = "little"
    if prefix + "byteorder" in names:
        byteorder = zf.read(prefix + "byteorder").decode()

    def records(key):
        raw = zf.read(f"{prefix}data/{key}")
        return raw

    data = zf.read(pkl[0])
    up = _Unpickler(io.BytesIO(data), records, map_location, weights_only, **pickle_kwargs)
    result = up.load()
    if byteorder == "big":
        raise RuntimeError("tapegrad.load: big-endian checkpoints are not supported")
    return result


def _load_legacy(fh, map_location, weights_only, pickle_kwargs):
    """Torch's pre-1.6 format: magic number, protocol, sys info, the object's pickle, the
    storage keys, then each storage (8-byte element count + raw bytes)."""
    magic = pickle.load(fh, **pickle_kwargs)
    if magic != 0x1950A86A20F9469CFC6C:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol = pickle.load(fh, **pickle_kwargs)
    if protocol != 1001:
        raise RuntimeError(f"Invalid protocol version: {protocol}")
    pickle.load(fh, **pickle_kwargs)                # sys info
    loaded = {}

    class Legacy(_Unpickler):
        def persistent_load(self, pid):
            if pid[0] == "storage":
                _, stype, key, location, numel = pid[:5]
                _device_of(location, map_location)
                key = str(key)
                if key not in loaded:
                    loaded[key] = _StorageData(None, stype._dtype)
                return loaded[key]
            raise pickle.UnpicklingError("unsupported persistent id encountered")

    result_holder = Legacy(fh, None, map_location, weights_only, **pickle_kwargs)
    # the storages' data follows the pickle: read the object lazily, then fill the storages
    result = result_holder.load()
    keys = pickle.load(fh, **pickle_kwargs)
    for key in keys:
        st = loaded[str(key)]
        (n,) = struct.unpack("<q", fh.read(8))
        dt = _np_dtype(st.dtype_name)
        st.array = np.frombuffer(fh.read(n * dt.itemsize), dt.newbyteorder("<")).astype(dt)
        for out, off, shape, stride in st.pending:       # the tensors rebuilt before the data
            out[...] = _strided_copy(st.array, off, shape, stride)
        st.pending = []
    return result


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load an object saved by ``save`` or by PyTorch (``weights_only=True`` by default:
    only tensors, containers, numbers, strings and allowlisted globals)."""
    weights_only_not_set = weights_only is None
    if weights_only_not_set:
        weights_only = pickle_module is None
    true_values = ["1", "y", "yes", "true"]
    force_wo = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    if force_wo and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or "
                           "`TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should be set, but both were set.")
    if force_wo:
        weights_only = True
    elif force_no and weights_only_not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since "
                      "the`weights_only` argument was not explicitly passed to `torch.load`, "
                      "forcing weights_only=False.", UserWarning, stacklevel=2)
        weights_only = False
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                               "specified")
    if pickle_load_args and weights_only:
        warnings.warn("pickle_load_args only works if `weights_only=False`.")
    pickle_load_args.setdefault("encoding", "utf-8")
    if mmap and not _is_path(f):
        raise ValueError("f must be a file path in order to use the mmap argument")
    opened = open(os.fspath(f), "rb") if _is_path(f) else f
    try:
        start = opened.tell() if hasattr(opened, "tell") else 0
        is_zip = zipfile.is_zipfile(opened)
        opened.seek(start)
        try:
            if is_zip:
                with zipfile.ZipFile(opened) as zf:
                    return _load_zip(zf, map_location, weights_only,
                                     {} if weights_only else pickle_load_args)
            if mmap:
                f_name = "" if not isinstance(f, str) else f"{f}, "
                raise RuntimeError("mmap can only be used with files saved with "
                                   f"`torch.save({f_name}_use_new_zipfile_serialization=True), "
                                   "please torch.save your checkpoint with this option in order "
                                   "to use mmap.")
            return _load_legacy(opened, map_location, weights_only,
                                {} if weights_only else pickle_load_args)
        except pickle.UnpicklingError as e:
            if weights_only:
                raise pickle.UnpicklingError(_wo_message(str(e))) from None
            raise
    finally:
        if _is_path(f):
            opened.close()


def get_unsafe_globals_in_checkpoint(f):
    """The GLOBALs in the checkpoint's pickle that weights_only loading would refuse."""
    import pickletools
    opened = open(os.fspath(f), "rb") if _is_path(f) else f
    try:
        with zipfile.ZipFile(opened) as zf:
            pkl = [n for n in zf.namelist() if n.endswith("data.pkl")][0]
            data = zf.read(pkl)
    finally:
        if _is_path(f):
            opened.close()
    safe = set(_allowed()) | set(_user_allowed())
    out = set()
    for op, arg, _ in pickletools.genops(data):
        if op.name == "GLOBAL":
            full = arg.replace(" ", ".")
            if full not in safe:
                out.add(full)
    return sorted(out)
