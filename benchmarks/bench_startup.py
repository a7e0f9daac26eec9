"""Start-up: the first gradient of each feature in a fresh process, cold and warm, against
PyTorch and JAX measured in the same run (issue 26).

    python benchmarks/bench_startup.py               # cold + warm, 3 warm repeats
    python benchmarks/bench_startup.py --warm 7      # more warm repeats
    python benchmarks/bench_startup.py --skip-compile   # no full compile (no warm column)
    python benchmarks/bench_startup.py --breakdown      # where the full compile's CPU goes

Steps, each a fresh ``python -c`` process (its wall time, and its CPU time: user + sys of the
process and the children it waited for):

  backward  import + the first backward of a small graph
  gv        import + the first two calls of ``func.grad_and_value`` of a small matrix loss
  scalar    import + the first two calls of ``grad_and_value`` of a scalar graph (scalar plan)
  vmap      import + the first ``vmap(grad(f))`` over 64 points
  big       import + a 10^6-element op forward and backward
  main      ``python -m tapegrad`` (the walk-through)

Cold: a fresh copy of the package in a temporary directory with its bytecode (as ``pip
install`` leaves it), an empty ``NUMBA_CACHE_DIR`` and an empty ``HOME``: what a new
installation meets. The background compile
a cold step starts is stopped once the step is measured (so that it does not load the next
measurement). Then the full compile: ``python -m tapegrad.precompile`` in a fresh copy (its CPU
time, the cache's size and file count), and the warm runs against that cache (bytecode
cached). torch and jax: the same step in a fresh process (they compile nothing per
installation: cold and warm alike), when installed.

``--breakdown`` runs the precompile workloads instead, in one fresh process on a fresh copy
with an empty cache, recording Numba's ``numba:compile`` events: CPU time per workload, and
per compiled function the number of compilations and their exclusive CPU time (its own
compilation without the functions it made compile; LLVM's optimisation of the callees linked
into it counts as its own), grouped by module. The total CPU is the process's and its
children's. CPU times vary by 10-20 % with the machine's load: compare runs made together.

The machine's load average is printed with the results: wall times on a shared machine are
inflated by load; CPU times much less so.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PKG = os.path.join(ROOT, "tapegrad")

PRELUDE = r"""
import json, time, resource, sys
t0 = time.perf_counter()
"""
EPILOGUE = r"""
t1 = time.perf_counter()
ru = resource.getrusage(resource.RUSAGE_SELF)
print("\n@@" + json.dumps({"inproc": t1 - t0, "cpu_self": ru.ru_utime + ru.ru_stime,
                           "check": CHECK}))
"""

TAPEGRAD = {
    "backward": r"""
import tapegrad as lib
a = lib.tensor([0.5, 2.0, -1.0], requires_grad=True)
b = ((a * a + a.sin()).tanh() * a.exp()).sum()
b.backward()
CHECK = a.grad.tolist()
""",
    "gv": r"""
import tapegrad as lib, tapegrad.func as tf
def loss(w, x):
    return ((x @ w).tanh() ** 2).mean()
lib.manual_seed(0)
w, x = lib.randn(3, 4), lib.randn(5, 3)
gv = tf.grad_and_value(loss)
g, v = gv(w, x)
g, v = gv(w, x)
CHECK = [float(v)] + g.reshape(-1).tolist()
""",
    "scalar": r"""
import tapegrad as lib, tapegrad.func as tf
def f(w):
    s = w[0] * w[1] + w[2].tanh()
    return (s * s).sin() + w[3].exp() - w[0] / w[2]
gv = tf.grad_and_value(f)
w = lib.tensor([0.3, -0.2, 0.7, 0.1])
g, v = gv(w)
g, v = gv(w)
CHECK = [float(v)] + g.tolist()
""",
    "vmap": r"""
import tapegrad as lib, tapegrad.func as tf
def rosen(x):
    a, b = x[:-1], x[1:]
    return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()
lib.manual_seed(0)
X = lib.rand(64, 10, dtype=lib.float64)
g = tf.vmap(tf.grad(rosen))(X)
CHECK = float(g.sum())
""",
    "big": r"""
