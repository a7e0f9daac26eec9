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
    domain: Tuple[float, float] = (-2.0, 2.0)   # test inputs drawn from here
    const: Optional[float] = None               # test constant for rows that take one (pow_scalar)
    doc: str = ""

    @property
    def opcode(self):
        return OPCODE[self.name]


def _sigmoid(x, c=None):
    return np.where(x >= 0, 1.0 / (1.0 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1.0 + np.exp(-np.abs(x)))).astype(x.dtype)


def _relu(x, c=None):
    return np.maximum(x, np.zeros((), x.dtype))


def _u(f):
    """Adapt a one-argument numpy function to the unary reference signature ref(x, c)."""
    return lambda x, c=None: f(x)


OPS = [
    # ---- unary elementwise: y = f(x; c)
    Op("neg", UNARY, "NegBackward0", _u(np.negative), doc="-x"),
    Op("exp", UNARY, "ExpBackward0", _u(np.exp), saves="y"),
    Op("log", UNARY, "LogBackward0", _u(np.log), saves="x", domain=(0.1, 3.0)),
    Op("sin", UNARY, "SinBackward0", _u(np.sin), saves="x"),
    Op("cos", UNARY, "CosBackward0", _u(np.cos), saves="x"),
    Op("tanh", UNARY, "TanhBackward0", _u(np.tanh), saves="y"),
    Op("sigmoid", UNARY, "SigmoidBackward0", _sigmoid, saves="y"),
    Op("relu", UNARY, "ReluBackward0", _relu, saves="y", domain=(0.05, 2.0)),
    Op("sqrt", UNARY, "SqrtBackward0", _u(np.sqrt), saves="y", domain=(0.1, 3.0)),
    Op("abs", UNARY, "AbsBackward0", _u(np.abs), saves="x", domain=(0.05, 2.0)),
    Op("pow_scalar", UNARY, "PowBackward0", lambda x, c: np.power(x, x.dtype.type(c)), saves="x",
       domain=(0.1, 2.0), const=2.5, doc="x ** c for a Python number c"),
    # ---- binary elementwise with single-element broadcast: y = f(a, b)
    Op("add", BINARY, "AddBackward0", np.add),
    Op("sub", BINARY, "SubBackward0", np.subtract),
    Op("mul", BINARY, "MulBackward0", np.multiply, saves_fn=lambda na, nb: (nb, na, False)),
    Op("div", BINARY, "DivBackward0", np.divide, saves_fn=lambda na, nb: (nb, na or nb, False),
       domain=(0.2, 2.0)),
    Op("pow", BINARY, "PowBackward1", np.power, saves_fn=lambda na, nb: (True, True, nb),
       domain=(0.2, 2.0)),
    # ---- reductions
    Op("sum", SUM, "SumBackward0", lambda x, c: (np.sum(x) * x.dtype.type(c)).astype(x.dtype),
       doc="c * sum(x): sum (c=1) and mean (c=1/n)"),
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
       doc="(m,k)@(k,n); also dot and mv through flat storage"),
    # ---- structural rows handled by the interpreter itself
    Op("cast", CAST, "ToCopyBackward0", doc="dtype conversion between the float32/float64 stores"),
    Op("pyfunc", PYFUNC, "PyFunctionBackward", doc="custom autograd.Function: calls back into Python"),
]

OPCODE = {op.name: i for i, op in enumerate(OPS)}
BY_NAME = {op.name: op for op in OPS}
# Rows the differentiable-op tests are parametrized over (structural rows are tested by the facade).
KERNEL_OPS = [op for op in OPS if op.kind not in (CAST, PYFUNC)]


