"""THE op table: one row per primitive, and the generator of the interpreter's dispatch.

Each row declares, once: the opcode (its position in ``OPS``), the calling-convention *kind*,
the Numba kernel pair ``kernels.fwd_<name>`` / ``kernels.vjp_<name>``, the default grad_fn
name PyTorch shows for it, the numpy reference used for the eager forward and for tests, what
the VJP needs saved, and a test domain. ``_interp.py`` is generated from this table
(``python -m tapegrad.ops`` rewrites it; ``tests/test_interp_generated.py`` fails when the
checked-in file is stale).

Adding a primitive: write ``fwd_<name>``/``vjp_<name>`` in ``kernels.py``, add a row here,
regenerate ``_interp.py``, expose it in ``tensor.py``. The op tests pick the row up by
themselves (see docs/adding_an_op.md).
"""
import operator
from dataclasses import dataclass, field
from typing import Callable, Optional, Tuple

import numpy as np

# Kinds (calling conventions of the kernel pair, see kernels.py).
UNARY, BINARY, SUM, INDEX, MM, CAST, PYFUNC = "unary", "binary", "sum", "index", "mm", "cast", "pyfunc"
KIND_CODES = {UNARY: 0, BINARY: 1, SUM: 2, INDEX: 3, MM: 4, CAST: 5, PYFUNC: 6}


def _never(na, nb):
    return (False, False, False)


@dataclass(frozen=True)
class Op:
    name: str            # kernels fwd_<name> / vjp_<name>; facade method name
    kind: str            # calling convention
    grad_fn: str         # default torch node name (the facade may pick a variant, e.g. MeanBackward0)
    ref: Optional[Callable] = None   # numpy reference forward (eager forward and tests)
    # unary: which of "x" (input) / "y" (output) the VJP reads.
    saves: str = ""
    # binary: (need_a, need_b) -> (save a, save b, save y)
    saves_fn: Callable = field(default=_never)
    # numpy VJP for entries touching big nodes (numpy's SIMD ufuncs / BLAS; chunks run on all
    # cores). unary: (g, x, y, c, out) writes gx into out; binary: (g, a, b, y, outa, outb)
    # writes the wanted gradients (an out is None when not wanted; unsaved operands are None);
    # sum: (g, c, n) -> gx (a read-only broadcast view: no fill pass); mm: (g, a, b, na, nb)
    # -> (ga, gb) as 2-D arrays.
    np_vjp: Optional[Callable] = None
    # binary rows whose gradients are +-g itself: (sign for a, sign for b) (add, sub)
    vjp_sign: Optional[Tuple[int, int]] = None
    # forward into a preallocated output, for chunked parallel evaluation:
    # unary (x, c, out); binary (a, b, out)
    fwd_out: Optional[Callable] = None
    # differentiable VJP with Tensor operations, for create_graph=True (T: tapegrad.tensor).
    # unary (T, g, x, y, c) -> gx; binary (T, g, a, b, y) -> (ga, gb); operands are flat
    # tensors bound to the recorded nodes (saved values), so the backward pass is recorded too.
    vjp_t: Optional[Callable] = None
    domain: Tuple[float, float] = (-2.0, 2.0)   # test inputs drawn from here
    const: Optional[float] = None               # test constant for rows that take one (pow_scalar)
    doc: str = ""
    opcode: int = -1                            # its index in OPS (set below)


def _sigmoid(x, c=None):
    return np.where(x >= 0, 1.0 / (1.0 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x)))).astype(x.dtype)


def _relu(x, c=None):
    return np.maximum(x, np.zeros((), x.dtype))


def _pow_scalar_vjp(g, x, y, c, out):
    if c == 0.0:
        out[...] = 0
    elif c == 2.0:
        np.add(x, x, out=out)
        out *= g
    else:
        np.power(x, x.dtype.type(c - 1), out=out)
        out *= x.dtype.type(c)
        out *= g


def _pow_scalar_fwd(x, c, out):
    if c == 2.0:
        np.square(x, out=out)
    else:
        np.power(x, x.dtype.type(c), out=out)


