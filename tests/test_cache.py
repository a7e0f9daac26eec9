"""Where the compiled code is cached and when it is used (``tapegrad/_compiled/_cache.py``):
read-only installations, several cold processes at once, the ready marker's key, the switch
to the compiled code and the one-line notice. Each test runs a fresh interpreter on a fresh
copy of the package (a few seconds); none compiles more than a couple of small functions.
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "tapegrad")

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX permissions and processes")

BACKWARD = """
import math
import tapegrad as tg
x = tg.tensor([0.25, 1.5], dtype=tg.float64, requires_grad=True)
(x.sin() * x.exp()).sum().backward()
want = [math.cos(v) * math.exp(v) + math.sin(v) * math.exp(v) for v in (0.25, 1.5)]
assert max(abs(a - b) for a, b in zip(x.grad.tolist(), want)) < 1e-13, x.grad
"""


def _copy(tmp_path, name="site"):
    site = tmp_path / name
    shutil.copytree(PKG, site / "tapegrad", ignore=shutil.ignore_patterns("__pycache__"))
    return site


def _env(site, **kw):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TAPEGRAD_", "NUMBA_CACHE")) and k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(site)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update({k: str(v) for k, v in kw.items()})
    return env


def _py(code, env, cwd, timeout=300):
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=str(cwd),
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return p


def _read_only(path):
    for dp, dirs, files in os.walk(path):
        for f in files:
            os.chmod(os.path.join(dp, f), 0o444)
        os.chmod(dp, 0o555)


def _writable(path):
    for dp, dirs, files in os.walk(path):
        os.chmod(dp, 0o755)
        for f in files:
            os.chmod(os.path.join(dp, f), 0o644)


@pytest.fixture
def readonly(tmp_path):
    """A read-only installation and home directory: permissions removed and, since root
    writes through permissions, paths that cannot be created by anyone (each package
    directory's ``__pycache__`` a file, the home directory under a file)."""
    site = _copy(tmp_path)
    for dp, dirs, _ in os.walk(site / "tapegrad"):
        if "__pycache__" not in dirs:
            open(os.path.join(dp, "__pycache__"), "w").close()
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    home = blocker / "home"
    _read_only(site)
    yield site, home
    _writable(site)


def test_read_only_install_caches_in_a_private_temp_directory(readonly, tmp_path):
    """Neither the installation's __pycache__ nor ~/.cache is writable (Numba refused to
    import: "cannot cache function ...: no locator available"): the compiled code goes to a
    private directory under the temporary directory, with one warning, and works."""
    site, home = readonly
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    p = _py(BACKWARD + """
from tapegrad._compiled import _cache, _scatter
import numpy as np
assert _cache.WHERE == "temp", _cache.WHERE
print("DIR", _cache.DIR)
_cache.set_mode("now")          # (the backward above ran uncompiled: compiling it takes long)
assert (_scatter.take(np.arange(5.0), np.array([4, 0])) == [4.0, 0.0]).all()   # compiles
""", _env(site, HOME=home, TMPDIR=tmpdir, TAPEGRAD_COMPILE="off"), tmp_path)
    d = [ln.split(" ", 1)[1] for ln in p.stdout.splitlines() if ln.startswith("DIR ")][0]
    assert d.startswith(str(tmpdir / ("tapegrad-numba-cache-%d" % os.getuid())))
    assert any(f.endswith(".nbi") for f in os.listdir(d)), os.listdir(d)
    assert stat.S_IMODE(os.stat(os.path.dirname(d)).st_mode) == 0o700
    assert p.stderr.count("tapegrad: ") <= 2, p.stderr       # the notice of a compile here


def test_nothing_writable_runs_uncompiled_with_one_warning(readonly, tmp_path):
    """Not even the temporary directory is writable: tapegrad runs uncompiled (right
    results), says so once, and never tries to compile."""
    site, home = readonly
    code = "import tempfile\ntempfile.tempdir = %r\n" % str(home) + BACKWARD + BACKWARD + """
from tapegrad._compiled import _cache
assert _cache.WHERE == "none" and not _cache.ON and _cache.MODE == "off"
"""
    p = _py(code, _env(site, HOME=home), tmp_path)
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("tapegrad:")]
    assert len(lines) == 1 and "running uncompiled" in lines[0], p.stderr


