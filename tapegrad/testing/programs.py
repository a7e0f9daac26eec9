"""Random differentiable programs as data: a list of shape-agnostic op descriptors (``Step``)
applied to a few inputs of given shapes.

A ``Program`` resolves its steps against the shapes of the values computed so far, so *every*
list of steps is a valid program: an argument is "the k-th most recent value", a dimension is
taken modulo the rank, a binary op whose operands do not broadcast uses another value (or the
first operand twice), a matmul reshapes its operands to fit. That is what makes hypothesis
shrink a failing program well: deleting a step or simplifying a field never produces an
invalid program, and zeros (hypothesis' favourite) mean "the previous value", "full reduction",
"the function form" and so on.

A program

* prints as Python source (``repr``/``str``/``.source``) written against ``torch``, e.g.::

      def f(x0, x1):
          v0 = torch.sin(x0)
          v1 = v0 * x1
          v2 = v1.sum(dim=1)
          return v2

* runs with any torch-like module by executing exactly that source
  (``program(lib, *tensors)`` or ``program.function(lib)``), so the printed repro is what ran;
* keeps away from trouble by construction: ``log``, ``sqrt``, ``div``, ``pow`` ... read
  ``x * x + 0.5`` where a positive operand is needed (``asin`` reads ``0.9 * tanh(x)``), and
  ``trace`` / ``well_conditioned`` tell when a value is non-finite or too large, or the
  argument of an op with a kink (relu, abs, floor, clamp, maximum ...) is too close to it for
  finite differences.

The vocabulary (``UNARY_OPS``, ``BINARY_OPS``) is a table of torch source templates: adding an
op of the facade to the random programs is one line there.

Strategies drawing programs are in ``tapegrad.testing.strategies`` (``programs``).
"""
from dataclasses import dataclass

import numpy as np

__all__ = ["Step", "Program", "reduce_program", "UNARY", "BINARY", "UNARY_OPS", "BINARY_OPS",
           "available_unary", "available_binary", "SCALAR_OPS", "REDUCTIONS", "KINDS"]


# ---- kink/singularity distances: f(*argument arrays) -> distance of each element to the
# nearest point where the op is not (twice) differentiable; well_conditioned() wants >= margin.
def _from_points(*points):
    def dist(x):
        return np.min([np.abs(x - p) for p in points], axis=0)
    dist.points = points
    return dist


def _from_integers(x):
    return np.abs(x - np.round(x))


def _from_each_other(a, b):
    return np.abs(a - b)


def _from_origin(a, b):
    return np.sqrt(a * a + b * b)


def _atan2_kink(a, b):
    """atan2(a, b): singular at the origin, discontinuous across the branch cut a = 0, b < 0."""
    r = np.sqrt(a * a + b * b)
    return np.where(b < 0, np.minimum(np.abs(a), r), r)


def _remainder_kink(a, b):
    d = b * b + 0.5
    q = a / d
    return np.abs(q - np.round(q)) * d


