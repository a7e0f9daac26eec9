"""Foundation benchmarks: tapegrad against PyTorch eager, measured in the same run.

    python benchmarks/bench_foundation.py            # full run (a few minutes)
    python benchmarks/bench_foundation.py --quick    # fewer repeats, one cold start

Workloads (see benchmarks/README.md):
  a. micrograd-style scalar MLP 2-16-16-1 (tanh) on 0-dim tensors, forward+backward per sample
  b. a chain of 1,000 small ops on a 10-element vector, then .sum().backward()
  c. sum(sin(x)*exp(-x**2) + tanh(x)) value+grad on 10**6 float32 elements
  d. start-up in a fresh subprocess: `import` + first backward, cold (empty numba cache)
     and cached, with `import torch` + first backward for comparison

Every timed figure is a median over repeats taken after a warm-up; tapegrad and torch repeats
are interleaved so that machine noise hits both alike.  ratio = torch_time / tapegrad_time,
so ratio > 1 means tapegrad is faster.  Gradients of a/b/c are checked against torch before
timing.  Results also go to benchmarks/results/bench_foundation.json (the schema of
benchmarks/README.md: one row per workload and tool, everything else under "detail").
"""
import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PKG = os.path.join(ROOT, "tapegrad")
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import tapegrad  # noqa: E402

sys.path.insert(0, HERE)
from _results import Results, default_path, fmt_time as _fmt_time  # noqa: E402,F401

try:
    import torch
except ImportError:  # torch is an optional peer
    torch = None


# --------------------------------------------------------------------------------------------
# timing helpers

def _calibrate(fn, min_time):
    """How many calls of fn make one repeat last at least min_time seconds."""
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= min_time or n >= 1 << 16:
            return n
        n = max(n * 2, int(n * min_time / max(dt, 1e-9) * 1.2))


def bench_pair(fns, warmup, repeats, min_time):
    """Time each callable in fns (dict name -> fn), interleaving repeats across them.

    Returns dict name -> {"median": s_per_call, "samples": [...], "inner": calls per repeat}.
    """
    inner = {}
    for name, fn in fns.items():
        for _ in range(warmup):
            fn()
        inner[name] = _calibrate(fn, min_time)
    samples = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            n = inner[name]
            gc.collect()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - t0) / n)
    return {name: {"median": statistics.median(s), "min": min(s), "samples": s,
                   "inner": inner[name]} for name, s in samples.items()}


# --------------------------------------------------------------------------------------------
# a. micrograd-style scalar MLP, generic over `lib`

MLP_SIZES = (2, 16, 16, 1)


def mlp_init_values(seed=0):
    """Plain-float weights and biases, shared by both libraries: [layer][neuron] = (ws, b)."""
    rng = np.random.default_rng(seed)
    layers = []
    for nin, nout in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        layers.append([([float(v) for v in rng.uniform(-1, 1, nin)], float(rng.uniform(-1, 1)))
                       for _ in range(nout)])
    return layers


def mlp_data(n=32, seed=1):
    rng = np.random.default_rng(seed)
    xs = rng.uniform(-2, 2, (n, MLP_SIZES[0]))
    ys = np.sign(xs[:, 0] * xs[:, 1])
    return [([float(v) for v in x], float(y)) for x, y in zip(xs, ys)]


class ScalarMLP:
    """micrograd's MLP, but every scalar is a 0-dim tensor of `lib` (torch or tapegrad)."""

    def __init__(self, lib, values):
        self.lib = lib
        self.layers = [[([lib.tensor(w, requires_grad=True) for w in ws],
                         lib.tensor(b, requires_grad=True)) for ws, b in layer]
                       for layer in values]

    def parameters(self):
        return [p for layer in self.layers for ws, b in layer for p in ws + [b]]

    def __call__(self, x):
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            out = []
            for ws, b in layer:
                act = sum((wi * xi for wi, xi in zip(ws, x)), b)
                out.append(act.tanh() if i < last else act)
            x = out
        return x[0]