def _pow_vjp(g, a, b, y, outa, outb):
    if outa is not None:         # b a^(b-1), 0 where b == 0
        np.subtract(b, 1, out=outa)
        np.power(a, outa, out=outa)
        outa *= b
        outa *= g
        outa[np.broadcast_to(b == 0, outa.shape)] = 0
    if outb is not None:         # a^b log(a), 0 where a == 0 and b >= 0
        np.log(a, out=outb)
        outb *= y
        outb *= g
        outb[np.broadcast_to((a == 0) & (b >= 0), outb.shape)] = 0


def _div_vjp(g, a, b, y, outa, outb):
    if outa is not None:
        np.divide(g, b, out=outa)
    if outb is not None:         # -g a / b^2
        np.multiply(b, b, out=outb)
        np.divide(a, outb, out=outb)
        outb *= g
        np.negative(outb, out=outb)


def _mul_vjp(g, a, b, y, outa, outb):
    if outa is not None:
        np.multiply(g, b, out=outa)
    if outb is not None:
        np.multiply(g, a, out=outb)


def _chain(*steps):
    """An out-style unary VJP from steps f(g, x, y, c, out) applied in order."""
    def vjp(g, x, y, c, out):
        for step in steps:
            step(g, x, y, c, out)
    return vjp


def _u(f):
    """Adapt a one-argument numpy function to the unary reference signature ref(x, c)."""
    return lambda x, c=None: f(x)


