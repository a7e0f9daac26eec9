"""Random programs over tapegrad's whole public API, for the differential runners.

A ``DProgram`` is straight-line torch code: input tensors (literal values), then statements
calling any public function, Tensor method or operator (``_api_specs.SPECS`` plus the
operators), then an *ending* (``backward``, ``autograd.grad``, a ``create_graph`` second
order, ``retain_graph``). It prints as a runnable Python script (``import tapegrad as torch``)
and runs statement by statement on tapegrad or torch.

Programs are drawn through a ``Chooser``: every decision is an integer choice whose 0 is the
simplest option. ``RandomChooser`` draws (and records the sequence), ``ReplayChooser`` replays
a recorded sequence (exhausted: zeros), ``HypothesisChooser`` draws from hypothesis' data.
Drawing executes each statement on a reference library (torch when installed, else
tapegrad) so arguments fit the actual shapes: any choice sequence gives a valid program,
which is what makes shrinking (hypothesis', or ``shrink_choices``) work.
"""
import math
import random

import numpy as np

from . import _api_hints as H
from ._api_specs import SPECS as _GEN_SPECS

__all__ = ["Chooser", "RandomChooser", "ReplayChooser", "HypothesisChooser", "DProgram",
           "Input", "Stmt", "generate", "SPECS", "drawable_keys", "OPERATOR_KEYS"]

SPECS = dict(_GEN_SPECS)
SPECS.update(H.MANUAL)

# operators and indexing (not names, but what users type most)
OPERATOR_KEYS = ("op.binary", "op.rbinary", "op.unary", "op.inplace", "op.getitem",
                 "op.setitem")
BINOPS = ("+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>", "==", "!=", "<",
          "<=", ">", ">=")
UNOPS = ("-", "abs", "~", "+")


def drawable_keys():
    keys = [k for k in sorted(SPECS) if k not in H.EXCLUDED]
    return tuple(keys) + OPERATOR_KEYS


# ================================================================ choosers
class Chooser:
    """Integer choices; option 0 is always the simplest (shrinking goes there). ``marks``:
    the positions in ``seq`` where each statement's choices begin (for shrinking by
    whole statements)."""

    def mark(self):
        seq = getattr(self, "seq", None)
        if seq is not None:
            if not hasattr(self, "marks"):
                self.marks = []
            self.marks.append(len(seq))

    def integer(self, n, weights=None):
        raise NotImplementedError

    def boolean(self, p_true=0.5):
        return self.integer(2, (1 - p_true, p_true)) == 1

    def choice(self, seq, weights=None):
        seq = tuple(seq)
        return seq[self.integer(len(seq), weights)]


class RandomChooser(Chooser):
    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.seq = []

    def integer(self, n, weights=None):
        if n <= 1:
            v = 0
        elif weights is None:
            v = self.rng.randrange(n)
        else:
            v = self.rng.choices(range(n), weights=weights[:n])[0]
        self.seq.append(v)
        return v


class ReplayChooser(Chooser):
    def __init__(self, seq):
        self.src = list(seq)
        self.i = 0
        self.seq = []

    def integer(self, n, weights=None):
        v = self.src[self.i] if self.i < len(self.src) else 0
        self.i += 1
        v = min(max(int(v), 0), max(n - 1, 0))
        self.seq.append(v)
        return v


class HypothesisChooser(Chooser):
    """Choices drawn by hypothesis (``data``: a ``st.data()`` object or the ``draw`` of a
    composite strategy), so hypothesis shrinks the program."""

    def __init__(self, data):
        from hypothesis import strategies as st
        self.draw = data.draw if hasattr(data, "draw") else data
        self.st = st
        self.seq = []

    def integer(self, n, weights=None):
        v = 0 if n <= 1 else self.draw(self.st.integers(0, n - 1))
        self.seq.append(v)
        return v


# ================================================================ program data
class Input:
    """A leaf tensor literal: ``x0 = torch.tensor([...], dtype=..., requires_grad=...)``."""

    def __init__(self, name, values, dtype, requires_grad):
        self.name = name
        self.values = np.asarray(values)
        self.dtype = dtype
        self.requires_grad = bool(requires_grad)

    @property
    def shape(self):
        return self.values.shape

    def source(self):
        rg = ", requires_grad=True" if self.requires_grad else ""
        if self.values.size == 0:
            return "%s = torch.zeros(%s, dtype=torch.%s%s)" % (
                self.name, ", ".join(map(str, self.shape)) or "()", self.dtype, rg)
        return "%s = torch.tensor(%s, dtype=torch.%s%s)" % (
            self.name, _lit(self.values, self.dtype), self.dtype, rg)


def _num(v, dtype="float64"):
    if dtype == "bool":
        return "True" if v else "False"
    if dtype.startswith("int") or dtype == "uint8":
        return str(int(v))
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if dtype == "float32":          # the shortest literal that rounds to this float32
        r = str(np.float32(v))
        return r if float(np.float32(float(r))) == float(np.float32(v)) else repr(v)
    if dtype == "float16":
        r = str(np.float16(v))
        return r if float(np.float16(float(r))) == float(np.float16(v)) else repr(v)
    return repr(v)


def _lit(a, dtype):
    if a.ndim == 0:
        return _num(a[()], dtype)
    return "[" + ", ".join(_lit(x, dtype) for x in a) + "]"


class Stmt:
    """One statement. ``op``: the spec key it exercises; ``reads``: value names it reads;
    ``outs``: value expressions it defines (tensors); ``writes``: values it modifies in
    place; ``phase``: "body" or "end"."""

    def __init__(self, code, op, reads=(), outs=(), writes=(), phase="body", target=None):
        self.code = code
        self.op = op
        self.reads = tuple(reads)
        self.outs = tuple(outs)
        self.writes = tuple(writes)
        self.phase = phase
        self.target = target

    def __repr__(self):
        return "Stmt(%r)" % self.code


class DProgram:
    """Inputs, body statements, ending statements and the expressions compared after the
    ending (``observe``: ``x0.grad``, ``grads[1]`` ...)."""

    def __init__(self, inputs, stmts, observe=(), choices=None, consts=()):
        self.inputs = list(inputs)
        self.stmts = list(stmts)
        self.observe = tuple(observe)
        self.choices = choices
        self.consts = tuple(consts)

    @property
    def ops(self):
        return tuple(s.op for s in self.stmts if s.phase == "body")

    def source(self, lib="tapegrad", observe=True):
        head = ["import %s as torch" % lib if lib != "torch" else "import torch",
                "F = torch.nn.functional", "from math import nan, inf", ""]
        body = [i.source() for i in self.inputs] + [s.code for s in self.stmts]
        if observe and self.observe:
            body.append("print(%s)" % ", ".join(self.observe))
        return "\n".join(head + body)

    __str__ = source

    def __repr__(self):
        return self.source()

    def namespace(self, lib):
        import importlib
        ns = {"torch": lib, "F": lib.nn.functional, "nan": math.nan, "inf": math.inf,
              "np": np, "importlib": importlib}
        return ns

    def input_code(self, lib_name_is_torch=False):
        return [i.source() for i in self.inputs]

    def replay_source(self):
        """The body as a function of the float inputs: ``def f(x0, x1, ...): ...; return
        loss`` (None when the body has no differentiable loss)."""
        loss = [s for s in self.stmts if s.phase == "loss"]
        if not loss:
            return None
        args = ", ".join(i.name for i in self.inputs)
        lines = ["def f(%s):" % args]
        for s in self.stmts:
            if s.phase in ("body", "loss"):
                lines.extend("    " + ln for ln in s.code.split("\n"))
        lines.append("    return loss")
        return "\n".join(lines)


# ================================================================ values
PROFILES = ("dom", "round", "small", "adversarial", "ties", "normal", "wide")
_PROFILE_W = (0.45, 0.15, 0.1, 0.15, 0.05, 0.05, 0.05)
_ADV = (0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, math.nan, math.inf, -math.inf, 1e30, -1e30,
        1e-30, 3.0, -3.0, 0.1)