def make_mlp_step(lib, values, data, split=None):
    model = ScalarMLP(lib, values)
    params = model.parameters()
    samples = [([lib.tensor(v) for v in x], lib.tensor(y)) for x, y in data]
    state = {"i": 0}

    def step():
        x, y = samples[state["i"]]
        state["i"] = (state["i"] + 1) % len(samples)
        for p in params:
            p.grad = None
        if split is None:
            loss = (model(x) - y) ** 2
            loss.backward()
            return loss
        t0 = time.perf_counter()
        loss = (model(x) - y) ** 2
        t1 = time.perf_counter()
        loss.backward()
        split.append((t1 - t0, time.perf_counter() - t1))
        return loss

    return step, params


def numpy_mlp_grads(values, sample):
    """float64 reference: hand-written backprop of the same MLP and loss, parameters in
    ScalarMLP.parameters() order."""
    x, y = np.array(sample[0]), sample[1]
    Ws = [np.array([ws for ws, _ in layer]) for layer in values]
    bs = [np.array([b for _, b in layer]) for layer in values]
    acts, h = [x], x
    for i, (W, b) in enumerate(zip(Ws, bs)):
        h = W @ h + b
        if i < len(Ws) - 1:
            h = np.tanh(h)
        acts.append(h)
    loss = float((h[0] - y) ** 2)
    dz = np.array([2.0 * (h[0] - y)])
    grads = [None] * len(Ws)
    for i in reversed(range(len(Ws))):
        grads[i] = np.concatenate([np.outer(dz, acts[i]), dz[:, None]], axis=1).ravel()
        if i > 0:
            dz = (Ws[i].T @ dz) * (1.0 - acts[i] ** 2)
    return loss, np.concatenate(grads)


def _flag(diff, tol):
    return "" if diff <= tol else "   <-- MISMATCH (tol %.0e)" % tol


def mlp_grads(lib, values, data):
    step, params = make_mlp_step(lib, values, data)
    loss = step()
    return float(loss.item()), np.array([float(p.grad.item()) for p in params])


# --------------------------------------------------------------------------------------------
# b. chain of 1,000 small ops

CHAIN_LEN = 1000


def make_chain_step(lib, split=None):
    x = lib.ones(10, requires_grad=True)

    def step():
        x.grad = None
        t0 = time.perf_counter()
        y = x
        for _ in range(CHAIN_LEN):
            y = y * 1.0001 + 0.001
        s = y.sum()
        t1 = time.perf_counter()
        s.backward()
        if split is not None:
            split.append((t1 - t0, time.perf_counter() - t1))
        return s

    return step, x


# --------------------------------------------------------------------------------------------
# c. elementwise value+grad on 10**6 float32 elements

ELEM_N = 10 ** 6


def make_elem_step(lib, xs, split=None):
    x = lib.from_numpy(xs.copy()).requires_grad_()

    def step():
        x.grad = None
        t0 = time.perf_counter()
        y = (lib.sin(x) * lib.exp(-x ** 2) + lib.tanh(x)).sum()
        t1 = time.perf_counter()
        y.backward()
        if split is not None:
            split.append((t1 - t0, time.perf_counter() - t1))
        return y

    return step, x


def _grad_np(t):
    g = t.grad
    return g.detach().numpy() if hasattr(g, "detach") else np.asarray(g)


