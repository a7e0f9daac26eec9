"""Hypothesis strategies for gradient tests (needs ``hypothesis``).

* ``tensors(shapes, dtype, elements, requires_grad)``: tensors with controlled shapes, dtypes
  and values (optionally kept away from kinks/singularities).
* ``broadcastable_pairs(...)`` (and ``broadcastable_tensors(n, ...)``): tensors whose shapes
  broadcast together.
* ``op_inputs(row)`` / ``op_examples(row)``: inputs for one row of the op table drawn from the
  row's ``domain`` and kept away from its kinks and singularities (``ROW_KINKS``; 0 when the
  domain straddles it), and ``(fn, inputs)`` pairs that reach the row through the Tensor API
  (``ROW_CALLS``) with random shapes, dims and indices.
* ``programs(...)`` / ``programs_with_inputs(...)``: random differentiable programs (see
  ``tapegrad.testing.programs``) that shrink to a minimal failing program printed as Python;
  ``find_failing_program(fails)`` searches, shrinks and reduces in one call.

Every strategy takes ``lib=`` (default: tapegrad) so the same draws can build torch tensors.
"""
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from .programs import (CONSTANTS, KINDS, REDUCTIONS, SCALAR_OPS, Program, Step,
                       _reshape_candidates, available_binary, available_unary)
from .. import ops
from ..autograd._gradcheck import _lib_of
from ..ops import BINARY as K_BINARY
from .programs import reduce_program

__all__ = ["floats", "arrays", "tensors", "broadcastable_pairs", "broadcastable_tensors",
           "op_inputs", "op_examples", "op_rows", "row_call", "row_ref_const", "ROW_CALLS",
           "ROW_KINKS", "steps", "programs", "program_inputs",
           "programs_with_inputs", "find_failing_program", "Fn"]

DEFAULT_SHAPES = dict(min_dims=0, max_dims=3, min_side=1, max_side=4)


def _lib(lib):
    if lib is None:
        import tapegrad  # deferred: the package this client draws programs for
        return tapegrad
    return lib


def _dtype(lib, dtype):
    if isinstance(dtype, str):
        return getattr(lib, dtype)
    return dtype


def floats(lo=-2.0, hi=2.0, *, avoid=(), margin=0.05):
    """Finite floats in [lo, hi], at least ``margin`` away from every point of ``avoid``."""
    s = st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=64)
    avoid = tuple(avoid)
    if avoid:
        s = s.filter(lambda v: all(abs(v - k) >= margin for k in avoid))
    return s


def _elements(elements, avoid, margin):
    if isinstance(elements, st.SearchStrategy):
        return elements
    lo, hi = elements
    return floats(lo, hi, avoid=avoid, margin=margin)


def _shapes(shapes):
    if shapes is None:
        return hnp.array_shapes(**DEFAULT_SHAPES)
    if isinstance(shapes, st.SearchStrategy):
        return shapes
    return st.just(tuple(shapes))


def arrays(shapes=None, *, elements=(-2.0, 2.0), avoid=(), margin=0.05):
    """float64 numpy arrays (``shapes``: a shape, a strategy of shapes, or None for 0-3 dims
    of sides 1-4)."""
    el = _elements(elements, avoid, margin)
    return _shapes(shapes).flatmap(lambda s: hnp.arrays(np.float64, s, elements=el))


def tensors(shapes=None, dtype="float64", elements=(-2.0, 2.0), requires_grad=True, *, lib=None,
            avoid=(), margin=0.05):
    """Tensors of ``lib`` (default tapegrad).

    shapes: a shape tuple, a strategy of shapes, or None (0-3 dims, sides 1-4);
    dtype: ``"float64"``/``"float32"``, a dtype of ``lib``, or a strategy of those;
    elements: ``(lo, hi)`` or a strategy of floats; avoid/margin: keep values ``margin`` away
    from these points (kinks, singularities); requires_grad: for every drawn tensor."""
    lib = _lib(lib)
    el = _elements(elements, avoid, margin)
    dts = dtype if isinstance(dtype, st.SearchStrategy) else st.just(dtype)

    def build(args):
        shape, dt = args
        dt = _dtype(lib, dt)
        return hnp.arrays(np.float64, shape, elements=el).map(
            lambda a: lib.tensor(a, dtype=dt, requires_grad=requires_grad))
    return st.tuples(_shapes(shapes), dts).flatmap(build)


