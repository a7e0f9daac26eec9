"""Running differential programs and comparing two runs (tapegrad against torch).

``execute(prog, lib)`` runs a ``DProgram`` statement by statement and records, after each
statement, a snapshot of every live value (shape, dtype, requires_grad, is_leaf, grad_fn
name, contiguity, data, and which earlier values it shares memory with), or the exception
the statement raised (the run stops there). ``compare(prog, tg_run, ref_run)`` turns two runs
into findings, each with a category, the statement and the spec key at fault.

Only the public API of both libraries is used.
"""
import math
import re
import warnings

import numpy as np

from ._api_hints import ALLOWLIST, RANDOM, SIGN_AMBIGUOUS

__all__ = ["execute", "compare", "Finding", "CATEGORIES", "close", "snapshot"]

# category -> one-line meaning (the order of the summary)
CATEGORIES = {
    "values": "wrong values (a result differs from torch's on the same inputs)",
    "side_effects": "wrong values of an earlier tensor after a statement (in-place/aliasing)",
    "grads": "wrong gradients (.grad / autograd.grad / second order)",
    "grads_meta": "gradient None-ness, shape or dtype differs",
    "version_undetected": "torch raises 'modified by an inplace operation', tapegrad does not",
    "shape": "wrong shapes",
    "dtype": "wrong dtypes",
    "requires_grad": "requires_grad / is_leaf differs",
    "aliasing": "a result shares memory with an input where torch's does not (or vice versa)",
    "result_type": "the result's Python structure/type differs (tuple vs tensor, named tuple)",
    "grad_fn": "grad_fn name differs",
    "exc_class": "both raise, different exception classes",
    "tapegrad_raises": "tapegrad raises where torch does not",
    "not_implemented": "tapegrad raises NotImplementedError where torch does not",
    "torch_raises": "torch raises, tapegrad does not (forward)",
    "torch_backward_raises": "torch's backward raises, tapegrad's does not",
    "layout": "is_contiguous() differs (affects later .view() errors)",
    "timeout": "the statement did not finish in time",
}
SEVERE = ("values", "side_effects", "grads", "version_undetected")


class Finding:
    __slots__ = ("cat", "stmt", "op", "detail", "phase", "allowed")

    def __init__(self, cat, stmt, op, detail, phase="body"):
        self.cat = cat
        self.stmt = stmt
        self.op = op
        self.detail = detail
        self.phase = phase
        self.allowed = None

    def key(self):
        return (self.cat, self.op)

    def __repr__(self):
        return "Finding(%s, stmt %s, %s: %s)" % (self.cat, self.stmt, self.op, self.detail)

    def as_dict(self):
        return {"cat": self.cat, "stmt": self.stmt, "op": self.op, "detail": self.detail,
                "phase": self.phase, "allowed": self.allowed}


# ================================================================ snapshots
class TSnap:
    """Snapshot of one tensor."""
    __slots__ = ("shape", "dtype", "rg", "leaf", "gfn", "data", "mem", "contig")

    def __init__(self, t):
        self.shape = tuple(int(s) for s in t.shape)
        self.dtype = str(t.dtype).replace("torch.", "")
        self.rg = bool(t.requires_grad)
        self.leaf = bool(t.is_leaf)
        g = t.grad_fn
        self.gfn = None if g is None else _node_name(g)
        try:
            self.contig = bool(t.is_contiguous())
        except Exception:                                         # noqa: BLE001
            self.contig = None
        try:
            arr = t.detach().numpy()
            self.mem = arr
            self.data = np.array(arr, copy=True)
        except Exception:                                         # noqa: BLE001
            self.mem = None
            self.data = None


def _node_name(g):
    try:
        return g.name()
    except Exception:                                             # noqa: BLE001
        return type(g).__name__


