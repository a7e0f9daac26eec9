"""Start-up: where the compiled code is cached, whether the cache is complete, who fills it.

A fresh installation has no compiled code. Compiling everything takes minutes of CPU,
so a process never waits for it: until the cache is complete (``READY``) every compiled entry
point has an uncompiled twin (numpy; ``tapegrad/_core/pysweep.py`` for the sweeps, a numpy
branch in the helpers of this package), and the first process that needs one starts
``python -m tapegrad.precompile --background`` in a child process, which fills the cache and
then writes the *ready marker*. Processes poll for the marker (at most twice a second, from
the uncompiled paths only) and switch to the compiled code by themselves (``ON``).

The marker is ``tapegrad-ready-<key>`` in the cache directory, where the key digests the
contents of every source file compiled code comes from, the versions of Python, Numba,
llvmlite and numpy, the CPU Numba compiles for and the environment switches that change which
functions exist. Any change gives another key: the code runs uncompiled and recompiles
in the background, as on a fresh installation.

``TAPEGRAD_COMPILE`` (environment, read at import):

``auto`` (default)
    as above;
``now``
    the compiled code is used at once, compiled in this process on first use when the cache
    lacks it (the behaviour before this module; the test suite and ``precompile`` use it);
``off``
    never compile: the uncompiled twins only.

Where the cache lives: Numba's own choice (``NUMBA_CACHE_DIR``, else ``__pycache__`` next to
the sources, else the user-wide ``~/.cache/numba``), and when none of them is writable (a
read-only installation without a writable home directory) a private directory under the
system's temporary directory; when even that fails, tapegrad runs uncompiled, with one
warning. Numba itself would refuse to import such an installation ("cannot cache function
...: no locator available").

Two processes may start at once: the background compile takes an exclusive lock on
``tapegrad-compile.lock`` (a second one exits at once) and reports its progress in
``tapegrad-compile.status``; Numba writes cache files by atomic renames.
"""
import hashlib
import json
import logging
import os
import sys
import tempfile
import time

log = logging.getLogger("tapegrad")

ENV = "TAPEGRAD_COMPILE"
MODES = ("auto", "now", "off")
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # .../tapegrad
_HERE = os.path.dirname(os.path.abspath(__file__))                   # .../tapegrad/_compiled

MODE = os.environ.get(ENV, "auto").strip().lower() or "auto"
if MODE not in MODES:
    MODE = "auto"

# set below: whether compiled code is used now, and the cache directory of this package's
# compiled functions (None: caching impossible)
ON = MODE == "now"
DIR = None
WHERE = "numba"          # "numba" (Numba's own locators), "temp" (our fallback), "none"

_listeners = []
_state = {"next_poll": 0.0, "child": None, "spawned": False, "failed": False,
          "noticed": False}


# ---------------------------------------------------------------- the cache's location
def _ours(py_file):
    return os.path.abspath(py_file).startswith(_PKG + os.sep)


def _private_dir():
    """A directory only this user can write, under the system's temporary directory (created
    0700; refused when it exists with another owner or looser permissions), or None."""
    try:
        uid = os.getuid()
    except AttributeError:          # pragma: no cover - Windows: no uid
        uid = 0
    path = os.path.join(tempfile.gettempdir(), "tapegrad-numba-cache-%d" % uid)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
        if hasattr(os, "getuid") and (st.st_uid != uid or st.st_mode & 0o022):
            return None
        tempfile.TemporaryFile(dir=path).close()
    except OSError:
        return None
    return path


