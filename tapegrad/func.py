"""tapegrad.func: record a function once, replay its tape in compiled code (torch.func names).

``make_tape(f, *args)`` records ``f`` on fresh leaves and returns a ``CompiledTape``: a frozen
copy of the tape's arrays (it prints as a listing, reports its length and memory, pickles),
which replays forward and reverse in the Numba interpreter with no Python per entry.
``grad``, ``grad_and_value``, ``vjp`` and ``jacrev`` keep one CompiledTape per input signature
(tree structure, shapes, dtypes, non-tensor values) and replay it on later calls.

Python control flow that depends on tensor values is decided while recording, so the
decisions are recorded too: every comparison made on recorded tensors and every value that
leaves the tape (``item()``, ``bool()``, ``float()``) becomes a guard. A replay evaluates the
guards on its own values and, if any comes out differently, records the function again (and
logs it at debug level): never a silently wrong result. ``where`` gives branch-free code.
Default-deny (docs/func.md): a recording replays only when every op it holds declares how
it replays (``_sel.REPLAY``), no tensor was made from recorded values without a guard
(``CompiledTape._born``), and it replays itself; the captured tensors whose values made
constants are checked at each replay (``CompiledTape.srcs``). Anything else is served by
eager recording.

``compile(f)`` returns a function with ``f``'s semantics whose outputs carry a grad_fn (a
custom Function) whose backward is the recorded tape's compiled reverse sweep.

A repeated ``grad_and_value`` call with the signature of an earlier one takes its fast call
(``_fast_gv``): a generated argument check, one compiled forward and one compiled reverse,
prebuilt result trees. ``vmap`` of a tape runs it in the batched interpreter (chunks of
points, slot-major lanes, threads), point by point only for what that cannot run.

Custom Functions (and the ops built as ones) replay by calling their forward and backward
again. A transform called while another records runs on the recorded graph (nesting:
``grad(grad(f))``, ``jvp(grad(f))``, ``hessian``...). Calls from many threads at once keep
their own recordings and stores (``threading.local``).
"""
import builtins
import functools
import logging
import sys
import threading
import weakref

import numpy as np

from ._compiled import _cache, _native
from ._core import pysweep as _pysweep
from ._sel import REPLAY as _REPLAY, SEL as _SEL
from ._progress import run_batch as _run_batch, scaled as _scaled
from ._core import tape as _tp
from ._schema import (CI, F_ALIAS, F_BIG, F_HOOK, F_NOGA, F_NOGB, F_NPFWD, FL, K, NDT, NK, NOFF,
                      NPROD, NSIZE, OP, OUT, IA, IB, NM, P0, P1, SA, SB)

log = logging.getLogger("tapegrad.func")
_MISSING = object()
_NP = (np.float32, np.float64)
_M = {}
# Chunk size: a chunk's values and adjoints should fit in about 160 KiB, measured the best
# trade between the cache traffic of an entry's streams (smaller chunks) and the per-entry
# dispatch (larger ones): Rosenbrock at 100,000 points 2.93 ms against 3.24 ms with 256 KiB,
# 6-10% on one or two threads, flat from 64 to 128 lanes; tapes whose chunks sit at the
# bounds below unchanged. Never fewer than 64 lanes (below that the per-entry dispatch costs
# more than the lanes' work).
_BATCH_BYTES = 160 << 10
_BATCH_MIN = 64
_BATCH_MAX = 1024


def _mods():
    """tensor module and interpreter (or its numpy twins until the compiled code is in use:
    ``_core.pysweep``), imported once (not per call)."""
    if "T" not in _M:
        import sys
        from .tensor import Tensor, _wrap  # noqa: F401
        from . import _record
        _interp = _pysweep.current()
        _M["out_code"] = _record._out.__code__
        _M["forward"], _M["reverse"] = _interp.forward, _interp.reverse
        _M["pforward"], _M["preverse"] = _interp.pforward, _interp.preverse
        # "T" last: another thread takes its presence to mean every entry is there
        _M["T"] = sys.modules[__name__.rsplit(".", 1)[0] + ".tensor"]
    return _M


# ----------------------------------------------------------------------------- recordings
# The recordings this thread is making (innermost last). ``tensor.GUARD[0]`` is the
# dispatcher below while any thread records: a decision taken in one thread is a guard of
# that thread's recording only (it used to be one global hook, so two threads recording at
# once put their guards on each other's tapes, and a tape without its guards replayed the
# other branch).
_RT = threading.local()
_NREC = [0]
_NREC_LOCK = threading.Lock()
_BATCH_LOCK = threading.Lock()


def _rec_stack():
    st = getattr(_RT, "stack", None)
    if st is None:
        st = _RT.stack = []
    return st


def recording_active():
    """Whether this thread is recording a function for ``tapegrad.func`` (a transform called
    then runs on the recorded graph, so that the outer recording records it: nesting)."""
    return bool(getattr(_RT, "stack", None))


def _inside(Nb, old, node, base):
    """Whether ``node`` (old offsets ``old``) lies inside node ``base``'s store region, in
    the same store: an extra output node of a several-output entry (an unbind part)."""
    lo = int(old[base])
    return ((int(Nb[node, NDT]) & 1) == (int(Nb[base, NDT]) & 1) and lo <= int(old[node])
            and int(old[node]) + int(Nb[node, NSIZE]) <= lo + int(Nb[base, NSIZE]))


def _guard_dispatch(kind, t, *rest):
    st = getattr(_RT, "stack", None)
    if st:
        st[-1]._guard(kind, t, *rest)


def _guard_on(GUARD):
    with _NREC_LOCK:
        _NREC[0] += 1
        GUARD[0] = _guard_dispatch
        if _NREC[0] == 1:               # tensors made while recording say so (_born)
            w = _mods()["T"]._wrap
            _M["wrap_code"] = w.__code__
            w.__code__ = _wrap_born.__code__


def _guard_off(GUARD):
    with _NREC_LOCK:
        _NREC[0] -= 1
        if _NREC[0] == 0:
            GUARD[0] = None
            _mods()["T"]._wrap.__code__ = _M.pop("wrap_code")


def _wrap_born(data, dt):
    """The code ``tensor._wrap`` runs while a recording is active (it runs with tensor's
    globals): a tensor made from values while a recording is made is reported to it
    (``CompiledTape._born``). Swapping the code object, not the function, reaches every module
    that imported ``_wrap``, and costs nothing when no recording is active."""
    t = object.__new__(Tensor)      # noqa: F821 (tensor's globals)
    t._data = data
    t._dtype = dt
    g = GUARD[0]                    # noqa: F821
    if g is not None:
        g("born", t)
    return t


def _const(data, dt):
    """A tensor of values that depend on no recorded value (zeros, ones, one-hot cotangents)
    made by this module while it records: declared static (``CompiledTape._born``)."""
    return _mods()["T"]._wrap(data, dt)


def _has_array(v):
    """Whether a custom Function's argument is, or holds, a numpy array or scalar."""
    if isinstance(v, (np.ndarray, np.generic)):
        return True
    if type(v) in (tuple, list):
        return any(_has_array(u) for u in v)
    if type(v) is dict:
        return any(_has_array(u) for u in v.values())
    return False


def _untraced(v, T, out):
    """Append the tensors not carrying gradients that ``v`` is or holds (a frame's local) to
    ``out``: an argument tuple, not the autograd machinery's tables of cotangents (a
    container of more than 16 items is not read: a recording makes many tensors)."""
    if isinstance(v, T):
        if not v._rg:
            out.append(v)
    elif type(v) in (tuple, list) and len(v) <= 16:
        out.extend(u for u in v if isinstance(u, T) and not u._rg)
    elif type(v) is dict and len(v) <= 16:
        out.extend(u for u in v.values() if isinstance(u, T) and not u._rg)


def _traced(v, T):
    """Whether a frame's local ``v`` is, or holds, a tensor carrying gradients (a recorded
    value)."""
    if isinstance(v, T):
        return v._rg
    if type(v) in (tuple, list):
        return any(isinstance(u, T) and u._rg for u in v)
    if type(v) is dict:
        return any(isinstance(u, T) and u._rg for u in v.values())
    return False


@_cache.on_switch
def _switched():
    # "T" first: its absence makes _mods() fill every entry again
    for k in ("T", "forward", "reverse", "pforward", "preverse"):
        _M.pop(k, None)


_NUMPY_FWD_MIN = 1024


def _numpy_fwd_ops():
    if "fwd_ops" not in _M:
        from .ops import OPCODE
        from ._compiled.kernels import VM_CODES     # the rows with libmvec forwards
        _M["fwd_ops"] = np.array([OPCODE[n] for n in sorted(VM_CODES)], np.int64)
    return _M["fwd_ops"]


def _frozen(spec):
    """A guard spec without its tensor reference (for pickling)."""
    if spec is not None and spec[0] == "const" and len(spec) > 2:
        return ("const", _const_value(spec))
    return spec


def _const_value(spec):
    """A guard's constant operand: a captured tensor's current value (its recorded value when
    the tensor is gone or the spec came from a pickle), else the recorded value."""
    if len(spec) > 2:
        t = spec[2]()
        if t is not None:
            return np.asarray(t._data)
    return spec[1]


# ----------------------------------------------------------------------------- pytrees
def _flatten(x, leaves, Tensor=None):
    if Tensor is None:
        Tensor = (_M.get("T") or _mods()["T"]).Tensor
    tx = type(x)
    if tx is Tensor or isinstance(x, Tensor):
        leaves.append(x)
        return ("T", len(leaves) - 1)
    if tx is tuple or tx is list or isinstance(x, (tuple, list)):
        return (tx.__name__, tuple([_flatten(v, leaves, Tensor) for v in x]))
    if isinstance(x, dict):
        keys = sorted(x)
        return ("dict", tuple(keys), tuple([_flatten(x[k], leaves, Tensor) for k in keys]))
    return ("S", x)                 # a static (non-tensor) value: part of the signature


def _unflatten(spec, leaves):
    kind = spec[0]
    if kind == "T":
        return leaves[spec[1]]
    if kind in ("tuple", "list"):
        vals = [_unflatten(s, leaves) for s in spec[1]]
        return tuple(vals) if kind == "tuple" else vals
    if kind == "dict":
        return {k: _unflatten(s, leaves) for k, s in zip(spec[1], spec[2])}
    return spec[1]


def _signature(x, leaves, toks, Tensor):
    """One walk of an argument tree (the leaf order of ``_flatten``) appending its tokens:
    the tree structure, static values (by repr), shapes and dtypes, and the values of
    non-float tensors (integer indices, masks: they are recorded as constants, so new
    values record again). The tuple of tokens is the call's signature."""
    tx = type(x)
    if tx is Tensor or isinstance(x, Tensor):
        leaves.append(x)
        dt = x._dtype
        toks.append((x._data.shape, dt.name) if dt.is_floating_point
                    else (x._data.shape, dt.name, x._data.tobytes()))
    elif tx is tuple or tx is list or isinstance(x, (tuple, list)):
        toks.append((tx, len(x)))
        for v in x:
            _signature(v, leaves, toks, Tensor)
    elif isinstance(x, dict):
        keys = sorted(x)
        toks.append((dict, tuple(keys)))
        for k in keys:
            _signature(x[k], leaves, toks, Tensor)
    else:
        toks.append(("S", tx, repr(x)))


class _NoMatcher(Exception):
    pass


_STATIC_EQ = (int, bool, str, type(None))


def _matcher(args):
    """A function ``match(args)`` for calls shaped as ``args``: the leaves (in ``_signature``'s
    order) when a new argument tuple has the same tree structure, static values, and float
    tensor leaves of exact type Tensor with the same shapes and dtypes (the same signature,
    so the same recorded tape); None otherwise. Generated as straight-line code (a check
    per node, no recursion): the signature walk of a repeated call costs about a third.
    None when ``args`` has a non-float tensor or a Tensor subclass (the walk decides)."""
    Tensor = _mods()["T"].Tensor
    env = {"T": Tensor, "MISS": _MISSING}
    lines = ["def match(args):",
             "    if type(args) is not tuple or len(args) != %d: return None" % len(args)]
    leaves = []
    count = [0]

    def name(prefix, value):
        count[0] += 1
        n = "%s%d" % (prefix, count[0])
        env[n] = value
        return n

    def walk(expr, x):
        tx = type(x)
        v = "v%d" % len(lines)
        lines.append("    %s = %s" % (v, expr))
        if isinstance(x, Tensor):
            if tx is not Tensor or not x._dtype.is_floating_point:
                raise _NoMatcher
            lines.append("    if type(%s) is not T or %s._dtype is not %s or %s._data.shape != %s: "
                         "return None" % (v, v, name("D", x._dtype), v, name("S", x._data.shape)))
            leaves.append(v)
        elif isinstance(x, (tuple, list)):
            lines.append("    if type(%s) is not %s or len(%s) != %d: return None"
                         % (v, name("C", tx), v, len(x)))
            for i, item in enumerate(x):
                walk("%s[%d]" % (v, i), item)
        elif isinstance(x, dict):
            keys = sorted(x)
            lines.append("    if type(%s) is not %s or len(%s) != %d: return None"
                         % (v, name("C", tx), v, len(x)))
            kn = name("K", tuple(keys))
            for i, k in enumerate(keys):
                walk("%s.get(%s[%d], MISS)" % (v, kn, i), x[k])
        elif tx in _STATIC_EQ:
            lines.append("    if type(%s) is not %s or %s != %s: return None"
                         % (v, name("C", tx), v, name("V", x)))
        else:
            lines.append("    if type(%s) is not %s or repr(%s) != %s: return None"
                         % (v, name("C", tx), v, name("R", repr(x))))

    try:
        for i, a in enumerate(args):
            walk("args[%d]" % i, a)
    except _NoMatcher:
        return None
    lines.append("    return [%s]" % ", ".join(leaves))
    exec(builtins.compile("\n".join(lines), "<tapegrad.func matcher>", "exec"), env)
    return env["match"]


class _TapeData:
    """What np_entry/np_forward read from a tape, frozen (no Tape object needed)."""
    __slots__ = ("C", "I", "XO", "asz", "hooks")


class _ReplayMismatch(Exception):
    """A replay met something its recording did not (a custom Function's outputs changed
    shape): the call is served by eager recording."""


class _PyCall:
    """A custom Function's call in a recording, as a replay makes it again: the arguments
    (a node's replayed value, a tensor constant read at the call, a static value)."""
    __slots__ = ("cls", "args", "kwargs", "needs", "in_nodes", "out_nodes", "out_meta", "in_meta")

    def __init__(self, cls, args, kwargs, needs, in_nodes, out_nodes, out_meta, in_meta):
        self.cls, self.args, self.kwargs, self.needs = cls, args, kwargs, needs
        self.in_nodes, self.out_nodes, self.out_meta, self.in_meta = (in_nodes, out_nodes,
                                                                      out_meta, in_meta)

    def __getstate__(self):             # captured tensors do not travel: recorded values
        def frozen(sp):
            return ("const", None) + sp[2:] if sp[0] == "const" else sp
        return (self.cls, [frozen(a) for a in self.args],
                {k: frozen(v) for k, v in self.kwargs.items()}, self.needs, self.in_nodes,
                self.out_nodes, self.out_meta, self.in_meta)

    def __setstate__(self, st):
        self.__init__(*st)


class _Scratch:
    """A thread's per-call state of one CompiledTape, kept between its calls: the value store
    X and the inputs' views into it, the numpy steps prepared on views of its stores, the
    adjoint stores and reach flags, the fast call's state. Held in a ``threading.local`` of
    the tape (so it goes with its thread), for the plan generation ``gen`` it was made for
    (a replaced captured constant makes a new plan: the stores are made again)."""
    __slots__ = ("gen", "X", "views", "steps", "rsteps", "A", "F", "unit", "fwd")

    def __init__(self, gen):
        self.gen = gen
        self.X = self.views = self.A = self.F = self.unit = self.fwd = None
        self.steps, self.rsteps = {}, {}


