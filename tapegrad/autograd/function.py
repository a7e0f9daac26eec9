"""Custom autograd Functions: ``forward(ctx, ...)`` / ``backward(ctx, ...)`` static methods.

``Function.apply`` runs ``forward`` with grad mode off and records a single ``pyfunc`` entry
whose outputs are the Function's tensor outputs. The compiled sweep stops at that entry,
``PyFuncRecord.backward`` calls the user's ``backward`` with the outputs' cotangents and
adds the results into the inputs' adjoints, and the sweep continues compiled.
"""
import numpy as np

from .. import tape as _tp
from ..kernels import F_SAVES, NK
from .grad_mode import STATE, no_grad


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

    def save_for_backward(self, *tensors):
        self._saved = tensors
        self._saved_versions = tuple(t._version if t is not None else 0 for t in tensors)

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(_tp.MSG_FREED)
        for t, v in zip(self._saved, self._saved_versions):
            if t is not None and t._version != v:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    "an inplace operation: [%s %s], is at version %d; expected version %d instead."
                    % (t.type(), list(t.shape), t._version, v))
        return self._saved

    def mark_dirty(self, *tensors):
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        self._non_diff = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class PyFuncRecord:
    """What a ``pyfunc`` tape entry needs to call back into Python."""
    __slots__ = ("cls", "ctx", "in_nodes", "out_nodes", "out_meta", "in_meta")

    def __init__(self, cls, ctx, in_nodes, out_nodes, out_meta, in_meta):
        self.cls, self.ctx = cls, ctx
        self.in_nodes, self.out_nodes = in_nodes, out_nodes
        self.out_meta, self.in_meta = out_meta, in_meta

    def shift(self, dn):
        self.in_nodes = tuple(n + dn if n >= 0 else n for n in self.in_nodes)
        self.out_nodes = tuple(n + dn if n >= 0 else n for n in self.out_nodes)

    def backward(self, adj, N, nreach, ereach):
        from ..tensor import _wrap
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
        if not isinstance(res, tuple):
            res = (res,)
        if len(res) < len(self.in_nodes):
            raise RuntimeError("function %sBackward returned an incorrect number of gradients "
                               "(expected %d, got %d)" % (self.cls.__name__, len(self.in_nodes), len(res)))
        for i, (node, (shape, dt)) in enumerate(zip(self.in_nodes, self.in_meta)):
            r = res[i]
            if node < 0 or r is None:
                continue
            rv = r._data if hasattr(r, "_data") else np.asarray(r)
            if np.shape(rv) != shape:
                try:
                    rv = np.broadcast_to(rv, shape)
                except ValueError:
                    raise RuntimeError("Function %sBackward returned an invalid gradient at index "
                                       "%d - got %s but expected shape compatible with %s"
                                       % (self.cls.__name__, i, list(np.shape(rv)), list(shape)))
            adj.acc(N, node, np.array(rv, _tp.NP_DT[int(N[node * NK + 2]) & 1]).reshape(-1), True)
            nreach[node] = 1
            p = int(N[node * NK + 3])
            if p >= 0:
                ereach[p] = 1
        if self.ctx._saved:
            pass


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

    @classmethod
    def apply(cls, *args, **kwargs):
        from ..tensor import Tensor, _out, _src, _tape_for, _nm, _vcof, _wrap
        from ..ops import OPCODE
        ctx = FunctionCtx()
        tin = [a for a in args if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._rg for a in args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
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
        e, n0 = tp.entry(OPCODE["pyfunc"], _nm(cls.__name__ + "Backward"), first._data.size,
                         first._dtype.slot, -1, -1, p0=rec_index, fl=fl)
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
            if any(o is a for a in args):
                if id(o) in dirty:             # modified in place: the same tensor, new node
                    o._tape, o._node, o._rg = tp, node, True
                    _vcof(o)[0] += 1           # torch bumps the version when rebasing history
                    results[i] = o
                    continue
                o = _wrap(o._data, o._dtype)      # returning an input: a new view of it
            res = _out(o._data, o._dtype, tp, node)
            res._vc = _vcof(o)
            results[i] = res
        tp.pyfuncs.append(PyFuncRecord(cls, ctx, in_nodes, tuple(out_nodes), tuple(out_meta), in_meta))
        return results[0] if single else tuple(results)


# torch exposes the ctx type under this name too
BackwardCFunction = FunctionCtx