def broadcastable_tensors(n=2, *, max_dims=3, max_side=4, dtype="float64", elements=(-2.0, 2.0),
                          requires_grad=True, lib=None, avoid=(), margin=0.05):
    """Tuples of ``n`` tensors whose shapes broadcast together (not necessarily equal)."""
    shapes = hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=max_dims,
                                               max_side=max_side)
    return shapes.flatmap(lambda bs: st.tuples(*[
        tensors(s, dtype, elements, requires_grad, lib=lib, avoid=avoid, margin=margin)
        for s in bs.input_shapes]))


def broadcastable_pairs(*, max_dims=3, max_side=4, dtype="float64", elements=(-2.0, 2.0),
                        requires_grad=True, lib=None, avoid=(), margin=0.05):
    """Pairs ``(a, b)`` of tensors with broadcast-compatible shapes."""
    return broadcastable_tensors(2, max_dims=max_dims, max_side=max_side, dtype=dtype,
                                 elements=elements, requires_grad=requires_grad, lib=lib,
                                 avoid=avoid, margin=margin)


# ------------------------------------------------------------------ per op-table row
def _row(op):
    return ops.BY_NAME[op] if isinstance(op, str) else op


def op_rows():
    """The differentiable rows of the op table (``ops.KERNEL_OPS``) that Tensor calls record
    (not the rows only the batched plans emit, ``ops.PLAN_ONLY``)."""
    return [op for op in ops.KERNEL_OPS if not op.plan_only]


_F = "torch.nn.functional."
# How each op-table row is reached through the Tensor API, as torch source (the same call runs
# on tapegrad and on torch): row -> (source, the constant c for which ``row.ref(x, c)`` equals
# the call, None: the row's ``const``). Index, sum and mm rows are generated in
# ``op_examples``. A new elementwise row needs one line here (and ROW_KINKS if it has kinks).
ROW_CALLS = {
    "neg": ("lambda x: -x", None), "exp": ("lambda x: x.exp()", None),
    "log": ("lambda x: torch.log(x)", None), "sin": ("lambda x: x.sin()", None),
    "cos": ("lambda x: torch.cos(x)", None), "tanh": ("lambda x: x.tanh()", None),
    "sigmoid": ("lambda x: torch.sigmoid(x)", None), "relu": ("lambda x: x.relu()", None),
    "sqrt": ("lambda x: torch.sqrt(x)", None), "abs": ("lambda x: x.abs()", None),
    "pow_scalar": ("lambda x: x ** {const!r}", None),
    "tan": ("lambda x: x.tan()", None), "asin": ("lambda x: torch.asin(x)", None),
    "acos": ("lambda x: x.acos()", None), "atan": ("lambda x: torch.atan(x)", None),
    "sinh": ("lambda x: x.sinh()", None), "cosh": ("lambda x: torch.cosh(x)", None),
    "erf": ("lambda x: x.erf()", None), "log1p": ("lambda x: x.log1p()", None),
    "expm1": ("lambda x: torch.expm1(x)", None),
    "scale": ("lambda x: torch.log2(x.exp())", 1.4426950408889634),
    "step": ("lambda x: x.floor()", 0.0),
    "clamp_min": ("lambda x: x.clamp(min=0.3)", 0.3),
    "clamp_max": ("lambda x: torch.clamp(x, max=0.3)", 0.3),
    "leaky_relu": ("lambda x: %sleaky_relu(x, 0.01)" % _F, 0.01),
    "elu": ("lambda x: %selu(x)" % _F, 1.0), "gelu": ("lambda x: %sgelu(x)" % _F, 0.0),
    "silu": ("lambda x: %ssilu(x)" % _F, None), "softplus": ("lambda x: %ssoftplus(x)" % _F, 1.0),
    "log_sigmoid": ("lambda x: %slogsigmoid(x)" % _F, None),
    "smooth_l1": ("lambda x: %ssmooth_l1_loss(x, x * 0, reduction='none')" % _F, 1.0),
    "hardsigmoid": ("lambda x: %shardsigmoid(x)" % _F, None),
    "lgamma": ("lambda x: torch.lgamma(x)", None),
    "polygamma": ("lambda x: torch.polygamma(1, x)", 1.0),
    "add": ("lambda a, b: a + b", None), "sub": ("lambda a, b: a - b", None),
    "mul": ("lambda a, b: a * b", None), "div": ("lambda a, b: a / b", None),
    "pow": ("lambda a, b: a ** b", None),
    "maximum": ("lambda a, b: torch.maximum(a, b)", None),
    "minimum": ("lambda a, b: a.minimum(b)", None),
    "atan2": ("lambda a, b: torch.atan2(a, b)", None),
    "hypot": ("lambda a, b: torch.hypot(a, b)", None),
    "remainder": ("lambda a, b: a % b", None),
    "softmax": ("lambda x: torch.softmax(x, -1)", None),
    "log_softmax": ("lambda x: %slog_softmax(x, -1)" % _F, None),
}
# Kinks and singularities inside a row's domain that inputs keep ``margin`` away from (besides
# 0 whenever the domain straddles it): points, or "integers". Second-order kinks count too
# (gradgradcheck): elu at 0, smooth_l1 at +-beta.
ROW_KINKS = {"relu": (0.0,), "abs": (0.0,), "leaky_relu": (0.0,), "elu": (0.0,),
             "clamp_min": (0.3,), "clamp_max": (0.3,), "smooth_l1": (-1.0, 0.0, 1.0),
             "hardsigmoid": (-3.0, 3.0),
             "step": "integers"}