_F = "torch.nn.functional."
# name -> (function form, method form, kink); {x} is the operand, {p} is x * x + 0.5 (> 0).
UNARY_OPS = {
    "neg": ("-{x}", "{x}.neg()", None),
    "exp": ("torch.exp({x})", "{x}.exp()", None),
    "log": ("torch.log({p})", "{p}.log()", None),
    "sin": ("torch.sin({x})", "{x}.sin()", None),
    "cos": ("torch.cos({x})", "{x}.cos()", None),
    "tanh": ("torch.tanh({x})", "{x}.tanh()", None),
    "sigmoid": ("torch.sigmoid({x})", "{x}.sigmoid()", None),
    "relu": ("torch.relu({x})", "{x}.relu()", _from_points(0.0)),
    "sqrt": ("torch.sqrt({p})", "{p}.sqrt()", None),
    "abs": ("torch.abs({x})", "{x}.abs()", _from_points(0.0)),
    "pow_scalar": (None, None, None),                  # x ** c, see Program._unary
    # more of the facade (used when the library has them)
    "atan": ("torch.atan({x})", "{x}.atan()", None),
    "sinh": ("torch.sinh({x})", "{x}.sinh()", None),
    "cosh": ("torch.cosh({x})", "{x}.cosh()", None),
    "erf": ("torch.erf({x})", "{x}.erf()", None),
    "expm1": ("torch.expm1({x})", "{x}.expm1()", None),
    "log1p": ("torch.log1p({x} * {x})", "({x} * {x}).log1p()", None),
    "tan": ("torch.tan(torch.tanh({x}))", "{x}.tanh().tan()", None),
    "asin": ("torch.asin(0.9 * torch.tanh({x}))", "(0.9 * {x}.tanh()).asin()", None),
    "acos": ("torch.acos(0.9 * torch.tanh({x}))", "(0.9 * {x}.tanh()).acos()", None),
    "floor": ("torch.floor({x})", "{x}.floor()", _from_integers),
    "clamp": ("torch.clamp({x}, min=-0.5)", "{x}.clamp(max=0.5)", _from_points(-0.5, 0.5)),
    "leaky_relu": (_F + "leaky_relu({x}, 0.01)", _F + "leaky_relu({x}, 0.2)", _from_points(0.0)),
    "elu": (_F + "elu({x})", _F + "elu({x}, 0.5)", _from_points(0.0)),
    "gelu": (_F + "gelu({x})", _F + "gelu({x}, approximate='tanh')", None),
    "silu": (_F + "silu({x})", _F + "silu({x})", None),
    "softplus": (_F + "softplus({x})", _F + "softplus({x}, beta=2.0)", None),
    "logsigmoid": (_F + "logsigmoid({x})", _F + "logsigmoid({x})", None),
    "lgamma": ("torch.lgamma({p})", "{p}.lgamma()", None),
    "digamma": ("torch.digamma({p})", "{p}.digamma()", None),
}
# name -> (operator/function form, function/method form, kink); {a}, {b} operands, {pa}/{pb}
# their x * x + 0.5.
BINARY_OPS = {
    "add": ("{a} + {b}", "torch.add({a}, {b})", None),
    "sub": ("{a} - {b}", "torch.sub({a}, {b})", None),
    "mul": ("{a} * {b}", "torch.mul({a}, {b})", None),
    "div": ("{a} / {pb}", "torch.div({a}, {pb})", None),
    "pow": ("{pa} ** {b}", "torch.pow({pa}, {b})", None),
    "maximum": ("torch.maximum({a}, {b})", "{a}.maximum({b})", _from_each_other),
    "minimum": ("torch.minimum({a}, {b})", "{a}.minimum({b})", _from_each_other),
    "atan2": ("torch.atan2({a}, {b})", "{a}.atan2({b})", _atan2_kink),
    "hypot": ("torch.hypot({a}, {b})", "{a}.hypot({b})", _from_origin),
    "remainder": ("{a} % {pb}", "torch.remainder({a}, {pb})", _remainder_kink),
}
# the core vocabulary (always in tapegrad's facade); available_*() add what the library has
UNARY = ("neg", "exp", "log", "sin", "cos", "tanh", "sigmoid", "relu", "sqrt", "abs", "pow_scalar")
BINARY = ("add", "sub", "mul", "div", "pow")
SCALAR_OPS = ("add", "sub", "mul", "div", "pow")
REDUCTIONS = ("sum", "mean")
KINDS = ("unary", "binary", "scalar", "reduce", "reshape", "index", "matmul", "custom")

POW_EXPONENTS = (2.0, 3.0, 1.5, -1.0, 0.5, 2.5)
CONSTANTS = (2.0, 0.5, -1.5, 3.0)

_OPSYM = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**"}
_AVAILABLE = {}


def _works(lib, src, nargs):
    try:
        args = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in (0.3, 0.7)[:nargs]]
        f = eval("lambda %s: %s" % (", ".join("ab"[:nargs]) if nargs == 2 else "x", src),
                 {"torch": lib})                       # noqa: S307 - our own table
        y = f(*args)
        lib.autograd.grad(y, args, allow_unused=True)
        return True
    except Exception:           # noqa: BLE001 - not in this library (yet)
        return False


def available_unary(lib=None):
    """The unary vocabulary names whose both forms run (forward and backward) on ``lib``
    (default tapegrad), in the order of UNARY_OPS (the core ones first)."""
    return _available(lib, "unary")


def available_binary(lib=None):
    """As available_unary, for BINARY_OPS."""
    return _available(lib, "binary")


