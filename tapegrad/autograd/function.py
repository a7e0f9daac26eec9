"""Custom autograd Functions: ``forward(ctx, ...)`` / ``backward(ctx, ...)`` static methods.

``Function.apply`` runs ``forward`` with grad mode off and records a single ``pyfunc`` entry
whose outputs are the Function's tensor outputs. The compiled sweep stops at that entry,
``PyFuncRecord.backward`` calls the user's ``backward`` with the outputs' cotangents and
adds the results into the inputs' adjoints, and the sweep continues compiled.
"""
import functools
import weakref

import numpy as np

from .._core import tape as _tp
from .._schema import F_SAVES, NK, NPROD
from .._state import STATE, no_grad
from .._core.names import function_name_id, name_id
from .._record import _VM_CUSTOM, _out, _src, _tape_for, _track_view
from ..tensor import GUARD, Tensor, _vcof, _wrap
from ..ops import OPCODE


class FunctionCtx:
    """The ``ctx`` object handed to forward and backward."""

    def __init__(self):
        self._saved = ()
        self._saved_versions = ()
        self._freed = False
        self.needs_input_grad = ()
        self.materialize_grads = True
        self._dirty = ()
        self._non_diff = ()
        self._saved_outs = None     # (output number per saved tensor, weakref to the record)
        self._rec = None            # weakref to the PyFuncRecord once recorded

    def save_for_backward(self, *tensors):
        self._saved = tensors
        self._saved_versions = tuple(t._version if isinstance(t, Tensor) else 0 for t in tensors)

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(_tp.MSG_FREED)
        for j, (t, v) in enumerate(zip(self._saved, self._saved_versions)):
            if isinstance(t, Tensor) and t._version != v:
                raise RuntimeError(self._version_message(j, t, v))
        if self._saved_outs is not None and STATE.enabled:
            return self._bound_outputs()
        return self._saved

    def _version_message(self, j, t, v):
        """torch's message for saved tensor ``j`` modified in place: from its version record
        on the tape (which names the tensor's producer) when the Function was recorded."""
        rec = self._rec() if self._rec is not None else None
        tp = rec.wtape() if rec is not None else None
        if tp is not None:
            while tp.into is not None:
                tp = tp.into
            outs = [n for n in rec.out_nodes if n >= 0]
            e = int(tp.N[outs[0] * NK + NPROD]) if outs else -1
            vc = t._vc
            for r in tp.sv:
                if r[2] == e and r[0] is vc and type(r[4]) is tuple and r[4][-1] == j:
                    return _tp.version_message(tp, r)
        return ("one of the variables needed for gradient computation has been modified by an "
                "inplace operation: [%s %s] is at version %d; expected version %d instead. Hint: "
                "enable anomaly detection to find the operation that failed to compute its "
                "gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
                % (t.type(), ", ".join(str(s) for s in t.shape).join("[]"), t._version, v))

    def _bound_outputs(self):
        """With grad mode on (a backward recorded for create_graph), saved outputs of the
        Function are its recorded outputs, bound to their nodes as torch's saved outputs
        are: differentiating through them runs this Function's backward again. (The ctx
        keeps weak references: the record holds the ctx.)"""
        rec = self._saved_outs[1]()
        tp = rec.wtape() if rec is not None else None
        if tp is None:
            return self._saved
        while tp.into is not None:
            tp = tp.into
        res = []
        for t, k in zip(self._saved, self._saved_outs[0]):
            if k >= 0 and rec.out_nodes[k] >= 0:
                b = _out(t._data, t._dtype, tp, rec.out_nodes[k])
                b._vc = _vcof(t)
                t = b
            res.append(t)
        return tuple(res)

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


def _run_forward(cls, ctx, args, kwargs):
    """``cls``'s forward on ``args`` (old style with ctx, or new style + setup_context)."""
    if cls.setup_context is _BASE_SETUP:
        return cls.forward(ctx, *args, **kwargs)
    out = cls.forward(*args, **kwargs)          # new style: forward(*args) + setup_context
    cls.setup_context(ctx, args, out)
    return out