def test_concurrent_cold_processes_compile_into_one_cache(tmp_path):
    """Two processes compiling the same functions into the same empty cache at once both
    succeed with right results, and a third loads what they wrote without compiling.

    "At once" is enforced, not hoped for: each process's first compilation (which Numba starts
    only after missing the cache) waits at a barrier until the other's has started too, so
    neither can have written the cache before the other looked in it. (Left to the scheduler,
    under a loaded parallel test run one process often started late and loaded what the other
    had written: zero compilations, and the test failed.)"""
    site = _copy(tmp_path)
    env = _env(site, NUMBA_CACHE_DIR=tmp_path / "cache", TAPEGRAD_COMPILE="now")
    code = textwrap.dedent("""
        import os, time
        import numpy as np
        from numba.core import event
        from tapegrad._compiled import _scatter
        n = []
        barrier = os.environ.get("BARRIER")

        class L(event.Listener):
            def on_start(self, ev):
                n.append(1)
                if barrier and len(n) == 1:          # the first compilation: meet the other
                    open(os.path.join(barrier, str(os.getpid())), "w").close()
                    deadline = time.time() + 240
                    while len(os.listdir(barrier)) < 2:
                        if time.time() > deadline:
                            print("BARRIER TIMEOUT")
                            break
                        time.sleep(0.01)

            def on_end(self, ev):
                pass
        event.register("numba:compile", L())
        g = np.linspace(0, 1, 7)
        idx = np.array([0, 2, 2, 1, 0, 0, 1])
        assert np.array_equal(_scatter.add(idx, g, 3), np.bincount(idx, weights=g, minlength=3))
        assert np.array_equal(_scatter.take(g, np.array([6, 0]), 2.0), [2.0, 0.0])
        print("COMPILES", len(n))
    """)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", code], env=dict(env, BARRIER=str(barrier)),
                              cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]
        assert "BARRIER TIMEOUT" not in out, out        # the other never compiled
        assert int(out.split("COMPILES")[1]) > 0, out
    assert len(os.listdir(barrier)) == 2
    assert "COMPILES 0" in _py(code, env, tmp_path).stdout


def test_concurrent_cold_processes_start_one_background_compile(tmp_path):
    """Two cold processes at once (auto mode): both give right results uncompiled, and at most
    one background compile runs for their shared cache (the other finds it running, or loses
    the lock); stopped at the end of the test."""
    site = _copy(tmp_path)
    cache = tmp_path / "cache"
    env = _env(site, NUMBA_CACHE_DIR=cache)
    procs = [subprocess.Popen([sys.executable, "-c", BACKWARD + "print('OK')"], env=env,
                              cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    try:
        for p, (out, err) in zip(procs, outs):
            assert p.returncode == 0 and "OK" in out, err[-3000:]
            assert err.count("compiling its kernels") == 1, err
        workers = []
        deadline = time.time() + 60
        while time.time() < deadline:
            workers = _workers(cache)
            st = _status(cache)
            if st and st.get("state") == "running" and len(workers) <= 1:
                time.sleep(1.0)          # a loser of the lock exits within a second
                workers = _workers(cache)
                break
            time.sleep(0.2)
        assert len(workers) == 1, workers
        assert _status(cache)["pid"] == workers[0]
    finally:
        for pid in _workers(cache):
            os.kill(pid, 9)


def _workers(cache):
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as fh:
                cmd = fh.read().split(b"\0")
            with open("/proc/%s/environ" % pid, "rb") as fh:
                env = fh.read().split(b"\0")
        except OSError:
            continue
        if b"tapegrad.precompile" in cmd and ("NUMBA_CACHE_DIR=%s" % cache).encode() in env:
            out.append(int(pid))
    return out


def _status(cache):
    for dp, _, files in os.walk(cache):
        if "tapegrad-compile.status" in files:
            with open(os.path.join(dp, "tapegrad-compile.status")) as fh:
                return json.load(fh)
    return None


def test_marker_key_follows_the_compiled_sources(tmp_path):
    """The ready marker's key digests the compiled sources: editing one gives another key (the
    installation then runs uncompiled and compiles again, as a fresh one)."""
    site = _copy(tmp_path)
    code = "from tapegrad._compiled import _cache; print('KEY', _cache.key())"
    env = _env(site, TAPEGRAD_COMPILE="off")
    k1 = _py(code, env, tmp_path).stdout.split("KEY ")[1].strip()
    assert _py(code, env, tmp_path).stdout.split("KEY ")[1].strip() == k1
    with open(site / "tapegrad" / "_compiled" / "kernels.py", "a") as fh:
        fh.write("\n# an edit\n")
    assert _py(code, env, tmp_path).stdout.split("KEY ")[1].strip() != k1


def test_switch_to_compiled_code_when_the_marker_appears(tmp_path):
    """auto mode on an empty cache: uncompiled, the notice once (the background compile is
    replaced by a stub here); when the marker appears, the process switches by itself."""
    site = _copy(tmp_path)
    code = BACKWARD + """
import time
from tapegrad._compiled import _cache
from tapegrad._core import pysweep
assert _cache.MODE == "auto" and not _cache.ON
assert pysweep.current() is pysweep
_cache.write_marker({"test": True})
time.sleep(0.6)
assert _cache.poll() and _cache.ON
from tapegrad._compiled import _interp, _vmath
assert pysweep.current() is _interp and _vmath.OK == _vmath.AVAILABLE
print("SWITCHED")
"""
    code = code.replace("import tapegrad as tg", "import tapegrad as tg\n"
                        "from tapegrad._compiled import _cache as C\n"
                        "C._spawn = lambda: C._notice(12345)\n", 1)
    p = _py(code, _env(site, NUMBA_CACHE_DIR=tmp_path / "cache"), tmp_path)
    assert "SWITCHED" in p.stdout
    notes = [ln for ln in p.stderr.splitlines() if "compiling its kernels" in ln]
    assert len(notes) == 1 and "pid 12345" in notes[0] and "precompile --status" in notes[0]