def _available(lib, which):
    if lib is None:
        import tapegrad as lib  # deferred: the package this client runs programs against
    key = (lib.__name__, which)
    if key not in _AVAILABLE:
        out = []
        if which == "unary":
            for name, (f, m, _) in UNARY_OPS.items():
                if f is None or all(_works(lib, t.format(x="x", p="(x * x + 0.5)"), 1)
                                    for t in (f, m)):
                    out.append(name)
        else:
            for name, (f, m, _) in BINARY_OPS.items():
                if all(_works(lib, t.format(a="a", b="b", pa="(a * a + 0.5)",
                                            pb="(b * b + 0.5)"), 2) for t in (f, m)):
                    out.append(name)
        _AVAILABLE[key] = tuple(out)
    return _AVAILABLE[key]


@dataclass(frozen=True)
class Step:
    """One op descriptor. Meaning of the fields per ``kind``:

    * ``unary``: ``name`` in UNARY_OPS; ``a`` picks the operand; ``flag``: the second form
      of the table (``x.sin()`` instead of ``torch.sin(x)``); ``k``: the exponent of
      ``pow_scalar``.
    * ``binary``: ``name`` in BINARY_OPS; ``a``, ``b`` pick the operands; ``flag``: the
      second form of the table (function or method).
    * ``scalar``: ``name`` in SCALAR_OPS with a Python-number operand ``c``; ``flag``:
      reflected (``c - x``).
    * ``reduce``: ``name`` in REDUCTIONS; ``k`` = 0 reduces everything, else a dim;
      ``flag``: keepdim.
    * ``reshape``: ``name`` ``reshape`` or ``view``; ``k`` picks the target shape.
    * ``index``: ``name`` ``select``, ``slice`` or ``gather`` (an index tensor); ``k`` picks
      dim and positions; ``flag``: negative index / step 2.
    * ``matmul``: ``a``, ``b`` pick operands (reshaped to fit); ``flag``: ``torch.matmul``.
    * ``custom``: ``name`` is a key of the program's ``custom`` ops (elementwise callables).
    """
    kind: str
    name: str = ""
    a: int = 0
    b: int = 0
    k: int = 0
    flag: bool = False
    c: float = 2.0

    def __repr__(self):
        return "Step(%r, %r, a=%d, b=%d, k=%d, flag=%r, c=%r)" % (
            self.kind, self.name, self.a, self.b, self.k, self.flag, self.c)


@dataclass
class _Val:
    name: str
    shape: tuple
    contiguous: bool = True


@dataclass
class _Line:
    target: str
    expr: str
    shape: tuple
    step: Step
    kink_args: tuple = ()
    kink: object = None
    reads: tuple = ()


def _reads(expr, name):
    import re
    return re.search(r"\b%s\b" % name, expr) is not None


def _numel(shape):
    return int(np.prod(shape, dtype=np.int64))


def _broadcast(s1, s2):
    try:
        return tuple(np.broadcast_shapes(s1, s2))
    except ValueError:
        return None


def _pos(x):
    """An expression that is >= 0.5 whatever x is."""
    return "(%s * %s + 0.5)" % (x, x)


def _num(c):
    return repr(float(c))