# --------------------------------------------------------------------------------------------
# d. start-up in a fresh subprocess
#
# Every run is a new `python -c` process, timed from outside (wall: interpreter start-up,
# import, first backward, exit) and inside (from before the import to after the first
# backward). "Cold" means a fresh copy of tapegrad/ with no __pycache__ at all: no Numba cache
# and no bytecode. "Cached" reuses the last cold copy, whose caches the cold runs wrote. The
# subprocesses always write and read bytecode (PYTHONDONTWRITEBYTECODE is removed from their
# environment, as a pip-installed package has its .pyc files): with it set, every "cached" run
# would also recompile tapegrad's Python sources (~0.1-0.15 s here), which no installed
# package does. The cached runs of each kind are interleaved so machine noise hits all alike:
#   tapegrad          the default (the cached interpreter is loaded by tapegrad/_fastload.py)
#   tapegrad-numba    TAPEGRAD_NUMBA_FULL_REFRESH=1: Numba's own cache loader, which refreshes
#                     its whole target context first (how tapegrad loaded before _fastload)
#   numba floor       `import numba` + first cached call of a trivial @njit(cache=True) function
#                     in a module of its own (Numba's own loader)
#   torch             `import torch` + the same first backward (when torch is installed)

STARTUP_SNIPPET = r"""
import json, time
t0 = time.perf_counter()
import {mod} as lib
t1 = time.perf_counter()
a = lib.tensor(2.0, requires_grad=True)
b = (a * a + a.sin()).tanh()
b.backward()
g = float(a.grad.item())
t2 = time.perf_counter()
fl = getattr(lib, "_fastload", None)
print(json.dumps({{"import": t1 - t0, "total": t2 - t0, "file": lib.__file__, "grad": g,
                  "loads": dict(fl.STATS) if fl is not None else None}}))
"""

FLOOR_MODULE = """import numba


@numba.njit(cache=True)
def f(x):
    return x + 1.0
"""

FLOOR_SNIPPET = r"""
import json, time
t0 = time.perf_counter()
import numba
t1 = time.perf_counter()
import tg_numba_floor as m
y = m.f(1.0)
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "total": t2 - t0, "file": m.__file__, "grad": y}))
"""


def run_startup(mod, pythonpath, cwd, extra_env=None, snippet=None):
    env = dict(os.environ)
    env.pop("NUMBA_CACHE_DIR", None)      # the cache must live next to the copied sources
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode is cached, as for an installed package
    env.pop("TAPEGRAD_NUMBA_FULL_REFRESH", None)
    env["PYTHONPATH"] = pythonpath
    env.update(extra_env or {})
    code = snippet if snippet is not None else STARTUP_SNIPPET.format(mod=mod)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True,
                       text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError("start-up subprocess for %s failed (rc=%d):\n%s"
                           % (mod, p.returncode, p.stderr))
    rec = json.loads(p.stdout.strip().splitlines()[-1])
    rec["wall"] = wall
    return rec