import tapegrad as lib
lib.manual_seed(0)
x = lib.randn(1000000, requires_grad=True)
y = (lib.sin(x) * lib.exp(-x ** 2) + lib.tanh(x)).sum()
y.backward()
CHECK = float(x.grad.double().sum())
""",
}

# torch runs tapegrad's programs as they are (``lib`` is either library: same API)
TORCH = {step: code.replace("import tapegrad as lib, tapegrad.func as tf",
                            "import torch as lib, torch.func as tf")
                   .replace("import tapegrad as lib", "import torch as lib")
         for step, code in TAPEGRAD.items()}

JAX = {
    "backward": r"""
import jax, jax.numpy as jnp
f = lambda a: (jnp.tanh(a * a + jnp.sin(a)) * jnp.exp(a)).sum()
g = jax.jit(jax.grad(f))(jnp.array([0.5, 2.0, -1.0]))
CHECK = g.tolist()
""",
    "gv": r"""
import jax, jax.numpy as jnp
def loss(w, x):
    return (jnp.tanh(x @ w) ** 2).mean()
k1, k2 = jax.random.split(jax.random.PRNGKey(0))
w, x = jax.random.normal(k1, (3, 4)), jax.random.normal(k2, (5, 3))
gv = jax.jit(jax.value_and_grad(loss))
v, g = gv(w, x)
v, g = gv(w, x)
CHECK = float(v)
""",
    "scalar": r"""
import jax, jax.numpy as jnp
def f(w):
    s = w[0] * w[1] + jnp.tanh(w[2])
    return jnp.sin(s * s) + jnp.exp(w[3]) - w[0] / w[2]
gv = jax.jit(jax.value_and_grad(f))
w = jnp.array([0.3, -0.2, 0.7, 0.1])
v, g = gv(w)
v, g = gv(w)
CHECK = [float(v)] + g.tolist()
""",
    "vmap": r"""
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
def rosen(x):
    a, b = x[:-1], x[1:]
    return (100 * (b - a * a) ** 2 + (1 - a) ** 2).sum()
X = jax.random.uniform(jax.random.PRNGKey(0), (64, 10), dtype=jnp.float64)
g = jax.jit(jax.vmap(jax.grad(rosen)))(X)
CHECK = float(g.sum())
""",
    "big": r"""
import jax, jax.numpy as jnp
x = jax.random.normal(jax.random.PRNGKey(0), (1000000,))
f = lambda x: (jnp.sin(x) * jnp.exp(-x ** 2) + jnp.tanh(x)).sum()
g = jax.jit(jax.grad(f))(x)
CHECK = float(g.sum())
""",
}

STEPS = ["backward", "gv", "scalar", "vmap", "big", "main"]


def _env(pythonpath, home, cache, compile_mode=None, bytecode=True):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TAPEGRAD_", "NUMBA_")) and k not in ("PYTHONPATH", "HOME")}
    env["PYTHONPATH"] = pythonpath
    env["HOME"] = home
    if cache:
        env["NUMBA_CACHE_DIR"] = cache
    if compile_mode:
        env["TAPEGRAD_COMPILE"] = compile_mode
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _run(args, env, cwd, timeout=3600):
    """(wall, cpu of the child and the children it waited for, stdout, stderr)."""
    r0 = os.times()
    t0 = time.perf_counter()
    p = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    r1 = os.times()
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (args, p.returncode, p.stderr[-3000:]))
    return wall, cpu, p.stdout, p.stderr


def _step(lib_snippets, step, env, cwd):
    if step == "main":
        wall, cpu, out, err = _run([sys.executable, "-m", "tapegrad"], env, cwd)
        return {"wall": wall, "cpu": cpu, "check": None, "stderr": err}
    code = PRELUDE + lib_snippets[step] + EPILOGUE
    wall, cpu, out, err = _run([sys.executable, "-c", code], env, cwd)
    rec = json.loads(out.split("@@")[-1])
    rec.update(wall=wall, cpu=cpu, stderr=err)
    return rec


BREAKDOWN = r"""
import json, resource, sys, time
from numba.core import event
stack, rec = [], {}