# ----------------------------------------------------------------------------- generator
_HEADER = '''"""GENERATED from tapegrad/ops.py by `python -m tapegrad.ops` -- do not edit by hand.

The interpreter's dispatch: one branch per row of the op table. `reverse` sweeps a tape
backwards accumulating adjoints; `forward` replays it on new node values. Both are compiled
once per dtype (Numba specialises `_rstep`/`_fstep` for float32 and float64) and cached on
disk; no tape ever triggers a compilation.
"""
from numba import njit

from .kernels import *  # noqa: F401,F403  (kernel pairs and tape accessors)
from .kernels import (K, NK, OP, OUT, IA, IB, SA, SB, SY, P0, P1, CI, FL, NOFF, NSIZE, NDT,
                      F_FREED, F_SAVES, nslice, saved, operand, mark)

_jit = njit(cache=True, nogil=True)
'''


def _unary_block(rows):
    lines = ["    if kind == %d:  # unary" % KIND_CODES[UNARY],
             "        n = N[out * NK + NSIZE]",
             "        g = nslice(A, N, out)",
             "        gx = nslice(A, N, a)",
             "        x = operand(live, Xv, V, XA, N, a, E[b0 + SA], n)",
             "        y = operand(live, Xv, V, XA, N, out, E[b0 + SY], n)"]
    for i, (code, op) in enumerate(rows):
        lines.append("        %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name))
        lines.append("            vjp_%s(g, x, y, c, gx)" % op.name)
    lines.append("        mark(N, nreach, ereach, a)")
    lines.append("        return")
    return lines


def _binary_block(rows):
    lines = ["    if kind == %d:  # binary" % KIND_CODES[BINARY],
             "        n = N[out * NK + NSIZE]",
             "        sa = E[b0 + P0]",
             "        sb = E[b0 + P1]",
             "        la = (n - 1) * sa + 1",
             "        lb = (n - 1) * sb + 1",
             "        g = nslice(A, N, out)",
             "        ga = nslice(A, N, a)",
             "        gb = nslice(A, N, b)",
             "        av = operand(live, Xv, V, XA, N, a, E[b0 + SA], la)",
             "        bv = operand(live, Xv, V, XA, N, b, E[b0 + SB], lb)",
             "        y = operand(live, Xv, V, XA, N, out, E[b0 + SY], n)"]
    for i, (code, op) in enumerate(rows):
        lines.append("        %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name))
        lines.append("            vjp_%s(g, av, bv, y, sa, sb, ga, gb, a >= 0, b >= 0)" % op.name)
    lines += ["        mark(N, nreach, ereach, a)", "        mark(N, nreach, ereach, b)", "        return"]
    return lines


def _sum_block(rows):
    lines = ["    if kind == %d:  # sum" % KIND_CODES[SUM],
             "        g = nslice(A, N, out)",
             "        gx = nslice(A, N, a)"]
    for i, (code, op) in enumerate(rows):
        lines.append("        %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name))
        lines.append("            vjp_%s(g, c, gx)" % op.name)
    lines += ["        mark(N, nreach, ereach, a)", "        return"]
    return lines


def _index_block(rows):
    lines = ["    if kind == %d:  # index" % KIND_CODES[INDEX],
             "        g = nslice(A, N, out)",
             "        gx = nslice(A, N, a)",
             "        idx = I[E[b0 + P0]:E[b0 + P0] + E[b0 + P1]]"]
    for i, (code, op) in enumerate(rows):
        lines.append("        %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name))
        lines.append("            vjp_%s(g, idx, c, gx)" % op.name)
    lines += ["        mark(N, nreach, ereach, a)", "        return"]
    return lines


def _mm_block(rows):
    lines = ["    if kind == %d:  # mm" % KIND_CODES[MM],
             "        m = E[b0 + P0]",
             "        k = E[b0 + P1]",
             "        n = N[out * NK + NSIZE] // m",
             "        g = nslice(A, N, out)",
             "        ga = nslice(A, N, a)",
             "        gb = nslice(A, N, b)",
             "        av = operand(live, Xv, V, XA, N, a, E[b0 + SA], m * k)",
             "        bv = operand(live, Xv, V, XA, N, b, E[b0 + SB], k * n)"]
    for i, (code, op) in enumerate(rows):
        lines.append("        %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name))
        lines.append("            vjp_%s(g, av, bv, m, k, n, ga, gb, a >= 0, b >= 0)" % op.name)
    lines += ["        mark(N, nreach, ereach, a)", "        mark(N, nreach, ereach, b)", "        return"]
    return lines


def _fwd_blocks(by_kind):
    L = []
    if by_kind.get(UNARY):
        L += ["    if kind == %d:  # unary" % KIND_CODES[UNARY],
              "        n = N[out * NK + NSIZE]",
              "        y = nslice(Xv, N, out)",
              "        x = operand(True, Xv, V, XA, N, a, E[b0 + SA], n)"]
        for i, (code, op) in enumerate(by_kind[UNARY]):
            L += ["        %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name),
                  "            fwd_%s(x, c, y)" % op.name]
        L.append("        return")
    if by_kind.get(BINARY):
        L += ["    if kind == %d:  # binary" % KIND_CODES[BINARY],
              "        n = N[out * NK + NSIZE]",
              "        sa = E[b0 + P0]",
              "        sb = E[b0 + P1]",
              "        y = nslice(Xv, N, out)",
              "        av = operand(True, Xv, V, XA, N, a, E[b0 + SA], (n - 1) * sa + 1)",
              "        bv = operand(True, Xv, V, XA, N, b, E[b0 + SB], (n - 1) * sb + 1)"]
        for i, (code, op) in enumerate(by_kind[BINARY]):
            L += ["        %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name),
                  "            fwd_%s(av, bv, sa, sb, y)" % op.name]
        L.append("        return")
    if by_kind.get(SUM):
        L += ["    if kind == %d:  # sum" % KIND_CODES[SUM],
              "        y = nslice(Xv, N, out)",
              "        x = nslice(Xv, N, a)"]
        for i, (code, op) in enumerate(by_kind[SUM]):
            L += ["        %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name),
                  "            fwd_%s(x, c, y)" % op.name]
        L.append("        return")
    if by_kind.get(INDEX):
        L += ["    if kind == %d:  # index" % KIND_CODES[INDEX],
              "        y = nslice(Xv, N, out)",
              "        x = nslice(Xv, N, a)",
              "        idx = I[E[b0 + P0]:E[b0 + P0] + E[b0 + P1]]"]
        for i, (code, op) in enumerate(by_kind[INDEX]):
            L += ["        %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name),
                  "            fwd_%s(x, idx, c, y)" % op.name]
        L.append("        return")
    if by_kind.get(MM):
        L += ["    if kind == %d:  # mm" % KIND_CODES[MM],
              "        m = E[b0 + P0]",
              "        k = E[b0 + P1]",
              "        n = N[out * NK + NSIZE] // m",
              "        y = nslice(Xv, N, out)",
              "        av = operand(True, Xv, V, XA, N, a, E[b0 + SA], m * k)",
              "        bv = operand(True, Xv, V, XA, N, b, E[b0 + SB], k * n)"]
        for i, (code, op) in enumerate(by_kind[MM]):
            L += ["        %s op == %d:  # %s" % ("if" if i == 0 else "elif", code, op.name),
                  "            fwd_%s(av, bv, m, k, n, y)" % op.name]
        L.append("        return")
    return L


def generate_interp():
    """Source text of ``_interp.py``, derived from ``OPS``."""
    by_kind = {}
    for code, op in enumerate(OPS):
        by_kind.setdefault(op.kind, []).append((code, op))
    kinds = ", ".join(str(KIND_CODES[op.kind]) for op in OPS)
    out = [_HEADER]
    out.append("# kind code of each opcode (see ops.KIND_CODES)")
    out.append("KIND = (%s,)" % kinds)
    out.append("OPNAMES = (%s,)" % ", ".join(repr(op.name) for op in OPS))
    out.append("CAST_OP = %d" % OPCODE["cast"])
    out.append("PYFUNC_OP = %d" % OPCODE["pyfunc"])
    out.append("")
    out.append("")
    out.append("@_jit")
    out.append("def _rstep(op, b0, E, N, V, XA, I, C, A, Xv, live, nreach, ereach):")
    out.append('    """VJP of the entry starting at E[b0]: accumulate into A, mark the inputs reached."""')
    out.append("    kind = KIND[op]")
    out.append("    out = E[b0 + OUT]")
    out.append("    a = E[b0 + IA]")
    out.append("    b = E[b0 + IB]")
    out.append("    c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0")
    for kind, block in ((UNARY, _unary_block), (BINARY, _binary_block), (SUM, _sum_block),
                        (INDEX, _index_block), (MM, _mm_block)):
        if by_kind.get(kind):
            out += block(by_kind[kind])
    out.append("")
    out.append("")
    out.append("@_jit")
    out.append("def _fstep(op, b0, E, N, V, XA, I, C, Xv):")
    out.append('    """Forward of the entry starting at E[b0]: read inputs from Xv (nodes) or V (constants)."""')
    out.append("    kind = KIND[op]")
    out.append("    out = E[b0 + OUT]")
    out.append("    a = E[b0 + IA]")
    out.append("    b = E[b0 + IB]")
    out.append("    c = C[E[b0 + CI]] if E[b0 + CI] >= 0 else 0.0")
    out += _fwd_blocks(by_kind)
    out.append(_DRIVERS)
    return "\n".join(out) + "\n"


_DRIVERS = '''

@_jit
def reverse(E, N, V4, V8, XA4, XA8, I, C, A4, A8, X4, X8, live, nreach, ereach, bad, start, stop):
    """Sweep entries start..stop (inclusive, downwards). Returns (status, entry):
    (0, -1) done; (1, e) a custom Function at e needs Python; (2, e) a saved value of e was
    modified in place; (3, e) e's saved values were freed by an earlier backward."""
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
        out = E[b0 + OUT]
        if op == CAST_OP:
            a = E[b0 + IA]
            n = N[out * NK + NSIZE]
            go, oo = N[out * NK + NDT], N[out * NK + NOFF]
            ga, oa = N[a * NK + NDT], N[a * NK + NOFF]
            for i in range(n):
                v = A4[oo + i] if go == 0 else A8[oo + i]
                if ga == 0:
                    A4[oa + i] += v
                else:
                    A8[oa + i] += v
            mark(N, nreach, ereach, a)
        elif N[out * NK + NDT] == 0:
            _rstep(op, b0, E, N, V4, XA4, I, C, A4, X4, live, nreach, ereach)
        else:
            _rstep(op, b0, E, N, V8, XA8, I, C, A8, X8, live, nreach, ereach)
    return 0, -1


@_jit
def forward(E, N, V4, V8, XA4, XA8, I, C, X4, X8, start, stop):
    """Replay entries start..stop-1 on the node values in X4/X8. Returns -1, or the index
    of an entry that cannot run compiled (a custom Function)."""
    for e in range(start, stop):
        b0 = e * K
        op = E[b0 + OP]
        if op == PYFUNC_OP:
            return e
        out = E[b0 + OUT]
        if op == CAST_OP:
            a = E[b0 + IA]
            n = N[out * NK + NSIZE]
            go, oo = N[out * NK + NDT], N[out * NK + NOFF]
            ga, oa = N[a * NK + NDT], N[a * NK + NOFF]
            for i in range(n):
                v = X4[oa + i] if ga == 0 else X8[oa + i]
                if go == 0:
                    X4[oo + i] = v
                else:
                    X8[oo + i] = v
        elif N[out * NK + NDT] == 0:
            _fstep(op, b0, E, N, V4, XA4, I, C, X4)
        else:
            _fstep(op, b0, E, N, V8, XA8, I, C, X8)
    return -1'''


def write_interp(path=None):
    import os
    path = path or os.path.join(os.path.dirname(os.path.abspath(__file__)), "_interp.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(generate_interp())
    return path


if __name__ == "__main__":
    print("wrote", write_interp())