# ----------------------------------------------------------------------------- the tape
class CompiledTape:
    """A recorded function: replays forward and reverse in compiled code."""
    _sp = None          # the scalar plan (``_make_plan``)
    pyfuncs = ()        # custom Functions' records, by entry (``_freeze``)
    eager = None
    srcs = ()           # captured tensors whose values made recorded constants (``_source``)

    def __init__(self, f, args, kwargs=None):
        from .tensor import GUARD, _wrap
        kwargs = kwargs or {}
        leaves = []
        self.in_spec = _flatten((args, kwargs), leaves)
        self.in_meta = [(t._data.shape, t._dtype) for t in leaves]
        self.guards = []
        self.eager = None           # why this recording is not replayed (None: it is)
        self.deny = None            # ... found while recording (see _refuse)
        self._det = {}              # frames of ops that declared their value reads (guards)
        self._pending = []          # (tensor, why): made from recorded values (see _born)
        self.srcs = []              # (weakref, values): captured tensors read (see _source)
        self._made = weakref.WeakValueDictionary()  # id -> tensor made while recording
        self._alias = {}            # id -> (tensor, captured tensor whose memory it shows)
        self._crefmap = None        # [len, {(dtype slot, save code): tensor}] of tp.crefs
        self._top = sys._getframe() # frames above f's are not f's
        self._mute = 0              # inside a custom Function's forward (see _guard)
        self._tl = threading.local()
        self._lock = threading.Lock()
        self._gen = 0
        fresh = []
        for t in leaves:
            u = _wrap(np.array(t._data, copy=True), t._dtype)
            if t._dtype.is_floating_point:
                u._rg = True
            fresh.append(u)
            self._made[id(u)] = u
        self._recording = None
        from ._state import enable_grad
        stack = _rec_stack()
        _guard_on(GUARD)
        stack.append(self)
        try:
            with _tp.recording() as tp, enable_grad():
                self._recording = tp
                a, kw = _unflatten(self.in_spec, fresh)
                out = f(*a, **kw)
        finally:
            stack.pop()
            _guard_off(GUARD)
            self._recording = None
            self._det = {}
            self._top = None
            self._made = self._alias = self._crefmap = None
        if any(ref() is None for ref, _ in self.srcs):
            # a tensor the recording read values from is gone: it was made during the
            # recording by a path this module does not see, and its values cannot be checked
            self._refuse("it read the values of a tensor made while recording that it cannot "
                         "check on replay")
        for t, why in self._pending:
            if not t._rg:
                self._refuse(why)
                break
        self._pending = []
        outs = []
        self.out_spec = _flatten(out, outs)
        self.out_meta = [(t._data.shape, t._dtype) for t in outs]
        why = self._unreplayable(tp, fresh, outs)
        if why is not None:
            self.eager = why
            self.E = self.N = None
            self.ne = 0
            tp.held = None
            return
        self._freeze(tp, fresh, outs)
        why = self._selfcheck(fresh, outs)
        if why is not None:
            self.eager = why
            self.E = self.N = None
            self.ne = 0

    def _selfcheck(self, fresh, outs):
        """The frozen tape replayed at the recording's own inputs must give the recorded
        outputs and hold its own guards (a value an op computed by numpy and its recorded
        entries computing another, e.g. at a nan, is caught here): None, or what differs."""
        values = [u._data for u in fresh]
        try:
            X = self.forward(values)
        except _ReplayMismatch as e:
            return str(e)
        if self.guards and not self.guards_hold(X):
            return "its guards do not hold at the values it was recorded at"
        for got, t in zip(self.outputs(X, values), outs):
            want = np.asarray(t._data)
            if got.shape != want.shape:
                return "a replayed output has another shape"
            if want.dtype.kind != "f":
                if not np.array_equal(got, want):
                    return "a replayed output differs from the recorded one"
                continue
            fw, fg = np.isfinite(want), np.isfinite(got)
            if not (np.array_equal(fw, fg) and np.array_equal(want[~fw], got[~fg], equal_nan=True)):
                return "a replayed output's nan / inf differ from the recorded one's"
            if fw.any():
                w, g = want[fw].astype(np.float64), got[fg].astype(np.float64)
                tol = (1e-3 if want.dtype == np.float32 else 1e-7) * max(1.0, np.abs(w).max())
                if np.abs(w - g).max() > tol:
                    return ("a replayed output differs from the recorded one (by %.3g)"
                            % np.abs(w - g).max())
        return None

    def _unreplayable(self, tp, fresh, outs):
        """Why the recording on tape ``tp`` cannot be frozen and replayed (None: it can): a
        replay then serves every call by eager recording instead (default-deny)."""
        if self.deny is not None:
            return self.deny
        if tp.into is not None:
            return ("its graph was merged into another one (a tensor it captured carries "
                    "gradients from outside the function)")
        if tp.released or (len(tp.E) and (_tp.view_i64(tp.E).reshape(-1, K)[:, FL] & 1).any()):
            return "it ran a backward that consumed its own graph"
        for rec in tp.pyfuncs:
            if rec.call is None:
                return "a custom autograd.Function was recorded without its call"
            if rec.ctx._dirty:
                return "a custom autograd.Function marks an input dirty (in-place)"
            if any(_has_array(a) for a in list(rec.call[0]) + list(rec.call[1].values())):
                # a replay would pass the same array again: its values may have been computed
                # from the recorded tensors' (tapegrad's sinc passed its output this way)
                return ("a custom autograd.Function (%s) was given a numpy array, whose values "
                        "a replay cannot check" % rec.cls.__name__)
        # every leaf node an entry reads must be a leaf of this tape: an input, once
        leaf_of = {}
        for node, ref in tp.leaf_pairs:
            t = ref()
            if t is not None and id(t) in leaf_of:
                return "an input has two nodes on its recording"
            leaf_of[id(t) if t is not None else ("dead", node)] = node
        for u in fresh:
            lr = u._lref
            if lr is not None and lr[0] is not tp.wself:
                return "an input was recorded on another tape"
        if len(tp.E):
            E = _tp.view_i64(tp.E).reshape(-1, K)
            N = _tp.view_i64(tp.N).reshape(-1, NK)
            leaves = set(leaf_of.values())
            for col in (IA, IB):
                used = E[:, col]
                used = used[used >= 0]
                orphans = used[N[used, NPROD] < 0]
                if len(orphans) and not set(orphans.tolist()) <= leaves:
                    return "an entry reads a node that no entry produces"
        for t in outs:
            if t._tape is not None and _tp.resolve(t)[0] is not tp:
                return "an output belongs to another graph"
        if len(tp.E):                   # every op recorded declares how it replays (_sel.REPLAY)
            E = _tp.view_i64(tp.E).reshape(-1, K)
            names = _names_of(E)
            bad = sorted(n for n in names if n not in _REPLAY)
            if bad:
                return "%s declare%s no replay rule (tapegrad/_sel.py REPLAY)" % (
                    ", ".join(bad), "s" if len(bad) == 1 else "")
        return None

    def _freeze(self, tp, fresh, outs):
        """The recording's arrays, copied: what replays read."""
        E = _tp.view_i64(tp.E).reshape(-1, K).copy()
        N = _tp.view_i64(tp.N).reshape(-1, NK).copy()
        # transcendental rows over many elements replay their forward on numpy's SIMD ufuncs
        # (Numba calls scalar libm for them); their VJPs have no transcendental and stay compiled
        if len(E):
            big = np.isin(E[:, OP], _numpy_fwd_ops()) & (N[E[:, OUT], NSIZE] >= _NUMPY_FWD_MIN)
            E[big, FL] |= F_NPFWD
        self.E, self.N = E.reshape(-1), N.reshape(-1)
        self.ne = E.shape[0]
        self.V = [np.frombuffer(tp.V[d], _NP[d]).copy() if len(tp.V[d]) else np.zeros(1, _NP[d])
                  for d in (0, 1)]
        data = _TapeData()
        data.C = np.array(tp.C, np.float64) if len(tp.C) else np.zeros(1)
        data.I = tp.I.array().copy()
        data.XO = [list(tp.XO[0]), list(tp.XO[1])]
        data.asz = list(tp.asz)
        data.hooks = {}
        self.data = data
        # recorded constants that are tensors f captured: read again at every call
        self.crefs = []
        for dt, code, t in tp.crefs:
            if code >= 0:                                   # a copied 0-dim value in V
                self.crefs.append((dt, code, weakref.ref(t), None))
            elif code <= -2:
                k = -2 - code
                arr = data.XO[dt][k]
                if arr is t._data:                          # referenced: in-place changes seen
                    self.crefs.append((dt, code, weakref.ref(t), arr))
                else:                                       # converted: refilled per call
                    data.XO[dt][k] = arr = np.array(arr, copy=True)
                    self.crefs.append((dt, code, weakref.ref(t), None))
        self._rebuild_xa()
        # inputs: the node each fresh leaf got (None when f did not use it)
        self.in_nodes = [u._lref[1] if (u._lref is not None and u._lref[0] is tp.wself) else None
                         for u in fresh]
        # leaves of the tape that are not inputs (tensors captured by f): read at each call
        ids = {id(u) for u in fresh}
        # with their values at recording time: a leaf f made itself (gone after the recording)
        # keeps that value, as a tensor f creates anew at each call would have it
        self.captured = [(node, ref, np.array(ref()._data, copy=True)) for node, ref in tp.leaf_pairs
                         if id(ref()) not in ids]
        tp.held = None
        self.out_nodes = []
        for t in outs:
            if t._tape is not None:
                self.out_nodes.append(("node", _tp.resolve(t)[1]))
            elif any(t is u for u in fresh):
                self.out_nodes.append(("input", next(i for i, u in enumerate(fresh) if u is t)))
            else:
                self.out_nodes.append(("const", np.array(t._data, copy=True)))
        self.names = self._names(tp)
        self.pyfuncs = self._pycalls(tp, E) if tp.pyfuncs else {}

    def _pycalls(self, tp, E):
        """The custom Functions of the recording, by entry: what a replay calls back."""
        T = _mods()["T"]
        res = {}
        for e in np.flatnonzero(E[:, OP] == _pyfunc_opcode()).tolist():
            rec = tp.pyfuncs[int(E[e, P0])]
            args, kwargs, nout, single = rec.call

            def spec(a, node):
                if isinstance(a, T.Tensor):
                    if node >= 0:
                        return ("node", node, a._data.shape, a._dtype)
                    return ("const", weakref.ref(a), np.array(a._data, copy=True), a._dtype)
                return ("static", a)
            res[e] = _PyCall(rec.cls, [spec(a, n) for a, n in zip(args, rec.in_nodes)],
                             {k: spec(v, -1) for k, v in kwargs.items()},
                             rec.ctx.needs_input_grad, rec.in_nodes, rec.out_nodes,
                             rec.out_meta, rec.in_meta)
            rec.call = None
        return res

    def _pyfunc_forward(self, e, X):
        """A custom Function's entry on replay: its forward called again on the replayed
        values (no grad mode), its outputs written into their nodes; the context is kept in
        the call's store for the reverse sweep."""
        from .autograd.function import FunctionCtx, _run_forward
        from ._state import no_grad
        T = _mods()["T"]
        pc = self.pyfuncs[e]
        N = self.N

        def value(sp):
            if sp[0] == "node":
                _, node, shape, dt = sp
                o, n, slot = int(N[node * NK + NOFF]), int(N[node * NK + NSIZE]), int(N[node * NK + NDT])
                v = np.array(X[slot][o:o + n], dt.np).reshape(shape)
                return T._wrap(v if v.ndim else v[()], dt)
            if sp[0] == "const":
                t = sp[1]() if sp[1] is not None else None
                return t if t is not None else T._wrap(sp[2].copy(), sp[3])
            return sp[1]
        args = [value(sp) for sp in pc.args]
        kwargs = {k: value(sp) for k, sp in pc.kwargs.items()}
        ctx = FunctionCtx()
        ctx.needs_input_grad = pc.needs
        with no_grad():
            out = _run_forward(pc.cls, ctx, args, kwargs)
        touts = [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, T.Tensor)]
        if len(touts) != len(pc.out_nodes):
            raise _ReplayMismatch("%s returned %d tensors, %d when recorded"
                                  % (pc.cls.__name__, len(touts), len(pc.out_nodes)))
        for o, node, (shape, dt) in zip(touts, pc.out_nodes, pc.out_meta):
            if o._data.shape != shape or o._dtype is not dt:
                raise _ReplayMismatch("%s returned a %s %s tensor, %s %s when recorded"
                                      % (pc.cls.__name__, o._dtype, tuple(o._data.shape), dt,
                                         tuple(shape)))
            if node >= 0:
                off, n, slot = int(N[node * NK + NOFF]), int(N[node * NK + NSIZE]), int(N[node * NK + NDT])
                X[slot][off:off + n] = np.asarray(o._data).reshape(-1)
        X[4][e] = ctx

    def _pyfunc_backward(self, e, X, adj, nreach, ereach):
        """A custom Function's backward on replay, with the context of this call's forward."""
        from .autograd.function import PyFuncRecord
        pc = self.pyfuncs[e]
        rec = PyFuncRecord(pc.cls, X[4][e], pc.in_nodes, pc.out_nodes, pc.out_meta, pc.in_meta)
        rec.backward(adj, self.N, nreach, ereach)

    # --------------------------------------------------------------- guards
    def _spec_of(self, t):
        """How a guard reads tensor t on replay: a node of the recording, or a constant."""
        from .tensor import Tensor
        if not isinstance(t, Tensor):
            return ("const", np.asarray(t))
        tp = self._recording
        if t._tape is not None:
            ttp, node = _tp.resolve(t)
            if ttp is tp:
                return ("node", node, t._data.shape)
        elif t._rg:
            return ("node", tp.leaf_node(t), t._data.shape)
        # a tensor the function captured: a replay compares with its value at that time
        return ("const", np.array(t._data, copy=True), weakref.ref(t))

    def _guard(self, kind, t, *rest):
        if self._recording is None:
            return
        if kind == "born":
            if self.deny is None:
                if self._mute:
                    self._made[id(t)] = t
                else:
                    self._born(t)
            return
        if kind == "enter":             # a custom Function's forward: a replay runs it again,
            self._mute += 1             # so the decisions it takes need no guard
            return
        if kind == "exit":
            self._mute -= 1
            return
        if self._mute:
            return
        if kind == "cmp":
            other, f, r = rest
            self._declare_frame()
            a, b = self._spec_of(t), self._spec_of(other)
            for x, sp in ((t, a), (other, b)):
                if sp[0] == "const":
                    self._source(x)
            if a[0] == "const" and b[0] == "const":
                return
            self.guards.append(("cmp", f, a, b, np.array(getattr(r, "_data", r), copy=True)))
        elif kind == "random":
            # random numbers drawn while recording would be replayed as constants; torch.func
            # draws anew at each call: served by eager recording
            self._refuse("it draws random numbers (drawn anew at each call, as torch.func does)")
        elif kind == "sel":
            fname, params = rest
            self._declare_frame()
            if fname == "never":
                self._refuse("an op's recorded constants depend on the values in a way no "
                             "guard captures")
                return
            a = self._spec_of(t)
            if a[0] == "const":
                self._source(t)
                return
            self.guards.append(("sel", (fname,) + tuple(params), a, None,
                                _SEL[fname](np.asarray(t._data), *params)))
        else:
            (v,) = rest
            a = self._spec_of(t)
            if a[0] != "const":
                self.guards.append(("item", None, a, None, np.asarray(v)))
            else:
                self._source(t)

    def _refuse(self, why):
        """Make this recording one that is not replayed (calls are served eagerly)."""
        if self.deny is None:
            self.deny = why

    def _declare_frame(self):
        """An op registered a guard for the values it reads: tensors it makes (in its frame
        or below) are determined by the guard (``_born``). The op's frame is the first above
        the guard helpers."""
        f = sys._getframe(3)            # _declare_frame <- _guard <- dispatch <- caller
        while f is not None and f.f_code.co_name.startswith("_guard"):
            f = f.f_back
        if f is not None and id(f) not in self._det:
            self._det[id(f)] = f        # (kept alive while recording: ids stay unique)

    def _born(self, t):
        """Default-deny for values: a tensor made during the recording from the values of a
        recorded tensor (found in the locals of the tapegrad frames that made it, up to the
        function's own code) without a guard declared by the op that made it (its frame,
        ``_declare_frame``) makes the recording not replayable: its values would be recorded
        constants (a mask, a sign, a no_grad result, ...). A tensor made from a captured
        tensor's values (one that existed before the recording: ``W * 2``, ``W.T``, the
        transposes a double backward makes of it) is a constant of the recording too: the
        captured tensor's values are checked at each replay (``_source``)."""
        f = sys._getframe(4)            # _born <- _guard <- dispatch <- _wrap <- maker
        if f.f_code is _M.get("out_code"):
            return                      # a recorded result (carries its node)
        T = _M["T"].Tensor
        det, top, static = self._det, self._top, _static_codes()
        self._made[id(t)] = t
        found = None
        guarded = False
        seen = []                       # non-recorded tensors the makers read
        maker = f
        while f is not None and f is not top:
            mod = f.f_globals.get("__name__", "")
            if not mod.startswith("tapegrad.") or mod.startswith("tapegrad.testing"):
                break                   # the function's own code: its tensors are arguments
            if f.f_code in static:
                return                  # a maker of static values made it
            if id(f) in det:
                guarded = True          # a guarded op made it
            if mod in _INFRA:
                # the autograd machinery: it makes tensors only from the cotangents it is
                # given, or zeros (what it computes from saved values goes through the ops);
                # a saved constant it wraps may be a captured tensor's (``_saved_source``:
                # the tensors made from that wrap need no check of their own)
                if f is maker:
                    self._saved_source(f)
                break
            loc = f.f_locals
            for v in loc.values():
                _untraced(v, T, seen)
            if not guarded and mod != "tapegrad.ops" and found is None and any(
                    _traced(v, T) for v in loc.values()):
                found = f               # (ops.py's differentiable VJPs are tensor formulas:
            f = f.f_back                # the ops they call are checked themselves)
        for v in seen:
            if v is not t:
                self._source(v)
        if found is not None and not guarded:
            # decided when the recording ends: a tensor made first, then recorded, carries
            # gradients by then
            self._pending.append((t, "%s (%s:%d) made a tensor from recorded values without a "
                                  "guard" % (found.f_code.co_name, found.f_code.co_filename.rsplit(
                                      "tapegrad/", 1)[-1], found.f_lineno)))

    def _saved_source(self, f):
        """The autograd machinery's ``node_t`` wrapping a recorded constant (save code ``s``
        of dtype slot ``vdt``): the captured tensor that constant reads is a source."""
        if f.f_code.co_name != "node_t":
            return
        loc = f.f_locals
        s, vdt, node = loc.get("s"), loc.get("vdt"), loc.get("node")
        if node is None or node >= 0 or s is None or s == -1:
            return
        crefs = self._recording.crefs or ()
        cm = self._crefmap
        if cm is None:
            cm = self._crefmap = [0, {}]
        if cm[0] != len(crefs):                 # (crefs only grows while recording)
            for dt, code, c in crefs[cm[0]:]:
                cm[1][(dt, code)] = c
            cm[0] = len(crefs)
        c = cm[1].get((vdt, s))
        if c is not None:
            self._source(c)

    def _source(self, x):
        """``x``'s values made a constant of the recording: when ``x`` is a captured tensor
        (not recorded, not made during the recording), a replay checks that its values are
        still those recorded (``srcs_hold``); a change records the function again."""
        made = self._made
        if made is None or not isinstance(x, _M["T"].Tensor) or x._rg or made.get(id(x)) is x:
            return
        for ref, _ in self.srcs:
            if ref() is x:
                return
        self.srcs.append((weakref.ref(x), np.array(x._data, copy=True)))

    def srcs_hold(self):
        """Whether the captured tensors the recording read values from still hold them."""
        for ref, seen in self.srcs:
            x = ref()
            if x is None:
                return False
            d = x._data
            if d.shape != seen.shape or not np.array_equal(d, seen, equal_nan=seen.dtype.kind in "fc"):
                return False
        return True

    def _value(self, spec, X):
        if spec[0] == "const":
            return _const_value(spec)
        node = spec[1]
        off, size, slot = self.N[node * NK + NOFF], self.N[node * NK + NSIZE], self.N[node * NK + NDT]
        return X[slot][off:off + size].reshape(spec[2])

    def guards_hold(self, X):
        for kind, f, a, b, seen in self.guards:
            if kind == "cmp":
                now = f(self._value(a, X), self._value(b, X))
            elif kind == "sel":
                if a is None:
                    return False
                now = _SEL[f[0]](self._value(a, X), *f[1:])
            else:
                now = self._value(a, X).reshape(-1)[0]
            if not np.array_equal(np.asarray(now), seen, equal_nan=_floaty(seen)):
                return False
        return True

    # --------------------------------------------------------------- replay
    def _rebuild_xa(self):
        self.XA = []
        for d in (0, 1):
            xa = np.zeros(2 * max(len(self.data.XO[d]), 1), np.int64)
            for k, arr in enumerate(self.data.XO[d]):
                xa[2 * k] = arr.__array_interface__["data"][0]
                xa[2 * k + 1] = arr.size
            self.XA.append(xa)

    def _refresh_constants(self):
        """Copy the current values of the captured constant tensors into the tape's constants
        (a 0-dim value into V; a converted array into the tape's own copy). A referenced
        array that its tensor no longer holds is replaced by a copy of the new one, and the
        plans holding its address are dropped."""
        stale = False
        for dt, code, ref, orig in self.crefs:
            t = ref()
            if t is None:
                continue
            d = t._data
            if code >= 0:
                self.V[dt][code] = d
            elif orig is not None:
                if d is not orig:
                    k = -2 - code
                    old = self.data.XO[dt][k]
                    new = np.asarray(d, old.dtype)      # (ascontiguousarray makes 0-dim 1-dim)
                    if new.ndim and not new.flags.c_contiguous:
                        new = np.ascontiguousarray(new)
                    if new.shape != old.shape:
                        raise RuntimeError(
                            "a tensor captured by the recorded function changed shape from %s "
                            "to %s; record the function again" % (tuple(old.shape), tuple(new.shape)))
                    self.data.XO[dt][k] = new
                    stale = True
            else:
                arr = self.data.XO[dt][-2 - code]
                try:
                    np.copyto(arr, d, casting="unsafe")
                except ValueError:
                    raise RuntimeError(
                        "a tensor captured by the recorded function changed shape to %s; "
                        "record the function again" % (tuple(np.shape(d)),)) from None
        if stale:
            with self._lock:
                self.crefs = [(dt, code, ref, (self.data.XO[dt][-2 - code] if orig is not None
                                               else None))
                              for dt, code, ref, orig in self.crefs]
                self._rebuild_xa()
                # a new plan generation: every thread's scratch is made again; a call running
                # in another thread keeps the old plan (which holds the old arrays)
                self._gen += 1
                for key in ("_bp", "_bpf", "_bpa", "_pl", "_rmemo", "_unit", "_wargs"):
                    self.__dict__.pop(key, None)

    def _meta(self, node):
        """(store slot, offset, size) of a node as Python ints."""
        N = self.N
        return int(N[node * NK + NDT]), int(N[node * NK + NOFF]), int(N[node * NK + NSIZE])

    def _plan(self):
        """Per-call constants of the single-point replay, computed once: the argument tuple
        of the sweeps, the inputs' and outputs' (slot, offset, size), and whether the whole
        reverse sweep is one compiled call (no entry runs on numpy: the common small tape)."""
        pl = self.__dict__.get("_pl")
        if pl is None:
            with self._lock:            # built once, by one thread; then only read
                pl = self.__dict__.get("_pl")
                if pl is None:
                    pl = self._make_plan()
        return pl

    def _make_plan(self):
        E = self._replay_entries()
        simple = not ((E[:, FL] & F_BIG).any() or (self.N.reshape(-1, NK)[:, NDT] >= 2).any()
                      or self.pyfuncs)
        ins = [None if n is None else self._meta(n) for n in self.in_nodes]
        outs = [self._meta(v) if kind == "node" else None for kind, v in self.out_nodes]
        args = (E.reshape(-1), self.N, self.V[0], self.V[1], self.XA[0], self.XA[1],
                self.data.I, self.data.C)
        sp = self._sp = self._scalar_plan() if simple else None     # (set before _pl)
        # the fifth item keeps the arrays whose addresses XA holds alive while a call that
        # took this plan runs (another thread may replace a captured constant meanwhile)
        pl = self._pl = (args, ins, outs, simple, (list(self.data.XO[0]), list(self.data.XO[1]), sp))
        return pl

    def _replay_entries(self):
        """The entries as the single-point sweeps replay them. The kernels call native code
        (``_native``) where they can, so that an entry need not leave the compiled sweep for
        numpy: a matrix product between nodes of the stores drops F_BIG when they have BLAS,
        a transcendental row over many elements drops F_NPFWD when they have libmvec."""
        E = self.E.reshape(-1, K)
        if not len(E):
            return E
        fl = E[:, FL].copy()
        if _native.BLAS:
            from .ops import KIND_CODES, MM, OPS
            mm = np.array([KIND_CODES[op.kind] == KIND_CODES[MM] for op in OPS], bool)[E[:, OP]]
            Nn = self.N.reshape(-1, NK)
            for col in (OUT, IA, IB):
                node = E[:, col]
                mm &= (node < 0) | (Nn[np.maximum(node, 0), NDT] < 2)
            mm &= (fl & F_HOOK) == 0
            fl[mm] &= ~F_BIG
        if (fl & F_NPFWD).any() and _native.vmath():
            fl &= ~F_NPFWD
        if (fl == E[:, FL]).all():
            return E
        E = E.copy()
        E[:, FL] = fl
        return E

    def _scalar_plan(self):
        """The pre-decoded table of a tape whose entries all produce one element, for the
        scalar-plan sweeps (``ops.PK``); None when the tape is not such a graph. Returns
        (D, Dc, store slot, store size, constants, rowmap): rowmap[e] is entry e's row of D,
        -1 for a one-element slice that needs none."""
        from .ops import BINARY, INDEX, KIND_CODES, OPCODE, OPS, PK, SUM, UNARY
        if self.ne == 0:                 # (called for tapes with no F_BIG entry: no hooks)
            return None
        E, N = self.E.reshape(-1, K), self.N.reshape(-1, NK)
        slots = set(int(x) for x in N[:, NDT])
        if len(slots) != 1:
            return None
        slot = slots.pop()
        ok_kinds = {UNARY, BINARY, SUM, INDEX}
        for e in range(self.ne):
            op = OPS[int(E[e, OP])]
            if (op.kind not in ok_kinds or N[E[e, OUT], NSIZE] != 1 or E[e, FL] & (F_BIG | F_NPFWD)
                    or (op.name == "gather" and E[e, P1] != 1)):
                return None
        Eb, Nb, basz, _, _ = self._bplan()
        Eb, Nb = Eb.reshape(-1, K), Nb.reshape(-1, NK).copy()
        # a one-element slice (``w[i]``, the micrograd case) needs no row: its output node
        # takes its operand's element (offsets of Nb moved; the node's own element stays
        # unused), unless the node is an output or a guard reads it (those read self.N)
        keep = {v for kind, v in self.out_nodes if kind == "node"}
        for g in self.guards:
            for spec in (g[2], g[3]):
                if spec is not None and spec[0] == "node":
                    keep.add(spec[1])
        sl = OPCODE["slice"]
        # ... and only when every reader of its operand is such a slice, each of another
        # element: the slice's adjoint then is the only one its element gets, as eager's sweep
        # adds it. Another reader (``x[0] + atan2(x, x)``) would have its partials added onto
        # the slice's adjoint in another order than eager's: with partials that cancel
        # (+-4e37) the 1 from x[0] was lost (issue 31, long run batch 8070).
        readers = {}
        for e in range(self.ne):
            for col in (IA, IB):
                v = int(Eb[e, col])
                if v >= 0:
                    readers.setdefault(v, []).append(e)
        lone = set()
        for v, es in readers.items():
            offs = [int(Eb[r, P0]) for r in es if Eb[r, OP] == sl]
            if len(offs) == len(es) and len(set(offs)) == len(offs):
                lone.add(v)
        rowmap = np.full(self.ne, -1, np.int64)
        for e in range(self.ne):
            out, a = int(Eb[e, OUT]), int(Eb[e, IA])
            if Eb[e, OP] == sl and a >= 0 and out not in keep and a in lone:
                Nb[out, NOFF] = Nb[a, NOFF] + Eb[e, P0]
            else:
                rowmap[e] = 0
        rows = np.flatnonzero(rowmap >= 0)
        rowmap[rows] = np.arange(len(rows))
        vrefs = {(dt, code) for dt, code, _, _ in self.crefs if code >= 0}
        D = np.zeros((len(rows), PK), np.int64)
        Dc = np.zeros(len(rows), np.float64)
        consts = []                     # (offset in the store, source array, re-read per call)
        for r, e in enumerate(rows.tolist()):
            op = OPS[int(E[e, OP])]
            a, b, out = int(Eb[e, IA]), int(Eb[e, IB]), int(Eb[e, OUT])
            row = D[r]
            row[0], row[1] = E[e, OP], KIND_CODES[op.kind]
            row[2] = Nb[out, NOFF]
            row[3] = Nb[a, NOFF] if a >= 0 else 0
            row[4] = Nb[b, NOFF] if b >= 0 else 0
            row[5] = 1
            row[6], row[7] = E[e, P0], E[e, P1]
            row[8] = Nb[a, NSIZE] if a >= 0 else 0
            if E[e, 10] >= 0:                            # CI: the row's float constant
                Dc[r] = self.data.C[E[e, 10]]
            if op.kind == BINARY:
                row[6] = (1 if E[e, IA] >= 0 else 0) | (2 if E[e, IB] >= 0 else 0)
                for col, scol in ((IA, SA), (IB, SB)):
                    if E[e, col] < 0:                    # a recorded constant: its own node
                        s = int(E[e, scol])
                        node = int(Eb[e, col])
                        src = (self.data.XO[slot][-2 - s].reshape(-1) if s <= -2
                               else self.V[slot][s:s + 1])
                        consts.append((int(Nb[node, NOFF]), src, s <= -2 or (slot, s) in vrefs))
            elif a < 0:
                return None
        return D.reshape(-1), Dc, slot, max(int(basz[slot]), 1), consts, rowmap

    def forward(self, values, fresh=False):
        """Node values after a compiled forward replay on new input values (flat arrays).
        The value buffers are reused between calls of a thread unless ``fresh`` (a vjp
        closure keeps its own)."""
        forward = _M.get("forward") or _mods()["forward"]
        if self.crefs:
            self._refresh_constants()
        args, ins, _, _, keep = self._plan()
        sp = keep[2]
        sc = None if fresh else self._scratch()            # per thread: replays may overlap
        X = None if fresh else sc.X
        if X is None:
            X = [np.zeros(max(self.data.asz[s], 1), _NP[s & 1]) for s in range(4)]
            X.append({})                                   # X[4]: the call's Function contexts
            if sp is not None:                             # one store, constants included
                X[sp[2]] = np.zeros(sp[3], _NP[sp[2]])
                for off, src, _ in sp[4]:
                    X[sp[2]][off:off + src.size] = src
            if not fresh:
                sc.X = X
        views = None if fresh else sc.views
        if views is None:                   # the inputs' places in the store, shaped as them
            views = [None if m is None else X[m[0]][m[1]:m[1] + m[2]].reshape(shape)
                     for m, (shape, _) in zip(ins, self.in_meta)]
            if not fresh:
                sc.views = views
        for w, v in zip(views, values):
            if w is not None:
                if type(v) is np.ndarray and v.shape == w.shape:
                    w[...] = v
                else:
                    w.reshape(-1)[:] = np.asarray(v, w.dtype).reshape(-1)
        if self.captured:
            N = self.N
            for node, ref, kept in self.captured:
                leaf = ref() if ref is not None else None
                off, size, slot = N[node * NK + NOFF], N[node * NK + NSIZE], N[node * NK + NDT]
                X[slot][off:off + size] = np.asarray(leaf._data if leaf is not None else kept,
                                                     _NP[slot & 1]).reshape(-1)
        if sp is not None:
            Xs = X[sp[2]]
            for off, src, live in sp[4]:
                if live:                                   # a referenced array: read now
                    Xs[off:off + src.size] = src
            (_M.get("pforward") or _mods()["pforward"])(sp[0], sp[1], self.data.I, Xs, 0, len(sp[1]))
            return X
        steps = None if fresh else sc.steps
        start = 0
        while True:
            stop = forward(*args, X[0], X[1], start, self.ne)
            if stop < 0:
                break
            fn = None if steps is None else steps.get(stop, _MISSING)
            if fn is _MISSING:
                fn = steps[stop] = self._np_step(stop, X)
            if fn is not None:
                fn()
            elif self.pyfuncs and int(self.E[stop * K + OP]) == _pyfunc_opcode():
                self._pyfunc_forward(stop, X)
            else:
                _tp.np_forward(self.data, stop, self.E, self.N, self.V[0], self.V[1], X)
            start = stop + 1
        return X

    def _scratch(self):
        """The calling thread's ``_Scratch`` of this tape (made on its first call)."""
        sc = getattr(self._tl, "s", None)
        if sc is None or sc.gen != self._gen:
            sc = self._tl.s = _Scratch(self._gen)
        return sc

    def _operand_view(self, X, vdt, node, s, size):
        """An operand of a numpy step: the node's lanes of the value store X, or the recorded
        constant of save code ``s`` (dtype slot ``vdt``); None when it was not saved."""
        if node >= 0:
            N = self.N
            o = int(N[node * NK + NOFF])
            return X[int(N[node * NK + NDT])][o:o + size]
        if s <= -2:
            return self.data.XO[vdt][-2 - s].reshape(-1)[:size]
        return None if s == -1 else self.V[vdt][s:s + size]

    def _np_step(self, e, X):
        """Entry e's numpy forward as one call on views of the thread's value store X made
        once (``forward`` keeps them per thread): a matrix product (BLAS) or a unary row's
        ufunc, writing into the output's lanes (``out=``); None for the other rows (run by
        ``tape.np_forward``). Saves the per-entry decoding of a replay that bounces between
        compiled sweeps and numpy (the batch-32 MLP)."""
        from .ops import MM, OPS, UNARY
        E, N = self.E.reshape(-1, K), self.N.reshape(-1, NK)
        op = OPS[int(E[e, OP])]
        out, a, b = int(E[e, OUT]), int(E[e, IA]), int(E[e, IB])
        n, slot, o = int(N[out, NSIZE]), int(N[out, NDT]), int(N[out, NOFF])
        Y = X[slot][o:o + n]

        def val(node, s, size):
            return self._operand_view(X, slot & 1, node, s, size)
        if op.kind == MM:
            m, k = int(E[e, P0]), int(E[e, P1])
            av, bv = val(a, int(E[e, SA]), m * k), val(b, int(E[e, SB]), k * (n // m))
            if av is None or bv is None or av.dtype != Y.dtype or bv.dtype != Y.dtype:
                return None
            return functools.partial(np.matmul, av.reshape(m, k), bv.reshape(k, n // m),
                                     out=Y.reshape(m, n // m))
        if op.kind == UNARY and op.fwd_out is not None and a >= 0:
            x = val(a, -1, n)
            ci = int(E[e, CI])
            c = self.data.C[ci] if ci >= 0 else 0.0
            if x.dtype != Y.dtype:
                return None
            return functools.partial(op.fwd_out, x, c, Y)
        return None

    def outputs(self, X, values):
        res = []
        metas = self._plan()[2]
        for (kind, v), (shape, dt), m in zip(self.out_nodes, self.out_meta, metas):
            if kind == "node":
                slot, off, size = m
                res.append(X[slot][off:off + size].reshape(shape).copy())
            elif kind == "input":
                res.append(np.array(values[v], dt.np).reshape(shape))
            else:
                res.append(v.copy())
        return res

    def reverse(self, X, cotangents, wanted=None):
        """Gradients of <cotangents, outputs> w.r.t. the inputs (None: input unused).
        ``wanted``: None, or a frozenset of the input indices whose gradients the caller
        needs; the sweep may then skip the work that serves only the others (their gradients
        may come back None)."""
        args, ins, outs, simple, keep = self._plan()
        if simple:
            return self._reverse_simple(X, cotangents, args, ins, outs, wanted, keep[2])
        reverse = _mods()["reverse"]
        N, E = self.N, self.E
        nn, ne = len(N) // NK, self.ne
        steps = None
        sc = self._scratch()
        if sc.X is X:                                     # the thread's own value store:
            st = self._stores(sc)                         # reuse adjoint stores, flags and
            st[0][0].fill(0)                              # the numpy steps' views
            st[0][1].fill(0)
            st[1].fill(0)
            adj = _tp.Adjoints.__new__(_tp.Adjoints)
            adj.A, adj.G, adj.owned = st[0], {}, set()
            nreach, ereach, nobad = st[2:]
            steps = sc.rsteps
        else:
            adj = _tp.Adjoints(self.data)
            flags = np.zeros(nn + 2 * ne + 3, np.uint8)
            nreach, ereach, nobad = flags[:nn + 1], flags[nn + 1:nn + ne + 2], flags[nn + ne + 2:]
        start = -1
        extra = {}
        for (kind, v), g in zip(self.out_nodes, cotangents):
            if g is None:
                continue
            if kind == "node":
                adj.acc(N, v, np.asarray(g, _NP[N[v * NK + NDT] & 1]).reshape(-1), False)
                nreach[v] = 1
                p = N[v * NK + NPROD]
                if p >= 0:
                    ereach[p] = 1
                    start = max(start, p)
            elif kind == "input":
                extra[v] = extra.get(v, 0) + np.asarray(g)
        args = (E, N, self.V[0], self.V[1], self.XA[0], self.XA[1], self.data.I, self.data.C)
        while start >= 0:
            status, e = reverse(*args, adj.A[0], adj.A[1], X[0], X[1], True, nreach, ereach,
                                nobad, start, 0)
            if status == 0:
                break
            if status == 1:                               # a custom Function's backward
                self._pyfunc_backward(e, X, adj, nreach, ereach)
                start = e - 1
                continue
            if status != 4:
                raise AssertionError("replayed reverse sweep stopped at entry %d (status %d)"
                                     % (e, status))
            fn = None if steps is None else steps.get(e, _MISSING)
            if fn is _MISSING:
                fn = steps[e] = self._np_vjp_step(e, X, adj.A, nreach, ereach)
            if fn is not None:
                fn()
            else:
                _tp.np_entry(self.data, e, adj, E, N, self.V[0], self.V[1], nreach, ereach, X)
            start = e - 1
        grads = []
        for i, (node, (shape, dt)) in enumerate(zip(self.in_nodes, self.in_meta)):
            g = None
            if node is not None and nreach[node]:
                g = np.array(adj.get(N, node), dt.np).reshape(shape)
            if i in extra:
                g = extra[i] if g is None else g + extra[i]
            grads.append(g)
        return grads

    def _stores(self, sc):
        """The thread's adjoint stores and reach flags for the general sweeps (reused from
        call to call; the caller zeroes them): ([A4, A8], flags, nreach, ereach, nobad)."""
        st = sc.A
        if st is None:
            nn, ne = len(self.N) // NK, self.ne
            flags = np.zeros(nn + 2 * ne + 3, np.uint8)
            st = sc.A = (
                [np.zeros(max(self.data.asz[0], 1), np.float32),
                 np.zeros(max(self.data.asz[1], 1), np.float64)],
                flags, flags[:nn + 1], flags[nn + 1:nn + ne + 2], flags[nn + ne + 2:])
        return st

    def _flags(self, sc):
        """The thread's reach flags for the single compiled sweep (reused; the caller zeroes
        them), laid out as ``_stores``' (None where it has the adjoint stores): that sweep
        takes fresh adjoint stores per call."""
        st = sc.F
        if st is None:
            nn, ne = len(self.N) // NK, self.ne
            flags = np.zeros(nn + 2 * ne + 3, np.uint8)
            st = sc.F = (None, flags, flags[:nn + 1], flags[nn + 1:nn + ne + 2],
                              flags[nn + ne + 2:])
        return st

    def _np_vjp_step(self, e, X, A, nreach, ereach):
        """A matrix product's VJP (an F_BIG entry: BLAS) as one call on views of the thread's
        stores made once: ``GA += G @ B.T``, ``GB += A.T @ G`` through preallocated products,
        marking the operands reached. None (``tape.np_entry`` runs it) for other rows or when
        a node involved is a big node (their cotangents are separate arrays)."""
        from .ops import MM, OPS
        E, N = self.E.reshape(-1, K), self.N.reshape(-1, NK)
        if OPS[int(E[e, OP])].kind != MM:
            return None
        out, a, b = int(E[e, OUT]), int(E[e, IA]), int(E[e, IB])
        if any(int(N[v, NDT]) >= 2 for v in (out, a, b) if v >= 0):
            return None
        m, k, n = int(E[e, P0]), int(E[e, P1]), int(N[out, NSIZE])
        c = n // m
        vdt = int(N[out, NDT])

        def val(node, s, size):
            return self._operand_view(X, vdt, node, s, size)

        def lanes(node, size):
            return A[int(N[node, NDT])][int(N[node, NOFF]):int(N[node, NOFF]) + size]
        G = lanes(out, n).reshape(m, c)
        parts = []
        for node, other, shape, prod in ((a, val(b, int(E[e, SB]), k * c), (m, k), "a"),
                                         (b, val(a, int(E[e, SA]), m * k), (k, c), "b")):
            if node < 0:
                continue
            if other is None or other.dtype != G.dtype:
                return None
            gv = lanes(node, shape[0] * shape[1]).reshape(shape)
            rhs = other.reshape(k, c).T if prod == "a" else other.reshape(m, k).T
            lhs_first = prod == "a"
            parts.append((gv, rhs, np.empty(shape, G.dtype), lhs_first, node,
                          int(N[node, NPROD])))

        def step():
            for gv, rhs, tmp, lhs_first, node, p in parts:
                if lhs_first:
                    np.matmul(G, rhs, out=tmp)           # G @ B.T
                else:
                    np.matmul(rhs, G, out=tmp)           # A.T @ G
                np.add(gv, tmp, out=gv)
                nreach[node] = 1
                if p >= 0:
                    ereach[p] = 1
        return step

    def _reverse_simple(self, X, cotangents, args, ins, outs, wanted, sp):
        """``reverse`` of a tape that no entry leaves for numpy: one compiled sweep, with reach
        flags that a thread reuses from call to call and adjoint stores made zeroed for the
        call (the gradients returned are views of them; the scalar plan keeps its reused
        store and copies)."""
        if sp is not None:                  # the scalar plan: one store, no flags
            st = (self._sp_store(sp),)
            A = st[0]
        else:                               # fresh zeroed adjoint stores (calloc): the
            st = self._flags(self._scratch())           # gradients are views of them, not
            st[1].fill(0)                               # copies out of reused ones
            asz = self.data.asz
            A = [np.zeros(max(asz[0], 1), np.float32), np.zeros(max(asz[1], 1), np.float64)]
        seeded, extra = [], None
        for (kind, v), m, g in zip(self.out_nodes, outs, cotangents):
            if g is None:
                continue
            if kind == "node":
                slot, off, size = m
                if size == 1:
                    A[slot][off] += float(g)
                else:
                    a = A[slot][off:off + size]
                    np.add(a, np.asarray(g).reshape(-1), out=a)
                seeded.append(v)
            elif kind == "input":
                extra = extra or {}
                extra[v] = extra.get(v, 0) + np.asarray(g)
        start, R, reads = self._read_plan(seeded, ins, None if sp is not None else wanted, sp)
        if sp is None and wanted is not None:
            args = self._wanted_args(args, wanted)
        if sp is not None:
            if len(R):
                (_M.get("preverse") or _mods()["preverse"])(sp[0], sp[1], self.data.I,
                                                            X[sp[2]], A[0], R)
        elif start >= 0:
            _, nreach, ereach, nobad = st[1:]
            N = self.N
            for v in seeded:
                nreach[v] = 1
                p = N[v * NK + NPROD]
                if p >= 0:
                    ereach[p] = 1
            reverse = _M.get("reverse") or _mods()["reverse"]
            status, e = reverse(*args, A[0], A[1], X[0], X[1], True, nreach, ereach, nobad, start, 0)
            if status != 0:
                raise AssertionError("replayed reverse sweep stopped at entry %d (status %d)"
                                     % (e, status))
        grads = self._read_grads(A, reads, sp is None)
        if extra:
            for i, e in extra.items():
                grads[i] = e if grads[i] is None else grads[i] + e
        return grads

    def _unit_reverse(self, X):
        """``reverse`` on the scalar plan seeded with 1 at the first output (a one-element
        node): grad_and_value's call, with the seeding and bookkeeping done once."""
        _, ins, outs, _, keep = self._plan()
        sp = keep[2]
        AA = self._sp_store(sp)
        A = AA[0]
        u = self.__dict__.get("_unit")
        if u is None or u[0] is not sp:
            kind, v = self.out_nodes[0]
            if kind != "node":
                return self.reverse(X, [np.ones((), _NP[sp[2]])] + [None] * (len(self.out_nodes) - 1))
            u = self._unit = (sp, outs[0][1]) + self._read_plan([v], ins, None, sp)
        _, off, start, R, reads = u
        A[off] = 1.0
        if len(R):
            (_M.get("preverse") or _mods()["preverse"])(sp[0], sp[1], self.data.I, X[sp[2]], A, R)
        return self._read_grads(AA, reads)

    def _fill_forward(self, pl, X, copies, cap, leaves, sp, live, args, ne, forward, pforward, I):
        """The fast runners' forward replay: the leaves' values and the captured tensors'
        current values copied into the stores ``X``, then one compiled forward sweep. False
        when it cannot serve this call (a captured constant changed the plan, or the sweep
        met a guard): the caller takes the general path."""
        if self.crefs:
            self._refresh_constants()
            if self.__dict__.get("_pl") is not pl:
                return False
        for i, w in copies:
            w[...] = leaves[i]._data
        for dst, ref, kept in cap:
            leaf = ref() if ref is not None else None
            dst[:] = np.asarray(leaf._data if leaf is not None else kept, dst.dtype).reshape(-1)
        if sp is not None:
            Xs = X[sp[2]]
            for off, src in live:
                Xs[off:off + src.size] = src
            pforward(sp[0], sp[1], I, Xs, 0, len(sp[1]))
            return True
        return forward(*args, X[0], X[1], 0, ne) < 0

    def _runner_stores(self, leaves):
        """A fast runner's per-thread state, made by a general forward on ``leaves``: the
        stores ``X``, the scratch, the leaves' copy targets and the captured tensors' places
        in ``X`` (``_fill_forward`` refreshes both at every call)."""
        X = self.forward([t._data for t in leaves])
        sc = self._scratch()
        copies = [(i, w) for i, w in enumerate(sc.views) if w is not None]
        N = self.N
        cap = []
        for node, ref, kept in self.captured:
            off, size, slot = N[node * NK + NOFF], N[node * NK + NSIZE], N[node * NK + NDT]
            cap.append((X[slot][off:off + size], ref, kept))
        return X, sc, copies, cap

    def forward_runner(self):
        """A function ``run(leaves)`` doing a forward-only replay (jvp's call) in the fewest
        Python steps: the leaves' values copied in, one compiled forward, the outputs copied
        out; None from ``run`` when the tape's plan changed (a captured constant replaced).
        None when the tape needs the general path (guards, numpy steps, custom Functions)."""
        pl = self._plan()
        args, ins, outs, simple, keep = pl
        E = args[0].reshape(-1, K)
        if (self.eager is not None or self.guards or self.pyfuncs
                or (len(E) and (E[:, FL] & (F_NPFWD | F_BIG)).any())
                or (self.N.reshape(-1, NK)[:, NDT] >= 2).any()
                or any(kind != "node" for kind, _ in self.out_nodes)):
            return None
        _mods()
        sp, ne = keep[2], self.ne
        forward, pforward, I = _M["forward"], _M["pforward"], self.data.I
        live = [(off, src) for off, src, lv in sp[4] if lv] if sp is not None else None
        tl, srcs = self._tl, self.srcs
        reads = [(slot, off, off + size, shape) for (slot, off, size), (shape, _) in
                 zip(outs, self.out_meta)]

        def state(leaves):
            X, sc, copies, cap = self._runner_stores(leaves)
            st = sc.fwd = (pl, X, copies, cap)
            return st

        def run(leaves):
            if srcs and not self.srcs_hold():
                return None
            sc = getattr(tl, "s", None)
            st = None if sc is None else sc.fwd
            if st is None or st[0] is not pl:
                st = state(leaves)
            _, X, copies, cap = st
            if not self._fill_forward(pl, X, copies, cap, leaves, sp, live, args, ne,
                                      forward, pforward, I):
                return None
            return [X[slot][lo:hi].reshape(shape).copy() for slot, lo, hi, shape in reads]
        return run

    def unit_runner(self, wanted):
        """A function ``run(leaves)`` doing grad_and_value's replay of this tape in the fewest
        Python steps: copy the input leaves' values in, one compiled forward, seed 1 at the
        first output, one compiled reverse (of the inputs ``wanted`` only); returns
        ``(outputs, grads)`` as ``outputs`` and ``reverse`` would, or None when this tape
        needs the general path (numpy steps, guards, a captured constant that changed).
        The per-thread stores are made on a thread's first run. None when the tape is not
        such a tape (the caller keeps the general path)."""
        pl = self._plan()
        args, ins, outs, simple, keep = pl
        E = args[0].reshape(-1, K)
        kind, v = self.out_nodes[0]
        if (not simple or self.guards or kind != "node" or outs[0][2] != 1
                or (len(E) and (E[:, FL] & F_NPFWD).any())):
            return None
        _mods()
        sp, N, ne = keep[2], self.N, self.ne
        need_values = any(k == "input" for k, _ in self.out_nodes)   # (outputs reads them)
        forward = pforward = I = live = None
        if sp is not None:
            pforward, I = _M["pforward"], self.data.I
            live = [(off, src) for off, src, lv in sp[4] if lv]
        else:
            start, _, reads = self._read_plan([v], ins, wanted, sp)
            wargs = self._wanted_args(args, wanted) if wanted is not None else args
            forward, reverse = _M["forward"], _M["reverse"]
            slot0, soff = outs[0][0], outs[0][1]
            p = int(N[v * NK + NPROD])
            asz0, asz1 = max(self.data.asz[0], 1), max(self.data.asz[1], 1)
        tl, srcs = self._tl, self.srcs

        def state(leaves):                  # the thread's stores, made by a general forward
            X, sc, copies, cap = self._runner_stores(leaves)
            st = sc.unit = (pl, X, copies, cap, self._flags(sc) if sp is None else None)
            return st

        def run(leaves):
            if srcs and not self.srcs_hold():
                return None
            sc = getattr(tl, "s", None)
            st = None if sc is None else sc.unit
            if st is None or st[0] is not pl:
                st = state(leaves)
            _, X, copies, cap, fl = st
            if not self._fill_forward(pl, X, copies, cap, leaves, sp, live, args, ne,
                                      forward, pforward, I):
                return None
            res = self.outputs(X, [t._data for t in leaves] if need_values else ())
            if sp is not None:
                return res, self._unit_reverse(X)
            A = [np.zeros(asz0, np.float32), np.zeros(asz1, np.float64)]
            A[slot0][soff] = 1.0
            if start >= 0:
                flags, nreach, ereach, nobad = fl[1:]
                flags.fill(0)
                nreach[v] = 1
                if p >= 0:
                    ereach[p] = 1
                status, e = reverse(*wargs, A[0], A[1], X[0], X[1], True, nreach, ereach, nobad,
                                    start, 0)
                if status != 0:
                    raise AssertionError("replayed reverse sweep stopped at entry %d (status %d)"
                                         % (e, status))
            return res, self._read_grads(A, reads, True)
        return run

    def _sp_store(self, sp):
        """The thread's zeroed adjoint store of the scalar plan ``sp``, as a pair indexed by a
        store slot (both slots name the one store)."""
        sc = self._scratch()
        st = sc.A
        if st is None:
            A = np.zeros(sp[3], _NP[sp[2]])
            st = sc.A = ((A, A),)
        st[0][0].fill(0)
        return st[0]

    @staticmethod
    def _read_grads(A, reads, owned=False):
        """The inputs' gradients out of the adjoint stores A (indexed by slot) through a
        ``_read_plan``'s reads, cast and shaped: views when the caller hands the stores
        over (``owned``), else copies (the stores are reused)."""
        grads = []
        for rd in reads:
            if rd is None:
                grads.append(None)
                continue
            slot, lo, hi, cast, shape = rd
            if cast is not None:
                g = A[slot][lo:hi].astype(cast)
            else:
                g = A[slot][lo:hi] if owned else A[slot][lo:hi].copy()
            grads.append(g if shape is None else g.reshape(shape))
        return grads

    def _read_plan(self, seeded, ins, wanted=None, sp=None):
        """Per set of seeded output nodes (and of wanted inputs), computed once: the last entry
        they reach, the reached entries in descending order (for the scalar plan) and how to
        read each input's gradient (store slot, bounds, dtype cast, shape; None: unreached or
        not wanted)."""
        sk = (seeded[0],) if len(seeded) == 1 else tuple(sorted(set(seeded)))
        key = sk if wanted is None else (sk, wanted)
        memo = self.__dict__.setdefault("_rmemo", {})
        rr = memo.get(key)
        if rr is None:
            nreach, start = self._reach(sk)
            E = self.E.reshape(-1, K)
            R = [e for e in range(start, -1, -1) if nreach[E[e, OUT]]]
            if sp is not None:                             # scalar-plan rows (aliased
                rowmap = sp[5]                             # slices have none)
                R = [rowmap[e] for e in R if rowmap[e] >= 0]
            R = np.array(R, np.int64)
            reads = []
            for i, (node, m, (shape, dt)) in enumerate(zip(self.in_nodes, ins, self.in_meta)):
                if m is not None and nreach[node] and (wanted is None or i in wanted):
                    slot, off, n = m
                    reads.append((slot, off, off + n, None if dt.np == _NP[slot & 1] else dt.np,
                                  None if tuple(shape) == (n,) else shape))
                else:
                    reads.append(None)
            rr = memo[key] = (start, R, reads)
        return rr

    def _wanted_args(self, args, wanted):
        """The sweep arguments of a reverse that needs only the inputs ``wanted``'s gradients:
        the entries flagged F_NOGA / F_NOGB where an operand has no wanted input upstream
        (the kernels skip its adjoint; an entry with neither is skipped), made once per set.
        grad_and_value(f)(W, x) then never computes x's gradient (x @ W's G W^T product)."""
        memo = self.__dict__.setdefault("_wargs", {})
        got = memo.get(wanted)
        if got is None:
            E = args[0].reshape(-1, K).copy()
            need = np.zeros(len(self.N) // NK, bool)
            for i in wanted:
                if self.in_nodes[i] is not None:
                    need[self.in_nodes[i]] = True
            prod = self.N.reshape(-1, NK)[:, NPROD]
            for e in range(self.ne):                    # operands come before their users
                a, b = int(E[e, IA]), int(E[e, IB])
                na, nb = a >= 0 and need[a], b >= 0 and need[b]
                if na or nb:
                    out = int(E[e, OUT])
                    need[out] = True
                    k = out + 1                         # unbind's parts: alias nodes after it
                    while k < len(need) and prod[k] == e:
                        need[k] = True
                        k += 1
                E[e, FL] |= (0 if na else F_NOGA) | (0 if nb else F_NOGB)
            got = memo[wanted] = (E.reshape(-1),) + tuple(args[1:])
        return got

    # --------------------------------------------------------------- batched replay
    def batch_blocker(self):
        """Why this tape cannot run in the batched interpreter (None: it can)."""
        if self.eager is not None:
            return "it is served eagerly (%s)" % self.eager
        if "_blocker" not in self.__dict__:
            from .ops import KIND_CODES, OPS, PYFUNC, BINARY, MM
            E, N = self.E.reshape(-1, K), self.N.reshape(-1, NK)
            why = None
            if (E[:, FL] & F_HOOK).any():
                why = "hooks watch some of its entries"
            elif (N[:, NDT] >= 2).any():
                why = "it has nodes of >= %d elements" % _tp.BIG
            elif any(OPS[int(o)].kind == PYFUNC for o in E[:, OP]):
                why = "it calls a custom autograd.Function"
            else:
                two = {KIND_CODES[BINARY], KIND_CODES[MM]}
                for e in range(self.ne):
                    if KIND_CODES[OPS[int(E[e, OP])].kind] not in two and E[e, IA] < 0:
                        why = "entry %d reads a constant as its only operand" % e
                        break
            self._blocker = why
        return self._blocker

    def _bplan(self, fold=False):
        """The tape as the batched sweeps see it: every recorded constant a binary or mm entry
        reads becomes a node of its own (loaded into every lane like a broadcast input), so
        all operands are lanes of nodes; with ``fold``, scalar constants are folded first
        (``_fold_scalars``). Returns (E, N, sizes of the two stores, load rows, the constants
        array C that E's CI column indexes)."""
        key = "_bpf" if fold else "_bp"
        if key not in self.__dict__:
            from .ops import BINARY, MM, OPS
            E, N = self.E.reshape(-1, K).copy(), self.N.reshape(-1, NK)
            C = self._fold_scalars(E, N) if fold else self.data.C
            extra, rows, asz = [], [], [self.data.asz[0], self.data.asz[1]]
            nn = len(N)
            for e in range(self.ne):
                op = OPS[int(E[e, OP])]
                if op.kind not in (BINARY, MM):
                    continue
                n = int(N[E[e, OUT], NSIZE])
                slot = int(N[E[e, OUT], NDT]) & 1
                m0, k0 = int(E[e, P0]), int(E[e, P1])
                for col, scol, size in (
                        (IA, SA, (n if m0 else 1) if op.kind == BINARY else m0 * k0),
                        (IB, SB, (n if k0 else 1) if op.kind == BINARY else k0 * (n // m0))):
                    if E[e, col] >= 0:
                        continue
                    s = int(E[e, scol])
                    if s == -1:
                        raise AssertionError("entry %d: an unsaved constant operand" % e)
                    addr = (self.XA[slot][2 * (-2 - s)] if s <= -2
                            else _tp.address(self.V[slot]) + s * self.V[slot].itemsize)
                    node = nn + len(extra)
                    extra.append((asz[slot], size, slot, -1, 0))
                    asz[slot] += size
                    rows.append((addr, node, size, 0, slot))
                    E[e, col] = node
            Nb = np.concatenate([N, np.array(extra, np.int64).reshape(-1, NK)]) if extra else N
            self.__dict__[key] = (E.reshape(-1), np.ascontiguousarray(Nb).reshape(-1), asz, rows, C)
        return self.__dict__[key]

    def _fold_scalars(self, E, N):
        """Batched plan, before constants become lanes: rewrite the binary entries that the
        per-point recording leaves cheap but the lane layout makes costly. ``x * x`` becomes
        ``pow_scalar(x, 2)`` (one adjoint pass, not two), and ``mul`` / ``add`` / ``sub``
        with a recorded one-element constant become the unary ``scale`` / ``add_scalar`` /
        ``rsub_scalar`` with the constant in C (no lanes filled with it, one pass per entry
        instead of one per element). Values are bit-identical (``x - c`` is ``x + (-c)``);
        the gradient of ``x * x`` is ``2 g x`` added once instead of ``g x`` added twice, the
        same unless other contributions were added before it (then within a rounding).
        Constants refreshed from captured tensors on every call (``crefs``) stay operands.
        Edits E in place; returns the constants array the plan's C indices refer to."""
        from .ops import OPCODE
        mul, add, sub = OPCODE["mul"], OPCODE["add"], OPCODE["sub"]
        live = {(dt, code) for dt, code, _, _ in self.crefs if code >= 0}
        extra = []
        nc = len(self.data.C)

        def to_unary(e, name, x, c):
            E[e, OP] = OPCODE[name]
            E[e, IA], E[e, IB] = x, -1
            E[e, CI] = nc + len(extra)
            extra.append(c)
        for e in np.flatnonzero((E[:, OP] == mul) | (E[:, OP] == add) | (E[:, OP] == sub)):
            op, out, a, b = int(E[e, OP]), int(E[e, OUT]), int(E[e, IA]), int(E[e, IB])
            n, slot = int(N[out, NSIZE]), int(N[out, NDT]) & 1
            full_a, full_b = bool(E[e, P0]) or n == 1, bool(E[e, P1]) or n == 1
            if op == mul and a >= 0 and a == b and full_a and full_b:
                to_unary(e, "pow_scalar", a, 2.0)
                continue
            if (a < 0) == (b < 0):
                continue
            x, full_x = (b, full_b) if a < 0 else (a, full_a)
            s = int(E[e, SA if a < 0 else SB])
            size = n if (E[e, P0] if a < 0 else E[e, P1]) else 1
            if s < 0 or size != 1 or not full_x or (slot, s) in live \
                    or (int(N[x, NDT]) & 1) != slot:
                continue
            v = float(self.V[slot][s])
            if op == mul:
                to_unary(e, "scale", x, v)
            elif op == add:
                to_unary(e, "add_scalar", x, v)
            elif a < 0:
                to_unary(e, "rsub_scalar", x, v)
            else:
                to_unary(e, "add_scalar", x, -v)
        if not extra:
            return self.data.C
        return np.concatenate([self.data.C, np.array(extra, self.data.C.dtype)])

    def _batch_plan(self):
        """``_bplan`` with its contiguous slices aliased (``_alias_slices``): what ``batch``
        runs."""
        if "_bpa" not in self.__dict__:
            Eb, Nb, asz, rows, C = self._bplan(fold=True)
            E, N = Eb.reshape(-1, K).copy(), Nb.reshape(-1, NK).copy()
            asz = self._alias_slices(E, N, list(asz))
            self._bpa = (E.reshape(-1), N.reshape(-1), asz, rows, C)
        return self._bpa

    @staticmethod
    def _alias_slices(E, Nb, asz):
        """Batched plan: a contiguous slice (``x[:-1]``, ``x[1:]``, a row) needs no lanes
        of its own. In the slot-major layout element i of a node at offset o lives at lanes
        ``(o + i) * B``, so the slice's output node can start at its operand's offset plus
        the slice's element offset: its consumers read the operand's values and accumulate
        into the operand's adjoint lanes directly. The entry is flagged F_ALIAS (the batched
        sweeps skip it) and the other nodes are packed again. Edits E and Nb in place;
        returns the new store sizes."""
        from .ops import OPCODE
        sl = OPCODE["slice"]
        alias = {}                                   # output node -> (operand node, offset)
        for e in np.flatnonzero(E[:, OP] == sl):
            a = int(E[e, IA])
            if a >= 0 and (Nb[a, NDT] & 1) == (Nb[E[e, OUT], NDT] & 1):
                alias[int(E[e, OUT])] = (a, int(E[e, P0]))
                E[e, FL] |= F_ALIAS
        if not alias:
            return asz
        # the extra nodes of a several-output entry (unbind / split / chunk parts, _joint)
        # lie inside the region of the entry's output node: they move with it (at the same
        # distance from its start), they are never packed on their own (issue: vmap gave
        # zeros for an unbind part when a slice elsewhere in the tape triggered the repack)
        old = Nb[:, NOFF].copy()
        prod, outs = Nb[:, NPROD], E[:, OUT]
        new = [0, 0]
        for node in range(len(Nb)):                  # operands come before their slices
            src = alias.get(node)                    # (and an entry's output before its parts)
            p = int(prod[node])
            if src is not None:
                Nb[node, NOFF] = Nb[src[0], NOFF] + src[1]
            elif p >= 0 and int(outs[p]) != node and _inside(Nb, old, node, int(outs[p])):
                base = int(outs[p])
                Nb[node, NOFF] = Nb[base, NOFF] + (old[node] - old[base])
            else:
                s = int(Nb[node, NDT]) & 1
                Nb[node, NOFF] = new[s]
                new[s] += int(Nb[node, NSIZE])
        return new

    def _reach(self, seeded):
        """Static reverse reachability from the seeded output nodes: (nreach, start entry)."""
        key = tuple(sorted(seeded))
        memo = self.__dict__.setdefault("_reach_memo", {})
        if key not in memo:
            E, N = self.E.reshape(-1, K), self.N.reshape(-1, NK)
            nreach = np.zeros(len(N), bool)
            prod = N[:, NPROD]

            def mark(n):
                # an alias node (a part of unbind's output) reaches its entry through the
                # entry's output node, whose store region holds it
                nreach[n] = True
                if prod[n] >= 0:
                    nreach[E[prod[n], OUT]] = True
            for v in key:
                mark(v)
            start = max([int(N[v, NPROD]) for v in key] + [-1])
            for e in range(start, -1, -1):
                if nreach[E[e, OUT]]:
                    for c in (IA, IB):
                        if E[e, c] >= 0:
                            mark(E[e, c])
            memo[key] = (nreach, start)
        return memo[key]

    def _row(self, node, arr, pstride, keep):
        N = self.N
        keep.append(arr)
        return (_tp.address(arr), node, N[node * NK + NSIZE], pstride,
                N[node * NK + NDT])

    def batch(self, values, batched, P, cotangents=None):
        """Evaluate the tape on P points in the batched interpreter.

        ``values[i]``: input i, shape (P, *shape) when ``batched[i]`` else (*shape) (the same
        for every point). ``cotangents``: None (forward only) or one per output: None, or
        (array, batched) with the array (P, *shape) when batched else (*shape).
        Returns (outputs, gradients, ok): outputs (P, *shape), gradients per input
        (P, *shape) or None (unreached), ok a bool (P,) mask of the points whose recorded
        branch decisions hold (the others must be evaluated again)."""
        run = _pysweep.current_run()
        from numba import get_num_threads
        from ._compiled._vmath import start_threads
        start_threads()                     # the workers' short spin-wait (see _vmath)
        if self.crefs:
            self._refresh_constants()
        N, keep = self.N, []
        ins, outs_rows, cts, grows = [], [], [], []
        for node, v, bt in zip(self.in_nodes, values, batched):
            if node is None:
                continue
            npd = _NP[N[node * NK + NDT] & 1]
            a = np.ascontiguousarray(v, npd)
            ins.append(self._row(node, a, N[node * NK + NSIZE] if bt else 0, keep))
        for node, ref, kept in self.captured:
            leaf = ref() if ref is not None else None
            a = np.ascontiguousarray(leaf._data if leaf is not None else kept,
                                     _NP[N[node * NK + NDT] & 1])
            ins.append(self._row(node, a, 0, keep))
        # nodes whose values leave the chunk: outputs and the nodes the guards read
        want = {}
        for kind, v in self.out_nodes:
            if kind == "node":
                want[v] = None
        for g in self.guards:
            for spec in (g[2], g[3]):
                if spec is not None and spec[0] == "node":
                    want[spec[1]] = None
        for node in want:
            want[node] = np.empty((P, N[node * NK + NSIZE]), _NP[N[node * NK + NDT] & 1])
            outs_rows.append(self._row(node, want[node], 0, keep))
        rev_start, grads = -1, [None] * len(self.in_nodes)
        if cotangents is not None:
            seeded = []
            for (kind, v), ct in zip(self.out_nodes, cotangents):
                if ct is None or kind != "node":
                    continue
                n = N[v * NK + NSIZE]
                arr, bt = ct
                a = np.ascontiguousarray(arr, _NP[N[v * NK + NDT] & 1])
                cts.append(self._row(v, a, n if bt else 0, keep))
                seeded.append(v)
            nreach, rev_start = self._reach(seeded)
            for i, node in enumerate(self.in_nodes):
                if node is not None and nreach[node]:
                    grads[i] = np.empty((P, N[node * NK + NSIZE]), _NP[N[node * NK + NDT] & 1])
                    grows.append(self._row(node, grads[i], 0, keep))
        Eb, Nb, basz, const_rows, Cb = self._batch_plan()
        if "_bvm" not in self.__dict__:     # transcendental rows: libmvec in their kernels
            self._bvm = bool(np.isin(Eb.reshape(-1, K)[:, OP], _numpy_fwd_ops()).any()) \
                and _native.vmath()
        asz = basz
        lane = (asz[0] * 4 + asz[1] * 8) * (2 if rev_start >= 0 else 1) + 1
        G = max(1, get_num_threads())
        B = int(min(max(_BATCH_BYTES // lane, _BATCH_MIN), _BATCH_MAX, -(-P // G)))
        B = max(8, B - B % 8) if B >= 8 else max(B, 1)
        G = min(G, -(-P // B))

        def table(rows):
            return np.array(rows, np.int64).reshape(-1, 5)
        # (one call, or in parts with progress reports between them: tapegrad/_progress.py)
        args = (Eb, Nb, self.V[0], self.V[1], self.XA[0], self.XA[1], self.data.I, Cb,
                basz[0], basz[1], self.ne, B, P, G, table(ins + const_rows), table(outs_rows),
                table(cts), table(grows), rev_start, len(N) // NK)
        if _M.get("layer") in ("omp", "tbb"):
            _run_batch(run, args)       # thread-safe layers: no lock
        else:
            # Numba's workqueue layer cannot run parallel regions from two threads at once
            # (and the layer is known only after a first parallel run)
            with _BATCH_LOCK:
                _run_batch(run, args)
                if "layer" not in _M:
                    import numba        # deferred: numba is loaded by now
                    _M["layer"] = numba.threading_layer()
        # outputs
        res = []
        for (kind, v), (shape, dt) in zip(self.out_nodes, self.out_meta):
            if kind == "node":
                res.append(want[v].reshape((P,) + tuple(shape)))
            elif kind == "input":
                x = values[v]
                res.append(np.array(x if batched[v] else np.broadcast_to(x, (P,) + tuple(shape)),
                                    dt.np).reshape((P,) + tuple(shape)))
            else:
                res.append(np.broadcast_to(v, (P,) + v.shape).astype(dt.np))
        for i, (shape, dt) in enumerate(self.in_meta):
            if grads[i] is not None:
                grads[i] = grads[i].reshape((P,) + tuple(shape))
        # extra: cotangents of outputs that are inputs themselves
        if cotangents is not None:
            for (kind, v), ct in zip(self.out_nodes, cotangents):
                if kind == "input" and ct is not None:
                    shape, dt = self.in_meta[v]
                    c = np.broadcast_to(np.asarray(ct[0], dt.np), (P,) + tuple(shape))
                    grads[v] = c.copy() if grads[v] is None else grads[v] + c
        return res, grads, self._guards_ok(want, P)

    def _guards_ok(self, want, P):
        ok = np.ones(P, bool)
        if self.srcs and not self.srcs_hold():
            ok[:] = False
        for kind, f, a, b, seen in self.guards:
            seen = np.asarray(seen)

            def val(spec):
                if spec[0] == "const":
                    return _const_value(spec)
                shape = tuple(spec[2])
                pad = max(0, seen.ndim - len(shape))
                return want[spec[1]].reshape((P,) + (1,) * pad + shape)
            if kind == "sel" and a is None:
                ok[:] = False
                continue
            if kind == "sel":
                va = val(a)
                eq = _floaty(seen)
                ok &= np.array([np.array_equal(_SEL[f[0]](va[i], *f[1:]), seen, equal_nan=eq)
                                for i in range(P)], bool)
                continue
            if kind == "cmp":
                now = np.asarray(f(val(a), val(b)))
                now = np.broadcast_to(now, (P,) + seen.shape).reshape(P, -1)
            else:
                now = want[a[1]].reshape(P, -1)[:, :1]
            s1 = seen.reshape(1, -1)
            same = now == s1
            if _floaty(s1):
                same |= (now != now) & (s1 != s1)       # (a nan that stays a nan)
            ok &= same.all(axis=1)
        return ok

    # --------------------------------------------------------------- presentation
    def _names(self, tp):
        from ._core.names import NAMES
        from .ops import OPS
        E = self.E.reshape(-1, K)
        return [(OPS[int(E[e, OP])].name, NAMES[int(E[e, NM])]) for e in range(self.ne)]

    def __len__(self):
        return self.ne

    @property
    def nbytes(self):
        """Memory of the tape's arrays (entries, nodes, saved values, index maps)."""
        n = self.E.nbytes + self.N.nbytes + self.V[0].nbytes + self.V[1].nbytes
        n += self.data.I.nbytes + self.data.C.nbytes
        n += sum(a.nbytes for d in (0, 1) for a in self.data.XO[d])
        return n

    def __str__(self):
        E = self._replay_entries()          # "(numpy)": what a replay runs on numpy
        lines = ["CompiledTape: %d entries, %d nodes, %d guards, %.1f KiB"
                 % (self.ne, len(self.N) // NK, len(self.guards), self.nbytes / 1024)]
        inputs = {n: i for i, n in enumerate(self.in_nodes) if n is not None}

        def name(node):
            if node < 0:
                return "const"
            if node in inputs:
                return "in%d" % inputs[node]
            return "n%d" % node

        def shape(node):
            slot = self.N[node * NK + NDT]
            return "%s[%d]" % ("f32" if slot & 1 == 0 else "f64", self.N[node * NK + NSIZE])
        for e in range(self.ne):
            op, gname = self.names[e]
            out, a, b = int(E[e, OUT]), int(E[e, IA]), int(E[e, IB])
            args = name(a) if op not in ("add", "sub", "mul", "div", "pow", "mm") else \
                "%s, %s" % (name(a), name(b))
            flag = "  (numpy)" if E[e, 11] & F_BIG else ("  (numpy forward)" if E[e, 11] & F_NPFWD else "")
            lines.append("%4d  %-6s %-9s = %-10s(%s)   # %s%s"
                         % (e, name(out), shape(out), op, args, gname, flag))
        return "\n".join(lines)

    __repr__ = __str__

    def __getstate__(self):
        st = dict(self.__dict__)
        # per-thread state, locks, plans holding addresses (rebuilt after unpickling), and
        # "_bvm" (fills the receiving process's table)
        for key in ("XA", "_tl", "_lock", "_wargs", "_bvm", "_bp", "_bpf", "_bpa", "_pl", "_sp",
                    "_unit", "_rmemo"):
            st.pop(key, None)
        if self.eager is not None:
            raise TypeError("this recording is served eagerly (%s): it has no tape to pickle"
                            % self.eager)
        d = self.data
        st["data"] = (d.C, d.I, d.XO, d.asz)
        # captured tensors do not travel: the unpickled tape uses their recorded values
        st["captured"] = [(node, None, kept) for node, _, kept in self.captured]
        st["guards"] = [(k, f if f is None or isinstance(f, tuple) else f.__name__, _frozen(a),
                         _frozen(b), s) for k, f, a, b, s in self.guards]
        st["crefs"] = []                        # nor do captured constant tensors
        st["srcs"] = []                         # (whose values the recording read)
        return st

    def __setstate__(self, st):
        C, I, XO, asz = st.pop("data")
        st.setdefault("crefs", [])
        st["guards"] = [(k, getattr(np, f) if isinstance(f, str) else f, a, b, s)
                        for k, f, a, b, s in st["guards"]]
        self.__dict__.update(st)
        data = _TapeData()
        data.C, data.I, data.XO, data.asz, data.hooks = C, I, XO, asz, {}
        self.data = data
        self._recording = None
        self._tl = threading.local()
        self._lock = threading.Lock()
        self._gen = 0
        self._rebuild_xa()

    # --------------------------------------------------------------- convenience
    def __call__(self, *args, **kwargs):
        """Replay the forward on new arguments (same structure): returns f's output."""
        from .tensor import _wrap
        leaves = []
        _flatten((args, kwargs), leaves)
        values = [t._data for t in leaves]
        X = self.forward(values)
        outs = [_wrap(v if v.ndim else v[()], dt)
                for v, (_, dt) in zip(self.outputs(X, values), self.out_meta)]
        return _unflatten(self.out_spec, outs)


_INFRA = frozenset(("tapegrad.autograd.engine", "tapegrad.autograd.higher",
                    "tapegrad._core.tape"))


def _static_codes():
    """Code objects of functions that make tensors whose values depend on no recorded value
    (creation from shapes: zeros_like, new_ones...; this module's ``_const``; the autograd
    engine's seeds and zero cotangents)."""
    got = _M.get("static")
    if got is None:
        from . import creation
        fns = [_const] + [
            getattr(creation, n) for n in (
                "zeros_like", "ones_like", "full_like", "empty_like", "zeros", "ones", "full",
                "empty", "arange", "linspace", "logspace", "eye") if hasattr(creation, n)]
        got = _M["static"] = frozenset(getattr(f, "__code__", None) for f in fns) - {None}
    return got


def _names_of(E):
    """The grad_fn names of a recording's entries (custom Functions excepted: replayed by
    calling back)."""
    from ._core.names import NAMES
    ids = np.unique(E[E[:, OP] != _pyfunc_opcode(), NM])
    return {NAMES[int(i)] for i in ids}


def _floaty(a):
    return np.asarray(a).dtype.kind in "fc"


def _pyfunc_opcode():
    if "pyfunc" not in _M:
        from .ops import OPCODE
        _M["pyfunc"] = OPCODE["pyfunc"]
    return _M["pyfunc"]


class _EagerMark:
    """The top of the recording stack while a call is served eagerly: no recording, but the
    transforms called run on the graph (``recording_active``)."""
    @staticmethod
    def _guard(kind, t, *rest):
        return None


_EAGER_MARK = _EagerMark()


class _EagerCall:
    """One call served by eager recording, for a signature whose recording is not replayed
    (``CompiledTape.eager`` says why): ``f`` runs on fresh leaves with autograd, and
    ``reverse`` differentiates that graph (``autograd.grad``, graph retained, so a vjp
    closure or jacrev can call it again). Same interface as a CompiledTape for the
    transforms; ``X`` is unused."""
    _sp = None
    guards = ()
    eager = "served eagerly"

    def __init__(self, f, args):
        from ._state import enable_grad
        T = _mods()["T"]
        leaves = []
        spec = _flatten(args, leaves)
        self.in_meta = [(t._data.shape, t._dtype) for t in leaves]
        fresh = []
        for t in leaves:
            u = T._wrap(np.array(t._data, copy=True), t._dtype)
            if t._dtype.is_floating_point:
                u._rg = True
            fresh.append(u)
        # transforms f calls run on the graph (as in a recording: nesting), so that this
        # graph differentiates through them
        stack = _rec_stack()
        GUARD = T.GUARD
        _guard_on(GUARD)
        stack.append(_EAGER_MARK)
        try:
            with enable_grad():
                out = f(*_unflatten(spec, fresh))
        finally:
            stack.pop()
            _guard_off(GUARD)
        outs = []
        self.out_spec = _flatten(out, outs)
        self.out_meta = [(t._data.shape, t._dtype) for t in outs]
        self.out_nodes = [("node", i) for i in range(len(outs))]
        self.fresh, self.outs = fresh, outs

    def outputs(self, X, values):
        return [np.array(t._data, copy=True) for t in self.outs]

    def reverse(self, X, cotangents, wanted=None):
        from .autograd import grad as agrad
        T = _mods()["T"]
        grads = [None] * len(self.fresh)
        pairs = [(o, c) for o, c in zip(self.outs, cotangents)
                 if c is not None and o._rg and o._dtype.is_floating_point]
        idx = [i for i, u in enumerate(self.fresh)
               if u._rg and (wanted is None or i in wanted)]
        if pairs and idx:
            cts = [T._wrap(np.asarray(c, o._dtype.np).reshape(o._data.shape), o._dtype)
                   for o, c in pairs]
            got = agrad([o for o, _ in pairs], [self.fresh[i] for i in idx], cts,
                        retain_graph=True, allow_unused=True)
            for i, g in zip(idx, got):
                if g is not None:
                    shape, dt = self.in_meta[i]
                    grads[i] = np.array(g._data, dt.np).reshape(shape)
        return grads

    def batch_blocker(self):
        return "it is served eagerly"


def make_tape(f, *example_args, **example_kwargs):
    """Record ``f`` on the example arguments; returns its CompiledTape."""
    return CompiledTape(f, example_args, example_kwargs)


# ----------------------------------------------------------------------------- transforms
class _Cache:
    """The CompiledTapes of one function: per input signature, the variants recorded so far
    (most recent first), one per combination of branch decisions met; a call replays the
    first variant whose guards hold, and records a new one when none does."""
    MAX_VARIANTS = 8
    MAX_FAST = 16
    # input signatures kept per transformed function, least recently used out first: a
    # process calling it on ever new shapes keeps a bounded memory (docs/func.md)
    MAX_SIGNATURES = 64

    def __init__(self, f, watch=None):
        self.f = f
        self.watch_fn = f if watch is None else watch     # whose names _watch_list reads
        self.tapes = {}
        self.recordings = 0
        self.watch = None
        self.specs = {}             # call signature -> the arguments' tree specs (_select)
        self.fasts = {}             # call signature -> its fast call (None: it has none)
        self.fast = None            # the fast call of the latest signature
        self.lock = threading.Lock()  # the bookkeeping of tapes (never held while replaying)

    def _watch_list(self):
        """The tensors f names directly (closure variables and globals), by identity: a
        recording captured those objects, so rebinding a name must record f again."""
        T = _mods()["T"].Tensor
        fn = getattr(self.watch_fn, "__func__", self.watch_fn)
        code = getattr(fn, "__code__", None)
        out = []
        if code is None:
            return out
        for cell in fn.__closure__ or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if isinstance(v, T):
                out.append((cell, None, weakref.ref(v)))
        g = getattr(fn, "__globals__", {})
        for name in code.co_names:
            v = g.get(name)
            if isinstance(v, T):
                out.append((g, name, weakref.ref(v)))
        return out

    def _rebound(self):
        for where, name, ref in self.watch:
            try:
                now = where.get(name) if name is not None else where.cell_contents
            except ValueError:                  # an emptied closure cell
                return True
            if now is not ref():
                return True
        return False

    def key(self, args):
        T = _mods()["T"].Tensor
        for a in args:                 # fast path: flat float tensors (the common call)
            if type(a) is not T or not a._dtype.is_floating_point:
                break
        else:
            return ("flat",) + tuple((a._data.shape, a._dtype.name) for a in args), list(args)
        leaves, toks = [], []
        _signature(args, leaves, toks, T)
        return tuple(toks), leaves

    def record(self, key, args, stale=()):
        """Record a new variant for signature ``key`` (the variants ``stale``, whose captured
        tensors changed, are dropped)."""
        if key in self.tapes:
            log.debug("tapegrad.func: a recorded branch decision changed; recording %s again",
                      getattr(self.f, "__name__", self.f))
        ct = CompiledTape(self.f, args)
        if ct.eager is not None:
            log.debug("tapegrad.func: %s is served by eager recording, not replayed: %s",
                      getattr(self.f, "__name__", self.f), ct.eager)
        self.recordings += 1
        if self.watch is None:
            self.watch = self._watch_list()
        with self.lock:                 # (the recording itself holds no lock)
            variants = self.tapes.get(key)
            if variants is None:
                while len(self.tapes) >= self.MAX_SIGNATURES:
                    old = next(iter(self.tapes))            # the least recently used
                    del self.tapes[old]
                    self.fasts.pop(old, None)
                    self.specs.pop(old, None)
                variants = []
            else:
                # (a copy: other threads iterate the old list)
                variants = [v for v in variants if all(v is not s for s in stale)]
            if ct.eager is None:
                variants.insert(0, ct)
            elif not variants or variants[-1].eager is None:
                # last: the calls whose decisions a replayable variant recorded still replay;
                # the others are served eagerly (not recorded again at each call)
                variants.append(ct)
            del variants[self.MAX_VARIANTS:]
            self.tapes[key] = variants
        return ct

    def check_names(self):
        """Forget the recordings when a tensor f names directly was rebound."""
        if self.watch and self._rebound():
            log.debug("tapegrad.func: a tensor %s names was rebound; recording it again",
                      getattr(self.f, "__name__", self.f))
            self.tapes.clear()
            self.watch = None
            self.fasts.clear()
            self.fast = None

    def run(self, args, need_reverse, cotangent_fn, fresh=False, argnums=None):
        self.check_names()
        key, leaves = self.key(args)
        values = [t._data for t in leaves]
        with self.lock:
            variants = self.tapes.pop(key, None)
            if variants is not None:
                self.tapes[key] = variants      # (most recently used last)
            else:
                variants = ()
        eager = False
        stale = []
        try:
            for ct in variants:
                if ct.eager is not None:
                    break
                if ct.srcs and not ct.srcs_hold():
                    stale.append(ct)    # a captured tensor it read values from changed
                    continue
                X = ct.forward(values, fresh)
                if not ct.guards or ct.guards_hold(X):
                    break
            else:
                ct = self.record(key, args, stale)
                if ct.eager is None:
                    X = ct.forward(values, fresh)
        except _ReplayMismatch as e:
            log.debug("tapegrad.func: %s served by eager recording for this call: %s",
                      getattr(self.f, "__name__", self.f), e)
            eager = True
        if eager or ct.eager is not None:   # default-deny: served by eager recording
            ct = _EagerCall(self.f, args)
            X = None
        outs = ct.outputs(X, values)
        if not need_reverse:
            return ct, leaves, outs, None, X, key
        if cotangent_fn is _UNIT and ct._sp is not None and outs[0].size == 1:
            return ct, leaves, outs, ct._unit_reverse(X), X, key
        wanted = None if argnums is None else self.wanted(args, leaves, key, argnums)
        return ct, leaves, outs, ct.reverse(X, cotangent_fn(outs, ct), wanted), X, key

    def wanted(self, args, leaves, key, argnums):
        """The leaf indices of the arguments ``argnums`` names (a frozenset, per signature)."""
        if not isinstance(argnums, int):
            argnums = tuple(argnums)
        memo = self.__dict__.setdefault("_wanted", {})
        got = memo.get((key, argnums))
        if got is None:
            bounds, _ = _arg_specs(args, len(leaves), self.specs, key)
            got = frozenset(i for n in ((argnums,) if isinstance(argnums, int) else argnums)
                            for i in range(bounds[n][0], bounds[n][0] + bounds[n][1]))
            if len(memo) > 64:
                memo.clear()
            memo[(key, argnums)] = got
        return got


def _arg_specs(args, nleaves, memo, key):
    """(leaf bounds, tree spec) of each argument. ``memo``: a dict kept by the caller, keyed
    by the call's signature ``key``, so a repeated call signature walks no tree."""
    got = memo.get(key) if memo is not None else None
    if got is not None:
        return got
    bounds, specs, pos = [], [], 0
    for a in args:
        sub = []
        specs.append(_flatten(a, sub))
        bounds.append((pos, len(sub)))
        pos += len(sub)
    if pos != nleaves:
        raise AssertionError("argument leaves changed between signature and selection")
    if memo is not None and key is not None:
        if len(memo) > 64:
            memo.clear()
        memo[key] = (bounds, specs)
    return bounds, specs


def _select(grads, leaves, args, argnums, memo=None, key=None):
    """Gradients of the requested arguments, in their tree structure (zeros where unused)."""
    _wrap = _mods()["T"]._wrap
    single = isinstance(argnums, int)
    if single and len(leaves) == len(args) and all(l is a for l, a in zip(leaves, args)):
        g, t = grads[argnums], leaves[argnums]     # flat tensor arguments
        if g is None:
            g = np.zeros(t._data.shape, t._dtype.np)
        return _wrap(g if g.ndim else g[()], t._dtype)
    nums = (argnums,) if single else tuple(argnums)
    bounds, specs = _arg_specs(args, len(leaves), memo, key)
    res = []
    for n in nums:
        start, cnt = bounds[n]
        gl = []
        for i in range(start, start + cnt):
            g, t = grads[i], leaves[i]
            if g is None:
                g = np.zeros(t._data.shape, t._dtype.np)
            gl.append(_wrap(g if g.ndim else g[()], t._dtype))
        res.append(_unflatten(specs[n], gl))
    return res[0] if single else tuple(res)


def _UNIT(outs, ct):
    """The cotangents of grad / grad_and_value: 1 for the first output, which must be a
    single element (torch.func's error otherwise)."""
    if outs[0].size != 1:
        raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar "
                           "Tensor, got tensor with %d dims." % outs[0].ndim)
    return [np.ones_like(outs[0])] + [None] * (len(outs) - 1)


def _fast_gv(cache, args, leaves, key, ct, argnums, has_aux):
    """grad_and_value's fast call for one signature: ``fast(args)`` returns the transform's
    result, or None when ``args`` has another signature or the tape needs the general path.
    It matches the arguments with a generated check (``_matcher``), runs the tape's
    ``unit_runner`` and builds the gradient and value trees by precomputed plans. None when
    the call cannot take it (several recorded variants or guards, numpy steps)."""
    if len(cache.tapes.get(key, ())) != 1 or ct.eager is not None:
        return None
    match = _matcher(args)
    if match is None:
        return None
    run = ct.unit_runner(cache.wanted(args, leaves, key, argnums))
    if run is None:
        return None
    _wrap = _mods()["T"]._wrap
    single = isinstance(argnums, int)
    bounds, specs = _arg_specs(args, len(leaves), cache.specs, key)
    parts = [(specs[n], [(i,) + tuple(ct.in_meta[i]) for i in range(bounds[n][0], bounds[n][0] + bounds[n][1])])
             for n in ((argnums,) if single else tuple(argnums))]
    outs = [dt for _, dt in ct.out_meta]
    out_spec = ct.out_spec
    flat_out = out_spec == ("T", 0)

    def fast(args):
        leaves = match(args)
        if leaves is None:
            return None
        got = run(leaves)
        if got is None:                 # the tape's plan changed (a captured constant was
            cache.fasts.pop(key, None)  # replaced): the general path runs, and makes the
            cache.fast = None           # signature's fast call again on the new plan
            return None
        res, grads = got
        tree = []
        for spec, items in parts:
            gl = []
            for i, shape, dt in items:
                g = grads[i]
                if g is None:
                    g = np.zeros(shape, dt.np)
                gl.append(_wrap(g if g.ndim else g[()], dt))
            tree.append(gl[0] if spec == ("T", 0) else _unflatten(spec, gl))
        g = tree[0] if single else tuple(tree)
        if flat_out:
            v = res[0]
            return g, _wrap(v if v.ndim else v[()], outs[0])
        out = _unflatten(out_spec, [_wrap(v if v.ndim else v[()], dt) for v, dt in zip(res, outs)])
        if has_aux:
            value, aux = out
            return g, (value, aux)
        return g, out
    return fast


def grad_and_value(func, argnums=0, has_aux=False):
    """(gradient of a scalar func w.r.t. args[argnums], value), replayed in compiled code.
    A call with the signature of the previous one takes the fast call (``_fast_gv``).
    Called while another transform records (nesting), it runs on the recorded graph."""
    _check_argnums(argnums)
    cache = _Cache(func)

    def wrapper(*args, **kwargs):
        if kwargs:
            return wrapper._kw(len(args), args)(*args, kwargs)
        if _NREC[0] and recording_active():
            return _gv_graph(func, args, argnums, has_aux)
        if cache.fast is not None:
            cache.check_names()
            fast = cache.fast
            if fast is not None:
                r = fast(args)
                if r is not None:
                    return r
        _wrap = _mods()["T"]._wrap
        _argnums_in_range(argnums, args, "grad_and_value")
        ct, leaves, outs, grads, _, key = cache.run(args, True, _UNIT, argnums=argnums)
        g = _select(grads, leaves, args, argnums, cache.specs, key)
        vals = [_wrap(v if v.ndim else v[()], dt) for v, (_, dt) in zip(outs, ct.out_meta)]
        out = _unflatten(ct.out_spec, vals)
        fast = cache.fasts.get(key, _MISSING)
        if fast is _MISSING:
            if len(cache.fasts) >= cache.MAX_FAST:
                cache.fasts.clear()
            fast = cache.fasts[key] = _fast_gv(cache, args, leaves, key, ct, argnums, has_aux)
        cache.fast = fast
        if has_aux:
            value, aux = out
            return g, (value, aux)
        return g, out
    wrapper._cache = cache
    wrapper._tg_transform = ("grad_and_value", func, argnums, has_aux)
    wrapper._kw = _kw_variants(grad_and_value, func, argnums, has_aux, "grad_and_value")
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of a scalar func w.r.t. args[argnums] (torch.func.grad)."""
    gv = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        if kwargs:
            return wrapper._kw(len(args), args)(*args, kwargs)
        g, v = gv(*args)
        if has_aux:
            return g, v[1]
        return g
    wrapper._cache = gv._cache
    wrapper._tg_transform = ("grad", func, argnums, has_aux)
    wrapper._kw = _kw_variants(grad, func, argnums, has_aux, "grad")
    return wrapper


# ----------------------------------------------------------------------------- keyword arguments
# As torch.func: grad / grad_and_value / vmap pass keyword arguments to func, never
# differentiated and never batched. They travel as one trailing positional dict of a bound
# form of func, so they are part of the recording's signature like any argument: a Python
# number is a recorded constant (another value records again), a tensor an input leaf.

def _kw_bound(func):
    """func taking its keyword arguments as one trailing positional dict."""
    def bound(*a):
        return func(*a[:-1], **a[-1])
    bound.__name__ = getattr(func, "__name__", "func")
    return bound


def _kw_variants(transform, func, argnums, has_aux, name):
    """``get(n, args)``: ``transform`` of ``_kw_bound(func)`` for calls with n positional
    arguments (argnums made non-negative, so the trailing dict is never differentiated), made
    once per n."""
    made = {}

    def get(n, args):
        t = made.get(n)
        if t is None:
            _argnums_in_range(argnums, args, name)
            nums = argnums % n if isinstance(argnums, int) else tuple(a % n for a in argnums)
            t = made[n] = transform(_kw_bound(func), nums, has_aux)
        return t
    return get


def _kw_form(func, n, args):
    """func (a plain function or a grad transform) taking its keyword arguments as one
    trailing positional dict, for vmap (the grad transform's own variant, so vmap still
    runs it in the batched interpreter)."""
    if _grad_transform(func) is not None:
        return func._kw(n, args)
    return _kw_bound(func)


def _vmap_kwargs(public, args, kwargs):
    """vmap's call with keyword arguments: a vmap of ``_kw_form(func)`` with the dict
    unbatched (in_dim None), made once per number of positional arguments."""
    func, in_dims, out_dims, progress, reduce = public._tg_vmap
    n = len(args)
    made = public.__dict__.setdefault("_tg_kw", {})
    v = made.get(n)
    if v is None:
        dims = tuple(in_dims) if isinstance(in_dims, (tuple, list)) else (in_dims,) * n
        if len(dims) != n:
            return public(*args)        # raises vmap's in_dims error before func runs
        v = made[n] = vmap(_kw_form(func, n, args), dims + (None,), out_dims,
                           progress=progress, reduce=reduce)
    return v(*args, kwargs)


# ----------------------------------------------------------------------------- nesting
# A transform called while another one records (``grad(grad(f))``, ``jacrev(grad(f))``,
# ``jvp(grad(f), ...)``, ``vmap(hessian(f))``...) runs on the recorded graph: its gradients
# are taken with ``create_graph=True``, so the backward passes are recorded entries of the
# outer recording, which the outer transform replays compiled (and differentiates again).
# A replayed result inside a recording would be a constant of it: a silently wrong outer
# derivative (``grad(grad(sin))`` gave 0).

def _check_argnums(argnums):
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if not isinstance(nums, tuple) or not nums or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in nums):
        raise RuntimeError("argnums must be int or Tuple[int, ...], got: %r" % (argnums,))


def _argnums_in_range(argnums, args, name):
    for n in ((argnums,) if isinstance(argnums, int) else argnums):
        if not -len(args) <= n < len(args):
            raise RuntimeError("Got argnums=%s, but only %d positional inputs"
                               % (argnums, len(args)))


def _alias(t):
    """A differentiable stand-in for tensor ``t`` in a transform running on the recorded
    graph: a view of it (a node of its own, so that gradients with respect to it flow only
    through the function's uses of the stand-in) when ``t`` carries gradients, else a fresh
    leaf requiring grad. Non-float tensors stay as they are."""
    if not t._dtype.is_floating_point:
        return t
    if t._rg:
        return t.view_as(t)
    return t.detach().requires_grad_()


def _alias_tree(x):
    leaves = []
    spec = _flatten(x, leaves)
    al = [_alias(t) for t in leaves]
    return _unflatten(spec, al), spec, al


def _stack(ts, dim=0):
    from ._shape import stack          # deferred: an op family above func's imports
    return stack(ts, dim=dim)


def _zeros_like(t):
    return _const(np.zeros(t._data.shape, t._dtype.np), t._dtype)


def _graph_grads(outputs, inputs, cotangents):
    """d<cotangents, outputs>/d(inputs) on the recorded graph (create_graph): zeros for
    inputs the outputs do not reach (and for non-float inputs: None)."""
    from .autograd import grad as agrad
    pairs = [(o, c) for o, c in zip(outputs, cotangents)
             if c is not None and o._rg and o._dtype.is_floating_point]
    idx = [i for i, t in enumerate(inputs) if t._rg]
    res = [None if not t._dtype.is_floating_point else _zeros_like(t) for t in inputs]
    if pairs and idx:
        got = agrad([o for o, _ in pairs], [inputs[i] for i in idx], [c for _, c in pairs],
                    retain_graph=True, create_graph=True, allow_unused=True)
        for i, g in zip(idx, got):
            if g is not None:
                res[i] = g
    return res


def _split_aux(out, has_aux, name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError("%s(f, ...)(*args): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True" % name)
    return out


def _gv_graph(func, args, argnums, has_aux):
    """grad_and_value on the recorded graph (nesting)."""
    from ._state import enable_grad
    T = _mods()["T"]
    _argnums_in_range(argnums, args, "grad_and_value")
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    args = list(args)
    parts = []
    for n in nums:
        args[n], spec, al = _alias_tree(args[n])
        parts.append((spec, al))
    with enable_grad():
        out = func(*args)
    value, aux = _split_aux(out, has_aux, "grad_and_value")
    if not isinstance(value, T.Tensor) or value._data.size != 1:
        raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar "
                           "Tensor, got tensor with %d dims."
                           % (value._data.ndim if isinstance(value, T.Tensor) else 0))
    flat = [t for _, al in parts for t in al]
    one = _const(np.ones(value._data.shape, value._dtype.np), value._dtype)
    gs = _graph_grads([value], flat, [one])
    tree, pos = [], 0
    for spec, al in parts:
        tree.append(_unflatten(spec, gs[pos:pos + len(al)]))
        pos += len(al)
    g = tree[0] if isinstance(argnums, int) else tuple(tree)
    return (g, (value, aux)) if has_aux else (g, value)


def _vjp_graph(func, primals, has_aux):
    from ._state import enable_grad
    T = _mods()["T"]
    al_primals, specs, flat = [], [], []
    for p in primals:
        q, spec, al = _alias_tree(p)
        al_primals.append(q)
        specs.append((spec, len(al)))
        flat += al
    with enable_grad():
        out = func(*al_primals)
    out, aux = _split_aux(out, has_aux, "vjp")
    outs = []
    out_spec = _flatten(out, outs)

    def vjp_fn(cotangents):
        cl = []
        spec = _flatten(cotangents, cl)
        if spec != out_spec and len(cl) != len(outs):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function")
        cts = [c if isinstance(c, T.Tensor) else None for c in cl]
        gs = _graph_grads(outs, flat, cts)
        res, pos = [], 0
        for spec, n in specs:
            res.append(_unflatten(spec, gs[pos:pos + n]))
            pos += n
        return tuple(res)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _jac_graph(func, args, argnums, has_aux, name):
    """jacrev / jacfwd on the recorded graph: one recorded backward per output element."""
    from ._state import enable_grad
    _argnums_in_range(argnums, args, name)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    args = list(args)
    parts = []
    for n in nums:
        args[n], spec, al = _alias_tree(args[n])
        parts.append((spec, al))
    with enable_grad():
        out = func(*args)
    out, aux = _split_aux(out, has_aux, name)
    outs = []
    out_spec = _flatten(out, outs)
    flat = [t for _, al in parts for t in al]
    jac = []                                    # per output: per input leaf, a Jacobian
    for o in outs:
        rows = []
        size = o._data.size
        for i in range(size):
            ct = np.zeros(size, o._dtype.np)
            ct[i] = 1
            rows.append(_graph_grads([o], flat, [_const(ct.reshape(o._data.shape), o._dtype)]))
        cols = []
        for k, t in enumerate(flat):
            shape = tuple(o._data.shape) + tuple(t._data.shape)
            if size:
                J = _stack([r[k] for r in rows]).reshape(shape)
            else:
                J = _const(np.zeros(shape, t._dtype.np), t._dtype)
            cols.append(J)
        jac.append(cols)
    res = _jac_tree(out_spec, jac, parts, argnums)
    return (res, aux) if has_aux else res


def _jac_tree(out_spec, jac, parts, argnums):
    """torch.func's structure of a Jacobian: the outputs' tree, each leaf holding the
    argument's tree (a tuple of them for a tuple of argnums)."""
    per_out = []
    for cols in jac:
        tree, pos = [], 0
        for spec, al in parts:
            tree.append(_unflatten(spec, cols[pos:pos + len(al)]))
            pos += len(al)
        per_out.append(tree[0] if isinstance(argnums, int) else tuple(tree))
    return _unflatten(out_spec, per_out)


def _jvp_graph(func, primals, tangents, has_aux):
    """jvp on the recorded graph by the double-backward trick: J t = d<J^T u, t>/du (linear
    in u, so any u serves; zeros)."""
    from ._state import enable_grad
    al_primals, flat = [], []
    for p in primals:
        q, _, al = _alias_tree(p)
        al_primals.append(q)
        flat += al
    tl = []
    for t in tangents:
        _flatten(t, tl)
    with enable_grad():
        out = func(*al_primals)
    out, aux = _split_aux(out, has_aux, "jvp")
    outs = []
    out_spec = _flatten(out, outs)
    us = [_const(np.zeros(o._data.shape, o._dtype.np), o._dtype).requires_grad_()
          if o._dtype.is_floating_point else None for o in outs]
    w = _graph_grads(outs, flat, us)            # J^T u
    pairs = [(wi, ti) for wi, ti, x in zip(w, tl, flat) if wi is not None and wi._rg]
    jv = _graph_grads([p[0] for p in pairs], [u for u in us if u is not None],
                      [p[1] for p in pairs])
    it = iter(jv)
    jvs = [next(it) if u is not None else _zeros_like(o) for u, o in zip(us, outs)]
    res = (out, _unflatten(out_spec, jvs))
    return res + (aux,) if has_aux else res


def _hvp_graph(func, primals, tangents):
    """jvp(grad(f)) on the recorded graph: the Hessian is symmetric, so H t is the gradient
    of <grad f, t> (reverse over reverse: one backward of the gradient's graph, where the
    double-backward trick takes two)."""
    f = func._tg_transform[1]
    (x,), (t,) = primals, tangents
    xa = _alias(x)
    g, _ = _gv_graph(f, (xa,), 0, False)
    return g, _graph_grads([g], [xa], [t])[0]


def _is_hvp(func, primals, tangents):
    """``jvp(grad(f), (x,), (t,))`` of one float tensor, no aux: a Hessian-vector product."""
    tr = getattr(func, "_tg_transform", None)
    T = _mods()["T"]
    return (tr is not None and tr[0] == "grad" and tr[2] == 0 and not tr[3]
            and len(primals) == 1 and type(primals[0]) is T.Tensor
            and type(tangents[0]) is T.Tensor and primals[0]._dtype.is_floating_point)


# ----------------------------------------------------------------------------- the transforms
# vjp and jvp are called with the function each time: their recordings are kept per
# transformed function (nested transforms by their structure, so ``jvp(grad(f), ...)`` made
# anew at each call finds its recording), at most _FUNCS functions (least recently used
# first out).
_FUNCS = 64
_FCACHES = {}
_FLOCK = threading.Lock()


def _tkey(func, kind):
    """A hashable key of a (possibly nested) transformed function."""
    def key(fn):
        tr = getattr(fn, "_tg_transform", None)
        if tr is None:
            return fn
        return (tr[0], key(tr[1])) + tuple(tr[2:])
    try:
        k = (kind, key(func))
        hash(k)
    except TypeError:
        return None
    return k


def _func_cache(kind, func, make):
    k = _tkey(func, kind)
    if k is None:
        return make()
    with _FLOCK:
        c = _FCACHES.pop(k, None)
        if c is None:
            c = make()
        _FCACHES[k] = c                         # (most recent last)
        while len(_FCACHES) > _FUNCS:
            del _FCACHES[next(iter(_FCACHES))]
    return c


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn) (and aux with has_aux): vjp_fn(cotangents) replays the
    compiled reverse sweep of the recording (kept per function across calls)."""
    if _NREC[0] and recording_active():
        return _vjp_graph(func, primals, has_aux)
    _wrap = _mods()["T"]._wrap
    cache = _func_cache("vjp", func, lambda: _Cache(func))
    ct, leaves, outs, _, X, _ = cache.run(primals, False, None, fresh=True)
    vals = [_wrap(v if v.ndim else v[()], dt) for v, (_, dt) in zip(outs, ct.out_meta)]
    out = _unflatten(ct.out_spec, vals)
    out, aux = _split_aux(out, has_aux, "vjp")
    nout = _count_leaves(out)

    def vjp_fn(cotangents):
        cl = []
        _flatten(cotangents, cl)
        if len(cl) != nout:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function")
        cots = [c._data for c in cl] + [None] * (len(ct.out_meta) - len(cl))
        grads = ct.reverse(X, cots)
        gl = [_wrap(g if g is not None else np.zeros(t._data.shape, t._dtype.np), t._dtype)
              for g, t in zip(grads, leaves)]
        res = []
        pos = 0
        for p in primals:
            sub = []
            spec = _flatten(p, sub)
            res.append(_unflatten(spec, gl[pos:pos + len(sub)]))
            pos += len(sub)
        return tuple(res)
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _count_leaves(x):
    leaves = []
    _flatten(x, leaves)
    return len(leaves)


def _jac_replayed(cache, func, args, argnums, has_aux, name):
    """The Jacobian of a recorded function by one compiled reverse replay per output element."""
    T = _mods()["T"]
    _argnums_in_range(argnums, args, name)
    ct, leaves, outs, _, X, key = cache.run(args, False, None, fresh=True)
    vals = [T._wrap(v if v.ndim else v[()], dt) for v, (_, dt) in zip(outs, ct.out_meta)]
    out = _unflatten(ct.out_spec, vals)
    out, aux = _split_aux(out, has_aux, name)
    nout = _count_leaves(out)
    bounds, specs = _arg_specs(args, len(leaves), cache.specs, key)
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    wanted = [i for n in nums for i in range(bounds[n][0], bounds[n][0] + bounds[n][1])]
    jac = []
    for k in range(nout):
        y = outs[k]
        rows = []
        for i in range(y.size):
            cot = np.zeros(y.size, y.dtype)
            cot[i] = 1
            cots = [None] * len(outs)
            cots[k] = cot.reshape(y.shape)
            rows.append(ct.reverse(X, cots, frozenset(wanted)))
        cols = []
        for i in wanted:
            t = leaves[i]
            shape = tuple(y.shape) + tuple(t._data.shape)
            J = np.stack([r[i] if r[i] is not None else np.zeros(t._data.shape, t._dtype.np)
                          for r in rows]).reshape(shape) if y.size else np.zeros(shape, t._dtype.np)
            cols.append(T._wrap(J, t._dtype))
        jac.append(cols)
    parts = [(specs[n], [None] * bounds[n][1]) for n in nums]
    res = _jac_tree(_flatten(out, []), jac, parts, argnums)
    return (res, aux) if has_aux else res


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """The Jacobian by reverse mode (torch.func.jacrev): the function's recording replayed,
    one compiled reverse sweep per output element. Output trees and tuples of argnums give
    torch.func's nested structure."""
    _check_argnums(argnums)
    cache = _Cache(func)

    def wrapper(*args):
        if _NREC[0] and recording_active():
            return _jac_graph(func, args, argnums, has_aux, "jacrev")
        return _jac_replayed(cache, func, args, argnums, has_aux, "jacrev")
    wrapper._cache = cache
    wrapper._tg_transform = ("jacrev", func, argnums, has_aux)
    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian with torch.func.jacfwd's signature and result structure (out.shape +
    in.shape per output and argument; tuples for tuple outputs / argnums; ``(jacobian, aux)``
    with has_aux). tapegrad has no forward mode: it is computed in reverse mode, as
    ``jacrev`` (the same values), and replayed compiled like it."""
    _check_argnums(argnums)
    cache = _Cache(func)

    def wrapper(*args):
        if _NREC[0] and recording_active():
            return _jac_graph(func, args, argnums, has_aux, "jacfwd")
        return _jac_replayed(cache, func, args, argnums, has_aux, "jacfwd")
    wrapper._cache = cache
    wrapper._tg_transform = ("jacfwd", func, argnums, has_aux)
    return wrapper


def hessian(func, argnums=0):
    """The Hessian, as torch.func: ``jacfwd(jacrev(func, argnums), argnums)`` (replayed: the
    recording of jacrev's backward pass, one compiled reverse sweep per gradient element)."""
    h = jacfwd(jacrev(func, argnums), argnums)
    h._tg_transform = ("hessian", func, argnums)
    return h


def _detach_tree(x):
    T = _mods()["T"]
    if isinstance(x, T.Tensor):
        return x.detach()
    if isinstance(x, (tuple, list)):
        return type(x)(_detach_tree(v) for v in x)
    if isinstance(x, dict):
        return {k: _detach_tree(v) for k, v in x.items()}
    return x


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J @ tangents) with torch.func.jvp's signature and structure
    (``(output, jvp_out, aux)`` with has_aux). tapegrad has no forward mode: the product is
    recorded by the double-backward trick (or, for ``jvp(grad(f), ...)``, as the gradient
    of <grad f, t>: the Hessian is symmetric) and replayed compiled, kept per function. A
    repeated call with the function and signature of an earlier one takes its fast call."""
    if type(primals) is tuple and type(tangents) is tuple and not _NREC[0]:
        got = _JVP_FAST.get((id(func), len(primals), has_aux))
        if got is not None and got[0] is func:
            res = got[1](primals + tangents)
            if res is not None:
                if has_aux:
                    return res[0], res[1], _detach_tree(res[2])
                return res[0], res[1]
    for what, x in (("primals", primals), ("tangents", tangents)):
        if not isinstance(x, tuple):
            raise RuntimeError("jvp(f, primals, tangents): Expected %s to be a tuple. E.g. it "
                               "should be valid to call f(*primals)." % what)
    if len(primals) != len(tangents):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure. For example, if primals is a tuple of 3 "
                           "tensors, tangents also must be. Got primals with structure %d and "
                           "tangents with structure %d" % (len(primals), len(tangents)))
    for p, t in zip(primals, tangents):
        pl, tl = [], []
        _flatten(p, pl)
        _flatten(t, tl)
        if len(pl) != len(tl) or any(a._data.shape != b._data.shape for a, b in zip(pl, tl)):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to "
                               "have the same python structure and shapes")
    if _NREC[0] and recording_active():
        if not has_aux and _is_hvp(func, primals, tangents):
            return _hvp_graph(func, primals, tangents)
        return _jvp_graph(func, primals, tangents, has_aux)
    n = len(primals)

    def both(*xs):
        if not has_aux and _is_hvp(func, xs[:n], xs[n:]):
            return _hvp_graph(func, xs[:n], xs[n:])
        return _jvp_graph(func, xs[:n], xs[n:], has_aux)
    cache = _func_cache(("jvp", n, has_aux), func, lambda: _Cache(both, watch=func))
    T = _mods()["T"]
    args = tuple(primals) + tuple(tangents)
    ct, leaves, outs, _, X, key = cache.run(args, False, None)
    vals = [T._wrap(v if v.ndim else v[()], dt) for v, (_, dt) in zip(outs, ct.out_meta)]
    res = _unflatten(ct.out_spec, vals)
    if len(cache.tapes.get(key, ())) == 1 and ct.eager is None:
        fast = _fast_forward(cache, args, ct)
        if fast is not None:
            with _FLOCK:
                _JVP_FAST[(id(func), n, has_aux)] = (func, fast)
                while len(_JVP_FAST) > _FUNCS:
                    del _JVP_FAST[next(iter(_JVP_FAST))]
    if has_aux:
        return res[0], res[1], _detach_tree(res[2])
    return res[0], res[1]


_JVP_FAST = {}      # (id(func), n, has_aux) -> (func, fast call): jvp's repeated calls


def _fast_forward(cache, args, ct):
    """A forward-only fast call for one signature of a recording (jvp's): ``fast(args)``
    returns the output tree, or None when ``args`` has another signature or the tape needs
    the general path. None when the tape has no forward runner."""
    match = _matcher(args)
    if match is None:
        return None
    run = ct.forward_runner()
    if run is None:
        return None
    _wrap = _mods()["T"]._wrap
    dts = [dt for _, dt in ct.out_meta]
    spec = ct.out_spec
    spec_key = next((k for k, vs in cache.tapes.items() if ct in vs), None)

    def fast(args):
        leaves = match(args)
        if leaves is None:
            return None
        cache.check_names()
        vs = cache.tapes.get(spec_key)
        if not vs or vs[0] is not ct:           # (forgotten: rebound names, LRU)
            return None
        res = run(leaves)
        if res is None:
            return None
        return _unflatten(spec, [_wrap(v if v.ndim else v[()], dt) for v, dt in zip(res, dts)])
    return fast


class _NotBatchable(Exception):
    pass


def _take(x, d, p):
    """Point p of a tree of tensors batched along dim d (None: not batched)."""
    T = _mods()["T"]
    if d is None:
        return x
    if isinstance(x, T.Tensor):
        return T._wrap(np.take(x._data, p, axis=d), x._dtype)
    if isinstance(x, (tuple, list)):
        return type(x)(_take(v, d, p) for v in x)
    if isinstance(x, dict):
        return {k: _take(v, d, p) for k, v in x.items()}
    return x


def _vmap_loop(func, args, dims, P, out_dims):
    """Point by point (functions the batched interpreter cannot run)."""
    T = _mods()["T"]
    results = [func(*[_take(a, d, p) for a, d in zip(args, dims)]) for p in range(P)]
    return _stack_tree(results, out_dims, T)


def _stack_tree(results, out_dims, T):
    first = results[0]
    if isinstance(first, T.Tensor):
        return T._wrap(np.stack([r._data for r in results], axis=out_dims), first._dtype)
    if isinstance(first, (tuple, list)):
        od = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(first)
        return type(first)(_stack_tree([r[k] for r in results], od[k], T) for k in range(len(first)))
    if isinstance(first, dict):
        return {k: _stack_tree([r[k] for r in results], out_dims, T) for k in first}
    raise ValueError("vmap: `%s` must only return Tensors, got type %s as a return"
                     % (getattr(results, "__name__", "func"), type(first).__name__))


def _vmap_batched(func, cache, args, dims, P, out_dims):
    """All P points in the batched interpreter: each tape entry interpreted once per chunk of
    points. Points whose recorded branch decisions do not hold are evaluated again with the
    variant recorded for them."""
    T = _mods()["T"]
    tr = _grad_transform(func)
    kind, f, argnums, has_aux = tr if tr is not None else ("call", func, None, False)
    point0 = [_take(a, d, 0) for a, d in zip(args, dims)]
    cache.check_names()
    key, pleaves = cache.key(point0)
    full, batched = [], []
    for a, d in zip(args, dims):
        sub = []
        _flatten(a, sub)
        for t in sub:
            full.append(np.moveaxis(t._data, d, 0) if d is not None else t._data)
            batched.append(d is not None)
    if not any(batched):
        raise _NotBatchable("no batched argument")
    idx = None                      # the points still to evaluate (None: all P)
    outs = grads = None
    tried = set()
    while idx is None or idx.size:
        cands = [t for t in cache.tapes.get(key, ()) if id(t) not in tried]
        if cands:
            ct = cands[0]
        elif len(tried) >= 4 * cache.MAX_VARIANTS:
            raise _NotBatchable("too many branch variants")
        else:
            ct = cache.record(key, [_take(a, d, 0 if idx is None else int(idx[0]))
                                    for a, d in zip(args, dims)])
        tried.add(id(ct))
        why = ct.batch_blocker()
        if why:
            raise _NotBatchable(why)
        cot = None
        if kind != "call":
            if ct.out_meta[0][0] != () and int(np.prod(ct.out_meta[0][0])) != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   "scalar Tensor, got tensor with %d dims."
                                   % len(ct.out_meta[0][0]))
            cot = [(np.ones(1), False)] + [None] * (len(ct.out_nodes) - 1)
        sub = idx
        n = P if idx is None else idx.size
        vals = [v[sub] if (b and sub is not None) else v for v, b in zip(full, batched)]
        o, g, ok = ct.batch(vals, batched, n, cot)
        if outs is None and ok.all():               # one variant served every point
            outs, metas = o, ct.out_meta
            grads = [a if a is not None else np.zeros((P,) + tuple(ct.in_meta[k][0]), ct.in_meta[k][1].np)
                     for k, a in enumerate(g)] if kind != "call" else None
            break
        if idx is None:
            idx = np.arange(P)
        if outs is None:
            outs = [np.empty((P,) + a.shape[1:], a.dtype) for a in o]
            metas = ct.out_meta
            grads = [None] * len(pleaves)
        for k, a in enumerate(o):
            outs[k][idx[ok]] = a[ok]
        if kind != "call":
            for k, a in enumerate(g):
                if grads[k] is None:
                    shape, dt = ct.in_meta[k]
                    grads[k] = np.zeros((P,) + tuple(shape), dt.np)
                if a is not None:
                    grads[k][idx[ok]] = a[ok]
        idx = idx[~ok]
    vals = [T._wrap(a, dt) for a, (_, dt) in zip(outs, metas)]
    out = _unflatten(ct.out_spec, vals)
    if kind == "call":
        res = out
    else:
        g = _select(grads, [_Batched(t, P) for t in pleaves], point0, argnums)
        if kind == "grad_and_value":
            res = (g, (out[0], out[1]) if has_aux else out)
        else:
            res = (g, out[1]) if has_aux else g
    return _move_out(res, out_dims, T)


class _Batched:
    """A leaf's dtype and batched shape (what _select needs for zeros and wrapping)."""
    def __init__(self, t, P):
        self._dtype = t._dtype
        self._data = np.empty((P,) + t._data.shape, dtype=np.uint8)


def _move_out(res, out_dims, T):
    if isinstance(res, T.Tensor):
        if out_dims in (0, None):
            return res
        return T._wrap(np.ascontiguousarray(np.moveaxis(res._data, 0, out_dims)), res._dtype)
    if isinstance(res, (tuple, list)):
        od = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(res)
        return type(res)(_move_out(r, d, T) for r, d in zip(res, od))
    if isinstance(res, dict):
        return {k: _move_out(v, out_dims, T) for k, v in res.items()}
    return res


def _grad_transform(func):
    """(kind, f, argnums, has_aux) when func is ``grad`` / ``grad_and_value`` of f (vmap runs
    f's recording with a cotangent in the batched interpreter), else None."""
    tr = getattr(func, "_tg_transform", None)
    return tr if tr is not None and tr[0] in ("grad", "grad_and_value") else None


def _vmap_graph(func, args, dims, P, out_dims):
    """vmap on the recorded graph (nesting): point by point through recorded indexing, the
    results stacked by a recorded ``stack``."""
    T = _mods()["T"]

    def take(x, d, p):
        if d is None:
            return x
        if isinstance(x, T.Tensor):
            return x.select(d, p)
        if isinstance(x, (tuple, list)):
            return type(x)(take(v, d, p) for v in x)
        if isinstance(x, dict):
            return {k: take(v, d, p) for k, v in x.items()}
        return x
    results = [func(*[take(a, d, p) for a, d in zip(args, dims)]) for p in range(P)]

    def stack(rs, od):
        first = rs[0]
        if isinstance(first, T.Tensor):
            return _stack(rs, od)
        if isinstance(first, (tuple, list)):
            ods = od if isinstance(od, (tuple, list)) else (od,) * len(first)
            return type(first)(stack([r[k] for r in rs], ods[k]) for k in range(len(first)))
        if isinstance(first, dict):
            return {k: stack([r[k] for r in rs], od) for k in first}
        raise ValueError("vmap: `%s` must only return Tensors, got type %s as a return"
                         % (getattr(func, "__name__", "func"), type(first).__name__))
    return stack(results, out_dims)


def vmap(func, in_dims=0, out_dims=0, *, progress=None, reduce=None):
    """Map func over a batch dimension of its arguments (torch.func.vmap).

    When func is recordable (a plain tensor function, or tapegrad.func.grad / grad_and_value
    of one), the batch runs in the batched interpreter: the function is recorded once on one
    point, then every tape entry is interpreted once per chunk of points, with the inner loop
    over the chunk (values slot-major), chunks spread over the cores. Otherwise (custom
    Functions, very large per-point nodes, non-tensor outputs) it runs point by point.

    ``progress`` (None: only for long jobs on a terminal), ``reduce`` (None, "sum", "mean":
    the batch's sum of each per-point result, evaluated in pieces) and Dask array arguments
    (lazy Dask results): tapegrad/_progress.py, tapegrad/_dask.py, docs/scaling.md."""
    own = _Cache(func)

    def wrapper(*args):
        dims = tuple(in_dims) if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError("vmap(%s, in_dims=%s, ...)(<inputs>): in_dims is not compatible "
                             "with the structure of `inputs`. in_dims has structure %s but "
                             "inputs has %d arguments" % (getattr(func, "__name__", "func"),
                                                          in_dims, dims, len(args)))
        sizes = set()
        for a, d in zip(args, dims):
            if d is None:
                continue
            sub = []
            _flatten(a, sub)
            for t in sub:
                if not -t._data.ndim <= d < max(t._data.ndim, 1):
                    raise ValueError("vmap(%s, in_dims=%s, ...)(<inputs>): Got in_dim=%d for an "
                                     "input but the input is of type %s. We cannot vmap over "
                                     "non-Tensor arguments or dims out of range"
                                     % (getattr(func, "__name__", "func"), in_dims, d, type(t)))
                sizes.add(t._data.shape[d])
        if len(sizes) != 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             "dimension, got sizes %s for the mapped dimension" % sorted(sizes))
        (P,) = sizes
        if _NREC[0] and recording_active():
            return _vmap_graph(func, args, dims, P, out_dims)
        cache = func._cache if _grad_transform(func) is not None else own
        try:
            return _vmap_batched(func, cache, args, dims, P, out_dims)
        except _NotBatchable as e:
            log.debug("tapegrad.func.vmap: %s runs point by point (%s)",
                      getattr(func, "__name__", func), e)
        except NotImplementedError as e:
            log.debug("tapegrad.func.vmap: %s runs point by point (%s)",
                      getattr(func, "__name__", func), e)
        return _vmap_loop(func, args, dims, P, out_dims)
    wrapper._cache = own
    out = _scaled(wrapper, func, in_dims, out_dims, progress, reduce, sys.modules[__name__])
    out._tg_transform = ("vmap", func, in_dims, out_dims, progress, reduce)
    return out


# ----------------------------------------------------------------------------- compile
def compile(func):
    """``func`` with the same semantics, autograd included, replayed from its recorded tape:
    the outputs carry a grad_fn whose backward is the tape's compiled reverse sweep."""
    from .autograd.function import Function
    cache = _Cache(func)

    class Compiled(Function):
        @staticmethod
        def forward(ctx, n_out, *args):
            from .tensor import _wrap
            ct, leaves, outs, _, X, _ = cache.run(args, False, None, fresh=True)
            ctx.ct, ctx.X = ct, X
            return tuple(_wrap(v if v.ndim else v[()], dt) for v, (_, dt) in zip(outs, ct.out_meta))

        @staticmethod
        def backward(ctx, *gouts):
            grads = ctx.ct.reverse(ctx.X, [None if g is None else g._data for g in gouts])
            return (None,) + tuple(None if g is None else _wrap_grad(g) for g in grads)

    def _wrap_grad(g):
        from .tensor import _wrap
        return _wrap(g if g.ndim else g[()], _dt_of(g))

    def _dt_of(g):
        from .tensor import float32, float64
        return float64 if g.dtype == np.float64 else float32

    Compiled.__name__ = "Compiled_%s" % getattr(func, "__name__", "fn")

    def wrapper(*args):
        for a in args:
            from .tensor import Tensor
            if not isinstance(a, Tensor):
                raise TypeError("tapegrad.compile: arguments must be Tensors (got %s)"
                                % type(a).__name__)
        outs = Compiled.apply(0, *args)
        return outs[0] if len(outs) == 1 else outs
    wrapper._cache = cache
    return wrapper