OPS = [
    # ---- unary elementwise: y = f(x; c)
    Op("neg", UNARY, "NegBackward0", _u(np.negative), doc="-x",
       np_vjp=lambda g, x, y, c, out: np.negative(g, out=out),
       fwd_out=lambda x, c, out: np.negative(x, out=out)),
    Op("exp", UNARY, "ExpBackward0", _u(np.exp), saves="y",
       np_vjp=lambda g, x, y, c, out: np.multiply(g, y, out=out),
       fwd_out=lambda x, c, out: np.exp(x, out=out)),
    Op("log", UNARY, "LogBackward0", _u(np.log), saves="x", domain=(0.1, 3.0),
       np_vjp=lambda g, x, y, c, out: np.divide(g, x, out=out),
       fwd_out=lambda x, c, out: np.log(x, out=out)),
    Op("sin", UNARY, "SinBackward0", _u(np.sin), saves="x",
       np_vjp=_chain(lambda g, x, y, c, out: np.cos(x, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out)),
       fwd_out=lambda x, c, out: np.sin(x, out=out)),
    Op("cos", UNARY, "CosBackward0", _u(np.cos), saves="x",
       np_vjp=_chain(lambda g, x, y, c, out: np.sin(x, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out),
                     lambda g, x, y, c, out: np.negative(out, out=out)),
       fwd_out=lambda x, c, out: np.cos(x, out=out)),
    Op("tanh", UNARY, "TanhBackward0", _u(np.tanh), saves="y",
       np_vjp=_chain(lambda g, x, y, c, out: np.multiply(y, y, out=out),
                     lambda g, x, y, c, out: np.subtract(1, out, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out)),
       fwd_out=lambda x, c, out: np.tanh(x, out=out)),
    Op("sigmoid", UNARY, "SigmoidBackward0", _sigmoid, saves="y",
       np_vjp=_chain(lambda g, x, y, c, out: np.subtract(1, y, out=out),
                     lambda g, x, y, c, out: np.multiply(out, y, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out))),
    Op("relu", UNARY, "ReluBackward0", _relu, saves="y", domain=(0.05, 2.0),
       np_vjp=lambda g, x, y, c, out: np.multiply(g, y > 0, out=out),
       fwd_out=lambda x, c, out: np.maximum(x, 0, out=out)),
    Op("sqrt", UNARY, "SqrtBackward0", _u(np.sqrt), saves="y", domain=(0.1, 3.0),
       np_vjp=_chain(lambda g, x, y, c, out: np.add(y, y, out=out),
                     lambda g, x, y, c, out: np.divide(g, out, out=out)),
       fwd_out=lambda x, c, out: np.sqrt(x, out=out)),
    Op("abs", UNARY, "AbsBackward0", _u(np.abs), saves="x", domain=(0.05, 2.0),
       np_vjp=_chain(lambda g, x, y, c, out: np.sign(x, out=out),
                     lambda g, x, y, c, out: np.multiply(out, g, out=out)),
       fwd_out=lambda x, c, out: np.abs(x, out=out)),
    Op("pow_scalar", UNARY, "PowBackward0", lambda x, c: np.power(x, x.dtype.type(c)), saves="x",
       domain=(0.1, 2.0), const=2.5, doc="x ** c for a Python number c",
       np_vjp=_pow_scalar_vjp, fwd_out=_pow_scalar_fwd),
    # ---- binary elementwise with single-element broadcast: y = f(a, b)
    # (operator forms: numpy's scalar fast path for 0-dim values, ufuncs for arrays)
    Op("add", BINARY, "AddBackward0", operator.add, vjp_sign=(1, 1),
       fwd_out=lambda a, b, out: np.add(a, b, out=out)),
    Op("sub", BINARY, "SubBackward0", operator.sub, vjp_sign=(1, -1),
       fwd_out=lambda a, b, out: np.subtract(a, b, out=out)),
    Op("mul", BINARY, "MulBackward0", operator.mul, saves_fn=lambda na, nb: (nb, na, False),
       np_vjp=_mul_vjp, fwd_out=lambda a, b, out: np.multiply(a, b, out=out)),
    Op("div", BINARY, "DivBackward0", operator.truediv, saves_fn=lambda na, nb: (nb, na or nb, False),
       domain=(0.2, 2.0), np_vjp=_div_vjp, fwd_out=lambda a, b, out: np.divide(a, b, out=out)),
    Op("pow", BINARY, "PowBackward1", np.power, saves_fn=lambda na, nb: (True, True, nb),
       domain=(0.2, 2.0), np_vjp=_pow_vjp, fwd_out=lambda a, b, out: np.power(a, b, out=out)),
    # ---- reductions
    Op("sum", SUM, "SumBackward0", lambda x, c: (np.sum(x) * x.dtype.type(c)).astype(x.dtype),
       doc="c * sum(x): sum (c=1) and mean (c=1/n)",
       np_vjp=lambda g, c, n: np.broadcast_to(g[:1] * g.dtype.type(c), (n,))),
    # ---- index maps (forward is done by numpy views in the facade; idx drives the VJP)
    Op("gather", INDEX, "IndexBackward0", lambda x, idx, c, m: x.ravel()[idx],
       doc="y[i] = x[idx[i]]: expand, slicing, select, transpose, permute"),
    Op("segsum", INDEX, "SumBackward1",
       lambda x, idx, c, m: (np.bincount(idx, x.ravel(), minlength=m) * c).astype(x.dtype),
       doc="y[idx[i]] += c x[i]: sum/mean over dims, un-broadcast"),
    Op("copy", INDEX, "ViewBackward0", lambda x, idx, c, m: x.ravel().copy(),
       doc="identity: view, reshape, unbind, clone"),
    # ---- matrix product
    Op("mm", MM, "MmBackward0", lambda a, b: a @ b, saves_fn=lambda na, nb: (nb, na, False),
       np_vjp=lambda g, a, b, na, nb: (g @ b.T if na else None, a.T @ g if nb else None),
       doc="(m,k)@(k,n); also dot and mv through flat storage"),
    # ---- structural rows handled by the interpreter itself
    Op("cast", CAST, "ToCopyBackward0", doc="dtype conversion between the float32/float64 stores"),
    Op("pyfunc", PYFUNC, "PyFunctionBackward", doc="custom autograd.Function: calls back into Python"),
]