class L(event.Listener):
    def on_start(self, ev):
        d = ev.data["dispatcher"]
        f = getattr(d, "py_func", None)
        name = "%s.%s" % (getattr(f, "__module__", "?"), getattr(f, "__qualname__", repr(d)))
        stack.append([name, time.process_time(), 0.0])

    def on_end(self, ev):
        name, t0, inner = stack.pop()
        dt = time.process_time() - t0
        if stack:
            stack[-1][2] += dt
        r = rec.setdefault(name, [0, 0.0])
        r[0] += 1
        r[1] += dt - inner


event.register("numba:compile", L())
from tapegrad import precompile
jobs = []
for name, _, job in precompile.JOBS:
    t = time.process_time()
    job()
    jobs.append((name, time.process_time() - t))
ru, rc = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = ru.ru_utime + ru.ru_stime + rc.ru_utime + rc.ru_stime
print("@@" + json.dumps({"jobs": jobs, "cpu": cpu, "funcs": rec}))
"""


def _group(name):
    """A compiled function's group: its module (Numba's own implementations together)."""
    return "numba (its own implementations)" if name.startswith("numba") else name.rsplit(".", 1)[0]


def breakdown(tmp):
    """The full compile in one fresh process with Numba's compile events recorded (see the
    module's docstring); prints and returns {jobs, cpu, wall, funcs, cache_bytes, ...}."""
    site, home, cache = _fresh_copy(os.path.join(tmp, "breakdown"))
    env = _env(site, home, cache, compile_mode="now")
    wall, _, out, _ = _run([sys.executable, "-c", BREAKDOWN], env, os.path.join(tmp, "breakdown"),
                           timeout=7200)
    rec = json.loads(out.split("@@")[-1])
    rec["wall"] = wall
    rec["cache_bytes"], rec["cache_entries"] = _du(cache)
    funcs = rec["funcs"]
    print("full compile in one process: %.0f s CPU (%.0f s wall), %d compilations of %d "
          "functions; cache %.1f MB in %d entries" % (
              rec["cpu"], wall, sum(n for n, _ in funcs.values()), len(funcs),
              rec["cache_bytes"] / 1e6, rec["cache_entries"]))
    print("\n| workload | CPU |\n| --- | --- |")
    for name, t in rec["jobs"]:
        print("| %s | %.1f s |" % (name, t))
    groups = {}
    for name, (n, t) in funcs.items():
        g = groups.setdefault(_group(name), [0, 0, 0.0])
        g[0] += 1
        g[1] += n
        g[2] += t
    print("\n| module | functions | compilations | exclusive CPU |\n| --- | --- | --- | --- |")
    for g, (nf, n, t) in sorted(groups.items(), key=lambda kv: -kv[1][2]):
        print("| %s | %d | %d | %.1f s |" % (g, nf, n, t))
    print("\nthe 20 costliest functions (compilations, exclusive CPU):")
    for name, (n, t) in sorted(funcs.items(), key=lambda kv: -kv[1][1])[:20]:
        print("  %6.1f s %3d  %s" % (t, n, name))
    return rec


def _fresh_copy(root):
    """A fresh installation in root/site: the package's sources and their bytecode (pip
    compiles it at install time), nothing compiled by Numba; an empty home and cache."""
    dst = os.path.join(root, "site")
    shutil.copytree(PKG, os.path.join(dst, "tapegrad"), ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(dst, "tapegrad")],
                   check=True)
    os.makedirs(os.path.join(root, "home"))
    os.makedirs(os.path.join(root, "cache"))
    return dst, os.path.join(root, "home"), os.path.join(root, "cache")


def _stop_background(cache):
    """Stop the background compile a cold step started (its pid is in the status file it
    writes in the cache directory once it has imported tapegrad)."""
    deadline = time.time() + 10
    while time.time() < deadline:
        for dp, _, files in os.walk(cache):
            if "tapegrad-compile.status" in files:
                try:
                    with open(os.path.join(dp, "tapegrad-compile.status")) as fh:
                        pid = json.load(fh).get("pid")
                    os.kill(pid, signal.SIGKILL)
                    return pid
                except (OSError, ValueError, TypeError):
                    pass
        time.sleep(0.2)
    return None


