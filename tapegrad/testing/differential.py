"""Differential testing of tapegrad's whole public API against PyTorch, and of
``tapegrad.func``'s compiled replay against eager tapegrad.

Programs (``tapegrad.testing._diffgen.DProgram``) are random straight-line torch code over every
public function, Tensor method and operator (signatures from ``_api_specs.py``, generated from
torch's own schemas), ending in ``backward`` / ``autograd.grad`` / a ``create_graph`` second
order. They print as runnable scripts (``import tapegrad as torch`` ...).

* ``eager_check(prog)``: run on tapegrad and torch, compare every statement (values, dtypes,
  shapes, requires_grad/is_leaf, grad_fn names, memory sharing with earlier values, in-place
  side effects, exception classes, version-counter errors) and the gradients. Without torch:
  ``self_check`` (finite differences of the loss, internal exception classes, views only
  where the schema declares one).
* ``replay_check(prog)``: record the program's loss with ``tapegrad.func.grad_and_value``,
  replay it on >= 20 adversarial variants of its inputs (noise, negation, permutations,
  ties, zeros, nan/inf, the program's own constants, sign flips ...), also under ``vmap`` and
  nested transforms, and compare with eager tapegrad (and torch) on the same inputs.
* ``programs(...)``: a hypothesis strategy of programs; ``shrink(prog, still_fails)``:
  minimal failing program.
* Command line (the long profile)::

      python -m tapegrad.testing.differential --mode eager --programs 30000 --seed 1 --out DIR
      python -m tapegrad.testing.differential --mode replay --programs 20000 --seed 2 --out DIR
      python -m tapegrad.testing.differential --report DIR   # summary + shrunk reproducers

See docs/testing.md ("Differential testing").
"""
import json
import logging
import math
import os
import subprocess
import sys
import time
import warnings

import numpy as np

from . import _api_hints as H
from ._diffgen import (DProgram, HypothesisChooser, RandomChooser, ReplayChooser,  # noqa: F401
                       SPECS, drawable_keys, generate)
from ._diffrun import CATEGORIES, SEVERE, Finding, close, compare, execute  # noqa: F401

__all__ = ["eager_check", "self_check", "replay_check", "programs", "shrink", "generate",
           "draw_program", "CATEGORIES", "REPLAY_CATEGORIES", "SILENT", "summary_lines",
           "main", "allowed_reason"]

REPLAY_CATEGORIES = {
    "replay_values": "SILENT: the replayed value differs from eager tapegrad's",
    "replay_grads": "SILENT: the replayed gradient differs from eager tapegrad's",
    "replay_no_raise": "SILENT: eager raises on these inputs, the replay returns numbers",
    "vmap_wrong": "SILENT: vmap(grad_and_value(f)) differs from eager at some point",
    "nested_wrong": "SILENT: a nested transform (grad(grad), vjp(grad), jvp(grad), "
                    "hessian) differs from eager double backward",
    "replay_raises": "the replay raises where eager does not",
    "replay_refused": "the recording is refused (NotImplementedError)",
    "vmap_raises": "vmap raises where eager does not",
    "nested_raises": "a nested transform raises where eager double backward does not",
    "eager_vs_torch": "eager tapegrad differs from torch on a replay input",
}
SILENT = ("replay_values", "replay_grads", "replay_no_raise", "vmap_wrong", "nested_wrong")


def _torch():
    try:
        import torch                                    # deferred: optional oracle
        return torch
    except ImportError:
        return None


def _tapegrad():
    import tapegrad  # deferred: the namespace under test, loaded when a run starts
    return tapegrad


def reference():
    """The library programs are drawn against: torch when installed, else tapegrad."""
    return _torch() or _tapegrad()


def draw_program(seed, *, ref=None, **kw):
    """The program drawn from seed ``seed`` (``RandomChooser``)."""
    return generate(RandomChooser(seed), ref or reference(), **kw)


def allowed_reason(f):
    """The ALLOWLIST reason covering finding ``f`` (or None)."""
    for (cat, key, sub), reason in H.ALLOWLIST.items():
        if cat != f.cat:
            continue
        if key != "*" and key != f.op and not (f.op.startswith("ops:") and key in f.op):
            continue
        if sub is not None and sub not in (f.detail or "") and sub not in (f.op or ""):
            continue
        return reason
    return None


# ================================================================ eager
def eager_check(prog, *, timeout=None, torch=None):
    """Findings (list of ``Finding``) of ``prog`` run on tapegrad against torch (or
    ``self_check`` when torch is not installed). Allowlisted findings carry ``.allowed``."""
    torch = torch or _torch()
    tg = _tapegrad()
    if torch is None:
        return self_check(prog)
    ra = execute(prog, tg, timeout=timeout)
    rb = execute(prog, torch)
    fs = compare(prog, ra, rb, anchor_lib=torch)
    for f in fs:
        f.allowed = allowed_reason(f)
    return fs