# Differentiable VJPs (create_graph=True): the same derivative identities as the kernels,
# written with tensor operations. Index, sum, mm and cast rows are handled by the sweep in
# autograd/higher.py (they are linear: their VJP is another index map or product).
_VJP_T = {
    "neg": lambda T, g, x, y, c: -g,
    "exp": lambda T, g, x, y, c: g * y,
    "log": lambda T, g, x, y, c: g / x,
    "sin": lambda T, g, x, y, c: g * T.cos(x),
    "cos": lambda T, g, x, y, c: -(g * T.sin(x)),
    "tanh": lambda T, g, x, y, c: g * (1 - y * y),
    "sigmoid": lambda T, g, x, y, c: g * y * (1 - y),
    "relu": lambda T, g, x, y, c: g * (y > 0).to(g.dtype),
    "sqrt": lambda T, g, x, y, c: g / (2 * y),
    "abs": lambda T, g, x, y, c: g * ((x > 0).to(g.dtype) - (x < 0).to(g.dtype)),
    "pow_scalar": lambda T, g, x, y, c: g * 0.0 if c == 0 else g * (c * x ** (c - 1)),
    "add": lambda T, g, a, b, y: (g, g),
    "sub": lambda T, g, a, b, y: (g, -g),
    "mul": lambda T, g, a, b, y: (None if b is None else g * b, None if a is None else g * a),
    "div": lambda T, g, a, b, y: (g / b, None if a is None else -(g * a) / (b * b)),
    "pow": lambda T, g, a, b, y: (g * b * a ** (b - 1), None if y is None else g * y * T.log(a)),
}
for _name, _f in _VJP_T.items():
    object.__setattr__(next(o for o in OPS if o.name == _name), "vjp_t", _f)

OPCODE = {op.name: i for i, op in enumerate(OPS)}
for _i, _op in enumerate(OPS):
    object.__setattr__(_op, "opcode", _i)
BY_NAME = {op.name: op for op in OPS}
# Rows the differentiable-op tests are parametrized over (structural rows are tested by the facade).
KERNEL_OPS = [op for op in OPS if op.kind not in (CAST, PYFUNC)]


# ----------------------------------------------------------------------------- generator
_HEADER = '''"""GENERATED from tapegrad/ops.py by `python -m tapegrad.ops` -- do not edit by hand.

The interpreter's dispatch: one branch per row of the op table. `reverse` sweeps a tape
backwards accumulating adjoints; `forward` replays it on new node values. Each is one
compiled function (its body emitted once per dtype store, float32 and float64), cached on
disk; no tape ever triggers a compilation.
"""
from numba import njit

from .kernels import *  # noqa: F401,F403  (kernel pairs and tape accessors)
from .kernels import (K, NK, OP, OUT, IA, IB, SA, SB, SY, P0, P1, CI, FL, NOFF, NSIZE, NDT,
                      F_FREED, F_SAVES, F_BIG, noff, operand, mark, raw)

_jit = njit(cache=True, nogil=True, error_model="numpy")
'''

# Per kind: (lines fetching operands, kernel call, lines after) for the reverse sweep.
_REV = {
    UNARY: (["X_ = operand(live, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], n)",
             "Y_ = operand(live, X{d}, V{d}, XA{d}, N, out, E[b0 + SY], n)"],
            "vjp_{name}(n, A{d}, go, X_, 0, Y_, 0, c, A{d}, noff(N, a))",
            ["mark(N, nreach, ereach, a)"]),
    BINARY: (["sa = E[b0 + P0]", "sb = E[b0 + P1]",
              "A_ = operand(live, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], (n - 1) * sa + 1)",
              "B_ = operand(live, X{d}, V{d}, XA{d}, N, b, E[b0 + SB], (n - 1) * sb + 1)",
              "Y_ = operand(live, X{d}, V{d}, XA{d}, N, out, E[b0 + SY], n)"],
             "vjp_{name}(n, A{d}, go, A_, 0, sa, B_, 0, sb, Y_, 0, "
             "A{d}, noff(N, a), A{d}, noff(N, b), a >= 0, b >= 0)",
             ["mark(N, nreach, ereach, a)", "mark(N, nreach, ereach, b)"]),
    SUM: ([], "vjp_{name}(N[a * NK + NSIZE], A{d}, go, c, A{d}, noff(N, a))",
          ["mark(N, nreach, ereach, a)"]),
    INDEX: ([], "vjp_{name}(E[b0 + P1], N[a * NK + NSIZE], A{d}, go, I, E[b0 + P0], c, "
                "A{d}, noff(N, a))",
            ["mark(N, nreach, ereach, a)"]),
    MM: (["m = E[b0 + P0]", "k = E[b0 + P1]",
          "A_ = operand(live, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], m * k)",
          "B_ = operand(live, X{d}, V{d}, XA{d}, N, b, E[b0 + SB], k * (n // m))"],
         "vjp_{name}(m, k, n // m, A{d}, go, A_, 0, B_, 0, A{d}, noff(N, a), "
         "A{d}, noff(N, b), a >= 0, b >= 0)",
         ["mark(N, nreach, ereach, a)", "mark(N, nreach, ereach, b)"]),
}