def snapshot(o, T):
    """Normalised form of a statement's result (tensors as TSnap)."""
    if isinstance(o, T):
        return TSnap(o)
    if o is None or isinstance(o, (bool, str)):
        return o
    if isinstance(o, (int, np.integer)):
        return int(o)
    if isinstance(o, (float, np.floating)):
        return ("float", float(o))
    if isinstance(o, np.ndarray):
        return ("ndarray", np.array(o, copy=True))
    tn = type(o).__name__
    if tn == "Size":
        return ("Size", tuple(int(x) for x in o))
    if isinstance(o, (tuple, list)):
        kind = "list" if isinstance(o, list) else ("tuple" if type(o) is tuple else
                                                  "named:" + tn)
        return (kind, tuple(snapshot(x, T) for x in o))
    if tn == "dtype":
        return ("dtype", str(o).replace("torch.", ""))
    if tn == "device":
        return ("device", str(o))
    if tn == "layout":
        return ("layout", str(o))
    if hasattr(o, "next_functions"):
        return ("node", _node_name(o))
    return ("object", tn)


# ================================================================ execution
class Run:
    def __init__(self):
        self.input_error = None
        self.events = []            # per statement: dict(status, exc, msg, snaps, result, alias)
        self.observed = None        # expr -> snapshot after the ending
        self.observe_error = None


def _compiled(prog):
    c = getattr(prog, "_compiled", None)
    if c is None:
        c = {"inputs": [compile(i.source(), "<input>", "exec") for i in prog.inputs],
             "stmts": [compile(s.code, "<stmt %d>" % k, "exec")
                       for k, s in enumerate(prog.stmts)],
             "exprs": {}}
        prog._compiled = c
    return c


def _expr_code(prog, e):
    c = _compiled(prog)["exprs"]
    if e not in c:
        c[e] = compile(e, "<expr>", "eval")
    return c[e]


def execute(prog, lib, *, timeout=None):
    """Run ``prog`` on ``lib``; returns a ``Run``."""
    comp = _compiled(prog)
    ns = prog.namespace(lib)
    T = lib.Tensor
    run = Run()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for code, inp in zip(comp["inputs"], prog.inputs):
            try:
                exec(code, ns)                                    # noqa: S102 - our source
            except Exception as e:                                # noqa: BLE001
                run.input_error = (inp.name, type(e).__name__, str(e))
                return run
        live = [i.name for i in prog.inputs]
        for k, st in enumerate(prog.stmts):
            ev = {"status": "ok", "exc": None, "msg": None}
            try:
                _run_with_timeout(comp["stmts"][k], ns, timeout)
            except _Timeout:
                ev.update(status="exc", exc="Timeout", msg="statement timed out")
            except RecursionError as e:
                ev.update(status="exc", exc=type(e).__name__, msg=str(e)[:300])
            except Exception as e:                                # noqa: BLE001
                ev.update(status="exc", exc=type(e).__name__, msg=str(e)[:500])
            if ev["status"] == "ok":
                if st.target is not None and st.target in ns:
                    ev["result"] = snapshot(ns[st.target], T)
                for e in st.outs:
                    if e not in live:
                        live.append(e)
                snaps = {}
                for e in live:
                    try:
                        v = eval(_expr_code(prog, e), ns)         # noqa: S307 - our source
                    except Exception:                             # noqa: BLE001
                        continue
                    if isinstance(v, T):
                        snaps[e] = TSnap(v)
                ev["snaps"] = snaps
                ev["alias"] = {e: _shares(snaps, e, live) for e in st.outs if e in snaps}
            run.events.append(ev)
            if ev["status"] != "ok":
                return run
        obs = {}
        for e in prog.observe:
            try:
                obs[e] = snapshot(eval(_expr_code(prog, e), ns), T)   # noqa: S307
            except Exception as ex:                               # noqa: BLE001
                run.observe_error = (e, type(ex).__name__, str(ex)[:300])
        run.observed = obs
    return run


def _shares(snaps, e, live):
    a = snaps[e].mem
    if a is None or a.size == 0:
        return frozenset()
    out = set()
    for o in live:
        if o == e or o not in snaps:
            continue
        b = snaps[o].mem
        if b is None or b.size == 0:
            continue
        if np.may_share_memory(a, b) and np.shares_memory(a, b, max_work=10000):
            out.add(o)
    return frozenset(out)


class _Timeout(Exception):
    pass