def make_values(profile, domain, shape, dtype, seed):
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "bool":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dtype.startswith("int") or dtype == "uint8":
        if domain == "int" or dtype == "uint8":
            return rng.integers(0, 4, size=shape).astype(np.int64)
        return rng.integers(-3, 5, size=shape).astype(np.int64)
    if profile == "dom":
        profile = {"pos": "pos", "unit": "unit", "prob": "prob", "ge1": "ge1",
                   "sorted": "sorted"}.get(domain, "round")
    if profile == "round":
        v = np.round(rng.uniform(-2, 2, n), 1)
    elif profile == "small":
        v = rng.integers(-2, 4, n).astype(float)
    elif profile == "pos":
        v = np.round(rng.uniform(0.1, 3, n), 2)
    elif profile == "unit":
        v = np.round(rng.uniform(-0.9, 0.9, n), 2)
    elif profile == "prob":
        v = np.round(rng.uniform(0.05, 0.95, n), 2)
    elif profile == "ge1":
        v = np.round(rng.uniform(1.1, 3, n), 2)
    elif profile == "sorted":
        v = np.sort(np.round(rng.uniform(-2, 2, n), 1))
    elif profile == "adversarial":
        v = np.array([_ADV[i] for i in rng.integers(0, len(_ADV), n)], dtype=float)
        keep = rng.random(n) < 0.3
        v[keep] = np.round(rng.normal(size=int(keep.sum())), 2)
    elif profile == "ties":
        v = rng.choice(np.round(rng.uniform(-2, 2, 2), 1), n)
    elif profile == "normal":
        v = np.round(rng.normal(size=n), 4)
    else:                                                    # wide
        v = np.round(np.sign(rng.normal(size=n)) * 10.0 ** rng.uniform(-6, 6, n), 8)
    v = v.reshape(shape)
    if dtype == "float32":
        v = v.astype(np.float32).astype(np.float64)          # exactly representable
    elif dtype == "float16":
        v = v.astype(np.float16).astype(np.float64)
    return v


# ================================================================ the generator
class _Val:
    __slots__ = ("expr", "obj", "base")

    def __init__(self, expr, obj):
        self.expr = expr
        self.obj = obj

    @property
    def shape(self):
        return tuple(self.obj.shape)

    @property
    def dtype(self):
        return str(self.obj.dtype).replace("torch.", "")

    @property
    def rg(self):
        return bool(self.obj.requires_grad)

    @property
    def nd(self):
        return len(self.obj.shape)

    @property
    def is_float(self):
        return self.dtype.startswith("float")


class _Discard(Exception):
    """The drawn statement cannot be used (raised on the reference and not kept)."""


def _base(key):
    name = key.split(".", 1)[1]
    return name[:-1] if name.endswith("_") and not name.endswith("__") else name


