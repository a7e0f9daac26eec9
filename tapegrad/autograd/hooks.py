"""Hooks: ``Tensor.register_hook``, ``Node.register_hook`` / ``register_prehook``.

A hook needs Python while the compiled sweep runs, so registering one on a non-leaf tensor
or a grad_fn flags the producing entry ``F_HOOK | F_BIG``: the sweep hands that entry to
Python (as for big nodes), which runs the tensor hooks and pre-hooks on the entry's output
cotangent (a hook may return a replacement), then the entry's VJP with the contributions
captured for post-hooks (which see ``(grad_inputs, grad_outputs)`` and may replace
``grad_inputs``), then resumes compiled. Leaf hooks run on the gradient just before it is
accumulated into ``.grad``. Hooks are kept on the tape (non-leaf) or on the leaf tensor,
and a handle's ``remove()`` takes them away.
"""
import itertools

import numpy as np

from .._core import tape as _tp
from .._schema import F_BIG, F_HOOK, FL, IA, IB, K, NDT, NK, NPROD, NSIZE, OP, P0
from ..ops import BINARY, MM, OPCODE, OPS, PYFUNC, UNARY
from .._state import STATE
from ..tensor import _wrap
from .graph import Node

_ids = itertools.count()
_PYFUNC = OPCODE["pyfunc"]


class RemovableHandle:
    """Returned by register_hook; ``remove()`` unregisters the hook."""
    __slots__ = ("_table", "id")

    def __init__(self, table):
        self._table = table
        self.id = next(_ids)

    def remove(self):
        self._table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _T():
    import sys
    return sys.modules[__name__.rsplit(".", 2)[0] + ".tensor"]


def _flag(tp, e):
    b = e * K + FL
    tp.E[b] = tp.E[b] | F_HOOK | F_BIG


def _register(tp, key, fn):
    table = tp.hooks.setdefault(key, {})
    h = RemovableHandle(table)
    table[h.id] = fn
    return h


def tensor_register_hook(self, hook):
    """Register ``hook(grad) -> Tensor or None`` run when this tensor's gradient is computed."""
    if not self._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._tape is None:
        table = self.__dict__.setdefault("_hooks", {})
        h = RemovableHandle(table)
        table[h.id] = hook
        return h
    tp, node = _tp.resolve(self)
    meta = (self._data.shape, self._dtype)
    h = _register(tp, ("t", node), (hook, meta))
    _flag(tp, int(tp.N[node * NK + NPROD]))
    return h


def tensor_register_post_accumulate_grad_hook(self, hook):
    """Register ``hook(tensor) -> None`` run on a leaf after its ``.grad`` is accumulated."""
    if not self._rg:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self._tape is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    self.__dict__.setdefault("_hooks", {})      # the engine's mark of a leaf with hooks
    table = self.__dict__.setdefault("_posthooks", {})
    h = RemovableHandle(table)
    table[h.id] = hook
    return h


def node_register_hook(self, fn):
    """``fn(grad_inputs, grad_outputs) -> tuple or None`` after this node's VJP."""
    return _register_node_hook(self, "post", fn)


def node_register_prehook(self, fn):
    """``fn(grad_outputs) -> tuple or None`` before this node's VJP."""
    return _register_node_hook(self, "pre", fn)


def _register_node_hook(view, kind, fn):
    tp, e = _tp.resolve_entry(view._tape, view._entry)
    _flag(tp, e)
    shape = getattr(view, "_oshape", None)
    if shape is not None:                # the output's shape, known from the tensor's grad_fn
        tp.hooks[("shape", e)] = shape
    return _register(tp, (kind, e), fn)


def node_shape(tp, N, node, e=None, known=None):
    """The shape torch gives the gradient at ``node`` in a node hook. Nodes are flat, so it is
    taken from what knows it: the leaf's tensor; the output shape of an entry whose grad_fn was
    read from a tensor (``known``, or recorded when the hook was registered); the output shape of
    the elementwise entry ``e`` consuming ``node`` (same size: broadcasting is explicit). Else
    flat."""
    size = int(N[node * NK + NSIZE])
    if e is not None:
        kind = OPS[int(tp.E[e * K + OP])].kind
        if kind == PYFUNC:                 # a custom Function knows its inputs' shapes
            rec = tp.pyfuncs[int(tp.E[e * K + P0])]
            for n, (shape, _) in zip(rec.in_nodes, rec.in_meta):
                if n == node:
                    return shape
        elif known is not None and kind in (UNARY, BINARY) and \
                int(np.prod(known, dtype=np.int64)) == size:
            return known
    s = _shape_below(tp, N, node, size, 8)
    return (size,) if s is None else s


