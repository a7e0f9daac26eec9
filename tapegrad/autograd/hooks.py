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

from .. import tape as _tp
from ..kernels import F_BIG, F_HOOK, FL, IA, IB, K, NDT, NK, NPROD, NSIZE, OP
from ..ops import BINARY, MM, OPS

_ids = itertools.count()


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
    from ..tensor import _wrap  # noqa: F401  (imports the module)
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


def node_register_hook(self, fn):
    """``fn(grad_inputs, grad_outputs) -> tuple or None`` after this node's VJP."""
    tp, e = _tp.resolve_entry(self._tape, self._entry)
    _flag(tp, e)
    return _register(tp, ("post", e), fn)


def node_register_prehook(self, fn):
    """``fn(grad_outputs) -> tuple or None`` before this node's VJP."""
    tp, e = _tp.resolve_entry(self._tape, self._entry)
    _flag(tp, e)
    return _register(tp, ("pre", e), fn)


def leaf_hooks(t, g):
    """Run a leaf's hooks on its gradient (an ndarray or numpy scalar) before accumulation."""
    hooks = t.__dict__.get("_hooks")
    if not hooks:
        return g
    T = _T()
    gt = T._wrap(g, t._dtype)
    for fn in list(hooks.values()):
        r = fn(gt)
        if r is not None:
            gt = r
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
    out = int(tp.E[e * K + 2])
    pre = tp.hooks.get(("pre", e))
    if pre:
        dt = T.float32 if int(N[out * NK + NDT]) & 1 == 0 else T.float64
        gouts = (T._wrap(adj.get(N, out).copy(), dt),)
        for fn in list(pre.values()):
            r = fn(gouts)
            if r is not None:
                gouts = tuple(r)
        adj.set(N, out, gouts[0]._data)


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
    T = _T()
    cap = _Capture(adj)
    _tp.np_entry(tp, e, cap, E, N, V4, V8, nreach, ereach)
    op = OPS[int(E[e * K + OP])]
    ins = [int(E[e * K + IA])] + ([int(E[e * K + IB])] if op.kind in (BINARY, MM) else [])
    out = int(E[e * K + 2])

    def dt_of(node):
        return T.float32 if int(N[node * NK + NDT]) & 1 == 0 else T.float64
    gin = tuple(T._wrap(cap.got[n], dt_of(n)) if n >= 0 and n in cap.got else None for n in ins)
    gout = (T._wrap(adj.get(N, out).copy(), dt_of(out)),)
    for fn in list(post.values()):
        r = fn(gin, gout)
        if r is not None:
            gin = tuple(r)
    for n, g in zip(ins, gin):
        if n >= 0 and g is not None:
            adj.acc(N, n, np.asarray(g._data).reshape(-1), True)


def _attach():
    T = _T()
    from .graph import Node
    T.Tensor.register_hook = tensor_register_hook
    Node.register_hook = node_register_hook
    Node.register_prehook = node_register_prehook


_attach()