def _row_avoid(row):
    lo, hi = row.domain
    k = ROW_KINKS.get(row.name, ())
    if k == "integers":
        k = tuple(float(i) for i in range(int(np.ceil(lo)), int(np.floor(hi)) + 1))
    pts = set(k)
    if lo < 0 < hi:
        pts.add(0.0)
    return tuple(sorted(pts))


class Fn:
    """A callable given as torch source (``lambda x: x.sum(dim=1)``), evaluated with the
    module its tensor arguments come from; prints as its source (readable falsifying examples)."""

    def __init__(self, src):
        self.src = src
        self._cache = {}

    def __call__(self, *args):
        lib = _lib_of(args)
        f = self._cache.get(lib.__name__)
        if f is None:
            f = eval(self.src, {"torch": lib})     # noqa: S307 - our own generated source
            self._cache[lib.__name__] = f
        return f(*args)

    def __repr__(self):
        return self.src


def row_call(op):
    """``Fn`` reaching an elementwise row through the Tensor API (``LookupError`` when the row
    has no entry in ROW_CALLS)."""
    row = _row(op)
    if row.name not in ROW_CALLS:
        raise LookupError("no Tensor-API call registered for op-table row %r: add it to "
                          "tapegrad.testing.strategies.ROW_CALLS" % row.name)
    src, _ = ROW_CALLS[row.name]
    return Fn(src.format(const=float(row.const) if row.const is not None else None))


def row_ref_const(op, x=None):
    """The constant c for which ``row.ref(x, c)`` is what ``row_call(row)`` computes (for a
    row-wise row, softmax, the length of x's last dimension: pass x)."""
    row = _row(op)
    if row.rows and x is not None:
        return float(np.shape(x)[-1]) if np.ndim(x) else 1.0
    c = ROW_CALLS.get(row.name, (None, None))[1]
    return row.const if c is None else c