def _shape_below(tp, N, node, size, depth):
    """The shape of ``node`` from below: its leaf, its producer's known output shape, or (the
    producer elementwise) that of an operand of the same size; None when not found."""
    prod = int(N[node * NK + NPROD])
    if prod < 0:
        for n, ref in tp.leaf_pairs:
            if n == node and ref() is not None:
                return ref()._data.shape
        return None
    if int(tp.E[prod * K + OP]) == _PYFUNC:     # ... and its outputs'
        rec = tp.pyfuncs[int(tp.E[prod * K + P0])]
        for n, (shape, _) in zip(rec.out_nodes, rec.out_meta):
            if n == node:
                return shape
    if int(tp.E[prod * K + 2]) != node:
        return None
    s = tp.hooks.get(("shape", prod))
    if s is None:
        v = tp.views.get(prod)
        s = getattr(v, "_oshape", None) if v is not None else None
    if s is not None or depth == 0:
        return s
    kind = OPS[int(tp.E[prod * K + OP])].kind
    if kind in (UNARY, BINARY):
        for col in (IA, IB) if kind == BINARY else (IA,):
            a = int(tp.E[prod * K + col])
            if a >= 0 and int(N[a * NK + NSIZE]) == size:
                s = _shape_below(tp, N, a, size, depth - 1)
                if s is not None:
                    return s
    return None


def leaf_hooks(t, g):
    """Run a leaf's hooks on its gradient (an ndarray or numpy scalar) before accumulation."""
    hooks = t.__dict__.get("_hooks")
    if not hooks:
        return g
    T = _T()
    gt = T._wrap(g, t._dtype)
    prev = STATE.enabled
    STATE.enabled = False                # a first-order backward runs with grad mode off
    try:
        for fn in list(hooks.values()):
            r = fn(gt)
            if r is not None:
                gt = r
    finally:
        STATE.enabled = prev
    return gt._data


def leaf_hooks_tensor(t, gt):
    """The same for a gradient that is already a Tensor (create_graph=True)."""
    for fn in list(t.__dict__.get("_hooks", {}).values()):
        r = fn(gt)
        if r is not None:
            gt = r
    return gt


def _out_nodes(tp, e, N):
    """The output node of entry e and its alias nodes (unbind parts), in order."""
    out = int(tp.E[e * K + 2])
    nodes = [out]
    k = out + 1
    while k * NK < len(N) and int(N[k * NK + NPROD]) == e:
        nodes.append(k)
        k += 1
    return nodes


def tensor_hooks(tp, e, adj, N):
    """Tensor hooks on entry e's outputs, then its pre-hooks; returns grad_outputs."""
    T = _T()
    for node in _out_nodes(tp, e, N):
        table = tp.hooks.get(("t", node))
        if not table:
            continue
        g = adj.get(N, node)
        for fn, (shape, dt) in list(table.values()):
            gt = T._wrap(np.array(g, dt.np).reshape(shape), dt)
            r = fn(gt)
            if r is not None:
                adj.set(N, node, r._data)
                g = adj.get(N, node)
    pre = tp.hooks.get(("pre", e))
    if pre:
        outs = _hooked_outputs(tp, e)
        gouts = tuple(T._wrap(adj.get(N, o).reshape(node_shape(tp, N, o)).copy(),
                              T.float32 if int(N[o * NK + NDT]) & 1 == 0 else T.float64)
                      for o in outs)
        for o, g in zip(outs, call_hooks(pre, gouts)):
            if g is not None:
                adj.set(N, o, np.asarray(g._data).reshape(-1))


def call_hooks(table, grads, outs=None):
    """Call node hooks in registration order: pre-hooks ``fn(grads)`` (``outs`` None),
    post-hooks ``fn(grads, outs)``; a hook's non-None result replaces ``grads``."""
    for fn in list(table.values()):
        r = fn(grads) if outs is None else fn(grads, outs)
        if r is not None:
            grads = tuple(r)
    return grads