# ops that return their input itself in some cases, as torch's do (no copy to compare)
_SAME_OBJECT = {"to", "type", "type_as", "long", "float", "double", "int", "bool", "half",
                "short", "char", "byte", "cpu", "contiguous", "conj", "conj_physical",
                "resolve_conj", "resolve_neg", "positive", "detach", "view_as", "reshape",
                "reshape_as", "flatten", "ravel", "expand_as", "broadcast_to", "squeeze",
                "atleast_1d", "atleast_2d", "atleast_3d", "sum_to_size", "real", "asarray",
                "as_tensor", "requires_grad_", "retain_grad", "cartesian_prod", "nan_to_num"}
_INTERNAL = ("AxisError", "ZeroDivisionError", "AttributeError", "KeyError", "NameError",
             "UnboundLocalError", "AssertionError", "FloatingPointError", "OverflowError",
             "MemoryError", "LinAlgError", "StopIteration", "RecursionError")
_NUMPY_MSG = ("could not be broadcast", "out of bounds for array", "numpy", "ndarray",
              "object has no attribute")


def self_check(prog, *, eps=1e-6):
    """Torch-free checks of ``prog`` on tapegrad: exceptions of classes torch never raises
    for bad input (numpy's AxisError, ZeroDivisionError, AttributeError ...) or with numpy's
    messages; results sharing memory with an input where torch's schema declares no view;
    gradients of float64 programs against central finite differences (where two step sizes
    agree, i.e. away from kinks)."""
    tg = _tapegrad()
    run = execute(prog, tg)
    out = []
    for k, ev in enumerate(run.events):
        st = prog.stmts[k]
        if ev["status"] != "ok":
            if ev["exc"] in _INTERNAL or any(m in (ev["msg"] or "") for m in _NUMPY_MSG):
                out.append(Finding("exc_class", k, st.op, "internal exception %s: %s" % (
                    ev["exc"], (ev["msg"] or "")[:160]), st.phase))
            continue
        flags = "".join(o[3] for o in SPECS.get(st.op, ()))
        if st.phase == "body" and not any(c in flags for c in "viap") and \
                not st.op.startswith("op.") and st.op.split(".")[-1] not in _SAME_OBJECT:
            for e, shared in ev.get("alias", {}).items():
                if shared:
                    out.append(Finding("aliasing", k, st.op, "%s shares memory with %s (the "
                                       "schema declares no view)" % (e, sorted(shared))))
    if run.events and all(ev["status"] == "ok" for ev in run.events) and all(
            s.dtype not in ("float32", "float16") for ev in run.events
            for s in ev["snaps"].values()):
        out.extend(_fd_check(prog, eps))        # float64 throughout: differences are exact
    return out


def _fd_check(prog, eps):
    """Gradients of the program's loss against central differences (float64 inputs)."""
    tg = _tapegrad()
    src = prog.replay_source()
    if src is None:
        return []
    idx = [i for i, inp in enumerate(prog.inputs) if inp.requires_grad]
    if not idx or any(prog.inputs[i].dtype != "float64" for i in idx):
        return []
    f = _function(prog, tg)
    arrays = [np.array(i.values) for i in prog.inputs]
    if any(not np.all(np.isfinite(arrays[i])) for i in idx):
        return []
    res = _eager_loss_grads(prog, f, arrays, idx)
    if res[0] != "ok":
        return []
    _, val, grads = res
    if not np.isfinite(val):
        return []
    out = []
    for j, i in enumerate(idx):
        g = grads[j].reshape(-1)
        for m in range(arrays[i].size):
            num = []
            for h in (eps, 10 * eps):
                vals = []
                for s in (h, -h):
                    a = [np.array(x, copy=True) for x in arrays]
                    flat = a[i].reshape(-1)
                    flat[m] += s
                    r = _eager_value(prog, f, a)
                    vals.append(r)
                if any(v is None or not np.isfinite(v) for v in vals):
                    num = None
                    break
                num.append((vals[0] - vals[1]) / (2 * h))
            if num is None or abs(num[0] - num[1]) > 1e-4 * max(1.0, abs(num[0])):
                continue                                       # not smooth here
            if abs(g[m] - num[0]) > 1e-4 * max(1.0, abs(num[0])):
                out.append(Finding("grads", len(prog.stmts), "ops:" + "+".join(sorted(
                    set(prog.ops))), "d loss / d %s[%d]: %r, finite differences %r" % (
                    prog.inputs[i].name, m, float(g[m]), num[0]), "end"))
                return out
    return out


# ================================================================ replay
def _function(prog, lib):
    src = prog.replay_source()
    ns = prog.namespace(lib)
    exec(compile(src, "<replay program>", "exec"), ns)            # noqa: S102 - our source
    return ns["f"]


def _tensors(prog, lib, arrays, idx, rg):
    out = []
    for i, (inp, a) in enumerate(zip(prog.inputs, arrays)):
        t = lib.tensor(np.asarray(a), dtype=getattr(lib, inp.dtype))
        if rg and i in idx:
            t.requires_grad_(True)
        out.append(t)
    return out


def _np(t):
    return np.array(t.detach().numpy(), dtype=np.float64) if t is not None else None