def op_inputs(op, shapes=None, *, dtype="float64", requires_grad=True, lib=None, margin=0.05,
              max_side=4):
    """Inputs for an elementwise/reduction row drawn from its ``domain``, kept ``margin`` away
    from its kinks and singularities (ROW_KINKS, and 0 when the domain straddles it): a 1-tuple
    for unary/sum rows, a broadcastable pair for binary rows (``maximum``/``minimum``: operands
    at least ``margin`` apart; ``remainder``: quotients away from integers)."""
    row = _row(op)
    lib_ = _lib(lib)
    lo, hi = row.domain
    if row.kind != K_BINARY:
        shp = shapes if shapes is not None else hnp.array_shapes(min_dims=0, max_dims=3,
                                                                  min_side=1, max_side=max_side)
        return st.tuples(tensors(shp, dtype, row.domain, requires_grad, lib=lib,
                                 avoid=_row_avoid(row), margin=margin))
    el = floats(lo, hi, avoid=_row_avoid(row), margin=margin)
    if row.name in ("maximum", "minimum"):      # b = a + d, |d| >= margin: no ties
        other = floats(-1.0, 1.0, avoid=(0.0,), margin=margin)
    elif row.name == "remainder":               # a = q * b, q away from the integers
        el = floats(0.0, 2.9, avoid=(0.0, 1.0, 2.0, 3.0), margin=margin)
        other = floats(lo, hi)
    else:
        other = el

    def build(bs):
        sa, sb = bs.input_shapes
        return st.tuples(hnp.arrays(np.float64, sa, elements=el),
                         hnp.arrays(np.float64, sb, elements=other))

    def make(arrs):
        a, b = arrs
        if row.name in ("maximum", "minimum"):
            a, b = np.broadcast_to(a, np.broadcast_shapes(a.shape, b.shape)).copy(), a + b
        elif row.name == "remainder":
            a = a * b
        dt = _dtype(lib_, dtype)
        return (lib_.tensor(a, dtype=dt, requires_grad=requires_grad),
                lib_.tensor(b, dtype=dt, requires_grad=requires_grad))
    return hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=3,
                                             max_side=max_side).flatmap(build).map(make)