# Per kind: (operand lines, kernel call) for the forward replay: inputs are live node values
# or recorded constants; the output is the node's slot in X.
_FWD = {
    UNARY: (["X_ = operand(True, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], n)"],
            "fwd_{name}(n, X_, 0, c, X{d}, yo)"),
    BINARY: (["A_ = operand(True, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], (n - 1) * E[b0 + P0] + 1)",
              "B_ = operand(True, X{d}, V{d}, XA{d}, N, b, E[b0 + SB], (n - 1) * E[b0 + P1] + 1)"],
             "fwd_{name}(n, A_, 0, E[b0 + P0], B_, 0, E[b0 + P1], X{d}, yo)"),
    SUM: ([], "fwd_{name}(N[a * NK + NSIZE], X{d}, noff(N, a), c, X{d}, yo)"),
    INDEX: ([], "fwd_{name}(E[b0 + P1], n, X{d}, noff(N, a), I, E[b0 + P0], c, X{d}, yo)"),
    MM: (["A_ = operand(True, X{d}, V{d}, XA{d}, N, a, E[b0 + SA], E[b0 + P0] * E[b0 + P1])",
          "B_ = operand(True, X{d}, V{d}, XA{d}, N, b, E[b0 + SB], E[b0 + P1] * (n // E[b0 + P0]))"],
         "fwd_{name}(E[b0 + P0], E[b0 + P1], n // E[b0 + P0], A_, 0, B_, 0, X{d}, yo)"),
}


def _body(by_kind, table, d, ind, reverse):
    """The per-kind dispatch for one dtype store (d = "4" or "8")."""
    out = []
    first = True
    for kind in (UNARY, BINARY, SUM, INDEX, MM):
        rows = by_kind.get(kind)
        if not rows:
            continue
        out.append("%s%s kind == %d:  # %s" % (ind, "if" if first else "elif", KIND_CODES[kind], kind))
        first = False
        spec = table[kind]
        for line in spec[0]:
            out.append(ind + "    " + line.replace("{d}", d))
        call = spec[1].replace("{d}", d)
        for i, (code, op) in enumerate(rows):
            out.append("%s    %s op == %d:  # %s" % (ind, "if" if i == 0 else "elif", code, op.name))
            out.append("%s        %s" % (ind, call.replace("{name}", op.name)))
        if reverse:
            for line in spec[2]:
                out.append(ind + "    " + line)
    return out