def _install_locators():
    """Give Numba two last-resort cache locators for tapegrad's own source files: a private
    directory under the temporary directory, then a null locator (nothing is ever read or
    written: the code runs uncompiled)."""
    try:
        from numba.core import caching
    except ImportError:             # pragma: no cover
        return
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    base = getattr(caching, "_CacheLocator", None)
    mixin = getattr(caching, "_SourceFileBackedLocatorMixin", None)
    if impl is None or base is None or mixin is None or not hasattr(impl, "_locator_classes"):
        return                      # pragma: no cover - a Numba without these internals

    class TapegradTempLocator(mixin, base):
        """tapegrad's sources when neither their ``__pycache__`` nor the home directory is
        writable: a private directory under the system's temporary directory."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(_private_dir() or "",
                                            self.get_suitable_cache_subpath(py_file))

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            if not _ours(py_file) or _private_dir() is None:
                return None
            return super().from_function(py_func, py_file)

    class TapegradNullLocator(mixin, base):
        """tapegrad's sources when nothing at all is writable: a cache directory that does
        not exist (every lookup misses; tapegrad then never compiles, see ``WHERE``)."""

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(os.sep, "nonexistent-tapegrad-cache")

        def ensure_cache_path(self):
            pass

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            return cls(py_func, py_file) if _ours(py_file) else None

    classes = impl._locator_classes
    if not any(getattr(c, "__name__", "") == "TapegradTempLocator" for c in classes):
        classes.extend([TapegradTempLocator, TapegradNullLocator])


def _probe_dir():
    """The cache directory Numba picks for the functions of this package (a throw-away
    dispatcher's locator), and which kind of locator it is."""
    try:
        from numba import njit

        def _tapegrad_cache_probe(x):   # never compiled: only its cache's location is read
            return x
        d = njit(cache=True)(_tapegrad_cache_probe)
        loc = d._cache._impl.locator
        name = type(loc).__name__
        where = "temp" if name == "TapegradTempLocator" else (
            "none" if name == "TapegradNullLocator" else "numba")
        return loc.get_cache_path(), where
    except Exception:               # pragma: no cover - a Numba without these internals
        return None, "numba"


# ---------------------------------------------------------------- the ready marker
def sources():
    """The source files compiled code is made from (their contents key the marker)."""
    out = [os.path.join(_PKG, "_schema.py")]
    out += sorted(os.path.join(_HERE, f) for f in os.listdir(_HERE) if f.endswith(".py"))
    return out


def key():
    """Digest of everything the complete cache depends on (see the module docstring)."""
    import numpy
    import llvmlite
    import numba
    h = hashlib.sha256()
    parts = [sys.version, numba.__version__, llvmlite.__version__, numpy.__version__,
             sys.platform, os.environ.get("NUMBA_CPU_NAME", ""),
             os.environ.get("NUMBA_CPU_FEATURES", ""), os.environ.get("TAPEGRAD_VMATH", "1"),
             os.environ.get("TAPEGRAD_BLAS", "1")]
    try:
        import llvmlite.binding as ll
        parts.append(ll.get_host_cpu_name())
    except Exception:               # pragma: no cover
        pass
    h.update("\0".join(parts).encode())
    for path in sources():
        h.update(os.path.basename(path).encode())
        with open(path, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:20]


_KEY = []


def marker():
    """Path of the ready marker for this installation (None: no cache directory)."""
    if DIR is None or WHERE == "none":
        return None
    if not _KEY:
        _KEY.append(key())
    return os.path.join(DIR, "tapegrad-ready-" + _KEY[0])


def is_ready():
    m = marker()
    return m is not None and os.path.exists(m)


def write_marker(info):
    """Declare the cache complete (atomically; ``info``: a JSON-able summary)."""
    m = marker()
    if m is None:
        return
    tmp = "%s.%d.tmp" % (m, os.getpid())
    with open(tmp, "w") as fh:
        json.dump(info, fh)
    os.replace(tmp, m)


def status_path():
    return None if DIR is None or WHERE == "none" else os.path.join(DIR, "tapegrad-compile.status")


def lock_path():
    return None if DIR is None or WHERE == "none" else os.path.join(DIR, "tapegrad-compile.lock")


def log_path():
    return None if DIR is None or WHERE == "none" else os.path.join(DIR, "tapegrad-compile.log")


def read_status():
    """The background compile's last progress report (a dict), or None."""
    p = status_path()
    try:
        with open(p) as fh:
            return json.load(fh)
    except (OSError, TypeError, ValueError):
        return None


def write_status(st):
    p = status_path()
    if p is None:
        return
    tmp = "%s.%d.tmp" % (p, os.getpid())
    try:
        with open(tmp, "w") as fh:
            json.dump(st, fh)
        os.replace(tmp, p)
    except OSError:
        pass


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


# ---------------------------------------------------------------- switching
def on_switch(fn):
    """Call ``fn()`` whenever the compiled code is switched on or off in this process (the
    modules that keep references to compiled functions or flags refresh them)."""
    _listeners.append(fn)
    return fn


def set_on(flag):
    """Use the compiled code (True) or the uncompiled twins (False) from now on."""
    global ON
    flag = bool(flag)
    if flag == ON:
        return
    ON = flag
    for fn in list(_listeners):
        fn()


def set_mode(mode):
    """Change ``MODE`` in this process (``now``: compiled code on at once, compiled here on a
    cache miss; ``off``; ``auto``: on when the cache is complete). The test suite uses
    ``now`` whatever the package was imported with."""
    global MODE
    if mode not in MODES:
        raise ValueError("TAPEGRAD_COMPILE must be one of %s, not %r" % (", ".join(MODES), mode))
    if WHERE == "none":
        return
    MODE = mode
    set_on(mode == "now" or (mode == "auto" and is_ready()))


def poll():
    """From the uncompiled paths: True when the compiled code is (now) in use. In ``auto``
    mode, starts the background compile on first call and, at most every 0.5 s, looks for
    the ready marker (switching on when it is there)."""
    if ON:
        return True
    if MODE != "auto" or WHERE == "none":
        return False
    now = time.monotonic()
    if now < _state["next_poll"]:
        return False
    _state["next_poll"] = now + 0.5
    if is_ready():
        set_on(True)
        return True
    if not _state["spawned"]:
        _state["spawned"] = True
        _spawn()
    else:
        _check_child()
    return ON


def _spawn():
    """Start ``python -m tapegrad.precompile --background`` (detached, low priority), unless
    a live one is already at work on this cache; tell the user once."""
    st = read_status()
    if st and st.get("key") == (_KEY[0] if _KEY else None) and st.get("state") == "running" \
            and isinstance(st.get("pid"), int) and _alive(st["pid"]):
        _notice(st["pid"], running=True)
        return
    import subprocess
    env = dict(os.environ)
    env[ENV] = "now"
    parent = os.path.dirname(_PKG)
    env["PYTHONPATH"] = parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        logf = open(log_path(), "ab")
    except (OSError, TypeError):
        logf = subprocess.DEVNULL
    try:
        kw = {"start_new_session": True} if os.name == "posix" else {}
        child = subprocess.Popen([sys.executable, "-m", "tapegrad.precompile", "--background"],
                                 stdin=subprocess.DEVNULL, stdout=logf, stderr=logf, env=env,
                                 cwd=parent, close_fds=True, **kw)
    except OSError as exc:
        _state["failed"] = True
        log.warning("tapegrad: could not start the background compile (%s); running "
                    "uncompiled. `python -m tapegrad.precompile` compiles in one step.", exc)
        return
    finally:
        if logf is not subprocess.DEVNULL:
            logf.close()
    _state["child"] = child
    _notice(child.pid)


def _check_child():
    child = _state["child"]
    if child is None or _state["failed"]:
        return
    rc = child.poll()
    if rc is not None and rc != 0 and not is_ready():
        _state["failed"] = True
        log.warning("tapegrad: the background compile failed (exit status %s, log: %s); "
                    "running uncompiled.", rc, log_path())


def _notice(pid, running=False):
    if _state["noticed"]:
        return
    _state["noticed"] = True
    log.warning("tapegrad: compiling its kernels in the background%s (pid %d, once per "
                "installation, a few minutes of CPU); until then it runs uncompiled. Progress: "
                "python -m tapegrad.precompile --status",
                " (already started)" if running else "", pid)


def wait(timeout=None, progress=None):
    """Block until the cache is complete (True) or ``timeout`` seconds passed (False);
    ``progress(done, total)`` is called as the background compile reports."""
    t0 = time.monotonic()
    last = None
    while not is_ready():
        if timeout is not None and time.monotonic() - t0 > timeout:
            return False
        st = read_status()
        if progress is not None and st:
            cur = (st.get("done"), st.get("total"))
            if cur != last and None not in cur:
                progress(*cur)
                last = cur
        time.sleep(0.2)
    if MODE == "auto":
        set_on(True)
    return True


# ---------------------------------------------------------------- notice of compiles in-process
def _watch_compiles():
    """In ``now`` mode (and after switching on): tell the user once when this process compiles
    tapegrad code itself (a cache miss), which takes seconds to minutes."""
    try:
        from numba.core import event
    except ImportError:             # pragma: no cover
        return

    class _Listener(event.Listener):
        def on_start(self, ev):
            if _state.get("compile_noticed") or not ON:
                return
            disp = (ev.data or {}).get("dispatcher")
            mod = getattr(getattr(disp, "py_func", None), "__module__", "") or ""
            if not mod.startswith("tapegrad"):
                return
            _state["compile_noticed"] = True
            if os.environ.get("TAPEGRAD_PRECOMPILING"):
                return
            log.warning("tapegrad: compiling %s and the code it calls (once per installation, "
                        "cached on disk; `python -m tapegrad.precompile` does it all in one "
                        "step)", getattr(disp, "__qualname__", None) or
                        getattr(disp.py_func, "__qualname__", "?"))

        def on_end(self, ev):
            pass
    event.register("numba:compile", _Listener())


_install_locators()
DIR, WHERE = _probe_dir()
if WHERE == "none":
    MODE = "off"
    ON = False
    log.warning("tapegrad: no writable cache directory for compiled code (the installation, "
                "the home directory and %s are read-only); running uncompiled. Set "
                "NUMBA_CACHE_DIR to a writable directory to compile.", tempfile.gettempdir())
elif MODE == "auto":
    ON = is_ready()
    if not ON and WHERE == "temp":
        log.warning("tapegrad: the installation and the home directory are read-only; compiled "
                    "code is cached under %s", DIR)
_watch_compiles()