def op_examples(op, *, dtype="float64", requires_grad=True, lib=None, max_side=3, margin=0.05):
    """``(fn, inputs)`` reaching row ``op`` through the Tensor API with random shapes and
    parameters: elementwise rows on broadcastable shapes (ROW_CALLS), ``sum`` as sum()/mean(),
    ``segsum`` as sum/mean over a dim, ``gather`` as select/slice/index-tensor indexing,
    ``slice`` as row selection/ranges, ``embed`` as zero padding of the first dim,
    ``copy`` as reshape/view, ``mm`` as 2-D/1-D matmul. ``fn`` prints as its source."""
    row = _row(op)
    kw = dict(dtype=dtype, elements=row.domain, requires_grad=requires_grad, lib=lib,
              avoid=_row_avoid(row), margin=margin)
    shp = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=max_side)
    shp1 = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=max_side)
    name = row.name
    if row.kind in (ops.UNARY, ops.BINARY):
        return st.tuples(st.just(row_call(row)),
                         op_inputs(row, dtype=dtype, requires_grad=requires_grad, lib=lib,
                                   margin=margin, max_side=max_side))
    if row.kind == ops.SUM:
        return st.tuples(st.sampled_from([Fn("lambda x: x.sum()"), Fn("lambda x: x.mean()")]),
                         st.tuples(tensors(shp, **kw)))
    if name == "segsum":
        @st.composite
        def seg(draw):
            shape = draw(shp1)
            d = draw(st.integers(0, len(shape) - 1))
            red = draw(st.sampled_from(REDUCTIONS))
            keep = draw(st.booleans())
            src = "lambda x: x.%s(dim=%d%s)" % (red, d, ", keepdim=True" if keep else "")
            return Fn(src), (draw(tensors(shape, **kw)),)
        return seg()
    if name == "gather":
        @st.composite
        def gat(draw):
            shape = draw(shp1)
            d = draw(st.integers(0, len(shape) - 1))
            n = shape[d]
            pre = ":, " * d
            how = draw(st.sampled_from(["select", "slice", "index"]))
            if how == "select":
                key = pre + str(draw(st.integers(-n, n - 1)))
            elif how == "slice":
                start = draw(st.integers(0, n - 1))
                step = draw(st.integers(1, 2))
                key = pre + "%d::%d" % (start, step)
            else:
                idx = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4))
                key = pre + "torch.tensor(%r)" % (idx,)
            return Fn("lambda x: x[%s]" % key), (draw(tensors(shape, **kw)),)
        return gat()
    if name == "slice":
        @st.composite
        def sl(draw):
            shape = draw(shp1)
            n = shape[0]
            how = draw(st.sampled_from(["select", "range", "select2"]))
            if how == "range":                                      # x[a:b]
                a = draw(st.integers(0, n - 1))
                key = "%d:%d" % (a, draw(st.integers(a + 1, n)))
            else:                                                   # x[i], x[i, j]
                key = str(draw(st.integers(-n, n - 1)))
                if how == "select2" and len(shape) > 1:
                    key += ", %d" % draw(st.integers(0, shape[1] - 1))
            return Fn("lambda x: x[%s]" % key), (draw(tensors(shape, **kw)),)
        return sl()
    if name == "embed":
        @st.composite
        def em(draw):
            shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=max_side))
            lo, hi = draw(st.integers(0, 2)), draw(st.integers(0, 2))
            pad = (0, 0) * (len(shape) - 1) + (lo, hi)          # the first dim
            return (Fn("lambda x: torch.nn.functional.pad(x, %r)" % (pad,)),
                    (draw(tensors(shape, **kw)),))
        return em()
    if name == "transpose":
        @st.composite
        def tr(draw):
            shape = draw(hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=max_side))
            form = draw(st.sampled_from(["x.t()", "x.T", "x.transpose(0, 1)", "x.mT",
                                         "x.permute(1, 0)"]))
            return Fn("lambda x: %s" % form), (draw(tensors(shape, **kw)),)
        return tr()
    if name == "copy":
        @st.composite
        def cp(draw):
            shape = draw(shp)
            cands = _reshape_candidates(shape)
            target = draw(st.sampled_from(cands))
            how = draw(st.sampled_from(["reshape", "view"]))
            return Fn("lambda x: x.%s(%r)" % (how, tuple(target))), (draw(tensors(shape, **kw)),)
        return cp()
    if name == "mm":
        @st.composite
        def mm(draw):
            m, k, n = (draw(st.integers(1, max_side)) for _ in range(3))
            form = draw(st.sampled_from(["mm", "mv", "vm", "dot"]))
            sa = {"mm": (m, k), "mv": (m, k), "vm": (k,), "dot": (k,)}[form]
            sb = {"mm": (k, n), "mv": (k,), "vm": (k, n), "dot": (k,)}[form]
            return Fn("lambda a, b: a @ b"), (draw(tensors(sa, **kw)), draw(tensors(sb, **kw)))
        return mm()
    raise ValueError("no examples for row %r" % name)


# ------------------------------------------------------------------ random programs
_ARG = st.integers(0, 3)