class Gen:
    """Draws one program, executing each statement on ``ref`` (torch or tapegrad)."""

    def __init__(self, ch, ref, *, max_steps=5, keys=None, keep_errors=0.15,
                 endings=None, key_weights=None, float_only=False):
        self.ch = ch
        self.ref = ref
        self.ns = {"torch": ref, "F": ref.nn.functional, "nan": math.nan, "inf": math.inf}
        self.inputs = []
        self.stmts = []
        self.vals = []
        self.max_steps = max_steps
        self.keys = tuple(keys) if keys is not None else drawable_keys()
        if key_weights is None:     # operators and indexing: ~12% of the statements
            key_weights = [25.0 if k.startswith("op.") else 1.0 for k in self.keys]
        self.key_weights = key_weights
        self.keep_errors = keep_errors
        self.endings = endings
        self.float_only = float_only
        self.consts = set()
        self.pending = []
        self.dead = False
        self.nvals = 0
        self.gen_errors = []

    # ---------------------------------------------------------------- tensors
    def shape(self, min_nd=0, max_nd=3):
        nds = [d for d in (1, 0, 2, 3) if min_nd <= d <= max_nd] or [min_nd]
        w = {1: 0.3, 0: 0.15, 2: 0.4, 3: 0.15}
        nd = self.ch.choice(nds, [w.get(d, 0.1) for d in nds])
        return tuple(self.side() for _ in range(nd))

    def side(self, lo=0):
        opts = [s for s in (2, 1, 3, 4, 0) if s >= lo]
        w = {2: 0.35, 1: 0.2, 3: 0.26, 4: 0.14, 0: 0.05}
        return self.ch.choice(opts, [w[s] for s in opts])

    def dtype(self, allow=("float64", "float32", "int64", "bool")):
        if self.float_only:
            allow = tuple(a for a in allow if a.startswith("float")) or ("float64",)
        w = {"float64": 0.6, "float32": 0.25, "int64": 0.1, "bool": 0.05}
        return self.ch.choice(allow, [w.get(a, 0.1) for a in allow])

    def fresh(self, shape=None, dtype=None, domain=None, rg=None, values=None):
        """A new input tensor (committed with the statement)."""
        if shape is None:
            shape = self.shape()
        if dtype is None:
            dtype = {"int": "int64", "bool": "bool"}.get(domain) if domain in (
                "int", "bool") and self.ch.boolean(0.85) else self.dtype()
        if values is None:
            prof = self.ch.choice(PROFILES, _PROFILE_W)
            seed = self.ch.integer(1 << 16)
            values = make_values(prof, domain, shape, dtype, seed)
        if rg is None:
            rg = dtype.startswith("float") and self.ch.boolean(0.8)
        name = "x%d" % (len(self.inputs) + len(self.pending))
        inp = Input(name, values, dtype, rg and dtype.startswith("float"))
        self.pending.append(inp)
        obj = self._make_input(inp)
        return _Val(name, obj)

    def _make_input(self, inp):
        ns = {"torch": self.ref, "nan": math.nan, "inf": math.inf}
        exec(inp.source(), ns)                                  # noqa: S102 - our own source
        return ns[inp.name]

    def tensor(self, *, shape=None, dtype=None, domain=None, like=None, pred=None,
               p_existing=0.5, rg=None):
        """A tensor argument: an existing value satisfying ``pred`` or a fresh input."""
        cands = [v for v in reversed(self.vals) if pred is None or pred(v)]
        if cands and not self.ch.boolean(1 - p_existing):
            return self.ch.choice(cands[:6])
        if like is not None:
            shape = like.shape if shape is None else shape
            dtype = like.dtype if dtype is None else dtype
        return self.fresh(shape, dtype, domain, rg)

    def inplace_target(self, domain=None):
        """The target of an in-place op: mostly an existing non-leaf, or a fresh input made
        a non-leaf by a ``clone()`` statement, sometimes a plain tensor or a leaf that
        requires grad (torch's error)."""
        cands = [v for v in reversed(self.vals) if v.is_float and not v.obj.is_leaf]
        c = self.ch.integer(4, (0.45, 0.35, 0.12, 0.08))
        if c == 0 and cands:
            return self.ch.choice(cands[:4])
        if c <= 1:
            x = self.fresh(domain=domain, dtype=self.dtype(("float64", "float32")), rg=True)
            t = self.new_target()
            st = self.emit("%s = %s.clone()" % (t, x.expr), "Tensor.clone", [x.expr],
                           target=t)
            if st is None or self.dead:
                raise _Discard()
            return self.vals[-1]
        if c == 2:
            return self.fresh(domain=domain, rg=False)
        return self.fresh(domain=domain)

    # ---------------------------------------------------------------- numbers
    def dim(self, nd, allow_bad=True):
        if nd == 0:
            opts = [0, -1] + ([1] if allow_bad else [])
            return self.ch.choice(opts, [0.5, 0.45, 0.05][:len(opts)])
        opts = list(range(nd)) + list(range(-1, -nd - 1, -1))
        w = [1.0] * len(opts)
        if allow_bad:
            opts += [nd, -nd - 1]
            w += [0.06 * len(w)] * 2
        return self.ch.choice(opts, w)

    def scalar(self, kind="S", name=""):
        opts = (2, 0.5, -1, 0, 1, 3, -0.5, 1.5, -2, 0.001, 10, math.nan, math.inf)
        w = (0.16, 0.14, 0.1, 0.08, 0.1, 0.06, 0.06, 0.06, 0.05, 0.03, 0.03, 0.02, 0.02)
        v = self.ch.choice(opts, w)
        if kind == "I" or (kind == "S" and self.ch.boolean(0.3)):
            v = int(v) if math.isfinite(v) else 2
        if kind == "F" and isinstance(v, int):
            v = float(v)
        self.consts.add(v)
        return v

    # ---------------------------------------------------------------- statements
    def emit(self, code, op, reads, phase="body", target=None, outs_from=None):
        """Execute ``code`` on the reference; on success record the statement and its new
        values, else raise _Discard (or keep it as the program's last statement)."""
        compile(code, "<stmt>", "exec")               # a SyntaxError is a drawing bug
        try:
            for inp in self.pending:
                exec(inp.source(), self.ns)                       # noqa: S102 - our source
            exec(code, self.ns)                                   # noqa: S102 - our source
            ok = True
        except Exception as e:                                    # noqa: BLE001
            ok = False
            self.last_error = e
        if not ok:
            if phase == "body" and self.ch.boolean(self.keep_errors):
                self._commit(Stmt(code, op, reads, (), (), phase, target))
                self.dead = True
                return None
            self.pending = []
            raise _Discard()
        outs = []
        if target is not None:
            res = self.ns[target]
            outs = self._outs(target, res)
        writes = ()
        st = Stmt(code, op, reads, [o.expr for o in outs], writes, phase, target)
        self._commit(st)
        self.vals.extend(outs)
        return st

    def _commit(self, st):
        import re
        used = set(re.findall(r"\bx\d+\b", st.code))
        self.pending = [i for i in self.pending if i.name in used]
        # renumber the inputs kept so that names stay consecutive
        for inp in self.pending:
            want = "x%d" % len(self.inputs)
            if inp.name != want:
                st.code = re.sub(r"\b%s\b" % inp.name, want, st.code)
                st.reads = tuple(want if r == inp.name else r for r in st.reads)
                self.ns[want] = self.ns.pop(inp.name)
                inp.name = want
            self.inputs.append(inp)
            self.vals.append(_Val(inp.name, self.ns[inp.name]))
        self.pending = []
        self.stmts.append(st)

    def _outs(self, target, res):
        T = self.ref.Tensor
        if isinstance(res, T):
            return [_Val(target, res)]
        if isinstance(res, (tuple, list)):
            return [_Val("%s[%d]" % (target, i), r) for i, r in enumerate(res[:4])
                    if isinstance(r, T)]
        return []

    def new_target(self):
        t = "v%d" % self.nvals
        self.nvals += 1
        return t

    # ---------------------------------------------------------------- program
    def program(self):
        nsteps = 1 + self.ch.integer(self.max_steps, [0.3, 0.25, 0.2, 0.15, 0.1][:self.max_steps]
                                     if self.max_steps <= 5 else None)
        attempts = 0
        while len([s for s in self.stmts if s.phase == "body"]) < nsteps and not self.dead \
                and attempts < 4 * nsteps + 4:
            attempts += 1
            self.ch.mark()
            key = self.ch.choice(self.keys, self.key_weights)
            nv = self.nvals
            try:
                self.call(key)
            except _Discard:
                self.pending = []
                self.nvals = nv
                continue
            except Exception as e:                # noqa: BLE001 - a drawing bug: count it
                self.pending = []
                self.nvals = nv
                self.gen_errors.append((key, repr(e)))
                continue
        self.ch.mark()
        if not self.dead:
            self.ending()
        prog = DProgram(self.inputs, self.stmts, self.observe, getattr(self.ch, "seq", None),
                        sorted(self.consts, key=repr))
        prog.marks = list(getattr(self.ch, "marks", ()))
        return prog

    # ---------------------------------------------------------------- endings
    observe = ()

    def ending(self):
        names = {i.name for i in self.inputs}
        diff = [v for v in self.vals if v.is_float and v.rg and not (
            v.expr in names and v.obj.is_leaf)]
        leaves = [i.name for i in self.inputs if i.requires_grad]
        if not diff or not leaves:
            self.observe = ()
            return
        kinds = ("backward", "grad", "grad2", "retain", "twice") if self.endings is None \
            else self.endings
        kind = self.ch.choice(kinds, [0.45, 0.2, 0.2, 0.1, 0.05][:len(kinds)])
        terms = []
        for v in diff[-6:]:
            n = int(np.prod(v.shape, dtype=np.int64))
            shp = ", ".join(map(str, v.shape)) if v.shape else "()"
            if len(v.shape) == 1:
                shp += ","
            terms.append("(%s * torch.arange(1., %d.).reshape(%s)).sum()" % (
                v.expr, n + 1, shp))
        code = "loss = " + " + ".join(terms)
        try:
            self.emit(code, "loss", [v.expr for v in diff[-6:]], phase="loss", target="loss")
        except _Discard:
            self.observe = ()
            return
        if not self.ns["loss"].requires_grad:
            self.observe = ()
            return
        lv = ", ".join(leaves)
        retained = [v.expr for v in self.vals if v.expr in self._retained()]
        obs = []
        if kind in ("backward", "retain", "twice"):
            if kind == "backward":
                codes = ["loss.backward()"]
            elif kind == "retain":
                codes = ["loss.backward(retain_graph=True)", "loss.backward()"]
            else:
                codes = ["loss.backward()", "loss.backward()"]
            obs = ["%s.grad" % n for n in leaves] + ["%s.grad" % r for r in retained]
        elif kind == "grad":
            codes = ["grads = torch.autograd.grad(loss, [%s], allow_unused=True)" % lv]
            obs = ["grads[%d]" % i for i in range(len(leaves))]
        else:
            codes = ["grads = torch.autograd.grad(loss, [%s], create_graph=True, "
                     "allow_unused=True)" % lv]
        for c in codes:
            self._emit_end(c)
        if kind == "grad2":
            g = self.ns.get("grads")
            if g is None:
                return
            obs = ["grads[%d]" % i for i in range(len(leaves))]
            terms = ["(grads[%d] * grads[%d]).sum()" % (i, i) for i, t in enumerate(g)
                     if t is not None and t.requires_grad]
            if terms:
                self._emit_end("loss2 = " + " + ".join(terms))
                self._emit_end("grads2 = torch.autograd.grad(loss2, [%s], allow_unused=True)"
                               % lv)
                obs += ["grads2[%d]" % i for i in range(len(leaves))]
        self.observe = tuple(obs)

    def _retained(self):
        out = set()
        for s in self.stmts:
            if s.op == "Tensor.retain_grad" and s.reads:
                out.add(s.reads[0])
        return out

    def _emit_end(self, code):
        try:
            exec(code, self.ns)                                   # noqa: S102
        except Exception:                                         # noqa: BLE001
            pass
        self.stmts.append(Stmt(code, "end", (), (), (), "end"))

    # ---------------------------------------------------------------- calls
    def call(self, key):
        if key.startswith("op."):
            return self.operator(key)
        ovs = SPECS[key]
        ov = ovs[self.ch.integer(len(ovs))] if len(ovs) > 1 else ovs[0]
        oname, params, ret, flags = ov
        ns, name = key.split(".", 1)
        if "a" in flags:                                           # attribute
            recv = self.tensor()
            target = self.new_target()
            return self.emit("%s = %s.%s" % (target, recv.expr, name), key, [recv.expr],
                             target=target)
        fam = H.FAMILY.get(_base(key))
        dom = H.DOMAIN.get(_base(key))
        args = {}
        recv = None
        if fam is not None and fam in FAMILIES:
            fparams = ((("self", "T", 0),) + tuple(params)) if ns == "Tensor" else params
            pre = FAMILIES[fam](self, key, fparams, ns == "Tensor")
            if pre is None:
                raise _Discard()
            pnames = {p[0] for p in fparams}
            for a, b in (("input", "self"), ("self", "input")):
                if a in pre and a not in pnames and b in pnames and b not in pre:
                    pre[b] = pre.pop(a)
            args.update({k: v for k, v in pre.items() if k in pnames})
        inplace = "i" in flags or (name.endswith("_") and not name.endswith("__"))
        if ns == "Tensor":
            recv = args.pop("self", None)
            if recv is None:
                recv = self.inplace_target(dom) if inplace else self.tensor(domain=dom)
            prim = recv
        else:
            prim = None
            for p in params:
                if p[0] in args:
                    a = args[p[0]]
                    if isinstance(a, _Val):
                        prim = a
                        break
                    if isinstance(a, (list, tuple)) and a and isinstance(a[0], _Val):
                        prim = a[0]
                        break
                    continue
                if p[1] in ("T", "T?"):
                    args[p[0]] = self.inplace_target(dom) if inplace else \
                        self.tensor(domain=dom)
                    prim = args[p[0]]
                    break
        parts, reads, kw_mode = [], [], False
        if recv is not None:
            reads.append(recv.expr)
        ctx = {"prim": prim, "key": key, "drawn": {}}
        for i, p in enumerate(params):
            pname, kind, kwonly = p[0], p[1], p[2]
            has_def = len(p) > 3
            if pname == "path" and has_def:                      # einsum's internal
                kw_mode = True
                continue
            if pname in args:
                val = args[pname]
            else:
                if has_def and not self.ch.boolean(0.45):
                    kw_mode = True
                    continue
                val = self.arg(ctx, pname, kind, has_def and p[3])
                if val is _OMIT:
                    kw_mode = True
                    continue
            ctx["drawn"][pname] = val
            code, rd = _code(val)
            reads.extend(rd)
            if "s" in flags and kind == "T[]":
                parts.append(code[1:-1] if code.startswith("[") else "*" + code)
            elif kwonly or kw_mode:
                parts.append("%s=%s" % ("input" if pname == "self" else pname, code))
                kw_mode = True
            else:
                parts.append(code)
        callee = {"torch": "torch.", "F": "F.", "linalg": "torch.linalg.",
                  "special": "torch.special."}.get(ns)
        if ns == "Tensor":
            expr = "%s.%s(%s)" % (recv.expr, name, ", ".join(parts))
        else:
            expr = "%s%s(%s)" % (callee, name, ", ".join(parts))
        target = self.new_target()
        return self.emit("%s = %s" % (target, expr), key, reads, target=target)

    def arg(self, ctx, name, kind, default):
        """Draw one argument by kind and parameter name."""
        prim = ctx["prim"]
        nd = prim.nd if prim is not None else 0
        shp = prim.shape if prim is not None else ()
        opt = kind.endswith("?")
        k = kind.rstrip("?")
        if opt and self.ch.boolean(0.1):
            return None
        if k in ("T", "T*"):
            return self.partner(ctx, name)
        if k == "T[]":
            n = 1 + self.ch.integer(3)
            if prim is not None:
                return [prim] + [self.tensor(like=prim, pred=lambda v: v.shape == prim.shape)
                                 for _ in range(n - 1)]
            return [self.tensor() for _ in range(n)]
        if k == "T?[]":
            d = self.ch.integer(max(nd, 1))
            return (self.index_tensor(shp[d] if nd else 1),)
        if k == "I":
            return self.int_arg(ctx, name, nd, shp)
        if k.startswith("I["):
            return self.ints_arg(ctx, name, nd, shp, k)
        if k in ("F", "S"):
            return self.num_arg(ctx, name, k)
        if k == "B":
            return self.ch.boolean()
        if k == "STR":
            ch = H.STR_CHOICES.get(name)
            if ch is None:
                return _OMIT if default not in (None, False) else _OMIT
            return self.ch.choice(ch)
        if k == "DT":
            return _Raw("torch." + self.ch.choice(("float64", "float32", "int64", "bool",
                                                   "float16", "int32", "uint8"),
                                                  (0.35, 0.25, 0.15, 0.1, 0.05, 0.05, 0.05)))
        if k == "LIST":
            return [1.0, 2.0]
        if k == "SHAPES":
            return _Raw(", ".join(repr(self.shape()) for _ in range(2)))
        return _OMIT

    def partner(self, ctx, name):
        prim = ctx["prim"]
        if prim is None:
            return self.tensor()
        if name in ("index", "indices"):
            return self.index_tensor(prim.shape[0] if prim.nd else 1)
        if name in ("mask", "condition"):
            return self.fresh(self.bshape(prim.shape), "bool")
        if name in ("target",):
            return self.tensor(like=prim, pred=lambda v: v.shape == prim.shape)
        shape = self.bshape(prim.shape)
        dt = prim.dtype if self.ch.boolean(0.85) else self.dtype()
        return self.tensor(shape=shape, dtype=dt,
                           pred=lambda v: _bcast(v.shape, prim.shape) and v.dtype == dt)

    def bshape(self, shape):
        """A shape broadcasting with ``shape`` (sometimes not: error paths)."""
        c = self.ch.integer(6, (0.45, 0.15, 0.15, 0.1, 0.1, 0.05))
        if c == 0 or not shape:
            return tuple(shape) if c != 5 else (3, 5)
        if c == 1:
            return tuple(shape[1:])
        if c == 2:
            return tuple(1 if self.ch.boolean() else s for s in shape)
        if c == 3:
            return ()
        if c == 4:
            return (1,) + tuple(shape)
        return tuple(s + 1 for s in shape)

    def index_tensor(self, n, shape=None, dtype="int64"):
        if shape is None:
            shape = (self.ch.choice((2, 1, 3, 0, 4)),)
        size = int(np.prod(shape, dtype=np.int64))
        hi = max(n, 1)
        vals = np.array([self.ch.integer(hi) - (hi if self.ch.boolean(0.1) else 0)
                         for _ in range(size)], dtype=np.int64).reshape(shape)
        if self.ch.boolean(0.04):
            vals = vals + hi + 1                                  # out of range
        return self.fresh(shape, dtype, values=vals, rg=False)

    def int_arg(self, ctx, name, nd, shp):
        drawn = ctx["drawn"]
        if name in ("dim", "dim0", "dim1", "dim2", "start_dim", "end_dim", "axis", "axis0",
                    "axis1", "source", "destination", "dimension", "dim1_", "batch_dim"):
            return self.dim(nd)
        if name in ("k",):
            d = drawn.get("dim", -1)
            n = shp[d] if nd and isinstance(d, int) and -nd <= d < nd else 1
            return self.ch.integer(n + 2) if self.ch.boolean(0.9) else n + 1
        if name in ("diagonal", "offset"):
            return self.ch.choice((0, 1, -1, 2, -2))
        if name in ("n",):
            return self.ch.choice((1, 0, 2, 3))
        if name in ("chunks", "sections", "split_size", "split_size_or_sections", "repeats",
                    "groups", "num_groups", "decimals", "correction", "bins", "minlength",
                    "steps", "N", "upscale_factor"):
            return self.ch.choice((2, 1, 3, 0))
        if name in ("start", "length", "index", "idx", "step", "size", "m"):
            d = drawn.get("dim", 0)
            n = shp[d] if nd and isinstance(d, int) and -nd <= d < nd else 2
            return self.ch.integer(n + 1)
        if name in ("num_classes",):
            return self.ch.choice((-1, 4, 5))
        if name in ("padding_idx", "ignore_index"):
            return self.ch.choice((-100, 0, 1))
        return self.ch.choice((1, 0, 2, -1, 3))

    def ints_arg(self, ctx, name, nd, shp, k):
        fixed = int(k[2:-1]) if k[2:-1].isdigit() else None
        if name in ("dim", "dims", "axis", "source", "destination"):
            key = ctx["key"]
            if _base(key) in ("permute", "permute_copy"):
                perm = list(range(nd))
                for i in range(nd - 1, 0, -1):
                    j = self.ch.integer(i + 1)
                    perm[i], perm[j] = perm[j], perm[i]
                return tuple(perm)
            n = self.ch.integer(nd + 1) if nd else self.ch.integer(2)
            ds = []
            for _ in range(n):
                d = self.dim(nd, allow_bad=False)
                if d % max(nd, 1) not in [x % max(nd, 1) for x in ds]:
                    ds.append(d)
            return tuple(ds) if self.ch.boolean(0.7) else list(ds)
        if name in ("size", "shape", "sizes"):
            b = _base(ctx["key"])
            if b in ("view", "reshape", "view_copy", "_unsafe_view", "unflatten"):
                return self.reshape_target(shp)
            if b in ("expand", "expand_copy", "broadcast_to"):
                return tuple((s if s != 1 or not self.ch.boolean() else 3) if self.ch.boolean(0.8)
                             else -1 for s in shp)
            if b in ("repeat", "tile"):
                return tuple(self.ch.choice((1, 2, 3)) for _ in range(nd + self.ch.integer(2)))
            if b == "sum_to_size":
                return tuple(1 if self.ch.boolean() else s for s in shp)
            return self.shape(0, 3)
        if name == "shifts":
            n = len(ctx["drawn"].get("dims", ())) or 1
            return tuple(self.ch.choice((1, -1, 2, 0, 5)) for _ in range(n))
        if name == "pad":
            n = 2 * (1 + self.ch.integer(max(min(nd, 3), 1)))
            return tuple(self.ch.choice((1, 0, 2, -1)) for _ in range(n))
        if name == "normalized_shape":
            m = self.ch.integer(nd + 1)
            return tuple(shp[nd - m:])
        if name in ("split_sizes", "split_size", "split_size_or_sections", "indices",
                    "sections", "repeats"):
            d = ctx["drawn"].get("dim", 0)
            n = shp[d] if nd and isinstance(d, int) and -nd <= d < nd else 2
            out, left = [], n
            while left > 0 and len(out) < 3:
                t = 1 + self.ch.integer(left)
                out.append(t)
                left -= t
            if left:
                out.append(left)
            return tuple(out)
        if name == "stride" and "size" in ctx["drawn"]:         # as_strided
            return tuple(self.ch.choice((1, 0, 2)) for _ in ctx["drawn"]["size"])
        if name in ("kernel_size", "stride", "padding", "dilation", "output_size"):
            n = fixed or 2
            return tuple(self.ch.choice((2, 1, 3)) if name != "padding" else
                         self.ch.choice((0, 1)) for _ in range(n))
        n = fixed or (1 + self.ch.integer(2))
        return tuple(self.ch.choice((1, 0, 2, 3)) for _ in range(n))

    def reshape_target(self, shape):
        n = int(np.prod(shape, dtype=np.int64))
        cands = [(n,), (-1,), (1, -1), (n, 1)]
        for d in range(2, n):
            if n % d == 0:
                cands.append((d, n // d))
                cands.append((d, -1))
        if len(shape) >= 2:
            cands.append(tuple(reversed(shape)))
        if n == 1:
            cands.append(())
        cands.append(tuple(shape) + (1,))
        cands.append((n + 1,))                                    # invalid
        return self.ch.choice(cands)

    def num_arg(self, ctx, name, k):
        b = _base(ctx["key"])
        if name == "p":
            if b in ("norm", "dist", "cdist", "pdist", "normalize", "vector_norm", "renorm",
                     "pairwise_distance", "triplet_margin_loss", "multi_margin_loss"):
                v = self.ch.choice((2.0, 1.0, math.inf, 0.0, 0.5, 3.0, -math.inf, -1.0))
                return int(v) if b == "multi_margin_loss" and math.isfinite(v) else v
            return self.ch.choice((0.5, 0.0, 1.0, 0.2))
        if name in ("eps",):
            return self.ch.choice((1e-5, 1e-12, 0.1, 0.0))
        if name in ("q",):
            return self.ch.choice((0.5, 0.0, 1.0, 0.25, 1.5))
        if name == "dropout_p":
            return 0.0
        if name in ("momentum", "label_smoothing"):
            return self.ch.choice((0.1, 0.0, 0.5))
        if name in ("maxnorm", "max_norm"):
            return self.ch.choice((1.0, 0.5, 2.0))
        if name in ("num_samples",):
            return 1
        v = self.scalar(k, name)
        return v

    # ---------------------------------------------------------------- operators
    def operator(self, key):
        target = self.new_target()
        if key in ("op.binary", "op.rbinary", "op.inplace"):
            ops = BINOPS if key != "op.inplace" else BINOPS[:13]
            sym = self.ch.choice(ops, [3, 3, 3, 3, 1, 1, 2, 2, 0.5, 0.5, 0.5, 0.3, 0.3,
                                       0.5, 0.5, 0.5, 0.5, 0.5, 0.5][:len(ops)])
            a = self.tensor()
            if sym == "@":
                b = self.tensor(shape=_mm_partner(a.shape), dtype=a.dtype,
                                pred=lambda v: v.dtype == a.dtype and _mm_ok(a.shape, v.shape))
            elif self.ch.boolean(0.35):
                b = _Raw(repr(self.scalar("S")))
            else:
                b = self.partner({"prim": a}, "other")
            bc, br = _code(b)
            if key == "op.binary":
                code = "%s = %s %s %s" % (target, a.expr, sym, bc)
            elif key == "op.rbinary":
                if isinstance(b, _Raw):
                    code = "%s = %s %s %s" % (target, bc, sym, a.expr)
                else:
                    code = "%s = %s %s %s" % (target, bc, sym, a.expr)
            else:
                code = "%s %s= %s\n%s = %s" % (a.expr, sym, bc, target, a.expr)
                if "[" in a.expr:
                    code = "%s = %s\n%s %s= %s" % (target, a.expr, target, sym, bc)
            return self.emit(code, key + sym, [a.expr] + br, target=target)
        if key == "op.unary":
            sym = self.ch.choice(UNOPS)
            a = self.tensor()
            code = "%s = abs(%s)" % (target, a.expr) if sym == "abs" else \
                "%s = %s%s" % (target, sym, a.expr)
            return self.emit(code, key + sym, [a.expr], target=target)
        a = self.tensor(pred=lambda v: v.nd >= 1, shape=self.shape(1, 3))
        idx, ir = self.index_key(a)
        if key == "op.getitem":
            return self.emit("%s = %s[%s]" % (target, a.expr, idx), key, [a.expr] + ir,
                             target=target)
        # setitem: value a number or a tensor broadcasting to the indexed part
        try:
            with _no_grad(self.ref):
                sub = eval("%s[%s]" % (a.expr, idx), self.ns)     # noqa: S307
            sshape = tuple(sub.shape)
        except Exception:                                         # noqa: BLE001
            sshape = (1,)
        if self.ch.boolean(0.4):
            vc, vr = repr(self.scalar("S")), []
        else:
            v = self.tensor(shape=self.bshape_to(sshape), dtype=a.dtype if self.ch.boolean(0.85)
                            else None)
            vc, vr = v.expr, [v.expr]
        code = "%s[%s] = %s\n%s = %s" % (a.expr, idx, vc, target, a.expr)
        return self.emit(code, key, [a.expr] + ir + vr, target=target)

    def bshape_to(self, shape):
        c = self.ch.integer(4, (0.6, 0.2, 0.15, 0.05))
        if c == 0:
            return tuple(shape)
        if c == 1:
            return tuple(shape[1:])
        if c == 2:
            return ()
        return tuple(s + 1 for s in shape) or (2,)

    def index_key(self, a):
        nd, shp = a.nd, a.shape
        c = self.ch.integer(7, (0.25, 0.25, 0.12, 0.12, 0.1, 0.1, 0.06))
        if c == 0:                                                # integer
            n = shp[0]
            return str(self.ch.integer(max(n, 1)) - (n if self.ch.boolean(0.3) else 0)), []
        if c == 1:                                                # slices
            parts = []
            for d in range(1 + self.ch.integer(nd)):
                n = shp[d]
                s = self.ch.integer(n + 1)
                e = s + self.ch.integer(n - s + 1)
                st = self.ch.choice((1, 2, 3))
                parts.append("%d:%d%s" % (s, e, "" if st == 1 else ":%d" % st)
                             if self.ch.boolean(0.8) else ":")
            return ", ".join(parts), []
        if c == 2:                                                # None / Ellipsis mixes
            return self.ch.choice(("None", "...", "..., None", ":, None", "None, 0",
                                   "..., 0", "..., -1")), []
        if c == 3:                                                # index tensor
            t = self.index_tensor(shp[0])
            return t.expr, [t.expr]
        if c == 4:                                                # bool mask
            t = self.fresh(tuple(shp[:1 + self.ch.integer(nd)]), "bool")
            return t.expr, [t.expr]
        if c == 5:                                                # list
            n = shp[0]
            return repr([self.ch.integer(max(n, 1)) for _ in range(1 + self.ch.integer(3))]), []
        # out of range / odd keys
        return self.ch.choice(("%d" % (shp[0] + 1), "2**63", "0.5", "[True]", "::-1",
                               "(0, 0, 0, 0)")), []


class _Raw:
    """Source text passed as is (dtype names, tuples of shapes)."""

    def __init__(self, src):
        self.src = src

    def __repr__(self):
        return self.src


class _OmitT:
    pass


_OMIT = _OmitT()


def _code(val):
    """(source, reads) of an argument value."""
    if isinstance(val, _Val):
        return val.expr, [val.expr]
    if isinstance(val, _Raw):
        return val.src, []
    if isinstance(val, (list, tuple)) and any(isinstance(v, _Val) for v in val):
        parts = [_code(v) for v in val]
        src = ", ".join(p[0] for p in parts)
        reads = [r for p in parts for r in p[1]]
        if isinstance(val, tuple):
            return "(%s%s)" % (src, "," if len(val) == 1 else ""), reads
        return "[%s]" % src, reads
    if isinstance(val, float):
        return _num(val), []
    return repr(val), []


def _bcast(a, b):
    try:
        np.broadcast_shapes(tuple(a), tuple(b))
        return True
    except ValueError:
        return False


def _mm_ok(a, b):
    if not a or not b:
        return False
    k = a[-1]
    kb = b[0] if len(b) == 1 else b[-2]
    return k == kb


def _mm_partner(a):
    if not a:
        return (2,)
    k = a[-1]
    return (k,) if len(a) == 1 else (k, 2)


class _no_grad:
    def __init__(self, lib):
        self.cm = lib.no_grad()

    def __enter__(self):
        return self.cm.__enter__()

    def __exit__(self, *a):
        return self.cm.__exit__(*a)


# ================================================================ shape families
def _f_mm(g, key, params, method):
    b = _base(key)
    m, k, n = g.side(1), g.side(1), g.side(1)
    dt = g.dtype(("float64", "float32"))
    out = {}
    names = [p[0] for p in params if p[1].startswith("T")]
    if b == "linear":
        out["input"] = g.fresh((m, k), dt)
        out["weight"] = g.fresh((n, k), dt)
        if "bias" in names and g.ch.boolean():
            out["bias"] = g.fresh((n,), dt)
        return out
    if b in ("chain_matmul", "multi_dot"):
        ks = [g.side(1) for _ in range(2 + g.ch.integer(2))]
        mats = [g.fresh((ks[i], ks[i + 1]), dt) for i in range(len(ks) - 1)]
        out[names[0]] = mats
        return out
    mats = [p for p in names if p in ("mat1", "mat2", "self", "input", "other", "mat")]
    if b == "mm":
        out["self"] = g.fresh((m, k), dt)
        out["mat2"] = g.fresh((k, n), dt)
        return out
    out["self"] = g.fresh(g.ch.choice(((m, n), (n,), (1, n), ())), dt)
    out["mat1"] = g.fresh((m, k), dt)
    out["mat2"] = g.fresh((k, n), dt)
    del mats
    return out


def _f_bmm(g, key, params, method):
    b = _base(key)
    bb, m, k, n = g.side(), g.side(1), g.side(1), g.side(1)
    dt = g.dtype(("float64", "float32"))
    out = {"batch1": g.fresh((bb, m, k), dt), "batch2": g.fresh((bb, k, n), dt)}
    if b == "bmm":
        return {"self": out["batch1"], "mat2": out["batch2"]}
    out["self"] = g.fresh((bb, m, n) if b == "baddbmm" else (m, n), dt)
    return out


def _f_mv(g, key, params, method):
    m, k = g.side(1), g.side(1)
    dt = g.dtype(("float64", "float32"))
    if _base(key) == "mv":
        return {"self": g.fresh((m, k), dt), "vec": g.fresh((k,), dt)}
    return {"self": g.fresh((m,), dt), "mat": g.fresh((m, k), dt), "vec": g.fresh((k,), dt)}


def _f_vec(g, key, params, method):
    b = _base(key)
    dt = g.dtype(("float64", "float32"))
    k = g.side()
    names = [p[0] for p in params if p[1].startswith("T")]
    if b in ("outer", "ger"):
        return {names[0]: g.fresh((k,), dt), names[1]: g.fresh((g.side(),), dt)}
    if b == "addr":
        m, n = g.side(1), g.side(1)
        return {"self": g.fresh((m, n), dt), "vec1": g.fresh((m,), dt),
                "vec2": g.fresh((n,), dt)}
    if b in ("inner", "vecdot", "kron"):
        s = g.shape(0, 2)
        s2 = tuple(s[:-1]) + (s[-1],) if s else ()
        return {names[0]: g.fresh(s, dt), names[1]: g.fresh(s2 if b != "kron" else g.shape(0, 2),
                                                             dt)}
    return {names[0]: g.fresh((k,), dt), names[1]: g.fresh((k,), dt)}


def _f_matmul(g, key, params, method):
    dt = g.dtype(("float64", "float32"))
    names = [p[0] for p in params if p[1].startswith("T")]
    if _base(key) == "tensordot":
        a = g.shape(1, 3)
        nk = g.ch.integer(len(a) + 1)
        bshape = tuple(a[len(a) - nk:]) + tuple(g.side() for _ in range(g.ch.integer(2)))
        return {names[0]: g.fresh(a, dt), names[1]: g.fresh(bshape, dt), "dims": nk}
    c = g.ch.integer(5)
    m, k, n, bb = g.side(1), g.side(), g.side(1), g.side()
    sa, sb = [((m, k), (k, n)), ((k,), (k, n)), ((m, k), (k,)), ((bb, m, k), (k, n)),
              ((bb, m, k), (1, k, n))][c]
    return {names[0]: g.fresh(sa, dt), names[1]: g.fresh(sb, dt)}


def _square(g, n=None, batch=True, kind="wellcond", dt=None):
    n = n if n is not None else g.side(1)
    shape = ((g.side(1),) if batch and g.ch.boolean(0.25) else ()) + (n, n)
    dt = dt or g.dtype(("float64", "float32"))
    c = g.ch.integer(4, (0.7, 0.1, 0.1, 0.1))
    seed = g.ch.integer(1 << 16)
    rng = np.random.default_rng(seed)
    a = np.round(rng.uniform(-1, 1, shape), 2)
    if c == 1:
        kind = "singular"
    elif c == 2:
        kind = "adversarial"
    if kind == "spd":
        a = np.round(a @ np.swapaxes(a, -1, -2) + n * np.eye(n), 2)
    elif kind == "wellcond":
        a = a + n * np.eye(n) * np.sign(rng.uniform(-1, 1))
    elif kind == "singular":
        a[..., -1, :] = a[..., 0, :] if n > 1 else 0
    elif kind == "adversarial":
        a = make_values("adversarial", None, shape, "float64", seed)
    return g.fresh(shape, dt, values=np.round(a, 3))


def _f_square(g, key, params, method):
    b = _base(key)
    kind = "spd" if b in ("cholesky", "cholesky_ex", "eigh", "eigvalsh", "cholesky_inverse",
                          "symeig") else "wellcond"
    names = [p[0] for p in params if p[1].startswith("T")]
    a = _square(g, kind=kind, batch=b not in ("trace",))
    if b in ("svd", "svdvals", "pinv", "pinverse", "qr", "matrix_norm", "matrix_rank") and \
            g.ch.boolean(0.4):
        a = g.fresh((g.side(1), g.side(1)), "float64")
    if b == "cholesky_inverse":
        return {names[0]: g.fresh(a.shape, a.dtype,
                                  values=np.tril(np.abs(a.obj.detach().numpy()) + 1))}
    return {names[0]: a}


def _f_solve(g, key, params, method):
    b = _base(key)
    names = [p[0] for p in params if p[1].startswith("T")]
    dt = g.dtype(("float64", "float32"))
    n = g.side(1)
    A = _square(g, n, dt=dt, kind="spd" if b == "cholesky_solve" else "wellcond",
                batch=False)
    if b in ("solve_triangular", "triangular_solve"):
        A = g.fresh(A.shape, dt, values=np.triu(A.obj.detach().numpy().astype(float)) +
                    np.eye(n) * 2)
    rhs = g.fresh(g.ch.choice(((n, g.side(1)), (n,))) if b in ("solve", "solve_ex", "lstsq")
                  else (n, g.side(1)), dt)
    if b in ("cholesky_solve", "triangular_solve"):
        # torch.cholesky_solve(B, L), triangular_solve(b, A): the right-hand side first
        if b == "cholesky_solve":
            L = np.linalg.cholesky(A.obj.detach().numpy().astype(float))
            A = g.fresh(A.shape, dt, values=np.round(L, 4))
        return {names[0]: rhs, names[1]: A}
    if method:
        return {"self": A, names[0]: rhs} if names else {"self": A}
    return {names[0]: A, names[1]: rhs}


def _f_conv(g, key, params, method):
    dims = 1 if _base(key) == "conv1d" else 2
    dt = g.dtype(("float64", "float32"))
    N, C, O = g.side(1), g.side(1), g.side(1)
    sp = tuple(g.side(2) + 1 for _ in range(dims))
    ks = tuple(g.ch.choice((1, 2, 3)) for _ in range(dims))
    ks = tuple(min(k, s) for k, s in zip(ks, sp))
    out = {"input": g.fresh(((N,) if g.ch.boolean(0.85) else ()) + (C,) + sp, dt),
           "weight": g.fresh((O, C) + ks, dt)}
    if g.ch.boolean():
        out["bias"] = g.fresh((O,), dt)
    return out


def _f_pool(g, key, params, method):
    b = _base(key)
    dims = 1 if "1d" in b else 2
    dt = g.dtype(("float64", "float32"))
    lead = ((g.side(1),) if g.ch.boolean(0.8) else ()) + (g.side(1),)
    sp = tuple(g.side(1) + 1 for _ in range(dims))
    if b == "unfold":
        return {"input": g.fresh((g.side(1), g.side(1), 3, 3), dt),
                "kernel_size": (2, 2)}
    if b == "fold":
        return {"input": g.fresh((1, 4 * g.side(1), 4), dt), "output_size": (3, 3),
                "kernel_size": (2, 2)}
    out = {"input": g.fresh(lead + sp, dt)}
    if "adaptive" in b:
        out["output_size"] = tuple(g.ch.integer(s) + 1 for s in sp) if dims == 2 else \
            g.ch.integer(sp[0]) + 1
    else:
        out["kernel_size"] = g.ch.integer(min(sp)) + 1
    return out


def _f_class_loss(g, key, params, method):
    dt = g.dtype(("float64", "float32"))
    N, C = g.side(1), g.side(1) + 1
    x = g.fresh((N, C), dt)
    c = g.ch.integer(3, (0.7, 0.2, 0.1))
    if c == 0 or _base(key) != "cross_entropy":
        t = g.fresh((N,), "int64", values=np.array([g.ch.integer(C) for _ in range(N)]),
                    rg=False)
    elif c == 1:
        t = g.fresh((N, C), dt, domain="prob", rg=False)
    else:
        x = g.fresh((C,), dt)
        t = g.fresh((), "int64", values=np.array(g.ch.integer(C)), rg=False)
    return {"input": x, "target": t}


def _f_pair_loss(g, key, params, method):
    b = _base(key)
    dt = g.dtype(("float64", "float32"))
    names = [p[0] for p in params if p[1] == "T"]
    s = g.shape(1, 3)
    dom = "prob" if b == "binary_cross_entropy" else ("pos" if b in (
        "poisson_nll_loss", "gaussian_nll_loss") else None)
    out = {}
    for i, n in enumerate(names):
        if b in ("hinge_embedding_loss", "soft_margin_loss", "margin_ranking_loss") and \
                n in ("target", "y"):
            vals = np.where(np.arange(int(np.prod(s))) % 2 == 0, 1.0, -1.0).reshape(s)
            out[n] = g.fresh(s, dt, values=vals, rg=False)
        elif b == "cosine_embedding_loss" and n == "target":
            out[n] = g.fresh(s[:1], dt, values=np.ones(s[:1]), rg=False)
        elif n == "var":
            out[n] = g.fresh(s, dt, domain="pos")
        elif b == "kl_div" and n == "target":
            out[n] = g.fresh(s, dt, domain="prob", rg=False)
        else:
            out[n] = g.fresh(s, dt, domain=dom if i == 0 or n == "target" else None)
    return out


def _f_norm_layer(g, key, params, method):
    b = _base(key)
    dt = g.dtype(("float64", "float32"))
    N, C = g.side(1), 2 * g.side(1) if b == "group_norm" else g.side(1)
    sp = tuple(g.side(1) for _ in range(g.ch.integer(3)))
    x = g.fresh((N, C) + sp, dt)
    out = {"input": x}
    if b in ("layer_norm", "rms_norm"):
        m = 1 + g.ch.integer(len(sp) + 1)
        ns = ((N, C) + sp)[-m:]
        out["normalized_shape"] = tuple(ns)
        if g.ch.boolean():
            out["weight"] = g.fresh(ns, dt)
        if b == "layer_norm" and g.ch.boolean():
            out["bias"] = g.fresh(ns, dt)
    elif b == "group_norm":
        out["num_groups"] = g.ch.choice((2, 1, C))
        if g.ch.boolean():
            out["weight"] = g.fresh((C,), dt)
            out["bias"] = g.fresh((C,), dt)
    else:
        if b == "batch_norm" or g.ch.boolean():
            out["running_mean"] = g.fresh((C,), dt, rg=False)
            out["running_var"] = g.fresh((C,), dt, domain="pos", rg=False)
        if g.ch.boolean():
            out["weight"] = g.fresh((C,), dt)
            out["bias"] = g.fresh((C,), dt)
    return out


def _f_embedding(g, key, params, method):
    V, D = g.side(1) + 1, g.side(1)
    idx = g.index_tensor(V, shape=g.shape(0, 2))
    w = g.fresh((V, D), g.dtype(("float64", "float32")))
    if key.startswith("torch."):
        return {"weight": w, "indices": idx}
    return {"input": idx, "weight": w}


def _f_gather(g, key, params, method):
    b = _base(key)
    x = g.tensor(shape=g.shape(1, 3), pred=lambda v: v.nd >= 1)
    d = g.dim(x.nd)
    dd = d % x.nd if -x.nd <= d < x.nd else 0
    ishape = tuple(g.ch.integer(s + 1) if i != dd else g.side() for i, s in enumerate(x.shape))
    idx = g.index_tensor(x.shape[dd], shape=ishape)
    out = {"self": x, "input": x, "dim": d, "index": idx, "indices": idx}
    if b in ("scatter", "scatter_add", "scatter_reduce"):
        out["src"] = g.fresh(ishape, x.dtype)
        if b == "scatter" and g.ch.boolean(0.3):
            out.pop("src")
            out["value"] = g.scalar("S")
    if b == "take_along_dim":
        out.pop("dim")
        if g.ch.boolean(0.8):
            out["dim"] = d
    return out


def _f_index_dim(g, key, params, method):
    b = _base(key)
    x = g.tensor(shape=g.shape(1, 3), pred=lambda v: v.nd >= 1)
    d = g.dim(x.nd)
    dd = d % x.nd if -x.nd <= d < x.nd else 0
    idx = g.index_tensor(x.shape[dd], shape=(g.ch.choice((2, 1, 3, 0)),))
    if b == "index_copy" and g.ch.boolean(0.8):     # distinct positions
        n = x.shape[dd]
        idx = g.fresh((min(n, 2),), "int64", values=np.arange(min(n, 2))[::-1].copy(),
                      rg=False)
    out = {"self": x, "input": x, "dim": d, "index": idx}
    sshape = tuple(idx.shape[0] if i == dd else s for i, s in enumerate(x.shape))
    if b in ("index_add", "index_copy", "index_reduce"):
        out["source"] = g.fresh(sshape, x.dtype)
    if b == "index_reduce":
        out["reduce"] = g.ch.choice(("prod", "mean", "amax", "amin"))
    return out


def _f_masked(g, key, params, method):
    x = g.tensor()
    m = g.fresh(g.bshape(x.shape), "bool")
    out = {"self": x, "input": x, "mask": m}
    if _base(key) == "masked_scatter":
        out["source"] = g.fresh(x.shape, x.dtype)
    return out


def _f_where(g, key, params, method):
    names = [p[0] for p in params]
    if names == ["condition"]:
        return {"condition": g.fresh(g.shape(), "bool")}
    x = g.tensor()
    out = {"condition": g.fresh(g.bshape(x.shape), "bool"), "self": x, "input": x}
    if "other" in names:
        out["other"] = g.partner({"prim": x}, "other")
    return out


def _f_cat(g, key, params, method):
    b = _base(key)
    n = 1 + g.ch.integer(3, (0.2, 0.5, 0.3))
    base = g.tensor()
    ts = [base]
    for _ in range(n - 1):
        shp = list(base.shape)
        if b in ("cat", "concat", "concatenate") and shp and g.ch.boolean(0.4):
            shp[0] = g.side()
        elif b in ("block_diag", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_tensors",
                   "cartesian_prod", "meshgrid") and g.ch.boolean(0.5):
            shp = list(g.shape(0, 2)) if b != "broadcast_tensors" else list(g.bshape(base.shape))
        ts.append(g.fresh(tuple(shp), base.dtype if g.ch.boolean(0.9) else None))
    name = [p[0] for p in params if p[1] in ("T[]", "T*")]
    if not name:
        return None
    return {name[0]: ts}


def _f_einsum(g, key, params, method):
    letters = "ijkl"
    na = 1 + g.ch.integer(3)
    sa = "".join(g.ch.choice(letters) for _ in range(na))
    nb = g.ch.integer(3)
    sb = "".join(g.ch.choice(letters) for _ in range(nb))
    used = sorted(set(sa + sb))
    sizes = {c: g.side() for c in used}
    dt = g.dtype(("float64", "float32"))
    ops = [g.fresh(tuple(sizes[c] for c in sa), dt)]
    eq = sa
    if nb and g.ch.boolean(0.7):
        ops.append(g.fresh(tuple(sizes[c] for c in sb), dt if g.ch.boolean(0.9) else None))
        eq += "," + sb
    if g.ch.boolean(0.7):
        outl = [c for c in used if g.ch.boolean()]
        eq += "->" + "".join(outl)
    return {"equation": eq, "tensors": ops}


def _f_index_put(g, key, params, method):
    x = g.tensor(shape=g.shape(1, 3), pred=lambda v: v.nd >= 1)
    idx = g.index_tensor(x.shape[0])
    vshape = (idx.shape[0],) + tuple(x.shape[1:]) if g.ch.boolean(0.7) else ()
    v = g.fresh(vshape, x.dtype if g.ch.boolean(0.9) else None)
    return {"self": x, "indices": (idx,), "values": v}


def _f_cdist(g, key, params, method):
    dt = g.dtype(("float64", "float32"))
    m = g.side(1)
    return {"x1": g.fresh((g.side(), m), dt), "x2": g.fresh((g.side(), m), dt)}


def _f_cross(g, key, params, method):
    dt = g.dtype(("float64", "float32"))
    s = (g.side(1),) * g.ch.integer(2) + (3,)
    names = [p[0] for p in params if p[1] == "T"]
    return {names[0]: g.fresh(s, dt), names[1]: g.fresh(s, dt)}


def _f_sdpa(g, key, params, method):
    dt = g.dtype(("float64", "float32"))
    N, L, S, E = g.side(1), g.side(1), g.side(1), g.side(1)
    return {"query": g.fresh((N, L, E), dt), "key": g.fresh((N, S, E), dt),
            "value": g.fresh((N, S, g.side(1)), dt)}


def _f_bilinear(g, key, params, method):
    dt = g.dtype(("float64", "float32"))
    N, a, b, o = g.side(1), g.side(1), g.side(1), g.side(1)
    return {"input1": g.fresh((N, a), dt), "input2": g.fresh((N, b), dt),
            "weight": g.fresh((o, a, b), dt)}


def _f_prelu(g, key, params, method):
    dt = g.dtype(("float64", "float32"))
    x = g.fresh(g.shape(1, 3), dt)
    c = x.shape[1] if x.nd >= 2 and g.ch.boolean() else 1
    return {"input": x, "self": x, "weight": g.fresh((c,), dt)}


def _f_pdist(g, key, params, method):
    # at least 2 rows: torch 2.13's pdist backward on an empty input segfaults
    return {"input": g.fresh((g.side(2), g.side(1)), g.dtype(("float64", "float32")))}


def _f_put(g, key, params, method):
    x = g.tensor()
    n = int(np.prod(x.shape, dtype=np.int64))
    idx = g.index_tensor(n, shape=g.shape(0, 2))
    out = {"self": x, "input": x, "index": idx}
    if _base(key) == "put":
        out["source"] = g.fresh(idx.shape, x.dtype)
    return out


def _f_sorted(g, key, params, method):
    b = g.fresh((g.side(),), g.dtype(("float64", "float32")), domain="sorted", rg=False)
    x = g.fresh(g.shape(), b.dtype, rg=False)
    if _base(key) == "searchsorted":
        return {"sorted_sequence": b, "self": x, "input": x}
    return {"self": x, "input": x, "boundaries": b}


def _f_diag_scatter(g, key, params, method):
    b = _base(key)
    x = g.tensor(shape=g.shape(1, 3), pred=lambda v: v.nd >= 1)
    out = {"self": x, "input": x}
    if b == "select_scatter":
        d = g.dim(x.nd)
        dd = d % x.nd if -x.nd <= d < x.nd else 0
        out.update(dim=d, index=g.ch.integer(max(x.shape[dd], 1)),
                   src=g.fresh(tuple(s for i, s in enumerate(x.shape) if i != dd), x.dtype))
    elif b == "slice_scatter":
        out["src"] = g.fresh(x.shape, x.dtype)
    elif b == "diagonal_scatter":
        if x.nd < 2:
            return None
        out["src"] = g.fresh((min(x.shape[0], x.shape[1]),) + tuple(x.shape[2:]), x.dtype)
    else:
        return None
    return out


FAMILIES = {
    "mm": _f_mm, "bmm": _f_bmm, "mv": _f_mv, "vec": _f_vec, "matmul": _f_matmul,
    "square": _f_square, "solve": _f_solve, "conv": _f_conv, "pool": _f_pool,
    "class_loss": _f_class_loss, "pair_loss": _f_pair_loss, "norm_layer": _f_norm_layer,
    "embedding": _f_embedding, "gather": _f_gather, "index_dim": _f_index_dim,
    "masked": _f_masked, "where": _f_where, "cat": _f_cat, "einsum": _f_einsum,
    "index_put": _f_index_put, "cdist": _f_cdist, "cross": _f_cross, "sdpa": _f_sdpa,
    "bilinear": _f_bilinear, "prelu": _f_prelu, "pdist": _f_pdist, "put": _f_put,
    "sorted": _f_sorted, "diag_scatter": _f_diag_scatter,
}


def generate(ch, ref, **kw):
    """Draw one ``DProgram`` with chooser ``ch`` against reference library ``ref``."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Gen(ch, ref, **kw).program()