def _worker_report(cache):
    """The compile worker's final status (cpu_s, wall_s) from the cache directory, or {}."""
    for dp, _, files in os.walk(cache):
        if "tapegrad-compile.status" in files:
            try:
                with open(os.path.join(dp, "tapegrad-compile.status")) as fh:
                    st = json.load(fh)
                if st.get("state") == "done":
                    return st
            except (OSError, ValueError):
                pass
    return {}


def _du(path):
    total = files = 0
    for dp, _, fs in os.walk(path):
        for f in fs:
            total += os.path.getsize(os.path.join(dp, f))
            files += f.endswith(".nbi")
    return total, files


def _fmt(s):
    if s is None:
        return "-"
    return "%.2f s" % s if s < 10 else "%.0f s" % s


def _summary(recs, key):
    vals = [r[key] for r in recs]
    return statistics.median(vals) if vals else None


def _add_rows(results, res, steps, args):
    """The run as rows of the benchmarks' schema (benchmarks/_results.py): per step, the cases
    "<step> cold" and "<step> warm" with tapegrad's median wall time; torch and jax (nothing
    compiled per installation: one set of runs) are the peers of both; the full compile is
    the case "full compile" with its CPU time as median_s."""
    for step in steps:
        for part in ("cold", "warm"):
            recs = res[part].get(step, [])
            if not recs:
                continue
            case = "%s %s" % (step, part)
            results.add(case, "tapegrad", _summary(recs, "wall"), len(recs),
                        cpu_s=_summary(recs, "cpu"), samples=[r["wall"] for r in recs],
                        check=recs[0].get("check"),
                        note="wall time of a fresh process: import + the step")
            for peer in ("torch", "jax"):
                precs = res[peer].get(step, [])
                if precs:
                    results.add(case, peer, _summary(precs, "wall"), len(precs),
                                cpu_s=_summary(precs, "cpu"), samples=[r["wall"] for r in precs])
    c = res["compile"]
    if c:
        results.add("full compile", "tapegrad", c["cpu"], 1, wall_s=c["wall"],
                    cache_bytes=c["cache_bytes"], cache_entries=c["cache_entries"],
                    note="CPU seconds of python -m tapegrad.precompile in a fresh copy")


