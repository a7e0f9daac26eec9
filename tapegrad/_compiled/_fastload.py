"""Start-up: load the interpreter's cached machine code without Numba's full context refresh.

Numba's ``Cache.load_overload`` begins with ``target_context.refresh()``, which imports and
installs every typing and lowering registry Numba has (``numba.np.arraymath``, ``numba.typed``,
``numba.np.random`` ... and, through arraymath's BLAS probe, ``scipy.linalg`` when SciPy is
installed). On this machine that is ~0.4-0.5 s, half of a cached ``import tapegrad`` + first
``backward()``. None of it is needed to *load* an already-compiled function: typing and
lowering are over, the cache holds the object code. What the loaded code needs at run time is
that every symbol it calls resolves: the Python C API and libm (the process), Numba's C
helpers (registered when the CPU target context is created) and the NRT (registered by
``rtsys.initialize``).

So for the dispatchers of ``tapegrad._interp`` (the only Numba functions Python calls on a
backward or a replay), ``install`` replaces the cache's ``load_overload`` by one that:

1. reads the cache entry (index lookup and unpickling, as Numba does),
2. initializes the NRT and checks that every undefined symbol of the cached object code
   resolves (``llvmlite.binding.address_of_symbol``) -- a symbol that Numba registers only
   during a refresh (e.g. its hash secret, used by dict/set code) makes it fall back,
3. rebuilds the compiled function exactly as Numba's own loader does.

Anything else -- a cache miss, a stale entry, an object format other than 64-bit
little-endian ELF, a missing symbol, any exception, a Numba without these internals, or
``TAPEGRAD_NUMBA_FULL_REFRESH=1`` in the environment -- takes Numba's regular path (refresh,
then load or compile). Compiling anything still refreshes as usual (Numba's compiler does it
itself), so this only moves the refresh from the first backward to the first compilation, if
any.
"""
import os
import struct

ENV_DISABLE = "TAPEGRAD_NUMBA_FULL_REFRESH"

# how each load went, for tests and benchmarks: "light" or "full"
STATS = {"light": 0, "full": 0}


def undefined_symbols(obj):
    """Names of the undefined symbols of a 64-bit little-endian ELF relocatable object
    (the object code Numba caches on Linux), or None for any other format."""
    if len(obj) < 64 or obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(obj):
        return None
    names = []
    found = False
    for i in range(shnum):
        base = shoff + i * shentsize
        sh_type, = struct.unpack_from("<I", obj, base + 4)
        if sh_type != 2:  # SHT_SYMTAB
            continue
        found = True
        off, size, link = struct.unpack_from("<QQI", obj, base + 0x18)
        entsize, = struct.unpack_from("<Q", obj, base + 0x38)
        sbase = shoff + link * shentsize
        stroff, = struct.unpack_from("<Q", obj, sbase + 0x18)
        entsize = entsize or 24
        for j in range(size // entsize):
            st_name, _info, _other, st_shndx = struct.unpack_from("<IBBH", obj, off + j * entsize)
            if st_shndx == 0 and st_name != 0:  # SHN_UNDEF, named
                end = obj.index(b"\x00", stroff + st_name)
                names.append(obj[stroff + st_name:end].decode("ascii", "replace"))
    return names if found else None


def _resolvable(payload, target_context):
    """True when the cached object code in ``payload`` (a CompileResult's reduced form)
    links against what is registered now, with the NRT initialized."""
    import llvmlite.binding as ll
    from numba.core.runtime import rtsys

    name, kind, data = payload[0]
    if kind != "object":
        return False
    missing = undefined_symbols(data[0])
    if missing is None:
        return False
    rtsys.initialize(target_context)
    return all(ll.address_of_symbol(s) is not None for s in missing)


def _light_loader(cache, full):
    def load_overload(sig, target_context):
        if os.environ.get(ENV_DISABLE, "") not in ("", "0"):
            STATS["full"] += 1
            return full(sig, target_context)
        try:
            payload = None
            if cache._enabled:
                key = cache._index_key(sig, target_context.codegen())
                payload = cache._cache_file.load(key)
            if payload is not None and _resolvable(payload, target_context):
                cres = cache._impl.rebuild(target_context, payload)
                STATS["light"] += 1
                return cres
        except Exception:
            pass
        STATS["full"] += 1
        return full(sig, target_context)
    return load_overload


def install(module):
    """Give every cached Numba dispatcher defined in ``module`` the light cache loader."""
    try:
        from numba.core.caching import Cache
        from numba.core.dispatcher import Dispatcher
    except ImportError:  # a Numba without these internals: keep its own loader
        return 0
    n = 0
    for obj in vars(module).values():
        if not isinstance(obj, Dispatcher) or obj.py_func.__module__ != module.__name__:
            continue
        cache = getattr(obj, "_cache", None)
        if not isinstance(cache, Cache) or "load_overload" in vars(cache):
            continue
        if not all(hasattr(cache, a) for a in ("_enabled", "_index_key", "_cache_file", "_impl")):
            continue
        cache.load_overload = _light_loader(cache, cache.load_overload)
        n += 1
    return n


def cfunc(fn, sig, options=None):
    """``numba.cfunc(sig, cache=True, nogil=True)(fn)``, loaded from the disk cache through the
    light loader above (without it, loading costs Numba's ~0.4 s context refresh)."""
    from numba import cfunc as _cfunc
    opts = {"nogil": True}
    opts.update(options or {})
    try:
        from numba.core import sigutils
        from numba.core.ccallback import CFunc
        res = CFunc(fn, sigutils.normalize_signature(sig), locals={}, options=opts)
        res.enable_caching()
        cache = res._cache
        if all(hasattr(cache, a) for a in ("_enabled", "_index_key", "_cache_file", "_impl")):
            cache.load_overload = _light_loader(cache, cache.load_overload)
        res.compile()
        return res
    except ImportError:        # pragma: no cover - a Numba without these internals
        return _cfunc(sig, cache=True, **opts)(fn)