def _hooked_outputs(tp, e):
    """The output nodes whose gradients node hooks see: a custom Function's (differentiable)
    outputs, else the entry's output."""
    if int(tp.E[e * K + OP]) == _PYFUNC:
        return [n for n in tp.pyfuncs[int(tp.E[e * K + P0])].out_nodes if n >= 0]
    return [int(tp.E[e * K + 2])]


class _Capture:
    """Adjoints proxy that captures an entry's contributions (for post-hooks)."""

    def __init__(self, adj):
        self.adj = adj
        self.got = {}

    def get(self, N, node):
        return self.adj.get(N, node)

    def acc(self, N, node, c, fresh):
        c = np.array(c, copy=True).reshape(-1)
        if int(N[node * NK + NSIZE]) == 1 and c.size != 1:
            c = np.array([c.sum()])
        self.got[node] = c if node not in self.got else self.got[node] + c


def run_entry(tp, e, adj, E, N, V4, V8, nreach, ereach):
    """An F_HOOK entry: hooks, the VJP (numpy), post-hooks, accumulation."""
    tensor_hooks(tp, e, adj, N)
    post = tp.hooks.get(("post", e))
    if not post:
        _tp.np_entry(tp, e, adj, E, N, V4, V8, nreach, ereach)
        return
    cap = _Capture(adj)
    _tp.np_entry(tp, e, cap, E, N, V4, V8, nreach, ereach)
    _post_hooks(tp, e, adj, N, post, cap.got, _entry_inputs(tp, e), [int(E[e * K + 2])])


def _entry_inputs(tp, e):
    """The input nodes of entry e that node hooks' grad_inputs list (-1: needs no grad)."""
    op = OPS[int(tp.E[e * K + OP])]
    if op.kind == PYFUNC:
        return [n for n in tp.pyfuncs[int(tp.E[e * K + P0])].in_nodes if n >= 0]
    return [int(tp.E[e * K + IA])] + ([int(tp.E[e * K + IB])] if op.kind in (BINARY, MM) else [])


def run_pyfunc(tp, e, adj, N, nreach, ereach):
    """A hooked custom Function entry: tensor hooks and pre-hooks, its backward, post-hooks."""
    tensor_hooks(tp, e, adj, N)
    rec = tp.pyfuncs[int(tp.E[e * K + P0])]
    post = tp.hooks.get(("post", e))
    if not post:
        rec.backward(adj, N, nreach, ereach)
        return
    cap = _Capture(adj)
    rec.backward(cap, N, nreach, ereach)
    _post_hooks(tp, e, adj, N, post, cap.got, _entry_inputs(tp, e), _hooked_outputs(tp, e))


def _post_hooks(tp, e, adj, N, post, got, ins, outs):
    """Post-hooks of entry e: ``fn(grad_inputs, grad_outputs)`` on the contributions ``got``
    the entry's VJP made to its inputs ``ins``; what they return (or the contributions) is
    accumulated."""
    T = _T()

    def dt_of(node):
        return T.float32 if int(N[node * NK + NDT]) & 1 == 0 else T.float64
    known = tp.hooks.get(("shape", e))
    gout = tuple(T._wrap(adj.get(N, o).reshape(node_shape(tp, N, o)).copy(), dt_of(o))
                 for o in outs)
    gin = tuple(T._wrap(got[n].reshape(node_shape(tp, N, n, e, known)), dt_of(n))
                if n >= 0 and n in got else None for n in ins)
    for n, g in zip(ins, call_hooks(post, gin, gout)):
        if n >= 0 and g is not None:
            adj.acc(N, n, np.asarray(g._data).reshape(-1), True)


def _install(Tensor):
    """This module's Tensor methods (tapegrad/_methods.py collects them)."""
    Tensor.register_hook = tensor_register_hook
    Tensor.register_post_accumulate_grad_hook = tensor_register_post_accumulate_grad_hook


def _attach():
    Node.register_hook = node_register_hook
    Node.register_prehook = node_register_prehook


_attach()
# the backward sweep (tapegrad._core.tape) calls these for hooked entries and custom Functions
_tp.HOOKS.run_entry, _tp.HOOKS.run_pyfunc = run_entry, run_pyfunc