class PyFuncRecord:
    """What a ``pyfunc`` tape entry needs to call back into Python."""
    __slots__ = ("cls", "ctx", "in_nodes", "out_nodes", "out_meta", "in_meta", "wtape",
                 "call", "__weakref__")

    def __init__(self, cls, ctx, in_nodes, out_nodes, out_meta, in_meta):
        self.call = None        # tapegrad.func recordings: (args, kwargs, #outputs, single)
        self.cls, self.ctx = cls, ctx
        self.wtape = None       # weakref to the tape whose pyfuncs hold this record (absorb moves it)
        self.in_nodes, self.out_nodes = in_nodes, out_nodes
        self.out_meta, self.in_meta = out_meta, in_meta

    def shift(self, dn):
        self.in_nodes = tuple(n + dn if n >= 0 else n for n in self.in_nodes)
        self.out_nodes = tuple(n + dn if n >= 0 else n for n in self.out_nodes)

    def backward(self, adj, N, nreach, ereach):
        grads = []
        for node, (shape, dt) in zip(self.out_nodes, self.out_meta):
            if node >= 0 and (nreach[node] or self.ctx.materialize_grads):
                g = adj.get(N, node).reshape(shape).copy()
                grads.append(_wrap(g if g.ndim else g[()], dt))
            elif self.ctx.materialize_grads:     # non-differentiable output: zeros, as torch
                z = np.zeros(shape, dt.np)
                grads.append(_wrap(z if z.ndim else z[()], dt))
            else:
                grads.append(None)
        with no_grad():
            res = self.cls.backward(self.ctx, *grads)
        for i, r in self.checked(res):
            node = self.in_nodes[i]
            rv = r._data
            if np.shape(rv) != self.in_meta[i][0]:
                rv = np.sum(rv, axis=_sum_dims(np.shape(rv), self.in_meta[i][0]))
            adj.acc(N, node, np.array(rv, _tp.NP_DT[int(N[node * NK + 2]) & 1]).reshape(-1), True)
            nreach[node] = 1
            p = int(N[node * NK + 3])
            if p >= 0:
                ereach[p] = 1

    def checked(self, res):
        """The gradients ``backward`` returned, checked as torch's engine does: [(input index,
        gradient Tensor)] for the inputs that need one. A gradient whose shape differs from its
        input's is accepted when the input's shape expands to it (the caller sums it back:
        ``_sum_dims``), as torch's ``validate_outputs``."""
        name = self.cls.__name__ + "Backward"
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self.in_nodes)
        if len(res) != n:
            if len(res) < n or any(r is not None for r in res[n:]):
                raise RuntimeError("function %s returned an incorrect number of gradients "
                                   "(expected %d, got %d)" % (name, n, len(res)))
            res = res[:n]
        out = []
        for i, r in enumerate(res):
            shape, dt = self.in_meta[i]
            if dt is None:
                if r is not None:
                    raise RuntimeError("function %s returned a gradient different than None at "
                                       "position %d, but the corresponding forward input was not "
                                       "a Variable" % (name, i + 1))
                continue
            if r is None:
                continue
            if not isinstance(r, Tensor):
                raise RuntimeError("expected Variable or None (got %s)" % type(r).__name__)
            if self.in_nodes[i] < 0:
                continue
            gs = r._data.shape
            if gs != shape and not _expandable(shape, gs):
                raise RuntimeError("Function %s returned an invalid gradient at index %d - got %s "
                                   "but expected shape compatible with %s"
                                   % (name, i, list(gs), list(shape)))
            out.append((i, r))
        return out


def _expandable(shape, to):
    """torch's is_expandable_to: ``shape`` broadcasts to ``to``."""
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(to)))


def _sum_dims(gshape, shape):
    """The dimensions of a gradient of shape ``gshape`` summed (keepdim) to reach the
    expandable ``shape`` (leading ones, then broadcast ones; torch's sum_to)."""
    lead = len(gshape) - len(shape)
    return tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and gshape[lead + i] != 1)


class FunctionMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class for custom differentiable operations (torch.autograd.Function)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """New-style Functions: ``forward(*args)`` without ctx, then
        ``setup_context(ctx, inputs, output)`` saves what backward needs."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    generate_vmap_rule = False
    _node_name_id = None       # a node name other than <Name>Backward (internal Functions)

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override "
                                  "the vmap staticmethod or set generate_vmap_rule=True. "
                                  "(tapegrad: custom autograd.Functions cannot be vmapped)")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        tin = [a for a in args if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
        g = GUARD[0]
        if g is not None:       # tapegrad.func records: a replay runs forward again (no guards)
            g("enter", None)
        try:
            with no_grad():
                out = _run_forward(cls, ctx, args, kwargs)
        finally:
            if g is not None:
                g("exit", None)
        record = STATE.enabled and any(t._rg for t in tin)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        if not record:
            return out
        grad_ins = [a for a in args if isinstance(a, Tensor) and a._rg]
        tp = _tape_for(*grad_ins)
        in_nodes = tuple(_src(a, tp) if isinstance(a, Tensor) and a._rg else -1 for a in args)
        in_meta = tuple((a._data.shape, a._dtype) if isinstance(a, Tensor) else ((), None) for a in args)
        touts = [(i, o) for i, o in enumerate(outs) if isinstance(o, Tensor)]
        if not touts:
            return out
        non_diff = {id(t) for t in ctx._non_diff}
        diff = [(k, i, o) for k, (i, o) in enumerate(touts)
                if id(o) not in non_diff and o._dtype.slot >= 0]
        if not diff:                           # nothing differentiable came out
            return out
        fl = F_SAVES if ctx._saved else 0
        rec_index = len(tp.pyfuncs)
        k0, _, first = diff[0]
        nm = (function_name_id(cls.__name__ + "Backward") if cls._node_name_id is None
              else cls._node_name_id())
        e, n0 = tp.entry(OPCODE["pyfunc"], nm, first._data.size, first._dtype.slot, -1, -1,
                         p0=rec_index, fl=fl)
        tp.N[n0 * NK + 4] = k0                 # output number of that node
        dirty = {id(t) for t in ctx._dirty}
        diff_ids = {id(o) for _, _, o in diff}
        out_nodes, out_meta, results = [], [], list(outs)
        for k, (i, o) in enumerate(touts):
            out_meta.append((o._data.shape, o._dtype))
            if id(o) not in diff_ids:          # non-differentiable (marked, or not floating)
                out_nodes.append(-1)
                continue
            node = n0 if k == k0 else tp.node(o._data.size, o._dtype.slot, e, k)
            out_nodes.append(node)
            src = _aliased_input(o, tin)
            if src is not None and src is o and id(o) in dirty:
                # modified in place: the same tensor, new node
                o._tape, o._node, o._rg = tp, node, True
                _tp.register(o, tp)
                _vcof(o)[0] += 1           # torch bumps the version when rebasing history
                results[i] = o
                continue
            if src is not None:
                # an input returned as-is, or a view of one made in forward: a view of that
                # input (its version counter), which torch forbids writing in place with grads
                res = _out(o._data, o._dtype, tp, node)
                _track_view(res, src)
                res._vm = _VM_CUSTOM
                if o is not src:
                    o._vc = res._vc
            else:
                res = _out(o._data, o._dtype, tp, node)
                res._vc = _vcof(o)
            results[i] = res
        rec = PyFuncRecord(cls, ctx, in_nodes, tuple(out_nodes), tuple(out_meta), in_meta)
        rec.wtape = weakref.ref(tp)
        if tp.crefs is not None:               # tapegrad.func records: what a replay calls
            rec.call = (args, kwargs, len(outs), single)
        tp.pyfuncs.append(rec)
        if ctx._saved:
            outk = {id(o): k for k, (_, o) in enumerate(touts)}
            ks = tuple(outk.get(id(t), -1) for t in ctx._saved)
            if any(k >= 0 for k in ks):
                ctx._saved_outs = (ks, weakref.ref(rec))
            _version_records(tp, e, ctx, args, in_nodes, touts, ks)
        ctx._rec = weakref.ref(rec)
        return results[0] if single else tuple(results)


def _aliased_input(o, tin):
    """The input tensor that output ``o`` of a Function's forward is, or shares memory with
    (None: o owns its memory)."""
    for a in tin:
        if o is a:
            return a
    od = o._data
    if type(od) is not np.ndarray or not od.size:
        return None
    for a in tin:
        ad = a._data
        if type(ad) is np.ndarray and np.may_share_memory(od, ad) and np.shares_memory(od, ad):
            return a
    return None


def _version_records(tp, e, ctx, args, in_nodes, touts, ks):
    """The tensors a recorded Function saved (``ctx.save_for_backward``) get version records
    on its entry, as every op's saved values do: ``ctx.saved_tensors`` raises torch's
    "modified by an inplace operation" for one written since, and an in-place variant built
    on the Function copies a saved operand that the write would change (``_own_saves``).
    Versions are those after apply (torch saves after wrapping the outputs)."""
    if tp.mark is None:
        tp.mark = _tp.INPLACE[0]
    sv = tp.sv
    vers = []
    for j, t in enumerate(ctx._saved):
        if not isinstance(t, Tensor):
            vers.append(0)
            continue
        k = ks[j]
        if k >= 0:
            which = ("o", touts[k][0], j)
        else:
            which = ("x", j)
            for i, a in enumerate(args):
                if a is t:
                    which = ("i", in_nodes[i], j)
                    break
        vc = _vcof(t)
        sv.append((vc, vc[0], e, t._data.shape, which))
        vers.append(vc[0])
    ctx._saved_versions = tuple(vers)


_BASE_SETUP = Function.setup_context


def once_differentiable(fn):
    """Decorator for a ``backward`` that cannot itself be differentiated (torch's
    ``torch.autograd.function.once_differentiable``): it runs with grad mode off, and when a
    graph is being built (``create_graph=True``) its results are marked so that
    differentiating through them raises."""
    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        if not STATE.enabled or not any(isinstance(a, Tensor) and a._rg for a in args):
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        res = []
        for o in outs:
            if isinstance(o, Tensor):
                o = o.detach().requires_grad_(o._dtype.is_floating_point)
                if o._rg:
                    o = _DelayedError.apply(o)
            res.append(o)
        return res[0] if single else tuple(res)
    return wrapper


class _DelayedError(Function):
    """The node over the results of a ``once_differentiable`` backward: differentiating
    through it raises (torch's ``Error`` node)."""
    _node_name_id = staticmethod(lambda: name_id("Error"))

    @staticmethod
    def forward(ctx, x):
        ctx.keep = x           # the detached leaf below it lives with the graph (AccumulateGrad)
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")


# torch exposes the ctx type under this name too
BackwardCFunction = FunctionCtx