def steps(*, kinds=None, unary=None, binary=None, custom=()):
    """Strategy of single op descriptors (``Step``). Simplest alternatives come first so that
    shrinking moves towards them. ``unary``/``binary``: names from ``programs.UNARY_OPS`` /
    ``BINARY_OPS`` (default: all those tapegrad's facade runs)."""
    kinds = tuple(k for k in KINDS if k != "custom") if kinds is None else tuple(kinds)
    unary = available_unary() if unary is None else unary
    binary = available_binary() if binary is None else binary
    alts = []
    if "unary" in kinds and unary:
        alts.append(st.builds(Step, kind=st.just("unary"), name=st.sampled_from(tuple(unary)),
                              a=_ARG, k=st.integers(0, 5), flag=st.booleans()))
    if "custom" in kinds and custom:
        alts.append(st.builds(Step, kind=st.just("custom"), name=st.sampled_from(tuple(custom)),
                              a=_ARG))
    if "scalar" in kinds:
        alts.append(st.builds(Step, kind=st.just("scalar"), name=st.sampled_from(SCALAR_OPS),
                              a=_ARG, c=st.sampled_from(CONSTANTS), flag=st.booleans()))
    if "binary" in kinds and binary:
        alts.append(st.builds(Step, kind=st.just("binary"), name=st.sampled_from(tuple(binary)),
                              a=_ARG, b=_ARG, flag=st.booleans()))
    if "reduce" in kinds:
        alts.append(st.builds(Step, kind=st.just("reduce"), name=st.sampled_from(REDUCTIONS),
                              a=_ARG, k=st.integers(0, 6), flag=st.booleans()))
    if "reshape" in kinds:
        alts.append(st.builds(Step, kind=st.just("reshape"),
                              name=st.sampled_from(("reshape", "view")), a=_ARG,
                              k=st.integers(0, 8)))
    if "index" in kinds:
        alts.append(st.builds(Step, kind=st.just("index"),
                              name=st.sampled_from(("select", "slice", "gather")), a=_ARG,
                              k=st.integers(0, 20), flag=st.booleans()))
    if "matmul" in kinds:
        alts.append(st.builds(Step, kind=st.just("matmul"), a=_ARG, b=_ARG, flag=st.booleans()))
    if not alts:
        raise ValueError("no step kinds to draw from")
    return st.one_of(*alts)


def programs(*, n_inputs=(1, 3), min_steps=1, max_steps=6, max_dims=3, max_side=3,
             kinds=None, unary=None, binary=None, custom=None, max_numel=64):
    """Random differentiable programs (``Program``) over 1-3 inputs of mutually broadcastable
    shapes: a list of op descriptors drawn by ``steps``. Shrinks by deleting steps and
    simplifying each one; every shrunk list is still a valid program.

    custom: ``{name: elementwise callable}`` added to the vocabulary (e.g. a custom
    ``Function.apply`` under test; include ``"custom"`` in ``kinds`` or leave kinds None)."""
    custom = dict(custom or {})
    if kinds is None:
        kinds = tuple(k for k in KINDS if k != "custom" or custom)
    lo, hi = (n_inputs, n_inputs) if isinstance(n_inputs, int) else n_inputs
    step = steps(kinds=kinds, unary=unary, binary=binary, custom=tuple(custom))

    @st.composite
    def draw_program(draw):
        n = draw(st.integers(lo, hi))
        shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0,
                                                        max_dims=max_dims, max_side=max_side))
        body = draw(st.lists(step, min_size=min_steps, max_size=max_steps))
        return Program(shapes.input_shapes, body, custom=custom)
    return draw_program().filter(
        lambda p: len(p) >= min_steps and all(
            int(np.prod(ln.shape, dtype=np.int64)) <= max_numel for ln in p.lines))


def program_inputs(program, *, elements=(-2.0, 2.0), avoid=(), margin=0.05):
    """Tuples of float64 arrays, one per input of ``program``."""
    return st.tuples(*[arrays(s, elements=elements, avoid=avoid, margin=margin)
                       for s in program.input_shapes])


def programs_with_inputs(*, elements=(-2.0, 2.0), avoid=(), margin=0.05, **kw):
    """``(program, arrays)``: a program from ``programs(**kw)`` and float64 input values."""
    return programs(**kw).flatmap(
        lambda p: st.tuples(st.just(p), program_inputs(p, elements=elements, avoid=avoid,
                                                       margin=margin)))


def find_failing_program(fails, *, settings=None, reduce=True, **kw):
    """The smallest ``(program, arrays)`` for which ``fails((program, arrays))`` is true:
    hypothesis ``find`` over ``programs_with_inputs(**kw)`` (its shrinking), then
    ``programs.reduce_program`` (deleting steps/inputs hypothesis left behind). Raises
    ``hypothesis.errors.NoSuchExample`` when no failing program turns up."""
    from hypothesis import HealthCheck, find
    from hypothesis import settings as hsettings

    s = settings or hsettings(database=None, deadline=None, max_examples=2000,
                              suppress_health_check=list(HealthCheck))
    case = find(programs_with_inputs(**kw), fails, settings=s)
    return reduce_program(case[0], case[1], fails) if reduce else case
