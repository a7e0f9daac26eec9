"""``python -m tapegrad.precompile``: compile all of tapegrad's compiled code in one step.

A fresh installation runs uncompiled (numpy) and compiles in a background process the first
time it is used (``tapegrad/_compiled/_cache.py``). For container images, CI caches and
shared installations, run this once after ``pip install`` instead: it fills the cache with
every compiled function and marks it complete, with a progress bar (tqdm when installed,
else a one-line counter)::

    python -m tapegrad.precompile            # compile (or wait for a compile under way)
    python -m tapegrad.precompile --status   # is the cache complete? a compile under way?

The cache goes where Numba puts it (``NUMBA_CACHE_DIR``, else ``__pycache__`` next to the
installed sources, else ``~/.cache/numba``). The work is one process (``--worker``) running
a list of small workloads, each of which makes the code it exercises compile (a backward, a
replay, a scalar replay per dtype, a batched ``vmap``, big elementwise ops, sums, products,
convolutions...): what a program later loads from the cache is exactly what it would have
compiled itself.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

import tapegrad as tg
import tapegrad.func as tf
import tapegrad.nn.functional as F
from tapegrad import _math
from tapegrad._compiled import _cache, _native
from tapegrad._core import tape as _tp


# ---------------------------------------------------------------- the workloads
def _backward():
    for dt in (tg.float32, tg.float64):
        x = tg.tensor(np.linspace(0.1, 0.9, 8), dtype=dt, requires_grad=True)
        y = (x.sin() * x.exp() + x.tanh()).sum() + (x[1:] * x[:-1]).mean()
        y = y + (x.reshape(2, 4) @ x.reshape(4, 2)).sum() + x.double().float().sum()
        y.backward()


def _replay():

    def loss(w, x):
        return ((x @ w).tanh() ** 2).mean() + w.sin().sum()
    for dt in (tg.float32, tg.float64):
        w, x = tg.randn(3, 4, dtype=dt), tg.randn(5, 3, dtype=dt)
        gv = tf.grad_and_value(loss)
        gv(w, x)
        gv(w, x)


def _scalar_replay():

    def f(w):
        s = w[0] * w[1] + w[2].tanh()
        return (s * s).sin() + w[3].exp() - w[0] / w[2]
    for dt in (tg.float32, tg.float64):
        w = tg.tensor([0.3, -0.2, 0.7, 0.1], dtype=dt)
        gv = tf.grad_and_value(f)
        gv(w)
        gv(w)


def _batched():

    def rosen(x):
        a, b = x[:-1], x[1:]
        return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum() + x.tanh().sum()
    for dt in (tg.float32, tg.float64):
        X = tg.rand(64, 6, dtype=dt)
        tf.vmap(tf.grad(rosen))(X)
        tf.vmap(tf.grad_and_value(rosen))(X)


def _big_elementwise():
    _native.vmath()
    for n in (1 << 13, 1 << 17):            # one core, every core (_vmath.PAR)
        for dt in (tg.float32, tg.float64):
            x = tg.tensor(np.linspace(-1, 1, n), dtype=dt, requires_grad=True)
            y = (x.sin() * x.exp() + x.tanh() + x.cos() / (1 + x * x) - x.sigmoid()).sum()
            y = y + (x * x.mean()).sum() + x.softmax(0).sum() + x.log_softmax(0).sum()
            y.backward()
            x.grad = None
            y = (x.abs().sqrt().log1p() + x.atan() * 2.0 - x.erf() + x.neg()).mean()
            y.backward()


def _eager_kernels():
    x = np.linspace(-1.5, 1.5, 100)
    for name in sorted(_math._KERNEL_FWD):
        for npdt in (np.float32, np.float64):
            _math.kernel_forward(name, x.astype(npdt), 0.5)


def _layout_sums():
    for n in (96, 384):                     # below and above _vmath.PAR elements
        for dt in (tg.float32, tg.float64):
            a = tg.tensor(np.random.default_rng(0).standard_normal((n, n)), dtype=dt,
                          requires_grad=True)
            y = (a * a.t()).sum() + a.t().contiguous().sum() + (a.t() + a).mean()
            y = y + a.sum(0).sum() + a.var(1).sum() + a.cumsum(0).sum() + a.cumprod(1).sum()
            y.backward()


def _products():
    for dt in (tg.float32, tg.float64):
        a = tg.randn(160, 160, dtype=dt, requires_grad=True)
        b = tg.randn(160, 160, dtype=dt, requires_grad=True)
        ((a @ b).tanh().sum() + (a @ a).sum()).backward()


def _conv():
    for dt in (tg.float32, tg.float64):
        x = tg.randn(2, 3, 12, 12, dtype=dt, requires_grad=True)
        w = tg.randn(4, 3, 3, 3, dtype=dt, requires_grad=True)
        y = F.conv2d(x, w, padding=1)
        y = F.max_pool2d(y, 2).sum() + F.adaptive_max_pool2d(y, 3).sum()
        y.backward()
        x = tg.randn(8, 16, 40, 40, dtype=dt, requires_grad=True)
        F.conv2d(x, tg.randn(16, 16, 3, 3, dtype=dt)).sum().backward()


def _merged_tapes():
    a, b = tg.randn(4, requires_grad=True), tg.randn(4, requires_grad=True)
    u, v = a * 2, None
    for _ in range(10):
        u = u.sin() + a
    _tp.retire(_tp.current_tape())      # b's ops on a fresh tape: u * v joins the two
    v = b * 3
    for _ in range(10):
        v = v.cos() * b
    (u * v).sum().backward()


# (name, weight: a rough share of the compile time, workload)
JOBS = [
    ("backward sweep", 20, _backward),
    ("replay sweep", 16, _replay),
    ("scalar replays", 18, _scalar_replay),
    ("batched sweeps", 26, _batched),
    ("vector math", 10, _big_elementwise),
    ("eager kernels", 3, _eager_kernels),
    ("layout and sums", 5, _layout_sums),
    ("matrix products", 2, _products),
    ("convolutions", 2, _conv),
    ("tape merges", 1, _merged_tapes),
]


# ---------------------------------------------------------------- progress display
class _Bar:
    """tqdm when installed, else one line rewritten in place (or plain lines off a tty)."""

    def __init__(self, total, desc):
        self.total, self.done, self.desc = total, 0, desc
        self._tq = None
        try:
            from tqdm import tqdm   # optional
            self._tq = tqdm(total=total, desc=desc, unit="%", bar_format=(
                "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}] {postfix}"))
        except ImportError:
            self._tty = sys.stderr.isatty()

    def update(self, done, what=""):
        done = min(done, self.total)
        if self._tq is not None:
            self._tq.set_postfix_str(what, refresh=False)
            self._tq.update(done - self.done)
        else:
            line = "%s: %3d%% %s" % (self.desc, 100 * done // max(self.total, 1), what)
            sys.stderr.write(("\r%-78s" % line) if self._tty else line + "\n")
            sys.stderr.flush()
        self.done = done

    def close(self):
        if self._tq is not None:
            self._tq.close()
        elif self._tty:
            sys.stderr.write("\n")


# ---------------------------------------------------------------- the worker
def _lock(path):
    """An exclusive lock on ``path`` (kept open), or None when another process holds it."""
    fh = open(path, "a+")
    try:
        import fcntl
    except ImportError:             # pragma: no cover - not POSIX: no lock
        return fh
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.close()
        return None
    return fh


def worker(background=False):
    """Run the workloads in this process (compiled code on) and write the ready marker.
    Exit status 0 when the cache is complete (also when another process completed it)."""
    if _cache.WHERE == "none":
        print("tapegrad: no writable cache directory; nothing to compile", file=sys.stderr)
        return 1
    if background:
        try:
            os.nice(10)
        except (AttributeError, OSError):
            pass
    lk = _lock(_cache.lock_path())
    if lk is None:                  # another worker is at it
        return 0
    try:
        if _cache.is_ready():
            return 0
        os.environ["TAPEGRAD_PRECOMPILING"] = "1"
        _cache.set_on(True)
        total = sum(w for _, w, _ in JOBS)
        st = {"pid": os.getpid(), "key": _cache._KEY[0] if _cache._KEY else _cache.key(),
              "state": "running", "done": 0, "total": total, "step": "", "started": time.time()}
        _cache.write_status(st)
        t0, c0 = time.perf_counter(), time.process_time()
        done = 0
        for name, weight, job in JOBS:
            st["step"] = name
            _cache.write_status(st)
            job()
            done += weight
            st["done"] = done
            _cache.write_status(st)
        info = {"cpu_s": round(time.process_time() - c0, 1),
                "wall_s": round(time.perf_counter() - t0, 1), "finished": time.time(),
                "pid": os.getpid()}
        _cache.write_marker(info)
        st.update(state="done", step="", **info)
        _cache.write_status(st)
        return 0
    except BaseException as exc:
        _cache.write_status({"pid": os.getpid(), "state": "failed", "error": repr(exc)})
        raise
    finally:
        lk.close()


# ---------------------------------------------------------------- the command
def _status_line(_cache):
    if _cache.WHERE == "none":
        return "tapegrad runs uncompiled: no writable cache directory"
    if _cache.is_ready():
        try:
            with open(_cache.marker()) as fh:
                info = json.load(fh)
        except (OSError, ValueError):
            info = {}
        return "tapegrad's compiled code is in the cache (%s%s)" % (
            _cache.DIR, ", compiled in %s s CPU" % info["cpu_s"] if "cpu_s" in info else "")
    st = _cache.read_status()
    if st and st.get("state") == "running" and _cache._alive(st.get("pid", -1)):
        return "tapegrad is compiling (pid %d): %d%% (%s)" % (
            st["pid"], 100 * st.get("done", 0) // max(st.get("total", 1), 1), st.get("step"))
    if st and st.get("state") == "failed":
        return "tapegrad's last compile failed: %s (log: %s)" % (st.get("error"), _cache.log_path())
    return "tapegrad's compiled code is not in the cache yet (%s)" % _cache.DIR


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m tapegrad.precompile",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--status", action="store_true", help="report and exit")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--background", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker or args.background:
        return worker(background=args.background)
    if args.status:
        print(_status_line(_cache))
        return 0
    if _cache.WHERE == "none":
        print(_status_line(_cache), file=sys.stderr)
        return 1
    if _cache.is_ready():
        print(_status_line(_cache))
        return 0
    import subprocess
    st = _cache.read_status()
    proc = None
    if not (st and st.get("state") == "running" and _cache._alive(st.get("pid", -1))):
        env = dict(os.environ)
        env[_cache.ENV] = "now"
        parent = os.path.dirname(_cache._PKG)
        env["PYTHONPATH"] = parent + (os.pathsep + env["PYTHONPATH"]
                                      if env.get("PYTHONPATH") else "")
        proc = subprocess.Popen([sys.executable, "-m", "tapegrad.precompile", "--worker"],
                                env=env, cwd=parent)
    bar = _Bar(sum(w for _, w, _ in JOBS), "tapegrad: compiling")
    t0 = time.perf_counter()
    try:
        while True:
            if _cache.is_ready():
                bar.update(bar.total, "done")
                break
            st = _cache.read_status() or {}
            if st.get("state") == "running":
                bar.update(st.get("done", 0), st.get("step", ""))
            if proc is not None and proc.poll() is not None and not _cache.is_ready():
                bar.close()
                print("tapegrad: the compile failed (exit status %s)" % proc.returncode,
                      file=sys.stderr)
                return proc.returncode or 1
            if proc is None and st.get("state") == "failed":
                bar.close()
                print(_status_line(_cache), file=sys.stderr)
                return 1
            if proc is None and st.get("state") != "running" and not _cache.is_ready():
                # the worker we followed is gone without finishing: start our own
                return main(argv)
            time.sleep(0.25)
    finally:
        bar.close()
    print("tapegrad: compiled in %.0f s (%s)" % (time.perf_counter() - t0, _cache.DIR))
    return 0


if __name__ == "__main__":
    sys.exit(main())