def fresh_copy(tmp_root, i, src=None):
    dest_root = os.path.join(tmp_root, "copy%d" % i)
    shutil.copytree(src or PKG, os.path.join(dest_root, "tapegrad"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    return dest_root


def _count_cache(root):
    nbi = pyc = 0
    for _, _, files in os.walk(os.path.join(root, "tapegrad")):
        nbi += sum(f.endswith(".nbi") for f in files)
        pyc += sum(f.endswith(".pyc") for f in files)
    return nbi, pyc


STARTUP_KINDS = ("tapegrad", "tapegrad-numba", "numba floor", "torch")


def bench_startup(cold_reps, cached_reps, with_torch, log, src=None):
    """Cold runs, then `cached_reps` rounds of interleaved cached runs of every kind.
    ``src`` is the tapegrad package directory to copy (default: this checkout's)."""
    kinds = [k for k in STARTUP_KINDS if with_torch or k != "torch"]
    out = {"cold": [], "numba floor cold": None}
    out.update({k: [] for k in kinds})
    tmp_root = tempfile.mkdtemp(prefix="tapegrad_startup_")
    try:
        last_root = None
        for i in range(cold_reps):
            root = fresh_copy(tmp_root, i, src)
            rec = run_startup("tapegrad", root, root)
            if not rec["file"].startswith(root):
                raise RuntimeError("subprocess imported %s, not the temp copy in %s"
                                   % (rec["file"], root))
            rec["numba_index_files_after"], rec["pyc_files_after"] = _count_cache(root)
            log("  cold   #%d: wall %s, in-process %s (import %s); wrote %d numba index and "
                "%d .pyc files" % (i + 1, _fmt_time(rec["wall"]), _fmt_time(rec["total"]),
                                   _fmt_time(rec["import"]), rec["numba_index_files_after"],
                                   rec["pyc_files_after"]))
            out["cold"].append(rec)
            last_root = root
        floor_dir = os.path.join(tmp_root, "floor")
        os.makedirs(floor_dir)
        with open(os.path.join(floor_dir, "tg_numba_floor.py"), "w") as f:
            f.write(FLOOR_MODULE)
        out["numba floor cold"] = run_startup("numba floor", floor_dir, floor_dir,
                                              snippet=FLOOR_SNIPPET)
        runs = {
            "tapegrad": lambda: run_startup("tapegrad", last_root, last_root),
            "tapegrad-numba": lambda: run_startup("tapegrad", last_root, last_root,
                                                  {"TAPEGRAD_NUMBA_FULL_REFRESH": "1"}),
            "numba floor": lambda: run_startup("numba floor", floor_dir, floor_dir,
                                               snippet=FLOOR_SNIPPET),
            "torch": lambda: run_startup("torch", os.environ.get("PYTHONPATH", ""), tmp_root),
        }
        for i in range(cached_reps):
            for k in kinds:
                rec = runs[k]()
                if k.startswith("tapegrad"):
                    if not rec["file"].startswith(last_root):
                        raise RuntimeError("subprocess imported %s, not the temp copy in %s"
                                           % (rec["file"], last_root))
                    want = "full" if k == "tapegrad-numba" else "light"
                    if rec["loads"] is not None and rec["loads"].get(want) != 1:
                        raise RuntimeError("%s run loaded the interpreter as %s, expected one "
                                           "%r load (a cache miss?)" % (k, rec["loads"], want))
                log("  cached #%d %-15s wall %s, in-process %s (import %s)"
                    % (i + 1, k, _fmt_time(rec["wall"]), _fmt_time(rec["total"]),
                       _fmt_time(rec["import"])))
                out[k].append(rec)
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
    return out


# --------------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, a single cold start")
    ap.add_argument("--no-torch", action="store_true",
                    help="behave as if torch were not installed")
    ap.add_argument("--skip-startup", action="store_true", help="skip workload d")
    ap.add_argument("--startup-only", action="store_true", help="run workload d alone")
    ap.add_argument("--cold-reps", type=int, default=None,
                    help="cold start-up runs (default 2, --quick 1)")
    ap.add_argument("--cached-reps", type=int, default=None,
                    help="rounds of interleaved cached start-up runs (default 9, --quick 3)")
    ap.add_argument("--no-split", action="store_true",
                    help="skip the supplementary forward/backward split of a/b/c")
    ap.add_argument("--json", default=default_path("bench_foundation"),
                    help="where to write the results (schema in benchmarks/README.md); '' for "
                         "nowhere")
    ap.add_argument("--torch-threads", type=int, default=None,
                    help="torch.set_num_threads(N) before timing (default: torch's own default)")
    args = ap.parse_args(argv)

    th = None if args.no_torch else torch
    if th is not None and args.torch_threads:
        th.set_num_threads(args.torch_threads)
    if args.quick:
        warmup, repeats, min_time = 3, 5, 0.05
        cold_reps, cached_reps = 1, 3
    else:
        warmup, repeats, min_time = 10, 15, 0.2
        cold_reps, cached_reps = 2, 9
    cold_reps = args.cold_reps if args.cold_reps is not None else cold_reps
    cached_reps = args.cached_reps if args.cached_reps is not None else cached_reps

    def log(msg=""):
        print(msg, flush=True)

    import numba
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "tapegrad"],
                                    cwd=ROOT, capture_output=True, text=True).stdout.strip())
    except OSError:
        commit, dirty = "", False
    meta = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "numba_threads": numba.get_num_threads(),
        "tapegrad": getattr(tapegrad, "__version__", "?"),
        "tapegrad_file": tapegrad.__file__,
        "git_commit": commit,
        "tapegrad_dirty": dirty,
        "torch": th.__version__ if th is not None else None,
        "torch_threads": th.get_num_threads() if th is not None else None,
        "quick": args.quick,
        "warmup": warmup, "repeats": repeats, "min_repeat_time_s": min_time,
    }
    log("tapegrad %s (%s%s) from %s" % (meta["tapegrad"], commit or "?",
                                         ", tapegrad/ modified" if dirty else "",
                                         os.path.dirname(tapegrad.__file__)))
    log("python %s, numpy %s, numba %s (%d threads), %d CPUs"
        % (meta["python"], meta["numpy"], meta["numba"], meta["numba_threads"],
           meta["cpu_count"]))
    if th is not None:
        log("torch %s (%d intra-op threads)" % (th.__version__, th.get_num_threads()))
    else:
        log("torch ABSENT%s: reporting tapegrad figures alone"
            % (" (--no-torch)" if args.no_torch and torch is not None else ""))
    log("mode: %s (warm-up %d, %d interleaved repeats of >= %.0f ms each, median reported)\n"
        % ("quick" if args.quick else "full", warmup, repeats, min_time * 1e3))

    rows = []          # table rows
    results = {"meta": meta, "workloads": {}, "errors": []}
    out = Results("bench_foundation", options=vars(args))

    def record(key, label, tg, to, target_ratio=None, target_abs=None, target_text="",
               extra=None, size=None, n=repeats):
        ratio = (to / tg) if (tg and to) else None
        if target_ratio is not None:
            met = (ratio >= target_ratio) if ratio is not None else None
        elif target_abs is not None:
            met = tg < target_abs if tg is not None else None
        else:
            met = None
        rows.append((label, tg, to, ratio, target_text, met))
        entry = {"label": label, "tapegrad_median_s": tg, "torch_median_s": to,
                 "ratio_torch_over_tapegrad": ratio, "target": target_text or None,
                 "met": met}
        if extra:
            entry.update(extra)
        results["workloads"][key] = entry
        out.add(label, "tapegrad", tg, n, size=size, target=target_text or None, met=met)
        if to is not None:
            out.add(label, "torch", to, n, size=size)

    def guarded(name, fn):
        try:
            fn()
        except Exception:
            import traceback
            tb = traceback.format_exc()
            log("!! %s raised:\n%s" % (name, tb))
            results["errors"].append({"workload": name, "traceback": tb})
            rows.append((name + " (ERROR)", None, None, None, "", None))

    def paired(r, extra):
        """Median of per-repeat ratios (repeats are interleaved, so each pair saw similar load)."""
        if "torch" not in r:
            return
        q = [b / a for a, b in zip(r["tapegrad"]["samples"], r["torch"]["samples"])]
        extra["paired_ratio_median"] = statistics.median(q)
        log("    timing: tapegrad %s, torch %s per call; median of paired per-repeat ratios "
            "%.2fx (range %.2f-%.2f)" % (_fmt_time(r["tapegrad"]["median"]),
                                         _fmt_time(r["torch"]["median"]),
                                         statistics.median(q), min(q), max(q)))
        if max(q) > 2 * min(q):
            extra["noisy"] = True
            log("    WARNING: paired ratios vary more than 2x across repeats: the machine was "
                "busy; rerun (with 2 cores, torch's worker threads suffer most from other load; "
                "--torch-threads 1 is steadier)")

    def fwd_split(make, extra, warm):
        """Supplementary (not in the table): per-call forward / backward medians, from steps
        timed inside with perf_counter (a separate pass, so the table's figures carry no
        instrumentation)."""
        if args.no_split:
            return
        libs = [("tapegrad", tapegrad)] + ([("torch", th)] if th is not None else [])
        recs = {name: [] for name, _ in libs}
        steps = {name: make(lib, recs[name]) for name, lib in libs}
        r = bench_pair(steps, warm, repeats, min_time)
        parts = []
        for name, _ in libs:
            timed = recs[name][warm:]          # drop the warm-up calls
            f = statistics.median(v[0] for v in timed)
            b = statistics.median(v[1] for v in timed)
            extra.setdefault("split", {})[name] = {"forward_s": f, "backward_s": b,
                                                   "instrumented_total_s": r[name]["median"]}
            parts.append("%s fwd %s + bwd %s" % (name, _fmt_time(f), _fmt_time(b)))
        log("    split (median per call): " + "; ".join(parts))

    # ---- a. scalar MLP ---------------------------------------------------------------------
    def wl_mlp():
        values, data = mlp_init_values(), mlp_data()
        nparams = sum(len(ws) + 1 for layer in values for ws, _ in layer)
        log("[a] scalar MLP %s, %d parameters, one sample per call" % (
            "-".join(map(str, MLP_SIZES)), nparams))
        extra = {"parameters": nparams}
        loss_tg, g_tg = mlp_grads(tapegrad, values, data)
        loss_np, g_np = numpy_mlp_grads(values, data[0])
        dnp = float(np.max(np.abs(g_tg - g_np)))
        extra.update(max_abs_grad_diff_numpy=dnp)
        log("    grad check: max |g_tapegrad - g_numpy_f64| = %.2e over %d params%s"
            % (dnp, len(g_tg), _flag(dnp, 1e-4)))
        if th is not None:
            loss_to, g_to = mlp_grads(th, values, data)
            diff = float(np.max(np.abs(g_tg - g_to)))
            extra.update(max_abs_grad_diff=diff, loss_diff=abs(loss_tg - loss_to))
            log("    grad check: max |g_tapegrad - g_torch| = %.2e over %d params, "
                "loss diff %.2e%s" % (diff, len(g_tg), abs(loss_tg - loss_to), _flag(diff, 1e-4)))
        fns = {"tapegrad": make_mlp_step(tapegrad, values, data)[0]}
        if th is not None:
            fns["torch"] = make_mlp_step(th, values, data)[0]
        r = bench_pair(fns, warmup, repeats, min_time)
        extra["timings"] = r
        paired(r, extra)
        fwd_split(lambda lib, rec: make_mlp_step(lib, values, data, rec)[0], extra, warmup)
        record("a_scalar_mlp", "a. scalar MLP 2-16-16-1 fwd+bwd", r["tapegrad"]["median"],
               r["torch"]["median"] if th is not None else None, target_ratio=3.0,
               target_text=">= 3x", extra=extra, size=nparams)

    # ---- b. chain of small ops -------------------------------------------------------------
    def wl_chain():
        log("[b] chain: %d x (y*1.0001 + 0.001) on ones(10), then sum().backward()" % CHAIN_LEN)
        extra = {}
        step_tg, x_tg = make_chain_step(tapegrad)
        step_tg()
        g_tg = _grad_np(x_tg)
        # closed form with the float32-rounded factor; float32 accumulation adds ~1e-5 rel
        expect = float(np.float32(1.0001)) ** CHAIN_LEN
        dcf = float(np.max(np.abs(g_tg - expect)))
        extra.update(max_abs_grad_diff_closed_form=dcf)
        log("    grad check: max |g_tapegrad - %.6f (closed form)| = %.2e%s"
            % (expect, dcf, _flag(dcf, 1e-4)))
        if th is not None:
            step_to, x_to = make_chain_step(th)
            step_to()
            diff = float(np.max(np.abs(g_tg - _grad_np(x_to))))
            extra.update(max_abs_grad_diff=diff)
            log("    grad check: max |g_tapegrad - g_torch| = %.2e%s" % (diff, _flag(diff, 1e-4)))
        fns = {"tapegrad": step_tg}
        if th is not None:
            fns["torch"] = step_to
        r = bench_pair(fns, warmup, repeats, min_time)
        extra["timings"] = r
        paired(r, extra)
        fwd_split(lambda lib, rec: make_chain_step(lib, rec)[0], extra, warmup)
        record("b_chain_1000", "b. chain of 1,000 small ops", r["tapegrad"]["median"],
               r["torch"]["median"] if th is not None else None, target_ratio=3.0,
               target_text=">= 3x", extra=extra, size=CHAIN_LEN)

    # ---- c. elementwise 10**6 --------------------------------------------------------------
    def wl_elem():
        log("[c] sum(sin(x)*exp(-x**2)+tanh(x)) value+grad, %d float32 elements" % ELEM_N)
        xs = np.random.default_rng(0).standard_normal(ELEM_N).astype(np.float32)
        extra = {}
        step_tg, x_tg = make_elem_step(tapegrad, xs)
        v_tg = float(step_tg().item())
        g_tg = _grad_np(x_tg)
        x64 = xs.astype(np.float64)
        ex, th64 = np.exp(-x64 ** 2), np.tanh(x64)
        g_np = np.cos(x64) * ex - 2.0 * x64 * np.sin(x64) * ex + (1.0 - th64 ** 2)
        dnp = float(np.max(np.abs(g_tg - g_np)))
        extra.update(max_abs_grad_diff_numpy=dnp, grad_dtype=str(g_tg.dtype))
        log("    grad check: max |g_tapegrad - g_numpy_f64| = %.2e, grad dtype %s%s"
            % (dnp, g_tg.dtype, _flag(dnp, 1e-5)))
        if th is not None:
            step_to, x_to = make_elem_step(th, xs)
            v_to = float(step_to().item())
            diff = float(np.max(np.abs(g_tg - _grad_np(x_to))))
            extra.update(max_abs_grad_diff=diff, value_rel_diff=abs(v_tg - v_to) / abs(v_to))
            log("    grad check: max |g_tapegrad - g_torch| = %.2e, value rel diff %.1e%s"
                % (diff, extra["value_rel_diff"], _flag(diff, 1e-5)))
        fns = {"tapegrad": step_tg}
        if th is not None:
            fns["torch"] = step_to
        r = bench_pair(fns, max(2, warmup // 3), repeats, min_time)
        extra["timings"] = r
        paired(r, extra)
        fwd_split(lambda lib, rec: make_elem_step(lib, xs, rec)[0], extra, max(2, warmup // 3))
        record("c_elementwise_1e6", "c. elementwise 1e6 f32 value+grad", r["tapegrad"]["median"],
               r["torch"]["median"] if th is not None else None, target_ratio=1.0,
               target_text=">= 1x", extra=extra, size=ELEM_N)

    # ---- d. start-up -----------------------------------------------------------------------
    def wl_startup():
        log("[d] start-up in fresh subprocesses: import + first backward (wall = whole "
            "`python -c`, in-process = from before the import to after the backward); "
            "%d cold, %d x interleaved cached" % (cold_reps, cached_reps))
        s = bench_startup(cold_reps, cached_reps, th is not None, log)
        med = lambda recs, k: statistics.median(r[k] for r in recs) if recs else None  # noqa
        rng = lambda recs, k: [min(r[k] for r in recs), max(r[k] for r in recs)] if recs else None  # noqa
        summary = {}
        log("  medians [min - max]:")
        for k in ["cold"] + [k for k in STARTUP_KINDS if s.get(k)]:
            summary[k] = {"wall_median_s": med(s[k], "wall"), "wall_range_s": rng(s[k], "wall"),
                          "in_process_median_s": med(s[k], "total"),
                          "in_process_range_s": rng(s[k], "total"),
                          "import_median_s": med(s[k], "import"), "n": len(s[k])}
            log("    %-15s wall %s [%s - %s], in-process %s [%s - %s] (import %s), n=%d"
                % (k, _fmt_time(summary[k]["wall_median_s"]),
                   _fmt_time(summary[k]["wall_range_s"][0]),
                   _fmt_time(summary[k]["wall_range_s"][1]),
                   _fmt_time(summary[k]["in_process_median_s"]),
                   _fmt_time(summary[k]["in_process_range_s"][0]),
                   _fmt_time(summary[k]["in_process_range_s"][1]),
                   _fmt_time(summary[k]["import_median_s"]), len(s[k])))
        torch_w = summary.get("torch", {}).get("wall_median_s")
        torch_i = summary.get("torch", {}).get("in_process_median_s")
        record("d_startup_cold", "d. start-up cold (wall)", summary["cold"]["wall_median_s"],
               torch_w, target_text="(report)",
               extra={"runs": s["cold"], "summary": summary["cold"]}, n=len(s["cold"]))
        record("d_startup_cached", "d. start-up cached (wall)",
               summary["tapegrad"]["wall_median_s"], torch_w, target_abs=1.0,
               target_text="< 1 s", extra={"runs": s["tapegrad"], "summary": summary["tapegrad"]},
               n=len(s["tapegrad"]))
        record("d_startup_cached_inproc", "d. start-up cached (in-process)",
               summary["tapegrad"]["in_process_median_s"], torch_i, target_abs=1.0,
               target_text="< 1 s", n=len(s["tapegrad"]))
        results["workloads"]["d_startup_cached_numba_loader"] = {
            "label": "cached start-up with TAPEGRAD_NUMBA_FULL_REFRESH=1 (Numba's own loader)",
            "summary": summary["tapegrad-numba"], "runs": s["tapegrad-numba"]}
        results["workloads"]["d_startup_numba_floor"] = {
            "label": "import numba + first cached call of a trivial @njit(cache=True) function",
            "summary": summary["numba floor"], "runs": s["numba floor"],
            "cold_run": s["numba floor cold"]}
        if th is not None:
            results["workloads"]["d_startup_torch"] = {
                "label": "import torch + first backward", "summary": summary["torch"],
                "runs": s["torch"]}
        log("    (numba floor cold: wall %s)" % _fmt_time(s["numba floor cold"]["wall"]))


    if not args.startup_only:
        guarded("a. scalar MLP", wl_mlp)
        guarded("b. chain", wl_chain)
        guarded("c. elementwise", wl_elem)
    if not args.skip_startup:
        guarded("d. start-up", wl_startup)

    # ---- table ---------------------------------------------------------------------------
    log("")
    hdr = ("workload", "tapegrad median", "torch median", "ratio", "target", "met?")
    body = []
    for label, tg, to, ratio, tgt, met in rows:
        body.append((label, _fmt_time(tg), _fmt_time(to) if th is not None else "(absent)",
                     ("%.2fx" % ratio) if ratio is not None else "-", tgt or "-",
                     {True: "yes", False: "NO", None: "-"}[met]))
    widths = [max(len(r[i]) for r in [hdr] + body) for i in range(len(hdr))]
    line = lambda r: " | ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa
                                for i, (c, w) in enumerate(zip(r, widths)))
    log(line(hdr))
    log("-+-".join("-" * w for w in widths))
    for r in body:
        log(line(r))
    log("\nratio = torch median / tapegrad median (> 1 means tapegrad is faster). "
        "For start-up rows the torch column is `import torch` + first backward.")
    if th is None:
        log("torch was absent: only tapegrad's figures are shown; ratio targets are not judged.")
    if results["errors"]:
        log("%d workload(s) raised errors; see above and the JSON." % len(results["errors"]))

    if args.json:
        out.detail = results
        out.write(args.json)
        log("results written to %s" % os.path.relpath(args.json, os.getcwd()))
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