def main(argv=None):
    from _results import Results, default_path
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--warm", type=int, default=3, help="warm repeats per step (median)")
    ap.add_argument("--cold", type=int, default=1, help="cold repeats per step (median)")
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--skip-compile", action="store_true")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--breakdown", action="store_true",
                    help="only the full compile, with per-function compile times (no JSON)")
    ap.add_argument("--json", default=default_path("bench_startup"),
                    help="results file (schema in benchmarks/README.md); '' for none")
    args = ap.parse_args(argv)
    steps = args.steps.split(",")
    load0 = os.getloadavg()
    if args.breakdown:
        tmp = tempfile.mkdtemp(prefix="tapegrad_bench_startup_")
        try:
            rec = breakdown(tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print("load average (1, 5, 15 min): before %s, after %s" % (
            "/".join("%.1f" % v for v in load0), "/".join("%.1f" % v for v in os.getloadavg())))
        return rec
    res = {"cold": {}, "warm": {}, "torch": {}, "jax": {}, "compile": None}
    tmp = tempfile.mkdtemp(prefix="tapegrad_bench_startup_")
    try:
        # ---- cold: one fresh installation per run
        for step in steps:
            recs = []
            for i in range(args.cold):
                root = os.path.join(tmp, "cold-%s-%d" % (step, i))
                site, home, cache = _fresh_copy(root)
                env = _env(site, home, cache)
                recs.append(_step(TAPEGRAD, step, env, root))
                _stop_background(cache)
                print("cold %-9s wall %s cpu %s" % (step, _fmt(recs[-1]["wall"]),
                                                   _fmt(recs[-1]["cpu"])), flush=True)
            res["cold"][step] = recs
        # ---- the full compile, then warm runs on its cache
        if not args.skip_compile:
            root = os.path.join(tmp, "warm")
            site, home, cache = _fresh_copy(root)
            env = _env(site, home, cache)
            wall, cpu, out, err = _run([sys.executable, "-m", "tapegrad.precompile"], env, root,
                                       timeout=7200)
            size, nbi = _du(cache)
            worker = _worker_report(cache)
            # the compile runs in a worker process the command starts and follows: its CPU
            # time is the worker's own report (the command's children times miss it when the
            # command exits first)
            cpu = worker.get("cpu_s", cpu)
            res["compile"] = {"wall": wall, "cpu": cpu, "cache_bytes": size, "cache_entries": nbi}
            print("full compile: wall %s cpu %s cache %.1f MB (%d entries)"
                  % (_fmt(wall), _fmt(cpu), size / 1e6, nbi), flush=True)
            for step in steps:
                _step(TAPEGRAD, step, env, root)       # bytecode and the OS file cache
                recs = [_step(TAPEGRAD, step, env, root) for _ in range(args.warm)]
                res["warm"][step] = recs
                print("warm %-9s wall %s cpu %s" % (
                    step, _fmt(_summary(recs, "wall")), _fmt(_summary(recs, "cpu"))), flush=True)
        # ---- peers
        if not args.no_peers:
            for name, table in (("torch", TORCH), ("jax", JAX)):
                try:
                    __import__(name)
                except ImportError:
                    continue
                env = _env(os.environ.get("PYTHONPATH", ""), os.environ.get("HOME", tmp), None)
                for step in steps:
                    if step not in table:
                        continue
                    _step(table, step, env, tmp)
                    recs = [_step(table, step, env, tmp) for _ in range(args.warm)]
                    res[name][step] = recs
                    print("%-5s %-9s wall %s cpu %s" % (
                        name, step, _fmt(_summary(recs, "wall")), _fmt(_summary(recs, "cpu"))),
                        flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load1 = os.getloadavg()
    res["load"] = [load0, load1]

    print("\n| step | cold wall | cold CPU | warm wall | warm CPU | torch wall | jax wall |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for step in steps:
        c, w = res["cold"].get(step, []), res["warm"].get(step, [])
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            step, _fmt(_summary(c, "wall")), _fmt(_summary(c, "cpu")), _fmt(_summary(w, "wall")),
            _fmt(_summary(w, "cpu")), _fmt(_summary(res["torch"].get(step, []), "wall")),
            _fmt(_summary(res["jax"].get(step, []), "wall"))))
    if res["compile"]:
        c = res["compile"]
        print("\nfull compile (python -m tapegrad.precompile): %s CPU, %s wall; cache %.1f MB "
              "in %d entries" % (_fmt(c["cpu"]), _fmt(c["wall"]), c["cache_bytes"] / 1e6,
                                 c["cache_entries"]))
    for step in steps:       # the uncompiled (cold) and compiled (warm) paths' results
        c, w = res["cold"].get(step, []), res["warm"].get(step, [])
        if c and w and c[0].get("check") is not None:
            same = c[0]["check"] == w[0]["check"]
            print("%s: cold and warm results %s" % (step, "identical" if same else "DIFFER: %r vs %r"
                                                     % (c[0]["check"], w[0]["check"])))
    print("load average (1, 5, 15 min): before %s, after %s"
          % ("/".join("%.1f" % v for v in load0), "/".join("%.1f" % v for v in load1)))
    if args.json:
        results = Results("bench_startup", options=vars(args))
        for part in ("cold", "warm", "torch", "jax"):
            for recs in res[part].values():
                for r in recs:
                    r.pop("stderr", None)
        _add_rows(results, res, steps, args)
        results.detail = {"load_before": list(load0), "load_after": list(load1)}
        results.write(args.json)
        print("results written to %s" % os.path.relpath(args.json))
    return res


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