def _reshape_candidates(shape):
    n = _numel(shape)
    cands = [(n,), (1, n), (n, 1)]
    for d in range(2, n):
        if n % d == 0:
            cands.append((d, n // d))
    if len(shape) >= 2:
        cands.append(tuple(reversed(shape)))
    cands.append(tuple(shape) + (1,))
    if n == 1:
        cands.append(())
    out = []
    for c in cands:
        if c not in out:
            out.append(c)
    return out


def _shape_src(shape):
    if len(shape) == 1:
        return "%d" % shape[0]
    if not shape:
        return "()"
    return ", ".join(str(s) for s in shape)


class Program:
    """A straight-line differentiable program over ``len(input_shapes)`` inputs (see the
    module docstring). ``custom`` maps names to elementwise callables usable as steps of kind
    ``custom`` (for example a custom ``Function.apply`` under test)."""

    def __init__(self, input_shapes, steps, custom=None):
        self.input_shapes = tuple(tuple(int(d) for d in s) for s in input_shapes)
        self.steps = tuple(steps)
        self.custom = dict(custom or {})
        self.lines = self._resolve()
        self.source = self._source()
        self._code = {}

    # ------------------------------------------------------------------ resolution
    def _resolve(self):
        vals = [_Val("x%d" % i, s) for i, s in enumerate(self.input_shapes)]
        lines = []
        for st in self.steps:
            res = self._line(st, vals, "v%d" % len(lines))
            if res is None:
                continue
            line, contiguous = res
            line.reads = tuple(v.name for v in vals if _reads(line.expr, v.name))
            lines.append(line)
            vals.append(_Val(line.target, line.shape, contiguous))
        return lines

    @staticmethod
    def _pick(vals, a):
        return vals[-1 - (a % len(vals))]

    def _line(self, st, vals, tgt):
        x = self._pick(vals, st.a)
        kind = st.kind
        if kind == "unary":
            return self._unary(st, x, tgt)
        if kind == "custom":
            if st.name not in self.custom:
                return None
            return _Line(tgt, "%s(%s)" % (st.name, x.name), x.shape, st), x.contiguous
        if kind == "binary":
            y = self._partner(vals, st.b, lambda v: _broadcast(x.shape, v.shape) is not None) or x
            shape = _broadcast(x.shape, y.shape)
            nm = st.name if st.name in BINARY_OPS else "add"
            f, m, kink = BINARY_OPS[nm]
            expr = (m if st.flag else f).format(a=x.name, b=y.name, pa=_pos(x.name),
                                                 pb=_pos(y.name))
            line = _Line(tgt, expr, shape, st)
            if kink is not None:
                line.kink_args, line.kink = (x.name, y.name), kink
            return line, x.contiguous and y.contiguous
        if kind == "scalar":
            nm = st.name if st.name in SCALAR_OPS else "add"
            c = st.c
            if nm == "pow":
                c = abs(c) or 2.0
                expr = ("%s ** %s" % (_num(c), x.name)) if st.flag else (
                    "%s ** %s" % (_pos(x.name), _num(c)))
            elif nm == "div" and st.flag:
                expr = "%s / %s" % (_num(c), _pos(x.name))
            elif nm == "div":
                expr = "%s / %s" % (x.name, _num(c if c != 0 else 2.0))
            elif st.flag:
                expr = "%s %s %s" % (_num(c), _OPSYM[nm], x.name)
            else:
                expr = "%s %s %s" % (x.name, _OPSYM[nm], _num(c))
            return _Line(tgt, expr, x.shape, st), x.contiguous
        if kind == "reduce":
            nm = st.name if st.name in REDUCTIONS else "sum"
            nd = len(x.shape)
            if st.k == 0 or nd == 0:
                return _Line(tgt, "%s.%s()" % (x.name, nm), (), st), True
            d = (st.k - 1) % nd
            shown = d - nd if ((st.k - 1) // nd) % 2 else d
            shape = tuple(1 if i == d else s for i, s in enumerate(x.shape)) if st.flag else \
                tuple(s for i, s in enumerate(x.shape) if i != d)
            kw = ", keepdim=True" if st.flag else ""
            return _Line(tgt, "%s.%s(dim=%d%s)" % (x.name, nm, shown, kw), shape, st), x.contiguous
        if kind == "reshape":
            cands = _reshape_candidates(x.shape)
            shape = cands[st.k % len(cands)]
            how = "view" if (st.name == "view" and x.contiguous) else "reshape"
            src = _shape_src(shape)
            if shape == ():
                src = "()"
            return _Line(tgt, "%s.%s(%s)" % (x.name, how, src), shape, st), x.contiguous
        if kind == "index":
            return self._index(st, x, tgt)
        if kind == "matmul":
            return self._matmul(st, x, vals, tgt)
        raise ValueError("unknown step kind %r" % kind)

    @staticmethod
    def _partner(vals, b, ok):
        n = len(vals)
        for j in range(n):
            v = vals[-1 - ((b + j) % n)]
            if ok(v):
                return v
        return None

    @staticmethod
    def _unary(st, x, tgt):
        nm = st.name if st.name in UNARY_OPS else "neg"
        xn = x.name
        f, m, kink = UNARY_OPS[nm]
        if nm == "pow_scalar":
            p = POW_EXPONENTS[st.k % len(POW_EXPONENTS)]
            base = xn if p in (2.0, 3.0) else _pos(xn)
            expr = "%s ** %s" % (base, _num(p))
        else:
            expr = (m if st.flag else f).format(x=xn, p=_pos(xn))
        line = _Line(tgt, expr, x.shape, st)
        if kink is not None:
            line.kink_args, line.kink = (xn,), kink
        return line, x.contiguous

    @staticmethod
    def _index(st, x, tgt):
        nd = len(x.shape)
        if nd == 0:
            return _Line(tgt, "%s[None]" % x.name, (1,), st), False
        d = st.k % nd
        size = x.shape[d]
        r = st.k // nd
        pre = ":, " * d
        nm = st.name if st.name in ("select", "slice", "gather") else "select"
        if nm == "select":
            i = r % size
            if st.flag:
                i -= size
            key = "%s%d" % (pre, i)
            shape = x.shape[:d] + x.shape[d + 1:]
        elif nm == "slice":
            start = r % size
            step = 2 if st.flag else 1
            key = pre + ("%d" % start if start else "") + ":" + (":2" if step == 2 else "")
            shape = x.shape[:d] + (len(range(start, size, step)),) + x.shape[d + 1:]
        else:
            n = 1 + r % 3
            idx = [(r * 7 + j * 5) % size for j in range(n)]
            key = "%storch.tensor(%s)" % (pre, idx)
            shape = x.shape[:d] + (n,) + x.shape[d + 1:]
        return _Line(tgt, "%s[%s]" % (x.name, key), shape, st), False

    def _matmul(self, st, x, vals, tgt):
        nd = len(x.shape)
        if nd in (1, 2):
            left, lshape = x.name, x.shape
        else:
            m = x.shape[0] if nd >= 1 else 1
            left = "%s.reshape(%d, -1)" % (x.name, m)
            lshape = (m, _numel(x.shape) // m)
        k = lshape[-1]
        y = self._partner(vals, st.b, lambda v: len(v.shape) in (1, 2) and v.shape[0] == k)
        if y is not None:
            right, rshape = y.name, y.shape
        else:
            n = _numel(x.shape) // k
            right, rshape = "%s.reshape(%d, -1)" % (x.name, k), (k, n)
        shape = lshape[:-1] + rshape[1:]
        expr = ("torch.matmul(%s, %s)" % (left, right)) if st.flag else "%s @ %s" % (left, right)
        return _Line(tgt, expr, shape, st), True

    # ------------------------------------------------------------------ source
    @property
    def n_inputs(self):
        return len(self.input_shapes)

    @property
    def outputs(self):
        """Names of the returned values: every computed value no later line reads (so no
        line is dead code); a single one is returned as is, several as a tuple."""
        if not self.lines:
            return ["x%d" % (self.n_inputs - 1)]
        read = set()
        for ln in self.lines:
            read.update(ln.reads)
        return [ln.target for ln in self.lines if ln.target not in read]

    @property
    def output_shapes(self):
        shapes = {ln.target: ln.shape for ln in self.lines}
        return [shapes.get(o, self.input_shapes[-1]) for o in self.outputs]

    def _source(self, trace=False):
        args = ", ".join("x%d" % i for i in range(self.n_inputs))
        out = ["def f(%s):" % args]
        shapes = ", ".join(str(s) for s in self.input_shapes)
        if not trace:
            out[0] += "  # input shapes: %s" % shapes
        for ln in self.lines:
            out.append("    %s = %s" % (ln.target, ln.expr))
            if trace:
                out.append("    _trace.append((%r, %s))" % (ln.target, ln.target))
        out.append("    return %s" % ", ".join(self.outputs))
        return "\n".join(out)

    def __repr__(self):
        return self.source

    __str__ = __repr__

    def __len__(self):
        return len(self.lines)

    def __eq__(self, other):
        return isinstance(other, Program) and (self.input_shapes, self.steps) == (
            other.input_shapes, other.steps)

    def __hash__(self):
        return hash((self.input_shapes, self.steps))

    # ------------------------------------------------------------------ evaluation
    def function(self, lib, trace=None):
        """The program as a Python function of its inputs, using ``lib`` as ``torch``."""
        key = trace is not None
        code = self._code.get(key)
        if code is None:
            code = compile(self._source(trace=key), "<tapegrad program>", "exec")
            self._code[key] = code
        ns = {"torch": lib, "_trace": trace}
        ns.update(self.custom)
        exec(code, ns)
        return ns["f"]

    def __call__(self, lib, *inputs):
        return self.function(lib)(*inputs)

    def inputs(self, lib, arrays, dtype=None, requires_grad=True):
        """Tensors of ``lib`` for the given arrays (float64 unless ``dtype``)."""
        dt = dtype if dtype is not None else lib.float64
        return tuple(lib.tensor(np.array(a, dtype=np.float64), dtype=dt,
                                requires_grad=requires_grad) for a in arrays)

    def trace(self, lib, *inputs):
        """{name: float64 ndarray} of every value the program computes (inputs included)."""
        tr = []
        with lib.no_grad():
            self.function(lib, trace=tr)(*inputs)
        out = {"x%d" % i: np.array(t.detach().numpy(), dtype=np.float64)
               for i, t in enumerate(inputs)}
        for name, v in tr:
            out[name] = np.array(v.detach().numpy(), dtype=np.float64)
        return out

    def well_conditioned(self, lib, arrays, margin=1e-2, bound=1e3):
        """True when every value is finite and at most ``bound`` in magnitude, and the
        arguments of every op with a kink or singularity (relu, abs, floor, clamp, maximum,
        atan2, remainder ...) are at least ``margin`` away from it: the conditions under which
        central differences with eps=1e-6 agree with the derivative to gradcheck's
        tolerances."""
        with np.errstate(all="ignore"):
            vals = self.trace(lib, *self.inputs(lib, arrays, requires_grad=False))
            for v in vals.values():
                if not np.all(np.isfinite(v)) or (v.size and np.max(np.abs(v)) > bound):
                    return False
            for ln in self.lines:
                if ln.kink is not None:
                    d = np.asarray(ln.kink(*[vals[n] for n in ln.kink_args]))
                    if d.size and not np.min(d) >= margin:
                        return False
        return True

    def uses(self):
        """The set of op names the program's lines use (``relu``, ``add``, ``matmul`` ...)."""
        out = set()
        for ln in self.lines:
            out.add(ln.step.name or ln.step.kind)
        return out


def reduce_program(program, arrays, fails, max_calls=1000):
    """Greedy reduction of a failing ``(program, arrays)`` on top of hypothesis' shrinking
    (which can stop at a local minimum: it does not always delete list elements, e.g. keeps
    ``v0 = -x0`` before the culprit). ``fails((program, arrays))`` must be true for the input;
    repeatedly tries, keeping whatever still fails: deleting each step, deleting each input,
    making each input 0-dim (its first element), resetting each step's fields to their
    simplest values. Returns the reduced ``(program, arrays)``: no single one of those changes
    keeps it failing."""
    calls = [0]

    def still(p, a):
        if calls[0] >= max_calls:
            return False
        calls[0] += 1
        try:
            return bool(fails((p, a)))
        except Exception:           # noqa: BLE001 - a candidate that errors differently
            return False

    best = (program, tuple(np.asarray(a, dtype=np.float64) for a in arrays))
    changed = True
    while changed and calls[0] < max_calls:
        changed = False
        for cand in _candidates(*best):
            if still(*cand):
                best, changed = cand, True
                break
    return best


def _candidates(p, arrays):
    steps, shapes = list(p.steps), list(p.input_shapes)
    for i in range(len(steps)):                       # fewer steps
        if len(steps) > 1:
            yield Program(shapes, steps[:i] + steps[i + 1:], p.custom), arrays
    for j in range(len(shapes)):                      # fewer inputs
        if len(shapes) > 1:
            yield (Program(shapes[:j] + shapes[j + 1:], steps, p.custom),
                   arrays[:j] + arrays[j + 1:])
    for j, s in enumerate(shapes):                    # smaller inputs
        if s != ():
            a = list(arrays)
            a[j] = np.asarray(arrays[j]).reshape(-1)[0]
            yield Program(shapes[:j] + [()] + shapes[j + 1:], steps, p.custom), tuple(a)
    simple = dict(a=0, b=0, k=0, flag=False)
    for i, st in enumerate(steps):                    # simpler steps
        for f, v in simple.items():
            if getattr(st, f) != v:
                s2 = list(steps)
                s2[i] = Step(**{**st.__dict__, f: v})
                yield Program(shapes, s2, p.custom), arrays