_REVERSE_HEAD = '''

@_jit
def reverse(E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, live, nreach, ereach, bad, start, stop):
    """Sweep entries start..stop (inclusive, downwards), accumulating adjoints into A4/A8.
    Saved values come from V/XA, or from the node values X4/X8 when ``live`` (a replay).
    Returns (status, entry): (0, -1) done; (1, e) a custom Function at e needs Python;
    (2, e) a saved value of e was modified in place; (3, e) e's saved values were freed;
    (4, e) e touches a node of >= tape.BIG elements (F_BIG): numpy runs it (SIMD, BLAS)."""
    E, N, V4, V8, XA4, XA8, I, C = raw(E), raw(N), raw(V4), raw(V8), raw(XA4), raw(XA8), raw(I), raw(C)
    A4, A8, X4, X8, nreach, ereach, bad = raw(A4), raw(A8), raw(X4), raw(X8), raw(nreach), raw(ereach), raw(bad)
    for e in range(start, stop - 1, -1):
        if ereach[e] == 0:
            continue
        b0 = e * K
        op = E[b0 + OP]
        fl = E[b0 + FL]
        if bad[e] != 0:
            return 2, e
        if (fl & F_FREED) != 0 and (fl & F_SAVES) != 0:
            return 3, e
        if op == PYFUNC_OP:
            return 1, e
        if (fl & F_BIG) != 0:
            return 4, e
        out = E[b0 + OUT]
        a = E[b0 + IA]
        b = E[b0 + IB]
        c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
        kind = KIND[op]
        go = N[out * NK + NOFF]
        n = N[out * NK + NSIZE]
        if op == CAST_OP:
            da, oa = N[a * NK + NDT], N[a * NK + NOFF]
            for i in range(n):
                v = A4[go + i] if N[out * NK + NDT] == 0 else A8[go + i]
                if da == 0:
                    A4[oa + i] += v
                else:
                    A8[oa + i] += v
            mark(N, nreach, ereach, a)
        elif N[out * NK + NDT] == 0:'''

_FORWARD_HEAD = '''

@_jit
def forward(E, N, V4, V8, XA4, XA8, I, C, X4, X8, start, stop):
    """Replay entries start..stop-1 on the node values in X4/X8 (inputs: live nodes, or the
    recorded constants). Returns -1, or the index of an entry that Python must run (a custom
    Function, or an F_BIG entry for numpy)."""
    E, N, V4, V8, XA4, XA8, I, C = raw(E), raw(N), raw(V4), raw(V8), raw(XA4), raw(XA8), raw(I), raw(C)
    X4, X8 = raw(X4), raw(X8)
    for e in range(start, stop):
        b0 = e * K
        op = E[b0 + OP]
        if op == PYFUNC_OP or (E[b0 + FL] & F_BIG) != 0:
            return e
        out = E[b0 + OUT]
        a = E[b0 + IA]
        b = E[b0 + IB]
        c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0
        kind = KIND[op]
        yo = N[out * NK + NOFF]
        n = N[out * NK + NSIZE]
        if op == CAST_OP:
            da, oa = N[a * NK + NDT], N[a * NK + NOFF]
            for i in range(n):
                v = X4[oa + i] if da == 0 else X8[oa + i]
                if N[out * NK + NDT] == 0:
                    X4[yo + i] = v
                else:
                    X8[yo + i] = v
        elif N[out * NK + NDT] == 0:'''


def generate_interp():
    """Source text of ``_interp.py``, derived from ``OPS``."""
    by_kind = {}
    for code, op in enumerate(OPS):
        by_kind.setdefault(op.kind, []).append((code, op))
    L = [_HEADER]
    L.append("# kind code of each opcode (see ops.KIND_CODES)")
    L.append("KIND = (%s,)" % ", ".join(str(KIND_CODES[op.kind]) for op in OPS))
    L.append("OPNAMES = (%s,)" % ", ".join(repr(op.name) for op in OPS))
    L.append("CAST_OP = %d" % OPCODE["cast"])
    L.append("PYFUNC_OP = %d" % OPCODE["pyfunc"])
    L.append(_REVERSE_HEAD)
    L += _body(by_kind, _REV, "4", " " * 12, True)
    L.append("        else:")
    L += _body(by_kind, _REV, "8", " " * 12, True)
    L.append("    return 0, -1")
    L.append(_FORWARD_HEAD)
    L += _body(by_kind, _FWD, "4", " " * 12, False)
    L.append("        else:")
    L += _body(by_kind, _FWD, "8", " " * 12, False)
    L.append("    return -1")
    return "\n".join(L) + "\n"


def write_interp(path=None):
    import os
    path = path or os.path.join(os.path.dirname(os.path.abspath(__file__)), "_interp.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(generate_interp())
    return path


if __name__ == "__main__":
    print("wrote", write_interp())