def _run_with_timeout(code, ns, timeout):
    if not timeout:
        exec(code, ns)                                            # noqa: S102
        return
    import signal

    def handler(signum, frame):
        raise _Timeout()
    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        exec(code, ns)                                            # noqa: S102
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


# ================================================================ comparison
TOL = {"float64": (1e-7, 1e-9), "float32": (2e-4, 2e-5), "float16": (1e-2, 1e-3)}


def close(a, b, dtype):
    """Arrays equal as torch results: same shape, nan where nan, same infinities, finite
    values within the dtype's tolerance (relative, plus absolute scaled by the largest
    magnitude), integers and bools exact. Signed zeros are not distinguished."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biu" and b.dtype.kind in "biu":
        return bool(np.array_equal(a, b))
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    an, bn = np.isnan(a), np.isnan(b)
    if not np.array_equal(an, bn):
        return False
    ai, bi = np.isinf(a), np.isinf(b)
    if not np.array_equal(ai, bi) or not np.array_equal(a[ai], b[bi]):
        return False
    fin = ~(an | ai)
    if not fin.any():
        return True
    rtol, atol = TOL.get(dtype, (1e-7, 1e-9))
    fa, fb = a[fin], b[fin]
    scale = max(1.0, float(np.max(np.abs(fb))))
    return bool(np.all(np.abs(fa - fb) <= rtol * np.abs(fb) + atol * scale))


_ORDER = ("float16", "float32", "float64")


def _looser(dtype, tol):
    """The looser of two dtypes' tolerances (None: dtype's own)."""
    if tol is None or dtype not in TOL:
        return dtype if tol is None or tol not in TOL else (tol if dtype not in TOL else dtype)
    return tol if _ORDER.index(tol) < _ORDER.index(dtype) else dtype


def _loosest(*runs):
    """The least precise float dtype among the values of the runs (None if none)."""
    seen = set()
    for r in runs:
        for ev in r.events:
            for s in ev.get("snaps", {}).values():
                seen.add(s.dtype)
    for d in _ORDER:
        if d in seen:
            return d
    return None


def _bit_equal(a, b):
    if a is None or b is None:
        return False
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _fmt(a, limit=120):
    s = np.array2string(np.asarray(a), precision=6, threshold=20, separator=", ")
    s = " ".join(s.split())
    return s if len(s) <= limit else s[:limit] + "..."


def _cmp_tensor(x, y, where, out, stmt, op, full=True, tol=None):
    """Compare TSnaps x (tapegrad) and y (torch); append findings; True when the data
    differ (or shape/dtype). ``tol``: the dtype whose tolerance applies (the least precise
    float dtype of the program: float32 rounding reaches float64 results through
    promotion)."""
    bad = False
    if x.shape != y.shape:
        out.append(Finding("shape", stmt, op, "%s: shape %s, torch %s" % (where, x.shape,
                                                                         y.shape)))
        return True
    if x.dtype != y.dtype:
        out.append(Finding("dtype", stmt, op, "%s: dtype %s, torch %s" % (where, x.dtype,
                                                                         y.dtype)))
        bad = True
    if x.data is not None and y.data is not None and not close(
            x.data, y.data, _looser(y.dtype, tol)):
        out.append(Finding("values", stmt, op, "%s: %s, torch %s" % (
            where, _fmt(x.data), _fmt(y.data))))
        bad = True
    if not full:
        return bad
    if (x.rg, x.leaf) != (y.rg, y.leaf):
        out.append(Finding("requires_grad", stmt, op, "%s: requires_grad=%s is_leaf=%s, "
                           "torch %s %s" % (where, x.rg, x.leaf, y.rg, y.leaf)))
        bad = True
    if x.gfn != y.gfn:
        out.append(Finding("grad_fn", stmt, op, "%s: %s, torch %s" % (where, x.gfn, y.gfn)))
    if x.contig is not None and y.contig is not None and x.contig != y.contig and \
            int(np.prod(y.shape)) > 1:
        out.append(Finding("layout", stmt, op, "%s: is_contiguous %s, torch %s" % (
            where, x.contig, y.contig)))
    return bad


def _cmp_obj(x, y, where, out, stmt, op, tol=None):
    """Compare normalised non-tensor results; True when they differ."""
    if isinstance(x, TSnap) and isinstance(y, TSnap):
        return _cmp_tensor(x, y, where, out, stmt, op, tol=tol)
    if isinstance(x, TSnap) or isinstance(y, TSnap):
        out.append(Finding("result_type", stmt, op, "%s: %s, torch %s" % (
            where, _kind(x), _kind(y))))
        return True
    if isinstance(x, tuple) and isinstance(y, tuple) and len(x) == 2 and len(y) == 2 and \
            isinstance(x[0], str) and isinstance(y[0], str):
        if x[0] != y[0] and not (x[0].startswith(("tuple", "named:", "list")) and
                                 y[0].startswith(("tuple", "named:", "list"))):
            out.append(Finding("result_type", stmt, op, "%s: %s, torch %s" % (
                where, x[0], y[0])))
            return True
        if x[0] in ("tuple", "list") or x[0].startswith("named:"):
            if x[0] != y[0]:
                out.append(Finding("result_type", stmt, op, "%s: %s, torch %s" % (
                    where, x[0], y[0])))
            if len(x[1]) != len(y[1]):
                out.append(Finding("result_type", stmt, op, "%s: %d items, torch %d" % (
                    where, len(x[1]), len(y[1]))))
                return True
            bad = False
            for i, (a, b) in enumerate(zip(x[1], y[1])):
                bad |= _cmp_obj(a, b, "%s[%d]" % (where, i), out, stmt, op, tol)
            return bad
        if x[0] == "float":
            if not close(np.array(x[1]), np.array(y[1]), _looser("float64", tol)):
                out.append(Finding("values", stmt, op, "%s: %r, torch %r" % (where, x[1], y[1])))
                return True
            return False
        if x[0] == "ndarray":
            if not close(x[1], y[1], str(y[1].dtype)):
                out.append(Finding("values", stmt, op, "%s: %s, torch %s" % (
                    where, _fmt(x[1]), _fmt(y[1]))))
                return True
            return False
        if x != y:
            out.append(Finding("values", stmt, op, "%s: %r, torch %r" % (where, x, y)))
            return True
        return False
    if type(x) is not type(y) and not (isinstance(x, (int, float)) and isinstance(
            y, (int, float)) and not isinstance(x, bool) and not isinstance(y, bool)):
        out.append(Finding("result_type", stmt, op, "%s: %s %r, torch %s %r" % (
            where, type(x).__name__, x, type(y).__name__, y)))
        return True
    if x != y:
        out.append(Finding("values", stmt, op, "%s: %r, torch %r" % (where, x, y)))
        return True
    return False


def _kind(x):
    if isinstance(x, TSnap):
        return "Tensor%s" % (x.shape,)
    if isinstance(x, tuple) and x and isinstance(x[0], str):
        return x[0]
    return type(x).__name__


_VERSION = "modified by an inplace operation"


def _names(code):
    return set(re.findall(r"\b([A-Za-z_]\w*)\b", code))


def compare(prog, a, b, *, anchor_lib=None):
    """Findings of run ``a`` (tapegrad) against run ``b`` (torch) of ``prog``.
    ``anchor_lib``: torch, to excuse value differences that come from inputs differing by
    rounding (the statement is re-run on torch with tapegrad's input values)."""
    out = []
    if a.input_error or b.input_error:
        if bool(a.input_error) != bool(b.input_error) or a.input_error[1] != b.input_error[1]:
            out.append(Finding("tapegrad_raises" if a.input_error else "torch_raises", -1,
                               "torch.tensor", "input: %s, torch %s" % (a.input_error,
                                                                        b.input_error)))
        return out
    taint = set()
    prev_a, prev_b = {}, {}
    tol = _loosest(a, b)
    n = min(len(a.events), len(b.events))
    for k in range(n):
        st = prog.stmts[k]
        ea, eb = a.events[k], b.events[k]
        op = st.op if st.phase == "body" else ("ops:" + "+".join(sorted(set(prog.ops))))
        tainted = bool(set(st.reads) & taint) or (st.phase != "body" and bool(taint))
        local = []
        if ea["status"] != "ok" or eb["status"] != "ok":
            local.extend(_cmp_exc(ea, eb, k, op, st.phase))
            if not tainted:
                out.extend(local)
            return out
        # the statement's result object
        if st.op in RANDOM:
            pass
        elif "result" in eb or "result" in ea:
            if _cmp_obj(ea.get("result"), eb.get("result"), st.target or "result", local, k,
                        op, tol):
                if st.op in SIGN_AMBIGUOUS:     # values up to sign, layout: the snaps below
                    local = [f for f in local if f.cat not in ("values", "layout")]
                if local:
                    taint.update(st.outs)
        sa, sb = ea["snaps"], eb["snaps"]
        for e, y in sb.items():
            x = sa.get(e)
            if x is None:
                local.append(Finding("result_type", k, op, "%s: missing in tapegrad" % e))
                taint.add(e)
                continue
            if e in taint:
                continue
            is_out = e in st.outs
            before = len(local)
            if is_out and st.op in RANDOM:
                # random draws / uninitialised memory: metadata only, the values taint
                _cmp_tensor(x, y, e, local, k, op, tol=tol)
                local[before:] = [f for f in local[before:] if f.cat != "values"]
                taint.add(e)
                continue
            if is_out and st.op in SIGN_AMBIGUOUS and x.data is not None and \
                    y.data is not None and x.shape == y.shape and \
                    not close(x.data, y.data, y.dtype) and \
                    close(np.abs(x.data), np.abs(y.data), y.dtype):
                taint.add(e)                      # the same up to signs
                continue
            if is_out:
                bad = _cmp_tensor(x, y, e, local, k, op, tol=tol)
            else:
                # an earlier value: its data, grad_fn and flags after this statement
                px, py = prev_a.get(e), prev_b.get(e)
                changed = px is None or py is None or not _bit_equal(x.data, px.data) or \
                    not _bit_equal(y.data, py.data) or (x.gfn, x.rg) != (px.gfn, px.rg) or \
                    (y.gfn, y.rg) != (py.gfn, py.rg)
                if not changed:
                    continue
                if st.op in RANDOM:               # drawn in place: random values
                    taint.add(e)
                    continue
                bad = _cmp_tensor(x, y, e, local, k, op, tol=tol)
                for f in local[before:]:
                    if f.cat == "values":
                        f.cat = "side_effects"
            if bad:
                taint.add(e)
                if anchor_lib is not None and is_out and not tainted and \
                        any(f.cat == "values" for f in local[before:]) and \
                        not all(_bit_equal(prev_a[r].data, prev_b[r].data)
                                for r in st.reads if r in prev_a and r in prev_b):
                    if _anchored_agrees(prog, k, prev_a, x, e, anchor_lib):
                        del local[before:]
        # aliasing
        for e in st.outs:
            al, bl = ea["alias"].get(e), eb["alias"].get(e)
            if al is None or bl is None or al == bl:
                continue
            extra, missing = sorted(al - bl), sorted(bl - al)
            local.append(Finding("aliasing", k, op, "%s shares memory with %s%s" % (
                e, extra or "nothing extra", " (torch: also %s)" % missing if missing
                else "")))
            if ("aliasing", st.op, None) in ALLOWLIST:
                # a deliberate aliasing difference (unsafe_split ...): what is written through
                # the result later differs by design, not reported again
                taint.add(e)
        prev_a, prev_b = sa, sb
        if not tainted:
            out.extend(local)
        for f in local:
            f.phase = st.phase
    if len(a.events) != len(b.events):                           # one stopped early
        k = n
        ea = a.events[k] if k < len(a.events) else None
        eb = b.events[k] if k < len(b.events) else None
        if ea is not None or eb is not None:
            pass
    if taint:
        return out
    # the ending: gradients
    oa, ob = a.observed or {}, b.observed or {}
    ops = "ops:" + "+".join(sorted(set(prog.ops)))
    if a.observe_error or b.observe_error:
        if bool(a.observe_error) != bool(b.observe_error):
            out.append(Finding("grads_meta", len(prog.stmts), ops, "observe: %s, torch %s" % (
                a.observe_error, b.observe_error), "end"))
    for e in prog.observe:
        if e not in oa or e not in ob:
            continue
        x, y = oa[e], ob[e]
        if (x is None) != (y is None):
            out.append(Finding("grads_meta", len(prog.stmts), ops, "%s: %s, torch %s" % (
                e, "None" if x is None else "a tensor", "None" if y is None else "a tensor"),
                "end"))
            continue
        if x is None:
            continue
        loc = []
        if isinstance(x, TSnap) and isinstance(y, TSnap):
            _cmp_tensor(x, y, e, loc, len(prog.stmts), ops, full=False, tol=tol)
        else:
            _cmp_obj(x, y, e, loc, len(prog.stmts), ops, tol)
        for f in loc:
            f.cat = {"values": "grads", "shape": "grads_meta", "dtype": "grads_meta"}.get(
                f.cat, f.cat)
            f.phase = "end"
        out.extend(loc)
    return out


def _cmp_exc(ea, eb, k, op, phase):
    if ea["status"] == "ok":
        if _VERSION in (eb["msg"] or ""):
            return [Finding("version_undetected", k, op, "torch: %s: %s" % (
                eb["exc"], _short(eb["msg"])), phase)]
        cat = "torch_backward_raises" if phase == "end" else "torch_raises"
        return [Finding(cat, k, op, "torch: %s: %s" % (eb["exc"], _short(eb["msg"])), phase)]
    if eb["status"] == "ok":
        cat = "not_implemented" if ea["exc"] == "NotImplementedError" else "tapegrad_raises"
        if ea["exc"] == "Timeout":
            cat = "timeout"
        return [Finding(cat, k, op, "%s: %s" % (ea["exc"], _short(ea["msg"])), phase)]
    if ea["exc"] != eb["exc"]:
        if _VERSION in (eb["msg"] or "") and _VERSION not in (ea["msg"] or ""):
            return [Finding("version_undetected", k, op, "%s: %s; torch: %s: %s" % (
                ea["exc"], _short(ea["msg"]), eb["exc"], _short(eb["msg"])), phase)]
        return [Finding("exc_class", k, op, "%s: %s; torch %s: %s" % (
            ea["exc"], _short(ea["msg"]), eb["exc"], _short(eb["msg"])), phase)]
    if _VERSION in (eb["msg"] or "") and _VERSION not in (ea["msg"] or ""):
        return [Finding("version_undetected", k, op, "%s: %s; torch: %s" % (
            ea["exc"], _short(ea["msg"]), _short(eb["msg"])), phase)]
    return []


def _short(m, n=160):
    m = " ".join((m or "").split())
    return m if len(m) <= n else m[:n] + "..."


def _anchored_agrees(prog, k, prev_a, x, expr, torch):
    """Re-run statement k on torch with tapegrad's values of what it reads; True when
    tapegrad's result ``x`` for ``expr`` agrees with that."""
    st = prog.stmts[k]
    ns = prog.namespace(torch)
    names = _names(st.code)
    try:
        for nm in names:
            if nm in prev_a:
                ns[nm] = _to_torch(prev_a[nm], torch)
            else:
                items = {int(m.group(1)): s for e, s in prev_a.items()
                         for m in [re.fullmatch(re.escape(nm) + r"\[(\d+)\]", e)] if m}
                if items:
                    ns[nm] = tuple(_to_torch(items[i], torch) if i in items else None
                                   for i in range(max(items) + 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(st.code, ns)                                      # noqa: S102
            y = eval(expr, ns)                                     # noqa: S307
        return isinstance(y, torch.Tensor) and close(x.data, y.detach().numpy(),
                                                     str(y.dtype).replace("torch.", ""))
    except Exception:                                              # noqa: BLE001
        return False


def _to_torch(s, torch):
    t = torch.tensor(s.data, dtype=getattr(torch, s.dtype))
    if s.rg:
        t.requires_grad_(True)
        if not s.leaf:
            t = t.clone()
    return t