def _eager_loss_grads(prog, f, arrays, idx, lib=None):
    """('ok', value, [grads]) or ('exc', class, message) of eager ``f`` on ``arrays``."""
    lib = lib or _tapegrad()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ts = _tensors(prog, lib, arrays, idx, True)
            loss = f(*ts)
            gs = lib.autograd.grad(loss, [ts[i] for i in idx], allow_unused=True)
            grads = [np.zeros(ts[i].shape) if g is None else _np(g) for i, g in zip(idx, gs)]
            return ("ok", float(_np(loss)), grads)
        except Exception as e:                                     # noqa: BLE001
            return ("exc", type(e).__name__, str(e)[:200])


def _eager_value(prog, f, arrays):
    tg = _tapegrad()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with tg.no_grad():
                return float(_np(f(*_tensors(prog, tg, arrays, (), False))))
        except Exception:                                          # noqa: BLE001
            return None


def variants(prog, n=20, seed=0):
    """At least ``n`` adversarial variants of the program's float input values: noise,
    negation, permutations (moving argmax), reversal, rounding to ties, all-equal, zeros
    (some, all), nan, +-inf, the program's own constants (clamp bounds, thresholds...),
    sign flips, scaling up and down, integers, |x|, -|x|, shifts by +-1."""
    rng = np.random.default_rng(seed)
    base = [np.array(i.values, dtype=np.float64) for i in prog.inputs]
    isf = [i.dtype.startswith("float") for i in prog.inputs]
    consts = [float(c) for c in prog.consts if isinstance(c, (int, float)) and
              not isinstance(c, bool) and math.isfinite(c)] + [0.0, 1.0, -1.0]

    def each(fn):
        out = []
        for a, f in zip(base, isf):
            if not f or a.size == 0:
                out.append(a.copy())
                continue
            out.append(np.asarray(fn(a.copy()), dtype=np.float64).reshape(a.shape))
        return out

    def some(a, vals):
        a = a.copy().reshape(-1)
        k = rng.integers(0, a.size, size=max(1, a.size // 3))
        a[k] = rng.choice(vals, size=k.size)
        return a

    def perm(a):
        return rng.permutation(a.reshape(-1))

    def swap_extrema(a):
        a = a.reshape(-1).copy()
        i, j = int(np.nanargmax(a)) if np.isfinite(a).any() else 0, \
            int(np.nanargmin(a)) if np.isfinite(a).any() else 0
        a[i], a[j] = a[j], a[i]
        return a

    fns = [
        lambda a: a + rng.normal(0, 0.1, a.shape),
        lambda a: a + rng.normal(0, 1.0, a.shape),
        lambda a: -a,
        perm,
        lambda a: a.reshape(-1)[::-1],
        lambda a: np.round(a * 2) / 2,
        lambda a: np.full(a.shape, np.nanmean(a) if np.isfinite(a).any() else 0.5),
        lambda a: some(a, [0.0]),
        lambda a: np.zeros(a.shape),
        lambda a: some(a, [np.nan]),
        lambda a: some(a, [np.inf, -np.inf]),
        lambda a: some(a, consts),
        lambda a: a * rng.choice([-1.0, 1.0], a.shape),
        lambda a: a * 10,
        lambda a: a * 1e-3,
        lambda a: np.floor(a),
        lambda a: np.abs(a),
        lambda a: -np.abs(a),
        lambda a: a + 1,
        lambda a: a - 1,
        swap_extrema,
        lambda a: np.abs(a) + 0.25,
        lambda a: some(a, consts),
    ]
    out = [each(fn) for fn in fns]
    k = len(out)
    while len(out) < n:
        out.append(each(fns[(len(out) - k) % len(fns)]))
    # float32 inputs: values representable
    for v in out:
        for j, inp in enumerate(prog.inputs):
            if inp.dtype == "float32":
                v[j] = v[j].astype(np.float32).astype(np.float64)
    return out


class _LogCount(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.n = 0
        self.msgs = []

    def emit(self, record):
        self.n += 1
        if len(self.msgs) < 5:
            self.msgs.append(record.getMessage()[:120])


def _same(x, y, dtype):
    return close(np.asarray(x), np.asarray(y), dtype)


def replay_check(prog, *, n_variants=20, seed=0, torch=None, vmap=True, nested=True,
                 stats=None):
    """Record ``prog``'s loss with ``tapegrad.func.grad_and_value`` and compare every replay
    with eager tapegrad on the same inputs (and eager tapegrad with torch, when installed).
    Returns a list of findings (categories ``REPLAY_CATEGORIES``); ``stats`` (a dict)
    collects counts (calls, replays served after re-recording, ...). ``torch=False``: do
    not compare with torch even when it is installed."""
    import tapegrad.func as tf  # deferred: the namespace under test, loaded when a run starts
    tg = _tapegrad()
    torch = _torch() if torch is None else (torch or None)      # False: without torch
    stats = stats if stats is not None else {}
    if prog.replay_source() is None:
        return []
    idx = [i for i, inp in enumerate(prog.inputs) if inp.requires_grad]
    if not idx:
        return []
    f = _function(prog, tg)
    ft = _function(prog, torch) if torch is not None else None
    ops = "ops:" + "+".join(sorted(set(prog.ops)))
    dt = {i: prog.inputs[i].dtype for i in idx}
    base = [np.array(i.values, dtype=np.float64) for i in prog.inputs]
    first = _eager_loss_grads(prog, f, base, idx)
    if first[0] != "ok":
        return []
    out = []
    argnums = tuple(idx)
    gv = tf.grad_and_value(f, argnums=argnums)
    handler = _LogCount()
    lg = logging.getLogger("tapegrad.func")
    old_level = lg.level
    lg.addHandler(handler)
    lg.setLevel(logging.DEBUG)
    inputs = [base] + variants(prog, n_variants, seed)
    ldt = prog.inputs[idx[0]].dtype
    eager = {}
    try:
        for vi, arrs in enumerate(inputs):
            stats["calls"] = stats.get("calls", 0) + 1
            e = eager[vi] = first if vi == 0 else _eager_loss_grads(prog, f, arrs, idx)
            n0 = handler.n
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    g, v = gv(*_tensors(prog, tg, arrs, idx, False))
                    r = ("ok", float(_np(v)), [_np(x) for x in g])
                except Exception as ex:                            # noqa: BLE001
                    r = ("exc", type(ex).__name__, str(ex)[:200])
            if handler.n > n0:
                stats["logged"] = stats.get("logged", 0) + 1
            where = "input %d (%s)" % (vi, "recorded" if vi == 0 else "variant %d" % vi)
            out.extend(_cmp_replay(e, r, where, ops, dt, idx, ldt, prog, arrs))
            if torch is not None and vi % 4 == 1 and e[0] == "ok":     # 1 variant in 4
                t = _eager_loss_grads(prog, ft, arrs, idx, lib=torch)
                if t[0] == "ok" and not (_same(e[1], t[1], ldt) and all(
                        _same(a, b, dt[i]) for i, a, b in zip(idx, e[2], t[2]))):
                    out.append(Finding("eager_vs_torch", vi, ops, "%s: eager %s / %s, torch "
                                       "%s / %s" % (where, e[1], _short(e[2]), t[1],
                                                    _short(t[2])), "replay"))
                elif t[0] == "exc" and e[0] == "ok":
                    pass
        if vmap:
            out.extend(_vmap_check(prog, f, inputs[:6], idx, ops, dt, ldt,
                                   [eager[i] for i in range(6)]))
        if nested and len(idx) == 1:
            out.extend(_nested_check(prog, f, inputs[:3], idx, ops, dt))
    finally:
        lg.removeHandler(handler)
        lg.setLevel(old_level)
    for fnd in out:
        fnd.phase = "replay"
        fnd.allowed = allowed_reason(fnd)
    return out


def _short(gs):
    return "[" + ", ".join(np.array2string(np.asarray(g), precision=4, threshold=6,
                                           separator=",").replace("\n", "")
                           for g in gs) + "]"


def _cmp_replay(e, r, where, ops, dt, idx, ldt, prog, arrs):
    if e[0] == "exc" and r[0] == "exc":
        return []
    if e[0] == "exc":
        return [Finding("replay_no_raise", 0, ops, "%s: eager raises %s: %s; replay returns "
                        "value %r" % (where, e[1], e[2][:100], r[1]))]
    if r[0] == "exc":
        cat = "replay_refused" if r[1] == "NotImplementedError" else "replay_raises"
        return [Finding(cat, 0, ops, "%s: %s: %s" % (where, r[1], r[2][:150]))]
    out = []
    if not _same(r[1], e[1], ldt):
        out.append(Finding("replay_values", 0, ops, "%s: replay %r, eager %r" % (
            where, r[1], e[1])))
    for i, a, b in zip(idx, r[2], e[2]):
        if a is None or b is None or a.shape != b.shape or not _same(a, b, dt[i]):
            out.append(Finding("replay_grads", 0, ops, "%s: d/d%s replay %s, eager %s" % (
                where, prog.inputs[i].name, _short([a]), _short([b]))))
            break
    return out


def _vmap_check(prog, f, inputs, idx, ops, dt, ldt, eager):
    import tapegrad.func as tf  # deferred: the namespace under test, loaded when a run starts
    tg = _tapegrad()
    pts = []
    for arrs, e in zip(inputs, eager):
        if e[0] == "ok" and all(np.all(np.isfinite(arrs[i])) for i in idx):
            pts.append((arrs, e))
    if len(pts) < 2:
        return []
    in_dims = tuple(0 if i in idx else None for i in range(len(prog.inputs)))
    batched = []
    for i, inp in enumerate(prog.inputs):
        if i in idx:
            batched.append(tg.tensor(np.stack([p[0][i] for p in pts]),
                                     dtype=getattr(tg, inp.dtype)))
        else:
            batched.append(tg.tensor(pts[0][0][i], dtype=getattr(tg, inp.dtype)))
    # non-batched inputs must be the same at every point (they are: variants keep them)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            g, v = tf.vmap(tf.grad_and_value(f, argnums=tuple(idx)), in_dims=in_dims)(*batched)
            v = _np(v)
            g = [_np(x) for x in g]
        except Exception as ex:                                    # noqa: BLE001
            cat = "vmap_raises"
            return [Finding(cat, 0, ops, "vmap: %s: %s" % (type(ex).__name__, str(ex)[:150]))]
    for p, (arrs, e) in enumerate(pts):
        bad = not _same(v[p], e[1], ldt) or any(
            not _same(g[j][p], e[2][j], dt[i]) for j, i in enumerate(idx))
        if bad:
            return [Finding("vmap_wrong", 0, ops, "vmap point %d: value %r grads %s; eager %r "
                            "%s" % (p, float(v[p]), _short([gg[p] for gg in g]), e[1],
                                    _short(e[2])))]
    return []


def _nested_check(prog, f, inputs, idx, ops, dt):
    """grad(grad), vjp(grad), jvp(grad), hessian against eager double backward."""
    import tapegrad.func as tf  # deferred: the namespace under test, loaded when a run starts
    tg = _tapegrad()
    i0 = idx[0]
    out = []
    for vi, arrs in enumerate(inputs):
        if not np.all(np.isfinite(arrs[i0])):
            continue
        ts = _tensors(prog, tg, arrs, idx, True)
        x = ts[i0]
        w = tg.arange(1., x.numel() + 1, dtype=x.dtype).reshape(x.shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                loss = f(*ts)
                g, = tg.autograd.grad(loss, [x], create_graph=True)
                if not g.requires_grad:
                    continue
                hv, = tg.autograd.grad((g * w).sum(), [x], allow_unused=True)
                hv = np.zeros(x.shape) if hv is None else _np(hv)
                g = _np(g)
            except Exception:                                      # noqa: BLE001
                continue

        def fx(xx, ts=ts):
            a = list(ts)
            a[i0] = xx
            return f(*a)
        xs = tg.tensor(arrs[i0], dtype=x.dtype)
        checks = {
            "grad(grad(f) . w)": lambda: tf.grad(lambda xx: (tf.grad(fx)(xx) * w).sum())(xs),
            "vjp(grad(f))(w)": lambda: tf.vjp(tf.grad(fx), xs)[1](w)[0],
            "jvp(grad(f), w)": lambda: tf.jvp(tf.grad(fx), (xs,), (w,))[1],
            "hessian(f) @ w": lambda: (tf.hessian(fx)(xs).reshape(x.numel(), x.numel()) @
                                       w.reshape(-1)).reshape(x.shape),
        }
        for name, fn in checks.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    r = _np(fn())
                except Exception as ex:                            # noqa: BLE001
                    out.append(Finding("nested_raises", 0, ops, "%s at input %d: %s: %s" % (
                        name, vi, type(ex).__name__, str(ex)[:120])))
                    continue
            if r.shape != hv.shape or not _same(r, hv, dt[i0]):
                out.append(Finding("nested_wrong", 0, ops, "%s at input %d: %s, eager double "
                                   "backward %s" % (name, vi, _short([r]), _short([hv]))))
        if out:
            return out
    return out


# ================================================================ hypothesis and shrinking
def programs(*, ref=None, **kw):
    """Hypothesis strategy of ``DProgram``s (drawn against ``ref``: torch when installed)."""
    from hypothesis import strategies as st

    @st.composite
    def _progs(draw):
        return generate(HypothesisChooser(draw), ref or reference(), **kw)
    return _progs()


def _same_failure(orig, f):
    if f.cat != orig.cat:
        return False
    if orig.op.startswith("ops:"):
        return f.op.startswith("ops:") and set(f.op[4:].split("+")) <= set(orig.op[4:].split("+"))
    return f.op == orig.op


def shrink(prog, finding, check=None, *, budget=300, ref=None, **gen_kw):
    """The smallest program (in its choice sequence) still giving a finding of
    ``finding``'s category at the same op. ``check(prog) -> findings`` (default
    ``eager_check``). Returns (program, finding)."""
    ref = ref or reference()
    check = check or eager_check
    seq = list(prog.choices)
    best, bestf = prog, finding
    calls = [0]

    def attempt(s):
        if calls[0] >= budget:
            return None
        calls[0] += 1
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                p = generate(ReplayChooser(s), ref, **gen_kw)
                for fnd in check(p):
                    if fnd.allowed is None and _same_failure(finding, fnd):
                        return p, fnd
        except Exception:                                          # noqa: BLE001
            return None
        return None

    # whole statements first (the choice blocks between marks), last to first
    marks = list(getattr(prog, "marks", ()))
    j = len(marks) - 2
    while j >= 0 and calls[0] < budget:
        a, b = marks[j], marks[j + 1]
        r = attempt(seq[:a] + seq[b:]) if b > a else None
        if r is not None:
            best, bestf = r
            seq = list(best.choices)
            marks = list(getattr(best, "marks", ()))
            j = min(j, len(marks) - 2)
        j -= 1
    improved = True
    while improved and calls[0] < budget:
        improved = False
        for size in (16, 8, 4, 2, 1):
            i = 0
            while i < len(seq) and calls[0] < budget:
                cand = seq[:i] + seq[i + size:]
                r = attempt(cand)
                if r is not None:
                    best, bestf = r
                    seq = list(best.choices)
                    improved = True
                else:
                    i += size
        i = 0
        while i < len(seq) and calls[0] < budget:
            if seq[i] != 0:
                for v in (0, seq[i] // 2, seq[i] - 1):
                    if v >= seq[i]:
                        continue
                    cand = list(seq)
                    cand[i] = v
                    r = attempt(cand)
                    if r is not None:
                        best, bestf = r
                        seq = list(best.choices)
                        improved = True
                        break
            i += 1
    return best, bestf


# ================================================================ the long profile
def _worker(mode, start, count, out_path, seed, timeout):
    """Run programs [start, start + count) of stream ``seed``; one JSON line each."""
    torch = _torch()
    stats = {}
    with open(out_path, "w") as fh:
        for i in range(start, start + count):
            s = seed * 10_000_000 + i
            rec = {"seed": s, "i": i}
            t0 = time.time()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    p = regenerate(mode, s)
                    if mode == "eager":
                        fs = eager_check(p, timeout=timeout, torch=torch)
                    else:
                        fs = replay_check(p, seed=s, torch=torch, stats=stats)
                rec["ops"] = sorted(set(p.ops))
                rec["n_stmts"] = len(p.ops)
                rec["findings"] = [f.as_dict() for f in fs]
            except Exception as e:                                 # noqa: BLE001
                rec["error"] = "%s: %s" % (type(e).__name__, str(e)[:200])
            rec["t"] = round(time.time() - t0, 4)
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            if any(f.get("cat") == "timeout" for f in rec.get("findings", ())):
                break                              # the process state may be damaged
        fh.write(json.dumps({"stats": stats}) + "\n")


def _run_watched(cmd, path, start, seed, stall):
    """Run a worker; kill it when its output has not grown for ``stall`` seconds (a hang
    inside compiled code, which no signal interrupts) and record the program it was on as
    a ``timeout``."""
    proc = subprocess.Popen(cmd)
    last, since = None, time.time()
    while proc.poll() is None:
        time.sleep(5)
        size = os.path.getsize(path) if os.path.exists(path) else 0
        if size != last:
            last, since = size, time.time()
        elif time.time() - since > stall:
            proc.kill()
            proc.wait()
            nxt = _done_upto(path)
            nxt = start if nxt is None else nxt
            with open(path, "a") as fh:
                fh.write(json.dumps({"seed": seed * 10_000_000 + nxt, "i": nxt, "findings": [
                    {"cat": "timeout", "stmt": -1, "op": "hang", "detail": "no result after "
                     "%d s: the worker was killed" % stall, "phase": "body",
                     "allowed": None}], "t": stall}) + "\n")
            return


def run_long(mode, n, seed, out_dir, chunk=500, timeout=120, stall=600):
    """Run ``n`` programs in chunks, each in a fresh ``nice``d subprocess (a timed-out
    statement can leave a process in a bad state: its chunk stops and the next chunk starts
    where it stopped; a worker making no progress for ``stall`` seconds is killed and its
    program recorded as a ``timeout``; a crash skips the program it was on). Resumes: every
    program recorded in ``out_dir`` counts as done."""
    os.makedirs(out_dir, exist_ok=True)
    nxt = _next_program(out_dir, mode, seed)
    while nxt < n:
        end = min((nxt // chunk + 1) * chunk, n)
        path = os.path.join(out_dir, "%s_s%d_%07d.jsonl" % (mode, seed, nxt))
        cmd = ["nice", "-n", "10", sys.executable, "-m", "tapegrad.testing.differential",
               "--worker", "--mode", mode, "--start", str(nxt), "--count", str(end - nxt),
               "--seed", str(seed), "--timeout", str(timeout), "--file", path]
        _run_watched(cmd, path, nxt, seed, stall)
        after = _next_program(out_dir, mode, seed)
        if after == nxt:                    # nothing recorded: skip the program it was on
            with open(path, "a") as fh:
                fh.write(json.dumps({"seed": seed * 10_000_000 + nxt, "i": nxt,
                                     "error": "worker crashed"}) + "\n")
            after = nxt + 1
        nxt = after


def _next_program(out_dir, mode, seed):
    """One past the highest program index recorded for (mode, seed) in ``out_dir``."""
    best = 0
    pre = "%s_s%d_" % (mode, seed)
    for name in os.listdir(out_dir):
        if name.startswith(pre) and name.endswith(".jsonl"):
            d = _done_upto(os.path.join(out_dir, name))
            if d is not None:
                best = max(best, d)
    return best


def _done_upto(path):
    """One past the last program index recorded in ``path`` (None: no file)."""
    if not os.path.exists(path):
        return None
    last = None
    with open(path) as fh:
        for line in fh:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "i" in r:
                last = r["i"]
    return None if last is None else last + 1


def load(out_dir):
    recs = []
    for name in sorted(os.listdir(out_dir)):
        if not name.endswith(".jsonl"):
            continue
        mode = name.split("_")[0]
        seen = set()
        with open(os.path.join(out_dir, name)) as fh:
            for line in fh:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if "i" not in r or (mode, r["seed"]) in seen:
                    continue
                seen.add((mode, r["seed"]))
                r["mode"] = mode
                recs.append(r)
    return recs


def summary(recs):
    """{mode: {"programs": n, "categories": {cat: programs}, "allowed": {...}, "distinct":
    {(cat, op): [count, first seed, detail]}}}."""
    res = {}
    for r in recs:
        m = res.setdefault(r["mode"], {"programs": 0, "errors": 0, "categories": {},
                                       "allowed": {}, "distinct": {}, "time": 0.0,
                                       "statements": 0})
        m["programs"] += 1
        m["time"] += r.get("t", 0)
        m["statements"] += r.get("n_stmts", 0)
        if "error" in r:
            m["errors"] += 1
            continue
        cats, allowed = set(), set()
        for f in r.get("findings", ()):
            # the allowlist as it is now (it may have grown since the run)
            fo = Finding(f["cat"], f["stmt"], f["op"], f["detail"], f.get("phase", "body"))
            f["allowed"] = allowed_reason(fo)
            if f.get("allowed"):
                allowed.add(f["cat"])
                continue
            cats.add(f["cat"])
            d = m["distinct"].setdefault((f["cat"], f["op"]), [0, r["seed"], f["detail"]])
            d[0] += 1
        for c in cats:
            m["categories"][c] = m["categories"].get(c, 0) + 1
        for c in allowed:
            m["allowed"][c] = m["allowed"].get(c, 0) + 1
    return res


def summary_lines(res):
    lines = []
    allcats = dict(CATEGORIES)
    allcats.update(REPLAY_CATEGORIES)
    for mode, m in sorted(res.items()):
        lines.append("%s: %d programs (%d generator/runner errors), %d statements, %.0f s" % (
            mode, m["programs"], m["errors"], m["statements"], m["time"]))
        for c in allcats:
            if c in m["categories"] or c in m["allowed"]:
                nd = len([k for k in m["distinct"] if k[0] == c])
                lines.append("  %-22s %6d programs  %4d distinct (cat, op)  %s%s" % (
                    c, m["categories"].get(c, 0), nd, allcats[c],
                    "  [+%d allowlisted]" % m["allowed"][c] if c in m["allowed"] else ""))
    return lines


_REPLAY_GEN = None


def _replay_gen_kw():
    global _REPLAY_GEN
    if _REPLAY_GEN is None:
        _REPLAY_GEN = dict(keys=[k for k in drawable_keys() if k not in H.RANDOM],
                           keep_errors=0.0, endings=("grad",), float_only=True)
    return _REPLAY_GEN


def regenerate(mode, seed):
    """The program a long run drew for ``seed``."""
    if mode == "replay":
        return generate(RandomChooser(seed), reference(), **_replay_gen_kw())
    return generate(RandomChooser(seed), reference())


def catalogue(out_dir, *, budget=150, modes=("eager", "replay"), log=print):
    """Distinct findings of a results directory, each shrunk to a minimal program:
    a list of dicts (mode, cat, op, count, seed, detail, source, allowed)."""
    recs = load(out_dir)
    res = summary(recs)
    out = []
    for mode in modes:
        if mode not in res:
            continue
        items = sorted(res[mode]["distinct"].items(), key=lambda kv: -kv[1][0])
        for (cat, op), (count, seed, detail) in items:
            entry = {"mode": mode, "cat": cat, "op": op, "count": count, "seed": seed,
                     "detail": detail}
            try:
                p = regenerate(mode, seed)
                if mode == "eager":
                    fs = eager_check(p)
                    check, kw = eager_check, {}
                else:
                    fs = replay_check(p, seed=seed)
                    check = (lambda q, s=seed: replay_check(q, seed=s))
                    kw = _replay_gen_kw()
                f0 = next((f for f in fs if (f.cat, f.op) == (cat, op)), None)
                if f0 is None:
                    entry["source"] = p.source()
                    entry["note"] = "did not reproduce on regeneration"
                else:
                    t0 = time.time()
                    small, f1 = shrink(p, f0, check, budget=budget, **kw)
                    entry.update(source=small.source(), detail_min=f1.detail,
                                 op_min=f1.op, shrink_s=round(time.time() - t0, 1))
            except Exception as e:                                 # noqa: BLE001
                entry["note"] = "shrinking failed: %s: %s" % (type(e).__name__, str(e)[:120])
            log("%s %s %s (%d)" % (mode, cat, op, count))
            out.append(entry)
    return out, res


_MODULES = (("op.", "operators and indexing"), ("Tensor.", "Tensor methods"),
            ("F.", "torch.nn.functional"), ("linalg.", "torch.linalg"),
            ("special.", "torch.special"), ("torch.", "torch"), ("ops:", "whole programs"))


def _module(op):
    for p, name in _MODULES:
        if op.startswith(p):
            return name
    return "other"


def merge_entries(entries):
    """Entries that shrank to the same (mode, category, op) are one finding: counts and seeds
    summed, the shortest reproducer kept."""
    groups = {}
    for e in entries:
        k = (e["mode"], e["cat"], e.get("op_min", e["op"]))
        g = groups.get(k)
        if g is None:
            groups[k] = dict(e, seeds=[e["seed"]])
            continue
        g["count"] += e["count"]
        g["seeds"].append(e["seed"])
        if e.get("source") and (not g.get("source") or len(e["source"]) < len(g["source"])):
            for f in ("source", "detail", "detail_min", "seed", "note"):
                if f in e:
                    g[f] = e[f]
    return sorted(groups.values(), key=lambda e: -e["count"])


CATALOGUE_HEADER = """# Differential findings: tapegrad against PyTorch 2.13, whole public API

Generated by `python -m tapegrad.testing.differential --report DIR --catalogue
tests/differential_findings` from the long profile (docs/testing.md, "Differential testing");
the triage section at the top is written by hand. Every entry is one distinct (category, op)
after shrinking: the op at fault (`Tensor.add_`, `op.binary%`, or `ops:a+b` when the
difference shows in the gradients of a program using those ops), how many programs of the
run showed it, the seed that regenerates the first one (`python -m
tapegrad.testing.differential --mode eager --show SEED`), the difference (tapegrad's value,
then torch's) and the minimal program, which runs as printed (`import torch` instead of
`import tapegrad as torch` gives torch's answer). Replay entries (mode `replay`) compare
`tapegrad.func.grad_and_value` replays (and vmap / nested transforms) with eager tapegrad on
the variant inputs named in the message.

`tests/test_differential.py` treats the (category, op) pairs listed here as known: a new one
fails the quick profile.
"""


def write_catalogue(entries, res, md_path, json_path, header=CATALOGUE_HEADER):
    """tests/differential_findings.{md,json}: every distinct finding with its minimal
    runnable reproducer, grouped by category and by module, with counts."""
    entries = merge_entries(entries)
    with open(json_path, "w") as fh:
        json.dump({"summary": {m: {k: v for k, v in r.items() if k != "distinct"}
                               for m, r in res.items()}, "findings": entries}, fh, indent=1)
    cats = dict(CATEGORIES)
    cats.update(REPLAY_CATEGORIES)
    order = list(SEVERE) + [c for c in SILENT] + [c for c in cats if c not in SEVERE and
                                                  c not in SILENT]
    lines = [header, "", "## Summary", "", "```"] + summary_lines(res) + ["```", ""]
    n = 0
    for cat in order:
        es = [e for e in entries if e["cat"] == cat]
        if not es:
            continue
        lines += ["## %s: %s (%d distinct)" % (cat, cats[cat], len(es)), ""]
        for mod in sorted({_module(e.get("op_min", e["op"])) for e in es}):
            group = [e for e in es if _module(e.get("op_min", e["op"])) == mod]
            lines += ["### %s" % mod, ""]
            for e in sorted(group, key=lambda e: -e["count"]):
                n += 1
                lines.append("%d. **%s** (%s, %d programs; seed %d)" % (
                    n, e.get("op_min", e["op"]), e["mode"], e["count"], e["seed"]))
                lines.append("   %s" % (e.get("detail_min") or e["detail"]).replace(
                    "\n", " "))
                if e.get("note"):
                    lines.append("   (%s)" % e["note"])
                if e.get("source"):
                    lines += ["", "   ```python"] + ["   " + ln for ln in
                                                   e["source"].splitlines()] + ["   ```"]
                lines.append("")
    with open(md_path, "w") as fh:
        fh.write("\n".join(lines) + "\n")


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m tapegrad.testing.differential",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=("eager", "replay"), default="eager")
    ap.add_argument("--programs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="differential_results")
    ap.add_argument("--chunk", type=int, default=500)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--report", metavar="DIR", help="print the summary of a results directory")
    ap.add_argument("--catalogue", metavar="PREFIX", help="with --report: shrink every distinct "
                    "finding and write PREFIX.md and PREFIX.json")
    ap.add_argument("--budget", type=int, default=150, help="shrinking attempts per finding")
    ap.add_argument("--show", type=int, metavar="SEED", help="print the program of a seed")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--file", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        _worker(a.mode, a.start, a.count, a.file, a.seed, a.timeout)
        return 0
    if a.show is not None:
        p = regenerate(a.mode, a.show)
        print(p.source())
        for f in (eager_check(p) if a.mode == "eager" else replay_check(p, seed=a.show)):
            print("#", f)
        return 0
    if a.report:
        if a.catalogue:
            entries, res = catalogue(a.report, budget=a.budget,
                                     log=lambda m: print(m, flush=True))
            write_catalogue(entries, res, a.catalogue + ".md", a.catalogue + ".json")
            return 0
        for line in summary_lines(summary(load(a.report))):
            print(line)
        return 0
    run_long(a.mode, a.programs, a.seed, a.out, a.chunk, a.timeout)
    for line in summary_lines(summary(load(a.out))):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
